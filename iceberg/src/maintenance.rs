//! Table maintenance as Trino's Iceberg procedures do it: expiring old snapshots (and the files
//! only they referenced) and removing files no snapshot references.

use std::collections::HashSet;
use std::time::{SystemTime, UNIX_EPOCH};

use iceberg::spec::{MAIN_BRANCH, ManifestFile, SnapshotRef};
use iceberg::table::Table;
use iceberg::{Catalog, Error, ErrorKind, Result, TableRequirement, TableUpdate};

use crate::commit::CommitUpdates;
use crate::storage::{list_files, object_key};

/// What `expire_snapshots` did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Expired {
    pub snapshots: usize,
    /// Manifest lists, manifests, data and delete files only the expired snapshots named.
    pub files_deleted: usize,
}

/// Expires the snapshots of `table` made before `older_than_ms` (epoch millis), except the
/// current one and those a branch or tag (`kept`) points at; commits that through `committer`
/// only while the table is still at the snapshot read, then deletes every file the expired
/// snapshots reached that no snapshot of the table as reloaded from `catalog` after the commit
/// reaches (a branch or tag made meanwhile keeps its files).
pub async fn expire_snapshots(
    table: &Table,
    catalog: &dyn Catalog,
    older_than_ms: i64,
    kept: &HashSet<i64>,
    committer: &dyn CommitUpdates,
) -> Result<Expired> {
    refuse_without_gc(table)?;
    let metadata = table.metadata();
    let current = metadata.current_snapshot_id();
    let expired: Vec<&SnapshotRef> = metadata
        .snapshots()
        .filter(|s| {
            s.timestamp_ms() < older_than_ms
                && Some(s.snapshot_id()) != current
                && !kept.contains(&s.snapshot_id())
        })
        .collect();
    if expired.is_empty() {
        return Ok(Expired::default());
    }
    // Read before the commit: once it lands, the expired snapshots' manifests may be gone.
    let candidates = Reached::from(table, &expired, Entries::All).await?;
    committer
        .commit_updates(
            table.identifier(),
            vec![
                TableRequirement::UuidMatch {
                    uuid: metadata.uuid(),
                },
                TableRequirement::RefSnapshotIdMatch {
                    r#ref: MAIN_BRANCH.to_string(),
                    snapshot_id: current,
                },
            ],
            vec![TableUpdate::RemoveSnapshots {
                snapshot_ids: expired.iter().map(|s| s.snapshot_id()).collect(),
            }],
        )
        .await?;
    let after = catalog.load_table(table.identifier()).await?;
    let kept: Vec<&SnapshotRef> = after.metadata().snapshots().collect();
    let reachable = Reached::from(&after, &kept, Entries::Live).await?;
    let mut files_deleted = 0;
    for location in candidates.files.difference(&reachable.files) {
        match table.file_io().delete(location).await {
            Ok(()) => files_deleted += 1,
            Err(e) => {
                tracing::warn!(%location, error = %e, "could not delete a file of an expired snapshot")
            }
        }
    }
    Ok(Expired {
        snapshots: expired.len(),
        files_deleted,
    })
}

/// Deletes every file under the table's `data` and `metadata` directories that no snapshot,
/// metadata file or statistics file of `table` references and that was last modified before
/// `older_than_ms` (younger ones may belong to a write still running). The files are listed
/// first and the references read after, from the table reloaded from `catalog`, so a commit
/// landing meanwhile keeps its files. Metadata JSON files are kept: the catalog, or a reader,
/// may still point at an older one. Returns how many went.
pub async fn remove_orphan_files(
    table: &Table,
    catalog: &dyn Catalog,
    older_than_ms: i64,
) -> Result<usize> {
    refuse_without_gc(table)?;
    let props = table.file_io().config().props().clone();
    let root = table
        .metadata()
        .location()
        .trim_end_matches('/')
        .to_string();
    let mut listed = Vec::new();
    for directory in ["data", "metadata"] {
        listed.extend(list_files(&props, &format!("{root}/{directory}")).await?);
    }
    let table = catalog.load_table(table.identifier()).await?;
    let table = &table;
    let metadata = table.metadata();
    let snapshots: Vec<&SnapshotRef> = metadata.snapshots().collect();
    let mut referenced = Reached::from(table, &snapshots, Entries::All).await?.files;
    referenced.extend(table.metadata_location().map(str::to_string));
    referenced.extend(
        metadata
            .metadata_log()
            .iter()
            .map(|l| l.metadata_file.clone()),
    );
    referenced.extend(
        metadata
            .statistics_iter()
            .map(|s| s.statistics_path.clone()),
    );
    referenced.extend(
        metadata
            .partition_statistics_iter()
            .map(|s| s.statistics_path.clone()),
    );
    let referenced: HashSet<String> = referenced
        .iter()
        .map(|location| object_key(&props, location))
        .collect::<Result<_>>()?;
    let mut removed = 0;
    for file in listed {
        let metadata_json = file.key.ends_with(".metadata.json")
            || file.key.ends_with(".metadata.json.gz")
            || file.key.ends_with("version-hint.text");
        if referenced.contains(&file.key) || metadata_json || file.last_modified_ms >= older_than_ms
        {
            continue;
        }
        match table.file_io().delete(&file.location).await {
            Ok(()) => removed += 1,
            Err(e) => {
                tracing::warn!(location = %file.location, error = %e, "could not delete an orphan file")
            }
        }
    }
    Ok(removed)
}

/// Files of a table with `gc.enabled=false` may belong to another table (one made by Spark's
/// `snapshot` or `add_files`): neither procedure deletes any of them, as Iceberg's own do not.
fn refuse_without_gc(table: &Table) -> Result<()> {
    if table.metadata().table_properties()?.gc_enabled {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::FeatureUnsupported,
        format!(
            "{} has gc.enabled=false: its files may belong to another table, so none are deleted",
            table.identifier()
        ),
    ))
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Which manifest entries count as reached.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Entries {
    /// Added and existing files: what the snapshots read.
    Live,
    /// Deleted entries too: every file the snapshots name.
    All,
}

/// Every file some snapshots reach: their manifest lists, manifests and content files.
struct Reached {
    files: HashSet<String>,
}

impl Reached {
    async fn from(table: &Table, snapshots: &[&SnapshotRef], entries: Entries) -> Result<Self> {
        let io = table.file_io();
        let mut files = HashSet::new();
        let mut manifests_seen = HashSet::new();
        for snapshot in snapshots {
            files.insert(snapshot.manifest_list().to_string());
            let list = table.manifest_list_reader(snapshot).load().await?;
            let manifests: Vec<&ManifestFile> = list
                .entries()
                .iter()
                .filter(|m| manifests_seen.insert(m.manifest_path.clone()))
                .collect();
            for manifest in manifests {
                files.insert(manifest.manifest_path.clone());
                let loaded = manifest.load_manifest(io).await?;
                for entry in loaded.entries() {
                    if entries == Entries::All || entry.is_alive() {
                        files.insert(entry.file_path().to_string());
                    }
                }
            }
        }
        Ok(Self { files })
    }
}
