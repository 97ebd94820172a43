//! Metadata rows as plain cells, turned into one Arrow batch.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray,
    TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::error::{DataFusionError, Result as DfResult};

/// The column types metadata tables use: Trino's `varchar`, `bigint`, `double`, `boolean`
/// and `timestamp(3) with time zone` (in UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    Int,
    Double,
    Bool,
    Time,
}

fn utc_millis() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

/// A metadata table's name and columns.
#[derive(Debug)]
pub struct TableSpec {
    pub name: &'static str,
    pub columns: &'static [(&'static str, Kind)],
}

impl TableSpec {
    pub fn schema(&self) -> SchemaRef {
        let fields: Vec<Field> = self
            .columns
            .iter()
            .map(|(name, kind)| {
                let data_type = match kind {
                    Kind::Text => DataType::Utf8,
                    Kind::Int => DataType::Int64,
                    Kind::Double => DataType::Float64,
                    Kind::Bool => DataType::Boolean,
                    Kind::Time => utc_millis(),
                };
                Field::new(*name, data_type, true)
            })
            .collect();
        Arc::new(Schema::new(fields))
    }
}

/// One value of a metadata row.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(Option<String>),
    Int(Option<i64>),
    Double(Option<f64>),
    Bool(Option<bool>),
    /// Milliseconds since the epoch.
    Time(Option<i64>),
}

impl From<Option<chrono::DateTime<chrono::Utc>>> for Cell {
    fn from(v: Option<chrono::DateTime<chrono::Utc>>) -> Self {
        Cell::Time(v.map(|t| t.timestamp_millis()))
    }
}

impl From<&str> for Cell {
    fn from(v: &str) -> Self {
        Cell::Text(Some(v.to_string()))
    }
}

impl From<String> for Cell {
    fn from(v: String) -> Self {
        Cell::Text(Some(v))
    }
}

impl From<Option<String>> for Cell {
    fn from(v: Option<String>) -> Self {
        Cell::Text(v)
    }
}

impl From<i64> for Cell {
    fn from(v: i64) -> Self {
        Cell::Int(Some(v))
    }
}

impl From<Option<i64>> for Cell {
    fn from(v: Option<i64>) -> Self {
        Cell::Int(v)
    }
}

impl From<Option<f64>> for Cell {
    fn from(v: Option<f64>) -> Self {
        Cell::Double(v)
    }
}

impl From<bool> for Cell {
    fn from(v: bool) -> Self {
        Cell::Bool(Some(v))
    }
}

/// A null of any column type.
pub(super) const NULL: Cell = Cell::Text(None);

/// The rows as a batch of `schema`; a null cell fits any column.
pub(super) fn batch(schema: &SchemaRef, rows: Vec<Vec<Cell>>) -> DfResult<RecordBatch> {
    let mismatch = |column: &str| {
        DataFusionError::Internal(format!(
            "metadata column {column} got a value of another type"
        ))
    };
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    for (i, field) in schema.fields().iter().enumerate() {
        let cells = rows
            .iter()
            .map(|row| row.get(i).cloned().unwrap_or(NULL))
            .map(|c| match c {
                // Any null fits any column: reduce nulls to one shape.
                Cell::Int(None) | Cell::Double(None) | Cell::Bool(None) | Cell::Time(None) => NULL,
                c => c,
            });
        let column: ArrayRef = match field.data_type() {
            DataType::Timestamp(TimeUnit::Millisecond, _) => Arc::new(
                cells
                    .map(|c| match c {
                        Cell::Time(v) => Ok(v),
                        Cell::Text(None) => Ok(None),
                        _ => Err(mismatch(field.name())),
                    })
                    .collect::<DfResult<TimestampMillisecondArray>>()?
                    .with_timezone("UTC"),
            ),
            DataType::Int64 => Arc::new(
                cells
                    .map(|c| match c {
                        Cell::Int(v) => Ok(v),
                        Cell::Text(None) => Ok(None),
                        _ => Err(mismatch(field.name())),
                    })
                    .collect::<DfResult<Int64Array>>()?,
            ),
            DataType::Float64 => Arc::new(
                cells
                    .map(|c| match c {
                        Cell::Double(v) => Ok(v),
                        Cell::Text(None) => Ok(None),
                        _ => Err(mismatch(field.name())),
                    })
                    .collect::<DfResult<Float64Array>>()?,
            ),
            DataType::Boolean => Arc::new(
                cells
                    .map(|c| match c {
                        Cell::Bool(v) => Ok(v),
                        Cell::Text(None) => Ok(None),
                        _ => Err(mismatch(field.name())),
                    })
                    .collect::<DfResult<BooleanArray>>()?,
            ),
            _ => Arc::new(
                cells
                    .map(|c| match c {
                        Cell::Text(v) => Ok(v),
                        _ => Err(mismatch(field.name())),
                    })
                    .collect::<DfResult<StringArray>>()?,
            ),
        };
        columns.push(column);
    }
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: TableSpec = TableSpec {
        name: "t",
        columns: &[
            ("a", Kind::Text),
            ("b", Kind::Int),
            ("c", Kind::Bool),
            ("d", Kind::Double),
        ],
    };

    #[test]
    fn cells_become_typed_columns() -> DfResult<()> {
        let rows = vec![
            vec![
                Cell::from("x"),
                Cell::from(1),
                Cell::from(true),
                Cell::from(Some(0.5)),
            ],
            vec![NULL, NULL, NULL, Cell::from(None::<f64>)],
        ];
        let batch = batch(&SPEC.schema(), rows)?;
        assert_eq!(batch.num_rows(), 2);
        assert_eq!(batch.column(1).null_count(), 1);
        assert_eq!(batch.column(3).null_count(), 1);
        assert!(super::batch(&SPEC.schema(), vec![vec![Cell::from(1)]]).is_err());
        Ok(())
    }
}
