//! Integers as bits and as digits of another base, as Trino writes them: `bit_count`,
//! `to_base`, `from_base`.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Builder, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::TRINO_TYPE;
use crate::args::{arrays, is_integer, is_string, longs, result, strings};
use crate::error::invalid_argument;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Conversion {
    /// `bit_count(x, bits)`: the bits set in `x` as a `bits`-bit two's complement integer.
    BitCount,
    /// `to_base(x, radix)`: `x` in digits of `radix` (2 to 36), lower-case, `-` if negative.
    ToBase,
    /// `from_base(string, radix)`: the `bigint` those digits write.
    FromBase,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct BaseFunction {
    conversion: Conversion,
    signature: Signature,
}

impl BaseFunction {
    fn new(conversion: Conversion) -> Self {
        Self {
            conversion,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    pub(crate) fn bit_count() -> Self {
        Self::new(Conversion::BitCount)
    }

    pub(crate) fn to_base() -> Self {
        Self::new(Conversion::ToBase)
    }

    pub(crate) fn from_base() -> Self {
        Self::new(Conversion::FromBase)
    }
}

fn radix(radix: i64) -> Result<u32> {
    u32::try_from(radix)
        .ok()
        .filter(|r| (2..=36).contains(r))
        .ok_or_else(|| invalid_argument("Radix must be between 2 and 36"))
}

fn bit_count(x: i64, bits: i64) -> Result<i64> {
    if !(2..=64).contains(&bits) {
        return Err(invalid_argument(
            "Bits specified in bit_count must be between 2 and 64, got ".to_string()
                + &bits.to_string(),
        ));
    }
    if bits == 64 {
        return Ok(i64::from(x.count_ones()));
    }
    let (low, high) = (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1);
    if !(low..=high).contains(&x) {
        return Err(invalid_argument(format!(
            "Number must be representable with the bits specified. {x} cannot be represented with {bits} bits"
        )));
    }
    Ok(i64::from((x & ((1i64 << bits) - 1)).count_ones()))
}

fn to_base(x: i64, radix: u32) -> String {
    let mut digits = Vec::new();
    let mut rest = x.unsigned_abs();
    loop {
        let digit = u32::try_from(rest % u64::from(radix)).unwrap_or(0);
        digits.push(char::from_digit(digit, radix).unwrap_or('?'));
        rest /= u64::from(radix);
        if rest == 0 {
            break;
        }
    }
    if x < 0 {
        digits.push('-');
    }
    digits.iter().rev().collect()
}

fn from_base(text: &str, radix: u32) -> Result<i64> {
    i64::from_str_radix(text, radix)
        .map_err(|_| invalid_argument(format!("Not a valid base-{radix} number: {text}")))
}

impl ScalarUDFImpl for BaseFunction {
    fn name(&self) -> &str {
        match self.conversion {
            Conversion::BitCount => "bit_count",
            Conversion::ToBase => "to_base",
            Conversion::FromBase => "from_base",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let first = match (self.conversion, arg_types) {
            (Conversion::FromBase, [s, r]) if is_string(s) && is_integer(r) => DataType::Utf8,
            (Conversion::BitCount | Conversion::ToBase, [x, r])
                if is_integer(x) && is_integer(r) =>
            {
                DataType::Int64
            }
            _ => {
                let expected = match self.conversion {
                    Conversion::FromBase => "(varchar, bigint)",
                    _ => "(bigint, bigint)",
                };
                return Err(crate::args::unexpected_parameters(
                    self.name(),
                    arg_types,
                    expected,
                ));
            }
        };
        Ok(vec![first, DataType::Int64])
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.conversion {
            Conversion::ToBase => DataType::Utf8,
            Conversion::BitCount | Conversion::FromBase => DataType::Int64,
        })
    }

    /// `to_base` is Trino's `varchar(64)` (the longest it writes, in base 2).
    fn return_field_from_args(&self, _args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let field = Field::new(self.name(), self.return_type(&[])?, true);
        if self.conversion != Conversion::ToBase {
            return Ok(Arc::new(field));
        }
        let trino = HashMap::from([(TRINO_TYPE.to_string(), "varchar(64)".to_string())]);
        Ok(Arc::new(field.with_metadata(trino)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [value, second] = columns.as_slice() else {
            return exec_err!("{} takes 2 arguments", self.name());
        };
        let second = longs(second)?;
        let rows = second.len();
        let array: ArrayRef = match self.conversion {
            Conversion::FromBase => {
                let text = strings(value)?;
                let text = text.as_string::<i32>();
                let mut out = Int64Builder::with_capacity(rows);
                for i in 0..rows {
                    if text.is_null(i) || second.is_null(i) {
                        out.append_null();
                    } else {
                        out.append_value(from_base(text.value(i), radix(second.value(i))?)?);
                    }
                }
                Arc::new(out.finish())
            }
            Conversion::ToBase => {
                let x = longs(value)?;
                let mut out = StringBuilder::with_capacity(rows, rows * 8);
                for i in 0..rows {
                    if x.is_null(i) || second.is_null(i) {
                        out.append_null();
                    } else {
                        out.append_value(to_base(x.value(i), radix(second.value(i))?));
                    }
                }
                Arc::new(out.finish())
            }
            Conversion::BitCount => {
                let x = longs(value)?;
                let mut out = Int64Builder::with_capacity(rows);
                for i in 0..rows {
                    if x.is_null(i) || second.is_null(i) {
                        out.append_null();
                    } else {
                        out.append_value(bit_count(x.value(i), second.value(i))?);
                    }
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

    #[test]
    fn digits_of_every_radix_read_back() -> Result<()> {
        for x in [0, 1, -1, 255, -255, i64::MAX, i64::MIN, 1_234_567_890] {
            for r in 2..=36 {
                assert_eq!(from_base(&to_base(x, r), r)?, x, "{x} in base {r}");
            }
        }
        assert_eq!(to_base(255, 16), "ff");
        assert_eq!(to_base(i64::MIN, 2).len(), 65);
        assert!(from_base("12", 2).is_err());
        assert!(radix(37).is_err() && radix(1).is_err());
        Ok(())
    }

    #[test]
    fn bits_count_in_twos_complement_of_the_width_given() -> Result<()> {
        assert_eq!(bit_count(9, 64)?, 2);
        assert_eq!(bit_count(9, 8)?, 2);
        assert_eq!(bit_count(-7, 64)?, 62);
        assert_eq!(bit_count(-7, 8)?, 6);
        assert!(bit_count(128, 8).is_err());
        assert!(bit_count(1, 65).is_err());
        Ok(())
    }
}
