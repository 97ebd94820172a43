//! `DELETE FROM t [WHERE …]`, `TRUNCATE TABLE t`, `UPDATE t SET … [WHERE …]` and `MERGE INTO
//! t USING s ON … WHEN …`: the statement selects rows of the table read with each row's file
//! and position (`sqe_iceberg::delete::positions`) by its WHERE (subqueries included), or for
//! MERGE by joining the source to it ([`crate::dialect::merge`]); the positions become position
//! deletes or removed files, new row versions and inserted rows new data files, all in one
//! snapshot. The selection is planned as any query is, so it runs on the workers, and there
//! UPDATE's and MERGE's new rows are written ([`RowChangeWriteExec`]): only positions and the
//! written files' metadata reach the coordinator, which commits. Another writer's commit in between is
//! checked ([`sqe_iceberg::delete::conflict_since`]): the change is rebased onto it unless it
//! touched what the statement read.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::catalog::{
    CatalogProvider, CatalogProviderList, MemoryCatalogProvider, MemorySchemaProvider,
    SchemaProvider, Session,
};
use datafusion::common::tree_node::TreeNode;
use datafusion::common::{Column, DataFusionError, TableReference};
use datafusion::datasource::{TableProvider, TableType, provider_as_source};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::{SessionState, TaskContext};
use datafusion::functions::expr_fn::coalesce;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{
    DmlStatement, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder, Projection, SubqueryAlias,
    TableScan, WriteOp, lit, when,
};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::sql::planner::object_name_to_table_reference;
use futures::StreamExt;
use iceberg::TableIdent;
use iceberg::spec::DataFile;
use iceberg::table::Table;
use sqe_iceberg::delete::{
    APPLIED_COLUMN, DeleteError, FILE_COLUMN, POS_COLUMN, RowChangeWriteExec, RowPositionsProvider,
    SelectedRows, WRITE_COLUMN, applied_rows, changed_files,
};
use sqe_iceberg::table::{IcebergTableProvider, with_iceberg_provider};
use sqe_iceberg::write::{CommitGate, CommitListener, CreatedFiles};
use tokio_util::sync::CancellationToken;

use super::Engine;
use super::partition_filter::PartitionFilter;
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
    /// The selection, distributed where the session is: the selected rows' files and
    /// positions and, for UPDATE and MERGE, the files their writers wrote.
    selection: Arc<dyn ExecutionPlan>,
    task_ctx: Arc<TaskContext>,
    layout: Layout,
    /// The part of the statement's condition its partitions enforce: rows another writer
    /// appends meanwhile conflict only where it may hold (`None`: anywhere).
    conflict_filter: Option<PartitionFilter>,
}

/// What the statement counts and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// The rows selected; nothing written.
    Delete,
    /// The rows selected; their new versions written.
    Update,
    /// The source rows a clause applied to; new and updated rows written.
    Merge,
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
        let positions = Arc::new(RowPositionsProvider::try_new(provider.clone())?);
        let scan = LogicalPlan::TableScan(TableScan::try_new(
            dml.table_name.clone(),
            provider_as_source(positions),
            None,
            vec![],
            None,
        )?);
        let conflict_filter = conflict_filter(&table, state, &dml.input);
        let selected = match dml.op {
            WriteOp::Truncate => scan,
            _ => over_positions(Arc::unwrap_or_clone(dml.input), scan)?,
        };
        let column = |name: &str| Expr::Column(Column::from_name(name));
        let mut outputs: Vec<Expr> = vec![column(FILE_COLUMN), column(POS_COLUMN)];
        let layout = if dml.op == WriteOp::Update {
            Layout::Update
        } else {
            Layout::Delete
        };
        if layout == Layout::Update {
            outputs.push(lit(true).alias(WRITE_COLUMN));
            outputs.push(lit(false).alias(APPLIED_COLUMN));
            outputs.extend(columns.fields().iter().map(|f| column(f.name())));
        }
        let selected = LogicalPlanBuilder::from(selected)
            .project(outputs)?
            .build()?;
        let selection = match layout {
            Layout::Delete => super::physical_plan(state, &selected).await?,
            _ => changes_plan(state, &provider, selected).await?,
        };
        Ok(RowChangePlan {
            gate: Arc::default(),
            ident,
            target: Some(Target {
                table,
                snapshot_id: Some(snapshot_id),
                selection,
                task_ctx: Arc::new(TaskContext::from(state)),
                layout,
                conflict_filter,
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
        let positions: Arc<dyn TableProvider> =
            Arc::new(RowPositionsProvider::try_new(provider.clone())?);
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
        // Which rows remove their target row, which are written (in the table's types, as
        // INSERT converts them), which a clause applied to: from the clause each took.
        let action = Expr::Column(Column::from_name(merge::ACTION_COLUMN))
            .cast_to(&DataType::Int64, selected.schema())?;
        let clause = |wanted: &[ClauseAction]| -> Expr {
            let numbers: Vec<Expr> = actions
                .iter()
                .enumerate()
                .filter(|(_, action)| wanted.contains(action))
                .map(|(i, _)| lit(i64::try_from(i + 1).unwrap_or(i64::MAX)))
                .collect();
            if numbers.is_empty() {
                return lit(false);
            }
            coalesce(vec![action.clone().in_list(numbers, false), lit(false)])
        };
        let removes = clause(&[ClauseAction::Delete, ClauseAction::Update]);
        let kept_if_removed = |name: &str| {
            when(removes.clone(), Expr::Column(Column::from_name(name)))
                .end()
                .map(|e| e.alias(name))
        };
        let mut outputs: Vec<Expr> = vec![
            kept_if_removed(FILE_COLUMN)?,
            kept_if_removed(POS_COLUMN)?,
            clause(&[ClauseAction::Update, ClauseAction::Insert]).alias(WRITE_COLUMN),
            clause(&[
                ClauseAction::Delete,
                ClauseAction::Update,
                ClauseAction::Insert,
            ])
            .alias(APPLIED_COLUMN),
        ];
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
        let selection = changes_plan(&planning, &provider, selected).await?;
        Ok(RowChangePlan {
            gate: Arc::default(),
            ident,
            target: Some(Target {
                table,
                snapshot_id,
                selection,
                task_ctx: Arc::new(TaskContext::from(&planning)),
                layout: Layout::Merge,
                conflict_filter: None,
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
            .unless_stopped(collect_changes(&target, created.clone()))
            .await;
        let (mut selected, written, rows) = match selected {
            Ok(done) => done,
            Err(e) => {
                delete_files(&target.table, &created.locations()).await;
                return Err(e);
            }
        };
        if target.layout == Layout::Merge && selected.has_repeats() {
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
                    written.clone(),
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
                let filter = target.conflict_filter.as_ref();
                // A file whose partition the filter cannot judge might match (a conflict).
                let might_match = |spec_id: i32, file: &DataFile| -> iceberg::Result<bool> {
                    Ok(filter.is_none_or(|filter| {
                        filter.might_match(&now, spec_id, file).unwrap_or(true)
                    }))
                };
                let conflict = sqe_iceberg::delete::conflict_since(
                    &table,
                    base,
                    &now,
                    &selected.files(),
                    &might_match,
                )
                .await;
                match conflict {
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

/// Runs the selection (on the workers, where the plan is distributed): positions into
/// [`SelectedRows`], the data files UPDATE's and MERGE's writers wrote (each recorded in
/// `received` as it arrives, to delete if the statement fails), and for a MERGE the number of
/// source rows a clause applied to.
async fn collect_changes(
    target: &Target,
    received: CreatedFiles,
) -> Result<(SelectedRows, Vec<DataFile>, Option<u64>)> {
    let mut stream = datafusion::physical_plan::execute_stream(
        Arc::clone(&target.selection),
        Arc::clone(&target.task_ctx),
    )?;
    let mut selected = SelectedRows::default();
    let mut written = Vec::new();
    let mut applied = 0u64;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        selected.add(&batch)?;
        if target.layout != Layout::Delete {
            let files = changed_files(&target.table, &batch)?;
            for file in &files {
                received.add(file.file_path());
            }
            written.extend(files);
            applied += applied_rows(&batch);
        }
    }
    let applied = (target.layout == Layout::Merge).then_some(applied);
    Ok((selected, written, applied))
}

/// The physical plan of an UPDATE's or MERGE's `selection` (its columns: [`FILE_COLUMN`],
/// [`POS_COLUMN`], [`WRITE_COLUMN`], [`APPLIED_COLUMN`], the table's) with a
/// [`RowChangeWriteExec`] over it: planned as an INSERT into a sink whose `insert_into` adds
/// that node, so the session's planner distributes it with the selection (the writers run
/// where the rows are selected).
async fn changes_plan(
    state: &SessionState,
    target: &IcebergTableProvider,
    selection: LogicalPlan,
) -> Result<Arc<dyn ExecutionPlan>> {
    let sink = Arc::new(RowChangeSink {
        table: target.table().clone(),
        plan_props: target.plan_props(),
        schema: Arc::clone(selection.schema().inner()),
    });
    let insert = LogicalPlan::Dml(DmlStatement::new(
        TableReference::bare("row_change"),
        provider_as_source(sink),
        WriteOp::Insert(InsertOp::Append),
        Arc::new(selection),
    ));
    super::physical_plan(state, &insert).await
}

/// Where an UPDATE's or MERGE's selection is "inserted" to place its writers: see
/// [`changes_plan`]. It is never read.
#[derive(Debug)]
struct RowChangeSink {
    table: Table,
    plan_props: std::collections::HashMap<String, String>,
    schema: SchemaRef,
}

#[async_trait::async_trait]
impl TableProvider for RowChangeSink {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        _projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        Err(DataFusionError::Internal(
            "a row change's sink is not read".into(),
        ))
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        _insert_op: InsertOp,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(RowChangeWriteExec::new(
            input,
            self.table.clone(),
            self.plan_props.clone(),
        )?))
    }
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

/// The conflict-detection filter of a DELETE's or UPDATE's `input`: the conjuncts of its
/// WHERE on identity partition columns (as Trino takes the predicate its partitions enforce),
/// without subqueries or volatile functions. `None` (every appended row conflicts) when there are none or they do not
/// evaluate on partition values.
fn conflict_filter(
    table: &Table,
    state: &SessionState,
    input: &LogicalPlan,
) -> Option<PartitionFilter> {
    let mut node = input;
    let mut predicates = Vec::new();
    loop {
        node = match node {
            LogicalPlan::Filter(filter) => {
                predicates.push(filter.predicate.clone());
                &filter.input
            }
            LogicalPlan::SubqueryAlias(SubqueryAlias { input, .. })
            | LogicalPlan::Projection(Projection { input, .. }) => input,
            _ => break,
        };
    }
    let plain: Vec<Expr> = predicates
        .iter()
        .flat_map(|p| split_conjunction(p))
        .filter(|conjunct| {
            !conjunct.is_volatile()
                && !conjunct
                    .exists(|e| {
                        Ok(matches!(
                            e,
                            Expr::ScalarSubquery(_) | Expr::InSubquery(_) | Expr::Exists(_)
                        ))
                    })
                    .unwrap_or(true)
        })
        .cloned()
        .collect();
    let predicate = conjunction(plain)?;
    PartitionFilter::enforced_part(table, state, &predicate)
        .ok()
        .flatten()
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
