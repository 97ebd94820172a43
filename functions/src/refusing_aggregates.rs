//! DataFusion's aggregate functions, wrapped as [`crate::refusing`] wraps its scalar ones: a
//! refusal of the arguments is Trino's `Unexpected parameters (varchar) for function stddev.
//! Expected: stddev(double)`, recorded for the engine as FUNCTION_NOT_FOUND, where DataFusion's
//! said `Failed to coerce arguments to satisfy a call to 'stddev' function: coercion from Utf8
//! …` (a generic user error, in Arrow's type names). Nothing else changes: every method of the
//! trait is forwarded to the wrapped function.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::expr::{
    AggregateFunction, AggregateFunctionParams, WindowFunctionParams,
};
use datafusion::logical_expr::function::{
    AccumulatorArgs, AggregateFunctionSimplification, StateFieldsArgs,
};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, Expr, GroupsAccumulator, Operator,
    ReversedUDAF, SetMonotonicity, Signature, StatisticsArgs,
};

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct RefusingAggregate {
    inner: Arc<AggregateUDF>,
    signature: Signature,
    /// The arguments it takes, as Trino writes them after the name.
    expected: String,
}

impl RefusingAggregate {
    fn of(inner: Arc<AggregateUDF>) -> Self {
        let expected =
            crate::refusing::expected_from(inner.name(), inner.signature(), inner.documentation());
        let signature = Signature::user_defined(inner.signature().volatility);
        Self {
            inner,
            signature,
            expected,
        }
    }

    fn wrapping(&self, inner: Arc<dyn AggregateUDFImpl>) -> Self {
        Self {
            inner: Arc::new(AggregateUDF::new_from_shared_impl(inner)),
            signature: self.signature.clone(),
            expected: self.expected.clone(),
        }
    }
}

#[warn(clippy::missing_trait_methods)] // Forwards, so it implements every method.
impl AggregateUDFImpl for RefusingAggregate {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn schema_name(&self, params: &AggregateFunctionParams) -> Result<String> {
        self.inner.inner().schema_name(params)
    }

    fn human_display(&self, params: &AggregateFunctionParams) -> Result<String> {
        self.inner.inner().human_display(params)
    }

    fn window_function_schema_name(&self, params: &WindowFunctionParams) -> Result<String> {
        self.inner.inner().window_function_schema_name(params)
    }

    fn display_name(&self, params: &AggregateFunctionParams) -> Result<String> {
        self.inner.inner().display_name(params)
    }

    fn window_function_display_name(&self, params: &WindowFunctionParams) -> Result<String> {
        self.inner.inner().window_function_display_name(params)
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.inner().return_type(arg_types)
    }

    fn return_field(&self, arg_fields: &[FieldRef]) -> Result<FieldRef> {
        self.inner.inner().return_field(arg_fields)
    }

    fn is_nullable(&self) -> bool {
        self.inner.inner().is_nullable()
    }

    fn accumulator(&self, acc_args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        self.inner.inner().accumulator(acc_args)
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        self.inner.inner().state_fields(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs<'_>) -> bool {
        self.inner.inner().groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs<'_>,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        self.inner.inner().create_groups_accumulator(args)
    }

    fn create_sliding_accumulator(
        &self,
        args: AccumulatorArgs<'_>,
    ) -> Result<Box<dyn Accumulator>> {
        self.inner.inner().create_sliding_accumulator(args)
    }

    fn with_beneficial_ordering(
        self: Arc<Self>,
        beneficial_ordering: bool,
    ) -> Result<Option<Arc<dyn AggregateUDFImpl>>> {
        let ordered =
            Arc::clone(self.inner.inner()).with_beneficial_ordering(beneficial_ordering)?;
        Ok(ordered.map(|inner| Arc::new(self.wrapping(inner)) as Arc<dyn AggregateUDFImpl>))
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        self.inner.inner().order_sensitivity()
    }

    fn simplify(&self) -> Option<AggregateFunctionSimplification> {
        self.inner.inner().simplify()
    }

    fn simplify_expr_op_literal(
        &self,
        agg_function: &AggregateFunction,
        arg: &Expr,
        op: Operator,
        lit: &Expr,
        arg_is_left: bool,
    ) -> Result<Option<Expr>> {
        self.inner
            .inner()
            .simplify_expr_op_literal(agg_function, arg, op, lit, arg_is_left)
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        self.inner.inner().reverse_expr()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        crate::refusing::coerced_or_refused(self.inner.as_ref(), arg_types, &self.expected)
    }

    fn is_descending(&self) -> Option<bool> {
        self.inner.inner().is_descending()
    }

    fn value_from_stats(&self, statistics_args: &StatisticsArgs<'_>) -> Option<ScalarValue> {
        self.inner.inner().value_from_stats(statistics_args)
    }

    fn default_value(&self, data_type: &DataType) -> Result<ScalarValue> {
        self.inner.inner().default_value(data_type)
    }

    fn supports_null_handling_clause(&self) -> bool {
        self.inner.inner().supports_null_handling_clause()
    }

    fn supports_within_group_clause(&self) -> bool {
        self.inner.inner().supports_within_group_clause()
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.inner().documentation()
    }

    fn set_monotonicity(&self, data_type: &DataType) -> SetMonotonicity {
        self.inner.inner().set_monotonicity(data_type)
    }
}

/// DataFusion's aggregates left as they are: those that take any argument (nothing to refuse)
/// and those its planner treats by name or builds itself (`count(*)`, `GROUPING`).
const UNWRAPPED: &[&str] = &[
    "count",
    "grouping",
    "array_agg",
    "first_value",
    "last_value",
    "nth_value",
    "min",
    "max",
];

/// Every default aggregate of DataFusion that SQE does not replace (by name or alias:
/// `replaced`), refusing arguments in Trino's words.
pub(crate) fn refusing_default_aggregates(replaced: &HashSet<String>) -> Vec<RefusingAggregate> {
    datafusion::functions_aggregate::all_default_aggregate_functions()
        .into_iter()
        .filter(|f| {
            !UNWRAPPED.contains(&f.name())
                && !replaced.contains(f.name())
                && !f.aliases().iter().any(|a| replaced.contains(a))
        })
        .map(RefusingAggregate::of)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_aggregate_refuses_in_trinos_words_and_coerces_as_before() -> Result<()> {
        let all = refusing_default_aggregates(&HashSet::new());
        let stddev = all
            .iter()
            .find(|f| f.name() == "stddev")
            .ok_or_else(|| datafusion::error::DataFusionError::Plan("no stddev".into()))?;
        let refused = stddev
            .coerce_types(&[DataType::Utf8])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            refused
                .contains("Unexpected parameters (varchar) for function stddev. Expected: stddev("),
            "{refused}"
        );
        assert_eq!(
            stddev.coerce_types(&[DataType::Int32])?,
            vec![DataType::Float64]
        );
        assert!(all.iter().all(|f| !UNWRAPPED.contains(&f.name())));
        Ok(())
    }
}
