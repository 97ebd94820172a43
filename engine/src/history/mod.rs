//! Every statement a client runs, from either endpoint: what `system.runtime.queries` and
//! `system.runtime.tasks` show, and what `kill_query` cancels.
//!
//! An endpoint [`QueryHistory::begin`]s a query when it receives it and drives its
//! [`QueryTracker`] through planning, running and its end. Finished queries are kept up to
//! `max_entries` and for `ttl`; running ones are never dropped.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

mod control;
mod stats;

use chrono::{DateTime, Utc};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream};
use futures::Stream;
use parking_lot::Mutex;
use tokio_util::sync::WaitForCancellationFutureOwned;

pub use self::control::{CancelReason, QueryControl};
pub use self::stats::{EndpointStats, Histogram, LATENCY_BUCKETS, QueryStats};
use crate::cache::CacheUse;
use crate::cluster::TaskLedger;
use crate::error::Error;
use crate::memory::QueryMemory;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// `[query_history]`: how much of the past to keep.
#[derive(Debug, Clone, Copy)]
pub struct HistorySettings {
    /// Finished queries kept at most.
    pub max_entries: usize,
    /// How long a finished query is kept.
    pub ttl: Duration,
}

impl Default for HistorySettings {
    fn default() -> Self {
        Self {
            max_entries: 10_000,
            ttl: Duration::from_secs(30 * 60),
        }
    }
}

/// Where a query is in its life; the last three are final.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryState {
    /// Waiting for a slot (admission control).
    Queued,
    /// Admitted, being planned.
    Planning,
    Running,
    Finished,
    Failed,
    Canceled,
}

impl QueryState {
    pub fn name(self) -> &'static str {
        match self {
            QueryState::Queued => "QUEUED",
            QueryState::Planning => "PLANNING",
            QueryState::Running => "RUNNING",
            QueryState::Finished => "FINISHED",
            QueryState::Failed => "FAILED",
            QueryState::Canceled => "CANCELED",
        }
    }

    pub fn is_final(self) -> bool {
        matches!(
            self,
            QueryState::Finished | QueryState::Failed | QueryState::Canceled
        )
    }
}

/// What an endpoint knows of a query when it receives it.
#[derive(Debug, Clone, Default)]
pub struct QueryStart {
    /// The endpoint's id for it (Trino's query id); `None` draws one from the history.
    pub id: Option<String>,
    pub endpoint: &'static str,
    pub user: String,
    pub source: Option<String>,
    pub sql: String,
    pub catalog: Option<String>,
    pub schema: Option<String>,
    /// The caller's W3C `traceparent`, if it sent one.
    pub traceparent: Option<String>,
}

/// One query's record.
pub struct QueryRecord {
    pub id: String,
    pub start: QueryStart,
    pub created: DateTime<Utc>,
    created_at: Instant,
    progress: Mutex<Progress>,
    /// How it is stopped, whoever stops it.
    control: QueryControl,
    /// The stages and task assignment of its plan, once it runs.
    tasks: OnceLock<Arc<TaskLedger>>,
    /// Its share of the coordinator's memory pool, once it runs.
    memory: OnceLock<Arc<QueryMemory>>,
    stats: Arc<QueryStats>,
    trace_id: Option<String>,
}

impl std::fmt::Debug for QueryRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryRecord")
            .field("id", &self.id)
            .field("start", &self.start)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Default)]
struct Progress {
    state: Option<QueryState>,
    /// Admitted: planning started.
    admitted: Option<Instant>,
    /// Planning done, execution started.
    started: Option<(DateTime<Utc>, Instant)>,
    ended: Option<(DateTime<Utc>, Instant)>,
    output_rows: u64,
    output_bytes: u64,
    error: Option<(&'static str, String)>,
    cache: Option<CacheUse>,
}

impl Progress {
    /// When its wait for admission ended: admitted, or ended without ever being admitted.
    fn queued_until(&self) -> Option<Instant> {
        self.admitted.or(self.ended.map(|(_, at)| at))
    }
}

/// A query's record as `system.runtime.queries` shows it.
#[derive(Debug, Clone)]
pub struct QuerySnapshot {
    pub id: String,
    pub state: QueryState,
    /// Who sent it, from where, and what.
    pub start: QueryStart,
    pub created: DateTime<Utc>,
    pub started: Option<DateTime<Utc>>,
    pub ended: Option<DateTime<Utc>>,
    /// Until it was admitted (or ended, or now, if it never was).
    pub queued_ms: i64,
    /// From admission until it ran; `None` if it was never admitted.
    pub planning_ms: Option<i64>,
    pub execution_ms: Option<i64>,
    pub output_rows: u64,
    /// The W3C trace id of its root span (`None` in a process without a trace layer).
    pub trace_id: Option<String>,
    /// Bytes its scans read (workers and coordinator); `None` until known, after it ended.
    pub bytes_scanned: Option<u64>,
    /// The most coordinator memory it held at once; `None` unless it ran a plan.
    pub peak_memory_bytes: Option<u64>,
    /// What the result cache did (`None`: off, or not a query).
    pub cache: Option<CacheUse>,
    pub error_code: Option<&'static str>,
    pub error_message: Option<String>,
}

impl QueryRecord {
    pub fn state(&self) -> QueryState {
        self.progress.lock().state.unwrap_or(QueryState::Queued)
    }

    /// When it arrived.
    pub fn created_at(&self) -> Instant {
        self.created_at
    }

    /// How long it waited for admission (so far, if it still waits).
    pub fn queued_for(&self) -> Duration {
        self.progress
            .lock()
            .queued_until()
            .unwrap_or_else(Instant::now)
            .duration_since(self.created_at)
    }

    /// How it is stopped.
    pub fn control(&self) -> &QueryControl {
        &self.control
    }

    /// Stops it for `reason` (its error is the reason's) unless it has ended already; whether
    /// this call stopped it.
    pub fn cancel(&self, reason: CancelReason) -> bool {
        let state = match reason {
            CancelReason::TimeLimit { .. } => QueryState::Failed,
            _ => QueryState::Canceled,
        };
        let error = reason.error();
        // A query that has ended is not stopped after the fact: its outcome stands. One that
        // is stopped is so before it counts as ended (whoever waits for its end sees why).
        self.end_then(
            state,
            Some((error.code().name(), error.to_string())),
            || {
                self.control.cancel(reason);
            },
        )
    }

    /// Rows and bytes its clients read elsewhere than through its stream (results read at
    /// the workers).
    pub(crate) fn add_output(&self, rows: u64, bytes: u64) {
        self.update(|p| {
            p.output_rows += rows;
            p.output_bytes += bytes;
        });
    }

    fn update(&self, change: impl FnOnce(&mut Progress)) {
        let mut progress = self.progress.lock();
        if !progress.state.is_some_and(QueryState::is_final) {
            change(&mut progress);
        }
    }

    /// Moves the query to `state` with `change` to its progress, unless it has ended; every
    /// state change of every query goes through here. Whether it moved (entering the state it
    /// is in is no move).
    fn transition(&self, state: QueryState, change: impl FnOnce(&mut Progress)) -> bool {
        let mut moved = false;
        self.update(|p| {
            moved = p.state != Some(state);
            p.state = Some(state);
            change(p);
        });
        if moved {
            self.stats.entered(self.start.endpoint, state);
        }
        moved
    }

    /// Ends the query unless it has ended already; whether this call ended it.
    fn end(&self, state: QueryState, error: Option<(&'static str, String)>) -> bool {
        self.end_then(state, error, || {})
    }

    /// [`Self::end`], running `first` (if it ends it) before its end is announced.
    fn end_then(
        &self,
        state: QueryState,
        error: Option<(&'static str, String)>,
        first: impl FnOnce(),
    ) -> bool {
        let ended = self.transition(state, |p| {
            p.ended = Some((Utc::now(), Instant::now()));
            p.error = error;
        });
        if !ended {
            return false;
        }
        first();
        self.control.end();
        let output = {
            let p = self.progress.lock();
            (p.output_rows, p.output_bytes)
        };
        self.stats.ended(
            self.start.endpoint,
            state,
            self.created_at.elapsed().as_secs_f64(),
            output,
        );
        if let Some(ledger) = self.tasks.get()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            // The workers send their task metrics as their streams end: read them off the
            // client's path.
            let ledger = Arc::clone(ledger);
            sqe_layers::task::spawn_on(&runtime, async move { ledger.collect_metrics().await });
        }
        true
    }

    fn ended_at(&self) -> Option<Instant> {
        self.progress.lock().ended.map(|(_, at)| at)
    }

    pub fn snapshot(&self) -> QuerySnapshot {
        let p = self.progress.lock().clone();
        let ms = |from: Instant, to: Instant| to.duration_since(from).as_millis() as i64;
        let now = Instant::now();
        let started_at = p.started.map(|(_, at)| at);
        let ended_at = p.ended.map(|(_, at)| at);
        QuerySnapshot {
            id: self.id.clone(),
            state: p.state.unwrap_or(QueryState::Queued),
            start: self.start.clone(),
            created: self.created,
            started: p.started.map(|(t, _)| t),
            ended: p.ended.map(|(t, _)| t),
            queued_ms: ms(self.created_at, p.queued_until().unwrap_or(now)),
            planning_ms: p
                .admitted
                .map(|a| ms(a, started_at.or(ended_at).unwrap_or(now))),
            execution_ms: started_at.map(|s| ms(s, ended_at.unwrap_or(now))),
            output_rows: p.output_rows,
            trace_id: self.trace_id.clone(),
            bytes_scanned: self.tasks.get().and_then(|t| t.bytes_scanned()),
            peak_memory_bytes: self.memory.get().map(|m| m.peak() as u64),
            cache: p.cache,
            error_code: p.error.as_ref().map(|(code, _)| *code),
            error_message: p.error.map(|(_, message)| message),
        }
    }

    /// Its share of the coordinator's memory pool, once it runs a plan.
    pub fn memory(&self) -> Option<Arc<QueryMemory>> {
        self.memory.get().cloned()
    }

    /// Its distributed tasks, if it ran distributed.
    pub fn tasks(&self) -> Option<&Arc<TaskLedger>> {
        self.tasks.get()
    }
}

/// The coordinator's queries, recent first when listed.
pub struct QueryHistory {
    settings: HistorySettings,
    stats: Arc<QueryStats>,
    records: Mutex<VecDeque<Arc<QueryRecord>>>,
    sequence: AtomicU64,
    /// Five lower-case letters naming this coordinator run in query ids, as Trino's do.
    run_id: String,
}

impl std::fmt::Debug for QueryHistory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryHistory")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// Who is looking at the history: a user sees (and kills) its own queries, an administrator
/// (`[client_auth] admin_users`) every query, as Trino's system access control has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Viewer {
    pub user: String,
    pub admin: bool,
}

impl Viewer {
    pub fn user(user: impl Into<String>) -> Self {
        Self {
            user: user.into(),
            admin: false,
        }
    }

    pub fn sees(&self, record: &QueryRecord) -> bool {
        self.admin || record.start.user == self.user
    }
}

/// Why `kill_query` did not kill.
#[derive(Debug, PartialEq, Eq)]
pub enum KillError {
    NotFound,
    NotOwner,
    AlreadyEnded(QueryState),
}

impl QueryHistory {
    pub fn new(settings: HistorySettings) -> Arc<Self> {
        let run_id = uuid::Uuid::new_v4()
            .as_bytes()
            .iter()
            .take(5)
            .map(|b| char::from(b'a' + b % 26))
            .collect();
        Arc::new(Self {
            settings,
            stats: Arc::default(),
            records: Mutex::new(VecDeque::new()),
            sequence: AtomicU64::new(0),
            run_id,
        })
    }

    /// A new query id in Trino's shape: `YYYYMMDD_HHMMSS_<sequence>_<run>`.
    pub fn next_id(&self) -> String {
        let n = self.sequence.fetch_add(1, Ordering::Relaxed) % 100_000;
        format!(
            "{}_{n:05}_{}",
            Utc::now().format("%Y%m%d_%H%M%S"),
            self.run_id
        )
    }

    /// Whether `id` has the shape of this run's query ids but another run's suffix: a query
    /// of this coordinator before it restarted (its state is gone with that process).
    pub fn from_an_earlier_run(&self, id: &str) -> bool {
        id.rsplit_once('_').is_some_and(|(head, run)| {
            run != self.run_id
                && run.len() == self.run_id.len()
                && run.bytes().all(|b| b.is_ascii_lowercase())
                && head.len() == "YYYYMMDD_HHMMSS_00000".len()
        })
    }

    /// Records a query received by an endpoint.
    pub fn begin(self: &Arc<Self>, mut start: QueryStart) -> QueryTracker {
        let id = start.id.take().unwrap_or_else(|| self.next_id());
        // The query's root span: its trace continues the caller's, if it sent one.
        let span = tracing::info_span!(
            parent: None,
            "query",
            query_id = %id,
            endpoint = start.endpoint,
            trace_id = tracing::field::Empty
        );
        if let Some(traceparent) = &start.traceparent
            && let Ok(value) = http::HeaderValue::from_str(traceparent)
        {
            let mut headers = http::HeaderMap::new();
            headers.insert("traceparent", value);
            let _ = span.set_parent(sqe_layers::trace::extract_context(&headers));
        }
        let trace_id = sqe_layers::trace::trace_id(&span);
        if let Some(trace_id) = &trace_id {
            span.record("trace_id", trace_id.as_str());
        }
        let record = Arc::new(QueryRecord {
            id,
            start,
            created: Utc::now(),
            created_at: Instant::now(),
            progress: Mutex::new(Progress::default()),
            control: QueryControl::default(),
            tasks: OnceLock::new(),
            memory: OnceLock::new(),
            stats: Arc::clone(&self.stats),
            trace_id,
        });
        record.transition(QueryState::Queued, |_| {});
        {
            let mut records = self.records.lock();
            records.push_back(Arc::clone(&record));
            self.prune(&mut records);
        }
        QueryTracker { record, span }
    }

    /// Drops finished queries past the TTL, then the oldest finished beyond `max_entries`.
    /// Each record is looked at once: a query has ended exactly when it is final.
    fn prune(&self, records: &mut VecDeque<Arc<QueryRecord>>) {
        let ttl = self.settings.ttl;
        let now = Instant::now();
        // Per record: None while running, else whether it is past the TTL.
        let expired: Vec<Option<bool>> = records
            .iter()
            .map(|r| r.ended_at().map(|at| now.duration_since(at) >= ttl))
            .collect();
        let finished = expired.iter().filter(|e| **e == Some(false)).count();
        let mut excess = finished.saturating_sub(self.settings.max_entries);
        let mut expired = expired.into_iter();
        records.retain(|_| match expired.next().flatten() {
            None => true,
            Some(true) => false,
            Some(false) if excess > 0 => {
                excess -= 1;
                false
            }
            Some(false) => true,
        });
    }

    /// Every kept query, newest first.
    /// Totals over every query since the coordinator started (not bounded like the records).
    pub fn stats(&self) -> &Arc<QueryStats> {
        &self.stats
    }

    pub fn records(&self) -> Vec<Arc<QueryRecord>> {
        let mut records = self.records.lock();
        self.prune(&mut records);
        records.iter().rev().cloned().collect()
    }

    /// Tasks of running queries routed to each worker, by URL.
    pub fn running_tasks_per_worker(&self) -> std::collections::HashMap<url::Url, usize> {
        let mut counts = std::collections::HashMap::new();
        for record in self.records() {
            if record.state() != QueryState::Running {
                continue;
            }
            let Some(ledger) = record.tasks() else {
                continue;
            };
            for task in ledger.tasks() {
                *counts.entry(task.worker).or_insert(0) += 1;
            }
        }
        counts
    }

    pub fn get(&self, id: &str) -> Option<Arc<QueryRecord>> {
        self.records.lock().iter().find(|r| r.id == id).cloned()
    }

    /// Cancels query `id` for `user` (only its own user may), with `message` as its error.
    pub fn kill(&self, id: &str, by: &Viewer, message: Option<&str>) -> Result<(), KillError> {
        let record = self.get(id).ok_or(KillError::NotFound)?;
        if !by.sees(&record) {
            return Err(KillError::NotOwner);
        }
        let state = record.state();
        if state.is_final() {
            return Err(KillError::AlreadyEnded(state));
        }
        record.cancel(CancelReason::Killed {
            message: message.map(str::to_string),
        });
        Ok(())
    }
}

/// An endpoint's handle on its query's record. Dropped before the query ended, it records the
/// query as cancelled (the client went away).
#[derive(Debug)]
pub struct QueryTracker {
    record: Arc<QueryRecord>,
    /// Open while the query runs; the endpoint runs the query inside it.
    span: tracing::Span,
}

impl QueryTracker {
    pub fn id(&self) -> &str {
        &self.record.id
    }

    /// The query's root span.
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Its W3C trace id, to find it in a tracing backend.
    pub fn trace_id(&self) -> Option<&str> {
        self.record.trace_id.as_deref()
    }

    pub fn record(&self) -> &Arc<QueryRecord> {
        &self.record
    }

    /// It has a slot: planning starts. Only the first admission counts (a statement parked
    /// between planning and running is admitted again, and stays PLANNING).
    pub fn admitted(&self) {
        if self.record.progress.lock().admitted.is_some() {
            return;
        }
        self.record.transition(QueryState::Planning, |p| {
            p.admitted = Some(Instant::now());
        });
    }

    /// The plan starts running: `tasks` is its distributed plan's ledger, `cache` what the
    /// result cache did, `memory` its share of the coordinator's pool.
    pub fn started(
        &self,
        tasks: Option<Arc<TaskLedger>>,
        cache: Option<CacheUse>,
        memory: Option<Arc<QueryMemory>>,
    ) {
        if let Some(memory) = memory {
            let _ = self.record.memory.set(memory);
        }
        if let Some(tasks) = tasks {
            let _ = self.record.tasks.set(tasks);
        }
        self.record.transition(QueryState::Running, |p| {
            p.started = Some((Utc::now(), Instant::now()));
            p.cache = cache;
        });
    }

    pub fn finished(&self, output_rows: Option<u64>) {
        self.record
            .update(|p| p.output_rows += output_rows.unwrap_or(0));
        if self.record.end(QueryState::Finished, None) {
            self.log_ended();
        }
    }

    /// One structured line per query, in its span (so with its query and trace ids).
    fn log_ended(&self) {
        let q = self.record.snapshot();
        self.span.in_scope(|| {
            tracing::info!(
                state = q.state.name(),
                user = %q.start.user,
                elapsed_ms = q.ended.map(|end| (end - q.created).num_milliseconds()),
                output_rows = q.output_rows,
                error_code = q.error_code,
                "query ended"
            );
        });
    }

    pub fn failed(&self, error: &Error) {
        let state = if error.is_cancellation() {
            QueryState::Canceled
        } else {
            QueryState::Failed
        };
        let code = error.code().name();
        if self.record.end(state, Some((code, error.to_string()))) {
            self.log_ended();
        }
    }

    /// The query's rows, counted; the query ends with the stream (finished, failed, or
    /// cancelled when dropped before its end). A cancel of the query drops `stream` at once
    /// (ending its tasks on every worker) and ends this stream with the cancel's error.
    pub fn observe(self, stream: SendableRecordBatchStream) -> SendableRecordBatchStream {
        let schema = stream.schema();
        *self.record.control.plan().lock() = Some(stream);
        let cancelled = Box::pin(self.record.control.token().clone().cancelled_owned());
        Box::pin(ObservedStream {
            schema,
            cancelled,
            tracker: Some(self),
        })
    }
}

impl Drop for QueryTracker {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // A bug unwound the task running the query: it failed, its client did not leave.
            self.failed(&Error::Internal(
                "the query's task stopped unexpectedly".into(),
            ));
        } else if self.record.cancel(CancelReason::Client) {
            self.log_ended();
        }
    }
}

struct ObservedStream {
    schema: SchemaRef,
    /// Resolves when the query is stopped; the plan's stream is gone by then.
    cancelled: Pin<Box<WaitForCancellationFutureOwned>>,
    tracker: Option<QueryTracker>,
}

impl ObservedStream {
    fn next_batch(&mut self, cx: &mut Context<'_>) -> Poll<Option<DfResult<RecordBatch>>> {
        let Some(tracker) = &self.tracker else {
            return Poll::Ready(None);
        };
        if self.cancelled.as_mut().poll(cx).is_ready() {
            let error = tracker.record.control.error();
            return Poll::Ready(Some(Err(DataFusionError::External(Box::new(error)))));
        }
        let mut plan = tracker.record.control.plan().lock();
        match plan.as_mut() {
            Some(stream) => stream.as_mut().poll_next(cx),
            // Taken by a cancel between the check above and the lock.
            None => Poll::Ready(Some(Err(DataFusionError::External(Box::new(
                tracker.record.control.error(),
            ))))),
        }
    }
}

impl Stream for ObservedStream {
    type Item = DfResult<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = std::task::ready!(self.next_batch(cx));
        Poll::Ready(match next {
            Some(Ok(batch)) => {
                if let Some(tracker) = &self.tracker {
                    let rows = batch.num_rows() as u64;
                    // The rows' own bytes: a slice of a larger batch counts only its part.
                    let bytes: usize = batch
                        .columns()
                        .iter()
                        .map(|c| c.to_data().get_slice_memory_size().unwrap_or(0))
                        .sum();
                    let bytes = bytes as u64;
                    tracker.record.update(|p| {
                        p.output_rows += rows;
                        p.output_bytes += bytes;
                    });
                }
                Some(Ok(batch))
            }
            Some(Err(e)) => {
                // Classified once, here; endpoints unwrap the same error from `External`.
                let error = Error::from(e);
                if let Some(tracker) = self.tracker.take() {
                    tracker.record.control.plan().lock().take();
                    tracker.failed(&error);
                }
                Some(Err(DataFusionError::External(Box::new(error))))
            }
            None => {
                if let Some(tracker) = self.tracker.take() {
                    tracker.record.control.plan().lock().take();
                    tracker.finished(None);
                }
                None
            }
        })
    }
}

impl RecordBatchStream for ObservedStream {
    fn schema(&self) -> SchemaRef {
        std::sync::Arc::clone(&self.schema)
    }
}

#[cfg(test)]
mod tests;
