//! Trino's JSON constructors `json_array` and `json_object`. Their clauses reach them as
//! leading constant arguments and each value's format as a constant before it, which the
//! dialect writes from Trino's syntax:
//!
//! - `json_array(on_null, returning, format, value, …)`;
//! - `json_object(on_null, unique_keys, returning, key, format, value, …)`;
//!
//! `on_null` is `NULL` or `ABSENT` (what a NULL value becomes: JSON null, or nothing),
//! `unique_keys` `WITH` or `WITHOUT`, `returning` `VARCHAR` or `VARBINARY <encoding>`, and each
//! format `SQL` or `JSON [<encoding>]` ([`crate::json_items`]). Values of other types than
//! those an item is read from are cast to varchar by the dialect, as Trino does.
//!
//! An object's members are written in the order they are given, as Trino's current tests
//! expect (`TestJsonTypedArguments`; earlier releases wrote them in a Java `HashMap`'s order).

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BinaryBuilder, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DataFusionError, Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, result};
use crate::error::invalid_argument;
use crate::json_items::{Encoding, Format, item_at};
use crate::json_path::Item;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Array,
    Object,
}

impl Kind {
    /// The number of clause constants before the values.
    fn clauses(self) -> usize {
        match self {
            Kind::Array => 2,
            Kind::Object => 3,
        }
    }

    /// The arguments of one element: a format and a value, or a key, a format and a value.
    fn stride(self) -> usize {
        match self {
            Kind::Array => 2,
            Kind::Object => 3,
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct JsonConstructor {
    kind: Kind,
    signature: Signature,
}

pub(crate) fn json_constructors() -> Vec<JsonConstructor> {
    [Kind::Array, Kind::Object]
        .into_iter()
        .map(|kind| JsonConstructor {
            kind,
            signature: Signature::user_defined(Volatility::Immutable),
        })
        .collect()
}

/// The type the result is returned in, from its constant: varchar, or varbinary in an
/// encoding.
fn returning(constant: &str) -> Result<Option<Encoding>> {
    let mut words = constant.split_whitespace();
    match (words.next(), words.next()) {
        (Some("VARCHAR"), None) => Ok(None),
        (Some("VARBINARY"), Some(encoding)) => match Encoding::named(encoding) {
            Some(encoding) => Ok(Some(encoding)),
            None => plan_err!("unknown JSON encoding {encoding}"),
        },
        _ => {
            plan_err!("a JSON constructor's RETURNING constant is VARCHAR or VARBINARY <encoding>")
        }
    }
}

/// The arguments of a JSON constructor the dialect writes, by its name: the number of leading
/// clause constants, and the number of arguments of each element (a format and a value, after
/// a key for an object). `None` for other functions.
pub fn json_constructor_layout(name: &str) -> Option<(usize, usize)> {
    let kind = match name {
        "json_array" => Kind::Array,
        "json_object" => Kind::Object,
        _ => return None,
    };
    Some((kind.clauses(), kind.stride()))
}

impl ScalarUDFImpl for JsonConstructor {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Array => "json_array",
            Kind::Object => "json_object",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let clauses = self.kind.clauses();
        if arg_types.len() < clauses
            || !(arg_types.len() - clauses).is_multiple_of(self.kind.stride())
        {
            return plan_err!(
                "{} takes its clauses, then its elements with their formats",
                self.name()
            );
        }
        Ok(arg_types.to_vec())
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        exec_err!("{} answers from its arguments' fields", self.name())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let position = self.kind.clauses() - 1;
        let constant = args.scalar_arguments.get(position).copied().flatten();
        let returned = returning(
            constant
                .and_then(|c| c.try_as_str().flatten())
                .unwrap_or(""),
        )?;
        let data_type = if returned.is_some() {
            DataType::Binary
        } else {
            DataType::Utf8
        };
        Ok(Arc::new(Field::new(self.name(), data_type, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let constant = |i: usize| -> Result<String> {
            match args.args.get(i) {
                Some(ColumnarValue::Scalar(value)) => match value.try_as_str().flatten() {
                    Some(s) => Ok(s.to_string()),
                    None => exec_err!("{}'s clauses are constant text", self.name()),
                },
                _ => exec_err!("{}'s clauses are constant text", self.name()),
            }
        };
        let absent_on_null = constant(0)? == "ABSENT";
        let unique_keys = self.kind == Kind::Object && constant(1)? == "WITH";
        let clauses = self.kind.clauses();
        let returned = returning(&constant(clauses - 1)?)?;
        let columns = arrays(&args)?;
        let stride = self.kind.stride();
        // Each element: its key's column (objects), its format, its value's column and field.
        let mut elements = Vec::new();
        // Keys are text (the dialect checks their type while planning), read as one column.
        let keys: Vec<Option<ArrayRef>> = (clauses..columns.len())
            .step_by(stride)
            .map(|at| match self.kind {
                Kind::Object => key_column(&columns[at]).map(Some),
                Kind::Array => Ok(None),
            })
            .collect::<Result<_>>()?;
        for (at, key) in (clauses..columns.len()).step_by(stride).zip(&keys) {
            let key = key.as_ref().map(|keys| keys.as_string::<i32>());
            let value_at = at + stride - 1;
            let format = Format::named(&constant(value_at - 1)?).ok_or_else(|| {
                DataFusionError::Execution(format!("{}: unknown value format", self.name()))
            })?;
            elements.push((key, format, &columns[value_at], &args.arg_fields[value_at]));
        }
        let mut texts: Vec<String> = Vec::with_capacity(args.number_rows);
        for row in 0..args.number_rows {
            let mut items = Vec::with_capacity(elements.len());
            let mut keys = Vec::with_capacity(elements.len());
            for (key, format, values, field) in &elements {
                let key = match key {
                    Some(keys) if keys.is_null(row) => {
                        return Err(invalid_argument(
                            "null value passed for JSON object key to JSON_OBJECT function",
                        ));
                    }
                    Some(keys) => Some(keys.value(row).to_string()),
                    None => None,
                };
                let item = match item_at(values, field, *format, row)? {
                    Some(item) => item,
                    None if absent_on_null => continue,
                    None => Item::Null,
                };
                keys.extend(key);
                items.push(item);
            }
            let json = match self.kind {
                Kind::Array => Item::Array(items),
                Kind::Object => Item::Object(members(keys, items, unique_keys)?),
            };
            texts.push(json.json());
        }
        let array: ArrayRef = match returned {
            None => Arc::new(StringArray::from(texts)),
            Some(encoding) => {
                let mut out = BinaryBuilder::with_capacity(texts.len(), 0);
                for text in &texts {
                    out.append_value(encoding.encoded(text));
                }
                Arc::new(out.finish())
            }
        };
        result(&args, array)
    }
}

/// A column of keys as `Utf8` (NULL keys are an error of the row that has one).
fn key_column(keys: &ArrayRef) -> Result<ArrayRef> {
    match keys.data_type() {
        DataType::Null | DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            Ok(datafusion::arrow::compute::cast(keys, &DataType::Utf8)?)
        }
        other => exec_err!(
            "a JSON object key must be text, not {}",
            crate::types::trino_type_name(other)
        ),
    }
}

/// An object's members, in the order given; a key given twice is an error.
fn members(keys: Vec<String>, items: Vec<Item>, unique_keys: bool) -> Result<Vec<(String, Item)>> {
    let mut seen = HashSet::with_capacity(keys.len());
    for key in &keys {
        if !seen.insert(key.as_str()) {
            return Err(if unique_keys {
                invalid_argument("duplicate key passed to JSON_OBJECT function")
            } else {
                // Trino refuses what the standard's default would keep (its documentation:
                // "duplicate keys are not supported due to implementation limitation").
                DataFusionError::NotImplemented(
                    "cannot construct a JSON object with duplicate key".to_string(),
                )
            });
        }
    }
    Ok(keys.into_iter().zip(items).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_refused() {
        let items = vec![Item::Null, Item::Bool(true)];
        let keys = || vec!["x".to_string(), "x".to_string()];
        assert!(matches!(
            members(keys(), items.clone(), false),
            Err(DataFusionError::NotImplemented(_))
        ));
        assert!(matches!(
            members(keys(), items, true),
            Err(DataFusionError::External(_))
        ));
    }
}
