//! Arrow <-> Iceberg schema conversion for tables SQE creates and the batches it writes.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::arrow::datatypes::{
    DataType, Field, FieldRef, Fields, Schema, SchemaRef, TimeUnit,
};
use iceberg::arrow::{arrow_schema_to_schema_auto_assign_ids, schema_to_arrow_schema};

use crate::error::{Result, TableError};

/// The Arrow schema DataFusion sees for an Iceberg schema: Iceberg's own mapping, without the
/// field-id metadata (plans compare schemas, and metadata would make equal schemas differ).
pub fn table_arrow_schema(schema: &iceberg::spec::Schema) -> Result<SchemaRef> {
    let arrow = strip_metadata(&schema_to_arrow_schema(schema)?);
    // Iceberg's `uuid` is Arrow's FixedSizeBinary(16), as its `fixed(16)` is: the field says
    // which (top-level columns; a uuid inside a struct, list or map reads as varbinary).
    let fields: Vec<FieldRef> = arrow
        .fields()
        .iter()
        .zip(schema.as_struct().fields())
        .map(|(field, iceberg_field)| {
            if matches!(
                iceberg_field.field_type.as_ref(),
                iceberg::spec::Type::Primitive(iceberg::spec::PrimitiveType::Uuid)
            ) {
                Arc::new(sqe_functions::SixteenBytes::Uuid.field(field.name(), field.is_nullable()))
            } else {
                Arc::clone(field)
            }
        })
        .collect();
    Ok(Arc::new(Schema::new(fields)))
}

/// The Arrow schema data files are written with: Iceberg's mapping including field ids.
pub fn file_arrow_schema(schema: &iceberg::spec::Schema) -> Result<SchemaRef> {
    Ok(Arc::new(schema_to_arrow_schema(schema)?))
}

fn strip_metadata(schema: &Schema) -> Schema {
    Schema::new(schema.fields().iter().map(strip_field).collect::<Vec<_>>())
}

fn strip_field(field: &FieldRef) -> FieldRef {
    let data_type = match field.data_type() {
        DataType::List(inner) => DataType::List(strip_field(inner)),
        DataType::LargeList(inner) => DataType::LargeList(strip_field(inner)),
        DataType::FixedSizeList(inner, n) => DataType::FixedSizeList(strip_field(inner), *n),
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(strip_field).collect()),
        DataType::Map(entries, sorted) => DataType::Map(strip_field(entries), *sorted),
        other => other.clone(),
    };
    Arc::new(
        Field::new(field.name(), data_type, field.is_nullable()).with_metadata(Default::default()),
    )
}

/// Builds the Iceberg schema for a new table from the Arrow schema of a query or a column list.
///
/// Types Iceberg lacks are widened to the nearest one it has (small integers to `int`, string
/// views to `string`, second/millisecond timestamps to microseconds); types with no lossless
/// equivalent are refused with an error naming the column. When `force_nullable` is set every
/// column is optional, as Trino does for CREATE TABLE AS.
pub fn iceberg_schema_for(schema: &Schema, force_nullable: bool) -> Result<iceberg::spec::Schema> {
    let fields = schema
        .fields()
        .iter()
        .map(|f| normalize_field(f, force_nullable))
        .collect::<Result<Vec<_>>>()?;
    let converted = arrow_schema_to_schema_auto_assign_ids(&Schema::new(fields))?;
    let uuids: Vec<&str> = schema
        .fields()
        .iter()
        .filter(|f| {
            sqe_functions::SixteenBytes::of_field(f) == Some(sqe_functions::SixteenBytes::Uuid)
        })
        .map(|f| f.name().as_str())
        .collect();
    if uuids.is_empty() {
        return Ok(converted);
    }
    // Arrow's FixedSizeBinary(16) becomes Iceberg's `fixed(16)`; a uuid column is `uuid`.
    with_fields_changed(&converted, |field| {
        if uuids.contains(&field.name.as_str()) {
            *field.field_type = iceberg::spec::Type::Primitive(iceberg::spec::PrimitiveType::Uuid);
        }
    })
}

/// `schema` with `change` made to each of its columns (top-level fields), its id and
/// identifier fields kept.
pub fn with_fields_changed(
    schema: &iceberg::spec::Schema,
    mut change: impl FnMut(&mut iceberg::spec::NestedField),
) -> Result<iceberg::spec::Schema> {
    let fields = schema
        .as_struct()
        .fields()
        .iter()
        .map(|field| {
            let mut field = field.as_ref().clone();
            change(&mut field);
            Arc::new(field)
        })
        .collect::<Vec<_>>();
    Ok(iceberg::spec::Schema::builder()
        .with_schema_id(schema.schema_id())
        .with_identifier_field_ids(schema.identifier_field_ids())
        .with_fields(fields)
        .build()?)
}

fn normalize_field(field: &FieldRef, force_nullable: bool) -> Result<Field> {
    if sqe_functions::is_json(field) {
        return Err(TableError::UnsupportedType {
            column: field.name().clone(),
            type_name: "json".to_string(),
            hint: "; store its text with json_format".to_string(),
        });
    }
    if sqe_functions::SixteenBytes::of_field(field) == Some(sqe_functions::SixteenBytes::IpAddress)
    {
        return Err(TableError::UnsupportedType {
            column: field.name().clone(),
            type_name: "ipaddress".to_string(),
            hint: "; store its text with CAST(x AS varchar)".to_string(),
        });
    }
    let data_type = normalize_type(field.name(), field.data_type())?;
    Ok(Field::new(
        field.name(),
        data_type,
        force_nullable || field.is_nullable(),
    ))
}

fn normalize_type(column: &str, data_type: &DataType) -> Result<DataType> {
    let unsupported = |hint: &str| TableError::UnsupportedType {
        column: column.to_string(),
        type_name: sqe_functions::types::TrinoType::from_arrow(data_type).to_string(),
        hint: hint.to_string(),
    };
    Ok(match data_type {
        DataType::Boolean
        | DataType::Int32
        | DataType::Int64
        | DataType::Float32
        | DataType::Float64
        | DataType::Date32
        | DataType::Utf8
        | DataType::LargeBinary => data_type.clone(),
        DataType::Int8 | DataType::Int16 | DataType::UInt8 | DataType::UInt16 => DataType::Int32,
        DataType::UInt32 => DataType::Int64,
        DataType::UInt64 => {
            return Err(unsupported("; cast it to BIGINT or DECIMAL(20,0)"));
        }
        DataType::Float16 => DataType::Float32,
        DataType::Utf8View | DataType::LargeUtf8 => DataType::Utf8,
        DataType::Binary | DataType::BinaryView => DataType::LargeBinary,
        DataType::FixedSizeBinary(n) => DataType::FixedSizeBinary(*n),
        DataType::Date64 => DataType::Date32,
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) | DataType::Decimal128(p, s) => {
            DataType::Decimal128(*p, *s)
        }
        DataType::Decimal256(p, s) if *p <= 38 => DataType::Decimal128(*p, *s),
        DataType::Time32(_) | DataType::Time64(_) => DataType::Time64(TimeUnit::Microsecond),
        // Iceberg v2 keeps microseconds; a timestamp(9) rounds to them (`cast_batch`), as
        // Trino's Iceberg connector stores it.
        DataType::Timestamp(_, tz) => DataType::Timestamp(
            TimeUnit::Microsecond,
            tz.as_ref().map(|_| Arc::from("+00:00")),
        ),
        DataType::Dictionary(_, value) => normalize_type(column, value)?,
        DataType::List(inner)
        | DataType::LargeList(inner)
        | DataType::ListView(inner)
        | DataType::LargeListView(inner)
        | DataType::FixedSizeList(inner, _) => {
            DataType::List(Arc::new(normalize_field(inner, true)?))
        }
        DataType::Struct(fields) => DataType::Struct(
            fields
                .iter()
                .map(|f| normalize_field(f, false))
                .collect::<Result<Fields>>()?,
        ),
        DataType::Map(entries, sorted) => {
            DataType::Map(Arc::new(normalize_field(entries, false)?), *sorted)
        }
        DataType::Null => return Err(unsupported("; give it a type with CAST(NULL AS ...)")),
        _ => return Err(unsupported("")),
    })
}

/// Casts a batch, column by column in order, to `target` (a table's file schema on writes, a
/// scan's declared schema on reads). Values that do not fit are errors, never NULLs.
pub fn cast_batch(batch: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    if batch.num_columns() != target.fields().len() {
        return Err(TableError::Schema(format!(
            "batch has {} columns, the target schema has {}",
            batch.num_columns(),
            target.fields().len()
        )));
    }
    let options = CastOptions {
        safe: false,
        ..Default::default()
    };
    let columns = batch
        .columns()
        .iter()
        .zip(target.fields())
        .map(|(column, field)| {
            if column.data_type() == field.data_type() {
                return Ok(Arc::clone(column));
            }
            // A time(9) into Iceberg's microseconds rounds, as Trino's casts do (Arrow's
            // truncates).
            let column = match sqe_functions::lowered_digits(column.data_type(), field.data_type())
            {
                Some(digits) => sqe_functions::round_fraction(column, digits)?,
                None => Arc::clone(column),
            };
            cast_with_options(&column, field.data_type(), &options).map_err(TableError::from)
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(target),
        columns,
        &options,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widens_types_iceberg_lacks() -> Result<()> {
        let schema = Schema::new(vec![
            Field::new("a", DataType::Int16, false),
            Field::new("b", DataType::Utf8View, true),
            Field::new("c", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        ]);
        let iceberg = iceberg_schema_for(&schema, false)?;
        let arrow = table_arrow_schema(&iceberg)?;
        assert_eq!(arrow.field(0).data_type(), &DataType::Int32);
        assert!(!arrow.field(0).is_nullable());
        assert_eq!(arrow.field(1).data_type(), &DataType::Utf8);
        assert_eq!(
            arrow.field(2).data_type(),
            &DataType::Timestamp(TimeUnit::Microsecond, None)
        );
        assert!(arrow.field(0).metadata().is_empty());
        Ok(())
    }

    #[test]
    fn ctas_columns_become_nullable() -> Result<()> {
        let schema = Schema::new(vec![Field::new("a", DataType::Int64, false)]);
        let iceberg = iceberg_schema_for(&schema, true)?;
        assert!(table_arrow_schema(&iceberg)?.field(0).is_nullable());
        Ok(())
    }

    #[test]
    fn refuses_untyped_null_with_a_hint() {
        let schema = Schema::new(vec![Field::new("x", DataType::Null, true)]);
        let err = iceberg_schema_for(&schema, true)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "column 'x' has type unknown, which Iceberg tables cannot store; give it a type with CAST(NULL AS ...)"
            )
        );
    }
}
