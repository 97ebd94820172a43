//! Timestamps as text the way Trino writes them: `2020-01-01 10:00:00.500`, a space between
//! date and time, as many fraction digits as the type's precision (none for `timestamp(0)`),
//! and the zone after a space for a timestamp with time zone
//! (`2020-01-01 10:00:00.000 America/Los_Angeles`). Arrow's cast writes ISO 8601's
//! `2020-01-01T10:00:00.500`: a different string for the same value.

use std::fmt::Write;
use std::sync::Arc;

use chrono::Timelike;
use datafusion::arrow::array::{Array, ArrayRef, StringBuilder};
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, result};
use crate::datetime::Clock;

/// The fraction digits a timestamp of `unit` is written with (its precision).
fn digits(unit: TimeUnit) -> usize {
    match unit {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 3,
        TimeUnit::Microsecond => 6,
        TimeUnit::Nanosecond => 9,
    }
}

/// `array` as text if it holds timestamps; `None` for other types.
pub(crate) fn timestamps_as_text(array: &ArrayRef) -> Option<Result<ArrayRef>> {
    let DataType::Timestamp(unit, zone) = array.data_type() else {
        return None;
    };
    let (digits, zone) = (digits(*unit), zone.clone());
    Some((|| {
        let clock = Clock::of(array.data_type())?;
        let values = clock.values(array)?;
        let mut out = StringBuilder::with_capacity(values.len(), values.len() * 24);
        let mut text = String::with_capacity(48);
        for row in 0..values.len() {
            if values.is_null(row) {
                out.append_null();
                continue;
            }
            let Some(local) = clock.local(values.value(row)) else {
                return exec_err!("a timestamp outside the range text can show");
            };
            text.clear();
            // Writing to a String cannot fail.
            let _ = write!(text, "{}", local.format("%Y-%m-%d %H:%M:%S"));
            if digits > 0 {
                let nanos = format!("{:09}", local.nanosecond() % 1_000_000_000);
                let _ = write!(text, ".{}", &nanos[..digits]);
            }
            if let Some(zone) = &zone {
                let _ = write!(text, " {zone}");
            }
            out.append_value(&text);
        }
        Ok(Arc::new(out.finish()) as ArrayRef)
    })())
}

/// The name the dialect calls in place of a cast of a timestamp to `varchar`.
pub const TIMESTAMP_TEXT: &str = "sqe_timestamp_text";

/// `sqe_timestamp_text(ts)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct TimestampText {
    signature: Signature,
}

impl TimestampText {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for TimestampText {
    fn name(&self) -> &str {
        TIMESTAMP_TEXT
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [DataType::Timestamp(..)] => Ok(DataType::Utf8),
            _ => plan_err!("{TIMESTAMP_TEXT} takes a timestamp"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        match columns.first().and_then(timestamps_as_text) {
            Some(text) => result(&args, text?),
            None => exec_err!("{TIMESTAMP_TEXT} takes a timestamp"),
        }
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{AsArray, TimestampMillisecondArray, TimestampSecondArray};

    use super::*;

    fn texts(array: ArrayRef) -> Result<Vec<Option<String>>> {
        let text = timestamps_as_text(&array).unwrap_or_else(|| exec_err!("not a timestamp"))?;
        Ok(text
            .as_string::<i32>()
            .iter()
            .map(|t| t.map(str::to_string))
            .collect())
    }

    #[test]
    fn timestamps_read_as_trinos() -> Result<()> {
        // 2020-01-01 10:00:00.5 UTC
        let millis: ArrayRef = Arc::new(TimestampMillisecondArray::from(vec![
            Some(1_577_872_800_500),
            None,
        ]));
        assert_eq!(
            texts(millis)?,
            [Some("2020-01-01 10:00:00.500".to_string()), None]
        );
        let seconds: ArrayRef = Arc::new(TimestampSecondArray::from(vec![1_577_872_800]));
        assert_eq!(texts(seconds)?, [Some("2020-01-01 10:00:00".to_string())]);
        let zoned: ArrayRef = Arc::new(
            TimestampMillisecondArray::from(vec![1_577_872_800_000])
                .with_timezone("America/Los_Angeles"),
        );
        assert_eq!(
            texts(zoned)?,
            [Some(
                "2020-01-01 02:00:00.000 America/Los_Angeles".to_string()
            )]
        );
        Ok(())
    }
}
