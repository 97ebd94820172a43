//! Trino's `checksum(x)`: an order-independent checksum of a column, the sum (wrapping) of each
//! value's 64-bit xxHash times xxHash's first prime (a NULL adds the prime), as 8 little-endian
//! bytes; NULL over no rows. Each value is hashed as Trino's type hashes it (its `XX_HASH_64`
//! operator): integers, dates and short decimals as the 8 bytes of their long value, a boolean
//! as 1 or 0, a double or real by its bits (-0 as 0, NaN canonical), text and varbinary by
//! their bytes (a char without its padding), a timestamp of up to microsecond precision by
//! its microseconds. Types whose hashing differs between Trino versions or needs Trino's
//! internal layout (long decimals, nanosecond timestamps, zoned ones, nested types) are
//! NOT_SUPPORTED.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Decimal128Type, Field, FieldRef, Float32Type,
    Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, TimeUnit, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampSecondType,
};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Signature, Volatility};

/// xxHash's PRIME64_1, Trino's `ChecksumAggregationFunction.PRIME64`.
const PRIME64: u64 = 0x9E37_79B1_85EB_CA87;

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Checksum {
    signature: Signature,
}

impl Checksum {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// airlift's `XxHash64.hash(long)`: xxHash64 (seed 0) of the value's 8 little-endian bytes.
fn hash_long(value: i64) -> u64 {
    twox_hash::XxHash64::oneshot(0, &value.to_le_bytes())
}

fn hash_bytes(bytes: &[u8]) -> u64 {
    twox_hash::XxHash64::oneshot(0, bytes)
}

fn is_hashed(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Null
            | DataType::Boolean
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Date32
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::Timestamp(
                TimeUnit::Second | TimeUnit::Millisecond | TimeUnit::Microsecond,
                None
            )
    ) || matches!(t, DataType::Decimal128(p, _) if *p <= 18)
}

/// Integer values as the longs Trino's types hash.
fn widened<T: ArrowPrimitiveType>(values: &ArrayRef) -> Vec<Option<i64>>
where
    T::Native: Into<i64>,
{
    values
        .as_primitive::<T>()
        .iter()
        .map(|v| v.map(Into::into))
        .collect()
}

/// Each value's hash as Trino's type computes it; `None` for NULL.
fn hashes(values: &ArrayRef, char: bool) -> Result<Vec<Option<u64>>> {
    let longs = |v: Vec<Option<i64>>| v.into_iter().map(|v| v.map(hash_long)).collect();
    Ok(match values.data_type() {
        DataType::Null => vec![None; values.len()],
        DataType::Boolean => longs(
            values
                .as_boolean()
                .iter()
                .map(|b| b.map(i64::from))
                .collect(),
        ),
        DataType::Int8 => longs(widened::<Int8Type>(values)),
        DataType::Int16 => longs(widened::<Int16Type>(values)),
        DataType::Int32 => longs(widened::<Int32Type>(values)),
        DataType::Int64 => longs(widened::<Int64Type>(values)),
        DataType::Date32 => longs(widened::<Date32Type>(values)),
        DataType::Decimal128(_, _) => longs(
            values
                .as_primitive::<Decimal128Type>()
                .iter()
                .map(|v| v.map(|v| v as i64))
                .collect(),
        ),
        DataType::Float64 => longs(
            values
                .as_primitive::<Float64Type>()
                .iter()
                .map(|v| {
                    v.map(|v| match v {
                        _ if v.is_nan() => 0x7ff8_0000_0000_0000,
                        _ if v == 0.0 => 0,
                        _ => v.to_bits() as i64,
                    })
                })
                .collect(),
        ),
        DataType::Float32 => longs(
            values
                .as_primitive::<Float32Type>()
                .iter()
                .map(|v| {
                    v.map(|v| {
                        let bits = match v {
                            _ if v.is_nan() => 0x7fc0_0000,
                            _ if v == 0.0 => 0,
                            _ => v.to_bits(),
                        };
                        // Java's int widened to a long.
                        i64::from(bits as i32)
                    })
                })
                .collect(),
        ),
        DataType::Timestamp(unit, None) => {
            let micros: Vec<Option<i64>> = match unit {
                TimeUnit::Second => values
                    .as_primitive::<TimestampSecondType>()
                    .iter()
                    .map(|v| v.and_then(|v| v.checked_mul(1_000_000)))
                    .collect(),
                TimeUnit::Millisecond => values
                    .as_primitive::<TimestampMillisecondType>()
                    .iter()
                    .map(|v| v.and_then(|v| v.checked_mul(1_000)))
                    .collect(),
                TimeUnit::Microsecond => values
                    .as_primitive::<TimestampMicrosecondType>()
                    .iter()
                    .collect(),
                TimeUnit::Nanosecond => return exec_err!("checksum of nanosecond timestamps"),
            };
            longs(micros)
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let text = datafusion::arrow::compute::cast(values, &DataType::Utf8)?;
            text.as_string::<i32>()
                .iter()
                .map(|t| {
                    t.map(|t| {
                        // Trino keeps a char without its trailing spaces.
                        let t = if char { t.trim_end_matches(' ') } else { t };
                        hash_bytes(t.as_bytes())
                    })
                })
                .collect()
        }
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
            let bytes = datafusion::arrow::compute::cast(values, &DataType::Binary)?;
            bytes
                .as_binary::<i32>()
                .iter()
                .map(|b| b.map(hash_bytes))
                .collect()
        }
        other => return exec_err!("checksum of {other}"),
    })
}

impl AggregateUDFImpl for Checksum {
    fn name(&self) -> &str {
        "checksum"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [t] => Ok(vec![t.clone()]),
            _ => Err(crate::args::unexpected_parameters(
                "checksum", arg_types, "(T)",
            )),
        }
    }

    /// A type whose values SQE cannot hash as Trino does is refused here, while planning.
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [t] if !is_hashed(t) => Err(DataFusionError::NotImplemented(format!(
                "checksum of {}",
                crate::types::trino_type_name(t)
            ))),
            _ => Ok(DataType::Binary),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new(
                format!("{}[sum]", args.name),
                DataType::Int64,
                true,
            )),
            Arc::new(Field::new(
                format!("{}[rows]", args.name),
                DataType::Boolean,
                true,
            )),
        ])
    }

    fn accumulator(&self, args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        let char = args
            .expr_fields
            .first()
            .and_then(|f| f.metadata().get(crate::types::TRINO_TYPE))
            .and_then(|t| crate::bounded::bound_of(t))
            .is_some_and(|(_, char)| char);
        Ok(Box::new(ChecksumAccumulator {
            sum: 0,
            rows: false,
            char,
        }))
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }
}

#[derive(Debug)]
struct ChecksumAccumulator {
    sum: u64,
    /// Whether any row (NULL or not) was seen: NULL over none.
    rows: bool,
    char: bool,
}

impl Accumulator for ChecksumAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(values) = values.first() else {
            return exec_err!("checksum takes one argument");
        };
        for hash in hashes(values, self.char)? {
            self.sum = self
                .sum
                .wrapping_add(hash.map_or(PRIME64, |h| h.wrapping_mul(PRIME64)));
        }
        self.rows |= !values.is_empty();
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let [sums, rows] = states else {
            return exec_err!("checksum: unexpected state");
        };
        let (sums, rows) = (sums.as_primitive::<Int64Type>(), rows.as_boolean());
        for i in 0..sums.len() {
            if !rows.is_null(i) && rows.value(i) {
                self.sum = self.sum.wrapping_add(sums.value(i) as u64);
                self.rows = true;
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            ScalarValue::Int64(Some(self.sum as i64)),
            ScalarValue::Boolean(Some(self.rows)),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Binary(
            self.rows.then(|| self.sum.to_le_bytes().to_vec()),
        ))
    }

    fn size(&self) -> usize {
        size_of::<Self>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// airlift's `XxHash64.hash(long)` is xxHash64 of the long's little-endian bytes: its
    /// value for 0 and 1 (Trino's FALSE_XX_HASH and TRUE_XX_HASH), from the reference
    /// algorithm written out.
    #[test]
    fn long_hashes_are_airlifts() {
        const P1: u64 = 0x9E37_79B1_85EB_CA87;
        const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
        const P3: u64 = 0x1656_67B1_9E37_79F9;
        const P4: u64 = 0x85EB_CA77_C2B2_AE63;
        const P5: u64 = 0x27D4_EB2F_1656_67C5;
        let airlift = |value: i64| {
            let mut hash = P5.wrapping_add(8);
            let mix = (value as u64)
                .wrapping_mul(P2)
                .rotate_left(31)
                .wrapping_mul(P1);
            hash = (hash ^ mix)
                .rotate_left(27)
                .wrapping_mul(P1)
                .wrapping_add(P4);
            hash ^= hash >> 33;
            hash = hash.wrapping_mul(P2);
            hash ^= hash >> 29;
            hash = hash.wrapping_mul(P3);
            hash ^ (hash >> 32)
        };
        for value in [0, 1, -1, 42, i64::MIN, i64::MAX] {
            assert_eq!(hash_long(value), airlift(value), "{value}");
        }
    }

    #[test]
    fn the_sum_is_order_free_and_nulls_add_the_prime() -> Result<()> {
        let run = |values: ArrayRef| -> Result<ScalarValue> {
            let mut acc = ChecksumAccumulator {
                sum: 0,
                rows: false,
                char: false,
            };
            acc.update_batch(&[values])?;
            acc.evaluate()
        };
        let a = run(Arc::new(datafusion::arrow::array::Int64Array::from(vec![
            Some(1),
            None,
            Some(2),
        ])))?;
        let b = run(Arc::new(datafusion::arrow::array::Int64Array::from(vec![
            Some(2),
            Some(1),
            None,
        ])))?;
        assert_eq!(a, b);
        let expected = hash_long(1)
            .wrapping_mul(PRIME64)
            .wrapping_add(hash_long(2).wrapping_mul(PRIME64))
            .wrapping_add(PRIME64);
        assert_eq!(
            a,
            ScalarValue::Binary(Some(expected.to_le_bytes().to_vec()))
        );
        let none = run(Arc::new(datafusion::arrow::array::Int64Array::from(Vec::<
            i64,
        >::new(
        ))))?;
        assert_eq!(none, ScalarValue::Binary(None));
        Ok(())
    }
}
