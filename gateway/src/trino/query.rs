//! One Trino-protocol query: its background execution, its pages and its tokens.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use sqe_engine::dialect::types::TrinoType;
use sqe_engine::error::Error;
use sqe_engine::history::{CancelReason, QueryRecord, QueryState as HistoryState};
use sqe_engine::queries::{
    Canceller, Endpoint, Output, Queries, QueryRequest, SessionChanges, Statement,
};
use tokio::sync::{Mutex, watch};
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::trino::encoded::{EncodedBatch, EncodedRows};
use crate::trino::headers::ClientSession;
use crate::trino::spooling::{Segment, Spooling};

/// The states Trino reports in `stats.state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QueryState {
    /// Waiting for a slot (and the POST's own answer, as Trino's).
    Queued,
    Planning,
    Running,
    Finished,
    Failed,
}

impl QueryState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            QueryState::Queued => "QUEUED",
            QueryState::Planning => "PLANNING",
            QueryState::Running => "RUNNING",
            QueryState::Finished => "FINISHED",
            QueryState::Failed => "FAILED",
        }
    }
}

/// What the background execution has produced so far.
enum Execution {
    /// Still planning (or, for DDL, running).
    Pending,
    /// Rows, encoded ahead of the pages.
    Rows(EncodedRows),
    Updated {
        update_type: &'static str,
        count: Option<u64>,
    },
    Failed(Error),
}

/// How long a stopped query's spooled segments wait for its client: long enough to read the
/// ones it was given, not the spooling TTL (an hour) of memory nobody else can use.
const STOPPED_SEGMENTS_LAST: Duration = Duration::from_secs(300);

/// A page's rows: classic JSON rows (`[[...],[...]]`), or a spooling protocol segment.
pub(crate) enum PageData {
    Rows(Vec<u8>),
    Segment(Segment),
}

/// A page of results: the part of `QueryResults` that depends on the execution.
pub(crate) struct Page {
    pub state: QueryState,
    pub columns: Option<Vec<(String, TrinoType)>>,
    /// Its rows, when there are any.
    pub data: Option<PageData>,
    pub rows: u64,
    pub update_type: Option<&'static str>,
    pub update_count: Option<u64>,
    pub error: Option<Error>,
    /// Whether there is more to fetch after this page.
    pub more: bool,
}

/// Mutable state, held across awaits while one page is produced.
struct Progress {
    execution: Execution,
    columns: Option<Vec<(String, TrinoType)>>,
    /// The query's share of the coordinator's memory, which its spooled segments are held in.
    memory: Option<Arc<dyn datafusion::execution::memory_pool::MemoryPool>>,
    /// An encoded batch larger than a page and the row the next page starts at.
    carry: Option<(EncodedBatch, usize)>,
    /// The token of the page last produced and its JSON, for a repeated request.
    served: Option<(u64, Arc<Page>)>,
    rows: u64,
    done: bool,
}

pub(crate) struct TrinoQuery {
    pub id: String,
    pub slug: String,
    pub sql: String,
    pub user: String,
    pub created: Instant,
    /// Stops the query, for whichever reason (DELETE, the reaper, `kill_query`, its deadline).
    canceller: Canceller,
    /// Its record in the history: whether it waits for a slot, and how long it has.
    record: Arc<QueryRecord>,
    started: watch::Receiver<bool>,
    progress: Mutex<Progress>,
    /// Last time a client asked for this query; abandoned queries are reaped by it.
    last_seen: parking_lot::Mutex<Instant>,
    /// Page requests being answered right now (a long poll is not idleness).
    in_flight: std::sync::atomic::AtomicUsize,
    /// Whether its last page has been served (then only a repeat of it can be asked for).
    finished: std::sync::atomic::AtomicBool,
    /// What the statement changed in the client's session, once it has run.
    changes: std::sync::OnceLock<SessionChanges>,
    /// The W3C trace id of its root span, sent back on every page (`X-SQE-Trace-Id`).
    trace_id: std::sync::OnceLock<String>,
    /// How its rows are sent when its client speaks the spooling protocol.
    spooling: Option<Spooling>,
    /// The trace context of the query's root span, parent of each page request's span (the
    /// span itself is not kept: it ends with the query, not with this record).
    trace_context: std::sync::OnceLock<opentelemetry::Context>,
}

/// Why a page could not be served.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PageError {
    /// A token before the current one: that page is gone.
    Gone,
    /// A token after the next one.
    NotFound,
    /// Producing it failed unexpectedly (its task panicked).
    Lost,
}

impl TrinoQuery {
    /// Submits a query and starts planning and running it in the background.
    pub(crate) fn start(
        queries: &Arc<Queries>,
        sql: String,
        client: ClientSession,
        spooling: Option<Spooling>,
    ) -> Option<Arc<Self>> {
        let request = QueryRequest {
            statement: Statement::Sql(sql.clone()),
            session: client.session.clone(),
            endpoint: Endpoint::Trino,
            source: client.source.clone(),
            traceparent: client.traceparent.clone(),
        };
        let handle = queries.submit(request);
        let canceller = handle.canceller()?;
        let record = handle.record()?;
        let (started_tx, started) = watch::channel(false);
        let query = Arc::new(Self {
            id: handle.id().to_string(),
            slug: uuid::Uuid::new_v4().simple().to_string(),
            sql,
            user: client.session.user.clone(),
            created: Instant::now(),
            canceller,
            record,
            started,
            progress: Mutex::new(Progress {
                execution: Execution::Pending,
                columns: None,
                memory: None,
                carry: None,
                served: None,
                rows: 0,
                done: false,
            }),
            last_seen: parking_lot::Mutex::new(Instant::now()),
            in_flight: std::sync::atomic::AtomicUsize::new(0),
            finished: std::sync::atomic::AtomicBool::new(false),
            changes: std::sync::OnceLock::new(),
            trace_id: std::sync::OnceLock::new(),
            spooling,
            trace_context: std::sync::OnceLock::new(),
        });
        if let Some(trace_id) = handle.trace_id() {
            let _ = query.trace_id.set(trace_id.to_string());
        }
        let span = handle.span();
        let _ = query.trace_context.set(span.context());
        let background = Arc::clone(&query);
        sqe_layers::task::spawn(Instrument::instrument(
            async move {
                // A panic below is this query's internal error (its record says so as the
                // handle unwinds), not a page left QUEUED for its client to poll for ever.
                let result = std::panic::AssertUnwindSafe(handle.run())
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|_| {
                        Err(Error::Internal(
                            "the query's task stopped unexpectedly".into(),
                        ))
                    });
                let mut progress = background.progress.lock().await;
                match result {
                    Ok(output) => {
                        let _ = background.changes.set(output.changes);
                        let described = output.described;
                        match (described.update_type, output.output) {
                            (None, Output::Rows(stream)) => {
                                progress.columns = Some(
                                    described
                                        .schema
                                        .fields()
                                        .iter()
                                        .map(|f| (f.name().clone(), TrinoType::from_field(f)))
                                        .collect(),
                                );
                                let memory = output.memory.map(|m| {
                                    m as Arc<dyn datafusion::execution::memory_pool::MemoryPool>
                                });
                                progress.memory.clone_from(&memory);
                                progress.execution =
                                    Execution::Rows(EncodedRows::spawn(stream, memory));
                            }
                            (update_type, output) => {
                                let count = match output {
                                    Output::Updated { rows } => rows,
                                    Output::Rows(_) => None,
                                };
                                progress.execution = Execution::Updated {
                                    update_type: update_type.unwrap_or("UNKNOWN"),
                                    count,
                                };
                            }
                        }
                    }
                    Err(e) => progress.execution = Execution::Failed(e),
                }
                drop(progress);
                let _ = started_tx.send(true);
                // A stopped query's encoded pages go back to the memory pool now, not when its
                // client next asks for one (after a DELETE it never does).
                let ended = background.record.control().ended();
                tokio::select! {
                    biased;
                    () = background.canceller.cancelled() => {}
                    () = ended.cancelled() => {}
                }
                if background.canceller.is_cancelled() {
                    background.fail_stopped(&mut *background.progress.lock().await);
                }
            },
            span,
        ));
        Some(query)
    }

    /// A stopped query's next page reports why it stopped; the rows not yet paged (and the
    /// pool's bytes they hold) are dropped. Segments already handed out stay the client's for
    /// [`STOPPED_SEGMENTS_LAST`] (or until acknowledged, or its DELETE), so that a client
    /// reading them when its query is killed or times out reads them, then the error.
    fn fail_stopped(&self, progress: &mut Progress) {
        if self.canceller.is_cancelled() {
            progress.execution = Execution::Failed(self.canceller.error());
            progress.carry = None;
            if let Some(spooling) = &self.spooling {
                spooling
                    .store
                    .expire_within(&self.id, STOPPED_SEGMENTS_LAST);
            }
        }
    }

    /// What the statement changed in the client's session; `None` until it has run.
    pub(crate) fn session_changes(&self) -> Option<&SessionChanges> {
        self.changes.get()
    }

    pub(crate) fn trace_id(&self) -> Option<&str> {
        self.trace_id.get().map(String::as_str)
    }

    pub(crate) fn touch(&self) {
        *self.last_seen.lock() = Instant::now();
    }

    /// How long no client has asked for this query; zero while a request is being answered.
    pub(crate) fn idle_for(&self) -> Duration {
        if self.in_flight.load(std::sync::atomic::Ordering::Relaxed) > 0 {
            return Duration::ZERO;
        }
        self.last_seen.lock().elapsed()
    }

    /// Stops the query for `reason`: planning ends, and the plan's stream is dropped now (not
    /// when the client next asks for a page), which ends its tasks on every worker.
    pub(crate) fn cancel(&self, reason: CancelReason) {
        self.canceller.cancel(reason);
    }

    /// Whether the client has been sent the last page.
    pub(crate) fn is_finished(&self) -> bool {
        self.finished.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.canceller.is_cancelled()
    }

    /// How far its distributed stages have got; `None` before it runs.
    pub(crate) fn progress(&self) -> Option<sqe_engine::cluster::QueryProgress> {
        self.record.tasks().map(|ledger| ledger.progress())
    }

    /// Bytes its scans read, once its metrics are in (after it ended).
    pub(crate) fn bytes_scanned(&self) -> Option<u64> {
        self.record.snapshot().bytes_scanned
    }

    /// How long it waited for its slot (so far, if it still waits).
    pub(crate) fn queued_for(&self) -> Duration {
        self.record.queued_for()
    }

    /// Where it is while it is neither finished nor failed: waiting, planning or running (what
    /// a page shows while the statement has produced nothing yet).
    pub(crate) fn live_state(&self) -> QueryState {
        match self.record.state() {
            HistoryState::Queued => QueryState::Queued,
            HistoryState::Planning => QueryState::Planning,
            // A statement that returns no rows (DDL, a write) runs before its one page.
            _ => QueryState::Running,
        }
    }

    /// The page for `token`: the next one is produced (waiting up to `max_wait` for rows, up
    /// to about `target_bytes` of JSON), the current one is repeated as it was.
    pub(crate) async fn page(
        self: &Arc<Self>,
        token: u64,
        max_wait: Duration,
        target_bytes: usize,
    ) -> Result<Arc<Page>, PageError> {
        self.in_flight
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Each page request is a span of the query's trace.
        let span = tracing::info_span!(parent: None, "trino.page", token);
        if let Some(query) = self.trace_context.get() {
            let _ = span.set_parent(query.clone());
        }
        // Produced in a task of its own: a request dropped half way (its client went, a
        // timeout) must not drop rows already taken from the plan, or leave the page unserved.
        let query = Arc::clone(self);
        let produced = sqe_layers::task::spawn(
            async move {
                let page = query.produce_page(token, max_wait, target_bytes).await;
                query.touch();
                query
                    .in_flight
                    .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                page
            }
            .instrument(span),
        );
        produced.await.unwrap_or(Err(PageError::Lost))
    }

    async fn produce_page(
        &self,
        token: u64,
        max_wait: Duration,
        target_bytes: usize,
    ) -> Result<Arc<Page>, PageError> {
        self.touch();
        let deadline = Instant::now() + max_wait;
        if token > 0 {
            // Wait for planning without holding `progress`: the background task needs it to
            // hand over its result.
            let mut started = self.started.clone();
            tokio::select! {
                _ = started.wait_for(|s| *s) => {}
                () = tokio::time::sleep_until(deadline.into()) => {}
                () = self.canceller.cancelled() => {}
            }
        }
        let mut progress = self.progress.lock().await;
        match &progress.served {
            Some((served, page)) if *served == token => return Ok(Arc::clone(page)),
            Some((served, _)) if token < *served => return Err(PageError::Gone),
            Some((served, _)) if token > served + 1 || progress.done => {
                return Err(PageError::NotFound);
            }
            None if token != 0 => return Err(PageError::NotFound),
            _ => {}
        }
        let page = if token == 0 {
            // The answer to the POST: accepted, nothing to show yet.
            Page::empty(QueryState::Queued, None, progress.rows)
        } else {
            self.next_page(&mut progress, deadline, target_bytes).await
        };
        let page = Arc::new(page);
        progress.done = !page.more;
        self.finished
            .store(progress.done, std::sync::atomic::Ordering::Relaxed);
        progress.served = Some((token, Arc::clone(&page)));
        Ok(page)
    }

    async fn next_page(
        &self,
        progress: &mut Progress,
        deadline: Instant,
        target_bytes: usize,
    ) -> Page {
        if matches!(progress.execution, Execution::Pending) {
            let mut started = self.started.clone();
            let waited = tokio::select! {
                changed = started.wait_for(|s| *s) => changed.is_ok(),
                () = tokio::time::sleep_until(deadline.into()) => false,
                () = self.canceller.cancelled() => false,
            };
            if !waited && !self.canceller.is_cancelled() {
                return Page::empty(self.live_state(), None, progress.rows);
            }
        }
        self.fail_stopped(progress);
        let columns = progress.columns.clone();
        match std::mem::replace(&mut progress.execution, Execution::Pending) {
            Execution::Pending => Page::empty(self.live_state(), columns, progress.rows),
            Execution::Failed(error) => {
                // A failure is reported once; asking again finds the query done.
                Page::failed(error, columns, progress.rows)
            }
            // As Trino: DML returns one `rows` column holding the count, DDL no columns.
            Execution::Updated { update_type, count } => Page {
                state: QueryState::Finished,
                columns: Some(match count {
                    Some(_) => vec![("rows".to_string(), TrinoType::BigInt)],
                    None => Vec::new(),
                }),
                data: count.map(|n| PageData::Rows(format!("[[{n}]]").into_bytes())),
                rows: progress.rows,
                update_type: Some(update_type),
                update_count: count,
                error: None,
                more: false,
            },
            Execution::Rows(mut stream) => {
                let outcome = self
                    .fill(&mut stream, &mut progress.carry, deadline, target_bytes)
                    .await;
                match outcome {
                    Ok((data, rows, finished)) => {
                        let data = if rows > 0 {
                            let memory = progress.memory.as_ref();
                            Some(self.page_data(data, progress.rows, rows, memory).await)
                        } else {
                            None
                        };
                        progress.rows += rows;
                        if !finished {
                            progress.execution = Execution::Rows(stream);
                        }
                        Page {
                            state: if finished {
                                QueryState::Finished
                            } else {
                                QueryState::Running
                            },
                            columns,
                            data,
                            rows: progress.rows,
                            update_type: None,
                            update_count: None,
                            error: None,
                            more: !finished,
                        }
                    }
                    Err(error) => Page::failed(error, columns, progress.rows),
                }
            }
        }
    }

    /// A page's JSON rows as its client takes them: as they are, or as a spooling segment
    /// (the result's rows from `row_offset` on).
    async fn page_data(
        &self,
        json: Vec<u8>,
        row_offset: u64,
        rows: u64,
        memory: Option<&Arc<dyn datafusion::execution::memory_pool::MemoryPool>>,
    ) -> PageData {
        match &self.spooling {
            None => PageData::Rows(json),
            Some(spooling) => PageData::Segment(
                Segment::of_rows(
                    spooling.encoding,
                    json,
                    row_offset,
                    rows,
                    &spooling.store,
                    &self.id,
                    memory,
                )
                .await,
            ),
        }
    }

    /// Takes encoded rows until about `target_bytes`: waits for the first rows until
    /// `deadline`, then takes only what is already encoded. Returns the JSON, its row count
    /// and whether the rows have ended.
    async fn fill(
        &self,
        encoded: &mut EncodedRows,
        carry: &mut Option<(EncodedBatch, usize)>,
        deadline: Instant,
        target_bytes: usize,
    ) -> Result<(Vec<u8>, u64, bool), Error> {
        let mut data = vec![b'['];
        let mut rows = 0u64;
        loop {
            let next = match carry.take() {
                Some(rest) => Some(Some(Ok(rest))),
                None if rows == 0 => tokio::select! {
                    next = encoded.next() => Some(next.map(|b| b.map(|b| (b, 0)))),
                    () = tokio::time::sleep_until(deadline.into()) => None,
                    () = self.canceller.cancelled() => return Err(self.canceller.error()),
                },
                None => encoded.ready().ok().map(|b| b.map(|b| b.map(|b| (b, 0)))),
            };
            let (batch, first) = match next {
                // Nothing more yet: the page goes out with what it has.
                None => break,
                Some(None) => {
                    data.push(b']');
                    return Ok((data, rows, true));
                }
                Some(Some(batch)) => batch?,
            };
            if rows > 0 {
                data.push(b',');
            }
            let end = batch.append(&mut data, first, target_bytes);
            rows += (end - first) as u64;
            if end < batch.rows() {
                *carry = Some((batch, end));
            }
            if data.len() >= target_bytes {
                break;
            }
        }
        data.push(b']');
        Ok((data, rows, false))
    }
}

impl Page {
    fn empty(state: QueryState, columns: Option<Vec<(String, TrinoType)>>, rows: u64) -> Self {
        Page {
            state,
            columns,
            data: None,
            rows,
            update_type: None,
            update_count: None,
            error: None,
            more: true,
        }
    }

    fn failed(error: Error, columns: Option<Vec<(String, TrinoType)>>, rows: u64) -> Self {
        Page {
            state: QueryState::Failed,
            columns,
            data: None,
            rows,
            update_type: None,
            update_count: None,
            error: Some(error),
            more: false,
        }
    }
}
