//! SQL values as SQL/JSON items, as Trino converts the values a call hands its JSON: the
//! variables of `PASSING` and the elements of `json_array` and `json_object`. A value is read
//! by its type (a boolean, a number, text), or, written `FORMAT JSON`, as JSON text (a varchar,
//! or a varbinary in the encoding named); a `json` value is read as the JSON it holds.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BinaryBuilder};
use datafusion::arrow::datatypes::{
    DataType, Decimal128Type, Field, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, UInt8Type, UInt16Type, UInt32Type,
};
use datafusion::common::{DataFusionError, Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::error::{JsonErrorKind, json_error};
use crate::json_path::{Item, Number, parse_json};
use crate::real_text::real_text;

/// How an argument's value is read: as an SQL value, or as JSON text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Sql,
    Json(Encoding),
}

/// The encoding of JSON text held in a varbinary (`FORMAT JSON ENCODING …`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    Utf8,
    Utf16,
    Utf32,
}

impl Encoding {
    /// `UTF8`, `UTF16` or `UTF32`.
    pub(crate) fn named(name: &str) -> Option<Encoding> {
        match name {
            "UTF8" => Some(Encoding::Utf8),
            "UTF16" => Some(Encoding::Utf16),
            "UTF32" => Some(Encoding::Utf32),
            _ => None,
        }
    }

    /// `text` in this encoding (little-endian, as Trino writes UTF-16 and UTF-32).
    pub(crate) fn encoded(self, text: &str) -> Vec<u8> {
        match self {
            Encoding::Utf8 => text.as_bytes().to_vec(),
            Encoding::Utf16 => text.encode_utf16().flat_map(u16::to_le_bytes).collect(),
            Encoding::Utf32 => text
                .chars()
                .flat_map(|c| u32::from(c).to_le_bytes())
                .collect(),
        }
    }

    /// The text `bytes` hold in this encoding, `None` when they are not such text.
    fn decoded(self, bytes: &[u8]) -> Option<String> {
        match self {
            Encoding::Utf8 => String::from_utf8(bytes.to_vec()).ok(),
            Encoding::Utf16 => {
                let units: Vec<u16> = bytes
                    .chunks(2)
                    .map(|c| <[u8; 2]>::try_from(c).ok().map(u16::from_le_bytes))
                    .collect::<Option<_>>()?;
                String::from_utf16(&units).ok()
            }
            Encoding::Utf32 => bytes
                .chunks(4)
                .map(|c| {
                    <[u8; 4]>::try_from(c)
                        .ok()
                        .and_then(|b| char::from_u32(u32::from_le_bytes(b)))
                })
                .collect(),
        }
    }
}

impl Format {
    /// The constant the dialect writes: `SQL`, or `JSON` with an encoding (`JSON UTF16`).
    pub(crate) fn named(constant: &str) -> Option<Format> {
        let mut words = constant.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some("SQL"), None, _) => Some(Format::Sql),
            (Some("JSON"), None, _) => Some(Format::Json(Encoding::Utf8)),
            (Some("JSON"), Some(encoding), None) => Encoding::named(encoding).map(Format::Json),
            _ => None,
        }
    }
}

/// Whether a value of `field` can be read as an item in the format the dialect wrote as
/// `format` (`SQL`, `JSON [encoding]`): what the dialect checks while planning.
pub fn json_item_readable(field: &Field, format: &str) -> bool {
    Format::named(format).is_some_and(|format| is_convertible(field, format))
}

fn is_convertible(field: &Field, format: Format) -> bool {
    let t = field.data_type();
    match format {
        Format::Json(_) => matches!(
            t,
            DataType::Null
                | DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Binary
                | DataType::LargeBinary
                | DataType::BinaryView
        ),
        Format::Sql => {
            crate::is_json(field)
                || matches!(
                    t,
                    DataType::Null
                        | DataType::Boolean
                        | DataType::Int8
                        | DataType::Int16
                        | DataType::Int32
                        | DataType::Int64
                        | DataType::UInt8
                        | DataType::UInt16
                        | DataType::UInt32
                        | DataType::Float32
                        | DataType::Float64
                        | DataType::Decimal128(_, _)
                        | DataType::Utf8
                        | DataType::LargeUtf8
                        | DataType::Utf8View
                )
        }
    }
}

/// The item of `array`'s `row`: `None` for NULL. JSON text that does not read is a
/// JSON_INPUT_CONVERSION_ERROR (the caller's `ON ERROR` may answer it otherwise).
pub(crate) fn item_at(
    array: &ArrayRef,
    field: &Field,
    format: Format,
    row: usize,
) -> Result<Option<Item>> {
    // A NullArray has no validity buffer: its `is_null` says false.
    if array.is_null(row) || array.data_type() == &DataType::Null {
        return Ok(None);
    }
    let encoding = match format {
        Format::Json(encoding) => Some(encoding),
        Format::Sql if crate::is_json(field) => Some(Encoding::Utf8),
        Format::Sql => None,
    };
    if let Some(encoding) = encoding {
        let text = match array.data_type() {
            DataType::Binary => encoding.decoded(array.as_binary::<i32>().value(row)),
            DataType::LargeBinary => encoding.decoded(array.as_binary::<i64>().value(row)),
            DataType::BinaryView => encoding.decoded(array.as_binary_view().value(row)),
            _ => text_at(array, row),
        };
        let item = text.as_deref().and_then(parse_json);
        return match (item, text) {
            (Some(item), _) => Ok(Some(item)),
            (None, text) => Err(json_error(
                JsonErrorKind::InputConversion,
                format!(
                    "conversion to JSON failed: '{}' is not JSON",
                    text.unwrap_or_default()
                ),
            )),
        };
    }
    let number = |n: Number| Ok(Some(Item::Number(n)));
    match array.data_type() {
        DataType::Boolean => Ok(Some(Item::Bool(array.as_boolean().value(row)))),
        DataType::Int8 => number(Number::Integer(
            array.as_primitive::<Int8Type>().value(row).into(),
        )),
        DataType::Int16 => number(Number::Integer(
            array.as_primitive::<Int16Type>().value(row).into(),
        )),
        DataType::Int32 => number(Number::Integer(
            array.as_primitive::<Int32Type>().value(row).into(),
        )),
        DataType::Int64 => number(Number::Integer(
            array.as_primitive::<Int64Type>().value(row),
        )),
        DataType::UInt8 => number(Number::Integer(
            array.as_primitive::<UInt8Type>().value(row).into(),
        )),
        DataType::UInt16 => number(Number::Integer(
            array.as_primitive::<UInt16Type>().value(row).into(),
        )),
        DataType::UInt32 => number(Number::Integer(
            array.as_primitive::<UInt32Type>().value(row).into(),
        )),
        // A real is written as Java writes a float (`1.1`, not the double nearest it).
        DataType::Float32 => {
            let text = real_text(array.as_primitive::<Float32Type>().value(row));
            number(Number::Double(text.parse().unwrap_or(f64::NAN)))
        }
        DataType::Float64 => number(Number::Double(
            array.as_primitive::<Float64Type>().value(row),
        )),
        DataType::Decimal128(_, scale) => {
            let value = array.as_primitive::<Decimal128Type>().value(row);
            match u32::try_from(*scale) {
                Ok(scale) => number(Number::Decimal(value, scale)),
                Err(_) => Err(not_convertible(field)),
            }
        }
        _ => match text_at(array, row) {
            Some(text) => Ok(Some(Item::Text(text))),
            None => Err(not_convertible(field)),
        },
    }
}

fn text_at(array: &ArrayRef, row: usize) -> Option<String> {
    match array.data_type() {
        DataType::Utf8 => Some(array.as_string::<i32>().value(row).to_string()),
        DataType::LargeUtf8 => Some(array.as_string::<i64>().value(row).to_string()),
        DataType::Utf8View => Some(array.as_string_view().value(row).to_string()),
        _ => None,
    }
}

pub(crate) fn not_convertible(field: &Field) -> DataFusionError {
    DataFusionError::NotImplemented(format!(
        "a value of type {} cannot be converted to JSON",
        crate::types::trino_type_name(field.data_type())
    ))
}

/// The name the dialect calls for `json_query … RETURNING varbinary FORMAT JSON ENCODING e`:
/// `sqe_encoded_text(text, 'UTF16')`, the text's bytes in the encoding.
pub const ENCODED_TEXT: &str = "sqe_encoded_text";

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct EncodedText {
    signature: Signature,
}

impl EncodedText {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::exact(
                vec![DataType::Utf8, DataType::Utf8],
                Volatility::Immutable,
            ),
        }
    }
}

impl ScalarUDFImpl for EncodedText {
    fn name(&self) -> &str {
        ENCODED_TEXT
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Binary)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let encoding = match args.args.get(1) {
            Some(ColumnarValue::Scalar(name)) => {
                name.try_as_str().flatten().and_then(Encoding::named)
            }
            _ => None,
        };
        let Some(encoding) = encoding else {
            return exec_err!("{ENCODED_TEXT} takes text and a constant encoding");
        };
        let columns = crate::args::arrays(&args)?;
        let Some(text) = columns.first() else {
            return exec_err!("{ENCODED_TEXT} takes text and a constant encoding");
        };
        let text = text.as_string::<i32>();
        let mut out = BinaryBuilder::with_capacity(text.len(), 0);
        for value in text.iter() {
            out.append_option(value.map(|v| encoding.encoded(v)));
        }
        crate::args::result(&args, Arc::new(out.finish()))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{BinaryArray, Decimal128Array, Float32Array, StringArray};

    use super::*;

    fn json(array: ArrayRef, format: Format) -> Result<Option<String>> {
        let field = Field::new("v", array.data_type().clone(), true);
        Ok(item_at(&array, &field, format, 0)?.map(|item| item.json()))
    }

    #[test]
    fn values_become_items_by_their_type() -> Result<()> {
        let decimal = Decimal128Array::from(vec![150]).with_precision_and_scale(3, 2)?;
        assert_eq!(
            json(Arc::new(decimal), Format::Sql)?.as_deref(),
            Some("1.50")
        );
        let real = Float32Array::from(vec![1.1]);
        assert_eq!(json(Arc::new(real), Format::Sql)?.as_deref(), Some("1.1"));
        let text = StringArray::from(vec!["[1, 2]"]);
        assert_eq!(
            json(Arc::new(text.clone()), Format::Sql)?.as_deref(),
            Some("\"[1, 2]\"")
        );
        assert_eq!(
            json(Arc::new(text), Format::Json(Encoding::Utf8))?.as_deref(),
            Some("[1,2]")
        );
        let null = StringArray::from(vec![None::<&str>]);
        assert_eq!(json(Arc::new(null), Format::Sql)?, None);
        Ok(())
    }

    #[test]
    fn json_text_in_bytes_is_read_in_its_encoding() -> Result<()> {
        for encoding in [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32] {
            let bytes = encoding.encoded("{\"a\" : \"é\"}");
            let array = BinaryArray::from(vec![bytes.as_slice()]);
            assert_eq!(
                json(Arc::new(array), Format::Json(encoding))?.as_deref(),
                Some("{\"a\":\"é\"}")
            );
        }
        let broken = StringArray::from(vec!["[..."]);
        assert!(json(Arc::new(broken), Format::Json(Encoding::Utf8)).is_err());
        Ok(())
    }

    #[test]
    fn formats_read_from_their_constants() {
        assert_eq!(Format::named("SQL"), Some(Format::Sql));
        assert_eq!(Format::named("JSON"), Some(Format::Json(Encoding::Utf8)));
        assert_eq!(
            Format::named("JSON UTF16"),
            Some(Format::Json(Encoding::Utf16))
        );
        assert_eq!(Format::named("JSON UTF7"), None);
    }
}
