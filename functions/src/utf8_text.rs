//! `from_utf8(varbinary [, replacement])`: the bytes read as UTF-8, each invalid sequence
//! replaced as Trino replaces it (U+FFFD unless a replacement is given, a character, or the
//! empty string to drop it). A cast to varchar refuses invalid UTF-8, which is why the
//! function is not spelled as one.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, is_integer, is_string, result, unexpected_parameters};
use crate::error::invalid_argument;

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct FromUtf8 {
    signature: Signature,
}

impl FromUtf8 {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

fn is_binary(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::Null
    )
}

impl ScalarUDFImpl for FromUtf8 {
    fn name(&self) -> &str {
        "from_utf8"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [b] if is_binary(b) => Ok(vec![DataType::Binary]),
            [b, r] if is_binary(b) && is_string(r) => Ok(vec![DataType::Binary, DataType::Utf8]),
            [b, r] if is_binary(b) && is_integer(r) => Ok(vec![DataType::Binary, DataType::Int64]),
            _ => Err(unexpected_parameters(
                self.name(),
                arg_types,
                "(varbinary), (varbinary, varchar), (varbinary, bigint)",
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let Some(bytes) = columns.first() else {
            return exec_err!("from_utf8 takes an argument");
        };
        let bytes = cast(bytes, &DataType::Binary)?;
        let bytes = bytes.as_binary::<i32>();
        let replacements = columns.get(1).map(Replacements::of).transpose()?;
        let mut out = StringBuilder::with_capacity(bytes.len(), bytes.value_data().len());
        let mut text = String::new();
        for i in 0..bytes.len() {
            // Checked only for rows it replaces in: NULL bytes answer NULL whatever it is.
            let replacement = match &replacements {
                _ if bytes.is_null(i) => None,
                Some(r) => r.at(i)?,
                None => Some(Replacement::Char('\u{FFFD}')),
            };
            let Some(replacement) = replacement else {
                out.append_null();
                continue;
            };
            text.clear();
            repaired(bytes.value(i), replacement, &mut text)?;
            out.append_value(&text);
        }
        result(&args, Arc::new(out.finish()))
    }
}

/// What an invalid sequence becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Replacement {
    Char(char),
    Drop,
    /// A negative code point: Trino fails at the first invalid sequence (valid text passes).
    Fail(i64),
}

/// The replacement argument, a text or a code point per row.
enum Replacements {
    Text(ArrayRef),
    Points(ArrayRef),
}

impl Replacements {
    fn of(column: &ArrayRef) -> Result<Self> {
        Ok(if is_string(column.data_type()) {
            Self::Text(cast(column, &DataType::Utf8)?)
        } else {
            Self::Points(cast(column, &DataType::Int64)?)
        })
    }

    /// Row `i`'s replacement; `None` for NULL.
    fn at(&self, i: usize) -> Result<Option<Replacement>> {
        match self {
            Self::Text(text) => {
                let text = text.as_string::<i32>();
                if text.is_null(i) {
                    return Ok(None);
                }
                let mut chars = text.value(i).chars();
                let first = chars.next();
                if chars.next().is_some() {
                    return Err(invalid_argument(
                        "Replacement character string must empty or a single character",
                    ));
                }
                Ok(Some(first.map_or(Replacement::Drop, Replacement::Char)))
            }
            Self::Points(points) => {
                let points = points.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
                if points.is_null(i) {
                    return Ok(None);
                }
                let point = points.value(i);
                let invalid = || invalid_argument("Invalid replacement character");
                if point > 0x10FFFF {
                    return Err(invalid());
                }
                // Java's `(int)` of the bigint, as Trino takes it.
                let narrowed = point as i32;
                match u32::try_from(narrowed) {
                    Err(_) => Ok(Some(Replacement::Fail(point))),
                    Ok(p) => char::from_u32(p)
                        .map(|c| Some(Replacement::Char(c)))
                        .ok_or_else(invalid),
                }
            }
        }
    }
}

/// `bytes` as text, each invalid sequence as `replacement` (or dropped). A sequence is
/// invalid as far as it was read: a lead byte and the continuation bytes that followed it
/// before one was missing, or the whole sequence when it decodes to an overlong form, a
/// surrogate or beyond U+10FFFF (Trino's, airlift's, reading; five- and six-byte forms are
/// read whole and refused).
fn repaired(bytes: &[u8], replacement: Replacement, out: &mut String) -> Result<()> {
    let mut at = 0;
    while at < bytes.len() {
        let (decoded, length) = decode(&bytes[at..]);
        match (decoded, replacement) {
            (Some(c), _) => out.push(c),
            (None, Replacement::Char(r)) => out.push(r),
            (None, Replacement::Drop) => {}
            (None, Replacement::Fail(point)) => {
                return Err(invalid_argument(format!("Invalid code point: {point}")));
            }
        }
        at += length;
    }
    Ok(())
}

/// The character at the start of `bytes` and its length, or `None` and the length of the
/// invalid sequence there (at least 1).
fn decode(bytes: &[u8]) -> (Option<char>, usize) {
    let Some(&lead) = bytes.first() else {
        return (None, 1);
    };
    let (length, lead_bits) = match lead {
        0x00..=0x7F => return (Some(char::from(lead)), 1),
        0x80..=0xBF => return (None, 1),
        0xC0..=0xDF => (2, u32::from(lead & 0x1F)),
        0xE0..=0xEF => (3, u32::from(lead & 0x0F)),
        0xF0..=0xF7 => (4, u32::from(lead & 0x07)),
        0xF8..=0xFB => (5, 0),
        0xFC..=0xFD => (6, 0),
        _ => return (None, 1),
    };
    let mut point = lead_bits;
    for k in 1..length {
        match bytes.get(k) {
            Some(&b) if b & 0xC0 == 0x80 => point = (point << 6) | u32::from(b & 0x3F),
            _ => return (None, k),
        }
    }
    let smallest = match length {
        2 => 0x80,
        3 => 0x800,
        4 => 0x1_0000,
        _ => return (None, length),
    };
    match char::from_u32(point) {
        Some(c) if point >= smallest => (Some(c), length),
        _ => (None, length),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: &[u8], replacement: Option<char>) -> String {
        let mut out = String::new();
        let replacement = replacement.map_or(Replacement::Drop, Replacement::Char);
        assert!(repaired(bytes, replacement, &mut out).is_ok());
        out
    }

    #[test]
    fn a_negative_code_point_fails_only_where_it_would_replace() {
        let mut out = String::new();
        assert!(repaired(b"ok", Replacement::Fail(-1), &mut out).is_ok());
        assert!(repaired(b"\xFF", Replacement::Fail(-1), &mut out).is_err());
        let points: ArrayRef = Arc::new(datafusion::arrow::array::Int64Array::from(vec![
            -4_294_967_231,
            1_114_112,
            0xD800,
        ]));
        let points = Replacements::of(&points).ok();
        let at = |i| points.as_ref().map(|p| p.at(i).ok());
        // Java's (int) of -4294967231 is 65.
        assert_eq!(at(0), Some(Some(Some(Replacement::Char('A')))));
        assert_eq!(at(1), Some(None));
        assert_eq!(at(2), Some(None));
    }

    #[test]
    fn valid_text_is_kept_and_invalid_sequences_replaced_as_trino_reads_them() {
        assert_eq!(text("héllo ✓ 😀".as_bytes(), Some('?')), "héllo ✓ 😀");
        // A stray continuation byte and an invalid lead byte: one each.
        assert_eq!(text(b"a\x80b\xFFc", Some('?')), "a?b?c");
        // A truncated three-byte sequence is one, as far as it was read.
        assert_eq!(text(b"\xE2\x82a", Some('?')), "?a");
        // Overlong forms and surrogates are invalid whole.
        assert_eq!(text(b"\xC0\xAF", Some('?')), "?");
        assert_eq!(text(b"\xED\xA0\x80", Some('?')), "?");
        // Beyond U+10FFFF, and a five-byte form.
        assert_eq!(text(b"\xF4\x90\x80\x80", Some('?')), "?");
        assert_eq!(text(b"\xF8\x88\x80\x80\x80z", Some('?')), "?z");
        assert_eq!(text(b"a\xFFb", None), "ab");
        assert_eq!(text(b"\xFF", Some('\u{FFFD}')), "\u{FFFD}");
    }
}
