//! `sqe local`: a coordinator and workers on loopback over an embedded catalog, with TPC-H.

use std::path::PathBuf;

use crate::config::{
    AuthConfig, ByteSize, CatalogConfig, ClientAuthConfig, ConfigFile, CoordinatorConfig,
    CoordinatorSection, StorageConfig, WorkerConfig, WorkerSection,
};
use crate::error::{StartError, StartResult as Result};
use crate::node::{RunningCoordinator, RunningWorker, bind, start_coordinator_on, start_worker};
use crate::tpch::create_tpch;
use iceberg::NamespaceIdent;
use sqe_engine::catalog::{DEFAULT_SCHEMA, connect_catalog, default_warehouse_layout};

/// What `sqe local` starts.
#[derive(Debug, Clone)]
pub struct LocalOptions {
    /// Holds `catalog.db` and `warehouse/`; kept between runs.
    pub data_dir: PathBuf,
    pub workers: usize,
    /// 0 picks a free port.
    pub flight_sql_port: u16,
    /// The Trino protocol's port (0 picks a free one); `None` serves no Trino protocol.
    pub trino_http_port: Option<u16>,
    /// TPC-H scale factor of the sample data; 0 skips generating it.
    pub scale_factor: f64,
    /// Data files per large TPC-H table.
    pub tpch_parts: usize,
    /// Overrides `scan_bytes_per_partition` (smaller values spread small tables over workers).
    pub scan_bytes_per_partition: Option<usize>,
    /// Worker memory pool size (unset: each node's part of the machine's default).
    pub worker_memory_limit: Option<usize>,
    /// Where every node spills (unset: the system's temporary directory).
    pub spill_directory: Option<PathBuf>,
    /// The secret workers and coordinator sign their RPCs with; a random one when unset.
    pub worker_secret: Option<String>,
    /// Longest a query may run (unset: no limit).
    pub query_max_run_time_secs: Option<u64>,
    /// How many statements may run and wait at once (unset: the coordinator's defaults).
    pub admission: Option<sqe_engine::queries::AdmissionLimits>,
    /// How often the coordinator probes its workers (unset: the coordinator's default).
    pub worker_probe_interval_secs: Option<u64>,
    /// How clients authenticate (none by default).
    pub client_auth: ClientAuthConfig,
    /// The coordinator's `/metrics` and probes port (0 picks a free one); `None` serves none.
    pub metrics_port: Option<u16>,
    /// Where the Trino port spools result segments (`s3://bucket/prefix` in the stack's store);
    /// unset, the coordinator holds them.
    pub trino_spooling_location: Option<String>,
    /// Catalog and storage of an external stack (`scripts/stack.sh`) instead of the embedded
    /// catalog under `data_dir`.
    pub stack: Option<StackSettings>,
}

/// Where a stack's catalog and object store are, as `scripts/stack.sh` writes them.
#[derive(Debug, Clone)]
pub struct StackSettings {
    pub catalog: CatalogConfig,
    pub auth: AuthConfig,
    pub storage: StorageConfig,
}

impl StackSettings {
    /// Reads `<dir>/stack.env` (`SQE_CATALOG__*` and `SQE_STORAGE__*` lines, as `scripts/stack.sh
    /// up` writes them) through the config loader, so they mean what they mean in a config file.
    pub fn load(dir: &std::path::Path) -> Result<Self> {
        Self::from_env(dir, &read_stack_env(dir)?)
    }

    /// The settings among `env` (the lines of `<dir>/stack.env`).
    pub fn from_env(dir: &std::path::Path, env: &[(String, String)]) -> Result<Self> {
        let settings: Vec<(String, String)> = env
            .iter()
            .filter(|(key, _)| {
                ["SQE_CATALOG__", "SQE_AUTH__", "SQE_STORAGE__"]
                    .iter()
                    .any(|section| key.starts_with(section))
            })
            .cloned()
            .collect();
        let origin = dir.join("stack.env").display().to_string();
        let config = CoordinatorConfig::from_toml("", &origin, &settings)?;
        Ok(Self {
            catalog: config.catalog,
            auth: config.auth,
            storage: config.storage,
        })
    }
}

/// The stack `scripts/stack.sh up` left running in `dir`, if any: its settings load and its
/// catalog accepts connections.
pub fn running_stack(dir: &std::path::Path) -> Option<StackSettings> {
    if !dir.join("stack.env").is_file() {
        return None;
    }
    let settings = match StackSettings::load(dir) {
        Ok(settings) => settings,
        Err(e) => {
            // Said on stderr: logging is not set up yet when `sqe local` looks for a stack.
            eprintln!(
                "Not using the stack in {}: {e}; running on the embedded catalog.",
                dir.display()
            );
            return None;
        }
    };
    let url = url::Url::parse(settings.catalog.catalog_url.as_deref()?).ok()?;
    let answers = url.socket_addrs(|| None).ok()?.iter().any(|addr| {
        std::net::TcpStream::connect_timeout(addr, std::time::Duration::from_millis(500)).is_ok()
    });
    answers.then_some(settings)
}

/// The `KEY=VALUE` lines of `<dir>/stack.env`, as `scripts/stack.sh up` writes them.
pub fn read_stack_env(dir: &std::path::Path) -> Result<Vec<(String, String)>> {
    let path = dir.join("stack.env");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        StartError::System(format!(
            "cannot read {}: {e} (start the stack with scripts/stack.sh up)",
            path.display()
        ))
    })?;
    Ok(text
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| (key.trim().to_string(), value.trim().to_string()))
        .collect())
}

impl Default for LocalOptions {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("sqe-data"),
            workers: 2,
            flight_sql_port: 50051,
            trino_http_port: Some(8080),
            scale_factor: 0.1,
            tpch_parts: 4,
            scan_bytes_per_partition: None,
            worker_memory_limit: None,
            spill_directory: None,
            worker_secret: None,
            query_max_run_time_secs: None,
            admission: None,
            worker_probe_interval_secs: None,
            client_auth: ClientAuthConfig::default(),
            metrics_port: None,
            trino_spooling_location: None,
            stack: None,
        }
    }
}

/// A running local cluster.
pub struct LocalCluster {
    pub coordinator: RunningCoordinator,
    pub workers: Vec<RunningWorker>,
    pub generated_tpch: bool,
}

impl LocalCluster {
    pub async fn stop(self) {
        self.coordinator.stop().await;
        for worker in self.workers {
            worker.stop().await;
        }
    }
}

/// Starts workers, then the coordinator, then creates the TPC-H tables if they are missing.
///
/// Everything listens on 127.0.0.1 only, and every RPC between the nodes still carries a token
/// signed with a secret made up for this run (or `options.worker_secret`).
pub async fn start_local(options: &LocalOptions) -> Result<LocalCluster> {
    std::fs::create_dir_all(&options.data_dir).map_err(|e| {
        StartError::System(format!("cannot create {}: {e}", options.data_dir.display()))
    })?;
    let data_dir = options
        .data_dir
        .canonicalize()
        .map_err(|e| StartError::System(format!("{}: {e}", options.data_dir.display())))?;
    // The ports asked for are taken first: a worker's port is any free one, which could be one
    // of them.
    let listener = bind(
        "127.0.0.1",
        options.flight_sql_port,
        "Flight SQL (use --flight-sql-port)",
    )
    .await?;
    let trino = match options.trino_http_port {
        Some(port) => Some(
            bind(
                "127.0.0.1",
                port,
                "the Trino protocol (use --trino-http-port)",
            )
            .await?,
        ),
        None => None,
    };
    let secret = options.worker_secret.clone().unwrap_or_else(random_secret);
    let mut workers = Vec::with_capacity(options.workers);
    // The coordinator and the workers share this process: each takes its part of the default.
    let shared_memory_limit = crate::node::default_memory_limit(1 + options.workers);
    for i in 0..options.workers {
        let config = WorkerConfig {
            worker: WorkerSection {
                node_id: Some(format!("worker-{}", i + 1)),
                bind_address: "127.0.0.1".into(),
                flight_port: 0,
                worker_secret: Some(secret.clone().into()),
                memory_limit: options
                    .worker_memory_limit
                    .or(shared_memory_limit)
                    .map(ByteSize),
                spill_directory: options.spill_directory.clone(),
                ..Default::default()
            },
            storage: options
                .stack
                .as_ref()
                .map(|stack| stack.storage.clone())
                .unwrap_or_default(),
            ..Default::default()
        };
        let listener = bind("127.0.0.1", 0, "a local worker").await?;
        workers.push(start_worker(&config, listener).await?);
    }
    let (uri, warehouse) = default_warehouse_layout(&data_dir);
    let mut coordinator = CoordinatorSection {
        bind_address: "127.0.0.1".into(),
        worker_urls: workers.iter().map(|w| w.url.to_string()).collect(),
        worker_secret: Some(secret.into()),
        flight_sql_port: options.flight_sql_port,
        trino_http_port: 0,
        query_max_run_time_secs: options.query_max_run_time_secs,
        memory_limit: shared_memory_limit.map(ByteSize),
        spill_directory: options.spill_directory.clone(),
        worker_probe_interval_secs: options
            .worker_probe_interval_secs
            .unwrap_or(CoordinatorSection::default().worker_probe_interval_secs),
        // Every port of a local cluster is on loopback: credentials never cross a network.
        trino_allow_insecure_auth: true,
        flight_sql_allow_insecure_auth: true,
        // Only loopback names: no web page can reach it by DNS rebinding.
        trino_allowed_hosts: ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec(),
        ..Default::default()
    };
    if let Some(port) = options.metrics_port {
        coordinator.metrics_port = port;
    }
    coordinator
        .trino_spooling_location
        .clone_from(&options.trino_spooling_location);
    if let Some(limits) = options.admission {
        coordinator.max_running_queries = limits.max_running;
        coordinator.max_queued_queries = limits.max_queued;
        coordinator.max_running_queries_per_user = limits.max_running_per_user;
    }
    if let Some(bytes) = options.scan_bytes_per_partition {
        coordinator.scan_bytes_per_partition = ByteSize(bytes);
    }
    let (catalog, auth, storage) = match &options.stack {
        Some(stack) => (
            stack.catalog.clone(),
            stack.auth.clone(),
            stack.storage.clone(),
        ),
        None => (
            CatalogConfig {
                uri: Some(uri),
                warehouse: Some(warehouse),
                ..Default::default()
            },
            AuthConfig::default(),
            StorageConfig::default(),
        ),
    };
    let config = CoordinatorConfig {
        coordinator,
        catalog,
        auth,
        storage,
        client_auth: options.client_auth.clone(),
        ..Default::default()
    };
    // The sample data and the session's default schema exist before any client is served: the
    // ports are bound, but nothing answers on them until the coordinator starts.
    let generated_tpch = prepare_catalog(&config, options).await?;
    let coordinator = start_coordinator_on(&config, listener, trino).await?;
    Ok(LocalCluster {
        coordinator,
        workers,
        generated_tpch,
    })
}

/// Creates the `default` schema (the session's schema when a client names none) and the
/// TPC-H sample tables if they are missing; true if it generated tables.
async fn prepare_catalog(config: &CoordinatorConfig, options: &LocalOptions) -> Result<bool> {
    let storage = config.storage.iceberg_props()?;
    let catalog = connect_catalog(&config.catalog.settings(&config.auth)?, &storage)
        .await?
        .catalog;
    let default = NamespaceIdent::new(DEFAULT_SCHEMA.to_string());
    let exists = catalog.namespace_exists(&default).await;
    if !exists.map_err(sqe_engine::error::Error::from)? {
        catalog
            .create_namespace(&default, Default::default())
            .await
            .map_err(sqe_engine::error::Error::from)?;
    }
    if options.scale_factor <= 0.0 {
        return Ok(false);
    }
    Ok(create_tpch(&catalog, "tpch", options.scale_factor, options.tpch_parts).await?)
}

/// 256 random bits as hex.
fn random_secret() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}
