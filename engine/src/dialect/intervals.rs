//! Trino's interval literals: `INTERVAL '2' DAY`, `INTERVAL '1-6' YEAR TO MONTH`,
//! `INTERVAL '1 11:11:11.116' DAY TO SECOND`. Each is one of Trino's two interval types, a
//! number of months or of milliseconds (DataFusion's own reading makes every interval a
//! month-day-nanosecond value, which Trino's clients cannot be given, and it has no ranges
//! such as `DAY TO SECOND`).

use datafusion::sql::sqlparser::ast::{DateTimeField, IntervalFields};

use crate::error::{Error, ErrorCode, Result};

/// A Trino interval value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IntervalValue {
    /// `interval year to month`.
    Months(i32),
    /// `interval day to second`, to the millisecond as Trino keeps it.
    Millis(i64),
}

impl IntervalValue {
    /// The type the value has, as the SQL type a cast names.
    pub(super) fn fields(self) -> IntervalFields {
        match self {
            IntervalValue::Months(_) => IntervalFields::YearToMonth,
            IntervalValue::Millis(_) => IntervalFields::DayToSecond,
        }
    }

    /// The value as Arrow's interval parser reads it (one unit per field, same sign).
    pub(super) fn arrow_text(self) -> String {
        match self {
            IntervalValue::Months(months) => format!("{months} months"),
            IntervalValue::Millis(millis) => {
                let days = millis / MILLIS_PER_DAY;
                let rest = millis % MILLIS_PER_DAY;
                format!("{days} days {rest} milliseconds")
            }
        }
    }
}

const MILLIS_PER_DAY: i64 = 86_400_000;

/// The fields of Trino's interval syntax, in order from the largest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Unit {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
}

impl Unit {
    fn of(field: &DateTimeField) -> Option<Unit> {
        Some(match field {
            DateTimeField::Year => Unit::Year,
            DateTimeField::Month => Unit::Month,
            DateTimeField::Day => Unit::Day,
            DateTimeField::Hour => Unit::Hour,
            DateTimeField::Minute => Unit::Minute,
            DateTimeField::Second => Unit::Second,
            _ => return None,
        })
    }

    /// Milliseconds in one of this unit (day to second).
    fn millis(self) -> i64 {
        match self {
            Unit::Day => MILLIS_PER_DAY,
            Unit::Hour => 3_600_000,
            Unit::Minute => 60_000,
            _ => 1000,
        }
    }

    /// The largest value a field may hold when a larger field precedes it.
    fn below(self) -> i64 {
        match self {
            Unit::Month => 11,
            Unit::Hour => 23,
            _ => 59,
        }
    }
}

/// Whether `leading [TO last]` is one of Trino's interval forms (others, such as `WEEK`, stay
/// DataFusion's).
pub(super) fn is_trino_form(leading: &DateTimeField, last: Option<&DateTimeField>) -> bool {
    let Some(leading) = Unit::of(leading) else {
        return false;
    };
    match last.map(Unit::of) {
        None => true,
        Some(None) => false,
        Some(Some(last)) => {
            let months = |u: Unit| u <= Unit::Month;
            last > leading && months(leading) == months(last)
        }
    }
}

/// The value of `INTERVAL 'text' leading [TO last]`, `negated` for `INTERVAL -'text' ...`.
pub(super) fn interval_value(
    text: &str,
    negated: bool,
    leading: &DateTimeField,
    last: Option<&DateTimeField>,
) -> Result<IntervalValue> {
    let invalid = |why: &str| {
        Error::invalid(
            ErrorCode::InvalidLiteral,
            format!("'{text}' is not a valid interval literal: {why}"),
        )
    };
    let (Some(leading), Some(last)) = (Unit::of(leading), last.map_or(Unit::of(leading), Unit::of))
    else {
        return Err(invalid("unknown interval fields"));
    };
    let body = text.trim();
    let (negative, body) = match body.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, body.strip_prefix('+').unwrap_or(body)),
    };
    let negative = negative != negated;
    let parts = split_fields(body, leading, last).ok_or_else(|| {
        invalid(&format!(
            "expected {} for {leading:?}{}",
            shape(leading, last),
            if last == leading {
                String::new()
            } else {
                format!(" to {last:?}")
            }
        ))
    })?;
    if leading <= Unit::Month {
        let mut months: i64 = 0;
        for (unit, whole, _) in &parts {
            if unit != &leading && *whole > unit.below() {
                return Err(invalid("months must be 0 to 11"));
            }
            let per = if *unit == Unit::Year { 12 } else { 1 };
            months = whole
                .checked_mul(per)
                .and_then(|m| months.checked_add(m))
                .ok_or_else(|| invalid("out of range"))?;
        }
        let months = if negative { -months } else { months };
        return i32::try_from(months)
            .map(IntervalValue::Months)
            .map_err(|_| invalid("out of range"));
    }
    let mut millis: i64 = 0;
    for (unit, whole, fraction) in &parts {
        if unit != &leading && *whole > unit.below() {
            return Err(invalid(&format!("{unit:?} out of range")));
        }
        millis = whole
            .checked_mul(unit.millis())
            .and_then(|m| millis.checked_add(m))
            .and_then(|m| m.checked_add(*fraction))
            .ok_or_else(|| invalid("out of range"))?;
    }
    Ok(IntervalValue::Millis(if negative {
        -millis
    } else {
        millis
    }))
}

/// What the text of each form looks like, for the error.
fn shape(leading: Unit, last: Unit) -> &'static str {
    match (leading, last) {
        (Unit::Year, Unit::Month) => "'years-months'",
        (Unit::Day, Unit::Hour) => "'days hours'",
        (Unit::Day, Unit::Minute) => "'days hours:minutes'",
        (Unit::Day, Unit::Second) => "'days hours:minutes:seconds[.fraction]'",
        (Unit::Hour, Unit::Minute) => "'hours:minutes'",
        (Unit::Hour, Unit::Second) => "'hours:minutes:seconds[.fraction]'",
        (Unit::Minute, Unit::Second) => "'minutes:seconds[.fraction]'",
        (_, Unit::Second) => "'seconds[.fraction]'",
        _ => "a whole number",
    }
}

/// The text cut into its fields: each unit with its whole number and, for seconds, the
/// fraction in milliseconds (further digits are dropped, as Trino does).
fn split_fields(body: &str, leading: Unit, last: Unit) -> Option<Vec<(Unit, i64, i64)>> {
    let units: Vec<Unit> = [
        Unit::Year,
        Unit::Month,
        Unit::Day,
        Unit::Hour,
        Unit::Minute,
        Unit::Second,
    ]
    .into_iter()
    .filter(|u| *u >= leading && *u <= last)
    .collect();
    let mut pieces: Vec<&str> = Vec::with_capacity(units.len());
    let mut rest = body;
    for (i, unit) in units.iter().enumerate() {
        let Some(next) = units.get(i + 1) else {
            pieces.push(rest);
            break;
        };
        let separator = match (unit, next) {
            (Unit::Year, _) => '-',
            (Unit::Day, _) => ' ',
            _ => ':',
        };
        let (piece, after) = rest.split_once(separator)?;
        pieces.push(piece);
        rest = if separator == ' ' {
            after.trim_start()
        } else {
            after
        };
    }
    units
        .iter()
        .zip(pieces)
        .map(|(unit, piece)| {
            let (whole, fraction) = match piece.split_once('.') {
                Some((whole, fraction)) if *unit == Unit::Second => (whole, fraction),
                Some(_) => return None,
                None => (piece, ""),
            };
            let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
            if !digits(whole) || !(fraction.is_empty() || digits(fraction)) {
                return None;
            }
            let whole: i64 = whole.parse().ok()?;
            let millis = format!("{fraction:0<3}")[..3].parse::<i64>().ok()?;
            Some((*unit, whole, millis))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use DateTimeField as F;

    fn value(text: &str, leading: F, last: Option<F>) -> Result<IntervalValue> {
        interval_value(text, false, &leading, last.as_ref())
    }

    #[test]
    fn year_to_month_values_are_months() -> Result<()> {
        assert_eq!(value("10", F::Year, None)?, IntervalValue::Months(120));
        assert_eq!(value("-18", F::Month, None)?, IntervalValue::Months(-18));
        assert_eq!(
            value("178956970-7", F::Year, Some(F::Month))?,
            IntervalValue::Months(i32::MAX)
        );
        assert_eq!(
            value("-178956970-8", F::Year, Some(F::Month))?,
            IntervalValue::Months(i32::MIN)
        );
        assert!(value("178956970-8", F::Year, Some(F::Month)).is_err());
        assert!(value("1-12", F::Year, Some(F::Month)).is_err());
        assert!(value("1.5", F::Year, None).is_err());
        Ok(())
    }

    #[test]
    fn day_to_second_values_are_milliseconds() -> Result<()> {
        assert_eq!(
            value("2", F::Day, None)?,
            IntervalValue::Millis(2 * MILLIS_PER_DAY)
        );
        assert_eq!(
            value("1 11:11:11.116555", F::Day, Some(F::Second))?,
            IntervalValue::Millis(MILLIS_PER_DAY + 40_271_116)
        );
        assert_eq!(
            value("-5 23:59:57.000", F::Day, Some(F::Second))?,
            IntervalValue::Millis(-(5 * MILLIS_PER_DAY + 86_397_000))
        );
        assert_eq!(
            value("12 10:45", F::Day, Some(F::Minute))?,
            IntervalValue::Millis(12 * MILLIS_PER_DAY + 38_700_000)
        );
        assert_eq!(
            value("45:32.123", F::Minute, Some(F::Second))?,
            IntervalValue::Millis(2_732_123)
        );
        assert_eq!(
            value("32.1", F::Second, None)?,
            IntervalValue::Millis(32_100)
        );
        assert_eq!(
            value("36", F::Hour, None)?,
            IntervalValue::Millis(36 * 3_600_000)
        );
        assert_eq!(
            interval_value("2", true, &F::Day, None)?,
            IntervalValue::Millis(-2 * MILLIS_PER_DAY)
        );
        for bad in ["", "1 2", "1:60", "x", "1.5"] {
            assert!(value(bad, F::Hour, Some(F::Minute)).is_err(), "{bad}");
        }
        assert!(value("9223372036854775807", F::Day, None).is_err());
        Ok(())
    }

    #[test]
    fn only_trinos_field_ranges_are_trinos() {
        assert!(is_trino_form(&F::Day, Some(&F::Second)));
        assert!(is_trino_form(&F::Year, Some(&F::Month)));
        assert!(!is_trino_form(&F::Year, Some(&F::Day)));
        assert!(!is_trino_form(&F::Second, Some(&F::Minute)));
        assert!(!is_trino_form(&F::Week(None), None));
    }

    #[test]
    fn arrow_reads_what_it_is_given() {
        assert_eq!(IntervalValue::Months(-18).arrow_text(), "-18 months");
        assert_eq!(
            IntervalValue::Millis(-(5 * MILLIS_PER_DAY + 3000)).arrow_text(),
            "-5 days -3000 milliseconds"
        );
    }
}
