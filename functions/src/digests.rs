//! Trino's hashes of a varbinary: `md5`, `sha1`, `sha256`, `sha512`, `xxhash64` and `murmur3`
//! answer the digest's bytes as a varbinary, `crc32` its value as a `bigint`, and
//! `hmac_md5`/`hmac_sha1`/`hmac_sha256`/`hmac_sha512` the keyed digest. DataFusion's `md5`
//! answered hex text (so `to_hex(md5(x))` was the hex of that text) and took varchar, which
//! Trino refuses, as it does here: these take only varbinary (`md5(to_utf8(s))`).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BinaryBuilder, Int64Builder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use hmac::{KeyInit, Mac};
use sha2::Digest as _;

use crate::args::{arrays, result, unexpected_parameters};

/// One of Trino's hash functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Hash {
    Md5,
    Sha1,
    Sha256,
    Sha512,
    XxHash64,
    Murmur3,
    Crc32,
    HmacMd5,
    HmacSha1,
    HmacSha256,
    HmacSha512,
}

impl Hash {
    pub(crate) const ALL: [Hash; 11] = [
        Hash::Md5,
        Hash::Sha1,
        Hash::Sha256,
        Hash::Sha512,
        Hash::XxHash64,
        Hash::Murmur3,
        Hash::Crc32,
        Hash::HmacMd5,
        Hash::HmacSha1,
        Hash::HmacSha256,
        Hash::HmacSha512,
    ];

    fn name(self) -> &'static str {
        match self {
            Hash::Md5 => "md5",
            Hash::Sha1 => "sha1",
            Hash::Sha256 => "sha256",
            Hash::Sha512 => "sha512",
            Hash::XxHash64 => "xxhash64",
            Hash::Murmur3 => "murmur3",
            Hash::Crc32 => "crc32",
            Hash::HmacMd5 => "hmac_md5",
            Hash::HmacSha1 => "hmac_sha1",
            Hash::HmacSha256 => "hmac_sha256",
            Hash::HmacSha512 => "hmac_sha512",
        }
    }

    fn keyed(self) -> bool {
        matches!(
            self,
            Hash::HmacMd5 | Hash::HmacSha1 | Hash::HmacSha256 | Hash::HmacSha512
        )
    }

    /// The digest of `bytes` (keyed by `key` for the HMACs).
    fn digest(self, bytes: &[u8], key: &[u8]) -> Vec<u8> {
        match self {
            Hash::Md5 => md5::Md5::digest(bytes).to_vec(),
            Hash::Sha1 => sha1::Sha1::digest(bytes).to_vec(),
            Hash::Sha256 => sha2::Sha256::digest(bytes).to_vec(),
            Hash::Sha512 => sha2::Sha512::digest(bytes).to_vec(),
            // Big-endian, as Trino writes the long.
            Hash::XxHash64 => twox_hash::XxHash64::oneshot(0, bytes)
                .to_be_bytes()
                .to_vec(),
            Hash::Murmur3 => murmur3_x64_128(bytes),
            Hash::Crc32 => crc32fast::hash(bytes).to_be_bytes().to_vec(),
            Hash::HmacMd5 => hmac_of::<hmac::Hmac<md5::Md5>>(bytes, key),
            Hash::HmacSha1 => hmac_of::<hmac::Hmac<sha1::Sha1>>(bytes, key),
            Hash::HmacSha256 => hmac_of::<hmac::Hmac<sha2::Sha256>>(bytes, key),
            Hash::HmacSha512 => hmac_of::<hmac::Hmac<sha2::Sha512>>(bytes, key),
        }
    }
}

fn hmac_of<M: Mac + KeyInit>(bytes: &[u8], key: &[u8]) -> Vec<u8> {
    // An HMAC takes a key of any length (a long one is hashed first).
    match <M as KeyInit>::new_from_slice(key) {
        Ok(mut mac) => {
            mac.update(bytes);
            mac.finalize().into_bytes().to_vec()
        }
        Err(_) => Vec::new(),
    }
}

/// MurmurHash3's x64 128-bit hash with seed 0, its two halves each written little-endian, as
/// Trino's `murmur3` answers it.
fn murmur3_x64_128(bytes: &[u8]) -> Vec<u8> {
    let mut source = bytes;
    // Reading from a slice cannot fail.
    let hash = murmur3::murmur3_x64_128(&mut source, 0).unwrap_or_default();
    let low = hash as u64;
    let high = (hash >> 64) as u64;
    let mut out = low.to_le_bytes().to_vec();
    out.extend_from_slice(&high.to_le_bytes());
    out
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct HashFunction {
    hash: Hash,
    signature: Signature,
}

impl HashFunction {
    pub(crate) fn new(hash: Hash) -> Self {
        Self {
            hash,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

fn is_binary(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_)
            | DataType::Null
    )
}

impl ScalarUDFImpl for HashFunction {
    fn name(&self) -> &str {
        self.hash.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let arity = if self.hash.keyed() { 2 } else { 1 };
        if arg_types.len() != arity || !arg_types.iter().all(is_binary) {
            let expected = if self.hash.keyed() {
                "(varbinary, varbinary)"
            } else {
                "(varbinary)"
            };
            return Err(unexpected_parameters(self.name(), arg_types, expected));
        }
        Ok(vec![DataType::Binary; arity])
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.hash {
            Hash::Crc32 => DataType::Int64,
            _ => DataType::Binary,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let Some(values) = columns.first() else {
            return exec_err!("{} takes a varbinary", self.name());
        };
        let values = cast(values, &DataType::Binary)?;
        let values = values.as_binary::<i32>();
        let keys = match columns.get(1) {
            Some(keys) => Some(cast(keys, &DataType::Binary)?),
            None => None,
        };
        let keys = keys.as_ref().map(|k| k.as_binary::<i32>());
        let key_at = |i: usize| match keys {
            Some(keys) if keys.is_null(i) => None,
            Some(keys) => Some(keys.value(i)),
            None => Some(&[][..]),
        };
        let hashed: ArrayRef = if self.hash == Hash::Crc32 {
            let mut out = Int64Builder::with_capacity(values.len());
            for i in 0..values.len() {
                if values.is_null(i) {
                    out.append_null();
                } else {
                    out.append_value(i64::from(crc32fast::hash(values.value(i))));
                }
            }
            Arc::new(out.finish())
        } else {
            let mut out = BinaryBuilder::with_capacity(values.len(), values.len() * 32);
            for i in 0..values.len() {
                match key_at(i) {
                    Some(key) if !values.is_null(i) => {
                        out.append_value(self.hash.digest(values.value(i), key));
                    }
                    _ => out.append_null(),
                }
            }
            Arc::new(out.finish())
        };
        result(&args, hashed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02X}")).collect()
    }

    /// Trino's own expectations (TestVarbinaryFunctions).
    #[test]
    fn digests_are_trinos() {
        let cases = [
            (Hash::Md5, "", "D41D8CD98F00B204E9800998ECF8427E"),
            (Hash::Md5, "hashme", "533F6357E0210E67D91F651BC49E1278"),
            (
                Hash::Sha1,
                "hashme",
                "FB78992E561929A6967D5328F49413FA99048D06",
            ),
            (
                Hash::Sha256,
                "hashme",
                "02208B9403A87DF9F4ED6B2EE2657EFAA589026B4CCE9ACCC8E8A5BF3D693C86",
            ),
            (Hash::XxHash64, "", "EF46DB3751D8E999"),
            (Hash::XxHash64, "hashme", "F9D96E0E1165E892"),
            (Hash::Murmur3, "", "00000000000000000000000000000000"),
            (Hash::Murmur3, "hashme", "93192FE805BE23041C8318F67EC4F2BC"),
        ];
        for (hash, input, expected) in cases {
            assert_eq!(
                hex(&hash.digest(input.as_bytes(), &[])),
                expected,
                "{hash:?}({input:?})"
            );
        }
        assert_eq!(
            hex(&Hash::HmacSha256.digest(b"hashme", b"key")),
            "D3D72F9FACDE059DA3A4EB43A9ABDD4B35118E0FEF00E6D16FB04BB332AF0484"
        );
        assert_eq!(
            hex(&Hash::HmacMd5.digest(b"", b"key")),
            "63530468A04E386459855DA0063B6596"
        );
        assert_eq!(crc32fast::hash(b"ABCDEFGHIJKLM"), 4_223_167_559);
    }
}
