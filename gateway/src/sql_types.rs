//! SQL names of Arrow types, as Trino spells them (clients show these to users).

use datafusion::arrow::datatypes::{DataType, TimeUnit};

/// The Trino type name of an Arrow type (`bigint`, `decimal(15,2)`, `timestamp(6) with time zone`).
pub fn trino_type_name(data_type: &DataType) -> String {
    match data_type {
        DataType::Null => "unknown".into(),
        DataType::Boolean => "boolean".into(),
        DataType::Int8 => "tinyint".into(),
        DataType::Int16 | DataType::UInt8 => "smallint".into(),
        DataType::Int32 | DataType::UInt16 => "integer".into(),
        DataType::Int64 | DataType::UInt32 => "bigint".into(),
        DataType::UInt64 => "decimal(20,0)".into(),
        DataType::Float16 | DataType::Float32 => "real".into(),
        DataType::Float64 => "double".into(),
        DataType::Decimal32(p, s)
        | DataType::Decimal64(p, s)
        | DataType::Decimal128(p, s)
        | DataType::Decimal256(p, s) => {
            format!("decimal({p},{s})")
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "varchar".into(),
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => "varbinary".into(),
        DataType::Date32 | DataType::Date64 => "date".into(),
        DataType::Time32(unit) | DataType::Time64(unit) => format!("time({})", precision(unit)),
        DataType::Timestamp(unit, None) => format!("timestamp({})", precision(unit)),
        DataType::Timestamp(unit, Some(_)) => {
            format!("timestamp({}) with time zone", precision(unit))
        }
        DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::YearMonth) => {
            "interval year to month".into()
        }
        DataType::Interval(_) | DataType::Duration(_) => "interval day to second".into(),
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _) => {
            format!("array({})", trino_type_name(f.data_type()))
        }
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(fields) if fields.len() == 2 => format!(
                "map({}, {})",
                trino_type_name(fields[0].data_type()),
                trino_type_name(fields[1].data_type())
            ),
            _ => "map(unknown, unknown)".into(),
        },
        DataType::Struct(fields) => format!(
            "row({})",
            fields
                .iter()
                .map(|f| format!("\"{}\" {}", f.name(), trino_type_name(f.data_type())))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        DataType::Dictionary(_, value) => trino_type_name(value),
        DataType::RunEndEncoded(_, values) => trino_type_name(values.data_type()),
        other => other.to_string().to_ascii_lowercase(),
    }
}

fn precision(unit: &TimeUnit) -> u8 {
    match unit {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 3,
        TimeUnit::Microsecond => 6,
        TimeUnit::Nanosecond => 9,
    }
}

/// Precision and scale as JDBC reports them: digits for numbers, characters for text.
pub fn precision_and_scale(data_type: &DataType) -> (Option<i32>, Option<i32>) {
    match data_type {
        DataType::Int8 => (Some(3), Some(0)),
        DataType::Int16 => (Some(5), Some(0)),
        DataType::Int32 => (Some(10), Some(0)),
        DataType::Int64 => (Some(19), Some(0)),
        DataType::Float32 => (Some(24), None),
        DataType::Float64 => (Some(53), None),
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => {
            (Some(i32::from(*p)), Some(i32::from(*s)))
        }
        DataType::Date32 | DataType::Date64 => (Some(10), Some(0)),
        DataType::Timestamp(unit, _) => (
            Some(19 + i32::from(precision(unit)) + 1),
            Some(i32::from(precision(unit))),
        ),
        _ => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::datatypes::Field;

    use super::*;

    #[test]
    fn names_as_trino_spells_them() {
        assert_eq!(trino_type_name(&DataType::Int64), "bigint");
        assert_eq!(
            trino_type_name(&DataType::Decimal128(15, 2)),
            "decimal(15,2)"
        );
        assert_eq!(trino_type_name(&DataType::Utf8View), "varchar");
        assert_eq!(
            trino_type_name(&DataType::Timestamp(
                TimeUnit::Microsecond,
                Some("+00:00".into())
            )),
            "timestamp(6) with time zone"
        );
        let list = DataType::List(Arc::new(Field::new("item", DataType::Int32, true)));
        assert_eq!(trino_type_name(&list), "array(integer)");
    }
}
