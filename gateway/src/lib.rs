//! The SQE coordinator: configuration, catalogs, planning and the client endpoints.

pub mod cache;
pub mod catalog;
pub mod client_auth;
pub mod client_statements;
pub mod cluster;
pub mod config;
pub mod engine;
pub mod error;
pub mod flight;
pub mod history;
pub mod local;
pub mod metadata;
pub mod observe;
pub mod peers;
pub mod query_runtime;
pub mod runtime;
pub mod session_properties;
pub mod shell;
pub mod sql_types;
pub mod telemetry;
pub mod tls_listener;
pub mod tpch;
pub mod trino;
pub mod units;
