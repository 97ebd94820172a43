//! Errors reading and writing Iceberg tables.

use datafusion::error::DataFusionError;

/// Everything that can go wrong while reading or writing Iceberg data on a worker or coordinator.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// The Iceberg library refused an operation (metadata, scan planning, commit).
    #[error("iceberg: {0}")]
    Iceberg(#[from] iceberg::Error),
    /// A storage location could not be resolved or accessed.
    #[error("storage: {0}")]
    Storage(String),
    /// A column type has no Iceberg equivalent.
    #[error("column '{column}' has type {type_name}, which Iceberg tables cannot store{hint}")]
    UnsupportedType {
        column: String,
        /// The column's type, as Trino names it.
        type_name: String,
        hint: String,
    },
    /// Data does not have the shape its destination expects.
    #[error("schema mismatch: {0}")]
    Schema(String),
    /// A plan fragment could not be encoded or decoded.
    #[error("plan codec: {0}")]
    Codec(String),
    /// A statement is valid SQL but not something this engine supports.
    #[error("not supported: {0}")]
    NotSupported(String),
    /// Arrow failed while converting data.
    #[error("arrow: {0}")]
    Arrow(#[from] datafusion::arrow::error::ArrowError),
}

pub type Result<T, E = TableError> = std::result::Result<T, E>;

impl From<TableError> for DataFusionError {
    fn from(err: TableError) -> Self {
        match err {
            TableError::Arrow(e) => DataFusionError::ArrowError(Box::new(e), None),
            TableError::NotSupported(msg) => DataFusionError::NotImplemented(msg),
            TableError::UnsupportedType { .. } => DataFusionError::Plan(err.to_string()),
            other => DataFusionError::External(Box::new(other)),
        }
    }
}

/// Converts an Iceberg error into a DataFusion error without losing its message.
pub fn iceberg_to_df(err: iceberg::Error) -> DataFusionError {
    DataFusionError::External(Box::new(TableError::Iceberg(err)))
}
