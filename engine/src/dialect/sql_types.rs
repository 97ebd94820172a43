//! Trino's SQL type names as Arrow types, in casts, literals and column definitions.
//!
//! Where Arrow has the type, the value is exact: `timestamp(p)` keeps its precision's unit
//! (seconds, milli-, micro-, nanoseconds: a precision between two is stored in the finer one),
//! `timestamp with time zone` is the instant with the session's zone (or the literal's own),
//! `decimal` without a precision is Trino's `decimal(38,0)`. Types SQE cannot represent yet
//! are refused by name rather than planned as something else.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef, IntervalUnit, TimeUnit};
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::planner::TypePlanner;
use datafusion::sql::sqlparser::ast::{
    ArrayElemTypeDef, DataType as SqlType, ExactNumberInfo, TimezoneInfo,
};

use super::rewrite::TIMESTAMP_WITH_ZONE;

/// Plans Trino's types for one session (whose zone `timestamp with time zone` takes).
#[derive(Debug)]
pub struct TrinoTypes {
    pub session_zone: String,
}

fn not_supported(what: &str) -> DataFusionError {
    DataFusionError::NotImplemented(format!("type {what} is not supported by SQE"))
}

fn time_unit(precision: Option<u64>, default: u64) -> Result<(TimeUnit, u64)> {
    let precision = precision.unwrap_or(default);
    let unit = match precision {
        0 => TimeUnit::Second,
        1..=3 => TimeUnit::Millisecond,
        4..=6 => TimeUnit::Microsecond,
        7..=9 => TimeUnit::Nanosecond,
        p => {
            return Err(not_supported(&format!(
                "with precision {p} (SQE keeps time to the nanosecond, precision 9)"
            )));
        }
    };
    Ok((unit, precision))
}

impl TrinoTypes {
    fn plan(&self, sql_type: &SqlType) -> Result<Option<DataType>> {
        Ok(Some(match sql_type {
            SqlType::Decimal(info) | SqlType::Numeric(info) | SqlType::Dec(info) => match info {
                ExactNumberInfo::None => DataType::Decimal128(38, 0),
                ExactNumberInfo::Precision(p) => DataType::Decimal128(u8_of(*p)?, 0),
                ExactNumberInfo::PrecisionAndScale(p, s) => DataType::Decimal128(
                    u8_of(*p)?,
                    i8::try_from(*s).map_err(|_| not_supported("decimal scale"))?,
                ),
            },
            SqlType::Timestamp(precision, zone) => {
                // Trino's `timestamp` without a precision is `timestamp(3)`.
                let (unit, _) = time_unit(*precision, 3)?;
                let zone = match zone {
                    TimezoneInfo::None | TimezoneInfo::WithoutTimeZone => None,
                    TimezoneInfo::WithTimeZone | TimezoneInfo::Tz => {
                        Some(Arc::from(self.session_zone.as_str()))
                    }
                };
                DataType::Timestamp(unit, zone)
            }
            SqlType::Time(precision, zone) => {
                if matches!(zone, TimezoneInfo::WithTimeZone | TimezoneInfo::Tz) {
                    return Err(not_supported("time with time zone"));
                }
                match time_unit(*precision, 3)? {
                    (unit @ (TimeUnit::Second | TimeUnit::Millisecond), _) => {
                        DataType::Time32(unit)
                    }
                    (unit, _) => DataType::Time64(unit),
                }
            }
            SqlType::Varbinary(_) | SqlType::Binary(_) | SqlType::Bytea | SqlType::Blob(_) => {
                DataType::Binary
            }
            SqlType::Interval { fields, .. } => {
                use datafusion::sql::sqlparser::ast::IntervalFields as F;
                match fields {
                    Some(F::Year | F::Month | F::YearToMonth) => {
                        DataType::Interval(IntervalUnit::YearMonth)
                    }
                    Some(_) => DataType::Interval(IntervalUnit::DayTime),
                    None => return Ok(None),
                }
            }
            SqlType::Map(key, value) => {
                let (Some(key), Some(value)) = (self.plan_nested(key)?, self.plan_nested(value)?)
                else {
                    return Err(not_supported(&sql_type.to_string()));
                };
                let entries = Field::new_struct(
                    "entries",
                    vec![
                        Field::new("key", key, false),
                        Field::new("value", value, true),
                    ],
                    false,
                );
                DataType::Map(Arc::new(entries), false)
            }
            SqlType::Array(ArrayElemTypeDef::AngleBracket(element)) => {
                let Some(element) = self.plan_nested(element)? else {
                    return Ok(None);
                };
                DataType::List(Arc::new(Field::new("item", element, true)))
            }
            SqlType::JSON | SqlType::JSONB => return Err(not_supported("json")),
            // Marked `uuid` where the column is defined (see the engine's table properties).
            SqlType::Uuid => DataType::FixedSizeBinary(16),
            SqlType::Custom(name, arguments) => {
                let name = name.to_string();
                if name == TIMESTAMP_WITH_ZONE {
                    let precision = arguments.first().and_then(|p| p.parse().ok());
                    let (unit, _) = time_unit(precision, 3)?;
                    let zone = arguments.get(1).map(|z| Arc::from(z.as_str()));
                    DataType::Timestamp(unit, zone)
                } else {
                    return Err(not_supported(&name.to_lowercase()));
                }
            }
            _ => return Ok(None),
        }))
    }

    /// A type inside a map or array: ours, or DataFusion's for the plain ones.
    fn plan_nested(&self, sql_type: &SqlType) -> Result<Option<DataType>> {
        if let Some(t) = self.plan(sql_type)? {
            return Ok(Some(t));
        }
        Ok(Some(match sql_type {
            SqlType::Boolean | SqlType::Bool => DataType::Boolean,
            SqlType::TinyInt(_) => DataType::Int8,
            SqlType::SmallInt(_) => DataType::Int16,
            SqlType::Int(_) | SqlType::Integer(_) => DataType::Int32,
            SqlType::BigInt(_) => DataType::Int64,
            SqlType::Real | SqlType::Float4 => DataType::Float32,
            SqlType::Double(_) | SqlType::DoublePrecision | SqlType::Float8 => DataType::Float64,
            SqlType::Varchar(_)
            | SqlType::CharVarying(_)
            | SqlType::Char(_)
            | SqlType::Character(_)
            | SqlType::String(_)
            | SqlType::Text => DataType::Utf8,
            SqlType::Date => DataType::Date32,
            SqlType::Struct(..) => return Ok(None),
            other => return Err(not_supported(&other.to_string().to_lowercase())),
        }))
    }
}

fn u8_of(precision: u64) -> Result<u8> {
    u8::try_from(precision)
        .ok()
        .filter(|p| (1..=38).contains(p))
        .ok_or_else(|| not_supported(&format!("decimal({precision}) (precision is 1 to 38)")))
}

impl TypePlanner for TrinoTypes {
    fn plan_type_field(&self, sql_type: &SqlType) -> Result<Option<FieldRef>> {
        Ok(self
            .plan(sql_type)?
            .map(|data_type| Arc::new(Field::new("", data_type, true))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(sql_type: SqlType) -> Result<Option<DataType>> {
        TrinoTypes {
            session_zone: "Europe/Brussels".into(),
        }
        .plan(&sql_type)
    }

    #[test]
    fn timestamps_keep_the_unit_of_their_precision() -> Result<()> {
        assert_eq!(
            planned(SqlType::Timestamp(None, TimezoneInfo::None))?,
            Some(DataType::Timestamp(TimeUnit::Millisecond, None))
        );
        assert_eq!(
            planned(SqlType::Timestamp(Some(6), TimezoneInfo::WithTimeZone))?,
            Some(DataType::Timestamp(
                TimeUnit::Microsecond,
                Some("Europe/Brussels".into())
            ))
        );
        assert_eq!(
            planned(SqlType::Timestamp(Some(2), TimezoneInfo::None))?,
            Some(DataType::Timestamp(TimeUnit::Millisecond, None))
        );
        assert!(planned(SqlType::Timestamp(Some(12), TimezoneInfo::None)).is_err());
        Ok(())
    }

    #[test]
    fn decimal_without_precision_is_trinos() -> Result<()> {
        assert_eq!(
            planned(SqlType::Decimal(ExactNumberInfo::None))?,
            Some(DataType::Decimal128(38, 0))
        );
        Ok(())
    }

    #[test]
    fn types_sqe_lacks_are_refused_not_replaced() {
        assert!(planned(SqlType::JSON).is_err());
        assert!(planned(SqlType::Time(None, TimezoneInfo::WithTimeZone)).is_err());
    }

    #[test]
    fn uuid_columns_are_sixteen_bytes() -> Result<()> {
        assert_eq!(planned(SqlType::Uuid)?, Some(DataType::FixedSizeBinary(16)));
        Ok(())
    }
}
