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
mod ui;
