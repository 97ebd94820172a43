//! How far each running distributed query has got. Every worker serves
//! datafusion-distributed's observability service, which lists the tasks it holds with their
//! completed and total partitions; the [`ProgressPoller`] asks each worker that runs a task of
//! a running query (one call per worker serves all its queries) and hands the answers to the
//! queries' [`TaskLedger`](super::TaskLedger)s, which keep the furthest each task got.
//!
//! A partition is Trino's split: a stage of `t` tasks of `p` partitions has `t * p` splits.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use url::Url;
use uuid::Uuid;

use crate::history::{QueryHistory, QueryState};

/// Longest one worker may take to answer before its tasks keep their last known progress.
const POLL_TIMEOUT: Duration = Duration::from_secs(2);

/// What a worker reports of one task it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskProgressReport {
    pub query_id: Uuid,
    pub stage: usize,
    pub task: usize,
    pub total_partitions: u64,
    pub completed_partitions: u64,
    /// Rows the task's head has produced so far.
    pub output_rows: u64,
}

/// How the coordinator asks a worker for the progress of the tasks it holds.
#[async_trait]
pub trait TaskProgressSource: Send + Sync {
    async fn task_progress(&self, worker: &Url) -> Result<Vec<TaskProgressReport>, String>;
}

/// The furthest one task has been seen to get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSplits {
    pub total: u64,
    pub completed: u64,
    pub output_rows: u64,
    /// Its worker no longer holds it: every partition was read.
    pub finished: bool,
}

impl From<&TaskProgressReport> for TaskSplits {
    fn from(report: &TaskProgressReport) -> Self {
        Self {
            total: report.total_partitions,
            completed: report.completed_partitions.min(report.total_partitions),
            output_rows: report.output_rows,
            finished: false,
        }
    }
}

impl TaskSplits {
    /// A task that finished before any answer listed it, with the partitions the plan gave it.
    pub(super) fn finished(partitions: u64) -> Self {
        Self {
            total: partitions,
            completed: partitions,
            output_rows: 0,
            finished: true,
        }
    }

    /// A later report of the same task: counts only grow.
    pub(super) fn update(&mut self, report: &TaskProgressReport) {
        self.total = self.total.max(report.total_partitions);
        self.completed = self
            .completed
            .max(report.completed_partitions)
            .min(self.total);
        self.output_rows = self.output_rows.max(report.output_rows);
    }

    /// The worker no longer holds the task: all its partitions were read.
    pub(super) fn finish(&mut self) {
        self.completed = self.total;
        self.finished = true;
    }
}

/// One stage's splits, as Trino counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StageProgress {
    pub stage: usize,
    /// The stage it feeds; `None`: the coordinator's head stage.
    pub parent: Option<usize>,
    pub tasks: usize,
    /// Tasks whose every partition has been read.
    pub finished_tasks: usize,
    pub total_splits: u64,
    /// Splits of tasks no worker has reported yet.
    pub queued_splits: u64,
    pub running_splits: u64,
    pub completed_splits: u64,
    /// Rows the stage's tasks have produced so far.
    pub output_rows: u64,
}

impl StageProgress {
    pub(super) fn add_task(&mut self, sample: &TaskSplits) {
        self.total_splits += sample.total;
        self.completed_splits += sample.completed;
        self.running_splits += sample.total - sample.completed;
        self.output_rows += sample.output_rows;
        if sample.finished || sample.completed == sample.total {
            self.finished_tasks += 1;
        }
    }

    /// A task not reported yet, with the partitions the plan gives it.
    pub(super) fn add_unseen_task(&mut self, partitions: u64) {
        self.total_splits += partitions;
        self.queued_splits += partitions;
    }

    pub fn done(&self) -> bool {
        self.finished_tasks == self.tasks
    }
}

/// How far a query's distributed stages have got.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryProgress {
    pub stages: Vec<StageProgress>,
    /// Each task reported so far, by (stage, task).
    pub tasks: HashMap<(usize, usize), TaskSplits>,
    /// Completed splits in percent of all, never lower than a value reported before.
    pub percentage: f64,
}

impl QueryProgress {
    /// What is known of task `task` of stage `stage`.
    pub fn task(&self, stage: usize, task: usize) -> Option<&TaskSplits> {
        self.tasks.get(&(stage, task))
    }

    fn sum(&self, f: impl Fn(&StageProgress) -> u64) -> u64 {
        self.stages.iter().map(f).sum()
    }

    pub fn total_splits(&self) -> u64 {
        self.sum(|s| s.total_splits)
    }

    pub fn queued_splits(&self) -> u64 {
        self.sum(|s| s.queued_splits)
    }

    pub fn running_splits(&self) -> u64 {
        self.sum(|s| s.running_splits)
    }

    pub fn completed_splits(&self) -> u64 {
        self.sum(|s| s.completed_splits)
    }

    /// The percentage while there are splits to measure; `None` when nothing is measured (a
    /// plan the coordinator runs alone, or one not yet routed).
    pub fn measured_percentage(&self) -> Option<f64> {
        (self.total_splits() > 0).then_some(self.percentage)
    }

    /// What a query in `state` shows: 100 once it has finished, else the measured percentage.
    pub fn percentage_for(&self, state: QueryState) -> Option<f64> {
        if state == QueryState::Finished {
            return Some(100.0);
        }
        self.measured_percentage()
    }

    /// Completed splits in percent of all; 0 for a query without distributed stages.
    pub(super) fn computed_percentage(&self) -> f64 {
        let total = self.total_splits();
        if total == 0 {
            return 0.0;
        }
        100.0 * self.completed_splits() as f64 / total as f64
    }
}

/// A task's state and its (total, completed) splits, given its query's state and what its
/// worker reported: the query's state once that has ended (a finished query's tasks all
/// completed), else `PLANNED` until its worker lists it, `RUNNING`, then `FINISHED`.
pub fn task_state(
    query: QueryState,
    splits: Option<&TaskSplits>,
) -> (&'static str, Option<(u64, u64)>) {
    match (query, splits) {
        (QueryState::Finished, Some(s)) => ("FINISHED", Some((s.total, s.total))),
        (QueryState::Running, Some(s)) if s.finished => ("FINISHED", Some((s.total, s.total))),
        (QueryState::Running, Some(s)) => ("RUNNING", Some((s.total, s.completed))),
        (QueryState::Running, None) => ("PLANNED", None),
        (state, s) => (state.name(), s.map(|s| (s.total, s.completed))),
    }
}

/// Asks the workers of running distributed queries how far their tasks have got, every
/// `interval`, until the history it serves is dropped.
pub struct ProgressPoller {
    history: Weak<QueryHistory>,
    source: Arc<dyn TaskProgressSource>,
}

impl ProgressPoller {
    pub fn new(history: &Arc<QueryHistory>, source: Arc<dyn TaskProgressSource>) -> Self {
        Self {
            history: Arc::downgrade(history),
            source,
        }
    }

    /// Polls in a task of its own on the current runtime.
    pub fn spawn(self, interval: Duration) {
        sqe_layers::task::spawn(async move {
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if !self.poll_once().await {
                    return;
                }
            }
        });
    }

    /// One round: every worker running a task of a running query is asked once. `false` once
    /// the history is gone.
    pub async fn poll_once(&self) -> bool {
        let Some(history) = self.history.upgrade() else {
            return false;
        };
        let ledgers: Vec<_> = history
            .records()
            .into_iter()
            .filter(|record| record.state() == QueryState::Running)
            .filter_map(|record| record.tasks().cloned())
            .collect();
        drop(history);
        let mut by_worker: HashMap<Url, Vec<_>> = HashMap::new();
        for ledger in &ledgers {
            if let Some((_, workers)) = ledger.distributed_workers() {
                for worker in workers {
                    by_worker
                        .entry(worker)
                        .or_default()
                        .push(Arc::clone(ledger));
                }
            }
        }
        let calls = by_worker.into_iter().map(|(worker, ledgers)| async move {
            match tokio::time::timeout(POLL_TIMEOUT, self.source.task_progress(&worker)).await {
                Ok(Ok(reports)) => {
                    for ledger in ledgers {
                        ledger.observe(&worker, &reports);
                    }
                }
                // An unanswered poll leaves the tasks as last seen: their absence says nothing.
                Ok(Err(error)) => tracing::debug!(%worker, %error, "task progress unavailable"),
                Err(_) => tracing::debug!(%worker, "task progress timed out"),
            }
        });
        futures::future::join_all(calls).await;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(completed: u64, total: u64) -> TaskProgressReport {
        TaskProgressReport {
            query_id: Uuid::nil(),
            stage: 1,
            task: 0,
            total_partitions: total,
            completed_partitions: completed,
            output_rows: completed * 10,
        }
    }

    #[test]
    fn a_sample_only_grows_and_a_finished_task_is_complete() {
        let mut sample = TaskSplits::from(&report(2, 4));
        sample.update(&report(1, 4));
        assert_eq!((sample.completed, sample.output_rows), (2, 20));
        sample.update(&report(3, 4));
        assert_eq!(sample.completed, 3);
        sample.finish();
        assert_eq!(sample.completed, 4);
        assert!(sample.finished);
    }

    #[test]
    fn splits_add_up_to_the_total() {
        let mut stage = StageProgress {
            tasks: 3,
            ..StageProgress::default()
        };
        stage.add_task(&TaskSplits::from(&report(1, 4)));
        stage.add_task(&TaskSplits::from(&report(4, 4)));
        stage.add_unseen_task(4);
        assert_eq!(
            (
                stage.total_splits,
                stage.queued_splits,
                stage.running_splits,
                stage.completed_splits
            ),
            (12, 4, 3, 5)
        );
        assert_eq!(stage.finished_tasks, 1);
        assert!(!stage.done());
        let progress = QueryProgress {
            stages: vec![stage],
            ..QueryProgress::default()
        };
        assert!((progress.computed_percentage() - 500.0 / 12.0).abs() < 1e-9);
    }
}
