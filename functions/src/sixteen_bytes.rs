//! Trino's types of 16 bytes, held in Arrow's FixedSizeBinary(16) with a field that names the
//! type ([`TRINO_TYPE`]), so clients of both endpoints and the casts know which it is. Bytes
//! compare as Trino orders both.
//!
//! - `uuid` (also Arrow's canonical `arrow.uuid` extension, so ADBC reads UUIDs; Iceberg's
//!   `uuid` in a table): `UUID '…'` and `CAST(varchar AS UUID)` take the 36-character
//!   hyphenated form only, as Trino does; its text is lower-case hyphenated; `uuid()` is a
//!   random (version 4) UUID per row.
//! - `ipaddress`: an IPv6 address, IPv4 ones held IPv4-mapped (`::ffff:a.b.c.d`) as Trino holds
//!   them; its text is the dotted IPv4 form for those and RFC 5952's for the others.
//!
//! Text that is not a value of the type is INVALID_CAST_ARGUMENT.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
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

const EXTENSION_NAME: &str = "ARROW:extension:name";

/// One of Trino's 16-byte types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SixteenBytes {
    Uuid,
    IpAddress,
}

impl SixteenBytes {
    /// Its Trino name.
    pub fn name(self) -> &'static str {
        match self {
            SixteenBytes::Uuid => "uuid",
            SixteenBytes::IpAddress => "ipaddress",
        }
    }

    /// The function the dialect calls for `CAST(varchar AS T)` and `T '…'`.
    pub fn from_text(self) -> &'static str {
        match self {
            SixteenBytes::Uuid => "sqe_uuid",
            SixteenBytes::IpAddress => "sqe_ipaddress",
        }
    }

    /// The function the dialect calls for `CAST(t AS varchar)`.
    pub fn to_text(self) -> &'static str {
        match self {
            SixteenBytes::Uuid => "sqe_uuid_text",
            SixteenBytes::IpAddress => "sqe_ipaddress_text",
        }
    }

    /// Arrow's canonical extension for the type, where it has one.
    fn extension(self) -> Option<&'static str> {
        match self {
            SixteenBytes::Uuid => Some("arrow.uuid"),
            SixteenBytes::IpAddress => None,
        }
    }

    /// The field of a value of the type.
    pub fn field(self, name: &str, nullable: bool) -> Field {
        let mut metadata = HashMap::from([(TRINO_TYPE.to_string(), self.name().to_string())]);
        if let Some(extension) = self.extension() {
            metadata.insert(EXTENSION_NAME.to_string(), extension.to_string());
        }
        Field::new(name, DataType::FixedSizeBinary(16), nullable).with_metadata(metadata)
    }

    /// The 16-byte type `field` holds, if it holds one.
    pub fn of_field(field: &Field) -> Option<Self> {
        if field.data_type() != &DataType::FixedSizeBinary(16) {
            return None;
        }
        let metadata = field.metadata();
        [SixteenBytes::Uuid, SixteenBytes::IpAddress]
            .into_iter()
            .find(|t| {
                metadata.get(TRINO_TYPE).map(String::as_str) == Some(t.name())
                    || t.extension().is_some()
                        && metadata.get(EXTENSION_NAME).map(String::as_str) == t.extension()
            })
    }

    /// A value's bytes from its text, as Trino reads it.
    pub fn parse(self, text: &str) -> Option<[u8; 16]> {
        match self {
            SixteenBytes::Uuid => (text.len() == 36)
                .then(|| uuid::Uuid::try_parse(text).ok())
                .flatten()
                .map(|u| u.into_bytes()),
            SixteenBytes::IpAddress => match text.parse::<IpAddr>().ok()? {
                IpAddr::V4(v4) => Some(v4.to_ipv6_mapped().octets()),
                IpAddr::V6(v6) => Some(v6.octets()),
            },
        }
    }

    /// A value's text, as Trino writes it.
    pub fn text(self, bytes: [u8; 16]) -> String {
        match self {
            SixteenBytes::Uuid => uuid::Uuid::from_bytes(bytes).hyphenated().to_string(),
            SixteenBytes::IpAddress => {
                let v6 = Ipv6Addr::from(bytes);
                match v6.to_ipv4_mapped() {
                    Some(v4) => v4.to_string(),
                    None => v6.to_string(),
                }
            }
        }
    }

    /// The text of each value of `array` (16-byte values).
    pub fn texts(self, array: &ArrayRef) -> Result<datafusion::arrow::array::StringArray> {
        let bytes = array.as_fixed_size_binary_opt().ok_or_else(|| {
            DataFusionError::Internal(format!(
                "a {} is 16 bytes, not {}",
                self.name(),
                array.data_type()
            ))
        })?;
        let mut out = StringBuilder::with_capacity(bytes.len(), bytes.len() * 36);
        for value in bytes.iter() {
            match value.map(<[u8; 16]>::try_from) {
                None => out.append_null(),
                Some(Ok(value)) => out.append_value(self.text(value)),
                Some(Err(_)) => return exec_err!("a {} is 16 bytes", self.name()),
            }
        }
        Ok(out.finish())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    FromText,
    ToText,
    RandomUuid,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct SixteenByteFunction {
    of: SixteenBytes,
    kind: Kind,
    signature: Signature,
}

/// The cast of a 16-byte type to text.
pub(crate) fn to_text(of: SixteenBytes) -> SixteenByteFunction {
    SixteenByteFunction {
        of,
        kind: Kind::ToText,
        signature: Signature::user_defined(Volatility::Immutable),
    }
}

pub(crate) fn sixteen_byte_functions() -> Vec<SixteenByteFunction> {
    let mut functions = vec![SixteenByteFunction {
        of: SixteenBytes::Uuid,
        kind: Kind::RandomUuid,
        signature: Signature::nullary(Volatility::Volatile),
    }];
    for of in [SixteenBytes::Uuid, SixteenBytes::IpAddress] {
        functions.push(SixteenByteFunction {
            of,
            kind: Kind::FromText,
            signature: Signature::user_defined(Volatility::Immutable),
        });
        functions.push(to_text(of));
    }
    functions
}

impl ScalarUDFImpl for SixteenByteFunction {
    fn name(&self) -> &str {
        match self.kind {
            Kind::FromText => self.of.from_text(),
            Kind::ToText => self.of.to_text(),
            Kind::RandomUuid => "uuid",
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
            (Kind::FromText | Kind::ToText, [DataType::FixedSizeBinary(16) | DataType::Null]) => {
                Ok(vec![DataType::FixedSizeBinary(16)])
            }
            _ => {
                let expected = match self.kind {
                    Kind::FromText => "(varchar)".to_string(),
                    _ => format!("({})", self.of.name()),
                };
                Err(unexpected_parameters(self.name(), arg_types, &expected))
            }
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::ToText => DataType::Utf8,
            Kind::FromText | Kind::RandomUuid => DataType::FixedSizeBinary(16),
        })
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        Ok(Arc::new(match self.kind {
            Kind::ToText => Field::new(self.name(), DataType::Utf8, true),
            Kind::FromText => self.of.field(self.name(), true),
            Kind::RandomUuid => self.of.field(self.name(), false),
        }))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if self.kind == Kind::RandomUuid {
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
            (Kind::FromText, _) => Arc::new(self.parse_all(input)?),
            _ => Arc::new(self.of.texts(input)?),
        };
        result(&args, array)
    }
}

impl SixteenByteFunction {
    fn parse_all(
        &self,
        input: &ArrayRef,
    ) -> Result<datafusion::arrow::array::FixedSizeBinaryArray> {
        let text = strings(input)?;
        let text = text.as_string::<i32>();
        let mut out = FixedSizeBinaryBuilder::with_capacity(text.len(), 16);
        for value in text.iter() {
            match value {
                None => out.append_null(),
                Some(value) => match self.of.parse(value) {
                    Some(bytes) => out.append_value(bytes)?,
                    None => {
                        return Err(DataFusionError::ArrowError(
                            Box::new(ArrowError::CastError(format!(
                                "Cannot cast value to {}: {value}",
                                self.of.name().to_uppercase()
                            ))),
                            None,
                        ));
                    }
                },
            }
        }
        Ok(out.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(of: SixteenBytes, text: &str) -> Result<String> {
        let bytes = of
            .parse(text)
            .ok_or_else(|| DataFusionError::Internal(format!("{text} does not parse")))?;
        let mut builder = FixedSizeBinaryBuilder::with_capacity(2, 16);
        builder.append_value(bytes)?;
        builder.append_null();
        let array: ArrayRef = Arc::new(builder.finish());
        let back = of.texts(&array)?;
        assert!(back.is_null(1));
        Ok(back.value(0).to_string())
    }

    #[test]
    fn uuids_read_and_write_the_hyphenated_form() -> Result<()> {
        let text = "12151fd2-7586-11e9-8f9e-2a86e4085a59";
        assert_eq!(round_trip(SixteenBytes::Uuid, text)?, text);
        assert_eq!(
            round_trip(SixteenBytes::Uuid, "12151FD2-7586-11E9-8F9E-2A86E4085A59")?,
            text
        );
        for not_one in [
            "12151fd2758611e98f9e2a86e4085a59",
            "{12151fd2-7586-11e9-8f9e-2a86e4085a5}",
            "zz151fd2-7586-11e9-8f9e-2a86e4085a59",
        ] {
            assert!(SixteenBytes::Uuid.parse(not_one).is_none(), "{not_one}");
        }
        Ok(())
    }

    #[test]
    fn ip_addresses_keep_ipv4_as_ipv4() -> Result<()> {
        assert_eq!(
            round_trip(SixteenBytes::IpAddress, "192.168.0.1")?,
            "192.168.0.1"
        );
        assert_eq!(
            round_trip(SixteenBytes::IpAddress, "2001:DB8:0:0:0:0:0:1")?,
            "2001:db8::1"
        );
        assert_eq!(
            round_trip(SixteenBytes::IpAddress, "::ffff:1.2.3.4")?,
            "1.2.3.4"
        );
        assert!(SixteenBytes::IpAddress.parse("1.2.3").is_none());
        Ok(())
    }
}
