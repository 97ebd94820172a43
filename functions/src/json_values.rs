//! Trino's `json` type: JSON text in a varchar whose field says `json` ([`TRINO_TYPE`]), so
//! clients see the type and casts know what they convert. A value is held as Trino holds it,
//! canonical (no spaces, object members in key order), which is what `json_parse`, `JSON '…'`,
//! `json_extract` and `CAST(… AS JSON)` make.
//!
//! - `json_parse(varchar)`: the text read as JSON (invalid text is INVALID_FUNCTION_ARGUMENT);
//! - `json_format(json)`: the JSON text as a varchar;
//! - `json_extract(json, path)` (in [`crate::json`], beside `json_extract_scalar`): the value
//!   at Trino's JSONPath, as json (NULL where missing);
//! - `CAST(x AS JSON)` ([`CAST_TO_JSON`]): a varchar becomes a JSON string, a number or boolean
//!   its JSON value, an array a JSON array and a map a JSON object (keys as text);
//! - `CAST(json AS varchar)` ([`JSON_TO_TEXT`]): a JSON string's text, a number's or boolean's
//!   text, NULL for JSON null; an array or object is INVALID_CAST_ARGUMENT, as in Trino.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::arrow::error::ArrowError;
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use serde_json::Value;

use crate::args::{all_text, arrays, is_string, result, strings, unexpected_parameters};
use crate::bounded::TRINO_TYPE;
use crate::error::invalid_argument;

/// The dialect's name for `CAST(x AS JSON)`.
pub const CAST_TO_JSON: &str = "sqe_cast_to_json";
/// The dialect's name for `CAST(json AS varchar)`.
pub const JSON_TO_TEXT: &str = "sqe_json_to_varchar";

/// The field of a `json` value.
pub fn json_field(name: &str) -> Field {
    Field::new(name, DataType::Utf8, true).with_metadata(HashMap::from([(
        TRINO_TYPE.to_string(),
        "json".to_string(),
    )]))
}

/// Whether `field` holds Trino `json` values.
pub fn is_json(field: &Field) -> bool {
    field.metadata().get(TRINO_TYPE).map(String::as_str) == Some("json")
}

/// `text` read as JSON and written canonically, `None` when it is not JSON.
pub fn canonical_json(text: &str) -> Option<String> {
    serde_json::from_str::<Value>(text)
        .ok()
        .map(|v| v.to_string())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Parse,
    Format,
    CastTo,
    CastToText,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct JsonValues {
    kind: Kind,
    signature: Signature,
}

pub(crate) fn json_to_text() -> JsonValues {
    JsonValues {
        kind: Kind::CastToText,
        signature: Signature::user_defined(Volatility::Immutable),
    }
}

pub(crate) fn json_value_functions() -> Vec<JsonValues> {
    let of_text = |kind| JsonValues {
        kind,
        signature: Signature::user_defined(Volatility::Immutable),
    };
    vec![
        of_text(Kind::Parse),
        of_text(Kind::Format),
        JsonValues {
            kind: Kind::CastTo,
            signature: Signature::any(1, Volatility::Immutable),
        },
        json_to_text(),
    ]
}

/// What `CAST(… AS JSON)` takes: text, numbers, booleans, and arrays and maps of them.
fn castable_to_json(t: &DataType) -> bool {
    match t {
        DataType::Boolean => true,
        t if t.is_numeric() || is_string(t) => true,
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            castable_to_json(f.data_type())
        }
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(fields) if fields.len() == 2 => {
                castable_to_json(fields[0].data_type()) && castable_to_json(fields[1].data_type())
            }
            _ => false,
        },
        _ => false,
    }
}

impl ScalarUDFImpl for JsonValues {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Parse => "json_parse",
            Kind::Format => "json_format",
            Kind::CastTo => CAST_TO_JSON,
            Kind::CastToText => JSON_TO_TEXT,
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        all_text(self.name(), arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        if self.kind == Kind::CastTo
            && let Some(field) = args.arg_fields.first()
            && !castable_to_json(field.data_type())
        {
            return Err(DataFusionError::NotImplemented(format!(
                "CAST of {} to json",
                crate::types::TrinoType::from_field(field)
            )));
        }
        if self.kind == Kind::CastTo && args.arg_fields.len() != 1 {
            return Err(unexpected_parameters(
                self.name(),
                &crate::args::data_types(args.arg_fields),
                "(T)",
            ));
        }
        Ok(Arc::new(match self.kind {
            Kind::Parse | Kind::CastTo => json_field(self.name()),
            Kind::Format | Kind::CastToText => Field::new(self.name(), DataType::Utf8, true),
        }))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let Some(input) = columns.first() else {
            return exec_err!("{} takes an argument", self.name());
        };
        let array: ArrayRef = match self.kind {
            // Of json, the value itself.
            Kind::CastTo if args.arg_fields.first().is_some_and(|f| is_json(f)) => {
                Arc::clone(input)
            }
            Kind::CastTo => Arc::new(cast_to_json(input)?),
            Kind::Parse | Kind::Format | Kind::CastToText => {
                let text = strings(input)?;
                let text = text.as_string::<i32>();
                let mut out = StringBuilder::with_capacity(text.len(), text.len() * 8);
                for value in text.iter() {
                    let Some(value) = value else {
                        out.append_null();
                        continue;
                    };
                    match self.kind {
                        Kind::Parse => match canonical_json(value) {
                            Some(json) => out.append_value(json),
                            None => {
                                return Err(invalid_argument(format!(
                                    "Cannot convert value to JSON: '{value}'"
                                )));
                            }
                        },
                        Kind::CastToText => out.append_option(json_text(value)?),
                        _ => out.append_value(value),
                    }
                }
                Arc::new(out.finish())
            }
        };
        result(&args, array)
    }
}

/// `CAST(json AS varchar)`: a scalar's text, NULL for JSON null.
fn json_text(json: &str) -> Result<Option<String>> {
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Null) => Ok(None),
        Ok(Value::String(s)) => Ok(Some(s)),
        Ok(Value::Bool(b)) => Ok(Some(b.to_string())),
        Ok(Value::Number(n)) => Ok(Some(n.to_string())),
        Ok(_) | Err(_) => Err(DataFusionError::ArrowError(
            Box::new(ArrowError::CastError(format!(
                "Cannot cast to varchar. Unexpected token: {}",
                json.chars().next().unwrap_or(' ')
            ))),
            None,
        )),
    }
}

fn cast_to_json(input: &ArrayRef) -> Result<datafusion::arrow::array::StringArray> {
    let mut out = StringBuilder::with_capacity(input.len(), input.len() * 8);
    for row in 0..input.len() {
        let value = ScalarValue::try_from_array(input, row)?;
        if value.is_null() {
            out.append_null();
        } else {
            out.append_value(json_text_of(&value)?);
        }
    }
    Ok(out.finish())
}

/// The JSON text of one SQL value (`castable_to_json` says which): written here rather than
/// through `serde_json::Value`, which would turn a decimal's `1.50` into the double `1.5`.
fn json_text_of(value: &ScalarValue) -> Result<String> {
    if value.is_null() {
        return Ok("null".to_string());
    }
    let not_finite = |f: f64| invalid_argument(format!("Cannot cast {f} to JSON"));
    Ok(match value {
        ScalarValue::Boolean(Some(b)) => b.to_string(),
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Value::String(s.clone()).to_string(),
        ScalarValue::Float32(Some(f)) if !f.is_finite() => return Err(not_finite(f64::from(*f))),
        ScalarValue::Float64(Some(f)) if !f.is_finite() => return Err(not_finite(*f)),
        ScalarValue::Float32(Some(f)) => format!("{f:?}"),
        ScalarValue::Float64(Some(f)) => format!("{f:?}"),
        ScalarValue::List(list) => elements(list.value(0))?,
        ScalarValue::LargeList(list) => elements(list.value(0))?,
        ScalarValue::FixedSizeList(list) => elements(list.value(0))?,
        ScalarValue::Map(map) => {
            let entries = map.value(0);
            let (keys, values) = (entries.column(0), entries.column(1));
            // Members in key order, as Trino writes a map.
            let mut members = std::collections::BTreeMap::new();
            for i in 0..entries.len() {
                let key = match ScalarValue::try_from_array(keys, i)? {
                    ScalarValue::Utf8(Some(s))
                    | ScalarValue::LargeUtf8(Some(s))
                    | ScalarValue::Utf8View(Some(s)) => s,
                    other => json_text_of(&other)?,
                };
                members.insert(key, json_text_of(&ScalarValue::try_from_array(values, i)?)?);
            }
            let members: Vec<String> = members
                .into_iter()
                .map(|(k, v)| format!("{}:{v}", Value::String(k)))
                .collect();
            format!("{{{}}}", members.join(","))
        }
        // Integers and decimals: Arrow's text is their SQL text (`1.50`), a JSON number.
        other if other.data_type().is_numeric() => {
            let text = datafusion::arrow::compute::cast(&other.to_array()?, &DataType::Utf8)?;
            text.as_string::<i32>().value(0).to_string()
        }
        other => {
            return Err(DataFusionError::NotImplemented(format!(
                "CAST of {} to json",
                crate::types::TrinoType::from_arrow(&other.data_type())
            )));
        }
    })
}

fn elements(array: ArrayRef) -> Result<String> {
    let items = (0..array.len())
        .map(|i| json_text_of(&ScalarValue::try_from_array(&array, i)?))
        .collect::<Result<Vec<_>>>()?;
    Ok(format!("[{}]", items.join(",")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int32Array, ListArray, StringArray};
    use datafusion::arrow::datatypes::Int32Type;

    #[test]
    fn canonical_text_orders_members_and_drops_spaces() {
        assert_eq!(
            canonical_json(r#"{ "b": [1, 2.5, null], "a": "x" }"#).as_deref(),
            Some(r#"{"a":"x","b":[1,2.5,null]}"#)
        );
        assert_eq!(canonical_json("not json"), None);
    }

    #[test]
    fn casts_to_json_make_json_values() -> Result<()> {
        let text: ArrayRef = Arc::new(StringArray::from(vec![Some("a \" b"), None, Some("{}")]));
        let cast = cast_to_json(&text)?;
        assert_eq!(cast.value(0), r#""a \" b""#);
        assert!(cast.is_null(1));
        assert_eq!(cast.value(2), r#""{}""#);
        let numbers: ArrayRef = Arc::new(Int32Array::from(vec![7]));
        assert_eq!(cast_to_json(&numbers)?.value(0), "7");
        let decimals: ArrayRef = Arc::new(
            datafusion::arrow::array::Decimal128Array::from(vec![150])
                .with_precision_and_scale(3, 2)?,
        );
        assert_eq!(cast_to_json(&decimals)?.value(0), "1.50");
        let lists: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), None]),
        ]));
        assert_eq!(cast_to_json(&lists)?.value(0), "[1,null]");
        Ok(())
    }

    #[test]
    fn json_to_text_takes_scalars_only() -> Result<()> {
        assert_eq!(json_text(r#""a""#)?.as_deref(), Some("a"));
        assert_eq!(json_text("1.5")?.as_deref(), Some("1.5"));
        assert_eq!(json_text("null")?, None);
        assert!(json_text("[1]").is_err());
        Ok(())
    }
}
