//! How an Iceberg scan is split across distributed tasks.

use std::sync::Arc;

use datafusion::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use datafusion_distributed::{
    DistributedConfig, DistributedLeafExec, TaskEstimation, TaskEstimator,
};

use iceberg::scan::FileScanTask;

use super::exec::{IcebergScanExec, balance_by_bytes};
use crate::delete::RowPositionsExec;

/// Asks for one task per `distributed.file_scan_config_bytes_per_partition` x
/// `target_partitions` bytes of data (the same knob DataFusion's own file scans use), never
/// more tasks than files, and gives every task a disjoint set of files.
#[derive(Debug, Default, Clone, Copy)]
pub struct IcebergTaskEstimator;

impl IcebergTaskEstimator {
    fn desired_tasks(total_bytes: u64, file_count: usize, cfg: &ConfigOptions) -> usize {
        let bytes_per_partition = cfg
            .extensions
            .get::<DistributedConfig>()
            .map(|d| d.file_scan_config_bytes_per_partition)
            .unwrap_or(16 * 1024 * 1024)
            .max(1) as u64;
        let partitions = total_bytes.div_ceil(bytes_per_partition);
        let tasks = partitions.div_ceil(cfg.execution.target_partitions.max(1) as u64) as usize;
        tasks.clamp(1, file_count.max(1))
    }
}

/// The leaves this estimator splits: a scan, and the row-position read of a DELETE, UPDATE
/// or MERGE.
fn leaf_size(plan: &Arc<dyn ExecutionPlan>) -> Option<(u64, usize)> {
    if let Some(scan) = plan.downcast_ref::<IcebergScanExec>() {
        return Some((scan.total_bytes(), scan.file_count()));
    }
    let positions = plan.downcast_ref::<RowPositionsExec>()?;
    Some((positions.total_bytes(), positions.file_count()))
}

impl TaskEstimator for IcebergTaskEstimator {
    fn task_estimation(
        &self,
        plan: &Arc<dyn ExecutionPlan>,
        cfg: &ConfigOptions,
    ) -> Option<TaskEstimation> {
        let (bytes, files) = leaf_size(plan)?;
        Some(TaskEstimation::desired(Self::desired_tasks(
            bytes, files, cfg,
        )))
    }

    fn scale_up_leaf_node(
        &self,
        plan: &Arc<dyn ExecutionPlan>,
        task_count: usize,
        _cfg: &ConfigOptions,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        if task_count <= 1 {
            return Ok(None);
        }
        if let Some(scan) = plan.downcast_ref::<IcebergScanExec>() {
            let split = split_files(plan, scan.partitions(), task_count, |partitions| {
                Arc::new(
                    IcebergScanExec::with_partitions(
                        scan.table().to_string(),
                        scan.schema(),
                        partitions,
                        scan.io().clone(),
                        scan.limit(),
                    )
                    .with_bounds(scan.bounds().cloned()),
                )
            })?;
            return Ok(Some(Arc::new(split)));
        }
        let Some(positions) = plan.downcast_ref::<RowPositionsExec>() else {
            return Ok(None);
        };
        let split = split_files(plan, positions.partitions(), task_count, |partitions| {
            Arc::new(RowPositionsExec::with_partitions(
                positions.schema(),
                Arc::clone(positions.read_schema()),
                partitions,
                positions.io().clone(),
            ))
        })?;
        Ok(Some(Arc::new(split)))
    }
}

/// One variant of the leaf per task, made by `variant` from its partitions: every variant
/// keeps the original partition count (the planner requires it) and reads its own share of
/// the files.
fn split_files(
    original: &Arc<dyn ExecutionPlan>,
    partitions: &[Vec<FileScanTask>],
    task_count: usize,
    variant: impl Fn(Vec<Vec<FileScanTask>>) -> Arc<dyn ExecutionPlan>,
) -> Result<DistributedLeafExec> {
    let partitions_per_task = original.output_partitioning().partition_count().max(1);
    let tasks: Vec<_> = partitions.iter().flatten().cloned().collect();
    // Files over tasks first (so every task gets work), then each task's files over its partitions.
    let variants = balance_by_bytes(tasks, task_count)
        .into_iter()
        .map(|files| variant(balance_by_bytes(files, partitions_per_task)));
    DistributedLeafExec::try_new(Arc::clone(original), variants.collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use datafusion::arrow::datatypes::Schema;
    use iceberg::spec::DataFileFormat;

    use super::*;
    use datafusion::error::DataFusionError;

    use crate::scan::ScanIo;
    use crate::storage::file_io_with_props;

    fn task(path: &str, length: u64) -> FileScanTask {
        FileScanTask {
            file_size_in_bytes: length,
            start: 0,
            length,
            record_count: Some(1),
            data_file_path: path.to_string(),
            data_file_format: DataFileFormat::Parquet,
            schema: Arc::new(
                iceberg::spec::Schema::builder()
                    .build()
                    .expect("empty schema"),
            ),
            project_field_ids: vec![],
            predicate: None,
            deletes: vec![],
            partition: None,
            partition_spec: None,
            name_mapping: None,
            case_sensitive: true,
        }
    }

    #[test]
    fn every_task_gets_files_and_none_is_read_twice() -> Result<()> {
        let files: Vec<_> = (0..8).map(|i| task(&format!("f{i}"), 100 + i)).collect();
        let io = ScanIo {
            file_io: file_io_with_props(HashMap::new()),
            plan_props: HashMap::new(),
        };
        // As many partitions as files: the case where naive grouping put everything in task 0.
        let scan = IcebergScanExec::new("t".into(), Arc::new(Schema::empty()), files, 8, io, None);
        let plan: Arc<dyn ExecutionPlan> = Arc::new(scan.clone());
        let leaf = IcebergTaskEstimator
            .scale_up_leaf_node(&plan, 4, &ConfigOptions::default())?
            .ok_or_else(|| DataFusionError::Internal("the scan was not split".into()))?;
        let leaf = leaf
            .downcast_ref::<DistributedLeafExec>()
            .ok_or_else(|| DataFusionError::Internal("not a distributed leaf".into()))?;
        let mut seen = Vec::new();
        for variant in leaf.variants() {
            let variant = variant
                .downcast_ref::<IcebergScanExec>()
                .expect("scan variant");
            assert_eq!(
                variant.partitions().len(),
                8,
                "variants keep the partition count"
            );
            assert_eq!(
                variant.file_count(),
                2,
                "each of 4 tasks reads 2 of 8 files"
            );
            seen.extend(
                variant
                    .partitions()
                    .iter()
                    .flatten()
                    .map(|t| t.data_file_path.clone()),
            );
        }
        seen.sort();
        let expected: Vec<String> = (0..8).map(|i| format!("f{i}")).collect();
        assert_eq!(seen, expected);
        Ok(())
    }
}
