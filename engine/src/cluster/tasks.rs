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
use uuid::Uuid;

use super::progress::{QueryProgress, StageProgress, TaskProgressReport, TaskSplits};

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
    /// The distributed query's id, as its workers key its tasks.
    query_id: Option<Uuid>,
    /// The stage each stage feeds, by stage number (`None`: the coordinator's).
    parents: HashMap<usize, Option<usize>>,
    /// Partitions each task of a stage runs, by stage number, from the plan.
    partitions: HashMap<usize, u64>,
    /// The furthest each task (stage, task) has been seen to get on its worker.
    samples: HashMap<(usize, usize), TaskSplits>,
    /// Answers in a row a task never seen was missing from, by (stage, task).
    misses: HashMap<(usize, usize), u32>,
    /// The highest progress reported so far: what a client sees never goes back.
    reported_percentage: f64,
    /// Bytes read by scans on the coordinator (a plan that did not run distributed, or
    /// the coordinator's own stage); `None` until the metrics are read.
    coordinator_bytes_scanned: Option<u64>,
    /// Runs of the query before the current one (`retry_policy = QUERY`).
    retries: u32,
}

impl Ledger {
    /// Every routed task as (stage, task, worker).
    fn routed_tasks(&self) -> impl Iterator<Item = (usize, usize, &Url)> {
        self.routed.iter().flat_map(|stage| {
            stage
                .workers
                .iter()
                .enumerate()
                .map(|(task, worker)| (stage.stage, task, worker))
        })
    }
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
        stages.visit(plan, None);
        {
            let mut ledger = self.inner.lock();
            ledger.stage_of_head = stages.heads;
            ledger.stage_order = stages.pre_order;
            ledger.routing_order = stages.post_order;
            ledger.query_id = stages.query_id;
            ledger.partitions = stages.partitions;
            ledger.parents = stages.parents;
            ledger.plan = Some(Arc::clone(plan));
        }
    }

    /// The query runs again with `plan` (`retry_policy = QUERY`): the failed run's tasks and
    /// what they did are forgotten; the progress a client saw does not go back.
    pub fn retry_with(&self, plan: &Arc<dyn ExecutionPlan>) {
        {
            let mut ledger = self.inner.lock();
            let retries = ledger.retries + 1;
            let reported_percentage = ledger.reported_percentage;
            *ledger = Ledger {
                retries,
                reported_percentage,
                ..Ledger::default()
            };
        }
        self.set_plan(plan);
    }

    /// How many times the query has run: 1, more after retries.
    pub fn attempts(&self) -> u32 {
        self.inner.lock().retries + 1
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

    /// The distributed query's id and the workers its routed tasks run on, while it has any.
    pub(super) fn distributed_workers(&self) -> Option<(Uuid, Vec<Url>)> {
        let ledger = self.inner.lock();
        let query_id = ledger.query_id?;
        let mut workers: Vec<Url> = ledger
            .routed
            .iter()
            .flat_map(|s| s.workers.iter().cloned())
            .collect();
        workers.sort();
        workers.dedup();
        (!workers.is_empty()).then_some((query_id, workers))
    }

    /// Takes in what `worker` reported of the tasks it holds now. A task it ran that is no
    /// longer there has finished (a worker drops a task once its last partition is read).
    pub(super) fn observe(&self, worker: &Url, reports: &[TaskProgressReport]) {
        let mut ledger = self.inner.lock();
        let Some(query_id) = ledger.query_id else {
            return;
        };
        let mine: Vec<(usize, usize)> = ledger
            .routed_tasks()
            .filter(|(_, _, w)| *w == worker)
            .map(|(stage, task, _)| (stage, task))
            .collect();
        for key in mine {
            let report = reports
                .iter()
                .find(|r| r.query_id == query_id && (r.stage, r.task) == key);
            let planned = ledger.partitions.get(&key.0).copied().unwrap_or(1);
            match (report, ledger.samples.get_mut(&key)) {
                (Some(report), Some(sample)) => sample.update(report),
                (Some(report), None) => {
                    ledger.samples.insert(key, TaskSplits::from(report));
                }
                (None, Some(sample)) => sample.finish(),
                (None, None) => {
                    // Every task's plan is sent when the query starts: one missing from two
                    // answers in a row finished between polls (a plan still on its way is
                    // missing from one at most).
                    let misses = ledger.misses.entry(key).or_default();
                    *misses += 1;
                    if *misses >= 2 {
                        ledger.samples.insert(key, TaskSplits::finished(planned));
                    }
                }
            }
        }
    }

    /// How far the query's distributed stages have got.
    pub fn progress(&self) -> QueryProgress {
        let mut ledger = self.inner.lock();
        let mut stages: Vec<StageProgress> = ledger
            .routed
            .iter()
            .map(|routed| {
                let planned = ledger.partitions.get(&routed.stage).copied().unwrap_or(1);
                let mut stage = StageProgress {
                    stage: routed.stage,
                    parent: ledger.parents.get(&routed.stage).copied().flatten(),
                    tasks: routed.workers.len(),
                    ..StageProgress::default()
                };
                for task in 0..routed.workers.len() {
                    match ledger.samples.get(&(routed.stage, task)) {
                        Some(sample) => stage.add_task(sample),
                        None => stage.add_unseen_task(planned),
                    }
                }
                stage
            })
            .collect();
        stages.sort_by_key(|s| s.stage);
        let mut progress = QueryProgress {
            stages,
            tasks: ledger.samples.clone(),
            percentage: 0.0,
        };
        let percentage = progress
            .computed_percentage()
            .max(ledger.reported_percentage);
        ledger.reported_percentage = percentage;
        progress.percentage = percentage;
        progress
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
            .routed_tasks()
            .map(|(stage, task, worker)| TaskRow {
                stage,
                task,
                worker: worker.clone(),
                metrics: ledger.metrics.get(&(stage, task)).copied(),
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
    query_id: Option<Uuid>,
    parents: HashMap<usize, Option<usize>>,
    partitions: HashMap<usize, u64>,
    heads: HashMap<usize, usize>,
    pre_order: Vec<usize>,
    post_order: Vec<usize>,
}

impl StageWalk {
    /// Visits `node`, which runs in stage `within` (`None`: the coordinator's head stage).
    fn visit(&mut self, node: &Arc<dyn ExecutionPlan>, within: Option<usize>) {
        let stage = match node.as_network_boundary().map(|b| b.input_stage()) {
            Some(Stage::Local(stage)) => {
                self.query_id = Some(stage.query_id);
                self.parents.insert(stage.num, within);
                let partitions = stage.plan.properties().partitioning.partition_count();
                self.partitions.insert(stage.num, partitions as u64);
                self.heads.insert(address(&stage.plan), stage.num);
                self.pre_order.push(stage.num);
                Some(stage.num)
            }
            _ => None,
        };
        for child in node.children() {
            self.visit(child, stage.or(within));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn url(port: u16) -> Url {
        Url::parse(&format!("http://127.0.0.1:{port}")).expect("a test URL")
    }

    /// Two stages of two tasks of 4 partitions, spread over two workers.
    fn ledger(query_id: Uuid) -> TaskLedger {
        let ledger = TaskLedger::default();
        {
            let mut inner = ledger.inner.lock();
            inner.query_id = Some(query_id);
            inner.partitions = HashMap::from([(1, 4), (2, 4)]);
            inner.parents = HashMap::from([(1, Some(2)), (2, None)]);
            inner.routed = vec![
                StageTasks {
                    stage: 1,
                    workers: vec![url(1), url(2)],
                },
                StageTasks {
                    stage: 2,
                    workers: vec![url(2), url(1)],
                },
            ];
        }
        ledger
    }

    fn report(query_id: Uuid, stage: usize, task: usize, completed: u64) -> TaskProgressReport {
        TaskProgressReport {
            query_id,
            stage,
            task,
            total_partitions: 4,
            completed_partitions: completed,
            output_rows: completed * 100,
        }
    }

    #[test]
    fn progress_counts_reported_missing_and_finished_tasks() {
        let id = Uuid::new_v4();
        let other = Uuid::new_v4();
        let ledger = ledger(id);
        assert_eq!(
            ledger.distributed_workers(),
            Some((id, vec![url(1), url(2)]))
        );
        let progress = ledger.progress();
        assert_eq!(
            (progress.total_splits(), progress.queued_splits()),
            (16, 16)
        );
        assert_eq!(progress.percentage, 0.0);

        // Worker 1 holds stage 1 task 0 and stage 2 task 1; another query's task is ignored.
        ledger.observe(
            &url(1),
            &[
                report(id, 1, 0, 2),
                report(id, 2, 1, 0),
                report(other, 1, 1, 4),
            ],
        );
        // Worker 2 lists neither of its tasks (stage 1 task 1 finished before it was seen).
        ledger.observe(&url(2), &[]);
        let progress = ledger.progress();
        assert_eq!(progress.completed_splits(), 2);
        assert_eq!(progress.queued_splits(), 8, "missing once is not finished");

        ledger.observe(&url(2), &[report(id, 2, 0, 1)]);
        let progress = ledger.progress();
        assert_eq!(progress.completed_splits(), 2 + 4 + 1);
        assert_eq!(progress.queued_splits(), 0);
        assert_eq!(progress.stages[0].finished_tasks, 1);

        // Stage 1 task 0 is gone from worker 1: finished; its stage is done.
        ledger.observe(&url(1), &[report(id, 2, 1, 3)]);
        let progress = ledger.progress();
        assert!(progress.stages[0].done());
        assert_eq!(progress.stages[0].parent, Some(2));
        assert_eq!(progress.stages[1].completed_splits, 4);
        assert_eq!(progress.completed_splits(), 12);
        assert!((progress.percentage - 75.0).abs() < 1e-9);

        // A late, lower answer does not move anything back.
        ledger.observe(&url(1), &[report(id, 2, 1, 1)]);
        assert!((ledger.progress().percentage - 75.0).abs() < 1e-9);
    }
}
