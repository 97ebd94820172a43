//! How an Iceberg scan is split across distributed tasks.

use std::sync::Arc;

use datafusion::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use datafusion_distributed::{
    DistributedConfig, DistributedLeafExec, TaskEstimation, TaskEstimator,
};

use super::exec::{IcebergScanExec, balance_by_bytes};

/// Asks for one task per `distributed.file_scan_config_bytes_per_partition` x
/// `target_partitions` bytes of data (the same knob DataFusion's own file scans use), never
/// more tasks than files, and gives every task a disjoint set of files.
#[derive(Debug, Default, Clone, Copy)]
pub struct IcebergTaskEstimator;

impl IcebergTaskEstimator {
    fn desired_tasks(scan: &IcebergScanExec, cfg: &ConfigOptions) -> usize {
        let bytes_per_partition = cfg
            .extensions
            .get::<DistributedConfig>()
            .map(|d| d.file_scan_config_bytes_per_partition)
            .unwrap_or(16 * 1024 * 1024)
            .max(1) as u64;
        let partitions = scan.total_bytes().div_ceil(bytes_per_partition);
        let tasks = partitions.div_ceil(cfg.execution.target_partitions.max(1) as u64) as usize;
        tasks.clamp(1, scan.file_count().max(1))
    }
}

impl TaskEstimator for IcebergTaskEstimator {
    fn task_estimation(
        &self,
        plan: &Arc<dyn ExecutionPlan>,
        cfg: &ConfigOptions,
    ) -> Option<TaskEstimation> {
        let scan = plan.downcast_ref::<IcebergScanExec>()?;
        Some(TaskEstimation::desired(Self::desired_tasks(scan, cfg)))
    }

    fn scale_up_leaf_node(
        &self,
        plan: &Arc<dyn ExecutionPlan>,
        task_count: usize,
        _cfg: &ConfigOptions,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let Some(scan) = plan.downcast_ref::<IcebergScanExec>() else {
            return Ok(None);
        };
        if task_count <= 1 {
            return Ok(None);
        }
        Ok(Some(Arc::new(split_scan(plan, scan, task_count)?)))
    }
}

/// One variant of the scan per task; every variant keeps the original partition count (the
/// planner requires it) and reads its own share of the files.
fn split_scan(
    original: &Arc<dyn ExecutionPlan>,
    scan: &IcebergScanExec,
    task_count: usize,
) -> Result<DistributedLeafExec> {
    let partitions_per_task = original.output_partitioning().partition_count().max(1);
    let tasks: Vec<_> = scan.partitions().iter().flatten().cloned().collect();
    let mut groups = balance_by_bytes(tasks, task_count * partitions_per_task).into_iter();
    let variants = (0..task_count).map(|_| {
        let partitions: Vec<_> = groups.by_ref().take(partitions_per_task).collect();
        Arc::new(IcebergScanExec::with_partitions(
            scan.table().to_string(),
            scan.schema(),
            partitions,
            scan.io().clone(),
            scan.limit(),
        )) as Arc<dyn ExecutionPlan>
    });
    DistributedLeafExec::try_new(Arc::clone(original), variants.collect::<Vec<_>>())
}
