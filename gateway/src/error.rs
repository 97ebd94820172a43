//! The gateway's errors, classified by cause, and their one mapping to gRPC status.

use std::path::PathBuf;

use datafusion::error::DataFusionError;
use sqe_worker::WorkerError;

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

impl From<WorkerError> for GatewayError {
    fn from(err: WorkerError) -> Self {
        match err {
            WorkerError::Iceberg(e) => classify_iceberg(&e),
            WorkerError::UnsupportedType { .. } => GatewayError::Analysis(err.to_string()),
            WorkerError::NotSupported(m) => GatewayError::NotSupported(m),
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
        DataFusionError::External(e) => match e.downcast::<WorkerError>() {
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
