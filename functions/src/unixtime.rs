//! Trino's `from_unixtime`: seconds since the epoch as a `timestamp(3) with time zone`, in the
//! session's zone (or the zone given); a fraction of a second is kept to the millisecond.
//! DataFusion's answers a zone-less timestamp of whole seconds. `from_unixtime_nanos`: an
//! integer of nanoseconds since the epoch as a `timestamp(9) with time zone` in the session's
//! zone.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, AsArray, TimestampMillisecondArray, TimestampNanosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Field, FieldRef, Float64Type, Int64Type, TimeUnit, TimestampNanosecondType,
};
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, is_integer, is_string, result};
use crate::error::invalid_argument;

/// `from_unixtime(seconds [, zone])` (the dialect writes Trino's `hours, minutes` as a zone).
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct FromUnixtime {
    /// The zone of the one-argument form: the session's.
    session_zone: String,
    signature: Signature,
}

impl FromUnixtime {
    pub(crate) fn new(session_zone: &str) -> Self {
        Self {
            session_zone: session_zone.to_string(),
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    /// The zone of the answer: the session's, or a constant zone name.
    fn zone(&self, constants: &[Option<&ScalarValue>]) -> Result<String> {
        match constants {
            [_] => Ok(self.session_zone.clone()),
            [_, zone] => crate::zones::constant_zone("from_unixtime", *zone),
            _ => plan_err!("from_unixtime takes seconds and a zone"),
        }
    }
}

/// Milliseconds since the epoch of `seconds`, rounded as Java's `Math.round` (Trino's): half
/// toward positive infinity.
fn millis(seconds: f64) -> Result<i64> {
    let exact = seconds * 1000.0;
    let mut millis = exact.round();
    if exact < 0.0 && millis - exact == -0.5 {
        millis += 1.0;
    }
    // Within i64 (2^63 is exactly representable; anything at or past it is out).
    if millis.is_finite() && millis.abs() < 9.223_372_036_854_776e18 {
        Ok(millis as i64)
    } else {
        Err(invalid_argument(format!("Invalid unixtime: {seconds}")))
    }
}

impl ScalarUDFImpl for FromUnixtime {
    fn name(&self) -> &str {
        "from_unixtime"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let seconds = match arg_types.first() {
            Some(t) if is_integer(t) => DataType::Int64,
            Some(t) if t.is_numeric() || t.is_null() => DataType::Float64,
            _ => {
                return plan_err!(
                    "from_unixtime takes a number of seconds, not ({})",
                    crate::args::type_names(arg_types)
                );
            }
        };
        // The zone's arguments keep their types: a cast around a constant would hide it from
        // the answer's type.
        match arg_types {
            [_] => Ok(vec![seconds]),
            [_, zone] if is_string(zone) => Ok(vec![seconds, zone.clone()]),
            _ => plan_err!(
                "from_unixtime takes seconds and a zone, not ({})",
                crate::args::type_names(arg_types)
            ),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Timestamp(
            TimeUnit::Millisecond,
            Some(self.session_zone.as_str().into()),
        ))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let zone = self.zone(args.scalar_arguments)?;
        Ok(Arc::new(Field::new(
            self.name(),
            DataType::Timestamp(TimeUnit::Millisecond, Some(zone.into())),
            true,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        // The zone was fixed when the plan was made (on the coordinator): the answer's type.
        let DataType::Timestamp(TimeUnit::Millisecond, Some(zone)) =
            args.return_field.data_type().clone()
        else {
            return exec_err!("from_unixtime answers a timestamp(3) with time zone");
        };
        let columns = arrays(&args)?;
        let Some(seconds) = columns.first() else {
            return exec_err!("from_unixtime takes 1 to 3 arguments");
        };
        let values: TimestampMillisecondArray = match seconds.data_type() {
            DataType::Int64 => seconds.as_primitive::<Int64Type>().try_unary(|s| {
                s.checked_mul(1000).ok_or_else(|| {
                    datafusion::arrow::error::ArrowError::ArithmeticOverflow(format!(
                        "Invalid unixtime: {s}"
                    ))
                })
            })?,
            _ => {
                let doubles = cast(seconds, &DataType::Float64)?;
                let doubles = doubles.as_primitive::<Float64Type>();
                let mut out = Vec::with_capacity(doubles.len());
                for i in 0..doubles.len() {
                    out.push(
                        (!doubles.is_null(i))
                            .then(|| millis(doubles.value(i)))
                            .transpose()?,
                    );
                }
                TimestampMillisecondArray::from(out)
            }
        };
        result(&args, Arc::new(values.with_timezone(zone)))
    }
}

/// `from_unixtime_nanos(nanoseconds)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct FromUnixtimeNanos {
    session_zone: String,
    signature: Signature,
}

impl FromUnixtimeNanos {
    pub(crate) fn new(session_zone: &str) -> Self {
        Self {
            session_zone: session_zone.to_string(),
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for FromUnixtimeNanos {
    fn name(&self) -> &str {
        "from_unixtime_nanos"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [t] if is_integer(t) => Ok(vec![DataType::Int64]),
            _ => Err(crate::args::unexpected_parameters(
                self.name(),
                arg_types,
                "(bigint)",
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Timestamp(
            TimeUnit::Nanosecond,
            Some(self.session_zone.as_str().into()),
        ))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [nanos] = columns.as_slice() else {
            return exec_err!("from_unixtime_nanos takes one argument");
        };
        let nanos = cast(nanos, &DataType::Int64)?;
        let values: TimestampNanosecondArray = nanos
            .as_primitive::<Int64Type>()
            .reinterpret_cast::<TimestampNanosecondType>()
            .with_timezone(self.session_zone.as_str());
        result(&args, Arc::new(values))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_of_a_second_round_to_the_millisecond() -> Result<()> {
        assert_eq!(millis(1.5)?, 1500);
        assert_eq!(millis(0.0015)?, 2);
        assert_eq!(millis(-1.25)?, -1250);
        assert_eq!(
            millis(-0.0025)?,
            -2,
            "-2.5 ms rounds up, as Java's Math.round"
        );
        assert!(millis(f64::NAN).is_err() && millis(1e300).is_err());
        Ok(())
    }

    #[test]
    fn the_zone_is_the_sessions_or_the_one_given() -> Result<()> {
        let f = FromUnixtime::new("Europe/Paris");
        let seconds = ScalarValue::Int64(Some(0));
        assert_eq!(f.zone(&[Some(&seconds)])?, "Europe/Paris");
        let named = ScalarValue::Utf8(Some("Asia/Tokyo".into()));
        assert_eq!(f.zone(&[Some(&seconds), Some(&named)])?, "Asia/Tokyo");
        assert!(f.zone(&[Some(&seconds), None]).is_err(), "a zone per row");
        let bad = ScalarValue::Utf8(Some("Mars/Olympus".into()));
        assert!(f.zone(&[Some(&seconds), Some(&bad)]).is_err());
        Ok(())
    }
}
