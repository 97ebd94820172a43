//! Arrow values as Trino writes them in `QueryResults.data`: one JSON array per row, values
//! encoded per Trino type (floats with "NaN"/"Infinity" strings, decimals as strings, dates and
//! times as text, varbinary as base64, arrays as arrays, maps as objects with string keys, rows
//! as positional arrays, nulls anywhere).

use std::io::Write;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, FixedSizeListArray, GenericListArray, MapArray,
    OffsetSizeTrait, StructArray,
};
use arrow::datatypes::{
    DataType, Date32Type, Date64Type, Decimal128Type, Decimal256Type, Float16Type, Float32Type,
    Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, Time32MillisecondType,
    Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use base64::Engine as _;
use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Timelike};

use sqe_engine::calendar::DisplayDate;
use sqe_engine::dialect::types::{IntervalText, SixteenBytes};
use sqe_engine::error::{Error, Result};

/// The columns of one batch, each with its encoder chosen once from its type, so writing a
/// row does no type dispatch, downcast or allocation for the common types; the others go
/// through [`write_value`].
pub(crate) struct RowsEncoder<'a> {
    columns: Vec<ColumnEncoder<'a>>,
}

impl<'a> RowsEncoder<'a> {
    /// The encoder of plain columns, each written as its Arrow type says.
    #[cfg(test)]
    pub(crate) fn new(columns: &'a [ArrayRef]) -> Self {
        Self {
            columns: columns
                .iter()
                .map(|c| ColumnEncoder::new(c.as_ref()))
                .collect(),
        }
    }

    /// The encoder of `batch`'s columns, each written as its field's Trino type says (a
    /// `uuid`'s 16 bytes as its text).
    pub(crate) fn of_batch(batch: &'a arrow::array::RecordBatch) -> Self {
        let schema = batch.schema_ref();
        Self {
            columns: batch
                .columns()
                .iter()
                .zip(schema.fields())
                .map(|(column, field)| {
                    match (
                        column.as_fixed_size_binary_opt(),
                        SixteenBytes::of_field(field),
                    ) {
                        (Some(values), Some(of)) => ColumnEncoder {
                            nulls: column.nulls(),
                            values: Values::SixteenBytes(values, of),
                        },
                        _ => ColumnEncoder::new(column.as_ref()),
                    }
                })
                .collect(),
        }
    }

    /// Appends row `row` as a JSON array to `out`.
    pub(crate) fn write_row(&self, out: &mut Vec<u8>, row: usize) -> Result<()> {
        out.push(b'[');
        for (i, column) in self.columns.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            column.write(out, row)?;
        }
        out.push(b']');
        Ok(())
    }
}

/// One column's values, by what writes them.
struct ColumnEncoder<'a> {
    nulls: Option<&'a arrow::buffer::NullBuffer>,
    values: Values<'a>,
}

enum Values<'a> {
    Boolean(&'a BooleanArray),
    Int8(&'a [i8]),
    Int16(&'a [i16]),
    Int32(&'a [i32]),
    Int64(&'a [i64]),
    Float64(&'a [f64]),
    /// A decimal of scale 0 or more (a negative scale goes through [`write_value`]).
    Decimal128 {
        values: &'a [i128],
        scale: usize,
    },
    Utf8(&'a arrow::array::StringArray),
    LargeUtf8(&'a arrow::array::LargeStringArray),
    Utf8View(&'a arrow::array::StringViewArray),
    Date32(&'a [i32]),
    /// A `uuid` or `ipaddress`: its text.
    SixteenBytes(&'a arrow::array::FixedSizeBinaryArray, SixteenBytes),
    /// A timestamp without a zone.
    Timestamp {
        values: &'a [i64],
        nanos_per_unit: i64,
        digits: u8,
    },
    Other(&'a dyn Array),
}

impl<'a> ColumnEncoder<'a> {
    fn new(array: &'a dyn Array) -> Self {
        let values = match array.data_type() {
            DataType::Boolean => array
                .as_any()
                .downcast_ref::<BooleanArray>()
                .map_or(Values::Other(array), Values::Boolean),
            DataType::Int8 => Values::Int8(array.as_primitive::<Int8Type>().values()),
            DataType::Int16 => Values::Int16(array.as_primitive::<Int16Type>().values()),
            DataType::Int32 => Values::Int32(array.as_primitive::<Int32Type>().values()),
            DataType::Int64 => Values::Int64(array.as_primitive::<Int64Type>().values()),
            DataType::Float64 => Values::Float64(array.as_primitive::<Float64Type>().values()),
            DataType::Decimal128(_, scale) => match usize::try_from(*scale) {
                Ok(scale) => Values::Decimal128 {
                    values: array.as_primitive::<Decimal128Type>().values(),
                    scale,
                },
                Err(_) => Values::Other(array),
            },
            DataType::Utf8 => Values::Utf8(array.as_string::<i32>()),
            DataType::LargeUtf8 => Values::LargeUtf8(array.as_string::<i64>()),
            DataType::Utf8View => Values::Utf8View(array.as_string_view()),
            DataType::Date32 => Values::Date32(array.as_primitive::<Date32Type>().values()),
            DataType::Timestamp(unit, None) => {
                let (values, nanos_per_unit, digits) = match unit {
                    TimeUnit::Second => (
                        array.as_primitive::<TimestampSecondType>().values(),
                        1_000_000_000,
                        0,
                    ),
                    TimeUnit::Millisecond => (
                        array.as_primitive::<TimestampMillisecondType>().values(),
                        1_000_000,
                        3,
                    ),
                    TimeUnit::Microsecond => (
                        array.as_primitive::<TimestampMicrosecondType>().values(),
                        1_000,
                        6,
                    ),
                    TimeUnit::Nanosecond => (
                        array.as_primitive::<TimestampNanosecondType>().values(),
                        1,
                        9,
                    ),
                };
                Values::Timestamp {
                    values,
                    nanos_per_unit,
                    digits,
                }
            }
            _ => Values::Other(array),
        };
        Self {
            nulls: array.nulls(),
            values,
        }
    }

    fn write(&self, out: &mut Vec<u8>, i: usize) -> Result<()> {
        if self.nulls.is_some_and(|n| n.is_null(i)) {
            out.extend_from_slice(b"null");
            return Ok(());
        }
        match &self.values {
            Values::Boolean(a) => {
                out.extend_from_slice(if a.value(i) { b"true" } else { b"false" });
            }
            Values::Int8(v) => int(out, v[i]),
            Values::Int16(v) => int(out, v[i]),
            Values::Int32(v) => int(out, v[i]),
            Values::Int64(v) => int(out, v[i]),
            Values::Float64(v) => float(out, v[i]),
            Values::Decimal128 { values, scale } => decimal(out, values[i], *scale),
            Values::Utf8(a) => string(out, a.value(i)),
            Values::LargeUtf8(a) => string(out, a.value(i)),
            Values::Utf8View(a) => string(out, a.value(i)),
            Values::Date32(v) => {
                out.push(b'"');
                date32(out, v[i]);
                out.push(b'"');
            }
            Values::Timestamp {
                values,
                nanos_per_unit,
                digits,
            } => plain_timestamp(out, values[i], *nanos_per_unit, *digits)?,
            Values::SixteenBytes(a, of) => {
                let bytes = <[u8; 16]>::try_from(a.value(i))
                    .map_err(|_| Error::Internal(format!("a {} is 16 bytes", of.name())))?;
                string(out, &of.text(bytes));
            }
            Values::Other(array) => write_value(out, *array, i)?,
        }
        Ok(())
    }
}

/// A decimal's digits with its point, as a JSON string (what `value_as_string` gives, without
/// allocating).
fn decimal(out: &mut Vec<u8>, value: i128, scale: usize) {
    let mut buffer = itoa::Buffer::new();
    let digits = buffer.format(value.unsigned_abs()).as_bytes();
    out.push(b'"');
    if value < 0 {
        out.push(b'-');
    }
    if scale == 0 {
        out.extend_from_slice(digits);
    } else if digits.len() > scale {
        let (whole, fraction) = digits.split_at(digits.len() - scale);
        out.extend_from_slice(whole);
        out.push(b'.');
        out.extend_from_slice(fraction);
    } else {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + scale - digits.len(), b'0');
        out.extend_from_slice(digits);
    }
    out.push(b'"');
}

/// `YYYY-MM-DD` as [`DisplayDate`] writes it; the years 0 to 9999 without the formatter.
fn date32(out: &mut Vec<u8>, days: i32) {
    let (year, month, day) = sqe_engine::calendar::civil_from_days(i64::from(days));
    match u32::try_from(year) {
        Ok(year) if year <= 9999 => {
            digits(out, year, 4);
            out.push(b'-');
            digits(out, month, 2);
            out.push(b'-');
            digits(out, day, 2);
        }
        _ => {
            let _ = write!(out, "{}", DisplayDate(days));
        }
    }
}

/// `value` in exactly `width` decimal digits (it has no more).
fn digits(out: &mut Vec<u8>, value: u32, width: usize) {
    let start = out.len();
    out.resize(start + width, b'0');
    let mut rest = value;
    for place in out[start..].iter_mut().rev() {
        *place = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
}

/// A timestamp without a zone, as [`timestamp`] writes it; the years 0 to 9999 without the
/// formatter.
fn plain_timestamp(
    out: &mut Vec<u8>,
    value: i64,
    nanos_per_unit: i64,
    digits_of_fraction: u8,
) -> Result<()> {
    let per_second = 1_000_000_000 / nanos_per_unit;
    let seconds = value.div_euclid(per_second);
    let nanos = value.rem_euclid(per_second) * nanos_per_unit;
    let days = seconds.div_euclid(86_400);
    let (year, _, _) = sqe_engine::calendar::civil_from_days(days);
    let Ok(days) = i32::try_from(days) else {
        return timestamp(out, value, nanos_per_unit, digits_of_fraction, None);
    };
    if !(0..=9999).contains(&year) {
        return timestamp(out, value, nanos_per_unit, digits_of_fraction, None);
    }
    let second_of_day = u32::try_from(seconds.rem_euclid(86_400)).unwrap_or(0);
    out.push(b'"');
    date32(out, days);
    out.push(b' ');
    digits(out, second_of_day / 3600, 2);
    out.push(b':');
    digits(out, second_of_day / 60 % 60, 2);
    out.push(b':');
    digits(out, second_of_day % 60, 2);
    if digits_of_fraction > 0 {
        out.push(b'.');
        let scaled =
            u32::try_from(nanos).unwrap_or(0) / 10u32.pow(9 - u32::from(digits_of_fraction.min(9)));
        digits(out, scaled, usize::from(digits_of_fraction));
    }
    out.push(b'"');
    Ok(())
}

/// Appends every row of `batch` to `out` as Trino's `data` holds them: `[row],[row]...`,
/// column-wise (what result pages use).
pub fn write_rows(out: &mut Vec<u8>, batch: &arrow::array::RecordBatch) -> Result<()> {
    let encoder = RowsEncoder::of_batch(batch);
    for row in 0..batch.num_rows() {
        if row > 0 {
            out.push(b',');
        }
        encoder.write_row(out, row)?;
    }
    Ok(())
}

/// [`write_rows`] value by value, each value's type looked up as it is written (the encoder
/// of nested and rarer types, and the reference the column-wise one is tested against).
pub fn write_rows_per_value(out: &mut Vec<u8>, batch: &arrow::array::RecordBatch) -> Result<()> {
    for row in 0..batch.num_rows() {
        if row > 0 {
            out.push(b',');
        }
        write_row(out, batch.columns(), row)?;
    }
    Ok(())
}

/// Appends row `row` of every column as a JSON array to `out`.
pub(crate) fn write_row(out: &mut Vec<u8>, columns: &[ArrayRef], row: usize) -> Result<()> {
    out.push(b'[');
    for (i, column) in columns.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_value(out, column.as_ref(), row)?;
    }
    out.push(b']');
    Ok(())
}

/// Appends one value as Trino encodes it.
pub(crate) fn write_value(out: &mut Vec<u8>, array: &dyn Array, i: usize) -> Result<()> {
    if array.is_null(i) {
        out.extend_from_slice(b"null");
        return Ok(());
    }
    match array.data_type() {
        DataType::Null => out.extend_from_slice(b"null"),
        DataType::Boolean => {
            let value = array
                .as_any()
                .downcast_ref::<BooleanArray>()
                .is_some_and(|a| a.value(i));
            out.extend_from_slice(if value { b"true" } else { b"false" });
        }
        DataType::Int8 => int(out, array.as_primitive::<Int8Type>().value(i)),
        DataType::Int16 => int(out, array.as_primitive::<Int16Type>().value(i)),
        DataType::Int32 => int(out, array.as_primitive::<Int32Type>().value(i)),
        DataType::Int64 => int(out, array.as_primitive::<Int64Type>().value(i)),
        DataType::UInt8 => int(out, array.as_primitive::<UInt8Type>().value(i)),
        DataType::UInt16 => int(out, array.as_primitive::<UInt16Type>().value(i)),
        DataType::UInt32 => int(out, array.as_primitive::<UInt32Type>().value(i)),
        // decimal(20,0): a string, like every decimal.
        DataType::UInt64 => string(
            out,
            &array.as_primitive::<UInt64Type>().value(i).to_string(),
        ),
        DataType::Float16 => float(out, f64::from(array.as_primitive::<Float16Type>().value(i))),
        DataType::Float32 => float32(out, array.as_primitive::<Float32Type>().value(i)),
        DataType::Float64 => float(out, array.as_primitive::<Float64Type>().value(i)),
        DataType::Decimal128(..) => string(
            out,
            &array.as_primitive::<Decimal128Type>().value_as_string(i),
        ),
        DataType::Decimal256(..) => string(
            out,
            &array.as_primitive::<Decimal256Type>().value_as_string(i),
        ),
        DataType::Decimal32(..) | DataType::Decimal64(..) => {
            let wide = arrow::compute::cast(&array.slice(i, 1), &widened(array.data_type()))
                .map_err(encode_error)?;
            string(
                out,
                &wide.as_primitive::<Decimal128Type>().value_as_string(0),
            )
        }
        DataType::Utf8 => string(out, array.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => string(out, array.as_string::<i64>().value(i)),
        DataType::Utf8View => string(out, array.as_string_view().value(i)),
        DataType::Binary => base64(out, array.as_binary::<i32>().value(i)),
        DataType::LargeBinary => base64(out, array.as_binary::<i64>().value(i)),
        DataType::BinaryView => base64(out, array.as_binary_view().value(i)),
        DataType::FixedSizeBinary(_) => base64(out, array.as_fixed_size_binary().value(i)),
        DataType::Date32 => {
            let days = array.as_primitive::<Date32Type>().value(i);
            let _ = write!(out, "\"{}\"", DisplayDate(days));
        }
        DataType::Date64 => date(
            out,
            Date64Type::to_naive_date_opt(array.as_primitive::<Date64Type>().value(i)),
        )?,
        DataType::Time32(TimeUnit::Second) => {
            let s = array.as_primitive::<Time32SecondType>().value(i);
            time(out, i64::from(s) * 1_000_000_000, 0)?
        }
        DataType::Time32(_) => {
            let ms = array.as_primitive::<Time32MillisecondType>().value(i);
            time(out, i64::from(ms) * 1_000_000, 3)?
        }
        DataType::Time64(TimeUnit::Microsecond) => {
            let us = array.as_primitive::<Time64MicrosecondType>().value(i);
            time(out, us * 1_000, 6)?
        }
        DataType::Time64(_) => {
            let ns = array.as_primitive::<Time64NanosecondType>().value(i);
            time(out, ns, 9)?
        }
        DataType::Timestamp(unit, zone) => {
            let (value, nanos_per_unit, digits) = match unit {
                TimeUnit::Second => (
                    array.as_primitive::<TimestampSecondType>().value(i),
                    1_000_000_000,
                    0,
                ),
                TimeUnit::Millisecond => (
                    array.as_primitive::<TimestampMillisecondType>().value(i),
                    1_000_000,
                    3,
                ),
                TimeUnit::Microsecond => (
                    array.as_primitive::<TimestampMicrosecondType>().value(i),
                    1_000,
                    6,
                ),
                TimeUnit::Nanosecond => (
                    array.as_primitive::<TimestampNanosecondType>().value(i),
                    1,
                    9,
                ),
            };
            timestamp(out, value, nanos_per_unit, digits, zone.as_deref())?
        }
        DataType::Interval(_) | DataType::Duration(_) => match IntervalText::of(array, i) {
            Some(Ok(text)) => {
                let _ = write!(out, "\"{text}\"");
            }
            Some(Err(mixed)) => return Err(Error::NotSupported(mixed.to_string())),
            None => return Err(unexpected(array)),
        },
        DataType::List(_) => list(out, array.as_list::<i32>(), i)?,
        DataType::LargeList(_) => list(out, array.as_list::<i64>(), i)?,
        DataType::FixedSizeList(..) => {
            let list = array
                .as_any()
                .downcast_ref::<FixedSizeListArray>()
                .ok_or_else(|| unexpected(array))?;
            let values = list.value(i);
            elements(out, values.as_ref(), 0..values.len())?
        }
        DataType::Map(..) => map(
            out,
            array
                .as_any()
                .downcast_ref::<MapArray>()
                .ok_or_else(|| unexpected(array))?,
            i,
        )?,
        DataType::Struct(_) => {
            let row = array
                .as_any()
                .downcast_ref::<StructArray>()
                .ok_or_else(|| unexpected(array))?;
            write_row(out, row.columns(), i)?
        }
        DataType::Dictionary(_, value_type) => {
            let plain =
                arrow::compute::cast(&array.slice(i, 1), value_type).map_err(encode_error)?;
            write_value(out, plain.as_ref(), 0)?
        }
        other => {
            // ListView, RunEndEncoded, Union: cast to the plain layout first.
            let plain_type = match other {
                DataType::ListView(f) => DataType::List(f.clone()),
                DataType::LargeListView(f) => DataType::LargeList(f.clone()),
                DataType::RunEndEncoded(_, values) => values.data_type().clone(),
                _ => {
                    return Err(Error::NotSupported(format!(
                        "values of type {other} in Trino results"
                    )));
                }
            };
            let plain =
                arrow::compute::cast(&array.slice(i, 1), &plain_type).map_err(encode_error)?;
            write_value(out, plain.as_ref(), 0)?
        }
    }
    Ok(())
}

fn widened(data_type: &DataType) -> DataType {
    match data_type {
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) => DataType::Decimal128(*p, *s),
        other => other.clone(),
    }
}

fn int(out: &mut Vec<u8>, value: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// Finite doubles as JSON numbers; NaN and the infinities as the strings Trino sends.
fn float(out: &mut Vec<u8>, value: f64) {
    if value.is_nan() {
        out.extend_from_slice(b"\"NaN\"");
    } else if value.is_infinite() {
        out.extend_from_slice(if value > 0.0 {
            b"\"Infinity\""
        } else {
            b"\"-Infinity\""
        });
    } else {
        out.extend_from_slice(ryu::Buffer::new().format_finite(value).as_bytes());
    }
}

/// A real as Java's `Float.toString` writes it (clients read it as a double, so the digits
/// must be Trino's): the shortest text that reads back as the value, but where that is one
/// digit, the closest of one or two digits (`1.4E-45`, not `1e-45`).
fn float32(out: &mut Vec<u8>, value: f32) {
    if !value.is_finite() {
        return float(out, f64::from(value));
    }
    let mut buffer = ryu::Buffer::new();
    let shortest = buffer.format_finite(value);
    match two_digits(value, shortest) {
        Some(text) => out.extend_from_slice(text.as_bytes()),
        None => out.extend_from_slice(shortest.as_bytes()),
    }
}

/// The two-digit text closer to `value` than its one-digit `shortest`, if there is one.
fn two_digits(value: f32, shortest: &str) -> Option<String> {
    let digits = shortest
        .split(['e', 'E'])
        .next()?
        .chars()
        .filter(char::is_ascii_digit)
        .collect::<String>();
    if digits.trim_matches('0').len() != 1 {
        return None;
    }
    let exact = f64::from(value);
    let scientific = format!("{:e}", shortest.parse::<f64>().ok()?);
    let exponent: i32 = scientific.split_once('e')?.1.parse().ok()?;
    let sign = if value < 0.0 { "-" } else { "" };
    let mut best: Option<(f64, u32)> = None;
    for k in 10..=99u32 {
        let text = format!("{sign}{}.{}e{exponent}", k / 10, k % 10);
        if text.parse::<f32>().ok() != Some(value) {
            continue;
        }
        let distance = (text.parse::<f64>().ok()? - exact).abs();
        // Ties go to the even last digit, as Java's.
        let better =
            best.is_none_or(|(d, b)| distance < d || distance == d && k % 2 == 0 && b % 2 == 1);
        if better {
            best = Some((distance, k));
        }
    }
    match best? {
        (_, k) if k % 10 == 0 => None,
        (_, k) => Some(format!("{sign}{}.{}e{exponent}", k / 10, k % 10)),
    }
}

fn string(out: &mut Vec<u8>, value: &str) {
    // Writing to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

fn base64(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    out.extend_from_slice(
        base64::engine::general_purpose::STANDARD
            .encode(bytes)
            .as_bytes(),
    );
    out.push(b'"');
}

fn date(out: &mut Vec<u8>, date: Option<NaiveDate>) -> Result<()> {
    let date = date.ok_or_else(|| Error::Internal("date out of range".into()))?;
    let _ = write!(out, "\"{}\"", date.format("%Y-%m-%d"));
    Ok(())
}

/// `HH:MM:SS` plus exactly `digits` fractional digits, as Trino prints `time(p)`.
fn time(out: &mut Vec<u8>, nanos_of_day: i64, digits: u8) -> Result<()> {
    let seconds = u32::try_from(nanos_of_day.div_euclid(1_000_000_000))
        .map_err(|_| Error::Internal("time of day out of range".into()))?;
    let nanos = u32::try_from(nanos_of_day.rem_euclid(1_000_000_000)).unwrap_or(0);
    let time = NaiveTime::from_num_seconds_from_midnight_opt(seconds, nanos)
        .ok_or_else(|| Error::Internal("time of day out of range".into()))?;
    out.push(b'"');
    clock(out, &time, digits);
    out.push(b'"');
    Ok(())
}

fn clock(out: &mut Vec<u8>, time: &NaiveTime, digits: u8) {
    let _ = write!(
        out,
        "{:02}:{:02}:{:02}",
        time.hour(),
        time.minute(),
        time.second()
    );
    fraction(out, time.nanosecond(), digits);
}

fn fraction(out: &mut Vec<u8>, nanos: u32, digits: u8) {
    if digits > 0 {
        let scaled = nanos / 10u32.pow(9 - u32::from(digits.min(9)));
        let _ = write!(out, ".{:0width$}", scaled, width = usize::from(digits));
    }
}

/// `YYYY-MM-DD HH:MM:SS[.f]`, and for `with time zone` the zone after a space (`UTC`, `+05:30`,
/// or a region such as `Europe/Berlin`), in that zone's local time.
fn timestamp(
    out: &mut Vec<u8>,
    value: i64,
    nanos_per_unit: i64,
    digits: u8,
    zone: Option<&str>,
) -> Result<()> {
    let out_of_range = || Error::Internal("timestamp out of range".into());
    let seconds = value.div_euclid(1_000_000_000 / nanos_per_unit);
    let nanos = value.rem_euclid(1_000_000_000 / nanos_per_unit) * nanos_per_unit;
    let utc = DateTime::from_timestamp(seconds, u32::try_from(nanos).map_err(|_| out_of_range())?)
        .ok_or_else(out_of_range)?;
    out.push(b'"');
    match zone {
        None => local(out, &utc.naive_utc(), digits),
        Some(zone) => {
            let tz: arrow::array::timezone::Tz = zone.parse().map_err(encode_error)?;
            local(
                out,
                &tz.from_utc_datetime(&utc.naive_utc()).naive_local(),
                digits,
            );
            out.push(b' ');
            out.extend_from_slice(zone_name(zone).as_bytes());
        }
    }
    out.push(b'"');
    Ok(())
}

fn local(out: &mut Vec<u8>, at: &NaiveDateTime, digits: u8) {
    let _ = write!(out, "{}", at.date().format("%Y-%m-%d"));
    out.push(b' ');
    clock(out, &at.time(), digits);
}

/// Trino calls the zero offset `UTC`.
fn zone_name(zone: &str) -> &str {
    match zone {
        "+00:00" | "+00" | "+0000" | "Z" | "UTC" | "Etc/UTC" | "GMT" => "UTC",
        other => other,
    }
}

fn list<O: OffsetSizeTrait>(out: &mut Vec<u8>, list: &GenericListArray<O>, i: usize) -> Result<()> {
    let offsets = list.value_offsets();
    let (start, end) = (offsets[i].as_usize(), offsets[i + 1].as_usize());
    elements(out, list.values().as_ref(), start..end)
}

fn elements(out: &mut Vec<u8>, values: &dyn Array, range: std::ops::Range<usize>) -> Result<()> {
    out.push(b'[');
    for (n, j) in range.enumerate() {
        if n > 0 {
            out.push(b',');
        }
        write_value(out, values, j)?;
    }
    out.push(b']');
    Ok(())
}

/// A JSON object; keys are written as text (JSON keys are strings), as Trino does.
fn map(out: &mut Vec<u8>, map: &MapArray, i: usize) -> Result<()> {
    let offsets = map.value_offsets();
    let (start, end) = (offsets[i] as usize, offsets[i + 1] as usize);
    let (keys, values) = (map.keys(), map.values());
    out.push(b'{');
    let mut key = Vec::new();
    for (n, j) in (start..end).enumerate() {
        if n > 0 {
            out.push(b',');
        }
        key.clear();
        write_value(&mut key, keys.as_ref(), j)?;
        if key.first() == Some(&b'"') {
            out.extend_from_slice(&key);
        } else {
            string(out, &String::from_utf8_lossy(&key));
        }
        out.push(b':');
        write_value(out, values.as_ref(), j)?;
    }
    out.push(b'}');
    Ok(())
}

fn unexpected(array: &dyn Array) -> Error {
    Error::Internal(format!(
        "array does not match its type {}",
        array.data_type()
    ))
}

fn encode_error(e: arrow::error::ArrowError) -> Error {
    Error::Internal(format!("cannot encode a value for Trino: {e}"))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{
        ArrayRef, BinaryArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
        Int32Array, Int64Builder, IntervalMonthDayNanoArray, IntervalYearMonthArray, ListBuilder,
        MapBuilder, StringArray, StringBuilder, StructArray, Time64MicrosecondArray,
        TimestampMicrosecondArray, TimestampNanosecondArray,
    };
    use arrow::datatypes::{DataType, Field, IntervalMonthDayNano};

    use super::*;

    fn encoded(array: ArrayRef) -> Vec<String> {
        (0..array.len())
            .map(|i| {
                let mut out = Vec::new();
                write_value(&mut out, array.as_ref(), i).expect("encodes");
                String::from_utf8(out).expect("utf-8")
            })
            .collect()
    }

    #[test]
    fn numbers() {
        let doubles = Float64Array::from(vec![
            Some(1.0),
            Some(2.5e20),
            Some(f64::NAN),
            Some(f64::INFINITY),
            Some(f64::NEG_INFINITY),
            None,
        ]);
        assert_eq!(
            encoded(Arc::new(doubles)),
            [
                "1.0",
                "2.5e20",
                "\"NaN\"",
                "\"Infinity\"",
                "\"-Infinity\"",
                "null"
            ]
        );
        assert_eq!(encoded(Arc::new(Float32Array::from(vec![0.1f32]))), ["0.1"]);
        // Java's digits: a one-digit shortest text gives way to a closer two-digit one.
        let reals = Float32Array::from(vec![
            f32::from_bits(1),
            -f32::from_bits(2),
            f32::MAX,
            0.3,
            3.0,
            1e20,
        ]);
        assert_eq!(
            encoded(Arc::new(reals)),
            ["1.4e-45", "-2.8e-45", "3.4028235e38", "0.3", "3.0", "1e20"]
        );
        assert_eq!(encoded(Arc::new(Int32Array::from(vec![-7]))), ["-7"]);
        let decimals = Decimal128Array::from(vec![Some(-1234), Some(5), None])
            .with_precision_and_scale(10, 2)
            .expect("valid decimal type");
        assert_eq!(
            encoded(Arc::new(decimals)),
            ["\"-12.34\"", "\"0.05\"", "null"]
        );
    }

    #[test]
    fn text_and_binary() {
        assert_eq!(
            encoded(Arc::new(StringArray::from(vec!["it's \"q\"\n"]))),
            ["\"it's \\\"q\\\"\\n\""]
        );
        assert_eq!(
            encoded(Arc::new(BinaryArray::from(vec![&b"\x01\xff"[..]]))),
            ["\"Af8=\""]
        );
    }

    #[test]
    fn dates_times_and_timestamps() {
        assert_eq!(
            encoded(Arc::new(Date32Array::from(vec![19_782]))),
            ["\"2024-02-29\""]
        );
        // Past chrono's years, and past 9999 without chrono's '+'.
        assert_eq!(
            encoded(Arc::new(Date32Array::from(vec![2_932_897, i32::MIN]))),
            ["\"10000-01-01\"", "\"-5877641-06-23\""]
        );
        assert_eq!(
            encoded(Arc::new(Time64MicrosecondArray::from(vec![45_296_000_123]))),
            ["\"12:34:56.000123\""]
        );
        // 2024-02-29 12:34:56.123456 UTC
        let micros = 1_709_210_096_123_456i64;
        assert_eq!(
            encoded(Arc::new(TimestampMicrosecondArray::from(vec![micros]))),
            ["\"2024-02-29 12:34:56.123456\""]
        );
        assert_eq!(
            encoded(Arc::new(
                TimestampMicrosecondArray::from(vec![micros]).with_timezone("+00:00")
            )),
            ["\"2024-02-29 12:34:56.123456 UTC\""]
        );
        assert_eq!(
            encoded(Arc::new(
                TimestampMicrosecondArray::from(vec![micros]).with_timezone("+05:30")
            )),
            ["\"2024-02-29 18:04:56.123456 +05:30\""]
        );
        assert_eq!(
            encoded(Arc::new(
                TimestampMicrosecondArray::from(vec![micros]).with_timezone("Europe/Berlin")
            )),
            ["\"2024-02-29 13:34:56.123456 Europe/Berlin\""]
        );
        // Before the epoch, nanoseconds: fractions count forward from the second.
        assert_eq!(
            encoded(Arc::new(TimestampNanosecondArray::from(vec![-1]))),
            ["\"1969-12-31 23:59:59.999999999\""]
        );
    }

    #[test]
    fn intervals() {
        let day_time = IntervalMonthDayNanoArray::from(vec![
            IntervalMonthDayNano::new(0, 1, 7_384_005_000_000),
            IntervalMonthDayNano::new(0, 0, -1_500_000_000),
        ]);
        assert_eq!(
            encoded(Arc::new(day_time)),
            ["\"1 02:03:04.005\"", "\"-0 00:00:01.500\""]
        );
        let months = IntervalMonthDayNanoArray::from(vec![IntervalMonthDayNano::new(1, 0, 0)]);
        let mut out = Vec::new();
        assert!(
            write_value(&mut out, &months, 0).is_err(),
            "months and days do not mix"
        );
        assert_eq!(
            encoded(Arc::new(IntervalYearMonthArray::from(vec![14, -3]))),
            ["\"1-2\"", "\"-0-3\""]
        );
    }

    #[test]
    fn nested_values_with_nulls_at_every_depth() {
        let mut lists = ListBuilder::new(Int64Builder::new());
        lists.values().append_value(1);
        lists.values().append_null();
        lists.append(true);
        lists.append_null();
        assert_eq!(encoded(Arc::new(lists.finish())), ["[1,null]", "null"]);

        let mut maps = MapBuilder::new(None, Int64Builder::new(), StringBuilder::new());
        maps.keys().append_value(1);
        maps.values().append_value("a");
        maps.keys().append_value(2);
        maps.values().append_null();
        maps.append(true).expect("map row");
        assert_eq!(
            encoded(Arc::new(maps.finish())),
            ["{\"1\":\"a\",\"2\":null}"]
        );

        let row = StructArray::from(vec![
            (
                Arc::new(Field::new("x", DataType::Int64, true)),
                Arc::new(arrow::array::Int64Array::from(vec![Some(1), None])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("y", DataType::Utf8, true)),
                Arc::new(StringArray::from(vec![Some("a"), Some("b")])) as ArrayRef,
            ),
        ]);
        assert_eq!(encoded(Arc::new(row)), ["[1,\"a\"]", "[null,\"b\"]"]);
    }

    /// Rows as the column-wise encoder writes them and as [`write_value`] writes each value.
    fn both_ways(columns: &[ArrayRef]) -> (Vec<String>, Vec<String>) {
        let rows = columns.first().map_or(0, |c| c.len());
        let encoder = RowsEncoder::new(columns);
        let mut fast = Vec::new();
        let mut each = Vec::new();
        for row in 0..rows {
            let mut out = Vec::new();
            encoder.write_row(&mut out, row).expect("encodes");
            fast.push(String::from_utf8(out).expect("utf-8"));
            let mut out = Vec::new();
            write_row(&mut out, columns, row).expect("encodes");
            each.push(String::from_utf8(out).expect("utf-8"));
        }
        (fast, each)
    }

    #[test]
    fn rows_of_every_kind_of_column_write_as_each_value_does() {
        let decimals = |scale: i8| -> ArrayRef {
            Arc::new(
                Decimal128Array::from(vec![
                    Some(-1234),
                    Some(5),
                    None,
                    Some(0),
                    Some(-5),
                    Some(10i128.pow(38) - 1),
                ])
                .with_precision_and_scale(38, scale)
                .expect("valid decimal type"),
            )
        };
        let columns: Vec<ArrayRef> = vec![
            decimals(0),
            decimals(2),
            decimals(7),
            decimals(-2),
            Arc::new(Date32Array::from(vec![
                Some(0),
                Some(-719_893),
                None,
                Some(2_932_897),
                Some(i32::MIN),
                Some(-1),
            ])),
            Arc::new(TimestampMicrosecondArray::from(vec![
                Some(0),
                Some(-1),
                None,
                Some(253_402_300_800_000_000),
                Some(-62_167_219_200_000_001),
                Some(1_700_000_000_123_456),
            ])),
            Arc::new(TimestampNanosecondArray::from(vec![
                Some(1),
                Some(-1),
                None,
                Some(i64::MAX),
                Some(i64::MIN),
                Some(86_399_999_999_999),
            ])),
            Arc::new(arrow::array::TimestampSecondArray::from(vec![
                Some(1),
                Some(-86_401),
                None,
                Some(0),
                Some(59),
                Some(3600),
            ])),
            Arc::new(
                arrow::array::TimestampMillisecondArray::from(vec![
                    Some(1),
                    Some(-1),
                    None,
                    Some(0),
                    Some(999),
                    Some(1000),
                ])
                .with_timezone("Europe/Berlin"),
            ),
            Arc::new(StringArray::from(vec![
                Some("a"),
                Some("\"q\"\n"),
                None,
                Some(""),
                Some("é"),
                Some("\u{1}"),
            ])),
            Arc::new(arrow::array::StringViewArray::from(vec![
                Some("a long string past twelve bytes"),
                Some("x"),
                None,
                Some(""),
                Some("\\"),
                Some("z"),
            ])),
            Arc::new(arrow::array::LargeStringArray::from(vec![
                Some("a"),
                None,
                None,
                Some(""),
                Some("b"),
                Some("c"),
            ])),
            Arc::new(arrow::array::BooleanArray::from(vec![
                Some(true),
                Some(false),
                None,
                Some(true),
                None,
                Some(false),
            ])),
            Arc::new(arrow::array::Int8Array::from(vec![
                Some(i8::MIN),
                Some(0),
                None,
                Some(i8::MAX),
                Some(1),
                Some(-1),
            ])),
            Arc::new(arrow::array::Int16Array::from(vec![
                Some(i16::MIN),
                Some(0),
                None,
                Some(i16::MAX),
                Some(1),
                Some(-1),
            ])),
            Arc::new(Int32Array::from(vec![
                Some(i32::MIN),
                Some(0),
                None,
                Some(i32::MAX),
                Some(1),
                Some(-1),
            ])),
            Arc::new(arrow::array::Int64Array::from(vec![
                Some(i64::MIN),
                Some(0),
                None,
                Some(i64::MAX),
                Some(1),
                Some(-1),
            ])),
            Arc::new(Float64Array::from(vec![
                Some(f64::NAN),
                Some(0.1),
                None,
                Some(f64::INFINITY),
                Some(-0.0),
                Some(1e300),
            ])),
            Arc::new(Float32Array::from(vec![
                Some(f32::NAN),
                Some(0.1),
                None,
                Some(1e-45),
                Some(-0.0),
                Some(3.0),
            ])),
            Arc::new(arrow::array::NullArray::new(6)),
        ];
        let (fast, each) = both_ways(&columns);
        assert_eq!(fast, each);
        assert_eq!(
            fast[1],
            "[\"5\",\"0.05\",\"0.0000005\",\"500\",\"-0001-01-01\",\"1969-12-31 23:59:59.999999\",\"1969-12-31 23:59:59.999999999\",\"1969-12-30 23:59:59\",\"1970-01-01 00:59:59.999 Europe/Berlin\",\"\\\"q\\\"\\n\",\"x\",null,false,0,0,0,0,0.1,0.1,null]"
        );
    }

    proptest::proptest! {
        /// The column-wise encoder writes what the per-value one does, for any values.
        #[test]
        fn rows_write_as_each_value_does(
            // Values of decimal(38, s): at most 38 digits.
            decimals in proptest::collection::vec(proptest::option::of(-(10i128.pow(38) - 1)..10i128.pow(38)), 1..8),
            scale in 0i8..=38,
            days in proptest::collection::vec(proptest::option::of(proptest::num::i32::ANY), 1..8),
            micros in proptest::collection::vec(proptest::option::of(-10_000_000_000_000_000i64..10_000_000_000_000_000), 1..8),
        ) {
            let rows = decimals.len().min(days.len()).min(micros.len());
            let columns: Vec<ArrayRef> = vec![
                Arc::new(
                    Decimal128Array::from(decimals[..rows].to_vec())
                        .with_precision_and_scale(38, scale)
                        .map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?,
                ),
                Arc::new(Date32Array::from(days[..rows].to_vec())),
                Arc::new(TimestampMicrosecondArray::from(micros[..rows].to_vec())),
            ];
            let (fast, each) = both_ways(&columns);
            proptest::prop_assert_eq!(fast, each);
        }

        /// Every value is written as JSON that reads back as the same value.
        #[test]
        fn encoded_values_are_json_that_reads_back(
            ints in proptest::collection::vec(proptest::option::of(proptest::num::i64::ANY), 1..8),
            doubles in proptest::collection::vec(proptest::num::f64::ANY, 1..8),
            texts in proptest::collection::vec("\\PC{0,12}|[\\x00-\\x1f\"\\\\]{0,4}", 1..8),
        ) {
            let longs: ArrayRef = Arc::new(arrow::array::Int64Array::from(ints.clone()));
            for (text, expected) in encoded(longs).iter().zip(&ints) {
                let value: serde_json::Value = serde_json::from_str(text)?;
                proptest::prop_assert_eq!(value.as_i64(), *expected);
            }
            let floats: ArrayRef = Arc::new(Float64Array::from(doubles.clone()));
            for (text, expected) in encoded(floats).iter().zip(&doubles) {
                let value: serde_json::Value = serde_json::from_str(text)?;
                match value {
                    serde_json::Value::Number(_) => {
                        // Read exactly, as clients do (serde_json's own float reading is not).
                        proptest::prop_assert_eq!(text.parse::<f64>().map(f64::to_bits), Ok(expected.to_bits()));
                    }
                    serde_json::Value::String(s) => {
                        // NaN and the infinities, as Trino writes them.
                        proptest::prop_assert!(!expected.is_finite(), "{s} for {expected}");
                        proptest::prop_assert_eq!(s.parse::<f64>().map(|v| v.to_bits() == expected.to_bits() || v.is_nan() && expected.is_nan()), Ok(true));
                    }
                    other => proptest::prop_assert!(false, "{other} for {expected}"),
                }
            }
            let strings: ArrayRef = Arc::new(StringArray::from(texts.clone()));
            for (text, expected) in encoded(strings).iter().zip(&texts) {
                let value: serde_json::Value = serde_json::from_str(text)?;
                proptest::prop_assert_eq!(value.as_str(), Some(expected.as_str()));
            }
        }
    }
}
