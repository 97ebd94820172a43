//! SQE's integration suite: one test binary, real gRPC servers and real processes.

// Test and benchmark code: the lock and spawn bans are for the code that ships.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod admission;
mod alter_table;
mod cluster_tls;
mod config_errors;
mod distributed;
mod flight_sql;
mod flood_memory;
mod helm_chart;
mod lifecycle;
mod maintenance;
mod membership;
mod parallel_endpoints;
mod processes;
mod rest_stack;
mod result_cache;
mod row_changes;
mod runtime_tables;
mod scans;
mod security;
mod shell;
mod telemetry;
mod time_travel;
mod tpch_catalog;
mod trino_cancel;
mod trino_http;
mod types;
mod views;
mod web_ui;
mod worker_channel;
mod writes;

/// Test results: any error, with its message.
pub type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;
