//! A worker node from `worker.toml`.

use std::time::Duration;

use crate::error::{StartError, StartResult as Result};
use sqe_worker::node::{CoordinatorLink, RunningWorker, WorkerNodeSettings, default_node_id};
use sqe_worker::task_errors::ErrorStatus;
use tokio::net::TcpListener;

use super::build_version;
use super::observability::serve_observability;
use crate::config::WorkerConfig;
use crate::observe::{PeerCalls, WorkerObserved};

/// A worker's node id: `worker.node_id`, else `worker@<address it listens on>`.
pub fn worker_node_id(config: &WorkerConfig, listener: &TcpListener) -> Result<String> {
    let addr = listener
        .local_addr()
        .map_err(|e| StartError::System(format!("worker listener: {e}")))?;
    Ok(config
        .worker
        .node_id
        .clone()
        .unwrap_or_else(|| default_node_id(addr)))
}

/// The version a worker reports: `worker.version`, else [`build_version`].
pub fn worker_version(config: &WorkerConfig) -> String {
    config.worker.version.clone().unwrap_or_else(build_version)
}

fn settings(config: &WorkerConfig) -> Result<WorkerNodeSettings> {
    let w = &config.worker;
    Ok(WorkerNodeSettings {
        node_id: w.node_id.clone(),
        advertise_url: w.advertise_url.clone(),
        version: worker_version(config),
        storage_props: config.storage.iceberg_props()?,
        memory_limit: w
            .memory_limit
            .map(|m| m.0)
            .or_else(|| super::default_memory_limit(1)),
        spill_directory: w.spill_directory.clone(),
        peers: config.peer_settings()?,
        coordinator: w.coordinator_url.as_ref().map(|url| CoordinatorLink {
            url: url.clone(),
            heartbeat_interval: Duration::from_secs(w.heartbeat_interval_secs),
            shutdown_grace: Duration::from_secs(w.shutdown_grace_secs),
            drain_timeout: Duration::from_secs(w.drain_timeout_secs),
        }),
        // A client reading a result at the worker gets the coordinator's classification.
        error_status: Some(ErrorStatus::new(|error| {
            tonic::Status::from(sqe_engine::error::Error::from(error))
        })),
    })
}

/// Starts a worker on an already-bound listener, with its metrics port when configured.
pub async fn start_worker(config: &WorkerConfig, listener: TcpListener) -> Result<RunningWorker> {
    let mut worker = sqe_worker::node::start(settings(config)?, listener).await?;
    let observed = WorkerObserved {
        stats: std::sync::Arc::clone(&worker.stats),
        verifier: worker.verifier_stats.clone(),
        peers: PeerCalls::of(worker.channels.stack()),
        membership: worker.membership.as_ref().map(|m| m.state()),
    };
    let handle = worker.runtime.handle().clone();
    serve_observability(
        &mut worker.servers,
        &handle,
        (
            &config.worker.bind_address,
            config.worker.metrics_port,
            "worker.metrics_port",
        ),
        observed,
    )
    .await?;
    Ok(worker)
}
