//! `IcebergScanExec`: the leaf that reads a planned set of Iceberg file scan tasks.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::Statistics;
use datafusion::common::stats::Precision;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, Partitioning};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt, stream};
use iceberg::arrow::ArrowReaderBuilder;
use iceberg::io::FileIO;
use iceberg::scan::FileScanTask;

use crate::error::iceberg_to_df;
use crate::types::cast_batch;

use super::statistics::{ScanBounds, column_statistics};

/// How a scan reaches its files: the FileIO to read with, and the per-table properties
/// (credentials vended by a REST catalog, say) a worker needs on top of its own `[storage]`.
#[derive(Clone)]
pub struct ScanIo {
    pub file_io: FileIO,
    pub plan_props: HashMap<String, String>,
}

/// Names the properties, never their values: they can be credentials.
impl fmt::Debug for ScanIo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut keys: Vec<&str> = self.plan_props.keys().map(String::as_str).collect();
        keys.sort_unstable();
        f.debug_struct("ScanIo")
            .field("plan_props", &keys)
            .finish_non_exhaustive()
    }
}

/// Reads Iceberg data files. Each output partition owns a list of file scan tasks, planned once
/// on the coordinator; the reader applies the task's projection, residual predicate and delete
/// files (positional and equality), so rows deleted by a delete file are never returned.
#[derive(Debug, Clone)]
pub struct IcebergScanExec {
    table: String,
    schema: SchemaRef,
    partitions: Arc<Vec<Vec<FileScanTask>>>,
    io: ScanIo,
    limit: Option<usize>,
    /// The files' column bounds, for planning (not sent to workers: they do not plan).
    bounds: Option<Arc<ScanBounds>>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl IcebergScanExec {
    /// A scan over `tasks`, spread over at most `target_partitions` partitions by bytes.
    pub fn new(
        table: String,
        schema: SchemaRef,
        tasks: Vec<FileScanTask>,
        target_partitions: usize,
        io: ScanIo,
        limit: Option<usize>,
    ) -> Self {
        let partition_count = target_partitions.min(tasks.len()).max(1);
        let partitions = balance_by_bytes(tasks, partition_count);
        Self::with_partitions(table, schema, partitions, io, limit)
    }

    /// A scan whose partitions are given as they are (used by the codec and task splitting).
    pub fn with_partitions(
        table: String,
        schema: SchemaRef,
        partitions: Vec<Vec<FileScanTask>>,
        io: ScanIo,
        limit: Option<usize>,
    ) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(partitions.len().max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Self {
            table,
            schema,
            partitions: Arc::new(partitions),
            io,
            limit,
            bounds: None,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The scan with its files' column bounds, which its statistics report.
    pub fn with_bounds(mut self, bounds: Option<Arc<ScanBounds>>) -> Self {
        self.bounds = bounds;
        self
    }

    pub fn bounds(&self) -> Option<&Arc<ScanBounds>> {
        self.bounds.as_ref()
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    pub fn partitions(&self) -> &[Vec<FileScanTask>] {
        &self.partitions
    }

    pub fn io(&self) -> &ScanIo {
        &self.io
    }

    pub fn limit(&self) -> Option<usize> {
        self.limit
    }

    pub fn file_count(&self) -> usize {
        self.partitions.iter().map(Vec::len).sum()
    }

    pub fn total_bytes(&self) -> u64 {
        self.partitions.iter().flatten().map(|t| t.length).sum()
    }
}

/// Spreads tasks over `groups` lists, largest first onto the lightest list, so that partitions
/// (and, when split further, workers) read similar amounts of data.
pub fn balance_by_bytes(mut tasks: Vec<FileScanTask>, groups: usize) -> Vec<Vec<FileScanTask>> {
    let groups = groups.max(1);
    tasks.sort_by(|a, b| {
        b.length
            .cmp(&a.length)
            .then_with(|| a.data_file_path.cmp(&b.data_file_path))
    });
    let mut out: Vec<(u64, Vec<FileScanTask>)> = (0..groups).map(|_| (0, Vec::new())).collect();
    for task in tasks {
        if let Some(lightest) = out.iter_mut().min_by_key(|(bytes, _)| *bytes) {
            lightest.0 += task.length;
            lightest.1.push(task);
        }
    }
    out.into_iter().map(|(_, tasks)| tasks).collect()
}

impl DisplayAs for IcebergScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let columns: Vec<&str> = self
            .schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        write!(
            f,
            "IcebergScanExec: table={}, files={}, partitions={}, projection=[{}]",
            self.table,
            self.file_count(),
            self.partitions.len(),
            columns.join(", ")
        )?;
        if let Some(limit) = self.limit {
            write!(f, ", limit={limit}")?;
        }
        if matches!(t, DisplayFormatType::Verbose)
            && let Some(predicate) = self
                .partitions
                .iter()
                .flatten()
                .find_map(|t| t.predicate.as_ref())
        {
            write!(f, ", predicate={predicate}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for IcebergScanExec {
    fn name(&self) -> &str {
        "IcebergScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            Err(DataFusionError::Internal(
                "IcebergScanExec has no children".into(),
            ))
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let tasks = self.partitions.get(partition).cloned().ok_or_else(|| {
            DataFusionError::Internal(format!(
                "IcebergScanExec has {} partitions, partition {partition} requested",
                self.partitions.len()
            ))
        })?;
        let runtime = iceberg::Runtime::try_current().map_err(iceberg_to_df)?;
        let reader = ArrowReaderBuilder::new(self.io.file_io.clone(), runtime)
            .with_batch_size(context.session_config().batch_size())
            .with_data_file_concurrency_limit(2)
            .with_row_group_filtering_enabled(true)
            .build();
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let bytes_scanned = MetricBuilder::new(&self.metrics).gauge("bytes_scanned", partition);
        MetricBuilder::new(&self.metrics)
            .counter("files_scanned", partition)
            .add(tasks.len());
        let scan = reader
            .read(Box::pin(stream::iter(tasks.into_iter().map(Ok))))
            .map_err(iceberg_to_df)?;
        let scan_metrics = scan.metrics().clone();
        let schema = Arc::clone(&self.schema);
        let batches = scan
            .stream()
            .map_err(iceberg_to_df)
            .and_then(move |batch| futures::future::ready(conform(batch, &schema)))
            .inspect(move |batch| {
                if let Ok(batch) = batch {
                    baseline.record_output(batch.num_rows());
                }
                bytes_scanned.set(scan_metrics.bytes_read() as usize);
            });
        let batches = match self.limit {
            Some(limit) => limit_rows(batches.boxed(), limit),
            None => batches.boxed(),
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            batches,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    /// Row counts and column bounds from the manifests: upper bounds (filters and deletes only
    /// remove rows), which is what join planning needs to put the smaller side first and to
    /// estimate how many rows a join makes.
    fn partition_statistics(&self, partition: Option<usize>) -> Result<Arc<Statistics>> {
        let tasks: Vec<&FileScanTask> = match partition {
            Some(p) => self
                .partitions
                .get(p)
                .map(|t| t.iter().collect())
                .unwrap_or_default(),
            None => self.partitions.iter().flatten().collect(),
        };
        let mut stats = Statistics::new_unknown(&self.schema);
        let rows: Option<u64> = tasks.iter().map(|t| t.record_count).sum();
        if let Some(rows) = rows {
            stats.num_rows = Precision::Inexact(rows as usize);
        }
        if let Some(bounds) = &self.bounds {
            let paths = tasks.iter().map(|t| t.data_file_path.as_str());
            stats.column_statistics = column_statistics(bounds, &self.schema, paths);
        }
        Ok(Arc::new(stats))
    }
}

/// Ends a stream once `limit` rows have passed, so no further files are opened.
fn limit_rows(
    batches: BoxStream<'static, Result<RecordBatch>>,
    limit: usize,
) -> BoxStream<'static, Result<RecordBatch>> {
    stream::unfold((batches, limit), |(mut batches, left)| async move {
        if left == 0 {
            return None;
        }
        match batches.next().await? {
            Ok(batch) => {
                let take = left.min(batch.num_rows());
                Some((Ok(batch.slice(0, take)), (batches, left - take)))
            }
            Err(e) => Some((Err(e), (batches, 0))),
        }
    })
    .boxed()
}

/// Gives a batch from the Iceberg reader exactly the scan's declared schema (the reader's fields
/// carry field-id metadata; DataFusion's operators compare schemas including metadata).
fn conform(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    if batch.schema_ref() == schema {
        return Ok(batch);
    }
    Ok(cast_batch(&batch, schema)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::file_io_with_props;

    #[test]
    fn debug_output_names_plan_properties_but_not_their_values() {
        let secret = "vended-secret-value";
        let props = HashMap::from([
            ("s3.secret-access-key".to_string(), secret.to_string()),
            ("s3.region".to_string(), "eu-west-1".to_string()),
        ]);
        let io = ScanIo {
            file_io: file_io_with_props(props.clone()),
            plan_props: props,
        };
        let scan = IcebergScanExec::new(
            "ns.t".into(),
            Arc::new(datafusion::arrow::datatypes::Schema::empty()),
            Vec::new(),
            1,
            io,
            None,
        );
        let debug = format!("{scan:?}");
        assert!(debug.contains("s3.secret-access-key"), "{debug}");
        assert!(!debug.contains(secret), "{debug}");
    }
}
