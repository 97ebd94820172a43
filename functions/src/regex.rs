//! `regexp_extract`, `regexp_extract_all` and `regexp_split`, which DataFusion lacks: the
//! first (or every) match of a pattern, or one capturing group of it, and the text between
//! matches, as Trino answers them; `regexp_replace` and `regexp_count`, whose matches are
//! Trino's (an empty match right after another counts: `a*` in `aaa` matches twice, where
//! DataFusion's regex crate finds one) and whose replacement is Trino's (`$1`, `$12` as group 12
//! when there is one, else group 1 and a `2`, `${name}`, `\$`; an unknown group is refused); and
//! `regexp_like`, whose invalid pattern is the user's `INVALID_FUNCTION_ARGUMENT` (DataFusion's
//! is an internal error in words only); and `regexp_position`, where the n-th match from a
//! position starts (in code points, -1 for none).

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, AsArray, BooleanBuilder, Int32Builder, Int64Array, ListBuilder, StringArray,
    StringBuilder,
};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use regex::Regex;

use crate::args::{LastParsed, arrays, is_integer, is_string, longs, result, string_list, strings};
use crate::error::invalid_argument;

/// `regexp_extract(string, pattern [, group])` or, with `all`, `regexp_extract_all`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct RegexpExtract {
    signature: Signature,
    all: bool,
}

impl RegexpExtract {
    pub(crate) fn first() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
            all: false,
        }
    }

    pub(crate) fn all() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
            all: true,
        }
    }
}

/// The pattern of each row, compiled again only when it changes.
type Patterns = LastParsed<Regex>;

fn compile(pattern: &str) -> Result<Regex> {
    Regex::new(pattern).map_err(|e| invalid_argument(format!("Invalid regular expression: {e}")))
}

/// Every match of `regex` in `text` as Java's `Matcher.find` finds them (and so Trino): an
/// empty match right after a non-empty one counts, which Rust's own iterator skips
/// (`a*` in `abc` matches 4 times, not 3).
fn matches<'t>(regex: &Regex, text: &'t str) -> Vec<regex::Captures<'t>> {
    let mut found = Vec::new();
    let mut at = 0;
    while at <= text.len() {
        let Some(captures) = regex.captures_at(text, at) else {
            break;
        };
        let Some(whole) = captures.get(0) else {
            break;
        };
        at = next_start(text, whole.start(), whole.end());
        found.push(captures);
    }
    found
}

/// Where the search for the next match starts after one at `start..end`: its end, or past the
/// next character when it is empty (an empty match is not found twice).
fn next_start(text: &str, start: usize, end: usize) -> usize {
    if start == end {
        end + text[end..].chars().next().map_or(1, char::len_utf8)
    } else {
        end
    }
}

/// Where each match of [`matches`] is, without its groups (cheaper where none is read).
fn match_ranges(regex: &Regex, text: &str) -> Vec<std::ops::Range<usize>> {
    let mut found = Vec::new();
    let mut at = 0;
    while at <= text.len() {
        let Some(m) = regex.find_at(text, at) else {
            break;
        };
        at = next_start(text, m.start(), m.end());
        found.push(m.range());
    }
    found
}

/// Row `i`'s compiled pattern and group; `None` when an argument is NULL.
fn row_pattern<'p>(
    patterns: &'p mut Patterns,
    s: &StringArray,
    pattern: &StringArray,
    group: Option<&Int64Array>,
    i: usize,
) -> Result<Option<(&'p Regex, usize)>> {
    if s.is_null(i) || pattern.is_null(i) || group.is_some_and(|g| g.is_null(i)) {
        return Ok(None);
    }
    let regex = patterns.get(pattern.value(i), compile)?;
    let g = group_of(regex, group.map_or(0, |g| g.value(i)))?;
    Ok(Some((regex, g)))
}

/// The group a call asks for, checked against the pattern as Trino checks it.
fn group_of(regex: &Regex, group: i64) -> Result<usize> {
    if group < 0 {
        return Err(invalid_argument("Group cannot be negative"));
    }
    let groups = regex.captures_len() - 1;
    match usize::try_from(group) {
        Ok(g) if g <= groups => Ok(g),
        _ => Err(invalid_argument(format!(
            "Pattern has {groups} groups. Cannot access group {group}"
        ))),
    }
}

impl ScalarUDFImpl for RegexpExtract {
    fn name(&self) -> &str {
        if self.all {
            "regexp_extract_all"
        } else {
            "regexp_extract"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [s, p] if is_string(s) && is_string(p) => Ok(vec![DataType::Utf8, DataType::Utf8]),
            [s, p, g] if is_string(s) && is_string(p) && is_integer(g) => {
                Ok(vec![DataType::Utf8, DataType::Utf8, DataType::Int64])
            }
            _ => Err(crate::args::unexpected_parameters(
                self.name(),
                arg_types,
                "(varchar, varchar [, bigint])",
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(if self.all {
            string_list()
        } else {
            DataType::Utf8
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let (s, pattern) = match columns.as_slice() {
            [s, p] | [s, p, _] => (strings(s)?, strings(p)?),
            _ => return exec_err!("{} takes 2 or 3 arguments", self.name()),
        };
        let group = columns.get(2).map(longs).transpose()?;
        let (s, pattern) = (s.as_string::<i32>(), pattern.as_string::<i32>());
        let mut patterns = Patterns::new();
        let group = group.as_ref();
        if self.all {
            let mut out = ListBuilder::new(StringBuilder::new());
            for i in 0..s.len() {
                let Some((regex, g)) = row_pattern(&mut patterns, s, pattern, group, i)? else {
                    out.append_null();
                    continue;
                };
                for captures in matches(regex, s.value(i)) {
                    out.values()
                        .append_option(captures.get(g).map(|m| m.as_str()));
                }
                out.append(true);
            }
            result(&args, Arc::new(out.finish()))
        } else {
            let mut out = StringBuilder::new();
            for i in 0..s.len() {
                let row = row_pattern(&mut patterns, s, pattern, group, i)?;
                let found = row.and_then(|(regex, g)| {
                    regex
                        .captures(s.value(i))
                        .and_then(|captures| captures.get(g))
                        .map(|m| m.as_str())
                });
                out.append_option(found);
            }
            result(&args, Arc::new(out.finish()))
        }
    }
}

/// `regexp_split(string, pattern)`: the pieces between the matches (as Java finds them), the
/// text after the last match included even when empty.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct RegexpSplit {
    signature: Signature,
}

impl RegexpSplit {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// The coercion of `(varchar, varchar)`: a text and a pattern.
fn text_and_pattern(name: &str, arg_types: &[DataType]) -> Result<Vec<DataType>> {
    match arg_types {
        [s, p] if is_string(s) && is_string(p) => Ok(vec![DataType::Utf8, DataType::Utf8]),
        _ => Err(crate::args::unexpected_parameters(
            name,
            arg_types,
            "(varchar, varchar)",
        )),
    }
}

/// The text and pattern arguments as text arrays.
fn text_and_pattern_arrays(
    name: &str,
    args: &ScalarFunctionArgs,
) -> Result<(
    datafusion::arrow::array::ArrayRef,
    datafusion::arrow::array::ArrayRef,
)> {
    let columns = arrays(args)?;
    let [s, pattern] = columns.as_slice() else {
        return exec_err!("{name} takes 2 arguments");
    };
    Ok((strings(s)?, strings(pattern)?))
}

/// `regexp_like(string, pattern)`: whether the pattern matches somewhere in the string.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct RegexpLike {
    signature: Signature,
}

impl RegexpLike {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for RegexpLike {
    fn name(&self) -> &str {
        "regexp_like"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        text_and_pattern("regexp_like", arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (s, pattern) = text_and_pattern_arrays("regexp_like", &args)?;
        let (s, pattern) = (s.as_string::<i32>(), pattern.as_string::<i32>());
        let mut patterns = Patterns::new();
        let mut out = BooleanBuilder::with_capacity(s.len());
        for i in 0..s.len() {
            match row_pattern(&mut patterns, s, pattern, None, i)? {
                Some((regex, _)) => out.append_value(regex.is_match(s.value(i))),
                None => out.append_null(),
            }
        }
        result(&args, Arc::new(out.finish()))
    }
}

/// `regexp_position(string, pattern [, start [, occurrence]])`: the code point (from 1) where the
/// `occurrence`-th match (1 unless given) at or after code point `start` (1 unless given)
/// begins, -1 when there is none; an `integer`, as Trino's.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct RegexpPosition {
    signature: Signature,
}

impl RegexpPosition {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// Where the `occurrence`-th match at or after code point `start` of `text` begins, counted
/// in code points from 1; -1 for none.
fn match_position(regex: &Regex, text: &str, start: i64, occurrence: i64) -> Result<i32> {
    if start < 1 {
        return Err(invalid_argument(format!(
            "start must be a positive integer, got {start}"
        )));
    }
    if occurrence < 1 {
        return Err(invalid_argument(format!(
            "occurrence must be a positive integer, got {occurrence}"
        )));
    }
    let skipped = usize::try_from(start - 1).unwrap_or(usize::MAX);
    // A start past the text's last character finds nothing, as in Trino.
    let Some(from) = text.char_indices().map(|(at, _)| at).nth(skipped) else {
        return Ok(-1);
    };
    let wanted = usize::try_from(occurrence - 1).unwrap_or(usize::MAX);
    let mut at = from;
    let mut found = 0usize;
    while at <= text.len() {
        let Some(m) = regex.find_at(text, at) else {
            return Ok(-1);
        };
        if found == wanted {
            let position = text[..m.start()].chars().count() + 1;
            return Ok(i32::try_from(position).unwrap_or(i32::MAX));
        }
        found += 1;
        at = next_start(text, m.start(), m.end());
    }
    Ok(-1)
}

impl ScalarUDFImpl for RegexpPosition {
    fn name(&self) -> &str {
        "regexp_position"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [s, p, rest @ ..]
                if is_string(s)
                    && is_string(p)
                    && rest.len() <= 2
                    && rest.iter().all(is_integer) =>
            {
                let mut coerced = vec![DataType::Utf8, DataType::Utf8];
                coerced.extend(rest.iter().map(|_| DataType::Int64));
                Ok(coerced)
            }
            _ => Err(crate::args::unexpected_parameters(
                "regexp_position",
                arg_types,
                "(varchar, varchar [, bigint [, bigint]])",
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [s, pattern, rest @ ..] = columns.as_slice() else {
            return exec_err!("regexp_position takes 2 to 4 arguments");
        };
        let (s, pattern) = (strings(s)?, strings(pattern)?);
        let (s, pattern) = (s.as_string::<i32>(), pattern.as_string::<i32>());
        let numbers = rest.iter().map(longs).collect::<Result<Vec<_>>>()?;
        let (start, occurrence) = (numbers.first(), numbers.get(1));
        let mut patterns = Patterns::new();
        let mut out = Int32Builder::with_capacity(s.len());
        for i in 0..s.len() {
            let number = |n: Option<&Int64Array>| n.map(|n| n.is_valid(i).then(|| n.value(i)));
            let (Some(regex), Some(start), Some(occurrence)) = (
                row_pattern(&mut patterns, s, pattern, None, i)?.map(|(r, _)| r),
                number(start).unwrap_or(Some(1)),
                number(occurrence).unwrap_or(Some(1)),
            ) else {
                out.append_null();
                continue;
            };
            out.append_value(match_position(regex, s.value(i), start, occurrence)?);
        }
        result(&args, Arc::new(out.finish()))
    }
}

/// One part of a replacement: text as written, or the text of a group of the match.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Group(usize),
}

/// `replacement` as Trino reads it for `regex`: `$n` (the most digits that still name a group
/// of the pattern), `${name}`, `\c` for `c` itself; anything else as written.
fn replacement_parts(replacement: &str, regex: &Regex) -> std::result::Result<Vec<Part>, String> {
    let illegal = || format!("Illegal replacement sequence: {replacement}");
    let groups = regex.captures_len();
    let chars: Vec<char> = replacement.chars().collect();
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '$' => {
                i += 1;
                let Some(&next) = chars.get(i) else {
                    return Err(illegal());
                };
                let group = if next == '{' {
                    let name: String = chars[i + 1..].iter().take_while(|c| **c != '}').collect();
                    i += name.chars().count() + 2;
                    regex
                        .capture_names()
                        .position(|n| n == Some(name.as_str()))
                        .ok_or_else(|| {
                            format!("Illegal replacement sequence: unknown group {{ {name} }}")
                        })?
                } else {
                    let first = next.to_digit(10).ok_or_else(illegal)? as usize;
                    if first >= groups {
                        return Err(format!(
                            "Illegal replacement sequence: unknown group {first}"
                        ));
                    }
                    i += 1;
                    let mut group = first;
                    while let Some(digit) = chars.get(i).and_then(|c| c.to_digit(10)) {
                        let wider = group * 10 + digit as usize;
                        if wider >= groups {
                            break;
                        }
                        group = wider;
                        i += 1;
                    }
                    group
                };
                if !text.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut text)));
                }
                parts.push(Part::Group(group));
            }
            '\\' => {
                let Some(&escaped) = chars.get(i + 1) else {
                    return Err(illegal());
                };
                text.push(escaped);
                i += 2;
            }
            c => {
                text.push(c);
                i += 1;
            }
        }
    }
    if !text.is_empty() {
        parts.push(Part::Text(text));
    }
    Ok(parts)
}

/// `text` with every match of `regex` replaced by the replacement's `parts` (or its refusal,
/// raised only once a match needs it, as Trino reads the replacement: `'$'` replaces nothing
/// in a text the pattern does not match).
fn replace_matches(
    regex: &Regex,
    text: &str,
    parts: &std::result::Result<Vec<Part>, String>,
) -> Result<String> {
    let groups_read = parts
        .as_ref()
        .is_ok_and(|parts| parts.iter().any(|p| matches!(p, Part::Group(_))));
    let found: Vec<(std::ops::Range<usize>, Option<regex::Captures<'_>>)> = if groups_read {
        matches(regex, text)
            .into_iter()
            .filter_map(|c| Some((c.get(0)?.range(), Some(c))))
            .collect()
    } else {
        match_ranges(regex, text)
            .into_iter()
            .map(|r| (r, None))
            .collect()
    };
    if found.is_empty() {
        return Ok(text.to_string());
    }
    let parts = parts.as_ref().map_err(|e| invalid_argument(e.clone()))?;
    let mut out = String::with_capacity(text.len());
    let mut last_end = 0;
    for (whole, captures) in &found {
        out.push_str(&text[last_end..whole.start]);
        for part in parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Group(g) => out.push_str(
                    captures
                        .as_ref()
                        .and_then(|c| c.get(*g))
                        .map_or("", |m| m.as_str()),
                ),
            }
        }
        last_end = whole.end;
    }
    out.push_str(&text[last_end..]);
    Ok(out)
}

/// `regexp_replace(string, pattern, replacement)` (the two-argument form is given `''` while
/// parsing) and `regexp_count(string, pattern)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct RegexpReplace {
    signature: Signature,
    count: bool,
}

impl RegexpReplace {
    pub(crate) fn replace() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
            count: false,
        }
    }

    pub(crate) fn count() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
            count: true,
        }
    }
}

impl ScalarUDFImpl for RegexpReplace {
    fn name(&self) -> &str {
        if self.count {
            "regexp_count"
        } else {
            "regexp_replace"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if self.count {
            return text_and_pattern("regexp_count", arg_types);
        }
        match arg_types {
            [s, p, r] if is_string(s) && is_string(p) && is_string(r) => {
                Ok(vec![DataType::Utf8; 3])
            }
            _ => Err(crate::args::unexpected_parameters(
                "regexp_replace",
                arg_types,
                "(varchar, varchar [, varchar])",
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(if self.count {
            DataType::Int64
        } else {
            DataType::Utf8
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let columns: Vec<_> = columns.iter().map(strings).collect::<Result<_>>()?;
        let (s, pattern) = match columns.as_slice() {
            [s, p] | [s, p, _] => (s.as_string::<i32>(), p.as_string::<i32>()),
            _ => return exec_err!("{} takes a string and a pattern", self.name()),
        };
        let mut patterns = Patterns::new();
        if self.count {
            let mut out = datafusion::arrow::array::Int64Builder::with_capacity(s.len());
            for i in 0..s.len() {
                match row_pattern(&mut patterns, s, pattern, None, i)? {
                    Some((regex, _)) => {
                        let n = match_ranges(regex, s.value(i)).len();
                        out.append_value(i64::try_from(n).unwrap_or(i64::MAX));
                    }
                    None => out.append_null(),
                }
            }
            return result(&args, Arc::new(out.finish()));
        }
        let Some(replacement) = columns.get(2).map(|r| r.as_string::<i32>()) else {
            return exec_err!("regexp_replace takes a replacement");
        };
        let mut out = StringBuilder::with_capacity(s.len(), s.len() * 16);
        // The replacement read for the last pattern and replacement text, read again only when
        // either changes.
        let mut parsed: Option<(String, String, std::result::Result<Vec<Part>, String>)> = None;
        for i in 0..s.len() {
            if replacement.is_null(i) {
                out.append_null();
                continue;
            }
            let Some((regex, _)) = row_pattern(&mut patterns, s, pattern, None, i)? else {
                out.append_null();
                continue;
            };
            let (p, r) = (pattern.value(i), replacement.value(i));
            if parsed.as_ref().is_none_or(|(pp, rr, _)| pp != p || rr != r) {
                parsed = Some((p.to_string(), r.to_string(), replacement_parts(r, regex)));
            }
            let Some((_, _, parts)) = parsed.as_ref() else {
                return exec_err!("regexp_replace's replacement was not read");
            };
            out.append_value(replace_matches(regex, s.value(i), parts)?);
        }
        result(&args, Arc::new(out.finish()))
    }
}

/// The pieces of `text` between the matches of `regex`.
fn split_pieces<'t>(regex: &Regex, text: &'t str) -> Vec<&'t str> {
    let mut pieces = Vec::new();
    let mut last_end = 0;
    for whole in match_ranges(regex, text) {
        pieces.push(&text[last_end..whole.start.max(last_end)]);
        last_end = whole.end;
    }
    pieces.push(&text[last_end..]);
    pieces
}

impl ScalarUDFImpl for RegexpSplit {
    fn name(&self) -> &str {
        "regexp_split"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        text_and_pattern("regexp_split", arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(string_list())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (s, pattern) = text_and_pattern_arrays("regexp_split", &args)?;
        let (s, pattern) = (s.as_string::<i32>(), pattern.as_string::<i32>());
        let mut patterns = Patterns::new();
        let mut out = ListBuilder::new(StringBuilder::new());
        for i in 0..s.len() {
            let Some((regex, _)) = row_pattern(&mut patterns, s, pattern, None, i)? else {
                out.append_null();
                continue;
            };
            for piece in split_pieces(regex, s.value(i)) {
                out.values().append_value(piece);
            }
            out.append(true);
        }
        result(&args, Arc::new(out.finish()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_checked_as_trino_checks_them() {
        let regex = Regex::new(r"(\d+)([a-z]+)").expect("pattern");
        assert_eq!(group_of(&regex, 0).ok(), Some(0));
        assert_eq!(group_of(&regex, 2).ok(), Some(2));
        let past = group_of(&regex, 3).expect_err("past the last group");
        assert!(
            past.to_string()
                .contains("Pattern has 2 groups. Cannot access group 3")
        );
        assert!(group_of(&regex, -1).is_err());
    }

    #[test]
    fn matches_are_found_as_java_finds_them() {
        let texts = |pattern: &str, text: &str| -> Vec<String> {
            let regex = Regex::new(pattern).expect("pattern");
            matches(&regex, text)
                .iter()
                .filter_map(|c| c.get(0).map(|m| m.as_str().to_string()))
                .collect()
        };
        assert_eq!(texts("a*", "abc"), vec!["a", "", "", ""]);
        assert_eq!(texts("a*", "aab"), vec!["aa", "", ""]);
        assert_eq!(texts(r"\d+", "1a 2b 14m"), vec!["1", "2", "14"]);
        assert_eq!(texts("x*", "é"), vec!["", ""]);
        assert_eq!(texts("^a", "aa"), vec!["a"]);
    }

    #[test]
    fn replacements_are_trinos() -> Result<()> {
        let regex = |p: &str| Regex::new(p).map_err(|e| invalid_argument(e.to_string()));
        let replaced = |p: &str, t: &str, r: &str| {
            let regex = regex(p)?;
            replace_matches(&regex, t, &replacement_parts(r, &regex))
        };
        // An empty match right after a non-empty one is replaced too (Rust's iterator skips it).
        assert_eq!(replaced("a*", "aaa", "X")?, "XX");
        assert_eq!(replaced("a*", "baaac", "X")?, "XbXXcX");
        assert_eq!(replaced("(a)(b)?", "ac", "[$1|$2]")?, "[a|]c");
        // `$10` with one group is group 1 and a 0; `${name}`; `\$` is a dollar.
        assert_eq!(replaced("(a)", "abc", "$10")?, "a0bc");
        assert_eq!(replaced("(?P<x>b)", "abc", "<${x}>")?, "a<b>c");
        assert_eq!(replaced("b", "abc", r"\$\\")?, r"a$\c");
        for bad in ["$2", "$", "x\\", "${y}", "$a"] {
            assert!(replaced("(a)", "abc", bad).is_err(), "{bad}");
        }
        // Read only when a match needs it.
        assert_eq!(replaced("z", "abc", "$")?, "abc");
        assert_eq!(matches(&regex("a*")?, "aaa").len(), 2);
        assert_eq!(
            match_ranges(&regex("a*")?, "baaac"),
            vec![0..0, 1..4, 4..4, 5..5]
        );
        Ok(())
    }

    #[test]
    fn split_keeps_the_text_after_the_last_match() -> Result<()> {
        let split = |text: &str, pattern: &str| -> Result<Vec<String>> {
            let regex = Regex::new(pattern).map_err(|e| invalid_argument(e.to_string()))?;
            Ok(split_pieces(&regex, text)
                .into_iter()
                .map(str::to_string)
                .collect())
        };
        assert_eq!(split("1a 2b 14m", r"\s*[a-z]+\s*")?, ["1", "2", "14", ""]);
        assert_eq!(split("a,b", ",")?, ["a", "b"]);
        assert_eq!(split("abc", "x")?, ["abc"]);
        assert_eq!(split("", ",")?, [""]);
        Ok(())
    }

    /// Trino's documentation's examples.
    #[test]
    fn positions_of_the_nth_match_from_a_start() -> Result<()> {
        let regex = Regex::new(r"\b\d+\b").map_err(|e| invalid_argument(e.to_string()))?;
        let text = "I have 23 apples, 5 pears and 13 oranges";
        assert_eq!(match_position(&regex, text, 1, 1)?, 8);
        assert_eq!(match_position(&regex, text, 5, 1)?, 8);
        assert_eq!(match_position(&regex, text, 12, 1)?, 19);
        assert_eq!(match_position(&regex, text, 12, 2)?, 31);
        assert_eq!(match_position(&regex, text, 12, 3)?, -1);
        assert_eq!(match_position(&regex, "ab", 9, 1)?, -1);
        let anything = Regex::new("x*").map_err(|e| invalid_argument(e.to_string()))?;
        assert_eq!(match_position(&anything, "ab", 3, 1)?, -1);
        assert_eq!(match_position(&regex, "ü 1", 1, 1)?, 3);
        assert!(match_position(&regex, text, 0, 1).is_err());
        assert!(match_position(&regex, text, 1, 0).is_err());
        Ok(())
    }
}
