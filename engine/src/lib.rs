//! The SQE engine, below the protocols: catalogs, the Trino SQL dialect, planning and running
//! statements (distributed when workers are reachable), the query history, the result cache,
//! the system tables and the worker pool.

// Test code may lock and spawn as it likes; the bans are for the code that ships.
#![cfg_attr(test, allow(clippy::disallowed_types, clippy::disallowed_methods))]

pub mod cache;
pub mod calendar;
pub mod catalog;
pub mod cluster;
mod commits;
pub mod dialect;
pub mod engine;
pub mod error;
pub mod expiring;
pub mod history;
mod memory;
pub mod metadata;
pub mod queries;
mod query_runtime;
mod session_properties;
#[cfg(any(test, feature = "stand-in"))]
pub mod stand_in;
mod stopping;

pub use commits::Commits;
pub use error::{Error, ErrorCode, ErrorKind, ObjectKind};
pub use memory::QueryMemory;
pub use query_runtime::QueryRuntime;
pub use session_properties::{
    DEFAULT_QUERY_RETRY_ATTEMPTS, JoinDistribution, PropertyLimits, PropertyType, QueryRetryPolicy,
    SessionProperties,
};
