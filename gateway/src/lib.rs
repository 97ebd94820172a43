//! The SQE coordinator: configuration, catalogs, planning and the client endpoints.

// Test code may lock and spawn as it likes; the bans are for the code that ships.
#![cfg_attr(test, allow(clippy::disallowed_types, clippy::disallowed_methods))]

pub mod client_auth;
pub mod config;
pub mod error;
pub mod executable;
mod flight;
mod http_server;
pub mod local;
pub mod node;
mod observe;
pub mod shell;
pub mod telemetry;
mod tls_listener;
pub mod tpch;
mod trino;
/// Trino's JSON encoding of result rows, for the encoder benchmark.
pub mod trino_json {
    pub use crate::trino::encode::{write_rows, write_rows_per_value};
}
mod ui;
