//! `ALTER TABLE`: `ADD COLUMN [IF NOT EXISTS]`, `DROP COLUMN [IF EXISTS]` (Iceberg schema
//! evolution by field id: files written before read an added column as NULL and keep a dropped
//! one unread) and `RENAME TO`; `COMMENT ON TABLE` (the `comment` table property, where Trino's
//! Iceberg connector keeps it). The rest of Trino's ALTER TABLE (renaming or retyping a column,
//! properties) and column comments are refused: iceberg-rust 0.10 has no public action for them.

use datafusion::execution::SessionState;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::planner::object_name_to_table_reference;
use datafusion::sql::sqlparser::ast::{
    AlterTable, AlterTableOperation, ColumnDef, CommentObject, ObjectName, RenameTableNameKind,
    Statement,
};
use iceberg::TableIdent;
use iceberg::spec::Type;
use iceberg::transaction::{AddColumn, ApplyTransactionAction, Transaction};

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
}

/// The Iceberg table property Trino's Iceberg connector keeps a table's comment in.
pub(crate) const COMMENT_PROPERTY: &str = "comment";

impl TableChange {
    /// The statement it was planned from.
    pub(super) fn kind(&self) -> StatementKind {
        match self.change {
            Change::Comment(_) => StatementKind::Comment,
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
            other => {
                return Err(Error::NotSupported(format!(
                    "ALTER TABLE {other}: SQE alters tables by ADD COLUMN, DROP COLUMN and RENAME TO"
                )));
            }
        };
        Ok(TableChange {
            ident,
            if_exists: alter.if_exists,
            change,
        })
    }

    /// `COMMENT ON TABLE`, checked and resolved; column comments are refused.
    fn plan_comment(
        &self,
        state: &SessionState,
        object_type: &CommentObject,
        name: &ObjectName,
        comment: Option<&String>,
        if_exists: bool,
    ) -> Result<TableChange> {
        if *object_type != CommentObject::Table {
            return Err(Error::NotSupported(format!(
                "COMMENT ON {object_type}: SQE keeps comments on tables only"
            )));
        }
        Ok(TableChange {
            ident: self.table_ident(state, &table_reference(name)?)?,
            if_exists,
            change: Change::Comment(comment.cloned()),
        })
    }

    /// The Iceberg type of a column definition, as CREATE TABLE would store it.
    async fn column_type(&self, state: &SessionState, column: &ColumnDef) -> Result<Type> {
        if !column.options.is_empty() {
            return Err(Error::NotSupported(format!(
                "column options in ALTER TABLE ADD COLUMN ({column})"
            )));
        }
        let create = crate::dialect::parse::parse(&format!(
            "CREATE TABLE sqe_added_column ({} {})",
            column.name, column.data_type
        ))?;
        let plan = state.statement_to_plan(create.statement).await?;
        let arrow = plan.schema().as_arrow().clone();
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

fn table_reference(name: &ObjectName) -> Result<datafusion::sql::TableReference> {
    Ok(object_name_to_table_reference(name.clone(), true)?)
}
