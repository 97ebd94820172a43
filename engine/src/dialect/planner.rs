//! Trino's meaning for expressions DataFusion's SQL planner builds itself: ranking window
//! functions return `bigint` (DataFusion: unsigned), `SUBSTRING(s FROM a FOR b)` is
//! Trino's `substr`, and arithmetic on text is Trino's `TYPE_MISMATCH` (DataFusion refuses
//! it too, in words naming Arrow's types).

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::DFSchema;
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::GetFieldAccess;
use datafusion::logical_expr::expr::{Cast, WindowFunction, WindowFunctionParams};
use datafusion::logical_expr::planner::{
    ExprPlanner, PlannerResult, RawBinaryExpr, RawFieldAccessExpr, RawWindowExpr,
};
use datafusion::logical_expr::{Expr, ExprSchemable, ScalarUDF};
use datafusion::sql::sqlparser::ast::BinaryOperator;

/// Asked before DataFusion's own planners.
#[derive(Debug)]
pub struct TrinoPlanner {
    substr: Arc<ScalarUDF>,
    subscript: Arc<ScalarUDF>,
}

impl Default for TrinoPlanner {
    fn default() -> Self {
        Self {
            substr: sqe_functions::substr(),
            subscript: sqe_functions::subscript_function(),
        }
    }
}

impl TrinoPlanner {
    /// `container[key]` with Trino's meaning (`sqe_functions::SUBSCRIPT`).
    fn subscript(&self, container: Expr, key: Expr) -> Expr {
        Expr::ScalarFunction(datafusion::logical_expr::expr::ScalarFunction::new_udf(
            Arc::clone(&self.subscript),
            vec![
                container,
                key,
                Expr::Literal(ScalarValue::from("subscript"), None),
            ],
        ))
    }
}

/// The window functions that count rows, which Trino types `bigint`.
pub(crate) const COUNTING: &[&str] = &["row_number", "rank", "dense_rank", "ntile"];

impl ExprPlanner for TrinoPlanner {
    /// `a[i]` and `m[k]` with Trino's meaning (`sqe_functions::SUBSCRIPT`): an index out of
    /// the array or a key the map lacks is an error, where DataFusion's answer NULL (and count
    /// a negative index from the end); `r[i]` is a row's i-th field.
    fn plan_field_access(
        &self,
        expr: RawFieldAccessExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawFieldAccessExpr>> {
        let container = expr.expr.get_type(schema)?;
        let key = match &expr.field_access {
            GetFieldAccess::ListIndex { key }
                if matches!(
                    container,
                    DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)
                ) =>
            {
                key.as_ref().clone()
            }
            // `r[i]`: a row's field by its position, a constant from 1.
            GetFieldAccess::ListIndex { key } if matches!(container, DataType::Struct(_)) => {
                let DataType::Struct(fields) = &container else {
                    return Ok(PlannerResult::Original(expr));
                };
                // Integer literals reach here cast to `integer` by the dialect.
                let mut constant = key.as_ref();
                while let Expr::Cast(Cast { expr, .. }) = constant {
                    constant = expr;
                }
                let position = match constant {
                    Expr::Literal(value, _) => value.cast_to(&DataType::Int64).ok(),
                    _ => None,
                };
                let field = match position {
                    Some(ScalarValue::Int64(Some(i))) if i >= 1 => {
                        usize::try_from(i - 1).ok().and_then(|i| fields.get(i))
                    }
                    _ => None,
                };
                let Some(field) = field else {
                    return Err(datafusion::error::DataFusionError::External(Box::new(
                        crate::error::Error::invalid(
                            crate::error::ErrorCode::InvalidFunctionArgument,
                            format!(
                                "Invalid subscript of a row with {} fields: a constant from 1 is expected",
                                fields.len()
                            ),
                        ),
                    )));
                };
                return Ok(PlannerResult::Planned(
                    datafusion::functions::core::expr_fn::get_field(
                        expr.expr,
                        field.name().as_str(),
                    ),
                ));
            }
            GetFieldAccess::ListIndex { key } if matches!(container, DataType::Map(..)) => {
                key.as_ref().clone()
            }
            GetFieldAccess::NamedStructField { name } if matches!(container, DataType::Map(..)) => {
                Expr::Literal(name.clone(), None)
            }
            _ => return Ok(PlannerResult::Original(expr)),
        };
        Ok(PlannerResult::Planned(self.subscript(expr.expr, key)))
    }

    /// `ARRAY[X'01', NULL]`: DataFusion unifies NULL with no binary type, so the NULLs are
    /// given the elements' binary type first.
    fn plan_array_literal(
        &self,
        exprs: Vec<Expr>,
        schema: &DFSchema,
    ) -> Result<PlannerResult<Vec<Expr>>> {
        let types = exprs
            .iter()
            .map(|e| e.get_type(schema))
            .collect::<Result<Vec<_>>>()?;
        let Some(binary) = binary_beside_nulls(&types) else {
            return Ok(PlannerResult::Original(exprs));
        };
        Ok(PlannerResult::Original(
            exprs
                .into_iter()
                .zip(&types)
                .map(|(e, t)| match t {
                    DataType::Null => Expr::Cast(Cast::new(Box::new(e), binary.clone())),
                    _ => e,
                })
                .collect(),
        ))
    }

    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        let arithmetic = matches!(
            expr.op,
            BinaryOperator::Plus
                | BinaryOperator::Minus
                | BinaryOperator::Multiply
                | BinaryOperator::Divide
                | BinaryOperator::Modulo
        );
        // A quotient of decimals has Trino's type from the start, so that what is built on it
        // (a UNION's coercion of its inputs) has it too.
        if expr.op == BinaryOperator::Divide
            && let (Ok(left), Ok(right)) = (expr.left.get_type(schema), expr.right.get_type(schema))
            && super::calls::is_decimal_quotient(&left, &right)
        {
            return Ok(PlannerResult::Planned(super::calls::decimal_quotient(
                expr.left, &left, expr.right, &right,
            )));
        }
        // A sum or difference of decimals whose type is capped at 38 digits is checked against
        // them (Arrow's addition fails only past i128).
        if matches!(expr.op, BinaryOperator::Plus | BinaryOperator::Minus)
            && let (Ok(left), Ok(right)) = (expr.left.get_type(schema), expr.right.get_type(schema))
            && super::calls::decimal_sum_overflows_type(&left, &right)
        {
            let op = if expr.op == BinaryOperator::Plus {
                datafusion::logical_expr::Operator::Plus
            } else {
                datafusion::logical_expr::Operator::Minus
            };
            let sum = Expr::BinaryExpr(datafusion::logical_expr::BinaryExpr::new(
                Box::new(expr.left),
                op,
                Box::new(expr.right),
            ));
            return Ok(PlannerResult::Planned(
                sqe_functions::decimal_in_range_function().call(vec![sum]),
            ));
        }
        // A product of decimals is Trino's decimal(p1 + p2, s1 + s2) (DataFusion's has a digit
        // more); the value is the same.
        if expr.op == BinaryOperator::Multiply
            && let (Ok(left), Ok(right)) = (expr.left.get_type(schema), expr.right.get_type(schema))
            && let Some(product) = super::calls::decimal_product_type(&left, &right)
        {
            let times = Expr::BinaryExpr(datafusion::logical_expr::BinaryExpr::new(
                Box::new(expr.left),
                datafusion::logical_expr::Operator::Multiply,
                Box::new(expr.right),
            ));
            return Ok(PlannerResult::Planned(datafusion::logical_expr::cast(
                times, product,
            )));
        }
        // `||` of text (or varbinary) and something else that is not an array: Trino's concat
        // takes no numbers, booleans or dates (DataFusion's wrote them as text).
        if expr.op == BinaryOperator::StringConcat
            && let (Ok(left), Ok(right)) = (expr.left.get_type(schema), expr.right.get_type(schema))
            && !matches!(left, DataType::List(_) | DataType::LargeList(_))
            && !matches!(right, DataType::List(_) | DataType::LargeList(_))
            && !(super::calls::concatenable(&left) && super::calls::concatenable(&right))
        {
            return Err(super::calls::unconcatenable(&[left, right]));
        }
        let is_text = |e: &Expr| e.get_type(schema).is_ok_and(|t| super::calls::is_text(&t));
        let comparison = matches!(
            expr.op,
            BinaryOperator::Eq
                | BinaryOperator::NotEq
                | BinaryOperator::Lt
                | BinaryOperator::LtEq
                | BinaryOperator::Gt
                | BinaryOperator::GtEq
        );
        // Text beside a number or a boolean: Trino has no common type for them (DataFusion
        // refused a boolean in its own words and cast numbers).
        let mixed = comparison
            && match (expr.left.get_type(schema), expr.right.get_type(schema)) {
                (Ok(left), Ok(right)) => {
                    super::calls::text_beside_other(&[&left, &right]).is_some()
                }
                _ => false,
            };
        if !mixed && (!arithmetic || !(is_text(&expr.left) || is_text(&expr.right))) {
            return Ok(PlannerResult::Original(expr));
        }
        let name = |e: &Expr| {
            e.get_type(schema)
                .map(|t| super::types::trino_type_name(&t))
                .unwrap_or_else(|_| "unknown".into())
        };
        Err(datafusion::error::DataFusionError::External(Box::new(
            crate::error::Error::invalid(
                crate::error::ErrorCode::TypeMismatch,
                format!(
                    "Cannot apply operator: {} {} {}",
                    name(&expr.left),
                    expr.op,
                    name(&expr.right)
                ),
            ),
        )))
    }

    fn plan_window(&self, expr: RawWindowExpr) -> Result<PlannerResult<RawWindowExpr>> {
        // A negative offset of lag or lead is refused, as Trino refuses it (DataFusion's lag
        // of -1 was lead's).
        if matches!(expr.func_def.name(), "lag" | "lead")
            && let Some(offset) = expr.args.get(1).and_then(negative_integer)
        {
            return Err(datafusion::error::DataFusionError::External(Box::new(
                crate::error::Error::invalid(
                    crate::error::ErrorCode::InvalidFunctionArgument,
                    format!("Offset must be at least 0, not {offset}"),
                ),
            )));
        }
        if !COUNTING.contains(&expr.func_def.name()) {
            return Ok(PlannerResult::Original(expr));
        }
        let RawWindowExpr {
            func_def,
            args,
            partition_by,
            order_by,
            window_frame,
            filter,
            null_treatment,
            distinct,
        } = expr;
        let window = Expr::WindowFunction(Box::new(WindowFunction {
            fun: func_def,
            params: WindowFunctionParams {
                args,
                partition_by,
                order_by,
                window_frame,
                filter,
                null_treatment,
                distinct,
            },
        }));
        Ok(PlannerResult::Planned(Expr::Cast(Cast::new(
            Box::new(window),
            DataType::Int64,
        ))))
    }

    fn plan_substring(&self, args: Vec<Expr>) -> Result<PlannerResult<Vec<Expr>>> {
        Ok(PlannerResult::Planned(self.substr.call(args)))
    }
}

/// A negative integer constant: a literal, negated or cast (`-1` is planned as any of these).
fn negative_integer(expr: &Expr) -> Option<i64> {
    fn value(e: &Expr) -> Option<i64> {
        match e {
            Expr::Literal(ScalarValue::Int8(Some(n)), _) => Some(i64::from(*n)),
            Expr::Literal(ScalarValue::Int16(Some(n)), _) => Some(i64::from(*n)),
            Expr::Literal(ScalarValue::Int32(Some(n)), _) => Some(i64::from(*n)),
            Expr::Literal(ScalarValue::Int64(Some(n)), _) => Some(*n),
            Expr::Negative(inner) => value(inner).and_then(i64::checked_neg),
            Expr::Cast(Cast { expr, .. }) => value(expr),
            _ => None,
        }
    }
    value(expr).filter(|n| *n < 0)
}

/// The binary type of values that are all of it or NULL, with at least one of each.
fn binary_beside_nulls(types: &[DataType]) -> Option<DataType> {
    let mut binary = None;
    let mut nulls = false;
    for t in types {
        match t {
            DataType::Null => nulls = true,
            DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_) => match &binary {
                None => binary = Some(t.clone()),
                Some(seen) if seen == t => {}
                Some(_) => return None,
            },
            _ => return None,
        }
    }
    binary.filter(|_| nulls)
}
