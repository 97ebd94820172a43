//! Trino's Iceberg metadata tables, read when the statement is planned, with Trino's columns:
//! `$snapshots`, `$history`, `$properties`, `$refs` from the table's metadata, `$files` and
//! `$manifests` from its current snapshot's manifests ([`super::manifest_tables`]).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, BooleanArray, Int32Array, Int64Array, MapBuilder, RecordBatch, StringArray,
    StringBuilder, TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::catalog::TableProvider;
use datafusion::datasource::MemTable;
use iceberg::spec::TableMetadata;
use iceberg::table::Table;

use super::MetadataTable;
use crate::error::{Error, Result};

/// `kind` of `table`, as rows.
pub(super) async fn metadata_table(
    table: &Table,
    kind: MetadataTable,
) -> Result<Arc<dyn TableProvider>> {
    let metadata = table.metadata();
    let batch = match kind {
        MetadataTable::Snapshots => snapshots(metadata)?,
        MetadataTable::History => history(metadata)?,
        MetadataTable::Properties => properties(metadata)?,
        MetadataTable::Refs => refs(metadata)?,
        MetadataTable::Files => super::manifest_tables::files(table).await?,
        MetadataTable::Manifests => super::manifest_tables::manifests(table).await?,
        MetadataTable::Partitions => super::manifest_tables::partitions(table).await?,
    };
    Ok(Arc::new(MemTable::try_new(
        batch.schema(),
        vec![vec![batch]],
    )?))
}

/// `timestamp(3) with time zone`.
fn instant(name: &str) -> Field {
    Field::new(
        name,
        DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
        false,
    )
}

fn instants(values: Vec<i64>) -> ArrayRef {
    Arc::new(TimestampMillisecondArray::from(values).with_timezone("UTC"))
}

fn snapshots(metadata: &TableMetadata) -> Result<RecordBatch> {
    let mut snapshots: Vec<_> = metadata.snapshots().collect();
    snapshots.sort_by_key(|s| (s.timestamp_ms(), s.snapshot_id()));
    let mut summary = MapBuilder::new(None, StringBuilder::new(), StringBuilder::new());
    for snapshot in &snapshots {
        let properties: BTreeMap<_, _> = snapshot.summary().additional_properties.iter().collect();
        for (key, value) in properties {
            summary.keys().append_value(key);
            summary.values().append_value(value);
        }
        summary.append(true)?;
    }
    let summary = summary.finish();
    let schema = Schema::new(vec![
        instant("committed_at"),
        Field::new("snapshot_id", DataType::Int64, false),
        Field::new("parent_id", DataType::Int64, true),
        Field::new("operation", DataType::Utf8, false),
        Field::new("manifest_list", DataType::Utf8, false),
        Field::new("summary", summary.data_type().clone(), false),
    ]);
    let columns: Vec<ArrayRef> = vec![
        instants(snapshots.iter().map(|s| s.timestamp_ms()).collect()),
        Arc::new(Int64Array::from_iter_values(
            snapshots.iter().map(|s| s.snapshot_id()),
        )),
        Arc::new(Int64Array::from_iter(
            snapshots.iter().map(|s| s.parent_snapshot_id()),
        )),
        Arc::new(StringArray::from_iter_values(
            snapshots.iter().map(|s| s.summary().operation.as_str()),
        )),
        Arc::new(StringArray::from_iter_values(
            snapshots.iter().map(|s| s.manifest_list()),
        )),
        Arc::new(summary),
    ];
    Ok(RecordBatch::try_new(Arc::new(schema), columns)?)
}

fn history(metadata: &TableMetadata) -> Result<RecordBatch> {
    // The current snapshot and its ancestors.
    let mut ancestors = HashSet::new();
    let mut next = metadata.current_snapshot_id();
    while let Some(id) = next
        && ancestors.insert(id)
    {
        next = metadata
            .snapshot_by_id(id)
            .and_then(|s| s.parent_snapshot_id());
    }
    let log = metadata.history();
    let schema = Schema::new(vec![
        instant("made_current_at"),
        Field::new("snapshot_id", DataType::Int64, false),
        Field::new("parent_id", DataType::Int64, true),
        Field::new("is_current_ancestor", DataType::Boolean, false),
    ]);
    let columns: Vec<ArrayRef> = vec![
        instants(log.iter().map(|entry| entry.timestamp_ms).collect()),
        Arc::new(Int64Array::from_iter_values(
            log.iter().map(|entry| entry.snapshot_id),
        )),
        Arc::new(Int64Array::from_iter(log.iter().map(|entry| {
            metadata
                .snapshot_by_id(entry.snapshot_id)
                .and_then(|s| s.parent_snapshot_id())
        }))),
        Arc::new(BooleanArray::from_iter(
            log.iter()
                .map(|entry| Some(ancestors.contains(&entry.snapshot_id))),
        )),
    ];
    Ok(RecordBatch::try_new(Arc::new(schema), columns)?)
}

fn properties(metadata: &TableMetadata) -> Result<RecordBatch> {
    let properties: BTreeMap<_, _> = metadata.properties().iter().collect();
    let schema = Schema::new(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Utf8, false),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(properties.keys())),
        Arc::new(StringArray::from_iter_values(properties.values())),
    ];
    Ok(RecordBatch::try_new(Arc::new(schema), columns)?)
}

/// One branch or tag, as the metadata's `refs` say it.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) struct Reference {
    pub(crate) snapshot_id: i64,
    #[serde(rename = "type")]
    kind: String,
    min_snapshots_to_keep: Option<i32>,
    max_snapshot_age_ms: Option<i64>,
    max_ref_age_ms: Option<i64>,
}

/// The table's branches and tags by name: iceberg-rust 0.10 lists them only in the metadata's
/// serialized form.
pub(crate) fn references(metadata: &TableMetadata) -> Result<BTreeMap<String, Reference>> {
    let serialized = serde_json::to_value(metadata).map_err(|e| Error::Internal(e.to_string()))?;
    match serialized.get("refs") {
        Some(refs) => {
            serde_json::from_value(refs.clone()).map_err(|e| Error::Internal(e.to_string()))
        }
        None => Ok(BTreeMap::new()),
    }
}

fn refs(metadata: &TableMetadata) -> Result<RecordBatch> {
    let refs = references(metadata)?;
    let schema = Schema::new(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("type", DataType::Utf8, false),
        Field::new("snapshot_id", DataType::Int64, false),
        Field::new("max_reference_age_in_ms", DataType::Int64, true),
        Field::new("min_snapshots_to_keep", DataType::Int32, true),
        Field::new("max_snapshot_age_in_ms", DataType::Int64, true),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(refs.keys())),
        Arc::new(StringArray::from_iter_values(
            refs.values().map(|r| r.kind.to_ascii_uppercase()),
        )),
        Arc::new(Int64Array::from_iter_values(
            refs.values().map(|r| r.snapshot_id),
        )),
        Arc::new(Int64Array::from_iter(
            refs.values().map(|r| r.max_ref_age_ms),
        )),
        Arc::new(Int32Array::from_iter(
            refs.values().map(|r| r.min_snapshots_to_keep),
        )),
        Arc::new(Int64Array::from_iter(
            refs.values().map(|r| r.max_snapshot_age_ms),
        )),
    ];
    Ok(RecordBatch::try_new(Arc::new(schema), columns)?)
}
