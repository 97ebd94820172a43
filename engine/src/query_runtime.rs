//! A dedicated tokio runtime for running plans. DataFusion operators can poll for seconds
//! without yielding (a nested-loop join over large inputs); on the runtime that serves client
//! requests that would stall every other query's pages and even `/v1/info`. Plans run here,
//! on threads of their own that the OS schedules fairly against the serving threads.

use std::sync::Arc;

use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{ExecutionPlan, execute_stream};
use futures::StreamExt;
use sqe_layers::dedicated_runtime::DedicatedRuntime;
use tokio::runtime::Handle;

/// A multi-thread runtime whose threads are named `<name>-<n>`.
#[derive(Debug)]
pub struct QueryRuntime {
    runtime: DedicatedRuntime,
}

impl QueryRuntime {
    /// `threads` = 0 means one per core.
    pub fn new(name: &str, threads: usize) -> std::io::Result<Arc<Self>> {
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(1, usize::from)
        } else {
            threads
        };
        Ok(Arc::new(Self {
            runtime: DedicatedRuntime::new(&format!("{name}-"), threads)?,
        }))
    }

    pub fn handle(&self) -> &Handle {
        self.runtime.handle()
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
        // The plan runs in the caller's span (a query's): its RPCs and commits join the trace.
        let span = tracing::Span::current();
        let task = self.handle().spawn(tracing::Instrument::instrument(
            async move {
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
            },
            span,
        ));
        let abort = AbortOnDrop(task.abort_handle());
        let batches = tokio_stream::wrappers::ReceiverStream::new(rx).map(move |batch| {
            // Owned by the stream: dropping the stream drops it, which aborts the plan.
            let _ = &abort;
            batch
        });
        Box::pin(RecordBatchStreamAdapter::new(schema, batches))
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
