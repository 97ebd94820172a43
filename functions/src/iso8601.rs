//! Trino's ISO 8601 functions: `from_iso8601_timestamp(text)` (a `timestamp(3) with time
//! zone`), `from_iso8601_date(text)` (a `date`) and `to_iso8601(date | timestamp)` (text).
//!
//! `from_iso8601_timestamp` answers in the text's offset when the text is a constant that names
//! one, else in the session's zone (a text without an offset is a wall-clock reading there).
//! Arrow holds one zone per column: a text from a column naming an offset other than that zone
//! is NOT_SUPPORTED rather than the same instant in another zone (whose hour would differ).

use std::sync::Arc;

use chrono::{
    DateTime, Datelike, FixedOffset, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, Offset,
    TimeZone, Timelike,
};
use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Date32Array, StringBuilder, TimestampMillisecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Date32Type, Field, FieldRef, TimeUnit};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, is_string, result, unexpected_parameters};
use crate::error::invalid_argument;

/// A parsed ISO 8601 text: its wall-clock reading and the offset it names, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reading {
    local: NaiveDateTime,
    offset: Option<FixedOffset>,
}

fn invalid(text: &str) -> DataFusionError {
    invalid_argument(format!("Invalid format: \"{text}\""))
}

/// `YYYY`, `YYYY-MM` or `YYYY-MM-DD`.
fn parse_date(text: &str) -> Option<NaiveDate> {
    let mut parts = text.split('-');
    let year = parts.next().filter(|y| y.len() == 4)?.parse().ok()?;
    let month = match parts.next() {
        Some(m) if m.len() == 2 => m.parse().ok()?,
        Some(_) => return None,
        None => 1,
    };
    let day = match parts.next() {
        Some(d) if d.len() == 2 => d.parse().ok()?,
        Some(_) => return None,
        None => 1,
    };
    if parts.next().is_some() {
        return None;
    }
    NaiveDate::from_ymd_opt(year, month, day)
}

/// `HH`, `HH:MM`, `HH:MM:SS` or `HH:MM:SS.fff…` (kept to the millisecond).
fn parse_time(text: &str) -> Option<NaiveTime> {
    let (clock, fraction) = match text.split_once(['.', ',']) {
        Some((clock, fraction)) => (clock, Some(fraction)),
        None => (text, None),
    };
    let mut parts = clock.split(':');
    let mut field = |required: bool| -> Option<u32> {
        match parts.next() {
            Some(f) if f.len() == 2 && f.bytes().all(|b| b.is_ascii_digit()) => f.parse().ok(),
            Some(_) => None,
            None if required => None,
            None => Some(0),
        }
    };
    let (hour, minute, second) = (field(true)?, field(false)?, field(false)?);
    let millis = match fraction {
        Some(f) if !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()) => {
            let digits: String = f.chars().chain(std::iter::repeat('0')).take(3).collect();
            digits.parse().ok()?
        }
        Some(_) => return None,
        None => 0,
    };
    if parts.next().is_some() {
        return None;
    }
    NaiveTime::from_hms_milli_opt(hour, minute, second, millis)
}

/// `Z`, `±HH`, `±HH:MM` or `±HHMM`.
fn parse_offset(text: &str) -> Option<FixedOffset> {
    if text == "Z" {
        return FixedOffset::east_opt(0);
    }
    let sign = match text.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits: String = text[1..].chars().filter(|c| *c != ':').collect();
    if !(digits.len() == 2 || digits.len() == 4) || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let hours: i32 = digits[..2].parse().ok()?;
    let minutes: i32 = digits
        .get(2..)
        .filter(|m| !m.is_empty())
        .map_or(Some(0), |m| m.parse().ok())?;
    FixedOffset::east_opt(sign * (hours * 3600 + minutes * 60))
}

/// A date, optionally `T` and a time, optionally an offset after the time.
fn parse_timestamp(text: &str) -> Option<Reading> {
    let (date, rest) = match text.split_once('T') {
        Some((date, rest)) => (date, Some(rest)),
        None => (text, None),
    };
    let date = parse_date(date)?;
    let Some(rest) = rest else {
        return Some(Reading {
            local: date.and_time(NaiveTime::MIN),
            offset: None,
        });
    };
    let zone_at = rest.find(['Z', '+', '-']);
    let (time, offset) = match zone_at {
        Some(at) => (&rest[..at], Some(parse_offset(&rest[at..])?)),
        None => (rest, None),
    };
    Some(Reading {
        local: date.and_time(parse_time(time)?),
        offset,
    })
}

/// The zone a constant text names, as Arrow writes a fixed offset (`+05:30`).
fn offset_name(offset: FixedOffset) -> String {
    let seconds = offset.local_minus_utc();
    let sign = if seconds < 0 { '-' } else { '+' };
    let seconds = seconds.abs();
    format!("{sign}{:02}:{:02}", seconds / 3600, seconds / 60 % 60)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Iso {
    FromTimestamp,
    FromDate,
    To,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Iso8601 {
    kind: Iso,
    /// The zone a text without an offset is read in: the session's.
    session_zone: String,
    signature: Signature,
}

impl Iso8601 {
    pub(crate) fn from_timestamp(session_zone: &str) -> Self {
        Self::new(Iso::FromTimestamp, session_zone)
    }

    pub(crate) fn from_date() -> Self {
        Self::new(Iso::FromDate, "UTC")
    }

    pub(crate) fn to() -> Self {
        Self::new(Iso::To, "UTC")
    }

    fn new(kind: Iso, session_zone: &str) -> Self {
        Self {
            kind,
            session_zone: session_zone.to_string(),
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    /// The answer's zone: the offset a constant text names, else the session's.
    fn zone(&self, constant: Option<&ScalarValue>) -> String {
        constant
            .and_then(|c| c.try_as_str().flatten())
            .and_then(parse_timestamp)
            .and_then(|reading| reading.offset)
            .map_or_else(|| self.session_zone.clone(), offset_name)
    }
}

impl ScalarUDFImpl for Iso8601 {
    fn name(&self) -> &str {
        match self.kind {
            Iso::FromTimestamp => "from_iso8601_timestamp",
            Iso::FromDate => "from_iso8601_date",
            Iso::To => "to_iso8601",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match (self.kind, arg_types) {
            (Iso::FromTimestamp | Iso::FromDate, [t]) if is_string(t) => Ok(vec![DataType::Utf8]),
            (Iso::To, [t @ (DataType::Date32 | DataType::Timestamp(..))]) => Ok(vec![t.clone()]),
            (Iso::To, _) => Err(unexpected_parameters(
                self.name(),
                arg_types,
                "(date), to_iso8601(timestamp), to_iso8601(timestamp with time zone)",
            )),
            _ => Err(unexpected_parameters(self.name(), arg_types, "(varchar)")),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Iso::FromTimestamp => DataType::Timestamp(
                TimeUnit::Millisecond,
                Some(self.session_zone.as_str().into()),
            ),
            Iso::FromDate => DataType::Date32,
            Iso::To => DataType::Utf8,
        })
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let data_type = match self.kind {
            Iso::FromTimestamp => {
                let constant = args.scalar_arguments.first().copied().flatten();
                DataType::Timestamp(TimeUnit::Millisecond, Some(self.zone(constant).into()))
            }
            _ => self.return_type(&[])?,
        };
        Ok(Arc::new(Field::new(self.name(), data_type, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let Some(input) = columns.first() else {
            return exec_err!("{} takes one argument", self.name());
        };
        let answer: ArrayRef = match self.kind {
            Iso::FromTimestamp => {
                let DataType::Timestamp(TimeUnit::Millisecond, Some(zone)) =
                    args.return_field.data_type().clone()
                else {
                    return exec_err!(
                        "from_iso8601_timestamp answers a timestamp(3) with time zone"
                    );
                };
                let tz: Tz = zone
                    .parse()
                    .map_err(|_| invalid_argument(format!("Time zone not supported: {zone}")))?;
                let text = cast(input, &DataType::Utf8)?;
                let text = text.as_string::<i32>();
                let mut out = Vec::with_capacity(text.len());
                for i in 0..text.len() {
                    out.push(if text.is_null(i) {
                        None
                    } else {
                        Some(instant(text.value(i), &tz)?)
                    });
                }
                Arc::new(TimestampMillisecondArray::from(out).with_timezone(zone))
            }
            Iso::FromDate => {
                let text = cast(input, &DataType::Utf8)?;
                let text = text.as_string::<i32>();
                let mut out = Vec::with_capacity(text.len());
                for i in 0..text.len() {
                    if text.is_null(i) {
                        out.push(None);
                        continue;
                    }
                    let date = parse_date(text.value(i)).ok_or_else(|| invalid(text.value(i)))?;
                    out.push(Some(Date32Type::from_naive_date(date)));
                }
                Arc::new(Date32Array::from(out))
            }
            Iso::To => iso_text(input)?,
        };
        result(&args, answer)
    }
}

/// The instant `text` names, in milliseconds: its offset's, or read in `tz`. An offset other
/// than `tz`'s at that instant cannot be answered in a column of `tz`.
fn instant(text: &str, tz: &Tz) -> Result<i64> {
    let reading = parse_timestamp(text).ok_or_else(|| invalid(text))?;
    let instant = match reading.offset {
        Some(offset) => {
            let instant = offset
                .from_local_datetime(&reading.local)
                .single()
                .ok_or_else(|| invalid(text))?;
            let in_zone = tz.offset_from_utc_datetime(&instant.naive_utc()).fix();
            if in_zone != offset {
                return Err(DataFusionError::NotImplemented(format!(
                    "from_iso8601_timestamp of '{text}' in a column answered in {tz}: the \
                     offset of each text must be the zone of the first constant or the session's"
                )));
            }
            instant.timestamp_millis()
        }
        None => match tz.from_local_datetime(&reading.local) {
            LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => t.timestamp_millis(),
            LocalResult::None => {
                return Err(invalid_argument(format!(
                    "'{text}' is not a valid local time in {tz} (a daylight saving gap)"
                )));
            }
        },
    };
    Ok(instant)
}

/// Dates as `2020-01-02`; timestamps as `2020-01-02T03:04:05.678` with the fraction digits of
/// their precision, and the offset (`Z` for UTC) when they have a zone.
fn iso_text(input: &ArrayRef) -> Result<ArrayRef> {
    let mut out = StringBuilder::with_capacity(input.len(), input.len() * 24);
    match input.data_type() {
        DataType::Date32 => {
            for date in input.as_primitive::<Date32Type>().iter() {
                match date.and_then(Date32Type::to_naive_date_opt) {
                    Some(d) => {
                        out.append_value(format!("{:04}-{:02}-{:02}", d.year(), d.month(), d.day()))
                    }
                    None => out.append_null(),
                }
            }
        }
        DataType::Timestamp(unit, zone) => {
            let digits = match unit {
                TimeUnit::Second => 0,
                TimeUnit::Millisecond => 3,
                TimeUnit::Microsecond => 6,
                TimeUnit::Nanosecond => 9,
            };
            let nanos = cast(input, &DataType::Timestamp(TimeUnit::Nanosecond, None))?;
            let nanos =
                nanos.as_primitive::<datafusion::arrow::datatypes::TimestampNanosecondType>();
            let tz: Option<Tz> = match zone {
                Some(z) => Some(
                    z.parse()
                        .map_err(|_| invalid_argument(format!("Time zone not supported: {z}")))?,
                ),
                None => None,
            };
            for value in nanos.iter() {
                let Some(value) = value else {
                    out.append_null();
                    continue;
                };
                let utc = DateTime::from_timestamp_nanos(value);
                let (local, offset) = match &tz {
                    Some(tz) => {
                        let offset = tz.offset_from_utc_datetime(&utc.naive_utc()).fix();
                        (utc.naive_utc() + offset, Some(offset))
                    }
                    None => (utc.naive_utc(), None),
                };
                let mut text = format!(
                    "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
                    local.year(),
                    local.month(),
                    local.day(),
                    local.hour(),
                    local.minute(),
                    local.second()
                );
                if digits > 0 {
                    let fraction = format!("{:09}", local.nanosecond());
                    text.push('.');
                    text.push_str(&fraction[..digits]);
                }
                match offset {
                    Some(o) if o.local_minus_utc() == 0 => text.push('Z'),
                    Some(o) => text.push_str(&offset_name(o)),
                    None => {}
                }
                out.append_value(text);
            }
        }
        other => return exec_err!("to_iso8601 takes a date or a timestamp, not {other}"),
    }
    Ok(Arc::new(out.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::TimestampMillisecondArray;

    #[test]
    fn texts_are_read_as_iso_8601() -> Result<()> {
        let utc: Tz = "UTC".parse().map_err(|_| invalid_argument("zone"))?;
        assert_eq!(instant("1970-01-01T00:00:01Z", &utc)?, 1000);
        assert_eq!(instant("1970-01-01T00:00:00.5", &utc)?, 500);
        assert_eq!(instant("1970-01-02", &utc)?, 86_400_000);
        let five: Tz = "+05:00".parse().map_err(|_| invalid_argument("zone"))?;
        assert_eq!(instant("1970-01-01T05:00+05:00", &five)?, 0);
        assert_eq!(instant("1970-01-01T05:00:00+0500", &five)?, 0);
        // Another offset than the column's zone is refused, not moved.
        assert!(matches!(
            instant("1970-01-01T05:00+05:00", &utc),
            Err(DataFusionError::NotImplemented(_))
        ));
        let paris: Tz = "Europe/Paris"
            .parse()
            .map_err(|_| invalid_argument("zone"))?;
        assert_eq!(instant("2020-01-01T01:00:00", &paris)?, 1_577_836_800_000);
        assert!(instant("2020-03-29T02:30:00", &paris).is_err(), "a DST gap");
        for bad in ["2020-1-01", "x", "2020-01-01T25:00", "2020-01-01T10:00+5"] {
            assert!(
                parse_timestamp(bad).is_none() || instant(bad, &utc).is_err(),
                "{bad}"
            );
        }
        assert_eq!(
            Iso8601::from_timestamp("UTC").zone(Some(&ScalarValue::Utf8(Some(
                "2020-01-01T00:00:00-03:30".into()
            )))),
            "-03:30"
        );
        Ok(())
    }

    #[test]
    fn values_are_written_as_iso_8601() -> Result<()> {
        let stamps: ArrayRef = Arc::new(TimestampMillisecondArray::from(vec![1_577_934_245_678]));
        let text = iso_text(&stamps)?;
        assert_eq!(text.as_string::<i32>().value(0), "2020-01-02T03:04:05.678");
        let zoned: ArrayRef =
            Arc::new(TimestampMillisecondArray::from(vec![1_577_934_245_678]).with_timezone("UTC"));
        assert_eq!(
            iso_text(&zoned)?.as_string::<i32>().value(0),
            "2020-01-02T03:04:05.678Z"
        );
        let east: ArrayRef =
            Arc::new(TimestampMillisecondArray::from(vec![0]).with_timezone("+05:30"));
        assert_eq!(
            iso_text(&east)?.as_string::<i32>().value(0),
            "1970-01-01T05:30:00.000+05:30"
        );
        let dates: ArrayRef = Arc::new(Date32Array::from(vec![Some(18_262), None]));
        let text = iso_text(&dates)?;
        assert_eq!(text.as_string::<i32>().value(0), "2020-01-01");
        assert!(text.is_null(1));
        Ok(())
    }
}
