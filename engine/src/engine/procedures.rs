//! Trino's Iceberg table procedures, `ALTER TABLE t EXECUTE name(...)`: `optimize` (compaction:
//! small files and files with deletes rewritten into fewer, as one `replace` snapshot, written
//! on the workers; `WHERE` picks partitions), `expire_snapshots` and `remove_orphan_files`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use datafusion::datasource::provider_as_source;
use datafusion::execution::{SessionState, TaskContext};
use datafusion::logical_expr::LogicalPlanBuilder;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::sql::TableReference;
use iceberg::TableIdent;
use iceberg::table::Table;
use sqe_iceberg::maintenance;
use sqe_iceberg::table::IcebergTableProvider;
use sqe_iceberg::write::CommitListener;
use tokio_util::sync::CancellationToken;

use super::partition_filter::PartitionFilter;
use super::{Engine, SessionSettings, count_rows};
use crate::dialect::statements::TableProcedureCall;
use crate::dialect::units::{format_duration, parse_data_size, parse_duration};
use crate::error::{Error, ErrorCode, Result};

/// Trino's default `file_size_threshold` for optimize.
const DEFAULT_FILE_SIZE_THRESHOLD: u64 = 100 * 1024 * 1024;

/// A table procedure, its arguments checked.
#[derive(Debug, Clone)]
pub(crate) struct TableProcedure {
    ident: TableIdent,
    name: TableReference,
    kind: ProcedureKind,
}

#[derive(Debug, Clone)]
enum ProcedureKind {
    /// Rewrites the data files smaller than this, and those with deletes.
    Optimize {
        file_size_threshold: u64,
        /// `WHERE`: the partitions to rewrite, by their identity partition columns.
        filter: Option<String>,
    },
    ExpireSnapshots {
        retention: Duration,
    },
    RemoveOrphanFiles {
        retention: Duration,
    },
}

fn invalid(message: String) -> Error {
    Error::invalid(ErrorCode::InvalidProcedureArgument, message)
}

impl Engine {
    /// Checks a table procedure call against the session: its table's name, its arguments and
    /// the session's minimum retentions.
    pub(super) fn plan_table_procedure(
        &self,
        state: &SessionState,
        session: &SessionSettings,
        call: TableProcedureCall,
    ) -> Result<TableProcedure> {
        let name = match call.table.as_slice() {
            [table] => TableReference::bare(table.as_str()),
            [schema, table] => TableReference::partial(schema.as_str(), table.as_str()),
            [catalog, schema, table] => {
                TableReference::full(catalog.as_str(), schema.as_str(), table.as_str())
            }
            _ => {
                return Err(Error::NotSupported(
                    "a table name of more than 3 parts".into(),
                ));
            }
        };
        let ident = self.table_ident(state, &name)?;
        let argument = |name: &str| call.arguments.get(name).map(String::as_str);
        let retention = |minimum: Duration, property: &str| -> Result<Duration> {
            let text = argument("retention_threshold").unwrap_or("7d");
            let retention = parse_duration(text).ok_or_else(|| {
                invalid(format!(
                    "retention_threshold '{text}' is not a duration such as 7d or 12h"
                ))
            })?;
            if retention < minimum {
                return Err(invalid(format!(
                    "Retention specified ({}) is shorter than the minimum retention configured \
                     in the system ({}). Minimum retention can be changed with the {property} \
                     session property",
                    format_duration(retention),
                    format_duration(minimum)
                )));
            }
            Ok(retention)
        };
        let properties = &session.properties;
        let kind = match call.procedure.as_str() {
            "optimize" => {
                let threshold = match argument("file_size_threshold") {
                    Some(text) => parse_data_size(text).ok_or_else(|| {
                        invalid(format!(
                            "file_size_threshold '{text}' is not a data size such as 128MB"
                        ))
                    })? as u64,
                    None => DEFAULT_FILE_SIZE_THRESHOLD,
                };
                ProcedureKind::Optimize {
                    file_size_threshold: threshold,
                    filter: call.filter.clone(),
                }
            }
            "expire_snapshots" => ProcedureKind::ExpireSnapshots {
                retention: retention(
                    properties.expire_snapshots_min_retention(),
                    "expire_snapshots_min_retention",
                )?,
            },
            "remove_orphan_files" => ProcedureKind::RemoveOrphanFiles {
                retention: retention(
                    properties.remove_orphan_files_min_retention(),
                    "remove_orphan_files_min_retention",
                )?,
            },
            other => {
                return Err(Error::not_found(
                    crate::error::ObjectKind::Procedure,
                    other.to_string(),
                ));
            }
        };
        Ok(TableProcedure { ident, name, kind })
    }

    /// Runs a table procedure: optimize reports the rows it rewrote.
    pub(super) async fn run_table_procedure(
        &self,
        procedure: TableProcedure,
        state: SessionState,
        cancel: CancellationToken,
    ) -> Result<Option<u64>> {
        let table = self.catalog().load_table(&procedure.ident).await?;
        let older_than = |retention: Duration| {
            maintenance::now_ms()
                .saturating_sub(i64::try_from(retention.as_millis()).unwrap_or(i64::MAX))
        };
        match procedure.kind {
            ProcedureKind::Optimize {
                file_size_threshold,
                filter,
            } => {
                let filter = filter
                    .map(|text| PartitionFilter::from_text(&table, &state, &text))
                    .transpose()?;
                let rows = self
                    .optimize(
                        table,
                        procedure.name,
                        file_size_threshold,
                        filter,
                        state,
                        cancel,
                    )
                    .await?;
                Ok(Some(rows))
            }
            ProcedureKind::ExpireSnapshots { retention } => {
                let kept: HashSet<i64> = crate::catalog::references(table.metadata())?
                    .values()
                    .map(|r| r.snapshot_id)
                    .collect();
                let expired = maintenance::expire_snapshots(
                    &table,
                    self.catalog().as_ref(),
                    older_than(retention),
                    &kept,
                    self.committer.as_ref(),
                )
                .await?;
                if expired.snapshots > 0 {
                    self.commits
                        .committed(&procedure.ident, table.metadata().current_snapshot_id());
                }
                tracing::info!(table = %procedure.ident, snapshots = expired.snapshots, files = expired.files_deleted, "expired snapshots");
                Ok(None)
            }
            ProcedureKind::RemoveOrphanFiles { retention } => {
                let removed = maintenance::remove_orphan_files(
                    &table,
                    self.catalog().as_ref(),
                    older_than(retention),
                )
                .await?;
                tracing::info!(table = %procedure.ident, files = removed, "removed orphan files");
                Ok(None)
            }
        }
    }

    /// Rewrites the table's small files and files with deletes, partition by partition, into
    /// new files of the default spec: a partition is rewritten when it has two such files or
    /// one with deletes. The rows are read and written by the workers as an INSERT's are (a
    /// partition's rows by one writer; an unpartitioned table's by as many writers as read
    /// them); one `replace` snapshot swaps the files, only while the table is still at the
    /// snapshot read. With a `filter`, only the partitions it selects.
    async fn optimize(
        &self,
        table: Table,
        name: TableReference,
        file_size_threshold: u64,
        filter: Option<PartitionFilter>,
        state: SessionState,
        cancel: CancellationToken,
    ) -> Result<u64> {
        let Some(snapshot_id) = table.metadata().current_snapshot_id() else {
            return Ok(0);
        };
        let tasks = sqe_iceberg::scan::snapshot_files(&table, snapshot_id).await?;
        // The spec each file was written with is its manifest's (scan tasks do not say).
        let live = crate::catalog::live_files(&table).await?;
        let spec_of: HashMap<String, i32> = live
            .iter()
            .map(|(spec_id, file)| (file.file_path().to_string(), *spec_id))
            .collect();
        let tasks = match &filter {
            Some(filter) => {
                let selected = filter.selected_files(&table, &live)?;
                tasks
                    .into_iter()
                    .filter(|task| selected.contains(&task.data_file_path))
                    .collect()
            }
            None => tasks,
        };
        // Candidates by partition (spec and values), each file once.
        let mut partitions: BTreeMap<String, Vec<(String, bool)>> = BTreeMap::new();
        let mut seen = HashSet::new();
        for task in tasks {
            let has_deletes = !task.deletes.is_empty();
            if (task.file_size_in_bytes >= file_size_threshold && !has_deletes)
                || !seen.insert(task.data_file_path.clone())
            {
                continue;
            }
            let key = format!(
                "{:?}/{:?}",
                spec_of.get(&task.data_file_path),
                task.partition
            );
            partitions
                .entry(key)
                .or_default()
                .push((task.data_file_path, has_deletes));
        }
        let files: HashSet<String> = partitions
            .into_values()
            .filter(|files| files.len() > 1 || files.iter().any(|(_, deletes)| *deletes))
            .flat_map(|files| files.into_iter().map(|(path, _)| path))
            .collect();
        if files.is_empty() {
            return Ok(0);
        }
        let provider = IcebergTableProvider::try_new(
            Arc::clone(self.catalog()),
            table,
            Arc::new(self.settings.storage_props.clone()),
            Some(Arc::clone(&self.commits) as Arc<dyn CommitListener>),
        )?
        .rewriting(files, Arc::clone(&self.committer))
        .ok_or_else(|| Error::Internal("the table lost its snapshot".into()))?;
        let source = provider_as_source(Arc::new(provider));
        let read = LogicalPlanBuilder::scan(name.clone(), Arc::clone(&source), None)?.build()?;
        let plan =
            LogicalPlanBuilder::insert_into(read, name, source, InsertOp::Append)?.build()?;
        let physical = state.create_physical_plan(&plan).await?;
        let rewrite = count_rows(
            self.query_runtime
                .execute(physical, Arc::new(TaskContext::from(&state))),
        );
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(Error::Cancelled),
            rows = rewrite => rows,
        }
    }
}
