//! The worker process: a datafusion-distributed `Worker` served over gRPC.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::error::DataFusionError;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion_distributed::{DistributedExt, Worker, WorkerQueryContext};
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;

use crate::codec::SqeCodec;

/// What a worker needs to execute fragments: no catalog, no sessions, only how to reach storage.
#[derive(Debug, Clone, Default)]
pub struct WorkerSettings {
    /// Iceberg storage properties from the worker's `[storage]` section.
    pub storage_props: HashMap<String, String>,
    /// Bytes of memory DataFusion may use for all fragments together; `None` is unbounded.
    pub memory_limit: Option<usize>,
    /// Reported through `GetWorkerInfo`, so coordinators route only to compatible workers.
    pub version: String,
}

/// Live counters of one worker process.
#[derive(Debug, Default)]
pub struct WorkerStats {
    tasks_received: AtomicU64,
}

impl WorkerStats {
    /// Plan fragments (distributed tasks) this worker has accepted since it started.
    pub fn tasks_received(&self) -> u64 {
        self.tasks_received.load(Ordering::Relaxed)
    }
}

/// Builds the worker service: every fragment gets a session with SQE's codec, and all
/// fragments share one runtime whose memory pool enforces `memory_limit`.
pub fn build_worker(
    settings: &WorkerSettings,
) -> Result<(Worker, Arc<WorkerStats>), DataFusionError> {
    let mut runtime = RuntimeEnvBuilder::new();
    if let Some(limit) = settings.memory_limit {
        runtime = runtime.with_memory_limit(limit, 1.0);
    }
    let runtime = runtime.build_arc()?;
    let codec = SqeCodec::new(settings.storage_props.clone());
    let mut worker = Worker::from_session_builder(move |ctx: WorkerQueryContext| {
        let codec = codec.clone();
        async move { Ok(ctx.builder.with_distributed_user_codec(codec).build()) }
    })
    .with_runtime_env(runtime)
    .with_version(settings.version.clone());
    let stats = Arc::new(WorkerStats::default());
    let counted = Arc::clone(&stats);
    worker.add_on_plan_hook(move |plan| {
        counted.tasks_received.fetch_add(1, Ordering::Relaxed);
        plan
    });
    Ok((worker, stats))
}

/// Serves `worker` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    worker: Worker,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), tonic::transport::Error> {
    tonic::transport::Server::builder()
        .add_service(worker.into_worker_server())
        .serve_with_incoming_shutdown(TcpListenerStream::new(listener), shutdown)
        .await
}
