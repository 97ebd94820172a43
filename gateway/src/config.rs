//! `coordinator.toml` and `worker.toml`.
//!
//! Unknown sections and keys are errors that name the key and the file. Every key can be
//! overridden by an environment variable `SQE_<SECTION>__<KEY>` (for example
//! `SQE_COORDINATOR__TRINO_HTTP_PORT=8081`); the value is read as TOML when it parses as such
//! (numbers, booleans, arrays) and as a plain string otherwise. Secrets (`worker_secret`, S3
//! keys) can be given inline, from the environment, or from a `*_file` key; never as a flag.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::error::ConfigError;
use sqe_engine::catalog::{CatalogKind, CatalogSettings, OAuth2Credentials};
pub use sqe_engine::cluster::IpcCompression;
use sqe_engine::queries::AdmissionLimits;
use sqe_engine::{DEFAULT_QUERY_RETRY_ATTEMPTS, QueryRetryPolicy};
use sqe_worker::peers::{ClusterTls, PeerSettings};

/// The whole `coordinator.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoordinatorConfig {
    #[serde(default)]
    pub coordinator: CoordinatorSection,
    #[serde(default)]
    pub catalog: CatalogConfig,
    #[serde(default)]
    pub storage: StorageConfig,
    #[serde(default)]
    pub query_cache: QueryCacheConfig,
    #[serde(default)]
    pub query_history: QueryHistoryConfig,
    #[serde(default)]
    pub client_auth: ClientAuthConfig,
    #[serde(default)]
    pub telemetry: TelemetryConfig,
    /// OAuth2 client credentials for a REST catalog.
    #[serde(default)]
    pub auth: AuthConfig,
    /// TLS between the nodes.
    #[serde(default)]
    pub cluster: ClusterConfig,
}

/// Which workers' versions the coordinator sends tasks to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkerVersionPolicy {
    /// Any version.
    #[default]
    Any,
    /// Only `expected_worker_version` (by default the coordinator's own version).
    Exact,
}

/// How clients prove who they are (Flight SQL handshake, Trino HTTP).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientAuthType {
    /// Anyone; the user is whoever the client says.
    #[default]
    None,
    /// Users with bcrypt-hashed passwords (and bearer JWTs when a JWT key is configured).
    Password,
    /// Bearer JWTs from an identity provider, checked with the configured key.
    Jwt,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClientAuthConfig {
    #[serde(rename = "type")]
    pub kind: ClientAuthType,
    /// user = bcrypt hash (`sqe hash-password` prints one).
    pub users: HashMap<String, String>,
    /// A file of `user:bcrypt-hash` lines (Trino's password file format).
    pub password_file: Option<PathBuf>,
    /// Key of the bearer tokens issued at login; random per start when unset (tokens then do
    /// not survive a restart).
    pub token_secret: Option<SecretString>,
    pub token_secret_file: Option<PathBuf>,
    /// Lifetime of an issued token.
    pub token_ttl_secs: u64,
    /// Bearer JWTs from an identity provider: an HS256 secret, or an RS256 public key (PEM).
    pub jwt_secret: Option<SecretString>,
    pub jwt_secret_file: Option<PathBuf>,
    pub jwt_public_key_file: Option<PathBuf>,
    /// Required `iss` and `aud` of those JWTs, when set.
    pub jwt_issuer: Option<String>,
    pub jwt_audience: Option<String>,
    /// The claim naming the user.
    pub jwt_user_claim: String,
    /// Users who see every user's queries in `system.runtime` and may kill any of them.
    pub admin_users: Vec<String>,
}

impl Default for ClientAuthConfig {
    fn default() -> Self {
        Self {
            kind: ClientAuthType::None,
            users: HashMap::new(),
            password_file: None,
            token_secret: None,
            token_secret_file: None,
            token_ttl_secs: 3600,
            jwt_secret: None,
            jwt_secret_file: None,
            jwt_public_key_file: None,
            jwt_issuer: None,
            jwt_audience: None,
            jwt_user_claim: "sub".into(),
            admin_users: Vec::new(),
        }
    }
}

/// The whole `worker.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerConfig {
    #[serde(default)]
    pub worker: WorkerSection,
    /// Accepted so one catalog section can be shared with the coordinator; workers never open
    /// the catalog (they read only the files a plan fragment names).
    #[serde(default)]
    pub catalog: CatalogConfig,
    /// Accepted for the same reason as `catalog`.
    #[serde(default)]
    pub auth: AuthConfig,
    #[serde(default)]
    pub storage: StorageConfig,
    #[serde(default)]
    pub telemetry: TelemetryConfig,
    /// TLS between the nodes.
    #[serde(default)]
    pub cluster: ClusterConfig,
}

/// TLS between the nodes, the same `[cluster]` section in `coordinator.toml` and `worker.toml`:
/// every worker serves its tasks over TLS and every node dials its peers at `https://` URLs
/// only, so plan fragments (with the S3 credentials a catalog vends) and worker tokens never
/// cross the network in clear. Unset: the nodes speak in clear.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    /// This node's certificate chain (PEM); it serves with it and presents it to its peers.
    pub tls_cert_file: Option<PathBuf>,
    pub tls_key_file: Option<PathBuf>,
    /// The CA that signed the nodes' certificates (PEM); the system's roots when unset.
    pub tls_ca_file: Option<PathBuf>,
    /// Workers accept only callers with a certificate signed by `tls_ca_file` (mutual TLS).
    pub tls_client_auth: bool,
    /// The name peers' certificates must carry, instead of the host of each URL.
    pub tls_server_name: Option<String>,
}

impl ClusterConfig {
    /// The TLS the nodes speak, `None` when `[cluster]` sets none.
    pub fn tls(&self) -> Option<ClusterTls> {
        let (cert, key) = (self.tls_cert_file.clone()?, self.tls_key_file.clone()?);
        Some(ClusterTls {
            cert_file: cert,
            key_file: key,
            ca_file: self.tls_ca_file.clone(),
            require_client_cert: self.tls_client_auth,
            server_name: self.tls_server_name.clone(),
        })
    }

    fn validate(&self, origin: &str) -> Result<(), ConfigError> {
        let invalid = |what: &str| Err(ConfigError::Invalid(format!("{origin}: {what}")));
        if self.tls_cert_file.is_some() != self.tls_key_file.is_some() {
            return invalid("cluster.tls_cert_file and cluster.tls_key_file go together");
        }
        let on = self.tls_cert_file.is_some();
        if !on
            && (self.tls_ca_file.is_some()
                || self.tls_client_auth
                || self.tls_server_name.is_some())
        {
            return invalid(
                "cluster.tls_ca_file, tls_client_auth and tls_server_name need \
                 cluster.tls_cert_file and cluster.tls_key_file",
            );
        }
        if self.tls_client_auth && self.tls_ca_file.is_none() {
            return invalid("cluster.tls_client_auth needs cluster.tls_ca_file");
        }
        Ok(())
    }

    /// A peer's URL is an http(s) URL, and with TLS on `https://`: an `http://` one would be
    /// dialled in clear.
    fn validate_peer_url(&self, url: &str, key: &str, origin: &str) -> Result<(), ConfigError> {
        validate_url(url, key, origin)?;
        let https = url::Url::parse(url).is_ok_and(|u| u.scheme() == "https");
        if self.tls_cert_file.is_some() && !https {
            return Err(ConfigError::Invalid(format!(
                "{origin}: {key} has '{url}', but [cluster] TLS is on: use an https:// URL"
            )));
        }
        Ok(())
    }
}

/// Trace export over OTLP (gRPC). Off unless an endpoint is set here or in the standard
/// `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT` variable; keys set here win over `OTEL_*` variables.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// OTLP gRPC endpoint, e.g. `http://tempo:4317`.
    pub otlp_endpoint: Option<String>,
    /// `service.name`; default `sqe-coordinator` / `sqe-worker` (or `OTEL_SERVICE_NAME`).
    pub service_name: Option<String>,
    /// Share of new traces kept (0.0-1.0); a caller's sampling decision is followed. Unset:
    /// `OTEL_TRACES_SAMPLER`, else all.
    pub sampling_ratio: Option<f64>,
    /// Extra resource attributes (`deployment.environment = "prod"`), over `OTEL_RESOURCE_ATTRIBUTES`.
    pub resource_attributes: std::collections::BTreeMap<String, String>,
}

impl TelemetryConfig {
    fn validate(&self, origin: &str) -> Result<(), ConfigError> {
        if let Some(url) = &self.otlp_endpoint {
            validate_url(url, "telemetry.otlp_endpoint", origin)?;
        }
        if let Some(ratio) = self.sampling_ratio
            && !(0.0..=1.0).contains(&ratio)
        {
            return Err(ConfigError::Invalid(format!(
                "{origin}: telemetry.sampling_ratio must be between 0.0 and 1.0, not {ratio}"
            )));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoordinatorSection {
    /// Stable name of this node in `system.runtime.nodes`.
    pub node_id: String,
    /// Address the client endpoints bind to.
    pub bind_address: String,
    /// Workers the coordinator dispatches fragments to (`http://host:port`).
    pub worker_urls: Vec<String>,
    /// `host:port` whose DNS addresses are workers (a Kubernetes headless Service), looked up
    /// every `worker_probe_interval_secs`; an alternative to workers registering.
    pub worker_dns: Option<String>,
    /// Shared secret workers and coordinator authenticate each other with.
    pub worker_secret: Option<SecretString>,
    pub worker_secret_file: Option<PathBuf>,
    /// Test networks only: allow a distributed setup without `worker_secret`.
    pub allow_unauthenticated_workers: bool,
    /// Arrow Flight SQL port (also where workers register).
    pub flight_sql_port: u16,
    /// Trino client protocol port; 0 disables it.
    pub trino_http_port: u16,
    /// Memory DataFusion may use on the coordinator for all queries (e.g. "2GB"); unset: 70%
    /// of the machine's memory, or of its container's limit.
    pub memory_limit: Option<ByteSize>,
    /// Where operators that outgrow `memory_limit` (sorts, aggregations, joins' spillable
    /// parts) write their spill files; unset: the system's temporary directory.
    pub spill_directory: Option<PathBuf>,
    /// Bytes of data each scan partition should read; more data means more tasks (up to one per
    /// worker), less means the scan stays on fewer workers.
    pub scan_bytes_per_partition: ByteSize,
    /// Threads per query on this node (DataFusion `target_partitions`); 0 = number of cores.
    pub target_partitions: usize,
    /// How often reachability of `worker_urls` is checked.
    pub worker_probe_interval_secs: u64,
    /// Prometheus `/metrics`, `/healthz` and `/readyz`; 0 disables them.
    pub metrics_port: u16,
    /// A registered worker that misses this many heartbeats is unreachable (no tasks).
    pub missed_heartbeats: u32,
    /// A registered worker (not in `worker_urls`) silent this long is dropped from the list.
    pub worker_forget_after_secs: u64,
    /// `any`, or `exact`: tasks go only to workers reporting `expected_worker_version`.
    pub worker_version_policy: WorkerVersionPolicy,
    /// The version `exact` requires; unset, the coordinator's own (`SQE_VERSION` or build).
    pub expected_worker_version: Option<String>,
    /// Longest a query may run, streaming its results included (unset: no limit).
    pub query_max_run_time_secs: Option<u64>,
    /// Trino's `retry_policy`, the sessions' default: `NONE`, or `QUERY` (a read-only query
    /// that fails for a reason not its own before sending a row runs again).
    pub retry_policy: QueryRetryPolicy,
    /// Trino's `query_retry_attempts`: runs after the first under `QUERY`.
    pub query_retry_attempts: u32,
    /// Statements planning or running at once; more wait in the queue (at least 1).
    pub max_running_queries: usize,
    /// Statements waiting for a slot; beyond them a statement fails with QUERY_QUEUE_FULL.
    pub max_queued_queries: usize,
    /// Statements one user may have planning or running at once (unset: only the total).
    pub max_running_queries_per_user: Option<usize>,
    /// The secret before the current one, still accepted while peers are rotated.
    pub worker_secret_previous: Option<SecretString>,
    /// Deadline per RPC attempt to a worker, until its response headers.
    pub rpc_timeout_ms: u64,
    /// Deadline for connecting to a worker.
    pub connect_timeout_ms: u64,
    /// Retries of failed-before-sending RPCs allowed, as a percentage of RPCs.
    pub retry_budget_percent: f32,
    /// Threads of the dedicated network I/O runtime.
    pub io_threads: usize,
    /// PEM certificate chain and private key: with both set, clients connect with TLS.
    pub tls_cert_file: Option<PathBuf>,
    pub tls_key_file: Option<PathBuf>,
    /// Reported by `/v1/info` (Trino's `node.environment`).
    pub environment: String,
    /// A Trino-protocol query whose client stops asking for pages this long is cancelled.
    pub trino_client_timeout_secs: u64,
    /// Accept passwords and tokens on a plain-HTTP Trino port (only behind a proxy that
    /// terminates TLS).
    pub trino_allow_insecure_auth: bool,
    /// The same for the Flight SQL port (plain gRPC behind a TLS-terminating proxy).
    pub flight_sql_allow_insecure_auth: bool,
    /// Largest request body the Trino port reads (a statement's text); 413 above.
    pub trino_max_request_size: ByteSize,
    /// Connections the Trino port holds open at once.
    pub trino_max_connections: usize,
    /// Longest a Trino-port client may take to send a request's headers.
    pub trino_header_read_timeout_secs: u64,
    /// Longest one Trino-port request may take (408 after).
    pub trino_request_timeout_secs: u64,
    /// Host names Trino-port requests may be addressed to; empty: any.
    pub trino_allowed_hosts: Vec<String>,
    /// Compress Trino-port answers (gzip) for clients whose `Accept-Encoding` asks.
    pub trino_compression: bool,
    /// Answer clients that ask for Trino's spooling protocol (`X-Trino-Query-Data-Encoding`)
    /// with segments; off, every client gets the classic protocol.
    pub trino_spooling: bool,
    /// Where spooled segments are written (`s3://bucket/prefix`, with `[storage]`'s keys):
    /// clients then download them from the store by presigned URLs. Unset, the coordinator
    /// holds them (in the query's memory) and serves them itself.
    pub trino_spooling_location: Option<String>,
    /// How long a spooled segment waits for its client to download and acknowledge it (at
    /// most 7 days with a location: S3's limit for presigned URLs).
    pub trino_spooling_ttl_secs: u64,
    /// Compression of query results' Arrow buffers on the Flight SQL port, unless a call asks
    /// for another with the `x-sqe-ipc-compression` header.
    pub flight_sql_compression: IpcCompression,
    /// Compression of the Arrow buffers nodes send each other (shuffles, broadcasts, each
    /// worker task's stream to its consumer), the sessions' default (Trino's
    /// `exchange.compression-codec`, off by default as there: on a fast link it costs more
    /// CPU than it saves time).
    pub exchange_compression: IpcCompression,
    /// Flight SQL parallel endpoints: a query whose last stage runs on workers is answered
    /// with one endpoint per partition, located at its worker, so clients read the result
    /// straight from the workers (they must be able to reach them). A call may ask otherwise
    /// with the `x-sqe-parallel-endpoints` header. Needs `worker_secret` (tickets are signed).
    pub flight_sql_parallel_endpoints: bool,
    /// How long a client has to start reading each endpoint's partition (at most 540 s: a
    /// worker forgets a task nobody touches for ten minutes).
    pub flight_sql_result_ticket_ttl_secs: u64,
    /// Where the web UI links a query's trace: a URL with `{trace_id}` in it (Grafana's
    /// Tempo explore view, say); unset, the UI shows the trace id without a link.
    pub ui_trace_url: Option<String>,
}

impl Default for CoordinatorSection {
    fn default() -> Self {
        Self {
            node_id: "coordinator".into(),
            bind_address: "0.0.0.0".into(),
            worker_urls: Vec::new(),
            worker_dns: None,
            worker_secret: None,
            worker_secret_file: None,
            allow_unauthenticated_workers: false,
            flight_sql_port: 50051,
            trino_http_port: 8080,
            memory_limit: None,
            spill_directory: None,
            scan_bytes_per_partition: ByteSize(16 * 1024 * 1024),
            target_partitions: 0,
            worker_probe_interval_secs: 5,
            metrics_port: 0,
            missed_heartbeats: 3,
            worker_forget_after_secs: 600,
            worker_version_policy: WorkerVersionPolicy::Any,
            expected_worker_version: None,
            query_max_run_time_secs: None,
            retry_policy: QueryRetryPolicy::None,
            query_retry_attempts: DEFAULT_QUERY_RETRY_ATTEMPTS,
            max_running_queries: AdmissionLimits::default().max_running,
            max_queued_queries: AdmissionLimits::default().max_queued,
            max_running_queries_per_user: None,
            worker_secret_previous: None,
            rpc_timeout_ms: 30_000,
            connect_timeout_ms: 5_000,
            retry_budget_percent: 20.0,
            io_threads: 2,
            tls_cert_file: None,
            tls_key_file: None,
            environment: "sqe".into(),
            trino_client_timeout_secs: 300,
            trino_allow_insecure_auth: false,
            flight_sql_allow_insecure_auth: false,
            trino_max_request_size: ByteSize(16 * 1024 * 1024),
            trino_max_connections: 4096,
            trino_header_read_timeout_secs: 10,
            trino_request_timeout_secs: 300,
            trino_allowed_hosts: Vec::new(),
            trino_compression: true,
            trino_spooling: true,
            trino_spooling_location: None,
            trino_spooling_ttl_secs: 3600,
            flight_sql_compression: IpcCompression::None,
            exchange_compression: IpcCompression::None,
            flight_sql_parallel_endpoints: true,
            flight_sql_result_ticket_ttl_secs: 300,
            ui_trace_url: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkerSection {
    /// Stable name of this node in `system.runtime.nodes`.
    pub node_id: Option<String>,
    pub bind_address: String,
    /// The gRPC port fragments are sent to.
    pub flight_port: u16,
    /// The URL the coordinator should use to reach this worker (default `http://<host>:<port>`).
    pub advertise_url: Option<String>,
    /// The coordinator's Flight SQL endpoint, where workers register and heartbeat.
    pub coordinator_url: Option<String>,
    pub heartbeat_interval_secs: u64,
    /// On SIGTERM, after announcing the drain: how long tasks of queries planned just before
    /// it may still arrive.
    pub shutdown_grace_secs: u64,
    /// On SIGTERM: the longest the worker waits for its running tasks before it stops anyway.
    pub drain_timeout_secs: u64,
    /// Prometheus `/metrics`, `/healthz` and `/readyz`; 0 disables them.
    pub metrics_port: u16,
    /// Memory DataFusion may use on this worker for all fragments together (e.g. "512MB");
    /// unset: 70% of the machine's memory, or of its container's limit.
    pub memory_limit: Option<ByteSize>,
    /// Where operators that outgrow `memory_limit` write their spill files; unset: the
    /// system's temporary directory.
    pub spill_directory: Option<PathBuf>,
    pub worker_secret: Option<SecretString>,
    pub worker_secret_file: Option<PathBuf>,
    pub allow_unauthenticated_workers: bool,
    /// Version reported to coordinators; defaults to `SQE_VERSION` or the build version.
    pub version: Option<String>,
    /// The secret before the current one, still accepted while peers are rotated.
    pub worker_secret_previous: Option<SecretString>,
    /// Deadline per RPC attempt to a worker, until its response headers.
    pub rpc_timeout_ms: u64,
    /// Deadline for connecting to a worker.
    pub connect_timeout_ms: u64,
    /// Retries of failed-before-sending RPCs allowed, as a percentage of RPCs.
    pub retry_budget_percent: f32,
    /// Threads of the dedicated network I/O runtime.
    pub io_threads: usize,
}

impl Default for WorkerSection {
    fn default() -> Self {
        Self {
            node_id: None,
            bind_address: "0.0.0.0".into(),
            flight_port: 50052,
            advertise_url: None,
            coordinator_url: None,
            heartbeat_interval_secs: 5,
            shutdown_grace_secs: 2,
            drain_timeout_secs: 300,
            metrics_port: 0,
            memory_limit: None,
            spill_directory: None,
            worker_secret: None,
            worker_secret_file: None,
            allow_unauthenticated_workers: false,
            version: None,
            worker_secret_previous: None,
            rpc_timeout_ms: 30_000,
            connect_timeout_ms: 5_000,
            retry_budget_percent: 20.0,
            io_threads: 2,
        }
    }
}

/// Which Iceberg catalog to use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CatalogType {
    /// Embedded SQL catalog in a SQLite file (the default).
    #[default]
    Sql,
    /// An Iceberg REST catalog (Polaris, Nessie, Lakekeeper, ...).
    Rest,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CatalogConfig {
    #[serde(rename = "type")]
    pub kind: CatalogType,
    /// The catalog's name in SQL (`SELECT * FROM iceberg.tpch.nation`).
    pub name: String,
    /// SQL catalog: a SQLite URL (`sqlite:///path/catalog.db`) or path.
    pub uri: Option<String>,
    /// REST catalog: base URL of the Iceberg REST API.
    pub catalog_url: Option<String>,
    /// Warehouse: a location (`file:///...`, `s3://bucket/prefix`) for SQL, a name or location for REST.
    pub warehouse: Option<String>,
    /// Where `CREATE TABLE ... WITH (location = ...)` may put tables: a storage URL (default: the
    /// warehouse, when it is one). Explicit locations are refused without it.
    pub location_root: Option<String>,
    /// REST: a static bearer token (OAuth2 client credentials go in `[auth]`).
    pub token: Option<SecretString>,
    /// REST: extra HTTP headers on every catalog request.
    pub headers: HashMap<String, String>,
    /// REST: ask the catalog for the storage credentials of each table it loads and read that
    /// table with them instead of `[storage]`'s keys (workers get them in the plan fragment).
    pub vended_credentials: bool,
}

impl Default for CatalogConfig {
    fn default() -> Self {
        Self {
            kind: CatalogType::Sql,
            name: "iceberg".into(),
            uri: None,
            catalog_url: None,
            warehouse: None,
            location_root: None,
            token: None,
            headers: HashMap::new(),
            vended_credentials: true,
        }
    }
}

/// `[auth]`: how the coordinator logs in to a REST catalog with OAuth2 client credentials. The
/// token comes from `token_endpoint` (default: the catalog's own `/v1/oauth/tokens`) and is
/// renewed every `refresh_secs`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    pub token_endpoint: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<SecretString>,
    pub client_secret_file: Option<PathBuf>,
    /// The scope asked for (default `catalog`).
    pub scope: Option<String>,
    pub refresh_secs: u64,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            token_endpoint: None,
            client_id: None,
            client_secret: None,
            client_secret_file: None,
            scope: None,
            refresh_secs: 1800,
        }
    }
}

impl AuthConfig {
    /// The OAuth2 client credentials, when the catalog is reached with them.
    pub fn oauth2(&self) -> Result<Option<OAuth2Credentials>, ConfigError> {
        let secret = secret(&self.client_secret, &self.client_secret_file)?;
        match (&self.client_id, secret) {
            (None, None) => Ok(None),
            (Some(id), Some(secret)) => Ok(Some(OAuth2Credentials {
                client_id: id.clone(),
                client_secret: secret,
                token_endpoint: self.token_endpoint.clone(),
                scope: self.scope.clone(),
                refresh: std::time::Duration::from_secs(self.refresh_secs.max(1)),
            })),
            _ => Err(ConfigError::Invalid(
                "auth.client_id and auth.client_secret go together".into(),
            )),
        }
    }

    fn validate(&self, catalog: &CatalogConfig, origin: &str) -> Result<(), ConfigError> {
        if let Some(endpoint) = &self.token_endpoint {
            validate_url(endpoint, "auth.token_endpoint", origin)?;
        }
        let oauth2 = self
            .oauth2()
            .map_err(|e| ConfigError::Invalid(format!("{origin}: {e}")))?;
        if oauth2.is_none() && (self.token_endpoint.is_some() || self.scope.is_some()) {
            return Err(ConfigError::Invalid(format!(
                "{origin}: [auth] names a token endpoint or scope but no auth.client_id and \
                 auth.client_secret (SQE_AUTH__CLIENT_ID, SQE_AUTH__CLIENT_SECRET)"
            )));
        }
        if oauth2.is_some() && catalog.kind != CatalogType::Rest {
            return Err(ConfigError::Invalid(format!(
                "{origin}: [auth] logs in to a REST catalog; this catalog is type = \"sql\""
            )));
        }
        if catalog.token.is_some() && oauth2.is_some() {
            return Err(ConfigError::Invalid(format!(
                "{origin}: catalog.token and auth.client_id both say how to log in; give one"
            )));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    pub s3_endpoint: Option<String>,
    pub s3_region: Option<String>,
    pub s3_access_key_id: Option<String>,
    pub s3_secret_access_key: Option<SecretString>,
    pub s3_secret_access_key_file: Option<PathBuf>,
    pub s3_session_token: Option<SecretString>,
    /// Path-style requests (`http://endpoint/bucket/key`), as MinIO-like stores need.
    pub s3_path_style: Option<bool>,
}

impl StorageConfig {
    /// The Iceberg FileIO properties these settings stand for.
    pub fn iceberg_props(&self) -> Result<HashMap<String, String>, ConfigError> {
        let mut props = HashMap::new();
        let mut put = |key: &str, value: Option<String>| {
            if let Some(v) = value {
                props.insert(key.to_string(), v);
            }
        };
        put(iceberg::io::S3_ENDPOINT, self.s3_endpoint.clone());
        put(iceberg::io::S3_REGION, self.s3_region.clone());
        put(iceberg::io::S3_ACCESS_KEY_ID, self.s3_access_key_id.clone());
        put(
            iceberg::io::S3_SECRET_ACCESS_KEY,
            secret(&self.s3_secret_access_key, &self.s3_secret_access_key_file)?,
        );
        put(
            iceberg::io::S3_SESSION_TOKEN,
            exposed(&self.s3_session_token),
        );
        put(
            iceberg::io::S3_PATH_STYLE_ACCESS,
            self.s3_path_style.map(|b| b.to_string()),
        );
        Ok(props)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueryCacheConfig {
    pub enabled: bool,
    /// Memory for all cached results.
    pub max_memory_mb: u64,
    /// Results larger than this are not cached.
    pub max_entry_mb: u64,
    pub ttl_secs: u64,
}

impl Default for QueryCacheConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            max_memory_mb: 128,
            max_entry_mb: 16,
            ttl_secs: 300,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueryHistoryConfig {
    pub enabled: bool,
    pub max_entries: usize,
    pub ttl_secs: u64,
}

impl Default for QueryHistoryConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_entries: 10_000,
            ttl_secs: 1800,
        }
    }
}

/// A byte count written as a number or as `"512MB"`, `"2GiB"`, `"64k"` (units are powers of
/// 1024, as in Trino's data sizes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSize(pub usize);

impl ByteSize {
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let number: f64 = number
            .parse()
            .map_err(|_| format!("'{text}' is not a size (use e.g. 512MB, 2GB or a byte count)"))?;
        let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => 1 << 10,
            "m" | "mb" | "mib" => 1 << 20,
            "g" | "gb" | "gib" => 1 << 30,
            "t" | "tb" | "tib" => 1 << 40,
            other => return Err(format!("unknown size unit '{other}' in '{text}'")),
        };
        let bytes = number * multiplier as f64;
        if !bytes.is_finite() || bytes < 0.0 || bytes > usize::MAX as f64 {
            return Err(format!("size '{text}' is out of range"));
        }
        Ok(Self(bytes as usize))
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bytes(u64),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Bytes(n) => Ok(ByteSize(n as usize)),
            Raw::Text(t) => ByteSize::parse(&t).map_err(serde::de::Error::custom),
        }
    }
}

/// Reads a secret given inline or as a file (trailing newline trimmed).
/// A secret's text, for the one place that hands it on.
fn exposed(secret: &Option<SecretString>) -> Option<String> {
    secret.as_ref().map(|s| s.expose_secret().to_string())
}

pub fn secret(
    inline: &Option<SecretString>,
    file: &Option<PathBuf>,
) -> Result<Option<String>, ConfigError> {
    match (inline, file) {
        (Some(_), Some(path)) => Err(ConfigError::Invalid(format!(
            "a secret is given both inline and as file {}; give one",
            path.display()
        ))),
        (Some(_), None) => Ok(exposed(inline)),
        (None, Some(path)) => std::fs::read_to_string(path)
            .map(|s| Some(s.trim_end_matches(['\n', '\r']).to_string()))
            .map_err(|e| {
                ConfigError::Invalid(format!("cannot read secret file {}: {e}", path.display()))
            }),
        (None, None) => Ok(None),
    }
}

/// A configuration file: its sections (for environment overrides) and its checks.
pub trait ConfigFile: DeserializeOwned {
    /// The `[sections]` the file may have.
    const SECTIONS: &'static [&'static str];

    /// Checks that go beyond the types: URLs, secrets, combinations of keys.
    fn validate(&self, origin: &str) -> Result<(), ConfigError>;

    /// Settings that come from outside the file (e.g. `SQE_WORKER_SECRET`).
    fn apply_environment(&mut self, _env: &[(String, String)]) {}

    /// Reads `path`, applies `SQE_SECTION__KEY` overrides from the environment, and validates.
    fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_toml(&text, &path.display().to_string(), &env_vars())
    }

    /// Parses `text` (from `origin`, for messages) with the given environment overrides.
    fn from_toml(text: &str, origin: &str, env: &[(String, String)]) -> Result<Self, ConfigError> {
        let mut config: Self = parse_with_env(text, origin, env, Self::SECTIONS)?;
        config.apply_environment(env);
        config.validate(origin)?;
        Ok(config)
    }
}

impl CoordinatorConfig {
    /// The worker secret from the file or environment, if any.
    pub fn worker_secret(&self) -> Result<Option<String>, ConfigError> {
        secret(
            &self.coordinator.worker_secret,
            &self.coordinator.worker_secret_file,
        )
    }

    pub fn peer_settings(&self) -> Result<PeerSettings, ConfigError> {
        let c = &self.coordinator;
        Ok(PeerSettings {
            secret: self.worker_secret()?,
            previous_secret: exposed(&c.worker_secret_previous),
            allow_unauthenticated: c.allow_unauthenticated_workers,
            rpc_timeout: std::time::Duration::from_millis(c.rpc_timeout_ms),
            connect_timeout: std::time::Duration::from_millis(c.connect_timeout_ms),
            retry_budget_percent: c.retry_budget_percent,
            io_threads: c.io_threads,
            tls: self.cluster.tls(),
        })
    }
}

/// `SQE_WORKER_SECRET`, which sets the worker secret of either role when the file gives none.
const WORKER_SECRET_ENV: &str = "SQE_WORKER_SECRET";

fn secret_from_env(env: &[(String, String)]) -> Option<String> {
    env.iter()
        .find(|(k, _)| k == WORKER_SECRET_ENV)
        .map(|(_, v)| v.clone())
}

impl ConfigFile for CoordinatorConfig {
    fn apply_environment(&mut self, env: &[(String, String)]) {
        let c = &mut self.coordinator;
        if c.worker_secret.is_none() && c.worker_secret_file.is_none() {
            c.worker_secret = secret_from_env(env).map(SecretString::from);
        }
    }

    const SECTIONS: &'static [&'static str] = &[
        "coordinator",
        "catalog",
        "storage",
        "query_cache",
        "query_history",
        "client_auth",
        "telemetry",
        "auth",
        "cluster",
    ];

    fn validate(&self, origin: &str) -> Result<(), ConfigError> {
        self.cluster.validate(origin)?;
        for url in &self.coordinator.worker_urls {
            self.cluster
                .validate_peer_url(url, "coordinator.worker_urls", origin)?;
        }
        if let Some(name) = &self.coordinator.worker_dns {
            // host:port and nothing else (no scheme, path or user; IPv6 in brackets).
            let parsed = url::Url::parse(&format!("http://{name}")).ok();
            let plain = parsed.as_ref().is_some_and(|u| {
                u.port().is_some()
                    && u.path() == "/"
                    && u.username().is_empty()
                    && u.host_str()
                        .is_some_and(|host| format!("{host}:{}", u.port().unwrap_or(0)) == *name)
            });
            if !plain {
                return Err(ConfigError::Invalid(format!(
                    "{origin}: coordinator.worker_dns has '{name}', which is not host:port"
                )));
            }
        }
        let distributed =
            !self.coordinator.worker_urls.is_empty() || self.coordinator.worker_dns.is_some();
        if distributed
            && !self.coordinator.allow_unauthenticated_workers
            && self.worker_secret()?.is_none()
        {
            return Err(ConfigError::MissingWorkerSecret {
                origin: origin.to_string(),
                section: "coordinator",
            });
        }
        if self.coordinator.missed_heartbeats == 0 || self.coordinator.worker_forget_after_secs < 60
        {
            return Err(ConfigError::Invalid(format!(
                "{origin}: coordinator.missed_heartbeats must be at least 1 and \
                 coordinator.worker_forget_after_secs at least 60"
            )));
        }
        if self.coordinator.trino_http_port != 0
            && self.coordinator.trino_http_port == self.coordinator.flight_sql_port
        {
            return Err(ConfigError::Invalid(format!(
                "{origin}: coordinator.trino_http_port and coordinator.flight_sql_port are both {}",
                self.coordinator.flight_sql_port
            )));
        }
        if self.coordinator.tls_cert_file.is_some() != self.coordinator.tls_key_file.is_some() {
            return Err(ConfigError::Invalid(format!(
                "{origin}: coordinator.tls_cert_file and coordinator.tls_key_file go together"
            )));
        }
        if self.coordinator.max_running_queries == 0
            || self.coordinator.max_running_queries_per_user == Some(0)
        {
            return Err(ConfigError::Invalid(format!(
                "{origin}: coordinator.max_running_queries and max_running_queries_per_user must \
                 be at least 1 (no statement could ever run)"
            )));
        }
        self.catalog.validate(origin)?;
        self.auth.validate(&self.catalog, origin)?;
        self.storage.iceberg_props()?;
        self.telemetry.validate(origin)?;
        Ok(())
    }
}

impl WorkerConfig {
    pub fn worker_secret(&self) -> Result<Option<String>, ConfigError> {
        secret(&self.worker.worker_secret, &self.worker.worker_secret_file)
    }

    pub fn peer_settings(&self) -> Result<PeerSettings, ConfigError> {
        let w = &self.worker;
        Ok(PeerSettings {
            secret: self.worker_secret()?,
            previous_secret: exposed(&w.worker_secret_previous),
            allow_unauthenticated: w.allow_unauthenticated_workers,
            rpc_timeout: std::time::Duration::from_millis(w.rpc_timeout_ms),
            connect_timeout: std::time::Duration::from_millis(w.connect_timeout_ms),
            retry_budget_percent: w.retry_budget_percent,
            io_threads: w.io_threads,
            tls: self.cluster.tls(),
        })
    }
}

impl ConfigFile for WorkerConfig {
    fn apply_environment(&mut self, env: &[(String, String)]) {
        let w = &mut self.worker;
        if w.worker_secret.is_none() && w.worker_secret_file.is_none() {
            w.worker_secret = secret_from_env(env).map(SecretString::from);
        }
    }

    const SECTIONS: &'static [&'static str] = &[
        "worker",
        "catalog",
        "auth",
        "storage",
        "telemetry",
        "cluster",
    ];

    fn validate(&self, origin: &str) -> Result<(), ConfigError> {
        self.cluster.validate(origin)?;
        if let Some(url) = &self.worker.coordinator_url {
            self.cluster
                .validate_peer_url(url, "worker.coordinator_url", origin)?;
        }
        if let Some(url) = &self.worker.advertise_url {
            self.cluster
                .validate_peer_url(url, "worker.advertise_url", origin)?;
        }
        if !(1..=3600).contains(&self.worker.heartbeat_interval_secs) {
            return Err(ConfigError::Invalid(format!(
                "{origin}: worker.heartbeat_interval_secs must be between 1 and 3600"
            )));
        }
        if !self.worker.allow_unauthenticated_workers && self.worker_secret()?.is_none() {
            return Err(ConfigError::MissingWorkerSecret {
                origin: origin.to_string(),
                section: "worker",
            });
        }
        self.storage.iceberg_props()?;
        self.telemetry.validate(origin)?;
        Ok(())
    }
}

impl CoordinatorSection {
    /// How many statements may run and wait at once.
    pub fn admission_limits(&self) -> AdmissionLimits {
        AdmissionLimits {
            max_running: self.max_running_queries,
            max_queued: self.max_queued_queries,
            max_running_per_user: self.max_running_queries_per_user,
        }
    }

    /// What one Trino-port client may hold of the server.
    pub(crate) fn http_limits(&self) -> crate::http_server::HttpLimits {
        crate::http_server::HttpLimits {
            max_connections: self.trino_max_connections.max(1),
            header_read_timeout: std::time::Duration::from_secs(
                self.trino_header_read_timeout_secs.max(1),
            ),
            request_timeout: std::time::Duration::from_secs(self.trino_request_timeout_secs.max(1)),
            max_body_bytes: self.trino_max_request_size.0,
            allowed_hosts: self.trino_allowed_hosts.clone(),
        }
    }
}

impl CatalogConfig {
    /// The catalog's settings as the engine opens it, with `[auth]`'s client credentials.
    pub fn settings(&self, auth: &AuthConfig) -> Result<CatalogSettings, ConfigError> {
        Ok(CatalogSettings {
            kind: match self.kind {
                CatalogType::Sql => CatalogKind::Sql,
                CatalogType::Rest => CatalogKind::Rest,
            },
            name: self.name.clone(),
            uri: self.uri.clone(),
            catalog_url: self.catalog_url.clone(),
            warehouse: self.warehouse.clone(),
            location_root: self.location_root.clone(),
            token: exposed(&self.token),
            headers: self.headers.clone(),
            vended_credentials: self.vended_credentials,
            oauth2: auth.oauth2()?,
        })
    }

    fn validate(&self, origin: &str) -> Result<(), ConfigError> {
        if self.name.trim().is_empty() {
            return Err(ConfigError::Invalid(format!(
                "{origin}: catalog.name must not be empty"
            )));
        }
        match self.kind {
            CatalogType::Sql => {
                if self.catalog_url.is_some() {
                    return Err(ConfigError::Invalid(format!(
                        "{origin}: catalog.catalog_url is for type = \"rest\"; this catalog is type = \"sql\""
                    )));
                }
            }
            CatalogType::Rest => {
                let url = self.catalog_url.as_deref().ok_or_else(|| {
                    ConfigError::Invalid(format!(
                        "{origin}: catalog type \"rest\" needs catalog.catalog_url"
                    ))
                })?;
                validate_url(url, "catalog.catalog_url", origin)?;
            }
        }
        Ok(())
    }
}

fn validate_url(url: &str, key: &str, origin: &str) -> Result<(), ConfigError> {
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(()),
        _ => Err(ConfigError::Invalid(format!(
            "{origin}: {key} has '{url}', which is not an http(s)://host:port URL"
        ))),
    }
}

fn env_vars() -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(k, _)| k.starts_with("SQE_"))
        .collect()
}

/// Parses TOML, applies `SQE_SECTION__KEY` overrides for the sections this file has, then
/// deserializes strictly.
fn parse_with_env<T: DeserializeOwned>(
    text: &str,
    origin: &str,
    env: &[(String, String)],
    sections: &[&str],
) -> Result<T, ConfigError> {
    let mut table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| ConfigError::Parse {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
    let mut applied = Vec::new();
    for (name, value) in env {
        let Some((section, key)) = name
            .strip_prefix("SQE_")
            .and_then(|rest| rest.split_once("__"))
        else {
            continue;
        };
        let section = section.to_ascii_lowercase();
        if !sections.contains(&section.as_str()) {
            continue;
        }
        let entry = table
            .entry(section.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let toml::Value::Table(section_table) = entry else {
            return Err(ConfigError::Parse {
                origin: origin.to_string(),
                message: format!("[{section}] is not a table"),
            });
        };
        let key = key.to_ascii_lowercase();
        let value = env_value(&key, value);
        section_table.insert(key, value);
        applied.push(name.clone());
    }
    if applied.is_empty() {
        // Straight from the text, errors carry the line and column.
        return toml::from_str(text).map_err(|e: toml::de::Error| ConfigError::Parse {
            origin: origin.to_string(),
            message: e.to_string(),
        });
    }
    let origin = format!(
        "{origin} (with environment overrides {})",
        applied.join(", ")
    );
    T::deserialize(table).map_err(|e| ConfigError::Parse {
        origin,
        message: e.to_string(),
    })
}

/// An environment value as TOML (`true`, `8`, `["a", "b"]`), or as a string when it is not
/// TOML. Secrets and identifiers are always strings: an all-digit secret is not a number (and
/// a type error would print it).
fn env_value(key: &str, raw: &str) -> toml::Value {
    const STRING_KEYS: [&str; 5] = ["secret", "token", "password", "_id", "_key"];
    if STRING_KEYS.iter().any(|suffix| key.ends_with(suffix)) {
        return toml::Value::String(raw.to_string());
    }
    format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coordinator(text: &str, env: &[(&str, &str)]) -> Result<CoordinatorConfig, ConfigError> {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        CoordinatorConfig::from_toml(text, "coordinator.toml", &env)
    }

    #[test]
    fn no_debug_output_shows_a_secret() -> Result<(), ConfigError> {
        let c = coordinator(
            r#"
            [coordinator]
            worker_secret = "hidden-worker-secret-1"
            worker_secret_previous = "hidden-worker-secret-2"
            [catalog]
            type = "rest"
            catalog_url = "http://catalog:8181"
            token = "hidden-catalog-token"
            [storage]
            s3_secret_access_key = "hidden-s3-key"
            s3_session_token = "hidden-s3-session"
            [client_auth]
            type = "jwt"
            token_secret = "hidden-token-secret-of-sqe"
            jwt_secret = "hidden-jwt-secret"
            "#,
            &[],
        )?;
        let shown = format!("{c:?} {:?}", c.peer_settings()?);
        assert!(!shown.contains("hidden"), "{shown}");
        // The secrets are there for the one place that uses each.
        assert_eq!(
            c.worker_secret()?.as_deref(),
            Some("hidden-worker-secret-1")
        );
        let worker = WorkerConfig::from_toml(
            "[worker]\nworker_secret = \"hidden-worker-secret-3\"\n",
            "worker.toml",
            &[],
        )?;
        assert!(!format!("{worker:?}").contains("hidden"));
        Ok(())
    }

    #[test]
    fn seed_shape_parses() -> Result<(), ConfigError> {
        let c = coordinator(
            r#"
            [coordinator]
            worker_urls = ["http://worker-1:50052", "http://worker-2:50052"]
            allow_unauthenticated_workers = true
            [query_cache]
            enabled = true
            max_memory_mb = 128
            ttl_secs = 300
            [query_history]
            max_entries = 10000
            ttl_secs = 1800
            "#,
            &[],
        )?;
        assert_eq!(c.coordinator.worker_urls.len(), 2);
        assert_eq!(c.query_cache.max_memory_mb, 128);
        let w = WorkerConfig::from_toml(
            r#"
            [worker]
            flight_port = 50052
            coordinator_url = "http://coordinator:50051"
            heartbeat_interval_secs = 5
            memory_limit = "512MB"
            allow_unauthenticated_workers = true
            "#,
            "worker.toml",
            &[],
        )?;
        assert_eq!(w.worker.memory_limit, Some(ByteSize(512 << 20)));
        Ok(())
    }

    #[test]
    fn unknown_key_names_key_and_file() {
        let err = coordinator("[coordinator]\nworker_url = []\n", &[])
            .err()
            .map(|e| e.to_string());
        let err = err.unwrap_or_default();
        assert!(err.contains("coordinator.toml"), "{err}");
        assert!(err.contains("unknown field `worker_url`"), "{err}");
    }

    #[test]
    fn worker_version_policy_is_any_or_exact() -> Result<(), ConfigError> {
        let exact = coordinator(
            "[coordinator]\nworker_version_policy = \"exact\"\nexpected_worker_version = \"2.0\"\n",
            &[],
        )?;
        assert_eq!(
            exact.coordinator.worker_version_policy,
            WorkerVersionPolicy::Exact
        );
        assert_eq!(
            exact.coordinator.expected_worker_version.as_deref(),
            Some("2.0")
        );
        let err = coordinator("[coordinator]\nworker_version_policy = \"newest\"\n", &[])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("unknown variant `newest`"), "{err}");
        Ok(())
    }

    #[test]
    fn retry_policy_is_trinos() -> Result<(), ConfigError> {
        let default = coordinator("[coordinator]\n", &[])?;
        assert_eq!(default.coordinator.retry_policy, QueryRetryPolicy::None);
        assert_eq!(default.coordinator.query_retry_attempts, 4);
        let query = coordinator(
            "[coordinator]\nretry_policy = \"QUERY\"\nquery_retry_attempts = 2\n",
            &[],
        )?;
        assert_eq!(query.coordinator.retry_policy, QueryRetryPolicy::Query);
        assert_eq!(query.coordinator.query_retry_attempts, 2);
        let err = coordinator("[coordinator]\nretry_policy = \"TASK\"\n", &[])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("'TASK' is not supported"), "{err}");
        Ok(())
    }

    #[test]
    fn cluster_tls_needs_its_files_together_and_https_peers() -> Result<(), ConfigError> {
        let secret = [("SQE_WORKER_SECRET", "a-cluster-secret-of-the-test")];
        let error = |text: &str| {
            let env: Vec<(String, String)> = secret
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let coordinator = CoordinatorConfig::from_toml(text, "coordinator.toml", &env).err();
            let worker = WorkerConfig::from_toml(text, "worker.toml", &env).err();
            (
                coordinator.map(|e| e.to_string()).unwrap_or_default(),
                worker.map(|e| e.to_string()).unwrap_or_default(),
            )
        };
        let tls = "[cluster]\ntls_cert_file = \"n.pem\"\ntls_key_file = \"n.key\"\n";
        let (c, w) = error("[cluster]\ntls_cert_file = \"n.pem\"\n");
        assert!(
            c.contains("go together") && w.contains("go together"),
            "{c} / {w}"
        );
        let (c, _) = error("[cluster]\ntls_ca_file = \"ca.pem\"\n");
        assert!(c.contains("need cluster.tls_cert_file"), "{c}");
        let (c, _) = error(&format!("{tls}tls_client_auth = true\n"));
        assert!(c.contains("needs cluster.tls_ca_file"), "{c}");
        // With TLS on, a peer in clear is refused; https is accepted.
        let (c, _) = error(&format!(
            "[coordinator]\nworker_urls = [\"http://w:1\"]\n{tls}"
        ));
        assert!(c.contains("use an https:// URL"), "{c}");
        let (_, w) = error(&format!(
            "[worker]\ncoordinator_url = \"http://c:50051\"\n{tls}"
        ));
        assert!(w.contains("use an https:// URL"), "{w}");
        let text = format!(
            "[coordinator]\nworker_urls = [\"https://w:1\"]\n{tls}tls_ca_file = \"ca.pem\"\n\
             tls_client_auth = true\ntls_server_name = \"sqe-cluster\"\n"
        );
        let c = coordinator(&text, &secret)?;
        let peers = c.peer_settings()?;
        let tls = peers
            .tls
            .ok_or("[cluster] gives TLS")
            .map_err(|e| ConfigError::Invalid(e.into()))?;
        assert!(tls.require_client_cert);
        assert_eq!(tls.server_name.as_deref(), Some("sqe-cluster"));
        // Off unless set.
        assert!(coordinator("", &[])?.peer_settings()?.tls.is_none());
        Ok(())
    }

    #[test]
    fn unknown_section_is_an_error() {
        let err = coordinator("[coordinatr]\n", &[])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("unknown field `coordinatr`"), "{err}");
    }

    #[test]
    fn distributed_without_secret_refuses() {
        let err = coordinator("[coordinator]\nworker_urls = [\"http://w:1\"]\n", &[])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("worker_secret"), "{err}");
        assert!(err.contains("allow_unauthenticated_workers"), "{err}");
        // A secret from the environment satisfies it.
        let ok = coordinator(
            "[coordinator]\nworker_urls = [\"http://w:1\"]\n",
            &[("SQE_COORDINATOR__WORKER_SECRET", "s3cr3t")],
        );
        assert!(ok.is_ok());
    }

    #[test]
    fn worker_dns_is_host_and_port_and_needs_the_secret() {
        let error = |text: &str| {
            coordinator(text, &[("SQE_WORKER_SECRET", "s3cr3t")])
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(error("[coordinator]\nworker_dns = \"sqe-workers\"\n").contains("not host:port"));
        for bad in [
            ":50052",
            "http://svc:50052",
            "a:b:1",
            "svc:50052/x",
            "u@svc:1",
        ] {
            let text = format!("[coordinator]\nworker_dns = \"{bad}\"\n");
            assert!(error(&text).contains("not host:port"), "{bad}");
        }
        assert_eq!(
            error("[coordinator]\nworker_dns = \"[fd00::1]:50052\"\n"),
            ""
        );
        assert_eq!(
            error("[coordinator]\nworker_dns = \"sqe-workers:50052\"\n"),
            ""
        );
        let unsigned = coordinator("[coordinator]\nworker_dns = \"sqe-workers:50052\"\n", &[])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(unsigned.contains("worker_secret"), "{unsigned}");
    }

    #[test]
    fn rest_catalog_logs_in_one_way() -> Result<(), ConfigError> {
        let rest =
            "[catalog]\ntype = \"rest\"\ncatalog_url = \"http://polaris:8181/api/catalog\"\n";
        let auth = "[auth]\nclient_id = \"sqe\"\nclient_secret = \"s\"\n";
        let c = coordinator(
            &format!("{rest}{auth}scope = \"PRINCIPAL_ROLE:ALL\"\n"),
            &[],
        )?;
        let oauth2 = c
            .auth
            .oauth2()?
            .ok_or(ConfigError::Invalid("no credentials".into()))?;
        assert_eq!(
            (oauth2.client_id.as_str(), oauth2.client_secret.as_str()),
            ("sqe", "s")
        );
        assert_eq!(oauth2.refresh, std::time::Duration::from_secs(1800));
        assert_eq!(oauth2.scope.as_deref(), Some("PRINCIPAL_ROLE:ALL"));
        // The issue's spelling through the environment, as Helm or a container passes it.
        let from_env = coordinator(
            rest,
            &[
                ("SQE_AUTH__CLIENT_ID", "env-client"),
                ("SQE_AUTH__CLIENT_SECRET", "env-secret"),
                ("SQE_AUTH__TOKEN_ENDPOINT", "https://idp/token"),
            ],
        )?
        .auth
        .oauth2()?
        .ok_or(ConfigError::Invalid(
            "no credentials from the environment".into(),
        ))?;
        assert_eq!(from_env.client_id, "env-client");
        let digits = coordinator(
            rest,
            &[
                ("SQE_AUTH__CLIENT_ID", "1234"),
                ("SQE_AUTH__CLIENT_SECRET", "1e10"),
            ],
        )?
        .auth
        .oauth2()?
        .ok_or(ConfigError::Invalid("no credentials from digits".into()))?;
        assert_eq!(
            (digits.client_id.as_str(), digits.client_secret.as_str()),
            ("1234", "1e10")
        );
        assert_eq!(
            from_env.token_endpoint.as_deref(),
            Some("https://idp/token")
        );
        for bad in [
            format!("{rest}[auth]\nclient_id = \"sqe\"\n"),
            format!("{rest}token = \"t\"\n{auth}"),
            format!("{rest}{auth}token_endpoint = \"idp/token\"\n"),
            auth.to_string(),
            format!("{rest}[auth]\nscope = \"PRINCIPAL_ROLE:ALL\"\n"),
        ] {
            assert!(coordinator(&bad, &[]).is_err(), "{bad}");
        }
        Ok(())
    }

    #[test]
    fn telemetry_is_off_by_default_and_checked() -> Result<(), ConfigError> {
        let c = coordinator("", &[])?;
        assert_eq!(c.telemetry.otlp_endpoint, None);
        let c = coordinator(
            "[telemetry]\notlp_endpoint = \"http://tempo:4317\"\nsampling_ratio = 0.5\n\
             resource_attributes = { \"deployment.environment\" = \"prod\" }\n",
            &[],
        )?;
        assert_eq!(c.telemetry.sampling_ratio, Some(0.5));
        assert_eq!(
            c.telemetry
                .resource_attributes
                .get("deployment.environment")
                .map(String::as_str),
            Some("prod")
        );
        for bad in [
            "[telemetry]\nsampling_ratio = 1.5\n",
            "[telemetry]\notlp_endpoint = \"tempo:4317\"\n",
        ] {
            assert!(coordinator(bad, &[]).is_err(), "{bad}");
        }
        // The environment reaches the section too.
        let c = coordinator("", &[("SQE_TELEMETRY__SERVICE_NAME", "sqe-eu")])?;
        assert_eq!(c.telemetry.service_name.as_deref(), Some("sqe-eu"));
        Ok(())
    }

    #[test]
    fn worker_secret_from_its_own_variable() -> Result<(), ConfigError> {
        let c = coordinator(
            "[coordinator]\nworker_urls = [\"http://w:1\"]\n",
            &[("SQE_WORKER_SECRET", "from-env")],
        )?;
        assert_eq!(c.peer_settings()?.secret.as_deref(), Some("from-env"));
        // The file wins over the variable.
        let c = coordinator(
            "[coordinator]\nworker_secret = \"inline\"\n",
            &[("SQE_WORKER_SECRET", "from-env")],
        )?;
        assert_eq!(c.peer_settings()?.secret.as_deref(), Some("inline"));
        Ok(())
    }

    #[test]
    fn env_overrides_are_typed() -> Result<(), ConfigError> {
        let c = coordinator(
            "[coordinator]\ntrino_http_port = 8080\n",
            &[
                ("SQE_COORDINATOR__TRINO_HTTP_PORT", "8081"),
                ("SQE_CATALOG__WAREHOUSE", "file:///tmp/wh"),
                ("SQE_WORKER__FLIGHT_PORT", "1"),
                ("SQE_VERSION", "ignored"),
            ],
        )?;
        assert_eq!(c.coordinator.trino_http_port, 8081);
        assert_eq!(c.catalog.warehouse.as_deref(), Some("file:///tmp/wh"));
        Ok(())
    }

    #[test]
    fn bad_env_override_says_where_it_came_from() {
        let err = coordinator("", &[("SQE_COORDINATOR__FLIGHT_SQL_PORT", "not-a-port")])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("SQE_COORDINATOR__FLIGHT_SQL_PORT"), "{err}");
    }

    #[test]
    fn storage_maps_to_iceberg_s3_properties() -> Result<(), ConfigError> {
        let dir = tempfile::tempdir().map_err(|e| ConfigError::Invalid(e.to_string()))?;
        let secret_file = dir.path().join("s3.secret");
        std::fs::write(&secret_file, "from-file\n")
            .map_err(|e| ConfigError::Invalid(e.to_string()))?;
        let text = format!(
            "[catalog]\ntype = \"rest\"\ncatalog_url = \"http://polaris:8181/api/catalog\"\nwarehouse = \"quickstart\"\n\
             [storage]\ns3_endpoint = \"http://rustfs:9000\"\ns3_region = \"us-east-1\"\n\
             s3_access_key_id = \"AKIA\"\ns3_secret_access_key_file = \"{}\"\ns3_path_style = true\n",
            secret_file.display()
        );
        let c = coordinator(&text, &[])?;
        assert_eq!(c.catalog.kind, CatalogType::Rest);
        let props = c.storage.iceberg_props()?;
        assert_eq!(
            props.get("s3.endpoint").map(String::as_str),
            Some("http://rustfs:9000")
        );
        assert_eq!(
            props.get("s3.region").map(String::as_str),
            Some("us-east-1")
        );
        assert_eq!(
            props.get("s3.access-key-id").map(String::as_str),
            Some("AKIA")
        );
        assert_eq!(
            props.get("s3.secret-access-key").map(String::as_str),
            Some("from-file")
        );
        assert_eq!(
            props.get("s3.path-style-access").map(String::as_str),
            Some("true")
        );
        // Inline and file at once is ambiguous.
        let both = format!("{text}s3_secret_access_key = \"inline\"\n");
        assert!(coordinator(&both, &[]).is_err());
        Ok(())
    }

    #[test]
    fn sizes() {
        assert_eq!(ByteSize::parse("512MB"), Ok(ByteSize(512 << 20)));
        assert_eq!(ByteSize::parse("1.5g"), Ok(ByteSize(3 << 29)));
        assert_eq!(ByteSize::parse("100"), Ok(ByteSize(100)));
        assert!(ByteSize::parse("12 parsecs").is_err());
    }

    #[test]
    fn rest_catalog_needs_url() {
        let err = coordinator("[catalog]\ntype = \"rest\"\n", &[])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("catalog_url"), "{err}");
        let err = coordinator("[catalog]\ntype = \"hive\"\n", &[])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("unknown variant `hive`"), "{err}");
    }
}
