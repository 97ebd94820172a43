//! Results read at the workers: a query whose last stage runs on workers, and whose
//! coordinator stage would only concatenate that stage's partitions, can have its clients read
//! each partition from the worker that produces it (Flight SQL parallel endpoints), so result
//! bytes never cross the coordinator.
//!
//! The distributed plan's head gets a [`WorkerResultsExec`] in place of its concatenation:
//! when the plan runs, datafusion-distributed sends every stage to its workers as usual, and
//! this node, instead of pulling the last stage, hands out where its partitions are
//! ([`WorkerResults::located`]). The query's stream then yields no rows; it ends when every
//! worker task has ended (datafusion-distributed keeps each task's coordinator channel open
//! until its partitions have been read, to send its metrics), and the rows and bytes the
//! clients read are then counted from those metrics.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::Result as DfResult;
use datafusion::error::DataFusionError;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, Partitioning};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::MetricValue;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use datafusion_distributed::{
    DistributedExec, DistributedMetricsFormat, NetworkBoundaryExt, NetworkCoalesceExec, Stage,
    rewrite_distributed_plan_with_metrics,
};
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::sync::oneshot;
use url::Url;
use uuid::Uuid;

use crate::history::QueryRecord;

/// How long the rows' count waits for the last task's metrics after the query's end.
const METRICS_WAIT: Duration = Duration::from_secs(5);

/// One partition of a query's last stage: where it is read, and its task key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultPartition {
    /// The worker that runs its task (the URL the coordinator dials).
    pub worker: Url,
    /// The distributed plan's query id.
    pub query: Uuid,
    pub stage: u64,
    pub task: u64,
    pub partition: u64,
}

/// Where a query's result partitions are, once it runs.
pub struct WorkerResults {
    located: oneshot::Receiver<Vec<ResultPartition>>,
}

impl WorkerResults {
    /// The partitions, once the plan has been sent to the workers; `None` if the query ended
    /// first (its stream says why).
    pub async fn located(self) -> Option<Vec<ResultPartition>> {
        self.located.await.ok()
    }
}

/// The coordinator's part in a query served at the workers: the plan whose metrics count what
/// the clients read, and the query's record that gets the count.
pub(crate) struct ServedAtWorkers {
    plan: Arc<dyn ExecutionPlan>,
    record: OnceLock<Arc<QueryRecord>>,
}

impl ServedAtWorkers {
    /// The record that gets the rows and bytes the clients read.
    pub(crate) fn report_to(&self, record: Arc<QueryRecord>) {
        let _ = self.record.set(record);
    }

    /// `stream` (the query's, which yields no rows) followed by the count of what the clients
    /// read, once every task has ended.
    pub(crate) fn counted(
        self: Arc<Self>,
        stream: SendableRecordBatchStream,
    ) -> SendableRecordBatchStream {
        let schema = stream.schema();
        let count = futures::stream::once(async move {
            self.count().await;
            None
        })
        .filter_map(std::future::ready);
        Box::pin(RecordBatchStreamAdapter::new(schema, stream.chain(count)))
    }

    async fn count(&self) {
        let Some(record) = self.record.get() else {
            return;
        };
        let rewritten = tokio::time::timeout(
            METRICS_WAIT,
            rewrite_distributed_plan_with_metrics(
                Arc::clone(&self.plan),
                DistributedMetricsFormat::PerTask,
            ),
        )
        .await;
        match rewritten {
            Ok(Ok(plan)) => {
                let (rows, bytes) = last_stage_output(&plan);
                record.add_output(rows, bytes);
            }
            _ => tracing::debug!("the workers' metrics did not all arrive: rows not counted"),
        }
    }
}

/// `plan` (a distributed plan whose stages have been sent) rewritten so that clients read its
/// last stage at the workers, with where they will find its partitions; `None` when the
/// coordinator's stage does more than concatenate the last one (a global sort, a limit, a
/// final aggregate) or its rows are not already in `schema`'s shape (names, types and
/// metadata a client is told in FlightInfo).
pub(crate) fn serve_at_workers(
    plan: &Arc<dyn ExecutionPlan>,
    schema: &SchemaRef,
) -> Option<(Arc<dyn ExecutionPlan>, Arc<ServedAtWorkers>, WorkerResults)> {
    if !plan.is::<DistributedExec>() {
        return None;
    }
    let [head] = plan.children()[..] else {
        return None;
    };
    let gathered = match head.downcast_ref::<CoalescePartitionsExec>() {
        Some(coalesce) if coalesce.fetch().is_none() => Arc::clone(coalesce.input()),
        Some(_) => return None,
        None => Arc::clone(head),
    };
    if !gathered.is::<NetworkCoalesceExec>() || gathered.schema().fields() != schema.fields() {
        return None;
    }
    let (sender, located) = oneshot::channel();
    let head = Arc::new(WorkerResultsExec::new(gathered, sender));
    let rewritten = Arc::clone(plan).with_new_children(vec![head]).ok()?;
    let served = Arc::new(ServedAtWorkers {
        plan: Arc::clone(&rewritten),
        record: OnceLock::new(),
    });
    Some((rewritten, served, WorkerResults { located }))
}

/// Rows and bytes the last stage's tasks produced: their root's output, or the first operator
/// below it that counts its output (a root that passes batches through counts nothing).
fn last_stage_output(plan: &Arc<dyn ExecutionPlan>) -> (u64, u64) {
    let Some(results) = find::<WorkerResultsExec>(plan) else {
        return (0, 0);
    };
    let Some(boundary) = results.children().first().copied() else {
        return (0, 0);
    };
    let mut node = boundary.children().first().copied();
    while let Some(current) = node {
        let (rows, bytes) = output_of(current);
        if let Some(rows) = rows {
            return (rows, bytes);
        }
        node = match current.children()[..] {
            [only] => Some(only),
            _ => None,
        };
    }
    (0, 0)
}

/// The node's output rows (`None` if it does not count them) and bytes, over all its tasks.
fn output_of(node: &Arc<dyn ExecutionPlan>) -> (Option<u64>, u64) {
    let mut rows = None;
    let mut bytes = 0u64;
    for metric in node.metrics().iter().flat_map(|m| m.iter()) {
        match metric.value() {
            MetricValue::OutputRows(count) => {
                *rows.get_or_insert(0) += count.value() as u64;
            }
            MetricValue::OutputBytes(count) => bytes += count.value() as u64,
            _ => {}
        }
    }
    (rows, bytes)
}

fn find<T: ExecutionPlan>(plan: &Arc<dyn ExecutionPlan>) -> Option<&Arc<dyn ExecutionPlan>> {
    if plan.is::<T>() {
        return Some(plan);
    }
    plan.children()
        .into_iter()
        .find_map(|child| find::<T>(child))
}

/// The coordinator's stage of a query served at the workers: where the last stage's
/// partitions are, handed out when the plan runs, instead of their rows.
pub struct WorkerResultsExec {
    input: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
    sender: Arc<Mutex<Option<oneshot::Sender<Vec<ResultPartition>>>>>,
}

impl std::fmt::Debug for WorkerResultsExec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerResultsExec").finish_non_exhaustive()
    }
}

impl WorkerResultsExec {
    fn new(input: Arc<dyn ExecutionPlan>, sender: oneshot::Sender<Vec<ResultPartition>>) -> Self {
        Self::with_sender(input, Arc::new(Mutex::new(Some(sender))))
    }

    fn with_sender(
        input: Arc<dyn ExecutionPlan>,
        sender: Arc<Mutex<Option<oneshot::Sender<Vec<ResultPartition>>>>>,
    ) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(input.schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Self {
            input,
            properties,
            sender,
        }
    }

    /// The last stage's partitions, from its boundary once datafusion-distributed has routed
    /// its tasks (a remote stage).
    fn partitions(&self) -> DfResult<Vec<ResultPartition>> {
        let Some(boundary) = self.input.as_network_boundary() else {
            return Err(DataFusionError::Internal(
                "results at the workers: the last stage has no boundary".into(),
            ));
        };
        let Stage::Remote(stage) = boundary.input_stage() else {
            return Err(DataFusionError::Internal(
                "results at the workers: the last stage was not sent to workers".into(),
            ));
        };
        let tasks = stage.workers.len().max(1);
        let per_task = self.input.properties().partitioning.partition_count() / tasks;
        let mut partitions = Vec::with_capacity(per_task * tasks);
        for (task, worker) in stage.workers.iter().enumerate() {
            for partition in 0..per_task {
                partitions.push(ResultPartition {
                    worker: worker.clone(),
                    query: stage.query_id,
                    stage: stage.num as u64,
                    task: task as u64,
                    partition: partition as u64,
                });
            }
        }
        Ok(partitions)
    }
}

impl DisplayAs for WorkerResultsExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "WorkerResultsExec: clients read the partitions at the workers"
        )
    }
}

impl ExecutionPlan for WorkerResultsExec {
    fn name(&self) -> &str {
        "WorkerResultsExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let [input] = <[_; 1]>::try_from(children)
            .map_err(|_| DataFusionError::Internal("WorkerResultsExec takes one input".into()))?;
        Ok(Arc::new(Self::with_sender(input, Arc::clone(&self.sender))))
    }

    fn execute(
        &self,
        _partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let partitions = self.partitions()?;
        if let Some(sender) = self.sender.lock().take() {
            // A client that went away meanwhile is the query's stream's business.
            let _ = sender.send(partitions);
        }
        EmptyExec::new(self.schema()).execute(0, Arc::new(TaskContext::default()))
    }
}
