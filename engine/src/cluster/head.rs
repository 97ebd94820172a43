//! The coordinator's own stage does as little as possible. datafusion-distributed removes every
//! network boundary between a stage of one task and the one task above it, down to the
//! coordinator's head stage: with a single worker every stage has one task and the whole query
//! ran in the coordinator while the worker sat idle, and with more workers a one-task stage
//! under the head (a join kept whole by [`super::WholeBuildSides`], say) ran there too. The
//! coordinator is a gateway; when its stage would do real work over tables the workers can
//! read, that work becomes a stage of one task of its own, sent to a worker like any other, and
//! the coordinator keeps only the merge of its output.

use std::sync::Arc;

use datafusion::common::{DataFusionError, Result};
use datafusion::config::ConfigOptions;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::limit::{GlobalLimitExec, LocalLimitExec};
use datafusion::physical_plan::placeholder_row::PlaceholderRowExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion_distributed::{
    DistributedConfig, DistributedExec, NetworkBoundary, NetworkBoundaryExt, NetworkCoalesceExec,
    Stage, TaskEstimator,
};
use sqe_iceberg::scan::IcebergTaskEstimator;
use sqe_iceberg::write::IcebergWriteExec;
use sqe_tpch::TpchTaskEstimator;
use uuid::Uuid;

/// `plan` with the work of its coordinator stage moved to a one-task stage on a worker, when
/// that stage does work and reads only what workers can read; otherwise `plan` itself.
pub fn head_on_workers(
    plan: Arc<dyn ExecutionPlan>,
    options: &ConfigOptions,
) -> Result<Arc<dyn ExecutionPlan>> {
    let Ok(distributed) = DistributedConfig::from_config_options(options) else {
        return Ok(plan);
    };
    let (head, existing) = match plan.downcast_ref::<DistributedExec>() {
        Some(exec) => match exec.children()[..] {
            [head] => (Arc::clone(head), true),
            _ => return Ok(plan),
        },
        None => (Arc::clone(&plan), false),
    };
    if !does_work(&head) || !readable_by_workers(&head, options) {
        return Ok(plan);
    }
    let (query_id, stage) = next_stage(&head);
    let pending = NetworkCoalesceExec::try_new(head, 1, 1)?;
    let Stage::Local(mut local) = pending.input_stage().clone() else {
        return Err(DataFusionError::Internal(
            "a new network boundary's stage is not local".into(),
        ));
    };
    local.query_id = query_id;
    local.num = stage;
    // As datafusion-distributed's own heads: the coordinator concatenates the stage's partitions.
    let boundary: Arc<dyn ExecutionPlan> = Arc::new(CoalescePartitionsExec::new(
        pending.with_input_stage(Stage::Local(local))?,
    ));
    if existing {
        plan.with_new_children(vec![boundary])
    } else {
        Ok(Arc::new(
            DistributedExec::new(boundary).with_metrics_collection(distributed.collect_metrics),
        ))
    }
}

/// Whether the coordinator's stage does more than merge, limit or project what its stages
/// send it.
fn does_work(head: &Arc<dyn ExecutionPlan>) -> bool {
    if head.is_network_boundary() {
        return false;
    }
    let passes_through = head.is::<CoalescePartitionsExec>()
        || head.is::<SortPreservingMergeExec>()
        || head.is::<GlobalLimitExec>()
        || head.is::<LocalLimitExec>()
        || head.is::<ProjectionExec>();
    !passes_through || head.children().into_iter().any(does_work)
}

/// Whether every leaf of the coordinator's stage is a network boundary or a scan SQE's workers
/// read (Iceberg, generated TPC-H), or a constant row, and at least one is a scan or boundary:
/// a plan over system tables or values stays on the coordinator, and so does a write, which
/// commits there.
fn readable_by_workers(head: &Arc<dyn ExecutionPlan>, options: &ConfigOptions) -> bool {
    fn leaves(plan: &Arc<dyn ExecutionPlan>, options: &ConfigOptions, reads: &mut bool) -> bool {
        if plan.is_network_boundary() {
            *reads = true;
            return true;
        }
        if plan.is::<IcebergWriteExec>() {
            return false;
        }
        let children = plan.children();
        if children.is_empty() {
            if IcebergTaskEstimator
                .task_estimation(plan, options)
                .is_some()
                || TpchTaskEstimator.task_estimation(plan, options).is_some()
            {
                *reads = true;
                return true;
            }
            return plan.is::<EmptyExec>() || plan.is::<PlaceholderRowExec>();
        }
        children
            .into_iter()
            .all(|child| leaves(child, options, reads))
    }
    let mut reads = false;
    leaves(head, options, &mut reads) && reads
}

/// The query id of the plan's stages (a new one if it has none) and a stage number none of
/// them has.
fn next_stage(plan: &Arc<dyn ExecutionPlan>) -> (Uuid, usize) {
    fn visit(plan: &Arc<dyn ExecutionPlan>, found: &mut Option<Uuid>, highest: &mut usize) {
        if let Some(boundary) = plan.as_network_boundary() {
            let stage = boundary.input_stage();
            found.get_or_insert(stage.query_id());
            *highest = (*highest).max(stage.num());
        }
        for child in plan.children() {
            visit(child, found, highest);
        }
    }
    let mut found = None;
    let mut highest = 0;
    visit(plan, &mut found, &mut highest);
    (found.unwrap_or_else(Uuid::new_v4), highest + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::physical_plan::expressions::lit;
    use datafusion::physical_plan::filter::FilterExec;

    fn boundary() -> Arc<dyn ExecutionPlan> {
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, true)]));
        let input = Arc::new(EmptyExec::new(schema));
        Arc::new(NetworkCoalesceExec::try_new(input, 2, 1).expect("a boundary"))
    }

    #[test]
    fn merging_what_stages_send_is_not_work_but_filtering_it_is() {
        let merged: Arc<dyn ExecutionPlan> = Arc::new(CoalescePartitionsExec::new(boundary()));
        assert!(!does_work(&merged));
        let filtered: Arc<dyn ExecutionPlan> = Arc::new(CoalescePartitionsExec::new(Arc::new(
            FilterExec::try_new(lit(true), boundary()).expect("a filter"),
        )));
        assert!(does_work(&filtered));
    }

    #[test]
    fn constant_rows_alone_stay_on_the_coordinator() {
        let schema = Arc::new(Schema::empty());
        let constant: Arc<dyn ExecutionPlan> = Arc::new(PlaceholderRowExec::new(schema));
        let options = ConfigOptions::default();
        assert!(!readable_by_workers(&constant, &options));
        assert!(readable_by_workers(&boundary(), &options));
    }
}
