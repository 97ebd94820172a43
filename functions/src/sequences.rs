//! Trino's `sequence(start, stop [, step])`: of integers, of dates (a day up or down without a
//! step, a whole number of days, or months added to the start), and of zone-less timestamps by
//! an interval, as Trino's SequenceFunction makes them, at most 10,000 entries.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Date32Array, Int64Array, Int64Builder, ListArray, ListBuilder,
};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Field, FieldRef, Int64Type, IntervalDayTimeType,
    IntervalMonthDayNanoType, IntervalUnit, IntervalYearMonthType, TimeUnit,
};
use datafusion::common::{DataFusionError, Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, is_integer, longs, result};
use crate::datetime::{Clock, months_diff, plus_months};
use crate::error::invalid_argument;

/// Trino's cap on the entries `sequence` makes.
const MAX_SEQUENCE: i64 = 10_000;

/// `sequence(start, stop [, step])` of integers.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Sequence {
    signature: Signature,
}

impl Sequence {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// The integers from `start` to `stop` (both included) by `step` (default 1 upwards, -1
/// downwards), refused as Trino refuses them.
fn sequence(start: i64, stop: i64, step: Option<i64>) -> Result<Vec<i64>> {
    let step = step.unwrap_or(if start <= stop { 1 } else { -1 });
    check_step(start, stop, step)?;
    let entries = check_entries((i128::from(stop) - i128::from(start)) / i128::from(step) + 1)?;
    Ok((0..entries).map(|k| start + k * step).collect())
}

fn check_step(start: i64, stop: i64, step: i64) -> Result<()> {
    if step == 0 {
        return Err(invalid_argument("step must not be zero"));
    }
    if (step > 0 && stop < start) || (step < 0 && stop > start) {
        return Err(invalid_argument(
            "sequence stop value should be greater than or equal to start value if step is \
             greater than zero otherwise stop should be less than or equal to start",
        ));
    }
    Ok(())
}

fn check_entries(entries: i128) -> Result<i64> {
    if entries > i128::from(MAX_SEQUENCE) {
        return Err(invalid_argument(format!(
            "result of sequence function must not have more than {MAX_SEQUENCE} entries"
        )));
    }
    Ok(entries as i64)
}

/// How a sequence of dates or timestamps steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// A day up or down (dates without a step).
    Day,
    /// An interval day to second, in nanoseconds.
    Nanos(i128),
    /// An interval year to month.
    Months(i64),
}

const DAY_NANOS: i128 = 86_400_000_000_000;

/// The step of an interval's `row`: months, or days and time, as Trino's two interval types.
fn interval_step(intervals: &ArrayRef, row: usize) -> Result<Step> {
    let (months, days, nanos) = match intervals.data_type() {
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            let v = intervals
                .as_primitive::<IntervalMonthDayNanoType>()
                .value(row);
            (v.months, v.days, i128::from(v.nanoseconds))
        }
        DataType::Interval(IntervalUnit::DayTime) => {
            let v = intervals.as_primitive::<IntervalDayTimeType>().value(row);
            (0, v.days, i128::from(v.milliseconds) * 1_000_000)
        }
        DataType::Interval(IntervalUnit::YearMonth) => (
            intervals.as_primitive::<IntervalYearMonthType>().value(row),
            0,
            0,
        ),
        other => return exec_err!("sequence steps by an interval, not {other}"),
    };
    match (months, i128::from(days) * DAY_NANOS + nanos) {
        (0, nanos) => Ok(Step::Nanos(nanos)),
        (months, 0) => Ok(Step::Months(i64::from(months))),
        _ => Err(invalid_argument(
            "sequence steps by an interval of months or of days and time, not both",
        )),
    }
}

/// The stored values of the dates or timestamps from `start` to `stop` by `step`, as Trino's
/// sequence makes them: fixed steps in the stored unit (a date's step a whole number of days),
/// months added to `start` (the day kept to a shorter month's last), their number what
/// `date_diff('month', start, stop)` counts divided by the step.
fn temporal_sequence(clock: &Clock, start: i64, stop: i64, step: Step) -> Result<Vec<i64>> {
    let unit = i128::from(clock.unit_nanos());
    match step {
        Step::Day => sequence(start, stop, None),
        Step::Nanos(nanos) if nanos % unit != 0 => Err(if unit == DAY_NANOS {
            invalid_argument(
                "sequence step must be a day interval if start and end values are dates",
            )
        } else {
            DataFusionError::NotImplemented(
                "sequence of timestamps by a step finer than their precision".to_string(),
            )
        }),
        Step::Nanos(nanos) => {
            let step = i64::try_from(nanos / unit)
                .map_err(|_| invalid_argument("sequence step is out of range"))?;
            sequence(start, stop, Some(step))
        }
        Step::Months(months) => {
            check_step(start, stop, months)?;
            let out_of_range = || invalid_argument("sequence value is out of range");
            let between = months_diff(clock, start, stop).ok_or_else(out_of_range)?;
            let entries = check_entries(i128::from(between / months) + 1)?;
            (0..entries)
                .map(|k| plus_months(clock, k * months, start).ok_or_else(out_of_range))
                .collect()
        }
    }
}

fn is_temporal(t: &DataType) -> bool {
    matches!(t, DataType::Date32 | DataType::Timestamp(_, None))
}

impl ScalarUDFImpl for Sequence {
    fn name(&self) -> &str {
        "sequence"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if (2..=3).contains(&arg_types.len()) && arg_types.iter().all(is_integer) {
            return Ok(vec![DataType::Int64; arg_types.len()]);
        }
        match arg_types {
            [DataType::Date32, DataType::Date32] => return Ok(arg_types.to_vec()),
            [start, stop, step @ DataType::Interval(_)]
                if is_temporal(start) && is_temporal(stop) =>
            {
                // A date beside a timestamp is read as one, in the finer of their units.
                let unit = |t: &DataType| match t {
                    DataType::Timestamp(unit, _) => Some(*unit),
                    _ => None,
                };
                let bound = match (unit(start), unit(stop)) {
                    (None, None) => DataType::Date32,
                    (Some(u), None) | (None, Some(u)) => DataType::Timestamp(u, None),
                    (Some(a), Some(b)) => DataType::Timestamp(finer(a, b), None),
                };
                return Ok(vec![bound.clone(), bound, step.clone()]);
            }
            _ => {}
        }
        Err(crate::args::unexpected_parameters(
            "sequence",
            arg_types,
            "(bigint, bigint [, bigint]), (date, date [, interval]), (timestamp, timestamp, interval)",
        ))
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let element = match arg_types.first() {
            Some(t @ (DataType::Date32 | DataType::Timestamp(_, None))) => t.clone(),
            _ => DataType::Int64,
        };
        Ok(DataType::List(Arc::new(Field::new("item", element, true))))
    }

    /// The elements keep the start's type, precision included (`array(timestamp(3))`).
    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let types = crate::args::data_types(args.arg_fields);
        let element = match (self.return_type(&types)?, args.arg_fields.first()) {
            (DataType::List(element), Some(start)) if element.data_type() != &DataType::Int64 => {
                element
                    .as_ref()
                    .clone()
                    .with_metadata(start.metadata().clone())
            }
            (DataType::List(element), _) => element.as_ref().clone(),
            (other, _) => return exec_err!("sequence answers a list, not {other}"),
        };
        Ok(Arc::new(Field::new(
            self.name(),
            DataType::List(Arc::new(element)),
            true,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let (Some(start), Some(stop)) = (columns.first(), columns.get(1)) else {
            return exec_err!("sequence takes 2 or 3 arguments");
        };
        if !is_temporal(start.data_type()) {
            return integer_sequences(&args, &columns);
        }
        let DataType::List(element) = args.return_field.data_type() else {
            return exec_err!("sequence answers a list");
        };
        let clock = Clock::of(start.data_type())?;
        let stored = |array: &ArrayRef| -> Result<ArrayRef> {
            match array.data_type() {
                DataType::Date32 => Ok(Arc::new(Int64Array::from_iter(
                    array
                        .as_primitive::<Date32Type>()
                        .iter()
                        .map(|d| d.map(i64::from)),
                ))),
                _ => Ok(cast(array, &DataType::Int64)?),
            }
        };
        let (starts, stops) = (stored(start)?, stored(stop)?);
        let (starts, stops) = (
            starts.as_primitive::<Int64Type>(),
            stops.as_primitive::<Int64Type>(),
        );
        let steps = columns.get(2);
        let mut values: Vec<i64> = Vec::new();
        let mut lengths = Vec::with_capacity(starts.len());
        let mut valid = Vec::with_capacity(starts.len());
        for i in 0..starts.len() {
            let step = match steps {
                None => Some(Step::Day),
                Some(steps) if steps.is_null(i) => None,
                Some(steps) => Some(interval_step(steps, i)?),
            };
            let (Some(step), false, false) = (step, starts.is_null(i), stops.is_null(i)) else {
                lengths.push(0);
                valid.push(false);
                continue;
            };
            let row = temporal_sequence(&clock, starts.value(i), stops.value(i), step)?;
            lengths.push(row.len());
            valid.push(true);
            values.extend(row);
        }
        let values: ArrayRef = match element.data_type() {
            DataType::Date32 => Arc::new(Date32Array::from_iter_values(
                values
                    .into_iter()
                    .map(|d| {
                        i32::try_from(d)
                            .map_err(|_| invalid_argument("sequence value is out of range"))
                    })
                    .collect::<Result<Vec<i32>>>()?,
            )),
            other => cast(&(Arc::new(Int64Array::from(values)) as ArrayRef), other)?,
        };
        let list = ListArray::try_new(
            Arc::clone(element),
            OffsetBuffer::from_lengths(lengths),
            values,
            Some(NullBuffer::from(valid)),
        )?;
        result(&args, Arc::new(list))
    }
}

/// The finer of two time units.
fn finer(a: TimeUnit, b: TimeUnit) -> TimeUnit {
    let rank = |u: TimeUnit| match u {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 1,
        TimeUnit::Microsecond => 2,
        TimeUnit::Nanosecond => 3,
    };
    if rank(a) >= rank(b) { a } else { b }
}

fn integer_sequences(args: &ScalarFunctionArgs, columns: &[ArrayRef]) -> Result<ColumnarValue> {
    let integers = columns.iter().map(longs).collect::<Result<Vec<_>>>()?;
    let (start, stop) = match integers.as_slice() {
        [start, stop] | [start, stop, _] => (start, stop),
        _ => return exec_err!("sequence takes 2 or 3 arguments"),
    };
    let step = integers.get(2);
    let mut out = ListBuilder::new(Int64Builder::new());
    for i in 0..start.len() {
        if start.is_null(i) || stop.is_null(i) || step.is_some_and(|s| s.is_null(i)) {
            out.append_null();
            continue;
        }
        let values = sequence(start.value(i), stop.value(i), step.map(|s| s.value(i)))?;
        out.values().append_slice(&values);
        out.append(true);
    }
    result(args, Arc::new(out.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_sequences_step_by_days_or_months() -> Result<()> {
        let dates = Clock::of(&DataType::Date32)?;
        // 2020-01-31 is day 18292 since the epoch.
        let jan31 = 18_292;
        let by_month = temporal_sequence(&dates, jan31, jan31 + 60, Step::Months(1))?;
        // January 31st, February 29th, March 31st: the day kept to February's last.
        assert_eq!(by_month, vec![jan31, jan31 + 29, jan31 + 60]);
        assert_eq!(
            temporal_sequence(&dates, jan31, jan31 + 4, Step::Nanos(2 * DAY_NANOS))?,
            vec![jan31, jan31 + 2, jan31 + 4]
        );
        assert!(temporal_sequence(&dates, jan31, jan31 + 4, Step::Nanos(DAY_NANOS / 2)).is_err());
        assert!(temporal_sequence(&dates, jan31, jan31 + 4, Step::Months(0)).is_err());
        assert!(temporal_sequence(&dates, jan31 + 4, jan31, Step::Months(1)).is_err());
        let seconds = Clock::of(&DataType::Timestamp(TimeUnit::Second, None))?;
        assert!(matches!(
            temporal_sequence(&seconds, 0, 10, Step::Nanos(500_000_000)),
            Err(DataFusionError::NotImplemented(_))
        ));
        assert_eq!(
            temporal_sequence(&seconds, 0, 10, Step::Nanos(5_000_000_000))?,
            vec![0, 5, 10]
        );
        Ok(())
    }

    #[test]
    fn sequences_follow_trino() {
        assert_eq!(sequence(1, 5, None).ok(), Some(vec![1, 2, 3, 4, 5]));
        assert_eq!(sequence(5, 1, None).ok(), Some(vec![5, 4, 3, 2, 1]));
        assert_eq!(sequence(1, 10, Some(3)).ok(), Some(vec![1, 4, 7, 10]));
        assert_eq!(sequence(-2, 2, Some(2)).ok(), Some(vec![-2, 0, 2]));
        assert_eq!(sequence(3, 3, Some(-1)).ok(), Some(vec![3]));
        assert!(sequence(1, 5, Some(0)).is_err());
        assert!(sequence(1, 5, Some(-1)).is_err());
        assert!(sequence(0, 10_000, None).is_err());
        assert_eq!(
            sequence(1, 10_000, None).map(|v| v.len()).ok(),
            Some(10_000)
        );
        assert!(sequence(i64::MIN, i64::MAX, None).is_err());
    }
}
