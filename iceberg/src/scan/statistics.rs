//! What a scan tells DataFusion's planner about its columns: each data file's lower and
//! upper bounds and null counts, as its manifest entry records them, merged over the files
//! the scan reads. With no bounds, DataFusion took a join key's distinct values to be as many
//! as its rows: a foreign-key join (lineitem's `l_suppkey`, ten thousand values in millions
//! of rows) was estimated as small as its smaller side, so large intermediate results were
//! collected whole into one partition to build hash tables from. Bounds cap the distinct
//! values of integer keys by their range, as DataFusion's own Parquet scans do from footers.
//!
//! Every statistic is inexact: bounds hold the values but need not be reached, and deleted
//! rows still count. Planning reads them; answers must not: a filter can make inexact
//! bounds "exact" (an equality's one value), which is why SQE's sessions leave out
//! DataFusion's `aggregate_statistics` rule (`engine::engine::physical_optimizer_rules`).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, ScalarValue};
use iceberg::scan::FileScanTask;
use iceberg::spec::{
    DataFile, Datum, ManifestContentType, ManifestFile, PrimitiveLiteral, PrimitiveType,
};
use iceberg::table::Table;
use moka::sync::Cache;

/// One data file's bounds and null counts by field id.
#[derive(Debug, Default)]
pub struct FileBounds {
    lower: HashMap<i32, Datum>,
    upper: HashMap<i32, Datum>,
    nulls: HashMap<i32, u64>,
}

impl FileBounds {
    /// The file's bounds of the kinds planning takes (see [`bound_value`]).
    fn of(file: &DataFile) -> Self {
        let taken = |bounds: &HashMap<i32, Datum>| {
            bounds
                .iter()
                .filter(|(_, d)| exact_kind(d.data_type()))
                .map(|(id, d)| (*id, d.clone()))
                .collect()
        };
        Self {
            lower: taken(file.lower_bounds()),
            upper: taken(file.upper_bounds()),
            nulls: file.null_value_counts().clone(),
        }
    }

    /// What the cache weighs it by.
    fn size(&self) -> usize {
        1 + self.lower.len() + self.upper.len() + self.nulls.len()
    }
}

/// Whether bounds of this type bound the values exactly (floating bounds leave NaN out, text
/// and binary bounds may be truncated).
fn exact_kind(t: &PrimitiveType) -> bool {
    matches!(
        t,
        PrimitiveType::Boolean
            | PrimitiveType::Int
            | PrimitiveType::Long
            | PrimitiveType::Date
            | PrimitiveType::Time
            | PrimitiveType::Timestamp
            | PrimitiveType::Timestamptz
            | PrimitiveType::TimestampNs
            | PrimitiveType::TimestamptzNs
            | PrimitiveType::Decimal { .. }
    )
}

/// The bounds a scan's planning reads: its columns' field ids, in its schema's order, and
/// the bounds of each data file it may read, by path.
#[derive(Debug, Default)]
pub struct ScanBounds {
    pub field_ids: Vec<i32>,
    pub files: HashMap<String, Arc<FileBounds>>,
}

/// A manifest's live data files and their bounds.
type ManifestBounds = Arc<Vec<(String, Arc<FileBounds>)>>;

/// Data files' bounds by manifest (a manifest never changes once written), weighed by
/// bounds held: a query plans from memory what an earlier one read.
static MANIFESTS: LazyLock<Cache<String, ManifestBounds>> = LazyLock::new(|| {
    Cache::builder()
        .weigher(|_, files: &ManifestBounds| {
            let size: usize = files.iter().map(|(_, f)| f.size()).sum();
            u32::try_from(size).unwrap_or(u32::MAX)
        })
        // Bounds, not files: about a hundred bytes each.
        .max_capacity(1_000_000)
        .build()
});

/// A snapshot's data manifests, by manifest list (a list never changes once written either):
/// join ordering and the scan both read a snapshot's bounds while one query is planned.
static DATA_MANIFESTS: LazyLock<Cache<String, Arc<Vec<ManifestFile>>>> = LazyLock::new(|| {
    Cache::builder()
        .weigher(|_, manifests: &Arc<Vec<ManifestFile>>| {
            u32::try_from(manifests.len()).unwrap_or(u32::MAX)
        })
        .max_capacity(100_000)
        .build()
});

/// The bounds of the live data files of snapshot `snapshot_id` that `tasks` read.
pub async fn scan_bounds(
    table: &Table,
    snapshot_id: i64,
    field_ids: Vec<i32>,
    tasks: &[FileScanTask],
) -> iceberg::Result<ScanBounds> {
    let wanted: std::collections::HashSet<&str> =
        tasks.iter().map(|t| t.data_file_path.as_str()).collect();
    snapshot_bounds(table, snapshot_id, field_ids, Some(&wanted)).await
}

/// The bounds of every live data file of snapshot `snapshot_id`, or of those `wanted`.
pub async fn snapshot_bounds(
    table: &Table,
    snapshot_id: i64,
    field_ids: Vec<i32>,
    wanted: Option<&std::collections::HashSet<&str>>,
) -> iceberg::Result<ScanBounds> {
    let Some(snapshot) = table.metadata().snapshot_by_id(snapshot_id) else {
        return Ok(ScanBounds::default());
    };
    let list_path = snapshot.manifest_list().to_string();
    let manifests = match DATA_MANIFESTS.get(&list_path) {
        Some(manifests) => manifests,
        None => {
            let list = table.manifest_list_reader(snapshot).load().await?;
            let manifests: Arc<Vec<ManifestFile>> = Arc::new(
                list.entries()
                    .iter()
                    .filter(|m| m.content == ManifestContentType::Data)
                    .cloned()
                    .collect(),
            );
            DATA_MANIFESTS.insert(list_path, Arc::clone(&manifests));
            manifests
        }
    };
    let mut files = HashMap::new();
    for manifest in manifests.iter() {
        let entries = match MANIFESTS.get(&manifest.manifest_path) {
            Some(entries) => entries,
            None => {
                let loaded = manifest.load_manifest(table.file_io()).await?;
                let entries: ManifestBounds = Arc::new(
                    loaded
                        .entries()
                        .iter()
                        .filter(|e| e.is_alive())
                        .map(|e| {
                            let file = e.data_file();
                            (file.file_path().to_string(), Arc::new(FileBounds::of(file)))
                        })
                        .collect(),
                );
                MANIFESTS.insert(manifest.manifest_path.clone(), Arc::clone(&entries));
                entries
            }
        };
        for (path, bounds) in entries.iter() {
            if wanted.is_none_or(|w| w.contains(path.as_str())) {
                files.insert(path.clone(), Arc::clone(bounds));
            }
        }
    }
    Ok(ScanBounds { field_ids, files })
}

/// Column statistics of `schema`'s columns over the data files `paths`: a bound only where
/// every file has one (a file without a column's bounds may hold any value there).
pub fn column_statistics<'a>(
    bounds: &ScanBounds,
    schema: &SchemaRef,
    paths: impl Iterator<Item = &'a str>,
) -> Vec<ColumnStatistics> {
    // Nothing is known of a file the bounds do not know.
    let files: Option<Vec<&FileBounds>> = paths
        .map(|p| bounds.files.get(p).map(AsRef::as_ref))
        .collect();
    let files = files.filter(|f| !f.is_empty());
    schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let (Some(&id), Some(files)) = (bounds.field_ids.get(i), &files) else {
                return ColumnStatistics::new_unknown();
            };
            let merged = |side: fn(&FileBounds) -> &HashMap<i32, Datum>, keep_larger: bool| {
                let mut best: Option<ScalarValue> = None;
                for file in files {
                    let value = side(file)
                        .get(&id)
                        .and_then(|d| bound_value(d, field.data_type()))?;
                    best = match best {
                        Some(b) if (value > b) != keep_larger => Some(b),
                        _ => Some(value),
                    };
                }
                best
            };
            let nulls: Option<u64> = files.iter().map(|f| f.nulls.get(&id).copied()).sum();
            ColumnStatistics {
                null_count: nulls
                    .and_then(|n| usize::try_from(n).ok())
                    .map_or(Precision::Absent, Precision::Inexact),
                min_value: merged(|f| &f.lower, false)
                    .map_or(Precision::Absent, Precision::Inexact),
                max_value: merged(|f| &f.upper, true).map_or(Precision::Absent, Precision::Inexact),
                ..ColumnStatistics::new_unknown()
            }
        })
        .collect()
}

/// A bound as a value of the column's Arrow type, when the bound's Iceberg type reads as
/// that type (an int's bound for a column promoted to long reads; a date's days are not a
/// timestamp's microseconds, so that one does not). Only exact kinds are taken
/// ([`exact_kind`]).
fn bound_value(datum: &Datum, target: &DataType) -> Option<ScalarValue> {
    use datafusion::arrow::datatypes::TimeUnit;
    let value = match (datum.data_type(), datum.literal(), target) {
        (PrimitiveType::Boolean, PrimitiveLiteral::Boolean(b), DataType::Boolean) => {
            return Some(ScalarValue::Boolean(Some(*b)));
        }
        (PrimitiveType::Int, PrimitiveLiteral::Int(v), t) if t.is_integer() => {
            ScalarValue::Int32(Some(*v))
        }
        (PrimitiveType::Long, PrimitiveLiteral::Long(v), t) if t.is_integer() => {
            ScalarValue::Int64(Some(*v))
        }
        (PrimitiveType::Date, PrimitiveLiteral::Int(v), DataType::Date32) => {
            return Some(ScalarValue::Date32(Some(*v)));
        }
        (
            PrimitiveType::Time,
            PrimitiveLiteral::Long(v),
            DataType::Time64(TimeUnit::Microsecond),
        )
        | (
            PrimitiveType::Timestamp | PrimitiveType::Timestamptz,
            PrimitiveLiteral::Long(v),
            DataType::Timestamp(TimeUnit::Microsecond, _),
        )
        | (
            PrimitiveType::TimestampNs | PrimitiveType::TimestamptzNs,
            PrimitiveLiteral::Long(v),
            DataType::Timestamp(TimeUnit::Nanosecond, _),
        ) => ScalarValue::Int64(Some(*v)),
        (
            PrimitiveType::Decimal { scale, .. },
            PrimitiveLiteral::Int128(v),
            DataType::Decimal128(p, s),
        ) if u32::try_from(*s).ok() == Some(*scale) => {
            return Some(ScalarValue::Decimal128(Some(*v), *p, *s));
        }
        _ => return None,
    };
    value.cast_to(target).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{Field, Schema, TimeUnit};

    fn file(
        lower: Vec<(i32, Datum)>,
        upper: Vec<(i32, Datum)>,
        nulls: Vec<(i32, u64)>,
    ) -> Arc<FileBounds> {
        Arc::new(FileBounds {
            lower: lower.into_iter().collect(),
            upper: upper.into_iter().collect(),
            nulls: nulls.into_iter().collect(),
        })
    }

    #[test]
    fn bounds_merge_over_files_and_only_where_every_file_has_one() {
        let schema: SchemaRef = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("d", DataType::Date32, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let bounds = ScanBounds {
            field_ids: vec![1, 2, 3],
            files: HashMap::from([
                (
                    "a".to_string(),
                    file(
                        vec![
                            (1, Datum::long(5)),
                            (2, Datum::date(10)),
                            (3, Datum::string("a")),
                        ],
                        vec![(1, Datum::long(50)), (2, Datum::date(20))],
                        vec![(1, 0), (2, 1)],
                    ),
                ),
                (
                    "b".to_string(),
                    file(
                        vec![(1, Datum::long(1))],
                        vec![(1, Datum::long(40))],
                        vec![(1, 2)],
                    ),
                ),
            ]),
        };
        let stats = column_statistics(&bounds, &schema, ["a", "b"].into_iter());
        assert_eq!(
            stats[0].min_value,
            Precision::Inexact(ScalarValue::Int64(Some(1)))
        );
        assert_eq!(
            stats[0].max_value,
            Precision::Inexact(ScalarValue::Int64(Some(50)))
        );
        assert_eq!(stats[0].null_count, Precision::Inexact(2));
        // File b has no bounds for d: d may hold anything there.
        assert_eq!(stats[1].min_value, Precision::Absent);
        assert_eq!(stats[1].null_count, Precision::Absent);
        // Text bounds may be truncated: not taken.
        assert_eq!(stats[2].min_value, Precision::Absent);
        let one = column_statistics(&bounds, &schema, ["a"].into_iter());
        assert_eq!(
            one[1].min_value,
            Precision::Inexact(ScalarValue::Date32(Some(10)))
        );
        assert_eq!(
            one[1].max_value,
            Precision::Inexact(ScalarValue::Date32(Some(20)))
        );
        // A file the bounds do not know: nothing is known.
        let unknown = column_statistics(&bounds, &schema, ["a", "c"].into_iter());
        assert_eq!(unknown[0].min_value, Precision::Absent);
    }

    #[test]
    fn bounds_take_the_columns_type() {
        let micros = DataType::Timestamp(TimeUnit::Microsecond, None);
        assert_eq!(
            bound_value(&Datum::timestamp_micros(1_000), &micros),
            Some(ScalarValue::TimestampMicrosecond(Some(1_000), None))
        );
        assert_eq!(
            bound_value(&Datum::int(7), &DataType::Int64),
            Some(ScalarValue::Int64(Some(7)))
        );
        assert_eq!(bound_value(&Datum::double(1.5), &DataType::Float64), None);
        // A date's days are no timestamp's microseconds (a column promoted from date).
        assert_eq!(bound_value(&Datum::date(10), &micros), None);
    }
}
