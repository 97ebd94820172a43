//! The SQL/JSON query functions `json_exists`, `json_value` and `json_query` (Trino's, over
//! [`crate::json_path`]). Their clauses (`… ON EMPTY`, `… ON ERROR`, the array wrapper, the
//! quotes, `PASSING`) reach them as trailing arguments, which the dialect writes from Trino's
//! syntax:
//!
//! - `json_exists(json, path[, on_error, passing…])`, `on_error` one of `FALSE` (the default),
//!   `TRUE`, `UNKNOWN`, `ERROR`;
//! - `json_value(json, path[, on_empty, empty_default, on_error, error_default[, returned],
//!   passing…])`, each behaviour `NULL` (the default), `ERROR` or `DEFAULT` (then the default's
//!   value), `returned` a NULL of the type `RETURNING` names (varchar without it);
//! - `json_query(json, path[, wrapper, quotes, on_empty, on_error, passing…])`, the wrapper
//!   `WITHOUT` (the default), `CONDITIONAL` or `UNCONDITIONAL`, the quotes `KEEP` or `OMIT`,
//!   each behaviour `NULL`, `ERROR`, `EMPTY ARRAY` or `EMPTY OBJECT`;
//! - `passing…`: for each variable its name, its format (`SQL` or `JSON [encoding]`, see
//!   [`crate::json_items`]) and its value.
//!
//! A NULL input answers NULL. Text that is not JSON and the path's evaluation errors are the
//! `ON ERROR` clause's to decide, as in Trino; with `ERROR ON ERROR` they fail with Trino's
//! names (JSON_INPUT_CONVERSION_ERROR, PATH_EVALUATION_ERROR, JSON_VALUE_RESULT_ERROR,
//! JSON_OUTPUT_CONVERSION_ERROR); a path that does not read is INVALID_PATH.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanBuilder, StringArray, StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{LastParsed, arrays, is_string, result, strings, unexpected_parameters};
use crate::decimals::rescaled;
use crate::error::{JsonErrorKind, json_error};
use crate::json_items::{Format, item_at, json_item_readable};
use crate::json_path::{Item, JsonPath, Number, Variables, parse_json};

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

/// Where a call's arguments are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    /// Whether `json_value`'s seventh argument is the typed NULL of its `RETURNING`.
    returning: bool,
    /// Where the variables' (name, format, value) triples start.
    passing: usize,
}

impl Kind {
    /// The layout of a call of `n` arguments, `None` when no call has that many.
    fn layout(self, n: usize) -> Option<Layout> {
        let plain = |passing| {
            Some(Layout {
                returning: false,
                passing,
            })
        };
        if n == 2 {
            return plain(2);
        }
        let clauses = match self {
            Kind::Exists => 3,
            Kind::Value | Kind::Query => 6,
        };
        match n.checked_sub(clauses).map(|rest| rest % 3) {
            Some(0) => plain(clauses),
            Some(1) if self == Kind::Value => Some(Layout {
                returning: true,
                passing: clauses + 1,
            }),
            _ => None,
        }
    }
}

/// Why a row has no answer of its own: what `ON ERROR` (or `ON EMPTY`) decides about.
pub(crate) struct Failure {
    kind: JsonErrorKind,
    message: String,
}

impl Failure {
    pub(crate) fn new(kind: JsonErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// `item_at`'s refusal of JSON text, as the failure `ON ERROR` decides about.
    pub(crate) fn input_conversion(e: DataFusionError) -> Self {
        let message = match &e {
            DataFusionError::External(inner) => inner
                .downcast_ref::<crate::error::JsonError>()
                .map(|json| json.message.clone()),
            _ => None,
        };
        Failure::new(
            JsonErrorKind::InputConversion,
            message.unwrap_or_else(|| e.to_string()),
        )
    }

    pub(crate) fn error(self) -> DataFusionError {
        json_error(self.kind, self.message)
    }
}

fn evaluate(json: &str, path: &JsonPath, variables: &Variables) -> Result<Vec<Item>, Failure> {
    let Some(item) = parse_json(json) else {
        return Err(Failure::new(
            JsonErrorKind::InputConversion,
            format!("conversion to JSON failed: '{json}' is not JSON"),
        ));
    };
    path.evaluate(&item, variables).map_err(|e| {
        Failure::new(
            JsonErrorKind::PathEvaluation,
            format!("path evaluation failed: {}", e.0),
        )
    })
}

/// The variables of a call's `PASSING` clause: names, formats, and the values' columns.
pub(crate) struct Passing<'a> {
    variables: Vec<(String, Format, &'a ArrayRef, &'a FieldRef)>,
}

impl<'a> Passing<'a> {
    pub(crate) fn new(
        args: &'a ScalarFunctionArgs,
        columns: &'a [ArrayRef],
        from: usize,
    ) -> Result<Self> {
        let constant = |i: usize| match args.args.get(i) {
            Some(ColumnarValue::Scalar(value)) => value.try_as_str().flatten(),
            _ => None,
        };
        let mut variables = Vec::new();
        for at in (from..columns.len()).step_by(3) {
            let (Some(name), Some(format)) =
                (constant(at), constant(at + 1).and_then(Format::named))
            else {
                return exec_err!("PASSING takes constant names and formats");
            };
            variables.push((
                name.to_string(),
                format,
                &columns[at + 2],
                &args.arg_fields[at + 2],
            ));
        }
        Ok(Self { variables })
    }

    pub(crate) fn names(&self) -> Vec<&str> {
        self.variables.iter().map(|(n, ..)| n.as_str()).collect()
    }

    /// The variables' values at `row`: an SQL NULL is JSON null, a NULL passed as JSON (or
    /// of type json) the empty sequence; JSON text that does not read is a failure of the row.
    pub(crate) fn at(&self, row: usize) -> Result<Vec<(String, Vec<Item>)>, Failure> {
        self.variables
            .iter()
            .map(|(name, format, column, field)| {
                // The types were checked while planning: what fails here is JSON text.
                let item =
                    item_at(column, field, *format, row).map_err(Failure::input_conversion)?;
                // A NULL read as JSON (written FORMAT JSON, or of type json) is no item.
                let value = match (item, format) {
                    (Some(item), _) => vec![item],
                    (None, Format::Sql) if !crate::is_json(field) => vec![Item::Null],
                    (None, _) => vec![],
                };
                Ok((name.clone(), value))
            })
            .collect()
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
        let layout = self.kind.layout(arg_types.len());
        let Some(layout) = layout.filter(|_| arg_types.iter().take(2).all(is_string)) else {
            return Err(unexpected_parameters(
                self.name(),
                arg_types,
                "(varchar, json path)",
            ));
        };
        // The variables' values keep their types; everything else is text, but json_value's
        // defaults, which are answered as its returned type: varchar, or the type of the typed
        // NULL its RETURNING clause was written as.
        let target = returned_type(arg_types, layout);
        if self.kind == Kind::Value && !is_returnable(&target) {
            return Err(DataFusionError::NotImplemented(format!(
                "json_value … RETURNING {}",
                crate::types::trino_type_name(&target)
            )));
        }
        Ok(arg_types
            .iter()
            .enumerate()
            .map(|(i, t)| match i {
                _ if i >= layout.passing && (i - layout.passing) % 3 == 2 => t.clone(),
                3 | 5 if self.kind == Kind::Value => target.clone(),
                6 if layout.returning => t.clone(),
                _ => DataType::Utf8,
            })
            .collect())
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::Exists => DataType::Boolean,
            Kind::Value => match self.kind.layout(arg_types.len()) {
                Some(layout) => returned_type(arg_types, layout),
                None => DataType::Utf8,
            },
            Kind::Query => DataType::Utf8,
        })
    }

    /// The return type, after reading a constant path (and its variables' names): a path
    /// that does not read is INVALID_PATH while planning, as in Trino.
    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let types = crate::args::data_types(args.arg_fields);
        let Some(layout) = self.kind.layout(types.len()) else {
            return self.return_type(&types).map(|t| {
                Arc::new(datafusion::arrow::datatypes::Field::new(
                    self.name(),
                    t,
                    true,
                ))
            });
        };
        let constant = |i: usize| {
            args.scalar_arguments
                .get(i)
                .copied()
                .flatten()
                .and_then(|value| value.try_as_str().flatten())
        };
        let variables = (layout.passing..types.len()).step_by(3);
        if let Some(path) = constant(1) {
            let names: Vec<&str> = variables.clone().filter_map(constant).collect();
            read_path(path, &names)?;
        }
        for at in variables {
            let format = constant(at + 1).unwrap_or("SQL");
            let value = &args.arg_fields[at + 2];
            if !json_item_readable(value, format) {
                return Err(DataFusionError::NotImplemented(format!(
                    "{} … PASSING a value of type {}{}",
                    self.name(),
                    crate::types::trino_type_name(value.data_type()),
                    if format == "SQL" { "" } else { " as JSON" }
                )));
            }
        }
        let field =
            datafusion::arrow::datatypes::Field::new(self.name(), self.return_type(&types)?, true);
        // `RETURNING varchar(n)` or `char(n)`: the typed NULL's field says which.
        let bounded = args
            .arg_fields
            .get(6)
            .filter(|f| layout.returning && bound_of_field(f).is_some());
        Ok(Arc::new(match bounded {
            Some(typed) => field.with_metadata(typed.metadata().clone()),
            None => field,
        }))
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
        let Some(layout) = self.kind.layout(args.args.len()) else {
            return exec_err!("{} called with {} arguments", self.name(), args.args.len());
        };
        let columns = arrays(&args)?;
        let (Some(json), Some(paths)) = (columns.first(), columns.get(1)) else {
            return exec_err!("{} takes JSON and a path", self.name());
        };
        let passing = Passing::new(&args, &columns, layout.passing)?;
        let names = passing.names();
        let json = strings(json)?;
        let json = json.as_string::<i32>();
        let paths = strings(paths)?;
        let paths = paths.as_string::<i32>();
        let mut parsed = LastParsed::new();
        // The path's sequence for a row, or its failure; `None` where the input or path is NULL.
        let mut sequence = |row: usize| -> Result<Option<Result<Vec<Item>, Failure>>> {
            let Some(path) = path_at(&mut parsed, json, paths, &names, row)? else {
                return Ok(None);
            };
            Ok(Some(passing.at(row).and_then(|variables| {
                evaluate(json.value(row), path, &variables)
            })))
        };
        let array: ArrayRef = match self.kind {
            Kind::Exists => {
                let on_error = clause(2, "FALSE")?;
                let mut out = BooleanBuilder::with_capacity(json.len());
                for row in 0..json.len() {
                    match sequence(row)? {
                        None => out.append_null(),
                        Some(Ok(items)) => out.append_value(!items.is_empty()),
                        Some(Err(failure)) => match on_error.as_str() {
                            "TRUE" => out.append_value(true),
                            "UNKNOWN" => out.append_null(),
                            "ERROR" => return Err(failure.error()),
                            _ => out.append_value(false),
                        },
                    }
                }
                Arc::new(out.finish())
            }
            Kind::Value => {
                let on_empty = clause(2, "NULL")?;
                let on_error = clause(4, "NULL")?;
                let target = returned_type(&crate::args::data_types(&args.arg_fields), layout);
                let null = ScalarValue::try_from(&target)?;
                let bound = args
                    .arg_fields
                    .get(6)
                    .filter(|_| layout.returning)
                    .and_then(bound_of_field);
                let default_at = |i: usize, row: usize| -> Result<ScalarValue> {
                    let value = match columns.get(i).filter(|_| layout.passing > i) {
                        Some(array) => ScalarValue::try_from_array(array, row)?,
                        None => null.clone(),
                    };
                    // A default is text already: kept to the bound, never refused.
                    Ok(bounded_answer(value.clone(), bound, true).unwrap_or(value))
                };
                let result_error =
                    |message: String| Failure::new(JsonErrorKind::ValueResult, message);
                let mut out: Vec<ScalarValue> = Vec::with_capacity(json.len());
                for row in 0..json.len() {
                    let answer = match sequence(row)? {
                        None => {
                            out.push(null.clone());
                            continue;
                        }
                        Some(Ok(items)) => match items.as_slice() {
                            [] => match on_empty.as_str() {
                                "ERROR" => {
                                    return Err(
                                        result_error("JSON path found no items".into()).error()
                                    );
                                }
                                "DEFAULT" => Ok(default_at(3, row)?),
                                _ => Ok(null.clone()),
                            },
                            [item] => converted(item, &target)
                                .and_then(|value| {
                                    bounded_answer(value, bound, matches!(item, Item::Text(_)))
                                })
                                .map_err(result_error),
                            _ => Err(result_error("JSON path found multiple items".into())),
                        },
                        Some(Err(failure)) => Err(failure),
                    };
                    match answer {
                        Ok(value) => out.push(value),
                        Err(failure) => match on_error.as_str() {
                            "ERROR" => return Err(failure.error()),
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
                let output_error =
                    |message: String| Failure::new(JsonErrorKind::OutputConversion, message);
                let mut out = StringBuilder::with_capacity(json.len(), json.len() * 16);
                for row in 0..json.len() {
                    let answer = match sequence(row)? {
                        None => {
                            out.append_null();
                            continue;
                        }
                        Some(Ok(items)) if items.is_empty() => match empty_behaviour(&on_empty) {
                            Some(Ok(value)) => Ok(value),
                            Some(Err(())) => {
                                return Err(output_error("JSON path found no items".into()).error());
                            }
                            None => Ok(None),
                        },
                        Some(Ok(items)) => {
                            wrapped(items, &wrapper, omit_quotes).map_err(output_error)
                        }
                        Some(Err(failure)) => Err(failure),
                    };
                    match answer {
                        Ok(value) => out.append_option(value),
                        Err(failure) => match empty_behaviour(&on_error) {
                            Some(Ok(value)) => out.append_option(value),
                            Some(Err(())) => return Err(failure.error()),
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

/// `text` read as a path whose variables are among `passed`; else INVALID_PATH.
pub(crate) fn read_path(text: &str, passed: &[&str]) -> Result<JsonPath> {
    let path = JsonPath::parse(text).map_err(|e| {
        json_error(
            JsonErrorKind::InvalidPath,
            format!("Invalid JSON path '{text}': {}", e.0),
        )
    })?;
    if let Some(missing) = path
        .variables()
        .iter()
        .find(|v| !passed.contains(&v.as_str()))
    {
        // Unquoted names in PASSING are upper-cased, as Trino's identifiers; the path's are
        // as written.
        let hint = if passed.iter().any(|p| p.eq_ignore_ascii_case(missing)) {
            format!(". Try quoting \"{missing}\" in the PASSING clause to match case")
        } else {
            String::new()
        };
        return Err(json_error(
            JsonErrorKind::InvalidPath,
            format!("no value passed for parameter {missing}{hint}"),
        ));
    }
    Ok(path)
}

/// The path of `row`, read again only when its text changes; `None` where the input or the
/// path is NULL. A path that does not read, or reads a variable `PASSING` does not name, is
/// INVALID_PATH.
fn path_at<'p>(
    parsed: &'p mut LastParsed<JsonPath>,
    json: &StringArray,
    paths: &StringArray,
    passed: &[&str],
    row: usize,
) -> Result<Option<&'p JsonPath>> {
    if json.is_null(row) || paths.is_null(row) {
        return Ok(None);
    }
    parsed
        .get(paths.value(row), |text| read_path(text, passed))
        .map(Some)
}

/// The type `json_value` answers in: its seventh argument's (a typed NULL, written from
/// `RETURNING`), else varchar.
fn returned_type(arg_types: &[DataType], layout: Layout) -> DataType {
    match arg_types.get(6) {
        Some(t) if layout.returning => t.clone(),
        _ => DataType::Utf8,
    }
}

pub(crate) fn is_returnable(t: &DataType) -> bool {
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

/// The bound of `RETURNING varchar(n)` or `char(n)`, from its typed NULL's field.
pub(crate) fn bound_of_field(field: &FieldRef) -> Option<(usize, bool)> {
    field
        .metadata()
        .get(crate::types::TRINO_TYPE)
        .and_then(|t| crate::bounded::bound_of(t))
}

/// `value` (text) as a bounded returned type holds it: a JSON string's text truncated to the
/// length, a number's or boolean's text refused when longer (as Trino's casts of them), a
/// `char` padded (and not made of a number or boolean, which Trino does not cast to one).
pub(crate) fn bounded_answer(
    value: ScalarValue,
    bound: Option<(usize, bool)>,
    from_string: bool,
) -> Result<ScalarValue, String> {
    let (Some((n, char)), ScalarValue::Utf8(Some(text))) = (bound, &value) else {
        return Ok(value);
    };
    let kind = if char { "char" } else { "varchar" };
    let refused = || format!("Cannot cast {text} to {kind}({n})");
    // Trino casts numbers and booleans to varchar(n) but not to char(n).
    if char && !from_string {
        return Err(refused());
    }
    crate::bounded::bounded_text(text, n, char, from_string)
        .map(|kept| ScalarValue::Utf8(Some(kept)))
        .ok_or_else(refused)
}

/// `json_value`'s answer for one item, as Trino casts the item's SQL value (an integer, a
/// decimal, a double, text, a boolean) to the returned type: JSON null is NULL; an array or
/// object, or a value the cast refuses, is an error for `ON ERROR`.
pub(crate) fn converted(item: &Item, target: &DataType) -> Result<ScalarValue, String> {
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
pub(crate) fn empty_behaviour(behaviour: &str) -> Option<Result<Option<String>, ()>> {
    match behaviour {
        "ERROR" => Some(Err(())),
        "EMPTY ARRAY" => Some(Ok(Some("[]".to_string()))),
        "EMPTY OBJECT" => Some(Ok(Some("{}".to_string()))),
        _ => None,
    }
}

/// `json_query`'s answer for a non-empty sequence under its wrapper and quotes clauses.
pub(crate) fn wrapped(
    items: Vec<Item>,
    wrapper: &str,
    omit_quotes: bool,
) -> Result<Option<String>, String> {
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

    fn kind_of(result: Result<ScalarValue>) -> Option<JsonErrorKind> {
        match result {
            Err(DataFusionError::External(e)) => e
                .downcast_ref::<crate::error::JsonError>()
                .map(|json| json.kind),
            _ => None,
        }
    }

    /// `json_query(input, path PASSING value AS name … on_empty ON EMPTY)`.
    fn query_passing(
        path: &str,
        variables: &[(&str, &str, ScalarValue)],
        on_empty: &str,
    ) -> Result<ScalarValue> {
        let mut args = vec![
            text(r#"["a", "b"]"#),
            text(path),
            text("WITHOUT"),
            text("KEEP"),
            text(on_empty),
            text("NULL"),
        ];
        for (name, format, value) in variables {
            args.extend([text(name), text(format), value.clone()]);
        }
        call(Kind::Query, args)
    }

    #[test]
    fn passing_gives_the_paths_variables_their_values() {
        // Trino's TestJsonQueryFunction.testPassingClause and testNullInput.
        let five = ScalarValue::Int32(Some(5));
        assert_eq!(
            query_passing(
                "lax $number + 1",
                &[("number", "SQL", five.clone())],
                "NULL"
            )
            .ok(),
            Some(text("6"))
        );
        let unquoted = query_passing(
            "lax $number + 1",
            &[("NUMBER", "SQL", five.clone())],
            "NULL",
        );
        assert!(
            unquoted
                .as_ref()
                .is_err_and(|e| e.to_string().contains("Try quoting \"number\"")),
            "{unquoted:?}"
        );
        assert_eq!(kind_of(unquoted), Some(JsonErrorKind::InvalidPath));
        assert_eq!(
            query_passing(
                "lax $array[0]",
                &[("array", "JSON", text("[1, 2, 3]"))],
                "NULL"
            )
            .ok(),
            Some(text("1"))
        );
        assert_eq!(
            query_passing("lax $array[0]", &[("array", "JSON", text("[..."))], "NULL").ok(),
            Some(ScalarValue::Utf8(None))
        );
        assert_eq!(
            query_passing("lax $[$number]", &[("number", "SQL", five)], "NULL").ok(),
            Some(ScalarValue::Utf8(None))
        );
        assert_eq!(
            query_passing(
                "lax $var",
                &[("var", "SQL", ScalarValue::Utf8(None))],
                "NULL"
            )
            .ok(),
            Some(text("null"))
        );
        assert_eq!(
            query_passing(
                "lax $var",
                &[("var", "JSON", ScalarValue::Utf8(None))],
                "EMPTY ARRAY"
            )
            .ok(),
            Some(text("[]"))
        );
    }

    /// `json_value(json, path ERROR ON ERROR)`.
    fn value_error_on_error(json: &str, path: &str) -> Result<ScalarValue> {
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
    }

    #[test]
    fn errors_carry_trinos_names() {
        assert_eq!(
            kind_of(value_error_on_error("[1, 2]", "lax $[*]")),
            Some(JsonErrorKind::ValueResult)
        );
        assert_eq!(
            kind_of(value_error_on_error("[1, 2", "lax $")),
            Some(JsonErrorKind::InputConversion)
        );
        assert_eq!(
            kind_of(value_error_on_error("[1, 2]", "strict $[5]")),
            Some(JsonErrorKind::PathEvaluation)
        );
        assert_eq!(
            kind_of(value_error_on_error("[1, 2]", "$[5]")),
            Some(JsonErrorKind::InvalidPath)
        );
        assert_eq!(
            kind_of(call(
                Kind::Query,
                vec![
                    text("[1, 2]"),
                    text("lax $[*]"),
                    text("WITHOUT"),
                    text("KEEP"),
                    text("NULL"),
                    text("ERROR"),
                ],
            )),
            Some(JsonErrorKind::OutputConversion)
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
        assert!(value_error_on_error(r#"{"a":{}}"#, "lax $.a").is_err());
        assert!(value_error_on_error("[1,2]", "lax $[*]").is_err());
        assert_eq!(
            value_error_on_error(r#"{"a":1.50}"#, "lax $.a").ok(),
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
