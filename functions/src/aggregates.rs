//! Trino's aggregates where DataFusion's differ: `approx_percentile(x[, weight], percentage)` (or
//! an array of percentages, answering an array) answers in
//! `x`'s own type, as Trino's does (DataFusion's `approx_percentile_cont` always answers a
//! double), from DataFusion's t-digest (Trino keeps a q-digest: both are estimates); `avg` of a
//! `decimal(p,s)` answers a `decimal(p,s)` rounded half up, as Trino's does (DataFusion's answers
//! a wider `decimal(p+4,s+4)` whose last digit is truncated: `avg(l_discount)` over TPC-H's
//! `decimal(15,2)` is `0.050144` for a mean of 0.0501446, where Trino says `0.05`).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray};
use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue, plan_err};
use datafusion::functions_aggregate::approx_percentile_cont::{
    ApproxPercentileAccumulator, approx_percentile_cont_udaf,
};
use datafusion::functions_aggregate::approx_percentile_cont_with_weight::ApproxPercentileWithWeightAccumulator;
use datafusion::functions_aggregate::average::avg_udaf;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::type_coercion::functions::fields_with_udf;
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, ReversedUDAF,
    Signature, Volatility,
};
use datafusion_functions_aggregate_common::tdigest::TDigest;

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

    /// The values keep their type (the answer's); a weight is a bigint; the percentage is a
    /// double, or an array of them.
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let (value, weight, percentage) = match arg_types {
            [value, percentage] => (value, None, percentage),
            [value, weight, percentage] => (value, Some(weight), percentage),
            _ => {
                return plan_err!(
                    "approx_percentile takes a value, an optional weight and a percentage or an array of them"
                );
            }
        };
        if !(value.is_numeric() || value.is_null()) {
            return plan_err!("approx_percentile of {value}: it takes numbers");
        }
        let value = if value.is_null() {
            DataType::Float64
        } else {
            value.clone()
        };
        let percentage = match percentage {
            DataType::List(item) if item.data_type().is_numeric() || item.data_type().is_null() => {
                DataType::new_list(DataType::Float64, true)
            }
            p if p.is_numeric() || p.is_null() => DataType::Float64,
            other => {
                return plan_err!(
                    "approx_percentile takes a numeric percentage or an array of them, not {other}"
                );
            }
        };
        match weight {
            None => Ok(vec![value, percentage]),
            Some(w) if w.is_integer() || w.is_null() => {
                Ok(vec![value, DataType::Int64, percentage])
            }
            Some(w) => plan_err!("approx_percentile takes an integer weight, not {w}"),
        }
    }

    /// The value's type; an array of it for an array of percentages.
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match (arg_types.first(), arg_types.last()) {
            (Some(value), Some(DataType::List(_))) => Ok(DataType::new_list(value.clone(), true)),
            (Some(value), _) => Ok(value.clone()),
            _ => plan_err!("approx_percentile takes a value and a percentage"),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        // One digest, whatever the percentages: its state is that of one percentage's.
        let inputs: Vec<FieldRef> = as_doubles(args.input_fields)
            .into_iter()
            .take(1)
            .chain(std::iter::once(Arc::new(Field::new(
                "percentage",
                DataType::Float64,
                true,
            ))))
            .collect();
        Self::digest().state_fields(StateFieldsArgs {
            name: args.name,
            input_fields: &inputs,
            return_field: Arc::new(Field::new(args.name, DataType::Float64, true)),
            ordering_fields: args.ordering_fields,
            is_distinct: args.is_distinct,
        })
    }

    fn accumulator(&self, args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        let weighted = args.exprs.len() == 3;
        let listed = match args.return_field.data_type() {
            DataType::List(item) => Some(item.data_type().clone()),
            _ => None,
        };
        if listed.is_some() || weighted {
            let percentages = constant_percentages(args.exprs.last())?;
            // The digest's own percentage is never asked: each is estimated from its state.
            let digest = ApproxPercentileAccumulator::new(0.5, DataType::Float64);
            let digest: Box<dyn Accumulator> = if weighted {
                Box::new(ApproxPercentileWithWeightAccumulator::new(digest))
            } else {
                Box::new(digest)
            };
            return Ok(Box::new(Percentiles {
                digest,
                percentages,
                answer: listed
                    .clone()
                    .unwrap_or_else(|| args.return_field.data_type().clone()),
                weighted,
                listed: listed.is_some(),
            }));
        }
        let inputs = as_doubles(args.expr_fields);
        let inner = Self::digest().accumulator(AccumulatorArgs {
            return_field: Arc::new(Field::new(args.name, DataType::Float64, true)),
            expr_fields: &inputs,
            ..args
        })?;
        Ok(Box::new(AnswerInType {
            inner,
            answer: args.return_field.data_type().clone(),
            values_as_doubles: true,
        }))
    }
}

/// The percentages, each from 0 to 1: a constant (or an array of them), as Trino requires.
fn constant_percentages(
    expr: Option<&Arc<dyn datafusion::physical_expr::PhysicalExpr>>,
) -> Result<Vec<f64>> {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::Float64Type;
    let literal =
        expr.and_then(|e| e.downcast_ref::<datafusion::physical_expr::expressions::Literal>());
    let values = match literal.map(|l| l.value()) {
        Some(ScalarValue::List(list)) if !list.is_empty() && !list.is_null(0) => list.value(0),
        Some(ScalarValue::List(_)) => {
            return Err(crate::error::invalid_argument("Percentiles cannot be null"));
        }
        Some(scalar) => scalar.to_array()?,
        None => return plan_err!("approx_percentile's percentage must be a constant"),
    };
    let values = cast_with_options(&values, &DataType::Float64, &CastOptions::default())?;
    let values = values.as_primitive::<Float64Type>();
    (0..values.len())
        .map(|i| {
            if values.is_null(i) {
                return Err(crate::error::invalid_argument("Percentile cannot be null"));
            }
            let p = values.value(i);
            if (0.0..=1.0).contains(&p) {
                Ok(p)
            } else {
                Err(crate::error::invalid_argument(
                    "Percentile must be between 0 and 1",
                ))
            }
        })
        .collect()
}

/// `approx_percentile(x, ARRAY[p, …])` and `approx_percentile(x, w, p)`: one t-digest (weighted
/// or not), each percentage estimated from it.
#[derive(Debug)]
struct Percentiles {
    digest: Box<dyn Accumulator>,
    percentages: Vec<f64>,
    /// The type of each answer.
    answer: DataType,
    /// Values come with a weight (a bigint, at least 1).
    weighted: bool,
    /// The answer is an array (of percentages), not one value.
    listed: bool,
}

impl Accumulator for Percentiles {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let taken = if self.weighted { 2 } else { 1 };
        let mut values = doubles(&values[..taken.min(values.len())])?;
        if let Some(weights) = values.get_mut(1) {
            use datafusion::arrow::array::AsArray;
            use datafusion::arrow::datatypes::Int64Type;
            if weights
                .as_primitive::<Int64Type>()
                .iter()
                .flatten()
                .any(|w| w < 1)
            {
                return Err(crate::error::invalid_argument(
                    "approx_percentile's weight must be at least 1",
                ));
            }
            *weights = cast_with_options(weights, &DataType::Float64, &CastOptions::default())?;
        }
        self.digest.update_batch(&values)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let digest = TDigest::from_scalar_state(&self.digest.state()?);
        if digest.count() == 0.0 {
            let answer = if self.listed {
                DataType::new_list(self.answer.clone(), true)
            } else {
                self.answer.clone()
            };
            return ScalarValue::try_from(answer);
        }
        let answers = self
            .percentages
            .iter()
            .map(|p| estimate_in_type(digest.estimate_quantile(*p), &self.answer))
            .collect::<Result<Vec<_>>>()?;
        match (self.listed, answers.as_slice()) {
            (true, _) => Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                &answers,
                &self.answer,
            ))),
            (false, [answer]) => Ok(answer.clone()),
            (false, _) => plan_err!("approx_percentile takes one percentage or an array of them"),
        }
    }

    fn size(&self) -> usize {
        self.digest.size() + size_of::<Self>()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.digest.state()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.digest.merge_batch(states)
    }
}

/// A t-digest's estimate in the aggregate's type. An estimate between two integers rounds to
/// the nearer (half away from zero), as a cast to an integer does in Trino.
fn estimate_in_type(estimate: f64, answer: &DataType) -> Result<ScalarValue> {
    let estimate = if answer.is_integer() {
        estimate.round()
    } else {
        estimate
    };
    cast_answer(ScalarValue::Float64(Some(estimate)), answer)
}

/// DataFusion's `avg` answering a decimal argument in the argument's own type, as Trino's, and
/// a `real`'s average (computed in double) as a `real`.
/// DataFusion's accumulators compute in their wider type; each answer is cast to the
/// argument's, which rounds half away from zero (rounding the truncated value rounds the exact
/// one: the rounding boundary has fewer digits than the truncation kept). Being the aggregate
/// itself, not a cast above it, the type holds wherever it is used: a `HAVING` condition (where
/// DataFusion's optimizer could otherwise compare the unrounded value), `typeof`, a window.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Average {
    inner: Arc<AggregateUDF>,
    /// User-defined: [`coerce_keeping_real`].
    signature: Signature,
}

impl Average {
    pub(crate) fn new() -> Self {
        Self {
            inner: avg_udaf(),
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    /// Trino's type for an argument of type `argument`, where it is not DataFusion's.
    fn trino_type(argument: &DataType) -> Option<DataType> {
        matches!(
            argument,
            DataType::Decimal128(..) | DataType::Decimal256(..)
        )
        .then(|| argument.clone())
    }

    /// The type DataFusion's accumulators answer in for `argument`.
    fn computed_type(&self, argument: &DataType) -> Result<DataType> {
        self.inner.return_type(std::slice::from_ref(argument))
    }

    fn computed_field(&self, name: &str, fields: &[FieldRef]) -> Result<FieldRef> {
        let Some(argument) = fields.first() else {
            return plan_err!("{} takes one value", self.inner.name());
        };
        Ok(Arc::new(Field::new(
            name,
            self.computed_type(argument.data_type())?,
            true,
        )))
    }

    /// `inner` answering in `answer`: cast when its own type differs.
    fn answering(
        inner: Box<dyn Accumulator>,
        computed: &FieldRef,
        answer: &FieldRef,
    ) -> Box<dyn Accumulator> {
        if computed.data_type() == answer.data_type() {
            return inner;
        }
        Box::new(AnswerInType {
            inner,
            answer: answer.data_type().clone(),
            values_as_doubles: false,
        })
    }
}

impl AggregateUDFImpl for Average {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerce_keeping_real(&self.inner, arg_types)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if of_real(arg_types) {
            return Ok(DataType::Float32);
        }
        match arg_types {
            [argument] => match Self::trino_type(argument) {
                Some(trino) => Ok(trino),
                None => self.inner.return_type(arg_types),
            },
            _ => self.inner.return_type(arg_types),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        if *args.return_field.data_type() == DataType::Float32 {
            return real_state_fields(&self.inner, args);
        }
        self.inner.state_fields(StateFieldsArgs {
            return_field: self.computed_field(args.name, args.input_fields)?,
            ..args
        })
    }

    fn accumulator(&self, args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        if *args.return_field.data_type() == DataType::Float32 {
            return real_accumulator(&self.inner, args, false);
        }
        let computed = self.computed_field(args.name, args.expr_fields)?;
        let inner = self.inner.accumulator(AccumulatorArgs {
            return_field: Arc::clone(&computed),
            ..args
        })?;
        Ok(Self::answering(inner, &computed, &args.return_field))
    }

    fn create_sliding_accumulator(
        &self,
        args: AccumulatorArgs<'_>,
    ) -> Result<Box<dyn Accumulator>> {
        if *args.return_field.data_type() == DataType::Float32 {
            return real_accumulator(&self.inner, args, true);
        }
        let computed = self.computed_field(args.name, args.expr_fields)?;
        let inner = self.inner.create_sliding_accumulator(AccumulatorArgs {
            return_field: Arc::clone(&computed),
            ..args
        })?;
        Ok(Self::answering(inner, &computed, &args.return_field))
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs<'_>) -> bool {
        // A real's average goes row by row (its values need a cast first).
        if *args.return_field.data_type() == DataType::Float32 {
            return false;
        }
        let Ok(return_field) = self.computed_field(args.name, args.expr_fields) else {
            return false;
        };
        self.inner.groups_accumulator_supported(AccumulatorArgs {
            return_field,
            ..args
        })
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs<'_>,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        let computed = self.computed_field(args.name, args.expr_fields)?;
        let inner = self.inner.create_groups_accumulator(AccumulatorArgs {
            return_field: Arc::clone(&computed),
            ..args
        })?;
        if computed.data_type() == args.return_field.data_type() {
            return Ok(inner);
        }
        Ok(Box::new(GroupsInType {
            inner,
            answer: args.return_field.data_type().clone(),
        }))
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }
}

/// An answer of DataFusion's type in the aggregate's.
fn cast_answer(answer: ScalarValue, to: &DataType) -> Result<ScalarValue> {
    if answer.data_type() == *to {
        Ok(answer)
    } else {
        answer.cast_to(to)
    }
}

/// DataFusion's accumulator answering in the aggregate's type. An estimate between two integers
/// rounds to the nearer (half away from zero), as a cast to an integer does in Trino.
#[derive(Debug)]
struct AnswerInType {
    inner: Box<dyn Accumulator>,
    answer: DataType,
    /// The values go in as doubles (DataFusion's t-digest takes only those).
    values_as_doubles: bool,
}

impl Accumulator for AnswerInType {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if !self.values_as_doubles {
            return self.inner.update_batch(values);
        }
        self.inner.update_batch(&doubles(values)?)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        match self.inner.evaluate()? {
            ScalarValue::Float64(Some(v)) => estimate_in_type(v, &self.answer),
            other => cast_answer(other, &self.answer),
        }
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

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if !self.values_as_doubles {
            return self.inner.retract_batch(values);
        }
        self.inner.retract_batch(&doubles(values)?)
    }

    fn supports_retract_batch(&self) -> bool {
        self.inner.supports_retract_batch()
    }
}

/// `values` with the first (the aggregated values) as doubles.
fn doubles(values: &[ArrayRef]) -> Result<Vec<ArrayRef>> {
    let mut values = values.to_vec();
    if let Some(first) = values.first_mut() {
        *first = cast_with_options(first, &DataType::Float64, &CastOptions::default())?;
    }
    Ok(values)
}

/// Whether an aggregate of `arg_types` is one of a `real` (Trino's `sum` and `avg` of it
/// compute in double and answer a `real`; DataFusion's answer the double).
pub(crate) fn of_real(arg_types: &[DataType]) -> bool {
    matches!(arg_types, [DataType::Float32])
}

/// The coercion of `inner` (DataFusion's `sum` or `avg`, whose signatures turn a `real` into a
/// double before the answer's type is known), keeping a `real` as it is.
pub(crate) fn coerce_keeping_real(
    inner: &AggregateUDF,
    arg_types: &[DataType],
) -> Result<Vec<DataType>> {
    if of_real(arg_types) {
        return Ok(arg_types.to_vec());
    }
    let fields: Vec<FieldRef> = arg_types
        .iter()
        .map(|t| Arc::new(Field::new(inner.name(), t.clone(), true)))
        .collect();
    // DataFusion's refusal is an internal error listing each signature's complaint.
    let coerced = fields_with_udf(&fields, inner)
        .map_err(|_| crate::args::unexpected_parameters(inner.name(), arg_types, "(a number)"))?;
    Ok(coerced.iter().map(|f| f.data_type().clone()).collect())
}

/// The state of `inner` aggregating a `real` as doubles.
pub(crate) fn real_state_fields(
    inner: &AggregateUDF,
    args: StateFieldsArgs<'_>,
) -> Result<Vec<FieldRef>> {
    let inputs = as_doubles(args.input_fields);
    inner.state_fields(StateFieldsArgs {
        input_fields: &inputs,
        return_field: Arc::new(Field::new(args.name, DataType::Float64, true)),
        ..args
    })
}

/// `inner`'s accumulator (its sliding one for a window frame) over a `real`'s values as
/// doubles, answering a `real`.
pub(crate) fn real_accumulator(
    inner: &AggregateUDF,
    args: AccumulatorArgs<'_>,
    sliding: bool,
) -> Result<Box<dyn Accumulator>> {
    let inputs = as_doubles(args.expr_fields);
    let computing = AccumulatorArgs {
        return_field: Arc::new(Field::new(args.name, DataType::Float64, true)),
        expr_fields: &inputs,
        ..args
    };
    let inner = if sliding {
        inner.create_sliding_accumulator(computing)?
    } else {
        inner.accumulator(computing)?
    };
    Ok(Box::new(AnswerInType {
        inner,
        answer: DataType::Float32,
        values_as_doubles: true,
    }))
}

/// DataFusion's groups accumulator, answering in the aggregate's type.
struct GroupsInType {
    inner: Box<dyn GroupsAccumulator>,
    answer: DataType,
}

impl GroupsAccumulator for GroupsInType {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.inner
            .update_batch(values, group_indices, opt_filter, total_num_groups)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let answers = self.inner.evaluate(emit_to)?;
        if *answers.data_type() == self.answer {
            return Ok(answers);
        }
        Ok(cast_with_options(
            &answers,
            &self.answer,
            &CastOptions::default(),
        )?)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        self.inner.state(emit_to)
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.inner
            .merge_batch(values, group_indices, opt_filter, total_num_groups)
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        self.inner.convert_to_state(values, opt_filter)
    }

    fn supports_convert_to_state(&self) -> bool {
        self.inner.supports_convert_to_state()
    }

    fn size(&self) -> usize {
        self.inner.size() + size_of::<Self>()
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
