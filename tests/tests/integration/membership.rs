//! Workers joining a coordinator over the control plane, in process: only with the cluster's
//! worker_secret, also when clients must log in, and leaving by draining.

use std::net::SocketAddr;
use std::time::Duration;

use sqe_engine::cluster::WorkerState;
use sqe_gateway::config::{
    CatalogConfig, ClientAuthConfig, ClientAuthType, CoordinatorConfig, WorkerConfig,
};
use sqe_gateway::node::{RunningCoordinator, RunningWorker, start_coordinator_on, start_worker};

use crate::TestResult;

const SECRET: &str = "the-cluster-secret-for-this-test";

async fn coordinator(
    dir: &std::path::Path,
) -> Result<RunningCoordinator, Box<dyn std::error::Error + Send + Sync>> {
    let mut config = CoordinatorConfig::default();
    config.coordinator.bind_address = "127.0.0.1".into();
    config.coordinator.worker_secret = Some(SECRET.into());
    config.coordinator.flight_sql_allow_insecure_auth = true;
    config.catalog = CatalogConfig {
        uri: Some(dir.join("catalog.db").display().to_string()),
        warehouse: Some(dir.join("warehouse").display().to_string()),
        ..CatalogConfig::default()
    };
    // Clients must log in; workers' control-plane calls carry worker tokens instead.
    let hash = bcrypt::hash("pw", 4)?;
    config.client_auth = ClientAuthConfig {
        kind: ClientAuthType::Password,
        users: std::collections::HashMap::from([("ann".to_string(), hash)]),
        ..ClientAuthConfig::default()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    Ok(start_coordinator_on(&config, listener, None).await?)
}

async fn worker(
    coordinator: SocketAddr,
    node_id: &str,
    secret: &str,
) -> Result<RunningWorker, Box<dyn std::error::Error + Send + Sync>> {
    let mut config = WorkerConfig::default();
    config.worker.node_id = Some(node_id.into());
    config.worker.worker_secret = Some(secret.into());
    config.worker.coordinator_url = Some(format!("http://{coordinator}"));
    config.worker.heartbeat_interval_secs = 1;
    config.worker.shutdown_grace_secs = 0;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    Ok(start_worker(&config, listener).await?)
}

fn state(coordinator: &RunningCoordinator, node_id: &str) -> Option<WorkerState> {
    let pool = coordinator.engine.workers();
    pool.statuses()
        .into_iter()
        .find(|s| s.node_id() == node_id)
        .map(|s| s.state(pool.missed_heartbeats()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn workers_join_with_the_cluster_secret_and_leave_by_draining() -> TestResult {
    let dir = tempfile::tempdir()?;
    let coordinator = coordinator(dir.path()).await?;
    let addr = coordinator.flight_sql_addr;
    let good = worker(addr, "good", SECRET).await?;
    let bad = worker(addr, "bad", "another-secret-of-another-cluster").await?;

    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while state(&coordinator, "good") != Some(WorkerState::Active) {
        if tokio::time::Instant::now() > deadline {
            return Err(format!(
                "good never active: {:?}",
                coordinator.engine.workers().statuses()
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        coordinator.engine.workers().reachable_urls(),
        std::slice::from_ref(&good.url)
    );
    // The wrong secret's registrations are refused, beat after beat.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(state(&coordinator, "bad"), None);
    assert_eq!(coordinator.engine.workers().statuses().len(), 1);

    // Draining: the coordinator hears of it, then the worker deregisters and is gone.
    good.drain_and_stop().await;
    assert_eq!(state(&coordinator, "good"), None);
    assert!(coordinator.engine.workers().reachable_urls().is_empty());
    bad.stop().await;
    coordinator.stop().await;
    Ok(())
}
