//! Node wiring per role: a coordinator or a worker built from its configuration file, its
//! servers started as one set with one shutdown path.

mod coordinator;
mod machine;
mod observability;
mod task_progress;
mod worker;

pub use coordinator::{
    RunningCoordinator, start_coordinator, start_coordinator_on, version_requirement,
};
pub(crate) use machine::default_memory_limit;
pub use sqe_worker::node::RunningWorker;
pub use worker::{start_worker, worker_node_id, worker_version};

use crate::error::{StartError, StartResult as Result};
use tokio::net::TcpListener;

/// The version this build reports to coordinators: `SQE_VERSION` if set, else the crate version.
pub fn build_version() -> String {
    std::env::var("SQE_VERSION").unwrap_or_else(|_| env!("CARGO_PKG_VERSION").to_string())
}

/// Binds `address:port`, with a message that says which setting to change when it fails.
pub async fn bind(address: &str, port: u16, what: &str) -> Result<TcpListener> {
    sqe_layers::serve::bind(address, port)
        .await
        .map_err(|e| StartError::System(format!("{e} (for {what})")))
}
