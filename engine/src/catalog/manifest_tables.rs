//! Trino's `$files`, `$manifests` and `$partitions` of an Iceberg table: what its current
//! snapshot's manifest list and manifests hold, read when the statement is planned.
//! Bounds come from the files' statistics, as Trino's do.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BinaryArray, Int32Array, Int32Builder, Int64Array, Int64Builder, ListBuilder,
    MapBuilder, RecordBatch, StringArray, StringBuilder, StructArray, new_empty_array,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use iceberg::spec::{
    DataContentType, DataFile, Datum, Literal, ManifestFile, NestedField, PrimitiveLiteral,
    Schema as IcebergSchema, TableMetadata, Type,
};
use iceberg::table::Table;

use crate::error::Result;

/// The current snapshot's manifests; none before the first write.
async fn current_manifests(table: &Table) -> Result<Vec<ManifestFile>> {
    let Some(snapshot) = table.metadata().current_snapshot() else {
        return Ok(Vec::new());
    };
    Ok(table
        .manifest_list_reader(snapshot)
        .load()
        .await?
        .entries()
        .to_vec())
}

/// Every live data and delete file of the current snapshot, with the partition spec it was
/// written with (its manifest's).
pub(crate) async fn live_files(table: &Table) -> Result<Vec<(i32, DataFile)>> {
    let mut files = Vec::new();
    for manifest in current_manifests(table).await? {
        for entry in manifest.load_manifest(table.file_io()).await?.entries() {
            if entry.is_alive() {
                files.push((manifest.partition_spec_id, entry.data_file().clone()));
            }
        }
    }
    Ok(files)
}

/// `map(integer, bigint)` of per-column counts, by field id.
fn counts(files: &[DataFile], of: impl Fn(&DataFile) -> &HashMap<i32, u64>) -> Result<ArrayRef> {
    let mut map = MapBuilder::new(None, Int32Builder::new(), Int64Builder::new());
    for file in files {
        let sorted: BTreeMap<_, _> = of(file).iter().collect();
        for (id, count) in sorted {
            map.keys().append_value(*id);
            map.values()
                .append_value(i64::try_from(*count).unwrap_or(i64::MAX));
        }
        map.append(true)?;
    }
    Ok(Arc::new(map.finish()))
}

/// A column's bound as Trino's `$files` shows it: the value as text.
fn bound_text(datum: &Datum) -> String {
    match datum.literal() {
        PrimitiveLiteral::String(text) => text.clone(),
        _ => datum.to_string(),
    }
}

/// `lower_bounds` or `upper_bounds`: per file, field id to the bound as text.
fn bounds(files: &[DataFile], of: impl Fn(&DataFile) -> &HashMap<i32, Datum>) -> Result<ArrayRef> {
    let mut map = MapBuilder::new(None, Int32Builder::new(), StringBuilder::new());
    for file in files {
        let sorted: BTreeMap<_, _> = of(file).iter().collect();
        for (id, datum) in sorted {
            map.keys().append_value(*id);
            map.values().append_value(bound_text(datum));
        }
        map.append(true)?;
    }
    Ok(Arc::new(map.finish()))
}

/// The primitive columns of `schema`, nested ones by their dotted names: what Trino's
/// `readable_metrics` names.
fn metric_columns(schema: &IcebergSchema) -> Vec<(String, i32)> {
    fn walk(fields: &[Arc<NestedField>], prefix: &str, out: &mut Vec<(String, i32)>) {
        for field in fields {
            let name = format!("{prefix}{}", field.name);
            match field.field_type.as_ref() {
                Type::Primitive(_) => out.push((name, field.id)),
                Type::Struct(inner) => walk(inner.fields(), &format!("{name}."), out),
                // Trino shows no metrics for the elements of lists and maps.
                Type::List(_) | Type::Map(_) => {}
            }
        }
    }
    let mut columns = Vec::new();
    walk(schema.as_struct().fields(), "", &mut columns);
    columns
}

/// A bound as a JSON value of its type (numbers as numbers), as `readable_metrics` has it.
fn bound_json(datum: &Datum) -> serde_json::Value {
    Literal::Primitive(datum.literal().clone())
        .try_into_json(&Type::Primitive(datum.data_type().clone()))
        .unwrap_or_else(|_| serde_json::Value::String(bound_text(datum)))
}

/// Trino's `readable_metrics`: per column (by name), its size, counts and bounds in this file,
/// as JSON.
fn readable_metrics(schema: &IcebergSchema, file: &DataFile) -> String {
    let count = |counts: &HashMap<i32, u64>, id: i32| {
        counts
            .get(&id)
            .map_or(serde_json::Value::Null, |n| serde_json::Value::from(*n))
    };
    let bound = |bounds: &HashMap<i32, Datum>, id: i32| {
        bounds.get(&id).map_or(serde_json::Value::Null, bound_json)
    };
    let metrics: serde_json::Map<String, serde_json::Value> = metric_columns(schema)
        .into_iter()
        .map(|(name, id)| {
            let column = serde_json::json!({
                "column_size": count(file.column_sizes(), id),
                "value_count": count(file.value_counts(), id),
                "null_value_count": count(file.null_value_counts(), id),
                "nan_value_count": count(file.nan_value_counts(), id),
                "lower_bound": bound(file.lower_bounds(), id),
                "upper_bound": bound(file.upper_bounds(), id),
            });
            (name, column)
        })
        .collect();
    serde_json::Value::Object(metrics).to_string()
}

fn bigint(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Every live data and delete file of the current snapshot.
pub(super) async fn files(table: &Table) -> Result<RecordBatch> {
    let (spec_ids, files): (Vec<i32>, Vec<DataFile>) = live_files(table).await?.into_iter().unzip();
    let partition = PartitionRows::new(table.metadata(), spec_ids.iter().copied())?;
    let partition = partition.column(
        files
            .iter()
            .zip(&spec_ids)
            .map(|(file, spec_id)| partition.values(*spec_id, file))
            .collect::<Result<_>>()?,
    )?;
    let mut split_offsets = ListBuilder::new(Int64Builder::new());
    let mut equality_ids = ListBuilder::new(Int32Builder::new());
    for file in &files {
        match file.split_offsets() {
            Some(offsets) => {
                split_offsets.values().append_slice(offsets);
                split_offsets.append(true);
            }
            None => split_offsets.append(false),
        }
        match file.equality_ids() {
            Some(ids) => {
                equality_ids.values().append_slice(&ids);
                equality_ids.append(true);
            }
            None => equality_ids.append(false),
        }
    }
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from_iter_values(
            files.iter().map(|f| f.content_type() as i32),
        )),
        Arc::new(StringArray::from_iter_values(
            files.iter().map(DataFile::file_path),
        )),
        Arc::new(StringArray::from_iter_values(
            files
                .iter()
                .map(|f| f.file_format().to_string().to_uppercase()),
        )),
        Arc::new(Int32Array::from(spec_ids)),
        Arc::new(Int64Array::from_iter_values(
            files.iter().map(|f| bigint(f.record_count())),
        )),
        Arc::new(Int64Array::from_iter_values(
            files.iter().map(|f| bigint(f.file_size_in_bytes())),
        )),
        counts(&files, DataFile::column_sizes)?,
        counts(&files, DataFile::value_counts)?,
        counts(&files, DataFile::null_value_counts)?,
        counts(&files, DataFile::nan_value_counts)?,
        bounds(&files, DataFile::lower_bounds)?,
        bounds(&files, DataFile::upper_bounds)?,
        Arc::new(BinaryArray::from_iter(
            files.iter().map(DataFile::key_metadata),
        )),
        Arc::new(split_offsets.finish()),
        Arc::new(equality_ids.finish()),
        Arc::new(Int32Array::from_iter(
            files.iter().map(DataFile::sort_order_id),
        )),
        Arc::new(StringArray::from_iter_values(files.iter().map(|file| {
            readable_metrics(table.metadata().current_schema(), file)
        }))),
    ];
    let mut fields: Vec<Field> = [
        ("content", DataType::Int32, false),
        ("file_path", DataType::Utf8, false),
        ("file_format", DataType::Utf8, false),
        ("spec_id", DataType::Int32, false),
        ("record_count", DataType::Int64, false),
        ("file_size_in_bytes", DataType::Int64, false),
    ]
    .into_iter()
    .map(|(name, data_type, nullable)| Field::new(name, data_type, nullable))
    .chain(
        [
            "column_sizes",
            "value_counts",
            "null_value_counts",
            "nan_value_counts",
            "lower_bounds",
            "upper_bounds",
            "key_metadata",
            "split_offsets",
            "equality_ids",
            "sort_order_id",
            "readable_metrics",
        ]
        .into_iter()
        .zip(&columns[6..])
        .map(|(name, column)| Field::new(name, column.data_type().clone(), true)),
    )
    .collect();
    // After `spec_id`, as in Trino.
    if let Some((field, column)) = partition {
        fields.insert(4, field);
        columns.insert(4, column);
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// The current snapshot's manifests, data and delete, with their counts.
pub(super) async fn manifests(table: &Table) -> Result<RecordBatch> {
    let manifests = current_manifests(table).await?;
    let count = |of: fn(&ManifestFile) -> Option<u32>| -> ArrayRef {
        Arc::new(Int32Array::from_iter(
            manifests
                .iter()
                .map(|m| of(m).map(|n| i32::try_from(n).unwrap_or(i32::MAX))),
        ))
    };
    let rows = |of: fn(&ManifestFile) -> Option<u64>| -> ArrayRef {
        Arc::new(Int64Array::from_iter(
            manifests.iter().map(|m| of(m).map(bigint)),
        ))
    };
    let schema = Schema::new(vec![
        Field::new("path", DataType::Utf8, false),
        Field::new("length", DataType::Int64, false),
        Field::new("partition_spec_id", DataType::Int32, false),
        Field::new("added_snapshot_id", DataType::Int64, false),
        Field::new("added_data_files_count", DataType::Int32, true),
        Field::new("added_rows_count", DataType::Int64, true),
        Field::new("existing_data_files_count", DataType::Int32, true),
        Field::new("existing_rows_count", DataType::Int64, true),
        Field::new("deleted_data_files_count", DataType::Int32, true),
        Field::new("deleted_rows_count", DataType::Int64, true),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            manifests.iter().map(|m| m.manifest_path.as_str()),
        )),
        Arc::new(Int64Array::from_iter_values(
            manifests.iter().map(|m| m.manifest_length),
        )),
        Arc::new(Int32Array::from_iter_values(
            manifests.iter().map(|m| m.partition_spec_id),
        )),
        Arc::new(Int64Array::from_iter_values(
            manifests.iter().map(|m| m.added_snapshot_id),
        )),
        count(|m| m.added_files_count),
        rows(|m| m.added_rows_count),
        count(|m| m.existing_files_count),
        rows(|m| m.existing_rows_count),
        count(|m| m.deleted_files_count),
        rows(|m| m.deleted_rows_count),
        partition_summaries(table.metadata(), &manifests)?,
    ];
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new(
        "partition_summaries",
        columns[columns.len() - 1].data_type().clone(),
        true,
    ));
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// `$manifests`' `partition_summaries`: per partition field of the manifest's spec, whether
/// some file's value is NULL or NaN and the lowest and highest values, as text (Trino's
/// `array(row(contains_null, contains_nan, lower_bound, upper_bound))`).
fn partition_summaries(metadata: &TableMetadata, manifests: &[ManifestFile]) -> Result<ArrayRef> {
    let summary = Arc::new(Schema::new(vec![
        Field::new("contains_null", DataType::Boolean, true),
        Field::new("contains_nan", DataType::Boolean, true),
        Field::new("lower_bound", DataType::Utf8, true),
        Field::new("upper_bound", DataType::Utf8, true),
    ]));
    let list = DataType::List(Arc::new(Field::new(
        "item",
        DataType::Struct(summary.fields().clone()),
        true,
    )));
    let row_schema = Arc::new(Schema::new(vec![Field::new(
        "partition_summaries",
        list.clone(),
        true,
    )]));
    let mut rows = Vec::with_capacity(manifests.len());
    for manifest in manifests {
        // A spec whose source column is gone from the current schema shows no bounds.
        let types = metadata
            .partition_spec_by_id(manifest.partition_spec_id)
            .and_then(|spec| spec.partition_type(metadata.current_schema()).ok())
            .unwrap_or_else(|| iceberg::spec::StructType::new(Vec::new()));
        let text = |bytes: Option<&[u8]>, index: usize| -> serde_json::Value {
            let primitive = types
                .fields()
                .get(index)
                .and_then(|f| f.field_type.as_primitive_type().cloned());
            match (bytes, primitive) {
                (Some(bytes), Some(primitive)) => Datum::try_from_bytes(bytes, primitive)
                    .map_or(serde_json::Value::Null, |d| bound_text(&d).into()),
                _ => serde_json::Value::Null,
            }
        };
        let summaries: Option<Vec<serde_json::Value>> = manifest.partitions.as_ref().map(|fields| {
            fields
                .iter()
                .enumerate()
                .map(|(index, field)| {
                    serde_json::json!({
                        "contains_null": field.contains_null,
                        "contains_nan": field.contains_nan,
                        "lower_bound": text(field.lower_bound.as_ref().map(|b| b.as_slice()), index),
                        "upper_bound": text(field.upper_bound.as_ref().map(|b| b.as_slice()), index),
                    })
                })
                .collect()
        });
        rows.push(serde_json::json!({ "partition_summaries": summaries }));
    }
    let mut decoder = arrow::json::ReaderBuilder::new(row_schema).build_decoder()?;
    decoder.serialize(&rows)?;
    Ok(match decoder.flush()? {
        Some(batch) => Arc::clone(batch.column(0)),
        None => new_empty_array(&list),
    })
}

/// The `partition` column of Trino's `$files` and `$partitions`: a row of the partition fields
/// of every spec in use (by name, first come first), NULL where a row's spec lacks one; no
/// column for an unpartitioned table.
struct PartitionRows<'a> {
    metadata: &'a TableMetadata,
    fields: Vec<NestedField>,
}

impl<'a> PartitionRows<'a> {
    /// For files written with the specs `spec_ids` (the default spec counts too).
    fn new(metadata: &'a TableMetadata, spec_ids: impl Iterator<Item = i32>) -> Result<Self> {
        let schema = metadata.current_schema();
        let mut ids: Vec<i32> = spec_ids.collect();
        ids.push(metadata.default_partition_spec_id());
        ids.sort_unstable();
        ids.dedup();
        let mut fields: Vec<NestedField> = Vec::new();
        for id in ids {
            let Some(spec) = metadata.partition_spec_by_id(id) else {
                continue;
            };
            for field in spec.partition_type(schema)?.fields() {
                if !fields.iter().any(|f| f.name == field.name) {
                    let mut field = field.as_ref().clone();
                    field.required = false;
                    fields.push(field);
                }
            }
        }
        Ok(Self { metadata, fields })
    }

    /// `file`'s partition values (written with spec `spec_id`), in the spec's JSON form.
    fn values(
        &self,
        spec_id: i32,
        file: &DataFile,
    ) -> Result<serde_json::Map<String, serde_json::Value>> {
        let mut values = serde_json::Map::new();
        if let Some(spec) = self.metadata.partition_spec_by_id(spec_id) {
            let partition_type = spec.partition_type(self.metadata.current_schema())?;
            for (field, value) in partition_type.fields().iter().zip(file.partition().iter()) {
                let json = match value {
                    Some(literal) => literal.clone().try_into_json(&field.field_type)?,
                    None => serde_json::Value::Null,
                };
                values.insert(field.name.clone(), json);
            }
        }
        Ok(values)
    }

    /// The column of `rows` (from [`Self::values`]); `None` for an unpartitioned table.
    fn column(
        &self,
        rows: Vec<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<Option<(Field, ArrayRef)>> {
        if self.fields.is_empty() {
            return Ok(None);
        }
        let struct_schema = sqe_iceberg::types::table_arrow_schema(
            &IcebergSchema::builder()
                .with_fields(self.fields.iter().cloned().map(Arc::new))
                .build()?,
        )?;
        let mut decoder =
            arrow::json::ReaderBuilder::new(Arc::clone(&struct_schema)).build_decoder()?;
        let rows: Vec<serde_json::Value> =
            rows.into_iter().map(serde_json::Value::Object).collect();
        decoder.serialize(&rows)?;
        let data_type = DataType::Struct(struct_schema.fields().clone());
        // No row (a table without live files) decodes to no batch.
        let values: ArrayRef = match decoder.flush()? {
            Some(batch) => Arc::new(StructArray::from(batch)),
            None => new_empty_array(&data_type),
        };
        Ok(Some((Field::new("partition", data_type, false), values)))
    }
}

/// Trino's `$partitions`: for each partition of the current snapshot's live data files, their
/// rows, files and bytes. `partition` holds the fields of every spec the files were written
/// with (NULL where a file's spec lacks one); an unpartitioned table has no `partition` column.
pub(super) async fn partitions(table: &Table) -> Result<RecordBatch> {
    let metadata = table.metadata();
    let files: Vec<(i32, DataFile)> = live_files(table)
        .await?
        .into_iter()
        .filter(|(_, file)| file.content_type() == DataContentType::Data)
        .collect();
    let partition = PartitionRows::new(metadata, files.iter().map(|(id, _)| *id))?;
    // Per partition: its values, rows, files, bytes.
    type Group<'f> = (
        serde_json::Map<String, serde_json::Value>,
        [i64; 3],
        Vec<&'f DataFile>,
    );
    let mut groups: BTreeMap<String, Group<'_>> = BTreeMap::new();
    for (spec_id, file) in &files {
        let values = partition.values(*spec_id, file)?;
        let key = serde_json::Value::Object(values.clone()).to_string();
        let (_, totals, members) = groups
            .entry(key)
            .or_insert_with(|| (values, [0; 3], Vec::new()));
        totals[0] += bigint(file.record_count());
        totals[1] += 1;
        totals[2] += bigint(file.file_size_in_bytes());
        members.push(file);
    }
    let mut columns: Vec<ArrayRef> = Vec::new();
    let mut schema_fields: Vec<Field> = Vec::new();
    if let Some((field, column)) = partition.column(
        groups
            .values()
            .map(|(values, _, _)| values.clone())
            .collect(),
    )? {
        schema_fields.push(field);
        columns.push(column);
    }
    for (i, name) in ["record_count", "file_count", "total_size"]
        .iter()
        .enumerate()
    {
        schema_fields.push(Field::new(*name, DataType::Int64, false));
        columns.push(Arc::new(Int64Array::from_iter_values(
            groups.values().map(|(_, totals, _)| totals[i]),
        )));
    }
    let members: Vec<&[&DataFile]> = groups
        .values()
        .map(|(_, _, files)| files.as_slice())
        .collect();
    let (field, column) = data_column(metadata.current_schema(), &members)?;
    schema_fields.push(field);
    columns.push(column);
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(schema_fields)),
        columns,
    )?)
}

/// `$partitions`' `data`: per top-level primitive column, the lowest and highest value, the
/// NULLs and the NaNs in each group of files, from their statistics (a count is NULL when some
/// file does not give it; binary columns have no bounds here).
fn data_column(schema: &IcebergSchema, groups: &[&[&DataFile]]) -> Result<(Field, ArrayRef)> {
    let arrow = sqe_iceberg::types::table_arrow_schema(schema)?;
    let mut columns: Vec<(String, i32, DataType)> = Vec::new();
    for field in schema.as_struct().fields() {
        if !matches!(field.field_type.as_ref(), Type::Primitive(_)) {
            continue;
        }
        let data_type = arrow.field_with_name(&field.name)?.data_type().clone();
        columns.push((field.name.clone(), field.id, data_type));
    }
    let stats_fields: Vec<Field> = columns
        .iter()
        .map(|(name, _, data_type)| {
            let stats = vec![
                Field::new("min", data_type.clone(), true),
                Field::new("max", data_type.clone(), true),
                Field::new("null_count", DataType::Int64, true),
                Field::new("nan_count", DataType::Int64, true),
            ];
            Field::new(name, DataType::Struct(stats.into()), true)
        })
        .collect();
    let data_type = DataType::Struct(stats_fields.into());
    let total = |files: &[&DataFile], of: fn(&DataFile) -> &HashMap<i32, u64>, id: i32| {
        files
            .iter()
            .map(|f| of(f).get(&id).copied())
            .sum::<Option<u64>>()
            .map_or(serde_json::Value::Null, |n| {
                serde_json::Value::from(bigint(n))
            })
    };
    let rows: Vec<serde_json::Value> = groups
        .iter()
        .map(|files| {
            let data: serde_json::Map<String, serde_json::Value> = columns
                .iter()
                .map(|(name, id, data_type)| {
                    let binary = matches!(
                        data_type,
                        DataType::Binary | DataType::LargeBinary | DataType::FixedSizeBinary(_)
                    );
                    let bound = |of: fn(&DataFile) -> &HashMap<i32, Datum>, lowest: bool| {
                        // A file with values but no bound (metrics off or truncated for the
                        // column) leaves the partition's bound unknown.
                        let unknown = files.iter().any(|f| {
                            of(f).get(id).is_none()
                                && f.null_value_counts().get(id) != Some(&f.record_count())
                        });
                        if unknown {
                            return serde_json::Value::Null;
                        }
                        let bounds = files.iter().filter_map(|f| of(f).get(id));
                        let chosen = if lowest {
                            bounds.min_by(|a, b| {
                                a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal)
                            })
                        } else {
                            bounds.max_by(|a, b| {
                                a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal)
                            })
                        };
                        match chosen {
                            Some(datum) if !binary => bound_json(datum),
                            _ => serde_json::Value::Null,
                        }
                    };
                    let stats = serde_json::json!({
                        "min": bound(DataFile::lower_bounds, true),
                        "max": bound(DataFile::upper_bounds, false),
                        "null_count": total(files, DataFile::null_value_counts, *id),
                        "nan_count": total(files, DataFile::nan_value_counts, *id),
                    });
                    (name.clone(), stats)
                })
                .collect();
            serde_json::json!({ "data": data })
        })
        .collect();
    let field = Field::new("data", data_type.clone(), true);
    let mut decoder = arrow::json::ReaderBuilder::new(Arc::new(Schema::new(vec![field.clone()])))
        .build_decoder()?;
    decoder.serialize(&rows)?;
    let column = match decoder.flush()? {
        Some(batch) => Arc::clone(batch.column(0)),
        None => new_empty_array(&data_type),
    };
    Ok((field, column))
}
