//! `substr`, `lpad`/`rpad`, `split_part`, `split` and `hamming_distance` as Trino defines
//! them: positions count code points from 1, a negative start counts from the end, a part past
//! the last is NULL, an empty delimiter or padding is refused.

use std::sync::Arc;

use crate::args::{arrays, is_integer, is_string, longs, result, string_list, strings};
use crate::error::invalid_argument;
use datafusion::arrow::array::{Array, AsArray, Int64Builder, ListBuilder, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

/// `substr(string, start [, length])`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Substr {
    signature: Signature,
    aliases: Vec<String>,
}

impl Substr {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
            aliases: vec!["substring".into()],
        }
    }
}

/// The code points of `s` from `start` (1-based, negative from the end) for `length`.
fn substr(s: &str, start: i64, length: Option<i64>) -> &str {
    let count = s.chars().count() as i64;
    if start == 0 || length.is_some_and(|l| l <= 0) {
        return "";
    }
    let first = if start > 0 { start - 1 } else { count + start };
    if first < 0 || first >= count {
        return "";
    }
    let end = match length {
        Some(l) => first.saturating_add(l).min(count),
        None => count,
    };
    let byte = |n: i64| {
        s.char_indices()
            .nth(n as usize)
            .map_or(s.len(), |(at, _)| at)
    };
    &s[byte(first)..byte(end)]
}

impl ScalarUDFImpl for Substr {
    fn name(&self) -> &str {
        "substr"
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [s, start] if is_string(s) && is_integer(start) => {
                Ok(vec![DataType::Utf8, DataType::Int64])
            }
            [s, start, length] if is_string(s) && is_integer(start) && is_integer(length) => {
                Ok(vec![DataType::Utf8, DataType::Int64, DataType::Int64])
            }
            _ => Err(crate::args::unexpected_parameters(
                "substr",
                arg_types,
                "(varchar, bigint [, bigint])",
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let (Some(s), Some(start)) = (columns.first(), columns.get(1)) else {
            return exec_err!("substr takes 2 or 3 arguments");
        };
        let s = strings(s)?;
        let s = s.as_string::<i32>();
        let start = longs(start)?;
        let length = columns.get(2).map(longs).transpose()?;
        let mut out = StringBuilder::with_capacity(s.len(), s.value_data().len());
        for i in 0..s.len() {
            let len = length.as_ref().map(|l| (!l.is_null(i)).then(|| l.value(i)));
            if s.is_null(i) || start.is_null(i) || len == Some(None) {
                out.append_null();
            } else {
                out.append_value(substr(s.value(i), start.value(i), len.flatten()));
            }
        }
        result(&args, Arc::new(out.finish()))
    }
}

/// The longest result `lpad`/`rpad` make. Trino allows 2^31 - 1 code points; SQE refuses more
/// than this rather than let one row take gigabytes of the coordinator's memory.
const MAX_PADDED: i64 = 1 << 24;

/// `lpad(string, size, padstring)` / `rpad`: `string` padded on its left (right) to `size`
/// code points with `padstring` repeated, or its first `size` code points when longer. An
/// empty `padstring` or a negative `size` is refused as Trino refuses them (DataFusion's
/// answered the string). Without `padstring` (DataFusion's two-argument form), spaces.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Pad {
    left: bool,
    signature: Signature,
}

impl Pad {
    pub(crate) fn left() -> Self {
        Self::new(true)
    }

    pub(crate) fn right() -> Self {
        Self::new(false)
    }

    fn new(left: bool) -> Self {
        Self {
            left,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    fn padded(&self, s: &str, size: i64, pad: &str) -> Result<String> {
        if !(0..=MAX_PADDED).contains(&size) {
            return Err(invalid_argument(format!(
                "Target length must be in the range [0..{MAX_PADDED}]"
            )));
        }
        if pad.is_empty() {
            return Err(invalid_argument("Padding string must not be empty"));
        }
        let size = size as usize;
        let count = s.chars().count();
        if size <= count {
            let end = s.char_indices().nth(size).map_or(s.len(), |(at, _)| at);
            return Ok(s[..end].to_string());
        }
        let fill: String = pad.chars().cycle().take(size - count).collect();
        Ok(if self.left {
            fill + s
        } else {
            format!("{s}{fill}")
        })
    }
}

impl ScalarUDFImpl for Pad {
    fn name(&self) -> &str {
        if self.left { "lpad" } else { "rpad" }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [s, size] if is_string(s) && is_integer(size) => {
                Ok(vec![DataType::Utf8, DataType::Int64])
            }
            [s, size, pad] if is_string(s) && is_integer(size) && is_string(pad) => {
                Ok(vec![DataType::Utf8, DataType::Int64, DataType::Utf8])
            }
            _ => Err(crate::args::unexpected_parameters(
                self.name(),
                arg_types,
                "(varchar, bigint, varchar)",
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let (Some(s), Some(size)) = (columns.first(), columns.get(1)) else {
            return exec_err!("{} takes 2 or 3 arguments", self.name());
        };
        let s = strings(s)?;
        let s = s.as_string::<i32>();
        let size = longs(size)?;
        let pad = columns.get(2).map(strings).transpose()?;
        let pad = pad.as_ref().map(|p| p.as_string::<i32>());
        let mut out = StringBuilder::with_capacity(s.len(), s.value_data().len());
        for i in 0..s.len() {
            let pad_of_row = match pad {
                Some(p) if p.is_null(i) => None,
                Some(p) => Some(p.value(i)),
                None => Some(" "),
            };
            match pad_of_row {
                Some(p) if !s.is_null(i) && !size.is_null(i) => {
                    out.append_value(self.padded(s.value(i), size.value(i), p)?);
                }
                _ => out.append_null(),
            }
        }
        result(&args, Arc::new(out.finish()))
    }
}

/// `strpos(string, substring, instance)` (spelled `sqe_strpos_instance` for the dialect): the
/// code point position of the `instance`-th occurrence of `substring`, counted from the end
/// when `instance` is negative (occurrences may overlap, as Trino finds them); 0 when there is
/// none, 1 for an empty substring, and `instance` 0 refused.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct StrposInstance {
    signature: Signature,
}

impl StrposInstance {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

fn instance_position(s: &str, substring: &str, instance: i64) -> Result<i64> {
    if instance == 0 {
        return Err(invalid_argument(
            "'instance' must be a positive or negative number.",
        ));
    }
    if substring.is_empty() {
        return Ok(1);
    }
    let starts: Vec<usize> = s
        .char_indices()
        .map(|(at, _)| at)
        .filter(|at| s[*at..].starts_with(substring))
        .collect();
    let nth = usize::try_from(instance.unsigned_abs()).unwrap_or(usize::MAX);
    let found = if instance > 0 {
        starts.get(nth - 1)
    } else {
        starts.len().checked_sub(nth).and_then(|i| starts.get(i))
    };
    Ok(found.map_or(0, |at| s[..*at].chars().count() as i64 + 1))
}

impl ScalarUDFImpl for StrposInstance {
    fn name(&self) -> &str {
        "sqe_strpos_instance"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [s, substring, instance]
                if is_string(s) && is_string(substring) && is_integer(instance) =>
            {
                Ok(vec![DataType::Utf8, DataType::Utf8, DataType::Int64])
            }
            _ => Err(crate::args::unexpected_parameters(
                "strpos",
                arg_types,
                "(varchar, varchar, bigint)",
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [s, substring, instance] = columns.as_slice() else {
            return exec_err!("strpos takes 2 or 3 arguments");
        };
        let (s, substring) = (strings(s)?, strings(substring)?);
        let (s, substring) = (s.as_string::<i32>(), substring.as_string::<i32>());
        let instance = longs(instance)?;
        let mut out = Int64Builder::with_capacity(s.len());
        for i in 0..s.len() {
            if s.is_null(i) || substring.is_null(i) || instance.is_null(i) {
                out.append_null();
            } else {
                out.append_value(instance_position(
                    s.value(i),
                    substring.value(i),
                    instance.value(i),
                )?);
            }
        }
        result(&args, Arc::new(out.finish()))
    }
}

/// `normalize(string [, form])` (spelled `sqe_normalize(string, 'FORM')` for the dialect): the
/// string in Unicode normal form NFC (the default), NFD, NFKC or NFKD.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Normalize {
    signature: Signature,
}

impl Normalize {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

fn normalized(s: &str, form: &str) -> Result<String> {
    use unicode_normalization::UnicodeNormalization;
    Ok(match form.to_ascii_uppercase().as_str() {
        "NFC" => s.nfc().collect(),
        "NFD" => s.nfd().collect(),
        "NFKC" => s.nfkc().collect(),
        "NFKD" => s.nfkd().collect(),
        _ => {
            return Err(invalid_argument(format!(
                "Normalization form must be one of [NFD, NFC, NFKD, NFKC]: {form}"
            )));
        }
    })
}

impl ScalarUDFImpl for Normalize {
    fn name(&self) -> &str {
        "sqe_normalize"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        crate::args::all_text(self.name(), arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [s, form] = columns.as_slice() else {
            return exec_err!("normalize takes a string and a form");
        };
        let (s, form) = (strings(s)?, strings(form)?);
        let (s, form) = (s.as_string::<i32>(), form.as_string::<i32>());
        let mut out = StringBuilder::with_capacity(s.len(), s.value_data().len());
        for i in 0..s.len() {
            if s.is_null(i) || form.is_null(i) {
                out.append_null();
            } else {
                out.append_value(normalized(s.value(i), form.value(i))?);
            }
        }
        result(&args, Arc::new(out.finish()))
    }
}

/// `split_part(string, delimiter, index)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct SplitPart {
    signature: Signature,
}

impl SplitPart {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// The `index`th field (1-based) of `s` split at `delimiter`; `None` past the last. An
/// empty delimiter leaves the string whole.
fn split_part<'a>(s: &'a str, delimiter: &str, index: i64) -> Option<&'a str> {
    let n = usize::try_from(index - 1).ok()?;
    if delimiter.is_empty() {
        return (n == 0).then_some(s);
    }
    s.split(delimiter).nth(n)
}

impl ScalarUDFImpl for SplitPart {
    fn name(&self) -> &str {
        "split_part"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [s, d, i] if is_string(s) && is_string(d) && is_integer(i) => {
                Ok(vec![DataType::Utf8, DataType::Utf8, DataType::Int64])
            }
            _ => Err(crate::args::unexpected_parameters(
                "split_part",
                arg_types,
                "(varchar, varchar, bigint)",
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [s, delimiter, index] = columns.as_slice() else {
            return exec_err!("split_part takes 3 arguments");
        };
        let (s, delimiter) = (strings(s)?, strings(delimiter)?);
        let (s, delimiter) = (s.as_string::<i32>(), delimiter.as_string::<i32>());
        let index = longs(index)?;
        let mut out = StringBuilder::with_capacity(s.len(), s.value_data().len());
        for i in 0..s.len() {
            if s.is_null(i) || delimiter.is_null(i) || index.is_null(i) {
                out.append_null();
                continue;
            }
            if index.value(i) <= 0 {
                return Err(invalid_argument("Index must be greater than zero"));
            }
            out.append_option(split_part(s.value(i), delimiter.value(i), index.value(i)));
        }
        result(&args, Arc::new(out.finish()))
    }
}

/// `split(string, delimiter [, limit])`: at most `limit` parts, the last holding the rest.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Split {
    signature: Signature,
}

impl Split {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// The parts of `s` at `delimiter`, at most `limit` of them; `None` for an argument Trino
/// refuses, with its reason.
fn split<'a>(
    s: &'a str,
    delimiter: &str,
    limit: Option<i64>,
) -> Result<Vec<&'a str>, &'static str> {
    let limit = match limit {
        None => usize::MAX,
        Some(l) if l <= 0 => return Err("Limit must be positive"),
        Some(l) if l > i64::from(i32::MAX) => return Err("Limit is too large"),
        Some(l) => usize::try_from(l).map_err(|_| "Limit is too large")?,
    };
    if delimiter.is_empty() {
        return Err("The delimiter may not be the empty string");
    }
    Ok(s.splitn(limit, delimiter).collect())
}

impl ScalarUDFImpl for Split {
    fn name(&self) -> &str {
        "split"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [s, d] if is_string(s) && is_string(d) => Ok(vec![DataType::Utf8, DataType::Utf8]),
            [s, d, l] if is_string(s) && is_string(d) && is_integer(l) => {
                Ok(vec![DataType::Utf8, DataType::Utf8, DataType::Int64])
            }
            _ => Err(crate::args::unexpected_parameters(
                "split",
                arg_types,
                "(varchar, varchar [, bigint])",
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(string_list())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let (s, delimiter) = match columns.as_slice() {
            [s, d] | [s, d, _] => (strings(s)?, strings(d)?),
            _ => return exec_err!("split takes 2 or 3 arguments"),
        };
        let limit = columns.get(2).map(longs).transpose()?;
        let (s, delimiter) = (s.as_string::<i32>(), delimiter.as_string::<i32>());
        let mut out = ListBuilder::new(StringBuilder::new());
        for i in 0..s.len() {
            let limit_null = limit.as_ref().is_some_and(|l| l.is_null(i));
            if s.is_null(i) || delimiter.is_null(i) || limit_null {
                out.append_null();
                continue;
            }
            let parts = split(
                s.value(i),
                delimiter.value(i),
                limit.as_ref().map(|l| l.value(i)),
            )
            .map_err(invalid_argument)?;
            for part in parts {
                out.values().append_value(part);
            }
            out.append(true);
        }
        result(&args, Arc::new(out.finish()))
    }
}

/// `hamming_distance(string1, string2)`: the positions (code points) where two strings of
/// the same length differ.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct HammingDistance {
    signature: Signature,
}

impl HammingDistance {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

fn hamming_distance(a: &str, b: &str) -> Option<i64> {
    let (mut a, mut b) = (a.chars(), b.chars());
    let mut distance = 0;
    loop {
        match (a.next(), b.next()) {
            (None, None) => return Some(distance),
            (Some(x), Some(y)) => distance += i64::from(x != y),
            _ => return None,
        }
    }
}

impl ScalarUDFImpl for HammingDistance {
    fn name(&self) -> &str {
        "hamming_distance"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        crate::args::all_text("hamming_distance", arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [a, b] = columns.as_slice() else {
            return exec_err!("hamming_distance takes 2 arguments");
        };
        let (a, b) = (strings(a)?, strings(b)?);
        let (a, b) = (a.as_string::<i32>(), b.as_string::<i32>());
        let mut out = Int64Builder::with_capacity(a.len());
        for i in 0..a.len() {
            if a.is_null(i) || b.is_null(i) {
                out.append_null();
                continue;
            }
            let distance = hamming_distance(a.value(i), b.value(i)).ok_or_else(|| {
                invalid_argument(
                    "The input strings to hamming_distance function must have the same length",
                )
            })?;
            out.append_value(distance);
        }
        result(&args, Arc::new(out.finish()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substr_counts_code_points_and_negative_starts_from_the_end() {
        assert_eq!(substr("abc", -2, None), "bc");
        assert_eq!(substr("abc", 0, None), "");
        assert_eq!(substr("abc", 2, Some(1)), "b");
        assert_eq!(substr("abc", 2, Some(-1)), "");
        assert_eq!(substr("abc", 5, None), "");
        assert_eq!(substr("abc", -5, None), "");
        assert_eq!(substr("héllo", 2, Some(3)), "éll");
        assert_eq!(substr("😂ab", -2, Some(5)), "ab");
    }

    #[test]
    fn split_part_past_the_last_field_is_null() {
        assert_eq!(split_part("a,b,c", ",", 2), Some("b"));
        assert_eq!(split_part("a,,c", ",", 2), Some(""));
        assert_eq!(split_part("a,b,c", ",", 4), None);
        assert_eq!(split_part("abc", "", 1), Some("abc"));
        assert_eq!(split_part("abc", "", 2), None);
    }

    #[test]
    fn split_keeps_the_rest_in_the_last_part_and_refuses_what_trino_refuses() {
        assert_eq!(split("a.b.c", ".", None), Ok(vec!["a", "b", "c"]));
        assert_eq!(split("", ",", None), Ok(vec![""]));
        assert_eq!(split("a.b.", ".", None), Ok(vec!["a", "b", ""]));
        assert_eq!(split("a.b..", ".", Some(3)), Ok(vec!["a", "b", "."]));
        assert_eq!(split(".a.b.c", ".", Some(2)), Ok(vec!["", "a.b.c"]));
        assert_eq!(split("a.b.c", ".", Some(1)), Ok(vec!["a.b.c"]));
        assert!(split("a.b.c", "", None).is_err());
        assert!(split("a.b.c", ".", Some(0)).is_err());
        assert!(split("a.b.c", ".", Some(2_147_483_648)).is_err());
    }

    #[test]
    fn hamming_distance_counts_code_points_of_equal_lengths() {
        assert_eq!(hamming_distance("abc", "abd"), Some(1));
        assert_eq!(hamming_distance("", ""), Some(0));
        assert_eq!(hamming_distance("héllo", "hallo"), Some(1));
        assert_eq!(hamming_distance("ab", "abc"), None);
    }
}
