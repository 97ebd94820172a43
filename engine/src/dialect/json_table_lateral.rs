//! A `json_table` (written by `json_table` as a `sqe_json_table(…)` table factor) as a
//! subquery unnesting the function's list of rows ([`lateral`]): on its own when its arguments
//! read no other relation's columns, else beside the single table (or aliased subquery) before
//! it, joined as Trino joins json_table laterally (`, json_table(…)`, `CROSS JOIN`,
//! `JOIN … ON TRUE`, and `LEFT JOIN … ON TRUE`, which keeps a row without json_table rows).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, Ident,
    JoinConstraint, JoinOperator, ObjectNamePart, Query, Select, SelectItem, SetExpr, TableAlias,
    TableFactor, Value, VisitMut, VisitorMut,
};
use sqe_functions::{JSON_TABLE, JsonTableColumn, JsonTablePath, JsonTableSpec};

use super::rewrite::{RenameQualifiers, mentions_columns, relation_name};
use crate::error::{Error, ErrorCode, Result};

/// The name of the list column the subqueries unnest.
const ROWS: &str = "__sqe_json_table_row";

/// The definition written into a call's second argument.
fn spec_of(args: &[FunctionArg]) -> Option<JsonTableSpec> {
    match args.get(1) {
        Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(value)))) => {
            match &value.value {
                Value::SingleQuotedString(text) => serde_json::from_str(text).ok(),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The output columns' names in order: each path's columns in declaration order, a nested
/// path's in its place.
fn column_names(path: &JsonTablePath, out: &mut Vec<String>) {
    for column in &path.columns {
        match column {
            JsonTableColumn::Ordinality { name }
            | JsonTableColumn::Value { name, .. }
            | JsonTableColumn::Query { name, .. } => out.push(name.clone()),
            JsonTableColumn::Nested(nested) => column_names(nested, out),
        }
    }
}

/// A json_table factor as the function call it becomes, its row's fields and the names its
/// columns take.
struct Call {
    call: Expr,
    fields: Vec<String>,
    /// The fields' names, or the alias's column list.
    names: Vec<Ident>,
}

/// A json_table factor's call, with `outer` written into its definition. Built from the
/// factor's own syntax tree (never its text written out and read again, which would not
/// keep every quote of its strings).
fn call_of(factor: &TableFactor, outer: bool) -> Result<Option<Call>> {
    let TableFactor::Table {
        args: Some(args),
        alias,
        ..
    } = factor
    else {
        return Ok(None);
    };
    if !is_json_table(factor) {
        return Ok(None);
    }
    let Some(mut spec) = spec_of(&args.args) else {
        return Err(Error::NotSupported(format!(
            "{JSON_TABLE} without a json_table's definition: write json_table(…)"
        )));
    };
    spec.outer = outer;
    let mut fields = Vec::new();
    column_names(&spec.root, &mut fields);
    let mut names: Vec<Ident> = fields.iter().map(|f| Ident::with_quote('"', f)).collect();
    if let Some(alias) = alias.as_ref().filter(|a| !a.columns.is_empty()) {
        if alias.columns.len() != names.len() {
            return Err(Error::invalid(
                ErrorCode::GenericUserError,
                format!(
                    "Column alias list has {} entries but json_table has {} columns",
                    alias.columns.len(),
                    names.len()
                ),
            ));
        }
        // Unquoted names fold as every unquoted name does; quoted ones are folded already.
        names = alias
            .columns
            .iter()
            .map(|c| match c.name.quote_style {
                None => Ident::with_quote('"', c.name.value.to_lowercase()),
                Some(_) => Ident::with_quote('"', &c.name.value),
            })
            .collect();
    }
    let spec = serde_json::to_string(&spec)
        .map_err(|e| Error::Internal(format!("json_table's definition: {e}")))?;
    let mut arguments = args.args.clone();
    if let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(definition)))) =
        arguments.get_mut(1)
    {
        definition.value = Value::SingleQuotedString(spec);
    }
    let mut call = parse_expr(&format!("{JSON_TABLE}()"))?;
    if let Expr::Function(function) = &mut call {
        function.args = FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: arguments,
            clauses: Vec::new(),
        });
    }
    Ok(Some(Call {
        call,
        fields,
        names,
    }))
}

/// `get_field(row, 'a') AS "a", …` for the call's columns.
fn field_items(call: &Call) -> Result<Vec<SelectItem>> {
    call.fields
        .iter()
        .zip(&call.names)
        .map(|(field, name)| {
            let mut expr = parse_expr(&format!("get_field({ROWS}, 'field')"))?;
            if let Expr::Function(function) = &mut expr
                && let FunctionArguments::List(list) = &mut function.args
                && let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(value)))) =
                    list.args.get_mut(1)
            {
                value.value = Value::SingleQuotedString(field.clone());
            }
            Ok(SelectItem::ExprWithAlias {
                expr,
                alias: name.clone(),
            })
        })
        .collect()
}

fn parser_error(e: impl std::fmt::Display) -> Error {
    Error::Internal(format!("json_table as a subquery: {e}"))
}

fn parse_expr(text: &str) -> Result<Expr> {
    datafusion::sql::sqlparser::parser::Parser::new(
        &datafusion::sql::sqlparser::dialect::GenericDialect {},
    )
    .try_with_sql(text)
    .and_then(|mut parser| parser.parse_expr())
    .map_err(parser_error)
}

/// A subquery of SQE's own words, `CALL` and `FIELDS` standing for the call and its fields'
/// items and `RELATION` for the relation the call reads.
fn subquery(template: &str, call: &Call, relation: Option<TableFactor>) -> Result<Query> {
    let mut query = datafusion::sql::sqlparser::parser::Parser::new(
        &datafusion::sql::sqlparser::dialect::GenericDialect {},
    )
    .try_with_sql(template)
    .and_then(|mut parser| parser.parse_query())
    .map_err(parser_error)?;
    let items = field_items(call)?;
    struct Fill<'a> {
        call: &'a Expr,
        items: &'a [SelectItem],
        relation: Option<TableFactor>,
    }
    impl VisitorMut for Fill<'_> {
        type Break = ();
        fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
            if let Some(at) = select.projection.iter().position(|item| {
                matches!(item, SelectItem::UnnamedExpr(Expr::Identifier(i)) if i.value == "FIELDS")
            }) {
                select.projection.splice(at..=at, self.items.iter().cloned());
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            if matches!(factor, TableFactor::Table { name, .. } if name.to_string() == "RELATION")
                && let Some(relation) = self.relation.take()
            {
                *factor = relation;
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            if matches!(expr, Expr::Identifier(i) if i.value == "CALL") {
                *expr = self.call.clone();
            }
            ControlFlow::Continue(())
        }
    }
    let _ = query.visit(&mut Fill {
        call: &call.call,
        items: &items,
        relation,
    });
    Ok(*query)
}

fn derived(query: Query, alias: Option<TableAlias>) -> TableFactor {
    TableFactor::Derived {
        lateral: false,
        subquery: Box::new(query),
        alias,
        sample: None,
    }
}

/// The subquery of a json_table that reads no other relation: its rows for its constant input.
fn standalone(factor: &mut TableFactor) -> Result<bool> {
    if is_json_table(factor) && mentions_columns(factor) {
        return Err(Error::NotSupported(LATERAL_PLACES.to_string()));
    }
    let Some(call) = call_of(factor, false)? else {
        return Ok(false);
    };
    let query = subquery(
        &format!("SELECT FIELDS FROM (SELECT unnest(CALL) AS {ROWS})"),
        &call,
        None,
    )?;
    let alias = match factor {
        TableFactor::Table { alias, .. } => alias.take().map(|mut a| {
            a.columns.clear();
            a
        }),
        _ => None,
    };
    *factor = derived(query, alias);
    Ok(true)
}

/// Where a json_table reading other relations' columns may be.
const LATERAL_PLACES: &str = "json_table reading another relation's columns joins a single table or aliased subquery \
     right after it, as `t, json_table(…)`, CROSS JOIN, JOIN … ON TRUE or LEFT JOIN … ON TRUE";

fn is_json_table(factor: &TableFactor) -> bool {
    matches!(factor, TableFactor::Table { name, args: Some(_), .. }
        if name.0.len() == 1
            && matches!(&name.0[0], ObjectNamePart::Identifier(i) if i.value.eq_ignore_ascii_case(JSON_TABLE)))
}

/// Whether `on` is `ON TRUE` (or no condition).
fn joins_every_row(constraint: &JoinConstraint) -> bool {
    match constraint {
        JoinConstraint::None => true,
        JoinConstraint::On(Expr::Value(value)) => value.value == Value::Boolean(true),
        _ => false,
    }
}

/// Rewrites the json_table factors of `query`'s FROM clause (see the module documentation).
pub(super) fn lateral(query: &mut Query) -> Result<()> {
    let mut renames = Vec::new();
    lateral_in(query.body.as_mut(), &mut renames)?;
    if let (false, Some(order_by)) = (renames.is_empty(), &mut query.order_by) {
        let mut rename = RenameQualifiers {
            renames,
            subqueries: 0,
        };
        let _ = datafusion::sql::sqlparser::ast::VisitMut::visit(order_by, &mut rename);
    }
    Ok(())
}

/// The json_tables of a query's body (each branch of a set operation): `renames` gets the
/// qualifiers a top-level select's `ORDER BY` must now read by.
fn lateral_in(body: &mut SetExpr, renames: &mut Vec<(String, Ident)>) -> Result<()> {
    match body {
        SetExpr::SetOperation { left, right, .. } => {
            lateral_in(left, &mut Vec::new())?;
            lateral_in(right, &mut Vec::new())
        }
        SetExpr::Select(select) => {
            *renames = lateral_select(select)?;
            Ok(())
        }
        _ => Ok(()),
    }
}

fn lateral_select(select: &mut Select) -> Result<Vec<(String, Ident)>> {
    // `FROM t, json_table(…)`: a CROSS JOIN. After inner joins (`t JOIN u ON …, json_table(t.j
    // …)`) it may join first, which changes no answer; after outer ones it would, so there it
    // joins last (and is refused below, as after any join).
    if select.from.len() == 2
        && select.from[1].joins.is_empty()
        && is_json_table(&select.from[1].relation)
        && mentions_columns(&select.from[1].relation)
    {
        let relation = select.from.remove(1).relation;
        let inner_only = select.from[0].joins.iter().all(|join| {
            matches!(
                join.join_operator,
                JoinOperator::CrossJoin(_) | JoinOperator::Join(_) | JoinOperator::Inner(_)
            )
        });
        let at = if inner_only {
            0
        } else {
            select.from[0].joins.len()
        };
        select.from[0].joins.insert(
            at,
            datafusion::sql::sqlparser::ast::Join {
                relation,
                global: false,
                join_operator: JoinOperator::CrossJoin(JoinConstraint::None),
            },
        );
    }
    let mut renames: Vec<(String, Ident)> = Vec::new();
    for from in &mut select.from {
        standalone(&mut from.relation)?;
        let mut at = 0;
        while at < from.joins.len() {
            let join = &mut from.joins[at];
            if !is_json_table(&join.relation) {
                at += 1;
                continue;
            }
            if !mentions_columns(&join.relation) {
                standalone(&mut join.relation)?;
                at += 1;
                continue;
            }
            let outer = match &join.join_operator {
                JoinOperator::CrossJoin(c) | JoinOperator::Join(c) | JoinOperator::Inner(c)
                    if joins_every_row(c) =>
                {
                    false
                }
                JoinOperator::Left(c) | JoinOperator::LeftOuter(c) if joins_every_row(c) => true,
                _ => return Err(Error::NotSupported(LATERAL_PLACES.to_string())),
            };
            let Some(name) = relation_name(&from.relation).filter(|_| at == 0) else {
                return Err(Error::NotSupported(LATERAL_PLACES.to_string()));
            };
            let join = from.joins.remove(at);
            let Some(call) = call_of(&join.relation, outer)? else {
                continue;
            };
            let relation = from.relation.clone();
            let query = subquery(
                &format!(
                    "SELECT * EXCLUDE ({ROWS}), FIELDS FROM (SELECT *, unnest(CALL) AS {ROWS} FROM RELATION) AS t"
                ),
                &call,
                Some(relation),
            )?;
            from.relation = derived(
                query,
                Some(TableAlias {
                    explicit: true,
                    name: name.clone(),
                    columns: Vec::new(),
                    at: None,
                }),
            );
            if let TableFactor::Table {
                alias: Some(alias), ..
            } = &join.relation
            {
                renames.push((alias.name.value.to_ascii_lowercase(), name));
            }
        }
    }
    if renames.is_empty() {
        return Ok(renames);
    }
    if select
        .projection
        .iter()
        .any(|item| matches!(item, SelectItem::QualifiedWildcard(..)))
    {
        return Err(Error::NotSupported(
            "t.* beside a json_table reading t's columns: name the columns, or select *"
                .to_string(),
        ));
    }
    let mut rename = RenameQualifiers {
        renames,
        subqueries: 0,
    };
    let _ = datafusion::sql::sqlparser::ast::VisitMut::visit(select, &mut rename);
    Ok(rename.renames)
}
