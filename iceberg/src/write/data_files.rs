//! `DataFileWriteExec`: the half of INSERT / CREATE TABLE AS that writes data files, wherever
//! its input runs (on the workers, in a distributed plan). Each input partition becomes data
//! files of the table; what travels on is one row per file: the file's Iceberg metadata.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{Distribution, EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, CardinalityEffect, EmissionType};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
};
use futures::stream;
use iceberg::spec::{
    DataFile, StructType, deserialize_data_file_from_json, serialize_data_file_to_json,
};
use iceberg::table::Table;
use tokio::runtime::Handle;
use tracing::Instrument;

use super::files::{CreatedFiles, write_partition};
use crate::error::iceberg_to_df;

/// The one column of a [`DataFileWriteExec`]'s output: a data file as Iceberg's JSON.
pub const DATA_FILE_COLUMN: &str = "data_file";

/// Writes each input partition into new data files of one Iceberg table (partitioned by its
/// default spec, rolled at its target file size), and yields one row per file written. The
/// files are not visible until [`super::IcebergWriteExec`] commits them. A partition that
/// fails, or whose stream is dropped before it yields its files, deletes what it wrote.
///
/// It holds no catalog, only the table's metadata and the storage properties to reach it,
/// so the codec ships it to workers: the rows are written where they are produced.
pub struct DataFileWriteExec {
    input: Arc<dyn ExecutionPlan>,
    table: Table,
    /// Storage properties a worker needs beyond its own (vended credentials, the local root).
    plan_props: HashMap<String, String>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

/// Names the table only: its FileIO holds storage credentials.
impl fmt::Debug for DataFileWriteExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DataFileWriteExec")
            .field("table", &self.table.identifier().to_string())
            .field("input", &self.input)
            .finish_non_exhaustive()
    }
}

impl DataFileWriteExec {
    pub fn new(
        input: Arc<dyn ExecutionPlan>,
        table: Table,
        plan_props: HashMap<String, String>,
    ) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(data_file_schema()),
            Partitioning::UnknownPartitioning(input.output_partitioning().partition_count()),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Self {
            input,
            table,
            plan_props,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    pub fn plan_props(&self) -> &HashMap<String, String> {
        &self.plan_props
    }
}

pub(crate) fn data_file_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        DATA_FILE_COLUMN,
        DataType::Utf8,
        false,
    )]))
}

impl DisplayAs for DataFileWriteExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DataFileWriteExec: table={}", self.table.identifier())
    }
}

impl ExecutionPlan for DataFileWriteExec {
    fn name(&self) -> &str {
        "DataFileWriteExec"
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

    /// Rows of one partition go to one writer (hashed on the partition's source columns), as
    /// Trino's preferred write partitioning does: a file per partition value and writer
    /// instead of one per writer that met it.
    fn required_input_distribution(&self) -> Vec<Distribution> {
        let metadata = self.table.metadata();
        let schema = metadata.current_schema();
        let input = self.input.schema();
        let columns: Option<Vec<Arc<dyn PhysicalExpr>>> = metadata
            .default_partition_spec()
            .fields()
            .iter()
            .map(|field| {
                let name = schema.name_by_field_id(field.source_id)?;
                let index = input.index_of(name).ok()?;
                Some(Arc::new(Column::new(name, index)) as Arc<dyn PhysicalExpr>)
            })
            .collect();
        match columns {
            Some(columns) if !columns.is_empty() => vec![Distribution::HashPartitioned(columns)],
            _ => vec![Distribution::UnspecifiedDistribution],
        }
    }

    fn cardinality_effect(&self) -> CardinalityEffect {
        CardinalityEffect::LowerEqual
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = children
            .pop()
            .filter(|_| children.is_empty())
            .ok_or_else(|| DataFusionError::Internal("DataFileWriteExec takes one input".into()))?;
        Ok(Arc::new(Self::new(
            input,
            self.table.clone(),
            self.plan_props.clone(),
        )))
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
        let table = self.table.clone();
        let counters = ["files_written", "rows_written", "bytes_written"]
            .map(|name| MetricBuilder::new(&self.metrics).counter(name, partition));
        let write = async move {
            let files = UncommittedFiles::new(table.clone());
            // Unique in the table, whichever worker and task this partition runs in.
            let prefix = uuid::Uuid::now_v7().to_string();
            match write_partition(&table, input, prefix, files.created().clone(), context).await {
                Ok(written) => {
                    let [files_written, rows_written, bytes_written] = &counters;
                    for file in &written.files {
                        files_written.add(1);
                        rows_written
                            .add(usize::try_from(file.record_count()).unwrap_or(usize::MAX));
                        bytes_written
                            .add(usize::try_from(file.file_size_in_bytes()).unwrap_or(usize::MAX));
                    }
                    let batch = data_files_batch(&table, written.files)?;
                    files.hand_over();
                    Ok(batch)
                }
                Err(e) => {
                    files.delete().await;
                    Err(e)
                }
            }
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            data_file_schema(),
            stream::once(write.in_current_span()),
        )))
    }
}

/// Files a statement created and no commit has taken yet. Dropped before they are handed
/// on (the query was cancelled or another partition failed), it deletes them in a task of
/// its own.
pub(crate) struct UncommittedFiles {
    table: Table,
    created: CreatedFiles,
    handed_over: bool,
}

impl UncommittedFiles {
    pub(crate) fn new(table: Table) -> Self {
        Self {
            table,
            created: CreatedFiles::default(),
            handed_over: false,
        }
    }

    /// Where writers record the files they create.
    pub(crate) fn created(&self) -> &CreatedFiles {
        &self.created
    }

    pub(crate) async fn delete(mut self) {
        self.handed_over = true;
        delete_files(&self.table, &self.created.locations()).await;
    }

    /// The files are on their way to (or in) the commit, which decides what becomes of them.
    pub(crate) fn hand_over(mut self) {
        self.handed_over = true;
    }
}

impl Drop for UncommittedFiles {
    fn drop(&mut self) {
        if self.handed_over {
            return;
        }
        let Ok(runtime) = Handle::try_current() else {
            tracing::warn!(table = %self.table.identifier(), "dropped outside a runtime: uncommitted data files stay");
            return;
        };
        let (table, locations) = (self.table.clone(), self.created.locations());
        runtime.spawn(
            async move {
                delete_files(&table, &locations).await;
                // A writer dropped while its file was being finished may still make it: the
                // store completes a put or rename already under way (a local rename on a
                // blocking thread, an S3 PUT whose body was sent). Once those have settled, the
                // files go again.
                tokio::time::sleep(SETTLED).await;
                delete_files(&table, &locations).await;
            }
            .in_current_span(),
        );
    }
}

/// How long a store may take to complete a write whose writer was dropped.
const SETTLED: std::time::Duration = std::time::Duration::from_secs(3);

/// Best effort: uncommitted files are invisible either way; this only gives the space back.
pub(crate) async fn delete_files(table: &Table, locations: &[String]) {
    for location in locations {
        if let Err(e) = table.file_io().delete(location).await {
            tracing::warn!(%location, error = %e, "could not delete an uncommitted data file");
        }
    }
}

/// The partition type of the table's default spec: the one its writers partition by.
fn write_partition_type(table: &Table) -> Result<StructType> {
    let metadata = table.metadata();
    metadata
        .default_partition_spec()
        .partition_type(metadata.current_schema())
        .map_err(iceberg_to_df)
}

pub(crate) fn data_files_batch(table: &Table, files: Vec<DataFile>) -> Result<RecordBatch> {
    let partition_type = write_partition_type(table)?;
    let version = table.metadata().format_version();
    let json = files
        .into_iter()
        .map(|file| serialize_data_file_to_json(file, &partition_type, version))
        .collect::<iceberg::Result<Vec<String>>>()
        .map_err(iceberg_to_df)?;
    Ok(RecordBatch::try_new(
        data_file_schema(),
        vec![Arc::new(StringArray::from(json))],
    )?)
}

/// The data files in a batch of a [`DataFileWriteExec`]'s output, written for `table`.
pub(crate) fn read_data_files(table: &Table, batch: &RecordBatch) -> Result<Vec<DataFile>> {
    let column = batch
        .column_by_name(DATA_FILE_COLUMN)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .ok_or_else(|| {
            DataFusionError::Internal(format!("no {DATA_FILE_COLUMN} column in written files"))
        })?;
    let metadata = table.metadata();
    let spec_id = metadata.default_partition_spec_id();
    let partition_type = write_partition_type(table)?;
    let schema = metadata.current_schema();
    (0..column.len())
        .filter(|row| column.is_valid(*row))
        .map(|row| {
            deserialize_data_file_from_json(column.value(row), spec_id, &partition_type, schema)
                .map_err(iceberg_to_df)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::racing::{TestResult, data_file, table_in_memory};

    #[tokio::test]
    async fn written_files_travel_as_rows_and_come_back_the_same() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (_catalog, table) = table_in_memory(dir.path()).await?;
        let files = vec![data_file(&table, "a")?, data_file(&table, "b")?];
        let batch = data_files_batch(&table, files.clone())?;
        assert_eq!(batch.num_rows(), 2);
        assert_eq!(read_data_files(&table, &batch)?, files);
        Ok(())
    }
}
