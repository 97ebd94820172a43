//! `DELETE FROM t [WHERE …]` and `TRUNCATE TABLE t`: the statement's WHERE (subqueries
//! included) selects rows of the table read with each row's file and position
//! (`sqe_iceberg::delete::positions`), and the positions become one delete snapshot. The
//! selection runs on the coordinator.

use std::sync::Arc;

use datafusion::common::Column;
use datafusion::datasource::provider_as_source;
use datafusion::execution::SessionState;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{
    DmlStatement, Expr, LogicalPlan, LogicalPlanBuilder, SubqueryAlias, TableScan, WriteOp,
};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};
use futures::TryStreamExt;
use iceberg::TableIdent;
use iceberg::table::Table;
use sqe_iceberg::delete::{FILE_COLUMN, POS_COLUMN, RowPositionsProvider, SelectedRows};
use sqe_iceberg::table::with_iceberg_provider;
use sqe_iceberg::write::CommitListener;
use tokio_util::sync::CancellationToken;

use super::Engine;
use crate::error::{Error, ErrorCode, Result};

/// A planned DELETE or TRUNCATE.
pub(super) struct DeletePlan {
    ident: TableIdent,
    /// The table as planned; `None`: it has no snapshot, so nothing to delete.
    target: Option<Target>,
}

struct Target {
    table: Table,
    snapshot_id: i64,
    /// The selected rows' files and positions.
    selection: Arc<dyn ExecutionPlan>,
    task_ctx: Arc<TaskContext>,
}

impl Engine {
    /// `dml` (a DELETE or TRUNCATE) checked and planned; nothing is changed yet.
    pub(super) async fn plan_delete(
        &self,
        state: &SessionState,
        dml: DmlStatement,
    ) -> Result<DeletePlan> {
        let ident = self.table_ident(state, &dml.table_name)?;
        let provider = with_iceberg_provider(&dml.target, Clone::clone).ok_or_else(|| {
            Error::NotSupported(format!(
                "{} on {}: it is not an Iceberg table",
                dml.op, dml.table_name
            ))
        })?;
        let Some(snapshot_id) = provider.snapshot_id() else {
            return Ok(DeletePlan {
                ident,
                target: None,
            });
        };
        let table = provider.table().clone();
        let positions = Arc::new(RowPositionsProvider::try_new(provider)?);
        let source = provider_as_source(positions);
        let scan = LogicalPlan::TableScan(TableScan::try_new(
            dml.table_name.clone(),
            source,
            None,
            vec![],
            None,
        )?);
        let selected = match dml.op {
            WriteOp::Truncate => scan,
            _ => over_positions(Arc::unwrap_or_clone(dml.input), scan)?,
        };
        let selected = LogicalPlanBuilder::from(selected)
            .project([FILE_COLUMN, POS_COLUMN].map(|c| Expr::Column(Column::from_name(c))))?
            .build()?;
        // On the coordinator (DataFusion's own planner, not the distributed one): the selection
        // reads a node the workers do not know.
        let optimized = state.optimize(&selected)?;
        let selection = DefaultPhysicalPlanner::default()
            .create_physical_plan(&optimized, state)
            .await?;
        Ok(DeletePlan {
            ident,
            target: Some(Target {
                table,
                snapshot_id,
                selection,
                task_ctx: Arc::new(TaskContext::from(state)),
            }),
        })
    }

    /// Selects the rows and commits their deletion; cancellation is honoured until the commit
    /// starts, which then runs to its end.
    pub(super) async fn delete_rows(
        &self,
        plan: DeletePlan,
        cancel: CancellationToken,
    ) -> Result<u64> {
        let Some(target) = plan.target else {
            return Ok(0);
        };
        let stream = datafusion::physical_plan::execute_stream(target.selection, target.task_ctx)?;
        let collect = stream.map_err(Error::from).try_fold(
            SelectedRows::default(),
            |mut rows, batch| async move {
                rows.add(&batch)?;
                Ok(rows)
            },
        );
        let selected = tokio::select! {
            rows = collect => rows?,
            () = cancel.cancelled() => return Err(Error::Cancelled),
        };
        let committer = Arc::clone(&self.committer);
        let commits = Arc::clone(&self.commits);
        let ident = plan.ident;
        let committing = async move {
            let deleted = sqe_iceberg::delete::commit_deletes(
                &target.table,
                target.snapshot_id,
                selected,
                committer.as_ref(),
            )
            .await
            .map_err(|e| commit_error(&ident, e.into_inner()))?;
            if deleted.snapshot_id.is_some() {
                commits.committed(&ident, deleted.snapshot_id);
            }
            Ok::<_, Error>(deleted.rows)
        };
        sqe_layers::task::spawn(committing)
            .await
            .map_err(|e| Error::Internal(format!("DELETE commit task failed: {e}")))?
    }
}

/// A DELETE's input (its WHERE over the table, perhaps under an alias) over `scan` instead.
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
        LogicalPlan::Limit(_) => return Err(Error::NotSupported("DELETE with LIMIT".into())),
        other => {
            return Err(Error::NotSupported(format!(
                "DELETE over {}",
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
                "Failed to commit the DELETE on {table}: {e}; nothing was deleted, run it again"
            ),
        ),
        _ => Error::from(e),
    }
}
