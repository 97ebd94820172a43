//! The worker channel: tokens on every RPC (coordinator to worker and worker to worker), a
//! clear error for a worker with another secret, retries of connections that never opened, and
//! connection tasks on the I/O runtime.

use std::time::Duration;

use datafusion_distributed::{GetWorkerInfoRequest, WorkerServiceClient};
use sqe_engine::ErrorCode;
use sqe_engine::engine::{Outcome, SessionSettings};
use sqe_gateway::config::{ByteSize, CoordinatorConfig, WorkerConfig, WorkerSection};
use sqe_gateway::node::{RunningWorker, bind, start_coordinator, start_worker};
use sqe_gateway::tpch::create_tpch;
use sqe_tests::cluster::{TestCluster, local_coordinator_config};
use sqe_worker::peers::channel_resolver;
use url::Url;

use crate::TestResult;

const JOIN: &str = "SELECT o_orderpriority, count(*) AS lines FROM tpch.orders JOIN tpch.lineitem \
                    ON o_orderkey = l_orderkey GROUP BY o_orderpriority ORDER BY o_orderpriority";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_hop_carries_a_verified_token() -> TestResult {
    let cluster = TestCluster::start(2, 0.01).await?;
    cluster.query(JOIN).await?;
    let workers = &cluster.cluster.workers;
    let seen: Vec<_> = workers
        .iter()
        .map(|w| {
            w.verifier_stats
                .as_ref()
                .map(|s| s.verified_by_issuer())
                .unwrap_or_default()
        })
        .collect();
    for (worker, by_issuer) in workers.iter().zip(&seen) {
        assert!(
            by_issuer.get("coordinator").copied().unwrap_or(0) > 0,
            "{} verified no coordinator token: {by_issuer:?}",
            worker.url
        );
        assert_eq!(
            worker.verifier_stats.as_ref().map(|s| s.rejected()),
            Some(0)
        );
    }
    // The shuffle between the join's stages crosses workers: each verified its peer's tokens.
    let worker_to_worker: u64 = seen
        .iter()
        .map(|by| {
            by.iter()
                .filter(|(issuer, _)| issuer.starts_with("worker-"))
                .map(|(_, n)| n)
                .sum::<u64>()
        })
        .sum();
    assert!(
        worker_to_worker > 0,
        "no worker-to-worker RPC was authenticated: {seen:?}"
    );
    // Connection tasks ran on the I/O runtime's threads, never elsewhere.
    let io = workers[0].channels.stack().io_runtime().stats();
    assert!(io.tasks() > 0, "no connection task went to the I/O runtime");
    assert_eq!(
        io.foreign_polls(),
        0,
        "connection tasks were polled off the I/O threads"
    );
    cluster.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_call_without_token_is_rejected() -> TestResult {
    let cluster = TestCluster::start(1, 0.0).await?;
    let url = cluster.cluster.workers[0].url.to_string();
    let channel = tonic::transport::Endpoint::from_shared(url)?
        .connect()
        .await?;
    let status = WorkerServiceClient::new(channel)
        .get_worker_info(GetWorkerInfoRequest {})
        .await
        .err()
        .ok_or("a worker answered a call without token")?;
    assert_eq!(status.code(), tonic::Code::Unauthenticated);
    assert!(
        status.message().contains("no bearer token"),
        "{}",
        status.message()
    );
    cluster.stop().await;
    Ok(())
}

/// A worker that stops answering leaves the rotation the moment a call to it fails, not at the
/// next probe (an hour away here): the query that met it fails naming it, the next one runs on
/// the worker that is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_that_cannot_be_reached_leaves_the_rotation_at_once() -> TestResult {
    let mut cluster = TestCluster::start_with(sqe_gateway::local::LocalOptions {
        workers: 2,
        scale_factor: 0.01,
        worker_memory_limit: Some(512 * 1024 * 1024),
        worker_probe_interval_secs: Some(3600),
        ..TestCluster::options()
    })
    .await?;
    cluster.query(JOIN).await?;
    let gone = cluster.cluster.workers.remove(1);
    let gone_url = gone.url.clone();
    gone.stop().await;
    let pool = cluster.engine().workers();
    assert!(
        pool.reachable_urls().contains(&gone_url),
        "nothing has noticed yet"
    );
    let failed = cluster
        .query(JOIN)
        .await
        .err()
        .ok_or("a query with tasks on a stopped worker succeeded")?;
    // The worker in the words, not in a dump of the channel's error. Its code is Trino's
    // REMOTE_HOST_GONE when the coordinator's own call found the worker gone; when another
    // worker's did, or the plan could not be sent, datafusion-distributed carried the status
    // as text only (docs/errors.md), and the code is GENERIC_INTERNAL_ERROR.
    assert!(
        matches!(
            failed.code(),
            ErrorCode::RemoteHostGone | ErrorCode::GenericInternalError
        ),
        "{failed}"
    );
    assert!(
        failed
            .to_string()
            .contains(&format!("{gone_url} could not be reached: ")),
        "{failed}"
    );
    assert!(!failed.to_string().contains("ConnectError("), "{failed}");
    // The failed call reports the worker as it ends, which may be just after the query's
    // error reached the client; the probe (hourly here) and heartbeats (none in a local
    // cluster) cannot be what takes it out.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while pool.reachable_urls().contains(&gone_url) && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        !pool.reachable_urls().contains(&gone_url),
        "the worker is still in the rotation"
    );
    cluster.query(JOIN).await?;
    cluster.stop().await;
    Ok(())
}

/// A token on the wire, as an eavesdropper or a log would see it, sent again: to the worker
/// it was for (a replay) and to another worker (the wrong audience). Both are refused; a fresh
/// token for the right worker is accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_token_is_good_for_one_request_to_one_worker() -> TestResult {
    let secret = "a-secret-of-the-replay-test-cluster";
    let cluster = TestCluster::start_with(sqe_gateway::local::LocalOptions {
        workers: 2,
        scale_factor: 0.01,
        worker_secret: Some(secret.into()),
        ..TestCluster::options()
    })
    .await?;
    let urls: Vec<String> = cluster
        .cluster
        .workers
        .iter()
        .map(|w| w.url.to_string())
        .collect();
    let signer = sqe_layers::auth::TokenSigner::new(secret.as_bytes(), "eavesdropper", "unused")?;
    let call = |url: String, token: String| async move {
        let channel = tonic::transport::Endpoint::from_shared(url)?
            .connect()
            .await?;
        let mut request = tonic::Request::new(GetWorkerInfoRequest {});
        request
            .metadata_mut()
            .insert("authorization", format!("Bearer {token}").parse()?);
        let answered = WorkerServiceClient::new(channel)
            .get_worker_info(request)
            .await;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(answered.map(drop))
    };
    let token = signer.sign_to(&sqe_layers::auth::audience_of(&urls[0]))?;
    call(urls[0].clone(), token.clone()).await??;
    let replayed = call(urls[0].clone(), token.clone())
        .await?
        .err()
        .ok_or("a worker accepted a token twice")?;
    assert_eq!(replayed.code(), tonic::Code::Unauthenticated);
    assert!(
        replayed.message().contains("used before"),
        "{}",
        replayed.message()
    );
    let elsewhere = call(
        urls[1].clone(),
        signer.sign_to(&sqe_layers::auth::audience_of(&urls[0]))?,
    )
    .await?
    .err()
    .ok_or("a worker accepted a token for another worker")?;
    assert_eq!(elsewhere.code(), tonic::Code::Unauthenticated);
    assert!(
        elsewhere.message().contains(&format!(
            "is for '{}'",
            sqe_layers::auth::audience_of(&urls[0])
        )),
        "{}",
        elsewhere.message()
    );
    let fresh = signer.sign_to(&sqe_layers::auth::audience_of(&urls[1]))?;
    call(urls[1].clone(), fresh).await??;
    // The cluster's own traffic still flows: every RPC gets a token of its own.
    cluster.query(JOIN).await?;
    cluster.stop().await;
    Ok(())
}

async fn worker(
    secret: &str,
    name: &str,
) -> Result<RunningWorker, Box<dyn std::error::Error + Send + Sync>> {
    let config = WorkerConfig {
        worker: WorkerSection {
            node_id: Some(name.into()),
            bind_address: "127.0.0.1".into(),
            flight_port: 0,
            worker_secret: Some(secret.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Ok(start_worker(&config, bind("127.0.0.1", 0, name).await?).await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_with_another_secret_fails_queries_naming_it() -> TestResult {
    let dir = tempfile::tempdir()?;
    let good = worker("the-cluster-secret-of-this-test", "worker-1").await?;
    let bad = worker("another-cluster-secret-entirely", "worker-2").await?;
    let mut config = local_coordinator_config(dir.path());
    config.coordinator.worker_urls = vec![good.url.to_string(), bad.url.to_string()];
    config.coordinator.worker_secret = Some("the-cluster-secret-of-this-test".into());
    config.coordinator.scan_bytes_per_partition = ByteSize(8 * 1024);
    let coordinator = start_coordinator(&config, bind("127.0.0.1", 0, "flight").await?).await?;
    let statuses = coordinator.engine.workers().statuses();
    assert!(
        !statuses[0].auth_failed && statuses[1].auth_failed,
        "{statuses:?}"
    );
    create_tpch(coordinator.engine.catalog(), "tpch", 0.01, 4).await?;
    let outcome = coordinator
        .engine
        .execute(&SessionSettings::default(), JOIN)
        .await;
    let message = match outcome {
        Ok(Outcome::Rows(stream)) => futures::TryStreamExt::try_collect::<Vec<_>>(stream)
            .await
            .err()
            .ok_or("a query using a worker with another secret succeeded")?
            .to_string(),
        Ok(Outcome::Updated { .. }) => return Err("a query reported an update".into()),
        Err(e) => e.to_string(),
    };
    assert!(
        message.contains(&format!("worker authentication failed at {}", bad.url)),
        "the error should name the worker: {message}"
    );
    assert!(
        bad.verifier_stats
            .as_ref()
            .is_some_and(|s| s.rejected() > 0)
    );
    coordinator.stop().await;
    good.stop().await;
    bad.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_down_at_connect_time_is_retried_then_reported() -> TestResult {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let url = Url::parse(&format!("http://{}", listener.local_addr()?))?;
    drop(listener);
    let peers = CoordinatorConfig::default().peer_settings()?;
    let channels = channel_resolver("coordinator", &peers)?;
    let started = std::time::Instant::now();
    let status = channels
        .client(&url)?
        .get_worker_info(GetWorkerInfoRequest {})
        .await
        .err()
        .ok_or("a closed port answered")?;
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    assert_eq!(
        channels.stack().retry_stats().retries(),
        2,
        "3 attempts in all"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(50),
        "retries back off"
    );
    Ok(())
}
