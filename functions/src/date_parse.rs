//! `date_parse(string, format)`: text read with MySQL's `%` specifiers as Trino reads them, to
//! a `timestamp(3)`. The specifiers are `date_format`'s ([`super::format`]), read instead of
//! written: numbers take up to their field's digits (`%Y` four, `%d` two, `%c` one or two),
//! names of months, days and half-days any case, `%y` a year from 1970 to 2069 (Joda-Time's
//! pivot, Trino's), `%f` a fraction of up to nine digits (kept to milliseconds). Fields the
//! format does not give are those of 1970-01-01 00:00:00.000; text left over, a field out of
//! range or an impossible date is INVALID_FUNCTION_ARGUMENT.
//!
//! Teradata's `to_date(string, format)` and `to_timestamp(string, format)` (a `date`, a
//! `timestamp(3)`) read `to_char`'s formats the same way; their `yy` is a year from 2000 to
//! 2099 and `hh` an hour from 0 to 11.

use std::sync::Arc;

use chrono::{LocalResult, NaiveDate, NaiveTime, TimeZone};
use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Date32Builder, TimestampMillisecondBuilder,
};
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{LastParsed, arrays, is_string, result, strings};
use crate::error::invalid_argument;
use crate::format::{MONTHS, Number, Piece, WEEKDAYS, joda, mysql, teradata};

const MILLIS_PER_DAY: i64 = 86_400_000;

/// The functions that read text as a date-time, each with its format's dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Reading {
    /// `date_parse`: MySQL's specifiers, a `timestamp(3)`.
    DateParse,
    /// Teradata's `to_date`: a `date`.
    ToDate,
    /// Teradata's `to_timestamp`: a `timestamp(3)`.
    ToTimestamp,
}

impl Reading {
    fn pieces(self, format: &str) -> Result<Vec<Piece>> {
        match self {
            Reading::DateParse => mysql(format),
            Reading::ToDate | Reading::ToTimestamp => teradata(format),
        }
    }

    /// The year of two digits `two`: Joda-Time's pivot at 2020 (1970 to 2069) for MySQL's
    /// `%y`; 2000 to 2099 for Teradata's `yy`.
    fn two_digit_year(self, two: i64) -> i64 {
        match self {
            Reading::DateParse if two >= 70 => 1900 + two,
            _ => 2000 + two,
        }
    }
}

/// The fields read so far.
#[derive(Debug, Default)]
struct Fields {
    year: Option<i32>,
    month: Option<u32>,
    day: Option<u32>,
    day_of_year: Option<u32>,
    hour: Option<u32>,
    /// A 12-hour clock's hour (1 to 12) and whether it is after noon.
    clock_hour: Option<u32>,
    afternoon: Option<bool>,
    minute: Option<u32>,
    second: Option<u32>,
    millisecond: Option<u32>,
}

/// Reads `text` as `pieces` describe it.
struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl Reader<'_> {
    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    fn malformed(&self) -> datafusion::common::DataFusionError {
        invalid_argument(format!(
            "Invalid format: \"{}\" is malformed at \"{}\"",
            self.text,
            self.rest()
        ))
    }

    /// Up to `max` digits (at least one), with a sign when `signed`.
    fn number(&mut self, max: usize, signed: bool) -> Result<i64> {
        let rest = self.rest();
        let sign = usize::from(signed && rest.starts_with(['-', '+']));
        let digits = rest[sign..]
            .bytes()
            .take(max)
            .take_while(u8::is_ascii_digit)
            .count();
        if digits == 0 {
            return Err(self.malformed());
        }
        let value: i64 = rest[..sign + digits]
            .parse()
            .map_err(|_| self.malformed())?;
        self.at += sign + digits;
        Ok(value)
    }

    /// The name among `names` (or its first three letters when `short`) the text starts with,
    /// in any case: its index.
    fn name(&mut self, names: &[&str], short: bool) -> Result<usize> {
        let rest = self.rest();
        for (i, name) in names.iter().enumerate() {
            let name = if short { &name[..3] } else { name };
            if rest
                .get(..name.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(name))
            {
                self.at += name.len();
                return Ok(i);
            }
        }
        Err(self.malformed())
    }

    fn literal(&mut self, expected: &str) -> Result<()> {
        if self.rest().starts_with(expected) {
            self.at += expected.len();
            Ok(())
        } else {
            Err(self.malformed())
        }
    }
}

fn small(value: i64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// `text` read as `pieces`, in milliseconds since 1970-01-01 00:00:00.
fn parse(text: &str, pieces: &[Piece], reading: Reading) -> Result<i64> {
    let mut reader = Reader { text, at: 0 };
    let mut fields = Fields::default();
    let mut pieces = pieces.iter().peekable();
    while let Some(piece) = pieces.next() {
        match piece {
            Piece::Text(expected) => reader.literal(expected)?,
            Piece::Number(number, width) => match number {
                Number::Year => {
                    fields.year = i32::try_from(reader.number((*width).max(4), true)?).ok();
                }
                Number::Month => fields.month = Some(small(reader.number(2, false)?)),
                Number::Day => fields.day = Some(small(reader.number(2, false)?)),
                Number::DayOfYear => fields.day_of_year = Some(small(reader.number(3, false)?)),
                Number::Hour => fields.hour = Some(small(reader.number(2, false)?)),
                Number::ClockHourOfHalfDay => {
                    fields.clock_hour = Some(small(reader.number(2, false)?));
                }
                Number::Minute => fields.minute = Some(small(reader.number(2, false)?)),
                Number::Second => fields.second = Some(small(reader.number(2, false)?)),
                Number::HourOfHalfDay => {
                    let hour = reader.number(2, false)?;
                    if hour > 11 {
                        return Err(invalid_argument(format!(
                            "Cannot parse \"{text}\": Value {hour} for hourOfHalfday must be in the range [0,11]"
                        )));
                    }
                    fields.hour = Some(small(hour));
                }
                Number::IsoWeekYear
                | Number::IsoWeek
                | Number::DayOfWeek
                | Number::ClockHour
                | Number::Century => {
                    return Err(invalid_argument(
                        "week-based fields are not supported in a format read as a timestamp",
                    ));
                }
            },
            Piece::TwoDigitYear => {
                let start = reader.at;
                let two = reader.number(2, false)?;
                if reading != Reading::DateParse && reader.at - start != 2 {
                    return Err(reader.malformed());
                }
                fields.year = i32::try_from(reading.two_digit_year(two)).ok();
            }
            Piece::MonthName { short } => {
                let month = reader.name(&MONTHS, *short)?;
                fields.month = u32::try_from(month + 1).ok();
            }
            Piece::WeekdayName { short } => {
                reader.name(&WEEKDAYS, *short)?;
            }
            Piece::HalfDay => {
                fields.afternoon = Some(reader.name(&["AM", "PM"], false)? == 1);
            }
            Piece::Fraction(_) => {
                // `%f` is written as milliseconds and "000"; read as up to nine digits.
                if matches!(pieces.peek(), Some(Piece::Text(zeros)) if zeros == "000") {
                    pieces.next();
                }
                let start = reader.at;
                let digits = reader.number(9, false)?;
                let length = u32::try_from(reader.at - start).unwrap_or(9);
                let nanos = digits * 10_i64.pow(9 - length);
                fields.millisecond = Some(small(nanos / 1_000_000));
            }
            Piece::Offset { .. } | Piece::ZoneId | Piece::Era => {
                return Err(invalid_argument(
                    "zones and eras are not supported in a format read as a timestamp",
                ));
            }
        }
    }
    if !reader.rest().is_empty() {
        return Err(reader.malformed());
    }
    timestamp(&fields).ok_or_else(|| {
        invalid_argument(format!(
            "Invalid format: \"{text}\": a field is out of its range"
        ))
    })
}

/// The fields' instant, in milliseconds; `None` when they name no real date and time.
fn timestamp(fields: &Fields) -> Option<i64> {
    let year = fields.year.unwrap_or(1970);
    let date = match fields.day_of_year {
        Some(day) => NaiveDate::from_yo_opt(year, day)?,
        None => NaiveDate::from_ymd_opt(year, fields.month.unwrap_or(1), fields.day.unwrap_or(1))?,
    };
    let hour = match (fields.clock_hour, fields.afternoon) {
        (Some(h), afternoon) if (1..=12).contains(&h) => {
            h % 12 + if afternoon == Some(true) { 12 } else { 0 }
        }
        (Some(_), _) => return None,
        (None, afternoon) => {
            fields.hour.unwrap_or(0) + if afternoon == Some(true) { 12 } else { 0 }
        }
    };
    let time = NaiveTime::from_hms_milli_opt(
        hour,
        fields.minute.unwrap_or(0),
        fields.second.unwrap_or(0),
        fields.millisecond.unwrap_or(0),
    )?;
    Some(date.and_time(time).and_utc().timestamp_millis())
}

/// The coercion of `(varchar, varchar)`: a text and its format.
fn text_and_format(function: &str, arg_types: &[DataType]) -> Result<Vec<DataType>> {
    if arg_types.len() == 2 && arg_types.iter().all(is_string) {
        return Ok(vec![DataType::Utf8; 2]);
    }
    Err(crate::args::unexpected_parameters(
        function,
        arg_types,
        "(varchar, varchar)",
    ))
}

/// `date_parse(string, format)`, `to_date(string, format)` or `to_timestamp(string, format)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct DateParse {
    reading: Reading,
    signature: Signature,
}

impl DateParse {
    pub(crate) fn new(reading: Reading) -> Self {
        Self {
            reading,
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for DateParse {
    fn name(&self) -> &str {
        match self.reading {
            Reading::DateParse => "date_parse",
            Reading::ToDate => "to_date",
            Reading::ToTimestamp => "to_timestamp",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        text_and_format(self.name(), arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.reading {
            Reading::ToDate => DataType::Date32,
            Reading::DateParse | Reading::ToTimestamp => {
                DataType::Timestamp(TimeUnit::Millisecond, None)
            }
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [texts, formats] = columns.as_slice() else {
            return exec_err!("{} takes 2 arguments", self.name());
        };
        let (texts, formats) = (strings(texts)?, strings(formats)?);
        let (texts, formats) = (texts.as_string::<i32>(), formats.as_string::<i32>());
        let mut millis = Vec::with_capacity(texts.len());
        let mut parsed = LastParsed::new();
        for row in 0..texts.len() {
            if texts.is_null(row) || formats.is_null(row) {
                millis.push(None);
                continue;
            }
            let pieces = parsed.get(formats.value(row), |f| self.reading.pieces(f))?;
            millis.push(Some(parse(texts.value(row), pieces, self.reading)?));
        }
        let array: ArrayRef = match self.reading {
            Reading::ToDate => {
                let mut out = Date32Builder::with_capacity(millis.len());
                for value in millis {
                    // Teradata's days: the milliseconds' whole days, toward zero.
                    out.append_option(value.and_then(|m| i32::try_from(m / MILLIS_PER_DAY).ok()));
                }
                Arc::new(out.finish())
            }
            Reading::DateParse | Reading::ToTimestamp => {
                let mut out = TimestampMillisecondBuilder::with_capacity(millis.len());
                for value in millis {
                    out.append_option(value);
                }
                Arc::new(out.finish())
            }
        };
        result(&args, array)
    }
}

/// Joda-Time's `pattern`, refused when it names a zone: `parse_datetime`'s answer has its
/// column's one zone.
fn zoneless_joda(pattern: &str) -> Result<Vec<Piece>> {
    let pieces = joda(pattern)?;
    if pieces
        .iter()
        .any(|p| matches!(p, Piece::Offset { .. } | Piece::ZoneId))
    {
        return Err(datafusion::error::DataFusionError::NotImplemented(format!(
            "parse_datetime with a time zone in the pattern ('{pattern}'): the answer is in \
             the session's zone"
        )));
    }
    Ok(pieces)
}

/// `parse_datetime(string, pattern)`: text read with Joda-Time's pattern letters (as
/// `format_datetime` writes them) as a wall-clock time in the session's zone, a
/// `timestamp(3) with time zone` there. A pattern naming a zone is not supported: the answer's
/// zone is its column's, one for every row.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct ParseDatetime {
    session_zone: String,
    signature: Signature,
}

impl ParseDatetime {
    pub(crate) fn new(session_zone: &str) -> Self {
        Self {
            session_zone: session_zone.to_string(),
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ParseDatetime {
    fn name(&self) -> &str {
        "parse_datetime"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        text_and_format(self.name(), arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Timestamp(
            TimeUnit::Millisecond,
            Some(self.session_zone.as_str().into()),
        ))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [texts, patterns] = columns.as_slice() else {
            return exec_err!("parse_datetime takes 2 arguments");
        };
        let zone: Tz = self.session_zone.parse().map_err(|_| {
            invalid_argument(format!("Time zone not supported: {}", self.session_zone))
        })?;
        let (texts, patterns) = (strings(texts)?, strings(patterns)?);
        let (texts, patterns) = (texts.as_string::<i32>(), patterns.as_string::<i32>());
        let mut out = TimestampMillisecondBuilder::with_capacity(texts.len())
            .with_timezone(self.session_zone.as_str());
        let mut parsed = LastParsed::new();
        for row in 0..texts.len() {
            if texts.is_null(row) || patterns.is_null(row) {
                out.append_null();
                continue;
            }
            let pieces = parsed.get(patterns.value(row), zoneless_joda)?;
            let text = texts.value(row);
            // Read as UTC's wall clock first, then placed in the session's zone.
            let wall = parse(text, pieces, Reading::DateParse)?;
            let local = chrono::DateTime::from_timestamp_millis(wall)
                .map(|t| t.naive_utc())
                .ok_or_else(|| invalid_argument(format!("Invalid format: \"{text}\"")))?;
            match zone.from_local_datetime(&local) {
                LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => {
                    out.append_value(t.timestamp_millis());
                }
                LocalResult::None => {
                    return Err(invalid_argument(format!(
                        "Cannot parse \"{text}\": Illegal instant due to time zone offset \
                         transition ({zone})"
                    )));
                }
            }
        }
        let array: ArrayRef = Arc::new(out.finish());
        result(&args, array)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, format: &str) -> Result<String> {
        let millis = parse(text, &mysql(format)?, Reading::DateParse)?;
        let t = chrono::DateTime::from_timestamp_millis(millis)
            .map(|t| t.naive_utc().format("%Y-%m-%d %H:%M:%S%.3f").to_string());
        t.map_or_else(|| exec_err!("out of range"), Ok)
    }

    #[test]
    fn reads_what_date_format_writes() -> Result<()> {
        assert_eq!(
            read("2013-05-17 12:35:10", "%Y-%m-%d %H:%i:%s")?,
            "2013-05-17 12:35:10.000"
        );
        assert_eq!(read("20240102", "%Y%m%d")?, "2024-01-02 00:00:00.000");
        assert_eq!(
            read("5/7/99 3:04 pm", "%c/%e/%y %l:%i %p")?,
            "1999-05-07 15:04:00.000"
        );
        assert_eq!(
            read("August 22, 01 12:00:01 AM", "%M %e, %y %h:%i:%s %p")?,
            "2001-08-22 00:00:01.000"
        );
        assert_eq!(
            read("2001-08-22 03:04:05.321456", "%Y-%m-%d %T.%f")?,
            "2001-08-22 03:04:05.321"
        );
        assert_eq!(read("2024 060", "%Y %j")?, "2024-02-29 00:00:00.000");
        assert_eq!(read("Wed Aug 22", "%a %b %e")?, "1970-08-22 00:00:00.000");
        Ok(())
    }

    #[test]
    fn refuses_text_that_does_not_match() {
        for (text, format) in [
            ("2024-01-02x", "%Y-%m-%d"),
            ("2024-13-02", "%Y-%m-%d"),
            ("2023-02-29", "%Y-%m-%d"),
            ("2024/01/02", "%Y-%m-%d"),
            ("13:00 PM", "%h:%i %p"),
            ("", "%Y"),
        ] {
            assert!(read(text, format).is_err(), "{text} as {format}");
        }
    }

    fn read_teradata(text: &str, format: &str) -> Result<String> {
        let millis = parse(text, &teradata(format)?, Reading::ToTimestamp)?;
        let t = chrono::DateTime::from_timestamp_millis(millis)
            .map(|t| t.naive_utc().format("%Y-%m-%d %H:%M:%S%.3f").to_string());
        t.map_or_else(|| exec_err!("out of range"), Ok)
    }

    /// Trino's TestTeradataDateFunctions.
    #[test]
    fn reads_teradata_formats() -> Result<()> {
        for (text, format, read) in [
            ("1988/04/08", "yyyy/mm/dd", "1988-04-08 00:00:00.000"),
            (";198804:08", ";yyyymm:dd", "1988-04-08 00:00:00.000"),
            ("8 04 1988", "dd mm yyyy", "1988-04-08 00:00:00.000"),
            (
                "1988/04/08 2:3:4",
                "yyyy/mm/dd hh24:mi:ss",
                "1988-04-08 02:03:04.000",
            ),
            ("88/04/08", "yy/mm/dd", "2088-04-08 00:00:00.000"),
            ("11", "hh", "1970-01-01 11:00:00.000"),
        ] {
            assert_eq!(read_teradata(text, format)?, read, "{text} as {format}");
        }
        for (text, format) in [
            ("12", "hh"),
            ("8/04/08", "yy/mm/dd"),
            ("1988-13-01", "yyyy-mm-dd"),
        ] {
            assert!(read_teradata(text, format).is_err(), "{text} as {format}");
        }
        Ok(())
    }
}
