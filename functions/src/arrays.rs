//! `slice`, `sequence`, `ngrams` and `cardinality`, which DataFusion spells differently,
//! answers differently or lacks, with Trino's bounds and refusals.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Date32Array, Int64Array, Int64Builder, ListArray, ListBuilder,
    MutableArrayData, make_array,
};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::arrow::datatypes::{
    Date32Type, FieldRef, Int64Type, IntervalDayTimeType, IntervalMonthDayNanoType, IntervalUnit,
    IntervalYearMonthType, TimeUnit,
};
use datafusion::common::{DataFusionError, Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, is_integer, longs, result};
use crate::datetime::{Clock, months_diff, plus_months};
use crate::error::invalid_argument;

/// Trino's cap on the entries `sequence` makes.
const MAX_SEQUENCE: i64 = 10_000;

/// `slice(array, start, length)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Slice {
    signature: Signature,
}

impl Slice {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// The element range `[from, to)` (0-based) of an array of `size` that `slice` takes: from
/// `start` (1-based, negative from the end) for `length` elements.
fn slice_range(size: i64, start: i64, length: i64) -> Result<(i64, i64)> {
    if length < 0 {
        return Err(invalid_argument(
            "length must be greater than or equal to 0",
        ));
    }
    if start == 0 {
        return Err(invalid_argument("SQL array indices start at 1"));
    }
    let from = if start < 0 { size + start + 1 } else { start };
    let to = from.saturating_add(length).min(size + 1);
    if from < 1 || from >= to {
        return Ok((0, 0));
    }
    Ok((from - 1, to - 1))
}

impl ScalarUDFImpl for Slice {
    fn name(&self) -> &str {
        "slice"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [list @ DataType::List(_), s, l] if is_integer(s) && is_integer(l) => {
                Ok(vec![list.clone(), DataType::Int64, DataType::Int64])
            }
            [DataType::Null, s, l] if is_integer(s) && is_integer(l) => Ok(vec![
                DataType::List(Arc::new(Field::new("item", DataType::Null, true))),
                DataType::Int64,
                DataType::Int64,
            ]),
            _ => Err(crate::args::unexpected_parameters(
                "slice",
                arg_types,
                "(array(T), bigint, bigint)",
            )),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(list) => Ok(list.clone()),
            None => plan_err!("slice takes an array"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [list, start, length] = columns.as_slice() else {
            return exec_err!("slice takes 3 arguments");
        };
        let (start, length) = (longs(start)?, longs(length)?);
        let Some(list) = list.as_list_opt::<i32>() else {
            return exec_err!("slice takes an array, not {}", list.data_type());
        };
        let values = list.values().to_data();
        let mut taken = MutableArrayData::new(vec![&values], true, values.len());
        let mut offsets = Vec::with_capacity(list.len() + 1);
        offsets.push(0i32);
        let mut nulls = Vec::with_capacity(list.len());
        for i in 0..list.len() {
            let valid = !(list.is_null(i) || start.is_null(i) || length.is_null(i));
            if valid {
                let (begin, end) = (list.value_offsets()[i], list.value_offsets()[i + 1]);
                let (from, to) =
                    slice_range(i64::from(end - begin), start.value(i), length.value(i))?;
                let (from, to) = (usize::try_from(from), usize::try_from(to));
                let (Ok(from), Ok(to)) = (from, to) else {
                    return exec_err!("slice bounds out of range");
                };
                let begin = begin as usize;
                taken.extend(0, begin + from, begin + to);
            }
            let Some(last) = offsets.last().copied() else {
                return exec_err!("no offsets");
            };
            let added = taken.len() as i32 - last;
            offsets.push(last + added);
            nulls.push(valid);
        }
        let Some(field) = (match list.data_type() {
            DataType::List(field) => Some(field.clone()),
            _ => None,
        }) else {
            return exec_err!("slice takes an array");
        };
        let sliced = ListArray::try_new(
            field,
            OffsetBuffer::new(offsets.into()),
            make_array(taken.freeze()),
            Some(nulls.into()),
        )?;
        result(&args, Arc::new(sliced) as ArrayRef)
    }
}

/// `ngrams(array, n)`: every run of `n` adjacent elements, in order; an array of `n` or fewer
/// elements is its one n-gram.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Ngrams {
    signature: Signature,
}

impl Ngrams {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// The element ranges `[from, to)` of the n-grams of an array of `size`.
fn ngram_ranges(size: usize, n: i64) -> Result<Vec<(usize, usize)>> {
    if n <= 0 {
        return Err(invalid_argument("N must be positive"));
    }
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    if size <= n {
        return Ok(vec![(0, size)]);
    }
    Ok((0..=size - n).map(|from| (from, from + n)).collect())
}

impl ScalarUDFImpl for Ngrams {
    fn name(&self) -> &str {
        "ngrams"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [list @ DataType::List(_), n] if is_integer(n) => {
                Ok(vec![list.clone(), DataType::Int64])
            }
            _ => Err(crate::args::unexpected_parameters(
                "ngrams",
                arg_types,
                "(array(T), bigint)",
            )),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(list @ DataType::List(_)) => Ok(DataType::List(Arc::new(Field::new(
                "item",
                list.clone(),
                true,
            )))),
            _ => plan_err!("ngrams takes an array"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [list, n] = columns.as_slice() else {
            return exec_err!("ngrams takes 2 arguments");
        };
        let n = longs(n)?;
        let Some(list) = list.as_list_opt::<i32>() else {
            return exec_err!("ngrams takes an array, not {}", list.data_type());
        };
        let DataType::List(element) = list.data_type() else {
            return exec_err!("ngrams takes an array");
        };
        let values = list.values().to_data();
        let mut taken = MutableArrayData::new(vec![&values], true, values.len());
        let (mut gram_offsets, mut row_offsets) = (vec![0i32], vec![0i32]);
        let mut nulls = Vec::with_capacity(list.len());
        for i in 0..list.len() {
            let valid = !(list.is_null(i) || n.is_null(i));
            if valid {
                let offsets = list.value_offsets();
                let (begin, end) = (offsets[i] as usize, offsets[i + 1] as usize);
                for (from, to) in ngram_ranges(end - begin, n.value(i))? {
                    taken.extend(0, begin + from, begin + to);
                    gram_offsets.push(taken.len() as i32);
                }
            }
            row_offsets.push(gram_offsets.len() as i32 - 1);
            nulls.push(valid);
        }
        let grams = ListArray::try_new(
            element.clone(),
            OffsetBuffer::new(gram_offsets.into()),
            make_array(taken.freeze()),
            None,
        )?;
        let rows = ListArray::try_new(
            Arc::new(Field::new("item", list.data_type().clone(), true)),
            OffsetBuffer::new(row_offsets.into()),
            Arc::new(grams),
            Some(nulls.into()),
        )?;
        result(&args, Arc::new(rows) as ArrayRef)
    }
}

/// `cardinality(x)`: an array's length or a map's number of entries, as a `bigint`. (DataFusion's
/// own counts every element of nested arrays: 6 for `ARRAY[ARRAY[1,2,3], ARRAY[4,5,6]]`.)
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Cardinality {
    signature: Signature,
}

impl Cardinality {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for Cardinality {
    fn name(&self) -> &str {
        "cardinality"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [t @ (DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..))]
            | [t @ (DataType::Map(..) | DataType::Null)] => Ok(vec![t.clone()]),
            _ => Err(crate::args::unexpected_parameters(
                "cardinality",
                arg_types,
                "(array(T)) or (map(K,V))",
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [x] = columns.as_slice() else {
            return exec_err!("cardinality takes 1 argument");
        };
        let sizes: Vec<Option<i64>> = match x.data_type() {
            DataType::List(_) => {
                let list = x.as_list::<i32>();
                (0..list.len())
                    .map(|i| list.is_valid(i).then(|| i64::from(list.value_length(i))))
                    .collect()
            }
            DataType::LargeList(_) => {
                let list = x.as_list::<i64>();
                (0..list.len())
                    .map(|i| list.is_valid(i).then(|| list.value_length(i)))
                    .collect()
            }
            DataType::FixedSizeList(_, size) => (0..x.len())
                .map(|i| x.is_valid(i).then_some(i64::from(*size)))
                .collect(),
            DataType::Map(..) => {
                let map = x.as_map();
                let offsets = map.value_offsets();
                (0..map.len())
                    .map(|i| {
                        map.is_valid(i)
                            .then(|| i64::from(offsets[i + 1] - offsets[i]))
                    })
                    .collect()
            }
            _ => vec![None; x.len()],
        };
        result(&args, Arc::new(Int64Array::from(sizes)) as ArrayRef)
    }
}

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
    fn slice_ranges_follow_trino() {
        assert_eq!(slice_range(4, 2, 2).ok(), Some((1, 3)));
        assert_eq!(slice_range(4, -2, 2).ok(), Some((2, 4)));
        assert_eq!(slice_range(4, -2, 5).ok(), Some((2, 4)));
        assert_eq!(slice_range(4, 3, 10).ok(), Some((2, 4)));
        assert_eq!(slice_range(4, 5, 1).ok(), Some((0, 0)));
        assert_eq!(slice_range(4, -5, 2).ok(), Some((0, 0)));
        assert_eq!(slice_range(4, 1, 0).ok(), Some((0, 0)));
        assert_eq!(slice_range(0, 1, 1).ok(), Some((0, 0)));
        assert_eq!(slice_range(4, 1, i64::MAX).ok(), Some((0, 4)));
        assert!(slice_range(4, 0, 1).is_err());
        assert!(slice_range(4, 1, -1).is_err());
    }

    #[test]
    fn ngrams_follow_trino() -> Result<()> {
        assert_eq!(ngram_ranges(4, 2)?, [(0, 2), (1, 3), (2, 4)]);
        assert_eq!(ngram_ranges(4, 4)?, [(0, 4)]);
        assert_eq!(ngram_ranges(4, 5)?, [(0, 4)]);
        assert_eq!(ngram_ranges(0, 2)?, [(0, 0)]);
        assert!(ngram_ranges(4, 0).is_err());
        assert!(ngram_ranges(4, -1).is_err());
        Ok(())
    }

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
