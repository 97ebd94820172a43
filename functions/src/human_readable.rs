//! Numbers and durations as people write them, in Trino's words: `format_number` (`12.3K`),
//! `human_readable_seconds` (`1 minute, 36 seconds`), `parse_duration` (`'3.81 d'` as an
//! `interval day to second`), `to_milliseconds` (of such an interval) and `parse_data_size`
//! (`'2.3MB'` as bytes, a `decimal(38,0)`).

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Decimal128Array, Int64Builder, IntervalMonthDayNanoBuilder,
    StringBuilder,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Float64Type, Int64Type, IntervalMonthDayNano, IntervalUnit,
};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, is_integer, is_string, result, unexpected_parameters};
use crate::error::invalid_argument;
use crate::interval_text::IntervalText;

const MILLIS_PER_DAY: i64 = 86_400_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Readable {
    FormatNumber,
    Seconds,
    ParseDuration,
    ToMilliseconds,
    DataSize,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct HumanReadableFunction {
    kind: Readable,
    signature: Signature,
}

pub(crate) fn human_readable_functions() -> Vec<HumanReadableFunction> {
    [
        Readable::FormatNumber,
        Readable::Seconds,
        Readable::ParseDuration,
        Readable::ToMilliseconds,
        Readable::DataSize,
    ]
    .into_iter()
    .map(|kind| HumanReadableFunction {
        kind,
        signature: Signature::user_defined(Volatility::Immutable),
    })
    .collect()
}

fn is_day_to_second(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Interval(IntervalUnit::DayTime | IntervalUnit::MonthDayNano)
            | DataType::Duration(_)
            | DataType::Null
    )
}

impl ScalarUDFImpl for HumanReadableFunction {
    fn name(&self) -> &str {
        match self.kind {
            Readable::FormatNumber => "format_number",
            Readable::Seconds => "human_readable_seconds",
            Readable::ParseDuration => "parse_duration",
            Readable::ToMilliseconds => "to_milliseconds",
            Readable::DataSize => "parse_data_size",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let coerced = match (self.kind, arg_types) {
            // Trino's two overloads: integers as a bigint, other numbers as a double.
            (Readable::FormatNumber, [t]) if is_integer(t) => Some(DataType::Int64),
            (Readable::FormatNumber | Readable::Seconds, [t])
                if t.is_numeric() || *t == DataType::Null =>
            {
                Some(DataType::Float64)
            }
            (Readable::ParseDuration | Readable::DataSize, [t]) if is_string(t) => {
                Some(DataType::Utf8)
            }
            // NULL as the interval type, so that it reads as a NULL interval.
            (Readable::ToMilliseconds, [DataType::Null]) => {
                Some(DataType::Interval(IntervalUnit::MonthDayNano))
            }
            (Readable::ToMilliseconds, [t]) if is_day_to_second(t) => Some(t.clone()),
            _ => None,
        };
        match coerced {
            Some(t) => Ok(vec![t]),
            None => {
                let expected = match self.kind {
                    Readable::FormatNumber => "(bigint) | format_number(double)",
                    Readable::Seconds => "(double)",
                    Readable::ParseDuration | Readable::DataSize => "(varchar)",
                    Readable::ToMilliseconds => "(interval day to second)",
                };
                Err(unexpected_parameters(self.name(), arg_types, expected))
            }
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Readable::FormatNumber | Readable::Seconds => DataType::Utf8,
            Readable::ParseDuration => DataType::Interval(IntervalUnit::MonthDayNano),
            Readable::ToMilliseconds => DataType::Int64,
            Readable::DataSize => DataType::Decimal128(38, 0),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [column] = columns.as_slice() else {
            return exec_err!("{} takes one argument", self.name());
        };
        let rows = column.len();
        let answer: ArrayRef = match self.kind {
            Readable::FormatNumber => {
                let mut out = StringBuilder::with_capacity(rows, rows * 6);
                if column.data_type().is_floating() {
                    // Java's `(long) value`, which Rust's `as` is too: toward zero, NaN 0,
                    // beyond the range the nearest end (Arrow's cast would answer NULL).
                    let values = cast(column, &DataType::Float64)?;
                    for v in values.as_primitive::<Float64Type>() {
                        out.append_option(v.map(|v| format_number(v as i64)));
                    }
                } else {
                    let counts = cast(column, &DataType::Int64)?;
                    for v in counts.as_primitive::<Int64Type>() {
                        out.append_option(v.map(format_number));
                    }
                }
                Arc::new(out.finish())
            }
            Readable::Seconds => {
                let seconds = cast(column, &DataType::Float64)?;
                let mut out = StringBuilder::with_capacity(rows, rows * 16);
                for v in seconds.as_primitive::<Float64Type>() {
                    out.append_option(v.map(human_readable_seconds).transpose()?);
                }
                Arc::new(out.finish())
            }
            Readable::ParseDuration => {
                let texts = cast(column, &DataType::Utf8)?;
                let mut out = IntervalMonthDayNanoBuilder::with_capacity(rows);
                for v in texts.as_string::<i32>() {
                    let interval = match v.map(parse_duration).transpose()? {
                        Some(millis) => {
                            let days = i32::try_from(millis / MILLIS_PER_DAY).map_err(|_| {
                                invalid_argument(format!(
                                    "duration is too large for an interval: {}",
                                    v.unwrap_or_default()
                                ))
                            })?;
                            Some(IntervalMonthDayNano::new(
                                0,
                                days,
                                (millis % MILLIS_PER_DAY) * 1_000_000,
                            ))
                        }
                        None => None,
                    };
                    out.append_option(interval);
                }
                Arc::new(out.finish())
            }
            Readable::DataSize => {
                let texts = cast(column, &DataType::Utf8)?;
                let sizes = texts
                    .as_string::<i32>()
                    .iter()
                    .map(|v| v.map(parse_data_size).transpose())
                    .collect::<Result<Decimal128Array>>()?;
                Arc::new(sizes.with_precision_and_scale(38, 0)?)
            }
            Readable::ToMilliseconds => {
                let mut out = Int64Builder::with_capacity(rows);
                for i in 0..rows {
                    if column.is_null(i) {
                        out.append_null();
                        continue;
                    }
                    match IntervalText::of(column.as_ref(), i) {
                        Some(Ok(IntervalText::Millis(millis))) => out.append_value(millis),
                        _ => return exec_err!("to_milliseconds takes an interval day to second"),
                    }
                }
                Arc::new(out.finish())
            }
        };
        result(&args, answer)
    }
}

/// Trino's `format_number`: the count (a double's whole part) in thousands, millions, … up
/// to quadrillions (`K`, `M`, `B`, `T`, `Q`, each a division by 1000), with two decimals
/// below 10 (so every negative number), one below 100, none above; rounded half up, trailing
/// zeros dropped.
fn format_number(count: i64) -> String {
    const UNITS: [&str; 6] = ["", "K", "M", "B", "T", "Q"];
    let mut value = count as f64;
    let mut unit = 0;
    while unit < UNITS.len() - 1 && (value >= 1000.0 || value <= -1000.0) {
        value /= 1000.0;
        unit += 1;
    }
    let decimals = if value < 10.0 {
        2
    } else if value < 100.0 {
        1
    } else {
        0
    };
    format!("{}{}", half_up(value, decimals), UNITS[unit])
}

/// `value` rounded half up (away from zero at a tie of its exact binary value, as Java's
/// `DecimalFormat` rounds) to at most `decimals` digits, trailing zeros dropped.
fn half_up(value: f64, decimals: usize) -> String {
    // Seventeen significant digits hold a double exactly enough to see which side of the
    // half way its exact value lies; the digits beyond `decimals` decide.
    let exact = format!("{:.*}", decimals + 20, value.abs());
    let (whole, fraction) = exact.split_once('.').unwrap_or((&exact, ""));
    let kept: String = fraction.chars().take(decimals).collect();
    let round_up = fraction
        .chars()
        .nth(decimals)
        .is_some_and(|digit| digit >= '5');
    let mut digits: Vec<u8> = format!("{whole}{kept}").into_bytes();
    if round_up {
        let mut i = digits.len();
        loop {
            if i == 0 {
                digits.insert(0, b'1');
                break;
            }
            i -= 1;
            if digits[i] == b'9' {
                digits[i] = b'0';
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&digits).to_string();
    let (whole, fraction) = text.split_at(text.len() - decimals);
    let fraction = fraction.trim_end_matches('0');
    let sign = if value < 0.0 && (!whole.trim_start_matches('0').is_empty() || !fraction.is_empty())
    {
        "-"
    } else {
        ""
    };
    let whole = match whole.trim_start_matches('0') {
        "" => "0",
        w => w,
    };
    if fraction.is_empty() {
        format!("{sign}{whole}")
    } else {
        format!("{sign}{whole}.{fraction}")
    }
}

/// Trino's `human_readable_seconds`: the seconds rounded half up, sign dropped, in weeks,
/// days, hours, minutes and seconds, each part that is not zero (`0 seconds` for none).
fn human_readable_seconds(seconds: f64) -> Result<String> {
    if !seconds.is_finite() {
        let shown = if seconds.is_nan() {
            "NaN"
        } else if seconds > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        };
        return Err(invalid_argument(format!("Invalid argument found: {shown}")));
    }
    // Java's Math.round: floor(x + 0.5), saturating.
    let mut rest = (seconds.abs() + 0.5).floor() as u64;
    let mut parts = Vec::new();
    for (size, unit) in [
        (604_800, "week"),
        (86_400, "day"),
        (3_600, "hour"),
        (60, "minute"),
        (1, "second"),
    ] {
        let count = rest / size;
        rest %= size;
        if count > 0 {
            let plural = if count == 1 { "" } else { "s" };
            parts.push(format!("{count} {unit}{plural}"));
        }
    }
    if parts.is_empty() {
        return Ok("0 seconds".to_string());
    }
    Ok(parts.join(", "))
}

/// Trino's `parse_duration` (airlift's `Duration`): a decimal number and a unit (`ns`, `us`,
/// `ms`, `s`, `m`, `h`, `d`), spaces around and between allowed, as milliseconds rounded half
/// up.
fn parse_duration(text: &str) -> Result<i64> {
    if text.is_empty() {
        return Err(invalid_argument("duration is empty"));
    }
    let invalid = || {
        invalid_argument(format!(
            "duration is not a valid data duration string: {text}"
        ))
    };
    let trimmed = text.trim_matches(is_java_space);
    let number_end = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(number_end);
    let unit = unit.trim_start_matches(is_java_space);
    let well_formed = match number.split_once('.') {
        Some((whole, fraction)) => {
            !whole.is_empty() && !fraction.is_empty() && !fraction.contains('.')
        }
        None => !number.is_empty(),
    };
    if !well_formed || unit.is_empty() || !unit.chars().all(|c| c.is_ascii_alphabetic()) {
        return Err(invalid());
    }
    let value: f64 = number.parse().map_err(|_| invalid())?;
    let millis_per_unit = match unit {
        "ns" => 1e-6,
        "us" => 1e-3,
        "ms" => 1.0,
        "s" => 1e3,
        "m" => 6e4,
        "h" => 3.6e6,
        "d" => 8.64e7,
        other => return Err(invalid_argument(format!("Unknown time unit: {other}"))),
    };
    let millis = (value * millis_per_unit + 0.5).floor();
    if millis >= i64::MAX as f64 {
        return Err(invalid_argument(format!(
            "value {number} {unit} is too large to be represented in requested unit MILLISECONDS as a long"
        )));
    }
    Ok(millis as i64)
}

/// Trino's `parse_data_size`: a decimal number directly followed by a unit (`B`, `kB`, `MB`,
/// `GB`, `TB`, `PB`, `EB`, `ZB`, `YB`, each 1024 times the one before), as whole bytes
/// (the fraction dropped).
fn parse_data_size(text: &str) -> Result<i128> {
    let invalid = || invalid_argument(format!("Invalid data size: '{text}'"));
    let number_end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(number_end);
    let power = ["B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"]
        .iter()
        .position(|u| *u == unit)
        .ok_or_else(invalid)?;
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return Err(invalid());
    }
    // The digits as one integer, `fraction.len()` of them after the point.
    let digits: i128 = format!("{whole}{fraction}")
        .parse()
        .map_err(|_| invalid())?;
    let out_of_range = || invalid_argument(format!("Value out of range: '{text}'"));
    let scale = 10_i128
        .checked_pow(u32::try_from(fraction.len()).map_err(|_| out_of_range())?)
        .ok_or_else(out_of_range)?;
    let factor = 1024_i128.pow(power as u32);
    // Exact: digits × 1024^power ÷ 10^scale, the fraction of a byte dropped.
    let bytes = digits
        .checked_mul(factor)
        .map(|scaled| scaled / scale)
        .ok_or_else(out_of_range)?;
    if bytes >= 10_i128.pow(38) {
        return Err(out_of_range());
    }
    Ok(bytes)
}

/// Java's `\s`: space, tab, newline, vertical tab, form feed, carriage return.
fn is_java_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_with_trinos_units() {
        for (count, written) in [
            (12_345, "12.3K"),
            (12_399, "12.4K"),
            (1_234, "1.23K"),
            (999, "999"),
            (999_999, "1000K"),
            (-999_999, "-1000K"),
            (-1_000, "-1K"),
            (123_456, "123K"),
            (1_000_000, "1M"),
            (i64::MAX, "9223Q"),
            (i64::MIN, "-9223.37Q"),
            (0, "0"),
        ] {
            assert_eq!(format_number(count), written, "{count}");
        }
        assert_eq!(half_up(1.125, 2), "1.13");
    }

    #[test]
    fn seconds_are_written_in_weeks_days_hours_minutes_and_seconds() -> Result<()> {
        for (seconds, written) in [
            (0.0, "0 seconds"),
            (1.0, "1 second"),
            (-61.0, "1 minute, 1 second"),
            (96.0, "1 minute, 36 seconds"),
            (3601.0, "1 hour, 1 second"),
            (
                535_333.951_388_888_9,
                "6 days, 4 hours, 42 minutes, 14 seconds",
            ),
            (
                56_363_463.0,
                "93 weeks, 1 day, 8 hours, 31 minutes, 3 seconds",
            ),
        ] {
            assert_eq!(human_readable_seconds(seconds)?, written, "{seconds}");
        }
        assert!(human_readable_seconds(f64::NAN).is_err());
        Ok(())
    }

    #[test]
    fn durations_are_read_as_milliseconds() -> Result<()> {
        for (text, millis) in [
            ("42.8ms", 43),
            ("3.81 d", 329_184_000),
            ("5m", 300_000),
            ("1234 ns", 0),
            ("1234.567 ms", 1_235),
            (" 1d ", 86_400_000),
        ] {
            assert_eq!(parse_duration(text)?, millis, "{text}");
        }
        for bad in ["", "abc", "1f", ".5s", "1.s", "-1s", "1 s s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        Ok(())
    }

    /// Trino's documentation's and TestDataSizeFunctions' values.
    #[test]
    fn data_sizes_are_read_as_whole_bytes() -> Result<()> {
        for (text, bytes) in [
            ("1B", 1),
            ("1kB", 1024),
            ("2.3MB", 2_411_724),
            ("1.5GB", 1_610_612_736),
            ("0.5B", 0),
            ("1YB", 1_208_925_819_614_629_174_706_176),
        ] {
            assert_eq!(parse_data_size(text)?, bytes, "{text}");
        }
        for bad in ["", "1", "1 B", "1kb", "B", "1.2.3B", "-1B"] {
            assert!(parse_data_size(bad).is_err(), "{bad}");
        }
        Ok(())
    }
}
