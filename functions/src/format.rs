//! Trino's three ways of formatting a date or timestamp as text: `date_format(x, format)` with
//! MySQL's `%` specifiers, `format_datetime(x, pattern)` with Joda-Time's pattern letters and
//! Teradata's `to_char(x, format)` (`yyyy-mm-dd hh24:mi:ss`). DataFusion's `date_format` and
//! `to_char` read chrono's specifiers, where `%M` is the minute (MySQL's month name) and
//! `yyyy` is text: the same format gave another text or an error. `date_parse`, `to_date`
//! and `to_timestamp` read text with the same formats ([`super::date_parse`]).

use std::fmt::Write;

use chrono::{Datelike, NaiveDateTime, Timelike};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{LastParsed, arrays, is_string, result, strings};
use crate::datetime::Clock;
use crate::error::invalid_argument;

/// One part of a format: text as written, or a field of the date-time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    Text(String),
    /// A number, zero-padded to `width`.
    Number(Number, usize),
    /// The last two digits of the year.
    TwoDigitYear,
    MonthName {
        short: bool,
    },
    WeekdayName {
        short: bool,
    },
    HalfDay,
    /// The first `digits` digits of the second's fraction.
    Fraction(usize),
    /// The zone's offset: `+0800`, or `+08:00` with a colon.
    Offset {
        colon: bool,
    },
    ZoneId,
    Era,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Number {
    Year,
    IsoWeekYear,
    IsoWeek,
    Month,
    Day,
    DayOfYear,
    /// Monday 1 to Sunday 7.
    DayOfWeek,
    Hour,
    /// 1 to 12.
    ClockHourOfHalfDay,
    /// 0 to 11.
    HourOfHalfDay,
    /// 1 to 24.
    ClockHour,
    Minute,
    Second,
    Century,
}

fn refused(what: &str) -> datafusion::common::DataFusionError {
    invalid_argument(what.to_string())
}

/// MySQL's specifiers as Trino reads them (`%x` for any other `x` is `x`).
pub(crate) fn mysql(format: &str) -> Result<Vec<Piece>> {
    let mut pieces = Vec::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            pieces.push(Piece::Text(c.to_string()));
            continue;
        }
        let Some(spec) = chars.next() else {
            break;
        };
        let n = |number, width| Piece::Number(number, width);
        match spec {
            'a' => pieces.push(Piece::WeekdayName { short: true }),
            'b' => pieces.push(Piece::MonthName { short: true }),
            'c' => pieces.push(n(Number::Month, 1)),
            'd' => pieces.push(n(Number::Day, 2)),
            'e' => pieces.push(n(Number::Day, 1)),
            // Six digits, of which Trino prints the milliseconds.
            'f' => {
                pieces.push(Piece::Fraction(3));
                pieces.push(Piece::Text("000".into()));
            }
            'H' => pieces.push(n(Number::Hour, 2)),
            'h' | 'I' => pieces.push(n(Number::ClockHourOfHalfDay, 2)),
            'i' => pieces.push(n(Number::Minute, 2)),
            'j' => pieces.push(n(Number::DayOfYear, 3)),
            'k' => pieces.push(n(Number::Hour, 1)),
            'l' => pieces.push(n(Number::ClockHourOfHalfDay, 1)),
            'M' => pieces.push(Piece::MonthName { short: false }),
            'm' => pieces.push(n(Number::Month, 2)),
            'p' => pieces.push(Piece::HalfDay),
            'r' => pieces.extend([
                n(Number::ClockHourOfHalfDay, 2),
                Piece::Text(":".into()),
                n(Number::Minute, 2),
                Piece::Text(":".into()),
                n(Number::Second, 2),
                Piece::Text(" ".into()),
                Piece::HalfDay,
            ]),
            'S' | 's' => pieces.push(n(Number::Second, 2)),
            'T' => pieces.extend([
                n(Number::Hour, 2),
                Piece::Text(":".into()),
                n(Number::Minute, 2),
                Piece::Text(":".into()),
                n(Number::Second, 2),
            ]),
            'v' => pieces.push(n(Number::IsoWeek, 2)),
            'W' => pieces.push(Piece::WeekdayName { short: false }),
            'x' => pieces.push(n(Number::IsoWeekYear, 4)),
            'Y' => pieces.push(n(Number::Year, 4)),
            'y' => pieces.push(Piece::TwoDigitYear),
            'D' | 'U' | 'u' | 'V' | 'w' | 'X' => {
                return Err(refused(&format!(
                    "%{spec} not supported in date format string"
                )));
            }
            other => pieces.push(Piece::Text(other.to_string())),
        }
    }
    Ok(pieces)
}

/// Teradata's format as Trino's teradata functions read it: the lowercase tokens `yyyy`,
/// `yy`, `mm`, `dd`, `hh24`, `hh` (the hour of the half day, 0 to 11), `mi` and `ss`, and the
/// separators space, tab, newline, carriage return and `- / , . ; :`; anything else is
/// refused.
pub(crate) fn teradata(format: &str) -> Result<Vec<Piece>> {
    let n = |number, width| Piece::Number(number, width);
    let mut pieces = Vec::new();
    let mut rest = format;
    while let Some(c) = rest.chars().next() {
        let (length, piece) = if rest.starts_with("yyyy") {
            (4, n(Number::Year, 4))
        } else if rest.starts_with("yy") {
            (2, Piece::TwoDigitYear)
        } else if rest.starts_with("mm") {
            (2, n(Number::Month, 2))
        } else if rest.starts_with("dd") {
            (2, n(Number::Day, 2))
        } else if rest.starts_with("hh24") {
            (4, n(Number::Hour, 2))
        } else if rest.starts_with("hh") {
            (2, n(Number::HourOfHalfDay, 2))
        } else if rest.starts_with("mi") {
            (2, n(Number::Minute, 2))
        } else if rest.starts_with("ss") {
            (2, n(Number::Second, 2))
        } else if matches!(
            c,
            ' ' | '\t' | '\r' | '\n' | '-' | '/' | ',' | '.' | ';' | ':'
        ) {
            (1, Piece::Text(c.to_string()))
        } else {
            let offset = format[..format.len() - rest.len()].chars().count();
            return Err(refused(&format!(
                "Failed to tokenize string [{c}] at offset [{offset}]"
            )));
        };
        pieces.push(piece);
        rest = &rest[length..];
    }
    Ok(pieces)
}

/// Joda-Time's pattern letters; text in single quotes, `''` a quote.
pub(crate) fn joda(pattern: &str) -> Result<Vec<Piece>> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut pieces = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let count = chars[i..].iter().take_while(|&&x| x == c).count();
        if c == '\'' {
            if count >= 2 {
                pieces.push(Piece::Text("'".repeat(count / 2)));
                i += count - count % 2;
                continue;
            }
            let end = chars[i + 1..]
                .iter()
                .position(|&x| x == '\'')
                .ok_or_else(|| refused("unterminated quote in the date-time pattern"))?;
            let quoted: String = chars[i + 1..i + 1 + end].iter().collect();
            pieces.push(Piece::Text(quoted));
            i += end + 2;
            continue;
        }
        if !c.is_ascii_alphabetic() {
            pieces.push(Piece::Text(c.to_string()));
            i += 1;
            continue;
        }
        let n = |number| Piece::Number(number, count);
        let piece = match c {
            'G' => Piece::Era,
            'C' => n(Number::Century),
            'y' | 'Y' if count == 2 => Piece::TwoDigitYear,
            'y' | 'Y' => n(Number::Year),
            'x' if count == 2 => Piece::TwoDigitYear,
            'x' => n(Number::IsoWeekYear),
            'w' => n(Number::IsoWeek),
            'e' => n(Number::DayOfWeek),
            'E' => Piece::WeekdayName { short: count < 4 },
            'D' => n(Number::DayOfYear),
            'M' if count >= 3 => Piece::MonthName { short: count == 3 },
            'M' => n(Number::Month),
            'd' => n(Number::Day),
            'a' => Piece::HalfDay,
            'K' => n(Number::HourOfHalfDay),
            'h' => n(Number::ClockHourOfHalfDay),
            'H' => n(Number::Hour),
            'k' => n(Number::ClockHour),
            'm' => n(Number::Minute),
            's' => n(Number::Second),
            'S' => Piece::Fraction(count.min(9)),
            'Z' if count >= 3 => Piece::ZoneId,
            'Z' => Piece::Offset { colon: count == 2 },
            'z' => Piece::ZoneId,
            other => {
                return Err(refused(&format!(
                    "Illegal pattern component: {}",
                    other.to_string().repeat(count)
                )));
            }
        };
        pieces.push(piece);
        i += count;
    }
    Ok(pieces)
}

pub(crate) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
pub(crate) const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// The zone a value is shown in: its type's, or none (a zone-less timestamp or a date).
#[derive(Clone, Copy)]
struct Shown<'a> {
    local: NaiveDateTime,
    offset_seconds: Option<i32>,
    zone: Option<&'a str>,
}

fn write_pieces(pieces: &[Piece], shown: Shown<'_>, out: &mut String) -> Result<()> {
    let t = shown.local;
    for piece in pieces {
        // Writing to a String cannot fail.
        let _ = match piece {
            Piece::Text(text) => write!(out, "{text}"),
            Piece::Number(number, width) => {
                let value: i64 = match number {
                    Number::Year => i64::from(t.year()),
                    Number::IsoWeekYear => i64::from(t.iso_week().year()),
                    Number::IsoWeek => i64::from(t.iso_week().week()),
                    Number::Month => i64::from(t.month()),
                    Number::Day => i64::from(t.day()),
                    Number::DayOfYear => i64::from(t.ordinal()),
                    Number::DayOfWeek => i64::from(t.weekday().number_from_monday()),
                    Number::Hour => i64::from(t.hour()),
                    Number::ClockHourOfHalfDay => i64::from((t.hour() + 11) % 12 + 1),
                    Number::HourOfHalfDay => i64::from(t.hour() % 12),
                    Number::ClockHour => i64::from(if t.hour() == 0 { 24 } else { t.hour() }),
                    Number::Minute => i64::from(t.minute()),
                    Number::Second => i64::from(t.second()),
                    Number::Century => i64::from(t.year().div_euclid(100)),
                };
                if value < 0 {
                    write!(out, "-{:0width$}", value.unsigned_abs(), width = *width)
                } else {
                    write!(out, "{value:0width$}", width = *width)
                }
            }
            Piece::TwoDigitYear => write!(out, "{:02}", t.year().rem_euclid(100)),
            Piece::MonthName { short } => {
                let name = MONTHS[t.month0() as usize];
                write!(out, "{}", if *short { &name[..3] } else { name })
            }
            Piece::WeekdayName { short } => {
                let name = WEEKDAYS[t.weekday().num_days_from_monday() as usize];
                write!(out, "{}", if *short { &name[..3] } else { name })
            }
            Piece::HalfDay => write!(out, "{}", if t.hour() < 12 { "AM" } else { "PM" }),
            Piece::Fraction(digits) => {
                let nanos = format!("{:09}", t.nanosecond() % 1_000_000_000);
                write!(out, "{}", &nanos[..*digits])
            }
            Piece::Era => write!(out, "{}", if t.year() > 0 { "AD" } else { "BC" }),
            Piece::Offset { colon } => {
                let Some(seconds) = shown.offset_seconds else {
                    return Err(refused(
                        "a zone in the pattern needs a timestamp with time zone",
                    ));
                };
                let sign = if seconds < 0 { '-' } else { '+' };
                let minutes = seconds.unsigned_abs() / 60;
                let separator = if *colon { ":" } else { "" };
                write!(
                    out,
                    "{sign}{:02}{separator}{:02}",
                    minutes / 60,
                    minutes % 60
                )
            }
            Piece::ZoneId => match shown.zone {
                Some(zone) => write!(out, "{zone}"),
                None => {
                    return Err(refused(
                        "a zone in the pattern needs a timestamp with time zone",
                    ));
                }
            },
        };
    }
    Ok(())
}

/// Which of the three functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Style {
    MySql,
    Joda,
    Teradata,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct DateTimeText {
    style: Style,
    signature: Signature,
}

impl DateTimeText {
    /// `date_format(x, format)`.
    pub(crate) fn date_format() -> Self {
        Self {
            style: Style::MySql,
            signature: Signature::any(2, Volatility::Immutable),
        }
    }

    /// `format_datetime(x, pattern)`.
    pub(crate) fn format_datetime() -> Self {
        Self {
            style: Style::Joda,
            signature: Signature::any(2, Volatility::Immutable),
        }
    }

    /// `to_char(x, format)`, Teradata's.
    pub(crate) fn to_char() -> Self {
        Self {
            style: Style::Teradata,
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for DateTimeText {
    fn name(&self) -> &str {
        match self.style {
            Style::MySql => "date_format",
            Style::Joda => "format_datetime",
            Style::Teradata => "to_char",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [x, f] if Clock::of(x).is_ok() && (is_string(f) || f == &DataType::Null) => {
                Ok(vec![x.clone(), DataType::Utf8])
            }
            _ => Err(crate::args::unexpected_parameters(
                self.name(),
                arg_types,
                "(timestamp, varchar)",
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [x, format] = columns.as_slice() else {
            return exec_err!("{} takes 2 arguments", self.name());
        };
        let clock = Clock::of(x.data_type())?;
        let zone_name = match x.data_type() {
            DataType::Timestamp(_, Some(zone)) => Some(zone.to_string()),
            _ => None,
        };
        let values = clock.values(x)?;
        let formats = strings(format)?;
        let formats = formats.as_string::<i32>();
        let mut out = StringBuilder::with_capacity(values.len(), values.len() * 24);
        let mut parsed = LastParsed::new();
        let mut text = String::new();
        for row in 0..values.len() {
            if values.is_null(row) || formats.is_null(row) {
                out.append_null();
                continue;
            }
            let pieces = parsed.get(formats.value(row), |format| match self.style {
                Style::MySql => mysql(format),
                Style::Joda => joda(format),
                Style::Teradata => teradata(format),
            })?;
            let value = values.value(row);
            let local = clock
                .local(value)
                .ok_or_else(|| refused("the value is outside the range dates can be shown in"))?;
            let offset_seconds = clock.offset_seconds(value);
            text.clear();
            write_pieces(
                pieces,
                Shown {
                    local,
                    offset_seconds,
                    zone: zone_name.as_deref(),
                },
                &mut text,
            )?;
            out.append_value(&text);
        }
        let array: ArrayRef = std::sync::Arc::new(out.finish());
        result(&args, array)
    }
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;

    use super::*;

    fn shown(pieces: &[Piece]) -> String {
        let local = NaiveDate::from_ymd_opt(2001, 8, 22)
            .and_then(|d| d.and_hms_milli_opt(15, 4, 5, 321))
            .expect("a valid date-time");
        let mut out = String::new();
        write_pieces(
            pieces,
            Shown {
                local,
                offset_seconds: Some(-8 * 3600),
                zone: Some("America/Los_Angeles"),
            },
            &mut out,
        )
        .expect("formatted");
        out
    }

    #[test]
    fn mysql_specifiers_as_trino_reads_them() -> Result<()> {
        assert_eq!(shown(&mysql("%m-%d-%Y %H")?), "08-22-2001 15");
        assert_eq!(
            shown(&mysql("%M %e, %y %h:%i:%s %p")?),
            "August 22, 01 03:04:05 PM"
        );
        assert_eq!(
            shown(&mysql("%a %b %c %j %k %l %f %T %r %W %%")?),
            "Wed Aug 8 234 15 3 321000 15:04:05 03:04:05 PM Wednesday %"
        );
        assert_eq!(shown(&mysql("%v %x %q")?), "34 2001 q");
        assert!(mysql("%D").is_err());
        Ok(())
    }

    #[test]
    fn joda_patterns_as_trino_reads_them() -> Result<()> {
        assert_eq!(
            shown(&joda("yyyy-MM-dd HH:mm:ss.SSS")?),
            "2001-08-22 15:04:05.321"
        );
        assert_eq!(
            shown(&joda("EEE, d MMM yy h:mm a")?),
            "Wed, 22 Aug 01 3:04 PM"
        );
        assert_eq!(
            shown(&joda("EEEE MMMM D 'week' w ''")?),
            "Wednesday August 234 week 34 '"
        );
        assert_eq!(
            shown(&joda("Z ZZ ZZZ G k K S")?),
            "-0800 -08:00 America/Los_Angeles AD 15 3 3"
        );
        assert!(joda("yyyy-MM-dd 'T").is_err());
        assert!(joda("q").is_err());
        Ok(())
    }

    #[test]
    fn teradata_formats_as_trino_reads_them() -> Result<()> {
        assert_eq!(
            shown(&teradata("yyyy/mm/dd hh24:mi:ss")?),
            "2001/08/22 15:04:05"
        );
        // `hh` is the hour of the half day, 0 to 11.
        assert_eq!(shown(&teradata("yy.mm.dd hh")?), "01.08.22 03");
        let Err(e) = teradata("yyyy-mm-ddThh") else {
            return exec_err!("a T was taken");
        };
        assert!(
            e.to_string()
                .ends_with("Failed to tokenize string [T] at offset [10]")
        );
        // `yyy` is `yy` and then a `y` no token begins with.
        assert!(teradata("yyy").is_err());
        Ok(())
    }
}
