//! What the functions share: their arguments as arrays, and the result's shape.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, Int64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs};

/// The arguments as arrays of one length (scalars repeated).
pub(crate) fn arrays(args: &ScalarFunctionArgs) -> Result<Vec<ArrayRef>> {
    args.args
        .iter()
        .map(|a| a.to_array(args.number_rows))
        .collect()
}

/// `array` as text, real numbers and timestamps written as Trino writes them.
pub(crate) fn strings(array: &ArrayRef) -> Result<ArrayRef> {
    if let Some(text) = crate::real_text::real_numbers_as_text(array) {
        return Ok(text);
    }
    match crate::timestamp_text::timestamps_as_text(array) {
        Some(text) => text,
        None => Ok(cast(array, &DataType::Utf8)?),
    }
}

pub(crate) fn longs(array: &ArrayRef) -> Result<Int64Array> {
    Ok(cast(array, &DataType::Int64)?.as_primitive().clone())
}

/// A whole column of results is a scalar again when every argument was one.
pub(crate) fn result(args: &ScalarFunctionArgs, array: ArrayRef) -> Result<ColumnarValue> {
    let scalar = args
        .args
        .iter()
        .all(|a| matches!(a, ColumnarValue::Scalar(_)));
    if scalar {
        Ok(ColumnarValue::Scalar(
            datafusion::common::ScalarValue::try_from_array(&array, 0)?,
        ))
    } else {
        Ok(ColumnarValue::Array(array))
    }
}

pub(crate) fn is_string(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
    )
}

/// The coercion of a function whose arguments are all text (or NULL): `Utf8` each.
pub(crate) fn all_text(function: &str, arg_types: &[DataType]) -> Result<Vec<DataType>> {
    if arg_types.iter().all(is_string) {
        return Ok(vec![DataType::Utf8; arg_types.len()]);
    }
    datafusion::common::plan_err!(
        "Unexpected parameters to function {function}: {arg_types:?}; expected varchar"
    )
}

pub(crate) fn is_integer(t: &DataType) -> bool {
    t.is_integer() || *t == DataType::Null
}

/// `array(varchar)`: what `split` and the `regexp_*` functions that find many strings return.
pub(crate) fn string_list() -> DataType {
    DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)))
}
