//! Planning and running SQL statements against the Iceberg catalog, distributed when workers
//! are reachable.

mod alter;
mod function_signatures;
mod ingest;
mod insert_overwrite;
mod join_order;
mod partition_filter;
mod procedures;
mod query_retry;
mod reload;
mod replace_table;
mod row_changes;
mod show;
mod table_properties;
mod template;
mod unknown_names;
mod views;

pub use ingest::{IfExists, IfMissing, IngestTarget};
pub use template::{OutputColumn, StatementTemplate};

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{ArrayRef, AsArray, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt64Type};
use datafusion::catalog::{CatalogProvider, CatalogProviderList};
use datafusion::common::{SchemaReference, TableReference};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::execution::FunctionRegistry;
use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion::execution::memory_pool::{FairSpillPool, TrackConsumersPool};
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::execution::{
    SendableRecordBatchStream, SessionState, SessionStateBuilder, TaskContext,
};
use datafusion::logical_expr::{DdlStatement, DmlStatement, LogicalPlan, WriteOp};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::display::DisplayableExecutionPlan;
use datafusion::physical_plan::memory::MemoryStream;
use datafusion::prelude::SessionConfig;
use datafusion_distributed::{
    DistributedExec, DistributedExt, DistributedMetricsFormat, SessionStateBuilderExt,
    TaskEstimator, display_plan_ascii, rewrite_distributed_plan_with_metrics,
};
use futures::TryStreamExt;

use iceberg::spec::Schema as IcebergSchema;
use iceberg::{Catalog, NamespaceIdent, TableCreation, TableIdent};
use sqe_iceberg::codec::SqeCodec;
use sqe_iceberg::scan::IcebergTaskEstimator;
use sqe_iceberg::types::iceberg_schema_for;
use sqe_iceberg::write::{CommitGate, WriteCommit};
use sqe_tpch::{TpchCodec, TpchTaskEstimator};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

pub(crate) use self::alter::COMMENT_PROPERTY;
pub(crate) use self::table_properties::TABLE_PROPERTIES;
use self::table_properties::{TableLayout, TableProperties};
use crate::cache::{
    CacheKey, CacheSettings, CacheUse, CachedResult, CachingStream, ResultCache, TableVersion,
};
use crate::catalog::{IcebergCatalogProvider, TableLocations, check_new_name};
use crate::cluster::{Channels, IpcCompression, PoolResolver, WorkerPool};
use crate::cluster::{
    ServedAtWorkers, TaskLedger, TaskRouter, WholeBuildSides, WorkerResults, serve_at_workers,
};
use crate::commits::Commits;
use crate::dialect::functions::{SessionContext, session_functions};
use crate::dialect::planner::TrinoPlanner;
use crate::dialect::sql_types::TrinoTypes;
use crate::error::{Error, ErrorCode, ObjectKind, Result};
use crate::history::{HistorySettings, KillError, QueryHistory, QueryTracker, Viewer};
use crate::memory::QueryMemory;
use crate::metadata::{NodeIdentity, RuntimeView};
use crate::query_runtime::QueryRuntime;
use crate::session_properties::{
    DEFAULT_QUERY_RETRY_ATTEMPTS, JoinDistribution, JoinReordering, PropertyLimits,
    QueryRetryPolicy, SessionProperties,
};

/// DataFusion's physical optimizer rules but `aggregate_statistics`, which answers
/// `count`, `min`, `max` and `count(DISTINCT …)` from exact statistics without reading rows.
/// SQE's scans have no exact statistics, but a filter makes some: an equality's column is
/// "exactly one distinct value" even where no row passes the whole filter, and
/// `count(DISTINCT a), count(DISTINCT b) … WHERE a = 1 AND b = 10` answered 1 and 1 over rows
/// none of which passed.
fn physical_optimizer_rules()
-> Vec<Arc<dyn datafusion::physical_optimizer::PhysicalOptimizerRule + Send + Sync>> {
    datafusion::physical_optimizer::optimizer::PhysicalOptimizer::new()
        .rules
        .into_iter()
        .filter(|rule| rule.name() != "aggregate_statistics")
        .collect()
}

/// How long catalog names may be cached between statements.
const NAME_CACHE_TTL: Duration = Duration::from_secs(1);

/// Engine-wide settings from the coordinator's configuration.
#[derive(Clone)]
pub struct EngineSettings {
    /// The name of the Iceberg catalog in SQL.
    pub catalog_name: String,
    /// Threads per query (DataFusion `target_partitions`); 0 = number of cores.
    pub target_partitions: usize,
    /// Bytes per scan partition; decides how many tasks a scan is split into.
    pub scan_bytes_per_partition: usize,
    /// Memory pool limit for all queries on the coordinator.
    pub memory_limit: Option<usize>,
    /// Where spilling operators write; `None`: the system's temporary directory.
    pub spill_directory: Option<std::path::PathBuf>,
    /// The coordinator's `[storage]` as Iceberg properties.
    pub storage_props: HashMap<String, String>,
    /// Longest a statement may run, streaming its results included; `None` is unbounded.
    pub query_max_run_time: Option<Duration>,
    /// Trino's `retry_policy` and `query_retry_attempts`, the defaults of sessions.
    pub retry_policy: QueryRetryPolicy,
    pub query_retry_attempts: u32,
    /// How nodes compress the batches they send each other, the sessions' default.
    pub exchange_compression: IpcCompression,
    /// `[query_history]`.
    pub history: HistorySettings,
    /// `[query_cache]`.
    pub cache: CacheSettings,
    /// The coordinator as `system.runtime.nodes` lists it.
    pub node: NodeIdentity,
    /// Where a table created with an explicit `location` may go.
    pub table_locations: TableLocations,
    /// Users who see and may kill every query (`[client_auth] admin_users`).
    pub admin_users: Vec<String>,
}

impl Default for EngineSettings {
    fn default() -> Self {
        Self {
            catalog_name: "iceberg".into(),
            target_partitions: 0,
            scan_bytes_per_partition: 16 * 1024 * 1024,
            memory_limit: None,
            spill_directory: None,
            storage_props: HashMap::new(),
            query_max_run_time: None,
            retry_policy: QueryRetryPolicy::None,
            query_retry_attempts: DEFAULT_QUERY_RETRY_ATTEMPTS,
            exchange_compression: IpcCompression::None,
            history: HistorySettings::default(),
            cache: CacheSettings::default(),
            node: NodeIdentity {
                node_id: "coordinator".into(),
                uri: None,
                version: env!("CARGO_PKG_VERSION").into(),
            },
            table_locations: TableLocations::default(),
            admin_users: Vec::new(),
        }
    }
}

impl EngineSettings {
    /// Threads per query: `target_partitions`, or the cores when it is 0.
    fn partitions(&self) -> usize {
        match self.target_partitions {
            0 => std::thread::available_parallelism().map_or(1, usize::from),
            n => n,
        }
    }
}

/// The storage properties by name only: they hold the store's keys.
impl std::fmt::Debug for EngineSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut storage: Vec<&String> = self.storage_props.keys().collect();
        storage.sort();
        f.debug_struct("EngineSettings")
            .field("catalog_name", &self.catalog_name)
            .field("target_partitions", &self.target_partitions)
            .field("scan_bytes_per_partition", &self.scan_bytes_per_partition)
            .field("memory_limit", &self.memory_limit)
            .field("spill_directory", &self.spill_directory)
            .field("storage_props", &storage)
            .field("query_max_run_time", &self.query_max_run_time)
            .field("retry_policy", &self.retry_policy)
            .field("query_retry_attempts", &self.query_retry_attempts)
            .field("exchange_compression", &self.exchange_compression)
            .field("history", &self.history)
            .field("cache", &self.cache)
            .field("node", &self.node)
            .field("table_locations", &self.table_locations)
            .field("admin_users", &self.admin_users)
            .finish()
    }
}

/// What a client's session decides for its statements: name resolution, who it is and its
/// session properties.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionSettings {
    pub catalog: Option<String>,
    pub schema: Option<String>,
    /// The user, as `current_user` reports it.
    pub user: String,
    /// The client's time zone, as `current_timezone()` reports it (UTC when unset).
    pub time_zone: Option<String>,
    pub properties: SessionProperties,
}

/// What kind of statement was prepared; protocols report DDL and DML differently from queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementKind {
    Query,
    Insert,
    CreateTableAs,
    CreateTable,
    CreateSchema,
    DropTable,
    DropSchema,
    AlterTable,
    /// `ALTER TABLE t EXECUTE procedure(...)`.
    AlterTableExecute,
    Comment,
    Delete,
    Truncate,
    Update,
    Merge,
    CreateView,
    DropView,
    /// A procedure: `CALL system.runtime.kill_query(...)`.
    Call,
}

impl StatementKind {
    /// The Trino `updateType` of the statement; `None` for queries.
    pub fn update_type(self) -> Option<&'static str> {
        match self {
            StatementKind::Query => None,
            StatementKind::Insert => Some("INSERT"),
            // As Trino reports it: CREATE TABLE, with the row count.
            StatementKind::CreateTableAs => Some("CREATE TABLE"),
            StatementKind::CreateTable => Some("CREATE TABLE"),
            StatementKind::CreateSchema => Some("CREATE SCHEMA"),
            StatementKind::DropTable => Some("DROP TABLE"),
            StatementKind::DropSchema => Some("DROP SCHEMA"),
            StatementKind::AlterTable => Some("ALTER TABLE"),
            StatementKind::AlterTableExecute => Some("ALTER TABLE EXECUTE"),
            StatementKind::Comment => Some("COMMENT"),
            StatementKind::Delete => Some("DELETE"),
            StatementKind::Truncate => Some("TRUNCATE TABLE"),
            StatementKind::Update => Some("UPDATE"),
            StatementKind::Merge => Some("MERGE"),
            StatementKind::CreateView => Some("CREATE VIEW"),
            StatementKind::DropView => Some("DROP VIEW"),
            StatementKind::Call => Some("CALL"),
        }
    }
}

/// The result of running a statement.
pub enum Outcome {
    /// Rows, streamed as the plan produces them.
    Rows(SendableRecordBatchStream),
    /// DDL or DML done; DML reports the rows it wrote.
    Updated { rows: Option<u64> },
}

/// A planned statement, ready to run once.
pub struct Prepared {
    kind: StatementKind,
    schema: SchemaRef,
    action: Action,
    /// How long it may run, streaming its results included.
    max_run_time: Option<Duration>,
    cache: ResultCacheUse,
}

/// What the result cache does for a statement.
#[derive(Default)]
struct ResultCacheUse {
    /// `None`: the cache is off, or the statement is not a query.
    used: Option<CacheUse>,
    /// A miss: where to keep its complete result.
    fill: Option<(CacheKey, Vec<TableVersion>)>,
}

enum Action {
    Plan {
        plan: Arc<dyn ExecutionPlan>,
        task_ctx: Arc<TaskContext>,
        /// How to plan it again should it fail (`retry_policy = QUERY`).
        retry: Option<Box<query_retry::Replanning>>,
        /// Its clients read its result at the workers ([`Prepared::serve_at_workers`]).
        served: Option<Arc<ServedAtWorkers>>,
    },
    CreateTableAs(Box<CreateTableAs>),
    CreateTable {
        ident: TableIdent,
        schema: Box<IcebergSchema>,
        layout: Box<TableLayout>,
        location: Option<String>,
        comment: Option<String>,
        if_not_exists: bool,
        or_replace: bool,
        gate: Arc<CommitGate>,
    },
    CreateSchema {
        namespace: NamespaceIdent,
        if_not_exists: bool,
    },
    DropTable {
        ident: TableIdent,
        if_exists: bool,
    },
    DropSchema {
        namespace: NamespaceIdent,
        if_exists: bool,
        cascade: bool,
    },
    ExplainAnalyze {
        plan: Arc<dyn ExecutionPlan>,
        task_ctx: Arc<TaskContext>,
    },
    ChangeTable(alter::TableChange),
    ChangeView(views::ViewChange),
    ChangeRows(Box<row_changes::RowChangePlan>),
    /// `ALTER TABLE t EXECUTE ...`, planned in `state` when it runs.
    TableProcedure {
        procedure: procedures::TableProcedure,
        state: Box<SessionState>,
    },
    /// Rows the result cache had.
    Cached(CachedResult),
    /// `kill_query`, on behalf of `user`.
    KillQuery {
        query_id: String,
        message: Option<String>,
        user: String,
    },
}

/// A planned CREATE TABLE AS.
struct CreateTableAs {
    ident: TableIdent,
    table_ref: TableReference,
    input: LogicalPlan,
    if_not_exists: bool,
    or_replace: bool,
    /// Partitioning, sort order and location.
    properties: TableProperties,
    state: SessionState,
    gate: Arc<CommitGate>,
}

impl Prepared {
    pub fn kind(&self) -> StatementKind {
        self.kind
    }

    /// The schema of the rows the statement returns; DDL and DML return one row in
    /// [`StatementKind::command_result`]'s shape.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    /// Where its plan's tasks go, once it runs, and what they did (no tasks when it runs on
    /// the coordinator alone); `None` unless it runs a plan.
    pub fn task_ledger(&self) -> Option<Arc<TaskLedger>> {
        let Action::Plan { plan, task_ctx, .. } = &self.action else {
            return None;
        };
        let ledger = task_ctx.session_config().get_extension::<TaskLedger>()?;
        ledger.set_plan(plan);
        Some(ledger)
    }

    /// The gate between its commit and a cancel: an INSERT's, a CREATE TABLE's (AS), a
    /// DELETE's, UPDATE's or MERGE's; `None` for anything else.
    pub fn commit_gate(&self) -> Option<Arc<CommitGate>> {
        match &self.action {
            Action::Plan { task_ctx, .. } => task_ctx.session_config().get_extension(),
            Action::CreateTableAs(ctas) => Some(Arc::clone(&ctas.gate)),
            Action::CreateTable { gate, .. } => Some(Arc::clone(gate)),
            Action::ChangeRows(plan) => Some(Arc::clone(&plan.gate)),
            _ => None,
        }
    }

    /// Its share of the coordinator's memory pool; `None` unless it runs a plan.
    pub fn memory(&self) -> Option<Arc<QueryMemory>> {
        let Action::Plan { task_ctx, .. } = &self.action else {
            return None;
        };
        task_ctx.session_config().get_extension::<QueryMemory>()
    }

    /// What the result cache did for it (`None`: the cache is off, or not a query).
    pub fn cache_use(&self) -> Option<CacheUse> {
        self.cache.used
    }

    /// The longest it may run, from when it arrived (`query_max_run_time`).
    pub fn max_run_time(&self) -> Option<Duration> {
        self.max_run_time
    }

    /// A query or INSERT that runs its plan is planned again from `replanning` should a run
    /// fail for a reason not its own; anything else is run once.
    fn retry_with(&mut self, replanning: query_retry::Replanning) {
        if let (StatementKind::Query | StatementKind::Insert, Action::Plan { retry, .. }) =
            (self.kind, &mut self.action)
        {
            *retry = Some(Box::new(replanning));
        }
    }

    /// Planning is done: `tracker`'s query starts running this statement.
    pub fn mark_running(&self, tracker: &QueryTracker) {
        if let Action::Plan {
            served: Some(served),
            ..
        } = &self.action
        {
            served.report_to(Arc::clone(tracker.record()));
        }
        tracker.started(self.task_ledger(), self.cache_use(), self.memory());
    }

    /// Has its clients read its result at the workers, one partition of its last stage each,
    /// when it is a query whose coordinator stage would only concatenate that stage (see
    /// [`crate::cluster::WorkerResults`]): where the partitions are, once it runs. Its stream
    /// then yields no rows, and ends when the workers' tasks have; the result is not cached
    /// (it never passes the coordinator) and a failed run is not retried (its clients hold
    /// tickets to it). `schema` is the result's shape the client is told.
    pub fn serve_at_workers(&mut self, schema: &SchemaRef) -> Option<WorkerResults> {
        if self.kind != StatementKind::Query {
            return None;
        }
        let Action::Plan {
            plan,
            retry,
            served,
            ..
        } = &mut self.action
        else {
            return None;
        };
        let (rewritten, serving, results) = serve_at_workers(plan, schema)?;
        *plan = rewritten;
        *retry = None;
        *served = Some(serving);
        self.cache.fill = None;
        Some(results)
    }

    /// The physical plan, for queries and INSERT.
    pub fn plan(&self) -> Option<&Arc<dyn ExecutionPlan>> {
        match &self.action {
            Action::Plan { plan, .. } => Some(plan),
            _ => None,
        }
    }
}

/// The coordinator's query engine.
pub struct Engine {
    settings: EngineSettings,
    channels: Channels,
    provider: Arc<IcebergCatalogProvider>,
    /// The catalogs SQL sees: Iceberg and `system`, with their `information_schema`.
    catalogs: Arc<dyn CatalogProviderList>,
    workers: Arc<WorkerPool>,
    codec: SqeCodec,
    runtime: Arc<RuntimeEnv>,
    /// Where plans run: not on the threads serving clients.
    query_runtime: Arc<QueryRuntime>,
    names_refreshed: Mutex<Option<Instant>>,
    /// Every statement clients ran, for `system.runtime.queries` and `kill_query`.
    history: Arc<QueryHistory>,
    /// Assigns distributed tasks to workers, recording where each went.
    router: Arc<dyn TaskEstimator + Send + Sync>,
    /// Results of queries, kept for the same question from the same user.
    cache: Arc<ResultCache>,
    /// Commits through this coordinator.
    commits: Arc<Commits>,
    /// SQE's own metadata commits (DELETE).
    committer: Arc<dyn sqe_iceberg::commit::CommitUpdates>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("settings", &self.settings)
            .finish()
    }
}

impl StatementKind {
    /// The result schema of a DDL or DML statement run as a query: DML reports `rows` written,
    /// DDL its `result` (the update type, e.g. `CREATE TABLE`).
    pub fn command_schema(self) -> SchemaRef {
        let field = if self.writes_rows() {
            Field::new("rows", DataType::UInt64, false)
        } else {
            Field::new("result", DataType::Utf8, false)
        };
        Arc::new(Schema::new(vec![field]))
    }

    /// Whether the statement writes rows and reports how many.
    pub fn writes_rows(self) -> bool {
        matches!(
            self,
            StatementKind::Insert
                | StatementKind::CreateTableAs
                | StatementKind::Delete
                | StatementKind::Update
                | StatementKind::Merge
                | StatementKind::AlterTableExecute
        )
    }

    /// The one-row result of a DDL or DML statement, in [`Self::command_schema`].
    pub fn command_result(self, rows: Option<u64>) -> Result<RecordBatch> {
        let column: ArrayRef = if self.writes_rows() {
            Arc::new(UInt64Array::from(vec![rows.unwrap_or(0)]))
        } else {
            Arc::new(StringArray::from(vec![self.update_type().unwrap_or("OK")]))
        };
        RecordBatch::try_new(self.command_schema(), vec![column])
            .map_err(|e| Error::Internal(e.to_string()))
    }
}

impl Engine {
    pub async fn new(
        settings: EngineSettings,
        catalog: crate::catalog::ConnectedCatalog,
        workers: Arc<WorkerPool>,
        channels: Channels,
    ) -> Result<Arc<Self>> {
        let mut runtime = RuntimeEnvBuilder::new();
        if let Some(limit) = settings.memory_limit {
            // Spillable operators share the pool fairly: with DataFusion's default greedy pool one
            // sort partition could take it all and leave another none for its merge, failing a
            // query that could have spilled. The five largest consumers are named in refusals.
            runtime = runtime.with_memory_pool(Arc::new(TrackConsumersPool::new(
                FairSpillPool::new(limit),
                std::num::NonZeroUsize::MIN.saturating_add(4),
            )));
        }
        if let Some(directory) = &settings.spill_directory {
            runtime = runtime.with_disk_manager_builder(
                DiskManagerBuilder::default()
                    .with_mode(DiskManagerMode::Directories(vec![directory.clone()])),
            );
        }
        let runtime = runtime.build_arc()?;
        let cache = Arc::new(ResultCache::new(
            settings.cache.clone(),
            Some(&runtime.memory_pool),
        ));
        // Commits through this coordinator are counted and evict the cached results that
        // read the table.
        let commits = Arc::new(Commits::new(vec![
            Arc::clone(&cache) as Arc<dyn sqe_iceberg::write::CommitListener>
        ]));
        let crate::catalog::ConnectedCatalog {
            catalog,
            committer,
            views,
        } = catalog;
        let provider = Arc::new(IcebergCatalogProvider::new(
            catalog,
            views,
            settings.storage_props.clone(),
            Some(Arc::clone(&commits) as Arc<dyn sqe_iceberg::write::CommitListener>),
        ));
        provider.refresh().await?;
        let history = QueryHistory::new(settings.history);
        let catalogs = crate::metadata::catalog_list(
            &settings.catalog_name,
            Arc::clone(&provider) as Arc<dyn CatalogProvider>,
            RuntimeView {
                history: Arc::clone(&history),
                workers: Arc::clone(&workers),
                coordinator: settings.node.clone(),
            },
        )?;
        let codec = SqeCodec::new(settings.storage_props.clone());
        // Twice the threads a query uses: a CPU-bound query that does not yield (nested-loop
        // joins) leaves threads for the next small one; the OS time-slices them.
        let threads = 2 * settings.partitions();
        let query_runtime = QueryRuntime::new("sqe-query", threads)
            .map_err(|e| Error::Internal(format!("cannot start the query runtime: {e}")))?;
        Ok(Arc::new(Self {
            query_runtime,
            settings,
            channels,
            provider,
            catalogs,
            workers,
            codec,
            runtime,
            names_refreshed: Mutex::new(Some(Instant::now())),
            history,
            router: Arc::new(TaskRouter::default()),
            cache,
            commits,
            committer,
        }))
    }

    pub fn result_cache(&self) -> &Arc<ResultCache> {
        &self.cache
    }

    pub fn commits(&self) -> &Arc<Commits> {
        &self.commits
    }

    /// Bytes the running statements hold in the coordinator's memory pool.
    pub fn memory_reserved(&self) -> usize {
        self.runtime.memory_pool.reserved()
    }

    /// The coordinator's memory pool's size; `None` when unbounded.
    pub fn memory_limit(&self) -> Option<usize> {
        match self.runtime.memory_pool.memory_limit() {
            datafusion::execution::memory_pool::MemoryLimit::Finite(bytes) => Some(bytes),
            _ => None,
        }
    }

    /// Keeps the progress of running distributed queries current, asking their workers
    /// through `source` every `interval`.
    pub fn watch_task_progress(
        &self,
        source: Arc<dyn crate::cluster::TaskProgressSource>,
        interval: Duration,
    ) {
        crate::cluster::ProgressPoller::new(&self.history, source).spawn(interval);
    }

    pub fn history(&self) -> &Arc<QueryHistory> {
        &self.history
    }

    pub fn workers(&self) -> &Arc<WorkerPool> {
        &self.workers
    }

    pub fn catalog(&self) -> &Arc<dyn Catalog> {
        self.provider.catalog()
    }

    /// How this coordinator names itself in `system.runtime.nodes`.
    pub fn node(&self) -> &crate::metadata::NodeIdentity {
        &self.settings.node
    }

    pub fn catalog_name(&self) -> &str {
        &self.settings.catalog_name
    }

    /// The schemas (Iceberg namespaces) of the catalog.
    pub async fn schema_names(&self) -> Result<Vec<String>> {
        self.refresh_names(false).await?;
        Ok(self.provider.schema_names())
    }

    /// The tables of `schema` (none when it does not exist).
    pub async fn table_names(&self, schema: &str) -> Result<Vec<String>> {
        self.refresh_names(false).await?;
        Ok(self
            .provider
            .schema(schema)
            .map(|s| s.table_names())
            .unwrap_or_default())
    }

    /// Fails unless `catalog.schema` exists (refreshing cached names first when needed).
    pub async fn require_schema_exists(&self, catalog: &str, schema: &str) -> Result<()> {
        let Some(provider) = self.catalogs.catalog(catalog) else {
            return Err(Error::not_found(ObjectKind::Catalog, catalog));
        };
        if provider.schema(schema).is_none() {
            self.refresh_names(true).await?;
        }
        if provider.schema(schema).is_none() {
            return Err(Error::not_found(
                ObjectKind::Schema,
                format!("{catalog}.{schema}"),
            ));
        }
        Ok(())
    }

    /// The columns of `schema.table`, as DataFusion sees them.
    pub async fn table_schema(&self, schema: &str, table: &str) -> Result<Option<SchemaRef>> {
        let Some(provider) = self.provider.schema(schema) else {
            return Ok(None);
        };
        Ok(provider.table(table).await?.map(|t| t.schema()))
    }

    /// Names are cached for up to [`NAME_CACHE_TTL`]; a schema created elsewhere (another
    /// coordinator, another engine) in that window must still be found, so a statement naming a
    /// schema the cache does not know refreshes it first.
    async fn refresh_if_schemas_unknown(
        &self,
        state: &SessionState,
        statement: &datafusion::sql::parser::Statement,
    ) -> Result<()> {
        let options = state.config().options();
        let default_schema = options.catalog.default_schema.clone();
        let default_catalog = options.catalog.default_catalog.clone();
        let unknown = state.resolve_table_references(statement)?.iter().any(|t| {
            let catalog = t.catalog().unwrap_or(&default_catalog);
            let schema = t.schema().unwrap_or(&default_schema);
            catalog == self.settings.catalog_name && self.provider.schema(schema).is_none()
        });
        if unknown {
            self.refresh_names(true).await?;
        }
        Ok(())
    }

    async fn refresh_names(&self, force: bool) -> Result<()> {
        let stale = self
            .names_refreshed
            .lock()
            .is_none_or(|t| t.elapsed() > NAME_CACHE_TTL);
        if force || stale {
            self.provider.refresh().await?;
            {
                let mut t = self.names_refreshed.lock();
                *t = Some(Instant::now());
            }
        }
        Ok(())
    }

    /// The bounds session properties are checked against.
    pub fn property_limits(&self) -> PropertyLimits {
        PropertyLimits {
            max_run_time: self.settings.query_max_run_time,
            retry_policy: self.settings.retry_policy,
            query_retry_attempts: self.settings.query_retry_attempts,
            exchange_compression: self.settings.exchange_compression,
            default_concurrency: self.settings.partitions(),
        }
    }

    /// A DataFusion session for one statement. It plans distributed when at least one worker
    /// is reachable and the session allows it, and for the coordinator alone otherwise.
    pub fn session_state(&self, session: &SessionSettings) -> Result<SessionState> {
        self.session_state_with(session, true)
    }

    fn session_state_with(
        &self,
        session: &SessionSettings,
        distributable: bool,
    ) -> Result<SessionState> {
        let catalog = session
            .catalog
            .as_deref()
            .unwrap_or(&self.settings.catalog_name);
        let schema = session
            .schema
            .as_deref()
            .unwrap_or(crate::catalog::DEFAULT_SCHEMA);
        let properties = &session.properties;
        let mut config = SessionConfig::new()
            // What system.runtime shows this session.
            .with_extension(Arc::new(self.viewer(&session.user)))
            .with_information_schema(false)
            .with_create_default_catalog_and_schema(false)
            .with_default_catalog_and_schema(catalog, schema);
        let distributed = distributable
            && properties.distributed_execution != Some(false)
            && !self.workers.reachable_urls().is_empty();
        let partitions = properties
            .task_concurrency
            .unwrap_or_else(|| self.settings.partitions());
        // With one partition DataFusion plans no repartitioning: an aggregate or join then
        // relies on seeing the whole input in its one partition, while datafusion-distributed
        // still splits the scans under it over tasks, and each task answered for its share
        // alone (TPC-H Q15 found two suppliers of the top revenue). Two keep those operators
        // behind an exchange.
        let partitions = if distributed {
            partitions.max(2)
        } else {
            partitions
        };
        config = config.with_target_partitions(partitions);
        // Trino's session zone (UTC unless the client names one): what `now()` and
        // `current_timezone()` answer in, and the zone `timestamp with time zone` casts take.
        let zone = session.time_zone.clone().unwrap_or_else(|| "UTC".into());
        zone.parse::<datafusion::arrow::array::timezone::Tz>()
            .map_err(|_| {
                Error::invalid(
                    ErrorCode::GenericUserError,
                    format!("Time zone not supported: {zone}"),
                )
            })?;
        config.options_mut().execution.time_zone = Some(zone.clone());
        let parser = &mut config.options_mut().sql_parser;
        // Trino sorts NULLs last whichever the direction, and reads `1.5` as decimal(2,1).
        parser.default_null_ordering = "nulls_last".into();
        parser.parse_float_as_decimal = true;
        let join = properties.join_distribution();
        let optimizer = &mut config.options_mut().optimizer;
        match join {
            JoinDistribution::Automatic => {}
            JoinDistribution::Partitioned => {
                optimizer.hash_join_single_partition_threshold = 0;
                optimizer.hash_join_single_partition_threshold_rows = 0;
            }
            JoinDistribution::Broadcast => {
                optimizer.hash_join_single_partition_threshold = usize::MAX;
                optimizer.hash_join_single_partition_threshold_rows = usize::MAX;
            }
        }
        let builder = SessionStateBuilder::new()
            // Asked before DataFusion's own planners, which the default features add.
            .with_expr_planners(vec![Arc::new(TrinoPlanner::default())])
            .with_default_features()
            .with_physical_optimizer_rules(physical_optimizer_rules())
            .with_type_planner(Arc::new(TrinoTypes {
                session_zone: zone.clone(),
            }))
            .with_config(config)
            .with_runtime_env(Arc::clone(&self.runtime))
            .with_catalog_list(Arc::clone(&self.catalogs));
        let builder = match properties.join_reordering() {
            JoinReordering::Automatic => {
                builder.with_optimizer_rule(Arc::new(join_order::ReorderJoins))
            }
            JoinReordering::EliminateCrossJoins | JoinReordering::None => builder,
        };
        let builder = if distributed {
            builder
                .with_distributed_worker_resolver(PoolResolver(Arc::clone(&self.workers)))
                // In the workers' order (sqe_worker::server): a node names its codec by position.
                .with_distributed_user_codec(self.codec.clone())
                .with_distributed_user_codec(TpchCodec)
                .with_distributed_channel_resolver(Arc::clone(&self.channels))
                // First: a join that must see its whole build side keeps its stage in one task.
                .with_distributed_task_estimator(WholeBuildSides)
                .with_distributed_task_estimator(IcebergTaskEstimator)
                .with_distributed_task_estimator(TpchTaskEstimator)
                .with_distributed_task_estimator(Arc::clone(&self.router))
                .with_distributed_file_scan_config_bytes_per_partition(
                    self.settings.scan_bytes_per_partition,
                )?
                // Scans report row counts, so DataFusion builds small join sides whole
                // (CollectLeft); broadcasting them keeps the probe side spread over workers.
                .with_distributed_broadcast_joins(join != JoinDistribution::Partitioned)?
                .with_distributed_compression(
                    properties
                        .exchange_compression_codec
                        .unwrap_or(self.settings.exchange_compression)
                        .compression_type(),
                )?
                .with_distributed_planner()
        } else {
            builder
        };
        let mut state = builder.build();
        // As in Trino, what the client set: NULL when it set none, though unqualified names
        // still resolve against the defaults.
        let context = SessionContext {
            user: session.user.clone(),
            catalog: session.catalog.clone(),
            schema: session.schema.clone(),
            time_zone: zone,
        };
        for function in sqe_functions::scalar_functions()
            .into_iter()
            .chain(session_functions(&context))
        {
            state.register_udf(function)?;
        }
        for function in sqe_functions::aggregate_functions() {
            state.register_udaf(function)?;
        }
        for function in sqe_functions::window_functions() {
            state.register_udwf(function)?;
        }
        for function in sqe_functions::lambdas::lambda_functions() {
            state.register_higher_order_function(function)?;
        }
        // Trino's array_remove removes every match: DataFusion's array_remove_all.
        state.register_udf(Arc::new(
            datafusion::functions_nested::remove::array_remove_all_udf()
                .as_ref()
                .clone()
                .with_aliases(["array_remove"]),
        ))?;
        Ok(state)
    }

    /// Parses and plans one statement. DDL is checked here and carried out by [`Self::run`].
    pub async fn prepare(&self, session: &SessionSettings, sql: &str) -> Result<Prepared> {
        let template = self.template(session, sql).await?;
        self.bind(&template, Vec::new()).await
    }

    async fn prepare_logical(
        &self,
        state: SessionState,
        logical: LogicalPlan,
        properties: TableProperties,
    ) -> Result<Prepared> {
        let command = |kind: StatementKind, action| Prepared {
            kind,
            schema: kind.command_schema(),
            action,
            max_run_time: None,
            cache: ResultCacheUse::default(),
        };
        let logical = self.partition_overwrites(logical)?;
        match logical {
            LogicalPlan::Ddl(DdlStatement::CreateMemoryTable(create)) => {
                if create.or_replace && create.if_not_exists {
                    return Err(Error::Syntax {
                        message: "CREATE OR REPLACE TABLE takes no IF NOT EXISTS".into(),
                        location: None,
                    });
                }
                if create.temporary {
                    return Err(Error::NotSupported("temporary tables".into()));
                }
                if !create.column_defaults.is_empty() {
                    return Err(Error::NotSupported("column DEFAULT values".into()));
                }
                if create.or_replace
                    && (properties.comment.is_some() || !properties.column_comments.is_empty())
                {
                    return Err(Error::NotSupported(
                        "COMMENT in CREATE OR REPLACE TABLE: set it with COMMENT ON afterwards"
                            .into(),
                    ));
                }
                let ident = self.table_ident(&state, &create.name)?;
                let input = Arc::unwrap_or_clone(create.input);
                if let LogicalPlan::EmptyRelation(empty) = &input
                    && !empty.produce_one_row
                {
                    let schema = properties.documented(iceberg_schema_for(
                        &properties.typed(empty.schema.as_arrow()),
                        false,
                    )?)?;
                    let layout = TableLayout::new(&schema, &properties)?;
                    return Ok(command(
                        StatementKind::CreateTable,
                        Action::CreateTable {
                            ident,
                            schema: Box::new(schema),
                            layout: Box::new(layout),
                            location: properties.location,
                            comment: properties.comment,
                            if_not_exists: create.if_not_exists,
                            or_replace: create.or_replace,
                            gate: Arc::default(),
                        },
                    ));
                }
                // Refuse unstorable column types and bad partitioning now, before anything is created.
                let schema = iceberg_schema_for(input.schema().as_arrow(), true)?;
                TableLayout::new(&schema, &properties)?;
                Ok(command(
                    StatementKind::CreateTableAs,
                    Action::CreateTableAs(Box::new(CreateTableAs {
                        ident,
                        table_ref: create.name,
                        input,
                        if_not_exists: create.if_not_exists,
                        or_replace: create.or_replace,
                        properties,
                        state,
                        gate: Arc::default(),
                    })),
                ))
            }
            LogicalPlan::Ddl(DdlStatement::CreateCatalogSchema(create)) => {
                let namespace = self.namespace_ident(&state, &create.schema_name)?;
                Ok(command(
                    StatementKind::CreateSchema,
                    Action::CreateSchema {
                        namespace,
                        if_not_exists: create.if_not_exists,
                    },
                ))
            }
            LogicalPlan::Ddl(DdlStatement::DropTable(drop)) => {
                let ident = self.table_ident(&state, &drop.name)?;
                Ok(command(
                    StatementKind::DropTable,
                    Action::DropTable {
                        ident,
                        if_exists: drop.if_exists,
                    },
                ))
            }
            LogicalPlan::Ddl(DdlStatement::DropCatalogSchema(drop)) => {
                let name = match &drop.name {
                    SchemaReference::Bare { schema } => schema.to_string(),
                    SchemaReference::Full { schema, catalog } => format!("{catalog}.{schema}"),
                };
                let namespace = self.namespace_ident(&state, &name)?;
                Ok(command(
                    StatementKind::DropSchema,
                    Action::DropSchema {
                        namespace,
                        if_exists: drop.if_exists,
                        cascade: drop.cascade,
                    },
                ))
            }
            LogicalPlan::Ddl(other) => Err(Error::NotSupported(format!(
                "{}: SQE stores tables in its Iceberg catalog; use CREATE TABLE, CREATE TABLE AS, CREATE SCHEMA or DROP",
                other.name()
            ))),
            LogicalPlan::Dml(DmlStatement {
                op: WriteOp::Insert(_),
                ..
            }) => {
                let plan = physical_plan(&state, &logical).await?;
                Ok(Prepared {
                    kind: StatementKind::Insert,
                    schema: StatementKind::Insert.command_schema(),
                    action: Action::Plan {
                        plan,
                        task_ctx: Arc::new(TaskContext::from(&state)),
                        retry: None,
                        served: None,
                    },
                    max_run_time: None,
                    cache: ResultCacheUse::default(),
                })
            }
            LogicalPlan::Dml(
                dml @ DmlStatement {
                    op: WriteOp::Delete | WriteOp::Truncate | WriteOp::Update,
                    ..
                },
            ) => {
                let kind = match dml.op {
                    WriteOp::Truncate => StatementKind::Truncate,
                    WriteOp::Update => StatementKind::Update,
                    _ => StatementKind::Delete,
                };
                let plan = self.plan_row_changes(&state, dml).await?;
                Ok(command(kind, Action::ChangeRows(Box::new(plan))))
            }
            LogicalPlan::Dml(dml) => {
                Err(Error::NotSupported(format!("{} on Iceberg tables", dml.op)))
            }
            LogicalPlan::Statement(statement) => Err(Error::NotSupported(format!(
                "statement {}",
                statement.name()
            ))),
            LogicalPlan::Copy(_) => Err(Error::NotSupported("COPY".into())),
            LogicalPlan::Explain(explain) if !explain.verbose => {
                let inner = Arc::unwrap_or_clone(explain.plan);
                join_order::load_join_statistics(&state, &inner).await;
                let optimized = state.optimize(&inner)?;
                let physical = physical_plan(&state, &inner).await?;
                let batch = explain_batch(&[
                    ("logical_plan", optimized.display_indent().to_string()),
                    ("physical_plan", render_plan(&physical, false)),
                ])?;
                let plan =
                    MemorySourceConfig::try_new_exec(&[vec![batch]], explain_schema(), None)?;
                Ok(Prepared {
                    kind: StatementKind::Query,
                    schema: explain_schema(),
                    action: Action::Plan {
                        plan,
                        task_ctx: Arc::new(TaskContext::from(&state)),
                        retry: None,
                        served: None,
                    },
                    max_run_time: None,
                    cache: ResultCacheUse::default(),
                })
            }
            LogicalPlan::Analyze(analyze) => {
                let inner = Arc::unwrap_or_clone(analyze.input);
                let plan = physical_plan(&state, &inner).await?;
                Ok(Prepared {
                    kind: StatementKind::Query,
                    schema: explain_schema(),
                    action: Action::ExplainAnalyze {
                        plan,
                        task_ctx: Arc::new(TaskContext::from(&state)),
                    },
                    max_run_time: None,
                    cache: ResultCacheUse::default(),
                })
            }
            query => {
                let plan = physical_plan(&state, &query).await?;
                Ok(Prepared {
                    kind: StatementKind::Query,
                    schema: plan.schema(),
                    action: Action::Plan {
                        plan,
                        task_ctx: Arc::new(TaskContext::from(&state)),
                        retry: None,
                        served: None,
                    },
                    max_run_time: None,
                    cache: ResultCacheUse::default(),
                })
            }
        }
    }

    /// Plans and runs one statement.
    pub async fn execute(
        self: &Arc<Self>,
        session: &SessionSettings,
        sql: &str,
    ) -> Result<Outcome> {
        let prepared = self.prepare(session, sql).await?;
        self.run(prepared).await
    }

    /// Runs a prepared statement to its end (see [`Self::run_cancellable`]).
    pub async fn run(self: &Arc<Self>, prepared: Prepared) -> Result<Outcome> {
        self.run_cancellable(prepared, CancellationToken::new())
            .await
    }

    /// Runs a prepared statement. `cancel` stops work that runs on its own (CREATE TABLE AS
    /// fills its table in a task of its own, and drops it again when cancelled); streams stop
    /// when they are dropped.
    pub async fn run_cancellable(
        self: &Arc<Self>,
        prepared: Prepared,
        cancel: CancellationToken,
    ) -> Result<Outcome> {
        let kind = prepared.kind;
        let fill = prepared.cache.fill;
        let outcome = match prepared.action {
            Action::Cached(result) => Outcome::Rows(Box::pin(MemoryStream::try_new(
                result.batches,
                result.schema,
                None,
            )?)),
            Action::Plan {
                plan,
                task_ctx,
                retry,
                served,
            } => {
                let stream = self.query_runtime.execute(plan, Arc::clone(&task_ctx));
                let stream = match served {
                    Some(served) => served.counted(stream),
                    None => stream,
                };
                let stream = match retry {
                    Some(replanning) => query_retry::retrying(
                        stream,
                        *replanning,
                        Arc::clone(&self.query_runtime),
                        task_ctx,
                    ),
                    None => stream,
                };
                let stream: SendableRecordBatchStream = match fill {
                    Some((key, tables)) => Box::pin(CachingStream::new(
                        stream,
                        Arc::clone(&self.cache),
                        key,
                        tables,
                    )),
                    None => stream,
                };
                if kind == StatementKind::Insert {
                    Outcome::Updated {
                        rows: Some(count_rows(stream).await?),
                    }
                } else {
                    Outcome::Rows(stream)
                }
            }
            Action::CreateTableAs(ctas) => {
                // Its own task: a client that goes away must not stop it between creating the
                // table and filling (or dropping) it.
                let engine = Arc::clone(self);
                let ctas = sqe_layers::task::spawn(
                    async move { engine.create_table_as(*ctas, cancel).await }
                        .instrument(tracing::Span::current()),
                );
                let rows = ctas
                    .await
                    .map_err(|e| Error::Internal(format!("CREATE TABLE AS task failed: {e}")))??;
                Outcome::Updated { rows: Some(rows) }
            }
            Action::CreateTable {
                ident,
                schema,
                layout,
                location,
                comment,
                if_not_exists,
                or_replace,
                gate,
            } => {
                if or_replace && self.catalog().table_exists(&ident).await? {
                    let stop = crate::stopping::Stop { gate, cancel };
                    // Boxed: its future would make every statement's as large.
                    Box::pin(self.replace_table(&ident, *schema, *layout, location, None, stop))
                        .await?;
                } else if !(if_not_exists && self.catalog().table_exists(&ident).await?) {
                    if !gate.begin() {
                        return Err(Error::Cancelled);
                    }
                    // Boxed: its future would make every statement's as large.
                    Box::pin(self.create_table(&ident, *schema, *layout, location, comment))
                        .await?;
                }
                Outcome::Updated { rows: None }
            }
            Action::CreateSchema {
                namespace,
                if_not_exists,
            } => {
                check_new_namespace(&namespace)?;
                if !(if_not_exists && self.catalog().namespace_exists(&namespace).await?) {
                    self.catalog()
                        .create_namespace(&namespace, HashMap::new())
                        .await?;
                }
                Outcome::Updated { rows: None }
            }
            Action::DropTable { ident, if_exists } => {
                // A missing schema means a missing table (the catalog would name its namespace).
                let schema_exists = self.catalog().namespace_exists(ident.namespace()).await?;
                if schema_exists && self.catalog().table_exists(&ident).await? {
                    self.catalog().purge_table(&ident).await?;
                    self.cache.invalidate_table(&ident);
                } else if !if_exists {
                    return Err(Error::not_found(ObjectKind::Table, ident.to_string()));
                }
                Outcome::Updated { rows: None }
            }
            Action::DropSchema {
                namespace,
                if_exists,
                cascade,
            } => {
                self.drop_schema(&namespace, if_exists, cascade).await?;
                self.cache.invalidate_namespace(&namespace);
                Outcome::Updated { rows: None }
            }
            Action::KillQuery {
                query_id,
                message,
                user,
            } => {
                self.kill_query(&query_id, &user, message.as_deref())?;
                Outcome::Updated { rows: None }
            }
            Action::ChangeTable(change) => {
                self.alter_table(change).await?;
                Outcome::Updated { rows: None }
            }
            Action::ChangeView(change) => {
                self.change_view(change).await?;
                Outcome::Updated { rows: None }
            }
            Action::TableProcedure { procedure, state } => Outcome::Updated {
                // Boxed: its future would make every statement's as large.
                rows: Box::pin(self.run_table_procedure(procedure, *state, cancel)).await?,
            },
            Action::ChangeRows(plan) => {
                let rows = self.change_rows(*plan, cancel).await?;
                Outcome::Updated {
                    rows: (kind != StatementKind::Truncate).then_some(rows),
                }
            }
            Action::ExplainAnalyze { plan, task_ctx } => {
                let rows: u64 = self
                    .query_runtime
                    .execute(Arc::clone(&plan), task_ctx)
                    .try_fold(0u64, |n, b| async move { Ok(n + b.num_rows() as u64) })
                    .await?;
                let plan = rewrite_distributed_plan_with_metrics(
                    plan,
                    DistributedMetricsFormat::Aggregated,
                )
                .await?;
                let batch = explain_batch(&[
                    ("output_rows", rows.to_string()),
                    ("physical_plan_with_metrics", render_plan(&plan, true)),
                ])?;
                let stream =
                    MemorySourceConfig::try_new_exec(&[vec![batch]], explain_schema(), None)?
                        .execute(0, Arc::new(TaskContext::default()))?;
                Outcome::Rows(stream)
            }
        };
        if !matches!(
            kind,
            StatementKind::Query
                | StatementKind::Insert
                | StatementKind::Delete
                | StatementKind::Truncate
                | StatementKind::Update
                | StatementKind::Merge
                | StatementKind::Call
        ) {
            // The statement is done; a failed refresh must not report it as failed.
            if let Err(e) = self.refresh_names(true).await {
                tracing::warn!(error = %e, "could not refresh catalog names after DDL");
            }
        }
        Ok(outcome)
    }

    /// `state` for one execution: its own task ledger, and its own share of the memory pool
    /// (a prepared statement run again, or twice at once, must not share them).
    pub(crate) fn execution_state(&self, state: SessionState) -> Result<SessionState> {
        let memory = Arc::new(QueryMemory::new(Arc::clone(&self.runtime.memory_pool)));
        let runtime = RuntimeEnvBuilder::from_runtime_env(&self.runtime)
            .with_memory_pool(Arc::clone(&memory) as _)
            .build_arc()?;
        let mut state = SessionStateBuilder::new_from_existing(state)
            .with_runtime_env(runtime)
            .build();
        state
            .config_mut()
            .set_extension(Arc::new(TaskLedger::default()));
        state.config_mut().set_extension(memory);
        // Workers get the query's trace context with every task (datafusion-distributed sends
        // them from its own spawned tasks, outside the query's span).
        let trace_context = sqe_layers::trace::context_headers(&tracing::Span::current());
        if !trace_context.is_empty() {
            state.set_distributed_passthrough_headers(trace_context)?;
        }
        Ok(state)
    }

    /// Who `user` is to the query history: an administrator sees every query.
    pub fn viewer(&self, user: &str) -> Viewer {
        Viewer {
            user: user.to_string(),
            admin: self.settings.admin_users.iter().any(|a| a == user),
        }
    }

    /// Cancels a running query of `user` (any query, for an administrator), as Trino's
    /// `kill_query` does.
    fn kill_query(&self, query_id: &str, user: &str, message: Option<&str>) -> Result<()> {
        self.history
            .kill(query_id, &self.viewer(user), message)
            .map_err(|e| match e {
                KillError::NotFound => Error::not_found(ObjectKind::Query, query_id),
                KillError::NotOwner => {
                    Error::PermissionDenied(format!("Cannot kill query {query_id} of another user"))
                }
                KillError::AlreadyEnded(_) => Error::invalid(
                    ErrorCode::GenericUserError,
                    format!("Target query is not running: {query_id}"),
                ),
            })
    }

    async fn create_table(
        &self,
        ident: &TableIdent,
        schema: IcebergSchema,
        layout: TableLayout,
        location: Option<String>,
        comment: Option<String>,
    ) -> Result<iceberg::table::Table> {
        check_new_table_name(ident)?;
        let location = location
            .map(|l| self.settings.table_locations.check(&l))
            .transpose()?;
        if self.catalog().table_exists(ident).await?
            || self.provider.views().load_view(ident).await?.is_some()
        {
            return Err(Error::already_exists(ObjectKind::Table, ident.to_string()));
        }
        let creation = TableCreation::builder()
            .name(ident.name().to_string())
            .schema(schema)
            .partition_spec_opt(layout.partition)
            .sort_order_opt(layout.sort_order)
            .location_opt(location)
            .properties(
                comment
                    .map(|text| (alter::COMMENT_PROPERTY.to_string(), text))
                    .into_iter()
                    .collect::<std::collections::HashMap<_, _>>(),
            )
            .build();
        Ok(self
            .catalog()
            .create_table(ident.namespace(), creation)
            .await?)
    }

    /// Creates the table, then fills it with one insert; if the insert fails the table is
    /// dropped again, so a failed CREATE TABLE AS leaves nothing behind.
    async fn create_table_as(&self, ctas: CreateTableAs, cancel: CancellationToken) -> Result<u64> {
        let CreateTableAs {
            ident,
            table_ref,
            input,
            if_not_exists,
            or_replace,
            properties,
            state,
            gate,
        } = ctas;
        let stop = crate::stopping::Stop { gate, cancel };
        let location = properties.location.clone();
        let comment = properties.comment.clone();
        if if_not_exists && self.catalog().table_exists(&ident).await? {
            return Ok(0);
        }
        let schema = iceberg_schema_for(input.schema().as_arrow(), true)?;
        let layout = TableLayout::new(&schema, &properties)?;
        let fill = replace_table::Fill {
            table_ref,
            input,
            state,
        };
        if or_replace && self.catalog().table_exists(&ident).await? {
            return Box::pin(self.replace_table(
                &ident,
                schema,
                layout,
                location,
                Some(fill),
                stop,
            ))
            .await
            .map(|rows| rows.unwrap_or(0));
        }
        let table = self
            .create_table(&ident, schema, layout, location, comment)
            .await?;
        match self
            .insert_fill(table, fill, WriteCommit::Append, stop)
            .await
        {
            Ok(rows) => Ok(rows),
            Err(e) => {
                if let Err(drop_err) = self.catalog().purge_table(&ident).await {
                    tracing::error!(table = %ident, error = %drop_err, "could not drop the table of a failed CREATE TABLE AS");
                }
                Err(e)
            }
        }
    }

    async fn drop_schema(
        &self,
        namespace: &NamespaceIdent,
        if_exists: bool,
        cascade: bool,
    ) -> Result<()> {
        if !self.catalog().namespace_exists(namespace).await? {
            if if_exists {
                return Ok(());
            }
            return Err(Error::not_found(ObjectKind::Schema, namespace.join(".")));
        }
        let tables = self.catalog().list_tables(namespace).await?;
        let views = self.provider.views().list_views(namespace).await?;
        if !(cascade || tables.is_empty() && views.is_empty()) {
            return Err(Error::invalid(
                ErrorCode::SchemaNotEmpty,
                format!(
                    "schema {} is not empty ({} tables, {} views); use DROP SCHEMA ... CASCADE",
                    namespace.join("."),
                    tables.len(),
                    views.len()
                ),
            ));
        }
        for view in views {
            let view = TableIdent::new(namespace.clone(), view);
            self.provider.views().drop_view(&view).await?;
        }
        for table in &tables {
            self.catalog().purge_table(table).await?;
        }
        self.catalog().drop_namespace(namespace).await?;
        Ok(())
    }

    fn check_catalog(&self, catalog: Option<&str>) -> Result<()> {
        match catalog {
            Some(crate::metadata::SYSTEM_CATALOG) => Err(Error::NotSupported(
                "changing the system catalog: it is read-only".into(),
            )),
            Some(sqe_tpch::TPCH_CATALOG) => Err(Error::NotSupported(
                "changing the tpch catalog: its tables are generated and read-only".into(),
            )),
            Some(c) if c != self.settings.catalog_name => {
                Err(Error::not_found(ObjectKind::Catalog, c))
            }
            _ => Ok(()),
        }
    }

    fn table_ident(&self, state: &SessionState, name: &TableReference) -> Result<TableIdent> {
        let defaults = &state.config_options().catalog;
        let resolved = name
            .clone()
            .resolve(&defaults.default_catalog, &defaults.default_schema);
        self.check_catalog(Some(&resolved.catalog))?;
        Ok(TableIdent::new(
            NamespaceIdent::new(resolved.schema.to_string()),
            resolved.table.to_string(),
        ))
    }

    fn namespace_ident(&self, _state: &SessionState, name: &str) -> Result<NamespaceIdent> {
        if name.split('.').any(str::is_empty) {
            // `".."` or `"../x"`: not a name SQE can tell apart from its parts.
            return Err(Error::invalid(
                ErrorCode::NotSupported,
                format!(
                    "Invalid schema name '{}': it has an empty part",
                    name.escape_debug()
                ),
            ));
        }
        let (catalog, schema) = match name.split_once('.') {
            Some((c, s)) => (Some(c), s),
            None => (None, name),
        };
        self.check_catalog(catalog)?;
        if schema.contains('.') {
            // Iceberg namespaces can nest; Trino's schemas (and SQE's) are one level.
            return Err(Error::invalid(
                ErrorCode::SyntaxError,
                format!("Too many parts in schema name: {name}"),
            ));
        }
        Ok(NamespaceIdent::new(schema.to_string()))
    }
}

/// A new schema's name stays one segment of its tables' locations.
fn check_new_namespace(namespace: &NamespaceIdent) -> Result<()> {
    namespace
        .iter()
        .try_for_each(|part| check_new_name("schema", part))
}

/// A new table's schema and name each stay one segment of its location.
pub(crate) fn check_new_table_name(ident: &TableIdent) -> Result<()> {
    check_new_namespace(ident.namespace())?;
    check_new_name("table", ident.name())?;
    // A name read as a table's past or its metadata could never be looked up itself.
    match crate::catalog::Addressed::parse(ident.name()) {
        (_, crate::catalog::Addressed::Current) => Ok(()),
        (table, _) => Err(Error::invalid(
            ErrorCode::NotSupported,
            format!(
                "Invalid table name '{}': it reads as a state of table '{table}'",
                ident.name()
            ),
        )),
    }
}

pub(crate) fn explain_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("plan_type", DataType::Utf8, false),
        Field::new("plan", DataType::Utf8, false),
    ]))
}

fn explain_batch(rows: &[(&str, String)]) -> Result<RecordBatch> {
    let types = StringArray::from_iter_values(rows.iter().map(|(t, _)| *t));
    let plans = StringArray::from_iter_values(rows.iter().map(|(_, p)| p.as_str()));
    RecordBatch::try_new(explain_schema(), vec![Arc::new(types), Arc::new(plans)])
        .map_err(|e| Error::Internal(e.to_string()))
}

/// Physical planning, distributed planning included (the distributed planner is one of its
/// rules), in its own span.
async fn physical_plan(
    state: &SessionState,
    logical: &LogicalPlan,
) -> Result<Arc<dyn ExecutionPlan>> {
    let span = tracing::info_span!("plan.physical", distributed = tracing::field::Empty);
    join_order::load_join_statistics(state, logical)
        .instrument(span.clone())
        .await;
    let plan = state
        .create_physical_plan(logical)
        .instrument(span.clone())
        .await?;
    let plan = crate::cluster::head_on_workers(plan, state.config_options())?;
    span.record("distributed", plan.is::<DistributedExec>());
    Ok(plan)
}

/// A plan as text: distributed plans show their stages and tasks.
pub fn render_plan(plan: &Arc<dyn ExecutionPlan>, with_metrics: bool) -> String {
    if plan.is::<DistributedExec>() {
        display_plan_ascii(plan.as_ref(), with_metrics)
    } else if with_metrics {
        DisplayableExecutionPlan::with_metrics(plan.as_ref())
            .indent(true)
            .to_string()
    } else {
        DisplayableExecutionPlan::new(plan.as_ref())
            .indent(true)
            .to_string()
    }
}

/// Reads the single `count` row a write plan produces.
async fn count_rows(stream: SendableRecordBatchStream) -> Result<u64> {
    let batches: Vec<RecordBatch> = stream.try_collect().await?;
    let mut total = 0;
    for batch in &batches {
        if let Some(column) = batch.column(0).as_primitive_opt::<UInt64Type>() {
            total += column.iter().flatten().sum::<u64>();
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_names_storage_properties_but_not_their_values() {
        let settings = EngineSettings {
            storage_props: HashMap::from([(
                "s3.secret-access-key".to_string(),
                "hidden-s3-key".to_string(),
            )]),
            ..EngineSettings::default()
        };
        let shown = format!("{settings:?}");
        assert!(!shown.contains("hidden"), "{shown}");
        assert!(shown.contains("s3.secret-access-key"), "{shown}");
    }
}
