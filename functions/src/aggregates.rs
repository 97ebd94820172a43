//! Trino's aggregates where DataFusion's differ: `approx_percentile(x, percentage)` answers in
//! `x`'s own type, as Trino's does (DataFusion's `approx_percentile_cont` always answers a
//! double), from DataFusion's t-digest (Trino keeps a q-digest: both are estimates).

use std::sync::Arc;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue, plan_err};
use datafusion::functions_aggregate::approx_percentile_cont::approx_percentile_cont_udaf;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};

/// `approx_percentile(x, percentage)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct ApproxPercentile {
    signature: Signature,
}

impl ApproxPercentile {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    /// DataFusion's t-digest aggregate, which estimates over doubles.
    fn digest() -> Arc<AggregateUDF> {
        approx_percentile_cont_udaf()
    }
}

/// The inputs as DataFusion's aggregate takes them: the values as doubles.
fn as_doubles(fields: &[FieldRef]) -> Vec<FieldRef> {
    fields
        .iter()
        .map(|f| Arc::new(Field::new(f.name(), DataType::Float64, true)))
        .collect()
}

impl AggregateUDFImpl for ApproxPercentile {
    fn name(&self) -> &str {
        "approx_percentile"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    /// The values keep their type (the answer's); the percentage is a double.
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [value, percentage] if value.is_numeric() || value.is_null() => {
                if !(percentage.is_numeric() || percentage.is_null()) {
                    return plan_err!(
                        "approx_percentile takes a numeric percentage, not {percentage}"
                    );
                }
                let value = if value.is_null() {
                    DataType::Float64
                } else {
                    value.clone()
                };
                Ok(vec![value, DataType::Float64])
            }
            [value, _] => plan_err!("approx_percentile of {value}: it takes numbers"),
            _ => plan_err!(
                "approx_percentile takes a value and a percentage (weights and arrays of percentages are not supported)"
            ),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(value) => Ok(value.clone()),
            None => plan_err!("approx_percentile takes a value and a percentage"),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        let inputs = as_doubles(args.input_fields);
        Self::digest().state_fields(StateFieldsArgs {
            name: args.name,
            input_fields: &inputs,
            return_field: Arc::new(Field::new(args.name, DataType::Float64, true)),
            ordering_fields: args.ordering_fields,
            is_distinct: args.is_distinct,
        })
    }

    fn accumulator(&self, args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        let inputs = as_doubles(args.expr_fields);
        let inner = Self::digest().accumulator(AccumulatorArgs {
            return_field: Arc::new(Field::new(args.name, DataType::Float64, true)),
            expr_fields: &inputs,
            ..args
        })?;
        Ok(Box::new(InType {
            inner,
            answer: args.return_field.data_type().clone(),
        }))
    }
}

/// DataFusion's accumulator over the values as doubles, answering in the values' type.
#[derive(Debug)]
struct InType {
    inner: Box<dyn Accumulator>,
    answer: DataType,
}

impl Accumulator for InType {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let mut values = values.to_vec();
        if let Some(first) = values.first_mut() {
            *first = cast_with_options(first, &DataType::Float64, &CastOptions::default())?;
        }
        self.inner.update_batch(&values)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let estimate = self.inner.evaluate()?;
        if self.answer == DataType::Float64 {
            return Ok(estimate);
        }
        // An estimate between two integers rounds to the nearer (half away from zero), as a
        // cast to an integer does in Trino.
        let estimate = match estimate {
            ScalarValue::Float64(Some(v)) if self.answer.is_integer() => {
                ScalarValue::Float64(Some(v.round()))
            }
            other => other,
        };
        estimate.cast_to(&self.answer)
    }

    fn size(&self) -> usize {
        self.inner.size() + size_of::<Self>()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.inner.state()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.inner.merge_batch(states)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Float64Array, Int64Array};
    use datafusion::arrow::datatypes::Schema;
    use datafusion::physical_expr::PhysicalExpr;
    use datafusion::physical_expr::expressions::{Column, Literal};

    use super::*;

    /// The estimate of `percentile` over `values` of type `data_type`, as a plan computes it
    /// (partial accumulators merged into a final one).
    fn estimate(values: ArrayRef, percentile: f64) -> Result<ScalarValue> {
        let udaf = ApproxPercentile::new();
        let data_type = values.data_type().clone();
        let schema = Schema::new(vec![Field::new("x", data_type.clone(), true)]);
        let exprs: Vec<Arc<dyn PhysicalExpr>> = vec![
            Arc::new(Column::new("x", 0)),
            Arc::new(Literal::new(ScalarValue::Float64(Some(percentile)))),
        ];
        let fields: Vec<FieldRef> = vec![
            Arc::new(Field::new("x", data_type.clone(), true)),
            Arc::new(Field::new("p", DataType::Float64, false)),
        ];
        let return_type =
            udaf.return_type(&udaf.coerce_types(&[data_type.clone(), DataType::Float64])?)?;
        let args = || AccumulatorArgs {
            return_field: Arc::new(Field::new("approx_percentile", return_type.clone(), true)),
            schema: &schema,
            ignore_nulls: false,
            order_bys: &[],
            is_reversed: false,
            name: "approx_percentile",
            is_distinct: false,
            exprs: &exprs,
            expr_fields: &fields,
        };
        // Two partial aggregates, each over half the values, merged by the final one.
        let half = values.len() / 2;
        let mut states = Vec::new();
        for part in [
            values.slice(0, half),
            values.slice(half, values.len() - half),
        ] {
            let mut partial = udaf.accumulator(args())?;
            let percentiles: ArrayRef = Arc::new(Float64Array::from(vec![percentile; part.len()]));
            partial.update_batch(&[part, percentiles])?;
            states.push(partial.state()?);
        }
        let mut last = udaf.accumulator(args())?;
        let columns: Vec<ArrayRef> = (0..states[0].len())
            .map(|i| ScalarValue::iter_to_array(states.iter().map(|s| s[i].clone())))
            .collect::<Result<_>>()?;
        last.merge_batch(&columns)?;
        last.evaluate()
    }

    #[test]
    fn answers_in_the_values_type() -> Result<()> {
        let bigints: ArrayRef = Arc::new(Int64Array::from(
            (1..=1000).map(Some).chain([None]).collect::<Vec<_>>(),
        ));
        let ScalarValue::Int64(Some(median)) = estimate(Arc::clone(&bigints), 0.5)? else {
            return plan_err!("the median of bigints is not a bigint");
        };
        assert!((495..=506).contains(&median), "{median}");
        let doubles = cast_with_options(&bigints, &DataType::Float64, &CastOptions::default())?;
        let ScalarValue::Float64(Some(high)) = estimate(doubles, 0.9)? else {
            return plan_err!("the estimate over doubles is not a double");
        };
        assert!((890.0..=910.0).contains(&high), "{high}");
        let none: ArrayRef = Arc::new(Int64Array::from(vec![None, None]));
        assert_eq!(estimate(none, 0.5)?, ScalarValue::Int64(None));
        let refused = ApproxPercentile::new().coerce_types(&[DataType::Utf8, DataType::Float64]);
        assert!(refused.is_err());
        Ok(())
    }
}
