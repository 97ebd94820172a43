//! Trino's `format(format, args...)`: Java's `String.format` in Trino's locale (en-US), over
//! the arguments as Trino hands them to Java: integers as `Long`, `real` and `double` as
//! `Float` and `Double`, decimals as `BigDecimal`, strings, booleans, and dates, times and
//! timestamps as `java.time` values. So `%s` writes a double as `Double.toString` does
//! (`1.0E10`), `%.2f` rounds the double's shortest decimal digits half up (`0.125` is `0.13`, not
//! C's `0.12`), `%d` of a double is an error, and `%tY` reads a date's year.
//!
//! A format Java refuses is `INVALID_FUNCTION_ARGUMENT` in Trino's words, naming Java's
//! exception. Not supported (`NOT_SUPPORTED`): `%h` (Java's hash codes), `%a` (hexadecimal
//! floating point), `%tZ` and `%tc` (zone names), `%t` of an integer (milliseconds in the JVM's
//! zone), and arguments of other types (Trino casts those to varchar first).

use std::fmt::Write;
use std::sync::Arc;

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeZone, Timelike};
use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, Time32MillisecondType, Time32SecondType, Time64MicrosecondType,
    Time64NanosecondType, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use datafusion::common::{DataFusionError, Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{LastParsed, arrays, is_string, result, unexpected_parameters};
use crate::error::invalid_argument;
use crate::format::{MONTHS, WEEKDAYS};
use crate::real_text::{double_text, java_digits, real_text};

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Format {
    signature: Signature,
}

impl Format {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::variadic_any(Volatility::Immutable),
        }
    }
}

/// Whether Trino hands a value of `t` to Java as one of the values here.
fn formattable(t: &DataType) -> bool {
    use DataType as T;
    matches!(
        t,
        T::Null
            | T::Boolean
            | T::Int8
            | T::Int16
            | T::Int32
            | T::Int64
            | T::Float32
            | T::Float64
            | T::Decimal128(..)
            | T::Utf8
            | T::LargeUtf8
            | T::Utf8View
            | T::Date32
            | T::Time32(_)
            | T::Time64(_)
            | T::Timestamp(..)
    )
}

impl ScalarUDFImpl for Format {
    fn name(&self) -> &str {
        "format"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        // Trino requires a value to format (`format('x')` does not parse there).
        match arg_types.split_first() {
            Some((format, values)) if is_string(format) && !values.is_empty() => {}
            _ => {
                return Err(unexpected_parameters(
                    "format",
                    arg_types,
                    "(varchar, T...)",
                ));
            }
        }
        if let Some(other) = arg_types[1..].iter().find(|t| !formattable(t)) {
            return Err(DataFusionError::NotImplemented(format!(
                "format of a {} (SQE formats numbers, booleans, strings, dates, times and \
                 timestamps)",
                crate::types::trino_type_name(other)
            )));
        }
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let Some((format, values)) = columns.split_first() else {
            return exec_err!("format takes a format and its arguments");
        };
        let format = datafusion::arrow::compute::cast(format, &DataType::Utf8)?;
        let format = format.as_string::<i32>();
        let mut parsed = LastParsed::new();
        let mut out = StringBuilder::with_capacity(args.number_rows, args.number_rows * 16);
        let mut row_values = Vec::with_capacity(values.len());
        let mut text = String::new();
        for row in 0..args.number_rows {
            if format.is_null(row) {
                out.append_null();
                continue;
            }
            let written = format.value(row);
            let pieces = parsed.get(written, |written| {
                parse(written).map_err(|e| e.into_error(written))
            })?;
            row_values.clear();
            for column in values {
                row_values.push(value_at(column, row)?);
            }
            text.clear();
            render(pieces, &row_values, &mut text).map_err(|e| e.into_error(written))?;
            out.append_value(&text);
        }
        result(&args, Arc::new(out.finish()))
    }
}

/// An argument as Java's formatter receives it from Trino.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Null,
    Long(i64),
    Float(f32),
    Double(f64),
    Decimal {
        unscaled: i128,
        scale: i8,
    },
    Text(String),
    Boolean(bool),
    Date(NaiveDate),
    Time(NaiveTime),
    DateTime(NaiveDateTime),
    /// A `ZonedDateTime`: its wall clock, offset (seconds east of UTC), the zone's id where the
    /// zone is a region (`None` for a fixed offset) and the instant.
    Zoned {
        local: NaiveDateTime,
        offset: i32,
        region: Option<String>,
        instant: DateTime<chrono::Utc>,
    },
}

impl Value {
    /// The Java class Trino gives, as Java's errors name it.
    fn java_class(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Long(_) => "java.lang.Long",
            Value::Float(_) => "java.lang.Float",
            Value::Double(_) => "java.lang.Double",
            Value::Decimal { .. } => "java.math.BigDecimal",
            Value::Text(_) => "java.lang.String",
            Value::Boolean(_) => "java.lang.Boolean",
            Value::Date(_) => "java.time.LocalDate",
            Value::Time(_) => "java.time.LocalTime",
            Value::DateTime(_) => "java.time.LocalDateTime",
            Value::Zoned { .. } => "java.time.ZonedDateTime",
        }
    }
}

fn instant(seconds: i64, nanos: u32) -> Result<DateTime<chrono::Utc>> {
    DateTime::from_timestamp(seconds, nanos).ok_or_else(|| {
        DataFusionError::Execution(format!("timestamp out of range: {seconds} seconds"))
    })
}

/// Seconds and nanoseconds of `value` counted in `unit`.
fn split(value: i64, unit: TimeUnit) -> (i64, u32) {
    let per_second: i64 = match unit {
        TimeUnit::Second => 1,
        TimeUnit::Millisecond => 1_000,
        TimeUnit::Microsecond => 1_000_000,
        TimeUnit::Nanosecond => 1_000_000_000,
    };
    let nanos = value.rem_euclid(per_second) * (1_000_000_000 / per_second);
    (
        value.div_euclid(per_second),
        u32::try_from(nanos).unwrap_or(0),
    )
}

fn time_of_day(nanos: i64) -> Result<NaiveTime> {
    let (seconds, nanos) = split(nanos, TimeUnit::Nanosecond);
    NaiveTime::from_num_seconds_from_midnight_opt(u32::try_from(seconds).unwrap_or(u32::MAX), nanos)
        .ok_or_else(|| DataFusionError::Execution("time of day out of range".into()))
}

fn value_at(array: &ArrayRef, row: usize) -> Result<Value> {
    use DataType as T;
    if array.is_null(row) {
        return Ok(Value::Null);
    }
    Ok(match array.data_type() {
        T::Null => Value::Null,
        T::Boolean => Value::Boolean(array.as_boolean().value(row)),
        T::Int8 => Value::Long(array.as_primitive::<Int8Type>().value(row).into()),
        T::Int16 => Value::Long(array.as_primitive::<Int16Type>().value(row).into()),
        T::Int32 => Value::Long(array.as_primitive::<Int32Type>().value(row).into()),
        T::Int64 => Value::Long(array.as_primitive::<Int64Type>().value(row)),
        T::Float32 => Value::Float(array.as_primitive::<Float32Type>().value(row)),
        T::Float64 => Value::Double(array.as_primitive::<Float64Type>().value(row)),
        T::Decimal128(_, scale) => Value::Decimal {
            unscaled: array.as_primitive::<Decimal128Type>().value(row),
            scale: *scale,
        },
        T::Utf8 => Value::Text(array.as_string::<i32>().value(row).to_string()),
        T::LargeUtf8 => Value::Text(array.as_string::<i64>().value(row).to_string()),
        T::Utf8View => Value::Text(array.as_string_view().value(row).to_string()),
        T::Date32 => {
            let days = array.as_primitive::<Date32Type>().value(row);
            let date = NaiveDate::from_num_days_from_ce_opt(days.saturating_add(719_163))
                .ok_or_else(|| DataFusionError::Execution(format!("date out of range: {days}")))?;
            Value::Date(date)
        }
        T::Time32(TimeUnit::Second) => Value::Time(time_of_day(
            i64::from(array.as_primitive::<Time32SecondType>().value(row)) * 1_000_000_000,
        )?),
        T::Time32(_) => Value::Time(time_of_day(
            i64::from(array.as_primitive::<Time32MillisecondType>().value(row)) * 1_000_000,
        )?),
        T::Time64(TimeUnit::Microsecond) => Value::Time(time_of_day(
            array.as_primitive::<Time64MicrosecondType>().value(row) * 1_000,
        )?),
        T::Time64(_) => Value::Time(time_of_day(
            array.as_primitive::<Time64NanosecondType>().value(row),
        )?),
        T::Timestamp(unit, zone) => {
            let raw = match unit {
                TimeUnit::Second => array.as_primitive::<TimestampSecondType>().value(row),
                TimeUnit::Millisecond => {
                    array.as_primitive::<TimestampMillisecondType>().value(row)
                }
                TimeUnit::Microsecond => {
                    array.as_primitive::<TimestampMicrosecondType>().value(row)
                }
                TimeUnit::Nanosecond => array.as_primitive::<TimestampNanosecondType>().value(row),
            };
            let (seconds, nanos) = split(raw, *unit);
            let at = instant(seconds, nanos)?;
            match zone {
                None => Value::DateTime(at.naive_utc()),
                Some(zone) => {
                    let tz: Tz = zone.parse()?;
                    let offset = tz.offset_from_utc_datetime(&at.naive_utc()).fix();
                    let region = (!zone.starts_with(['+', '-'])).then(|| zone.to_string());
                    Value::Zoned {
                        local: at.naive_utc() + offset,
                        offset: offset.local_minus_utc(),
                        region,
                        instant: at,
                    }
                }
            }
        }
        other => {
            return Err(DataFusionError::NotImplemented(format!(
                "format of a {}",
                crate::types::trino_type_name(other)
            )));
        }
    })
}

/// Why Java's formatter would not format: its exception's name and message, or a part SQE
/// does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Refusal {
    Java {
        exception: &'static str,
        message: String,
    },
    NotSupported(String),
}

impl Refusal {
    fn java(exception: &'static str, message: impl Into<String>) -> Self {
        Refusal::Java {
            exception,
            message: message.into(),
        }
    }

    fn into_error(self, format: &str) -> DataFusionError {
        match self {
            Refusal::Java { exception, message } => invalid_argument(format!(
                "Invalid format string: {format} ({exception}: {message})"
            )),
            Refusal::NotSupported(what) => {
                DataFusionError::NotImplemented(format!("format's {what}"))
            }
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Flags {
    left: bool,
    alternate: bool,
    plus: bool,
    space: bool,
    zero: bool,
    group: bool,
    parentheses: bool,
    previous: bool,
}

impl Flags {
    /// Sets the flag `c` stands for; `false` when it was set already.
    fn set(&mut self, c: char) -> bool {
        let flag = match c {
            '-' => &mut self.left,
            '#' => &mut self.alternate,
            '+' => &mut self.plus,
            ' ' => &mut self.space,
            '0' => &mut self.zero,
            ',' => &mut self.group,
            '(' => &mut self.parentheses,
            _ => &mut self.previous,
        };
        !std::mem::replace(flag, true)
    }

    /// The flags among `these` (as characters) that are set, as Java writes them.
    fn among(&self, these: &str) -> String {
        these
            .chars()
            .filter(|c| match c {
                '-' => self.left,
                '#' => self.alternate,
                '+' => self.plus,
                ' ' => self.space,
                '0' => self.zero,
                ',' => self.group,
                '(' => self.parentheses,
                _ => false,
            })
            .collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conversion {
    Boolean,
    HashCode,
    Text,
    Character,
    Decimal,
    Octal,
    Hex,
    Scientific,
    Fixed,
    General,
    HexFloat,
    DateTime(char),
    Percent,
    LineSeparator,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Index {
    Next,
    At(usize),
    Previous,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Spec {
    /// As written, for Java's messages.
    written: String,
    /// The conversion's character as written (`x` or `X`; `t` for dates).
    letter: char,
    index: Index,
    flags: Flags,
    width: Option<usize>,
    precision: Option<usize>,
    conversion: Conversion,
    upper: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Spec(Spec),
}

const FLAG_CHARS: &str = "-#+ 0,(<";
const DATE_TIME_CHARS: &str = "HIklMSLNpzZsQBbhAaCYyjmdeRTrDFc";

fn digits_at(chars: &[char], from: usize) -> usize {
    chars[from..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count()
}

/// Widths and precisions above this are refused rather than written out.
const LARGEST: usize = 10_000;

fn number(chars: &[char]) -> Result<usize, Refusal> {
    let text: String = chars.iter().collect();
    match text.parse::<usize>() {
        Ok(n) if n <= LARGEST => Ok(n),
        _ => Err(Refusal::NotSupported(format!(
            "width or precision {text} (at most {LARGEST})"
        ))),
    }
}

/// `format` as Java reads it: `%[index$][flags][width][.precision]conversion` between text.
fn parse(format: &str) -> Result<Vec<Piece>, Refusal> {
    let chars: Vec<char> = format.chars().collect();
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut at = 0;
    while at < chars.len() {
        if chars[at] != '%' {
            text.push(chars[at]);
            at += 1;
            continue;
        }
        let start = at;
        at += 1;
        let mut index = Index::Next;
        let n = digits_at(&chars, at);
        if n > 0 && chars.get(at + n) == Some(&'$') {
            let position = number(&chars[at..at + n])?;
            if position == 0 {
                return Err(Refusal::java(
                    "IllegalFormatArgumentIndex",
                    "Illegal format argument index = 0",
                ));
            }
            index = Index::At(position);
            at += n + 1;
        }
        let mut flags = Flags::default();
        while let Some(&c) = chars.get(at).filter(|c| FLAG_CHARS.contains(**c)) {
            if !flags.set(c) {
                return Err(Refusal::java(
                    "DuplicateFormatFlags",
                    format!("Flags = '{c}'"),
                ));
            }
            at += 1;
        }
        if flags.previous {
            index = Index::Previous;
        }
        let n = digits_at(&chars, at);
        let width = (n > 0).then(|| number(&chars[at..at + n])).transpose()?;
        at += n;
        let mut precision = None;
        if chars.get(at) == Some(&'.') {
            let n = digits_at(&chars, at + 1);
            if n == 0 {
                return Err(Refusal::java("UnknownFormatConversion", "Conversion = '.'"));
            }
            precision = Some(number(&chars[at + 1..at + 1 + n])?);
            at += n + 1;
        }
        let Some(&letter) = chars.get(at) else {
            return Err(Refusal::java("UnknownFormatConversion", "Conversion = '%'"));
        };
        at += 1;
        let upper = letter.is_ascii_uppercase();
        let conversion = match letter.to_ascii_lowercase() {
            'b' => Conversion::Boolean,
            'h' => Conversion::HashCode,
            's' => Conversion::Text,
            'c' => Conversion::Character,
            'd' if letter == 'd' => Conversion::Decimal,
            'o' if letter == 'o' => Conversion::Octal,
            'x' => Conversion::Hex,
            'e' => Conversion::Scientific,
            'f' if letter == 'f' => Conversion::Fixed,
            'g' => Conversion::General,
            'a' => Conversion::HexFloat,
            '%' => Conversion::Percent,
            'n' if letter == 'n' => Conversion::LineSeparator,
            't' => match chars.get(at) {
                Some(&field) if DATE_TIME_CHARS.contains(field) => {
                    at += 1;
                    Conversion::DateTime(field)
                }
                Some(&field) => {
                    return Err(Refusal::java(
                        "UnknownFormatConversion",
                        format!("Conversion = '{letter}{field}'"),
                    ));
                }
                None => {
                    return Err(Refusal::java(
                        "UnknownFormatConversion",
                        format!("Conversion = '{letter}'"),
                    ));
                }
            },
            _ => {
                return Err(Refusal::java(
                    "UnknownFormatConversion",
                    format!("Conversion = '{letter}'"),
                ));
            }
        };
        if !text.is_empty() {
            pieces.push(Piece::Text(std::mem::take(&mut text)));
        }
        let spec = Spec {
            written: chars[start..at].iter().collect(),
            letter,
            index,
            flags,
            width,
            precision,
            conversion,
            upper,
        };
        check(&spec)?;
        pieces.push(Piece::Spec(spec));
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

/// Java's checks of a specifier alone, before any argument.
fn check(spec: &Spec) -> Result<(), Refusal> {
    let f = spec.flags;
    let mismatch = |bad: &str| -> Result<(), Refusal> {
        let set = f.among(bad);
        match set.chars().next() {
            Some(flag) => Err(Refusal::java(
                "FormatFlagsConversionMismatch",
                format!("Conversion = {}, Flags = {flag}", spec.letter),
            )),
            None => Ok(()),
        }
    };
    let no_precision = || match spec.precision {
        Some(p) => Err(Refusal::java("IllegalFormatPrecision", p.to_string())),
        None => Ok(()),
    };
    let needs_width = |also_zero: bool| {
        if spec.width.is_none() && (f.left || (also_zero && f.zero)) {
            return Err(Refusal::java("MissingFormatWidth", spec.written.clone()));
        }
        Ok(())
    };
    let numeric = || {
        needs_width(true)?;
        if (f.plus && f.space) || (f.left && f.zero) {
            return Err(Refusal::java(
                "IllegalFormatFlags",
                format!("Flags = '{}'", f.among("-#+ 0,(")),
            ));
        }
        Ok(())
    };
    match spec.conversion {
        Conversion::Percent => {
            no_precision()?;
            if !f.among("#+ 0,(").is_empty() {
                return Err(Refusal::java(
                    "IllegalFormatFlags",
                    format!("Flags = '{}'", f.among("-#+ 0,(")),
                ));
            }
            needs_width(false)
        }
        Conversion::LineSeparator => {
            if let Some(w) = spec.width {
                return Err(Refusal::java("IllegalFormatWidth", w.to_string()));
            }
            no_precision()?;
            if !f.among("-#+ 0,(").is_empty() {
                return Err(Refusal::java(
                    "IllegalFormatFlags",
                    format!("Flags = '{}'", f.among("-#+ 0,(")),
                ));
            }
            Ok(())
        }
        Conversion::Boolean | Conversion::HashCode => {
            mismatch("#+ 0,(")?;
            needs_width(false)
        }
        Conversion::Text => {
            mismatch("+ 0,(")?;
            needs_width(false)?;
            // `#` is for Java's Formattable values, which Trino never gives.
            mismatch("#")
        }
        Conversion::Character => {
            no_precision()?;
            mismatch("#+ 0,(")?;
            needs_width(false)
        }
        Conversion::Decimal => {
            no_precision()?;
            mismatch("#")?;
            numeric()
        }
        Conversion::Octal | Conversion::Hex => {
            no_precision()?;
            mismatch(",")?;
            numeric()?;
            // Of a Long (every integer Trino gives), as Java checks it.
            mismatch("+ (")
        }
        Conversion::Scientific => {
            mismatch(",")?;
            numeric()
        }
        Conversion::Fixed => numeric(),
        Conversion::General => {
            mismatch("#")?;
            numeric()
        }
        Conversion::HexFloat => {
            mismatch("(,")?;
            numeric()
        }
        Conversion::DateTime(_) => {
            no_precision()?;
            mismatch("#+ 0,(")?;
            needs_width(false)
        }
    }
}

/// `pieces` with `args` written in, appended to `out`.
fn render(pieces: &[Piece], args: &[Value], out: &mut String) -> Result<(), Refusal> {
    let mut ordinary = 0;
    let mut last: Option<usize> = None;
    for piece in pieces {
        let spec = match piece {
            Piece::Text(text) => {
                out.push_str(text);
                continue;
            }
            Piece::Spec(spec) => spec,
        };
        let missing = || {
            Refusal::java(
                "MissingFormatArgument",
                format!("Format specifier '{}'", spec.written),
            )
        };
        let value = match spec.conversion {
            Conversion::Percent | Conversion::LineSeparator => None,
            _ => {
                let position = match spec.index {
                    Index::Next => {
                        ordinary += 1;
                        ordinary - 1
                    }
                    Index::At(n) => n - 1,
                    Index::Previous => last.ok_or_else(missing)?,
                };
                last = Some(position);
                Some(args.get(position).ok_or_else(missing)?)
            }
        };
        let text = match value {
            None if spec.conversion == Conversion::Percent => "%".to_string(),
            None => "\n".to_string(),
            Some(value) => convert(spec, value)?,
        };
        justify(out, &text, spec.width, spec.flags.left);
    }
    Ok(())
}

fn justify(out: &mut String, text: &str, width: Option<usize>, left: bool) {
    let pad = width.map_or(0, |w| w.saturating_sub(text.chars().count()));
    if !left {
        out.extend(std::iter::repeat_n(' ', pad));
    }
    out.push_str(text);
    if left {
        out.extend(std::iter::repeat_n(' ', pad));
    }
}

fn upper_if(upper: bool, text: String) -> String {
    if upper { text.to_uppercase() } else { text }
}

/// One specifier's text for `value`, before justification.
fn convert(spec: &Spec, value: &Value) -> Result<String, Refusal> {
    let wrong_type = || {
        Refusal::java(
            "IllegalFormatConversion",
            format!("{} != {}", spec.letter, value.java_class()),
        )
    };
    let truncated = |text: String| match spec.precision {
        Some(p) => text.chars().take(p).collect(),
        None => text,
    };
    if *value == Value::Null {
        let text = if spec.conversion == Conversion::Boolean {
            "false"
        } else {
            "null"
        };
        return Ok(upper_if(spec.upper, truncated(text.to_string())));
    }
    match spec.conversion {
        Conversion::Boolean => {
            let text = match value {
                Value::Boolean(b) => b.to_string(),
                _ => "true".to_string(),
            };
            Ok(upper_if(spec.upper, truncated(text)))
        }
        Conversion::Text => Ok(upper_if(spec.upper, truncated(java_string(value)))),
        Conversion::HashCode => Err(Refusal::NotSupported("%h (Java's hash codes)".into())),
        Conversion::HexFloat => Err(Refusal::NotSupported(
            "%a (hexadecimal floating point)".into(),
        )),
        Conversion::Character => Err(wrong_type()),
        Conversion::Decimal | Conversion::Octal | Conversion::Hex => match value {
            Value::Long(v) => Ok(integer(spec, *v)),
            _ => Err(wrong_type()),
        },
        Conversion::Scientific | Conversion::Fixed | Conversion::General => {
            let (digits, negative) = match value {
                Value::Double(v) => match special(spec, *v) {
                    Some(text) => return Ok(text),
                    None => (Digits::of_double(v.abs()), v.is_sign_negative()),
                },
                // Java formats a Float as the double it widens to.
                Value::Float(v) => match special(spec, f64::from(*v)) {
                    Some(text) => return Ok(text),
                    None => (Digits::of_double(f64::from(v.abs())), v.is_sign_negative()),
                },
                Value::Decimal { unscaled, scale } => {
                    (Digits::of_decimal(*unscaled, *scale), *unscaled < 0)
                }
                _ => return Err(wrong_type()),
            };
            let decimal = matches!(value, Value::Decimal { .. });
            Ok(floating(spec, &digits, negative, decimal))
        }
        Conversion::DateTime(field) => {
            let text = date_time(field, value).map_err(|refusal| match refusal {
                Refusal::Java { message, .. } if message.is_empty() => wrong_type(),
                other => other,
            })?;
            Ok(upper_if(spec.upper, text))
        }
        Conversion::Percent | Conversion::LineSeparator => Ok(String::new()),
    }
}

/// A value as Java's `toString` writes it, which `%s` does.
fn java_string(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Long(v) => v.to_string(),
        Value::Float(v) => real_text(*v),
        Value::Double(v) => double_text(*v),
        Value::Decimal { unscaled, scale } => big_decimal_text(*unscaled, *scale),
        Value::Text(s) => s.clone(),
        Value::Boolean(b) => b.to_string(),
        Value::Date(d) => local_date(d),
        Value::Time(t) => local_time(t),
        Value::DateTime(dt) => format!("{}T{}", local_date(&dt.date()), local_time(&dt.time())),
        Value::Zoned {
            local,
            offset,
            region,
            ..
        } => {
            let mut text = format!(
                "{}T{}{}",
                local_date(&local.date()),
                local_time(&local.time()),
                offset_id(*offset)
            );
            if let Some(region) = region {
                let _ = write!(text, "[{region}]");
            }
            text
        }
    }
}

/// `BigDecimal.toString`: plain unless the exponent is below -6.
fn big_decimal_text(unscaled: i128, scale: i8) -> String {
    let sign = if unscaled < 0 { "-" } else { "" };
    let digits = unscaled.unsigned_abs().to_string();
    let scale = i32::from(scale);
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let adjusted = i32::try_from(digits.len()).unwrap_or(0) - 1 - scale;
    if scale > 0 && adjusted >= -6 {
        let point = digits.len() as i32 - scale;
        if point > 0 {
            let (int, frac) = digits.split_at(point as usize);
            return format!("{sign}{int}.{frac}");
        }
        return format!("{sign}0.{}{digits}", "0".repeat((-point) as usize));
    }
    let (first, rest) = digits.split_at(1);
    let rest = if rest.is_empty() {
        String::new()
    } else {
        format!(".{rest}")
    };
    let exponent_sign = if adjusted >= 0 { "+" } else { "" };
    format!("{sign}{first}{rest}E{exponent_sign}{adjusted}")
}

/// `LocalDate.toString`: `2001-08-22`, a year past 9999 with its sign.
fn local_date(date: &NaiveDate) -> String {
    let year = date.year();
    let year = if year > 9999 {
        format!("+{year}")
    } else if year < 0 {
        format!("-{:04}", -year)
    } else {
        format!("{year:04}")
    };
    format!("{year}-{:02}-{:02}", date.month(), date.day())
}

/// `LocalTime.toString`: `10:15`, `10:15:30`, then the fraction in 3, 6 or 9 digits.
fn local_time(time: &NaiveTime) -> String {
    let (second, nano) = (time.second(), time.nanosecond());
    let mut text = format!("{:02}:{:02}", time.hour(), time.minute());
    if second > 0 || nano > 0 {
        let _ = write!(text, ":{second:02}");
        if nano > 0 {
            if nano % 1_000_000 == 0 {
                let _ = write!(text, ".{:03}", nano / 1_000_000);
            } else if nano % 1_000 == 0 {
                let _ = write!(text, ".{:06}", nano / 1_000);
            } else {
                let _ = write!(text, ".{nano:09}");
            }
        }
    }
    text
}

/// `ZoneOffset`'s id: `Z`, `+08:00`, `-05:30:15`.
fn offset_id(seconds: i32) -> String {
    if seconds == 0 {
        return "Z".into();
    }
    let sign = if seconds < 0 { '-' } else { '+' };
    let s = seconds.unsigned_abs();
    let mut text = format!("{sign}{:02}:{:02}", s / 3600, s / 60 % 60);
    if !s.is_multiple_of(60) {
        let _ = write!(text, ":{:02}", s % 60);
    }
    text
}

/// `%d`, `%o`, `%x` of a Long.
fn integer(spec: &Spec, value: i64) -> String {
    let f = spec.flags;
    match spec.conversion {
        Conversion::Decimal => {
            let magnitude = value.unsigned_abs().to_string();
            let magnitude = if f.group {
                grouped(&magnitude)
            } else {
                magnitude
            };
            signed(spec, value < 0, magnitude, "")
        }
        _ => {
            let (digits, prefix) = if spec.conversion == Conversion::Octal {
                (format!("{value:o}"), "0")
            } else {
                (format!("{value:x}"), "0x")
            };
            let prefix = if f.alternate { prefix } else { "" };
            let pad = if f.zero {
                spec.width
                    .unwrap_or(0)
                    .saturating_sub(prefix.len() + digits.len())
            } else {
                0
            };
            upper_if(spec.upper, format!("{prefix}{}{digits}", "0".repeat(pad)))
        }
    }
}

/// Sign, zero padding to the width and the magnitude (and what follows it, an exponent), as
/// Java writes a number: `-`, `+` or ` ` before it, or in parentheses.
fn signed(spec: &Spec, negative: bool, magnitude: String, suffix: &str) -> String {
    let f = spec.flags;
    let (lead, trail) = sign(f, negative);
    let length = lead.len() + magnitude.chars().count() + suffix.len() + trail.len();
    let zeros = if f.zero {
        spec.width.unwrap_or(0).saturating_sub(length)
    } else {
        0
    };
    format!("{lead}{}{magnitude}{suffix}{trail}", "0".repeat(zeros))
}

/// What Java writes before and after a number for its sign under `flags`: `-`, `+`, ` `, or
/// parentheses around a negative one.
fn sign(flags: Flags, negative: bool) -> (&'static str, &'static str) {
    let lead = match (negative, flags.parentheses, flags.plus, flags.space) {
        (true, true, _, _) => "(",
        (true, false, _, _) => "-",
        (false, _, true, _) => "+",
        (false, _, _, true) => " ",
        _ => "",
    };
    let trail = if negative && flags.parentheses {
        ")"
    } else {
        ""
    };
    (lead, trail)
}

/// Digits in groups of three, as en-US writes them.
fn grouped(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// NaN and the infinities as Java writes them under `%e`, `%f` and `%g`.
fn special(spec: &Spec, value: f64) -> Option<String> {
    let f = spec.flags;
    let text = if value.is_nan() {
        "NaN".to_string()
    } else if value.is_infinite() {
        let (lead, trail) = sign(f, value < 0.0);
        format!("{lead}Infinity{trail}")
    } else {
        return None;
    };
    Some(upper_if(spec.upper, text))
}

/// A magnitude's significant decimal digits and the exponent of the first:
/// `d.ddd × 10^exponent`. Zero is the digit 0 at exponent 0.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Digits {
    digits: Vec<u8>,
    exponent: i32,
}

impl Digits {
    /// A double's shortest digits, as Java's formatter starts from.
    fn of_double(magnitude: f64) -> Self {
        if magnitude == 0.0 {
            return Self::zero();
        }
        let (digits, exponent) = java_digits(magnitude);
        Self {
            digits: digits.bytes().map(|b| b - b'0').collect(),
            exponent,
        }
    }

    fn of_decimal(unscaled: i128, scale: i8) -> Self {
        if unscaled == 0 {
            return Self::zero();
        }
        let text = unscaled.unsigned_abs().to_string();
        let exponent = i32::try_from(text.len()).unwrap_or(0) - 1 - i32::from(scale);
        let mut digits: Vec<u8> = text.bytes().map(|b| b - b'0').collect();
        while digits.len() > 1 && digits.last() == Some(&0) {
            digits.pop();
        }
        Self { digits, exponent }
    }

    fn zero() -> Self {
        Self {
            digits: vec![0],
            exponent: 0,
        }
    }

    fn is_zero(&self) -> bool {
        self.digits == [0]
    }

    /// The first `keep` digits (zeros past the last), rounded half up at the next: the digits
    /// and whether rounding carried into a new first digit.
    fn rounded(&self, keep: i32) -> (Vec<u8>, bool) {
        let Ok(keep) = usize::try_from(keep) else {
            return (Vec::new(), false);
        };
        let mut kept: Vec<u8> = (0..keep)
            .map(|i| self.digits.get(i).copied().unwrap_or(0))
            .collect();
        if self.digits.get(keep).is_some_and(|d| *d >= 5) {
            for d in kept.iter_mut().rev() {
                if *d == 9 {
                    *d = 0;
                } else {
                    *d += 1;
                    return (kept, false);
                }
            }
            kept.insert(0, 1);
            return (kept, true);
        }
        (kept, false)
    }

    /// Plain, with `precision` fraction digits: `1234.57`.
    fn fixed(&self, precision: usize, group: bool) -> String {
        let places = i32::try_from(precision).unwrap_or(i32::MAX);
        let (kept, _) = self.rounded(self.exponent.saturating_add(1).saturating_add(places));
        // `kept` is the value times 10^precision: at least one digit before the point.
        let digits: String = kept.iter().map(|d| char::from(b'0' + d)).collect();
        let digits = digits.trim_start_matches('0');
        let text = format!(
            "{}{digits}",
            "0".repeat((precision + 1).saturating_sub(digits.len()))
        );
        let (int, frac) = text.split_at(text.len() - precision);
        let int = if group { grouped(int) } else { int.to_string() };
        if precision == 0 {
            int
        } else {
            format!("{int}.{frac}")
        }
    }

    /// In scientific form with `precision` fraction digits: the mantissa and the exponent.
    fn scientific(&self, precision: usize) -> (String, i32) {
        if self.is_zero() {
            let frac = "0".repeat(precision);
            let mantissa = if precision == 0 {
                "0".into()
            } else {
                format!("0.{frac}")
            };
            return (mantissa, 0);
        }
        let keep = i32::try_from(precision)
            .unwrap_or(i32::MAX)
            .saturating_add(1);
        let (mut kept, carried) = self.rounded(keep);
        let exponent = self.exponent + i32::from(carried);
        if carried {
            kept.pop();
        }
        let text: String = kept.iter().map(|d| char::from(b'0' + d)).collect();
        let (first, rest) = text.split_at(1);
        let mantissa = if rest.is_empty() {
            first.to_string()
        } else {
            format!("{first}.{rest}")
        };
        (mantissa, exponent)
    }

    /// The exponent once rounded to `significant` digits.
    fn exponent_rounded(&self, significant: usize) -> i32 {
        let (_, carried) = self.rounded(i32::try_from(significant).unwrap_or(i32::MAX));
        self.exponent + i32::from(carried)
    }
}

/// `%e`, `%f` or `%g` of a magnitude's digits.
fn floating(spec: &Spec, digits: &Digits, negative: bool, decimal: bool) -> String {
    let f = spec.flags;
    let exponent_text = |exponent: i32| {
        let e = if spec.upper { 'E' } else { 'e' };
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{e}{sign}{:02}", exponent.unsigned_abs())
    };
    let point = |mut mantissa: String, precision: usize| {
        if f.alternate && precision == 0 {
            mantissa.push('.');
        }
        mantissa
    };
    let scientific = |precision: usize| {
        let (mantissa, exponent) = digits.scientific(precision);
        signed(
            spec,
            negative,
            point(mantissa, precision),
            &exponent_text(exponent),
        )
    };
    let fixed = |precision: usize| {
        signed(
            spec,
            negative,
            point(digits.fixed(precision, f.group), precision),
            "",
        )
    };
    let text = match spec.conversion {
        Conversion::Scientific => scientific(spec.precision.unwrap_or(6)),
        Conversion::Fixed => fixed(spec.precision.unwrap_or(6)),
        _ => {
            let precision = match spec.precision {
                None => 6,
                Some(0) => 1,
                Some(p) => p,
            };
            let p = i32::try_from(precision).unwrap_or(i32::MAX);
            if decimal {
                // BigDecimal's rule: the unrounded value between 10^-4 and 10^precision, or
                // a zero of scale 0 (which `digits` cannot tell from 0.00: taken as plain).
                if digits.is_zero() || (digits.exponent >= -4 && digits.exponent < p) {
                    let e = if digits.is_zero() { 0 } else { digits.exponent };
                    fixed(usize::try_from(p - e - 1).unwrap_or(0))
                } else {
                    scientific(precision - 1)
                }
            } else if digits.is_zero() {
                fixed(precision - 1)
            } else {
                let e = digits.exponent_rounded(precision);
                if (-4..p).contains(&e) {
                    fixed(usize::try_from(p - e - 1).unwrap_or(0))
                } else {
                    scientific(precision - 1)
                }
            }
        }
    };
    upper_if(spec.upper, text)
}

/// The date-time fields `of` of `value`, joined by `separator` (Java's composite conversions:
/// `%tT` is `%tH:%tM:%tS`).
fn fields(value: &Value, of: &str, separator: &str) -> Result<String, Refusal> {
    Ok(of
        .chars()
        .map(|field| date_time(field, value))
        .collect::<Result<Vec<_>, _>>()?
        .join(separator))
}

/// The field `field` of a date-time conversion (`%tY`, `%tH`, …) of `value`. A value that is
/// not a date or time is refused with an empty message (the caller names the conversion).
fn date_time(field: char, value: &Value) -> Result<String, Refusal> {
    let (date, time, zone) = match value {
        Value::Date(d) => (Some(*d), None, None),
        Value::Time(t) => (None, Some(*t), None),
        Value::DateTime(dt) => (Some(dt.date()), Some(dt.time()), None),
        Value::Zoned {
            local,
            offset,
            instant,
            ..
        } => (
            Some(local.date()),
            Some(local.time()),
            Some((*offset, *instant)),
        ),
        Value::Long(_) => {
            return Err(Refusal::NotSupported(
                "%t of an integer (milliseconds in the JVM's zone)".into(),
            ));
        }
        _ => return Err(Refusal::java("IllegalFormatConversion", "")),
    };
    // Java wraps the value's refusal of a field it lacks (`%tH` of a date) as a conversion
    // error naming the conversion and the value's class.
    let unsupported = |_field: &str| {
        Refusal::java(
            "IllegalFormatConversion",
            format!("{field} != {}", value.java_class()),
        )
    };
    let date = |name: &str| date.ok_or_else(|| unsupported(name));
    let time = |name: &str| time.ok_or_else(|| unsupported(name));
    let zone = |name: &str| zone.ok_or_else(|| unsupported(name));
    let twelve = |hour: u32| {
        if hour.is_multiple_of(12) {
            12
        } else {
            hour % 12
        }
    };
    Ok(match field {
        'Y' => format!("{:04}", date("YearOfEra")?.year()),
        'y' => format!("{:02}", date("YearOfEra")?.year().rem_euclid(100)),
        'C' => format!("{:02}", date("YearOfEra")?.year().div_euclid(100)),
        'B' => MONTHS[date("MonthOfYear")?.month0() as usize].to_string(),
        'b' | 'h' => MONTHS[date("MonthOfYear")?.month0() as usize][..3].to_string(),
        'A' => WEEKDAYS[date("DayOfWeek")?.weekday().num_days_from_monday() as usize].to_string(),
        'a' => {
            WEEKDAYS[date("DayOfWeek")?.weekday().num_days_from_monday() as usize][..3].to_string()
        }
        'm' => format!("{:02}", date("MonthOfYear")?.month()),
        'd' => format!("{:02}", date("DayOfMonth")?.day()),
        'e' => date("DayOfMonth")?.day().to_string(),
        'j' => format!("{:03}", date("DayOfYear")?.ordinal()),
        'H' => format!("{:02}", time("HourOfDay")?.hour()),
        'k' => time("HourOfDay")?.hour().to_string(),
        'I' => format!("{:02}", twelve(time("ClockHourOfAmPm")?.hour())),
        'l' => twelve(time("ClockHourOfAmPm")?.hour()).to_string(),
        'M' => format!("{:02}", time("MinuteOfHour")?.minute()),
        'S' => format!("{:02}", time("SecondOfMinute")?.second()),
        'L' => format!("{:03}", time("MilliOfSecond")?.nanosecond() / 1_000_000),
        'N' => format!("{:09}", time("NanoOfSecond")?.nanosecond()),
        'p' => if time("AmPmOfDay")?.hour() < 12 {
            "am"
        } else {
            "pm"
        }
        .to_string(),
        'z' => {
            let (offset, _) = zone("OffsetSeconds")?;
            let sign = if offset < 0 { '-' } else { '+' };
            let s = offset.unsigned_abs();
            format!("{sign}{:02}{:02}", s / 3600, s / 60 % 60)
        }
        's' => zone("InstantSeconds")?.1.timestamp().to_string(),
        'Q' => zone("InstantSeconds")?.1.timestamp_millis().to_string(),
        'R' => fields(value, "HM", ":")?,
        'T' => fields(value, "HMS", ":")?,
        'r' => format!(
            "{} {}",
            fields(value, "IMS", ":")?,
            date_time('p', value)?.to_uppercase()
        ),
        'D' => fields(value, "mdy", "/")?,
        'F' => fields(value, "Ymd", "-")?,
        _ => {
            return Err(Refusal::NotSupported(format!("%t{field} (zone names)")));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn formatted(format: &str, args: &[Value]) -> Result<String, Refusal> {
        let pieces = parse(format)?;
        let mut out = String::new();
        render(&pieces, args, &mut out)?;
        Ok(out)
    }

    fn ok(format: &str, args: &[Value]) -> String {
        match formatted(format, args) {
            Ok(text) => text,
            Err(e) => panic!("{format}: {e:?}"),
        }
    }

    fn refused(format: &str, args: &[Value]) -> &'static str {
        match formatted(format, args) {
            Err(Refusal::Java { exception, .. }) => exception,
            other => panic!("{format}: {other:?}"),
        }
    }

    #[test]
    fn integers_as_javas_formatter_writes_them() {
        let long = Value::Long;
        assert_eq!(ok("%03d", &[long(8)]), "008");
        assert_eq!(ok("%,d", &[long(-1234567)]), "-1,234,567");
        assert_eq!(
            ok("%+d|% d|%(d", &[long(5), long(5), long(-5)]),
            "+5| 5|(5)"
        );
        assert_eq!(ok("%06d|%-6d|", &[long(-42), long(42)]), "-00042|42    |");
        assert_eq!(
            ok(
                "%x %X %#x %o %#o",
                &[long(255), long(255), long(255), long(8), long(8)]
            ),
            "ff FF 0xff 10 010"
        );
        assert_eq!(ok("%x", &[long(-1)]), "ffffffffffffffff");
        assert_eq!(ok("%#06x", &[long(10)]), "0x000a");
        assert_eq!(
            refused("%d", &[Value::Double(1.0)]),
            "IllegalFormatConversion"
        );
        assert_eq!(refused("%.2d", &[long(1)]), "IllegalFormatPrecision");
        assert_eq!(refused("%#d", &[long(1)]), "FormatFlagsConversionMismatch");
        assert_eq!(refused("%+x", &[long(1)]), "FormatFlagsConversionMismatch");
        assert_eq!(refused("%c", &[long(65)]), "IllegalFormatConversion");
    }

    #[test]
    fn real_numbers_round_their_shortest_digits_half_up() {
        let double = Value::Double;
        assert_eq!(ok("%.5f", &[double(std::f64::consts::PI)]), "3.14159");
        assert_eq!(ok("%,.2f", &[double(1234567.89)]), "1,234,567.89");
        // Java rounds the shortest digits: 0.125 is 0.13 (C's printf: 0.12), 1.005 is 1.01.
        assert_eq!(
            ok("%.2f %.2f", &[double(0.125), double(1.005)]),
            "0.13 1.01"
        );
        assert_eq!(ok("%f", &[double(0.0)]), "0.000000");
        assert_eq!(ok("%.0f %.0f", &[double(0.5), double(0.4)]), "1 0");
        assert_eq!(ok("%.1f", &[double(-0.0)]), "-0.0");
        assert_eq!(ok("%.3f", &[double(9.9996)]), "10.000");
        assert_eq!(ok("%e", &[double(12345.678)]), "1.234568e+04");
        assert_eq!(ok("%.2E", &[double(0.000123)]), "1.23E-04");
        assert_eq!(ok("%.1e", &[double(9.96)]), "1.0e+01");
        assert_eq!(ok("%e", &[double(0.0)]), "0.000000e+00");
        assert_eq!(ok("%g", &[double(123.456)]), "123.456");
        assert_eq!(ok("%g", &[double(0.0001)]), "0.000100000");
        assert_eq!(ok("%g", &[double(123456789.0)]), "1.23457e+08");
        assert_eq!(ok("%g", &[double(0.0)]), "0.00000");
        assert_eq!(
            ok("%010.2f|%-8.1f|", &[double(-3.14659), double(2.0)]),
            "-000003.15|2.0     |"
        );
        assert_eq!(
            ok(
                "%f %+f %e",
                &[
                    double(f64::NAN),
                    double(f64::INFINITY),
                    double(f64::NEG_INFINITY)
                ]
            ),
            "NaN +Infinity -Infinity"
        );
        // A real is formatted as the double it widens to.
        assert_eq!(ok("%.10f", &[Value::Float(1.1)]), "1.1000000238");
        assert_eq!(ok("%s", &[Value::Float(1.1)]), "1.1");
        assert_eq!(refused("%f", &[Value::Long(1)]), "IllegalFormatConversion");
        assert_eq!(
            refused("%,e", &[double(1.0)]),
            "FormatFlagsConversionMismatch"
        );
    }

    #[test]
    fn decimals_are_exact() {
        let decimal = |unscaled, scale| Value::Decimal { unscaled, scale };
        assert_eq!(ok("%.2f", &[decimal(12345, 3)]), "12.35");
        assert_eq!(ok("%.1f", &[decimal(-25, 2)]), "-0.3");
        assert_eq!(ok("%f", &[decimal(1, 0)]), "1.000000");
        assert_eq!(ok("%s", &[decimal(12345, 3)]), "12.345");
        assert_eq!(ok("%s", &[decimal(1, 7)]), "1E-7");
        assert_eq!(ok("%s", &[decimal(-5, 2)]), "-0.05");
        assert_eq!(ok("%e", &[decimal(12345, 2)]), "1.234500e+02");
        assert_eq!(ok("%g", &[decimal(12345, 2)]), "123.450");
        // 99999995 × 10^-8 rounds up where a double's digits might not.
        assert_eq!(ok("%.7f", &[decimal(99999995, 8)]), "1.0000000");
    }

    #[test]
    fn text_booleans_and_arguments_by_position() {
        let text = |s: &str| Value::Text(s.into());
        assert_eq!(ok("%s%%", &[Value::Long(123)]), "123%");
        assert_eq!(
            ok("%-7s,%7s", &[text("hello"), text("world")]),
            "hello  ,  world"
        );
        assert_eq!(
            ok("%2$s %3$s %1$s", &[text("a"), text("b"), text("c")]),
            "b c a"
        );
        assert_eq!(ok("%s %<s %s", &[text("a"), text("b")]), "a a b");
        assert_eq!(ok("%.3s|%S", &[text("abcdef"), text("ß")]), "abc|SS");
        assert_eq!(
            ok(
                "%s %b %b %b",
                &[Value::Null, Value::Null, Value::Boolean(false), text("x")]
            ),
            "null false false true"
        );
        assert_eq!(ok("%d|%5s|", &[Value::Null, Value::Null]), "null| null|");
        assert_eq!(ok("%s", &[Value::Double(1e10)]), "1.0E10");
        assert_eq!(ok("a%nb", &[]), "a\nb");
        assert_eq!(refused("%s %s", &[text("a")]), "MissingFormatArgument");
        assert_eq!(refused("%q", &[]), "UnknownFormatConversion");
        assert_eq!(refused("%", &[]), "UnknownFormatConversion");
        assert_eq!(refused("%-s", &[text("a")]), "MissingFormatWidth");
        assert_eq!(refused("%--5s", &[text("a")]), "DuplicateFormatFlags");
        assert_eq!(
            refused("%#s", &[text("a")]),
            "FormatFlagsConversionMismatch"
        );
        assert_eq!(refused("%0$s", &[text("a")]), "IllegalFormatArgumentIndex");
        assert!(matches!(
            formatted("%h", &[text("a")]),
            Err(Refusal::NotSupported(_))
        ));
    }

    #[test]
    fn dates_and_times_as_java_time_writes_them() -> Result<(), Refusal> {
        let date =
            NaiveDate::from_ymd_opt(2006, 7, 4).ok_or(Refusal::NotSupported("date".into()))?;
        let time = NaiveTime::from_hms_milli_opt(15, 4, 5, 321)
            .ok_or(Refusal::NotSupported("time".into()))?;
        assert_eq!(
            ok("%1$tA, %1$tB %1$te, %1$tY", &[Value::Date(date)]),
            "Tuesday, July 4, 2006"
        );
        assert_eq!(
            ok("%tF %<tD %<tj %<ta %<tb %<Tb", &[Value::Date(date)]),
            "2006-07-04 07/04/06 185 Tue Jul JUL"
        );
        assert_eq!(
            ok("%tT %<tr %<tL %<tp %<tl", &[Value::Time(time)]),
            "15:04:05 03:04:05 PM 321 pm 3"
        );
        assert_eq!(
            refused("%tH", &[Value::Date(date)]),
            "IllegalFormatConversion"
        );
        assert_eq!(
            refused("%tY", &[Value::Text("x".into())]),
            "IllegalFormatConversion"
        );
        let local = date.and_time(time);
        assert_eq!(
            ok("%s", &[Value::DateTime(local)]),
            "2006-07-04T15:04:05.321"
        );
        assert_eq!(ok("%s", &[Value::Date(date)]), "2006-07-04");
        assert_eq!(
            ok("%s", &[Value::DateTime(date.and_time(NaiveTime::MIN))]),
            "2006-07-04T00:00"
        );
        let instant = DateTime::from_timestamp(1_152_025_445, 0)
            .ok_or(Refusal::NotSupported("instant".into()))?;
        let zoned = Value::Zoned {
            local,
            offset: -7 * 3600,
            region: Some("America/Los_Angeles".into()),
            instant,
        };
        assert_eq!(
            ok("%s", std::slice::from_ref(&zoned)),
            "2006-07-04T15:04:05.321-07:00[America/Los_Angeles]"
        );
        assert_eq!(ok("%tz %<ts", &[zoned]), "-0700 1152025445");
        Ok(())
    }
}
