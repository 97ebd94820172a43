//! Trino's table functions that SQE has, as the queries DataFusion plans for them:
//! `TABLE(sequence(start => a, stop => b, step => c))` (Trino's `system.sequence`: one
//! `sequential_number bigint` column from `start`, default 0, through `stop`, by `step`,
//! default 1) is DataFusion's `generate_series`, which counts the same way. Other table
//! functions are refused by name before planning.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectNamePart, Statement, TableFactor,
    VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;

use crate::error::{Error, ErrorCode, Result};

/// Replaces every `TABLE(sequence(...))` in `statement` with its query.
pub(super) fn expand(statement: &mut Statement) -> Result<()> {
    struct Expand;
    impl VisitorMut for Expand {
        type Break = Error;
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<Error> {
            let TableFactor::TableFunction { expr, alias } = factor else {
                return ControlFlow::Continue(());
            };
            match sequence(expr) {
                Ok(Some(subquery)) => {
                    *factor = TableFactor::Derived {
                        lateral: false,
                        subquery: Box::new(subquery),
                        alias: alias.take(),
                        sample: None,
                    };
                    ControlFlow::Continue(())
                }
                Ok(None) => ControlFlow::Continue(()),
                Err(e) => ControlFlow::Break(e),
            }
        }
    }
    match statement.visit(&mut Expand) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// The query of `sequence(...)` (named or positional arguments), `None` for other functions.
fn sequence(expr: &Expr) -> Result<Option<datafusion::sql::sqlparser::ast::Query>> {
    let Expr::Function(function) = expr else {
        return Ok(None);
    };
    let is_sequence = function.name.0.last().is_some_and(|part| match part {
        ObjectNamePart::Identifier(ident) => ident.value.eq_ignore_ascii_case("sequence"),
        _ => false,
    }) && (function.name.0.len() == 1
        || function.name.0.len() == 2
            && matches!(&function.name.0[0], ObjectNamePart::Identifier(schema)
                if schema.value.eq_ignore_ascii_case("builtin")));
    if !is_sequence {
        return Ok(None);
    }
    let FunctionArguments::List(list) = &function.args else {
        return Err(invalid("sequence takes start, stop and step"));
    };
    let mut slots: [Option<String>; 3] = [None, None, None];
    for (position, argument) in list.args.iter().enumerate() {
        let (slot, value) = match argument {
            FunctionArg::Named { name, arg, .. } => {
                let slot = match name.value.to_ascii_lowercase().as_str() {
                    "start" => 0,
                    "stop" => 1,
                    "step" => 2,
                    other => {
                        return Err(invalid(&format!(
                            "Unexpected argument name: {}",
                            other.to_uppercase()
                        )));
                    }
                };
                (slot, arg)
            }
            FunctionArg::Unnamed(arg) if position < 3 => (position, arg),
            _ => return Err(invalid("sequence takes start, stop and step")),
        };
        let FunctionArgExpr::Expr(value) = value else {
            return Err(invalid("sequence takes start, stop and step"));
        };
        if slots[slot].replace(value.to_string()).is_some() {
            return Err(invalid("sequence takes each argument once"));
        }
    }
    let [start, stop, step] = slots;
    let Some(stop) = stop else {
        return Err(invalid("Missing argument: STOP"));
    };
    if step
        .as_deref()
        .is_some_and(|s| s.trim().parse::<f64>().is_ok_and(|n| n == 0.0))
    {
        return Err(invalid("Step must not be zero"));
    }
    let sql = format!(
        "SELECT value AS sequential_number FROM generate_series({}, {stop}, {})",
        start.as_deref().unwrap_or("0"),
        step.as_deref().unwrap_or("1"),
    );
    Parser::new(&GenericDialect {})
        .try_with_sql(&sql)
        .and_then(|mut parser| parser.parse_query())
        .map(|query| Some(*query))
        .map_err(|e| Error::Internal(format!("the query of sequence: {e}")))
}

fn invalid(message: &str) -> Error {
    Error::invalid(ErrorCode::InvalidFunctionArgument, message.to_string())
}
