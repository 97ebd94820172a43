//! A worker's side of the control plane: register with the coordinator, heartbeat, and on
//! shutdown drain (no new tasks, finish the running ones), stop serving and deregister.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::server::WorkerStats;
use sqe_layers::LayeredChannel;
use sqe_proto::{
    ControlPlaneClient, DeregisterRequest, DrainRequest, HeartbeatRequest, RegisterRequest,
};
use tokio::task::JoinHandle;
use url::Url;

use sqe_layers::serve::Servers;

use crate::error::{NodeError, Result};

/// Who this worker is and how it leaves.
#[derive(Debug, Clone)]
pub struct MembershipSettings {
    pub coordinator_url: String,
    pub node_id: String,
    pub url: Url,
    pub version: String,
    pub heartbeat_interval: Duration,
    pub task_threads: u32,
    pub memory_limit_bytes: u64,
    /// After announcing the drain: tasks of queries planned just before it may still arrive.
    pub shutdown_grace: Duration,
    /// The longest a drain waits for running tasks before the worker stops anyway.
    pub drain_timeout: Duration,
}

impl MembershipSettings {
    fn drain_request(&self) -> DrainRequest {
        DrainRequest {
            node_id: self.node_id.clone(),
            url: self.url.to_string(),
        }
    }
}

/// Where a worker stands with its coordinator, for `/readyz` and `/metrics`.
#[derive(Debug, Default)]
pub struct MembershipState {
    registered: AtomicBool,
    draining: AtomicBool,
}

impl MembershipState {
    /// The coordinator accepted its registration (and its last heartbeat).
    pub fn registered(&self) -> bool {
        self.registered.load(Ordering::SeqCst)
    }

    /// It is shutting down.
    pub fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }
}

/// The heartbeat loop of a registered worker.
pub struct Membership {
    settings: MembershipSettings,
    client: ControlPlaneClient<LayeredChannel>,
    stats: Arc<WorkerStats>,
    state: Arc<MembershipState>,
    heartbeats: JoinHandle<()>,
}

/// How often the count of running tasks is read while draining.
const DRAIN_POLL: Duration = Duration::from_millis(100);
/// Running tasks must stay at zero this long: between two stages of a query none may run.
const DRAIN_QUIET: Duration = Duration::from_millis(500);

impl Membership {
    /// Starts registering and heartbeating in the background (on the current runtime).
    pub fn start(
        settings: MembershipSettings,
        channel: LayeredChannel,
        stats: Arc<WorkerStats>,
    ) -> Self {
        let client = ControlPlaneClient::new(channel);
        let state = Arc::new(MembershipState::default());
        let heartbeats = sqe_layers::task::spawn(heartbeat_loop(
            settings.clone(),
            client.clone(),
            Arc::clone(&stats),
            Arc::clone(&state),
        ));
        Self {
            settings,
            client,
            stats,
            state,
            heartbeats,
        }
    }

    pub fn state(&self) -> Arc<MembershipState> {
        Arc::clone(&self.state)
    }

    /// Drains: tells the coordinator, lets already-planned tasks arrive, waits for the running
    /// ones to finish (at most `drain_timeout`), stops `server` and deregisters.
    pub async fn drain_and_leave(mut self, server: Servers) {
        let s = &self.settings;
        self.state.draining.store(true, Ordering::SeqCst);
        tracing::info!(coordinator = %s.coordinator_url, "draining: no new tasks");
        if let Err(e) = self.client.drain(s.drain_request()).await {
            tracing::warn!(error = %e, "could not announce the drain; finishing running tasks anyway");
        }
        tokio::time::sleep(s.shutdown_grace).await;
        let finished = tokio::time::timeout(s.drain_timeout, idle(&self.stats)).await;
        if finished.is_err() {
            tracing::warn!(
                running = self.stats.open_task_streams(),
                planned = self.stats.open_plan_channels(),
                timeout = ?s.drain_timeout,
                "drain timed out: stopping with tasks still running"
            );
            // A graceful stop would wait for those streams: cut them.
            server.abort().await;
        } else {
            server.stop().await;
        }
        self.heartbeats.abort();
        self.state.registered.store(false, Ordering::SeqCst);
        let request = DeregisterRequest {
            node_id: s.node_id.clone(),
            url: s.url.to_string(),
        };
        match self.client.deregister(request).await {
            Ok(_) => tracing::info!("deregistered"),
            Err(e) => {
                tracing::warn!(error = %e, "could not deregister; the coordinator will miss the heartbeats")
            }
        }
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        self.heartbeats.abort();
    }
}

/// Until no task has been held or run for [`DRAIN_QUIET`]: no partition stream open, and no
/// coordinator holding a task planned here (its partitions may be pulled later).
async fn idle(stats: &WorkerStats) {
    let mut quiet = Duration::ZERO;
    while quiet < DRAIN_QUIET {
        tokio::time::sleep(DRAIN_POLL).await;
        if stats.open_task_streams() == 0 && stats.open_plan_channels() == 0 {
            quiet += DRAIN_POLL;
        } else {
            quiet = Duration::ZERO;
        }
    }
}

async fn heartbeat_loop(
    settings: MembershipSettings,
    mut client: ControlPlaneClient<LayeredChannel>,
    stats: Arc<WorkerStats>,
    state: Arc<MembershipState>,
) {
    // Logs a failure once per outage, not on every beat.
    let mut failing = false;
    let mut ticker = tokio::time::interval(settings.heartbeat_interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let draining = state.draining();
        let registered = state.registered();
        let outcome = if registered {
            let beat = HeartbeatRequest {
                node_id: settings.node_id.clone(),
                url: settings.url.to_string(),
                running_tasks: stats.open_task_streams() as u64,
                draining,
            };
            match client.heartbeat(beat).await {
                Ok(reply) if reply.get_ref().known => Ok(()),
                Ok(_) => {
                    tracing::info!(
                        "the coordinator does not know this worker (it restarted?): registering again"
                    );
                    register(&settings, &mut client, draining).await
                }
                Err(e) => Err(e),
            }
        } else {
            register(&settings, &mut client, draining).await
        };
        match outcome {
            Ok(()) => {
                if failing || !registered {
                    tracing::info!(coordinator = %settings.coordinator_url, node_id = %settings.node_id, url = %settings.url, "registered with the coordinator");
                }
                failing = false;
                state.registered.store(true, Ordering::SeqCst);
            }
            Err(e) => {
                let unreachable = matches!(
                    e.code(),
                    tonic::Code::Unavailable | tonic::Code::DeadlineExceeded
                );
                if !failing && unreachable {
                    tracing::warn!(coordinator = %settings.coordinator_url, error = %e, "cannot reach the coordinator's control plane; retrying every heartbeat");
                } else if !failing {
                    tracing::error!(coordinator = %settings.coordinator_url, code = ?e.code(), message = e.message(), "the coordinator refuses this worker; retrying every heartbeat");
                }
                failing = true;
                if !unreachable {
                    // Refused (secret, bad settings): register again once it is fixed.
                    state.registered.store(false, Ordering::SeqCst);
                }
            }
        }
    }
}

async fn register(
    settings: &MembershipSettings,
    client: &mut ControlPlaneClient<LayeredChannel>,
    draining: bool,
) -> std::result::Result<(), tonic::Status> {
    client
        .register(RegisterRequest {
            node_id: settings.node_id.clone(),
            url: settings.url.to_string(),
            version: settings.version.clone(),
            heartbeat_interval_ms: u64::try_from(settings.heartbeat_interval.as_millis())
                .unwrap_or(u64::MAX),
            task_threads: settings.task_threads,
            memory_limit_bytes: settings.memory_limit_bytes,
        })
        .await?;
    if draining {
        client.drain(settings.drain_request()).await?;
    }
    Ok(())
}

/// The URL a worker registers with: `advertise_url`, else its bound address, with the
/// machine's host name in place of an unspecified (0.0.0.0) address; `https://` when it serves
/// over TLS.
pub fn advertised_url(
    advertise_url: Option<&str>,
    addr: std::net::SocketAddr,
    tls: bool,
) -> Result<Url> {
    let scheme = if tls { "https" } else { "http" };
    let text = match advertise_url {
        Some(url) => url.to_string(),
        None if addr.ip().is_unspecified() => {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .or_else(|| std::env::var("HOSTNAME").ok())
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "localhost".into());
            format!("{scheme}://{host}:{}", addr.port())
        }
        None => format!("{scheme}://{addr}"),
    };
    let url =
        Url::parse(&text).map_err(|e| NodeError::Settings(format!("worker URL {text}: {e}")))?;
    if url.scheme() != scheme {
        return Err(NodeError::Settings(format!(
            "worker.advertise_url {url}: a worker serving {} advertises a {scheme}:// URL",
            if tls {
                "over TLS ([cluster])"
            } else {
                "in clear (no [cluster] TLS)"
            }
        )));
    }
    Ok(url)
}
