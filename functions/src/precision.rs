//! Lowering the precision of a timestamp or a time as Trino does: the value rounds half up
//! (Arrow's cast truncates toward zero, so `.1239` became `.123` and `23:59:59.9` before
//! 1970 rounded up), and a time that rounds up to midnight wraps to `00:00:00`.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, ArrowPrimitiveType, AsArray, PrimitiveArray};
use datafusion::arrow::datatypes::{
    DataType, Time32MillisecondType, Time64MicrosecondType, Time64NanosecondType, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};
use datafusion::arrow::error::ArrowError;
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, result};

/// The name the dialect calls: `sqe_round_fraction(value, digits)` rounds a timestamp or time
/// to `digits` fractional digits of a second, keeping its type; other values pass unchanged.
pub const ROUND_FRACTION: &str = "sqe_round_fraction";

/// Fractional digits of a second a unit holds.
fn unit_digits(unit: TimeUnit) -> u32 {
    match unit {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 3,
        TimeUnit::Microsecond => 6,
        TimeUnit::Nanosecond => 9,
    }
}

/// The fractional digits of a timestamp or time type; `None` for other types.
pub fn fraction_digits(data_type: &DataType) -> Option<u32> {
    match data_type {
        DataType::Timestamp(unit, _) | DataType::Time32(unit) | DataType::Time64(unit) => {
            Some(unit_digits(*unit))
        }
        _ => None,
    }
}

/// `value` rounded half up to `digits` fractional digits, in its own type. Times wrap at
/// midnight; a timestamp that would leave the 64-bit range is an error.
pub fn round_fraction(value: &ArrayRef, digits: u32) -> Result<ArrayRef, ArrowError> {
    let Some(held) = fraction_digits(value.data_type()) else {
        return Ok(Arc::clone(value));
    };
    if held <= digits {
        return Ok(Arc::clone(value));
    }
    let factor = 10_i64.pow(held - digits);
    let day = |unit: TimeUnit| 86_400 * 10_i64.pow(unit_digits(unit));
    Ok(match value.data_type() {
        DataType::Timestamp(unit, zone) => {
            let rounded: ArrayRef = match unit {
                TimeUnit::Second => Arc::new(rounded::<TimestampSecondType>(value, factor, None)?),
                TimeUnit::Millisecond => {
                    Arc::new(rounded::<TimestampMillisecondType>(value, factor, None)?)
                }
                TimeUnit::Microsecond => {
                    Arc::new(rounded::<TimestampMicrosecondType>(value, factor, None)?)
                }
                TimeUnit::Nanosecond => {
                    Arc::new(rounded::<TimestampNanosecondType>(value, factor, None)?)
                }
            };
            with_zone(rounded, *unit, zone.clone())
        }
        DataType::Time32(TimeUnit::Millisecond) => {
            let day = day(TimeUnit::Millisecond);
            Arc::new(
                value
                    .as_primitive::<Time32MillisecondType>()
                    .try_unary::<_, Time32MillisecondType, _>(|v| {
                        let v = round_half_up(i64::from(v), factor, Some(day))?;
                        i32::try_from(v).map_err(|_| out_of_range())
                    })?,
            )
        }
        DataType::Time32(_) => Arc::clone(value),
        DataType::Time64(unit @ TimeUnit::Microsecond) => Arc::new(
            rounded::<Time64MicrosecondType>(value, factor, Some(day(*unit)))?,
        ),
        DataType::Time64(unit) => Arc::new(rounded::<Time64NanosecondType>(
            value,
            factor,
            Some(day(*unit)),
        )?),
        _ => Arc::clone(value),
    })
}

fn with_zone(array: ArrayRef, unit: TimeUnit, zone: Option<Arc<str>>) -> ArrayRef {
    match unit {
        TimeUnit::Second => Arc::new(
            array
                .as_primitive::<TimestampSecondType>()
                .clone()
                .with_timezone_opt(zone),
        ),
        TimeUnit::Millisecond => Arc::new(
            array
                .as_primitive::<TimestampMillisecondType>()
                .clone()
                .with_timezone_opt(zone),
        ),
        TimeUnit::Microsecond => Arc::new(
            array
                .as_primitive::<TimestampMicrosecondType>()
                .clone()
                .with_timezone_opt(zone),
        ),
        TimeUnit::Nanosecond => Arc::new(
            array
                .as_primitive::<TimestampNanosecondType>()
                .clone()
                .with_timezone_opt(zone),
        ),
    }
}

fn rounded<T: ArrowPrimitiveType<Native = i64>>(
    value: &ArrayRef,
    factor: i64,
    wrap: Option<i64>,
) -> Result<PrimitiveArray<T>, ArrowError> {
    value
        .as_primitive::<T>()
        .try_unary::<_, T, _>(|v| round_half_up(v, factor, wrap))
}

fn out_of_range() -> ArrowError {
    ArrowError::ComputeError("timestamp out of range".to_string())
}

/// `v` to the nearest multiple of `factor`, halves up (toward the later instant), then
/// modulo `wrap`.
fn round_half_up(v: i64, factor: i64, wrap: Option<i64>) -> Result<i64, ArrowError> {
    let (quotient, rest) = (v.div_euclid(factor), v.rem_euclid(factor));
    let quotient = if rest * 2 >= factor {
        quotient.checked_add(1).ok_or_else(out_of_range)?
    } else {
        quotient
    };
    let rounded = quotient.checked_mul(factor).ok_or_else(out_of_range)?;
    Ok(wrap.map_or(rounded, |day| rounded.rem_euclid(day)))
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct RoundFraction {
    signature: Signature,
}

impl RoundFraction {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for RoundFraction {
    fn name(&self) -> &str {
        ROUND_FRACTION
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(t) => Ok(t.clone()),
            None => exec_err!("{ROUND_FRACTION} takes a value and a number of digits"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let digits = match args.args.get(1) {
            Some(ColumnarValue::Scalar(ScalarValue::Int64(Some(d)))) if (0..=9).contains(d) => {
                *d as u32
            }
            _ => return exec_err!("{ROUND_FRACTION} takes a constant number of digits, 0 to 9"),
        };
        let columns = arrays(&args)?;
        let Some(value) = columns.first() else {
            return exec_err!("{ROUND_FRACTION} takes a value and a number of digits");
        };
        result(&args, round_fraction(value, digits)?)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Time64NanosecondArray, TimestampMicrosecondArray};

    use super::*;

    #[test]
    fn halves_round_up_before_and_after_1970() -> Result<(), ArrowError> {
        // 12:34:56.1239, 12:34:56.5, 1969-12-31 23:59:59.1234 and .9995, in microseconds.
        let values: ArrayRef = Arc::new(
            TimestampMicrosecondArray::from(vec![
                Some(45_296_123_900),
                Some(45_296_500_000),
                Some(-876_600),
                Some(-500),
                None,
            ])
            .with_timezone("UTC"),
        );
        let millis = round_fraction(&values, 3)?;
        let millis = millis.as_primitive::<TimestampMicrosecondType>();
        assert_eq!(
            millis.iter().collect::<Vec<_>>(),
            [
                Some(45_296_124_000),
                Some(45_296_500_000),
                Some(-877_000),
                Some(0),
                None
            ]
        );
        assert_eq!(millis.timezone(), Some("UTC"));
        let seconds = round_fraction(&values, 0)?;
        assert_eq!(
            seconds.as_primitive::<TimestampMicrosecondType>().value(1),
            45_297_000_000
        );
        assert!(Arc::ptr_eq(&round_fraction(&values, 6)?, &values));
        Ok(())
    }

    #[test]
    fn a_time_that_rounds_to_midnight_wraps() -> Result<(), ArrowError> {
        let values: ArrayRef = Arc::new(Time64NanosecondArray::from(vec![86_399_999_999_500]));
        let rounded = round_fraction(&values, 6)?;
        assert_eq!(rounded.as_primitive::<Time64NanosecondType>().value(0), 0);
        Ok(())
    }

    #[test]
    fn the_edge_of_the_range_is_an_error_not_a_wrapped_instant() {
        let values: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![i64::MAX]));
        assert!(round_fraction(&values, 3).is_err());
    }
}
