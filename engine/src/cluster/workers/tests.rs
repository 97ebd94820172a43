use std::time::Duration;

use super::*;
use sqe_worker::node::{RunningWorker, WorkerNodeSettings};
use sqe_worker::peers::PeerSettings;

fn version_requirement(version: &str) -> VersionRequirement {
    VersionRequirement::Exact(version.into())
}

fn settings(required: VersionRequirement) -> PoolSettings {
    PoolSettings {
        required,
        ..PoolSettings::default()
    }
}

/// Peers without tokens, as on a private test network.
fn unauthenticated_peers() -> PeerSettings {
    PeerSettings {
        secret: None,
        previous_secret: None,
        allow_unauthenticated: true,
        rpc_timeout: Duration::from_secs(30),
        connect_timeout: Duration::from_secs(5),
        retry_budget_percent: 20.0,
        io_threads: 2,
        tls: None,
    }
}

fn channels() -> Result<Channels, Box<dyn std::error::Error>> {
    Ok(Arc::new(sqe_worker::peers::channel_resolver(
        "coordinator",
        &unauthenticated_peers(),
    )?))
}

async fn start_workers(
    versions: &[&str],
) -> Result<Vec<RunningWorker>, Box<dyn std::error::Error>> {
    let mut workers = Vec::new();
    for version in versions {
        let settings = WorkerNodeSettings {
            node_id: None,
            advertise_url: None,
            version: (*version).into(),
            storage_props: Default::default(),
            memory_limit: None,
            spill_directory: None,
            peers: unauthenticated_peers(),
            coordinator: None,
            error_status: None,
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        workers.push(sqe_worker::node::start(settings, listener).await?);
    }
    Ok(workers)
}

fn announcement(url: &Url, node_id: &str, version: &str, interval: Duration) -> Announcement {
    Announcement {
        url: url.clone(),
        node_id: node_id.into(),
        version: version.into(),
        heartbeat_interval: interval,
    }
}

fn state_of(pool: &WorkerPool, url: &Url) -> Option<WorkerState> {
    pool.statuses()
        .into_iter()
        .find(|s| &s.url == url)
        .map(|s| s.state(pool.missed_heartbeats()))
}

#[tokio::test]
async fn unreachable_worker_is_not_offered() -> Result<(), Box<dyn std::error::Error>> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let url = Url::parse(&format!("http://{}", listener.local_addr()?))?;
    drop(listener);
    let pool = WorkerPool::new(vec![url.clone()], channels()?, PoolSettings::default());
    pool.probe().await;
    assert!(pool.reachable_urls().is_empty());
    assert_eq!(state_of(&pool, &url), Some(WorkerState::Unreachable));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_workers_of_the_required_version_get_tasks() -> Result<(), Box<dyn std::error::Error>>
{
    let workers = start_workers(&["v1", "v2"]).await?;
    let urls: Vec<Url> = workers.iter().map(|w| w.url.clone()).collect();
    let pool = WorkerPool::new(
        urls.clone(),
        channels()?,
        settings(version_requirement("v1")),
    );
    pool.probe().await;
    assert_eq!(pool.reachable_urls(), [urls[0].clone()]);
    let versions: Vec<Option<String>> = pool.statuses().into_iter().map(|s| s.version).collect();
    assert_eq!(versions, [Some("v1".into()), Some("v2".into())]);
    assert_eq!(state_of(&pool, &urls[1]), Some(WorkerState::Incompatible));

    // The rolling deploy's switch: from the next query on, only v2 gets tasks.
    pool.require_version(version_requirement("v2"));
    assert_eq!(pool.reachable_urls(), [urls[1].clone()]);
    pool.probe().await;
    assert_eq!(pool.reachable_urls(), [urls[1].clone()]);
    pool.require_version(VersionRequirement::Any);
    assert_eq!(pool.reachable_urls(), urls);
    for worker in workers {
        worker.stop().await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registered_workers_live_by_their_heartbeats() -> Result<(), Box<dyn std::error::Error>> {
    let workers = start_workers(&["v1", "v1"]).await?;
    let (steady, silent) = (workers[0].url.clone(), workers[1].url.clone());
    let pool = WorkerPool::new(Vec::new(), channels()?, PoolSettings::default());
    assert!(
        !pool.heartbeat(&steady, "w1", false),
        "unknown before registering"
    );

    pool.register(announcement(&steady, "w1", "v1", Duration::from_secs(60)))?;
    pool.register(announcement(
        &silent,
        "w2",
        "v1",
        Duration::from_millis(300),
    ))?;
    // Registered, not yet confirmed by a probe: no tasks.
    assert!(pool.reachable_urls().is_empty());
    assert_eq!(state_of(&pool, &steady), Some(WorkerState::Unreachable));
    pool.probe().await;
    assert_eq!(state_of(&pool, &steady), Some(WorkerState::Active));
    assert_eq!(pool.node_id_of(&steady), "w1");

    // Three 300 ms intervals without a heartbeat: unreachable, no tasks.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(state_of(&pool, &silent), Some(WorkerState::Unreachable));
    assert_eq!(pool.reachable_urls(), std::slice::from_ref(&steady));
    // Back when heartbeats resume.
    assert!(pool.heartbeat(&silent, "w2", false));
    assert_eq!(state_of(&pool, &silent), Some(WorkerState::Active));
    // Another node id at that URL is not this registration.
    assert!(!pool.heartbeat(&silent, "someone-else", false));

    // Another node cannot take a live worker's URL.
    let impostor = announcement(&steady, "impostor", "v1", Duration::from_secs(60));
    assert!(pool.register(impostor).is_err());
    // Draining: up, but no new tasks; only the registered node can drain or deregister it.
    assert!(!pool.drain(&steady, "impostor"));
    assert!(pool.drain(&steady, "w1"));
    assert_eq!(state_of(&pool, &steady), Some(WorkerState::Draining));
    assert!(!pool.reachable_urls().contains(&steady));
    // Deregistered and not configured: forgotten.
    pool.deregister(&steady, "impostor");
    assert_eq!(state_of(&pool, &steady), Some(WorkerState::Draining));
    pool.deregister(&steady, "w1");
    assert_eq!(state_of(&pool, &steady), None);
    assert!(!pool.heartbeat(&steady, "w1", false));
    for worker in workers {
        worker.stop().await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_merges_with_configured_urls_and_is_rechecked()
-> Result<(), Box<dyn std::error::Error>> {
    let workers = start_workers(&["v2"]).await?;
    let url = workers[0].url.clone();
    let pool = WorkerPool::new(
        vec![url.clone()],
        channels()?,
        settings(version_requirement("v1")),
    );
    // It registers claiming v1; the probe finds it runs v2, and v2 gets no tasks.
    pool.register(announcement(&url, "w1", "v1", Duration::from_secs(60)))?;
    assert_eq!(pool.statuses().len(), 1, "one entry per URL");
    pool.probe().await;
    let status = pool.statuses().remove(0);
    assert_eq!(status.version.as_deref(), Some("v2"));
    assert_eq!(status.state(3), WorkerState::Incompatible);

    // A configured worker that deregisters stays listed, unreachable until found again.
    pool.require_version(VersionRequirement::Any);
    assert_eq!(pool.reachable_urls(), std::slice::from_ref(&url));
    pool.deregister(&url, "w1");
    assert_eq!(state_of(&pool, &url), Some(WorkerState::Unreachable));
    pool.probe().await;
    assert_eq!(state_of(&pool, &url), Some(WorkerState::Active));
    for worker in workers {
        worker.stop().await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_found_in_dns_get_tasks_and_leave_with_their_records()
-> Result<(), Box<dyn std::error::Error>> {
    let workers = start_workers(&["1.0"]).await?;
    let url = workers[0].url.clone();
    let port = url.port().ok_or("worker URL without port")?;
    // An address literal resolves to itself: the lookup path without a DNS server.
    let pool = WorkerPool::new(
        Vec::new(),
        channels()?,
        PoolSettings {
            dns: Some(format!("127.0.0.1:{port}")),
            ..PoolSettings::default()
        },
    );
    pool.probe().await;
    assert_eq!(state_of(&pool, &url), Some(WorkerState::Active));
    assert_eq!(pool.reachable_urls(), vec![url.clone()]);

    // Answers change: a new address joins, a vanished one leaves unless it registered.
    let other = Url::parse("http://10.0.0.9:50052")?;
    let registered = Url::parse("http://10.0.0.10:50052")?;
    pool.listed_by_dns(
        "sqe-workers:50052",
        &[url.clone(), other.clone(), registered.clone()],
    );
    pool.register(announcement(
        &registered,
        "w-10",
        "1.0",
        Duration::from_secs(5),
    ))?;
    assert_eq!(pool.statuses().len(), 3);
    pool.listed_by_dns("sqe-workers:50052", std::slice::from_ref(&url));
    let listed: Vec<Url> = pool.statuses().into_iter().map(|s| s.url).collect();
    assert_eq!(listed, vec![url.clone(), registered], "{listed:?}");
    assert!(
        pool.statuses().iter().all(|s| s.url != other),
        "gone from DNS, never registered: dropped"
    );

    // A failed lookup keeps the last answer.
    let failing = WorkerPool::new(
        vec![],
        channels()?,
        PoolSettings {
            dns: Some("no-such-host.invalid:50052".into()),
            ..PoolSettings::default()
        },
    );
    failing.listed_by_dns("no-such-host.invalid:50052", std::slice::from_ref(&url));
    failing.probe().await;
    assert_eq!(state_of(&failing, &url), Some(WorkerState::Active));
    for worker in workers {
        worker.stop().await;
    }
    Ok(())
}
