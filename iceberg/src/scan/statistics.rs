//! What a scan tells DataFusion's planner about its columns: each data file's lower and
//! upper bounds and null counts, as its manifest entry records them, merged over the files
//! the scan reads. With no bounds, DataFusion took a join key's distinct values to be as many
//! as its rows: a foreign-key join (lineitem's `l_suppkey`, ten thousand values in millions
//! of rows) was estimated as small as its smaller side, so large intermediate results were
//! collected whole into one partition to build hash tables from. Bounds cap the distinct
//! values of integer keys by their range, as DataFusion's own Parquet scans do from footers.
//!
//! Every statistic is inexact: bounds hold the values but need not be reached, and deleted
//! rows still count. DataFusion uses inexact statistics to plan, never to answer.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, ScalarValue};
use iceberg::scan::FileScanTask;
use iceberg::spec::{DataFile, Datum, ManifestContentType, PrimitiveLiteral};
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
    fn of(file: &DataFile) -> Self {
        Self {
            lower: file.lower_bounds().clone(),
            upper: file.upper_bounds().clone(),
            nulls: file.null_value_counts().clone(),
        }
    }
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
/// entries: a query plans from memory what an earlier one read.
static MANIFESTS: LazyLock<Cache<String, ManifestBounds>> = LazyLock::new(|| {
    Cache::builder()
        .weigher(|_, files: &ManifestBounds| u32::try_from(files.len()).unwrap_or(u32::MAX))
        .max_capacity(50_000)
        .build()
});

/// The bounds of the live data files of snapshot `snapshot_id` that `tasks` read.
pub async fn scan_bounds(
    table: &Table,
    snapshot_id: i64,
    field_ids: Vec<i32>,
    tasks: &[FileScanTask],
) -> iceberg::Result<ScanBounds> {
    let Some(snapshot) = table.metadata().snapshot_by_id(snapshot_id) else {
        return Ok(ScanBounds::default());
    };
    let wanted: std::collections::HashSet<&str> =
        tasks.iter().map(|t| t.data_file_path.as_str()).collect();
    let list = table.manifest_list_reader(snapshot).load().await?;
    let mut files = HashMap::new();
    for manifest in list.entries() {
        if manifest.content != ManifestContentType::Data {
            continue;
        }
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
            if wanted.contains(path.as_str()) {
                files.insert(path.clone(), Arc::clone(bounds));
            }
        }
    }
    Ok(ScanBounds { field_ids, files })
}

/// Column statistics of `schema`'s columns over the data files `paths`: a bound only where
/// every file has one (a file without a column's bounds may hold any value there).
pub(crate) fn column_statistics<'a>(
    bounds: &ScanBounds,
    schema: &SchemaRef,
    paths: impl Iterator<Item = &'a str> + Clone,
) -> Vec<ColumnStatistics> {
    schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let Some(&id) = bounds.field_ids.get(i) else {
                return ColumnStatistics::new_unknown();
            };
            let files: Option<Vec<&FileBounds>> = paths
                .clone()
                .map(|p| bounds.files.get(p).map(AsRef::as_ref))
                .collect();
            let Some(files) = files.filter(|f| !f.is_empty()) else {
                return ColumnStatistics::new_unknown();
            };
            let merged = |side: fn(&FileBounds) -> &HashMap<i32, Datum>, keep_larger: bool| {
                let mut best: Option<ScalarValue> = None;
                for file in &files {
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

/// A bound as a value of the column's Arrow type. Only exact kinds of bound are taken:
/// integers (and the dates, times and timestamps they encode), decimals and booleans.
/// Floating bounds leave NaN out and text bounds may be truncated, so they are left out.
fn bound_value(datum: &Datum, target: &DataType) -> Option<ScalarValue> {
    let value = match (datum.literal(), target) {
        (PrimitiveLiteral::Boolean(b), _) => ScalarValue::Boolean(Some(*b)),
        (PrimitiveLiteral::Int(v), _) => ScalarValue::Int32(Some(*v)),
        (PrimitiveLiteral::Long(v), _) => ScalarValue::Int64(Some(*v)),
        (PrimitiveLiteral::Int128(v), DataType::Decimal128(p, s)) => {
            return Some(ScalarValue::Decimal128(Some(*v), *p, *s));
        }
        _ => return None,
    };
    if value.data_type() == *target {
        return Some(value);
    }
    match target {
        t if t.is_integer()
            || matches!(
                t,
                DataType::Date32 | DataType::Time64(_) | DataType::Timestamp(_, _)
            ) =>
        {
            value.cast_to(target).ok()
        }
        _ => None,
    }
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
    }
}
