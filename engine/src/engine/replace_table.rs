//! Replacing a table that exists (`CREATE OR REPLACE TABLE`, a replacing Flight SQL ingest), as
//! Trino does: always the same table, in one commit; readers see the old rows or the new and
//! its history stays.

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

use super::table_properties::TableLayout;
use super::{Engine, count_rows};
use crate::error::{Error, ErrorCode, Result};
use crate::stopping::Stop;

/// The rows a CREATE TABLE AS fills its table with.
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
    /// Replaces the existing table `ident` by one of `schema` and `layout`, filled by `fill`
    /// (empty without it), in one commit of the same table (readers see the old rows or the
    /// new; the old snapshots stay for time travel): with the same columns and layout an
    /// `overwrite` snapshot, otherwise the new columns, partitioning and sort order become
    /// current with the rows ([`sqe_iceberg::write::recreation`]). A `location` other than the
    /// table's is refused, as Trino does. Returns the rows written by a fill.
    pub(super) async fn replace_table(
        &self,
        ident: &TableIdent,
        schema: IcebergSchema,
        layout: TableLayout,
        location: Option<String>,
        fill: Option<Fill>,
        stop: Stop,
    ) -> Result<Option<u64>> {
        let table = self.catalog().load_table(ident).await?;
        let metadata = table.metadata();
        if let Some(location) = location.as_deref()
            && location.trim_end_matches('/') != metadata.location().trim_end_matches('/')
        {
            return Err(Error::invalid(
                ErrorCode::InvalidTableProperty,
                format!(
                    "The provided location '{location}' does not match the existing table \
                     location '{}'",
                    metadata.location()
                ),
            ));
        }
        let same_layout = same_columns(metadata.current_schema(), &schema)
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
            );
        let (table, commit) = self.replacing(table, same_layout, &schema, &layout).await?;
        match fill {
            Some(fill) => self.insert_fill(table, fill, commit, stop).await.map(Some),
            None => {
                if !stop.gate.begin() {
                    return Err(Error::Cancelled);
                }
                self.commit_no_rows(&table, commit).await?;
                Ok(None)
            }
        }
    }

    /// How rows written into the table replace its rows: `keeping` its columns and layout, an
    /// `overwrite` of `table`; otherwise `schema` and `layout` become current with them (the
    /// table as it will be is what they are written for).
    pub(super) async fn replacing(
        &self,
        table: Table,
        keeping: bool,
        schema: &IcebergSchema,
        layout: &TableLayout,
    ) -> Result<(Table, WriteCommit)> {
        if keeping {
            let commit = self.overwrite_commit(&table).await?;
            return Ok((table, commit));
        }
        let (future, recreation) = sqe_iceberg::write::recreation(
            &table,
            schema,
            layout.partition.as_ref(),
            layout.sort_order.as_ref(),
            Arc::clone(&self.committer),
        )?;
        Ok((future, WriteCommit::Recreate(recreation)))
    }

    /// Commits `commit` with no files written: the table emptied (and given its new columns).
    async fn commit_no_rows(&self, table: &Table, commit: WriteCommit) -> Result<()> {
        let committed = match commit {
            // No rows write into no partition.
            WriteCommit::Append | WriteCommit::OverwritePartitions(_) => return Ok(()),
            WriteCommit::Replace(replacement) => {
                sqe_iceberg::delete::commit_replace(
                    table,
                    replacement.snapshot_id,
                    &replacement.removed,
                    Vec::new(),
                    Operation::Overwrite,
                    self.committer.as_ref(),
                )
                .await
            }
            WriteCommit::Recreate(recreation) => {
                sqe_iceberg::delete::commit_recreation(table, &recreation, Vec::new()).await
            }
        }
        .map_err(|e| Error::from(e.into_inner()))?;
        self.commits.committed(table.identifier(), committed);
        Ok(())
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

    /// Inserts `fill`'s rows into `table`, committed as `commit` says unless `stop` comes
    /// first; the rows written.
    pub(super) async fn insert_fill(
        &self,
        table: Table,
        fill: Fill,
        commit: WriteCommit,
        stop: Stop,
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
        let mut state = fill.state;
        state.config_mut().set_extension(Arc::clone(&stop.gate));
        let physical = super::physical_plan(&state, &plan).await?;
        // Started only if not stopped first.
        let written = async {
            let context = Arc::new(TaskContext::from(&state));
            count_rows(self.query_runtime.execute(physical, context)).await
        };
        stop.unless_stopped(written).await
    }
}
