//! When planning fails, what the engine knows about the names a statement uses: a table,
//! schema or catalog that does not exist, a function no registry has, or an aggregate
//! function in a `WHERE`. DataFusion reports them only in words; the engine looks them up, so
//! the error's code never depends on a message's text.

use std::ops::ControlFlow;

use datafusion::execution::SessionState;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{Expr, ObjectNamePart, TrimWhereField, Visit, Visitor};

use crate::error::{Error, ObjectKind};

/// The first name `statement` uses that does not exist, as a typed error; `None` when every
/// name is known (the failure is about something else).
pub(super) fn unknown_name(state: &SessionState, statement: &DfStatement) -> Option<Error> {
    unknown_table(state, statement)
        .or_else(|| unknown_function(state, statement))
        .or_else(|| aggregate_in_where(state, statement))
}

/// An aggregate (or window) function called in a `WHERE` outside its subqueries, refused as
/// Trino refuses it.
fn aggregate_in_where(state: &SessionState, statement: &DfStatement) -> Option<Error> {
    let DfStatement::Statement(statement) = statement else {
        return None;
    };
    let mut finder = AggregateInWhere {
        state,
        found: Vec::new(),
    };
    let _ = statement.visit(&mut finder);
    (!finder.found.is_empty()).then(|| {
        Error::invalid(
            crate::error::ErrorCode::ExpressionNotScalar,
            format!(
                "WHERE clause cannot contain aggregations, window functions or grouping \
                 operations: [{}]",
                finder.found.join(", ")
            ),
        )
    })
}

struct AggregateInWhere<'a> {
    state: &'a SessionState,
    found: Vec<String>,
}

impl Visitor for AggregateInWhere<'_> {
    type Break = ();

    fn pre_visit_query(
        &mut self,
        query: &datafusion::sql::sqlparser::ast::Query,
    ) -> ControlFlow<()> {
        let datafusion::sql::sqlparser::ast::SetExpr::Select(select) = query.body.as_ref() else {
            return ControlFlow::Continue(());
        };
        if let Some(selection) = &select.selection {
            let mut calls = AggregateCalls {
                state: self.state,
                depth: 0,
                found: &mut self.found,
            };
            let _ = selection.visit(&mut calls);
        }
        ControlFlow::Continue(())
    }
}

/// The aggregate and window calls of one expression, not those of its subqueries (they have
/// rows of their own).
struct AggregateCalls<'a, 'f> {
    state: &'a SessionState,
    depth: usize,
    found: &'f mut Vec<String>,
}

impl Visitor for AggregateCalls<'_, '_> {
    type Break = ();

    fn pre_visit_query(
        &mut self,
        _query: &datafusion::sql::sqlparser::ast::Query,
    ) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(
        &mut self,
        _query: &datafusion::sql::sqlparser::ast::Query,
    ) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if self.depth > 0 {
            return ControlFlow::Continue(());
        }
        let Expr::Function(function) = expr else {
            return ControlFlow::Continue(());
        };
        let name = function.name.to_string().to_lowercase();
        if function.over.is_some() || self.state.aggregate_functions().contains_key(&name) {
            self.found.push(expr.to_string());
        }
        ControlFlow::Continue(())
    }
}

fn unknown_table(state: &SessionState, statement: &DfStatement) -> Option<Error> {
    let defaults = &state.config_options().catalog;
    let references = state.resolve_table_references(statement).ok()?;
    for reference in references {
        let resolved = reference.resolve(&defaults.default_catalog, &defaults.default_schema);
        let Some(catalog) = state.catalog_list().catalog(&resolved.catalog) else {
            return Some(Error::not_found(
                ObjectKind::Catalog,
                resolved.catalog.to_string(),
            ));
        };
        let Some(schema) = catalog.schema(&resolved.schema) else {
            return Some(Error::not_found(
                ObjectKind::Schema,
                format!("{}.{}", resolved.catalog, resolved.schema),
            ));
        };
        if !schema.table_exist(&resolved.table) {
            return Some(Error::not_found(
                ObjectKind::Table,
                format!(
                    "{}.{}.{}",
                    resolved.catalog, resolved.schema, resolved.table
                ),
            ));
        }
    }
    None
}

fn unknown_function(state: &SessionState, statement: &DfStatement) -> Option<Error> {
    let DfStatement::Statement(statement) = statement else {
        return None;
    };
    let mut finder = UnknownFunction { state, found: None };
    let _ = statement.visit(&mut finder);
    finder
        .found
        .map(|name| Error::not_found(ObjectKind::Function, name))
}

/// Whether `statement` calls the function named `function`, by that name or an alias of it.
pub(super) fn calls(state: &SessionState, statement: &DfStatement, function: &str) -> bool {
    let DfStatement::Statement(statement) = statement else {
        return false;
    };
    struct Calls<'a> {
        state: &'a SessionState,
        function: &'a str,
    }
    impl Visitor for Calls<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            let name = match expr {
                Expr::Function(call) => call.name.to_string().to_lowercase(),
                // `SUBSTRING(s FROM …)`, `substring(s, …)` and `TRIM(…)` are syntax of their own.
                Expr::Substring { .. } => "substr".to_string(),
                Expr::Trim { trim_where, .. } => match trim_where {
                    Some(TrimWhereField::Leading) => "ltrim",
                    Some(TrimWhereField::Trailing) => "rtrim",
                    Some(TrimWhereField::Both) | None => "btrim",
                }
                .to_string(),
                _ => return ControlFlow::Continue(()),
            };
            let named = name == self.function
                || self
                    .state
                    .scalar_functions()
                    .get(&name)
                    .is_some_and(|f| f.name() == self.function)
                || self
                    .state
                    .aggregate_functions()
                    .get(&name)
                    .is_some_and(|f| f.name() == self.function)
                || sqe_functions::lambdas::trino_name(&name) == self.function;
            if named {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
    }
    statement.visit(&mut Calls { state, function }).is_break()
}

struct UnknownFunction<'a> {
    state: &'a SessionState,
    found: Option<String>,
}

impl Visitor for UnknownFunction<'_> {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<Self::Break> {
        let Expr::Function(function) = expr else {
            return ControlFlow::Continue(());
        };
        // Only plain names: qualified ones (`catalog.schema.f`) are not looked up here.
        let [ObjectNamePart::Identifier(ident)] = function.name.0.as_slice() else {
            return ControlFlow::Continue(());
        };
        // DataFusion folds unquoted names to lower case, as it looks them up.
        let name = if ident.quote_style.is_some() {
            ident.value.clone()
        } else {
            ident.value.to_lowercase()
        };
        let known = self.state.scalar_functions().contains_key(&name)
            || self.state.aggregate_functions().contains_key(&name)
            || self.state.window_functions().contains_key(&name)
            || self.state.higher_order_functions().contains_key(&name);
        if known {
            ControlFlow::Continue(())
        } else {
            self.found = Some(name);
            ControlFlow::Break(())
        }
    }
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::SessionContext;

    use super::*;

    fn check(sql: &str) -> Option<Error> {
        let ctx = SessionContext::new();
        let state = ctx.state();
        let dialect = state.config().options().sql_parser.dialect;
        let statement = state.sql_to_statement(sql, &dialect).ok()?;
        unknown_name(&state, &statement)
    }

    #[test]
    fn missing_tables_schemas_and_catalogs_are_named() {
        let table = check("SELECT * FROM nope");
        assert!(
            matches!(&table, Some(Error::NotFound { kind: ObjectKind::Table, name }) if name == "datafusion.public.nope"),
            "{table:?}"
        );
        let schema = check("SELECT * FROM elsewhere.t");
        assert!(
            matches!(
                &schema,
                Some(Error::NotFound {
                    kind: ObjectKind::Schema,
                    ..
                })
            ),
            "{schema:?}"
        );
        let catalog = check("SELECT * FROM far.away.t");
        assert!(
            matches!(&catalog, Some(Error::NotFound { kind: ObjectKind::Catalog, name }) if name == "far"),
            "{catalog:?}"
        );
    }

    #[test]
    fn unknown_functions_are_named_and_known_ones_pass() {
        let missing = check("SELECT no_such_function(1)");
        assert!(
            matches!(&missing, Some(Error::NotFound { kind: ObjectKind::Function, name }) if name == "no_such_function"),
            "{missing:?}"
        );
        assert!(
            check("SELECT ABS(-1), count(*), row_number() OVER () FROM (VALUES (1)) t").is_none()
        );
    }
}
