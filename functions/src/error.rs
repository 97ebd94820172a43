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
