//! `DELETE FROM t [WHERE …]`, `TRUNCATE TABLE t` and `UPDATE t SET … [WHERE …]`: the
//! statement's WHERE (subqueries included) selects rows of the table read with each row's file
//! and position (`sqe_iceberg::delete::positions`); the positions become position deletes or
//! removed files, an UPDATE's new row versions new data files, all in one snapshot. The
//! selection runs on the coordinator.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::Column;
use datafusion::datasource::{TableProvider, provider_as_source};
use datafusion::execution::{SessionState, TaskContext};
use datafusion::logical_expr::{
    DmlStatement, Expr, LogicalPlan, LogicalPlanBuilder, Projection, SubqueryAlias, TableScan,
    WriteOp,
};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};
use futures::StreamExt;
use iceberg::TableIdent;
use iceberg::table::Table;
use sqe_iceberg::delete::{FILE_COLUMN, POS_COLUMN, RowPositionsProvider, SelectedRows};
use sqe_iceberg::table::with_iceberg_provider;
use sqe_iceberg::write::{CommitListener, CreatedFiles, WrittenFiles, write_partition};
use tokio_util::sync::CancellationToken;

use super::Engine;
use crate::error::{Error, ErrorCode, Result};

/// A planned DELETE, TRUNCATE or UPDATE.
pub(super) struct RowChangePlan {
    ident: TableIdent,
    /// The table as planned; `None`: it has no snapshot, so no rows to change.
    target: Option<Target>,
}

struct Target {
    table: Table,
    snapshot_id: i64,
    /// The selected rows' files and positions, and for an UPDATE their new values.
    selection: Arc<dyn ExecutionPlan>,
    task_ctx: Arc<TaskContext>,
    /// An UPDATE's new rows, in the table's columns.
    new_rows: Option<SchemaRef>,
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
        let new_rows = (dml.op == WriteOp::Update).then(|| Arc::clone(&columns));
        if new_rows.is_some() {
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
            ident,
            target: Some(Target {
                table,
                snapshot_id,
                selection,
                task_ctx: Arc::new(TaskContext::from(state)),
                new_rows,
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
        let selecting = select_and_write(&target, created.clone());
        let selected = tokio::select! {
            selected = selecting => selected,
            () = cancel.cancelled() => Err(Error::Cancelled),
        };
        let (selected, written) = match selected {
            Ok(done) => done,
            Err(e) => {
                delete_files(&target.table, &created.locations()).await;
                return Err(e);
            }
        };
        let committer = Arc::clone(&self.committer);
        let commits = Arc::clone(&self.commits);
        let ident = plan.ident;
        let committing = async move {
            let changed = sqe_iceberg::delete::commit_row_changes(
                &target.table,
                target.snapshot_id,
                selected,
                written.files,
                committer.as_ref(),
            )
            .await;
            let changed = match changed {
                Ok(changed) => changed,
                Err(sqe_iceberg::delete::DeleteError::NotApplied(e)) => {
                    delete_files(&target.table, &created.locations()).await;
                    return Err(commit_error(&ident, e));
                }
                Err(sqe_iceberg::delete::DeleteError::Unknown(e)) => {
                    return Err(commit_error(&ident, e));
                }
            };
            if changed.snapshot_id.is_some() {
                commits.committed(&ident, changed.snapshot_id);
            }
            Ok::<_, Error>(changed.rows)
        };
        sqe_layers::task::spawn(committing)
            .await
            .map_err(|e| Error::Internal(format!("commit task failed: {e}")))?
    }
}

/// Runs the selection: positions into [`SelectedRows`], an UPDATE's new rows into data files
/// (written while the selection runs; every file created is recorded in `created`).
async fn select_and_write(
    target: &Target,
    created: CreatedFiles,
) -> Result<(SelectedRows, WrittenFiles)> {
    let mut stream = datafusion::physical_plan::execute_stream(
        Arc::clone(&target.selection),
        Arc::clone(&target.task_ctx),
    )?;
    let Some(schema) = &target.new_rows else {
        let mut selected = SelectedRows::default();
        while let Some(batch) = stream.next().await {
            selected.add(&batch?)?;
        }
        return Ok((selected, WrittenFiles::default()));
    };
    let (sender, receiver) = tokio::sync::mpsc::channel(2);
    let rows = Box::pin(RecordBatchStreamAdapter::new(
        Arc::clone(schema),
        tokio_stream::wrappers::ReceiverStream::new(receiver),
    ));
    let prefix = format!("{}-update", uuid::Uuid::now_v7());
    let writing = write_partition(&target.table, rows, prefix, created);
    let selecting = async move {
        let mut selected = SelectedRows::default();
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            selected.add(&batch)?;
            // The new rows are the columns after the file and the position.
            let indices: Vec<usize> = (2..batch.num_columns()).collect();
            let new_rows = batch.project(&indices)?;
            if sender.send(Ok(new_rows)).await.is_err() {
                break;
            }
        }
        drop(sender);
        Ok::<_, Error>(selected)
    };
    let (selected, written) = tokio::join!(selecting, writing);
    let selected = selected?;
    let written = written?;
    Ok((selected, written))
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
