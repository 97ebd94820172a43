//! Turning one stream of record batches into Iceberg data files.

use std::sync::Arc;

use parking_lot::Mutex;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::Result;
use datafusion::execution::SendableRecordBatchStream;
use futures::StreamExt;
use iceberg::arrow::RecordBatchPartitionSplitter;
use iceberg::spec::{DataFile, DataFileFormat, PartitionKey};
use iceberg::table::Table;
use iceberg::writer::base_writer::data_file_writer::DataFileWriterBuilder;
use iceberg::writer::file_writer::ParquetWriterBuilder;
use iceberg::writer::file_writer::location_generator::{
    DefaultFileNameGenerator, DefaultLocationGenerator, LocationGenerator,
};
use iceberg::writer::file_writer::rolling_writer::RollingFileWriterBuilder;
use iceberg::writer::partitioning::PartitioningWriter;
use iceberg::writer::partitioning::fanout_writer::FanoutWriter;
use iceberg::writer::partitioning::unpartitioned_writer::UnpartitionedWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::error::iceberg_to_df;
use crate::types::{cast_batch, file_arrow_schema};

/// Every data file location the writers of one statement created, whether or not the file was
/// finished: what to delete when the statement fails.
#[derive(Clone, Debug, Default)]
pub struct CreatedFiles(Arc<Mutex<Vec<String>>>);

impl CreatedFiles {
    pub fn locations(&self) -> Vec<String> {
        self.0.lock().clone()
    }
}

/// Iceberg's default data file locations, remembered as they are handed out.
#[derive(Clone, Debug)]
struct TrackedLocations {
    inner: DefaultLocationGenerator,
    created: CreatedFiles,
}

impl LocationGenerator for TrackedLocations {
    fn generate_location(&self, partition_key: Option<&PartitionKey>, file_name: &str) -> String {
        let location = self.inner.generate_location(partition_key, file_name);
        {
            let mut created = self.created.0.lock();
            created.push(location.clone());
        }
        location
    }
}

/// What one writer produced.
#[derive(Debug, Default)]
pub struct WrittenFiles {
    pub files: Vec<DataFile>,
    pub rows: u64,
}

/// Writes every batch of `input` into data files of `table` (partitioned by its default spec)
/// named `{file_prefix}-NNNNN.parquet`. Files are not visible until a snapshot commits them.
pub async fn write_partition(
    table: &Table,
    mut input: SendableRecordBatchStream,
    file_prefix: String,
    created: CreatedFiles,
) -> Result<WrittenFiles> {
    let metadata = table.metadata();
    let iceberg_schema = metadata.current_schema().clone();
    let file_schema: SchemaRef = file_arrow_schema(&iceberg_schema)?;
    let properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let location = TrackedLocations {
        inner: DefaultLocationGenerator::new(metadata).map_err(iceberg_to_df)?,
        created,
    };
    let names = DefaultFileNameGenerator::new(file_prefix, None, DataFileFormat::Parquet);
    // The table's `write.target-file-size-bytes` (512 MB unless set).
    let target_file_size = metadata
        .table_properties()
        .map_err(iceberg_to_df)?
        .write_target_file_size_bytes;
    let rolling = RollingFileWriterBuilder::new(
        ParquetWriterBuilder::new(properties, Arc::clone(&iceberg_schema)),
        target_file_size,
        table.file_io().clone(),
        location,
        names,
    );
    let builder = DataFileWriterBuilder::new(rolling);
    let spec = metadata.default_partition_spec();
    let mut rows = 0u64;

    let files = if spec.is_unpartitioned() {
        let mut writer = UnpartitionedWriter::new(builder);
        while let Some(batch) = input.next().await {
            let batch = cast_batch(&batch?, &file_schema)?;
            rows += batch.num_rows() as u64;
            writer.write(batch).await.map_err(iceberg_to_df)?;
        }
        writer.close().await.map_err(iceberg_to_df)?
    } else {
        let splitter = RecordBatchPartitionSplitter::try_new_with_computed_values(
            Arc::clone(&iceberg_schema),
            Arc::clone(spec),
        )
        .map_err(iceberg_to_df)?;
        let mut writer = FanoutWriter::new(builder);
        while let Some(batch) = input.next().await {
            let batch = cast_batch(&batch?, &file_schema)?;
            rows += batch.num_rows() as u64;
            for (key, part) in splitter.split(&batch).map_err(iceberg_to_df)? {
                writer.write(key, part).await.map_err(iceberg_to_df)?;
            }
        }
        writer.close().await.map_err(iceberg_to_df)?
    };
    Ok(WrittenFiles { files, rows })
}
