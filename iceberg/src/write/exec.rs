//! `IcebergWriteExec`: the commit of INSERT / CREATE TABLE AS, on the coordinator.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::{RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::Distribution;
use datafusion::physical_expr::{EquivalenceProperties, Partitioning};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
};
use futures::{StreamExt, stream};
use iceberg::spec::{DataFile, Operation};
use iceberg::table::Table;
use iceberg::transaction::{ApplyTransactionAction, Transaction};
use iceberg::{Catalog, ErrorKind, TableIdent};
use tokio::runtime::Handle;
use tracing::Instrument;

use super::attempts::CommitAttempts;
use super::data_files::{DataFileWriteExec, UncommittedFiles, delete_files, read_data_files};
use crate::commit::CommitUpdates;
use crate::error::iceberg_to_df;

/// Told about every successful commit (the result cache drops what read the table).
pub trait CommitListener: fmt::Debug + Send + Sync {
    fn committed(&self, table: &TableIdent, snapshot_id: Option<i64>);

    /// Attempts of one commit the catalog refused because another writer committed first
    /// (each was retried on the new snapshot, as long as retries lasted).
    fn conflicted(&self, _table: &TableIdent, _conflicts: u32) {}
}

/// Between a write's commit and a cancel of its statement, the first to come wins:
/// [`IcebergWriteExec`] asks to [`begin`](Self::begin) its commit (the gate it finds among its
/// task context's session extensions) and the statement's driver asks to
/// [`cancel`](Self::cancel) it. A cancel that wins stops the write before its commit (its files
/// are deleted, nothing is added); one that loses waits for the commit's true outcome, which the
/// client then hears (not a cancel while the rows went in). A write that failed before its
/// commit began certainly added nothing, so it may be run again.
#[derive(Debug, Default)]
pub struct CommitGate(std::sync::atomic::AtomicU8);

const GATE_OPEN: u8 = 0;
const GATE_COMMITTING: u8 = 1;
const GATE_CANCELLED: u8 = 2;

impl CommitGate {
    /// Whether the commit may begin: false once the statement was cancelled.
    pub fn begin(&self) -> bool {
        self.settle(GATE_COMMITTING) == GATE_COMMITTING
    }

    /// Whether the cancel stops the write: false once its commit has begun.
    pub fn cancel(&self) -> bool {
        self.settle(GATE_CANCELLED) == GATE_CANCELLED
    }

    /// Whether the commit has begun.
    pub fn begun(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::SeqCst) == GATE_COMMITTING
    }

    /// The gate's state once `to` has been tried: `to`, or what came first.
    fn settle(&self, to: u8) -> u8 {
        use std::sync::atomic::Ordering::SeqCst;
        match self.0.compare_exchange(GATE_OPEN, to, SeqCst, SeqCst) {
            Ok(_) => to,
            Err(first) => first,
        }
    }
}

/// How an [`IcebergWriteExec`] makes the files written part of its table.
#[derive(Debug, Clone, Default)]
pub enum WriteCommit {
    /// A new `append` snapshot (INSERT, CREATE TABLE AS).
    #[default]
    Append,
    /// A snapshot that swaps data files for the files written (optimize, a replacing ingest).
    Replace(Arc<Replacement>),
    /// An `overwrite` snapshot of the files written that removes every data file of the
    /// partitions they are in (INSERT OVERWRITE).
    OverwritePartitions(Arc<PartitionOverwrite>),
    /// The table's columns, partitioning and sort order replaced with its rows
    /// ([`super::recreation`]): the files written, written for the new ones, are its rows.
    Recreate(Arc<super::Recreation>),
}

/// Data files of one snapshot to swap for the files written.
#[derive(Debug)]
pub struct Replacement {
    /// The snapshot the files were read from: the commit applies only while it is current.
    pub snapshot_id: i64,
    /// The data files replaced.
    pub removed: HashSet<String>,
    /// `replace` when the files written hold the removed files' rows, `overwrite` otherwise.
    pub operation: Operation,
    /// SQE's own commit (iceberg-rust has no replace action).
    pub committer: Arc<dyn CommitUpdates>,
}

/// The partitions an INSERT OVERWRITE writes into, replaced.
#[derive(Debug)]
pub struct PartitionOverwrite {
    /// The snapshot the statement read: the commit applies only while it is current.
    pub snapshot_id: i64,
    /// SQE's own commit (iceberg-rust has no overwrite action).
    pub committer: Arc<dyn CommitUpdates>,
}

/// Commits the data files a [`DataFileWriteExec`] below it wrote (on the workers, in a
/// distributed plan; only the files' metadata comes here) as a single append snapshot. If any
/// partition fails, or the commit fails, nothing is committed and the files are deleted:
/// readers never see part of a statement. Produces one row: the number of rows written
/// (`count`).
///
/// This node holds a catalog handle and runs in the coordinator's head stage; the codec refuses
/// to ship it to a worker.
pub struct IcebergWriteExec {
    input: Arc<dyn ExecutionPlan>,
    catalog: Arc<dyn Catalog>,
    table: Table,
    listener: Option<Arc<dyn CommitListener>>,
    mode: WriteCommit,
    properties: Arc<PlanProperties>,
}

/// Names the table only: its FileIO holds storage credentials.
impl std::fmt::Debug for IcebergWriteExec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IcebergWriteExec")
            .field("table", &self.table.identifier().to_string())
            .field("input", &self.input)
            .finish_non_exhaustive()
    }
}

impl IcebergWriteExec {
    /// Writes `input` into `table`: data files written by a [`DataFileWriteExec`] per input
    /// partition (wherever the input runs), gathered here and committed. `plan_props` are the
    /// storage properties a worker needs beyond its own to write the table's files.
    pub fn new(
        input: Arc<dyn ExecutionPlan>,
        catalog: Arc<dyn Catalog>,
        table: Table,
        listener: Option<Arc<dyn CommitListener>>,
        plan_props: HashMap<String, String>,
    ) -> Self {
        let written = Arc::new(DataFileWriteExec::new(input, table.clone(), plan_props));
        let gathered = Arc::new(CoalescePartitionsExec::new(written));
        Self::committing(gathered, catalog, table, listener, WriteCommit::Append)
    }

    /// The same write, committed as `mode` says.
    pub fn with_commit(mut self, mode: WriteCommit) -> Self {
        self.mode = mode;
        self
    }

    /// Commits what `written` (a plan yielding [`DataFileWriteExec`]'s rows in one
    /// partition) names.
    fn committing(
        written: Arc<dyn ExecutionPlan>,
        catalog: Arc<dyn Catalog>,
        table: Table,
        listener: Option<Arc<dyn CommitListener>>,
        mode: WriteCommit,
    ) -> Self {
        let schema = count_schema();
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Self {
            input: written,
            catalog,
            table,
            listener,
            mode,
            properties,
        }
    }
}

fn count_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        "count",
        DataType::UInt64,
        false,
    )]))
}

impl DisplayAs for IcebergWriteExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IcebergWriteExec: table={}", self.table.identifier())?;
        match self.mode {
            WriteCommit::Append => Ok(()),
            WriteCommit::Replace(_) => write!(f, ", commit=replace"),
            WriteCommit::OverwritePartitions(_) => write!(f, ", commit=overwrite partitions"),
            WriteCommit::Recreate(_) => write!(f, ", commit=recreate"),
        }
    }
}

impl ExecutionPlan for IcebergWriteExec {
    fn name(&self) -> &str {
        "IcebergWriteExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn required_input_distribution(&self) -> Vec<Distribution> {
        vec![Distribution::SinglePartition]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = children
            .pop()
            .filter(|_| children.is_empty())
            .ok_or_else(|| DataFusionError::Internal("IcebergWriteExec takes one input".into()))?;
        Ok(Arc::new(Self::committing(
            input,
            Arc::clone(&self.catalog),
            self.table.clone(),
            self.listener.clone(),
            self.mode.clone(),
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "IcebergWriteExec has one partition, partition {partition} requested"
            )));
        }
        let partitions = self.input.output_partitioning().partition_count();
        if partitions != 1 {
            return Err(DataFusionError::Internal(format!(
                "IcebergWriteExec gathers one partition of written files, not {partitions}"
            )));
        }
        let gate = context.session_config().get_extension::<CommitGate>();
        let mut written = self.input.execute(0, context)?;
        let table = self.table.clone();
        let catalog = Arc::clone(&self.catalog);
        let listener = self.listener.clone();
        let mode = self.mode.clone();
        let write = async move {
            // The files that reached here; those of writers still running are theirs to
            // delete if the stream is dropped.
            let received = UncommittedFiles::new(table.clone());
            let mut data_files = Vec::new();
            while let Some(batch) = written.next().await {
                match batch.and_then(|batch| read_data_files(&table, &batch)) {
                    Ok(files) => {
                        for file in &files {
                            received.created().add(file.file_path());
                        }
                        data_files.extend(files);
                    }
                    Err(e) => {
                        drop(written);
                        received.delete().await;
                        return Err(e);
                    }
                }
            }
            // Cancelling stops at the commit: once started it runs to its end in a task of its
            // own, which also deletes the files if it did not apply.
            if gate.as_ref().is_some_and(|gate| !gate.begin()) {
                received.delete().await;
                return Err(DataFusionError::Execution(
                    "the statement was cancelled before its commit".into(),
                ));
            }
            received.hand_over();
            let rows: u64 = data_files.iter().map(DataFile::record_count).sum();
            let committing = async move {
                let locations: Vec<String> = data_files
                    .iter()
                    .map(|f| f.file_path().to_string())
                    .collect();
                let committed = match &mode {
                    WriteCommit::Append => {
                        commit(&table, catalog.as_ref(), data_files, listener.as_deref()).await
                    }
                    WriteCommit::Replace(replacement) => {
                        replace(&table, replacement, data_files, listener.as_deref()).await
                    }
                    WriteCommit::OverwritePartitions(overwrite) => {
                        overwrite_partitions(&table, overwrite, data_files, listener.as_deref())
                            .await
                    }
                    WriteCommit::Recreate(recreation) => {
                        recreate(&table, recreation, data_files, listener.as_deref()).await
                    }
                };
                match committed {
                    Ok(()) => Ok(()),
                    Err(CommitError::NotApplied(e)) => {
                        delete_files(&table, &locations).await;
                        Err(e)
                    }
                    Err(CommitError::Unknown(e)) => {
                        // The catalog may have applied it: deleting could break a snapshot.
                        tracing::warn!(
                            table = %table.identifier(),
                            error = %e,
                            "commit outcome unknown; keeping its data files (orphans if it did not apply)"
                        );
                        Err(e)
                    }
                }
            };
            Handle::current()
                .spawn(committing.in_current_span())
                .await
                .map_err(|e| DataFusionError::External(Box::new(e)))?
                .map_err(iceberg_to_df)?;
            Ok(RecordBatch::try_new(
                count_schema(),
                vec![Arc::new(UInt64Array::from(vec![rows]))],
            )?)
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            count_schema(),
            stream::once(write),
        )))
    }
}

/// Why a commit failed, as far as the files it names are concerned.
enum CommitError {
    /// The snapshot certainly does not exist (refused before sending, or a conflict that
    /// retries did not resolve): the files may go.
    NotApplied(iceberg::Error),
    /// The catalog may or may not have applied it (e.g. a timeout or a 5xx from a REST catalog).
    Unknown(iceberg::Error),
}

/// Commits `replacement` with the `written` files: never retried, since the files replaced may
/// have changed since (a conflict fails the statement, which can simply run again).
async fn replace(
    table: &Table,
    replacement: &Replacement,
    written: Vec<DataFile>,
    listener: Option<&dyn CommitListener>,
) -> Result<(), CommitError> {
    let committed = crate::delete::commit_replace(
        table,
        replacement.snapshot_id,
        &replacement.removed,
        written,
        replacement.operation.clone(),
        replacement.committer.as_ref(),
    )
    .instrument(
        tracing::info_span!("iceberg.commit", table = %table.identifier(), operation = "replace"),
    )
    .await;
    settled(table, committed, listener)
}

async fn overwrite_partitions(
    table: &Table,
    overwrite: &PartitionOverwrite,
    written: Vec<DataFile>,
    listener: Option<&dyn CommitListener>,
) -> Result<(), CommitError> {
    let committed = crate::delete::commit_partition_overwrite(
        table,
        overwrite.snapshot_id,
        written,
        overwrite.committer.as_ref(),
    )
    .instrument(tracing::info_span!(
        "iceberg.commit",
        table = %table.identifier(),
        operation = "overwrite"
    ))
    .await;
    settled(table, committed, listener)
}

/// Commits `recreation` with the `written` files as the table's rows: never retried (a
/// conflict fails the statement, which can simply run again).
async fn recreate(
    table: &Table,
    recreation: &super::Recreation,
    written: Vec<DataFile>,
    listener: Option<&dyn CommitListener>,
) -> Result<(), CommitError> {
    let committed = crate::delete::commit_recreation(table, recreation, written)
        .instrument(tracing::info_span!(
            "iceberg.commit",
            table = %table.identifier(),
            operation = "recreate"
        ))
        .await;
    settled(table, committed, listener)
}

/// A row-level commit's outcome as a write's.
fn settled(
    table: &Table,
    committed: std::result::Result<Option<i64>, crate::delete::DeleteError>,
    listener: Option<&dyn CommitListener>,
) -> Result<(), CommitError> {
    match committed {
        Ok(snapshot_id) => {
            if let Some(listener) = listener {
                listener.committed(table.identifier(), snapshot_id);
            }
            Ok(())
        }
        Err(crate::delete::DeleteError::NotApplied(e)) => Err(CommitError::NotApplied(e)),
        Err(crate::delete::DeleteError::Unknown(e)) => Err(CommitError::Unknown(e)),
    }
}

/// Whole commits tried before a conflicting append gives up (each retries on its own first).
const COMMIT_ROUNDS: u32 = 8;

async fn commit(
    table: &Table,
    catalog: &dyn Catalog,
    files: Vec<DataFile>,
    listener: Option<&dyn CommitListener>,
) -> Result<(), CommitError> {
    if files.is_empty() {
        return Ok(());
    }
    let span = tracing::info_span!(
        "iceberg.commit",
        table = %table.identifier(),
        data_files = files.len(),
        snapshot_id = tracing::field::Empty,
        conflicts = tracing::field::Empty,
    );
    // iceberg-rust retries a conflicting append itself (reloading the table and re-applying it
    // on the new snapshot), as often as the table's commit.retry.* properties allow; a busy
    // table can outlast those, so whole commits are retried too: an append never loses to a
    // concurrent one, it only waits its turn.
    let attempts = CommitAttempts::new(catalog, table);
    let mut round = 1;
    let result = loop {
        let tx = Transaction::new(table);
        let tx = tx
            .fast_append()
            .add_data_files(files.clone())
            .apply(tx)
            .map_err(CommitError::NotApplied)?;
        let result = tx.commit(&attempts).instrument(span.clone()).await;
        match &result {
            Err(e) if e.kind() == ErrorKind::CatalogCommitConflicts && round < COMMIT_ROUNDS => {
                let pause = Duration::from_millis(rand::random_range(50..250) * u64::from(round));
                tracing::debug!(round, ?pause, "append still conflicting; committing again");
                tokio::time::sleep(pause).await;
                round += 1;
            }
            _ => break result,
        }
    };
    let conflicts = attempts.conflicts();
    if conflicts > 0 {
        span.record("conflicts", conflicts);
        if let Some(listener) = listener {
            listener.conflicted(table.identifier(), conflicts);
        }
    }
    let committed = result.map_err(|e| match e.kind() {
        // The table is gone (or is another table of that name): no snapshot of ours exists.
        ErrorKind::TableNotFound
        | ErrorKind::CatalogCommitConflicts
        | ErrorKind::DataInvalid
        | ErrorKind::FeatureUnsupported => CommitError::NotApplied(e),
        _ => CommitError::Unknown(e),
    })?;
    let snapshot_id = committed.metadata().current_snapshot_id();
    if let Some(id) = snapshot_id {
        span.record("snapshot_id", id);
    }
    if let Some(listener) = listener {
        listener.committed(table.identifier(), snapshot_id);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::racing::{Racing, TestResult, data_file, table_in_memory};

    #[derive(Debug, Default)]
    struct Seen {
        commits: std::sync::atomic::AtomicU32,
        conflicts: std::sync::atomic::AtomicU32,
    }

    impl CommitListener for Seen {
        fn committed(&self, _table: &TableIdent, _snapshot_id: Option<i64>) {
            self.commits
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        fn conflicted(&self, _table: &TableIdent, conflicts: u32) {
            self.conflicts
                .fetch_add(conflicts, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn an_append_outlasts_more_conflicts_than_iceberg_retries() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (catalog, base) = table_in_memory(dir.path()).await?;
        // iceberg-rust gives up after 4 retries by default; 7 writers get in first.
        let racing = Racing::new(&catalog, base.identifier().clone(), 7);
        let seen = Seen::default();
        let ours = vec![data_file(&base, "ours")?];
        if commit(&base, &racing, ours, Some(&seen)).await.is_err() {
            return Err("the append gave up".into());
        }
        let table = catalog.load_table(base.identifier()).await?;
        assert_eq!(
            table.metadata().snapshots().count(),
            8,
            "7 competitors and ours"
        );
        assert_eq!(seen.conflicts.load(std::sync::atomic::Ordering::SeqCst), 7);
        assert_eq!(seen.commits.load(std::sync::atomic::Ordering::SeqCst), 1);
        Ok(())
    }

    /// Commits the data files `batch` names into `table` through an [`IcebergWriteExec`]
    /// whose context carries `gate`: whether it succeeded and whether its commit had begun.
    async fn commit_through_the_exec(
        catalog: Arc<dyn Catalog>,
        table: &Table,
        batch: RecordBatch,
        gate: Arc<CommitGate>,
    ) -> std::result::Result<(bool, bool), Box<dyn std::error::Error>> {
        use datafusion::datasource::memory::MemorySourceConfig;
        use datafusion::prelude::SessionConfig;

        let input = MemorySourceConfig::try_new_exec(&[vec![batch.clone()]], batch.schema(), None)?;
        let exec =
            IcebergWriteExec::committing(input, catalog, table.clone(), None, WriteCommit::Append);
        let config = SessionConfig::new().with_extension(Arc::clone(&gate));
        let context = Arc::new(TaskContext::default().with_session_config(config));
        let mut stream = exec.execute(0, context)?;
        let mut succeeded = true;
        while let Some(item) = stream.next().await {
            succeeded &= item.is_ok();
        }
        Ok((succeeded, gate.begun()))
    }

    #[tokio::test]
    async fn a_write_begins_its_commit_only_once_its_files_are_all_in_and_not_cancelled()
    -> TestResult {
        let dir = tempfile::tempdir()?;
        let (catalog, table) = table_in_memory(dir.path()).await?;
        let catalog: Arc<dyn Catalog> = Arc::new(catalog);
        let files = || -> std::result::Result<RecordBatch, Box<dyn std::error::Error>> {
            Ok(super::super::data_files::data_files_batch(
                &table,
                vec![data_file(&table, "a")?],
            )?)
        };
        // A batch that names no data file fails the write before its commit.
        let not_files = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("n", DataType::UInt64, false)])),
            vec![Arc::new(UInt64Array::from(vec![1]))],
        )?;
        let gate = Arc::new(CommitGate::default());
        let failed =
            commit_through_the_exec(Arc::clone(&catalog), &table, not_files, Arc::clone(&gate))
                .await?;
        assert_eq!(
            failed,
            (false, false),
            "failed before committing: may run again"
        );
        assert!(gate.cancel(), "nothing began: a cancel still stops it");
        // Cancelled first: the files are in, but the commit does not begin.
        let gate = Arc::new(CommitGate::default());
        assert!(gate.cancel());
        let refused =
            commit_through_the_exec(Arc::clone(&catalog), &table, files()?, Arc::clone(&gate))
                .await?;
        assert_eq!(refused, (false, false));
        let unchanged = catalog.load_table(table.identifier()).await?;
        assert_eq!(unchanged.metadata().snapshots().count(), 0);
        // Not cancelled: it commits, and a cancel after that loses.
        let gate = Arc::new(CommitGate::default());
        let committed =
            commit_through_the_exec(Arc::clone(&catalog), &table, files()?, Arc::clone(&gate))
                .await?;
        assert_eq!(committed, (true, true));
        assert!(
            !gate.cancel(),
            "the commit began: the cancel waits for its outcome"
        );
        let table = catalog.load_table(table.identifier()).await?;
        assert_eq!(table.metadata().snapshots().count(), 1);
        Ok(())
    }

    #[tokio::test]
    async fn files_never_go_into_a_table_created_again_under_the_same_name() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (catalog, planned) = table_in_memory(dir.path()).await?;
        // While the statement wrote, the table was dropped and one of that name created.
        catalog.drop_table(planned.identifier()).await?;
        let namespace = planned.identifier().namespace().clone();
        let again = iceberg::TableCreation::builder()
            .name(planned.identifier().name().to_string())
            .schema(planned.metadata().current_schema().as_ref().clone())
            .build();
        catalog.create_table(&namespace, again).await?;
        let ours = vec![data_file(&planned, "ours")?];
        match commit(&planned, &catalog, ours, None).await {
            Err(CommitError::NotApplied(e)) => {
                assert_eq!(e.kind(), ErrorKind::TableNotFound, "{e}");
            }
            Err(CommitError::Unknown(e)) => return Err(format!("outcome unknown: {e}").into()),
            Ok(()) => return Err("the files were committed into the new table".into()),
        }
        let new = catalog.load_table(planned.identifier()).await?;
        assert_eq!(new.metadata().snapshots().count(), 0);
        // Dropped and not created again: not applied either, so the files may go.
        catalog.drop_table(planned.identifier()).await?;
        let gone = commit(&planned, &catalog, vec![data_file(&planned, "x")?], None).await;
        assert!(matches!(gone, Err(CommitError::NotApplied(_))));
        Ok(())
    }
}
