//! DELETE and UPDATE as Trino's Iceberg connector does them: a data file all of whose live
//! rows go is removed from the table (metadata only); from any other, the rows go by a position
//! delete file (merge-on-read, format 2); an UPDATE adds the rows' new versions as data files.
//! One snapshot (`delete`, or `overwrite` when it adds data) holds it all, committed only if
//! the table is still at the snapshot the statement read.

mod changes;
mod conflicts;
mod deleted;
mod files;
pub mod positions;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{SystemTime, UNIX_EPOCH};

use datafusion::arrow::array::{Array, Int64Array, RecordBatch, StringArray};
use iceberg::spec::{
    DataFile, FormatVersion, MAIN_BRANCH, ManifestContentType, ManifestFile, ManifestListWriter,
    ManifestStatus, ManifestWriterBuilder, Operation, Snapshot, SnapshotReference,
    SnapshotRetention, Struct, Summary,
};
use iceberg::table::Table;
use iceberg::{Error, ErrorKind, Result, TableRequirement, TableUpdate};

use crate::commit::CommitUpdates;
pub use changes::{
    APPLIED_COLUMN, RowChangeWriteExec, WRITE_COLUMN, applied_rows, changed_files,
    row_change_schema,
};
pub use conflicts::conflict_since;
pub use positions::{FILE_COLUMN, POS_COLUMN, RowPositionsExec, RowPositionsProvider};

/// The rows a DELETE selected: positions by data file.
#[derive(Debug, Default)]
pub struct SelectedRows {
    by_file: BTreeMap<String, Vec<i64>>,
}

impl SelectedRows {
    /// Adds the rows of a batch with [`FILE_COLUMN`] and [`POS_COLUMN`].
    pub fn add(&mut self, batch: &RecordBatch) -> Result<()> {
        let column = |name: &str| {
            batch.column_by_name(name).ok_or_else(|| {
                Error::new(
                    ErrorKind::Unexpected,
                    format!("no column {name} in the rows"),
                )
            })
        };
        let files = column(FILE_COLUMN)?
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| Error::new(ErrorKind::Unexpected, "file column is not a string"))?;
        let positions = column(POS_COLUMN)?
            .as_any()
            .downcast_ref::<Int64Array>()
            .ok_or_else(|| Error::new(ErrorKind::Unexpected, "position column is not bigint"))?;
        for row in 0..batch.num_rows() {
            if files.is_valid(row) && positions.is_valid(row) {
                self.by_file
                    .entry(files.value(row).to_string())
                    .or_default()
                    .push(positions.value(row));
            }
        }
        Ok(())
    }

    /// The rows selected, each counted once.
    pub fn rows(&mut self) -> u64 {
        self.normalize();
        self.by_file.values().map(|p| p.len() as u64).sum()
    }

    /// The data files some selected row is in.
    pub fn files(&self) -> HashSet<&str> {
        self.by_file.keys().map(String::as_str).collect()
    }

    /// Whether a row was selected more than once (a MERGE whose target row matched several
    /// source rows).
    pub fn has_repeats(&self) -> bool {
        self.by_file.values().any(|positions| {
            let mut sorted = positions.clone();
            sorted.sort_unstable();
            sorted.windows(2).any(|pair| pair[0] == pair[1])
        })
    }

    fn normalize(&mut self) {
        for positions in self.by_file.values_mut() {
            positions.sort_unstable();
            positions.dedup();
        }
        self.by_file.retain(|_, positions| !positions.is_empty());
    }
}

/// Why a row-level change's commit failed, as far as the files it wrote are concerned.
#[derive(Debug)]
pub enum DeleteError {
    /// Certainly not applied: its files were deleted again.
    NotApplied(Error),
    /// The catalog may have applied it: its files stay.
    Unknown(Error),
}

impl DeleteError {
    pub fn into_inner(self) -> Error {
        match self {
            DeleteError::NotApplied(e) | DeleteError::Unknown(e) => e,
        }
    }
}

/// Deletes `selected` from `table` (as loaded when the statement was planned, at
/// `snapshot_id`; `None`: it had no snapshot) and adds the data files `added` (written for
/// the table, not yet visible), in one snapshot committed through `committer`; the snapshot's
/// id, `None` when there was nothing to change. Files `added` are the caller's to delete if
/// this fails; the files written here are deleted unless the outcome is unknown.
pub async fn commit_row_changes(
    table: &Table,
    snapshot_id: Option<i64>,
    selected: &mut SelectedRows,
    added: Vec<DataFile>,
    committer: &dyn CommitUpdates,
) -> std::result::Result<Option<i64>, DeleteError> {
    selected.normalize();
    if selected.by_file.is_empty() && added.is_empty() {
        return Ok(None);
    }
    let mut producer = DeleteProducer::new(table, snapshot_id).map_err(DeleteError::NotApplied)?;
    let prepared = producer.prepare(selected, added).await;
    producer.commit(prepared, committer).await
}

/// Replaces the live data files `removed` of `table`'s snapshot `snapshot_id` (as loaded when
/// the statement was planned) by the data files `added`: one snapshot of `operation`
/// (`replace` when they hold the same rows, as optimize's do; `overwrite` when they are new
/// data), committed through `committer` only while the table is still at that snapshot. Position delete files that name only removed files go with them. The
/// snapshot's id, `None` when there was nothing to replace. Files `added` are the caller's to
/// delete if this fails.
pub async fn commit_replace(
    table: &Table,
    snapshot_id: i64,
    removed: &HashSet<String>,
    added: Vec<DataFile>,
    operation: Operation,
    committer: &dyn CommitUpdates,
) -> std::result::Result<Option<i64>, DeleteError> {
    if removed.is_empty() && added.is_empty() {
        return Ok(None);
    }
    let mut producer =
        DeleteProducer::new(table, Some(snapshot_id)).map_err(DeleteError::NotApplied)?;
    let prepared = producer.prepare_replace(removed, added, operation).await;
    producer.commit(prepared, committer).await
}

/// Adds the data files `added` (written in `table`'s default partition spec) to `table` at
/// snapshot `snapshot_id`, replacing every live data file of the partitions they are in: one
/// `overwrite` snapshot, committed through `committer` only while the table is still at that
/// snapshot (Hive's and Spark's dynamic partition overwrite; an unpartitioned table is one
/// partition, whatever specs its files were written in). Nothing is replaced when nothing was
/// added; data files of an earlier partitioning of a partitioned table are refused. Files `added` are the caller's to
/// delete if this fails.
pub async fn commit_partition_overwrite(
    table: &Table,
    snapshot_id: i64,
    added: Vec<DataFile>,
    committer: &dyn CommitUpdates,
) -> std::result::Result<Option<i64>, DeleteError> {
    if added.is_empty() {
        return Ok(None);
    }
    let spec_id = table.metadata().default_partition_spec_id();
    let partitions: HashSet<&Struct> = added.iter().map(DataFile::partition).collect();
    let mut producer =
        DeleteProducer::new(table, Some(snapshot_id)).map_err(DeleteError::NotApplied)?;
    let removed = producer.live_data_files_in(spec_id, &partitions).await;
    let prepared = match removed {
        Ok(removed) => {
            producer
                .prepare_replace(&removed, added, Operation::Overwrite)
                .await
        }
        Err(e) => Err(e),
    };
    producer.commit(prepared, committer).await
}

/// Commits `recreation` (the table's new columns, partitioning and order, its main branch
/// cleared) of `table` (as it will be, [`crate::write::recreation`]) with `added` as its rows:
/// one `append` snapshot with no parent, or none when nothing was added. Files `added` are the
/// caller's to delete if this fails.
pub async fn commit_recreation(
    table: &Table,
    recreation: &crate::write::Recreation,
    added: Vec<DataFile>,
) -> std::result::Result<Option<i64>, DeleteError> {
    let committer = recreation.committer.as_ref();
    let mut producer = DeleteProducer::new(table, None).map_err(DeleteError::NotApplied)?;
    let adds = !added.is_empty();
    let prepared = if !adds {
        Ok(PreparedCommit {
            requirements: Vec::new(),
            updates: Vec::new(),
        })
    } else {
        producer
            .prepare_replace(&HashSet::new(), added, Operation::Append)
            .await
    };
    let with_changes = prepared.map(|snapshot| {
        let mut updates = recreation.changes.clone();
        updates.extend(snapshot.updates);
        PreparedCommit {
            requirements: recreation.requirements.clone(),
            updates,
        }
    });
    let snapshot = producer.commit(with_changes, committer).await?;
    Ok(snapshot.filter(|_| adds))
}

/// A live data file of the snapshot a DELETE read, and where its entry is.
struct LiveFile {
    data_file: DataFile,
    spec_id: i32,
    manifest: usize,
    /// Rows not yet deleted.
    live_rows: u64,
}

struct PreparedCommit {
    requirements: Vec<TableRequirement>,
    updates: Vec<TableUpdate>,
}

/// Builds the files of one delete snapshot, remembering them so a failed commit can remove
/// them again.
struct DeleteProducer<'a> {
    table: &'a Table,
    parent: Option<i64>,
    snapshot_id: i64,
    sequence_number: i64,
    format: FormatVersion,
    written: Vec<String>,
}

impl<'a> DeleteProducer<'a> {
    fn new(table: &'a Table, parent: Option<i64>) -> Result<Self> {
        let metadata = table.metadata();
        let format = metadata.format_version();
        if format > FormatVersion::V2 {
            return Err(Error::new(
                ErrorKind::FeatureUnsupported,
                format!("DELETE on Iceberg format version {format} tables"),
            ));
        }
        let snapshot_id = loop {
            let id = rand::random_range(1..i64::MAX);
            if metadata.snapshot_by_id(id).is_none() {
                break id;
            }
        };
        Ok(Self {
            table,
            parent,
            snapshot_id,
            sequence_number: metadata.next_sequence_number(),
            format,
            written: Vec::new(),
        })
    }

    async fn prepare(
        &mut self,
        selected: &SelectedRows,
        added: Vec<DataFile>,
    ) -> Result<PreparedCommit> {
        let io = self.table.file_io().clone();
        let manifests = self.parent_manifests().await?;
        let live = self.live_files(&manifests, selected).await?;

        let mut removed: HashSet<&str> = HashSet::new();
        let mut removed_by_manifest: HashMap<usize, Vec<&str>> = HashMap::new();
        let mut delete_files: Vec<DataFile> = Vec::new();
        let mut summary = Totals::default();
        for (path, positions) in &selected.by_file {
            let file = live.get(path.as_str()).ok_or_else(|| {
                Error::new(
                    ErrorKind::DataInvalid,
                    format!(
                        "{path} is not a live data file of snapshot {:?}",
                        self.parent
                    ),
                )
            })?;
            if positions.len() as u64 >= file.live_rows {
                removed.insert(path.as_str());
                removed_by_manifest
                    .entry(file.manifest)
                    .or_default()
                    .push(path.as_str());
                summary.removed_files += 1;
                summary.removed_records += file.data_file.record_count();
                summary.removed_bytes += file.data_file.file_size_in_bytes();
                continue;
            }
            if self.format == FormatVersion::V1 {
                return Err(Error::new(
                    ErrorKind::FeatureUnsupported,
                    format!(
                        "deleting some rows of a data file needs Iceberg format version 2; {} is \
                         version 1 (only whole files can be deleted from it)",
                        self.table.identifier()
                    ),
                ));
            }
            let delete_file =
                files::write_position_deletes(&io, &file.data_file, file.spec_id, positions)
                    .await?;
            self.written.push(delete_file.file_path().to_string());
            summary.added_delete_files += 1;
            summary.added_positions += delete_file.record_count();
            summary.added_bytes += delete_file.file_size_in_bytes();
            delete_files.push(delete_file);
        }

        let mut list: Vec<ManifestFile> = Vec::new();
        for (index, manifest) in manifests.iter().enumerate() {
            if removed_by_manifest.contains_key(&index) {
                list.push(self.rewrite_manifest(manifest, &removed).await?);
            } else {
                list.push(manifest.clone());
            }
        }
        list.extend(self.delete_manifests(delete_files, &live).await?);
        let removes = !selected.by_file.is_empty();
        let operation = if added.is_empty() {
            Operation::Delete
        } else {
            for file in &added {
                summary.added_data_files += 1;
                summary.added_records += file.record_count();
                summary.added_bytes += file.file_size_in_bytes();
            }
            list.push(self.data_manifest(added).await?);
            if removes {
                Operation::Overwrite
            } else {
                Operation::Append
            }
        };
        self.snapshot_commit(list, operation, &summary).await
    }

    /// Commits what [`Self::prepare`] or [`Self::prepare_replace`] made; deletes the files it
    /// wrote unless the catalog may have applied it.
    async fn commit(
        &self,
        prepared: Result<PreparedCommit>,
        committer: &dyn CommitUpdates,
    ) -> std::result::Result<Option<i64>, DeleteError> {
        let table = self.table;
        let result = match prepared {
            Ok(commit) => committer
                .commit_updates(table.identifier(), commit.requirements, commit.updates)
                .await
                .map_err(|e| match e.kind() {
                    ErrorKind::CatalogCommitConflicts
                    | ErrorKind::TableNotFound
                    | ErrorKind::DataInvalid
                    | ErrorKind::FeatureUnsupported => DeleteError::NotApplied(e),
                    _ => DeleteError::Unknown(e),
                }),
            Err(e) => Err(DeleteError::NotApplied(e)),
        };
        match result {
            Ok(()) => Ok(Some(self.snapshot_id)),
            Err(DeleteError::NotApplied(e)) => {
                self.delete_written().await;
                Err(DeleteError::NotApplied(e))
            }
            Err(unknown) => {
                tracing::warn!(table = %table.identifier(), "row-level commit outcome unknown; keeping its files");
                Err(unknown)
            }
        }
    }

    /// The parent snapshot's manifests (none for a table without one).
    async fn parent_manifests(&self) -> Result<Vec<ManifestFile>> {
        let metadata = self.table.metadata();
        let Some(id) = self.parent else {
            return Ok(Vec::new());
        };
        let parent = metadata
            .snapshot_by_id(id)
            .ok_or_else(|| Error::new(ErrorKind::DataInvalid, format!("snapshot {id} is gone")))?;
        Ok(self
            .table
            .manifest_list_reader(parent)
            .load()
            .await?
            .entries()
            .to_vec())
    }

    /// The live data files of the parent snapshot in one of `partitions` of spec `spec_id`,
    /// the table's default spec; when that is unpartitioned, every live data file. Files of
    /// another spec cannot be told to be in those partitions or not: refused.
    async fn live_data_files_in(
        &self,
        spec_id: i32,
        partitions: &HashSet<&Struct>,
    ) -> Result<HashSet<String>> {
        let io = self.table.file_io();
        let whole = self
            .table
            .metadata()
            .default_partition_spec()
            .is_unpartitioned();
        let mut files = HashSet::new();
        for manifest in self.parent_manifests().await? {
            if manifest.content != ManifestContentType::Data {
                continue;
            }
            let other_spec = manifest.partition_spec_id != spec_id;
            for entry in manifest.load_manifest(io).await?.entries() {
                if !entry.is_alive() {
                    continue;
                }
                if other_spec && !whole {
                    return Err(Error::new(
                        ErrorKind::FeatureUnsupported,
                        "INSERT OVERWRITE of a table with data files written in an earlier \
                         partitioning: rewrite them into the current one first (ALTER TABLE … \
                         EXECUTE optimize)",
                    ));
                }
                if whole || partitions.contains(entry.data_file().partition()) {
                    files.insert(entry.data_file().file_path().to_string());
                }
            }
        }
        Ok(files)
    }

    /// A snapshot of `operation`: the live data files `removed_data` out (with the position delete
    /// files that name only them), `added` in.
    async fn prepare_replace(
        &mut self,
        removed_data: &HashSet<String>,
        added: Vec<DataFile>,
        operation: Operation,
    ) -> Result<PreparedCommit> {
        let io = self.table.file_io().clone();
        let manifests = self.parent_manifests().await?;
        let mut removed: HashSet<String> = HashSet::new();
        let mut rewritten: HashSet<usize> = HashSet::new();
        let mut summary = Totals::default();
        for (index, manifest) in manifests.iter().enumerate() {
            for entry in manifest.load_manifest(&io).await?.entries() {
                if !entry.is_alive() {
                    continue;
                }
                let file = entry.data_file();
                let path = removed_data.get(file.file_path());
                let dangling = file
                    .referenced_data_file()
                    .and_then(|data| removed_data.get(&data));
                match (manifest.content, path, dangling) {
                    (ManifestContentType::Data, Some(path), _) => {
                        removed.insert(path.clone());
                        summary.removed_files += 1;
                        summary.removed_records += file.record_count();
                        summary.removed_bytes += file.file_size_in_bytes();
                    }
                    (ManifestContentType::Deletes, _, Some(_)) => {
                        removed.insert(file.file_path().to_string());
                        summary.removed_delete_files += 1;
                        summary.removed_positions += file.record_count();
                        summary.removed_bytes += file.file_size_in_bytes();
                    }
                    _ => continue,
                }
                rewritten.insert(index);
            }
        }
        if let Some(missing) = removed_data.iter().find(|path| !removed.contains(*path)) {
            return Err(Error::new(
                ErrorKind::DataInvalid,
                format!(
                    "{missing} is not a live data file of snapshot {:?}",
                    self.parent
                ),
            ));
        }
        let removed: HashSet<&str> = removed.iter().map(String::as_str).collect();
        let mut list: Vec<ManifestFile> = Vec::new();
        for (index, manifest) in manifests.iter().enumerate() {
            if rewritten.contains(&index) {
                list.push(self.rewrite_manifest(manifest, &removed).await?);
            } else {
                list.push(manifest.clone());
            }
        }
        if !added.is_empty() {
            for file in &added {
                summary.added_data_files += 1;
                summary.added_records += file.record_count();
                summary.added_bytes += file.file_size_in_bytes();
            }
            list.push(self.data_manifest(added).await?);
        }
        self.snapshot_commit(list, operation, &summary).await
    }

    /// Writes the manifest list of `manifests` and makes the snapshot's commit: the snapshot,
    /// the main branch moved to it, only while the table is the one read and still at its
    /// parent.
    async fn snapshot_commit(
        &mut self,
        list: Vec<ManifestFile>,
        operation: Operation,
        summary: &Totals,
    ) -> Result<PreparedCommit> {
        let metadata = self.table.metadata();
        let parent = self.parent.and_then(|id| metadata.snapshot_by_id(id));
        let manifest_list = self.write_manifest_list(list).await?;

        let snapshot = Snapshot::builder()
            .with_snapshot_id(self.snapshot_id)
            .with_parent_snapshot_id(self.parent)
            .with_sequence_number(self.sequence_number)
            .with_timestamp_ms(now_millis())
            .with_manifest_list(manifest_list)
            .with_schema_id(metadata.current_schema_id())
            .with_summary(Summary {
                operation,
                additional_properties: summary.properties(parent.map(|p| p.summary())),
            })
            .build();
        Ok(PreparedCommit {
            requirements: vec![
                TableRequirement::UuidMatch {
                    uuid: metadata.uuid(),
                },
                TableRequirement::RefSnapshotIdMatch {
                    r#ref: MAIN_BRANCH.to_string(),
                    snapshot_id: self.parent,
                },
            ],
            updates: vec![
                TableUpdate::AddSnapshot { snapshot },
                TableUpdate::SetSnapshotRef {
                    ref_name: MAIN_BRANCH.to_string(),
                    reference: SnapshotReference::new(
                        self.snapshot_id,
                        SnapshotRetention::branch(None, None, None),
                    ),
                },
            ],
        })
    }

    /// The live data files `selected` names, with how many rows of each are not yet deleted.
    async fn live_files(
        &self,
        manifests: &[ManifestFile],
        selected: &SelectedRows,
    ) -> Result<HashMap<String, LiveFile>> {
        let io = self.table.file_io();
        let mut live = HashMap::new();
        for (index, manifest) in manifests.iter().enumerate() {
            if manifest.content != ManifestContentType::Data {
                continue;
            }
            for entry in manifest.load_manifest(io).await?.entries() {
                if entry.is_alive() && selected.by_file.contains_key(entry.file_path()) {
                    live.insert(
                        entry.file_path().to_string(),
                        LiveFile {
                            data_file: entry.data_file().clone(),
                            spec_id: manifest.partition_spec_id,
                            manifest: index,
                            live_rows: entry.data_file().record_count(),
                        },
                    );
                }
            }
        }
        let Some(parent) = self.parent else {
            return Ok(live);
        };
        // What earlier deletes removed, as the scan planner assigns them.
        let tasks = crate::scan::snapshot_files(self.table, parent).await?;
        let mut seen = HashSet::new();
        for task in tasks {
            if let Some(file) = live.get_mut(&task.data_file_path)
                && seen.insert(task.data_file_path.clone())
            {
                let deleted =
                    deleted::deleted_positions(io, &task.data_file_path, &task.deletes).await?;
                file.live_rows = file.live_rows.saturating_sub(deleted.len() as u64);
            }
        }
        Ok(live)
    }

    /// `manifest` again, with the `removed` files marked deleted and the rest kept.
    async fn rewrite_manifest(
        &mut self,
        manifest: &ManifestFile,
        removed: &HashSet<&str>,
    ) -> Result<ManifestFile> {
        let deletes = manifest.content == ManifestContentType::Deletes;
        let mut writer = self.manifest_writer(manifest.partition_spec_id, deletes)?;
        for entry in manifest
            .load_manifest(self.table.file_io())
            .await?
            .entries()
        {
            if !entry.is_alive() {
                continue;
            }
            let sequence_number = entry.sequence_number().ok_or_else(|| {
                Error::new(
                    ErrorKind::DataInvalid,
                    "a live manifest entry without a sequence number",
                )
            })?;
            let file_sequence_number = entry.file_sequence_number.or(Some(sequence_number));
            let data_file = entry.data_file().clone();
            if removed.contains(entry.file_path()) {
                writer.add_delete_file(data_file, sequence_number, file_sequence_number)?;
            } else {
                let added_in = entry
                    .snapshot_id()
                    .or(self.parent)
                    .ok_or_else(|| Error::new(ErrorKind::DataInvalid, "an entry of no snapshot"))?;
                writer.add_existing_file(
                    data_file,
                    added_in,
                    sequence_number,
                    file_sequence_number,
                )?;
            }
            debug_assert!(matches!(
                entry.status(),
                ManifestStatus::Added | ManifestStatus::Existing
            ));
        }
        writer.write_manifest_file().await
    }

    /// A manifest of the new data files, which the writers partitioned by the default spec.
    async fn data_manifest(&mut self, files: Vec<DataFile>) -> Result<ManifestFile> {
        let spec_id = self.table.metadata().default_partition_spec_id();
        let mut writer = self.manifest_writer(spec_id, false)?;
        for file in files {
            writer.add_file(file, self.sequence_number)?;
        }
        writer.write_manifest_file().await
    }

    /// One delete manifest per partition spec for the new position delete files.
    async fn delete_manifests(
        &mut self,
        delete_files: Vec<DataFile>,
        live: &HashMap<String, LiveFile>,
    ) -> Result<Vec<ManifestFile>> {
        let mut by_spec: BTreeMap<i32, Vec<DataFile>> = BTreeMap::new();
        for file in delete_files {
            let spec_id = file
                .referenced_data_file()
                .and_then(|path| live.get(&path))
                .map_or(0, |f| f.spec_id);
            by_spec.entry(spec_id).or_default().push(file);
        }
        let mut manifests = Vec::new();
        for (spec_id, files) in by_spec {
            let mut writer = self.manifest_writer(spec_id, true)?;
            for file in files {
                writer.add_file(file, self.sequence_number)?;
            }
            manifests.push(writer.write_manifest_file().await?);
        }
        Ok(manifests)
    }

    fn manifest_writer(
        &mut self,
        spec_id: i32,
        deletes: bool,
    ) -> Result<iceberg::spec::ManifestWriter> {
        let metadata = self.table.metadata();
        let spec = metadata.partition_spec_by_id(spec_id).ok_or_else(|| {
            Error::new(
                ErrorKind::DataInvalid,
                format!("no partition spec {spec_id}"),
            )
        })?;
        let location = format!(
            "{}/metadata/{}-m{}.avro",
            metadata.location().trim_end_matches('/'),
            uuid::Uuid::now_v7(),
            self.written.len()
        );
        let output = self.table.file_io().new_output(&location)?;
        self.written.push(location);
        let builder = ManifestWriterBuilder::new(
            output,
            Some(self.snapshot_id),
            metadata.current_schema().clone(),
            spec.as_ref().clone(),
        );
        Ok(match (self.format, deletes) {
            (FormatVersion::V1, _) => builder.build_v1(),
            (_, false) => builder.build_v2_data(),
            (_, true) => builder.build_v2_deletes(),
        })
    }

    async fn write_manifest_list(&mut self, manifests: Vec<ManifestFile>) -> Result<String> {
        let location = format!(
            "{}/metadata/snap-{}-1-{}.avro",
            self.table.metadata().location().trim_end_matches('/'),
            self.snapshot_id,
            uuid::Uuid::now_v7()
        );
        let output = self.table.file_io().new_output(&location)?;
        self.written.push(location.clone());
        let writer = output.writer().await?;
        let mut list = match self.format {
            FormatVersion::V1 => ManifestListWriter::v1(writer, self.snapshot_id, self.parent),
            _ => {
                ManifestListWriter::v2(writer, self.snapshot_id, self.parent, self.sequence_number)
            }
        };
        list.add_manifests(manifests.into_iter())?;
        list.close().await?;
        Ok(location)
    }

    /// Best effort: files of a snapshot that was never committed are invisible either way.
    async fn delete_written(&self) {
        for location in &self.written {
            if let Err(e) = self.table.file_io().delete(location).await {
                tracing::warn!(%location, error = %e, "could not delete a file of an uncommitted DELETE");
            }
        }
    }
}

/// The counts a delete snapshot's summary reports.
#[derive(Default)]
struct Totals {
    removed_files: u64,
    removed_records: u64,
    removed_bytes: u64,
    removed_delete_files: u64,
    removed_positions: u64,
    added_delete_files: u64,
    added_positions: u64,
    added_data_files: u64,
    added_records: u64,
    /// Of delete and data files.
    added_bytes: u64,
}

impl Totals {
    /// The summary properties, with the table totals carried on from `parent`'s (from zero
    /// for a table's first snapshot).
    fn properties(&self, parent: Option<&Summary>) -> HashMap<String, String> {
        let mut props = HashMap::new();
        let mut set = |key: &str, value: u64| {
            if value > 0 {
                props.insert(key.to_string(), value.to_string());
            }
        };
        set("deleted-data-files", self.removed_files);
        set("deleted-records", self.removed_records);
        set("removed-files-size", self.removed_bytes);
        set("removed-delete-files", self.removed_delete_files);
        set("removed-position-delete-files", self.removed_delete_files);
        set("removed-position-deletes", self.removed_positions);
        set("added-delete-files", self.added_delete_files);
        set("added-position-delete-files", self.added_delete_files);
        set("added-position-deletes", self.added_positions);
        set("added-data-files", self.added_data_files);
        set("added-records", self.added_records);
        set("added-files-size", self.added_bytes);
        let before = |key: &str| match parent {
            Some(parent) => parent
                .additional_properties
                .get(key)
                .and_then(|v| v.parse::<u64>().ok()),
            None => Some(0),
        };
        let totals = [
            (
                "total-data-files",
                before("total-data-files")
                    .map(|n| n.saturating_sub(self.removed_files) + self.added_data_files),
            ),
            (
                "total-records",
                before("total-records")
                    .map(|n| n.saturating_sub(self.removed_records) + self.added_records),
            ),
            (
                "total-files-size",
                before("total-files-size")
                    .map(|n| n.saturating_sub(self.removed_bytes) + self.added_bytes),
            ),
            (
                "total-delete-files",
                before("total-delete-files")
                    .map(|n| n.saturating_sub(self.removed_delete_files) + self.added_delete_files),
            ),
            (
                "total-position-deletes",
                before("total-position-deletes")
                    .map(|n| n.saturating_sub(self.removed_positions) + self.added_positions),
            ),
            ("total-equality-deletes", before("total-equality-deletes")),
        ];
        for (key, value) in totals {
            if let Some(value) = value {
                props.insert(key.to_string(), value.to_string());
            }
        }
        props
    }
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
