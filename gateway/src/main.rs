//! The `sqe` binary.
#![allow(clippy::print_stdout)] // a command-line tool prints its results

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use sqe_gateway::config::TelemetryConfig;
use sqe_gateway::config::{ConfigFile, CoordinatorConfig, WorkerConfig};
use sqe_gateway::error::StartError;
use sqe_gateway::local::{LocalOptions, StackSettings, running_stack, start_local};
use sqe_gateway::node::{
    bind, build_version, start_coordinator, start_worker, version_requirement, worker_node_id,
    worker_version,
};
use sqe_gateway::shell::{self, ShellArgs};
use sqe_gateway::telemetry::{self, ProcessIdentity, Telemetry};
use sqe_layers::serve::Shutdown;
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(
    name = "sqe",
    version,
    about = "SQE: a distributed SQL engine for Apache Iceberg"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a coordinator (client endpoints, planning, dispatch to workers).
    Coordinator {
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Run a worker (executes plan fragments; holds no catalog or session state).
    Worker {
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Run a coordinator and workers on this machine with sample TPC-H data.
    Local {
        /// Where the embedded catalog and warehouse live (kept between runs).
        #[arg(long, default_value = "sqe-data")]
        data_dir: PathBuf,
        #[arg(long, default_value_t = 2)]
        workers: usize,
        #[arg(long, default_value_t = 50051)]
        flight_sql_port: u16,
        /// Port of the Trino client protocol.
        #[arg(long, default_value_t = 8080)]
        trino_http_port: u16,
        /// TPC-H scale factor generated on first start (0 = none).
        #[arg(long, default_value_t = 0.1)]
        scale_factor: f64,
        /// Data files per large TPC-H table.
        #[arg(long, default_value_t = 4)]
        tpch_parts: usize,
        /// Bytes per scan partition: smaller spreads small scans over more workers. The local
        /// default (1 MiB) spreads even the sample data over both workers.
        #[arg(long, default_value_t = 1024 * 1024)]
        scan_bytes_per_partition: usize,
        /// Use the REST catalog and S3 store of `scripts/stack.sh up` (its state directory,
        /// `.stack` by default) instead of the embedded catalog. Without this flag a stack
        /// running in `./.stack` is used when there is one.
        #[arg(long, value_name = "STACK_DIR", num_args = 0..=1, default_missing_value = ".stack")]
        stack: Option<PathBuf>,
        /// The embedded catalog even when a stack runs in `./.stack`.
        #[arg(long, conflicts_with = "stack")]
        embedded: bool,
    },
    /// SQL shell over Flight SQL: interactive, or `-e "SQL"` / `-f file` / piped statements.
    Shell(Box<ShellArgs>),
    /// Print the bcrypt hash of a password read from stdin, for `[client_auth] users`.
    HashPassword,
}

/// Logs to stderr (SQE_LOG_FORMAT=json: one JSON object per line, with the fields of the
/// enclosing span, a query's query_id and trace_id), and spans through `telemetry`.
fn init_logging(default: &str, telemetry: Option<&Telemetry>) {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    // The log filter is the log layers' own: traces have theirs (see `trace_layer`).
    let filter = || EnvFilter::try_from_env("SQE_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let json = std::env::var("SQE_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let _ = tracing_subscriber::registry()
        .with((!json).then(|| {
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(filter())
        }))
        .with(json.then(|| {
            tracing_subscriber::fmt::layer()
                .json()
                .with_current_span(true)
                .with_span_list(false)
                .with_writer(std::io::stderr)
                .with_filter(filter())
        }))
        .with(telemetry.map(telemetry::trace_layer))
        .try_init();
}

/// Starts the process's tracing: spans exported when `[telemetry]` or `OTEL_*` ask for it.
fn start_telemetry(
    config: &TelemetryConfig,
    role: &'static str,
    node_id: String,
    version: String,
) -> Result<Telemetry, StartError> {
    let telemetry = telemetry::start(
        config,
        &ProcessIdentity {
            role,
            node_id,
            version,
        },
    )?;
    init_logging("info", Some(&telemetry));
    if telemetry.exporting() {
        tracing::info!("exporting traces over OTLP");
    }
    Ok(telemetry)
}

/// Resolves on Ctrl-C or SIGTERM.
async fn termination() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
    tracing::info!("shutting down");
}

/// Triggers `shutdown` on Ctrl-C or SIGTERM.
fn stop_on_signal(shutdown: Vec<Shutdown>) {
    sqe_layers::task::spawn(async move {
        termination().await;
        shutdown.iter().for_each(Shutdown::trigger);
    });
}

/// On SIGHUP, reads the config file again and applies what can change while running: which
/// worker versions get tasks (a rolling deploy's switch). Other changes need a restart.
/// `hangup` is listened to from before the coordinator starts: a SIGHUP meanwhile is kept, not
/// fatal.
#[cfg(unix)]
fn reload_on_hangup(
    path: PathBuf,
    workers: std::sync::Arc<sqe_engine::cluster::WorkerPool>,
    hangup: Option<tokio::signal::unix::Signal>,
) {
    let Some(mut hangup) = hangup else { return };
    sqe_layers::task::spawn(async move {
        while hangup.recv().await.is_some() {
            match CoordinatorConfig::load(&path) {
                Ok(config) => {
                    tracing::info!(config = %path.display(), "SIGHUP: worker version policy reloaded; other settings apply at restart");
                    workers.require_version(version_requirement(&config.coordinator));
                }
                Err(e) => tracing::error!(error = %e, "SIGHUP: config not reloaded"),
            }
        }
    });
}

/// Runs the command; `telemetry` keeps the process's tracer provider for a flush at exit.
async fn run(cli: Cli, telemetry: &mut Option<Telemetry>) -> Result<ExitCode, StartError> {
    match cli.command {
        Command::Coordinator { config } => {
            let config_path = config;
            let config = CoordinatorConfig::load(&config_path)?;
            *telemetry = Some(start_telemetry(
                &config.telemetry,
                "coordinator",
                config.coordinator.node_id.clone(),
                build_version(),
            )?);
            #[cfg(unix)]
            let hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
                .inspect_err(
                    |e| tracing::error!(error = %e, "cannot listen for SIGHUP: no config reload"),
                )
                .ok();
            let listener = bind(
                &config.coordinator.bind_address,
                config.coordinator.flight_sql_port,
                "Flight SQL",
            )
            .await?;
            let coordinator = start_coordinator(&config, listener).await?;
            #[cfg(unix)]
            reload_on_hangup(
                config_path,
                std::sync::Arc::clone(coordinator.engine.workers()),
                hangup,
            );
            stop_on_signal(vec![coordinator.servers.shutdown_handle()]);
            coordinator.servers.join().await;
        }
        Command::Worker { config } => {
            let config = WorkerConfig::load(&config)?;
            let listener = bind(
                &config.worker.bind_address,
                config.worker.flight_port,
                "the worker (worker.flight_port)",
            )
            .await?;
            *telemetry = Some(start_telemetry(
                &config.telemetry,
                "worker",
                worker_node_id(&config, &listener)?,
                worker_version(&config),
            )?);
            let worker = start_worker(&config, listener).await?;
            // SIGTERM drains a registered worker: no new tasks, running ones finish.
            let ended = worker.servers.ended();
            tokio::select! {
                () = termination() => {
                    // A second signal stops at once, not waiting for the drain.
                    tokio::select! {
                        () = worker.drain_and_stop() => {}
                        () = termination() => tracing::warn!("second signal: stopping without finishing the drain"),
                    }
                }
                () = ended => {}
            }
        }
        Command::Local {
            data_dir,
            workers,
            flight_sql_port,
            trino_http_port,
            scale_factor,
            tpch_parts,
            scan_bytes_per_partition,
            stack,
            embedded,
        } => {
            let stack = match (stack, embedded) {
                (Some(dir), _) => Some(StackSettings::load(&dir)?),
                (None, true) => None,
                (None, false) => {
                    let found = running_stack(std::path::Path::new(".stack"));
                    if found.is_some() {
                        eprintln!(
                            "Using the REST catalog + S3 stack running in .stack (scripts/stack.sh up); \
                             --embedded for the embedded catalog."
                        );
                    }
                    found
                }
            };
            *telemetry = Some(start_telemetry(
                &TelemetryConfig::default(),
                "local",
                "local".into(),
                build_version(),
            )?);
            let options = LocalOptions {
                data_dir,
                workers,
                flight_sql_port,
                trino_http_port: Some(trino_http_port),
                scale_factor,
                tpch_parts,
                scan_bytes_per_partition: Some(scan_bytes_per_partition),
                worker_memory_limit: None,
                spill_directory: None,
                worker_secret: None,
                query_max_run_time_secs: None,
                admission: None,
                worker_probe_interval_secs: None,
                client_auth: Default::default(),
                metrics_port: None,
                trino_spooling_location: None,
                stack,
            };
            let cluster = start_local(&options).await?;
            let worker_urls: Vec<String> =
                cluster.workers.iter().map(|w| w.url.to_string()).collect();
            let addr = cluster.coordinator.flight_sql_addr;
            eprintln!(
                "\nSQE local cluster is up: a coordinator and {} workers on loopback.\n  \
                 Flight SQL : grpc://{addr}\n  \
                 Trino      : {trino}\n  \
                 Workers    : {}\n  \
                 Data       : {data}\n\n\
                 Try:  {sqe} shell --port {port} -e \"SELECT count(*) FROM tpch.lineitem\"\n\
                 Stop with Ctrl-C.\n",
                worker_urls.len(),
                worker_urls.join(", "),
                data = match &options.stack {
                    Some(stack) => format!(
                        "REST catalog {} over S3 {}",
                        stack.catalog.catalog_url.as_deref().unwrap_or("?"),
                        stack.storage.s3_endpoint.as_deref().unwrap_or("?")
                    ),
                    None => format!("{} (catalog.db, warehouse/)", options.data_dir.display()),
                },
                port = addr.port(),
                sqe = sqe_gateway::executable::this_program(),
                trino = cluster
                    .coordinator
                    .trino_http_addr
                    .map_or("off".to_string(), |a| format!("http://{a}")),
            );
            let mut handles = vec![cluster.coordinator.servers.shutdown_handle()];
            handles.extend(cluster.workers.iter().map(|w| w.servers.shutdown_handle()));
            stop_on_signal(handles);
            cluster.coordinator.servers.join().await;
            for worker in cluster.workers {
                worker.servers.join().await;
            }
        }
        Command::Shell(args) => {
            init_logging("warn", None);
            return Ok(shell::run(*args).await);
        }
        Command::HashPassword => {
            let mut password = String::new();
            std::io::stdin()
                .read_line(&mut password)
                .map_err(|e| StartError::System(format!("cannot read the password: {e}")))?;
            let password = password.trim_end_matches(['\r', '\n']);
            if password.is_empty() {
                return Err(StartError::System(
                    "an empty password; pipe the password to stdin".into(),
                ));
            }
            let hash = sqe_gateway::client_auth::hash_password(password)
                .map_err(|e| StartError::System(format!("cannot hash the password: {e}")))?;
            println!("{hash}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(sqe_layers::dedicated_runtime::THREAD_STACK_BYTES)
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("Error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(serve())
}

async fn serve() -> ExitCode {
    let mut telemetry = None;
    let code = match run(Cli::parse(), &mut telemetry).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {e}");
            ExitCode::FAILURE
        }
    };
    if let Some(telemetry) = telemetry {
        // The flush blocks (the batch exporter's own thread does the sending).
        let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
    }
    code
}
