//! Table maintenance as Trino's Iceberg procedures do it: expiring old snapshots (and the files
//! only they referenced) and removing files no snapshot references.

use std::collections::HashSet;
use std::time::{SystemTime, UNIX_EPOCH};

use iceberg::spec::{MAIN_BRANCH, ManifestFile, SnapshotRef};
use iceberg::table::Table;
use iceberg::{Result, TableRequirement, TableUpdate};

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
/// only while the table is still at the snapshot read, then deletes every file that only the
/// expired snapshots reached.
pub async fn expire_snapshots(
    table: &Table,
    older_than_ms: i64,
    kept: &HashSet<i64>,
    committer: &dyn CommitUpdates,
) -> Result<Expired> {
    let metadata = table.metadata();
    let current = metadata.current_snapshot_id();
    let (expired, retained): (Vec<&SnapshotRef>, Vec<&SnapshotRef>) =
        metadata.snapshots().partition(|s| {
            s.timestamp_ms() < older_than_ms
                && Some(s.snapshot_id()) != current
                && !kept.contains(&s.snapshot_id())
        });
    if expired.is_empty() {
        return Ok(Expired::default());
    }
    // Read before the commit: once it lands, the expired snapshots' files may be gone.
    let reachable = Reached::from(table, &retained, Entries::Live).await?;
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
/// `older_than_ms` (younger ones may belong to a write still running). Metadata JSON files are
/// kept: the catalog, or a reader, may still point at an older one. Returns how many went.
pub async fn remove_orphan_files(table: &Table, older_than_ms: i64) -> Result<usize> {
    let metadata = table.metadata();
    let props = table.file_io().config().props().clone();
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
    let referenced: HashSet<String> = referenced
        .iter()
        .map(|location| object_key(&props, location))
        .collect::<Result<_>>()?;
    let root = metadata.location().trim_end_matches('/');
    let mut removed = 0;
    for directory in ["data", "metadata"] {
        for file in list_files(&props, &format!("{root}/{directory}")).await? {
            let metadata_json = file.key.ends_with(".metadata.json")
                || file.key.ends_with(".metadata.json.gz")
                || file.key.ends_with("version-hint.text");
            if referenced.contains(&file.key)
                || metadata_json
                || file.last_modified_ms >= older_than_ms
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
    }
    Ok(removed)
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
