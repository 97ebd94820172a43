//! The SQE coordinator: configuration, catalogs, planning and the client endpoints.

pub mod client_auth;
pub mod config;
pub mod flight;
pub mod local;
pub mod node;
pub mod observe;
pub mod shell;
pub mod telemetry;
pub mod tls_listener;
pub mod tpch;
pub mod trino;
