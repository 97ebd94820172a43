//! A timestamp with time zone cast to a zone-less `timestamp` keeps its wall-clock reading in
//! its zone, as Trino's cast does: `CAST(TIMESTAMP '2024-01-01 10:00 America/New_York' AS
//! timestamp)` is `2024-01-01 10:00:00`. Arrow's cast drops the zone and keeps the UTC reading
//! (`15:00`): the same instant, another value.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, Int64Builder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, result};
use crate::datetime::Clock;

/// The name the dialect calls in place of such a cast.
pub const WALL_CLOCK: &str = "sqe_wall_clock";

/// `sqe_wall_clock(ts)`: the zone-less timestamp (same unit) of `ts`'s local reading.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct WallClock {
    signature: Signature,
}

impl WallClock {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for WallClock {
    fn name(&self) -> &str {
        WALL_CLOCK
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [DataType::Timestamp(unit, Some(_))] => Ok(DataType::Timestamp(*unit, None)),
            _ => plan_err!("{WALL_CLOCK} takes a timestamp with time zone"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let Some(zoned) = columns.first() else {
            return exec_err!("{WALL_CLOCK} takes one argument");
        };
        let DataType::Timestamp(unit, Some(_)) = zoned.data_type() else {
            return exec_err!("{WALL_CLOCK} takes a timestamp with time zone");
        };
        let local_type = DataType::Timestamp(*unit, None);
        let (zoned_clock, local_clock) = (Clock::of(zoned.data_type())?, Clock::of(&local_type)?);
        let values = zoned_clock.values(zoned)?;
        let mut out = Int64Builder::with_capacity(values.len());
        for row in 0..values.len() {
            if values.is_null(row) {
                out.append_null();
                continue;
            }
            let reading = zoned_clock
                .local(values.value(row))
                .and_then(|local| local_clock.stored(local));
            match reading {
                Some(value) => out.append_value(value),
                None => return exec_err!("a timestamp outside the range of its type"),
            }
        }
        let readings: ArrayRef = Arc::new(out.finish());
        result(&args, cast(&readings, &local_type)?)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{AsArray, TimestampSecondArray};
    use datafusion::arrow::datatypes::{Field, TimestampSecondType};
    use datafusion::config::ConfigOptions;

    use super::*;

    #[test]
    fn the_local_reading_is_kept() -> Result<()> {
        // 2024-01-01 15:00 UTC is 10:00 in New York.
        let zoned: ArrayRef = Arc::new(
            TimestampSecondArray::from(vec![Some(1_704_121_200), None])
                .with_timezone("America/New_York"),
        );
        let f = WallClock::new();
        let return_type = f.return_type(&[zoned.data_type().clone()])?;
        let answer = f.invoke_with_args(ScalarFunctionArgs {
            arg_fields: vec![Arc::new(Field::new("x", zoned.data_type().clone(), true))],
            args: vec![ColumnarValue::Array(zoned)],
            number_rows: 2,
            return_field: Arc::new(Field::new("r", return_type, true)),
            config_options: Arc::new(ConfigOptions::default()),
        })?;
        let readings = answer.to_array(2)?;
        let readings = readings.as_primitive::<TimestampSecondType>();
        assert_eq!(
            readings.value(0),
            1_704_103_200,
            "2024-01-01 10:00 as a reading"
        );
        assert!(readings.is_null(1));
        assert_eq!(readings.timezone(), None);
        Ok(())
    }
}
