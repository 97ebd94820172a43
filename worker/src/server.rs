//! The worker process: a datafusion-distributed `Worker` served over gRPC.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::error::DataFusionError;
use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion::execution::memory_pool::MemoryPool;
use datafusion::execution::memory_pool::{FairSpillPool, TrackConsumersPool};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion_distributed::{DistributedExt, Worker, WorkerQueryContext};
use tokio::net::TcpListener;

use sqe_layers::auth::{ResultTicketVerifier, TokenVerifier};
use sqe_layers::server_layers_except;
use sqe_layers::stream_count::{OpenStreams, StreamCountLayer};

use crate::channel::SqeChannelResolver;
use crate::results::{RESULT_DO_GET, ResultEndpoints};
use crate::task_errors::{ErrorStatus, classify_errors};
use crate::task_span::{COORDINATOR_CHANNEL, EXECUTE_TASK, TaskSpanLayer};
use sqe_iceberg::codec::SqeCodec;

/// What a worker needs to execute fragments: no catalog, no sessions, only how to reach storage
/// and its peers.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    /// This node's name (the issuer of the tokens it signs for its peers).
    pub node_id: String,
    /// Iceberg storage properties from the worker's `[storage]` section.
    pub storage_props: HashMap<String, String>,
    /// Bytes of memory DataFusion may use for all fragments together; `None` is unbounded.
    pub memory_limit: Option<usize>,
    /// Where spilling operators write; `None`: the system's temporary directory.
    pub spill_directory: Option<std::path::PathBuf>,
    /// Reported through `GetWorkerInfo`, so coordinators route only to compatible workers.
    pub version: String,
    /// How this worker reaches other workers (shuffles read from them).
    pub channels: SqeChannelResolver,
    /// Checks the token on every request; `None` accepts unauthenticated requests.
    pub verifier: Option<Arc<TokenVerifier>>,
    /// Checks the result tickets clients redeem here; `None` (no `worker_secret`) refuses them.
    pub tickets: Option<Arc<ResultTicketVerifier>>,
    /// How an error becomes the status a client reading a result here gets (the node's
    /// mapping); `None` leaves datafusion-distributed's own status.
    pub error_status: Option<ErrorStatus>,
    /// Serves over TLS (`[cluster]`); `None` in clear.
    pub tls: Option<tonic::transport::ServerTlsConfig>,
}

/// Live counters of one worker process.
#[derive(Debug, Default)]
pub struct WorkerStats {
    tasks_received: AtomicU64,
    /// `ExecuteTask` calls still streaming: a cancelled consumer resets its stream, the server
    /// drops the body, and with it the task's partition streams (their spawned tasks abort).
    task_streams: OpenStreams,
    /// `CoordinatorChannel` calls open: tasks planned here whose coordinator still holds them.
    plan_channels: OpenStreams,
    /// The pool every task's operators reserve their memory from.
    memory: Option<Arc<dyn MemoryPool>>,
}

impl WorkerStats {
    /// Plan fragments (distributed tasks) this worker has accepted since it started.
    pub fn tasks_received(&self) -> u64 {
        self.tasks_received.load(Ordering::Relaxed)
    }

    /// Partition streams of plan fragments this worker is executing now (its running work);
    /// 0 once every consumer has finished or cancelled.
    pub fn open_task_streams(&self) -> usize {
        self.task_streams.current()
    }

    /// Tasks whose plan this worker holds for a coordinator that has not let them go: work
    /// that may still be pulled even while no partition stream is open.
    pub fn open_plan_channels(&self) -> usize {
        self.plan_channels.current()
    }

    /// Bytes the worker's running tasks hold in its memory pool; back to 0 once every task
    /// has ended or been dropped.
    pub fn memory_reserved(&self) -> usize {
        self.memory.as_ref().map_or(0, |pool| pool.reserved())
    }

    /// The size of the worker's memory pool; `None` when unbounded.
    pub fn memory_limit(&self) -> Option<usize> {
        match self.memory.as_ref()?.memory_limit() {
            datafusion::execution::memory_pool::MemoryLimit::Finite(bytes) => Some(bytes),
            _ => None,
        }
    }
}

/// Builds the worker service: every fragment gets a session with SQE's codec, and all
/// fragments share one runtime whose memory pool enforces `memory_limit`.
pub fn build_worker(
    settings: &WorkerSettings,
) -> Result<(Worker, Arc<WorkerStats>), DataFusionError> {
    let mut runtime = RuntimeEnvBuilder::new();
    if let Some(limit) = settings.memory_limit {
        // Spillable operators share the pool fairly: with DataFusion's default greedy pool one
        // sort partition could take it all and leave another none for its merge, failing a
        // query that could have spilled. The five largest consumers are named in refusals.
        runtime = runtime.with_memory_pool(Arc::new(TrackConsumersPool::new(
            FairSpillPool::new(limit),
            std::num::NonZeroUsize::MIN.saturating_add(4),
        )));
    }
    // Operators that outgrow the pool spill here (DataFusion's default: the system's temp).
    if let Some(directory) = &settings.spill_directory {
        runtime = runtime.with_disk_manager_builder(
            DiskManagerBuilder::default()
                .with_mode(DiskManagerMode::Directories(vec![directory.clone()])),
        );
    }
    let runtime = runtime.build_arc()?;
    let codec = SqeCodec::new(settings.storage_props.clone());
    let channels = settings.channels.clone();
    let mut worker = Worker::from_session_builder(move |ctx: WorkerQueryContext| {
        let codec = codec.clone();
        let channels = channels.clone();
        // Called while the task arrives, inside its CoordinatorChannel span: the task's own
        // calls to other workers continue that span's trace.
        let trace_context = sqe_layers::trace::context_headers(&tracing::Span::current());
        async move {
            let builder = ctx
                .builder
                // In the coordinator's order (sqe_engine's session state): a node names its
                // codec by position.
                .with_distributed_user_codec(codec)
                .with_distributed_user_codec(sqe_tpch::TpchCodec)
                .with_distributed_channel_resolver(channels);
            let builder = if trace_context.is_empty() {
                builder
            } else {
                builder.with_distributed_passthrough_headers(trace_context)?
            };
            let mut state = builder.build();
            // The plans the coordinator sends name Trino's functions; they run here.
            for function in sqe_functions::scalar_functions() {
                datafusion::execution::FunctionRegistry::register_udf(&mut state, function)?;
            }
            for function in sqe_functions::aggregate_functions() {
                datafusion::execution::FunctionRegistry::register_udaf(&mut state, function)?;
            }
            for function in sqe_functions::window_functions() {
                datafusion::execution::FunctionRegistry::register_udwf(&mut state, function)?;
            }
            Ok(state)
        }
    })
    .with_runtime_env(Arc::clone(&runtime))
    .with_version(settings.version.clone());
    let stats = Arc::new(WorkerStats {
        tasks_received: AtomicU64::new(0),
        task_streams: OpenStreams::default(),
        plan_channels: OpenStreams::default(),
        memory: Some(Arc::clone(&runtime.memory_pool)),
    });
    let counted = Arc::clone(&stats);
    worker.add_on_plan_hook(move |plan| {
        counted.tasks_received.fetch_add(1, Ordering::Relaxed);
        plan
    });
    if let Some(status) = settings.error_status.clone() {
        worker.add_on_plan_hook(move |plan| classify_errors(plan, &status));
    }
    Ok((worker, stats))
}

/// A worker keeps no list of its peers: the observability service's cluster listing is empty
/// (the coordinator's `system.runtime.nodes` is where the cluster is listed).
struct NoPeers;

impl datafusion_distributed::WorkerResolver for NoPeers {
    fn get_urls(&self) -> Result<Vec<url::Url>, DataFusionError> {
        Ok(Vec::new())
    }
}

/// Serves `worker` on `listener` (over TLS when configured) behind the server-side layers
/// (trace context, token check, then the count of running task streams in `stats`) until
/// `shutdown` completes. Next to it, the result partitions clients redeem with a ticket
/// instead of a token ([`crate::results`]).
pub async fn serve(
    listener: TcpListener,
    worker: Worker,
    stats: &WorkerStats,
    settings: &WorkerSettings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), tonic::transport::Error> {
    let mut builder = tonic::transport::Server::builder();
    if let Some(tls) = &settings.tls {
        builder = builder.tls_config(tls.clone())?;
    }
    let results = ResultEndpoints::new(&worker, settings.tickets.clone());
    builder
        .layer(
            server_layers_except(
                &settings.node_id,
                settings.verifier.clone(),
                &[RESULT_DO_GET],
            )
            .layer(TaskSpanLayer)
            .layer(StreamCountLayer::new(
                EXECUTE_TASK,
                stats.task_streams.clone(),
            ))
            .layer(StreamCountLayer::new(
                COORDINATOR_CHANNEL,
                stats.plan_channels.clone(),
            ))
            // A client reading a partition runs a task partition here too.
            .layer(StreamCountLayer::new(
                RESULT_DO_GET,
                stats.task_streams.clone(),
            )),
        )
        .add_service(results.stops_server())
        .add_service(results.into_flight_server())
        // Task progress for the coordinator, behind the same token check.
        .add_service(worker.with_observability_service(Arc::new(NoPeers)))
        .add_service(worker.into_worker_server())
        .serve_with_incoming_shutdown(sqe_layers::serve::incoming(listener), shutdown)
        .await
}
