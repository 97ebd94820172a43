//! The one lifecycle of every statement of every endpoint.
//!
//! An endpoint [`Queries::submit`]s a [`QueryRequest`] (SQL, a bound prepared statement or an
//! upload, the caller's session, its endpoint and trace context) and drives the
//! [`QueryHandle`] it gets back: [`QueryHandle::describe`] plans it (Flight SQL's
//! `GetFlightInfo`), [`QueryHandle::run`] runs it and hands back its output. Everything else
//! about a query's life happens here, once: its admission (a slot, or a place in the queue),
//! its history record and state transitions, its one
//! cancellation (the client, `kill_query`, the reaper and the deadline all stop it the same
//! way, through [`QueryHandle::canceller`]), the deadline, memory accounting and the observed
//! result stream. The endpoints keep only their protocol: Trino its paging, Flight SQL its
//! tickets and prepared statements.

mod admission;
mod session;

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::memory::MemoryStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::StreamExt;
use sqe_iceberg::write::CommitGate;
use tracing::Instrument;

use self::admission::Slot;
pub use self::admission::{Admission, AdmissionLimits, AdmissionLoad};
pub use self::session::{SessionChanges, Transactions};
use crate::engine::{Engine, IngestTarget, Outcome, Prepared, StatementKind, StatementTemplate};
use crate::error::{Error, ErrorCode, Result};
use crate::history::{CancelReason, QueryRecord, QueryStart, QueryTracker};

/// Which front door a query came in through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    Trino,
    FlightSql,
}

impl Endpoint {
    /// As `system.runtime.queries.endpoint` and `/metrics` name it.
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Trino => "trino",
            Endpoint::FlightSql => "flight_sql",
        }
    }
}

/// Who runs a statement and with what defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Session {
    /// The authenticated user (or whoever the client says, without authentication).
    pub user: String,
    pub catalog: Option<String>,
    pub schema: Option<String>,
    /// The client's time zone (UTC when unset).
    pub time_zone: Option<String>,
    /// Session properties as the client sent them; checked when the statement is planned.
    pub properties: BTreeMap<String, String>,
    /// Prepared statements the client holds (Trino keeps them client-side), by name.
    pub prepared: BTreeMap<String, String>,
    pub transaction_id: Option<String>,
    /// Whether the client can run transactions at all.
    pub supports_transactions: bool,
}

/// What to run.
pub enum Statement {
    Sql(String),
    /// A prepared statement: run once per row of parameters (queries take exactly one row), as
    /// one query.
    Prepared {
        sql: String,
        template: Box<StatementTemplate>,
        parameters: Vec<Vec<ScalarValue>>,
    },
    /// Rows uploaded into a table; `description` is what the history shows for it.
    Ingest {
        description: String,
        target: IngestTarget,
        data: SendableRecordBatchStream,
    },
}

impl Statement {
    fn text(&self) -> &str {
        match self {
            Statement::Sql(sql) | Statement::Prepared { sql, .. } => sql,
            Statement::Ingest { description, .. } => description,
        }
    }
}

/// A statement as a client sends it.
pub struct QueryRequest {
    pub statement: Statement,
    pub session: Session,
    pub endpoint: Endpoint,
    /// The client's name for itself (`X-Trino-Source`).
    pub source: Option<String>,
    /// The caller's W3C `traceparent`: the query's trace continues it.
    pub traceparent: Option<String>,
}

/// What a statement returns, known once it is planned.
#[derive(Debug, Clone)]
pub struct Described {
    /// The rows' schema, with Trino's column names; for DDL and DML the one row of their
    /// result (see [`command_batch`]).
    pub schema: SchemaRef,
    /// Trino's `updateType`; `None` for statements that return rows.
    pub update_type: Option<&'static str>,
    /// What the engine plans it as (`None` for session statements).
    pub kind: Option<StatementKind>,
}

/// What running a statement produced.
pub enum Output {
    /// Rows, streamed as the plan produces them; the query ends with the stream.
    Rows(SendableRecordBatchStream),
    /// DDL or DML done; DML reports the rows it wrote.
    Updated { rows: Option<u64> },
}

/// A statement's output and what it changed in the session.
pub struct QueryOutput {
    pub described: Described,
    pub output: Output,
    pub changes: SessionChanges,
    /// The statement's share of the coordinator's memory pool, for what an endpoint buffers
    /// of its rows; `None` unless it runs a plan.
    pub memory: Option<Arc<crate::memory::QueryMemory>>,
}

/// The statements of every endpoint, through one lifecycle.
pub struct Queries {
    engine: Arc<Engine>,
    transactions: Transactions,
    admission: Arc<Admission>,
}

impl std::fmt::Debug for Queries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queries").finish_non_exhaustive()
    }
}

impl Queries {
    /// The lifecycle over `engine`, admitting statements within `limits`; a transaction
    /// unused for `transaction_idle` is forgotten (its client is gone).
    pub fn new(
        engine: Arc<Engine>,
        transaction_idle: std::time::Duration,
        limits: AdmissionLimits,
    ) -> Arc<Self> {
        Arc::new(Self {
            engine,
            transactions: Transactions::new(transaction_idle),
            admission: Admission::new(limits),
        })
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The slots statements run in (for `/metrics`).
    pub fn admission(&self) -> &Arc<Admission> {
        &self.admission
    }

    /// The engine settings `session` asks for (for work outside a query's lifecycle, such as
    /// preparing a statement); its session properties are checked.
    pub fn settings(&self, session: &Session) -> Result<crate::engine::SessionSettings> {
        session::settings(&self.engine, session)
    }

    /// `sql` planned as a prepared statement of `session`; `?` and `$n` parameters alike.
    pub async fn template(&self, session: &Session, sql: &str) -> Result<StatementTemplate> {
        session::template(&self.engine, &self.settings(session)?, sql).await
    }

    /// Records the query (QUEUED) and hands back its handle; nothing runs until the handle is
    /// driven: it waits for its slot when first described or run.
    pub fn submit(self: &Arc<Self>, request: QueryRequest) -> QueryHandle {
        let QueryRequest {
            statement,
            session,
            endpoint,
            source,
            traceparent,
        } = request;
        let tracker = self.engine.history().begin(QueryStart {
            id: None,
            endpoint: endpoint.name(),
            user: session.user.clone(),
            source,
            sql: statement.text().to_string(),
            catalog: session.catalog.clone(),
            schema: session.schema.clone(),
            traceparent,
        });
        QueryHandle {
            driver: Driver {
                queries: Arc::clone(self),
                tracker: Some(tracker),
                session,
            },
            stage: Stage::Submitted(statement),
            slot: None,
        }
    }
}

/// Where a submitted statement is.
enum Stage {
    Submitted(Statement),
    Planned(Planned, Described),
    /// Taken by a failed step; the query has ended.
    Gone,
}

/// A statement planned and ready to run.
enum Planned {
    Plan {
        prepared: Box<Prepared>,
        /// Trino's names for its columns.
        names: Vec<String>,
    },
    /// A prepared DML statement with its rows of parameters bound: one statement, one commit
    /// (it answers a count, never rows).
    Updates(Box<Prepared>),
    Ingest {
        target: IngestTarget,
        data: SendableRecordBatchStream,
        gate: Arc<CommitGate>,
    },
    /// A session statement, answered while planning.
    Session {
        update_type: &'static str,
        changes: SessionChanges,
    },
    /// Rows computed while planning (`DESCRIBE INPUT/OUTPUT`).
    Rows(RecordBatch),
}

impl Planned {
    fn plan(prepared: Prepared, names: Vec<String>) -> Self {
        Planned::Plan {
            prepared: Box::new(prepared),
            names,
        }
    }

    fn describe(&self) -> Described {
        match self {
            Planned::Plan { prepared, names } => {
                let kind = prepared.kind();
                Described {
                    schema: match kind {
                        StatementKind::Query => session::renamed(&prepared.schema(), names),
                        other => other.command_schema(),
                    },
                    update_type: kind.update_type(),
                    kind: Some(kind),
                }
            }
            Planned::Updates(prepared) => Described {
                schema: prepared.kind().command_schema(),
                update_type: prepared.kind().update_type(),
                kind: Some(prepared.kind()),
            },
            Planned::Ingest { .. } => Described {
                schema: StatementKind::Insert.command_schema(),
                update_type: Some("INSERT"),
                kind: Some(StatementKind::Insert),
            },
            Planned::Session { update_type, .. } => session::session_statement(update_type),
            Planned::Rows(batch) => Described {
                schema: batch.schema(),
                update_type: None,
                kind: None,
            },
        }
    }
}

/// Stops a query from outside its endpoint's flow, with a reason.
#[derive(Clone)]
pub struct Canceller {
    record: Arc<QueryRecord>,
}

impl Canceller {
    /// Stops the query; `false` when it had ended or been stopped already.
    pub fn cancel(&self, reason: CancelReason) -> bool {
        self.record.cancel(reason)
    }

    pub fn is_cancelled(&self) -> bool {
        self.record.control().is_cancelled()
    }

    /// Resolves when the query is stopped.
    pub async fn cancelled(&self) {
        self.record.control().cancelled().await;
    }

    /// The error a stopped query ended with.
    pub fn error(&self) -> Error {
        self.record.control().error()
    }
}

/// One submitted statement, driven by its endpoint. Dropped before its end, the query is
/// cancelled (its client went away).
pub struct QueryHandle {
    driver: Driver,
    stage: Stage,
    /// Its admission slot while it plans or runs; handed to its end once it runs.
    slot: Option<Slot>,
}

/// What the steps of a query borrow while they await (the stage, which may hold an upload's
/// stream, is only touched between them).
struct Driver {
    queries: Arc<Queries>,
    /// `None` once the query's end is in its output stream's hands.
    tracker: Option<QueryTracker>,
    session: Session,
}

impl QueryHandle {
    pub fn id(&self) -> &str {
        self.driver.record().map_or("", |r| r.id.as_str())
    }

    /// Its W3C trace id, to find it in a tracing backend.
    pub fn trace_id(&self) -> Option<&str> {
        self.driver
            .tracker
            .as_ref()
            .and_then(QueryTracker::trace_id)
    }

    /// Its root span: endpoints make their per-request spans its children.
    pub fn span(&self) -> tracing::Span {
        self.driver.span()
    }

    /// How anyone stops it.
    pub fn canceller(&self) -> Option<Canceller> {
        self.driver.record().map(|record| Canceller {
            record: Arc::clone(record),
        })
    }

    /// Ends the query as failed with `error` (a protocol's own refusal of what it planned),
    /// and hands the error back.
    pub fn fail(mut self, error: Error) -> Error {
        if let Some(tracker) = self.driver.tracker.take() {
            tracker.failed(&error);
        }
        error
    }

    /// Its record, as `system.runtime.queries` shows it (state, queued time).
    pub fn record(&self) -> Option<Arc<QueryRecord>> {
        self.driver.record().cloned()
    }

    /// Waits for a slot (QUEUED), then plans it (once), within its deadline and cancellable:
    /// what it will return.
    pub async fn describe(&mut self) -> Result<&Described> {
        if let Stage::Submitted(_) = &self.stage {
            Box::pin(self.take_slot()).await?;
            let Stage::Submitted(statement) = std::mem::replace(&mut self.stage, Stage::Gone)
            else {
                return Err(Error::Internal("the query has already run".into()));
            };
            let driver = &self.driver;
            let planned = Box::pin(driver.stopped_or(driver.plan(statement), None)).await;
            let planned = driver.or_fail(planned)?;
            let described = planned.describe();
            self.stage = Stage::Planned(planned, described);
        }
        match &self.stage {
            Stage::Planned(_, described) => Ok(described),
            _ => Err(Error::Internal("the query has already run".into())),
        }
    }

    /// Gives its slot back while it waits to be run (a Flight SQL statement planned by
    /// GetFlightInfo, waiting for its DoGet, holds none); [`Self::run`] waits for one again.
    pub fn park(&mut self) {
        self.slot = None;
    }

    /// Waits for a slot unless it holds one (cancellable); the first one ends its QUEUED wait.
    async fn take_slot(&mut self) -> Result<()> {
        if self.slot.is_some() {
            return Ok(());
        }
        let driver = &self.driver;
        // Bulk ingest runs unbounded once admitted, so it waits unbounded too.
        let bounded = !matches!(self.stage, Stage::Submitted(Statement::Ingest { .. }));
        let slot = Box::pin(driver.stopped_or(driver.admit(bounded), None)).await;
        let slot = driver.or_fail(slot)?;
        if let Some(tracker) = &driver.tracker {
            tracker.admitted();
        }
        self.slot = Some(slot);
        Ok(())
    }

    /// Has its clients read its result at the workers when it can
    /// ([`crate::engine::Prepared::serve_at_workers`]); call after [`Self::describe`].
    pub fn serve_at_workers(&mut self) -> Option<crate::cluster::WorkerResults> {
        let Stage::Planned(Planned::Plan { prepared, .. }, described) = &mut self.stage else {
            return None;
        };
        prepared.serve_at_workers(&described.schema)
    }

    /// Runs it (planning it first if [`Self::describe`] has not): its output. Rows end the
    /// query when their stream ends; anything else has ended it when this returns. It holds
    /// its slot until it ends.
    pub async fn run(mut self) -> Result<QueryOutput> {
        Box::pin(self.describe()).await?;
        Box::pin(self.take_slot()).await?;
        let Stage::Planned(planned, described) = std::mem::replace(&mut self.stage, Stage::Gone)
        else {
            return Err(Error::Internal("the query has already run".into()));
        };
        if let (Some(slot), Some(record)) = (self.slot.take(), self.driver.record()) {
            let ended = record.control().ended();
            sqe_layers::task::spawn(async move {
                ended.cancelled().await;
                drop(slot);
            });
        }
        let driver = &self.driver;
        let gate = match &planned {
            Planned::Plan { prepared, .. } | Planned::Updates(prepared) => prepared.commit_gate(),
            Planned::Ingest { gate, .. } => Some(Arc::clone(gate)),
            _ => None,
        };
        let output = Box::pin(driver.stopped_or(driver.execute(planned), gate)).await;
        let (output, changes) = driver.or_fail(output)?;
        let tracker = self
            .driver
            .tracker
            .take()
            .ok_or_else(|| Error::Internal("the query has already run".into()))?;
        let memory = tracker.record().memory();
        let output = match output {
            Output::Rows(stream) => {
                Output::Rows(renamed_stream(tracker.observe(stream), &described.schema))
            }
            Output::Updated { rows } => {
                tracker.finished(rows);
                Output::Updated { rows }
            }
        };
        Ok(QueryOutput {
            described,
            output,
            changes,
            memory,
        })
    }
}

impl Driver {
    fn tracker(&self) -> Result<&QueryTracker> {
        self.tracker
            .as_ref()
            .ok_or_else(|| Error::Internal("the query has already run".into()))
    }

    fn record(&self) -> Option<&Arc<QueryRecord>> {
        self.tracker.as_ref().map(QueryTracker::record)
    }

    fn span(&self) -> tracing::Span {
        self.tracker
            .as_ref()
            .map_or_else(tracing::Span::none, |t| t.span().clone())
    }

    /// `work` unless the query is stopped first: then the stop's error ([`unless_stopped`]).
    async fn stopped_or<T>(
        &self,
        work: impl std::future::Future<Output = Result<T>>,
        gate: Option<Arc<CommitGate>>,
    ) -> Result<T> {
        let Some(record) = self.record() else {
            return Err(Error::Internal("the query has already run".into()));
        };
        let control = record.control();
        crate::stopping::unless_stopped(
            work.instrument(self.span()),
            control.cancelled(),
            || control.error(),
            gate,
        )
        .await
    }

    /// Waits for a slot for the query (or is refused: the queue is full). `bounded`: its
    /// `query_max_run_time` counts the wait, as Trino's does, so a query can time out queued.
    async fn admit(&self, bounded: bool) -> Result<Slot> {
        // A property that does not check fails the statement here as it would when planned.
        let limits = self.queries.engine.property_limits();
        let properties = crate::session_properties::SessionProperties::from_pairs(
            &self.session.properties,
            &limits,
        )?;
        let waiting = self
            .queries
            .admission
            .admit(&self.session.user, properties.priority())?
            .slot();
        let deadline = properties
            .max_run_time(&limits)
            .filter(|_| bounded)
            .and_then(|limit| {
                let at = tokio::time::Instant::from_std(self.record()?.created_at())
                    .checked_add(limit)?;
                Some((at, limit))
            });
        match deadline {
            Some((at, limit)) => tokio::time::timeout_at(at, waiting)
                .await
                .map_err(|_| Error::TimeLimit { limit })?,
            None => waiting.await,
        }
    }

    /// `result`, recording its failure as the query's end.
    fn or_fail<T>(&self, result: Result<T>) -> Result<T> {
        if let (Err(error), Some(tracker)) = (&result, &self.tracker) {
            tracker.failed(error);
        }
        result
    }

    async fn plan(&self, statement: Statement) -> Result<Planned> {
        let queries = &self.queries;
        let planned = match statement {
            Statement::Sql(sql) => {
                session::plan_sql(&queries.engine, &queries.transactions, &self.session, &sql)
                    .await?
            }
            Statement::Prepared {
                template,
                mut parameters,
                ..
            } => {
                if template.kind() == StatementKind::Query {
                    if parameters.len() > 1 {
                        return Err(Error::invalid(
                            ErrorCode::InvalidParameterUsage,
                            format!(
                                "a query runs with one row of parameters; {} were bound",
                                parameters.len()
                            ),
                        ));
                    }
                    let prepared = queries
                        .engine
                        .bind(&template, parameters.pop().unwrap_or_default())
                        .await?;
                    Planned::plan(prepared, template.trino_column_names())
                } else {
                    if parameters.is_empty() {
                        parameters.push(Vec::new());
                    }
                    // All rows are one statement: one commit, or none.
                    Planned::Updates(Box::new(
                        queries.engine.bind_rows(&template, parameters).await?,
                    ))
                }
            }
            Statement::Ingest { target, data, .. } => Planned::Ingest {
                target,
                data,
                gate: Arc::default(),
            },
        };
        self.start_deadline(&planned);
        Ok(planned)
    }

    /// The query's deadline counts from when it arrived; the session's `query_max_run_time`
    /// is known once it is planned.
    fn start_deadline(&self, planned: &Planned) {
        let limit = match planned {
            Planned::Plan { prepared, .. } => prepared.max_run_time(),
            Planned::Updates(prepared) => prepared.max_run_time(),
            Planned::Ingest { .. } | Planned::Session { .. } | Planned::Rows(_) => None,
        };
        let (Some(limit), Some(record)) = (limit, self.record()) else {
            return;
        };
        // A limit past the clock's range is no limit (a client may ask for `1000000d`).
        let Some(at) = tokio::time::Instant::from_std(record.created_at()).checked_add(limit)
        else {
            return;
        };
        let ended = record.control().ended();
        let record = Arc::downgrade(record);
        sqe_layers::task::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep_until(at) => {
                    if let Some(record) = record.upgrade() {
                        record.cancel(CancelReason::TimeLimit { limit });
                    }
                }
                () = ended.cancelled() => {}
            }
        });
    }

    async fn execute(&self, planned: Planned) -> Result<(Output, SessionChanges)> {
        let engine = &self.queries.engine;
        let tracker = self.tracker()?;
        let token = tracker.record().control().cancellation();
        match planned {
            Planned::Plan { prepared, .. } => {
                prepared.mark_running(tracker);
                let output = match engine.run_cancellable(*prepared, token).await? {
                    Outcome::Rows(stream) => Output::Rows(stream),
                    Outcome::Updated { rows } => Output::Updated { rows },
                };
                Ok((output, SessionChanges::default()))
            }
            Planned::Updates(prepared) => {
                prepared.mark_running(tracker);
                match engine.run_cancellable(*prepared, token).await? {
                    Outcome::Updated { rows } => Ok((
                        Output::Updated {
                            rows: Some(rows.unwrap_or(0)),
                        },
                        SessionChanges::default(),
                    )),
                    Outcome::Rows(_) => Err(Error::invalid(
                        ErrorCode::GenericUserError,
                        "this statement returns rows: execute it as a query",
                    )),
                }
            }
            Planned::Ingest { target, data, gate } => {
                tracker.started(None, None, None);
                let settings = session::settings(engine, &self.session)?;
                let rows = engine.ingest(&settings, target, data, gate, token).await?;
                Ok((
                    Output::Updated { rows: Some(rows) },
                    SessionChanges::default(),
                ))
            }
            Planned::Session { changes, .. } => {
                tracker.started(None, None, None);
                Ok((Output::Updated { rows: None }, changes))
            }
            Planned::Rows(batch) => {
                tracker.started(None, None, None);
                let stream = MemoryStream::try_new(vec![batch.clone()], batch.schema(), None)?;
                Ok((Output::Rows(Box::pin(stream)), SessionChanges::default()))
            }
        }
    }
}

/// `stream`'s batches under `schema`'s names (Trino's), when they differ from the plan's.
fn renamed_stream(
    stream: SendableRecordBatchStream,
    schema: &SchemaRef,
) -> SendableRecordBatchStream {
    if stream.schema().fields() == schema.fields() {
        return stream;
    }
    let target = Arc::clone(schema);
    let batches = stream.map(move |batch| {
        let batch = batch?;
        RecordBatch::try_new(Arc::clone(&target), batch.columns().to_vec())
            .map_err(|e| DataFusionError::ArrowError(Box::new(e), None))
    });
    Box::pin(RecordBatchStreamAdapter::new(Arc::clone(schema), batches))
}

/// The one row a DDL or DML statement returns as a result set (Flight SQL): DML the rows it
/// wrote (`rows`), DDL its update type (`result`).
pub fn command_batch(described: &Described, rows: Option<u64>) -> Result<RecordBatch> {
    let writes_rows = described.kind.is_some_and(StatementKind::writes_rows);
    let (field, column): (Field, ArrayRef) = if writes_rows {
        (
            Field::new("rows", DataType::UInt64, false),
            Arc::new(UInt64Array::from(vec![rows.unwrap_or(0)])),
        )
    } else {
        (
            Field::new("result", DataType::Utf8, false),
            Arc::new(StringArray::from(vec![
                described.update_type.unwrap_or("OK"),
            ])),
        )
    };
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(vec![field])),
        vec![column],
    )?)
}
