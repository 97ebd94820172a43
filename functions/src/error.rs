//! How a function refuses its arguments, as a type the engine classifies (Trino's
//! `INVALID_FUNCTION_ARGUMENT`).

use datafusion::common::DataFusionError;

/// An argument the function is not defined for (`split_part(s, ',', 0)`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InvalidArgument(pub String);

pub(crate) fn invalid_argument(message: impl Into<String>) -> DataFusionError {
    DataFusionError::External(Box::new(InvalidArgument(message.into())))
}

/// The refusal of a pattern by the regex library, when `e` is one: DataFusion's
/// `regexp_replace` hands it on as it is.
pub fn invalid_pattern(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    e.downcast_ref::<regex::Error>()
        .map(|e| format!("Invalid regular expression: {e}"))
}
