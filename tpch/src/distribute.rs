//! How a TPC-H scan is split across distributed tasks: each task generates its own share of
//! the table's parts, so no rows travel to the workers, only the plan.

use std::sync::Arc;

use datafusion::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use datafusion_distributed::{DistributedLeafExec, TaskEstimation, TaskEstimator};

use crate::exec::{TpchScanExec, split};

/// Asks for a task per part (a part is about 128 Ki rows): generating is CPU-bound, so every
/// worker that can get a part should (the planner caps the tasks at the workers there are).
#[derive(Debug, Default, Clone, Copy)]
pub struct TpchTaskEstimator;

impl TaskEstimator for TpchTaskEstimator {
    fn task_estimation(
        &self,
        plan: &Arc<dyn ExecutionPlan>,
        _cfg: &ConfigOptions,
    ) -> Option<TaskEstimation> {
        let scan = plan.downcast_ref::<TpchScanExec>()?;
        let parts: i64 = scan
            .partitions()
            .iter()
            .map(|r| i64::from(r.end - r.start))
            .sum();
        Some(TaskEstimation::desired(
            usize::try_from(parts).unwrap_or(1).max(1),
        ))
    }

    fn scale_up_leaf_node(
        &self,
        plan: &Arc<dyn ExecutionPlan>,
        task_count: usize,
        _cfg: &ConfigOptions,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let Some(scan) = plan.downcast_ref::<TpchScanExec>() else {
            return Ok(None);
        };
        if task_count <= 1 {
            return Ok(None);
        }
        Ok(Some(Arc::new(split_scan(plan, scan, task_count)?)))
    }
}

/// One variant of the scan per task, each with the original's partition count (the planner
/// requires it) and its own contiguous share of the parts.
fn split_scan(
    original: &Arc<dyn ExecutionPlan>,
    scan: &TpchScanExec,
    task_count: usize,
) -> Result<DistributedLeafExec> {
    let partitions_per_task = original.output_partitioning().partition_count().max(1);
    let ranges = scan.partitions();
    let span = match (ranges.first(), ranges.last()) {
        (Some(first), Some(last)) => first.start..last.end,
        _ => 0..0,
    };
    let variants = split(span, task_count)
        .into_iter()
        .map(|share| {
            TpchScanExec::with_partitions(
                scan.shape(),
                scan.scale_factor(),
                scan.part_count(),
                split(share, partitions_per_task),
                scan.projection().to_vec(),
            )
            .map(|variant| Arc::new(variant) as Arc<dyn ExecutionPlan>)
        })
        .collect::<Result<Vec<_>>>()?;
    DistributedLeafExec::try_new(Arc::clone(original), variants)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::{Money, Naming, Table, TableShape};

    #[test]
    fn every_task_generates_its_own_parts_and_together_all_of_them() -> Result<()> {
        let shape = TableShape {
            table: Table::Orders,
            naming: Naming::Simplified,
            money: Money::Double,
        };
        // 12 parts at SF 1, in 2 partitions.
        let scan = TpchScanExec::new(shape, 1.0, None, 2)?;
        let plan: Arc<dyn ExecutionPlan> = Arc::new(scan.clone());
        let leaf = split_scan(&plan, &scan, 3)?;
        let mut parts = Vec::new();
        for variant in leaf.variants() {
            let variant = variant
                .downcast_ref::<TpchScanExec>()
                .expect("a TPC-H scan");
            assert_eq!(
                variant.partitions().len(),
                2,
                "variants keep the partition count"
            );
            let mine: Vec<i32> = variant.partitions().iter().flat_map(Clone::clone).collect();
            assert_eq!(mine.len(), 4, "each of 3 tasks generates 4 of 12 parts");
            parts.extend(mine);
        }
        assert_eq!(parts, (0..12).collect::<Vec<_>>());
        Ok(())
    }
}
