//! `json_extract_scalar(json, path)`, `json_extract(json, path)` and `json_array_length(json)`
//! over JSON text, as Trino answers them: the path is Trino's JSONPath subset (`$`, `.key`,
//! `["key"]`, `[index]`); a scalar keeps the text it was written with (`1e2` stays `1e2`), a
//! string is unquoted; a missing member, an object, an array, JSON `null` and text that is
//! not JSON are NULL; a path Trino would refuse is an error. `json_extract` answers the value
//! found as `json` (canonical, see [`crate::json_values`]), NULL where there is none.
//!
//! The text is walked as written (serde_json checks it is JSON, and unescapes strings), so
//! numbers are never re-printed.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Builder, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{all_text, arrays, result, strings};
use crate::error::invalid_argument;

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
    if !is_json(json) {
        return None;
    }
    let mut cursor = Cursor { text: json, at: 0 };
    cursor.expect(b'[')?;
    cursor.skip_space();
    if cursor.peek()? == b']' {
        return Some(0);
    }
    let mut count = 0;
    loop {
        cursor.value()?;
        count += 1;
        cursor.skip_space();
        match cursor.peek()? {
            b',' => cursor.at += 1,
            _ => return Some(count),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    ExtractScalar,
    Extract,
    ArrayLength,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct JsonFunction {
    kind: Kind,
    signature: Signature,
}

pub(crate) fn json_functions() -> Vec<JsonFunction> {
    [
        (Kind::ExtractScalar, 2),
        (Kind::Extract, 2),
        (Kind::ArrayLength, 1),
    ]
    .into_iter()
    .map(|(kind, n)| JsonFunction {
        kind,
        signature: Signature::any(n, Volatility::Immutable),
    })
    .collect()
}

impl ScalarUDFImpl for JsonFunction {
    fn name(&self) -> &str {
        match self.kind {
            Kind::ExtractScalar => "json_extract_scalar",
            Kind::Extract => "json_extract",
            Kind::ArrayLength => "json_array_length",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        all_text(self.name(), arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::ExtractScalar | Kind::Extract => DataType::Utf8,
            Kind::ArrayLength => DataType::Int64,
        })
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        Ok(Arc::new(match self.kind {
            Kind::Extract => crate::json_values::json_field(self.name()),
            _ => {
                let types: Vec<DataType> = args
                    .arg_fields
                    .iter()
                    .map(|f| f.data_type().clone())
                    .collect();
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
            Kind::ExtractScalar | Kind::Extract => {
                let Some(paths) = columns.get(1) else {
                    return exec_err!("{} takes JSON text and a path", self.name());
                };
                // The scalar's text, or the value found as canonical json.
                let found: fn(&str) -> Option<String> = match self.kind {
                    Kind::Extract => crate::json_values::canonical_json,
                    _ => scalar,
                };
                let paths = strings(paths)?;
                let paths = paths.as_string::<i32>();
                let mut out = StringBuilder::with_capacity(json.len(), json.len() * 8);
                let mut parsed: Option<(String, Vec<Step>)> = None;
                for row in 0..json.len() {
                    if json.is_null(row) || paths.is_null(row) {
                        out.append_null();
                        continue;
                    }
                    let text = paths.value(row);
                    if parsed.as_ref().is_none_or(|(p, _)| p != text) {
                        parsed = Some((text.to_string(), path(text)?));
                    }
                    let steps = parsed.as_ref().map_or(&[][..], |(_, s)| s.as_slice());
                    out.append_option(at(json.value(row), steps).and_then(found));
                }
                Arc::new(out.finish())
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

    #[test]
    fn array_lengths() {
        assert_eq!(array_length("[1, \"a,b\", [2, 3], {\"x\": [4]}]"), Some(4));
        assert_eq!(array_length(" [ ] "), Some(0));
        assert_eq!(array_length("{\"a\": 1}"), None);
        assert_eq!(array_length("[1,"), None);
    }
}
