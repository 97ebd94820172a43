//! Trino's `at_timezone(ts, zone)` (the same instant, read in another zone) and
//! `with_timezone(ts, zone)` (a zone-less timestamp's wall-clock reading, placed in a zone).
//! The zone must be a constant: it is part of the answer's type, `timestamp(p) with time zone`.
//! `timezone_hour(ts)` and `timezone_minute(ts)` read the offset a zoned timestamp has at its
//! instant.

use std::sync::Arc;

use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{Array, Int64Builder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue, exec_err, not_impl_err, plan_err};
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility, lit,
};

use crate::args::{arrays, is_string, result};
use crate::datetime::Clock;
use crate::error::invalid_argument;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Placing {
    /// `at_timezone`: a zoned timestamp keeps its instant (a zone-less one is first read in
    /// the session's zone, as Trino's implicit cast does).
    SameInstant,
    /// `with_timezone`: a zone-less timestamp keeps its wall-clock reading.
    SameWallClock,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct ZonePlacing {
    placing: Placing,
    session_zone: String,
    signature: Signature,
}

impl ZonePlacing {
    pub(crate) fn at_timezone(session_zone: &str) -> Self {
        Self::new(Placing::SameInstant, session_zone)
    }

    pub(crate) fn with_timezone(session_zone: &str) -> Self {
        Self::new(Placing::SameWallClock, session_zone)
    }

    fn new(placing: Placing, session_zone: &str) -> Self {
        Self {
            placing,
            session_zone: session_zone.to_string(),
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    /// The zone the answer is in, and its type for a timestamp of type `from`.
    fn answer(&self, from: &DataType, zone: Option<&ScalarValue>) -> Result<DataType> {
        let DataType::Timestamp(unit, _) = from else {
            return plan_err!("{} takes a timestamp, not {from}", self.name());
        };
        let zone = constant_zone(self.name(), zone)?;
        Ok(DataType::Timestamp(*unit, Some(zone.into())))
    }
}

/// The zone `function` was given as a constant (`zone`; `None` when it is not one): a name
/// Trino knows. Arrow holds one zone per column, so a zone that differs from row to row is
/// NOT_SUPPORTED.
pub(crate) fn constant_zone(function: &str, zone: Option<&ScalarValue>) -> Result<String> {
    let zone = match zone {
        Some(
            ScalarValue::Utf8(Some(z))
            | ScalarValue::Utf8View(Some(z))
            | ScalarValue::LargeUtf8(Some(z)),
        ) => z.clone(),
        Some(_) => return plan_err!("{function}'s zone must be a time zone name, not NULL"),
        None => {
            return not_impl_err!(
                "{function} with a zone that differs from row to row (the zone must be a constant)"
            );
        }
    };
    zone.parse::<Tz>()
        .map_err(|_| invalid_argument(format!("Time zone not supported: {zone}")))?;
    Ok(zone)
}

impl ScalarUDFImpl for ZonePlacing {
    fn name(&self) -> &str {
        match self.placing {
            Placing::SameInstant => "at_timezone",
            Placing::SameWallClock => "with_timezone",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match (self.placing, arg_types) {
            // The zone keeps its type: a cast around a constant would hide it from the
            // answer's type.
            (Placing::SameInstant, [t @ DataType::Timestamp(..), z]) if is_string(z) => {
                Ok(vec![t.clone(), z.clone()])
            }
            (Placing::SameWallClock, [t @ DataType::Timestamp(_, None), z]) if is_string(z) => {
                Ok(vec![t.clone(), z.clone()])
            }
            _ => Err(crate::args::unexpected_parameters(
                self.name(),
                arg_types,
                match self.placing {
                    Placing::SameInstant => "(timestamp with time zone, varchar)",
                    Placing::SameWallClock => "(timestamp, varchar)",
                },
            )),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(DataType::Timestamp(unit, _)) => Ok(DataType::Timestamp(
                *unit,
                Some(self.session_zone.as_str().into()),
            )),
            _ => plan_err!("{} takes a timestamp", self.name()),
        }
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let Some(from) = args.arg_fields.first() else {
            return plan_err!("{} takes a timestamp and a zone", self.name());
        };
        let zone = args.scalar_arguments.get(1).copied().flatten();
        let answer = self.answer(from.data_type(), zone)?;
        Ok(Arc::new(Field::new(self.name(), answer, true)))
    }

    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        // Workers find `at_timezone` by name, made with UTC for the session's zone: here, on
        // the coordinator, a zone-less timestamp is placed in the session's zone first
        // (`with_timezone` with the zone written in), so what runs anywhere reads a zoned one.
        let [timestamp, zone] = args.as_slice() else {
            return Ok(ExprSimplifyResult::Original(args));
        };
        if self.placing != Placing::SameInstant
            || !matches!(
                info.get_data_type(timestamp),
                Ok(DataType::Timestamp(_, None))
            )
        {
            return Ok(ExprSimplifyResult::Original(args));
        }
        let placed = ScalarUDF::new_from_impl(Self::with_timezone(&self.session_zone))
            .call(vec![timestamp.clone(), lit(self.session_zone.clone())]);
        Ok(ExprSimplifyResult::Simplified(
            ScalarUDF::new_from_impl(Self::at_timezone(&self.session_zone))
                .call(vec![placed, zone.clone()]),
        ))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let answer = args.return_field.data_type().clone();
        let columns = arrays(&args)?;
        let Some(timestamps) = columns.first() else {
            return exec_err!("{} takes a timestamp and a zone", self.name());
        };
        let from = timestamps.data_type().clone();
        // A zoned value keeps its instant: the stored values are the answer's as they are.
        let reading = match (&from, self.placing) {
            (DataType::Timestamp(_, Some(_)), _) => {
                return result(&args, cast(timestamps, &answer)?);
            }
            // A zone-less reading is placed in the session's zone (at_timezone), or in the
            // answer's (with_timezone).
            (DataType::Timestamp(unit, None), Placing::SameInstant) => {
                DataType::Timestamp(*unit, Some(self.session_zone.as_str().into()))
            }
            _ => answer.clone(),
        };
        let (wall, placed) = (Clock::of(&from)?, Clock::of(&reading)?);
        let values = wall.values(timestamps)?;
        let mut out = Int64Builder::with_capacity(values.len());
        for i in 0..values.len() {
            if values.is_null(i) {
                out.append_null();
                continue;
            }
            let stored = wall
                .local(values.value(i))
                .and_then(|local| placed.stored(local))
                .ok_or_else(|| {
                    invalid_argument(format!(
                        "{}: the local time does not exist in {reading}",
                        self.name()
                    ))
                })?;
            out.append_value(stored);
        }
        let stored: Arc<dyn Array> = Arc::new(out.finish());
        result(&args, cast(&cast(&stored, &reading)?, &answer)?)
    }
}

/// `timezone_hour(ts)` or `timezone_minute(ts)` of a `timestamp(p) with time zone`: its zone's
/// offset from UTC at its instant, in whole hours and the minutes beyond them, both with the
/// offset's sign (`-05:30` is -5 and -30), as `bigint`s.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct ZoneOffsetField {
    hours: bool,
    signature: Signature,
}

impl ZoneOffsetField {
    pub(crate) fn hours() -> Self {
        Self::new(true)
    }

    pub(crate) fn minutes() -> Self {
        Self::new(false)
    }

    fn new(hours: bool) -> Self {
        Self {
            hours,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ZoneOffsetField {
    fn name(&self) -> &str {
        if self.hours {
            "timezone_hour"
        } else {
            "timezone_minute"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [t @ DataType::Timestamp(_, Some(_))] => Ok(vec![t.clone()]),
            _ => Err(crate::args::unexpected_parameters(
                self.name(),
                arg_types,
                "(timestamp(p) with time zone)",
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [timestamps] = columns.as_slice() else {
            return exec_err!("{} takes one argument", self.name());
        };
        let clock = Clock::of(timestamps.data_type())?;
        let values = clock.values(timestamps)?;
        let mut out = Int64Builder::with_capacity(values.len());
        for value in values.iter() {
            let minutes = value
                .and_then(|v| clock.offset_seconds(v))
                .map(|seconds| i64::from(seconds / 60));
            // Truncating division and remainder keep the offset's sign in both.
            out.append_option(minutes.map(|m| if self.hours { m / 60 } else { m % 60 }));
        }
        let answer: datafusion::arrow::array::ArrayRef = Arc::new(out.finish());
        result(&args, answer)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::{Schema, TimeUnit};
    use datafusion::common::DFSchema;
    use datafusion::logical_expr::col;

    use super::*;

    #[test]
    fn a_zone_less_timestamp_is_placed_in_the_session_zone_while_planning() -> Result<()> {
        let schema = Schema::new(vec![
            Field::new(
                "local",
                DataType::Timestamp(TimeUnit::Millisecond, None),
                true,
            ),
            Field::new(
                "zoned",
                DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
                true,
            ),
        ]);
        let info = SimplifyContext::builder()
            .with_schema(Arc::new(DFSchema::try_from(schema)?))
            .build();
        let at = ZonePlacing::at_timezone("America/New_York");
        // Written into the plan: workers make `at_timezone` with UTC for the session's zone.
        let ExprSimplifyResult::Simplified(placed) =
            at.simplify(vec![col("local"), lit("Asia/Tokyo")], &info)?
        else {
            panic!("a zone-less timestamp is placed");
        };
        assert_eq!(
            placed.to_string(),
            "at_timezone(with_timezone(local, Utf8(\"America/New_York\")), Utf8(\"Asia/Tokyo\"))"
        );
        // A zoned one keeps its instant wherever it runs.
        let kept = at.simplify(vec![col("zoned"), lit("Asia/Tokyo")], &info)?;
        assert!(matches!(kept, ExprSimplifyResult::Original(_)));
        Ok(())
    }
}
