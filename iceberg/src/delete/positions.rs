//! Which rows a DELETE removes, by data file and position: the table read file by file in
//! storage order, with each row's file and position as two more columns, rows already deleted
//! left out. DataFusion evaluates the statement's WHERE over it (subqueries included), so a
//! DELETE selects exactly the rows a SELECT with that WHERE would.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Int64Array, RecordBatch, RecordBatchOptions, StringArray,
};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::{EquivalenceProperties, Partitioning};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::{StreamExt, TryStreamExt, stream};
use iceberg::arrow::ArrowReaderBuilder;
use iceberg::io::FileIO;
use iceberg::scan::FileScanTask;

use super::deleted::deleted_positions;
use crate::error::iceberg_to_df;
use crate::scan::{ScanIo, balance_by_bytes};
use crate::table::IcebergTableProvider;
use crate::types::cast_batch;

/// The column holding each row's data file.
pub const FILE_COLUMN: &str = "$sqe_delete_file";
/// The column holding each row's position in its data file (from 0, as position deletes count).
pub const POS_COLUMN: &str = "$sqe_delete_pos";

/// A table pinned at one snapshot, with [`FILE_COLUMN`] and [`POS_COLUMN`] after its columns.
#[derive(Debug)]
pub struct RowPositionsProvider {
    table: IcebergTableProvider,
    schema: SchemaRef,
}

impl RowPositionsProvider {
    pub fn try_new(table: IcebergTableProvider) -> Result<Self> {
        let columns = table.schema();
        if columns
            .fields()
            .iter()
            .any(|f| f.name() == FILE_COLUMN || f.name() == POS_COLUMN)
        {
            return Err(DataFusionError::NotImplemented(format!(
                "DELETE on a table with a column named {FILE_COLUMN} or {POS_COLUMN}"
            )));
        }
        let mut fields: Vec<Arc<Field>> = columns.fields().iter().cloned().collect();
        fields.push(Arc::new(Field::new(FILE_COLUMN, DataType::Utf8, false)));
        fields.push(Arc::new(Field::new(POS_COLUMN, DataType::Int64, false)));
        Ok(Self {
            table,
            schema: Arc::new(Schema::new(fields)),
        })
    }
}

#[async_trait]
impl TableProvider for RowPositionsProvider {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let all: Vec<usize> = (0..self.schema.fields().len()).collect();
        let projection = projection.unwrap_or(&all);
        let output = Arc::new(self.schema.project(projection)?);
        let table_columns = self.table.schema();
        let mut read: Vec<String> = projection
            .iter()
            .filter(|i| **i < table_columns.fields().len())
            .map(|i| table_columns.field(*i).name().clone())
            .collect();
        // The reader needs a column to count rows by, even when the WHERE reads none.
        if read.is_empty()
            && let Some(first) = table_columns.fields().first()
        {
            read.push(first.name().clone());
        }
        let read_schema = Arc::new(Schema::new(
            read.iter()
                .map(|name| table_columns.field_with_name(name).cloned())
                .collect::<std::result::Result<Vec<_>, _>>()?,
        ));
        // Filters only prune files here; DataFusion filters the rows.
        let tasks = self.table.plan_files(&read, filters).await?;
        let tasks = whole_files(tasks);
        let partitions = target_partitions(state).min(tasks.len()).max(1);
        Ok(Arc::new(RowPositionsExec::with_partitions(
            output,
            read_schema,
            balance_by_bytes(tasks, partitions),
            self.table.scan_io(),
        )))
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }
}

fn target_partitions(state: &dyn Session) -> usize {
    state.config().target_partitions()
}

/// One task per data file, covering all of it, with no residual filter: positions count every
/// row of the file (the planner may split a large file into several tasks).
fn whole_files(tasks: Vec<FileScanTask>) -> Vec<FileScanTask> {
    let mut seen = HashSet::new();
    tasks
        .into_iter()
        .filter(|task| seen.insert(task.data_file_path.clone()))
        .map(|mut task| {
            task.start = 0;
            task.length = task.file_size_in_bytes;
            task.predicate = None;
            task
        })
        .collect()
}

/// Reads whole data files in storage order, numbering their rows. The codec ships it to
/// workers, and it splits across tasks as a scan does (by its files).
#[derive(Debug)]
pub struct RowPositionsExec {
    schema: SchemaRef,
    read_schema: SchemaRef,
    partitions: Vec<Vec<FileScanTask>>,
    io: ScanIo,
    properties: Arc<PlanProperties>,
}

impl RowPositionsExec {
    /// Reads `partitions` (whole files each) of the columns of `read_schema`, yielding
    /// `schema`'s: some of those, then the file and position columns.
    pub fn with_partitions(
        schema: SchemaRef,
        read_schema: SchemaRef,
        partitions: Vec<Vec<FileScanTask>>,
        io: ScanIo,
    ) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(partitions.len().max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Self {
            schema,
            read_schema,
            partitions,
            io,
            properties,
        }
    }
}

impl RowPositionsExec {
    /// The columns read from the files (the output's table columns, or one to count by).
    pub fn read_schema(&self) -> &SchemaRef {
        &self.read_schema
    }

    pub fn partitions(&self) -> &[Vec<FileScanTask>] {
        &self.partitions
    }

    pub fn io(&self) -> &ScanIo {
        &self.io
    }

    pub fn file_count(&self) -> usize {
        self.partitions.iter().map(Vec::len).sum()
    }

    pub fn total_bytes(&self) -> u64 {
        self.partitions
            .iter()
            .flatten()
            .map(|task| task.length)
            .sum()
    }
}

impl DisplayAs for RowPositionsExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let files: usize = self.partitions.iter().map(Vec::len).sum();
        write!(f, "RowPositionsExec: files={files}")
    }
}

impl ExecutionPlan for RowPositionsExec {
    fn name(&self) -> &str {
        "RowPositionsExec"
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
                "RowPositionsExec has no children".into(),
            ))
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let tasks = self.partitions.get(partition).cloned().unwrap_or_default();
        let io = self.io.file_io.clone();
        let schema = Arc::clone(&self.schema);
        let read_schema = Arc::clone(&self.read_schema);
        let batch_size = context.session_config().batch_size();
        let batches = stream::iter(tasks)
            .then(move |task| {
                let io = io.clone();
                let schema = Arc::clone(&schema);
                let read_schema = Arc::clone(&read_schema);
                async move { numbered_rows(io, task, schema, read_schema, batch_size).await }
            })
            .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            batches,
        )))
    }
}

/// One data file's live rows, each with its file and position.
async fn numbered_rows(
    io: FileIO,
    mut task: FileScanTask,
    schema: SchemaRef,
    read_schema: SchemaRef,
    batch_size: usize,
) -> Result<futures::stream::BoxStream<'static, Result<RecordBatch>>> {
    let deleted = deleted_positions(&io, &task.data_file_path, &task.deletes)
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    // Applied here, by position; the reader would drop the rows and shift the positions.
    task.deletes.clear();
    let path = task.data_file_path.clone();
    let runtime = iceberg::Runtime::try_current().map_err(iceberg_to_df)?;
    let reader = ArrowReaderBuilder::new(io, runtime)
        .with_batch_size(batch_size)
        .with_data_file_concurrency_limit(1)
        .with_row_group_filtering_enabled(false)
        .build();
    let scan = reader
        .read(Box::pin(stream::iter([Ok(task)])))
        .map_err(iceberg_to_df)?;
    let mut next = 0i64;
    let rows = scan.stream().map_err(iceberg_to_df).map(move |batch| {
        let batch = cast_batch(&batch?, &read_schema).map_err(DataFusionError::from)?;
        let count = batch.num_rows();
        let start = next;
        next += count as i64;
        number(&batch, &path, start, &deleted, &schema)
    });
    Ok(rows.boxed())
}

/// `batch` (rows `start..` of `path`) in `schema`'s columns, without the `deleted` positions.
fn number(
    batch: &RecordBatch,
    path: &str,
    start: i64,
    deleted: &[i64],
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    let count = batch.num_rows();
    let positions = Int64Array::from_iter_values(start..start + count as i64);
    let columns = schema
        .fields()
        .iter()
        .map(|field| -> Result<ArrayRef> {
            Ok(match field.name().as_str() {
                FILE_COLUMN => Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                    path, count,
                ))),
                POS_COLUMN => Arc::new(positions.clone()),
                name => Arc::clone(batch.column_by_name(name).ok_or_else(|| {
                    DataFusionError::Internal(format!("column {name} was not read"))
                })?),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(count));
    let numbered = RecordBatch::try_new_with_options(Arc::clone(schema), columns, &options)?;
    let live: BooleanArray = positions
        .values()
        .iter()
        .map(|p| Some(deleted.binary_search(p).is_err()))
        .collect();
    Ok(filter_record_batch(&numbered, &live)?)
}
