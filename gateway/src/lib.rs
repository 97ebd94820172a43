//! The SQE coordinator: configuration, catalogs, planning and the client endpoints.

// Test code may lock and spawn as it likes; the bans are for the code that ships.
#![cfg_attr(test, allow(clippy::disallowed_types, clippy::disallowed_methods))]

pub mod client_auth;
pub mod config;
pub mod error;
pub mod flight;
pub mod local;
pub mod node;
pub mod observe;
pub mod shell;
pub mod telemetry;
pub mod tls_listener;
pub mod tpch;
pub mod trino;
