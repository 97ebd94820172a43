//! Trino's meaning for expressions DataFusion's SQL planner builds itself: ranking window
//! functions return `bigint` (DataFusion: unsigned), and `SUBSTRING(s FROM a FOR b)` is
//! Trino's `substr`.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::expr::{Cast, WindowFunction, WindowFunctionParams};
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawWindowExpr};
use datafusion::logical_expr::{Expr, ScalarUDF};

/// Asked before DataFusion's own planners.
#[derive(Debug)]
pub struct TrinoPlanner {
    substr: Arc<ScalarUDF>,
}

impl Default for TrinoPlanner {
    fn default() -> Self {
        Self {
            substr: sqe_functions::substr(),
        }
    }
}

/// The window functions that count rows, which Trino types `bigint`.
const COUNTING: &[&str] = &["row_number", "rank", "dense_rank", "ntile"];

impl ExprPlanner for TrinoPlanner {
    fn plan_window(&self, expr: RawWindowExpr) -> Result<PlannerResult<RawWindowExpr>> {
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
