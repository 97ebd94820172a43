//! SQL names of Arrow types, as Trino spells them (clients show these to users, and the
//! functions' errors name their arguments' types with them).
//!
//! The Arrow type carries the value; what it cannot say (a varchar's length, a char) a
//! field carries in its metadata under [`TRINO_TYPE`].

use datafusion::arrow::datatypes::{DataType, Field, TimeUnit};

pub use crate::bounded::TRINO_TYPE;

/// A Trino type: what an Arrow type is called and how its values are written for Trino clients.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrinoType {
    Unknown,
    Boolean,
    TinyInt,
    SmallInt,
    Integer,
    BigInt,
    Real,
    Double,
    Decimal {
        precision: u8,
        scale: i8,
    },
    /// `varchar`, or `varchar(n)` with its length.
    Varchar(Option<u32>),
    Char(u32),
    /// JSON text ([`crate::json_field`]).
    Json,
    /// 16 bytes ([`crate::SixteenBytes`]).
    Uuid,
    /// 16 bytes, an IPv6 address ([`crate::SixteenBytes`]).
    IpAddress,
    Varbinary,
    Date,
    Time {
        precision: u8,
    },
    Timestamp {
        precision: u8,
    },
    TimestampWithTimeZone {
        precision: u8,
    },
    IntervalYearToMonth,
    IntervalDayToSecond,
    Array(Box<TrinoType>),
    Map(Box<TrinoType>, Box<TrinoType>),
    Row(Vec<(String, TrinoType)>),
}

/// Trino's length of an unbounded varchar in type signatures.
const UNBOUNDED_VARCHAR: i64 = i32::MAX as i64;

impl TrinoType {
    /// The Trino type Arrow values of `data_type` are shown as.
    pub fn from_arrow(data_type: &DataType) -> Self {
        match data_type {
            DataType::Null => TrinoType::Unknown,
            DataType::Boolean => TrinoType::Boolean,
            DataType::Int8 => TrinoType::TinyInt,
            DataType::Int16 | DataType::UInt8 => TrinoType::SmallInt,
            DataType::Int32 | DataType::UInt16 => TrinoType::Integer,
            DataType::Int64 | DataType::UInt32 => TrinoType::BigInt,
            DataType::UInt64 => TrinoType::Decimal {
                precision: 20,
                scale: 0,
            },
            DataType::Float16 | DataType::Float32 => TrinoType::Real,
            DataType::Float64 => TrinoType::Double,
            DataType::Decimal32(p, s)
            | DataType::Decimal64(p, s)
            | DataType::Decimal128(p, s)
            | DataType::Decimal256(p, s) => TrinoType::Decimal {
                precision: *p,
                scale: *s,
            },
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => TrinoType::Varchar(None),
            DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_) => TrinoType::Varbinary,
            DataType::Date32 | DataType::Date64 => TrinoType::Date,
            DataType::Time32(unit) | DataType::Time64(unit) => TrinoType::Time {
                precision: precision(unit),
            },
            DataType::Timestamp(unit, None) => TrinoType::Timestamp {
                precision: precision(unit),
            },
            DataType::Timestamp(unit, Some(_)) => TrinoType::TimestampWithTimeZone {
                precision: precision(unit),
            },
            DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::YearMonth) => {
                TrinoType::IntervalYearToMonth
            }
            DataType::Interval(_) | DataType::Duration(_) => TrinoType::IntervalDayToSecond,
            DataType::List(f)
            | DataType::LargeList(f)
            | DataType::ListView(f)
            | DataType::LargeListView(f)
            | DataType::FixedSizeList(f, _) => {
                TrinoType::Array(Box::new(Self::from_arrow(f.data_type())))
            }
            DataType::Map(entries, _) => match entries.data_type() {
                DataType::Struct(fields) if fields.len() == 2 => TrinoType::Map(
                    Box::new(Self::from_arrow(fields[0].data_type())),
                    Box::new(Self::from_arrow(fields[1].data_type())),
                ),
                _ => TrinoType::Map(Box::new(TrinoType::Unknown), Box::new(TrinoType::Unknown)),
            },
            DataType::Struct(fields) => TrinoType::Row(
                fields
                    .iter()
                    .map(|f| (f.name().clone(), Self::from_arrow(f.data_type())))
                    .collect(),
            ),
            DataType::Dictionary(_, value) => Self::from_arrow(value),
            DataType::RunEndEncoded(_, values) => Self::from_arrow(values.data_type()),
            DataType::Union(..) => TrinoType::Unknown,
        }
    }

    /// The Trino type of a column: its Arrow type, made precise by [`TRINO_TYPE`] metadata.
    pub fn from_field(field: &Field) -> Self {
        match crate::SixteenBytes::of_field(field) {
            Some(crate::SixteenBytes::Uuid) => return TrinoType::Uuid,
            Some(crate::SixteenBytes::IpAddress) => return TrinoType::IpAddress,
            None => {}
        }
        let plain = Self::from_arrow(field.data_type());
        let Some(named) = field.metadata().get(TRINO_TYPE) else {
            return plain;
        };
        let length = |prefix: &str| {
            named
                .strip_prefix(prefix)
                .and_then(|rest| rest.strip_suffix(')'))
                .and_then(|n| n.parse::<u32>().ok())
        };
        match (&plain, length("varchar("), length("char(")) {
            (TrinoType::Varchar(_), _, _) if named == "json" => TrinoType::Json,
            (TrinoType::Varchar(_), Some(n), _) => TrinoType::Varchar(Some(n)),
            (TrinoType::Varchar(_), _, Some(n)) => TrinoType::Char(n),
            _ => plain,
        }
    }

    /// The type as a query's column names it to clients (`columns[].type`): Trino's client
    /// type signature, which spaces every argument list (`decimal(10, 2)`).
    pub fn client_name(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = self.write(&mut out, true);
        out
    }

    /// The name without parameters (`ClientTypeSignature.rawType`).
    pub fn raw_name(&self) -> &'static str {
        match self {
            TrinoType::Unknown => "unknown",
            TrinoType::Boolean => "boolean",
            TrinoType::TinyInt => "tinyint",
            TrinoType::SmallInt => "smallint",
            TrinoType::Integer => "integer",
            TrinoType::BigInt => "bigint",
            TrinoType::Real => "real",
            TrinoType::Double => "double",
            TrinoType::Decimal { .. } => "decimal",
            TrinoType::Varchar(_) => "varchar",
            TrinoType::Char(_) => "char",
            TrinoType::Json => "json",
            TrinoType::Uuid => "uuid",
            TrinoType::IpAddress => "ipaddress",
            TrinoType::Varbinary => "varbinary",
            TrinoType::Date => "date",
            TrinoType::Time { .. } => "time",
            TrinoType::Timestamp { .. } => "timestamp",
            TrinoType::TimestampWithTimeZone { .. } => "timestamp with time zone",
            TrinoType::IntervalYearToMonth => "interval year to month",
            TrinoType::IntervalDayToSecond => "interval day to second",
            TrinoType::Array(_) => "array",
            TrinoType::Map(..) => "map",
            TrinoType::Row(_) => "row",
        }
    }

    /// Trino's `ClientTypeSignature` JSON, which clients use to decode nested values.
    pub fn signature(&self) -> serde_json::Value {
        use serde_json::json;
        let long = |v: i64| json!({"kind": "LONG", "value": v});
        let of = |t: &TrinoType| json!({"kind": "TYPE", "value": t.signature()});
        let arguments = match self {
            TrinoType::Varchar(None) => vec![long(UNBOUNDED_VARCHAR)],
            TrinoType::Varchar(Some(n)) | TrinoType::Char(n) => vec![long(i64::from(*n))],
            TrinoType::Decimal { precision, scale } => {
                vec![long(i64::from(*precision)), long(i64::from(*scale))]
            }
            TrinoType::Time { precision }
            | TrinoType::Timestamp { precision }
            | TrinoType::TimestampWithTimeZone { precision } => vec![long(i64::from(*precision))],
            TrinoType::Array(element) => vec![of(element)],
            TrinoType::Map(key, value) => vec![of(key), of(value)],
            TrinoType::Row(fields) => fields
                .iter()
                .map(|(name, t)| {
                    json!({
                        "kind": "NAMED_TYPE",
                        "value": {
                            "fieldName": {"name": name},
                            "typeSignature": t.signature(),
                        }
                    })
                })
                .collect(),
            _ => Vec::new(),
        };
        json!({"rawType": self.raw_name(), "arguments": arguments})
    }
}

impl std::fmt::Display for TrinoType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.write(f, false)
    }
}

impl TrinoType {
    /// Trino's display name; `client` spaces a decimal's arguments as the client signature does.
    fn write(&self, f: &mut dyn std::fmt::Write, client: bool) -> std::fmt::Result {
        let nested = |t: &TrinoType| {
            if client {
                t.client_name()
            } else {
                t.to_string()
            }
        };
        match self {
            TrinoType::Decimal { precision, scale } if client => {
                write!(f, "decimal({precision}, {scale})")
            }
            TrinoType::Decimal { precision, scale } => write!(f, "decimal({precision},{scale})"),
            TrinoType::Varchar(Some(n)) => write!(f, "varchar({n})"),
            TrinoType::Char(n) => write!(f, "char({n})"),
            TrinoType::Time { precision } => write!(f, "time({precision})"),
            TrinoType::Timestamp { precision } => write!(f, "timestamp({precision})"),
            TrinoType::TimestampWithTimeZone { precision } => {
                write!(f, "timestamp({precision}) with time zone")
            }
            TrinoType::Array(element) => write!(f, "array({})", nested(element)),
            TrinoType::Map(key, value) => write!(f, "map({}, {})", nested(key), nested(value)),
            TrinoType::Row(fields) => {
                f.write_str("row(")?;
                for (i, (name, t)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    let t = nested(t);
                    if is_plain_identifier(name) {
                        write!(f, "{name} {t}")?;
                    } else {
                        write!(f, "\"{}\" {t}", name.replace('"', "\"\""))?;
                    }
                }
                f.write_str(")")
            }
            other => f.write_str(other.raw_name()),
        }
    }
}

/// Whether `name` reads the same unquoted in SQL (lower-case letters, digits, `_`).
fn is_plain_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The Trino type name of an Arrow type (`bigint`, `decimal(15,2)`, `timestamp(6) with time zone`).
pub fn trino_type_name(data_type: &DataType) -> String {
    TrinoType::from_arrow(data_type).to_string()
}

fn precision(unit: &TimeUnit) -> u8 {
    match unit {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 3,
        TimeUnit::Microsecond => 6,
        TimeUnit::Nanosecond => 9,
    }
}

/// The digits of the decimal that holds every value of an integer type (Trino's implicit
/// coercion); `None` for other types.
pub fn integer_digits(t: &DataType) -> Option<u8> {
    match t {
        DataType::Int8 => Some(3),
        DataType::Int16 => Some(5),
        DataType::Int32 => Some(10),
        DataType::Int64 => Some(19),
        _ => None,
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
