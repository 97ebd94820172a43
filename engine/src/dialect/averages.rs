//! `avg` of a `decimal(p,s)` answers `decimal(p,s)`, rounded half up, as Trino's does.
//! DataFusion's answers a wider `decimal(p+4,s+4)` whose last digit is truncated, a value Trino
//! never gives (`avg(l_discount)` over TPC-H's `decimal(15,2)`: `0.050144` for a mean of
//! 0.0501446; Trino: `0.05`). Each such `avg` is cast back to its argument's type right above
//! its aggregate; Arrow's cast to a smaller scale rounds half away from zero, and rounding the
//! truncated value rounds the exact one (the rounding boundary has fewer digits than it kept).

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, Result};
use datafusion::logical_expr::expr::{AggregateFunction, Alias};
use datafusion::logical_expr::{Aggregate, Expr, ExprSchemable, LogicalPlan, Projection, cast};

/// `plan` with every decimal `avg` of an aggregation in its argument's type.
pub(super) fn decimal_averages_in_their_type(plan: LogicalPlan) -> Result<LogicalPlan> {
    if !plan.exists(|node| Ok(narrowed_outputs(node)?.is_some()))? {
        return Ok(plan);
    }
    plan.transform_up_with_subqueries(|node| {
        // Types flow up from a narrowed aggregate: each node's schema again, from its inputs.
        let node = match node {
            LogicalPlan::TableScan(_) | LogicalPlan::EmptyRelation(_) => node,
            other => other.recompute_schema()?,
        };
        let Some(narrowed) = narrowed_outputs(&node)? else {
            return Ok(Transformed::yes(node));
        };
        let schema = Arc::clone(node.schema());
        let exprs = schema
            .iter()
            .enumerate()
            .map(|(i, (qualifier, field))| {
                let column = Expr::Column(Column::from((qualifier, field)));
                match narrowed.iter().find(|(index, _)| *index == i) {
                    Some((_, data_type)) => cast(column, data_type.clone())
                        .alias_qualified(qualifier.cloned(), field.name()),
                    None => column,
                }
            })
            .collect();
        Projection::try_new(exprs, Arc::new(node))
            .map(|p| Transformed::yes(LogicalPlan::Projection(p)))
    })
    .map(|t| t.data)
}

/// For an aggregation, each output column (by position) that is an `avg` of a decimal wider
/// than its argument, with the argument's type; `None` when there is none.
fn narrowed_outputs(node: &LogicalPlan) -> Result<Option<Vec<(usize, DataType)>>> {
    let LogicalPlan::Aggregate(Aggregate {
        input,
        aggr_expr,
        schema,
        ..
    }) = node
    else {
        return Ok(None);
    };
    // The aggregate's outputs: its grouping columns (one per expression; grouping sets add an
    // internal id after them), then one per aggregate expression.
    let first = schema.fields().len() - aggr_expr.len();
    let mut narrowed = Vec::new();
    for (n, expr) in aggr_expr.iter().enumerate() {
        let call = match expr {
            Expr::Alias(Alias { expr, .. }) => expr.as_ref(),
            other => other,
        };
        let Expr::AggregateFunction(AggregateFunction { func, params }) = call else {
            continue;
        };
        if !func.name().eq_ignore_ascii_case("avg") || params.args.len() != 1 {
            continue;
        }
        let argument = params.args[0].get_type(input.schema())?;
        let output = schema.field(first + n).data_type();
        if matches!(
            argument,
            DataType::Decimal128(..) | DataType::Decimal256(..)
        ) && *output != argument
        {
            narrowed.push((first + n, argument));
        }
    }
    Ok((!narrowed.is_empty()).then_some(narrowed))
}
