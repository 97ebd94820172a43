//! Turning one stream of record batches into Iceberg data files.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
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
use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::WriterProperties;

use super::sorting::{SortedFiles, WriteOrdering};
use crate::error::{TableError, iceberg_to_df};
use crate::types::{cast_batch, file_arrow_schema};

/// Every data file location the writers of one statement created, whether or not the file was
/// finished: what to delete when the statement fails.
#[derive(Clone, Debug, Default)]
pub struct CreatedFiles(Arc<Mutex<Vec<String>>>);

impl CreatedFiles {
    pub fn locations(&self) -> Vec<String> {
        self.0.lock().clone()
    }

    pub fn add(&self, location: &str) {
        self.0.lock().push(location.to_string());
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
        self.created.add(&location);
        location
    }
}

/// What one writer produced.
#[derive(Debug, Default)]
pub struct WrittenFiles {
    pub files: Vec<DataFile>,
    pub rows: u64,
}

/// Writes every batch of `input` into data files of `table` (partitioned by its default spec,
/// each file's rows in its default sort order) named `{file_prefix}-NNNNN.parquet`. Files are
/// not visible until a snapshot commits them. `context` bounds the memory a sort takes.
pub async fn write_partition(
    table: &Table,
    input: SendableRecordBatchStream,
    file_prefix: String,
    created: CreatedFiles,
    context: Arc<TaskContext>,
) -> Result<WrittenFiles> {
    let metadata = table.metadata();
    let ordering = WriteOrdering::of(metadata, &input.schema())?;
    let mut input = match &ordering {
        Some(ordering) => ordering.sort(input, context)?,
        None => input,
    };
    let iceberg_schema = metadata.current_schema().clone();
    let file_schema: SchemaRef = file_arrow_schema(&iceberg_schema)?;
    let properties = WriterProperties::builder()
        .set_compression(parquet_compression(metadata.properties())?)
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
        SortedFiles {
            inner: ParquetWriterBuilder::new(properties, Arc::clone(&iceberg_schema)),
            order_id: ordering.map(|o| o.order_id),
        },
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
    WRITTEN.add(&files);
    Ok(WrittenFiles { files, rows })
}

/// The table's `write.parquet.compression-codec` and `write.parquet.compression-level`, as
/// Iceberg names them (zstd unless set). An unknown codec fails the write: a table that
/// asks for one must not silently get another.
fn parquet_compression(
    properties: &std::collections::HashMap<String, String>,
) -> Result<Compression> {
    let level = properties
        .get("write.parquet.compression-level")
        .map(|l| {
            l.trim().parse::<i32>().map_err(|_| {
                DataFusionError::from(TableError::NotSupported(format!(
                    "write.parquet.compression-level '{l}' is not a number"
                )))
            })
        })
        .transpose()?;
    let codec = properties
        .get("write.parquet.compression-codec")
        .map_or("zstd", String::as_str)
        .to_ascii_lowercase();
    let bad_level = |e: parquet::errors::ParquetError| {
        DataFusionError::from(TableError::NotSupported(format!(
            "write.parquet.compression-level for {codec}: {e}"
        )))
    };
    Ok(match codec.as_str() {
        "zstd" => Compression::ZSTD(match level {
            Some(level) => ZstdLevel::try_new(level).map_err(bad_level)?,
            None => ZstdLevel::default(),
        }),
        "gzip" => Compression::GZIP(match level {
            Some(level) => {
                GzipLevel::try_new(u32::try_from(level).unwrap_or(u32::MAX)).map_err(bad_level)?
            }
            None => GzipLevel::default(),
        }),
        "brotli" => Compression::BROTLI(match level {
            Some(level) => {
                BrotliLevel::try_new(u32::try_from(level).unwrap_or(u32::MAX)).map_err(bad_level)?
            }
            None => BrotliLevel::default(),
        }),
        "snappy" => Compression::SNAPPY,
        "lz4" => Compression::LZ4_RAW,
        "uncompressed" | "none" => Compression::UNCOMPRESSED,
        other => {
            return Err(TableError::NotSupported(format!(
                "write.parquet.compression-codec '{other}' (zstd, gzip, brotli, snappy, lz4 or uncompressed)"
            ))
            .into());
        }
    })
}

/// What this process's writers have written since it started, for `/metrics`.
#[derive(Debug, Default)]
pub struct WriteTotals {
    files: AtomicU64,
    rows: AtomicU64,
    bytes: AtomicU64,
}

/// This process's write totals (every role writes through [`write_partition`]).
pub static WRITTEN: WriteTotals = WriteTotals {
    files: AtomicU64::new(0),
    rows: AtomicU64::new(0),
    bytes: AtomicU64::new(0),
};

impl WriteTotals {
    fn add(&self, files: &[DataFile]) {
        for file in files {
            self.files.fetch_add(1, Ordering::Relaxed);
            self.rows.fetch_add(file.record_count(), Ordering::Relaxed);
            self.bytes
                .fetch_add(file.file_size_in_bytes(), Ordering::Relaxed);
        }
    }

    /// Data files written (finished, whether or not a commit took them).
    pub fn files(&self) -> u64 {
        self.files.load(Ordering::Relaxed)
    }

    pub fn rows(&self) -> u64 {
        self.rows.load(Ordering::Relaxed)
    }

    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn codec(pairs: &[(&str, &str)]) -> Result<Compression> {
        let properties: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        parquet_compression(&properties)
    }

    #[test]
    fn data_files_are_compressed_as_the_table_says() -> Result<()> {
        assert_eq!(codec(&[])?, Compression::ZSTD(ZstdLevel::default()));
        let snappy = [("write.parquet.compression-codec", "SNAPPY")];
        assert_eq!(codec(&snappy)?, Compression::SNAPPY);
        let gzip = [
            ("write.parquet.compression-codec", "gzip"),
            ("write.parquet.compression-level", "9"),
        ];
        assert_eq!(codec(&gzip)?, Compression::GZIP(GzipLevel::try_new(9)?));
        let zstd = [("write.parquet.compression-level", "3")];
        assert_eq!(codec(&zstd)?, Compression::ZSTD(ZstdLevel::try_new(3)?));
        let plain = [("write.parquet.compression-codec", "uncompressed")];
        assert_eq!(codec(&plain)?, Compression::UNCOMPRESSED);
        // A codec or level the writer cannot honour fails the write, not silently another.
        assert!(codec(&[("write.parquet.compression-codec", "lzo")]).is_err());
        assert!(codec(&[("write.parquet.compression-level", "high")]).is_err());
        assert!(codec(&[("write.parquet.compression-level", "99")]).is_err());
        Ok(())
    }
}
