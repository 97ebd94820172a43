//! The gateway's own errors: a configuration that cannot be used, and a node or command that
//! could not start. Errors of statements are the engine's ([`sqe_engine::Error`]).

use std::path::PathBuf;

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

/// Why a node (or a command of the binary) could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The engine could not start: its catalog, its settings.
    #[error(transparent)]
    Engine(#[from] sqe_engine::Error),
    #[error(transparent)]
    Node(#[from] sqe_worker::NodeError),
    /// Something of the machine's: a port, a directory, input.
    #[error("{0}")]
    System(String),
}

pub type StartResult<T> = std::result::Result<T, StartError>;
