//! Intervals as Trino writes them, in result rows and in a cast to varchar: `1-2` for an
//! interval year to month, `3 00:00:00.000` for an interval day to second (Arrow's cast wrote
//! `1 years 2 mons` and `3 days`).

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::{
    DataType, DurationMicrosecondType, DurationMillisecondType, DurationNanosecondType,
    DurationSecondType, IntervalDayTimeType, IntervalMonthDayNanoType, IntervalUnit,
    IntervalYearMonthType, TimeUnit,
};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, result};

const MILLIS_PER_DAY: i64 = 86_400_000;

/// One of Trino's two interval values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntervalText {
    /// `interval year to month`: `[-]years-months`.
    Months(i32),
    /// `interval day to second`: `[-]days hours:minutes:seconds.millis`.
    Millis(i64),
}

/// An interval of months and days together: no Trino interval type holds one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "an interval of months and days together: Trino's interval types hold either years to \
     months or days to seconds"
)]
pub struct MixedInterval;

impl IntervalText {
    /// The value at `i` of an interval or duration array (not checked for NULL), or `None`
    /// for an array of another type.
    pub fn of(array: &dyn Array, i: usize) -> Option<Result<Self, MixedInterval>> {
        let millis = match array.data_type() {
            DataType::Interval(IntervalUnit::YearMonth) => {
                return Some(Ok(IntervalText::Months(
                    array.as_primitive::<IntervalYearMonthType>().value(i),
                )));
            }
            DataType::Interval(IntervalUnit::DayTime) => {
                let v = array.as_primitive::<IntervalDayTimeType>().value(i);
                i64::from(v.days) * MILLIS_PER_DAY + i64::from(v.milliseconds)
            }
            DataType::Interval(IntervalUnit::MonthDayNano) => {
                let v = array.as_primitive::<IntervalMonthDayNanoType>().value(i);
                // Its type is interval day to second: months have no place in it.
                if v.months != 0 {
                    return Some(Err(MixedInterval));
                }
                i64::from(v.days) * MILLIS_PER_DAY + v.nanoseconds / 1_000_000
            }
            DataType::Duration(unit) => match unit {
                TimeUnit::Second => array
                    .as_primitive::<DurationSecondType>()
                    .value(i)
                    .saturating_mul(1000),
                TimeUnit::Millisecond => array.as_primitive::<DurationMillisecondType>().value(i),
                TimeUnit::Microsecond => {
                    array.as_primitive::<DurationMicrosecondType>().value(i) / 1000
                }
                TimeUnit::Nanosecond => {
                    array.as_primitive::<DurationNanosecondType>().value(i) / 1_000_000
                }
            },
            _ => return None,
        };
        Some(Ok(IntervalText::Millis(millis)))
    }
}

impl fmt::Display for IntervalText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            IntervalText::Months(months) => {
                let sign = if months < 0 { "-" } else { "" };
                let months = months.unsigned_abs();
                write!(f, "{sign}{}-{}", months / 12, months % 12)
            }
            IntervalText::Millis(millis) => {
                let sign = if millis < 0 { "-" } else { "" };
                let millis = millis.unsigned_abs();
                write!(
                    f,
                    "{sign}{} {:02}:{:02}:{:02}.{:03}",
                    millis / 86_400_000,
                    millis / 3_600_000 % 24,
                    millis / 60_000 % 60,
                    millis / 1000 % 60,
                    millis % 1000
                )
            }
        }
    }
}

/// What the dialect calls for a cast of an interval to varchar.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct IntervalToText {
    signature: Signature,
}

impl IntervalToText {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for IntervalToText {
    fn name(&self) -> &str {
        "sqe_interval_text"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let Some(intervals) = columns.first() else {
            return exec_err!("sqe_interval_text takes an interval");
        };
        let mut out = StringBuilder::with_capacity(intervals.len(), intervals.len() * 14);
        for i in 0..intervals.len() {
            if intervals.is_null(i) {
                out.append_null();
                continue;
            }
            match IntervalText::of(intervals.as_ref(), i) {
                Some(Ok(text)) => out.append_value(text.to_string()),
                Some(Err(mixed)) => return exec_err!("{mixed}"),
                None => return exec_err!("sqe_interval_text takes an interval"),
            }
        }
        let text: ArrayRef = Arc::new(out.finish());
        result(&args, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_are_written_as_trino_writes_them() {
        assert_eq!(IntervalText::Months(14).to_string(), "1-2");
        assert_eq!(IntervalText::Months(-3).to_string(), "-0-3");
        assert_eq!(
            IntervalText::Millis(93_784_005).to_string(),
            "1 02:03:04.005"
        );
        assert_eq!(IntervalText::Millis(-1_500).to_string(), "-0 00:00:01.500");
        assert_eq!(
            IntervalText::Millis(3 * MILLIS_PER_DAY).to_string(),
            "3 00:00:00.000"
        );
    }
}
