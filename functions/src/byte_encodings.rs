//! Trino's functions between values and their bytes that DataFusion lacks: integers as
//! big-endian bytes (`to_big_endian_32`/`_64` and back), floating-point numbers as IEEE 754
//! bytes (`to_ieee754_32`/`_64` and back) and varbinary as base32 text (`to_base32`,
//! `from_base32`, RFC 4648 with padding). Bytes of the wrong length are refused in Trino's
//! words.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BinaryBuilder, PrimitiveArray, StringBuilder,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    ArrowPrimitiveType, DataType, Float32Type, Float64Type, Int32Type, Int64Type,
};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, is_string, result, unexpected_parameters};
use crate::error::invalid_argument;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Encoding {
    ToBigEndian32,
    FromBigEndian32,
    ToBigEndian64,
    FromBigEndian64,
    ToIeee754x32,
    FromIeee754x32,
    ToIeee754x64,
    FromIeee754x64,
    ToBase32,
    FromBase32,
}

impl Encoding {
    const ALL: [Encoding; 10] = [
        Encoding::ToBigEndian32,
        Encoding::FromBigEndian32,
        Encoding::ToBigEndian64,
        Encoding::FromBigEndian64,
        Encoding::ToIeee754x32,
        Encoding::FromIeee754x32,
        Encoding::ToIeee754x64,
        Encoding::FromIeee754x64,
        Encoding::ToBase32,
        Encoding::FromBase32,
    ];

    fn name(self) -> &'static str {
        match self {
            Encoding::ToBigEndian32 => "to_big_endian_32",
            Encoding::FromBigEndian32 => "from_big_endian_32",
            Encoding::ToBigEndian64 => "to_big_endian_64",
            Encoding::FromBigEndian64 => "from_big_endian_64",
            Encoding::ToIeee754x32 => "to_ieee754_32",
            Encoding::FromIeee754x32 => "from_ieee754_32",
            Encoding::ToIeee754x64 => "to_ieee754_64",
            Encoding::FromIeee754x64 => "from_ieee754_64",
            Encoding::ToBase32 => "to_base32",
            Encoding::FromBase32 => "from_base32",
        }
    }

    /// What it takes (after coercion), what it answers, and Trino's signature's arguments.
    fn types(self) -> (DataType, DataType, &'static str) {
        match self {
            Encoding::ToBigEndian32 => (DataType::Int32, DataType::Binary, "(integer)"),
            Encoding::ToBigEndian64 => (DataType::Int64, DataType::Binary, "(bigint)"),
            Encoding::ToIeee754x32 => (DataType::Float32, DataType::Binary, "(real)"),
            Encoding::ToIeee754x64 => (DataType::Float64, DataType::Binary, "(double)"),
            Encoding::FromBigEndian32 => (DataType::Binary, DataType::Int32, "(varbinary)"),
            Encoding::FromBigEndian64 => (DataType::Binary, DataType::Int64, "(varbinary)"),
            Encoding::FromIeee754x32 => (DataType::Binary, DataType::Float32, "(varbinary)"),
            Encoding::FromIeee754x64 => (DataType::Binary, DataType::Float64, "(varbinary)"),
            Encoding::ToBase32 => (DataType::Binary, DataType::Utf8, "(varbinary)"),
            Encoding::FromBase32 => (DataType::Utf8, DataType::Binary, "(varchar)"),
        }
    }

    /// Whether an argument of type `t` is taken (and cast to [`Self::types`]'s).
    fn takes(self, t: &DataType) -> bool {
        let binary = matches!(
            t,
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::Null
        );
        match self {
            // A narrower integer widens; a wider one is not taken (Trino's coercions).
            Encoding::ToBigEndian32 => {
                matches!(
                    t,
                    DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Null
                )
            }
            Encoding::ToBigEndian64 => t.is_integer() || *t == DataType::Null,
            Encoding::ToIeee754x32 => {
                matches!(t, DataType::Float32 | DataType::Null) || t.is_integer()
            }
            Encoding::ToIeee754x64 => t.is_numeric() || *t == DataType::Null,
            Encoding::FromBase32 => is_string(t),
            _ => binary,
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct ByteEncoding {
    kind: Encoding,
    signature: Signature,
}

pub(crate) fn byte_encoding_functions() -> Vec<ByteEncoding> {
    Encoding::ALL
        .into_iter()
        .map(|kind| ByteEncoding {
            kind,
            signature: Signature::user_defined(Volatility::Immutable),
        })
        .collect()
}

impl ScalarUDFImpl for ByteEncoding {
    fn name(&self) -> &str {
        self.kind.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let (takes, _, expected) = self.kind.types();
        match arg_types {
            [t] if self.kind.takes(t) => Ok(vec![takes]),
            _ => Err(unexpected_parameters(self.name(), arg_types, expected)),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.kind.types().1)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [column] = columns.as_slice() else {
            return exec_err!("{} takes one argument", self.name());
        };
        let column = cast(column, &self.kind.types().0)?;
        let answer = encode(self.kind, &column)?;
        result(&args, answer)
    }
}

/// Exactly `N` bytes, or Trino's refusal in `message`'s words.
fn exactly<const N: usize>(bytes: &[u8], message: &impl Fn(usize) -> String) -> Result<[u8; N]> {
    bytes
        .try_into()
        .map_err(|_| invalid_argument(message(bytes.len())))
}

fn encode(kind: Encoding, column: &ArrayRef) -> Result<ArrayRef> {
    let rows = column.len();
    let big_endian =
        |n: usize| move |got: usize| format!("expected {n}-byte input, but got instead: {got}");
    let ieee = |n: usize| {
        move |_: usize| format!("Input floating-point value must be exactly {n} bytes long")
    };
    Ok(match kind {
        Encoding::ToBigEndian32 => binary(column.as_primitive::<Int32Type>().iter(), |v| {
            v.to_be_bytes().to_vec()
        }),
        Encoding::ToBigEndian64 => binary(column.as_primitive::<Int64Type>().iter(), |v| {
            v.to_be_bytes().to_vec()
        }),
        Encoding::ToIeee754x32 => binary(column.as_primitive::<Float32Type>().iter(), |v| {
            v.to_be_bytes().to_vec()
        }),
        Encoding::ToIeee754x64 => binary(column.as_primitive::<Float64Type>().iter(), |v| {
            v.to_be_bytes().to_vec()
        }),
        Encoding::FromBigEndian32 => {
            from_bytes::<Int32Type, 4>(column, big_endian(4), i32::from_be_bytes)?
        }
        Encoding::FromBigEndian64 => {
            from_bytes::<Int64Type, 8>(column, big_endian(8), i64::from_be_bytes)?
        }
        Encoding::FromIeee754x32 => {
            from_bytes::<Float32Type, 4>(column, ieee(4), f32::from_be_bytes)?
        }
        Encoding::FromIeee754x64 => {
            from_bytes::<Float64Type, 8>(column, ieee(8), f64::from_be_bytes)?
        }
        Encoding::ToBase32 => {
            let mut out = StringBuilder::with_capacity(rows, rows * 8);
            for bytes in column.as_binary::<i32>() {
                out.append_option(bytes.map(base32));
            }
            Arc::new(out.finish())
        }
        Encoding::FromBase32 => {
            let mut out = BinaryBuilder::with_capacity(rows, rows * 5);
            for text in column.as_string::<i32>() {
                out.append_option(text.map(from_base32).transpose()?);
            }
            Arc::new(out.finish())
        }
    })
}

/// Values of `N` bytes each read back with `read`; other lengths refused with `message`.
fn from_bytes<T: ArrowPrimitiveType, const N: usize>(
    column: &ArrayRef,
    message: impl Fn(usize) -> String,
    read: fn([u8; N]) -> T::Native,
) -> Result<ArrayRef> {
    let values = column
        .as_binary::<i32>()
        .iter()
        .map(|bytes| {
            bytes
                .map(|b| exactly::<N>(b, &message).map(read))
                .transpose()
        })
        .collect::<Result<PrimitiveArray<T>>>()?;
    Ok(Arc::new(values))
}

fn binary<T>(values: impl Iterator<Item = Option<T>>, bytes: impl Fn(T) -> Vec<u8>) -> ArrayRef {
    let mut out = BinaryBuilder::new();
    for value in values {
        out.append_option(value.map(&bytes));
    }
    Arc::new(out.finish())
}

const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// RFC 4648 base32, padded with `=` to whole blocks of eight characters.
fn base32(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    for block in bytes.chunks(5) {
        let mut buffer = [0u8; 5];
        buffer[..block.len()].copy_from_slice(block);
        let bits = buffer
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
        // Characters that carry the block's bits; the rest are padding.
        let used = (block.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < used {
                out.push(char::from(BASE32[((bits >> (35 - 5 * i)) & 31) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// RFC 4648 base32 read back; padding may be left out.
fn from_base32(text: &str) -> Result<Vec<u8>> {
    let refuse = || invalid_argument(format!("Invalid input for base32: {text}"));
    let digits = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(digits.len() * 5 / 8);
    let (mut bits, mut count) = (0u64, 0u32);
    for c in digits.bytes() {
        let value = BASE32
            .iter()
            .position(|d| *d == c.to_ascii_uppercase())
            .ok_or_else(refuse)?;
        bits = (bits << 5) | value as u64;
        count += 5;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    // What is left must be padding bits of a whole character count.
    if matches!(digits.len() % 8, 1 | 3 | 6) || bits != 0 {
        return Err(refuse());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4648's test vectors.
    #[test]
    fn base32_as_rfc_4648_writes_it() -> Result<()> {
        for (bytes, text) in [
            ("", ""),
            ("f", "MY======"),
            ("fo", "MZXQ===="),
            ("foo", "MZXW6==="),
            ("foob", "MZXW6YQ="),
            ("fooba", "MZXW6YTB"),
            ("foobar", "MZXW6YTBOI======"),
        ] {
            assert_eq!(base32(bytes.as_bytes()), text);
            assert_eq!(from_base32(text)?, bytes.as_bytes());
        }
        assert!(from_base32("M1======").is_err());
        assert!(from_base32("MZ").is_err());
        Ok(())
    }

    #[test]
    fn numbers_as_their_bytes_and_back() -> Result<()> {
        let longs: ArrayRef = Arc::new(datafusion::arrow::array::Int64Array::from(vec![1, -2]));
        let bytes = encode(Encoding::ToBigEndian64, &longs)?;
        assert_eq!(bytes.as_binary::<i32>().value(0), &[0, 0, 0, 0, 0, 0, 0, 1]);
        let back = encode(Encoding::FromBigEndian64, &bytes)?;
        assert_eq!(back.as_primitive::<Int64Type>().value(1), -2);
        let wrong: ArrayRef = Arc::new(datafusion::arrow::array::BinaryArray::from(vec![
            &[1u8, 2, 3][..],
        ]));
        let Err(e) = encode(Encoding::FromBigEndian64, &wrong) else {
            return exec_err!("three bytes were taken as a bigint");
        };
        assert!(
            e.to_string()
                .contains("expected 8-byte input, but got instead: 3")
        );
        let doubles: ArrayRef = Arc::new(datafusion::arrow::array::Float64Array::from(vec![1.0]));
        let bytes = encode(Encoding::ToIeee754x64, &doubles)?;
        assert_eq!(
            bytes.as_binary::<i32>().value(0),
            &[0x3f, 0xf0, 0, 0, 0, 0, 0, 0]
        );
        Ok(())
    }
}
