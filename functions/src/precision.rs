//! Lowering the precision of a timestamp or a time as Trino does: the value rounds half up
//! (Arrow's cast truncates toward zero, so `.1239` became `.123` and `23:59:59.9` before
//! 1970 rounded up), and a time that rounds up to midnight wraps to `00:00:00`.
//!
//! A decimal's scale is lowered by rounding first too, half away from zero as Arrow's cast
//! would: the cast that follows is then exact, so DataFusion's optimizer may drop it from a
//! comparison (`CAST(x AS decimal(3,1)) = 1.2` becomes `x = 1.20`) without changing the
//! answer. It did so with the rounding cast alone, comparing the unrounded value.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Int64Type, TimeUnit};
use datafusion::arrow::error::ArrowError;
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, result};
use crate::decimals::rescaled;

/// The name the dialect calls: `sqe_round_fraction(value, digits)` rounds a timestamp or time
/// to `digits` fractional digits of a second, or a decimal to `digits` decimal places,
/// keeping its type; other values pass unchanged.
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
fn fraction_digits(data_type: &DataType) -> Option<u32> {
    match data_type {
        DataType::Timestamp(unit, _) | DataType::Time32(unit) | DataType::Time64(unit) => {
            Some(unit_digits(*unit))
        }
        _ => None,
    }
}

/// The decimal places of a `decimal(p,s)` held in 128 bits (every SQE decimal).
fn decimal_places(data_type: &DataType) -> Option<u32> {
    match data_type {
        DataType::Decimal128(_, scale) => u32::try_from(*scale).ok(),
        _ => None,
    }
}

/// The fractional digits a cast from `source` to `target` keeps when it lowers a timestamp's
/// precision (to a timestamp), a time's (to a time) or a decimal's scale (to a decimal);
/// `None` for every other cast.
pub fn lowered_digits(source: &DataType, target: &DataType) -> Option<u32> {
    if let (Some(held), Some(places)) = (decimal_places(source), decimal_places(target)) {
        return (held > places).then_some(places);
    }
    let same_family = matches!(
        (source, target),
        (DataType::Timestamp(..), DataType::Timestamp(..))
            | (
                DataType::Time32(_) | DataType::Time64(_),
                DataType::Time32(_) | DataType::Time64(_)
            )
    );
    let (held, digits) = (fraction_digits(source)?, fraction_digits(target)?);
    (same_family && held > digits).then_some(digits)
}

/// `value` rounded half up to `digits` fractional digits, in its own type. Times wrap at
/// midnight; a timestamp that would leave the 64-bit range is an error.
pub fn round_fraction(value: &ArrayRef, digits: u32) -> Result<ArrayRef, ArrowError> {
    if let DataType::Decimal128(precision, scale) = value.data_type() {
        return round_decimal(value, *precision, *scale, digits);
    }
    let Some(held) = fraction_digits(value.data_type()) else {
        return Ok(Arc::clone(value));
    };
    if held <= digits {
        return Ok(Arc::clone(value));
    }
    let factor = 10_i64.pow(held - digits);
    // A time wraps at midnight: a day in the time's own unit.
    let wrap = matches!(value.data_type(), DataType::Time32(_) | DataType::Time64(_))
        .then(|| 86_400 * 10_i64.pow(held));
    // The stored integers (Arrow reinterprets them, zone and unit kept aside), rounded, and
    // read back as the value's own type; a Time32 holds 32-bit ones.
    let integer = match value.data_type() {
        DataType::Time32(_) => DataType::Int32,
        _ => DataType::Int64,
    };
    let stored = cast(&cast(value, &integer)?, &DataType::Int64)?;
    let rounded: ArrayRef = Arc::new(
        stored
            .as_primitive::<Int64Type>()
            .try_unary::<_, Int64Type, _>(|v| round_half_up(v, factor, wrap))?,
    );
    cast(&cast(&rounded, &integer)?, value.data_type())
}

/// A `decimal(precision, scale)` rounded half away from zero to `digits` places, in its type.
fn round_decimal(
    value: &ArrayRef,
    precision: u8,
    scale: i8,
    digits: u32,
) -> Result<ArrayRef, ArrowError> {
    let held = u32::try_from(scale).unwrap_or(0);
    if held <= digits {
        return Ok(Arc::clone(value));
    }
    let rounded = value
        .as_primitive::<Decimal128Type>()
        .try_unary::<_, Decimal128Type, _>(|v| {
            rescaled(v, held, digits)
                .and_then(|kept| rescaled(kept, digits, held))
                .ok_or_else(|| ArrowError::ComputeError("decimal out of range".to_string()))
        })?
        .with_precision_and_scale(precision, scale)?;
    Ok(Arc::new(rounded))
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
            Some(ColumnarValue::Scalar(ScalarValue::Int64(Some(d)))) if (0..=38).contains(d) => {
                *d as u32
            }
            _ => return exec_err!("{ROUND_FRACTION} takes a constant number of digits, 0 to 38"),
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
    use datafusion::arrow::array::{
        Time32MillisecondArray, Time64NanosecondArray, TimestampMicrosecondArray,
    };
    use datafusion::arrow::datatypes::{
        Time32MillisecondType, Time64NanosecondType, TimestampMicrosecondType,
    };

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
        // 12:34:56.789 to seconds, and 23:59:59.500 to midnight, in a 32-bit time.
        let values: ArrayRef = Arc::new(Time32MillisecondArray::from(vec![
            Some(45_296_789),
            Some(86_399_500),
            None,
        ]));
        let rounded = round_fraction(&values, 0)?;
        assert_eq!(rounded.data_type(), values.data_type());
        assert_eq!(
            rounded
                .as_primitive::<Time32MillisecondType>()
                .iter()
                .collect::<Vec<_>>(),
            [Some(45_297_000), Some(0), None]
        );
        Ok(())
    }

    #[test]
    fn a_decimal_rounds_half_away_from_zero_in_its_own_type() -> Result<(), ArrowError> {
        use datafusion::arrow::array::Decimal128Array;
        // 1.25, -1.25, 1.24, -1.26, 9.99 as decimal(3,2), rounded to one place.
        let values: ArrayRef = Arc::new(
            Decimal128Array::from(vec![
                Some(125),
                Some(-125),
                Some(124),
                Some(-126),
                Some(999),
                None,
            ])
            .with_precision_and_scale(3, 2)?,
        );
        let rounded = round_fraction(&values, 1)?;
        assert_eq!(rounded.data_type(), &DataType::Decimal128(3, 2));
        assert_eq!(
            rounded
                .as_primitive::<Decimal128Type>()
                .iter()
                .collect::<Vec<_>>(),
            [
                Some(130),
                Some(-130),
                Some(120),
                Some(-130),
                Some(1000),
                None
            ]
        );
        assert_eq!(
            lowered_digits(&DataType::Decimal128(3, 2), &DataType::Decimal128(5, 1)),
            Some(1)
        );
        assert_eq!(
            lowered_digits(&DataType::Decimal128(3, 1), &DataType::Decimal128(5, 2)),
            None
        );
        Ok(())
    }

    #[test]
    fn the_edge_of_the_range_is_an_error_not_a_wrapped_instant() {
        let values: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![i64::MAX]));
        assert!(round_fraction(&values, 3).is_err());
    }
}
