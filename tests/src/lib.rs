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
pub mod metrics;
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

/// Every file under `dir`, recursively (none if it does not exist).
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found
}
