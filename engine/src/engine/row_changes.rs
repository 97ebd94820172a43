//! `DELETE FROM t [WHERE …]`, `TRUNCATE TABLE t`, `UPDATE t SET … [WHERE …]` and `MERGE INTO
//! t USING s ON … WHEN …`: the statement selects rows of the table read with each row's file
//! and position (`sqe_iceberg::delete::positions`) by its WHERE (subqueries included), or for
//! MERGE by joining the source to it ([`crate::dialect::merge`]); the positions become position
//! deletes or removed files, new row versions and inserted rows new data files, all in one
//! snapshot. The selection runs on the coordinator. Another writer's commit in between is
//! checked ([`sqe_iceberg::delete::conflict_since`]): the change is rebased onto it unless it
//! touched what the statement read.

use std::sync::Arc;

use datafusion::arrow::array::{AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::compute::{cast, filter_record_batch};
use datafusion::arrow::datatypes::{DataType, Int64Type, SchemaRef};
use datafusion::catalog::{
    CatalogProvider, CatalogProviderList, MemoryCatalogProvider, MemorySchemaProvider,
    SchemaProvider,
};
use datafusion::common::Column;
use datafusion::datasource::{TableProvider, provider_as_source};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::{SessionState, TaskContext};
use datafusion::logical_expr::{
    DmlStatement, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder, Projection, SubqueryAlias,
    TableScan, WriteOp,
};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};
use datafusion::sql::planner::object_name_to_table_reference;
use futures::StreamExt;
use iceberg::TableIdent;
use iceberg::table::Table;
use sqe_iceberg::delete::{
    DeleteError, FILE_COLUMN, POS_COLUMN, RowPositionsProvider, SelectedRows,
};
use sqe_iceberg::table::{IcebergTableProvider, with_iceberg_provider};
use sqe_iceberg::write::{CommitGate, CommitListener, CreatedFiles, WrittenFiles, write_partition};
use tokio_util::sync::CancellationToken;

use super::Engine;
use crate::dialect::merge::{self, ClauseAction};
use crate::error::{Error, ErrorCode, ObjectKind, Result};
use crate::stopping::Stop;

/// Times a row-level change is rebased onto other writers' commits before it gives up (as
/// Iceberg's `commit.retry.num-retries`).
const MAX_REBASES: u32 = 4;

/// A planned DELETE, TRUNCATE, UPDATE or MERGE.
pub(super) struct RowChangePlan {
    ident: TableIdent,
    /// The table as planned; `None`: it has no snapshot, so no rows to change.
    target: Option<Target>,
    /// Where its commit and a cancel of it meet ([`CommitGate`]).
    pub(super) gate: Arc<CommitGate>,
}

struct Target {
    table: Table,
    /// `None`: the table has no snapshot yet (a MERGE can still insert).
    snapshot_id: Option<i64>,
    /// The selected rows' files and positions, and the rows to write.
    selection: Arc<dyn ExecutionPlan>,
    task_ctx: Arc<TaskContext>,
    layout: Layout,
}

/// What the selection's columns are.
enum Layout {
    /// File and position.
    Delete,
    /// File, position and the row's new version (the table's columns).
    Update(SchemaRef),
    /// The clause applied (0: none), file and position (NULL for a source row that matched
    /// none), and the row to write; a clause's action by its number.
    Merge {
        rows: SchemaRef,
        actions: Vec<ClauseAction>,
    },
}

impl Engine {
    /// `dml` (a DELETE, TRUNCATE or UPDATE) checked and planned; nothing is changed yet.
    pub(super) async fn plan_row_changes(
        &self,
        state: &SessionState,
        dml: DmlStatement,
    ) -> Result<RowChangePlan> {
        let ident = self.table_ident(state, &dml.table_name)?;
        let provider = with_iceberg_provider(&dml.target, Clone::clone).ok_or_else(|| {
            Error::NotSupported(format!(
                "{} on {}: it is not an Iceberg table",
                dml.op, dml.table_name
            ))
        })?;
        let Some(snapshot_id) = provider.snapshot_id() else {
            return Ok(RowChangePlan {
                gate: Arc::default(),
                ident,
                target: None,
            });
        };
        let table = provider.table().clone();
        let columns = provider.schema();
        let positions = Arc::new(RowPositionsProvider::try_new(provider)?);
        let scan = LogicalPlan::TableScan(TableScan::try_new(
            dml.table_name.clone(),
            provider_as_source(positions),
            None,
            vec![],
            None,
        )?);
        let selected = match dml.op {
            WriteOp::Truncate => scan,
            _ => over_positions(Arc::unwrap_or_clone(dml.input), scan)?,
        };
        let mut outputs: Vec<Expr> = [FILE_COLUMN, POS_COLUMN]
            .map(|c| Expr::Column(Column::from_name(c)))
            .to_vec();
        let layout = if dml.op == WriteOp::Update {
            Layout::Update(Arc::clone(&columns))
        } else {
            Layout::Delete
        };
        if matches!(layout, Layout::Update(_)) {
            outputs.extend(
                columns
                    .fields()
                    .iter()
                    .map(|f| Expr::Column(Column::from_name(f.name()))),
            );
        }
        let selected = LogicalPlanBuilder::from(selected)
            .project(outputs)?
            .build()?;
        // On the coordinator (DataFusion's own planner, not the distributed one): the selection
        // reads a node the workers do not know.
        let optimized = state.optimize(&selected)?;
        let selection = DefaultPhysicalPlanner::default()
            .create_physical_plan(&optimized, state)
            .await?;
        Ok(RowChangePlan {
            gate: Arc::default(),
            ident,
            target: Some(Target {
                table,
                snapshot_id: Some(snapshot_id),
                selection,
                task_ctx: Arc::new(TaskContext::from(state)),
                layout,
            }),
        })
    }

    /// `sql`, a MERGE, checked and planned against `state`; nothing is changed yet.
    pub(super) async fn plan_merge(
        &self,
        state: &SessionState,
        sql: &str,
    ) -> Result<RowChangePlan> {
        let merge = merge::read(sql)?
            .ok_or_else(|| Error::Internal("a MERGE that does not read as one".into()))?;
        let target = merge::target(&merge)?;
        let table_ref = object_name_to_table_reference(target.name.clone(), true)?;
        let ident = self.table_ident(state, &table_ref)?;
        let provider = state
            .schema_for_ref(table_ref.clone())?
            .table(table_ref.table())
            .await?
            .ok_or_else(|| Error::not_found(ObjectKind::Table, ident.to_string()))?;
        let provider = provider
            .downcast_ref::<IcebergTableProvider>()
            .cloned()
            .ok_or_else(|| {
                Error::NotSupported(format!(
                    "MERGE INTO {table_ref}: it is not an Iceberg table"
                ))
            })?;
        let columns = provider.schema();
        let names: Vec<String> = columns.fields().iter().map(|f| f.name().clone()).collect();
        let snapshot_id = provider.snapshot_id();
        let table = provider.table().clone();
        let (query, actions) = merge::selection(&merge, &names, FILE_COLUMN, POS_COLUMN)?;

        // The target is planned under a catalog of its own, read with its row positions.
        let positions: Arc<dyn TableProvider> = Arc::new(RowPositionsProvider::try_new(provider)?);
        let schema = MemorySchemaProvider::new();
        schema.register_table(merge::TARGET_TABLE.to_string(), positions)?;
        let catalog = MemoryCatalogProvider::new();
        catalog.register_schema(merge::TARGET_SCHEMA, Arc::new(schema))?;
        let catalogs = WithMergeTarget {
            inner: Arc::clone(state.catalog_list()),
            target: Arc::new(catalog),
        };
        let planning = SessionStateBuilder::new_from_existing(state.clone())
            .with_catalog_list(Arc::new(catalogs))
            .build();
        let mut query = query;
        self.expand_views(state, &mut query).await?;
        let selected = planning.statement_to_plan(query).await?;
        let selected = crate::dialect::logical::to_trino(selected)?;
        // The rows written in the table's types, as INSERT converts them.
        let mut outputs: Vec<Expr> = [merge::ACTION_COLUMN, FILE_COLUMN, POS_COLUMN]
            .map(|c| Expr::Column(Column::from_name(c)))
            .to_vec();
        for field in columns.fields() {
            outputs.push(
                Expr::Column(Column::from_name(field.name()))
                    .cast_to(field.data_type(), selected.schema())?
                    .alias(field.name()),
            );
        }
        let selected = LogicalPlanBuilder::from(selected)
            .project(outputs)?
            .build()?;
        let optimized = planning.optimize(&selected)?;
        let selection = DefaultPhysicalPlanner::default()
            .create_physical_plan(&optimized, &planning)
            .await?;
        Ok(RowChangePlan {
            gate: Arc::default(),
            ident,
            target: Some(Target {
                table,
                snapshot_id,
                selection,
                task_ctx: Arc::new(TaskContext::from(&planning)),
                layout: Layout::Merge {
                    rows: columns,
                    actions,
                },
            }),
        })
    }

    /// Selects the rows, writes an UPDATE's new rows, and commits; cancellation is honoured
    /// until the commit starts, which then runs to its end.
    pub(super) async fn change_rows(
        &self,
        plan: RowChangePlan,
        cancel: CancellationToken,
    ) -> Result<u64> {
        let Some(target) = plan.target else {
            return Ok(0);
        };
        let created = CreatedFiles::default();
        let stop = Stop {
            gate: plan.gate,
            cancel,
        };
        let selected = stop
            .unless_stopped(select_and_write(&target, created.clone()))
            .await;
        let (mut selected, written, rows) = match selected {
            Ok(done) => done,
            Err(e) => {
                delete_files(&target.table, &created.locations()).await;
                return Err(e);
            }
        };
        if matches!(target.layout, Layout::Merge { .. }) && selected.has_repeats() {
            delete_files(&target.table, &created.locations()).await;
            return Err(Error::invalid(
                ErrorCode::MergeTargetRowMultipleMatches,
                "One MERGE target table row matched more than one source row",
            ));
        }
        let rows = rows.unwrap_or_else(|| selected.rows());
        // Cancelled from here on, the commit runs to its end and its outcome is the answer.
        if !stop.gate.begin() {
            delete_files(&target.table, &created.locations()).await;
            return Err(Error::Cancelled);
        }
        let committer = Arc::clone(&self.committer);
        let commits = Arc::clone(&self.commits);
        let catalog = Arc::clone(self.catalog());
        let ident = plan.ident;
        let committing = async move {
            let (mut table, mut base) = (target.table, target.snapshot_id);
            let mut rebases = 0;
            let changed = loop {
                let changed = sqe_iceberg::delete::commit_row_changes(
                    &table,
                    base,
                    &mut selected,
                    written.files.clone(),
                    committer.as_ref(),
                )
                .await;
                // Another writer committed first: rebased onto its snapshot unless it changed
                // what this statement read (serializable isolation).
                let overtaken = matches!(&changed, Err(DeleteError::NotApplied(e))
                    if e.kind() == iceberg::ErrorKind::CatalogCommitConflicts);
                if !overtaken || rebases == MAX_REBASES {
                    break changed;
                }
                rebases += 1;
                let now = match catalog.load_table(&ident).await {
                    Ok(now) => now,
                    Err(_) => break changed,
                };
                match sqe_iceberg::delete::conflict_since(&table, base, &now, &selected.files())
                    .await
                {
                    Ok(None) => {}
                    Ok(Some(reason)) => {
                        break Err(DeleteError::NotApplied(iceberg::Error::new(
                            iceberg::ErrorKind::CatalogCommitConflicts,
                            format!("another writer committed first: {reason}"),
                        )));
                    }
                    Err(e) => break Err(DeleteError::NotApplied(e)),
                }
                base = now.metadata().current_snapshot_id();
                table = now;
            };
            let snapshot_id = match changed {
                Ok(snapshot_id) => snapshot_id,
                Err(DeleteError::NotApplied(e)) => {
                    delete_files(&table, &created.locations()).await;
                    return Err(commit_error(&ident, e));
                }
                Err(DeleteError::Unknown(e)) => {
                    return Err(commit_error(&ident, e));
                }
            };
            if snapshot_id.is_some() {
                commits.committed(&ident, snapshot_id);
            }
            Ok::<_, Error>(rows)
        };
        sqe_layers::task::spawn(committing)
            .await
            .map_err(|e| Error::Internal(format!("commit task failed: {e}")))?
    }
}

/// Runs the selection: positions into [`SelectedRows`], rows to write into data files
/// (written while the selection runs; every file created is recorded in `created`), and for a
/// MERGE the number of source rows a clause applied to.
async fn select_and_write(
    target: &Target,
    created: CreatedFiles,
) -> Result<(SelectedRows, WrittenFiles, Option<u64>)> {
    let mut stream = datafusion::physical_plan::execute_stream(
        Arc::clone(&target.selection),
        Arc::clone(&target.task_ctx),
    )?;
    let schema = match &target.layout {
        Layout::Delete => {
            let mut selected = SelectedRows::default();
            while let Some(batch) = stream.next().await {
                selected.add(&batch?)?;
            }
            return Ok((selected, WrittenFiles::default(), None));
        }
        Layout::Update(schema) | Layout::Merge { rows: schema, .. } => Arc::clone(schema),
    };
    let (sender, receiver) = tokio::sync::mpsc::channel(2);
    let rows = Box::pin(RecordBatchStreamAdapter::new(
        schema,
        tokio_stream::wrappers::ReceiverStream::new(receiver),
    ));
    let prefix = format!("{}-change", uuid::Uuid::now_v7());
    // Boxed: a writer's future would make every statement's as large.
    let writing = Box::pin(write_partition(
        &target.table,
        rows,
        prefix,
        created,
        Arc::clone(&target.task_ctx),
    ));
    let layout = &target.layout;
    let selecting = async move {
        let mut selected = SelectedRows::default();
        let mut applied = 0u64;
        while let Some(batch) = stream.next().await {
            let (positions, new_rows) = match layout {
                Layout::Merge { actions, .. } => {
                    let split = split_merged(&batch?, actions)?;
                    applied += split.applied;
                    (split.positions, split.new_rows)
                }
                _ => {
                    let batch = batch?;
                    // The new rows are the columns after the file and the position.
                    let indices: Vec<usize> = (2..batch.num_columns()).collect();
                    let new_rows = batch.project(&indices)?;
                    (batch, new_rows)
                }
            };
            selected.add(&positions)?;
            if new_rows.num_rows() > 0 && sender.send(Ok(new_rows)).await.is_err() {
                break;
            }
        }
        drop(sender);
        Ok::<_, Error>((selected, applied))
    };
    let (selected, written) = tokio::join!(selecting, writing);
    let (selected, applied) = selected?;
    let written = written?;
    let applied = matches!(layout, Layout::Merge { .. }).then_some(applied);
    Ok((selected, written, applied))
}

/// One batch of a MERGE's selection, split by what its clauses do.
struct MergedRows {
    /// File and position of the target rows deleted or updated.
    positions: RecordBatch,
    /// Updated and inserted rows, in the table's columns.
    new_rows: RecordBatch,
    /// Source rows some clause applied to.
    applied: u64,
}

fn split_merged(batch: &RecordBatch, actions: &[ClauseAction]) -> Result<MergedRows> {
    let action = cast(batch.column(0), &DataType::Int64)?;
    let action = action.as_primitive::<Int64Type>();
    let does = |wanted: &[ClauseAction]| -> BooleanArray {
        action
            .iter()
            .map(|n| {
                let clause = n
                    .and_then(|n| usize::try_from(n).ok())
                    .and_then(|n| n.checked_sub(1));
                Some(
                    clause
                        .and_then(|c| actions.get(c))
                        .is_some_and(|a| wanted.contains(a)),
                )
            })
            .collect()
    };
    let removes = does(&[ClauseAction::Delete, ClauseAction::Update]);
    let writes = does(&[ClauseAction::Update, ClauseAction::Insert]);
    let applied = action.iter().filter(|n| n.is_some_and(|n| n > 0)).count() as u64;
    let positions = filter_record_batch(&batch.project(&[1, 2])?, &removes)?;
    let row_columns: Vec<usize> = (3..batch.num_columns()).collect();
    let new_rows = filter_record_batch(&batch.project(&row_columns)?, &writes)?;
    Ok(MergedRows {
        positions,
        new_rows,
        applied,
    })
}

/// The session's catalogs and [`merge::TARGET_CATALOG`], for planning one MERGE.
#[derive(Debug)]
struct WithMergeTarget {
    inner: Arc<dyn CatalogProviderList>,
    target: Arc<dyn CatalogProvider>,
}

impl CatalogProviderList for WithMergeTarget {
    fn register_catalog(
        &self,
        name: String,
        catalog: Arc<dyn CatalogProvider>,
    ) -> Option<Arc<dyn CatalogProvider>> {
        self.inner.register_catalog(name, catalog)
    }

    fn catalog_names(&self) -> Vec<String> {
        let mut names = self.inner.catalog_names();
        names.push(merge::TARGET_CATALOG.to_string());
        names
    }

    fn catalog(&self, name: &str) -> Option<Arc<dyn CatalogProvider>> {
        if name == merge::TARGET_CATALOG {
            Some(Arc::clone(&self.target))
        } else {
            self.inner.catalog(name)
        }
    }
}

/// Best effort: files no snapshot references are invisible either way.
async fn delete_files(table: &Table, locations: &[String]) {
    for location in locations {
        if let Err(e) = table.file_io().delete(location).await {
            tracing::warn!(%location, error = %e, "could not delete an uncommitted file");
        }
    }
}

/// A DELETE's or UPDATE's input (its WHERE over the table, perhaps under an alias, and an
/// UPDATE's assignments) over `scan` instead.
fn over_positions(input: LogicalPlan, scan: LogicalPlan) -> Result<LogicalPlan> {
    Ok(match input {
        LogicalPlan::TableScan(_) => scan,
        LogicalPlan::Filter(filter) => {
            let below = over_positions(Arc::unwrap_or_clone(filter.input), scan)?;
            LogicalPlanBuilder::from(below)
                .filter(filter.predicate)?
                .build()?
        }
        LogicalPlan::SubqueryAlias(SubqueryAlias { input, alias, .. }) => {
            let below = over_positions(Arc::unwrap_or_clone(input), scan)?;
            LogicalPlanBuilder::from(below).alias(alias)?.build()?
        }
        // An UPDATE's assignments: the file and position pass through beside them.
        LogicalPlan::Projection(Projection { expr, input, .. }) => {
            let below = over_positions(Arc::unwrap_or_clone(input), scan)?;
            let mut exprs = expr;
            exprs.extend([FILE_COLUMN, POS_COLUMN].map(|c| Expr::Column(Column::from_name(c))));
            LogicalPlanBuilder::from(below).project(exprs)?.build()?
        }
        LogicalPlan::Limit(_) => return Err(Error::NotSupported("DELETE with LIMIT".into())),
        other => {
            return Err(Error::NotSupported(format!(
                "a row-level change over {}",
                other.display()
            )));
        }
    })
}

/// A failed commit as the client hears it: another writer's commit is Trino's
/// `ICEBERG_COMMIT_ERROR`; a refusal keeps its own kind.
fn commit_error(table: &TableIdent, e: iceberg::Error) -> Error {
    match e.kind() {
        iceberg::ErrorKind::CatalogCommitConflicts => Error::invalid(
            ErrorCode::IcebergCommitError,
            format!(
                "Failed to commit to {table}: {e}; nothing was changed, run the statement again"
            ),
        ),
        _ => Error::from(e),
    }
}
