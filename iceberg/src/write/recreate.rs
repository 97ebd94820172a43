//! A table given other columns, partitioning or sort order together with new rows, in one
//! commit of the same table (`CREATE OR REPLACE TABLE` with other columns, a replacing ingest
//! of other columns), as Iceberg's replace transaction does: the new schema, spec and order
//! become current and the main branch starts again from a snapshot with no parent. Readers see
//! the old table or the new, never neither; the old snapshots stay for time travel until they
//! expire.

use std::collections::HashMap;
use std::sync::Arc;

use iceberg::spec::{
    ListType, MAIN_BRANCH, MapType, NestedField, NestedFieldRef, Schema, SortOrder, StructType,
    TableMetadataBuilder, Type, UnboundPartitionSpec,
};
use iceberg::table::Table;
use iceberg::{Error, ErrorKind, Result, TableRequirement, TableUpdate};

use crate::commit::CommitUpdates;

/// What a replacing commit changes of the table besides its rows, and what it requires of it.
#[derive(Debug)]
pub struct Recreation {
    /// The table as read: its uuid, main branch, schema, spec and order must still be these.
    pub(crate) requirements: Vec<TableRequirement>,
    /// The new schema, spec and sort order made current and the main branch cleared.
    pub(crate) changes: Vec<TableUpdate>,
    /// SQE's own commit (iceberg-rust has no replace transaction).
    pub committer: Arc<dyn CommitUpdates>,
}

/// `table` as it will be once given `schema`, `partition` and `sort_order` (none of either:
/// unpartitioned, unsorted), with no current snapshot: what the new rows are written for, and
/// the [`Recreation`] that commits them. Columns get field ids the table never used, so no
/// old data file is read as a new column.
pub fn recreation(
    table: &Table,
    schema: &Schema,
    partition: Option<&UnboundPartitionSpec>,
    sort_order: Option<&SortOrder>,
    committer: Arc<dyn CommitUpdates>,
) -> Result<(Table, Arc<Recreation>)> {
    let base = table.metadata();
    let (fresh, ids) = with_fresh_ids(schema, base.last_column_id())?;
    let rebound = |source_id: i32| {
        ids.get(&source_id).copied().ok_or_else(|| {
            Error::new(
                ErrorKind::DataInvalid,
                format!("no column with field id {source_id} among the new columns"),
            )
        })
    };
    let mut spec = UnboundPartitionSpec::builder();
    for field in partition
        .map(UnboundPartitionSpec::fields)
        .unwrap_or_default()
    {
        spec = spec.add_partition_field(rebound(field.source_id)?, &field.name, field.transform)?;
    }
    let mut order = SortOrder::builder();
    for field in sort_order.map(|o| o.fields.as_slice()).unwrap_or_default() {
        let mut field = field.clone();
        field.source_id = rebound(field.source_id)?;
        order.with_sort_field(field);
    }
    let built = TableMetadataBuilder::new_from_metadata(
        base.clone(),
        table.metadata_location().map(str::to_string),
    )
    .add_current_schema(fresh)?
    .add_default_partition_spec(spec.build())?
    .add_sort_order(order.build_unbound()?)?
    .set_default_sort_order(i64::from(TableMetadataBuilder::LAST_ADDED))?
    .remove_ref(MAIN_BRANCH)
    .build()?;
    let requirements = vec![
        TableRequirement::UuidMatch { uuid: base.uuid() },
        TableRequirement::RefSnapshotIdMatch {
            r#ref: MAIN_BRANCH.to_string(),
            snapshot_id: base.current_snapshot_id(),
        },
        TableRequirement::CurrentSchemaIdMatch {
            current_schema_id: base.current_schema_id(),
        },
        TableRequirement::LastAssignedFieldIdMatch {
            last_assigned_field_id: base.last_column_id(),
        },
        TableRequirement::DefaultSpecIdMatch {
            default_spec_id: base.default_partition_spec_id(),
        },
        TableRequirement::LastAssignedPartitionIdMatch {
            last_assigned_partition_id: base.last_partition_id(),
        },
        TableRequirement::DefaultSortOrderIdMatch {
            default_sort_order_id: base.default_sort_order_id(),
        },
    ];
    let mut future = Table::builder()
        .metadata(built.metadata)
        .identifier(table.identifier().clone())
        .file_io(table.file_io().clone())
        .runtime(iceberg::Runtime::try_current()?);
    if let Some(location) = table.metadata_location() {
        future = future.metadata_location(location);
    }
    Ok((
        future.build()?,
        Arc::new(Recreation {
            requirements,
            changes: built.changes,
            committer,
        }),
    ))
}

/// `schema` with every field (nested ones too) numbered from `last_used + 1`, and the new id
/// of each old one.
fn with_fresh_ids(schema: &Schema, last_used: i32) -> Result<(Schema, HashMap<i32, i32>)> {
    let mut numbering = Numbering {
        next: last_used + 1,
        ids: HashMap::new(),
    };
    let fields = numbering.fields(schema.as_struct().fields());
    let fresh = Schema::builder().with_fields(fields).build()?;
    Ok((fresh, numbering.ids))
}

struct Numbering {
    next: i32,
    ids: HashMap<i32, i32>,
}

impl Numbering {
    fn fields(&mut self, fields: &[NestedFieldRef]) -> Vec<NestedFieldRef> {
        // Siblings first, then their children, as Iceberg numbers a new table's columns.
        let ids: Vec<i32> = fields.iter().map(|f| self.id_for(f.id)).collect();
        fields
            .iter()
            .zip(ids)
            .map(|(field, id)| self.field(field, id))
            .collect()
    }

    fn id_for(&mut self, old: i32) -> i32 {
        let id = self.next;
        self.next += 1;
        self.ids.insert(old, id);
        id
    }

    fn field(&mut self, field: &NestedField, id: i32) -> NestedFieldRef {
        let mut field = field.clone();
        field.id = id;
        field.field_type = Box::new(self.nested(&field.field_type));
        Arc::new(field)
    }

    fn nested(&mut self, data_type: &Type) -> Type {
        match data_type {
            Type::Primitive(_) => data_type.clone(),
            Type::Struct(fields) => Type::Struct(StructType::new(self.fields(fields.fields()))),
            Type::List(list) => {
                let id = self.id_for(list.element_field.id);
                Type::List(ListType::new(self.field(&list.element_field, id)))
            }
            Type::Map(map) => {
                let key = self.id_for(map.key_field.id);
                let value = self.id_for(map.value_field.id);
                Type::Map(MapType::new(
                    self.field(&map.key_field, key),
                    self.field(&map.value_field, value),
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use iceberg::spec::{PrimitiveType, Transform};

    use super::*;

    fn schema() -> Schema {
        Schema::builder()
            .with_fields(vec![
                Arc::new(NestedField::required(
                    1,
                    "id",
                    Type::Primitive(PrimitiveType::Long),
                )),
                Arc::new(NestedField::optional(
                    2,
                    "tags",
                    Type::List(ListType::new(Arc::new(NestedField::list_element(
                        3,
                        Type::Primitive(PrimitiveType::String),
                        false,
                    )))),
                )),
                Arc::new(NestedField::optional(
                    4,
                    "day",
                    Type::Primitive(PrimitiveType::Date),
                )),
            ])
            .build()
            .expect("a valid schema")
    }

    #[test]
    fn every_field_is_numbered_after_the_last_used() {
        let (fresh, ids) = with_fresh_ids(&schema(), 10).expect("renumbered");
        let id = |name: &str| fresh.field_id_by_name(name);
        assert_eq!(
            (id("id"), id("tags"), id("day"), id("tags.element")),
            (Some(11), Some(12), Some(13), Some(14))
        );
        assert_eq!(fresh.highest_field_id(), 14);
        assert_eq!(ids.get(&4), Some(&13));
        assert_eq!(ids.get(&3), Some(&14));
    }

    /// A table of `schema()` partitioned by `day`'s month, with no snapshot.
    fn table() -> Table {
        let spec = UnboundPartitionSpec::builder()
            .add_partition_field(4, "day_month", Transform::Month)
            .expect("a field")
            .build();
        let metadata = TableMetadataBuilder::new(
            schema(),
            spec,
            SortOrder::unsorted_order(),
            "memory://t".to_string(),
            iceberg::spec::FormatVersion::V2,
            HashMap::new(),
        )
        .and_then(TableMetadataBuilder::build)
        .expect("metadata")
        .metadata;
        Table::builder()
            .metadata(metadata)
            .identifier(iceberg::TableIdent::from_strs(["s", "t"]).expect("a name"))
            .file_io(crate::storage::file_io_with_props(HashMap::new()))
            .runtime(iceberg::Runtime::try_current().expect("a runtime"))
            .build()
            .expect("a table")
    }

    #[tokio::test]
    async fn the_new_layout_is_bound_to_the_new_columns_and_the_main_branch_cleared() {
        let table = table();
        let new_columns = Schema::builder()
            .with_fields(vec![
                Arc::new(NestedField::optional(
                    1,
                    "name",
                    Type::Primitive(PrimitiveType::String),
                )),
                Arc::new(NestedField::optional(
                    2,
                    "day",
                    Type::Primitive(PrimitiveType::Date),
                )),
            ])
            .build()
            .expect("a schema");
        let spec = UnboundPartitionSpec::builder()
            .add_partition_field(2, "day_day", Transform::Day)
            .expect("a field")
            .build();
        let order = SortOrder::builder()
            .with_sort_field(
                iceberg::spec::SortField::builder()
                    .source_id(1)
                    .transform(Transform::Identity)
                    .direction(iceberg::spec::SortDirection::Descending)
                    .null_order(iceberg::spec::NullOrder::Last)
                    .build(),
            )
            .build_unbound()
            .expect("an order");
        let (future, recreation) = recreation(
            &table,
            &new_columns,
            Some(&spec),
            Some(&order),
            Arc::new(crate::commit::NoCommits),
        )
        .expect("recreated");
        let metadata = future.metadata();
        let current = metadata.current_schema();
        assert_eq!(current.field_id_by_name("name"), Some(5));
        assert_eq!(current.field_id_by_name("day"), Some(6));
        let spec = metadata.default_partition_spec();
        assert_eq!(
            spec.fields()
                .iter()
                .map(|f| (f.source_id, f.transform))
                .collect::<Vec<_>>(),
            vec![(6, Transform::Day)]
        );
        let order = metadata.default_sort_order();
        assert_eq!(
            order.fields.iter().map(|f| f.source_id).collect::<Vec<_>>(),
            vec![5]
        );
        assert_eq!(metadata.current_snapshot_id(), None);
        assert_eq!(metadata.uuid(), table.metadata().uuid());
        let changes: Vec<&str> = recreation
            .changes
            .iter()
            .map(|change| match change {
                TableUpdate::AddSchema { .. } => "add-schema",
                TableUpdate::SetCurrentSchema { .. } => "set-current-schema",
                TableUpdate::AddSpec { .. } => "add-spec",
                TableUpdate::SetDefaultSpec { .. } => "set-default-spec",
                TableUpdate::AddSortOrder { .. } => "add-sort-order",
                TableUpdate::SetDefaultSortOrder { .. } => "set-default-sort-order",
                TableUpdate::RemoveSnapshotRef { .. } => "remove-snapshot-ref",
                _ => "other",
            })
            .collect();
        assert_eq!(
            changes,
            [
                "add-schema",
                "set-current-schema",
                "add-spec",
                "set-default-spec",
                "add-sort-order",
                "set-default-sort-order",
                "remove-snapshot-ref"
            ]
        );
        assert!(
            recreation
                .requirements
                .contains(&TableRequirement::CurrentSchemaIdMatch {
                    current_schema_id: table.metadata().current_schema_id()
                })
        );
    }
}
