//! `TpchScanExec`: the leaf that generates a table's rows; each partition its own parts.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::stats::Precision;
use datafusion::common::{Statistics, internal_err};
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, Partitioning};
use datafusion::physical_plan::coop::make_cooperative;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType, SchedulingType};
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::{StreamExt, stream};

use crate::generate::{Share, batches};
use crate::tables::{Table, TableShape};

/// Generates a TPC-H table at a scale factor. The table is cut into `part_count` parts (the
/// generator's own unit, about 128 Ki rows each); every output partition generates a
/// contiguous range of them, so partitions never overlap and together are the whole table.
#[derive(Debug, Clone)]
pub struct TpchScanExec {
    shape: TableShape,
    scale_factor: f64,
    part_count: i32,
    partitions: Vec<Range<i32>>,
    projection: Vec<usize>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

/// `parts` cut into `n` contiguous ranges whose sizes differ by at most one.
pub(crate) fn split(parts: Range<i32>, n: usize) -> Vec<Range<i32>> {
    let n = n.max(1);
    let total = i64::from(parts.end - parts.start).max(0);
    (0..n as i64)
        .map(|i| {
            let bound = |k: i64| parts.start + (total * k / n as i64) as i32;
            bound(i)..bound(i + 1)
        })
        .collect()
}

impl TpchScanExec {
    /// The whole table in `partitions` partitions, with the columns in `projection` (all
    /// when `None`).
    pub fn new(
        shape: TableShape,
        scale_factor: f64,
        projection: Option<&[usize]>,
        partitions: usize,
    ) -> Result<Self> {
        let part_count = shape.table.part_count(scale_factor);
        Self::with_partitions(
            shape,
            scale_factor,
            part_count,
            split(0..part_count, partitions),
            projection.map_or_else(
                || (0..shape.schema().fields().len()).collect(),
                <[usize]>::to_vec,
            ),
        )
    }

    /// The whole table cut into `parts` parts (one for region and nation), a partition each:
    /// how `sqe local` writes its sample tables as that many data files.
    pub fn part_per_partition(shape: TableShape, scale_factor: f64, parts: usize) -> Result<Self> {
        let parts = if shape.table.is_one_part() {
            1
        } else {
            i32::try_from(parts.max(1)).unwrap_or(i32::MAX)
        };
        let all = (0..shape.schema().fields().len()).collect();
        Self::with_partitions(
            shape,
            scale_factor,
            parts,
            (0..parts).map(|p| p..p + 1).collect(),
            all,
        )
    }

    /// A scan of the given part ranges (a share of the table, when split over tasks).
    pub(crate) fn with_partitions(
        shape: TableShape,
        scale_factor: f64,
        part_count: i32,
        partitions: Vec<Range<i32>>,
        projection: Vec<usize>,
    ) -> Result<Self> {
        let within = |r: &Range<i32>| 0 <= r.start && r.start <= r.end && r.end <= part_count;
        if !shape.table.can_split_into(part_count)
            || partitions.is_empty()
            || !partitions.iter().all(within)
        {
            return internal_err!(
                "TPC-H scan of {} has parts {partitions:?} outside 0..{part_count}",
                shape.table.name()
            );
        }
        let schema = Arc::new(shape.schema().project(&projection)?);
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(partitions.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        )
        .with_scheduling_type(SchedulingType::Cooperative);
        Ok(Self {
            shape,
            scale_factor,
            part_count,
            partitions,
            projection,
            schema,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    pub fn shape(&self) -> TableShape {
        self.shape
    }

    pub fn scale_factor(&self) -> f64 {
        self.scale_factor
    }

    pub(crate) fn part_count(&self) -> i32 {
        self.part_count
    }

    pub(crate) fn partitions(&self) -> &[Range<i32>] {
        &self.partitions
    }

    pub(crate) fn projection(&self) -> &[usize] {
        &self.projection
    }

    /// How many of the table's parts this scan generates.
    fn covered_parts(&self, partition: Option<usize>) -> i64 {
        let len = |r: &Range<i32>| i64::from(r.end - r.start);
        match partition {
            Some(p) => self.partitions.get(p).map_or(0, len),
            None => self.partitions.iter().map(len).sum(),
        }
    }
}

impl DisplayAs for TpchScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let columns: Vec<&str> = self
            .schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        write!(
            f,
            "TpchScanExec: table={}, scale_factor={}, parts={} of {}, partitions={}, projection=[{}]",
            self.shape.table.name(),
            self.scale_factor,
            self.covered_parts(None),
            self.part_count,
            self.partitions.len(),
            columns.join(", ")
        )
    }
}

impl ExecutionPlan for TpchScanExec {
    fn name(&self) -> &str {
        "TpchScanExec"
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
            internal_err!("TpchScanExec has no children")
        }
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let Some(parts) = self.partitions.get(partition).cloned() else {
            return internal_err!(
                "TpchScanExec has {} partitions, partition {partition} requested",
                self.partitions.len()
            );
        };
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let generated = batches(Share {
            shape: self.shape,
            scale_factor: self.scale_factor,
            parts,
            part_count: self.part_count,
            projection: self.projection.clone(),
            schema: Arc::clone(&self.schema),
        });
        let generated = stream::iter(generated).inspect(move |batch| {
            if let Ok(batch) = batch {
                baseline.record_output(batch.num_rows());
            }
        });
        Ok(make_cooperative(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            generated,
        ))))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    /// Row counts from the generator's own arithmetic, so join planning builds on the
    /// smaller side.
    fn partition_statistics(&self, partition: Option<usize>) -> Result<Arc<Statistics>> {
        Ok(Arc::new(row_statistics(
            self.shape.table,
            self.scale_factor,
            &self.schema,
            self.covered_parts(partition),
            self.part_count,
        )))
    }
}

/// The rows `covered` of a table's `part_count` parts hold, by the generator's own
/// arithmetic: exact for the whole of a table whose count is exact, else an estimate.
pub(crate) fn row_statistics(
    table: Table,
    scale_factor: f64,
    schema: &SchemaRef,
    covered: i64,
    part_count: i32,
) -> Statistics {
    let (total, exact) = table.row_count(scale_factor);
    let rows = i128::from(total) * i128::from(covered) / i128::from(part_count.max(1));
    let rows = usize::try_from(rows).unwrap_or(usize::MAX);
    let mut stats = Statistics::new_unknown(schema);
    stats.num_rows = if exact && covered == i64::from(part_count) {
        Precision::Exact(rows)
    } else {
        Precision::Inexact(rows)
    };
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_the_parts_once_even_when_there_are_fewer_parts_than_ranges() {
        assert_eq!(split(0..10, 3), vec![0..3, 3..6, 6..10]);
        assert_eq!(split(0..1, 3), vec![0..0, 0..0, 0..1]);
        assert_eq!(split(4..8, 1), vec![4..8]);
    }
}
