//! Replacing a table that exists (`CREATE OR REPLACE TABLE`, a replacing Flight SQL ingest):
//! with the same columns and partitioning, one `overwrite` snapshot of the same table (readers
//! see the old rows or the new, and its history stays); otherwise a new table is filled and
//! takes the name, the old one purged only once it has been given up.

use std::sync::Arc;

use datafusion::datasource::provider_as_source;
use datafusion::execution::{SessionState, TaskContext};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder};
use datafusion::sql::TableReference;
use iceberg::TableIdent;
use iceberg::spec::{
    Operation, PartitionSpec, Schema as IcebergSchema, SortOrder, Transform, UnboundPartitionSpec,
};
use iceberg::table::Table;
use sqe_iceberg::table::IcebergTableProvider;
use sqe_iceberg::write::{CommitListener, Replacement, WriteCommit};
use tokio_util::sync::CancellationToken;

use super::table_properties::TableLayout;
use super::{Engine, count_rows};
use crate::error::{Error, Result};

/// The rows a replacing CREATE TABLE AS fills the table with.
pub(super) struct Fill {
    pub table_ref: TableReference,
    pub input: LogicalPlan,
    pub state: SessionState,
}

/// Whether `data`'s columns are `table`'s: the same names, primitive types and nullability, in
/// order (nested columns are not compared: their field ids differ; such a table is swapped).
pub(super) fn same_columns(table: &IcebergSchema, data: &IcebergSchema) -> bool {
    let (ours, theirs) = (table.as_struct().fields(), data.as_struct().fields());
    ours.len() == theirs.len()
        && ours.iter().zip(theirs).all(|(a, b)| {
            a.name == b.name
                && a.required == b.required
                && a.field_type.is_primitive()
                && a.field_type == b.field_type
        })
}

/// Whether `wanted` (bound to the new columns `schema`) partitions as `current` (bound to the
/// table's `table_schema`) does: the same transforms of the same-named columns, in order.
fn same_partitioning(
    current: &PartitionSpec,
    table_schema: &IcebergSchema,
    wanted: Option<&UnboundPartitionSpec>,
    schema: &IcebergSchema,
) -> bool {
    let ours: Vec<(Option<&str>, Transform)> = current
        .fields()
        .iter()
        .map(|f| (table_schema.name_by_field_id(f.source_id), f.transform))
        .collect();
    let theirs: Vec<(Option<&str>, Transform)> = wanted
        .map(|spec| {
            spec.fields()
                .iter()
                .map(|f| (schema.name_by_field_id(f.source_id), f.transform))
                .collect()
        })
        .unwrap_or_default();
    ours == theirs
}

/// Whether `wanted` (bound to the new columns `schema`) sorts as `current` (bound to the
/// table's `table_schema`) does.
fn same_sort_order(
    current: &SortOrder,
    table_schema: &IcebergSchema,
    wanted: Option<&SortOrder>,
    schema: &IcebergSchema,
) -> bool {
    let fields = |order: &SortOrder, schema: &IcebergSchema| -> Vec<_> {
        order
            .fields
            .iter()
            .map(|f| {
                (
                    schema.name_by_field_id(f.source_id).map(str::to_string),
                    f.transform,
                    f.direction,
                    f.null_order,
                )
            })
            .collect()
    };
    fields(current, table_schema) == wanted.map(|o| fields(o, schema)).unwrap_or_default()
}

impl Engine {
    /// Replaces the existing table `ident` by one of `schema`, `layout` and `location`,
    /// filled by `fill` (empty without it). Returns the rows written by a fill.
    pub(super) async fn replace_table(
        &self,
        ident: &TableIdent,
        schema: IcebergSchema,
        layout: TableLayout,
        location: Option<String>,
        fill: Option<Fill>,
        cancel: CancellationToken,
    ) -> Result<Option<u64>> {
        let table = self.catalog().load_table(ident).await?;
        let metadata = table.metadata();
        let in_place = same_columns(metadata.current_schema(), &schema)
            && same_partitioning(
                metadata.default_partition_spec(),
                metadata.current_schema(),
                layout.partition.as_ref(),
                &schema,
            )
            && same_sort_order(
                metadata.default_sort_order(),
                metadata.current_schema(),
                layout.sort_order.as_ref(),
                &schema,
            )
            && location.as_deref().is_none_or(|l| {
                l.trim_end_matches('/') == metadata.location().trim_end_matches('/')
            });
        if in_place {
            return self.overwrite(table, fill, cancel).await;
        }
        if location
            .as_deref()
            .is_some_and(|l| l.trim_end_matches('/') == metadata.location().trim_end_matches('/'))
        {
            // The new table would be made where the old one's files are, and purging the old
            // one may take the new one's with them.
            return Err(Error::NotSupported(format!(
                "replacing {ident} with other columns or partitioning at its own location; \
                 give a new location or drop the table first"
            )));
        }
        let staging = self.staging_name(ident, "replace");
        let created = self
            .create_table(&staging, schema, layout, location)
            .await?;
        let rows = match fill {
            Some(fill) => match self
                .insert_fill(created, fill, WriteCommit::Append, cancel)
                .await
            {
                Ok(rows) => Some(rows),
                Err(e) => {
                    if let Err(purge) = self.catalog().purge_table(&staging).await {
                        tracing::error!(table = %staging, error = %purge, "could not drop the table of a failed replace");
                    }
                    return Err(e);
                }
            },
            None => None,
        };
        self.swap_into(ident, &staging).await?;
        Ok(rows)
    }

    /// `table`'s rows replaced by `fill`'s (none without it) in one `overwrite` snapshot,
    /// committed only while the table is still at the snapshot read.
    async fn overwrite(
        &self,
        table: Table,
        fill: Option<Fill>,
        cancel: CancellationToken,
    ) -> Result<Option<u64>> {
        let commit = self.overwrite_commit(&table).await?;
        let Some(fill) = fill else {
            if let WriteCommit::Replace(replacement) = commit {
                let committed = sqe_iceberg::delete::commit_replace(
                    &table,
                    replacement.snapshot_id,
                    &replacement.removed,
                    Vec::new(),
                    Operation::Overwrite,
                    self.committer.as_ref(),
                )
                .await
                .map_err(|e| Error::from(e.into_inner()))?;
                self.commits.committed(table.identifier(), committed);
            }
            return Ok(None);
        };
        let rows = self.insert_fill(table, fill, commit, cancel).await?;
        Ok(Some(rows))
    }

    /// How rows written into `table` replace all of its rows: an `overwrite` of every live data
    /// file of the current snapshot, committed only while that snapshot is current; a plain
    /// append when the table has no snapshot yet.
    pub(super) async fn overwrite_commit(&self, table: &Table) -> Result<WriteCommit> {
        let Some(snapshot_id) = table.metadata().current_snapshot_id() else {
            return Ok(WriteCommit::Append);
        };
        let removed = sqe_iceberg::scan::snapshot_files(table, snapshot_id)
            .await?
            .into_iter()
            .map(|task| task.data_file_path)
            .collect();
        Ok(WriteCommit::Replace(Arc::new(Replacement {
            snapshot_id,
            removed,
            operation: Operation::Overwrite,
            committer: Arc::clone(&self.committer),
        })))
    }

    /// Inserts `fill`'s rows into `table`, committed as `commit` says; the rows written.
    async fn insert_fill(
        &self,
        table: Table,
        fill: Fill,
        commit: WriteCommit,
        cancel: CancellationToken,
    ) -> Result<u64> {
        let provider = IcebergTableProvider::try_new(
            Arc::clone(self.catalog()),
            table,
            Arc::new(self.settings.storage_props.clone()),
            Some(Arc::clone(&self.commits) as Arc<dyn CommitListener>),
        )?
        .committing(commit);
        let plan = LogicalPlanBuilder::insert_into(
            fill.input,
            fill.table_ref,
            provider_as_source(Arc::new(provider)),
            InsertOp::Append,
        )?
        .build()?;
        let physical = fill.state.create_physical_plan(&plan).await?;
        let written = count_rows(
            self.query_runtime
                .execute(physical, Arc::new(TaskContext::from(&fill.state))),
        );
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(Error::Cancelled),
            rows = written => rows,
        }
    }

    /// A name beside `ident`'s for a table set aside while replacing it.
    pub(super) fn staging_name(&self, ident: &TableIdent, what: &str) -> TableIdent {
        TableIdent::new(
            ident.namespace().clone(),
            format!(
                "{}__sqe_{what}_{}",
                ident.name(),
                uuid::Uuid::new_v4().simple()
            ),
        )
    }

    /// Gives the filled table `staging` the name `ident`: the table that had it is renamed
    /// aside first and purged only after that, and gets its name back if the swap fails
    /// (`staging` is purged then).
    pub(super) async fn swap_into(&self, ident: &TableIdent, staging: &TableIdent) -> Result<()> {
        let catalog = self.catalog();
        let replaced = self.staging_name(ident, "replaced");
        let purge = |table: TableIdent| async move {
            if let Err(e) = catalog.purge_table(&table).await {
                tracing::error!(%table, error = %e, "could not drop a table set aside while replacing");
            }
        };
        // A rename that failed may still have been applied (a REST call that timed out): what
        // the catalog holds decides.
        let moved = |from: &TableIdent, to: &TableIdent| {
            let (from, to) = (from.clone(), to.clone());
            async move {
                match catalog.rename_table(&from, &to).await {
                    Ok(()) => Ok(()),
                    Err(e) => {
                        let applied = !catalog.table_exists(&from).await.unwrap_or(true)
                            && catalog.table_exists(&to).await.unwrap_or(false);
                        if applied { Ok(()) } else { Err(e) }
                    }
                }
            }
        };
        if let Err(e) = moved(ident, &replaced).await {
            purge(staging.clone()).await;
            return Err(e.into());
        }
        if let Err(e) = moved(staging, ident).await {
            if let Err(back) = moved(&replaced, ident).await {
                tracing::error!(table = %ident, kept_as = %replaced, error = %back, "could not give a replaced table its name back");
            }
            purge(staging.clone()).await;
            return Err(e.into());
        }
        purge(replaced).await;
        if let Err(e) = self.refresh_names(true).await {
            tracing::warn!(error = %e, "table names not refreshed after a replace");
        }
        Ok(())
    }
}
