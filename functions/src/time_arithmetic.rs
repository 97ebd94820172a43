//! `time ± interval day to second` as Trino's: a time again, wrapping around midnight
//! (`TIME '23:00' + INTERVAL '2' HOUR` is `01:00`). DataFusion read the time as an interval
//! and answered an interval (`TIME '10:00' + INTERVAL '3' HOUR` was an interval of 13 hours).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Builder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, IntervalUnit, TimeUnit};
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, result};
use crate::error::invalid_argument;

const DAY_NANOS: i128 = 86_400_000_000_000;

/// The name the dialect calls: `sqe_time_plus(time, interval, sign)`, sign 1 or -1.
pub const TIME_PLUS: &str = "sqe_time_plus";

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct TimePlus {
    signature: Signature,
}

impl TimePlus {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::any(3, Volatility::Immutable),
        }
    }
}

fn is_time(t: &DataType) -> bool {
    matches!(t, DataType::Time32(_) | DataType::Time64(_))
}

/// An interval's length in nanoseconds; months have none (Trino has no `time + interval year
/// to month`).
fn interval_nanos(intervals: &ArrayRef, row: usize) -> Result<Option<i128>> {
    if intervals.is_null(row) {
        return Ok(None);
    }
    let (months, days, nanos) = match intervals.data_type() {
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            let v = intervals
                .as_primitive::<datafusion::arrow::datatypes::IntervalMonthDayNanoType>()
                .value(row);
            (v.months, v.days, i128::from(v.nanoseconds))
        }
        DataType::Interval(IntervalUnit::DayTime) => {
            let v = intervals
                .as_primitive::<datafusion::arrow::datatypes::IntervalDayTimeType>()
                .value(row);
            (0, v.days, i128::from(v.milliseconds) * 1_000_000)
        }
        DataType::Interval(IntervalUnit::YearMonth) => (1, 0, 0),
        other => return exec_err!("{TIME_PLUS} takes an interval, not {other}"),
    };
    if months != 0 {
        return Err(invalid_argument(
            "a time moves by an interval day to second, not by months or years",
        ));
    }
    Ok(Some(i128::from(days) * DAY_NANOS + nanos))
}

impl ScalarUDFImpl for TimePlus {
    fn name(&self) -> &str {
        TIME_PLUS
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [time, DataType::Interval(_), _] if is_time(time) => Ok(time.clone()),
            _ => plan_err!("{TIME_PLUS} takes a time, an interval and a sign"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [times, intervals, signs] = columns.as_slice() else {
            return exec_err!("{TIME_PLUS} takes 3 arguments");
        };
        let time_type = times.data_type().clone();
        let nanos = cast(
            &cast(times, &DataType::Time64(TimeUnit::Nanosecond))?,
            &DataType::Int64,
        )?;
        let nanos = nanos.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        let signs = cast(signs, &DataType::Int64)?;
        let signs = signs.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        let mut out = Int64Builder::with_capacity(nanos.len());
        for row in 0..nanos.len() {
            let moved = match interval_nanos(intervals, row)? {
                Some(by) if !nanos.is_null(row) && !signs.is_null(row) => by,
                _ => {
                    out.append_null();
                    continue;
                }
            };
            // The sign is the dialect's 1 or -1 (any other counts as its sign).
            let at = i128::from(nanos.value(row)) + i128::from(signs.value(row).signum()) * moved;
            // Within a day: the wrapped value fits.
            out.append_value(i64::try_from(at.rem_euclid(DAY_NANOS)).unwrap_or(0));
        }
        let moved: ArrayRef = Arc::new(out.finish());
        let moved = cast(&moved, &DataType::Time64(TimeUnit::Nanosecond))?;
        result(&args, cast(&moved, &time_type)?)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{IntervalMonthDayNanoArray, Time64MicrosecondArray};
    use datafusion::arrow::datatypes::{Field, IntervalMonthDayNano, Time64MicrosecondType};
    use datafusion::common::ScalarValue;
    use datafusion::config::ConfigOptions;

    use super::*;

    fn moved(time_micros: i64, interval: IntervalMonthDayNano, sign: i64) -> Result<i64> {
        let times: ArrayRef = Arc::new(Time64MicrosecondArray::from(vec![time_micros]));
        let intervals: ArrayRef = Arc::new(IntervalMonthDayNanoArray::from(vec![interval]));
        let args = vec![
            ColumnarValue::Array(times),
            ColumnarValue::Array(intervals),
            ColumnarValue::Scalar(ScalarValue::Int64(Some(sign))),
        ];
        let f = TimePlus::new();
        let types: Vec<DataType> = args.iter().map(ColumnarValue::data_type).collect();
        let answer = f.invoke_with_args(ScalarFunctionArgs {
            arg_fields: types
                .iter()
                .map(|t| Arc::new(Field::new("x", t.clone(), true)))
                .collect(),
            return_field: Arc::new(Field::new("r", f.return_type(&types)?, true)),
            args,
            number_rows: 1,
            config_options: Arc::new(ConfigOptions::default()),
        })?;
        Ok(answer
            .to_array(1)?
            .as_primitive::<Time64MicrosecondType>()
            .value(0))
    }

    #[test]
    fn times_move_and_wrap_around_midnight() -> Result<()> {
        let hours = |h: i64| IntervalMonthDayNano::new(0, 0, h * 3_600_000_000_000);
        let hour_micros = 3_600_000_000;
        assert_eq!(moved(10 * hour_micros, hours(3), 1)?, 13 * hour_micros);
        assert_eq!(moved(23 * hour_micros, hours(2), 1)?, hour_micros);
        assert_eq!(moved(hour_micros, hours(2), -1)?, 23 * hour_micros);
        assert_eq!(
            moved(hour_micros, IntervalMonthDayNano::new(0, 1, 0), 1)?,
            hour_micros
        );
        assert!(moved(hour_micros, IntervalMonthDayNano::new(1, 0, 0), 1).is_err());
        Ok(())
    }
}
