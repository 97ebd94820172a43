//! A coordinator node from `coordinator.toml`: the engine over its catalog and worker pool,
//! and its servers (Flight SQL with the control plane, the Trino protocol, metrics).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{ConfigError, StartError, StartResult as Result};
use sqe_engine::cache::CacheSettings;
use sqe_engine::catalog::{TableLocations, connect_catalog, table_locations};
use sqe_engine::cluster::{PoolSettings, Registry, VersionRequirement, WorkerPool};
use sqe_engine::engine::{Engine, EngineSettings};
use sqe_engine::history::HistorySettings;
use sqe_engine::metadata::NodeIdentity;
use sqe_engine::queries::Queries;
use sqe_iceberg::storage::LOCAL_ROOT_PROP;
use sqe_layers::auth::{ResultTicketSigner, TokenVerifier, VerifyLayer};
use sqe_layers::serve::Servers;
use sqe_proto::ControlPlaneServer;
use sqe_worker::channel::SqeChannelResolver;
use sqe_worker::peers::{CONTROL_PLANE_AUDIENCE, PeerSettings, channel_resolver, token_verifier};
use tokio::net::TcpListener;
use tower::Layer;
use url::Url;

use super::observability::serve_observability;
use super::task_progress::WorkerTaskProgress;
use super::{bind, build_version};
use crate::client_auth::ClientAuth;
use crate::config::{CoordinatorConfig, CoordinatorSection, IpcCompression, WorkerVersionPolicy};
use crate::flight::worker_results::ResultsAtWorkers;
use crate::flight::{flight_service, flight_sql_server};
use crate::http_server::{self, HttpLimits};
use crate::observe::{CoordinatorObserved, PeerCalls};
use crate::tls_listener::TlsListener;
use crate::trino::spooling::{MAX_PRESIGNED_TTL, SegmentStore, SpoolObjects};
use crate::trino::{TrinoEndpoint, trino_router};
use crate::ui::{Ui, ui_router};
use axum::serve::ListenerExt;

/// How often the workers of running distributed queries are asked for their tasks' progress:
/// one call per busy worker serves all its queries; clients see it in their next page.
const TASK_PROGRESS_INTERVAL: Duration = Duration::from_millis(250);

/// A running coordinator.
pub struct RunningCoordinator {
    pub engine: Arc<Engine>,
    /// Every statement of both endpoints goes through it.
    pub queries: Arc<Queries>,
    pub flight_sql_addr: SocketAddr,
    /// Where the Trino client protocol is served, unless disabled.
    pub trino_http_addr: Option<SocketAddr>,
    /// Where `/metrics` and the health probes are served, if they are.
    pub metrics_addr: Option<SocketAddr>,
    pub servers: Servers,
}

impl RunningCoordinator {
    pub async fn stop(self) {
        self.servers.stop().await;
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
    let mut storage_props = config.storage.iceberg_props()?;
    let catalog_settings = config.catalog.settings(&config.auth)?;
    let table_locations = table_locations(&catalog_settings)?;
    storage_props.insert(LOCAL_ROOT_PROP.into(), table_locations.local_root());
    let catalog = connect_catalog(&catalog_settings, &storage_props).await?;
    let peers = config.peer_settings()?;
    // Workers registering over the control plane present worker_secret tokens.
    let verifier = token_verifier(&peers, CONTROL_PLANE_AUDIENCE)?;
    let channels = channel_resolver(&config.coordinator.node_id, &peers)?;
    let workers = worker_pool(&config.coordinator, &channels, peers.tls.is_some()).await?;
    // A task call that cannot reach a worker takes it out of the rotation at once.
    let listener: Arc<dyn sqe_layers::peer_down::PeerDown> = Arc::clone(&workers) as _;
    channels
        .stack()
        .peer_failures()
        .listen(Arc::downgrade(&listener));
    let client_auth = ClientAuth::from_config(&config.client_auth)?;
    let tls = ClientTls::from_config(&config.coordinator, trino_listener.is_some())?;
    if trino_listener.is_some()
        && client_auth.required()
        && tls.trino.is_none()
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
    if client_auth.required()
        && tls.flight.is_none()
        && !config.coordinator.flight_sql_allow_insecure_auth
    {
        return Err(ConfigError::Invalid(
            "[client_auth] on the Flight SQL port needs TLS (coordinator.tls_cert_file and \
             tls_key_file), or coordinator.flight_sql_allow_insecure_auth = true behind a \
             TLS-terminating proxy"
                .into(),
        )
        .into());
    }
    let flight_sql_addr = flight_listener
        .local_addr()
        .map_err(|e| StartError::System(format!("Flight SQL listener: {e}")))?;
    let trino_http_addr = trino_listener
        .as_ref()
        .map(TcpListener::local_addr)
        .transpose()
        .map_err(|e| StartError::System(format!("Trino listener: {e}")))?;
    // Where clients reach this coordinator: the Trino port if served, else Flight SQL.
    let client_uri = match trino_http_addr {
        Some(a) => format!(
            "{}://{a}",
            if tls.trino.is_some() { "https" } else { "http" }
        ),
        None => format!(
            "{}://{flight_sql_addr}",
            if tls.flight.is_some() {
                "grpc+tls"
            } else {
                "grpc"
            }
        ),
    };
    let segments = spooled_segments(&config.coordinator, &storage_props)?;
    let settings = engine_settings(config, storage_props, client_uri, table_locations);
    let peer_calls = PeerCalls::of(channels.stack());
    let progress_source = Arc::new(WorkerTaskProgress(channels.clone()));
    let at_workers = results_at_workers(&config.coordinator, &peers, &channels)?;
    let engine = Engine::new(settings, catalog, Arc::clone(&workers), Arc::new(channels)).await?;
    engine.watch_task_progress(progress_source, TASK_PROGRESS_INTERVAL);
    // A Trino transaction goes when its client does (as its queries do).
    let client_timeout = Duration::from_secs(config.coordinator.trino_client_timeout_secs.max(1));
    let queries = Queries::new(
        Arc::clone(&engine),
        client_timeout,
        config.coordinator.admission_limits(),
    );
    let mut servers = Servers::new();
    let registry = ControlPlaneServer::from_arc(Arc::new(Registry::new(
        workers,
        config.coordinator.node_id.clone(),
        verifier.is_some() || peers.allow_unauthenticated,
    )));
    serve_flight(
        &mut servers,
        flight_listener,
        (
            &queries,
            &client_auth,
            config.coordinator.flight_sql_compression,
            at_workers,
        ),
        registry,
        verifier.clone(),
        tls.flight,
    )?;
    if let Some(listener) = trino_listener {
        let ui = Ui::new(
            Arc::clone(&queries),
            Arc::clone(&client_auth),
            tls.trino.is_some(),
            config.coordinator.ui_trace_url.clone(),
        );
        let endpoint = TrinoEndpoint::new(
            Arc::clone(&queries),
            config.coordinator.environment.clone(),
            client_timeout,
            client_auth,
            tls.trino.is_some(),
            segments.clone(),
        );
        let router = trino_router(endpoint).merge(ui_router(ui));
        let router = if config.coordinator.trino_compression {
            http_server::compressed(router)
        } else {
            router
        };
        serve_trino(
            &mut servers,
            listener,
            router,
            tls.trino,
            config.coordinator.http_limits(),
        );
    }
    let metrics_addr = serve_observability(
        &mut servers,
        &tokio::runtime::Handle::current(),
        (
            &config.coordinator.bind_address,
            config.coordinator.metrics_port,
            "coordinator.metrics_port",
        ),
        CoordinatorObserved {
            engine: Arc::clone(&engine),
            admission: Arc::clone(queries.admission()),
            verifier: verifier.as_ref().map(|v| v.stats()),
            peers: peer_calls,
            spooled: segments,
        },
    )
    .await?;
    tracing::info!(addr = %flight_sql_addr, "Flight SQL listening");
    if let Some(addr) = trino_http_addr {
        tracing::info!(%addr, "Trino protocol listening");
    }
    Ok(RunningCoordinator {
        engine,
        queries,
        flight_sql_addr,
        trino_http_addr,
        metrics_addr,
        servers,
    })
}

/// The workers of `[coordinator]`, probed once before the engine plans anything.
async fn worker_pool(
    coordinator: &CoordinatorSection,
    channels: &SqeChannelResolver,
    tls: bool,
) -> Result<Arc<WorkerPool>> {
    let urls = coordinator
        .worker_urls
        .iter()
        .map(|u| Url::parse(u).map_err(|e| StartError::System(format!("worker URL {u}: {e}"))))
        .collect::<Result<Vec<_>>>()?;
    let settings = PoolSettings {
        required: version_requirement(coordinator),
        missed_heartbeats: coordinator.missed_heartbeats,
        forget_after: Duration::from_secs(coordinator.worker_forget_after_secs),
        dns: coordinator.worker_dns.clone(),
        tls,
    };
    let workers = WorkerPool::new(urls, Arc::new(channels.clone()), settings);
    workers
        .start(Duration::from_secs(
            coordinator.worker_probe_interval_secs.max(1),
        ))
        .await;
    let reachable = workers.reachable_urls().len();
    let configured = coordinator.worker_urls.len();
    if configured > 0 && reachable < configured {
        tracing::warn!(
            reachable,
            configured,
            "not every configured worker is reachable yet"
        );
    }
    Ok(workers)
}

/// Where the Trino port keeps spooled segments: objects in `trino_spooling_location`, or the
/// coordinator's memory; `None` with the spooling protocol off.
fn spooled_segments(
    config: &CoordinatorSection,
    storage_props: &std::collections::HashMap<String, String>,
) -> Result<Option<Arc<SegmentStore>>> {
    if !config.trino_spooling {
        return Ok(None);
    }
    let ttl = Duration::from_secs(config.trino_spooling_ttl_secs.max(1));
    let Some(location) = &config.trino_spooling_location else {
        return Ok(Some(SegmentStore::new(ttl)));
    };
    let invalid = |e: &dyn std::fmt::Display| {
        ConfigError::Invalid(format!("coordinator.trino_spooling_location: {e}"))
    };
    if ttl > MAX_PRESIGNED_TTL {
        return Err(invalid(&format!(
            "trino_spooling_ttl_secs is {} s, more than the 7 days a presigned URL may last",
            ttl.as_secs()
        ))
        .into());
    }
    let (store, prefix) =
        sqe_iceberg::storage::s3_signing_store(storage_props, location).map_err(|e| invalid(&e))?;
    let objects = SpoolObjects::new(store, prefix).map_err(|e| invalid(&e))?;
    Ok(Some(SegmentStore::in_objects(ttl, objects)))
}

fn engine_settings(
    config: &CoordinatorConfig,
    storage_props: std::collections::HashMap<String, String>,
    client_uri: String,
    table_locations: TableLocations,
) -> EngineSettings {
    EngineSettings {
        catalog_name: config.catalog.name.clone(),
        admin_users: config.client_auth.admin_users.clone(),
        table_locations,
        target_partitions: config.coordinator.target_partitions,
        scan_bytes_per_partition: config.coordinator.scan_bytes_per_partition.0,
        memory_limit: config
            .coordinator
            .memory_limit
            .map(|m| m.0)
            .or_else(|| super::default_memory_limit(1)),
        spill_directory: config.coordinator.spill_directory.clone(),
        storage_props,
        query_max_run_time: config
            .coordinator
            .query_max_run_time_secs
            .map(Duration::from_secs),
        retry_policy: config.coordinator.retry_policy,
        query_retry_attempts: config.coordinator.query_retry_attempts,
        exchange_compression: config.coordinator.exchange_compression,
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
            uri: Some(client_uri),
            version: build_version(),
        },
    }
}

/// The longest life of a result ticket: a worker forgets a task nobody has touched for ten
/// minutes (datafusion-distributed's cache), so a ticket must be redeemed well before.
const MAX_RESULT_TICKET_TTL: Duration = Duration::from_secs(540);

/// Flight SQL parallel endpoints, when on and possible: tickets need the cluster's secret.
fn results_at_workers(
    config: &CoordinatorSection,
    peers: &PeerSettings,
    channels: &SqeChannelResolver,
) -> Result<Option<Arc<ResultsAtWorkers>>> {
    if !config.flight_sql_parallel_endpoints {
        return Ok(None);
    }
    let ttl = Duration::from_secs(config.flight_sql_result_ticket_ttl_secs);
    if ttl.is_zero() || ttl > MAX_RESULT_TICKET_TTL {
        return Err(ConfigError::Invalid(format!(
            "coordinator.flight_sql_result_ticket_ttl_secs: 1 to {}",
            MAX_RESULT_TICKET_TTL.as_secs()
        ))
        .into());
    }
    let Some(secret) = &peers.secret else {
        tracing::warn!(
            "flight_sql_parallel_endpoints needs worker_secret to sign result tickets: results \
             go through the coordinator"
        );
        return Ok(None);
    };
    let signer = ResultTicketSigner::new(secret.as_bytes(), ttl)
        .map_err(|e| ConfigError::Invalid(format!("worker_secret: {e}")))?;
    Ok(Some(Arc::new(ResultsAtWorkers::new(
        signer,
        channels.clone(),
    ))))
}

/// Flight SQL, with the control plane workers register on, on one port.
fn serve_flight(
    servers: &mut Servers,
    listener: TcpListener,
    (queries, client_auth, compression, at_workers): (
        &Arc<Queries>,
        &Arc<ClientAuth>,
        IpcCompression,
        Option<Arc<ResultsAtWorkers>>,
    ),
    registry: ControlPlaneServer<Registry>,
    verifier: Option<Arc<TokenVerifier>>,
    tls: Option<tonic::transport::ServerTlsConfig>,
) -> Result<()> {
    let (auth_layer, service) = flight_service(
        Arc::clone(queries),
        Arc::clone(client_auth),
        compression,
        at_workers,
    );
    let service = flight_sql_server(service);
    let mut builder = tonic::transport::Server::builder();
    if let Some(tls) = tls {
        builder = builder
            .tls_config(tls)
            .map_err(|e| StartError::Config(ConfigError::Invalid(format!("TLS: {e}"))))?;
    }
    servers.spawn("flight-sql", |stop| async move {
        let incoming = sqe_layers::serve::incoming(listener);
        let router = builder.layer(auth_layer).add_service(service);
        let router = match verifier {
            Some(verifier) => router.add_service(VerifyLayer::verifying(verifier).layer(registry)),
            None => router.add_service(registry),
        };
        if let Err(e) = router.serve_with_incoming_shutdown(incoming, stop).await {
            tracing::error!(error = %e, "Flight SQL server failed");
        }
    });
    Ok(())
}

/// The Trino client protocol (`router`), over TLS when configured, behind the HTTP limits.
fn serve_trino(
    servers: &mut Servers,
    listener: TcpListener,
    router: axum::Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    limits: HttpLimits,
) {
    servers.spawn("trino", |stop| async move {
        let served = match tls {
            None => {
                let listener = listener
                    .tap_io(|tcp: &mut tokio::net::TcpStream| crate::tls_listener::nodelay(tcp));
                http_server::serve(listener, router, limits, stop).await
            }
            Some(tls) => match TlsListener::new(listener, tls) {
                Ok(listener) => http_server::serve(listener, router, limits, stop).await,
                Err(e) => Err(e),
            },
        };
        if let Err(e) = served {
            tracing::error!(error = %e, "Trino protocol server failed");
        }
    });
}

fn mebibytes(mb: u64) -> usize {
    usize::try_from(mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX)
}

/// Which worker versions get tasks, as `[coordinator]` says.
pub fn version_requirement(coordinator: &CoordinatorSection) -> VersionRequirement {
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

/// The TLS each client port serves, when `tls_cert_file` and `tls_key_file` are set.
struct ClientTls {
    trino: Option<Arc<rustls::ServerConfig>>,
    flight: Option<tonic::transport::ServerTlsConfig>,
}

impl ClientTls {
    fn from_config(coordinator: &CoordinatorSection, serves_trino: bool) -> Result<Self> {
        let (Some(cert), Some(key)) = (&coordinator.tls_cert_file, &coordinator.tls_key_file)
        else {
            return Ok(Self {
                trino: None,
                flight: None,
            });
        };
        let trino = if serves_trino {
            Some(crate::tls_listener::server_config(cert, key)?)
        } else {
            None
        };
        let read = |path: &std::path::Path, key: &str| {
            std::fs::read(path).map_err(|e| {
                StartError::Config(ConfigError::Invalid(format!(
                    "coordinator.{key} {}: {e}",
                    path.display()
                )))
            })
        };
        let identity = tonic::transport::Identity::from_pem(
            read(cert, "tls_cert_file")?,
            read(key, "tls_key_file")?,
        );
        Ok(Self {
            trino,
            flight: Some(tonic::transport::ServerTlsConfig::new().identity(identity)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spooling_to(location: &str, ttl_secs: u64) -> Result<Option<Arc<SegmentStore>>> {
        let config = CoordinatorSection {
            trino_spooling_location: Some(location.into()),
            trino_spooling_ttl_secs: ttl_secs,
            ..CoordinatorSection::default()
        };
        let props = [
            ("s3.access-key-id", "key"),
            ("s3.secret-access-key", "secret"),
            ("s3.region", "us-east-1"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .into();
        spooled_segments(&config, &props)
    }

    #[tokio::test]
    async fn a_spooling_location_needs_a_prefix_and_a_ttl_a_presigned_url_can_last() {
        for (location, ttl, refused) in [
            ("s3://warehouse", 60, "prefix"),
            ("s3://warehouse/", 60, "prefix"),
            ("/var/spool", 60, "s3://"),
            ("s3://warehouse/spool", 8 * 24 * 3600, "7 days"),
        ] {
            match spooling_to(location, ttl) {
                Err(e) => assert!(e.to_string().contains(refused), "{location}: {e}"),
                Ok(_) => panic!("{location} with a TTL of {ttl} s was accepted"),
            }
        }
        assert!(matches!(
            spooling_to("s3://warehouse/spool", 3600),
            Ok(Some(_))
        ));
    }
}
