//! `FULL` and `RIGHT JOIN ... USING (k)`: Trino's `k` is the key of whichever side has the
//! row; DataFusion's is the left side's, NULL for rows only the right side has.

use std::sync::Arc;

use datafusion::common::tree_node::Transformed;
use datafusion::common::{Column, Result};
use datafusion::logical_expr::expr::Cast;
use datafusion::logical_expr::{Expr, JoinConstraint, JoinType, LogicalPlan, Projection};

use super::calls::coalesced;

/// `node` with its USING keys coalesced, when it is such a join.
pub(super) fn coalesce_using_keys(node: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let LogicalPlan::Join(join) = &node else {
        return Ok(Transformed::no(node));
    };
    if join.join_constraint != JoinConstraint::Using
        || !matches!(join.join_type, JoinType::Full | JoinType::Right)
    {
        return Ok(Transformed::no(node));
    }
    let keys: Vec<(Column, Expr)> = join
        .on
        .iter()
        .filter_map(|(left, right)| match left {
            Expr::Column(column) => Some((column.clone(), right.clone())),
            _ => None,
        })
        .collect();
    if keys.is_empty() {
        return Ok(Transformed::no(node));
    }
    let schema = Arc::clone(node.schema());
    let exprs = schema
        .iter()
        .map(|(qualifier, field)| {
            let column = Column::new(qualifier.cloned(), field.name());
            match keys.iter().find(|(left, _)| *left == column) {
                // Typed as the left key, which the plan above already reads.
                Some((left, right)) => Expr::Cast(Cast::new(
                    Box::new(coalesced(Expr::Column(left.clone()), right.clone())),
                    field.data_type().clone(),
                ))
                .alias_qualified(qualifier.cloned(), field.name()),
                None => Expr::Column(column),
            }
        })
        .collect();
    Projection::try_new(exprs, Arc::new(node)).map(|p| Transformed::yes(LogicalPlan::Projection(p)))
}
