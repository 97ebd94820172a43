//! The SQL/JSON query functions `json_exists`, `json_value` and `json_query` (Trino's, over
//! [`crate::json_path`]). Their clauses (`… ON EMPTY`, `… ON ERROR`, the array wrapper, the
//! quotes) reach them as trailing constant arguments, which the dialect writes from Trino's
//! syntax:
//!
//! - `json_exists(json, path[, on_error])`, `on_error` one of `FALSE` (the default), `TRUE`,
//!   `UNKNOWN`, `ERROR`;
//! - `json_value(json, path[, on_empty, empty_default, on_error, error_default[, returned]])`,
//!   each behaviour `NULL` (the default), `ERROR` or `DEFAULT` (then the default's value),
//!   `returned` a NULL of the type `RETURNING` names (varchar without it);
//! - `json_query(json, path[, wrapper, quotes, on_empty, on_error])`, the wrapper `WITHOUT`
//!   (the default), `CONDITIONAL` or `UNCONDITIONAL`, the quotes `KEEP` or `OMIT`, each
//!   behaviour `NULL`, `ERROR`, `EMPTY ARRAY` or `EMPTY OBJECT`.
//!
//! A NULL input answers NULL. Text that is not JSON and the path's evaluation errors are the
//! `ON ERROR` clause's to decide, as in Trino; with `ERROR ON ERROR` they are
//! `INVALID_FUNCTION_ARGUMENT` (Trino names them `JSON_INPUT_CONVERSION_ERROR`,
//! `PATH_EVALUATION_ERROR` and the like).

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanBuilder, StringArray, StringBuilder,
};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{LastParsed, arrays, is_string, result, strings, unexpected_parameters};
use crate::decimals::rescaled;
use crate::error::invalid_argument;
use crate::json_path::{Item, JsonPath, Number, parse_json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Exists,
    Value,
    Query,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct SqlJsonFunction {
    kind: Kind,
    signature: Signature,
}

pub(crate) fn sql_json_functions() -> Vec<SqlJsonFunction> {
    [Kind::Exists, Kind::Value, Kind::Query]
        .into_iter()
        .map(|kind| SqlJsonFunction {
            kind,
            signature: Signature::user_defined(Volatility::Immutable),
        })
        .collect()
}

impl Kind {
    /// The number of arguments with every clause written out.
    fn full_arity(self) -> usize {
        match self {
            Kind::Exists => 3,
            Kind::Value => 7,
            Kind::Query => 6,
        }
    }
}

/// What the path's sequence, or its failure, is read as.
enum Outcome {
    Items(Vec<Item>),
    Failed(String),
}

fn evaluate(json: &str, path: &JsonPath) -> Outcome {
    let Some(item) = parse_json(json) else {
        return Outcome::Failed(format!("Cannot convert value to JSON: '{json}'"));
    };
    match path.evaluate(&item) {
        Ok(items) => Outcome::Items(items),
        Err(e) => Outcome::Failed(format!("JSON path evaluation failed: {}", e.0)),
    }
}

impl ScalarUDFImpl for SqlJsonFunction {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Exists => "json_exists",
            Kind::Value => "json_value",
            Kind::Query => "json_query",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let arity_ok = arg_types.len() == 2
            || arg_types.len() == self.kind.full_arity()
            || (self.kind == Kind::Value && arg_types.len() == 6);
        if !arity_ok || !arg_types.iter().take(2).all(is_string) {
            return Err(unexpected_parameters(
                self.name(),
                arg_types,
                "(varchar, json path)",
            ));
        }
        if self.kind != Kind::Value {
            return Ok(vec![DataType::Utf8; arg_types.len()]);
        }
        // json_value's defaults are answered as its returned type: varchar, or the type of the
        // typed NULL its RETURNING clause was written as.
        let target = returned_type(arg_types);
        if !is_returnable(&target) {
            return Err(datafusion::error::DataFusionError::NotImplemented(format!(
                "json_value … RETURNING {}",
                crate::types::trino_type_name(&target)
            )));
        }
        Ok(arg_types
            .iter()
            .enumerate()
            .map(|(i, t)| match i {
                3 | 5 => target.clone(),
                6 => t.clone(),
                _ => DataType::Utf8,
            })
            .collect())
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::Exists => DataType::Boolean,
            Kind::Value => returned_type(arg_types),
            Kind::Query => DataType::Utf8,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let clause = |i: usize, default: &str| -> Result<String> {
            match args.args.get(i) {
                None => Ok(default.to_string()),
                Some(ColumnarValue::Scalar(
                    ScalarValue::Utf8(Some(s))
                    | ScalarValue::LargeUtf8(Some(s))
                    | ScalarValue::Utf8View(Some(s)),
                )) => Ok(s.to_ascii_uppercase()),
                Some(_) => exec_err!("{}'s clauses must be constants", self.name()),
            }
        };
        let columns = arrays(&args)?;
        let (Some(json), Some(paths)) = (columns.first(), columns.get(1)) else {
            return exec_err!("{} takes JSON and a path", self.name());
        };
        let json = strings(json)?;
        let json = json.as_string::<i32>();
        let paths = strings(paths)?;
        let paths = paths.as_string::<i32>();
        let mut parsed = LastParsed::new();
        let array: ArrayRef = match self.kind {
            Kind::Exists => {
                let on_error = clause(2, "FALSE")?;
                let mut out = BooleanBuilder::with_capacity(json.len());
                for row in 0..json.len() {
                    let Some(path) = path_at(&mut parsed, json, paths, row)? else {
                        out.append_null();
                        continue;
                    };
                    match evaluate(json.value(row), path) {
                        Outcome::Items(items) => out.append_value(!items.is_empty()),
                        Outcome::Failed(message) => match on_error.as_str() {
                            "TRUE" => out.append_value(true),
                            "UNKNOWN" => out.append_null(),
                            "ERROR" => return Err(invalid_argument(message)),
                            _ => out.append_value(false),
                        },
                    }
                }
                Arc::new(out.finish())
            }
            Kind::Value => {
                let on_empty = clause(2, "NULL")?;
                let on_error = clause(4, "NULL")?;
                let target = returned_type(
                    &args
                        .arg_fields
                        .iter()
                        .map(|f| f.data_type().clone())
                        .collect::<Vec<_>>(),
                );
                let null = ScalarValue::try_from(&target)?;
                let default_at = |i: usize, row: usize| -> Result<ScalarValue> {
                    match columns.get(i) {
                        Some(array) => ScalarValue::try_from_array(array, row),
                        None => Ok(null.clone()),
                    }
                };
                let mut out: Vec<ScalarValue> = Vec::with_capacity(json.len());
                for row in 0..json.len() {
                    let Some(path) = path_at(&mut parsed, json, paths, row)? else {
                        out.push(null.clone());
                        continue;
                    };
                    let answer = match evaluate(json.value(row), path) {
                        Outcome::Items(items) => match items.as_slice() {
                            [] => match on_empty.as_str() {
                                "ERROR" => {
                                    return Err(invalid_argument("JSON path found no items"));
                                }
                                "DEFAULT" => Ok(default_at(3, row)?),
                                _ => Ok(null.clone()),
                            },
                            [item] => converted(item, &target),
                            _ => Err("JSON path found multiple items".to_string()),
                        },
                        Outcome::Failed(message) => Err(message),
                    };
                    match answer {
                        Ok(value) => out.push(value),
                        Err(message) => match on_error.as_str() {
                            "ERROR" => return Err(invalid_argument(message)),
                            "DEFAULT" => out.push(default_at(5, row)?),
                            _ => out.push(null.clone()),
                        },
                    }
                }
                if out.is_empty() {
                    datafusion::arrow::array::new_empty_array(&target)
                } else {
                    ScalarValue::iter_to_array(out)?
                }
            }
            Kind::Query => {
                let wrapper = clause(2, "WITHOUT")?;
                let omit_quotes = clause(3, "KEEP")? == "OMIT";
                let on_empty = clause(4, "NULL")?;
                let on_error = clause(5, "NULL")?;
                let mut out = StringBuilder::with_capacity(json.len(), json.len() * 16);
                for row in 0..json.len() {
                    let Some(path) = path_at(&mut parsed, json, paths, row)? else {
                        out.append_null();
                        continue;
                    };
                    let answer = match evaluate(json.value(row), path) {
                        Outcome::Items(items) if items.is_empty() => {
                            match empty_behaviour(&on_empty) {
                                Some(Ok(value)) => Ok(value),
                                Some(Err(())) => {
                                    return Err(invalid_argument("JSON path found no items"));
                                }
                                None => Ok(None),
                            }
                        }
                        Outcome::Items(items) => wrapped(items, &wrapper, omit_quotes),
                        Outcome::Failed(message) => Err(message),
                    };
                    match answer {
                        Ok(value) => out.append_option(value),
                        Err(message) => match empty_behaviour(&on_error) {
                            Some(Ok(value)) => out.append_option(value),
                            Some(Err(())) => return Err(invalid_argument(message)),
                            None => out.append_null(),
                        },
                    }
                }
                Arc::new(out.finish())
            }
        };
        result(&args, array)
    }
}

/// The path of `row`, read again only when its text changes; `None` where the input or the
/// path is NULL.
fn path_at<'p>(
    parsed: &'p mut LastParsed<JsonPath>,
    json: &StringArray,
    paths: &StringArray,
    row: usize,
) -> Result<Option<&'p JsonPath>> {
    if json.is_null(row) || paths.is_null(row) {
        return Ok(None);
    }
    parsed
        .get(paths.value(row), |text| {
            JsonPath::parse(text)
                .map_err(|e| invalid_argument(format!("Invalid JSON path '{text}': {}", e.0)))
        })
        .map(Some)
}

/// The type `json_value` answers in: its seventh argument's (a typed NULL, written from
/// `RETURNING`), else varchar.
fn returned_type(arg_types: &[DataType]) -> DataType {
    arg_types.get(6).cloned().unwrap_or(DataType::Utf8)
}

fn is_returnable(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Utf8
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Boolean
            | DataType::Decimal128(_, _)
            | DataType::Date32
    )
}

/// `json_value`'s answer for one item, as Trino casts the item's SQL value (an integer, a
/// decimal, a double, text, a boolean) to the returned type: JSON null is NULL; an array or
/// object, or a value the cast refuses, is an error for `ON ERROR`.
fn converted(item: &Item, target: &DataType) -> Result<ScalarValue, String> {
    let refused = || {
        format!(
            "Cannot cast {} to {}",
            item.json(),
            crate::types::trino_type_name(target)
        )
    };
    let number = match item {
        Item::Null => return ScalarValue::try_from(target).map_err(|e| e.to_string()),
        Item::Array(_) | Item::Object(_) => {
            return Err(
                "JSON path found an item that cannot be converted to an SQL value".to_string(),
            );
        }
        Item::Number(n) => Some(*n),
        _ => None,
    };
    let text = match item {
        Item::Text(t) => Some(t.as_str()),
        _ => None,
    };
    let boolean = match item {
        Item::Bool(b) => Some(*b),
        _ => None,
    };
    Ok(match target {
        DataType::Utf8 => ScalarValue::Utf8(Some(match (number, text, boolean) {
            (Some(n), _, _) => n.text(),
            (_, Some(t), _) => t.to_string(),
            (_, _, Some(b)) => b.to_string(),
            _ => return Err(refused()),
        })),
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            let value: i128 = match (number, text, boolean) {
                (Some(Number::Integer(i)), _, _) => i128::from(i),
                (Some(Number::Decimal(v, s)), _, _) => rescaled(v, s, 0).ok_or_else(refused)?,
                (Some(Number::Double(d)), _, _) if d.is_finite() && d.abs() < 1e19 => {
                    d.round() as i128
                }
                (_, Some(t), _) => t.parse::<i64>().map_err(|_| refused())?.into(),
                (_, _, Some(b)) => i128::from(b),
                _ => return Err(refused()),
            };
            let fits = |min: i128, max: i128| (min..=max).contains(&value);
            match target {
                DataType::Int8 if fits(i8::MIN.into(), i8::MAX.into()) => {
                    ScalarValue::Int8(Some(value as i8))
                }
                DataType::Int16 if fits(i16::MIN.into(), i16::MAX.into()) => {
                    ScalarValue::Int16(Some(value as i16))
                }
                DataType::Int32 if fits(i32::MIN.into(), i32::MAX.into()) => {
                    ScalarValue::Int32(Some(value as i32))
                }
                DataType::Int64 if fits(i64::MIN.into(), i64::MAX.into()) => {
                    ScalarValue::Int64(Some(value as i64))
                }
                _ => {
                    return Err(format!(
                        "Out of range for {}: {value}",
                        crate::types::trino_type_name(target)
                    ));
                }
            }
        }
        DataType::Float32 | DataType::Float64 => {
            let value = match (number, text, boolean) {
                (Some(n), _, _) => n.as_f64(),
                (_, Some(t), _) => t.trim().parse::<f64>().map_err(|_| refused())?,
                (_, _, Some(b)) => f64::from(u8::from(b)),
                _ => return Err(refused()),
            };
            if *target == DataType::Float32 {
                ScalarValue::Float32(Some(value as f32))
            } else {
                ScalarValue::Float64(Some(value))
            }
        }
        DataType::Boolean => ScalarValue::Boolean(Some(match (number, text, boolean) {
            (Some(n), _, _) => n.as_f64() != 0.0,
            (_, Some(t), _) => crate::text_boolean::boolean_of(t).ok_or_else(refused)?,
            (_, _, Some(b)) => b,
            _ => return Err(refused()),
        })),
        DataType::Decimal128(precision, scale) => {
            let scale_u = u32::try_from(*scale).map_err(|_| refused())?;
            let value = match (number, text, boolean) {
                (Some(Number::Integer(i)), _, _) => rescaled(i128::from(i), 0, scale_u),
                (Some(Number::Decimal(v, s)), _, _) => rescaled(v, s, scale_u),
                (Some(Number::Double(d)), _, _) if d.is_finite() => {
                    let scaled = (d * 10f64.powi(*scale as i32)).round();
                    (scaled.abs() < 1e38).then_some(scaled as i128)
                }
                (_, Some(t), _) => match crate::json_path::parse_json(t.trim()) {
                    Some(Item::Number(Number::Integer(i))) => rescaled(i128::from(i), 0, scale_u),
                    Some(Item::Number(Number::Decimal(v, s))) => rescaled(v, s, scale_u),
                    _ => None,
                },
                (_, _, Some(b)) => rescaled(i128::from(b), 0, scale_u),
                _ => None,
            }
            .ok_or_else(refused)?;
            if value.unsigned_abs() >= 10u128.pow(u32::from(*precision)) {
                return Err(refused());
            }
            ScalarValue::Decimal128(Some(value), *precision, *scale)
        }
        DataType::Date32 => {
            let date = text
                .and_then(|t| chrono::NaiveDate::parse_from_str(t.trim(), "%Y-%m-%d").ok())
                .ok_or_else(refused)?;
            let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).ok_or_else(refused)?;
            let days = i32::try_from((date - epoch).num_days()).map_err(|_| refused())?;
            ScalarValue::Date32(Some(days))
        }
        _ => return Err(refused()),
    })
}

/// `json_query`'s `ON EMPTY`/`ON ERROR` behaviour: `None` for NULL, `Err` for ERROR.
fn empty_behaviour(behaviour: &str) -> Option<Result<Option<String>, ()>> {
    match behaviour {
        "ERROR" => Some(Err(())),
        "EMPTY ARRAY" => Some(Ok(Some("[]".to_string()))),
        "EMPTY OBJECT" => Some(Ok(Some("{}".to_string()))),
        _ => None,
    }
}

/// `json_query`'s answer for a non-empty sequence under its wrapper and quotes clauses.
fn wrapped(items: Vec<Item>, wrapper: &str, omit_quotes: bool) -> Result<Option<String>, String> {
    let single_structure = matches!(items.as_slice(), [Item::Array(_) | Item::Object(_)]);
    let wrap = match wrapper {
        "UNCONDITIONAL" => true,
        "CONDITIONAL" => !single_structure,
        _ => false,
    };
    if wrap {
        return Ok(Some(Item::Array(items).json()));
    }
    match items.as_slice() {
        [Item::Text(s)] if omit_quotes => Ok(Some(s.clone())),
        [item] => Ok(Some(item.json())),
        _ => Err("JSON path found multiple items".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::Field;
    use datafusion::config::ConfigOptions;

    fn call(kind: Kind, args: Vec<ScalarValue>) -> Result<ScalarValue> {
        let function = sql_json_functions()
            .into_iter()
            .find(|f| f.kind == kind)
            .expect("the function");
        let arg_fields = args
            .iter()
            .map(|a| Arc::new(Field::new("a", a.data_type(), true)))
            .collect();
        let return_type = function.return_type(&[])?;
        let out = function.invoke_with_args(ScalarFunctionArgs {
            args: args.into_iter().map(ColumnarValue::Scalar).collect(),
            arg_fields,
            number_rows: 1,
            return_field: Arc::new(Field::new("r", return_type, true)),
            config_options: Arc::new(ConfigOptions::default()),
        })?;
        match out {
            ColumnarValue::Scalar(s) => Ok(s),
            ColumnarValue::Array(a) => ScalarValue::try_from_array(&a, 0),
        }
    }

    fn text(s: &str) -> ScalarValue {
        ScalarValue::Utf8(Some(s.to_string()))
    }

    const CUSTOMERS: [&str; 3] = [
        r#"{"comment" : "nice", "children" : [10, 13, 16]}"#,
        r#"{"comment" : "problematic", "children" : [8, 11]}"#,
        r#"{"comment" : "knows best", "children" : [2]}"#,
    ];

    fn each(kind: Kind, path: &str, clauses: &[ScalarValue]) -> Vec<ScalarValue> {
        CUSTOMERS
            .iter()
            .map(|c| {
                let mut args = vec![text(c), text(path)];
                args.extend(clauses.iter().cloned());
                call(kind, args).expect("an answer")
            })
            .collect()
    }

    fn texts(values: &[Option<&str>]) -> Vec<ScalarValue> {
        values
            .iter()
            .map(|v| ScalarValue::Utf8(v.map(str::to_string)))
            .collect()
    }

    // The examples of Trino's documentation of the three functions, with its answers.
    #[test]
    fn trinos_examples() {
        let bools = |v: [Option<bool>; 3]| v.map(ScalarValue::Boolean).to_vec();
        assert_eq!(
            each(Kind::Exists, "lax $.children[*]?(@ > 10)", &[]),
            bools([Some(true), Some(true), Some(false)])
        );
        assert_eq!(
            each(
                Kind::Exists,
                "strict $.children[2]?(@ > 10)",
                &[text("UNKNOWN")]
            ),
            bools([Some(true), None, None])
        );
        assert_eq!(
            each(Kind::Query, "lax $.children", &[]),
            texts(&[Some("[10,13,16]"), Some("[8,11]"), Some("[2]")])
        );
        let clauses = |w: &str, q: &str, e: &str, r: &str| [text(w), text(q), text(e), text(r)];
        assert_eq!(
            each(
                Kind::Query,
                "lax $.children[*]",
                &clauses("WITHOUT", "KEEP", "NULL", "NULL")
            ),
            texts(&[None, None, Some("2")])
        );
        assert_eq!(
            each(
                Kind::Query,
                "lax $.children[last]",
                &clauses("UNCONDITIONAL", "KEEP", "NULL", "NULL")
            ),
            texts(&[Some("[16]"), Some("[11]"), Some("[2]")])
        );
        assert_eq!(
            each(
                Kind::Query,
                "strict $.children[*]?(@ > 12)",
                &clauses("UNCONDITIONAL", "KEEP", "EMPTY ARRAY", "NULL")
            ),
            texts(&[Some("[13,16]"), Some("[]"), Some("[]")])
        );
        assert_eq!(
            each(
                Kind::Query,
                "strict $.comment",
                &clauses("WITHOUT", "OMIT", "NULL", "NULL")
            ),
            texts(&[Some("nice"), Some("problematic"), Some("knows best")])
        );
        assert_eq!(
            each(Kind::Query, "strict $.comment", &[]),
            texts(&[
                Some("\"nice\""),
                Some("\"problematic\""),
                Some("\"knows best\"")
            ])
        );
        let value_clauses = |empty: &str, d1: Option<&str>, error: &str, d2: Option<&str>| {
            [
                text(empty),
                ScalarValue::Utf8(d1.map(str::to_string)),
                text(error),
                ScalarValue::Utf8(d2.map(str::to_string)),
            ]
        };
        assert_eq!(
            each(
                Kind::Value,
                "strict $.children[2]",
                &value_clauses("NULL", None, "DEFAULT", Some("err"))
            ),
            texts(&[Some("16"), Some("err"), Some("err")])
        );
        assert_eq!(
            each(
                Kind::Value,
                "lax $.children[2]",
                &value_clauses("DEFAULT", Some("missing"), "NULL", None)
            ),
            texts(&[Some("16"), Some("missing"), Some("missing")])
        );
        assert_eq!(
            each(Kind::Value, "lax $.comment", &[]),
            texts(&[Some("nice"), Some("problematic"), Some("knows best")])
        );
    }

    #[test]
    fn items_convert_as_trino_casts_their_values() {
        let convert =
            |json: &str, target: DataType| converted(&parse_json(json).expect("JSON"), &target);
        assert_eq!(
            convert("1.5", DataType::Int64),
            Ok(ScalarValue::Int64(Some(2)))
        );
        assert_eq!(
            convert("-2.5", DataType::Int64),
            Ok(ScalarValue::Int64(Some(-3)))
        );
        assert_eq!(
            convert("2.5e0", DataType::Int32),
            Ok(ScalarValue::Int32(Some(3)))
        );
        assert_eq!(
            convert("\"12\"", DataType::Int16),
            Ok(ScalarValue::Int16(Some(12)))
        );
        assert_eq!(
            convert("true", DataType::Int8),
            Ok(ScalarValue::Int8(Some(1)))
        );
        assert!(convert("300", DataType::Int8).is_err());
        assert!(convert("\"1.5\"", DataType::Int64).is_err());
        assert_eq!(
            convert("2.345", DataType::Decimal128(10, 2)),
            Ok(ScalarValue::Decimal128(Some(235), 10, 2))
        );
        assert_eq!(
            convert("\"-2.345\"", DataType::Decimal128(10, 2)),
            Ok(ScalarValue::Decimal128(Some(-235), 10, 2))
        );
        assert!(convert("1234", DataType::Decimal128(3, 0)).is_err());
        // Thirty-eight fraction digits round to an integer without overflowing.
        assert_eq!(
            convert("0.99999999999999999999999999999999999999", DataType::Int64),
            Ok(ScalarValue::Int64(Some(1)))
        );
        assert_eq!(
            convert("\"t\"", DataType::Boolean),
            Ok(ScalarValue::Boolean(Some(true)))
        );
        assert_eq!(
            convert("0", DataType::Boolean),
            Ok(ScalarValue::Boolean(Some(false)))
        );
        assert_eq!(
            convert("\"1e2\"", DataType::Float64),
            Ok(ScalarValue::Float64(Some(100.0)))
        );
        assert_eq!(
            convert("\"2001-08-22\"", DataType::Date32),
            Ok(ScalarValue::Date32(Some(11556)))
        );
        assert_eq!(
            convert("null", DataType::Int64),
            Ok(ScalarValue::Int64(None))
        );
        assert!(convert("[1]", DataType::Utf8).is_err());
        assert_eq!(
            convert("1.50", DataType::Utf8),
            Ok(ScalarValue::Utf8(Some("1.50".into())))
        );
    }

    #[test]
    fn errors_follow_the_on_error_clause() {
        // Not JSON: false by default, an error when asked.
        assert_eq!(
            call(Kind::Exists, vec![text("{"), text("lax $")]).ok(),
            Some(ScalarValue::Boolean(Some(false)))
        );
        assert!(call(Kind::Exists, vec![text("{"), text("lax $"), text("ERROR")]).is_err());
        // Several items, or an object, are errors of json_value: NULL by default.
        assert_eq!(
            call(Kind::Value, vec![text("[1,2]"), text("lax $[*]")]).ok(),
            Some(ScalarValue::Utf8(None))
        );
        let error_on_error = |json: &str, path: &str| {
            call(
                Kind::Value,
                vec![
                    text(json),
                    text(path),
                    text("NULL"),
                    ScalarValue::Utf8(None),
                    text("ERROR"),
                    ScalarValue::Utf8(None),
                ],
            )
        };
        assert!(error_on_error(r#"{"a":{}}"#, "lax $.a").is_err());
        assert!(error_on_error("[1,2]", "lax $[*]").is_err());
        assert_eq!(
            error_on_error(r#"{"a":1.50}"#, "lax $.a").ok(),
            Some(ScalarValue::Utf8(Some("1.50".into())))
        );
        // A NULL input answers NULL whatever the clauses; a path Trino refuses is an error.
        assert_eq!(
            call(
                Kind::Exists,
                vec![ScalarValue::Utf8(None), text("lax $"), text("TRUE")]
            )
            .ok(),
            Some(ScalarValue::Boolean(None))
        );
        assert!(call(Kind::Query, vec![text("1"), text("$.a")]).is_err());
    }
}
