//! `ALTER TABLE`: `ADD COLUMN [IF NOT EXISTS]`, `DROP COLUMN [IF EXISTS]`, `RENAME COLUMN`,
//! `ALTER COLUMN … SET DATA TYPE` (Iceberg schema evolution by field id: files written before
//! read an added column as NULL, keep a dropped one unread, and are read with a renamed or
//! widened column's new name and type) and `RENAME TO`; `COMMENT ON TABLE` (the `comment`
//! table property, where Trino's Iceberg connector keeps it) and `COMMENT ON COLUMN` (the
//! field's doc). Renames, retypes and column comments are new schemas committed by SQE's own
//! commit (iceberg-rust 0.10 has no action for them), only while the schema is the one read.

use datafusion::execution::SessionState;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::planner::object_name_to_table_reference;
use datafusion::sql::sqlparser::ast::SqlOption;
use datafusion::sql::sqlparser::ast::{
    AlterColumnOperation, AlterTable, AlterTableOperation, ColumnDef, CommentObject, ObjectName,
    RenameTableNameKind, Statement,
};
use iceberg::spec::{FormatVersion, NestedField, Schema, SortOrder, Type, UnboundPartitionSpec};
use iceberg::table::Table;
use iceberg::transaction::{AddColumn, ApplyTransactionAction, Transaction};
use iceberg::{TableIdent, TableRequirement, TableUpdate};

use super::table_properties::{PropertyValues, partition_spec, sort_order};
use super::{Engine, StatementKind};
use crate::error::{Error, ErrorCode, ObjectKind, Result};

/// A planned ALTER TABLE.
#[derive(Debug, Clone)]
pub(super) struct TableChange {
    ident: TableIdent,
    /// `ALTER TABLE IF EXISTS`: a missing table is not an error.
    if_exists: bool,
    change: Change,
}

#[derive(Debug, Clone)]
enum Change {
    AddColumn {
        name: String,
        field_type: Type,
        if_not_exists: bool,
    },
    DropColumn {
        name: String,
        if_exists: bool,
    },
    RenameTo(TableIdent),
    /// `COMMENT ON TABLE … IS 'text'`; `None`: `IS NULL`.
    Comment(Option<String>),
    RenameColumn {
        from: String,
        to: String,
    },
    SetColumnType {
        name: String,
        field_type: Type,
    },
    /// `COMMENT ON COLUMN t.c IS 'text'`; `None`: `IS NULL`.
    ColumnComment {
        column: String,
        comment: Option<String>,
    },
    /// `SET PROPERTIES partitioning = ARRAY[…], format_version = 2`.
    SetProperties(PropertyChanges),
}

/// The Iceberg table property Trino's Iceberg connector keeps a table's comment in.
pub(crate) const COMMENT_PROPERTY: &str = "comment";

impl TableChange {
    /// The statement it was planned from.
    pub(super) fn kind(&self) -> StatementKind {
        match self.change {
            Change::Comment(_) | Change::ColumnComment { .. } => StatementKind::Comment,
            _ => StatementKind::AlterTable,
        }
    }
}

impl Engine {
    /// `statement` checked and resolved against `state`'s defaults if it is an ALTER TABLE or
    /// a COMMENT ON; nothing is changed yet.
    pub(super) async fn plan_table_change(
        &self,
        state: &SessionState,
        statement: &DFStatement,
    ) -> Result<Option<TableChange>> {
        let DFStatement::Statement(inner) = statement else {
            return Ok(None);
        };
        match inner.as_ref() {
            Statement::AlterTable(alter) => self.plan_alter_table(state, alter).await.map(Some),
            Statement::Comment {
                object_type,
                object_name,
                comment,
                if_exists,
            } => self
                .plan_comment(
                    state,
                    object_type,
                    object_name,
                    comment.as_ref(),
                    *if_exists,
                )
                .map(Some),
            _ => Ok(None),
        }
    }

    /// `alter` checked and resolved against `state`'s defaults.
    async fn plan_alter_table(
        &self,
        state: &SessionState,
        alter: &AlterTable,
    ) -> Result<TableChange> {
        let ident = self.table_ident(state, &table_reference(&alter.name)?)?;
        let [operation] = alter.operations.as_slice() else {
            return Err(Error::NotSupported(
                "ALTER TABLE with more than one change; send one at a time".into(),
            ));
        };
        let change = match operation {
            AlterTableOperation::AddColumn {
                if_not_exists,
                column_def,
                column_position: None,
                ..
            } => Change::AddColumn {
                name: column_def.name.value.to_lowercase(),
                field_type: self.column_type(state, column_def).await?,
                if_not_exists: *if_not_exists,
            },
            AlterTableOperation::DropColumn {
                column_names,
                if_exists,
                drop_behavior: None,
                ..
            } => match column_names.as_slice() {
                [name] => Change::DropColumn {
                    name: name.value.to_lowercase(),
                    if_exists: *if_exists,
                },
                _ => {
                    return Err(Error::NotSupported(
                        "ALTER TABLE DROP COLUMN of more than one column".into(),
                    ));
                }
            },
            AlterTableOperation::RenameTable {
                table_name: RenameTableNameKind::To(to) | RenameTableNameKind::As(to),
            } => {
                let to = self.table_ident(state, &table_reference(to)?)?;
                super::check_new_table_name(&to)?;
                Change::RenameTo(to)
            }
            AlterTableOperation::RenameColumn {
                old_column_name,
                new_column_name,
            } => Change::RenameColumn {
                from: old_column_name.value.to_lowercase(),
                to: new_column_name.value.to_lowercase(),
            },
            AlterTableOperation::AlterColumn {
                column_name,
                op:
                    AlterColumnOperation::SetDataType {
                        data_type,
                        using: None,
                        ..
                    },
            } => {
                let column = ColumnDef {
                    name: column_name.clone(),
                    data_type: data_type.clone(),
                    options: vec![],
                };
                Change::SetColumnType {
                    name: column_name.value.to_lowercase(),
                    field_type: self.column_type(state, &column).await?,
                }
            }
            AlterTableOperation::SetTblProperties { table_properties } => {
                Change::SetProperties(property_changes(table_properties)?)
            }
            other => {
                return Err(Error::NotSupported(format!(
                    "ALTER TABLE {other}: SQE alters tables by ADD COLUMN, DROP COLUMN, RENAME COLUMN, \
                     ALTER COLUMN … SET DATA TYPE, SET PROPERTIES and RENAME TO"
                )));
            }
        };
        Ok(TableChange {
            ident,
            if_exists: alter.if_exists,
            change,
        })
    }

    /// `COMMENT ON TABLE` or `COMMENT ON COLUMN`, checked and resolved.
    fn plan_comment(
        &self,
        state: &SessionState,
        object_type: &CommentObject,
        name: &ObjectName,
        comment: Option<&String>,
        if_exists: bool,
    ) -> Result<TableChange> {
        match object_type {
            CommentObject::Table => Ok(TableChange {
                ident: self.table_ident(state, &table_reference(name)?)?,
                if_exists,
                change: Change::Comment(comment.cloned()),
            }),
            CommentObject::Column => {
                let (column, table) = match name.0.split_last() {
                    Some((column, table)) if !table.is_empty() => (column, table),
                    _ => {
                        return Err(Error::invalid(
                            ErrorCode::SyntaxError,
                            format!("COMMENT ON COLUMN {name}: name the column as table.column"),
                        ));
                    }
                };
                let column = column
                    .as_ident()
                    .map(|ident| ident.value.to_lowercase())
                    .ok_or_else(|| Error::NotSupported(format!("COMMENT ON COLUMN {name}")))?;
                Ok(TableChange {
                    ident: self
                        .table_ident(state, &table_reference(&ObjectName(table.to_vec()))?)?,
                    if_exists,
                    change: Change::ColumnComment {
                        column,
                        comment: comment.cloned(),
                    },
                })
            }
            other => Err(Error::NotSupported(format!(
                "COMMENT ON {other}: SQE keeps comments on tables and columns"
            ))),
        }
    }

    /// The Iceberg type of a column definition, as CREATE TABLE would store it.
    async fn column_type(&self, state: &SessionState, column: &ColumnDef) -> Result<Type> {
        if !column.options.is_empty() {
            return Err(Error::NotSupported(format!(
                "column options in ALTER TABLE ADD COLUMN ({column})"
            )));
        }
        let mut create = crate::dialect::parse::parse(&format!(
            "CREATE TABLE sqe_added_column ({} {})",
            column.name, column.data_type
        ))?;
        // What CREATE TABLE takes off its column list (a `uuid` column's type) is taken here too.
        let properties = super::table_properties::take_table_properties(&mut create.statement)?;
        let plan = state.statement_to_plan(create.statement).await?;
        let arrow = properties.typed(plan.schema().as_arrow());
        let schema = sqe_iceberg::types::iceberg_schema_for(&arrow, true)?;
        schema
            .as_struct()
            .fields()
            .first()
            .map(|f| (*f.field_type).clone())
            .ok_or_else(|| Error::Internal("a column definition planned no column".into()))
    }

    /// Applies the change: one metadata commit (or a catalog rename).
    pub(super) async fn alter_table(&self, change: TableChange) -> Result<()> {
        let TableChange {
            ident,
            if_exists,
            change,
        } = change;
        let catalog = self.catalog();
        if !(catalog.namespace_exists(ident.namespace()).await?
            && catalog.table_exists(&ident).await?)
        {
            return if if_exists {
                Ok(())
            } else {
                Err(Error::not_found(ObjectKind::Table, ident.to_string()))
            };
        }
        let table = catalog.load_table(&ident).await?;
        let schema = table.metadata().current_schema();
        let transaction = Transaction::new(&table);
        let transaction = match change {
            Change::AddColumn {
                name,
                field_type,
                if_not_exists,
            } => {
                if schema.field_by_name(&name).is_some() {
                    return if if_not_exists {
                        Ok(())
                    } else {
                        Err(Error::invalid(
                            ErrorCode::ColumnAlreadyExists,
                            format!("Column '{name}' already exists"),
                        ))
                    };
                }
                transaction
                    .update_schema()
                    .add_column(AddColumn::optional(&name, field_type))
                    .apply(transaction)?
            }
            Change::DropColumn { name, if_exists } => {
                if schema.field_by_name(&name).is_none() {
                    return if if_exists {
                        Ok(())
                    } else {
                        Err(Error::not_found(ObjectKind::Column, name))
                    };
                }
                if schema.as_struct().fields().len() == 1 {
                    return Err(Error::NotSupported(format!(
                        "dropping '{name}', the only column of {ident}"
                    )));
                }
                let partitioned = table
                    .metadata()
                    .default_partition_spec()
                    .fields()
                    .iter()
                    .any(|f| schema.name_by_field_id(f.source_id) == Some(name.as_str()));
                if partitioned {
                    return Err(Error::NotSupported(format!(
                        "dropping partition column '{name}' of {ident}"
                    )));
                }
                transaction
                    .update_schema()
                    .delete_column(&name)
                    .apply(transaction)?
            }
            Change::Comment(comment) => {
                let action = transaction.update_table_properties();
                let action = match comment {
                    Some(text) => action.set(COMMENT_PROPERTY.to_string(), text),
                    None => action.remove(COMMENT_PROPERTY.to_string()),
                };
                action.apply(transaction)?
            }
            Change::RenameColumn { from, to } => {
                if schema.as_struct().field_by_name(&to).is_some() {
                    return Err(Error::invalid(
                        ErrorCode::ColumnAlreadyExists,
                        format!("Column '{to}' already exists"),
                    ));
                }
                let evolved = evolve_column(schema, &from, |field| field.name = to)?;
                return self.commit_schema(&table, evolved).await;
            }
            Change::SetColumnType { name, field_type } => {
                let evolved = evolve_column(schema, &name, |field| {
                    *field.field_type = field_type.clone()
                })?;
                let before = schema
                    .as_struct()
                    .field_by_name(&name)
                    .map(|f| (*f.field_type).clone());
                if before.as_ref() == Some(&field_type) {
                    return Ok(());
                }
                if !before.as_ref().is_some_and(|old| widens(old, &field_type)) {
                    return Err(Error::NotSupported(format!(
                        "Cannot change type of column '{name}' from {} to {field_type}: Iceberg widens \
                         int to long, float to double and decimal(p, s) to decimal(p', s) with p' > p",
                        before.map_or_else(String::new, |t| t.to_string())
                    )));
                }
                return self.commit_schema(&table, evolved).await;
            }
            Change::SetProperties(changes) => {
                return self.set_properties(&table, changes).await;
            }
            Change::ColumnComment { column, comment } => {
                let evolved = evolve_column(schema, &column, |field| field.doc = comment)?;
                return self.commit_schema(&table, evolved).await;
            }
            Change::RenameTo(to) => {
                if catalog.table_exists(&to).await? {
                    return Err(Error::already_exists(ObjectKind::Table, to.to_string()));
                }
                catalog.rename_table(&ident, &to).await?;
                self.cache.invalidate_table(&to);
                self.cache.invalidate_table(&ident);
                return Ok(());
            }
        };
        transaction.commit(catalog.as_ref()).await?;
        self.cache.invalidate_table(&ident);
        Ok(())
    }
}

impl Engine {
    /// Makes `schema` the table's current schema, if the one it was derived from still is.
    async fn commit_schema(&self, table: &Table, schema: Schema) -> Result<()> {
        let requirements = vec![TableRequirement::CurrentSchemaIdMatch {
            current_schema_id: table.metadata().current_schema_id(),
        }];
        let updates = vec![
            TableUpdate::AddSchema { schema },
            TableUpdate::SetCurrentSchema { schema_id: -1 },
        ];
        self.commit_metadata(table, requirements, updates, "schema")
            .await
    }

    /// Applies `updates` to the table's metadata if it is still the table read and every
    /// requirement holds; `what` names the change in a conflict's message.
    async fn commit_metadata(
        &self,
        table: &Table,
        mut requirements: Vec<TableRequirement>,
        updates: Vec<TableUpdate>,
        what: &str,
    ) -> Result<()> {
        requirements.insert(
            0,
            TableRequirement::UuidMatch {
                uuid: table.metadata().uuid(),
            },
        );
        let committed = self
            .committer
            .commit_updates(table.identifier(), requirements, updates)
            .await;
        self.cache.invalidate_table(table.identifier());
        committed.map_err(|e| match e.kind() {
            iceberg::ErrorKind::CatalogCommitConflicts => Error::invalid(
                ErrorCode::IcebergCommitError,
                format!(
                    "Failed to commit the {what} of {}: {e}; run the statement again",
                    table.identifier()
                ),
            ),
            _ => Error::from(e),
        })
    }
}

impl Engine {
    /// A new default partition spec and sort order (files written before keep theirs) and a
    /// format upgrade, in one commit.
    async fn set_properties(&self, table: &Table, changes: PropertyChanges) -> Result<()> {
        let metadata = table.metadata();
        let mut requirements = Vec::new();
        let mut updates = Vec::new();
        if let Some(version) = changes.format_version {
            let current = metadata.format_version();
            match (current, version) {
                (FormatVersion::V1, 2) => updates.push(TableUpdate::UpgradeFormatVersion {
                    format_version: FormatVersion::V2,
                }),
                (FormatVersion::V1, 1) | (FormatVersion::V2, 2) => {}
                _ => {
                    return Err(Error::NotSupported(format!(
                        "format_version = {version} on a format {} table: SQE upgrades format 1 to 2",
                        current as u8
                    )));
                }
            }
        }
        if let Some(fields) = changes.partitioning {
            let spec = partition_spec(metadata.current_schema(), &fields)?
                .unwrap_or_else(|| UnboundPartitionSpec::builder().build());
            requirements.push(TableRequirement::DefaultSpecIdMatch {
                default_spec_id: metadata.default_partition_spec_id(),
            });
            requirements.push(TableRequirement::CurrentSchemaIdMatch {
                current_schema_id: metadata.current_schema_id(),
            });
            updates.push(TableUpdate::AddSpec { spec });
            updates.push(TableUpdate::SetDefaultSpec { spec_id: -1 });
        }
        if let Some(items) = changes.sorted_by {
            let order = sort_order(metadata.current_schema(), &items)?
                .unwrap_or_else(SortOrder::unsorted_order);
            requirements.push(TableRequirement::DefaultSortOrderIdMatch {
                default_sort_order_id: metadata.default_sort_order().order_id,
            });
            if !requirements
                .iter()
                .any(|r| matches!(r, TableRequirement::CurrentSchemaIdMatch { .. }))
            {
                requirements.push(TableRequirement::CurrentSchemaIdMatch {
                    current_schema_id: metadata.current_schema_id(),
                });
            }
            updates.push(TableUpdate::AddSortOrder { sort_order: order });
            updates.push(TableUpdate::SetDefaultSortOrder { sort_order_id: -1 });
        }
        if updates.is_empty() {
            return Ok(());
        }
        self.commit_metadata(table, requirements, updates, "properties")
            .await
    }
}

/// What `SET PROPERTIES` changes: of the properties CREATE TABLE takes, those a table can
/// change.
#[derive(Debug, Clone, Default)]
pub(super) struct PropertyChanges {
    partitioning: Option<Vec<String>>,
    sorted_by: Option<Vec<String>>,
    format_version: Option<u8>,
}

fn property_changes(options: &[SqlOption]) -> Result<PropertyChanges> {
    let given = PropertyValues::read(options)?;
    for (name, set) in [
        ("location", given.location.is_some()),
        ("format", given.format.is_some()),
    ] {
        if set {
            return Err(Error::NotSupported(format!(
                "changing the table property '{name}'"
            )));
        }
    }
    Ok(PropertyChanges {
        partitioning: given.partitioning,
        sorted_by: given.sorted_by,
        format_version: given.format_version,
    })
}

/// `schema` with its top-level column `name` changed by `change` (same field id).
fn evolve_column(
    schema: &Schema,
    name: &str,
    change: impl FnOnce(&mut NestedField),
) -> Result<Schema> {
    if schema.as_struct().field_by_name(name).is_none() {
        return Err(Error::not_found(ObjectKind::Column, name.to_string()));
    }
    let mut change = Some(change);
    Ok(sqe_iceberg::types::with_fields_changed(schema, |field| {
        if field.name == name
            && let Some(change) = change.take()
        {
            change(field);
        }
    })?)
}

/// Iceberg's type promotions.
fn widens(from: &Type, to: &Type) -> bool {
    use iceberg::spec::PrimitiveType as P;
    match (from, to) {
        (Type::Primitive(from), Type::Primitive(to)) => {
            matches!((from, to), (P::Int, P::Long) | (P::Float, P::Double))
                || matches!(
                    (from, to),
                    (P::Decimal { precision: p, scale: s }, P::Decimal { precision: p2, scale: s2 })
                        if s == s2 && p2 > p
                )
        }
        _ => false,
    }
}

pub(super) fn table_reference(name: &ObjectName) -> Result<datafusion::sql::TableReference> {
    Ok(object_name_to_table_reference(name.clone(), true)?)
}
