//! Position delete files: which rows of one data file a DELETE removed.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use iceberg::io::FileIO;
use iceberg::spec::{DataContentType, DataFile, DataFileBuilder, DataFileFormat, Datum};
use iceberg::{Error, ErrorKind, Result};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

/// The field ids the spec reserves for a position delete file's columns.
const FILE_PATH_FIELD_ID: i32 = i32::MAX - 101;
const POS_FIELD_ID: i32 = i32::MAX - 102;

/// Writes `positions` (sorted) of `data_file` as a position delete file beside it, and
/// describes it for a delete manifest of the data file's partition spec `spec_id`.
pub(super) async fn write_position_deletes(
    io: &FileIO,
    data_file: &DataFile,
    spec_id: i32,
    positions: &[i64],
) -> Result<DataFile> {
    let path = data_file.file_path();
    let directory = path.rsplit_once('/').map_or(path, |(dir, _)| dir);
    let location = format!("{directory}/{}-deletes.parquet", uuid::Uuid::now_v7());
    let field = |name: &str, data_type, id: i32| {
        Field::new(name, data_type, false).with_metadata(HashMap::from([(
            parquet::arrow::PARQUET_FIELD_ID_META_KEY.to_string(),
            id.to_string(),
        )]))
    };
    let schema = Arc::new(Schema::new(vec![
        field("file_path", DataType::Utf8, FILE_PATH_FIELD_ID),
        field("pos", DataType::Int64, POS_FIELD_ID),
    ]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                path,
                positions.len(),
            ))),
            Arc::new(Int64Array::from(positions.to_vec())),
        ],
    )
    .map_err(|e| Error::new(ErrorKind::Unexpected, e.to_string()))?;
    let properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let mut bytes = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut bytes, schema, Some(properties))
        .map_err(|e| Error::new(ErrorKind::Unexpected, e.to_string()))?;
    writer
        .write(&batch)
        .and_then(|()| writer.close().map(drop))
        .map_err(|e| Error::new(ErrorKind::Unexpected, e.to_string()))?;
    let size = bytes.len() as u64;
    io.new_output(&location)?.write(bytes.into()).await?;
    let (first, last) = match (positions.first(), positions.last()) {
        (Some(first), Some(last)) => (*first, *last),
        _ => return Err(Error::new(ErrorKind::Unexpected, "no positions to delete")),
    };
    DataFileBuilder::default()
        .content(DataContentType::PositionDeletes)
        .file_path(location)
        .file_format(DataFileFormat::Parquet)
        .partition(data_file.partition().clone())
        .partition_spec_id(spec_id)
        .record_count(positions.len() as u64)
        .file_size_in_bytes(size)
        .lower_bounds(HashMap::from([
            (FILE_PATH_FIELD_ID, Datum::string(path)),
            (POS_FIELD_ID, Datum::long(first)),
        ]))
        .upper_bounds(HashMap::from([
            (FILE_PATH_FIELD_ID, Datum::string(path)),
            (POS_FIELD_ID, Datum::long(last)),
        ]))
        .referenced_data_file(Some(path.to_string()))
        .build()
        .map_err(|e| Error::new(ErrorKind::Unexpected, e.to_string()))
}
