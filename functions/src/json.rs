//! `json_extract_scalar(json, path)`, `json_extract(json, path)`, `json_array_length(json)`,
//! `json_size(json, path)`, `json_array_get(json, index)`, `json_array_contains(json, value)`
//! and `is_json_scalar(json)` over JSON text, as Trino answers them: the path is Trino's JSONPath subset (`$`, `.key`,
//! `["key"]`, `[index]`); a scalar keeps the text it was written with (`1e2` stays `1e2`), a
//! string is unquoted; a missing member, an object, an array, JSON `null` and text that is
//! not JSON are NULL; a path Trino would refuse is an error. `json_extract` answers the value
//! found as `json` (canonical, see [`crate::json_values`]), NULL where there is none.
//!
//! The text is walked as written (serde_json checks it is JSON, and unescapes strings), so
//! numbers are never re-printed.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanBuilder, Int64Array, Int64Builder, StringArray, StringBuilder,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::arrow::datatypes::{Float64Type, Int64Type};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{
    LastParsed, all_text, arrays, is_integer, is_string, result, strings, unexpected_parameters,
};
use crate::error::invalid_argument;
use crate::json_values::canonical_json;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// Trino's JSONPath: `$` followed by `.key`, `["key"]` or `[index]` steps.
fn path(text: &str) -> Result<Vec<Step>> {
    let refuse = || invalid_argument(format!("Invalid JSON path: '{text}'"));
    let rest = text.trim().strip_prefix('$').ok_or_else(refuse)?;
    let chars: Vec<char> = rest.chars().collect();
    let mut steps = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '.' => {
                let start = i + 1;
                let mut end = start;
                while end < chars.len()
                    && (chars[end].is_alphanumeric() || matches!(chars[end], '_' | ':' | '-'))
                {
                    end += 1;
                }
                if end == start {
                    return Err(refuse());
                }
                steps.push(Step::Key(chars[start..end].iter().collect()));
                i = end;
            }
            '[' => {
                let close = chars[i..]
                    .iter()
                    .position(|&c| c == ']')
                    .ok_or_else(refuse)?
                    + i;
                let inside: String = chars[i + 1..close].iter().collect();
                let inside = inside.trim();
                if inside.starts_with('"') {
                    let key: String = serde_json::from_str(inside).map_err(|_| refuse())?;
                    steps.push(Step::Key(key));
                } else if !inside.is_empty() && inside.bytes().all(|b| b.is_ascii_digit()) {
                    steps.push(Step::Index(inside.parse().map_err(|_| refuse())?));
                } else {
                    return Err(refuse());
                }
                i = close + 1;
            }
            _ => return Err(refuse()),
        }
    }
    Ok(steps)
}

/// A position in JSON text already known to be valid.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Moves past one value; returns its text.
    fn value(&mut self) -> Option<&'a str> {
        self.skip_space();
        let start = self.at;
        match self.peek()? {
            b'"' => self.string_end()?,
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string_end()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            _ => {
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                ) {
                    self.at += 1;
                }
            }
        }
        self.text.get(start..self.at)
    }

    /// Moves past a string starting here.
    fn string_end(&mut self) -> Option<()> {
        self.at += 1;
        loop {
            match self.peek()? {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                _ => self.at += 1,
            }
        }
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.skip_space();
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// The member `key` of the object starting here.
    fn member(&mut self, key: &str) -> Option<()> {
        self.expect(b'{')?;
        loop {
            self.skip_space();
            if self.peek()? == b'}' {
                return None;
            }
            let name: String = serde_json::from_str(self.value()?).ok()?;
            self.expect(b':')?;
            if name == key {
                self.skip_space();
                return Some(());
            }
            self.value()?;
            self.skip_space();
            if self.peek()? == b',' {
                self.at += 1;
            }
        }
    }

    /// Element `index` of the array starting here.
    fn element(&mut self, index: usize) -> Option<()> {
        self.expect(b'[')?;
        for _ in 0..index {
            self.skip_space();
            if self.peek()? == b']' {
                return None;
            }
            self.value()?;
            self.expect(b',')?;
        }
        self.skip_space();
        (self.peek()? != b']').then_some(())
    }
}

fn is_json(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// The text of the value at `steps`, if there is one.
fn at<'a>(json: &'a str, steps: &[Step]) -> Option<&'a str> {
    if !is_json(json) {
        return None;
    }
    let mut cursor = Cursor { text: json, at: 0 };
    for step in steps {
        match step {
            Step::Key(key) => cursor.member(key)?,
            Step::Index(index) => cursor.element(*index)?,
        }
    }
    cursor.value()
}

/// A scalar's text: a string unquoted, a number or boolean as written; else `None`.
fn scalar(value: &str) -> Option<String> {
    match value.as_bytes().first()? {
        b'"' => serde_json::from_str(value).ok(),
        b'{' | b'[' | b'n' => None,
        _ => Some(value.to_string()),
    }
}

/// Elements of a JSON array, `None` when the text is not one.
fn array_length(json: &str) -> Option<i64> {
    array_elements(json).map(|found| found.len() as i64)
}

/// The texts of the top-level elements of JSON text that is an array; `None` for text that is
/// not JSON or not an array.
fn array_elements(json: &str) -> Option<Vec<&str>> {
    if !is_json(json) {
        return None;
    }
    elements(&mut Cursor { text: json, at: 0 })
}

/// The texts of the elements of the JSON array starting at the cursor, `None` when it is not
/// an array.
fn elements<'a>(cursor: &mut Cursor<'a>) -> Option<Vec<&'a str>> {
    cursor.expect(b'[')?;
    cursor.skip_space();
    let mut found = Vec::new();
    if cursor.peek()? == b']' {
        return Some(found);
    }
    loop {
        found.push(cursor.value()?);
        cursor.skip_space();
        match cursor.peek()? {
            b',' => cursor.at += 1,
            _ => return Some(found),
        }
    }
}

/// `json_size`: the elements of an array or members of an object at the value's text, 0
/// for a scalar.
fn size(value: &str) -> Option<i64> {
    let mut cursor = Cursor { text: value, at: 0 };
    match value.as_bytes().first()? {
        b'[' => elements(&mut cursor).map(|e| e.len() as i64),
        b'{' => {
            cursor.expect(b'{')?;
            let mut members = 0;
            loop {
                cursor.skip_space();
                if cursor.peek()? == b'}' {
                    return Some(members);
                }
                cursor.value()?;
                cursor.expect(b':')?;
                cursor.value()?;
                members += 1;
                cursor.skip_space();
                if cursor.peek()? == b',' {
                    cursor.at += 1;
                }
            }
        }
        _ => Some(0),
    }
}

/// `json_array_get`: element `index` (from the end when negative) of a JSON array; a string
/// unquoted, a number or boolean as written, an array or object as compact JSON, as Trino
/// answers it. `None` past the ends, for JSON `null` and for text that is not an array.
fn array_get(json: &str, index: i64) -> Option<String> {
    let found = array_elements(json)?;
    let index = if index < 0 {
        found
            .len()
            .checked_sub(usize::try_from(index.unsigned_abs()).ok()?)?
    } else {
        usize::try_from(index).ok()?
    };
    let element = *found.get(index)?;
    match element.as_bytes().first()? {
        b'{' | b'[' => canonical_json(element),
        _ => scalar(element),
    }
}

/// A value `json_array_contains` looks for.
#[derive(Debug, Clone, PartialEq)]
enum Sought<'a> {
    Boolean(bool),
    Integer(i64),
    Double(f64),
    Text(&'a str),
}

/// Whether a JSON number's text is an integer (no fraction, no exponent).
fn is_integer_text(text: &str) -> bool {
    !text.contains(['.', 'e', 'E'])
}

/// `json_array_contains`: whether a top-level element of the JSON array is `sought`, a
/// number only of its own kind (`1` is not `1.0`); `None` for text that is not an array.
fn array_contains(json: &str, sought: &Sought<'_>) -> Option<bool> {
    let found = array_elements(json)?;
    Some(found.iter().any(|element| {
        let first = element.as_bytes().first().copied();
        match (sought, first) {
            (Sought::Boolean(b), Some(b't' | b'f')) => (*element == "true") == *b,
            (Sought::Text(t), Some(b'"')) => {
                serde_json::from_str::<String>(element).is_ok_and(|e| e == *t)
            }
            (Sought::Integer(i), Some(b'-' | b'0'..=b'9')) => {
                is_integer_text(element) && element.parse::<i64>().is_ok_and(|e| e == *i)
            }
            (Sought::Double(d), Some(b'-' | b'0'..=b'9')) => {
                !is_integer_text(element) && element.parse::<f64>().is_ok_and(|e| e == *d)
            }
            _ => false,
        }
    }))
}

/// `is_json_scalar`: whether the JSON text is not an array or object; text that is not JSON
/// is refused.
fn is_scalar(json: &str) -> Result<bool> {
    if !is_json(json) {
        return Err(invalid_argument(format!("Invalid JSON value: {json}")));
    }
    Ok(!json.trim_start().starts_with(['[', '{']))
}

/// Each row's value at its path (NULL where either is); a path Trino refuses is an error.
fn values_at<'a>(json: &'a StringArray, paths: &StringArray) -> Result<Vec<Option<&'a str>>> {
    let mut parsed = LastParsed::new();
    let mut found = Vec::with_capacity(json.len());
    for row in 0..json.len() {
        if json.is_null(row) || paths.is_null(row) {
            found.push(None);
            continue;
        }
        let steps = parsed.get(paths.value(row), path)?;
        found.push(at(json.value(row), steps));
    }
    Ok(found)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    ExtractScalar,
    Extract,
    ArrayLength,
    Size,
    ArrayGet,
    ArrayContains,
    IsScalar,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct JsonFunction {
    kind: Kind,
    signature: Signature,
}

impl Kind {
    fn arity(self) -> usize {
        match self {
            Kind::ArrayLength | Kind::IsScalar => 1,
            _ => 2,
        }
    }
}

pub(crate) fn json_functions() -> Vec<JsonFunction> {
    [
        Kind::ExtractScalar,
        Kind::Extract,
        Kind::ArrayLength,
        Kind::Size,
        Kind::ArrayGet,
        Kind::ArrayContains,
        Kind::IsScalar,
    ]
    .into_iter()
    .map(|kind| JsonFunction {
        kind,
        signature: Signature::user_defined(Volatility::Immutable),
    })
    .collect()
}

impl ScalarUDFImpl for JsonFunction {
    fn name(&self) -> &str {
        match self.kind {
            Kind::ExtractScalar => "json_extract_scalar",
            Kind::Extract => "json_extract",
            Kind::ArrayLength => "json_array_length",
            Kind::Size => "json_size",
            Kind::ArrayGet => "json_array_get",
            Kind::ArrayContains => "json_array_contains",
            Kind::IsScalar => "is_json_scalar",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if arg_types.len() != self.kind.arity() {
            let expected = if self.kind.arity() == 1 {
                "(json)"
            } else {
                "(json, json path)"
            };
            return Err(unexpected_parameters(self.name(), arg_types, expected));
        }
        let second = match (self.kind, arg_types) {
            (Kind::ArrayGet, [json, index]) if is_string(json) && is_integer(index) => {
                DataType::Int64
            }
            // Trino's four overloads: boolean, bigint, double, varchar.
            (Kind::ArrayContains, [json, value]) if is_string(json) => match value {
                DataType::Boolean => DataType::Boolean,
                t if is_string(t) => DataType::Utf8,
                t if t.is_integer() => DataType::Int64,
                t if t.is_numeric() => DataType::Float64,
                _ => {
                    return Err(unexpected_parameters(
                        self.name(),
                        arg_types,
                        "(json, boolean | bigint | double | varchar)",
                    ));
                }
            },
            (Kind::ArrayGet | Kind::ArrayContains, _) => {
                return Err(unexpected_parameters(
                    self.name(),
                    arg_types,
                    "(json, bigint)",
                ));
            }
            _ => return all_text(self.name(), arg_types),
        };
        Ok(vec![DataType::Utf8, second])
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::ExtractScalar | Kind::Extract | Kind::ArrayGet => DataType::Utf8,
            Kind::ArrayLength | Kind::Size => DataType::Int64,
            Kind::ArrayContains | Kind::IsScalar => DataType::Boolean,
        })
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        Ok(Arc::new(match self.kind {
            Kind::Extract | Kind::ArrayGet => crate::json_values::json_field(self.name()),
            _ => {
                let types = crate::args::data_types(args.arg_fields);
                Field::new(self.name(), self.return_type(&types)?, true)
            }
        }))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let Some(json) = columns.first() else {
            return exec_err!("{} takes JSON text", self.name());
        };
        let json = strings(json)?;
        let json = json.as_string::<i32>();
        let array: ArrayRef = match self.kind {
            Kind::ArrayLength => {
                let mut out = Int64Builder::with_capacity(json.len());
                for row in 0..json.len() {
                    out.append_option(
                        (!json.is_null(row))
                            .then(|| array_length(json.value(row)))
                            .flatten(),
                    );
                }
                Arc::new(out.finish())
            }
            Kind::IsScalar => {
                let mut out = BooleanBuilder::with_capacity(json.len());
                for row in 0..json.len() {
                    if json.is_null(row) {
                        out.append_null();
                    } else {
                        out.append_value(is_scalar(json.value(row))?);
                    }
                }
                Arc::new(out.finish())
            }
            Kind::ArrayGet => {
                let Some(indexes) = columns.get(1) else {
                    return exec_err!("json_array_get takes JSON text and an index");
                };
                let indexes = cast(indexes, &DataType::Int64)?;
                let indexes = indexes.as_primitive::<Int64Type>();
                let mut out = StringBuilder::with_capacity(json.len(), json.len() * 8);
                for row in 0..json.len() {
                    out.append_option(
                        (json.is_valid(row) && indexes.is_valid(row))
                            .then(|| array_get(json.value(row), indexes.value(row)))
                            .flatten(),
                    );
                }
                Arc::new(out.finish())
            }
            Kind::ArrayContains => {
                let Some(values) = columns.get(1) else {
                    return exec_err!("json_array_contains takes JSON text and a value");
                };
                let mut out = BooleanBuilder::with_capacity(json.len());
                for row in 0..json.len() {
                    if json.is_null(row) || values.is_null(row) {
                        out.append_null();
                        continue;
                    }
                    let sought = match values.data_type() {
                        DataType::Boolean => Sought::Boolean(values.as_boolean().value(row)),
                        DataType::Int64 => {
                            Sought::Integer(values.as_primitive::<Int64Type>().value(row))
                        }
                        DataType::Float64 => {
                            Sought::Double(values.as_primitive::<Float64Type>().value(row))
                        }
                        DataType::Utf8 => Sought::Text(values.as_string::<i32>().value(row)),
                        other => return exec_err!("json_array_contains of {other}"),
                    };
                    out.append_option(array_contains(json.value(row), &sought));
                }
                Arc::new(out.finish())
            }
            Kind::ExtractScalar | Kind::Extract | Kind::Size => {
                let Some(paths) = columns.get(1) else {
                    return exec_err!("{} takes JSON text and a path", self.name());
                };
                let paths = strings(paths)?;
                let found = values_at(json, paths.as_string::<i32>())?;
                match self.kind {
                    Kind::Size => Arc::new(
                        found
                            .iter()
                            .map(|v| v.and_then(size))
                            .collect::<Int64Array>(),
                    ),
                    // The value found as canonical json, or the scalar's text.
                    Kind::Extract => Arc::new(
                        found
                            .iter()
                            .map(|v| v.and_then(canonical_json))
                            .collect::<StringArray>(),
                    ),
                    _ => Arc::new(
                        found
                            .iter()
                            .map(|v| v.and_then(scalar))
                            .collect::<StringArray>(),
                    ),
                }
            }
        };
        result(&args, array)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extract(json: &str, p: &str) -> Option<String> {
        at(json, &path(p).expect("a path")).and_then(scalar)
    }

    const DOC: &str = r#"{"store": {"book": [{"title": "Sayings", "price": 8.95e0},
        {"title": "Sword \"of\" Honour", "tags": ["a"], "isbn": null}], "open": true},
        "a.b": 12345678901234567890123}"#;

    #[test]
    fn scalars_keep_their_text_and_others_are_null() {
        assert_eq!(
            extract(DOC, "$.store.book[0].title").as_deref(),
            Some("Sayings")
        );
        assert_eq!(
            extract(DOC, "$.store.book[0].price").as_deref(),
            Some("8.95e0")
        );
        assert_eq!(
            extract(DOC, "$.store.book[1].title").as_deref(),
            Some("Sword \"of\" Honour")
        );
        assert_eq!(
            extract(DOC, "$[\"store\"][\"open\"]").as_deref(),
            Some("true")
        );
        assert_eq!(
            extract(DOC, "$[\"a.b\"]").as_deref(),
            Some("12345678901234567890123")
        );
        for absent in [
            "$.store.book",
            "$.store.book[1].tags",
            "$.store.book[1].isbn",
            "$.store.book[2]",
            "$.nothing",
            "$.store.book[0].title.x",
        ] {
            assert_eq!(extract(DOC, absent), None, "{absent}");
        }
        assert_eq!(extract("{not json", "$.a"), None);
        assert_eq!(extract("[1, [2, 3], 4]", "$[2]").as_deref(), Some("4"));
    }

    #[test]
    fn trinos_paths_and_no_others() {
        assert_eq!(
            path("$.a[0][\"b c\"]").ok(),
            Some(vec![
                Step::Key("a".into()),
                Step::Index(0),
                Step::Key("b c".into())
            ])
        );
        for bad in ["a", "$.", "$.a[*]", "$..a", "$[-1]", "$.a[0"] {
            assert!(path(bad).is_err(), "{bad}");
        }
    }

    /// Trino's TestJsonFunctions.
    #[test]
    fn sizes_elements_and_membership() -> Result<()> {
        let size_at = |json: &str, p: &str| at(json, &path(p).expect("a path")).and_then(size);
        assert_eq!(size_at(r#"{"x": {"a": 1, "b": 2}}"#, "$.x"), Some(2));
        assert_eq!(size_at(r#"{"x": {"a": 1, "b": 2}}"#, "$.x.a"), Some(0));
        assert_eq!(size_at("[1, 2, 3]", "$"), Some(3));
        assert_eq!(size_at("INVALID_JSON", "$"), None);
        assert_eq!(array_get("[2,7,4,6,8,1,0]", -2).as_deref(), Some("1"));
        assert_eq!(array_get(r#"["jhfa"]"#, 0).as_deref(), Some("jhfa"));
        assert_eq!(array_get("[1.0]", -1).as_deref(), Some("1.0"));
        assert_eq!(
            array_get(r#"[{"hello":"world"}, [1,2, {"x" : 2} ]]"#, 1).as_deref(),
            Some(r#"[1,2,{"x":2}]"#)
        );
        assert_eq!(array_get("[1, null]", 1), None);
        assert_eq!(array_get("[1]", 1), None);
        assert_eq!(array_get("[1]", -2), None);
        assert_eq!(array_contains("[1.0]", &Sought::Integer(1)), Some(false));
        assert_eq!(array_contains("[1, 5]", &Sought::Text("5")), Some(false));
        assert_eq!(array_contains("[1,0,]", &Sought::Integer(8)), None);
        assert_eq!(
            array_contains(r#"[2, 4, {"a": [8, 9]}, [], [5], 6]"#, &Sought::Integer(6)),
            Some(true)
        );
        assert_eq!(
            array_contains("[1.5, true]", &Sought::Double(1.5)),
            Some(true)
        );
        assert_eq!(
            array_contains("[1.5, true]", &Sought::Boolean(true)),
            Some(true)
        );
        assert_eq!(
            array_contains(r#"["a\"b"]"#, &Sought::Text("a\"b")),
            Some(true)
        );
        assert!(!is_scalar("[1, 2, 3]")?);
        assert!(is_scalar(" \"a\" ")?);
        assert!(is_scalar("1 trailing").is_err());
        Ok(())
    }

    #[test]
    fn array_lengths() {
        assert_eq!(array_length("[1, \"a,b\", [2, 3], {\"x\": [4]}]"), Some(4));
        assert_eq!(array_length(" [ ] "), Some(0));
        assert_eq!(array_length("{\"a\": 1}"), None);
        assert_eq!(array_length("[1,"), None);
    }
}
