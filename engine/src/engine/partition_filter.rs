//! A condition on a table's identity partition columns, evaluated on data files' partition
//! values: which partitions optimize's `WHERE` rewrites, and which files appended by another
//! writer a row-level change's condition might have matched (Trino's conflict-detection
//! filter: the part of the statement's condition its partitions enforce).

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, DFSchema};
use datafusion::execution::SessionState;
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::physical_expr::PhysicalExpr;
use iceberg::spec::{DataFile, TableMetadata, Transform};
use iceberg::table::Table;

use crate::error::{Error, ErrorCode, Result};

/// See the module documentation.
pub(crate) struct PartitionFilter {
    /// The condition's columns, with their field ids.
    columns: Vec<(String, i32)>,
    schema: SchemaRef,
    condition: Arc<dyn PhysicalExpr>,
}

/// The field id of column `name` if it is an identity partition column of every partition spec
/// the table has had: only then do every file's partition values say its value.
fn identity_everywhere(metadata: &TableMetadata, name: &str) -> Option<i32> {
    let id = metadata.current_schema().field_by_name(name)?.id;
    metadata
        .partition_specs_iter()
        .all(|spec| {
            spec.fields()
                .iter()
                .any(|f| f.source_id == id && f.transform == Transform::Identity)
        })
        .then_some(id)
}

impl PartitionFilter {
    /// optimize's `WHERE` `text`, read against `table`'s columns; a column that is not an
    /// identity partition column of every partition spec of the table is `NOT_SUPPORTED`.
    pub(crate) fn from_text(table: &Table, state: &SessionState, text: &str) -> Result<Self> {
        let metadata = table.metadata();
        let arrow = sqe_iceberg::types::table_arrow_schema(metadata.current_schema())?;
        let condition = state.create_logical_expr(text, &DFSchema::try_from(arrow)?)?;
        for column in condition.column_refs() {
            if identity_everywhere(metadata, column.name()).is_none() {
                return Err(Error::NotSupported(format!(
                    "optimize WHERE on {}: optimize rewrites whole partitions, so its \
                     condition may use only identity partition columns (of every partition \
                     spec of {})",
                    column.name(),
                    table.identifier()
                )));
            }
        }
        Self::from_expr(table, state, condition)
    }

    /// The conjuncts of `predicate` (over `table`'s columns) that use only identity partition
    /// columns, as a filter; `None` when there are none.
    pub(crate) fn enforced_part(
        table: &Table,
        state: &SessionState,
        predicate: &Expr,
    ) -> Result<Option<Self>> {
        let metadata = table.metadata();
        let enforced: Vec<Expr> = split_conjunction(predicate)
            .into_iter()
            .filter(|conjunct| {
                let columns = conjunct.column_refs();
                !columns.is_empty()
                    && columns
                        .iter()
                        .all(|c| identity_everywhere(metadata, c.name()).is_some())
            })
            .cloned()
            .collect();
        match conjunction(enforced) {
            Some(condition) => Ok(Some(Self::from_expr(table, state, condition)?)),
            None => Ok(None),
        }
    }

    /// `condition`, whose columns are all identity partition columns.
    fn from_expr(table: &Table, state: &SessionState, condition: Expr) -> Result<Self> {
        let metadata = table.metadata();
        let arrow = sqe_iceberg::types::table_arrow_schema(metadata.current_schema())?;
        let mut columns = Vec::new();
        for column in condition.column_refs() {
            let name = column.name().to_string();
            let id = identity_everywhere(metadata, &name)
                .ok_or_else(|| Error::Internal(format!("{name} is not a partition column")))?;
            if !columns.iter().any(|(seen, _)| *seen == name) {
                columns.push((name, id));
            }
        }
        let fields: Vec<Field> = columns
            .iter()
            .map(|(name, _)| arrow.field_with_name(name).cloned())
            .collect::<std::result::Result<_, _>>()?;
        let schema: SchemaRef = Arc::new(Schema::new(fields));
        // Read against the partition columns alone, unqualified (a statement's condition
        // names them through its table or alias).
        let unqualified = condition
            .transform(|e| match e {
                Expr::Column(column) => Ok(Transformed::yes(Expr::Column(Column::from_name(
                    column.name,
                )))),
                other => Ok(Transformed::no(other)),
            })?
            .data;
        let condition =
            state.create_physical_expr(unqualified, &DFSchema::try_from(Arc::clone(&schema))?)?;
        Ok(Self {
            columns,
            schema,
            condition,
        })
    }

    /// The paths of the `live` files (with their specs) whose partition the condition holds
    /// for.
    pub(crate) fn selected_files(
        &self,
        table: &Table,
        live: &[(i32, DataFile)],
    ) -> Result<HashSet<String>> {
        let metadata = table.metadata();
        let mut rows = Vec::with_capacity(live.len());
        for (spec_id, file) in live {
            let spec = metadata
                .partition_spec_by_id(*spec_id)
                .ok_or_else(|| Error::Internal(format!("partition spec {spec_id} is missing")))?;
            let partition_type = spec.partition_type(metadata.current_schema())?;
            let mut row = serde_json::Map::new();
            for (name, id) in &self.columns {
                let index = spec
                    .fields()
                    .iter()
                    .position(|f| f.source_id == *id && f.transform == Transform::Identity)
                    .ok_or_else(|| Error::Internal(format!("{name} is not a partition column")))?;
                let value = match (
                    file.partition().iter().nth(index),
                    partition_type.fields().get(index),
                ) {
                    (Some(Some(literal)), Some(field)) => {
                        literal.clone().try_into_json(&field.field_type)?
                    }
                    _ => serde_json::Value::Null,
                };
                row.insert(name.clone(), value);
            }
            rows.push(serde_json::Value::Object(row));
        }
        let mut decoder =
            arrow::json::ReaderBuilder::new(Arc::clone(&self.schema)).build_decoder()?;
        decoder.serialize(&rows)?;
        let batch = match decoder.flush()? {
            Some(batch) => batch,
            None => return Ok(HashSet::new()),
        };
        let holds = self
            .condition
            .evaluate(&batch)?
            .into_array(batch.num_rows())?;
        let holds = holds.as_boolean_opt().ok_or_else(|| {
            Error::invalid(
                ErrorCode::TypeMismatch,
                "a partition condition is not boolean",
            )
        })?;
        Ok(live
            .iter()
            .enumerate()
            .filter(|(row, _)| holds.is_valid(*row) && holds.value(*row))
            .map(|(_, (_, file))| file.file_path().to_string())
            .collect())
    }

    /// Whether `file` (written with spec `spec_id`) may hold rows the condition holds for.
    pub(crate) fn might_match(&self, table: &Table, spec_id: i32, file: &DataFile) -> Result<bool> {
        let selected = self.selected_files(table, &[(spec_id, file.clone())])?;
        Ok(selected.contains(file.file_path()))
    }
}
