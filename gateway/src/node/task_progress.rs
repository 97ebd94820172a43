//! The coordinator's source of task progress: each worker's observability service, called
//! through the same layered channel as its tasks.

use async_trait::async_trait;
use sqe_engine::cluster::{TaskProgressReport, TaskProgressSource};
use sqe_worker::channel::SqeChannelResolver;
use url::Url;
use uuid::Uuid;

/// Asks workers for the progress of the tasks they hold.
pub(super) struct WorkerTaskProgress(pub SqeChannelResolver);

#[async_trait]
impl TaskProgressSource for WorkerTaskProgress {
    async fn task_progress(&self, worker: &Url) -> Result<Vec<TaskProgressReport>, String> {
        let response = self
            .0
            .task_progress(worker)
            .await
            .map_err(|status| status.message().to_string())?;
        Ok(response
            .tasks
            .into_iter()
            .filter_map(|task| {
                let key = task.task_key?;
                Some(TaskProgressReport {
                    query_id: Uuid::from_slice(&key.query_id).ok()?,
                    stage: usize::try_from(key.stage_id).ok()?,
                    task: usize::try_from(key.task_number).ok()?,
                    total_partitions: task.total_partitions,
                    completed_partitions: task.completed_partitions,
                    output_rows: task.output_rows,
                })
            })
            .collect())
    }
}
