//! Real numbers as text the way Trino writes them (Java's `Double.toString` and
//! `Float.toString`): `1.0E-10`, `1.234567890125E11`, `100.0`, `4.9E-324`, where Arrow's cast
//! writes `1e-10`, `123456789012.5`, `100`, `5e-324` — a different string for the same value,
//! which a query comparing or storing it would keep.
//!
//! Java writes the shortest digits that read back as the value (as Rust's `{:e}` does), with at
//! least two when one would do and a two-digit decimal is nearer (so `Double.MIN_VALUE` is
//! `4.9E-324`, not `5E-324`); plainly between 10^-3 and 10^7 with at least one fraction digit,
//! and otherwise as `d.ddd` and an exponent.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Builder, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float32Type, Float64Type};
use datafusion::arrow::error::ArrowError;
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, result};

/// A real number's magnitude as Java chooses its digits: significant digits (no leading or
/// trailing zeros) and the exponent of the first, `d.ddd × 10^exponent`.
trait JavaDigits: Copy + std::fmt::LowerExp + std::str::FromStr + PartialEq {
    fn digits(self) -> (String, i32) {
        let (digits, exponent) = scientific(&format!("{self:e}"));
        if digits.len() > 1 {
            return (digits, exponent);
        }
        // One digit: a two-digit decimal that still reads back as the value is nearer to it.
        let two = format!("{self:.1e}");
        match two.parse::<Self>() {
            Ok(back) if back == self => scientific(&two),
            _ => (digits, exponent),
        }
    }
}

impl JavaDigits for f64 {}
impl JavaDigits for f32 {}

/// A double's magnitude as Java chooses its digits (see [`JavaDigits`]): what Java's
/// formatter rounds for `%f` and `%e`.
pub(crate) fn java_digits(magnitude: f64) -> (String, i32) {
    magnitude.digits()
}

/// The digits and exponent of Rust's `d.ddde±x` form, trailing zeros dropped.
fn scientific(text: &str) -> (String, i32) {
    let (mantissa, exponent) = text.split_once('e').unwrap_or((text, "0"));
    let mut digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    (digits, exponent.parse().unwrap_or(0))
}

/// `value` as Java's `Double.toString` (or `Float.toString`) writes it.
fn java_text<T: JavaDigits>(value: T, negative: bool, zero: bool, special: Option<&str>) -> String {
    if let Some(special) = special {
        return special.to_string();
    }
    let sign = if negative { "-" } else { "" };
    if zero {
        return format!("{sign}0.0");
    }
    let (digits, exponent) = value.digits();
    if (-3..7).contains(&exponent) {
        let point = exponent + 1;
        let plain = if point <= 0 {
            let zeros = usize::try_from(-point).unwrap_or(0);
            format!("0.{}{digits}", "0".repeat(zeros))
        } else {
            let point = usize::try_from(point).unwrap_or(0);
            if digits.len() > point {
                format!("{}.{}", &digits[..point], &digits[point..])
            } else {
                format!("{digits}{}.0", "0".repeat(point - digits.len()))
            }
        };
        return format!("{sign}{plain}");
    }
    let (first, rest) = digits.split_at(1);
    let rest = if rest.is_empty() { "0" } else { rest };
    format!("{sign}{first}.{rest}E{exponent}")
}

/// A double as Trino's `CAST(x AS varchar)` writes it.
pub fn double_text(value: f64) -> String {
    let special = match value {
        v if v.is_nan() => Some("NaN"),
        f64::INFINITY => Some("Infinity"),
        f64::NEG_INFINITY => Some("-Infinity"),
        _ => None,
    };
    java_text(value.abs(), value.is_sign_negative(), value == 0.0, special)
}

/// A real as Trino's `CAST(x AS varchar)` writes it.
pub fn real_text(value: f32) -> String {
    let special = match value {
        v if v.is_nan() => Some("NaN"),
        f32::INFINITY => Some("Infinity"),
        f32::NEG_INFINITY => Some("-Infinity"),
        _ => None,
    };
    java_text(value.abs(), value.is_sign_negative(), value == 0.0, special)
}

/// `array` as text, real numbers in Trino's form; `None` for other types.
pub(crate) fn real_numbers_as_text(array: &ArrayRef) -> Option<ArrayRef> {
    let mut out = StringBuilder::with_capacity(array.len(), array.len() * 8);
    match array.data_type() {
        DataType::Float64 => {
            for v in array.as_primitive::<Float64Type>() {
                out.append_option(v.map(double_text));
            }
        }
        DataType::Float32 => {
            for v in array.as_primitive::<Float32Type>() {
                out.append_option(v.map(real_text));
            }
        }
        _ => return None,
    }
    Some(Arc::new(out.finish()))
}

/// The unscaled value at `scale` of a real number's Java digits, rounded half up: Trino's cast
/// to a decimal (`BigDecimal.valueOf(x).setScale(s, HALF_UP)`), so `1.005E0` is `1.01` at
/// scale 2 where scaling the binary value (1.00499999…) gives `1.00`. `None` beyond i128.
fn java_unscaled<T: JavaDigits>(
    magnitude: T,
    negative: bool,
    zero: bool,
    scale: i8,
) -> Option<i128> {
    if zero {
        return Some(0);
    }
    let (digits, exponent) = magnitude.digits();
    let mantissa: i128 = digits.parse().ok()?;
    let places = i64::from(exponent) - (digits.len() as i64 - 1) + i64::from(scale);
    let unscaled = if places >= 0 {
        mantissa.checked_mul(10_i128.checked_pow(u32::try_from(places).ok()?)?)?
    } else {
        match 10_i128.checked_pow(u32::try_from(-places).ok()?) {
            Some(divisor) => {
                let (quotient, remainder) = (mantissa / divisor, mantissa % divisor);
                quotient + i128::from(remainder * 2 >= divisor)
            }
            // Smaller than any unit of the scale.
            None => 0,
        }
    };
    Some(if negative { -unscaled } else { unscaled })
}

/// `sqe_real_decimal(x, precision, scale, fallible)`: what the dialect puts in place of a cast
/// of a `double` or `real` to `decimal(p,s)`. A value too large for p digits, NaN or infinity
/// is an invalid cast, NULL when `fallible` (`TRY_CAST`).
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct RealDecimal {
    signature: Signature,
}

/// The name the dialect calls.
pub const REAL_DECIMAL: &str = "sqe_real_decimal";

impl RealDecimal {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::any(4, Volatility::Immutable),
        }
    }
}

/// The constant precision, scale and fallibility of a [`RealDecimal`] call.
fn decimal_form(args: &[Option<&ScalarValue>]) -> Result<(u8, i8, bool)> {
    let int = |i: usize| match args.get(i).copied().flatten() {
        Some(ScalarValue::Int64(Some(v))) => Some(*v),
        _ => None,
    };
    let fallible = matches!(
        args.get(3).copied().flatten(),
        Some(ScalarValue::Boolean(Some(true)))
    );
    match (
        int(1).and_then(|p| u8::try_from(p).ok()),
        int(2).and_then(|s| i8::try_from(s).ok()),
    ) {
        (Some(p), Some(s)) => Ok((p, s, fallible)),
        _ => plan_err!("{REAL_DECIMAL} takes a value, a constant precision, scale and fallibility"),
    }
}

impl ScalarUDFImpl for RealDecimal {
    fn name(&self) -> &str {
        REAL_DECIMAL
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        plan_err!("{REAL_DECIMAL} answers the decimal its arguments name")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let (p, s, _) = decimal_form(args.scalar_arguments)?;
        Ok(Arc::new(Field::new(
            self.name(),
            DataType::Decimal128(p, s),
            true,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let constants: Vec<Option<ScalarValue>> = args
            .args
            .iter()
            .map(|a| match a {
                ColumnarValue::Scalar(v) => Some(v.clone()),
                ColumnarValue::Array(_) => None,
            })
            .collect();
        let (p, s, fallible) =
            decimal_form(&constants.iter().map(Option::as_ref).collect::<Vec<_>>())?;
        let columns = arrays(&args)?;
        let Some(values) = columns.first() else {
            return exec_err!("{REAL_DECIMAL} takes 4 arguments");
        };
        let limit = 10_i128.checked_pow(u32::from(p)).unwrap_or(i128::MAX);
        let mut out = Decimal128Builder::with_capacity(values.len());
        for row in 0..values.len() {
            if values.is_null(row) {
                out.append_null();
                continue;
            }
            let (unscaled, shown) = match values.data_type() {
                DataType::Float64 => {
                    let v = values.as_primitive::<Float64Type>().value(row);
                    let unscaled = v
                        .is_finite()
                        .then(|| java_unscaled(v.abs(), v.is_sign_negative(), v == 0.0, s));
                    (unscaled.flatten(), format!("DOUBLE '{}'", double_text(v)))
                }
                DataType::Float32 => {
                    let v = values.as_primitive::<Float32Type>().value(row);
                    let unscaled = v
                        .is_finite()
                        .then(|| java_unscaled(v.abs(), v.is_sign_negative(), v == 0.0, s));
                    (unscaled.flatten(), format!("REAL '{}'", real_text(v)))
                }
                other => return exec_err!("{REAL_DECIMAL} takes a real number, not {other}"),
            };
            match unscaled.filter(|u| u.abs() < limit) {
                Some(u) => out.append_value(u),
                None if fallible => out.append_null(),
                None => {
                    return Err(DataFusionError::ArrowError(
                        Box::new(ArrowError::CastError(format!(
                            "Cannot cast {shown} to DECIMAL({p}, {s})"
                        ))),
                        None,
                    ));
                }
            }
        }
        let array: ArrayRef = Arc::new(out.finish().with_precision_and_scale(p, s)?);
        result(&args, array)
    }
}

/// `sqe_real_text(x)`: what the dialect puts in place of a cast of a `double` or `real` to
/// `varchar`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct RealText {
    signature: Signature,
}

/// The name the dialect calls.
pub const REAL_TEXT: &str = "sqe_real_text";

impl RealText {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::uniform(
                1,
                vec![DataType::Float64, DataType::Float32],
                Volatility::Immutable,
            ),
        }
    }
}

impl ScalarUDFImpl for RealText {
    fn name(&self) -> &str {
        REAL_TEXT
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [DataType::Float64 | DataType::Float32] => Ok(DataType::Utf8),
            _ => plan_err!("{REAL_TEXT} takes a double or a real"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        match columns.first().and_then(real_numbers_as_text) {
            Some(text) => result(&args, text),
            None => exec_err!("{REAL_TEXT} takes a double or a real"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_read_as_javas() {
        for (value, text) in [
            (1e-10, "1.0E-10"),
            (123_456_789_012.5, "1.234567890125E11"),
            (1.0 / 3.0, "0.3333333333333333"),
            (100.0, "100.0"),
            (1.5, "1.5"),
            (-2.25, "-2.25"),
            (0.001, "0.001"),
            (0.000_999, "9.99E-4"),
            (9_999_999.0, "9999999.0"),
            (1e7, "1.0E7"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::MIN_POSITIVE * f64::EPSILON, "4.9E-324"),
            (f64::MAX, "1.7976931348623157E308"),
            (1e23, "1.0E23"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
            (2e-3, "0.002"),
            (1234.5678, "1234.5678"),
        ] {
            assert_eq!(double_text(value), text, "{value:e}");
        }
    }

    #[test]
    fn reals_read_as_javas() {
        for (value, text) in [
            (1.5f32, "1.5"),
            (f32::from_bits(1), "1.4E-45"),
            (f32::MAX, "3.4028235E38"),
            (0.1f32, "0.1"),
            (1e10f32, "1.0E10"),
            (-3.0f32, "-3.0"),
        ] {
            assert_eq!(real_text(value), text, "{value:e}");
        }
    }

    #[test]
    fn decimals_round_the_digits_java_shows() {
        let at = |v: f64, scale| java_unscaled(v.abs(), v.is_sign_negative(), v == 0.0, scale);
        assert_eq!(at(1.005, 2), Some(101));
        assert_eq!(at(2.675, 2), Some(268));
        assert_eq!(at(-2.675, 2), Some(-268));
        assert_eq!(at(0.125, 2), Some(13));
        assert_eq!(at(1e20, 0), Some(100_000_000_000_000_000_000));
        assert_eq!(at(123.456, -1), Some(12));
        assert_eq!(at(4e-10, 2), Some(0));
        assert_eq!(at(0.0, 5), Some(0));
        assert_eq!(at(0.1f32.into(), 10), Some(1_000_000_015));
        assert_eq!(java_unscaled(0.1f32, false, false, 10), Some(1_000_000_000));
    }

    #[test]
    fn the_two_digit_rule_only_when_the_digit_reads_back() {
        // Every two-digit-or-shorter text reads back as the value it was written for.
        for bits in [1u64, 2, 3, 0x0010_0000_0000_0000, 0x3ff0_0000_0000_0001] {
            let value = f64::from_bits(bits);
            let text = double_text(value);
            assert_eq!(text.parse::<f64>().ok(), Some(value), "{text}");
        }
    }
}
