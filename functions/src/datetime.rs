//! `date_add(unit, value, x)` and `date_diff(unit, x1, x2)` as Trino defines them: calendar
//! units (day and longer) move the local date-time (a month after January 31st is the last day
//! of February) and count whole units between two local date-times; shorter units are exact
//! durations. A date takes only calendar units.

use std::sync::Arc;

use chrono::{
    DateTime, Datelike, Months, NaiveDate, NaiveDateTime, Offset, TimeDelta, TimeZone, Timelike,
};
use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Int64Array, PrimitiveArray, PrimitiveBuilder,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Date32Type, Int64Type, TimeUnit};
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, is_integer, is_string, longs, result, strings};
use crate::error::invalid_argument;

/// A unit Trino's date functions take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Millisecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

impl Unit {
    fn parse(text: &str, of_date: bool) -> Result<Self> {
        let unit = match text.to_ascii_lowercase().as_str() {
            "millisecond" => Unit::Millisecond,
            "second" => Unit::Second,
            "minute" => Unit::Minute,
            "hour" => Unit::Hour,
            "day" => Unit::Day,
            "week" => Unit::Week,
            "month" => Unit::Month,
            "quarter" => Unit::Quarter,
            "year" => Unit::Year,
            _ => return Err(invalid_argument(format!("'{text}' is not a valid unit"))),
        };
        if of_date && !unit.is_calendar() {
            return Err(invalid_argument(format!(
                "'{text}' is not a valid DATE field"
            )));
        }
        Ok(unit)
    }

    /// The unit's fixed length, for units shorter than a month.
    fn millis(self) -> Option<i64> {
        match self {
            Unit::Millisecond => Some(1),
            Unit::Second => Some(1_000),
            Unit::Minute => Some(60_000),
            Unit::Hour => Some(3_600_000),
            Unit::Day => Some(DAY_MILLIS),
            Unit::Week => Some(7 * DAY_MILLIS),
            Unit::Month | Unit::Quarter | Unit::Year => None,
        }
    }

    fn months(self) -> i64 {
        match self {
            Unit::Quarter => 3,
            Unit::Year => 12,
            _ => 1,
        }
    }

    /// Whether the unit moves the local calendar (rather than the instant).
    fn is_calendar(self) -> bool {
        self.millis().is_none_or(|m| m >= DAY_MILLIS)
    }
}

const DAY_MILLIS: i64 = 86_400_000;

/// How the values of one date or timestamp type map to local date-times and back.
#[derive(Debug, Clone)]
pub(crate) struct Clock {
    data_type: DataType,
    zone: Option<Tz>,
}

impl Clock {
    pub(crate) fn of(data_type: &DataType) -> Result<Self> {
        let zone = match data_type {
            DataType::Date32 | DataType::Timestamp(_, None) => None,
            DataType::Timestamp(_, Some(zone)) => Some(zone.parse::<Tz>()?),
            other => return plan_err!("expected a date or a timestamp, got {other}"),
        };
        Ok(Self {
            data_type: data_type.clone(),
            zone,
        })
    }

    fn is_date(&self) -> bool {
        self.data_type == DataType::Date32
    }

    /// Nanoseconds per stored unit.
    pub(crate) fn unit_nanos(&self) -> i64 {
        match &self.data_type {
            DataType::Timestamp(TimeUnit::Second, _) => 1_000_000_000,
            DataType::Timestamp(TimeUnit::Millisecond, _) => 1_000_000,
            DataType::Timestamp(TimeUnit::Microsecond, _) => 1_000,
            DataType::Timestamp(TimeUnit::Nanosecond, _) => 1,
            _ => DAY_MILLIS * 1_000_000,
        }
    }

    /// The stored values as i64 (days for a date).
    pub(crate) fn values(&self, array: &ArrayRef) -> Result<Int64Array> {
        longs(&cast(array, &self.data_type)?)
    }

    /// The local date-time of a stored value (in the type's zone, if it has one).
    pub(crate) fn local(&self, value: i64) -> Option<NaiveDateTime> {
        if self.is_date() {
            return NaiveDate::from_num_days_from_ce_opt(
                i32::try_from(value).ok()?.checked_add(EPOCH_DAYS_FROM_CE)?,
            )?
            .and_hms_opt(0, 0, 0);
        }
        let utc = self.instant(value)?.naive_utc();
        match &self.zone {
            Some(zone) => Some(zone.from_utc_datetime(&utc).naive_local()),
            None => Some(utc),
        }
    }

    /// The zone's offset from UTC at a stored value, in seconds (`None` without a zone).
    pub(crate) fn offset_seconds(&self, value: i64) -> Option<i32> {
        let zone = self.zone.as_ref()?;
        let utc = self.instant(value)?.naive_utc();
        Some(zone.offset_from_utc_datetime(&utc).fix().local_minus_utc())
    }

    /// A stored timestamp as the instant (or, zone-less, the UTC reading) it holds.
    fn instant(&self, value: i64) -> Option<DateTime<chrono::Utc>> {
        match &self.data_type {
            DataType::Timestamp(TimeUnit::Second, _) => DateTime::from_timestamp(value, 0),
            DataType::Timestamp(TimeUnit::Millisecond, _) => DateTime::from_timestamp_millis(value),
            DataType::Timestamp(TimeUnit::Microsecond, _) => DateTime::from_timestamp_micros(value),
            DataType::Timestamp(TimeUnit::Nanosecond, _) => {
                Some(DateTime::from_timestamp_nanos(value))
            }
            _ => None,
        }
    }

    /// The stored value of a local date-time (the earlier instant when a zone repeats it).
    pub(crate) fn stored(&self, local: NaiveDateTime) -> Option<i64> {
        let utc = match &self.zone {
            Some(zone) => zone.from_local_datetime(&local).earliest()?.naive_utc(),
            None => local,
        }
        .and_utc();
        match &self.data_type {
            DataType::Date32 => Some(i64::from(
                local.date().num_days_from_ce() - EPOCH_DAYS_FROM_CE,
            )),
            DataType::Timestamp(TimeUnit::Second, _) => Some(utc.timestamp()),
            DataType::Timestamp(TimeUnit::Millisecond, _) => Some(utc.timestamp_millis()),
            DataType::Timestamp(TimeUnit::Microsecond, _) => Some(utc.timestamp_micros()),
            _ => utc.timestamp_nanos_opt(),
        }
    }
}

/// Days from 0001-01-01 to 1970-01-01.
const EPOCH_DAYS_FROM_CE: i32 = 719_163;

fn add_months(local: NaiveDateTime, months: i64) -> Option<NaiveDateTime> {
    let magnitude = Months::new(u32::try_from(months.unsigned_abs()).ok()?);
    if months >= 0 {
        local.checked_add_months(magnitude)
    } else {
        local.checked_sub_months(magnitude)
    }
}

/// `x` moved by `amount` units, or None past the representable range.
fn add(clock: &Clock, unit: Unit, amount: i64, x: i64) -> Option<i64> {
    match unit.millis() {
        Some(millis) if !unit.is_calendar() => {
            let nanos = i128::from(amount) * i128::from(millis) * 1_000_000;
            let delta = i64::try_from(nanos / i128::from(clock.unit_nanos())).ok()?;
            x.checked_add(delta)
        }
        Some(millis) => {
            let local = clock.local(x)?;
            let moved = local
                .checked_add_signed(TimeDelta::try_milliseconds(amount.checked_mul(millis)?)?)?;
            clock.stored(moved)
        }
        None => clock.stored(add_months(
            clock.local(x)?,
            amount.checked_mul(unit.months())?,
        )?),
    }
}

/// Whole months from `start` to `end` (`start <= end`), as Joda-Time counts them (Trino's
/// `date_diff`): the month numbers' difference, less one when `end` is earlier in its month
/// than `start` in its own, where a `start` whose day is past the last day of `end`'s month
/// counts as that last day (so that January 31st to February 29th is a month, as adding a
/// month to January 31st gives February 29th).
fn months_between(start: NaiveDateTime, end: NaiveDateTime) -> i64 {
    let mut months = i64::from(end.year() - start.year()) * 12 + i64::from(end.month())
        - i64::from(start.month());
    let last_day = |d: NaiveDateTime| {
        d.date()
            .checked_add_days(chrono::Days::new(1))
            .is_none_or(|next| next.month() != d.month())
    };
    let mut start_day = start.day();
    if last_day(end) && start_day > end.day() {
        start_day = end.day();
    }
    let within =
        |day: u32, d: NaiveDateTime| (day, d.time().num_seconds_from_midnight(), d.nanosecond());
    if within(end.day(), end) < within(start_day, start) {
        months -= 1;
    }
    months
}

/// `x` moved by `months` (a date's or a timestamp's stored value), the day kept to the
/// month's last as Trino's `plusMonths`; None past the representable range.
pub(crate) fn plus_months(clock: &Clock, months: i64, x: i64) -> Option<i64> {
    add(clock, Unit::Month, months, x)
}

/// Whole months from `a` to `b`, as Trino's `date_diff('month', a, b)` counts them.
pub(crate) fn months_diff(clock: &Clock, a: i64, b: i64) -> Option<i64> {
    diff(clock, Unit::Month, a, b)
}

/// Whole units from `a` to `b` (negative when `b` is earlier).
fn diff(clock: &Clock, unit: Unit, a: i64, b: i64) -> Option<i64> {
    match unit.millis() {
        // Days and weeks of a zoned timestamp are its wall clock's (Joda's zoned day field):
        // the 23 hours over a spring-forward change are a day.
        Some(millis) if unit.is_calendar() && clock.zone.is_some() => {
            let elapsed = clock.local(b)? - clock.local(a)?;
            Some(elapsed.num_milliseconds() / millis)
        }
        Some(millis) => {
            let nanos = (i128::from(b) - i128::from(a)) * i128::from(clock.unit_nanos());
            i64::try_from(nanos / (i128::from(millis) * 1_000_000)).ok()
        }
        None => {
            let (start, end) = (clock.local(a)?, clock.local(b)?);
            let months = if start <= end {
                months_between(start, end)
            } else {
                -months_between(end, start)
            };
            Some(months / unit.months())
        }
    }
}

/// The unit of each row: a constant parsed once, or one per row.
fn units(array: &ArrayRef, of_date: bool) -> Result<Vec<Option<Unit>>> {
    let texts = strings(array)?;
    let texts = texts.as_string::<i32>();
    texts
        .iter()
        .map(|t| t.map(|t| Unit::parse(t, of_date)).transpose())
        .collect()
}

fn out_of_range(name: &str) -> datafusion::common::DataFusionError {
    invalid_argument(format!("{name}: the result is out of the supported range"))
}

/// `date_add(unit, value, x)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct DateAdd {
    signature: Signature,
}

impl DateAdd {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for DateAdd {
    fn name(&self) -> &str {
        "date_add"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [u, v, x] if is_string(u) && is_integer(v) && Clock::of(x).is_ok() => {
                Ok(vec![DataType::Utf8, DataType::Int64, x.clone()])
            }
            _ => Err(crate::args::unexpected_parameters(
                "date_add",
                arg_types,
                "(varchar, bigint, date or timestamp)",
            )),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.get(2) {
            Some(t) => Ok(t.clone()),
            None => plan_err!("date_add takes 3 arguments"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [unit, amount, x] = columns.as_slice() else {
            return exec_err!("date_add takes 3 arguments");
        };
        let clock = Clock::of(x.data_type())?;
        let units = units(unit, clock.is_date())?;
        let amounts = longs(amount)?;
        let values = clock.values(x)?;
        let mut out = PrimitiveBuilder::<Int64Type>::with_capacity(values.len());
        for (row, unit) in units.iter().enumerate() {
            let (Some(unit), false, false) = (*unit, amounts.is_null(row), values.is_null(row))
            else {
                out.append_null();
                continue;
            };
            let moved = add(&clock, unit, amounts.value(row), values.value(row))
                .ok_or_else(|| out_of_range("date_add"))?;
            out.append_value(moved);
        }
        let moved: PrimitiveArray<Int64Type> = out.finish();
        let typed: ArrayRef = if clock.is_date() {
            let days = moved
                .iter()
                .map(|d| d.and_then(|d| i32::try_from(d).ok()))
                .collect::<PrimitiveArray<Date32Type>>();
            Arc::new(days) as ArrayRef
        } else {
            cast(&(Arc::new(moved) as ArrayRef), x.data_type())?
        };
        result(&args, typed)
    }
}

/// `date_diff(unit, x1, x2)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct DateDiff {
    signature: Signature,
}

impl DateDiff {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for DateDiff {
    fn name(&self) -> &str {
        "date_diff"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [u, a, b] if is_string(u) && Clock::of(a).is_ok() && Clock::of(b).is_ok() => {
                // Both in the first one's type; a date beside a timestamp becomes a timestamp.
                let common = if a == &DataType::Date32 { b } else { a };
                Ok(vec![DataType::Utf8, common.clone(), common.clone()])
            }
            _ => Err(crate::args::unexpected_parameters(
                "date_diff",
                arg_types,
                "(varchar, date or timestamp, date or timestamp)",
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [unit, a, b] = columns.as_slice() else {
            return exec_err!("date_diff takes 3 arguments");
        };
        let clock = Clock::of(a.data_type())?;
        let units = units(unit, clock.is_date())?;
        let (a, b) = (clock.values(a)?, clock.values(b)?);
        let mut out = PrimitiveBuilder::<Int64Type>::with_capacity(a.len());
        for (row, unit) in units.iter().enumerate() {
            let (Some(unit), false, false) = (*unit, a.is_null(row), b.is_null(row)) else {
                out.append_null();
                continue;
            };
            let counted = diff(&clock, unit, a.value(row), b.value(row))
                .ok_or_else(|| out_of_range("date_diff"))?;
            out.append_value(counted);
        }
        result(&args, Arc::new(out.finish()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S").expect("a test date-time")
    }

    #[test]
    fn months_count_whole_months_as_joda_does() {
        let cases = [
            ("2020-01-15 00:00:00", "2020-03-14 00:00:00", 1),
            ("2020-01-15 00:00:00", "2020-03-15 00:00:00", 2),
            // The end on its month's last day: a start past it counts as that day.
            ("2020-01-31 00:00:00", "2020-02-29 00:00:00", 1),
            ("2020-01-31 12:00:00", "2020-02-29 00:00:00", 0),
            ("2020-01-30 00:00:00", "2020-02-28 00:00:00", 0),
            ("2020-02-29 00:00:00", "2020-03-31 00:00:00", 1),
            ("2020-02-29 12:00:00", "2020-03-30 00:00:00", 1),
            ("2020-03-31 00:00:00", "2020-04-30 00:00:00", 1),
            ("2020-02-29 00:00:00", "2021-02-28 00:00:00", 12),
            ("2020-01-15 10:00:00", "2020-02-15 09:59:59", 0),
        ];
        for (start, end, months) in cases {
            assert_eq!(
                months_between(at(start), at(end)),
                months,
                "{start} .. {end}"
            );
        }
    }

    #[test]
    fn a_date_takes_only_calendar_units() {
        assert!(Unit::parse("hour", true).is_err());
        assert!(Unit::parse("DAY", true).is_ok());
        assert!(Unit::parse("fortnight", false).is_err());
    }

    #[test]
    fn dates_move_by_calendar_days() {
        let clock = Clock::of(&DataType::Date32).expect("a date clock");
        let day = |s: &str| {
            i64::from(
                NaiveDate::parse_from_str(s, "%Y-%m-%d")
                    .expect("a test date")
                    .num_days_from_ce()
                    - EPOCH_DAYS_FROM_CE,
            )
        };
        assert_eq!(
            add(&clock, Unit::Month, 1, day("2020-01-31")),
            Some(day("2020-02-29"))
        );
        assert_eq!(
            add(&clock, Unit::Day, -1, day("2020-03-01")),
            Some(day("2020-02-29"))
        );
        assert_eq!(
            diff(&clock, Unit::Day, day("2020-03-01"), day("2020-01-01")),
            Some(-60)
        );
    }
}
