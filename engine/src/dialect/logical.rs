//! The planned statement adjusted where Trino's meaning is not DataFusion's, after the SQL
//! planner and before anything runs:
//! - a string literal a query returns is `varchar(n)`, n its length (as [`TRINO_TYPE`]
//!   metadata: Arrow has no bounded strings);
//! - a cast of a row to a row type takes the fields by position, as Trino does (DataFusion
//!   matches them by name);
//! - the calls and casts [`super::calls`] lists, and `USING` keys of outer joins
//!   ([`super::joins`]);
//! - a scalar subquery that may return more than one row fails when it does
//!   (SUBQUERY_MULTIPLE_ROWS), where DataFusion answered the outer query once per row
//!   ([`single_row_subqueries`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Fields};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{
    Column, DFSchema, NullEquality, Result, ScalarValue, metadata::FieldMetadata,
};
use datafusion::error::DataFusionError;
use datafusion::functions::core::expr_fn::{get_field, named_struct};
use datafusion::logical_expr::expr::{Alias, Cast, TryCast};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{Expr, ExprSchemable, JoinType, LogicalPlan, Projection, lit, when};

use super::types::{TRINO_TYPE, TrinoType};
use crate::error::{Error, ErrorCode};

/// `plan` with Trino's meaning where it differs (see the module documentation).
pub fn to_trino(plan: LogicalPlan) -> Result<LogicalPlan> {
    refuse_aggregates_in_rows(&plan)?;
    let plan = plan
        .transform_up_with_subqueries(|node| {
            expressions(node)?
                .transform_data(super::joins::coalesce_using_keys)?
                .transform_data(refuse_text_beside_other_in_set_operations)?
                .transform_data(real_union)?
                .transform_data(single_row_subqueries)
        })?
        .data;
    typed_output(plan)
}

/// An aggregate or window function where a value per row is wanted, refused as Trino refuses
/// it (EXPRESSION_NOT_SCALAR): in a `WHERE` (a filter) or an UPDATE's `SET` (a projection; in
/// a query, aggregates and windows are computed below the projection that reads them).
/// DataFusion would refuse the first as an aggregate in WHERE only, and the rest with a dump
/// of its plan.
fn refuse_aggregates_in_rows(plan: &LogicalPlan) -> Result<()> {
    use datafusion::common::tree_node::TreeNodeRecursion;
    plan.apply_with_subqueries(|node| {
        let (clause, exprs) = match node {
            LogicalPlan::Filter(filter) => ("WHERE clause", vec![&filter.predicate]),
            LogicalPlan::Projection(projection) => ("SET clause", projection.expr.iter().collect()),
            _ => return Ok(TreeNodeRecursion::Continue),
        };
        let mut found = Vec::new();
        for expr in exprs {
            expr.apply(|e| {
                if matches!(e, Expr::AggregateFunction(_) | Expr::WindowFunction(_)) {
                    found.push(e.human_display().to_string());
                    return Ok(TreeNodeRecursion::Jump);
                }
                Ok(TreeNodeRecursion::Continue)
            })?;
        }
        if found.is_empty() {
            return Ok(TreeNodeRecursion::Continue);
        }
        Err(datafusion::error::DataFusionError::External(Box::new(
            crate::error::Error::invalid(
                crate::error::ErrorCode::ExpressionNotScalar,
                format!(
                    "{clause} cannot contain aggregations, window functions or grouping \
                     operations: [{}]",
                    found.join(", ")
                ),
            ),
        )))
    })?;
    Ok(())
}

/// The scalar subqueries of `node` that may return more than one row, each under
/// `sqe_scalar_subquery` (an aggregate of no groups: its one value, NULL for no row, an error
/// for more), as Trino answers them. Those that cannot (an aggregate without groups, a
/// `LIMIT 1`) stay as they are.
fn single_row_subqueries(node: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    node.map_expressions(|expr| {
        expr.transform_up(|e| {
            let Expr::ScalarSubquery(subquery) = &e else {
                return Ok(Transformed::no(e));
            };
            if at_most_one_row(&subquery.subquery) {
                return Ok(Transformed::no(e));
            }
            let plan = subquery.subquery.as_ref();
            let Some((qualifier, field)) = plan.schema().iter().next() else {
                return Ok(Transformed::no(e));
            };
            let value = sqe_functions::scalar_subquery_function()
                .call(vec![Expr::Column(Column::new(
                    qualifier.cloned(),
                    field.name(),
                ))])
                .alias(field.name());
            let checked = datafusion::logical_expr::LogicalPlanBuilder::from(plan.clone())
                .aggregate(Vec::<Expr>::new(), vec![value])?
                .build()?;
            let mut subquery = subquery.clone();
            subquery.subquery = Arc::new(checked);
            Ok(Transformed::yes(Expr::ScalarSubquery(subquery)))
        })
    })
}

/// Whether `plan` returns one row at most, by its shape.
fn at_most_one_row(plan: &LogicalPlan) -> bool {
    use datafusion::logical_expr::FetchType;
    match plan {
        LogicalPlan::Aggregate(aggregate) => aggregate.group_expr.is_empty(),
        LogicalPlan::Limit(limit) => {
            matches!(limit.get_fetch_type(), Ok(FetchType::Literal(Some(n))) if n <= 1)
                || at_most_one_row(&limit.input)
        }
        LogicalPlan::Sort(sort) => {
            sort.fetch.is_some_and(|n| n <= 1) || at_most_one_row(&sort.input)
        }
        LogicalPlan::Projection(projection) => at_most_one_row(&projection.input),
        LogicalPlan::SubqueryAlias(alias) => at_most_one_row(&alias.input),
        LogicalPlan::Filter(filter) => at_most_one_row(&filter.input),
        LogicalPlan::EmptyRelation(_) => true,
        LogicalPlan::Values(values) => values.values.len() <= 1,
        _ => false,
    }
}

/// A set operation of which a column is text in one input and a number or boolean in
/// another, refused as Trino refuses it (TYPE_MISMATCH); DataFusion would answer text for a
/// `UNION` and cast the text to the number for `INTERSECT` and `EXCEPT`.
fn refuse_text_beside_other_in_set_operations(
    node: LogicalPlan,
) -> Result<Transformed<LogicalPlan>> {
    match &node {
        LogicalPlan::Union(union) => {
            // Trino names the first input's type and the first that cannot join it.
            let Some(first_input) = union.inputs.first() else {
                return Ok(Transformed::no(node));
            };
            for (i, first) in first_input.schema().fields().iter().enumerate() {
                let clash = union.inputs.iter().skip(1).find(|input| {
                    input.schema().fields().get(i).is_some_and(|f| {
                        super::calls::text_beside_other(&[first.data_type(), f.data_type()])
                            .is_some()
                    })
                });
                if let Some(other) = clash {
                    return Err(incompatible_set_columns("UNION", i, (first_input, other)));
                }
            }
        }
        // What SQL's INTERSECT and EXCEPT plan as: a semi or anti join of all columns, NULLs
        // equal (joins a query writes compare NULLs as unequal).
        LogicalPlan::Join(join)
            if join.null_equality == NullEquality::NullEqualsNull
                && matches!(join.join_type, JoinType::LeftSemi | JoinType::LeftAnti) =>
        {
            let operation = if join.join_type == JoinType::LeftSemi {
                "INTERSECT"
            } else {
                "EXCEPT"
            };
            for (i, (left, right)) in join.on.iter().enumerate() {
                let (l, r) = (
                    left.get_type(join.left.schema())?,
                    right.get_type(join.right.schema())?,
                );
                if super::calls::text_beside_other(&[&l, &r]).is_some() {
                    return Err(incompatible_set_columns(
                        operation,
                        i,
                        (&join.left, &join.right),
                    ));
                }
            }
        }
        _ => {}
    }
    Ok(Transformed::no(node))
}

/// Trino's TYPE_MISMATCH for column `i` of two inputs of a set operation.
fn incompatible_set_columns(
    operation: &str,
    i: usize,
    (first, other): (&LogicalPlan, &LogicalPlan),
) -> DataFusionError {
    DataFusionError::External(Box::new(Error::invalid(
        ErrorCode::TypeMismatch,
        format!(
            "column {} in {operation} query has incompatible types: {}, {}",
            i + 1,
            output_type_name(first, i),
            output_type_name(other, i)
        ),
    )))
}

fn unaliased(expr: &Expr) -> &Expr {
    match expr {
        Expr::Alias(Alias { expr, .. }) => unaliased(expr),
        other => other,
    }
}

/// The type of a plan's output column `i` as Trino's messages name it: a text literal as its
/// `varchar(n)` (what Trino types it).
pub(super) fn output_type_name(plan: &LogicalPlan, i: usize) -> String {
    let mut plan = plan;
    // A DISTINCT, a sort, a limit or an alias over the projection that made the column.
    while let LogicalPlan::Distinct(_)
    | LogicalPlan::Sort(_)
    | LogicalPlan::Limit(_)
    | LogicalPlan::SubqueryAlias(_) = plan
    {
        match plan.inputs().first() {
            Some(input) => plan = input,
            None => break,
        }
    }
    if let LogicalPlan::Projection(projection) = plan
        && let Some(expr) = projection.expr.get(i)
        && let Expr::Literal(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)), _) =
            unaliased(expr)
    {
        return literal_type(s);
    }
    match plan.schema().fields().get(i) {
        Some(field) => TrinoType::from_field(field).client_name(),
        None => "unknown".into(),
    }
}

/// A `UNION` whose columns mix real numbers and decimals, with the decimals cast to the real
/// type in each input, as Trino coerces them (DataFusion picked a `decimal(30,15)`).
fn real_union(node: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let LogicalPlan::Union(union) = &node else {
        return Ok(Transformed::no(node));
    };
    let reals: Vec<Option<DataType>> = (0..union.schema.fields().len())
        .map(|i| {
            let types: Vec<&DataType> = union
                .inputs
                .iter()
                .filter_map(|input| input.schema().fields().get(i).map(|f| f.data_type()))
                .collect();
            super::calls::real_of_mix(types.iter().copied())
        })
        .collect();
    if reals.iter().all(Option::is_none) {
        return Ok(Transformed::no(node));
    }
    let inputs = union
        .inputs
        .iter()
        .map(|input| {
            let columns = input
                .schema()
                .iter()
                .zip(&reals)
                .map(|((qualifier, field), real)| {
                    let column = Expr::Column(Column::new(qualifier.cloned(), field.name()));
                    match real {
                        Some(real) if super::calls::is_decimal(field.data_type()) => {
                            datafusion::logical_expr::cast(column, real.clone())
                                .alias_qualified(qualifier.cloned(), field.name())
                        }
                        _ => column,
                    }
                })
                .collect();
            Ok(Arc::new(LogicalPlan::Projection(Projection::try_new(
                columns,
                Arc::clone(input),
            )?)))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Transformed::yes(LogicalPlan::Union(
        datafusion::logical_expr::Union::try_new_with_loose_types(inputs)?,
    )))
}

/// The statement's output projection with its string literals typed (only there: a union or
/// a join of differently typed literals would otherwise mix their types).
fn typed_output(plan: LogicalPlan) -> Result<LogicalPlan> {
    match plan {
        LogicalPlan::Projection(projection) => Ok(typed_literals(projection)?.data),
        LogicalPlan::Sort(_)
        | LogicalPlan::Limit(_)
        | LogicalPlan::Distinct(datafusion::logical_expr::Distinct::All(_)) => Ok(plan
            .map_children(|child| typed_output(child).map(Transformed::yes))?
            .data),
        other => Ok(other),
    }
}

/// The node's expressions in Trino's meaning: row casts by position, and the calls and casts
/// of [`super::calls`].
fn expressions(node: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    if matches!(
        node,
        LogicalPlan::TableScan(_) | LogicalPlan::EmptyRelation(_)
    ) {
        return Ok(Transformed::no(node));
    }
    let schema = merge_schema(&node.inputs());
    let names = NamePreserver::new(&node);
    let rewritten = node.map_expressions(|expr| {
        let saved = names.save(&expr);
        let rewritten = expr.transform_up(|e| {
            positional_row_cast(e, &schema)?.transform_data(|e| super::calls::rewrite(e, &schema))
        })?;
        Ok(if rewritten.transformed {
            Transformed::yes(saved.restore(rewritten.data))
        } else {
            rewritten
        })
    })?;
    if rewritten.transformed {
        rewritten.map_data(LogicalPlan::recompute_schema)
    } else {
        Ok(rewritten)
    }
}

fn positional_row_cast(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let (inner, target, fallible) = match &expr {
        Expr::Cast(Cast { expr, field }) => (expr, field.data_type(), false),
        Expr::TryCast(TryCast { expr, field }) => (expr, field.data_type(), true),
        _ => return Ok(Transformed::no(expr)),
    };
    let DataType::Struct(target_fields) = target else {
        return Ok(Transformed::no(expr));
    };
    let DataType::Struct(source_fields) = inner.get_type(schema)? else {
        return Ok(Transformed::no(expr));
    };
    if source_fields.len() != target_fields.len() || same_names(&source_fields, target_fields) {
        return Ok(Transformed::no(expr));
    }
    let mut pairs = Vec::with_capacity(2 * target_fields.len());
    for (source, target) in source_fields.iter().zip(target_fields.iter()) {
        let value = get_field(inner.as_ref().clone(), source.name().as_str());
        let value = if fallible {
            Expr::TryCast(TryCast::new(Box::new(value), target.data_type().clone()))
        } else {
            Expr::Cast(Cast::new(Box::new(value), target.data_type().clone()))
        };
        pairs.push(lit(target.name().as_str()));
        pairs.push(positional_row_cast(value, schema)?.data);
    }
    // A NULL row stays NULL (not a row of NULLs).
    let row = when(inner.as_ref().clone().is_null(), lit(ScalarValue::Null))
        .otherwise(named_struct(pairs))?;
    Ok(Transformed::yes(Expr::Cast(Cast::new(
        Box::new(row),
        target.clone(),
    ))))
}

fn same_names(a: &Fields, b: &Fields) -> bool {
    a.iter().zip(b.iter()).all(|(x, y)| x.name() == y.name())
}

fn typed_literals(projection: Projection) -> Result<Transformed<LogicalPlan>> {
    let mut changed = false;
    let exprs: Vec<Expr> = projection
        .expr
        .iter()
        .map(|expr| match with_length(expr) {
            Some(typed) => {
                changed = true;
                typed
            }
            None => expr.clone(),
        })
        .collect();
    if !changed {
        return Ok(Transformed::no(LogicalPlan::Projection(projection)));
    }
    Projection::try_new(exprs, projection.input)
        .map(|p| Transformed::yes(LogicalPlan::Projection(p)))
}

/// The Trino type of a string literal: `varchar(<its length>)`.
pub(super) fn literal_type(text: &str) -> String {
    format!("varchar({})", text.chars().count())
}

/// A string literal (aliased or not) typed `varchar(<its length>)`.
fn with_length(expr: &Expr) -> Option<Expr> {
    match expr {
        Expr::Alias(alias) => with_length(&alias.expr).map(|inner| {
            Expr::Alias(Alias {
                expr: Box::new(inner),
                ..alias.clone()
            })
        }),
        Expr::Literal(
            value @ (ScalarValue::Utf8(Some(s))
            | ScalarValue::Utf8View(Some(s))
            | ScalarValue::LargeUtf8(Some(s))),
            None,
        ) => {
            let metadata = BTreeMap::from([(TRINO_TYPE.to_string(), literal_type(s))]);
            Some(Expr::Literal(
                value.clone(),
                Some(FieldMetadata::from(metadata)),
            ))
        }
        _ => None,
    }
}
