//! Trino's `json_table` as a scalar function whose answer, for each input row, is the list of
//! the rows the table makes of it (structs of its columns); the dialect unnests the list beside
//! the row, as Trino joins `json_table` laterally. The call is
//! `sqe_json_table(input, spec, arguments…)`: `spec` is the table's definition as JSON
//! ([`JsonTableSpec`]: paths, columns, plan, `ON ERROR`), and it says where among the
//! arguments each column's typed NULL (its type), each `DEFAULT` value and the `PASSING`
//! variables' (name, format, value) triples are.
//!
//! As in Trino: the root path's items are the rows, each column is `json_value` (or, written
//! `FORMAT JSON`, `json_query`) of its path on the row's item, `FOR ORDINALITY` numbers a
//! path's items from 1, and a `NESTED` path's rows join its parent's row, `OUTER` (the
//! default: a parent row without nested rows is kept) or `INNER`, sibling paths' rows making
//! a `UNION` (the default: each sibling's rows with the others' columns NULL) or a `CROSS`
//! product. A NULL input has no rows. Text that is not JSON and the failures of the root and
//! nested paths follow the table's `ON ERROR` (`EMPTY`, the default: no rows for that input;
//! `ERROR`); a column's own failures follow its `ON ERROR`, NULL unless the table's is `ERROR`.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, ListArray, StructArray, new_empty_array};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use serde::{Deserialize, Serialize};

use crate::args::{arrays, result};
use crate::error::JsonErrorKind;
use crate::json_items::{Encoding, Format, item_at, json_item_readable};
use crate::json_path::{Item, JsonPath};
use crate::sql_json::{
    Failure, Passing, bound_of_field, bounded_answer, converted, empty_behaviour, is_returnable,
    read_path, wrapped,
};

/// The function the dialect calls for `json_table(…)`.
pub const JSON_TABLE: &str = "sqe_json_table";

/// A `json_table`'s definition, as the dialect writes it into the call's second argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonTableSpec {
    /// The input's format: `JSON`, or `JSON UTF16` for a varbinary in that encoding.
    pub input_format: String,
    pub root: JsonTablePath,
    /// `ERROR ON ERROR` (else `EMPTY ON ERROR`, Trino's default).
    pub error_on_error: bool,
    /// Written for `LEFT JOIN json_table(…) ON TRUE`: an input without rows has one row of
    /// NULLs.
    pub outer: bool,
    /// Where the variables' (name, format, value) triples start among the arguments.
    pub passing: usize,
}

/// A path of the table (the root, or a `NESTED PATH`) and the columns of its rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonTablePath {
    pub path: String,
    /// Its name (`AS name`), as Trino names it: unquoted upper-cased.
    pub name: Option<String>,
    /// In declaration order, nested paths among them.
    pub columns: Vec<JsonTableColumn>,
    /// `INNER` with its nested paths: a row none of them has rows for is dropped.
    pub inner: bool,
    /// How the rows of the nested paths combine; `None` without nested paths.
    pub siblings: Option<SiblingPlan>,
}

/// How sibling nested paths' rows combine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SiblingPlan {
    /// The rows of the path's n-th `NESTED` column.
    Nested(usize),
    Union(Vec<SiblingPlan>),
    Cross(Vec<SiblingPlan>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum JsonTableColumn {
    Ordinality {
        name: String,
    },
    /// A column read as `json_value` reads: `returned` is the argument whose type it has.
    Value {
        name: String,
        path: String,
        returned: usize,
        on_empty: Behaviour,
        /// `None`: NULL, or ERROR under the table's `ERROR ON ERROR`.
        on_error: Option<Behaviour>,
    },
    /// A column read as `json_query` reads (`FORMAT JSON`).
    Query {
        name: String,
        path: String,
        returned: usize,
        /// A varbinary column's encoding.
        encoding: Option<String>,
        /// `WITHOUT`, `CONDITIONAL` or `UNCONDITIONAL`.
        wrapper: String,
        omit_quotes: bool,
        /// `NULL`, `ERROR`, `EMPTY ARRAY` or `EMPTY OBJECT`.
        on_empty: String,
        on_error: Option<String>,
    },
    Nested(JsonTablePath),
}

/// A value column's `ON EMPTY` or `ON ERROR`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Behaviour {
    Null,
    Error,
    /// The value of the argument at this index.
    Default(usize),
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct JsonTableFunction {
    signature: Signature,
}

impl JsonTableFunction {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// A path ready to evaluate: its columns with their places in the output row.
struct Node {
    path: JsonPath,
    columns: Vec<(usize, Column)>,
    nested: Vec<Node>,
    inner: bool,
    siblings: Option<SiblingPlan>,
}

enum Column {
    Ordinality,
    Value {
        path: JsonPath,
        target: DataType,
        bound: Option<(usize, bool)>,
        on_empty: Behaviour,
        on_error: Option<Behaviour>,
    },
    Query {
        path: JsonPath,
        binary: Option<Encoding>,
        bound: Option<(usize, bool)>,
        wrapper: String,
        omit_quotes: bool,
        on_empty: String,
        on_error: Option<String>,
    },
}

/// The spec's paths read (a path that does not read, or reads a variable `PASSING` does not
/// name, is INVALID_PATH) and the output row's fields.
fn compile(
    spec: &JsonTableSpec,
    arg_fields: &[FieldRef],
    passed: &[&str],
) -> Result<(Node, Vec<FieldRef>)> {
    let mut fields = Vec::new();
    let node = compile_path(&spec.root, arg_fields, passed, &mut fields)?;
    Ok((node, fields))
}

fn compile_path(
    path: &JsonTablePath,
    arg_fields: &[FieldRef],
    passed: &[&str],
    fields: &mut Vec<FieldRef>,
) -> Result<Node> {
    let typed = |at: usize| -> Result<&FieldRef> {
        arg_fields
            .get(at)
            .ok_or_else(|| DataFusionError::Internal(format!("json_table has no argument {at}")))
    };
    let mut node = Node {
        path: read_path(&path.path, passed)?,
        columns: Vec::new(),
        nested: Vec::new(),
        inner: path.inner,
        siblings: path.siblings.clone(),
    };
    for column in &path.columns {
        let at = fields.len();
        let (field, column) = match column {
            JsonTableColumn::Nested(nested) => {
                node.nested
                    .push(compile_path(nested, arg_fields, passed, fields)?);
                continue;
            }
            JsonTableColumn::Ordinality { name } => (
                Arc::new(Field::new(name, DataType::Int64, true)),
                Column::Ordinality,
            ),
            JsonTableColumn::Value {
                name,
                path,
                returned,
                on_empty,
                on_error,
            } => {
                let typed = &text_as_utf8(typed(*returned)?);
                if !is_returnable(typed.data_type()) {
                    return Err(DataFusionError::NotImplemented(format!(
                        "json_table column {name} of type {}",
                        crate::types::trino_type_name(typed.data_type())
                    )));
                }
                (
                    named(typed, name),
                    Column::Value {
                        path: read_path(path, passed)?,
                        target: typed.data_type().clone(),
                        bound: bound_of_field(typed),
                        on_empty: on_empty.clone(),
                        on_error: on_error.clone(),
                    },
                )
            }
            JsonTableColumn::Query {
                name,
                path,
                returned,
                encoding,
                wrapper,
                omit_quotes,
                on_empty,
                on_error,
            } => {
                let typed = &text_as_utf8(typed(*returned)?);
                let binary = match (typed.data_type(), encoding.as_deref()) {
                    (DataType::Binary, encoding) => {
                        Some(Encoding::named(encoding.unwrap_or("UTF8")).ok_or_else(|| {
                            DataFusionError::NotImplemented(format!("ENCODING {encoding:?}"))
                        })?)
                    }
                    (DataType::Utf8, None) => None,
                    (other, _) => {
                        return Err(DataFusionError::NotImplemented(format!(
                            "json_table column {name} of type {} FORMAT JSON",
                            crate::types::trino_type_name(other)
                        )));
                    }
                };
                (
                    named(typed, name),
                    Column::Query {
                        path: read_path(path, passed)?,
                        binary,
                        bound: bound_of_field(typed),
                        wrapper: wrapper.clone(),
                        omit_quotes: *omit_quotes,
                        on_empty: on_empty.clone(),
                        on_error: on_error.clone(),
                    },
                )
            }
        };
        fields.push(field);
        node.columns.push((at, column));
    }
    Ok(node)
}

/// A text type's field as `Utf8`, the type the columns are built in.
fn text_as_utf8(field: &FieldRef) -> FieldRef {
    match field.data_type() {
        DataType::Utf8View | DataType::LargeUtf8 => {
            Arc::new(field.as_ref().clone().with_data_type(DataType::Utf8))
        }
        _ => Arc::clone(field),
    }
}

/// `typed`'s type (and its metadata: `varchar(n)`) under the column's name.
fn named(typed: &FieldRef, name: &str) -> FieldRef {
    Arc::new(
        Field::new(name, typed.data_type().clone(), true).with_metadata(typed.metadata().clone()),
    )
}

/// The spec of a call of `arguments` arguments, from its constant second argument; one whose
/// variables are not whole (name, format, value) triples is refused.
fn spec_of(text: Option<&str>, arguments: usize) -> Result<JsonTableSpec> {
    let Some(text) = text else {
        return exec_err!("json_table's definition must be a constant");
    };
    let spec: JsonTableSpec = serde_json::from_str(text)
        .map_err(|e| DataFusionError::Internal(format!("json_table's definition: {e}")))?;
    if spec.passing < 2 || spec.passing > arguments || !(arguments - spec.passing).is_multiple_of(3)
    {
        return exec_err!("json_table's definition does not fit its {arguments} arguments");
    }
    Ok(spec)
}

fn list_type(fields: Vec<FieldRef>) -> DataType {
    DataType::List(Arc::new(Field::new_list_field(
        DataType::Struct(Fields::from(fields)),
        true,
    )))
}

/// Why a row of the input stops: a failure the table's `ON ERROR` decides about, or an error of
/// the query (a column's `ERROR ON ERROR`).
enum Stop {
    Table(Failure),
    Query(DataFusionError),
}

/// A row of the table: each column's value, `None` for NULL.
type Row = Vec<Option<ScalarValue>>;

/// What the columns of one input row read besides their items.
struct Inputs<'a> {
    variables: Vec<(String, Vec<Item>)>,
    arguments: &'a [ArrayRef],
    row: usize,
    error_on_error: bool,
    width: usize,
}

impl Inputs<'_> {
    fn argument(&self, at: usize) -> Result<ScalarValue, Stop> {
        match self.arguments.get(at) {
            Some(array) => ScalarValue::try_from_array(array, self.row).map_err(Stop::Query),
            None => Err(Stop::Query(DataFusionError::Internal(format!(
                "json_table has no argument {at}"
            )))),
        }
    }
}

fn path_failure(message: String) -> Failure {
    Failure::new(
        JsonErrorKind::PathEvaluation,
        format!("path evaluation failed: {message}"),
    )
}

/// The rows of `node` for the item its parent's row (or the input) gives it.
fn node_rows(node: &Node, context: &Item, inputs: &Inputs<'_>) -> Result<Vec<Row>, Stop> {
    let items = node
        .path
        .evaluate(context, &inputs.variables)
        .map_err(|e| Stop::Table(path_failure(e.0)))?;
    let mut rows = Vec::new();
    for (ordinal, item) in items.iter().enumerate() {
        let mut base: Row = vec![None; inputs.width];
        for (at, column) in &node.columns {
            base[*at] = Some(column_value(column, item, ordinal, inputs)?);
        }
        let Some(plan) = &node.siblings else {
            rows.push(base);
            continue;
        };
        let below = plan_rows(plan, node, item, inputs)?;
        if below.is_empty() {
            if !node.inner {
                rows.push(base);
            }
            continue;
        }
        rows.extend(below.into_iter().map(|row| merged(&base, row)));
    }
    Ok(rows)
}

fn plan_rows(
    plan: &SiblingPlan,
    node: &Node,
    item: &Item,
    inputs: &Inputs<'_>,
) -> Result<Vec<Row>, Stop> {
    match plan {
        SiblingPlan::Nested(k) => match node.nested.get(*k) {
            Some(nested) => node_rows(nested, item, inputs),
            None => Err(Stop::Query(DataFusionError::Internal(format!(
                "json_table's plan names nested path {k}"
            )))),
        },
        SiblingPlan::Union(parts) => {
            let mut rows = Vec::new();
            for part in parts {
                rows.extend(plan_rows(part, node, item, inputs)?);
            }
            Ok(rows)
        }
        SiblingPlan::Cross(parts) => {
            let mut rows: Vec<Row> = vec![vec![None; inputs.width]];
            for part in parts {
                let next = plan_rows(part, node, item, inputs)?;
                rows = rows
                    .iter()
                    .flat_map(|row| next.iter().map(|other| merged(row, other.clone())))
                    .collect();
            }
            Ok(rows)
        }
    }
}

/// `other`'s values over `base`'s (each row sets only its own paths' columns).
fn merged(base: &Row, other: Row) -> Row {
    base.iter()
        .zip(other)
        .map(|(a, b)| b.or_else(|| a.clone()))
        .collect()
}

fn column_value(
    column: &Column,
    item: &Item,
    ordinal: usize,
    inputs: &Inputs<'_>,
) -> Result<ScalarValue, Stop> {
    match column {
        Column::Ordinality => Ok(ScalarValue::Int64(Some(ordinal as i64 + 1))),
        Column::Value {
            path,
            target,
            bound,
            on_empty,
            on_error,
        } => {
            let null = ScalarValue::try_from(target).map_err(Stop::Query)?;
            let result_error = |message: &str| Failure::new(JsonErrorKind::ValueResult, message);
            let behave = |behaviour: &Behaviour, failure: Failure| match behaviour {
                Behaviour::Null => Ok(null.clone()),
                Behaviour::Error => Err(Stop::Query(failure.error())),
                // The dialect casts a default to the column's type; text may be another
                // Arrow text type than the column's.
                Behaviour::Default(at) => inputs
                    .argument(*at)
                    .and_then(|value| value.cast_to(target).map_err(Stop::Query)),
            };
            let answer = match path.evaluate(item, &inputs.variables) {
                Err(e) => Err(path_failure(e.0)),
                Ok(items) => match items.as_slice() {
                    [] => return behave(on_empty, result_error("JSON path found no items")),
                    [one] => converted(one, target)
                        .and_then(|value| {
                            bounded_answer(value, *bound, matches!(one, Item::Text(_)))
                        })
                        .map_err(|message| result_error(&message)),
                    _ => Err(result_error("JSON path found multiple items")),
                },
            };
            match answer {
                Ok(value) => Ok(value),
                Err(failure) => {
                    let otherwise = if inputs.error_on_error {
                        Behaviour::Error
                    } else {
                        Behaviour::Null
                    };
                    behave(on_error.as_ref().unwrap_or(&otherwise), failure)
                }
            }
        }
        Column::Query {
            path,
            binary,
            bound,
            wrapper,
            omit_quotes,
            on_empty,
            on_error,
        } => {
            let output_error =
                |message: String| Failure::new(JsonErrorKind::OutputConversion, message);
            let text = match path.evaluate(item, &inputs.variables) {
                Err(e) => Err(path_failure(e.0)),
                Ok(items) if items.is_empty() => match empty_behaviour(on_empty) {
                    Some(Ok(value)) => Ok(value),
                    Some(Err(())) => {
                        return Err(Stop::Query(
                            output_error("JSON path found no items".into()).error(),
                        ));
                    }
                    None => Ok(None),
                },
                Ok(items) => wrapped(items, wrapper, *omit_quotes).map_err(output_error),
            };
            let text = match text {
                Ok(text) => text,
                Err(failure) => {
                    let otherwise = if inputs.error_on_error {
                        "ERROR"
                    } else {
                        "NULL"
                    };
                    match empty_behaviour(on_error.as_deref().unwrap_or(otherwise)) {
                        Some(Ok(value)) => value,
                        Some(Err(())) => return Err(Stop::Query(failure.error())),
                        None => None,
                    }
                }
            };
            Ok(match (binary, text) {
                (Some(encoding), text) => {
                    ScalarValue::Binary(text.map(|text| encoding.encoded(&text)))
                }
                (None, Some(text)) => ScalarValue::Utf8(Some(match bound {
                    Some((n, char)) => {
                        crate::bounded::bounded_text(&text, *n, *char, true).unwrap_or(text)
                    }
                    None => text,
                })),
                (None, None) => ScalarValue::Utf8(None),
            })
        }
    }
}

/// The constant text argument at `i` of a planned call.
fn constant_text<'a>(args: &ReturnFieldArgs<'a>, i: usize) -> Option<&'a str> {
    args.scalar_arguments
        .get(i)
        .copied()
        .flatten()
        .and_then(|value| value.try_as_str().flatten())
}

impl ScalarUDFImpl for JsonTableFunction {
    fn name(&self) -> &str {
        JSON_TABLE
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        // The dialect casts each default to its column's type and writes the typed NULLs.
        Ok(arg_types.to_vec())
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        exec_err!("json_table's type follows from its definition")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let spec = spec_of(constant_text(&args, 1), args.arg_fields.len())?;
        let variables = (spec.passing..args.arg_fields.len()).step_by(3);
        let passed: Vec<&str> = variables
            .clone()
            .filter_map(|at| constant_text(&args, at))
            .collect();
        for at in variables {
            let format = constant_text(&args, at + 1).unwrap_or("SQL");
            let value = &args.arg_fields[at + 2];
            if !json_item_readable(value, format) {
                return Err(DataFusionError::NotImplemented(format!(
                    "json_table … PASSING a value of type {}",
                    crate::types::trino_type_name(value.data_type())
                )));
            }
        }
        let input = args
            .arg_fields
            .first()
            .ok_or_else(|| DataFusionError::Internal("json_table has no input".into()))?;
        if !json_item_readable(input, &spec.input_format) {
            return Err(DataFusionError::NotImplemented(format!(
                "json_table of a value of type {}",
                crate::types::trino_type_name(input.data_type())
            )));
        }
        let (_, fields) = compile(&spec, args.arg_fields, &passed)?;
        Ok(Arc::new(Field::new(JSON_TABLE, list_type(fields), true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let spec = spec_of(
            match args.args.get(1) {
                Some(ColumnarValue::Scalar(value)) => value.try_as_str().flatten(),
                _ => None,
            },
            args.args.len(),
        )?;
        let columns = arrays(&args)?;
        let passing = Passing::new(&args, &columns, spec.passing)?;
        let (root, fields) = compile(&spec, &args.arg_fields, &passing.names())?;
        let Some(format) = Format::named(&spec.input_format) else {
            return exec_err!("json_table's input format {}", spec.input_format);
        };
        let (Some(input), Some(input_field)) = (columns.first(), args.arg_fields.first()) else {
            return exec_err!("json_table has no input");
        };
        let mut lengths = Vec::with_capacity(args.number_rows);
        let mut rows: Vec<Row> = Vec::new();
        for row in 0..args.number_rows {
            let before = rows.len();
            let item = item_at(input, input_field, format, row).map_err(Failure::input_conversion);
            let produced = match item {
                Ok(None) => Ok(Vec::new()),
                Ok(Some(item)) => passing.at(row).map_err(Stop::Table).and_then(|variables| {
                    let inputs = Inputs {
                        variables,
                        arguments: &columns,
                        row,
                        error_on_error: spec.error_on_error,
                        width: fields.len(),
                    };
                    node_rows(&root, &item, &inputs)
                }),
                Err(failure) => Err(Stop::Table(failure)),
            };
            match produced {
                Ok(produced) => rows.extend(produced),
                Err(Stop::Table(failure)) if spec.error_on_error => return Err(failure.error()),
                Err(Stop::Table(_)) => {}
                Err(Stop::Query(error)) => return Err(error),
            }
            if rows.len() == before && spec.outer {
                rows.push(vec![None; fields.len()]);
            }
            lengths.push(rows.len() - before);
        }
        if i32::try_from(rows.len()).is_err() {
            return exec_err!("json_table made more rows than one batch holds");
        }
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(fields.len());
        for (at, field) in fields.iter().enumerate() {
            let array = if rows.is_empty() {
                new_empty_array(field.data_type())
            } else {
                let null = ScalarValue::try_from(field.data_type())?;
                ScalarValue::iter_to_array(
                    rows.iter_mut()
                        .map(|row| row[at].take().unwrap_or_else(|| null.clone())),
                )?
            };
            arrays.push(array);
        }
        let structs = StructArray::try_new(Fields::from(fields.clone()), arrays, None)?;
        let list = ListArray::try_new(
            Arc::new(Field::new_list_field(
                DataType::Struct(Fields::from(fields)),
                true,
            )),
            OffsetBuffer::from_lengths(lengths),
            Arc::new(structs),
            None,
        )?;
        result(&args, Arc::new(list))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_must_fit_its_arguments() {
        let spec = JsonTableSpec {
            input_format: "JSON".into(),
            root: JsonTablePath {
                path: "lax $".into(),
                name: None,
                columns: vec![JsonTableColumn::Ordinality { name: "o".into() }],
                inner: false,
                siblings: None,
            },
            error_on_error: false,
            outer: false,
            passing: 2,
        };
        let text = serde_json::to_string(&spec).unwrap_or_default();
        assert!(spec_of(Some(&text), 2).is_ok());
        assert!(spec_of(Some(&text), 5).is_ok());
        // A variable without its value, or variables before the definition: refused, not a
        // panic on the missing argument.
        assert!(spec_of(Some(&text), 4).is_err());
        assert!(spec_of(Some(&text), 1).is_err());
        assert!(spec_of(Some("{}"), 2).is_err());
        assert!(spec_of(None, 2).is_err());
    }
}
