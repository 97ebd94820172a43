//! Trino's `lag(x, offset, default)` and `lead(x, offset, default)`: `lag(T, bigint, T)`, so
//! the value and the default take their common type and the answer has it. DataFusion's cast
//! the default to the value's type: `lag(x, 1, 0.5)` of an integer answered 0, a silently
//! different value, and a default too wide for a decimal failed as an internal error. These
//! wrap DataFusion's own functions and only choose the argument types; the analyzer's type
//! coercion casts the arguments and keeps the window expression's name, so the plan above it
//! still finds it.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::Result;
use datafusion::logical_expr::function::ExpressionArgs;
use datafusion::logical_expr::function::{PartitionEvaluatorArgs, WindowUDFFieldArgs};
use datafusion::logical_expr::type_coercion::binary::type_union_resolution;
use datafusion::logical_expr::{
    LimitEffect, PartitionEvaluator, ReversedUDWF, Signature, Volatility, WindowUDF, WindowUDFImpl,
};
use datafusion::physical_expr::PhysicalExpr;

use crate::args::{is_integer, is_string, unexpected_parameters};

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct WindowShift {
    inner: Arc<WindowUDF>,
    signature: Signature,
}

impl WindowShift {
    pub(crate) fn lag() -> Self {
        Self::new(datafusion::functions_window::lead_lag::lag_udwf())
    }

    pub(crate) fn lead() -> Self {
        Self::new(datafusion::functions_window::lead_lag::lead_udwf())
    }

    fn new(inner: Arc<WindowUDF>) -> Self {
        Self {
            inner,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// The common type of a value and its default, as Trino finds one: none between text and
/// numbers (DataFusion would compare them as text).
fn common_type(value: &DataType, default: &DataType) -> Option<DataType> {
    if value == default || *default == DataType::Null {
        return Some(value.clone());
    }
    if *value == DataType::Null {
        return Some(default.clone());
    }
    if is_string(value) != is_string(default) {
        return None;
    }
    type_union_resolution(&[value.clone(), default.clone()])
}

impl WindowUDFImpl for WindowShift {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let coerced = match arg_types {
            [value] => Some(vec![value.clone()]),
            [value, offset] if is_integer(offset) => Some(vec![value.clone(), DataType::Int64]),
            [value, offset, default] if is_integer(offset) => {
                common_type(value, default).map(|t| vec![t.clone(), DataType::Int64, t])
            }
            _ => None,
        };
        coerced.ok_or_else(|| {
            unexpected_parameters(self.name(), arg_types, "(T) | (T, bigint) | (T, bigint, T)")
        })
    }

    fn expressions(&self, expr_args: ExpressionArgs<'_>) -> Vec<Arc<dyn PhysicalExpr>> {
        self.inner.expressions(expr_args)
    }

    fn partition_evaluator(
        &self,
        partition_evaluator_args: PartitionEvaluatorArgs<'_>,
    ) -> Result<Box<dyn PartitionEvaluator>> {
        self.inner
            .partition_evaluator_factory(partition_evaluator_args)
    }

    fn field(&self, field_args: WindowUDFFieldArgs<'_>) -> Result<FieldRef> {
        self.inner.field(field_args)
    }

    fn reverse_expr(&self) -> ReversedUDWF {
        self.inner.reverse_expr()
    }

    fn limit_effect(&self, args: &[Arc<dyn PhysicalExpr>]) -> LimitEffect {
        self.inner.inner().limit_effect(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_and_its_default_take_their_common_type() -> Result<()> {
        let lag = WindowShift::lag();
        assert_eq!(
            lag.coerce_types(&[DataType::Int32, DataType::Int64, DataType::Decimal128(1, 1)])?,
            [
                DataType::Decimal128(11, 1),
                DataType::Int64,
                DataType::Decimal128(11, 1)
            ]
        );
        assert_eq!(
            lag.coerce_types(&[DataType::Decimal128(2, 1), DataType::Int32, DataType::Int32])?[0],
            DataType::Decimal128(11, 1)
        );
        assert_eq!(
            lag.coerce_types(&[DataType::Int16, DataType::Int32, DataType::Int32])?[0],
            DataType::Int32
        );
        assert_eq!(
            lag.coerce_types(&[DataType::Int32, DataType::Int32, DataType::Null])?[0],
            DataType::Int32
        );
        assert!(
            WindowShift::lead()
                .coerce_types(&[DataType::Int32, DataType::Int32, DataType::Utf8])
                .is_err()
        );
        Ok(())
    }
}
