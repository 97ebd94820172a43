//! Writing rows in the table's sort order (Trino's `sorted_by`): each writer sorts what it
//! writes, so every data file it produces is sorted and says so with its `sort_order_id`.
//!
//! Sorting runs as DataFusion's `SortExec` over the writer's input, so it spills to disk under
//! the query's memory limit instead of holding a large write in memory.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::expressions::Column;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use iceberg::spec::{DataFileBuilder, NullOrder, SortDirection, TableMetadata, Transform};
use iceberg::writer::CurrentFileStatus;
use iceberg::writer::file_writer::{FileWriter, FileWriterBuilder};
use parking_lot::Mutex;

/// How a write orders its rows: the table's default sort order as an ordering of the written
/// columns, and its id for the files.
#[derive(Debug, Clone)]
pub(crate) struct WriteOrdering {
    pub(crate) order_id: i32,
    ordering: LexOrdering,
}

impl WriteOrdering {
    /// The table's default sort order over `columns` (the rows as written), or `None` when the
    /// table is unsorted or sorts by something SQE does not order by when writing (a transform
    /// or a nested field): its files are then written unsorted and claim no order, which
    /// Iceberg allows.
    pub(crate) fn of(metadata: &TableMetadata, columns: &SchemaRef) -> Result<Option<Self>> {
        let order = metadata.default_sort_order();
        if order.is_unsorted() {
            return Ok(None);
        }
        let schema = metadata.current_schema();
        let mut sort_exprs = Vec::with_capacity(order.fields.len());
        for field in &order.fields {
            if field.transform != Transform::Identity {
                return Ok(None);
            }
            // Only top-level columns: a nested field's name has a dot and no column of its own.
            let Some(name) = schema
                .as_struct()
                .fields()
                .iter()
                .find(|f| f.id == field.source_id)
                .map(|f| f.name.as_str())
            else {
                return Ok(None);
            };
            let Ok(index) = columns.index_of(name) else {
                return Ok(None);
            };
            sort_exprs.push(PhysicalSortExpr::new(
                Arc::new(Column::new(name, index)),
                SortOptions {
                    descending: field.direction == SortDirection::Descending,
                    nulls_first: field.null_order == NullOrder::First,
                },
            ));
        }
        let order_id = i32::try_from(order.order_id).map_err(|_| {
            DataFusionError::Internal(format!("sort order id {} out of range", order.order_id))
        })?;
        Ok(LexOrdering::new(sort_exprs).map(|ordering| Self { order_id, ordering }))
    }

    /// `input` sorted, spilling under `context`'s memory pool.
    pub(crate) fn sort(
        &self,
        input: SendableRecordBatchStream,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let schema = input.schema();
        let source = StreamingTableExec::try_new(
            Arc::clone(&schema),
            vec![Arc::new(OneStream {
                schema,
                stream: Mutex::new(Some(input)),
            })],
            None,
            [],
            false,
            None,
        )?;
        SortExec::new(self.ordering.clone(), Arc::new(source)).execute(0, context)
    }
}

/// A stream that is already running, as a partition of a plan that runs it once.
struct OneStream {
    schema: SchemaRef,
    stream: Mutex<Option<SendableRecordBatchStream>>,
}

impl fmt::Debug for OneStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OneStream").finish_non_exhaustive()
    }
}

impl PartitionStream for OneStream {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        match self.stream.lock().take() {
            Some(stream) => stream,
            None => Box::pin(
                datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(
                    Arc::clone(&self.schema),
                    futures::stream::once(async {
                        Err(DataFusionError::Internal(
                            "a write's input stream was run twice".into(),
                        ))
                    }),
                ),
            ),
        }
    }
}

/// A file writer builder whose files record the sort order their rows were written in.
#[derive(Clone)]
pub(crate) struct SortedFiles<B> {
    pub(crate) inner: B,
    pub(crate) order_id: Option<i32>,
}

impl<B: FileWriterBuilder> FileWriterBuilder for SortedFiles<B> {
    type R = SortedFile<B::R>;

    async fn build(&self, output_file: iceberg::io::OutputFile) -> iceberg::Result<Self::R> {
        Ok(SortedFile {
            inner: self.inner.build(output_file).await?,
            order_id: self.order_id,
        })
    }
}

/// One file of [`SortedFiles`].
pub(crate) struct SortedFile<W> {
    inner: W,
    order_id: Option<i32>,
}

impl<W: FileWriter> FileWriter for SortedFile<W> {
    async fn write(
        &mut self,
        batch: &datafusion::arrow::array::RecordBatch,
    ) -> iceberg::Result<()> {
        self.inner.write(batch).await
    }

    async fn close(self) -> iceberg::Result<Vec<DataFileBuilder>> {
        let mut files = self.inner.close().await?;
        if let Some(id) = self.order_id {
            for file in &mut files {
                file.sort_order_id(id);
            }
        }
        Ok(files)
    }
}

impl<W: FileWriter> CurrentFileStatus for SortedFile<W> {
    fn current_file_path(&self) -> String {
        self.inner.current_file_path()
    }

    fn current_row_num(&self) -> usize {
        self.inner.current_row_num()
    }

    fn current_written_size(&self) -> usize {
        self.inner.current_written_size()
    }
}
