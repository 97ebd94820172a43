//! Trino's `uuid` type: 16 bytes (Arrow's FixedSizeBinary(16), Iceberg's `uuid`) in a field
//! marked `uuid` ([`TRINO_TYPE`]) and with Arrow's canonical `arrow.uuid` extension, so
//! clients of both endpoints see a UUID. Bytes compare as Trino orders UUIDs.
//!
//! - `CAST(varchar AS UUID)` and `UUID '…'` ([`UUID_FROM_TEXT`]): the 36-character hyphenated
//!   form only, as Trino reads it (anything else is INVALID_CAST_ARGUMENT);
//! - `CAST(uuid AS varchar)` ([`UUID_TO_TEXT`]): lower-case hyphenated text;
//! - `uuid()`: a random (version 4) UUID per row.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, FixedSizeBinaryBuilder, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::arrow::error::ArrowError;
use datafusion::common::{DataFusionError, Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, is_string, result, strings, unexpected_parameters};
use crate::bounded::TRINO_TYPE;

/// The dialect's name for `CAST(x AS UUID)` and `UUID '…'`.
pub const UUID_FROM_TEXT: &str = "sqe_uuid";
/// The dialect's name for `CAST(uuid AS varchar)`.
pub const UUID_TO_TEXT: &str = "sqe_uuid_text";

/// Arrow's canonical extension type name for UUIDs.
const ARROW_UUID: &str = "arrow.uuid";

/// The field of a `uuid` value.
pub fn uuid_field(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::FixedSizeBinary(16), nullable).with_metadata(HashMap::from([
        (TRINO_TYPE.to_string(), "uuid".to_string()),
        ("ARROW:extension:name".to_string(), ARROW_UUID.to_string()),
    ]))
}

/// Whether `field` holds `uuid` values.
pub fn is_uuid(field: &Field) -> bool {
    field.data_type() == &DataType::FixedSizeBinary(16)
        && (field.metadata().get(TRINO_TYPE).map(String::as_str) == Some("uuid")
            || field
                .metadata()
                .get("ARROW:extension:name")
                .map(String::as_str)
                == Some(ARROW_UUID))
}

/// A UUID's 16 bytes from Trino's text form.
pub fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    if text.len() != 36 {
        return None;
    }
    uuid::Uuid::try_parse(text).ok().map(|u| u.into_bytes())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    FromText,
    ToText,
    Random,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Uuids {
    kind: Kind,
    signature: Signature,
}

pub(crate) fn uuid_to_text() -> Uuids {
    Uuids {
        kind: Kind::ToText,
        signature: Signature::user_defined(Volatility::Immutable),
    }
}

pub(crate) fn uuid_functions() -> Vec<Uuids> {
    vec![
        Uuids {
            kind: Kind::FromText,
            signature: Signature::user_defined(Volatility::Immutable),
        },
        uuid_to_text(),
        Uuids {
            kind: Kind::Random,
            signature: Signature::nullary(Volatility::Volatile),
        },
    ]
}

impl ScalarUDFImpl for Uuids {
    fn name(&self) -> &str {
        match self.kind {
            Kind::FromText => UUID_FROM_TEXT,
            Kind::ToText => UUID_TO_TEXT,
            Kind::Random => "uuid",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match (self.kind, arg_types) {
            (Kind::FromText, [t]) if is_string(t) || *t == DataType::Null => {
                Ok(vec![DataType::Utf8])
            }
            (Kind::FromText | Kind::ToText, [DataType::FixedSizeBinary(16)]) => {
                Ok(vec![DataType::FixedSizeBinary(16)])
            }
            (Kind::ToText, [DataType::Null]) => Ok(vec![DataType::FixedSizeBinary(16)]),
            _ => Err(unexpected_parameters(
                self.name(),
                arg_types,
                match self.kind {
                    Kind::FromText => "(varchar)",
                    _ => "(uuid)",
                },
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::ToText => DataType::Utf8,
            Kind::FromText | Kind::Random => DataType::FixedSizeBinary(16),
        })
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        Ok(Arc::new(match self.kind {
            Kind::ToText => Field::new(self.name(), DataType::Utf8, true),
            Kind::FromText => uuid_field(self.name(), true),
            Kind::Random => uuid_field(self.name(), false),
        }))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if self.kind == Kind::Random {
            let mut out = FixedSizeBinaryBuilder::with_capacity(args.number_rows, 16);
            for _ in 0..args.number_rows {
                out.append_value(uuid::Uuid::new_v4().as_bytes())?;
            }
            return Ok(ColumnarValue::Array(Arc::new(out.finish())));
        }
        let columns = arrays(&args)?;
        let Some(input) = columns.first() else {
            return exec_err!("{} takes one argument", self.name());
        };
        let array: ArrayRef = match (self.kind, input.data_type()) {
            (Kind::FromText, DataType::FixedSizeBinary(16)) => Arc::clone(input),
            (Kind::FromText, _) => {
                let text = strings(input)?;
                let text = text.as_string::<i32>();
                let mut out = FixedSizeBinaryBuilder::with_capacity(text.len(), 16);
                for value in text.iter() {
                    match value {
                        None => out.append_null(),
                        Some(value) => match parse_uuid(value) {
                            Some(bytes) => out.append_value(bytes)?,
                            None => {
                                return Err(DataFusionError::ArrowError(
                                    Box::new(ArrowError::CastError(format!(
                                        "Cannot cast value to UUID: {value}"
                                    ))),
                                    None,
                                ));
                            }
                        },
                    }
                }
                Arc::new(out.finish())
            }
            (_, _) => Arc::new(uuid_text(input)?),
        };
        result(&args, array)
    }
}

/// UUIDs as Trino writes them: lower-case, hyphenated.
pub fn uuid_text(array: &ArrayRef) -> Result<datafusion::arrow::array::StringArray> {
    let bytes = array.as_fixed_size_binary_opt().ok_or_else(|| {
        DataFusionError::Internal(format!("a uuid is 16 bytes, not {}", array.data_type()))
    })?;
    let mut out = StringBuilder::with_capacity(bytes.len(), bytes.len() * 36);
    for value in bytes.iter() {
        match value.map(uuid::Uuid::from_slice) {
            None => out.append_null(),
            Some(Ok(u)) => out.append_value(u.hyphenated().to_string()),
            Some(Err(e)) => return exec_err!("not a uuid: {e}"),
        }
    }
    Ok(out.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::StringArray;

    #[test]
    fn text_and_bytes_round_trip() -> Result<()> {
        let text = "12151fd2-7586-11e9-8f9e-2a86e4085a59";
        let bytes = parse_uuid(text).ok_or_else(|| DataFusionError::Internal("parse".into()))?;
        let mut builder = FixedSizeBinaryBuilder::with_capacity(2, 16);
        builder.append_value(bytes)?;
        builder.append_null();
        let array: ArrayRef = Arc::new(builder.finish());
        let back = uuid_text(&array)?;
        assert_eq!(back, StringArray::from(vec![Some(text), None]));
        Ok(())
    }

    #[test]
    fn only_the_hyphenated_form_is_a_uuid() {
        assert!(parse_uuid("12151FD2-7586-11E9-8F9E-2A86E4085A59").is_some());
        assert!(parse_uuid("12151fd2758611e98f9e2a86e4085a59").is_none());
        assert!(parse_uuid("{12151fd2-7586-11e9-8f9e-2a86e4085a5}").is_none());
        assert!(parse_uuid("zz151fd2-7586-11e9-8f9e-2a86e4085a59").is_none());
    }
}
