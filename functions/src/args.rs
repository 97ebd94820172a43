//! What the functions share: their arguments as arrays, and the result's shape.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, Int64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs};

/// The types of `fields` (a planned call's arguments).
pub(crate) fn data_types(fields: &[datafusion::arrow::datatypes::FieldRef]) -> Vec<DataType> {
    fields.iter().map(|f| f.data_type().clone()).collect()
}

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

/// The text a column's rows last gave (a format, a pattern, a path) and what it reads as: the
/// text repeats row after row, so it is read again only when it changes.
pub(crate) struct LastParsed<T> {
    last: Option<(String, T)>,
}

impl<T> LastParsed<T> {
    pub(crate) fn new() -> Self {
        Self { last: None }
    }

    /// What `text` reads as, read with `read` unless it is the last text.
    pub(crate) fn get(&mut self, text: &str, read: impl FnOnce(&str) -> Result<T>) -> Result<&T> {
        if self.last.as_ref().is_none_or(|(last, _)| last != text) {
            self.last = Some((text.to_string(), read(text)?));
        }
        match &self.last {
            Some((_, parsed)) => Ok(parsed),
            None => exec_err!("nothing was read"),
        }
    }
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
    Err(unexpected_parameters(function, arg_types, "(varchar, ...)"))
}

/// Arguments no signature of a function takes, as Trino says it: `Unexpected parameters
/// (varchar) for function substr. Expected: substr(varchar, bigint [, bigint])`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnexpectedParameters {
    /// The function's name.
    pub function: String,
    types: String,
    expected: String,
}

impl std::fmt::Display for UnexpectedParameters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Unexpected parameters ({}) for function {}. Expected: {}{}",
            self.types, self.function, self.function, self.expected
        )
    }
}

tokio::task_local! {
    /// The refusal of the planning [`recording_refusals`] runs, for the engine to name:
    /// DataFusion keeps only the words of a function's refusal, inside its own. Task-local, so
    /// it follows the planning across threads and nothing outside it records.
    static REFUSED: std::cell::RefCell<Option<UnexpectedParameters>>;
}

/// A function's refusal of `arg_types`, recorded for [`recording_refusals`].
pub(crate) fn unexpected_parameters(
    function: &str,
    arg_types: &[DataType],
    expected: &str,
) -> datafusion::error::DataFusionError {
    let refused = UnexpectedParameters {
        function: function.to_string(),
        types: type_names(arg_types),
        expected: expected.to_string(),
    };
    let error = datafusion::error::DataFusionError::Plan(refused.to_string());
    // Outside a recording there is no one to tell.
    let _ = REFUSED.try_with(|slot| *slot.borrow_mut() = Some(refused));
    error
}

/// Runs `planning`, with the last refusal of a function's arguments made while it ran.
pub async fn recording_refusals<F: std::future::Future>(
    planning: F,
) -> (F::Output, Option<UnexpectedParameters>) {
    REFUSED
        .scope(std::cell::RefCell::new(None), async move {
            let output = planning.await;
            let refused = REFUSED.with(|slot| slot.borrow_mut().take());
            (output, refused)
        })
        .await
}

/// Argument types as Trino names them in its errors: `varchar, array(integer)`.
pub(crate) fn type_names(arg_types: &[DataType]) -> String {
    arg_types
        .iter()
        .map(crate::types::trino_type_name)
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn is_integer(t: &DataType) -> bool {
    t.is_integer() || *t == DataType::Null
}

/// `array(varchar)`: what `split` and the `regexp_*` functions that find many strings return.
pub(crate) fn string_list() -> DataType {
    DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)))
}
