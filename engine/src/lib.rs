//! The SQE engine, below the protocols: catalogs, the Trino SQL dialect, planning and running
//! statements (distributed when workers are reachable), the query history, the result cache,
//! the system tables and the worker pool.

pub mod cache;
pub mod catalog;
pub mod cluster;
pub mod commits;
pub mod dialect;
pub mod engine;
pub mod error;
pub mod history;
pub mod memory;
pub mod metadata;
pub mod query_runtime;
pub mod session_properties;
