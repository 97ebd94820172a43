//! Harnesses for SQE's integration suite.
//!
//! - [`cluster::TestCluster`]: a coordinator and workers in this process, each a real gRPC server
//!   on 127.0.0.1:0, over an embedded catalog in a temporary directory.
//! - [`process`]: the real `sqe` binary started as separate processes, as a user would.
//! - [`python::run_python`]: the real Python clients from the project's virtualenv.
//! - [`baseline`]: single-process DataFusion reading the same tables' Parquet files directly,
//!   the reference distributed results are compared with.

// Test and benchmark code: the lock and spawn bans are for the code that ships.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

pub mod baseline;
pub mod cluster;
pub mod flight;
pub mod otlp;
pub mod process;
pub mod python;
pub mod stack;
pub mod tls;
pub mod trino;

/// Renders batches as a text table, the form results are compared in.
pub fn render(batches: &[datafusion::arrow::array::RecordBatch]) -> String {
    datafusion::arrow::util::pretty::pretty_format_batches(batches)
        .map(|t| t.to_string())
        .unwrap_or_else(|e| format!("<unprintable: {e}>"))
}
