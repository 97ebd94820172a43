//! A `CAST` that can fail on a value, failing as Trino's does: text that is no number or date
//! is INVALID_CAST_ARGUMENT (`Cannot cast 'x' to INT`), an integer too large for a narrower
//! integer NUMERIC_VALUE_OUT_OF_RANGE (`Out of range for tinyint: 300`), any other value that
//! does not fit its target INVALID_CAST_ARGUMENT naming both types. Arrow's cast refused these
//! in its own type names (`Cannot cast string 'x' to value of Int32 type`), all as invalid
//! casts, and a decimal too wide for its target's precision as an internal error.
//!
//! The dialect calls it only for the casts that can fail on a value ([`can_fail`]); `TRY_CAST`
//! stays Arrow's safe cast (NULL for what fails).

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::common::{DataFusionError, Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, is_string, result};
use crate::real_text::{double_text, real_text};
use crate::types::{integer_digits, trino_type_name};

/// The name the dialect calls: `sqe_checked_cast(value, NULL of the target type)`.
pub const CHECKED_CAST: &str = "sqe_checked_cast";

/// Whether a `CAST` from `source` to `target` can fail on a value (and so is [`CHECKED_CAST`]).
pub fn can_fail(source: &DataType, target: &DataType) -> bool {
    let is_text = is_string(source) && *source != DataType::Null;
    match target {
        t if t.is_integer() => {
            is_text
                || source.is_floating()
                || match (integer_digits(source), integer_digits(t)) {
                    (Some(from), Some(to)) => from > to,
                    _ => match source {
                        DataType::Decimal128(p, s) => {
                            i16::from(*p) - i16::from(*s)
                                >= i16::from(integer_digits(t).unwrap_or(0))
                        }
                        _ => false,
                    },
                }
        }
        DataType::Float32 | DataType::Float64 => is_text,
        DataType::Decimal128(p, s) => {
            let whole = i16::from(*p) - i16::from(*s);
            is_text
                || match source {
                    // Rounding to fewer fraction digits may carry into one more whole digit.
                    DataType::Decimal128(p1, s1) => {
                        whole < i16::from(*p1) - i16::from(*s1) + i16::from(s < s1)
                    }
                    other => integer_digits(other).is_some_and(|d| whole < i16::from(d)),
                }
        }
        DataType::Date32 => is_text,
        _ => false,
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct CheckedCast {
    signature: Signature,
}

impl CheckedCast {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for CheckedCast {
    fn name(&self) -> &str {
        CHECKED_CAST
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [_, target] => Ok(target.clone()),
            _ => plan_err!("{CHECKED_CAST} takes a value and a NULL of the target type"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [values, _] = columns.as_slice() else {
            return exec_err!("{CHECKED_CAST} takes a value and a NULL of the target type");
        };
        let target = args.return_field.data_type();
        let options = CastOptions {
            safe: true,
            ..Default::default()
        };
        let cast = match cast_with_options(values, target, &options) {
            Ok(cast) => cast,
            // Some casts fail even when safe (a decimal that rounds past its precision): the
            // first value that fails alone is the one to name.
            Err(e) => {
                return Err((0..values.len())
                    .find(|&i| {
                        values.is_valid(i)
                            && cast_with_options(&values.slice(i, 1), target, &options)
                                .map_or(true, |one| one.is_null(0))
                    })
                    .map_or_else(|| e.into(), |i| failure(values, i, target)));
            }
        };
        // The safe cast answers NULL exactly where the value could not be cast.
        if cast.null_count() > values.null_count() {
            for i in 0..values.len() {
                if values.is_valid(i) && cast.is_null(i) {
                    return Err(failure(values, i, target));
                }
            }
        }
        let cast: ArrayRef = cast;
        result(&args, cast)
    }
}

/// Trino's error for the value at `i` of `values` that does not cast to `target`.
fn failure(values: &ArrayRef, i: usize, target: &DataType) -> DataFusionError {
    let source = values.data_type();
    let to = trino_type_name(target);
    let value = match source {
        DataType::Float64 => double_text(values.as_primitive::<Float64Type>().value(i)),
        DataType::Float32 => real_text(values.as_primitive::<Float32Type>().value(i)),
        _ => array_value_to_string(values, i).unwrap_or_default(),
    };
    let error = if is_string(source) {
        match target {
            DataType::Date32 => {
                ArrowError::CastError(format!("Value cannot be cast to date: {value}"))
            }
            DataType::Decimal128(..) => ArrowError::CastError(format!(
                "Cannot cast VARCHAR '{value}' to {}",
                to.to_uppercase()
            )),
            DataType::Int32 => ArrowError::CastError(format!("Cannot cast '{value}' to INT")),
            _ => ArrowError::CastError(format!("Cannot cast '{value}' to {}", to.to_uppercase())),
        }
    } else if source.is_integer() && target.is_integer() {
        ArrowError::ArithmeticOverflow(format!("Out of range for {to}: {value}"))
    } else if source.is_floating() && target.is_integer() {
        ArrowError::CastError(format!("Unable to cast {value} to {to}"))
    } else {
        ArrowError::CastError(format!(
            "Cannot cast {} '{value}' to {}",
            trino_type_name(source).to_uppercase(),
            to.to_uppercase()
        ))
    };
    DataFusionError::ArrowError(Box::new(error), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use datafusion::arrow::array::{Decimal128Array, Int64Array, StringArray};
    use datafusion::arrow::datatypes::Field;
    use datafusion::common::ScalarValue;
    use datafusion::common::config::ConfigOptions;

    fn checked(values: ArrayRef, target: DataType) -> Result<ArrayRef> {
        let rows = values.len();
        let args = ScalarFunctionArgs {
            args: vec![
                ColumnarValue::Array(values.clone()),
                ColumnarValue::Scalar(ScalarValue::try_from(&target)?),
            ],
            arg_fields: vec![
                Arc::new(Field::new("v", values.data_type().clone(), true)),
                Arc::new(Field::new("t", target.clone(), true)),
            ],
            number_rows: rows,
            return_field: Arc::new(Field::new("c", target, true)),
            config_options: Arc::new(ConfigOptions::default()),
        };
        match CheckedCast::new().invoke_with_args(args)? {
            ColumnarValue::Array(array) => Ok(array),
            ColumnarValue::Scalar(s) => s.to_array(),
        }
    }

    fn refusal(values: ArrayRef, target: DataType) -> (bool, String) {
        match checked(values, target) {
            Err(DataFusionError::ArrowError(e, _)) => match *e {
                ArrowError::ArithmeticOverflow(m) => (true, m),
                ArrowError::CastError(m) => (false, m),
                other => panic!("unexpected {other}"),
            },
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn values_that_do_not_cast_are_refused_in_trinos_words() {
        let text: ArrayRef = Arc::new(StringArray::from(vec![Some("12"), None, Some("x")]));
        assert_eq!(
            refusal(text.clone(), DataType::Int32),
            (false, "Cannot cast 'x' to INT".to_string())
        );
        assert_eq!(
            refusal(text.clone(), DataType::Decimal128(5, 2)),
            (false, "Cannot cast VARCHAR 'x' to DECIMAL(5,2)".to_string())
        );
        assert_eq!(
            refusal(
                Arc::new(StringArray::from(vec!["2020-01-01", "x"])),
                DataType::Date32
            ),
            (false, "Value cannot be cast to date: x".to_string())
        );
        let big: ArrayRef = Arc::new(Int64Array::from(vec![1, 300]));
        assert_eq!(
            refusal(big, DataType::Int8),
            (true, "Out of range for tinyint: 300".to_string())
        );
        let wide: ArrayRef = Arc::new(
            Decimal128Array::from(vec![123_456])
                .with_precision_and_scale(6, 1)
                .unwrap_or_else(|e| panic!("{e}")),
        );
        assert_eq!(
            refusal(wide, DataType::Decimal128(3, 1)),
            (
                false,
                "Cannot cast DECIMAL(6,1) '12345.6' to DECIMAL(3,1)".to_string()
            )
        );
        // Rounded, it needs one more whole digit (Arrow's safe cast fails on it).
        let carried: ArrayRef = Arc::new(
            Decimal128Array::from(vec![100, 999])
                .with_precision_and_scale(3, 2)
                .unwrap_or_else(|e| panic!("{e}")),
        );
        assert_eq!(
            refusal(carried, DataType::Decimal128(2, 1)),
            (
                false,
                "Cannot cast DECIMAL(3,2) '9.99' to DECIMAL(2,1)".to_string()
            )
        );
    }

    #[test]
    fn what_casts_is_arrows_value() -> Result<()> {
        let text: ArrayRef = Arc::new(StringArray::from(vec![Some("12"), None]));
        let cast = checked(text, DataType::Int64)?;
        assert_eq!(
            cast.as_primitive::<datafusion::arrow::datatypes::Int64Type>()
                .value(0),
            12
        );
        assert!(cast.is_null(1));
        Ok(())
    }

    #[test]
    fn only_casts_that_can_fail_are_checked() {
        assert!(can_fail(&DataType::Utf8, &DataType::Int32));
        assert!(can_fail(&DataType::Int64, &DataType::Int32));
        assert!(!can_fail(&DataType::Int32, &DataType::Int64));
        assert!(can_fail(&DataType::Float64, &DataType::Int64));
        assert!(can_fail(&DataType::Decimal128(10, 0), &DataType::Int32));
        assert!(!can_fail(&DataType::Decimal128(9, 0), &DataType::Int32));
        assert!(can_fail(
            &DataType::Decimal128(3, 2),
            &DataType::Decimal128(2, 1)
        ));
        assert!(!can_fail(
            &DataType::Decimal128(3, 2),
            &DataType::Decimal128(4, 2)
        ));
        assert!(can_fail(&DataType::Int32, &DataType::Decimal128(5, 0)));
        assert!(!can_fail(&DataType::Int32, &DataType::Decimal128(10, 0)));
        assert!(!can_fail(&DataType::Int64, &DataType::Float64));
    }
}
