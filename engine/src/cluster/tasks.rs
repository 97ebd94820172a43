//! Which worker ran which task of a distributed query, and what each task produced.
//!
//! A statement's session carries a [`TaskLedger`]; the [`TaskRouter`] (a datafusion-distributed
//! task estimator that only routes) assigns each stage's tasks to workers round-robin and writes
//! the assignment into it. When the query ends, the per-task metrics the workers sent back are
//! read from the plan once, and the plan is let go.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;
use std::time::Duration;

use datafusion::error::Result as DfResult;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::metrics::MetricValue;
use datafusion_distributed::{
    DISTRIBUTED_DATAFUSION_TASK_ID_LABEL, DistributedExec, DistributedMetricsFormat,
    NetworkBoundaryExt, Stage, TaskEstimation, TaskEstimator, TaskRoutingContext,
    rewrite_distributed_plan_with_metrics,
};
use url::Url;

/// How long a finished query waits for its workers' task metrics.
const METRICS_WAIT: Duration = Duration::from_secs(5);

/// Names of the nodes where a stage ends (their child is the head of the stage below). By
/// name: after the metrics rewrite each node is wrapped in the library's private wrapper, which
/// keeps the name but hides the type `is_network_boundary` looks for.
const BOUNDARIES: [&str; 3] = [
    "NetworkShuffleExec",
    "NetworkCoalesceExec",
    "NetworkBroadcastExec",
];

/// One stage of a distributed plan: its number and the worker of each task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageTasks {
    pub stage: usize,
    pub workers: Vec<Url>,
}

/// What one task did, from the metrics its worker reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskMetrics {
    pub input_rows: u64,
    pub output_rows: u64,
    /// CPU time its operators spent computing.
    pub cpu_ms: u64,
    /// Bytes its scans read from storage.
    pub bytes_scanned: u64,
}

/// A task as `system.runtime.tasks` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRow {
    pub stage: usize,
    pub task: usize,
    pub worker: Url,
    pub metrics: Option<TaskMetrics>,
}

#[derive(Debug, Default)]
struct Ledger {
    /// Stage number of each stage head, by the head's address (known before routing).
    stage_of_head: HashMap<usize, usize>,
    /// Stage numbers in the plan's pre-order, the order metrics are read back in.
    stage_order: Vec<usize>,
    /// Stage numbers bottom-up (post-order), the order stages are routed in.
    routing_order: Vec<usize>,
    routed: Vec<StageTasks>,
    plan: Option<Arc<dyn ExecutionPlan>>,
    metrics: HashMap<(usize, usize), TaskMetrics>,
    /// Bytes read by scans on the coordinator (a plan that did not run distributed, or
    /// the coordinator's own stage); `None` until the metrics are read.
    coordinator_bytes_scanned: Option<u64>,
}

/// The stages and tasks of one statement's plan (none when it runs on the coordinator alone),
/// and what they read.
#[derive(Debug, Default)]
pub struct TaskLedger {
    inner: Mutex<Ledger>,
}

fn address(plan: &Arc<dyn ExecutionPlan>) -> usize {
    Arc::as_ptr(plan) as *const () as usize
}

impl TaskLedger {
    /// Learns the stages of `plan` (none unless it is a `DistributedExec`) before it runs.
    pub fn set_plan(&self, plan: &Arc<dyn ExecutionPlan>) {
        let mut stages = StageWalk::default();
        stages.visit(plan);
        {
            let mut ledger = self.inner.lock();
            ledger.stage_of_head = stages.heads;
            ledger.stage_order = stages.pre_order;
            ledger.routing_order = stages.post_order;
            ledger.plan = Some(Arc::clone(plan));
        }
    }

    fn record_routing(&self, head: &Arc<dyn ExecutionPlan>, workers: &[Url]) {
        {
            let mut ledger = self.inner.lock();
            // The library routes stages bottom-up, rebuilding heads above the first level, so
            // a head found by address is certain and the position in that order otherwise.
            let position = ledger.routed.len();
            let stage = ledger
                .stage_of_head
                .get(&address(head))
                .or_else(|| ledger.routing_order.get(position))
                .copied()
                .unwrap_or(position + 1);
            ledger.routed.push(StageTasks {
                stage,
                workers: workers.to_vec(),
            });
        }
    }

    /// How many tasks have been routed so far.
    pub fn task_count(&self) -> usize {
        self.inner
            .lock()
            .routed
            .iter()
            .map(|s| s.workers.len())
            .sum()
    }

    /// Every task routed so far, by stage and task number.
    pub fn tasks(&self) -> Vec<TaskRow> {
        let ledger = self.inner.lock();
        let mut rows: Vec<TaskRow> = ledger
            .routed
            .iter()
            .flat_map(|stage| {
                stage
                    .workers
                    .iter()
                    .enumerate()
                    .map(|(task, worker)| TaskRow {
                        stage: stage.stage,
                        task,
                        worker: worker.clone(),
                        metrics: ledger.metrics.get(&(stage.stage, task)).copied(),
                    })
            })
            .collect();
        rows.sort_by_key(|r| (r.stage, r.task));
        rows
    }

    /// Reads the task metrics of the ended query (waiting a little for late workers), then
    /// drops the plan.
    pub async fn collect_metrics(&self) {
        let plan = self.inner.lock().plan.take();
        let Some(plan) = plan else { return };
        if !plan.is::<DistributedExec>() {
            let bytes = scanned_bytes(&plan);
            {
                let mut ledger = self.inner.lock();
                ledger.coordinator_bytes_scanned = Some(bytes);
            }
            return;
        }
        let rewritten = tokio::time::timeout(
            METRICS_WAIT,
            rewrite_distributed_plan_with_metrics(plan, DistributedMetricsFormat::PerTask),
        )
        .await;
        let Ok(Ok(plan)) = rewritten else {
            tracing::debug!("task metrics incomplete: not every task reported");
            return;
        };
        {
            let mut ledger = self.inner.lock();
            let order = ledger.stage_order.clone();
            let mut reader = MetricsReader {
                order: &order,
                next: 0,
                metrics: HashMap::new(),
                coordinator_bytes: 0,
            };
            reader.visit(&plan, None);
            ledger.metrics = reader.metrics;
            ledger.coordinator_bytes_scanned = Some(reader.coordinator_bytes);
        }
    }

    /// Bytes the statement's scans read, on the workers and the coordinator; `None` until
    /// its metrics have been read (after it ended).
    pub fn bytes_scanned(&self) -> Option<u64> {
        let ledger = self.inner.lock();
        let coordinator = ledger.coordinator_bytes_scanned?;
        Some(
            coordinator
                + ledger
                    .metrics
                    .values()
                    .map(|m| m.bytes_scanned)
                    .sum::<u64>(),
        )
    }
}

fn is_bytes_scanned(value: &MetricValue) -> bool {
    matches!(value, MetricValue::Gauge { name, .. } if name == "bytes_scanned")
}

/// The `bytes_scanned` a node itself reports.
fn own_bytes_scanned(node: &Arc<dyn ExecutionPlan>) -> u64 {
    node.metrics()
        .iter()
        .flat_map(|m| m.iter())
        .filter(|m| is_bytes_scanned(m.value()))
        .map(|m| m.value().as_usize() as u64)
        .sum()
}

/// The `bytes_scanned` of every node of a plan that ran in this process.
fn scanned_bytes(plan: &Arc<dyn ExecutionPlan>) -> u64 {
    own_bytes_scanned(plan) + plan.children().into_iter().map(scanned_bytes).sum::<u64>()
}

/// The stages of a plan about to run, found through its network boundaries.
#[derive(Default)]
struct StageWalk {
    heads: HashMap<usize, usize>,
    pre_order: Vec<usize>,
    post_order: Vec<usize>,
}

impl StageWalk {
    fn visit(&mut self, node: &Arc<dyn ExecutionPlan>) {
        let stage = match node.as_network_boundary().map(|b| b.input_stage()) {
            Some(Stage::Local(stage)) => {
                self.heads.insert(address(&stage.plan), stage.num);
                self.pre_order.push(stage.num);
                Some(stage.num)
            }
            _ => None,
        };
        for child in node.children() {
            self.visit(child);
        }
        if let Some(stage) = stage {
            self.post_order.push(stage);
        }
    }
}

/// Walks a plan rewritten with per-task metrics; stage heads come in the same pre-order as
/// the stages were found in [`TaskLedger::set_plan`].
struct MetricsReader<'a> {
    order: &'a [usize],
    next: usize,
    metrics: HashMap<(usize, usize), TaskMetrics>,
    /// Scans in the coordinator's own stage.
    coordinator_bytes: u64,
}

impl MetricsReader<'_> {
    fn visit(&mut self, node: &Arc<dyn ExecutionPlan>, stage: Option<usize>) {
        let is_boundary = BOUNDARIES.contains(&node.name());
        if let Some(stage) = stage {
            if is_boundary || node.children().is_empty() {
                // Where the stage's data comes in: a scan or the stage below.
                for (task, rows) in per_task(node, |v| matches!(v, MetricValue::OutputRows(_))) {
                    self.entry(stage, task).input_rows += rows;
                }
            }
            for (task, nanos) in per_task(node, |v| matches!(v, MetricValue::ElapsedCompute(_))) {
                self.entry(stage, task).cpu_ms += nanos / 1_000_000;
            }
            for (task, bytes) in per_task(node, is_bytes_scanned) {
                self.entry(stage, task).bytes_scanned += bytes;
            }
        } else {
            self.coordinator_bytes += own_bytes_scanned(node);
        }
        for child in node.children() {
            if is_boundary {
                let Some(&below) = self.order.get(self.next) else {
                    return;
                };
                self.next += 1;
                for (task, rows) in per_task(child, |v| matches!(v, MetricValue::OutputRows(_))) {
                    self.entry(below, task).output_rows += rows;
                }
                self.visit(child, Some(below));
            } else {
                self.visit(child, stage);
            }
        }
    }

    fn entry(&mut self, stage: usize, task: usize) -> &mut TaskMetrics {
        self.metrics.entry((stage, task)).or_default()
    }
}

/// The node's metrics matching `kind`, summed per task.
fn per_task(
    node: &Arc<dyn ExecutionPlan>,
    kind: impl Fn(&MetricValue) -> bool,
) -> HashMap<usize, u64> {
    let mut sums = HashMap::new();
    for metric in node.metrics().iter().flat_map(|m| m.iter()) {
        if !kind(metric.value()) {
            continue;
        }
        let task = metric
            .labels()
            .iter()
            .find(|l| l.name() == DISTRIBUTED_DATAFUSION_TASK_ID_LABEL)
            .and_then(|l| l.value().parse::<usize>().ok());
        if let Some(task) = task {
            *sums.entry(task).or_default() += metric.value().as_usize() as u64;
        }
    }
    sums
}

/// Routes each stage's tasks to the available workers round-robin, continuing where the
/// previous stage (of any query) stopped, and records the assignment in the statement's
/// [`TaskLedger`]. It estimates nothing: the scan estimator decides task counts.
#[derive(Debug, Default)]
pub struct TaskRouter {
    next: AtomicUsize,
}

impl TaskEstimator for TaskRouter {
    fn task_estimation(
        &self,
        _plan: &Arc<dyn ExecutionPlan>,
        _cfg: &datafusion::config::ConfigOptions,
    ) -> Option<TaskEstimation> {
        None
    }

    fn scale_up_leaf_node(
        &self,
        _plan: &Arc<dyn ExecutionPlan>,
        _task_count: usize,
        _cfg: &datafusion::config::ConfigOptions,
    ) -> DfResult<Option<Arc<dyn ExecutionPlan>>> {
        Ok(None)
    }

    fn route_tasks(&self, routing: &TaskRoutingContext<'_>) -> DfResult<Option<Vec<Url>>> {
        let urls = routing.available_urls;
        if urls.is_empty() {
            return Ok(None);
        }
        let start = self.next.fetch_add(routing.task_count, Ordering::Relaxed);
        let workers: Vec<Url> = (0..routing.task_count)
            .map(|i| urls[(start + i) % urls.len()].clone())
            .collect();
        if let Some(ledger) = routing
            .task_ctx
            .session_config()
            .get_extension::<TaskLedger>()
        {
            ledger.record_routing(routing.plan, &workers);
        }
        Ok(Some(workers))
    }
}
