//! Starting coordinator and worker processes (or their in-process equivalents for tests and
//! `sqe local`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use sqe_layers::auth::{VerifierStats, VerifyLayer};
use sqe_proto::ControlPlaneServer;
use sqe_worker::channel::SqeChannelResolver;
use sqe_worker::server::{WorkerSettings, WorkerStats, build_worker, serve};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tower::Layer;
use url::Url;

use crate::cache::CacheSettings;
use crate::catalog::connect_catalog;
use crate::client_auth::ClientAuth;
use crate::cluster::{
    Membership, MembershipSettings, PoolSettings, Registry, VersionRequirement, WorkerPool,
    advertised_url,
};
use crate::config::{CoordinatorConfig, WorkerConfig, WorkerVersionPolicy};
use crate::engine::{Engine, EngineSettings};
use crate::error::{ConfigError, GatewayError, Result};
use crate::flight::{flight_service, flight_sql_server};
use crate::history::HistorySettings;
use crate::metadata::NodeIdentity;
use crate::observe::{
    CoordinatorObserved, Observed, PeerCalls, WorkerObserved, observability_router,
};
use crate::peers::{channel_resolver, token_verifier};
use crate::query_runtime::QueryRuntime;
use crate::tls_listener::TlsListener;
use crate::trino::{TrinoEndpoint, trino_router};

/// The version this build reports to coordinators: `SQE_VERSION` if set, else the crate version.
pub fn build_version() -> String {
    std::env::var("SQE_VERSION").unwrap_or_else(|_| env!("CARGO_PKG_VERSION").to_string())
}

/// A worker's node id: `worker.node_id`, else `worker@<address it listens on>`.
pub fn worker_node_id(config: &WorkerConfig, listener: &TcpListener) -> Result<String> {
    let addr = listener
        .local_addr()
        .map_err(|e| GatewayError::Internal(format!("worker listener: {e}")))?;
    Ok(config
        .worker
        .node_id
        .clone()
        .unwrap_or_else(|| format!("worker@{addr}")))
}

/// The version a worker reports: `worker.version`, else [`build_version`].
pub fn worker_version(config: &WorkerConfig) -> String {
    config.worker.version.clone().unwrap_or_else(build_version)
}

/// A stop signal shared by the servers of one process.
#[derive(Clone)]
pub struct Shutdown {
    tx: watch::Sender<bool>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    pub fn new() -> Self {
        Self {
            tx: watch::channel(false).0,
        }
    }

    pub fn trigger(&self) {
        self.tx.send_replace(true);
    }

    pub fn wait(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.tx.subscribe();
        async move {
            let _ = rx.wait_for(|stop| *stop).await;
        }
    }
}

/// A server task and the signal that stops it.
pub struct ServerTask {
    shutdown: Shutdown,
    task: JoinHandle<()>,
    ended: watch::Receiver<bool>,
}

impl ServerTask {
    fn spawn<F>(
        serve: impl FnOnce(std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>) -> F,
    ) -> Self
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        Self::spawn_on(&tokio::runtime::Handle::current(), serve)
    }

    fn spawn_on<F>(
        handle: &tokio::runtime::Handle,
        serve: impl FnOnce(std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>) -> F,
    ) -> Self
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let shutdown = Shutdown::new();
        let (ended_tx, ended) = watch::channel(false);
        let served = serve(Box::pin(shutdown.wait()));
        let task = handle.spawn(async move {
            served.await;
            ended_tx.send_replace(true);
        });
        Self {
            shutdown,
            task,
            ended,
        }
    }

    /// Resolves when the server has ended (stopped, or failed), without waiting for it.
    pub fn ended(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut ended = self.ended.clone();
        async move {
            let _ = ended.wait_for(|ended| *ended).await;
        }
    }

    /// Stops accepting requests and waits for the server to end.
    pub async fn stop(self) {
        self.shutdown.trigger();
        let _ = self.task.await;
    }

    /// Stops at once, dropping open connections and their streams.
    pub async fn abort(self) {
        self.task.abort();
        let _ = self.task.await;
    }

    /// Waits until the server ends (a signal, or an error).
    pub async fn join(self) {
        let _ = self.task.await;
    }

    pub fn shutdown_handle(&self) -> Shutdown {
        self.shutdown.clone()
    }
}

/// A running worker server.
pub struct RunningWorker {
    pub url: Url,
    pub addr: SocketAddr,
    pub stats: Arc<WorkerStats>,
    /// Tokens this worker verified (None when it accepts unauthenticated requests).
    pub verifier_stats: Option<Arc<VerifierStats>>,
    /// How this worker reaches its peers.
    pub channels: SqeChannelResolver,
    pub server: ServerTask,
    /// Where the worker serves and runs its tasks (kept alive as long as the worker).
    pub runtime: Arc<QueryRuntime>,
    /// Its registration with a coordinator (`coordinator_url`), if any.
    pub membership: Option<Membership>,
    /// Where `/metrics` and the health probes are served, if they are.
    pub metrics_addr: Option<SocketAddr>,
}

impl RunningWorker {
    /// Stops serving at once (registered or not: the coordinator will miss its heartbeats).
    pub async fn stop(self) {
        drop(self.membership);
        self.server.stop().await;
    }

    /// A graceful shutdown: a registered worker drains (no new tasks, running ones finish)
    /// and deregisters; any other just stops.
    pub async fn drain_and_stop(self) {
        match self.membership {
            Some(membership) => membership.drain_and_leave(self.server).await,
            None => self.server.stop().await,
        }
    }
}

/// Starts a worker on an already-bound listener.
pub async fn start_worker(config: &WorkerConfig, listener: TcpListener) -> Result<RunningWorker> {
    let addr = listener
        .local_addr()
        .map_err(|e| GatewayError::Internal(format!("worker listener: {e}")))?;
    let peers = config.peer_settings()?;
    let node_id = worker_node_id(config, &listener)?;
    let verifier = token_verifier(&peers)?;
    let settings = WorkerSettings {
        channels: channel_resolver(&node_id, &peers)?,
        node_id,
        storage_props: config.storage.iceberg_props()?,
        memory_limit: config.worker.memory_limit.map(|m| m.0),
        version: worker_version(config),
        verifier: verifier.clone(),
    };
    let (worker, stats) = build_worker(&settings)?;
    let served_stats = Arc::clone(&stats);
    let url = advertised_url(config.worker.advertise_url.as_deref(), addr)?;
    let version = settings.version.clone();
    let node_id = settings.node_id.clone();
    let channels = settings.channels.clone();
    // Tasks run where the worker serves them: on threads of its own, so a CPU-bound task never
    // holds up the process's other servers (in `sqe local`, the coordinator).
    // Twice the cores: a task that does not yield (a cross join feeding an aggregate) must
    // leave threads for the worker's RPCs, its other tasks and the drop of a cancelled stream.
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let runtime = QueryRuntime::new("sqe-worker", 2 * cores)
        .map_err(|e| GatewayError::Internal(format!("cannot start the worker runtime: {e}")))?;
    let listener = listener
        .into_std()
        .map_err(|e| GatewayError::Internal(format!("worker listener: {e}")))?;
    let membership = match &config.worker.coordinator_url {
        Some(coordinator_url) => {
            let channel = channels.stack().channel(coordinator_url).map_err(|e| {
                GatewayError::Config(ConfigError::Invalid(format!("worker.coordinator_url: {e}")))
            })?;
            let settings = MembershipSettings {
                coordinator_url: coordinator_url.clone(),
                node_id,
                url: url.clone(),
                version: version.clone(),
                heartbeat_interval: Duration::from_secs(
                    config.worker.heartbeat_interval_secs.max(1),
                ),
                task_threads: u32::try_from(2 * cores).unwrap_or(u32::MAX),
                memory_limit_bytes: config.worker.memory_limit.map_or(0, |m| m.0 as u64),
                shutdown_grace: Duration::from_secs(config.worker.shutdown_grace_secs),
                drain_timeout: Duration::from_secs(config.worker.drain_timeout_secs),
            };
            Some(Membership::start(settings, channel, Arc::clone(&stats)))
        }
        None => None,
    };
    let observability = ObservabilityListener::bind(
        &config.worker.bind_address,
        config.worker.metrics_port,
        "worker.metrics_port",
        || WorkerObserved {
            stats: Arc::clone(&stats),
            verifier: verifier.as_ref().map(|v| v.stats()),
            peers: PeerCalls::of(channels.stack()),
            membership: membership.as_ref().map(Membership::state),
        },
    )
    .await?;
    let metrics_addr = observability.as_ref().map(|o| o.addr);
    let server = ServerTask::spawn_on(runtime.handle(), |stop| async move {
        let stop = futures::FutureExt::shared(stop);
        let listener = match TcpListener::from_std(listener) {
            Ok(listener) => listener,
            Err(e) => {
                tracing::error!(error = %e, "worker listener");
                return;
            }
        };
        let tasks = async {
            if let Err(e) = serve(listener, worker, &served_stats, &settings, stop.clone()).await {
                tracing::error!(error = %e, "worker server failed");
            }
        };
        tokio::join!(tasks, serve_observability(observability, stop.clone()));
    });
    tracing::info!(%url, %version, authenticated = verifier.is_some(), "worker listening");
    Ok(RunningWorker {
        url,
        addr,
        stats,
        verifier_stats: verifier.map(|v| v.stats()),
        channels,
        server,
        runtime,
        membership,
        metrics_addr,
    })
}

/// The observability port, bound, and what it reports.
struct ObservabilityListener {
    listener: std::net::TcpListener,
    addr: SocketAddr,
    observed: Arc<dyn Observed>,
}

impl ObservabilityListener {
    /// Binds `metrics_port` on `address`; `None` when the port is 0 (off).
    async fn bind<O: Observed>(
        address: &str,
        port: u16,
        what: &str,
        observed: impl FnOnce() -> O,
    ) -> Result<Option<Self>> {
        if port == 0 {
            return Ok(None);
        }
        let listener = bind(address, port, what).await?;
        let addr = listener
            .local_addr()
            .map_err(|e| GatewayError::Internal(format!("metrics listener: {e}")))?;
        // Kept as a std listener: it is served on whichever runtime runs the server task.
        let listener = listener
            .into_std()
            .map_err(|e| GatewayError::Internal(format!("metrics listener: {e}")))?;
        tracing::info!(%addr, "metrics and health probes listening");
        Ok(Some(Self {
            listener,
            addr,
            observed: Arc::new(observed()),
        }))
    }
}

/// Serves `/metrics`, `/healthz` and `/readyz` until `stop` (nothing when not configured).
async fn serve_observability(
    observability: Option<ObservabilityListener>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let Some(o) = observability else { return };
    let served = match TcpListener::from_std(o.listener) {
        Ok(listener) => {
            axum::serve(listener, observability_router(o.observed))
                .with_graceful_shutdown(stop)
                .await
        }
        Err(e) => Err(e),
    };
    if let Err(e) = served {
        tracing::error!(error = %e, "metrics server failed");
    }
}

/// A running coordinator.
pub struct RunningCoordinator {
    pub engine: Arc<Engine>,
    pub flight_sql_addr: SocketAddr,
    /// Where the Trino client protocol is served, unless disabled.
    pub trino_http_addr: Option<SocketAddr>,
    /// Where `/metrics` and the health probes are served, if they are.
    pub metrics_addr: Option<SocketAddr>,
    pub server: ServerTask,
}

impl RunningCoordinator {
    pub async fn stop(self) {
        self.server.stop().await;
    }
}

/// Opens the catalog, starts probing workers and serves Flight SQL on `flight_listener` and
/// the Trino protocol on `trino_http_port` (unless it is 0).
pub async fn start_coordinator(
    config: &CoordinatorConfig,
    flight_listener: TcpListener,
) -> Result<RunningCoordinator> {
    let trino_listener = match config.coordinator.trino_http_port {
        0 => None,
        port => Some(
            bind(
                &config.coordinator.bind_address,
                port,
                "the Trino protocol (coordinator.trino_http_port)",
            )
            .await?,
        ),
    };
    start_coordinator_on(config, flight_listener, trino_listener).await
}

/// [`start_coordinator`] on listeners bound by the caller (tests bind port 0).
pub async fn start_coordinator_on(
    config: &CoordinatorConfig,
    flight_listener: TcpListener,
    trino_listener: Option<TcpListener>,
) -> Result<RunningCoordinator> {
    let storage_props = config.storage.iceberg_props()?;
    let catalog = connect_catalog(&config.catalog, &config.auth, &storage_props).await?;
    let urls = config
        .coordinator
        .worker_urls
        .iter()
        .map(|u| Url::parse(u).map_err(|e| GatewayError::Internal(format!("worker URL {u}: {e}"))))
        .collect::<Result<Vec<_>>>()?;
    let peers = config.peer_settings()?;
    // Workers registering over the control plane present worker_secret tokens.
    let verifier = token_verifier(&peers)?;
    let accepts_workers = verifier.is_some() || peers.allow_unauthenticated;
    let channels = channel_resolver(&config.coordinator.node_id, &peers)?;
    let pool_settings = PoolSettings {
        required: version_requirement(&config.coordinator),
        missed_heartbeats: config.coordinator.missed_heartbeats,
        forget_after: Duration::from_secs(config.coordinator.worker_forget_after_secs),
        dns: config.coordinator.worker_dns.clone(),
    };
    let workers = WorkerPool::new(urls, channels.clone(), pool_settings);
    let registry = ControlPlaneServer::new(Arc::new(Registry::new(
        Arc::clone(&workers),
        config.coordinator.node_id.clone(),
        accepts_workers,
    )));
    workers
        .start(Duration::from_secs(
            config.coordinator.worker_probe_interval_secs.max(1),
        ))
        .await;
    let reachable = workers.reachable_urls().len();
    let configured = config.coordinator.worker_urls.len();
    if configured > 0 && reachable < configured {
        tracing::warn!(
            reachable,
            configured,
            "not every configured worker is reachable yet"
        );
    }
    let client_auth = ClientAuth::from_config(&config.client_auth)?;
    let trino_tls = match (
        &config.coordinator.tls_cert_file,
        &config.coordinator.tls_key_file,
    ) {
        (Some(cert), Some(key)) if trino_listener.is_some() => {
            Some(crate::tls_listener::server_config(cert, key)?)
        }
        _ => None,
    };
    if trino_listener.is_some()
        && client_auth.required()
        && trino_tls.is_none()
        && !config.coordinator.trino_allow_insecure_auth
    {
        // As Trino: no passwords or tokens in clear text, unless a TLS proxy is in front.
        return Err(ConfigError::Invalid(
            "[client_auth] on the Trino protocol port needs TLS (coordinator.tls_cert_file and \
             tls_key_file), or coordinator.trino_allow_insecure_auth = true behind a \
             TLS-terminating proxy, or trino_http_port = 0"
                .into(),
        )
        .into());
    }
    let flight_tls = client_tls(&config.coordinator)?;
    // Where clients reach this coordinator: the Trino port if served, else Flight SQL.
    let client_uri = match &trino_listener {
        Some(listener) => listener.local_addr().ok().map(|a| {
            let scheme = if trino_tls.is_some() { "https" } else { "http" };
            format!("{scheme}://{a}")
        }),
        None => flight_listener.local_addr().ok().map(|a| {
            let scheme = if flight_tls.is_some() {
                "grpc+tls"
            } else {
                "grpc"
            };
            format!("{scheme}://{a}")
        }),
    };
    let settings = EngineSettings {
        catalog_name: config.catalog.name.clone(),
        target_partitions: config.coordinator.target_partitions,
        scan_bytes_per_partition: config.coordinator.scan_bytes_per_partition.0,
        memory_limit: config.coordinator.memory_limit.map(|m| m.0),
        storage_props,
        query_max_run_time: config
            .coordinator
            .query_max_run_time_secs
            .map(Duration::from_secs),
        history: HistorySettings {
            // Disabled, only running queries are listed.
            max_entries: if config.query_history.enabled {
                config.query_history.max_entries
            } else {
                0
            },
            ttl: Duration::from_secs(config.query_history.ttl_secs),
        },
        cache: CacheSettings {
            enabled: config.query_cache.enabled,
            max_memory: mebibytes(config.query_cache.max_memory_mb),
            max_entry: mebibytes(config.query_cache.max_entry_mb),
            ttl: Duration::from_secs(config.query_cache.ttl_secs),
        },
        node: NodeIdentity {
            node_id: config.coordinator.node_id.clone(),
            uri: client_uri,
            version: build_version(),
        },
    };
    let peers = PeerCalls::of(channels.stack());
    let engine = Engine::new(settings, catalog, workers, channels).await?;
    let observability = ObservabilityListener::bind(
        &config.coordinator.bind_address,
        config.coordinator.metrics_port,
        "coordinator.metrics_port",
        || CoordinatorObserved {
            engine: Arc::clone(&engine),
            verifier: verifier.as_ref().map(|v| v.stats()),
            peers,
        },
    )
    .await?;
    let metrics_addr = observability.as_ref().map(|o| o.addr);
    let flight_sql_addr = flight_listener
        .local_addr()
        .map_err(|e| GatewayError::Internal(format!("Flight SQL listener: {e}")))?;
    let (auth_layer, service) = flight_service(Arc::clone(&engine), Arc::clone(&client_auth));
    let service = flight_sql_server(service);
    let mut builder = tonic::transport::Server::builder();
    if let Some(tls) = flight_tls {
        builder = builder
            .tls_config(tls)
            .map_err(|e| GatewayError::Config(ConfigError::Invalid(format!("TLS: {e}"))))?;
    }
    let trino_http_addr = match &trino_listener {
        Some(listener) => Some(
            listener
                .local_addr()
                .map_err(|e| GatewayError::Internal(format!("Trino listener: {e}")))?,
        ),
        None => None,
    };
    let trino = trino_listener.map(|listener| {
        let endpoint = TrinoEndpoint::new(
            Arc::clone(&engine),
            config.coordinator.environment.clone(),
            Duration::from_secs(config.coordinator.trino_client_timeout_secs.max(1)),
            client_auth,
            trino_tls.is_some(),
        );
        (listener, trino_router(endpoint), trino_tls)
    });
    let server = ServerTask::spawn(|stop| async move {
        let stop = futures::FutureExt::shared(stop);
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(flight_listener);
        let flight = async {
            let router = builder.layer(auth_layer).add_service(service);
            let router = match verifier {
                Some(verifier) => router.add_service(VerifyLayer::new(verifier).layer(registry)),
                None => router.add_service(registry),
            };
            if let Err(e) = router
                .serve_with_incoming_shutdown(incoming, stop.clone())
                .await
            {
                tracing::error!(error = %e, "Flight SQL server failed");
            }
        };
        let trino = async {
            let served = match trino {
                None => Ok(()),
                Some((listener, router, None)) => {
                    axum::serve(listener, router)
                        .with_graceful_shutdown(stop.clone())
                        .await
                }
                Some((listener, router, Some(tls))) => match TlsListener::new(listener, tls) {
                    Ok(listener) => {
                        axum::serve(listener, router)
                            .with_graceful_shutdown(stop.clone())
                            .await
                    }
                    Err(e) => Err(e),
                },
            };
            if let Err(e) = served {
                tracing::error!(error = %e, "Trino protocol server failed");
            }
        };
        tokio::join!(
            flight,
            trino,
            serve_observability(observability, stop.clone())
        );
    });
    tracing::info!(addr = %flight_sql_addr, "Flight SQL listening");
    if let Some(addr) = trino_http_addr {
        tracing::info!(%addr, "Trino protocol listening");
    }
    Ok(RunningCoordinator {
        engine,
        flight_sql_addr,
        trino_http_addr,
        metrics_addr,
        server,
    })
}

fn mebibytes(mb: u64) -> usize {
    usize::try_from(mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX)
}

/// Which worker versions get tasks, as `[coordinator]` says.
pub fn version_requirement(coordinator: &crate::config::CoordinatorSection) -> VersionRequirement {
    match coordinator.worker_version_policy {
        WorkerVersionPolicy::Any => VersionRequirement::Any,
        WorkerVersionPolicy::Exact => VersionRequirement::Exact(
            coordinator
                .expected_worker_version
                .clone()
                .unwrap_or_else(build_version),
        ),
    }
}

/// The TLS identity client endpoints serve, when `tls_cert_file` and `tls_key_file` are set.
fn client_tls(
    coordinator: &crate::config::CoordinatorSection,
) -> Result<Option<tonic::transport::ServerTlsConfig>> {
    let (Some(cert), Some(key)) = (&coordinator.tls_cert_file, &coordinator.tls_key_file) else {
        return Ok(None);
    };
    let read = |path: &std::path::Path, key: &str| {
        std::fs::read(path).map_err(|e| {
            GatewayError::Config(ConfigError::Invalid(format!(
                "coordinator.{key} {}: {e}",
                path.display()
            )))
        })
    };
    let identity = tonic::transport::Identity::from_pem(
        read(cert, "tls_cert_file")?,
        read(key, "tls_key_file")?,
    );
    Ok(Some(
        tonic::transport::ServerTlsConfig::new().identity(identity),
    ))
}

/// Binds `address:port`, with a message that says which setting to change when it fails.
pub async fn bind(address: &str, port: u16, what: &str) -> Result<TcpListener> {
    let failed = |e: std::io::Error| {
        GatewayError::Internal(format!("cannot listen on {address}:{port} for {what}: {e}"))
    };
    let addrs = tokio::net::lookup_host((address, port))
        .await
        .map_err(failed)?;
    let mut last = None;
    for addr in addrs {
        match listen_reusing(addr) {
            Ok(listener) => return Ok(listener),
            Err(e) => last = Some(e),
        }
    }
    Err(failed(last.unwrap_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::NotFound, "no such address")
    })))
}

/// A listener with SO_REUSEADDR, so a restarted server can bind its port while connections of
/// its previous run linger in TIME_WAIT.
fn listen_reusing(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    #[tokio::test]
    async fn a_port_with_connections_in_time_wait_can_be_bound_again() -> Result<()> {
        let listener = bind("127.0.0.1", 0, "test").await?;
        let addr = listener
            .local_addr()
            .map_err(|e| GatewayError::Internal(e.to_string()))?;
        let client = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| GatewayError::Internal(e.to_string()))?;
        let (mut accepted, _) = listener
            .accept()
            .await
            .map_err(|e| GatewayError::Internal(e.to_string()))?;
        // The server side closes first, so its end of the connection stays in TIME_WAIT.
        accepted
            .shutdown()
            .await
            .map_err(|e| GatewayError::Internal(e.to_string()))?;
        drop(accepted);
        drop(client);
        drop(listener);
        bind("127.0.0.1", addr.port(), "test").await?;
        Ok(())
    }
}
