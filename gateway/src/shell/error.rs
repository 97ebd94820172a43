//! Why a shell command failed: the shell is a client, so its errors are about reaching the
//! server, what the server answered, and writing the result.

/// A shell command's error.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    /// The server could not be reached or talked to.
    #[error("{0}")]
    Connect(String),
    /// The server answered with an error: its gRPC code, and (from SQE) the error's name and
    /// where in the statement it is.
    #[error("{message}")]
    Remote {
        code: tonic::Code,
        name: Option<String>,
        location: Option<sqe_engine::error::Location>,
        message: String,
    },
    /// The server refused a setting the shell asked for.
    #[error("{0}")]
    Refused(String),
    /// A shell command used wrongly.
    #[error("{0}")]
    Command(String),
    /// Ctrl-C.
    #[error("query cancelled")]
    Cancelled,
    /// The result could not be formatted.
    #[error("cannot format the result: {0}")]
    Format(String),
    /// The result could not be written where it was asked to.
    #[error("cannot write the result: {0}")]
    Output(#[source] std::io::Error),
}

pub(super) type Result<T, E = ShellError> = std::result::Result<T, E>;
