//! When planning fails, what the engine knows about the names a statement uses: a table,
//! schema or catalog that does not exist, or a function no registry has. DataFusion reports
//! both only in words; the engine looks them up, so the error's code never depends on a
//! message's text.

use std::ops::ControlFlow;

use datafusion::execution::SessionState;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{Expr, ObjectNamePart, Visit, Visitor};

use crate::error::{Error, ObjectKind};

/// The first name `statement` uses that does not exist, as a typed error; `None` when every
/// name is known (the failure is about something else).
pub(super) fn unknown_name(state: &SessionState, statement: &DfStatement) -> Option<Error> {
    unknown_table(state, statement).or_else(|| unknown_function(state, statement))
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
            || self.state.window_functions().contains_key(&name);
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
