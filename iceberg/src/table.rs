//! `IcebergTableProvider`: one Iceberg table as a DataFusion table.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, Statistics, not_impl_err};
use datafusion::datasource::{TableProvider, TableType, source_as_provider};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableSource};
use datafusion::physical_plan::ExecutionPlan;
use futures::TryStreamExt;
use iceberg::Catalog;
use iceberg::scan::FileScanTask;
use iceberg::table::Table;

use crate::error::iceberg_to_df;
use crate::scan::{
    IcebergScanExec, ScanIo, column_statistics, filters_to_predicate, scan_bounds, snapshot_bounds,
};
use crate::types::table_arrow_schema;
use crate::write::{CommitListener, IcebergWriteExec, Replacement, WriteCommit};

/// An Iceberg table pinned at the snapshot current when it was loaded: every scan planned from
/// this provider reads that snapshot, so a query sees one consistent version of the table.
#[derive(Clone)]
pub struct IcebergTableProvider {
    catalog: Arc<dyn Catalog>,
    table: Table,
    schema: SchemaRef,
    /// The process's own `[storage]` properties; table properties beyond these travel in plans.
    static_props: Arc<HashMap<String, String>>,
    listener: Option<Arc<dyn CommitListener>>,
    /// Read at this snapshot (time travel) instead of the current one; then not writable.
    pinned: Option<i64>,
    /// Scans read only these data files (a rewrite reads the files it replaces).
    only_files: Option<Arc<HashSet<String>>>,
    /// How inserts commit.
    commit: WriteCommit,
    /// The columns' bounds over every data file the snapshot has, once loaded
    /// ([`Self::load_column_bounds`]); [`TableProvider::statistics`] reports them.
    column_bounds: Arc<OnceLock<Vec<ColumnStatistics>>>,
}

/// Names the table and its snapshot only: its FileIO holds storage credentials.
impl std::fmt::Debug for IcebergTableProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IcebergTableProvider")
            .field("table", &self.table.identifier().to_string())
            .field("snapshot", &self.snapshot_id())
            .finish_non_exhaustive()
    }
}

impl IcebergTableProvider {
    pub fn try_new(
        catalog: Arc<dyn Catalog>,
        table: Table,
        static_props: Arc<HashMap<String, String>>,
        listener: Option<Arc<dyn CommitListener>>,
    ) -> crate::error::Result<Self> {
        let schema = table_arrow_schema(scan_schema(&table, None)?.as_ref())?;
        Ok(Self {
            catalog,
            table,
            schema,
            static_props,
            listener,
            pinned: None,
            only_files: None,
            commit: WriteCommit::Append,
            column_bounds: Arc::default(),
        })
    }

    /// How a scan of this table reaches its files, here and on the workers.
    pub fn scan_io(&self) -> ScanIo {
        ScanIo {
            file_io: self.table.file_io().clone(),
            plan_props: plan_props(&self.table, &self.static_props),
        }
    }

    /// The storage properties its files need beyond a process's own (see [`plan_props`]).
    pub fn plan_props(&self) -> HashMap<String, String> {
        plan_props(&self.table, &self.static_props)
    }

    /// The table with inserts committed as `commit` says.
    pub fn committing(mut self, commit: WriteCommit) -> Self {
        self.commit = commit;
        self
    }

    /// The table rewriting its data files `files` (optimize): scans read only those files, and
    /// what is inserted replaces them in one `replace` snapshot of the snapshot read, committed
    /// through `committer`. `None` when the table has no snapshot to rewrite.
    pub fn rewriting(
        mut self,
        files: HashSet<String>,
        committer: Arc<dyn crate::commit::CommitUpdates>,
    ) -> Option<Self> {
        let snapshot_id = self.snapshot_id()?;
        self.only_files = Some(Arc::new(files.clone()));
        self.column_bounds = Arc::default();
        self.commit = WriteCommit::Replace(Arc::new(Replacement {
            snapshot_id,
            removed: files,
            operation: iceberg::spec::Operation::Replace,
            committer,
        }));
        Some(self)
    }

    /// The table as it was at snapshot `snapshot_id` (time travel): scans read that snapshot
    /// with the schema it was written with, and it cannot be written. `None` when the table
    /// has no such snapshot.
    pub fn at_snapshot(mut self, snapshot_id: i64) -> crate::error::Result<Option<Self>> {
        if self.table.metadata().snapshot_by_id(snapshot_id).is_none() {
            return Ok(None);
        }
        self.schema = table_arrow_schema(scan_schema(&self.table, Some(snapshot_id))?.as_ref())?;
        self.pinned = Some(snapshot_id);
        self.column_bounds = Arc::default();
        Ok(Some(self))
    }

    /// The snapshot scans read: the pinned one, else the current one (`None`: no data yet).
    pub fn snapshot_id(&self) -> Option<i64> {
        self.pinned
            .or_else(|| self.table.metadata().current_snapshot_id())
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    /// Reads the bounds of the columns over every live data file of the snapshot from its
    /// manifests (cached by manifest), once, for [`TableProvider::statistics`]: join ordering
    /// estimates distinct keys from them. Best effort: without them, statistics have none.
    pub async fn load_column_bounds(&self) {
        if self.column_bounds.get().is_some() || self.only_files.is_some() {
            return;
        }
        let Some(snapshot) = self.snapshot_id() else {
            return;
        };
        let Ok(read_schema) = scan_schema(&self.table, self.pinned) else {
            return;
        };
        let Some(ids) = self
            .schema
            .fields()
            .iter()
            .map(|f| read_schema.field_id_by_name(f.name()))
            .collect::<Option<Vec<i32>>>()
        else {
            return;
        };
        match snapshot_bounds(&self.table, snapshot, ids, None).await {
            Ok(bounds) => {
                let paths = bounds.files.keys().map(String::as_str);
                let columns = column_statistics(&bounds, &self.schema, paths);
                // Another scan of the same provider may have set them first: the same values.
                let _ = self.column_bounds.set(columns);
            }
            Err(e) => tracing::warn!(
                table = %self.table.identifier(),
                error = %e,
                "no column bounds for join ordering"
            ),
        }
    }

    /// Plans the files to read for a projection and filters (manifest and partition pruning).
    /// Iceberg plans against the schema of the snapshot it reads; the table's current schema
    /// can be newer (a column added or dropped since the last write), so the snapshot is
    /// planned with the columns it has and its tasks then read in the current schema, by field
    /// id: a column the files lack reads as NULL.
    pub async fn plan_files(
        &self,
        columns: &[String],
        filters: &[Expr],
    ) -> Result<Vec<FileScanTask>> {
        Ok(self.plan(columns, filters).await?.0)
    }

    /// [`Self::plan_files`], and the field ids of `columns` in the schema they are read in.
    async fn plan(
        &self,
        columns: &[String],
        filters: &[Expr],
    ) -> Result<(Vec<FileScanTask>, Vec<i32>)> {
        let read_schema = scan_schema(&self.table, self.pinned).map_err(DataFusionError::from)?;
        let snapshot_schema = match self.snapshot_id() {
            Some(id) => scan_schema(&self.table, Some(id)).map_err(DataFusionError::from)?,
            None => Arc::clone(&read_schema),
        };
        let read_ids = columns
            .iter()
            .map(|name| {
                read_schema
                    .field_id_by_name(name)
                    .ok_or_else(|| DataFusionError::Plan(format!("no column '{name}' to scan")))
            })
            .collect::<Result<Vec<i32>>>()?;
        // The requested columns the snapshot has, by the names it gives them.
        let planned: Vec<String> = read_ids
            .iter()
            .filter_map(|id| snapshot_schema.name_by_field_id(*id).map(str::to_string))
            .collect();
        let mut builder = if planned.is_empty() {
            self.table.scan().select_empty()
        } else {
            self.table.scan().select(planned)
        };
        if let Some(snapshot_id) = self.pinned {
            builder = builder.snapshot_id(snapshot_id);
        }
        if let Some(predicate) = filters_to_predicate(filters, &snapshot_schema) {
            builder = builder.with_filter(predicate);
        }
        let scan = builder.build().map_err(iceberg_to_df)?;
        let mut tasks: Vec<FileScanTask> = scan
            .plan_files()
            .await
            .map_err(iceberg_to_df)?
            .try_collect()
            .await
            .map_err(iceberg_to_df)?;
        if let Some(only) = &self.only_files {
            tasks.retain(|task| only.contains(&task.data_file_path));
        }
        if read_schema.schema_id() != snapshot_schema.schema_id() {
            for task in &mut tasks {
                task.schema = Arc::clone(&read_schema);
                task.project_field_ids = read_ids.clone();
            }
        }
        Ok((tasks, read_ids))
    }
}

/// Properties of `table`'s FileIO that the process's own configuration (`static_props`) lacks
/// (for REST catalogs: the credentials vended with the table), and the local root. Workers need
/// these to read and write its files.
pub fn plan_props(
    table: &Table,
    static_props: &HashMap<String, String>,
) -> HashMap<String, String> {
    table
        .file_io()
        .config()
        .props()
        .iter()
        // The local root goes with every plan: workers confine local files as the
        // coordinator does.
        .filter(|(k, v)| {
            k.as_str() == crate::storage::LOCAL_ROOT_PROP || static_props.get(*k) != Some(*v)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// `f` of the Iceberg table provider behind a logical plan's table source, if it is one.
pub fn with_iceberg_provider<R>(
    source: &Arc<dyn TableSource>,
    f: impl FnOnce(&IcebergTableProvider) -> R,
) -> Option<R> {
    let provider = source_as_provider(source).ok()?;
    provider.downcast_ref::<IcebergTableProvider>().map(f)
}

/// The schema a scan reads in: a pinned snapshot's own (time travel sees the table as it was),
/// else the table's current one (as Trino and pyiceberg read it, even when the last write is
/// older than the last schema change).
fn scan_schema(
    table: &Table,
    pinned: Option<i64>,
) -> crate::error::Result<iceberg::spec::SchemaRef> {
    let metadata = table.metadata();
    let snapshot = pinned.and_then(|id| metadata.snapshot_by_id(id));
    match snapshot {
        Some(snapshot) => Ok(snapshot.schema(metadata)?),
        None => Ok(metadata.current_schema().clone()),
    }
}

#[async_trait]
impl TableProvider for IcebergTableProvider {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = match projection {
            Some(indices) => Arc::new(self.schema.project(indices)?),
            None => Arc::clone(&self.schema),
        };
        let columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        let (tasks, ids) = self.plan(&columns, filters).await?;
        // Bounds only improve estimates: a manifest that cannot be read leaves them out.
        let bounds = match self.snapshot_id() {
            Some(snapshot) => match scan_bounds(&self.table, snapshot, ids, &tasks).await {
                Ok(bounds) => Some(Arc::new(bounds)),
                Err(e) => {
                    tracing::warn!(
                        table = %self.table.identifier(),
                        error = %e,
                        "no column bounds for planning"
                    );
                    None
                }
            },
            None => None,
        };
        let io = self.scan_io();
        Ok(Arc::new(
            IcebergScanExec::new(
                self.table.identifier().to_string(),
                schema,
                tasks,
                state.config().target_partitions(),
                io,
                limit,
            )
            .with_bounds(bounds),
        ))
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        // Pushed filters prune files, partitions and row groups; DataFusion still filters rows.
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    fn statistics(&self) -> Option<Statistics> {
        let summary = &self
            .table
            .metadata()
            .snapshot_by_id(self.snapshot_id()?)?
            .summary()
            .additional_properties;
        let rows = summary.get("total-records")?.parse::<usize>().ok()?;
        let mut stats = Statistics::new_unknown(&self.schema);
        stats.num_rows = Precision::Inexact(rows);
        if let Some(bytes) = summary
            .get("total-files-size")
            .and_then(|b| b.parse::<usize>().ok())
        {
            stats.total_byte_size = Precision::Inexact(bytes);
        }
        if let Some(columns) = self.column_bounds.get() {
            stats.column_statistics = columns.clone();
        }
        Some(stats)
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if self.pinned.is_some() {
            return not_impl_err!(
                "a table read at a snapshot (FOR VERSION or FOR TIMESTAMP AS OF) cannot be written"
            );
        }
        if insert_op != InsertOp::Append {
            return not_impl_err!(
                "{insert_op} is not supported for Iceberg tables; use INSERT INTO"
            );
        }
        Ok(Arc::new(
            IcebergWriteExec::new(
                input,
                Arc::clone(&self.catalog),
                self.table.clone(),
                self.listener.clone(),
                self.plan_props(),
            )
            .with_commit(self.commit.clone()),
        ))
    }
}
