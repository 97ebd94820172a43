//! A worker node's start-up: its server on a runtime of its own and, when it has a coordinator
//! to register with, its membership.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use sqe_layers::auth::VerifierStats;
use sqe_layers::dedicated_runtime::DedicatedRuntime;
use sqe_layers::serve::Servers;
use tokio::net::TcpListener;
use url::Url;

use crate::channel::SqeChannelResolver;
use crate::error::{NodeError, Result};
use crate::membership::{Membership, MembershipSettings, advertised_url};
use crate::peers::{
    CONTROL_PLANE_AUDIENCE, PeerSettings, channel_resolver, ticket_verifier, token_verifier,
};
use crate::server::{WorkerSettings, WorkerStats, build_worker, serve};

/// Everything a worker node is started from.
#[derive(Debug, Clone)]
pub struct WorkerNodeSettings {
    /// Its name; `worker@<address it listens on>` when not given.
    pub node_id: Option<String>,
    /// The URL peers and the coordinator reach it at; its bound address when not given.
    pub advertise_url: Option<String>,
    pub version: String,
    /// Iceberg storage properties (`[storage]`).
    pub storage_props: HashMap<String, String>,
    /// Memory all its tasks may use together; `None` is unbounded.
    pub memory_limit: Option<usize>,
    /// Where its spilling operators write; `None`: the system's temporary directory.
    pub spill_directory: Option<std::path::PathBuf>,
    pub peers: PeerSettings,
    /// The coordinator it registers with and heartbeats to, if any.
    pub coordinator: Option<CoordinatorLink>,
    /// How an error becomes the status a client reading a result here gets.
    pub error_status: Option<crate::task_errors::ErrorStatus>,
}

/// How a worker keeps its place with a coordinator.
#[derive(Debug, Clone)]
pub struct CoordinatorLink {
    pub url: String,
    pub heartbeat_interval: Duration,
    /// After announcing the drain: tasks of queries planned just before it may still arrive.
    pub shutdown_grace: Duration,
    /// The longest a drain waits for running tasks.
    pub drain_timeout: Duration,
}

/// A running worker node.
pub struct RunningWorker {
    pub url: Url,
    pub addr: SocketAddr,
    pub node_id: String,
    pub stats: Arc<WorkerStats>,
    /// Tokens this worker verified (None when it accepts unauthenticated requests).
    pub verifier_stats: Option<Arc<VerifierStats>>,
    /// How this worker reaches its peers.
    pub channels: SqeChannelResolver,
    /// Its servers: the worker's gRPC server, and whatever the node's wiring adds.
    pub servers: Servers,
    /// Where the worker serves and runs its tasks (kept alive as long as the worker).
    pub runtime: Arc<DedicatedRuntime>,
    /// Its registration with a coordinator, if any.
    pub membership: Option<Membership>,
}

impl RunningWorker {
    /// Stops serving at once (registered or not: the coordinator will miss its heartbeats).
    pub async fn stop(self) {
        drop(self.membership);
        self.servers.stop().await;
    }

    /// A graceful shutdown: a registered worker drains (no new tasks, running ones finish)
    /// and deregisters; any other just stops.
    pub async fn drain_and_stop(self) {
        match self.membership {
            Some(membership) => membership.drain_and_leave(self.servers).await,
            None => self.servers.stop().await,
        }
    }
}

/// The name a worker gets without `node_id`: `worker@<address it listens on>`.
pub fn default_node_id(addr: SocketAddr) -> String {
    format!("worker@{addr}")
}

/// Starts a worker on an already-bound listener.
pub async fn start(settings: WorkerNodeSettings, listener: TcpListener) -> Result<RunningWorker> {
    let addr = listener
        .local_addr()
        .map_err(|e| NodeError::Start(format!("worker listener: {e}")))?;
    let node_id = settings
        .node_id
        .clone()
        .unwrap_or_else(|| default_node_id(addr));
    let url = advertised_url(
        settings.advertise_url.as_deref(),
        addr,
        settings.peers.tls.is_some(),
    )?;
    // Tokens for this worker name the URL it advertises: the one it is dialled at.
    let verifier = token_verifier(&settings.peers, url.as_str())?;
    let tickets = ticket_verifier(&settings.peers)?;
    let tls = settings
        .peers
        .tls
        .as_ref()
        .map(|tls| tls.server_config())
        .transpose()?;
    let server_settings = WorkerSettings {
        channels: channel_resolver(&node_id, &settings.peers)?,
        node_id: node_id.clone(),
        storage_props: settings.storage_props.clone(),
        memory_limit: settings.memory_limit,
        spill_directory: settings.spill_directory.clone(),
        version: settings.version.clone(),
        verifier: verifier.clone(),
        tickets,
        error_status: settings.error_status.clone(),
        tls,
    };
    let (worker, stats) =
        build_worker(&server_settings).map_err(|e| NodeError::Start(format!("worker: {e}")))?;
    let channels = server_settings.channels.clone();
    // Tasks run where the worker serves them: on threads of its own, so a CPU-bound task never
    // holds up the process's other servers (in `sqe local`, the coordinator).
    // Twice the cores: a task that does not yield (a cross join feeding an aggregate) must
    // leave threads for the worker's RPCs, its other tasks and the drop of a cancelled stream.
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let runtime = Arc::new(
        DedicatedRuntime::new("sqe-worker-", 2 * cores)
            .map_err(|e| NodeError::Start(format!("cannot start the worker runtime: {e}")))?,
    );
    let listener = listener
        .into_std()
        .map_err(|e| NodeError::Start(format!("worker listener: {e}")))?;
    let membership = match &settings.coordinator {
        Some(link) => {
            let channel = channels
                .stack()
                .channel_for(&link.url, Some(CONTROL_PLANE_AUDIENCE))
                .map_err(|e| NodeError::Settings(format!("worker.coordinator_url: {e}")))?;
            let membership = MembershipSettings {
                coordinator_url: link.url.clone(),
                node_id: node_id.clone(),
                url: url.clone(),
                version: settings.version.clone(),
                heartbeat_interval: link.heartbeat_interval.max(Duration::from_secs(1)),
                task_threads: u32::try_from(2 * cores).unwrap_or(u32::MAX),
                memory_limit_bytes: settings.memory_limit.map_or(0, |m| m as u64),
                shutdown_grace: link.shutdown_grace,
                drain_timeout: link.drain_timeout,
            };
            Some(Membership::start(membership, channel, Arc::clone(&stats)))
        }
        None => None,
    };
    let mut servers = Servers::new();
    let served_stats = Arc::clone(&stats);
    servers.spawn_on(runtime.handle(), "worker", |stop| async move {
        let listener = match TcpListener::from_std(listener) {
            Ok(listener) => listener,
            Err(e) => {
                tracing::error!(error = %e, "worker listener");
                return;
            }
        };
        if let Err(e) = serve(listener, worker, &served_stats, &server_settings, stop).await {
            tracing::error!(error = %e, "worker server failed");
        }
    });
    tracing::info!(%url, version = %settings.version, authenticated = verifier.is_some(), tls = settings.peers.tls.is_some(), "worker listening");
    Ok(RunningWorker {
        url,
        addr,
        node_id,
        stats,
        verifier_stats: verifier.map(|v| v.stats()),
        channels,
        servers,
        runtime,
        membership,
    })
}
