//! Why a node could not start or keep its membership.

/// A node's start-up failed.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// Its settings are wrong (a URL, a secret).
    #[error("{0}")]
    Settings(String),
    /// A resource it needs could not be had (a listener, a runtime).
    #[error("{0}")]
    Start(String),
}

pub(crate) type Result<T, E = NodeError> = std::result::Result<T, E>;
