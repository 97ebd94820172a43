//! Whether a row-level change read at one snapshot may still commit on top of the snapshots
//! other writers committed since: Iceberg's serializable isolation, the checks Trino's
//! connector asks of a row delta (the files it changes still exist, no delete file names them,
//! no rows were added that its condition might match). Whether appended rows might match is
//! the caller's conflict-detection filter (Trino's: the part of the condition the table's
//! partitions enforce; without one, every appended row might).

use std::collections::HashSet;

use iceberg::spec::{DataContentType, ManifestStatus, Operation};
use iceberg::table::Table;
use iceberg::{Error, ErrorKind, Result};

/// Why the change of `files` (data files it deletes rows from or removes) that read `read` at
/// snapshot `base` cannot be rebased onto `now`, the table as it is; `None` when it can: what
/// was committed since appended no rows `might_match` (data files by the spec they were
/// written with) says the statement's condition could match, and deleted or replaced only
/// other files.
pub async fn conflict_since(
    read: &Table,
    base: Option<i64>,
    now: &Table,
    files: &HashSet<&str>,
    might_match: &(dyn Fn(i32, &iceberg::spec::DataFile) -> Result<bool> + Sync),
) -> Result<Option<String>> {
    let (before, after) = (read.metadata(), now.metadata());
    if before.uuid() != after.uuid() {
        return Ok(Some("the table was dropped and created again".into()));
    }
    if before.current_schema_id() != after.current_schema_id()
        || before.default_partition_spec_id() != after.default_partition_spec_id()
        || before.default_sort_order_id() != after.default_sort_order_id()
    {
        return Ok(Some(
            "its columns, partitioning or sort order changed".into(),
        ));
    }
    let Some(since) = committed_since(now, base)? else {
        return Ok(Some(
            "the snapshot it read is no longer in the table's history".into(),
        ));
    };
    for snapshot in since {
        let id = snapshot.snapshot_id();
        let adds_rows = matches!(
            snapshot.summary().operation,
            Operation::Append | Operation::Overwrite
        );
        let list = now.manifest_list_reader(&snapshot).load().await?;
        for manifest in list.entries() {
            if manifest.added_snapshot_id != id {
                continue;
            }
            for entry in manifest.load_manifest(now.file_io()).await?.entries() {
                if entry.snapshot_id() != Some(id) {
                    continue;
                }
                let file = entry.data_file();
                let path = file.file_path();
                let conflict = match (entry.content_type(), entry.status()) {
                    (DataContentType::Data, ManifestStatus::Added)
                        if adds_rows && might_match(manifest.partition_spec_id, file)? =>
                    {
                        Some(format!(
                            "snapshot {id} added rows ({path}) the statement's condition might \
                             match"
                        ))
                    }
                    (DataContentType::Data, ManifestStatus::Deleted) if files.contains(path) => {
                        Some(format!(
                            "snapshot {id} removed {path}, whose rows the statement changes"
                        ))
                    }
                    (DataContentType::PositionDeletes, ManifestStatus::Added) => file
                        .referenced_data_file()
                        .is_none_or(|data| files.contains(data.as_str()))
                        .then(|| {
                            format!(
                                "snapshot {id} deleted rows of a file the statement changes \
                                 ({path})"
                            )
                        }),
                    (DataContentType::EqualityDeletes, ManifestStatus::Added) => {
                        Some(format!("snapshot {id} added equality deletes ({path})"))
                    }
                    _ => None,
                };
                if conflict.is_some() {
                    return Ok(conflict);
                }
            }
        }
    }
    Ok(None)
}

/// The snapshots of `table`'s main branch after `base`, newest first; `None` when `base` is no
/// longer an ancestor of the branch (it was rolled back or replaced).
fn committed_since(
    table: &Table,
    base: Option<i64>,
) -> Result<Option<Vec<iceberg::spec::SnapshotRef>>> {
    let metadata = table.metadata();
    let mut since = Vec::new();
    let mut cursor = metadata.current_snapshot_id();
    while cursor != base {
        let Some(id) = cursor else {
            return Ok(None);
        };
        let snapshot = metadata.snapshot_by_id(id).ok_or_else(|| {
            Error::new(
                ErrorKind::DataInvalid,
                format!("snapshot {id} of the main branch is missing"),
            )
        })?;
        cursor = snapshot.parent_snapshot_id();
        since.push(snapshot.clone());
        // A parent chain longer than the table's snapshots is a cycle.
        if since.len() > metadata.snapshots().len() {
            return Err(Error::new(
                ErrorKind::DataInvalid,
                "the main branch's snapshots form a cycle",
            ));
        }
    }
    Ok(Some(since))
}
