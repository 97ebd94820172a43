//! How a function refuses its arguments, as a type the engine classifies (Trino's
//! `INVALID_FUNCTION_ARGUMENT`).

use datafusion::common::DataFusionError;

/// An argument the function is not defined for (`split_part(s, ',', 0)`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct InvalidArgument(pub(crate) String);

pub(crate) fn invalid_argument(message: impl Into<String>) -> DataFusionError {
    DataFusionError::External(Box::new(InvalidArgument(message.into())))
}

/// A function's output past the size Trino allows it (`listagg`'s 1 MiB): Trino's
/// `EXCEEDED_FUNCTION_MEMORY_LIMIT`, which `try` does not catch.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FunctionMemoryLimit(pub String);

/// The refusal of a pattern by the regex library, when `e` is one: DataFusion's
/// `regexp_replace` hands it on as it is.
pub(crate) fn invalid_pattern(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    e.downcast_ref::<regex::Error>()
        .map(|e| format!("Invalid regular expression: {e}"))
}

/// The kinds of errors of a value an operator or function is not defined for: what Trino's
/// `try` answers NULL for, and each a user error of its own name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueError {
    DivisionByZero,
    InvalidCast,
    OutOfRange,
    InvalidArgument,
}

/// `e`'s kind and message when it is an error of a value: Arrow's division by zero, failed
/// cast or parse, overflow; a function's refusal of its argument; a pattern the regex library
/// refuses.
pub fn value_error(e: &(dyn std::error::Error + 'static)) -> Option<(ValueError, String)> {
    use datafusion::arrow::error::ArrowError;
    if let Some(arrow) = e.downcast_ref::<ArrowError>() {
        return match arrow {
            ArrowError::DivideByZero => {
                Some((ValueError::DivisionByZero, "Division by zero".to_string()))
            }
            ArrowError::CastError(m) | ArrowError::ParseError(m) => {
                Some((ValueError::InvalidCast, m.clone()))
            }
            ArrowError::ArithmeticOverflow(m) => Some((ValueError::OutOfRange, m.clone())),
            _ => None,
        };
    }
    if let Some(refused) = e.downcast_ref::<InvalidArgument>() {
        return Some((ValueError::InvalidArgument, refused.0.clone()));
    }
    invalid_pattern(e).map(|m| (ValueError::InvalidArgument, m))
}

/// The error of a value `e` is, or carries (through DataFusion's and Arrow's wrappers).
pub(crate) fn value_error_in(e: &DataFusionError) -> Option<(ValueError, String)> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(error) = next {
        if let Some(found) = value_error(error) {
            return Some(found);
        }
        next = error.source();
    }
    None
}

/// The errors of Trino's SQL/JSON functions, each a user error of its own name (not caught by
/// `try`, as in Trino).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonErrorKind {
    /// A path that does not read (`INVALID_PATH`).
    InvalidPath,
    /// An input or a `PASSING … FORMAT JSON` value that is not JSON (`JSON_INPUT_CONVERSION_ERROR`).
    InputConversion,
    /// A path whose evaluation failed (`PATH_EVALUATION_ERROR`).
    PathEvaluation,
    /// A sequence `json_query` cannot answer as one JSON text (`JSON_OUTPUT_CONVERSION_ERROR`).
    OutputConversion,
    /// A sequence `json_value` cannot answer as one SQL value (`JSON_VALUE_RESULT_ERROR`).
    ValueResult,
}

/// An SQL/JSON function's error, under `ERROR ON ERROR` (or `ERROR ON EMPTY`), or a path that
/// does not read.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct JsonError {
    pub kind: JsonErrorKind,
    pub message: String,
}

pub(crate) fn json_error(kind: JsonErrorKind, message: impl Into<String>) -> DataFusionError {
    DataFusionError::External(Box::new(JsonError {
        kind,
        message: message.into(),
    }))
}
