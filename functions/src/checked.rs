//! Integer `+`, `-`, `*`, negation and `abs` as Trino does them: a result outside the type's
//! range is an error (NUMERIC_VALUE_OUT_OF_RANGE), where DataFusion's operators wrap around
//! silently (`2147483647 + 1` was `-2147483648`, `-x` of the smallest bigint itself) and its
//! `abs` fails as an internal error. The dialect calls these for every such operation on
//! integers; two operands are taken in the wider of their types, as Trino's `integer + bigint`
//! is a `bigint`. Arrow's own checked kernels do the arithmetic.

use datafusion::arrow::array::{ArrayRef, ArrowPrimitiveType, AsArray, PrimitiveArray};
use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::datatypes::{
    ArrowNativeTypeOp, DataType, Int8Type, Int16Type, Int32Type, Int64Type,
};
use datafusion::arrow::error::ArrowError;
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

/// The operation of a [`CheckedArithmetic`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntegerOperation {
    Add,
    Subtract,
    Multiply,
    Negate,
    Abs,
}

impl IntegerOperation {
    fn name(self) -> &'static str {
        match self {
            Self::Add => "sqe_checked_add",
            Self::Subtract => "sqe_checked_subtract",
            Self::Multiply => "sqe_checked_multiply",
            Self::Negate => "sqe_checked_negate",
            Self::Abs => "sqe_checked_abs",
        }
    }

    fn unary(self) -> bool {
        matches!(self, Self::Negate | Self::Abs)
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct CheckedArithmetic {
    operation: IntegerOperation,
    signature: Signature,
}

impl CheckedArithmetic {
    pub(crate) fn new(operation: IntegerOperation) -> Self {
        Self {
            operation,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// The integer type of Trino's result: the wider operand's (NULL takes the other's).
fn common_integer(a: &DataType, b: &DataType) -> Option<DataType> {
    let width = |t: &DataType| match t {
        DataType::Int8 => Some(1),
        DataType::Int16 => Some(2),
        DataType::Int32 => Some(3),
        DataType::Int64 => Some(4),
        DataType::Null => Some(0),
        _ => None,
    };
    let (wa, wb) = (width(a)?, width(b)?);
    Some(match wa.max(wb) {
        0 | 4 => DataType::Int64,
        3 => DataType::Int32,
        2 => DataType::Int16,
        _ => DataType::Int8,
    })
}

impl ScalarUDFImpl for CheckedArithmetic {
    fn name(&self) -> &str {
        self.operation.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [a] if self.operation.unary() => match common_integer(a, a) {
                Some(t) => Ok(vec![t]),
                None => plan_err!("{} takes an integer, not {a}", self.name()),
            },
            [a, b] if !self.operation.unary() => match common_integer(a, b) {
                Some(t) => Ok(vec![t.clone(), t]),
                None => plan_err!("{} takes two integers, not {a} and {b}", self.name()),
            },
            _ => plan_err!("{} takes two integers", self.name()),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [a] if self.operation.unary() => common_integer(a, a)
                .map_or_else(|| plan_err!("{} takes an integer", self.name()), Ok),
            [a, b] if !self.operation.unary() => common_integer(a, b)
                .map_or_else(|| plan_err!("{} takes two integers", self.name()), Ok),
            _ => plan_err!("{} takes two integers", self.name()),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if let [value] = args.args.as_slice() {
            return unary(self.operation, value);
        }
        let [a, b] = args.args.as_slice() else {
            return exec_err!("{} takes two integers", self.name());
        };
        let datum = |value: &ColumnarValue| -> Result<Box<dyn datafusion::arrow::array::Datum>> {
            Ok(match value {
                ColumnarValue::Array(array) => Box::new(std::sync::Arc::clone(array)),
                ColumnarValue::Scalar(scalar) => Box::new(scalar.to_scalar()?),
            })
        };
        let (left, right) = (datum(a)?, datum(b)?);
        let kernel = match self.operation {
            IntegerOperation::Add => numeric::add,
            IntegerOperation::Subtract => numeric::sub,
            IntegerOperation::Multiply => numeric::mul,
            IntegerOperation::Negate | IntegerOperation::Abs => {
                return exec_err!("{} takes one integer", self.name());
            }
        };
        let result = kernel(left.as_ref(), right.as_ref())?;
        match (a, b) {
            (ColumnarValue::Scalar(_), ColumnarValue::Scalar(_)) => Ok(ColumnarValue::Scalar(
                datafusion::common::ScalarValue::try_from_array(&result, 0)?,
            )),
            _ => Ok(ColumnarValue::Array(result)),
        }
    }
}

/// `-x` or `abs(x)` of an integer.
fn unary(operation: IntegerOperation, value: &ColumnarValue) -> Result<ColumnarValue> {
    let array = value.to_array(1)?;
    let result = match array.data_type() {
        DataType::Int8 => unary_of::<Int8Type>(operation, &array)?,
        DataType::Int16 => unary_of::<Int16Type>(operation, &array)?,
        DataType::Int32 => unary_of::<Int32Type>(operation, &array)?,
        DataType::Int64 => unary_of::<Int64Type>(operation, &array)?,
        other => return exec_err!("{} takes an integer, not {other}", operation.name()),
    };
    Ok(match value {
        ColumnarValue::Scalar(_) => {
            ColumnarValue::Scalar(datafusion::common::ScalarValue::try_from_array(&result, 0)?)
        }
        ColumnarValue::Array(_) => ColumnarValue::Array(result),
    })
}

fn unary_of<T: ArrowPrimitiveType>(
    operation: IntegerOperation,
    array: &ArrayRef,
) -> Result<ArrayRef> {
    let values = array.as_primitive::<T>();
    let result: PrimitiveArray<T> = values.try_unary(|v| {
        let negative = operation == IntegerOperation::Negate || v.is_lt(T::Native::ZERO);
        if !negative {
            return Ok(v);
        }
        v.neg_checked().map_err(|_| {
            ArrowError::ArithmeticOverflow(match operation {
                IntegerOperation::Abs => format!("Value {v:?} is out of range for abs"),
                _ => format!("Value {v:?} is out of range for negation"),
            })
        })
    })?;
    Ok(std::sync::Arc::new(result))
}

/// Trino's `round(x, d)` of an integer: `x` itself when `d >= 0`, else `x` rounded half away
/// from zero to a multiple of `10^-d`, in `x`'s type (out of it, NUMERIC_VALUE_OUT_OF_RANGE).
/// DataFusion's `round` answers a double.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct IntegerRound {
    signature: Signature,
}

impl IntegerRound {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for IntegerRound {
    fn name(&self) -> &str {
        "sqe_round_integer"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [x, d] if common_integer(x, x).is_some() && common_integer(d, d).is_some() => Ok(vec![
                common_integer(x, x).unwrap_or(DataType::Int64),
                DataType::Int64,
            ]),
            _ => plan_err!("sqe_round_integer takes two integers"),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first().and_then(|x| common_integer(x, x)) {
            Some(t) => Ok(t),
            None => plan_err!("sqe_round_integer takes two integers"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [x, d] = args.args.as_slice() else {
            return exec_err!("sqe_round_integer takes two integers");
        };
        let rows = args.number_rows;
        let (values, places) = (x.to_array(rows)?, d.to_array(rows)?);
        let places = places.as_primitive::<Int64Type>();
        let result = match values.data_type() {
            DataType::Int8 => round_of::<Int8Type>(&values, places)?,
            DataType::Int16 => round_of::<Int16Type>(&values, places)?,
            DataType::Int32 => round_of::<Int32Type>(&values, places)?,
            DataType::Int64 => round_of::<Int64Type>(&values, places)?,
            other => return exec_err!("sqe_round_integer takes an integer, not {other}"),
        };
        Ok(match (x, d) {
            (ColumnarValue::Scalar(_), ColumnarValue::Scalar(_)) => {
                ColumnarValue::Scalar(datafusion::common::ScalarValue::try_from_array(&result, 0)?)
            }
            _ => ColumnarValue::Array(result),
        })
    }
}

fn round_of<T: ArrowPrimitiveType>(
    values: &ArrayRef,
    places: &PrimitiveArray<Int64Type>,
) -> Result<ArrayRef>
where
    T::Native: Into<i128> + TryFrom<i128>,
{
    let result: PrimitiveArray<T> = datafusion::arrow::compute::kernels::arity::try_binary(
        values.as_primitive::<T>(),
        places,
        |v, d| {
            let rounded = round_integer(v.into(), d);
            T::Native::try_from(rounded).map_err(|_| {
                ArrowError::ArithmeticOverflow(format!("Value {rounded} is out of range for round"))
            })
        },
    )?;
    Ok(std::sync::Arc::new(result))
}

/// `v` rounded half away from zero to `d` decimal places (`d < 0`: tens, hundreds, ...).
fn round_integer(v: i128, d: i64) -> i128 {
    let Some(k) = d
        .checked_neg()
        .and_then(|k| u32::try_from(k).ok())
        .filter(|k| *k > 0)
    else {
        // No places to remove (or so many that the exponent does not fit: also none).
        return if d >= 0 { v } else { 0 };
    };
    // Every i64 is less than half of 10^20: rounding to more places than that gives 0.
    let Some(unit) = 10i128.checked_pow(k).filter(|_| k <= 20) else {
        return 0;
    };
    let (quotient, remainder) = (v / unit, v % unit);
    let away = if remainder.abs() * 2 >= unit {
        v.signum()
    } else {
        0
    };
    (quotient + away) * unit
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{ArrayRef, Int32Array, Int64Array};
    use datafusion::arrow::datatypes::Field;
    use datafusion::arrow::error::ArrowError;
    use datafusion::common::ScalarValue;
    use datafusion::config::ConfigOptions;
    use std::sync::Arc;

    use super::*;

    #[test]
    fn integers_round_half_away_from_zero_to_tens_and_beyond() {
        let cases: [(i128, i64, i128); 10] = [
            (123, 2, 123),
            (125, -1, 130),
            (-125, -1, -130),
            (124, -1, 120),
            (-124, -1, -120),
            (150, -2, 200),
            (49, -2, 0),
            (i64::MAX as i128, -19, 10_000_000_000_000_000_000),
            (i64::MAX as i128, -21, 0),
            (7, i64::MIN, 0),
        ];
        for (v, d, expected) in cases {
            assert_eq!(round_integer(v, d), expected, "round({v}, {d})");
        }
    }

    #[test]
    fn a_rounded_integer_outside_its_type_is_an_overflow() -> Result<()> {
        let values: ArrayRef = Arc::new(Int32Array::from(vec![2_147_483_600, 2_147_483_647]));
        let places = PrimitiveArray::<Int64Type>::from(vec![-1, -1]);
        let error = round_of::<Int32Type>(&values, &places).err();
        assert!(
            matches!(error, Some(datafusion::error::DataFusionError::ArrowError(e, _)) if matches!(*e, ArrowError::ArithmeticOverflow(_))),
        );
        let fits: ArrayRef = Arc::new(Int32Array::from(vec![2_147_483_643]));
        let places = PrimitiveArray::<Int64Type>::from(vec![-1]);
        let rounded = round_of::<Int32Type>(&fits, &places)?;
        assert_eq!(rounded.as_primitive::<Int32Type>().value(0), 2_147_483_640);
        Ok(())
    }

    fn run(
        operation: IntegerOperation,
        a: ColumnarValue,
        b: ColumnarValue,
        rows: usize,
    ) -> Result<ColumnarValue> {
        let f = CheckedArithmetic::new(operation);
        let types = [a.data_type(), b.data_type()];
        let return_type = f.return_type(&types)?;
        f.invoke_with_args(ScalarFunctionArgs {
            arg_fields: types
                .iter()
                .map(|t| Arc::new(Field::new("x", t.clone(), true)))
                .collect(),
            args: vec![a, b],
            number_rows: rows,
            return_field: Arc::new(Field::new("r", return_type, true)),
            config_options: Arc::new(ConfigOptions::default()),
        })
    }

    #[test]
    fn results_in_range_are_the_sums_and_products() -> Result<()> {
        let column: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, Some(-3)]));
        let ColumnarValue::Array(sums) = run(
            IntegerOperation::Add,
            ColumnarValue::Array(column),
            ColumnarValue::Scalar(ScalarValue::Int32(Some(10))),
            3,
        )?
        else {
            return exec_err!("a column and a scalar make a column");
        };
        let expected: ArrayRef = Arc::new(Int32Array::from(vec![Some(11), None, Some(7)]));
        assert_eq!(&sums, &expected);
        let product = run(
            IntegerOperation::Multiply,
            ColumnarValue::Scalar(ScalarValue::Int64(Some(-4))),
            ColumnarValue::Scalar(ScalarValue::Int64(Some(5))),
            1,
        )?;
        assert!(matches!(
            product,
            ColumnarValue::Scalar(ScalarValue::Int64(Some(-20)))
        ));
        assert_eq!(
            common_integer(&DataType::Int32, &DataType::Int64),
            Some(DataType::Int64)
        );
        assert_eq!(common_integer(&DataType::Int32, &DataType::Float64), None);
        Ok(())
    }

    #[test]
    fn results_out_of_range_are_errors_not_wrapped() {
        for (operation, a, b) in [
            (IntegerOperation::Add, i64::MAX, 1),
            (IntegerOperation::Subtract, i64::MIN, 1),
            (IntegerOperation::Multiply, i64::MAX / 2 + 1, 2),
        ] {
            let column: ArrayRef = Arc::new(Int64Array::from(vec![a]));
            let outcome = run(
                operation,
                ColumnarValue::Array(column),
                ColumnarValue::Scalar(ScalarValue::Int64(Some(b))),
                1,
            );
            assert!(
                matches!(
                    &outcome,
                    Err(datafusion::error::DataFusionError::ArrowError(e, _))
                        if matches!(e.as_ref(), ArrowError::ArithmeticOverflow(_))
                ),
                "{operation:?}: {:?}",
                outcome.map(|_| ())
            );
        }
    }

    #[test]
    fn negation_and_abs_fail_only_for_the_smallest_value() -> Result<()> {
        let f = |operation| CheckedArithmetic::new(operation);
        let invoke = |operation, value: ArrayRef| {
            unary(operation, &ColumnarValue::Array(value)).and_then(|r| r.to_array(1))
        };
        let column: ArrayRef = Arc::new(Int32Array::from(vec![Some(-5), None, Some(7)]));
        let negated: ArrayRef = Arc::new(Int32Array::from(vec![Some(5), None, Some(-7)]));
        let absolute: ArrayRef = Arc::new(Int32Array::from(vec![Some(5), None, Some(7)]));
        assert_eq!(
            &invoke(IntegerOperation::Negate, Arc::clone(&column))?,
            &negated
        );
        assert_eq!(&invoke(IntegerOperation::Abs, column)?, &absolute);
        assert_eq!(
            f(IntegerOperation::Abs).return_type(&[DataType::Int16])?,
            DataType::Int16
        );
        for operation in [IntegerOperation::Negate, IntegerOperation::Abs] {
            let smallest: ArrayRef = Arc::new(Int64Array::from(vec![1, i64::MIN]));
            let outcome = invoke(operation, smallest);
            assert!(
                matches!(
                    &outcome,
                    Err(datafusion::error::DataFusionError::ArrowError(e, _))
                        if matches!(e.as_ref(), ArrowError::ArithmeticOverflow(_))
                ),
                "{operation:?}: {outcome:?}"
            );
        }
        Ok(())
    }
}
