//! A dedicated tokio runtime for running plans. DataFusion operators can poll for seconds
//! without yielding (a nested-loop join over large inputs); on the runtime that serves client
//! requests that would stall every other query's pages and even `/v1/info`. Plans run here,
//! on threads of their own that the OS schedules fairly against the serving threads.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{ExecutionPlan, execute_stream};
use futures::StreamExt;
use tokio::runtime::{Handle, Runtime};

/// A multi-thread runtime whose threads are named `<name>-<n>`.
#[derive(Debug)]
pub struct QueryRuntime {
    runtime: Option<Runtime>,
    handle: Handle,
}

impl QueryRuntime {
    /// `threads` = 0 means one per core.
    pub fn new(name: &str, threads: usize) -> std::io::Result<Arc<Self>> {
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(1, usize::from)
        } else {
            threads
        };
        let counter = AtomicU64::new(0);
        let prefix = name.to_string();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name_fn(move || format!("{prefix}-{}", counter.fetch_add(1, Ordering::Relaxed)))
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        Ok(Arc::new(Self {
            runtime: Some(runtime),
            handle,
        }))
    }

    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Runs `plan` on this runtime and streams what it produces. Dropping the stream aborts
    /// the plan (and with it its tasks on other nodes).
    pub fn execute(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        task_ctx: Arc<TaskContext>,
    ) -> SendableRecordBatchStream {
        let schema = plan.schema();
        let (tx, rx) = tokio::sync::mpsc::channel(2);
        let task = self.handle.spawn(async move {
            let mut stream = match execute_stream(plan, task_ctx) {
                Ok(stream) => stream,
                Err(e) => {
                    let _ = tx.send(Err(e)).await;
                    return;
                }
            };
            while let Some(batch) = stream.next().await {
                if tx.send(batch).await.is_err() {
                    break;
                }
            }
        });
        let abort = AbortOnDrop(task.abort_handle());
        let batches = tokio_stream::wrappers::ReceiverStream::new(rx).map(move |batch| {
            // Owned by the stream: dropping the stream drops it, which aborts the plan.
            let _ = &abort;
            batch
        });
        Box::pin(RecordBatchStreamAdapter::new(schema, batches))
    }
}

impl Drop for QueryRuntime {
    fn drop(&mut self) {
        // Dropping a runtime blocks; from inside another runtime that panics.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionContext;

    #[tokio::test]
    async fn plans_run_on_the_query_threads_and_stop_when_dropped() -> datafusion::error::Result<()>
    {
        let runtime = QueryRuntime::new("sqe-test-query", 1)
            .map_err(datafusion::error::DataFusionError::IoError)?;
        let ctx = SessionContext::new();
        let plan = ctx
            .sql("SELECT count(*) FROM range(1000)")
            .await?
            .create_physical_plan()
            .await?;
        let batches: Vec<_> = runtime
            .execute(plan, ctx.task_ctx())
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect::<datafusion::error::Result<_>>()?;
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
        // The runtime can be let go of from inside another runtime.
        drop(runtime);
        Ok(())
    }
}
