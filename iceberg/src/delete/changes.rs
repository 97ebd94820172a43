//! `RowChangeWriteExec`: the half of an UPDATE or MERGE that runs where its rows are selected
//! (on the workers, in a distributed plan). Its input is the statement's selection: each row's
//! data file and position (the row it removes, if any), whether its new version is written,
//! whether a clause applied to it, and the new version in the table's columns. It writes the
//! new versions into data files of the table there and sends on only what the coordinator's
//! commit needs: the positions removed, which rows a clause applied to, and the files written
//! (their Iceberg metadata). Like [`crate::write::DataFileWriteExec`], a partition that fails or
//! is dropped before it hands its files on deletes what it wrote.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, BooleanArray, RecordBatch, new_null_array};
use datafusion::arrow::compute::{filter_record_batch, is_not_null, or};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, Partitioning};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::stream::{RecordBatchReceiverStream, RecordBatchStreamAdapter};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
};
use futures::StreamExt;
use iceberg::spec::DataFile;
use iceberg::table::Table;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tracing::Instrument;

use super::{FILE_COLUMN, POS_COLUMN};
use crate::write::write_partition;
use crate::write::{DATA_FILE_COLUMN, UncommittedFiles, data_files_batch, read_data_files};

/// Input column: whether the row's new version (its table columns) is written.
pub const WRITE_COLUMN: &str = "$sqe_change_write";
/// Input and output column: whether a clause applied to the row (MERGE's count of changes).
pub const APPLIED_COLUMN: &str = "$sqe_change_applied";
/// Columns of the input before the table's.
const LEADING: usize = 4;

/// See the module documentation.
pub struct RowChangeWriteExec {
    input: Arc<dyn ExecutionPlan>,
    table: Table,
    /// Storage properties a worker needs beyond its own (vended credentials, the local root).
    plan_props: HashMap<String, String>,
    rows: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

/// Names the table only: its FileIO holds storage credentials.
impl fmt::Debug for RowChangeWriteExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowChangeWriteExec")
            .field("table", &self.table.identifier().to_string())
            .field("input", &self.input)
            .finish_non_exhaustive()
    }
}

/// What a [`RowChangeWriteExec`] sends on: positions removed and applied clauses (one row per
/// selected row that does either), then one row per data file written.
pub fn row_change_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(FILE_COLUMN, DataType::Utf8, true),
        Field::new(POS_COLUMN, DataType::Int64, true),
        Field::new(APPLIED_COLUMN, DataType::Boolean, true),
        Field::new(DATA_FILE_COLUMN, DataType::Utf8, true),
    ]))
}

impl RowChangeWriteExec {
    /// `input`'s columns are [`FILE_COLUMN`], [`POS_COLUMN`], [`WRITE_COLUMN`],
    /// [`APPLIED_COLUMN`], then the rows to write in `table`'s columns.
    pub fn new(
        input: Arc<dyn ExecutionPlan>,
        table: Table,
        plan_props: HashMap<String, String>,
    ) -> Result<Self> {
        let schema = input.schema();
        let leading = [FILE_COLUMN, POS_COLUMN, WRITE_COLUMN, APPLIED_COLUMN];
        let named = schema
            .fields()
            .iter()
            .take(LEADING)
            .map(|f| f.name().as_str())
            .eq(leading);
        if !named {
            return Err(DataFusionError::Internal(format!(
                "a row change's selection starts with {leading:?}, not {schema}"
            )));
        }
        let indices: Vec<usize> = (LEADING..schema.fields().len()).collect();
        let rows = Arc::new(schema.project(&indices)?);
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(row_change_schema()),
            Partitioning::UnknownPartitioning(input.output_partitioning().partition_count()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Ok(Self {
            input,
            table,
            plan_props,
            rows,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    pub fn plan_props(&self) -> &HashMap<String, String> {
        &self.plan_props
    }
}

impl DisplayAs for RowChangeWriteExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RowChangeWriteExec: table={}", self.table.identifier())
    }
}

impl ExecutionPlan for RowChangeWriteExec {
    fn name(&self) -> &str {
        "RowChangeWriteExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![true]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = children
            .pop()
            .filter(|_| children.is_empty())
            .ok_or_else(|| {
                DataFusionError::Internal("RowChangeWriteExec takes one input".into())
            })?;
        Ok(Arc::new(Self::new(
            input,
            self.table.clone(),
            self.plan_props.clone(),
        )?))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, Arc::clone(&context))?;
        // DataFusion's receiver stream: a task that panics (or is aborted) ends the stream
        // with an error, never as a stream that merely ended (which would commit the
        // positions without their new rows).
        let mut output = RecordBatchReceiverStream::builder(row_change_schema(), 2);
        let rows_written = MetricBuilder::new(&self.metrics).counter("rows_written", partition);
        let change = PartitionChange {
            table: self.table.clone(),
            rows: Arc::clone(&self.rows),
            context,
            sender: output.tx(),
        };
        output.spawn(
            async move {
                let rows = change.run(input).await?;
                rows_written.add(usize::try_from(rows).unwrap_or(usize::MAX));
                Ok(())
            }
            .in_current_span(),
        );
        Ok(output.build())
    }
}

/// One partition's selection, split between the writer and the coordinator.
struct PartitionChange {
    table: Table,
    rows: SchemaRef,
    context: Arc<TaskContext>,
    sender: mpsc::Sender<Result<RecordBatch>>,
}

impl PartitionChange {
    /// Sends on the positions as they come, writes the new rows, then sends on the files:
    /// the rows written.
    async fn run(self, mut input: SendableRecordBatchStream) -> Result<u64> {
        let files = UncommittedFiles::new(self.table.clone());
        let (rows_sender, rows_receiver) = mpsc::channel(2);
        let new_rows = Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.rows),
            ReceiverStream::new(rows_receiver),
        ));
        // Unique in the table, whichever worker and task this partition runs in.
        let prefix = format!("{}-change", uuid::Uuid::now_v7());
        let writing = write_partition(
            &self.table,
            new_rows,
            prefix,
            files.created().clone(),
            Arc::clone(&self.context),
        );
        let sender = &self.sender;
        let selecting = async move {
            while let Some(batch) = input.next().await {
                let (changes, new_rows) = split(&batch?)?;
                if changes.num_rows() > 0 && sender.send(Ok(changes)).await.is_err() {
                    return Err(DataFusionError::Execution(
                        "the row change was stopped".into(),
                    ));
                }
                if new_rows.num_rows() > 0 && rows_sender.send(Ok(new_rows)).await.is_err() {
                    break;
                }
            }
            Ok(())
        };
        let (selected, written) = tokio::join!(selecting, Box::pin(writing));
        let written = match selected.and(written) {
            Ok(written) => written,
            Err(e) => {
                files.delete().await;
                return Err(e);
            }
        };
        let rows = written.rows;
        let batch = files_batch(&self.table, written.files)?;
        if self.sender.send(Ok(batch)).await.is_err() {
            files.delete().await;
            return Err(DataFusionError::Execution(
                "the row change was stopped".into(),
            ));
        }
        files.hand_over();
        Ok(rows)
    }
}

/// A selection batch as what goes to the coordinator (rows that remove a position or had a
/// clause applied) and the new rows to write.
fn split(batch: &RecordBatch) -> Result<(RecordBatch, RecordBatch)> {
    let writes = batch.column(2).as_boolean();
    let applied = batch.column(3).as_boolean();
    let writes = true_only(writes);
    let indices: Vec<usize> = (LEADING..batch.num_columns()).collect();
    let new_rows = filter_record_batch(&batch.project(&indices)?, &writes)?;
    let applied = true_only(applied);
    let reported = or(&is_not_null(batch.column(0))?, &applied)?;
    let file_data = new_null_array(&DataType::Utf8, batch.num_rows());
    let changes = RecordBatch::try_new(
        row_change_schema(),
        vec![
            Arc::clone(batch.column(0)),
            Arc::clone(batch.column(1)),
            Arc::new(applied) as ArrayRef,
            file_data,
        ],
    )?;
    Ok((filter_record_batch(&changes, &reported)?, new_rows))
}

/// NULL as false.
fn true_only(values: &BooleanArray) -> BooleanArray {
    values.iter().map(|v| Some(v == Some(true))).collect()
}

/// The files written, one row each, in [`row_change_schema`].
fn files_batch(table: &Table, files: Vec<DataFile>) -> Result<RecordBatch> {
    let written = data_files_batch(table, files)?;
    let rows = written.num_rows();
    let column = |data_type: &DataType| new_null_array(data_type, rows);
    Ok(RecordBatch::try_new(
        row_change_schema(),
        vec![
            column(&DataType::Utf8),
            column(&DataType::Int64),
            column(&DataType::Boolean),
            Arc::clone(written.column(0)),
        ],
    )?)
}

/// The data files in a batch of a [`RowChangeWriteExec`]'s output, written for `table`.
pub fn changed_files(table: &Table, batch: &RecordBatch) -> Result<Vec<DataFile>> {
    read_data_files(table, batch)
}

/// How many rows of a batch of a [`RowChangeWriteExec`]'s output a clause applied to.
pub fn applied_rows(batch: &RecordBatch) -> u64 {
    batch
        .column_by_name(APPLIED_COLUMN)
        .map(|c| c.as_boolean().true_count() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int64Array, StringArray};

    use super::*;

    #[test]
    fn the_coordinator_gets_positions_and_applied_rows_the_writer_new_rows() -> Result<()> {
        let schema = Arc::new(Schema::new(vec![
            Field::new(FILE_COLUMN, DataType::Utf8, true),
            Field::new(POS_COLUMN, DataType::Int64, true),
            Field::new(WRITE_COLUMN, DataType::Boolean, true),
            Field::new(APPLIED_COLUMN, DataType::Boolean, true),
            Field::new("v", DataType::Int64, true),
        ]));
        // An update, a delete, an insert, and a source row no clause applied to.
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from(vec![Some("a"), Some("a"), None, None])),
                Arc::new(Int64Array::from(vec![Some(0), Some(3), None, None])),
                Arc::new(BooleanArray::from(vec![
                    Some(true),
                    Some(false),
                    Some(true),
                    None,
                ])),
                Arc::new(BooleanArray::from(vec![
                    Some(true),
                    Some(true),
                    Some(true),
                    Some(false),
                ])),
                Arc::new(Int64Array::from(vec![10, 20, 30, 40])),
            ],
        )?;
        let (changes, new_rows) = split(&batch)?;
        assert_eq!(
            changes.num_rows(),
            3,
            "the unapplied source row stays behind"
        );
        assert_eq!(applied_rows(&changes), 3);
        let positions = changes
            .column(1)
            .as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        assert_eq!(
            positions.iter().collect::<Vec<_>>(),
            vec![Some(0), Some(3), None]
        );
        assert!(changes.column(3).is_null(0), "no data file yet");
        let values = new_rows
            .column(0)
            .as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        assert_eq!(values.values().to_vec(), vec![10, 30]);
        Ok(())
    }
}
