//! The positions of a data file that its position delete files already remove.

use datafusion::arrow::array::{Array, Int64Array, StringArray};
use iceberg::io::FileIO;
use iceberg::scan::FileScanTaskDeleteFile;
use iceberg::spec::DataContentType;
use iceberg::{Error, ErrorKind, Result};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// Sorted, without repeats. Equality deletes are refused: which rows they remove depends on
/// values, not positions, and SQE does not evaluate them for DELETE yet.
pub(super) async fn deleted_positions(
    io: &FileIO,
    data_file: &str,
    deletes: &[FileScanTaskDeleteFile],
) -> Result<Vec<i64>> {
    let mut positions = Vec::new();
    for delete in deletes {
        match delete.file_type {
            DataContentType::PositionDeletes => {
                read_positions(io, &delete.file_path, data_file, &mut positions).await?;
            }
            DataContentType::EqualityDeletes => {
                return Err(Error::new(
                    ErrorKind::FeatureUnsupported,
                    format!(
                        "DELETE on data file {data_file}, which has equality deletes ({}); \
                         compact the table first",
                        delete.file_path
                    ),
                ));
            }
            DataContentType::Data => {}
        }
    }
    positions.sort_unstable();
    positions.dedup();
    Ok(positions)
}

/// Appends the positions `delete_file` records for `data_file`.
async fn read_positions(
    io: &FileIO,
    delete_file: &str,
    data_file: &str,
    positions: &mut Vec<i64>,
) -> Result<()> {
    let unreadable = |why: String| {
        Error::new(
            ErrorKind::DataInvalid,
            format!("position delete file {delete_file}: {why}"),
        )
    };
    let bytes = io.new_input(delete_file)?.read().await?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .and_then(|b| b.build())
        .map_err(|e| unreadable(e.to_string()))?;
    for batch in reader {
        let batch = batch.map_err(|e| unreadable(e.to_string()))?;
        let paths = batch
            .column_by_name("file_path")
            .and_then(|c| c.as_any().downcast_ref::<StringArray>())
            .ok_or_else(|| unreadable("no string column file_path".into()))?;
        let pos = batch
            .column_by_name("pos")
            .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
            .ok_or_else(|| unreadable("no bigint column pos".into()))?;
        for row in 0..batch.num_rows() {
            if paths.is_valid(row) && pos.is_valid(row) && paths.value(row) == data_file {
                positions.push(pos.value(row));
            }
        }
    }
    Ok(())
}
