//! The gateway's errors, classified by cause, and their one mapping to gRPC status.

use std::path::PathBuf;

use datafusion::error::DataFusionError;
use sqe_iceberg::TableError;

/// Configuration problems: all are fatal at start-up and name the file and key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid config {origin}: {message}")]
    Parse { origin: String, message: String },
    #[error(
        "{origin}: a distributed setup needs [{section}] worker_secret (or worker_secret_file, or \
         SQE_{}__WORKER_SECRET) so that workers only accept plans from their coordinator; set \
         allow_unauthenticated_workers = true only on a private test network",
        section.to_ascii_uppercase()
    )]
    MissingWorkerSecret {
        origin: String,
        section: &'static str,
    },
    #[error("{0}")]
    Invalid(String),
}

/// Why a statement or an operation failed.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The SQL text does not parse.
    #[error("syntax error: {0}")]
    Syntax(String),
    /// A table, schema or column does not exist.
    #[error("{0}")]
    NotFound(String),
    /// It already exists.
    #[error("{0}")]
    AlreadyExists(String),
    /// Valid SQL that refers to things wrongly (types, arity, ambiguous names).
    #[error("{0}")]
    Analysis(String),
    /// Valid SQL this engine does not do.
    #[error("not supported: {0}")]
    NotSupported(String),
    /// Memory or another limit was hit.
    #[error("resources exhausted: {0}")]
    ResourcesExhausted(String),
    /// The query was cancelled.
    #[error("query cancelled")]
    Cancelled,
    /// The client did not prove who it is.
    #[error("authentication failed: {0}")]
    Unauthenticated(String),
    /// Authenticated, but not allowed to do this.
    #[error("Access Denied: {0}")]
    PermissionDenied(String),
    /// The query ran longer than it may.
    #[error("{0}")]
    TimeLimit(String),
    /// The Iceberg catalog could not be reached or refused a request.
    #[error("catalog: {0}")]
    Catalog(String),
    /// Anything else: a bug or an environmental failure (storage, workers).
    #[error("internal error: {0}")]
    Internal(String),
    /// An error another SQE process reported (already worded for the user).
    #[error("{message}")]
    Remote { code: tonic::Code, message: String },
    /// A client (the shell) could not reach or talk to a server.
    #[error("{0}")]
    Connect(String),
    /// A client could not write a result where it was asked to.
    #[error("cannot write the result: {0}")]
    Output(#[source] std::io::Error),
}

pub type Result<T, E = GatewayError> = std::result::Result<T, E>;

impl From<DataFusionError> for GatewayError {
    fn from(err: DataFusionError) -> Self {
        classify_datafusion(err)
    }
}

impl From<iceberg::Error> for GatewayError {
    fn from(err: iceberg::Error) -> Self {
        classify_iceberg(&err)
    }
}

impl From<TableError> for GatewayError {
    fn from(err: TableError) -> Self {
        match err {
            TableError::Iceberg(e) => classify_iceberg(&e),
            TableError::UnsupportedType { .. } => GatewayError::Analysis(err.to_string()),
            TableError::NotSupported(m) => GatewayError::NotSupported(m),
            other => GatewayError::Internal(other.to_string()),
        }
    }
}

fn classify_iceberg(err: &iceberg::Error) -> GatewayError {
    use iceberg::ErrorKind as K;
    let message = err.to_string();
    match err.kind() {
        K::NamespaceNotFound | K::TableNotFound => GatewayError::NotFound(message),
        K::NamespaceAlreadyExists | K::TableAlreadyExists => GatewayError::AlreadyExists(message),
        K::FeatureUnsupported => GatewayError::NotSupported(message),
        _ => GatewayError::Internal(message),
    }
}

fn classify_datafusion(err: DataFusionError) -> GatewayError {
    match err {
        DataFusionError::SQL(e, _) => GatewayError::Syntax(e.to_string()),
        DataFusionError::NotImplemented(m) => GatewayError::NotSupported(m),
        DataFusionError::ResourcesExhausted(m) => GatewayError::ResourcesExhausted(m),
        DataFusionError::SchemaError(e, _) => {
            let message = e.to_string();
            if message.contains("not found") || message.contains("No field named") {
                GatewayError::NotFound(message)
            } else {
                GatewayError::Analysis(message)
            }
        }
        DataFusionError::Plan(m) => {
            if m.contains("not found")
                || m.contains("doesn't exist")
                || m.contains("does not exist")
            {
                GatewayError::NotFound(m)
            } else if m.contains("already exists") {
                GatewayError::AlreadyExists(m)
            } else {
                GatewayError::Analysis(m)
            }
        }
        DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => {
            classify_datafusion(*inner)
        }
        DataFusionError::Shared(shared) => match std::sync::Arc::try_unwrap(shared) {
            Ok(inner) => classify_datafusion(inner),
            Err(shared) => GatewayError::Internal(shared.to_string()),
        },
        DataFusionError::External(e) => match e.downcast::<TableError>() {
            Ok(worker) => GatewayError::from(*worker),
            Err(e) => match e.downcast::<GatewayError>() {
                Ok(gateway) => *gateway,
                Err(e) => GatewayError::Internal(e.to_string()),
            },
        },
        other => {
            let message = other.to_string();
            if message.contains("cancelled") {
                GatewayError::Cancelled
            } else {
                GatewayError::Internal(message)
            }
        }
    }
}

impl From<GatewayError> for tonic::Status {
    fn from(err: GatewayError) -> Self {
        use tonic::Code;
        let code = match &err {
            GatewayError::Config(_) => Code::FailedPrecondition,
            GatewayError::Syntax(_) | GatewayError::Analysis(_) => Code::InvalidArgument,
            GatewayError::NotFound(_) => Code::NotFound,
            GatewayError::AlreadyExists(_) => Code::AlreadyExists,
            GatewayError::NotSupported(_) => Code::Unimplemented,
            GatewayError::ResourcesExhausted(_) => Code::ResourceExhausted,
            GatewayError::Cancelled => Code::Cancelled,
            GatewayError::TimeLimit(_) => Code::DeadlineExceeded,
            GatewayError::Unauthenticated(_) => Code::Unauthenticated,
            GatewayError::PermissionDenied(_) => Code::PermissionDenied,
            GatewayError::Catalog(_) => Code::Unavailable,
            GatewayError::Internal(_) => Code::Internal,
            GatewayError::Remote { code, .. } => *code,
            GatewayError::Connect(_) => Code::Unavailable,
            GatewayError::Output(_) => Code::Internal,
        };
        tonic::Status::new(code, err.to_string())
    }
}

// The Trino standard error codes (`io.trino.spi.StandardErrorCode`) an error has.

/// Trino's `ErrorType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorType {
    User,
    Internal,
    InsufficientResources,
}

impl ErrorType {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::User => "USER_ERROR",
            ErrorType::Internal => "INTERNAL_ERROR",
            ErrorType::InsufficientResources => "INSUFFICIENT_RESOURCES",
        }
    }
}

/// A Trino standard error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorCode {
    pub code: i32,
    pub name: &'static str,
    pub kind: ErrorType,
}

const fn user(code: i32, name: &'static str) -> ErrorCode {
    ErrorCode {
        code,
        name,
        kind: ErrorType::User,
    }
}

pub const GENERIC_USER_ERROR: ErrorCode = user(0, "GENERIC_USER_ERROR");
pub const SYNTAX_ERROR: ErrorCode = user(1, "SYNTAX_ERROR");
pub const USER_CANCELED: ErrorCode = user(3, "USER_CANCELED");
pub const PERMISSION_DENIED: ErrorCode = user(4, "PERMISSION_DENIED");
pub const NOT_FOUND: ErrorCode = user(5, "NOT_FOUND");
pub const FUNCTION_NOT_FOUND: ErrorCode = user(6, "FUNCTION_NOT_FOUND");
pub const DIVISION_BY_ZERO: ErrorCode = user(8, "DIVISION_BY_ZERO");
pub const INVALID_CAST_ARGUMENT: ErrorCode = user(9, "INVALID_CAST_ARGUMENT");
pub const ALREADY_EXISTS: ErrorCode = user(12, "ALREADY_EXISTS");
pub const NOT_SUPPORTED: ErrorCode = user(13, "NOT_SUPPORTED");
pub const INVALID_SESSION_PROPERTY: ErrorCode = user(14, "INVALID_SESSION_PROPERTY");
pub const UNKNOWN_TRANSACTION: ErrorCode = user(20, "UNKNOWN_TRANSACTION");
pub const NOT_IN_TRANSACTION: ErrorCode = user(21, "NOT_IN_TRANSACTION");
pub const INCOMPATIBLE_CLIENT: ErrorCode = user(27, "INCOMPATIBLE_CLIENT");
pub const INVALID_PARAMETER_USAGE: ErrorCode = user(80, "INVALID_PARAMETER_USAGE");
pub const CATALOG_NOT_FOUND: ErrorCode = user(44, "CATALOG_NOT_FOUND");
pub const SCHEMA_NOT_FOUND: ErrorCode = user(45, "SCHEMA_NOT_FOUND");
pub const TABLE_NOT_FOUND: ErrorCode = user(46, "TABLE_NOT_FOUND");
pub const COLUMN_NOT_FOUND: ErrorCode = user(47, "COLUMN_NOT_FOUND");
pub const SCHEMA_ALREADY_EXISTS: ErrorCode = user(49, "SCHEMA_ALREADY_EXISTS");
pub const TABLE_ALREADY_EXISTS: ErrorCode = user(50, "TABLE_ALREADY_EXISTS");
pub const TYPE_MISMATCH: ErrorCode = user(58, "TYPE_MISMATCH");
pub const AMBIGUOUS_NAME: ErrorCode = user(62, "AMBIGUOUS_NAME");
pub const GENERIC_INTERNAL_ERROR: ErrorCode = ErrorCode {
    code: 65536,
    name: "GENERIC_INTERNAL_ERROR",
    kind: ErrorType::Internal,
};
pub const EXCEEDED_GLOBAL_MEMORY_LIMIT: ErrorCode = ErrorCode {
    code: 131073,
    name: "EXCEEDED_GLOBAL_MEMORY_LIMIT",
    kind: ErrorType::InsufficientResources,
};
pub const EXCEEDED_TIME_LIMIT: ErrorCode = ErrorCode {
    code: 131075,
    name: "EXCEEDED_TIME_LIMIT",
    kind: ErrorType::InsufficientResources,
};

/// The Trino error code of an SQE error. Our variants say what kind of thing went wrong; the
/// message says which object (table, schema, column), which Trino's codes distinguish.
pub fn error_code(error: &GatewayError) -> ErrorCode {
    match error {
        GatewayError::Syntax(_) => SYNTAX_ERROR,
        GatewayError::NotFound(message) => not_found_code(message),
        GatewayError::AlreadyExists(message) => {
            let lower = message.to_ascii_lowercase();
            if lower.contains("table") {
                TABLE_ALREADY_EXISTS
            } else if lower.contains("schema") || lower.contains("namespace") {
                SCHEMA_ALREADY_EXISTS
            } else {
                ALREADY_EXISTS
            }
        }
        GatewayError::Analysis(message) => analysis_code(message),
        GatewayError::NotSupported(_) => NOT_SUPPORTED,
        GatewayError::ResourcesExhausted(_) => EXCEEDED_GLOBAL_MEMORY_LIMIT,
        GatewayError::Cancelled => USER_CANCELED,
        GatewayError::Unauthenticated(_) | GatewayError::PermissionDenied(_) => PERMISSION_DENIED,
        GatewayError::TimeLimit(_) => EXCEEDED_TIME_LIMIT,
        GatewayError::Internal(message) => {
            // Arithmetic and cast failures surface from Arrow kernels as plain errors.
            let lower = message.to_ascii_lowercase();
            if lower.contains("divide by zero") || lower.contains("division by zero") {
                DIVISION_BY_ZERO
            } else if lower.contains("cannot cast") || lower.contains("cast error") {
                INVALID_CAST_ARGUMENT
            } else {
                GENERIC_INTERNAL_ERROR
            }
        }
        GatewayError::Remote { code, message } => match code {
            tonic::Code::InvalidArgument => analysis_code(message),
            tonic::Code::NotFound => not_found_code(message),
            tonic::Code::Cancelled => USER_CANCELED,
            tonic::Code::DeadlineExceeded => EXCEEDED_TIME_LIMIT,
            tonic::Code::ResourceExhausted => EXCEEDED_GLOBAL_MEMORY_LIMIT,
            tonic::Code::Unimplemented => NOT_SUPPORTED,
            tonic::Code::PermissionDenied | tonic::Code::Unauthenticated => PERMISSION_DENIED,
            _ => GENERIC_INTERNAL_ERROR,
        },
        GatewayError::Config(_)
        | GatewayError::Catalog(_)
        | GatewayError::Connect(_)
        | GatewayError::Output(_) => GENERIC_INTERNAL_ERROR,
    }
}

fn not_found_code(message: &str) -> ErrorCode {
    let lower = message.to_ascii_lowercase();
    if lower.contains("no field named") || lower.contains("column") {
        COLUMN_NOT_FOUND
    } else if lower.contains("table") {
        TABLE_NOT_FOUND
    } else if lower.contains("schema") || lower.contains("namespace") {
        SCHEMA_NOT_FOUND
    } else if lower.contains("catalog") {
        CATALOG_NOT_FOUND
    } else if lower.contains("function") {
        FUNCTION_NOT_FOUND
    } else {
        NOT_FOUND
    }
}

fn analysis_code(message: &str) -> ErrorCode {
    let lower = message.to_ascii_lowercase();
    if lower.contains("invalid function") || lower.contains("function not found") {
        FUNCTION_NOT_FOUND
    } else if lower.contains("ambiguous") {
        AMBIGUOUS_NAME
    } else if lower.contains("cannot coerce")
        || lower.contains("type mismatch")
        || lower.contains("no function matches")
    {
        TYPE_MISMATCH
    } else if lower.contains("session property") {
        INVALID_SESSION_PROPERTY
    } else if lower.contains("unknown transaction") {
        UNKNOWN_TRANSACTION
    } else if lower.contains("no transaction in progress") {
        NOT_IN_TRANSACTION
    } else if lower.contains("does not support transactions") {
        INCOMPATIBLE_CLIENT
    } else if lower.contains("number of parameters") {
        INVALID_PARAMETER_USAGE
    } else {
        GENERIC_USER_ERROR
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datafusion_errors_keep_their_cause() {
        let parse = datafusion::sql::sqlparser::parser::ParserError::ParserError(
            "Expected: end of statement".into(),
        );
        let e: GatewayError = DataFusionError::SQL(Box::new(parse), None).into();
        assert!(matches!(e, GatewayError::Syntax(_)));
        let e: GatewayError =
            DataFusionError::Plan("table 'iceberg.tpch.nope' not found".into()).into();
        assert_eq!(tonic::Status::from(e).code(), tonic::Code::NotFound);
        let e: GatewayError = DataFusionError::Context(
            "while planning".into(),
            Box::new(DataFusionError::NotImplemented("x".into())),
        )
        .into();
        assert_eq!(tonic::Status::from(e).code(), tonic::Code::Unimplemented);
    }
}
