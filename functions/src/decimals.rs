//! Decimal division as Trino does it: `decimal(p1,s1) / decimal(p2,s2)` is a
//! `decimal(min(38, p1 + s2 + max(0, s2 - s1)), max(s1, s2))`, rounded half away from zero.
//! DataFusion's answers a much wider scale, truncated (`DECIMAL '2.00' / DECIMAL '3'`:
//! `0.6666666666` where Trino says `0.67`). The dialect calls it for every
//! division of two decimals (an integer operand taken as the decimal that holds it).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, Decimal128Array};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, i256};
use datafusion::arrow::error::ArrowError;
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, result};

/// The function's name: `sqe_decimal_divide(dividend, divisor)`.
const DECIMAL_DIVIDE: &str = "sqe_decimal_divide";

const MAX_PRECISION: u8 = 38;

/// The type of the quotient of `decimal(p1,s1) / decimal(p2,s2)`, by Trino's rule (which
/// `p2` does not enter).
fn quotient_type((p1, s1): (u8, i8), divisor_scale: i8) -> DataType {
    let (s1, s2) = (i16::from(s1.max(0)), i16::from(divisor_scale.max(0)));
    let precision = i16::from(p1) + s2 + (s2 - s1).max(0);
    let precision = precision.clamp(1, i16::from(MAX_PRECISION)) as u8;
    let scale = s1.max(s2).min(i16::from(precision)) as i8;
    DataType::Decimal128(precision, scale)
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct DecimalDivide {
    signature: Signature,
}

impl DecimalDivide {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

fn decimal_parts(t: &DataType) -> Option<(u8, i8)> {
    match t {
        DataType::Decimal128(p, s) => Some((*p, *s)),
        _ => None,
    }
}

impl ScalarUDFImpl for DecimalDivide {
    fn name(&self) -> &str {
        DECIMAL_DIVIDE
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [a, b] => match (decimal_parts(a), decimal_parts(b)) {
                (Some(a), Some((_, s2))) => Ok(quotient_type(a, s2)),
                _ => plan_err!("{DECIMAL_DIVIDE} divides two decimals, not {a} by {b}"),
            },
            _ => plan_err!("{DECIMAL_DIVIDE} takes a dividend and a divisor"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [dividend, divisor] = columns.as_slice() else {
            return exec_err!("{DECIMAL_DIVIDE} takes a dividend and a divisor");
        };
        let (Some(a), Some(b)) = (
            decimal_parts(dividend.data_type()),
            decimal_parts(divisor.data_type()),
        ) else {
            return exec_err!("{DECIMAL_DIVIDE} divides two decimals");
        };
        let DataType::Decimal128(precision, scale) = quotient_type(a, b.1) else {
            return exec_err!("{DECIMAL_DIVIDE}: not a decimal quotient");
        };
        // a / 10^s1 divided by b / 10^s2, at scale s: a * 10^(s - s1 + s2) / b.
        let shift = i32::from(scale) - i32::from(a.1.max(0)) + i32::from(b.1.max(0));
        let factor = i256::from_i128(10)
            .checked_pow(u32::try_from(shift).unwrap_or(0))
            .ok_or_else(|| ArrowError::ArithmeticOverflow("decimal division".into()))?;
        let limit = i256::from_i128(10_i128.pow(u32::from(precision)));
        let quotients: Decimal128Array = datafusion::arrow::compute::kernels::arity::try_binary(
            dividend.as_primitive::<Decimal128Type>(),
            divisor.as_primitive::<Decimal128Type>(),
            |a, b| divide(a, b, factor, limit, precision, scale),
        )?;
        let quotients: ArrayRef = Arc::new(quotients.with_precision_and_scale(precision, scale)?);
        result(&args, quotients)
    }
}

/// A decimal's unscaled `value` at scale `from`, written at scale `to`: exact when the scale
/// grows, rounded half away from zero (as Trino rounds decimals) when it shrinks; `None` when
/// the answer or the power of ten does not fit an i128.
pub(crate) fn rescaled(value: i128, from: u32, to: u32) -> Option<i128> {
    if to >= from {
        return value.checked_mul(10i128.checked_pow(to - from)?);
    }
    let divisor = 10i128.checked_pow(from - to)?;
    let (quotient, remainder) = (value / divisor, value % divisor);
    // Unsigned: twice a remainder below 10^38 does not fit an i128.
    Some(if remainder.unsigned_abs() * 2 >= divisor.unsigned_abs() {
        quotient + value.signum()
    } else {
        quotient
    })
}

/// `a * factor / b` rounded half away from zero, refused when it has more than `precision`
/// digits.
fn divide(
    a: i128,
    b: i128,
    factor: i256,
    limit: i256,
    precision: u8,
    scale: i8,
) -> Result<i128, ArrowError> {
    if b == 0 {
        return Err(ArrowError::DivideByZero);
    }
    let overflow = || {
        ArrowError::ArithmeticOverflow(format!(
            "Decimal overflow: the quotient does not fit decimal({precision}, {scale})"
        ))
    };
    let numerator = i256::from_i128(a)
        .checked_mul(factor)
        .ok_or_else(overflow)?;
    let divisor = i256::from_i128(b);
    let (quotient, rest) = (
        numerator.wrapping_div(divisor),
        numerator.wrapping_rem(divisor),
    );
    let twice_rest = rest
        .wrapping_abs()
        .checked_mul(i256::from_i128(2))
        .ok_or_else(overflow)?;
    let quotient = if twice_rest >= divisor.wrapping_abs() {
        // Away from zero: the quotient's sign is the operands' product's.
        let away = if (a < 0) == (b < 0) {
            i256::ONE
        } else {
            i256::MINUS_ONE
        };
        quotient.checked_add(away).ok_or_else(overflow)?
    } else {
        quotient
    };
    if quotient.wrapping_abs() >= limit {
        return Err(overflow());
    }
    quotient.to_i128().ok_or_else(overflow)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `a` over `b`, both given as (unscaled, precision, scale), as Trino's quotient.
    fn quotient(a: (i128, u8, i8), b: (i128, u8, i8)) -> Result<(i128, DataType), ArrowError> {
        let t = quotient_type((a.1, a.2), b.2);
        let DataType::Decimal128(precision, scale) = t else {
            return Err(ArrowError::ComputeError(format!("{t} is not a decimal")));
        };
        let shift = i32::from(scale) - i32::from(a.2) + i32::from(b.2);
        let factor = i256::from_i128(10_i128.pow(shift as u32));
        let limit = i256::from_i128(10_i128.pow(u32::from(precision)));
        Ok((divide(a.0, b.0, factor, limit, precision, scale)?, t))
    }

    #[test]
    fn quotients_take_trinos_type_and_round_half_away_from_zero() -> Result<(), ArrowError> {
        // DECIMAL '2.00' / DECIMAL '3' = 0.67 as decimal(3, 2).
        assert_eq!(
            quotient((200, 3, 2), (3, 1, 0))?,
            (67, DataType::Decimal128(3, 2))
        );
        // 1.00 / 3 = 0.33; -2.00 / 3 = -0.67; 2.00 / -3 = -0.67.
        assert_eq!(quotient((100, 3, 2), (3, 1, 0))?.0, 33);
        assert_eq!(quotient((-200, 3, 2), (3, 1, 0))?.0, -67);
        assert_eq!(quotient((200, 3, 2), (-3, 1, 0))?.0, -67);
        // 1 / 0.3 (decimal(1,0) by decimal(1,1)): decimal(3, 1) 3.3.
        assert_eq!(
            quotient((1, 1, 0), (3, 1, 1))?,
            (33, DataType::Decimal128(3, 1))
        );
        // 0.5 / 2 = 0.25 at scale 1 rounds to 0.3.
        assert_eq!(quotient((5, 1, 1), (2, 1, 0))?.0, 3);
        assert!(matches!(
            quotient((1, 1, 0), (0, 1, 0)),
            Err(ArrowError::DivideByZero)
        ));
        Ok(())
    }

    #[test]
    fn a_quotient_too_wide_for_its_type_is_an_overflow() {
        // 99 / 0.01 = 9900.00: the 6 digits of decimal(2 + 2 + 2, 2).
        assert_eq!(
            quotient((99, 2, 0), (1, 1, 2)).ok(),
            Some((990_000, DataType::Decimal128(6, 2)))
        );
        // A 38-digit dividend over a divisor below one overflows 38 digits.
        let big = 10_i128.pow(37) * 9;
        assert!(matches!(
            quotient((big, 38, 0), (1, 1, 1)),
            Err(ArrowError::ArithmeticOverflow(_))
        ));
    }
}
