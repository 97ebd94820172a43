//! The parsed statement rewritten so that DataFusion plans what Trino means:
//! - an integer literal is `integer` when it fits (DataFusion: always `bigint`), one with an
//!   exponent is `double`; other decimal literals are exact `decimal(p,s)` (a session option);
//! - `DECIMAL '…'`, `TIMESTAMP '…'`, `TIME '…'` and `DATE '…'` get the type their text gives in
//!   Trino: the precision of the digits written, and a timestamp's own time zone;
//! - select items without a usable name get Trino's `_colN`, and a repeated name an internal
//!   one, so `SELECT 1, 1` and `SELECT a, a` plan; [`labels`] are the names clients see.

use std::ops::ControlFlow;

use chrono::{NaiveDate, NaiveDateTime, NaiveTime, TimeZone};
use datafusion::arrow::array::timezone::Tz;
use datafusion::sql::sqlparser::ast::{
    CastKind, CharacterLength, DataType, ExactNumberInfo, Expr, FunctionArg, FunctionArgExpr,
    FunctionArguments, GroupByExpr, Ident, Interval, JoinConstraint, JoinOperator, LimitClause,
    NamedWindowExpr, ObjectName, OrderByKind, Query, Select, SelectItem, Set, SetExpr, Statement,
    TableAlias, TableFactor, TimezoneInfo, TypedString, UnaryOperator, Value, ValueWithSpan, Visit,
    VisitMut, Visitor, VisitorMut, WindowFrameBound, WindowSpec, WindowType,
};

use crate::error::{Error, ErrorCode, Result};

/// The name clients see for one output column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Label {
    /// A column's own name.
    Name(String),
    /// The alias the statement gave it (`AS a`).
    Alias(String),
    /// `_col<position>`.
    Position,
    /// A `*`: the names of the columns it expands to.
    Expand,
}

/// The type marker of a timestamp literal with its own zone, planned by
/// [`super::sql_types::TrinoTypes`]: arguments are the precision and the zone.
pub(super) const TIMESTAMP_WITH_ZONE: &str = "sqe_timestamp_with_zone";

/// Trino's output names of a query statement (before names are folded: aliases keep their case).
pub(super) fn labels(statement: &Statement) -> Option<Vec<Label>> {
    match statement {
        Statement::Query(query) => labels_of(&query.body),
        _ => None,
    }
}

fn labels_of(body: &SetExpr) -> Option<Vec<Label>> {
    match body {
        SetExpr::Select(select) => Some(select.projection.iter().map(label).collect()),
        SetExpr::Query(query) => labels_of(&query.body),
        SetExpr::SetOperation { left, .. } => labels_of(left),
        SetExpr::Values(values) => values
            .rows
            .first()
            .map(|row| vec![Label::Position; row.len()]),
        _ => None,
    }
}

fn label(item: &SelectItem) -> Label {
    match item {
        SelectItem::ExprWithAlias { alias, .. } => Label::Alias(alias.value.clone()),
        SelectItem::UnnamedExpr(expr) => match reference_name(expr) {
            Some(name) => Label::Name(name),
            None => Label::Position,
        },
        SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => Label::Expand,
        SelectItem::ExprWithAliases { .. } => Label::Position,
    }
}

/// The name of a column reference, folded as Trino folds it.
fn reference_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Identifier(ident) => Some(ident.value.to_lowercase()),
        Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.to_lowercase()),
        Expr::Nested(inner) => reference_name(inner),
        _ => None,
    }
}

/// Rewrites `statement` in place (see the module documentation).
pub(super) fn to_datafusion(statement: &mut Statement) -> Result<()> {
    super::lambdas::restore(statement)?;
    super::table_functions::expand(statement)?;
    refuse_unplannable(statement)?;
    let _ = statement.visit(&mut MarkVerbatim);
    let mut rewrite = Rewrite { queries: 0 };
    if let ControlFlow::Break(error) = statement.visit(&mut rewrite) {
        return Err(error);
    }
    let _ = statement.visit(&mut Unmark);
    Ok(())
}

/// Statements and forms DataFusion would refuse with a dump of its syntax tree, refused here
/// in SQL's words instead.
fn refuse_unplannable(statement: &Statement) -> Result<()> {
    if let Statement::Set(set) = statement
        && !matches!(set, Set::SingleAssignment { .. })
    {
        return Err(Error::NotSupported(set.to_string()));
    }
    struct TableFunctions;
    impl Visitor for TableFunctions {
        type Break = Error;
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<Error> {
            let refused = match factor {
                TableFactor::TableFunction { expr, .. } => {
                    return ControlFlow::Break(Error::NotSupported(format!(
                        "table functions: TABLE({expr})"
                    )));
                }
                TableFactor::MatchRecognize { .. } => "MATCH_RECOGNIZE",
                TableFactor::Pivot { .. } => "PIVOT",
                TableFactor::Unpivot { .. } => "UNPIVOT",
                TableFactor::JsonTable { .. } | TableFactor::OpenJsonTable { .. } => "JSON_TABLE",
                TableFactor::XmlTable { .. } => "XMLTABLE",
                TableFactor::SemanticView { .. } => "SEMANTIC_VIEW",
                TableFactor::Table { .. }
                | TableFactor::Derived { .. }
                | TableFactor::Function { .. }
                | TableFactor::UNNEST { .. }
                | TableFactor::NestedJoin { .. } => return ControlFlow::Continue(()),
            };
            ControlFlow::Break(Error::NotSupported(refused.into()))
        }
    }
    match statement.visit(&mut TableFunctions) {
        ControlFlow::Break(refused) => Err(refused),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// Marks the numbers DataFusion reads as they are written (positions, limits, frame bounds,
/// interval amounts, table function arguments) so [`Rewrite`] leaves them. The mark is the
/// number's "long" flag, which Trino's syntax never sets and [`Unmark`] clears again.
struct MarkVerbatim;

fn mark(expr: &mut Expr) {
    match expr {
        Expr::Value(ValueWithSpan {
            value: Value::Number(_, long),
            ..
        }) => *long = true,
        Expr::UnaryOp {
            op: UnaryOperator::Minus | UnaryOperator::Plus,
            expr,
        } => mark(expr),
        Expr::Nested(inner) => mark(inner),
        _ => {}
    }
}

fn mark_window(spec: &mut WindowSpec) {
    if let Some(frame) = &mut spec.window_frame {
        for bound in std::iter::once(&mut frame.start_bound).chain(frame.end_bound.as_mut()) {
            if let WindowFrameBound::Preceding(Some(e)) | WindowFrameBound::Following(Some(e)) =
                bound
            {
                mark(e);
            }
        }
    }
}

fn mark_arguments(args: &mut [FunctionArg]) {
    for arg in args {
        let (FunctionArg::Unnamed(FunctionArgExpr::Expr(e))
        | FunctionArg::Named {
            arg: FunctionArgExpr::Expr(e),
            ..
        }
        | FunctionArg::ExprNamed {
            arg: FunctionArgExpr::Expr(e),
            ..
        }) = arg
        else {
            continue;
        };
        mark(e);
    }
}

impl VisitorMut for MarkVerbatim {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        match &mut query.limit_clause {
            Some(LimitClause::LimitOffset {
                limit,
                offset,
                limit_by,
            }) => {
                limit.iter_mut().for_each(mark);
                if let Some(offset) = offset {
                    mark(&mut offset.value);
                }
                limit_by.iter_mut().for_each(mark);
            }
            Some(LimitClause::OffsetCommaLimit { offset, limit }) => {
                mark(offset);
                mark(limit);
            }
            None => {}
        }
        if let Some(fetch) = &mut query.fetch {
            fetch.quantity.iter_mut().for_each(mark);
        }
        if let Some(order_by) = &mut query.order_by
            && let OrderByKind::Expressions(items) = &mut order_by.kind
        {
            items.iter_mut().for_each(|item| mark(&mut item.expr));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        if let GroupByExpr::Expressions(items, _) = &mut select.group_by {
            items.iter_mut().for_each(mark);
        }
        for window in &mut select.named_window {
            if let NamedWindowExpr::WindowSpec(spec) = &mut window.1 {
                mark_window(spec);
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        match factor {
            TableFactor::Table {
                args: Some(args), ..
            } => mark_arguments(&mut args.args),
            TableFactor::Function { args, .. } => mark_arguments(args),
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        match expr {
            Expr::Function(function) => {
                if let Some(WindowType::WindowSpec(spec)) = &mut function.over {
                    mark_window(spec);
                }
            }
            Expr::Interval(interval) => mark(&mut interval.value),
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

struct Unmark;

impl VisitorMut for Unmark {
    type Break = ();

    fn post_visit_value(&mut self, value: &mut ValueWithSpan) -> ControlFlow<()> {
        if let Value::Number(_, long) = &mut value.value {
            *long = false;
        }
        ControlFlow::Continue(())
    }
}

struct Rewrite {
    /// How many queries the visitor is inside: literals are retyped in queries only (table
    /// properties and other statement options are read as written).
    queries: usize,
}

impl VisitorMut for Rewrite {
    type Break = Error;

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<Error> {
        self.queries += 1;
        match fetch_as_limit(query)
            .and_then(|()| super::json_table_lateral::lateral(query))
            .and_then(|()| lateral_unnest(query))
        {
            Ok(()) => ControlFlow::Continue(()),
            Err(error) => ControlFlow::Break(error),
        }
    }

    fn post_visit_query(&mut self, _query: &mut Query) -> ControlFlow<Error> {
        self.queries -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<Error> {
        name_items(&mut select.projection);
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<Error> {
        match ordinality_as_array(factor) {
            Ok(()) => ControlFlow::Continue(()),
            Err(error) => ControlFlow::Break(error),
        }
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<Error> {
        let rewritten = match expr {
            Expr::Value(ValueWithSpan {
                value: Value::Number(n, false),
                ..
            }) if self.queries > 0 => number(n),
            // `U&'…'`, its escapes already read by the parser.
            Expr::Value(ValueWithSpan {
                value: Value::UnicodeStringLiteral(text),
                span,
            }) => Some(Expr::Value(ValueWithSpan {
                value: Value::SingleQuotedString(std::mem::take(text)),
                span: *span,
            })),
            Expr::Interval(interval) => match trino_interval(interval) {
                Ok(rewritten) => rewritten,
                Err(e) => return ControlFlow::Break(e),
            },
            Expr::TypedString(typed) => match typed_literal(typed) {
                Ok(rewritten) => rewritten,
                Err(e) => return ControlFlow::Break(e),
            },
            // Trino's `ts AT TIME ZONE z` is `at_timezone(ts, z)`: a zone-less timestamp is
            // read in the session's zone first (DataFusion's read its wall clock in `z`).
            Expr::AtTimeZone {
                timestamp,
                time_zone,
            } => Some(super::lambdas::call(
                "at_timezone",
                vec![
                    std::mem::replace(timestamp.as_mut(), Expr::value(Value::Null)),
                    std::mem::replace(time_zone.as_mut(), Expr::value(Value::Null)),
                ],
            )),
            // `position(s IN t)` is `strpos(t, s)`, a bigint in Trino.
            Expr::Position { expr: needle, r#in } => super::spellings::spelled(
                "CAST(strpos($1, $2) AS BIGINT)",
                &[r#in.as_ref().clone(), needle.as_ref().clone()],
            ),
            Expr::Function(function)
                if let Some(refused) = super::spellings::refused_window(function)
                    .or_else(|| super::spellings::refused_distinct(function)) =>
            {
                return ControlFlow::Break(refused);
            }
            Expr::Function(function) => super::spellings::respelled(function)
                .or_else(|| super::spellings::listagg(function))
                .or_else(|| super::spellings::normalize(function))
                .or_else(|| super::spellings::from_unixtime_offset(function))
                .or_else(|| super::spellings::clock(function))
                .or_else(|| super::lambdas::matches(function)),
            Expr::Cast {
                kind,
                expr: inner,
                data_type,
                ..
            } => {
                bounded_string_cast(kind, inner, data_type).or_else(|| typed_cast(inner, data_type))
            }
            _ => None,
        };
        if let Some(rewritten) = rewritten {
            *expr = rewritten;
        }
        ControlFlow::Continue(())
    }
}

/// `FETCH FIRST n ROWS ONLY` (or `NEXT`, `ROW`; n is 1 when left out) as the `LIMIT n` it
/// means: DataFusion refuses the standard spelling. `WITH TIES` and `PERCENT` are refused by
/// name; `LIMIT` and `FETCH` together are a syntax error, as in Trino.
fn fetch_as_limit(query: &mut Query) -> Result<()> {
    let Some(fetch) = query.fetch.take() else {
        return Ok(());
    };
    if fetch.with_ties || fetch.percent {
        return Err(Error::NotSupported(
            "FETCH FIRST with WITH TIES or PERCENT is not supported".to_string(),
        ));
    }
    let mut quantity = fetch.quantity.unwrap_or_else(|| number_literal(1));
    mark(&mut quantity);
    match &mut query.limit_clause {
        None => {
            query.limit_clause = Some(LimitClause::LimitOffset {
                limit: Some(quantity),
                offset: None,
                limit_by: Vec::new(),
            });
        }
        Some(LimitClause::LimitOffset {
            limit: limit @ None,
            ..
        }) => *limit = Some(quantity),
        Some(_) => {
            return Err(Error::Syntax {
                location: None,
                message: "FETCH FIRST and LIMIT cannot both be given".to_string(),
            });
        }
    }
    Ok(())
}

/// `FROM t CROSS JOIN UNNEST(t.a, …) AS u(x, …)` (or `FROM t, UNNEST(…)`): each row of `t`
/// with each element of its arrays, which DataFusion cannot plan as a join (its UNNEST cannot
/// see another table's columns). Its `unnest` in a select list can, zipping several arrays as
/// Trino does and dropping rows whose arrays are empty or NULL, so `t` becomes
/// `(SELECT *, unnest(t.a) AS x, … FROM t) AS t` and `u.x` is `t.x`. For a single table (or
/// aliased subquery) before the UNNEST; others are refused by name.
fn lateral_unnest(query: &mut Query) -> Result<()> {
    let SetExpr::Select(select) = query.body.as_mut() else {
        return Ok(());
    };
    // `FROM t, UNNEST(…)`: the same as a CROSS JOIN.
    if select.from.len() == 2
        && select.from[0].joins.is_empty()
        && select.from[1].joins.is_empty()
        && matches!(select.from[1].relation, TableFactor::UNNEST { .. })
    {
        let unnest = select.from.remove(1).relation;
        select.from[0]
            .joins
            .push(datafusion::sql::sqlparser::ast::Join {
                relation: unnest,
                global: false,
                join_operator: JoinOperator::CrossJoin(JoinConstraint::None),
            });
    }
    let mut renames: Vec<(String, Ident)> = Vec::new();
    for from in &mut select.from {
        let lateral = |join: &datafusion::sql::sqlparser::ast::Join| {
            matches!(join.relation, TableFactor::UNNEST { .. })
                && matches!(
                    join.join_operator,
                    JoinOperator::CrossJoin(JoinConstraint::None)
                        | JoinOperator::Join(JoinConstraint::None)
                        | JoinOperator::Inner(JoinConstraint::None)
                )
        };
        let outer = |join: &datafusion::sql::sqlparser::ast::Join| {
            matches!(join.relation, TableFactor::UNNEST { .. })
                && !lateral(join)
                && mentions_columns(&join.relation)
        };
        if from.joins.iter().any(outer) {
            return Err(Error::NotSupported(
                "UNNEST of columns is supported as CROSS JOIN UNNEST (not LEFT JOIN or ON …)"
                    .to_string(),
            ));
        }
        let Some(at) = from.joins.iter().position(lateral) else {
            continue;
        };
        let name = relation_name(&from.relation).filter(|_| at == 0);
        let Some(name) = name else {
            // Arrays of constants are DataFusion's to join; arrays of another relation's
            // columns it cannot plan (and would say so in a dump of its plan).
            if mentions_columns(&from.joins[at].relation) {
                return Err(Error::NotSupported(
                    "CROSS JOIN UNNEST of columns is supported right after a single table or aliased subquery"
                        .to_string(),
                ));
            }
            continue;
        };
        let mut unnest = from.joins.remove(0).relation;
        ordinality_as_array(&mut unnest)?;
        let TableFactor::UNNEST {
            alias, array_exprs, ..
        } = unnest
        else {
            continue;
        };
        let Some(alias) = alias.filter(|a| a.columns.len() == array_exprs.len()) else {
            return Err(Error::NotSupported(
                "CROSS JOIN UNNEST needs a name for each column it makes: UNNEST(a) AS t(x)"
                    .to_string(),
            ));
        };
        // Built from the statement's own syntax trees: its text written out and read again
        // would not keep every quote of its strings (a backslash before a quote).
        let parser = |text: &str| {
            datafusion::sql::sqlparser::parser::Parser::new(
                &datafusion::sql::sqlparser::dialect::GenericDialect {},
            )
            .try_with_sql(text)
        };
        let internal = |e: datafusion::sql::sqlparser::parser::ParserError| {
            Error::Internal(format!("CROSS JOIN UNNEST as a select list: {e}"))
        };
        let mut items = Vec::with_capacity(array_exprs.len());
        for (array, column) in array_exprs.iter().zip(&alias.columns) {
            let mut unnest = parser("unnest(1)")
                .and_then(|mut p| p.parse_expr())
                .map_err(internal)?;
            if let Expr::Function(function) = &mut unnest
                && let FunctionArguments::List(list) = &mut function.args
            {
                list.args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(array.clone()))];
            }
            items.push(SelectItem::ExprWithAlias {
                expr: unnest,
                alias: column.name.clone(),
            });
        }
        // `*`, not `t.*`: the subquery reads one relation, and DataFusion plans a qualified
        // wildcard beside `unnest` as an unknown function.
        let mut subquery = parser("SELECT * FROM t")
            .and_then(|mut p| p.parse_query())
            .map_err(internal)?;
        if let SetExpr::Select(select) = subquery.body.as_mut()
            && let Some(first) = select.from.first_mut()
        {
            select.projection.extend(items);
            first.relation = from.relation.clone();
        }
        from.relation = TableFactor::Derived {
            lateral: false,
            subquery,
            alias: Some(TableAlias {
                explicit: true,
                name: name.clone(),
                columns: Vec::new(),
                at: None,
            }),
            sample: None,
        };
        renames.push((alias.name.value.to_ascii_lowercase(), name));
    }
    if renames.is_empty() {
        return Ok(());
    }
    // `t.*` would now take the UNNEST's columns too.
    let wildcard_of_renamed = select
        .projection
        .iter()
        .any(|item| matches!(item, SelectItem::QualifiedWildcard(..)));
    if wildcard_of_renamed {
        return Err(Error::NotSupported(
            "t.* beside CROSS JOIN UNNEST: name the columns, or select *".to_string(),
        ));
    }
    let mut rename = RenameQualifiers {
        renames,
        subqueries: 0,
    };
    let _ = select.visit(&mut rename);
    if let Some(order_by) = &mut query.order_by {
        let _ = order_by.visit(&mut rename);
    }
    Ok(())
}

/// The name a single table or aliased subquery's columns are qualified with: what a lateral
/// relation after it is written into.
pub(super) fn relation_name(factor: &TableFactor) -> Option<Ident> {
    match factor {
        TableFactor::Table { alias: Some(a), .. } | TableFactor::Derived { alias: Some(a), .. } => {
            Some(a.name.clone())
        }
        TableFactor::Table {
            name, alias: None, ..
        } => name.0.last().and_then(|p| p.as_ident()).cloned(),
        _ => None,
    }
}

/// `u.x` as `t.x` for each (u, t) of `renames`, in the query's own clauses only: a subquery
/// may name a relation of its own `u` (its references to the outer `u` then fail by name
/// instead of reading another relation).
pub(super) struct RenameQualifiers {
    pub(super) renames: Vec<(String, Ident)>,
    pub(super) subqueries: usize,
}

impl VisitorMut for RenameQualifiers {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.subqueries += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.subqueries -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if self.subqueries == 0
            && let Expr::CompoundIdentifier(parts) = expr
            && parts.len() == 2
            && let Some((_, name)) = self
                .renames
                .iter()
                .find(|(from, _)| parts[0].value.eq_ignore_ascii_case(from))
        {
            parts[0] = name.clone();
        }
        ControlFlow::Continue(())
    }
}

/// Whether `factor` reads a column (of its own or of another relation).
pub(super) fn mentions_columns(factor: &TableFactor) -> bool {
    datafusion::sql::sqlparser::ast::visit_expressions(factor, |expr| match expr {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// `UNNEST(a, …) WITH ORDINALITY` as `UNNEST(a, …, sequence(1, n))`, n the longest array's
/// length: DataFusion refuses the clause, and unnests several arrays side by side as Trino does
/// (the shorter padded with NULLs), so the ordinal is one more array, a `bigint` from 1.
fn ordinality_as_array(factor: &mut TableFactor) -> Result<()> {
    let TableFactor::UNNEST {
        array_exprs,
        with_ordinality,
        ..
    } = factor
    else {
        return Ok(());
    };
    if !*with_ordinality {
        return Ok(());
    }
    let lengths: Vec<String> = array_exprs
        .iter()
        .map(|array| format!("cardinality({array})"))
        .collect();
    let longest = match lengths.as_slice() {
        [one] => one.clone(),
        many => format!("greatest({})", many.join(", ")),
    };
    let ordinals = datafusion::sql::sqlparser::parser::Parser::new(
        &datafusion::sql::sqlparser::dialect::GenericDialect {},
    )
    .try_with_sql(&format!("generate_series(1, {longest})"))
    .and_then(|mut parser| parser.parse_expr())
    .map_err(|e| Error::Internal(format!("the ordinality of UNNEST: {e}")))?;
    array_exprs.push(ordinals);
    *with_ordinality = false;
    Ok(())
}

/// Gives each unnamed expression Trino's `_col<position>` as its alias, and a name already
/// taken by an earlier item an internal one (clients see [`labels`]).
fn name_items(items: &mut [SelectItem]) {
    let mut taken: Vec<String> = Vec::new();
    for (i, item) in items.iter_mut().enumerate() {
        let position = Ident::new(format!("_col{i}"));
        match item {
            SelectItem::UnnamedExpr(expr) => match reference_name(expr) {
                Some(name) if !taken.contains(&name) => taken.push(name),
                _ => {
                    *item = SelectItem::ExprWithAlias {
                        expr: expr.clone(),
                        alias: position,
                    }
                }
            },
            SelectItem::ExprWithAlias { alias, .. } => {
                let name = alias.value.to_lowercase();
                if taken.contains(&name) {
                    *alias = position;
                } else {
                    taken.push(name);
                }
            }
            _ => {}
        }
    }
}

/// A cast to `varchar(n)` or `char(n)` (`char` is `char(1)`): Trino's bounded-string cast
/// (`sqe_functions::CAST_BOUNDED`), which knows the value's type.
fn bounded_string_cast(kind: &CastKind, inner: &Expr, data_type: &DataType) -> Option<Expr> {
    let length = |l: &Option<CharacterLength>| match l {
        Some(CharacterLength::IntegerLength { length, .. }) => Some(*length),
        _ => None,
    };
    let (form, n) = match data_type {
        DataType::Varchar(l) | DataType::CharVarying(l) | DataType::CharacterVarying(l) => {
            ("varchar", length(l)?)
        }
        DataType::Char(l) | DataType::Character(l) => ("char", length(l).unwrap_or(1)),
        _ => return None,
    };
    let fallible = matches!(kind, CastKind::TryCast | CastKind::SafeCast);
    let form = if fallible {
        format!("try_{form}")
    } else {
        form.to_string()
    };
    let text = format!("{}($1, {n}, '{form}')", sqe_functions::CAST_BOUNDED);
    super::spellings::spelled(&text, std::slice::from_ref(inner))
}

/// A cast to `json`, `uuid` or `ipaddress`: SQE's (`sqe_functions::CAST_TO_JSON`,
/// `sqe_functions::SixteenBytes::from_text`), whose results are typed so.
fn typed_cast(inner: &Expr, data_type: &DataType) -> Option<Expr> {
    let function = match data_type {
        DataType::JSON => sqe_functions::CAST_TO_JSON,
        DataType::Uuid => sqe_functions::SixteenBytes::Uuid.from_text(),
        DataType::Custom(name, arguments)
            if arguments.is_empty() && name.to_string().eq_ignore_ascii_case("ipaddress") =>
        {
            sqe_functions::SixteenBytes::IpAddress.from_text()
        }
        _ => return None,
    };
    super::spellings::spelled(&format!("{function}($1)"), std::slice::from_ref(inner))
}

fn cast(expr: Expr, data_type: DataType) -> Expr {
    Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(expr),
        data_type,
        array: false,
        format: None,
    }
}

fn number_literal(n: impl ToString) -> Expr {
    Expr::value(Value::Number(n.to_string(), false))
}

/// A number as Trino types it: `integer` if it fits, `double` with an exponent.
fn number(n: &str) -> Option<Expr> {
    if n.contains(['e', 'E']) {
        return Some(cast(
            Expr::value(Value::SingleQuotedString(n.to_string())),
            DataType::Double(ExactNumberInfo::None),
        ));
    }
    if !n.contains('.') && n.parse::<i32>().is_ok() {
        return Some(cast(number_literal(n), DataType::Integer(None)));
    }
    None
}

/// `INTERVAL '…' DAY TO SECOND` and Trino's other forms as the interval type Trino gives
/// them (`interval year to month` or `interval day to second`).
fn trino_interval(interval: &Interval) -> Result<Option<Expr>> {
    let Some(leading) = &interval.leading_field else {
        return Ok(None);
    };
    let last = interval.last_field.as_ref();
    if !super::intervals::is_trino_form(leading, last) {
        return Ok(None);
    }
    let quoted = |e: &Expr| match e {
        Expr::Value(ValueWithSpan {
            value: Value::SingleQuotedString(s),
            ..
        }) => Some(s.clone()),
        _ => None,
    };
    let (text, negated) = match interval.value.as_ref() {
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => (quoted(expr), true),
        value => (quoted(value), false),
    };
    let Some(text) = text else {
        return Ok(None);
    };
    let value = super::intervals::interval_value(&text, negated, leading, last)?;
    Ok(Some(cast(
        Expr::value(Value::SingleQuotedString(value.arrow_text())),
        DataType::Interval {
            fields: Some(value.fields()),
            precision: None,
        },
    )))
}

fn typed_literal(typed: &TypedString) -> Result<Option<Expr>> {
    let Some(text) = typed.value.value.clone().into_string() else {
        return Ok(None);
    };
    match &typed.data_type {
        DataType::Decimal(ExactNumberInfo::None) | DataType::Numeric(ExactNumberInfo::None) => {
            Ok(decimal_type(&text).map(|(precision, scale)| {
                Expr::TypedString(TypedString {
                    data_type: DataType::Decimal(ExactNumberInfo::PrecisionAndScale(
                        precision, scale,
                    )),
                    ..typed.clone()
                })
            }))
        }
        DataType::Timestamp(None, TimezoneInfo::None) => timestamp_literal(&text).map(Some),
        DataType::Time(None, TimezoneInfo::None) => time_literal(&text).map(Some),
        DataType::Date => date_literal(&text).map(Some),
        // `JSON '…'`: the text read as JSON, canonical.
        DataType::JSON => match sqe_functions::canonical_json(&text) {
            Some(_) => Ok(super::spellings::spelled(
                "json_parse($1)",
                &[Expr::value(Value::SingleQuotedString(text))],
            )),
            None => Err(invalid_literal("JSON", &text, "it is not JSON")),
        },
        // `UUID '…'`: its 16 bytes (`IPADDRESS '…'` is a cast, see the dialect's tokens).
        DataType::Uuid => sixteen_bytes_literal(sqe_functions::SixteenBytes::Uuid, text),
        // `CHAR 'ab'` is a char(2), as long as its text.
        DataType::Char(None) | DataType::Character(None) => {
            let length = CharacterLength::IntegerLength {
                length: text.chars().count() as u64,
                unit: None,
            };
            Ok(bounded_string_cast(
                &CastKind::Cast,
                &Expr::value(Value::SingleQuotedString(text)),
                &DataType::Char(Some(length)),
            ))
        }
        _ => Ok(None),
    }
}

fn sixteen_bytes_literal(of: sqe_functions::SixteenBytes, text: String) -> Result<Option<Expr>> {
    match of.parse(&text) {
        Some(_) => Ok(super::spellings::spelled(
            &format!("{}($1)", of.from_text()),
            &[Expr::value(Value::SingleQuotedString(text))],
        )),
        None => Err(invalid_literal(
            &of.name().to_uppercase(),
            &text,
            &format!("it is not a {}", of.name()),
        )),
    }
}

/// `decimal(p,s)` of a decimal literal's text: the digits written, at least one.
fn decimal_type(text: &str) -> Option<(u64, i64)> {
    let digits = text.trim().trim_start_matches(['+', '-']);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole
            .chars()
            .chain(fraction.chars())
            .all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let significant = whole.trim_start_matches('0').len() as u64;
    let scale = fraction.len() as u64;
    Some(((significant + scale).max(1), scale as i64))
}

fn invalid_literal(kind: &str, text: &str, why: &str) -> Error {
    Error::invalid(
        ErrorCode::InvalidLiteral,
        format!("'{text}' is not a valid {kind} literal: {why}"),
    )
}

/// A date, time and zone written as Trino accepts them: `YYYY-MM-DD[ HH:MM[:SS[.f...]]][ zone]`.
struct DateTimeText<'a> {
    date: &'a str,
    time: Option<&'a str>,
    zone: Option<&'a str>,
}

fn split_date_time(text: &str) -> DateTimeText<'_> {
    let text = text.trim();
    let (date, rest) = text.split_once(' ').unwrap_or((text, ""));
    let rest = rest.trim_start();
    let time_len = rest
        .find(|c: char| !(c.is_ascii_digit() || c == ':' || c == '.'))
        .unwrap_or(rest.len());
    let (time, zone) = rest.split_at(time_len);
    let zone = zone.trim();
    DateTimeText {
        date,
        time: (!time.is_empty()).then_some(time),
        zone: (!zone.is_empty()).then_some(zone),
    }
}

/// Digits after the decimal point of a time.
fn fraction_digits(time: &str) -> u64 {
    time.split_once('.').map_or(0, |(_, f)| f.len() as u64)
}

fn parse_date(date: &str) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(date, "%Y-%m-%d").ok()
}

fn parse_time(time: &str) -> Option<NaiveTime> {
    ["%H:%M:%S%.f", "%H:%M"]
        .iter()
        .find_map(|format| NaiveTime::parse_from_str(time, format).ok())
}

/// Trino's name of a time zone: UTC and its aliases as `UTC`, offsets as `±HH:MM`, region
/// names as written (when known).
pub(super) fn trino_zone(zone: &str) -> Option<String> {
    const UTC: &[&str] = &["UTC", "Z", "UT", "GMT", "UCT", "ZULU", "ETC/UTC", "ETC/GMT"];
    let upper = zone.to_ascii_uppercase();
    if UTC.contains(&upper.as_str()) {
        return Some("UTC".into());
    }
    let offset = ["UTC", "GMT", "UT"]
        .iter()
        .find_map(|prefix| {
            upper
                .strip_prefix(prefix)
                .filter(|rest| rest.starts_with(['+', '-']))
        })
        .unwrap_or(&upper);
    if let Some(sign) = offset.chars().next().filter(|c| *c == '+' || *c == '-') {
        let body = &offset[1..];
        let (hours, minutes) = match body.split_once(':') {
            Some((h, m)) => (h, m),
            None if body.len() > 2 => body.split_at(body.len() - 2),
            None => (body, "0"),
        };
        let (hours, minutes): (u32, u32) = (hours.parse().ok()?, minutes.parse().ok()?);
        if hours > 14 || minutes > 59 || hours.to_string().len() > 2 {
            return None;
        }
        if hours == 0 && minutes == 0 {
            return Some("UTC".into());
        }
        return Some(format!("{sign}{hours:02}:{minutes:02}"));
    }
    zone.parse::<Tz>().ok().map(|_| zone.to_string())
}

/// The unit a precision is stored in: 0 seconds, up to 3 milliseconds, 6 micro, 9 nano.
fn units_per_second(precision: u64) -> i64 {
    match precision {
        0 => 1,
        1..=3 => 1_000,
        4..=6 => 1_000_000,
        _ => 1_000_000_000,
    }
}

/// `datetime` as a count of its unit since the epoch.
fn epoch_units(datetime: NaiveDateTime, precision: u64) -> Option<i64> {
    let units = units_per_second(precision);
    let utc = datetime.and_utc();
    let nanos_per_unit = 1_000_000_000 / units;
    utc.timestamp()
        .checked_mul(units)?
        .checked_add(i64::from(utc.timestamp_subsec_nanos()) / nanos_per_unit)
}

/// The value a timestamp literal casts from: a count of its unit since the epoch, except for
/// nanoseconds, whose casts from integers DataFusion reads as seconds: those are ISO text
/// (exact, and in range: nanoseconds reach 1677 to 2262 only).
fn timestamp_value(datetime: NaiveDateTime, precision: u64, utc: bool) -> Option<Expr> {
    if precision > 6 {
        epoch_units(datetime, precision)?;
        let zone = if utc { "Z" } else { "" };
        return Some(Expr::value(Value::SingleQuotedString(format!(
            "{}{zone}",
            datetime.format("%Y-%m-%dT%H:%M:%S%.9f")
        ))));
    }
    epoch_units(datetime, precision).map(number_literal)
}

/// A timestamp literal's text, read: its wall-clock time, the digits of its fraction, and its
/// zone (Trino's name for it) with the instant it names.
struct TimestampText {
    local: NaiveDateTime,
    precision: u64,
    zoned: Option<(String, NaiveDateTime)>,
}

fn read_timestamp(text: &str) -> Result<TimestampText> {
    let parts = split_date_time(text);
    let precision = parts.time.map_or(0, fraction_digits);
    if precision > 9 {
        return Err(Error::NotSupported(format!(
            "timestamp({precision}): SQE keeps timestamps to the nanosecond (precision 9)"
        )));
    }
    let date =
        parse_date(parts.date).ok_or_else(|| invalid_literal("TIMESTAMP", text, "not a date"))?;
    let time = match parts.time {
        Some(time) => {
            parse_time(time).ok_or_else(|| invalid_literal("TIMESTAMP", text, "not a time"))?
        }
        None => NaiveTime::MIN,
    };
    let local = date.and_time(time);
    let Some(zone) = parts.zone else {
        return Ok(TimestampText {
            local,
            precision,
            zoned: None,
        });
    };
    let zone =
        trino_zone(zone).ok_or_else(|| invalid_literal("TIMESTAMP", text, "unknown time zone"))?;
    let tz: Tz = zone
        .parse()
        .map_err(|_| invalid_literal("TIMESTAMP", text, "unknown time zone"))?;
    // A wall-clock time a change of offset repeats is its earlier instant; one it skips
    // does not exist.
    let instant = tz
        .from_local_datetime(&local)
        .earliest()
        .ok_or_else(|| {
            invalid_literal(
                "TIMESTAMP",
                text,
                &format!("the local time does not exist in {zone}"),
            )
        })?
        .naive_utc();
    Ok(TimestampText {
        local,
        precision,
        zoned: Some((zone, instant)),
    })
}

/// The instant a `TIMESTAMP '…'` literal with a time zone names, in milliseconds since the
/// epoch; `None` when it names no zone.
pub(super) fn zoned_timestamp_millis(text: &str) -> Result<Option<i64>> {
    Ok(read_timestamp(text)?
        .zoned
        .map(|(_, instant)| instant.and_utc().timestamp_millis()))
}

/// `TIMESTAMP '…'`: `timestamp(p)` with p the digits of its fraction, `with time zone` (its
/// own) when it names one. Planned as a count of units since the epoch, cast to the type, so
/// no text is read twice.
fn timestamp_literal(text: &str) -> Result<Expr> {
    let TimestampText {
        local,
        precision,
        zoned,
    } = read_timestamp(text)?;
    let out_of_range = || invalid_literal("TIMESTAMP", text, "out of range");
    let Some((zone, instant)) = zoned else {
        return Ok(cast(
            timestamp_value(local, precision, false).ok_or_else(out_of_range)?,
            DataType::Timestamp(Some(precision), TimezoneInfo::None),
        ));
    };
    Ok(cast(
        timestamp_value(instant, precision, true).ok_or_else(out_of_range)?,
        DataType::Custom(
            ObjectName::from(vec![Ident::new(TIMESTAMP_WITH_ZONE)]),
            vec![precision.to_string(), zone],
        ),
    ))
}

/// `TIME '…'`: `time(p)` with p the digits of its fraction.
fn time_literal(text: &str) -> Result<Expr> {
    let trimmed = text.trim();
    let time_len = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == ':' || c == '.'))
        .unwrap_or(trimmed.len());
    if time_len < trimmed.len() {
        return Err(Error::NotSupported(
            "time with time zone: SQE has times without a zone only".into(),
        ));
    }
    let precision = fraction_digits(trimmed);
    if precision > 9 {
        return Err(Error::NotSupported(format!(
            "time({precision}): SQE keeps times to the nanosecond (precision 9)"
        )));
    }
    let time = parse_time(trimmed).ok_or_else(|| invalid_literal("TIME", text, "not a time"))?;
    let since_midnight = NaiveDate::default().and_time(time);
    let units = epoch_units(since_midnight, precision)
        .ok_or_else(|| invalid_literal("TIME", text, "out of range"))?;
    let value = if precision <= 3 {
        cast(number_literal(units), DataType::Integer(None))
    } else {
        number_literal(units)
    };
    Ok(cast(
        value,
        DataType::Time(Some(precision), TimezoneInfo::None),
    ))
}

/// `DATE '…'`, any year Trino accepts (`DATE '1-01-01'`, `DATE '10000-01-01'`), as days since
/// the epoch.
fn date_literal(text: &str) -> Result<Expr> {
    let days = crate::calendar::parse_date(text.trim())
        .ok_or_else(|| invalid_literal("DATE", text, "not a date"))?;
    Ok(cast(
        cast(number_literal(days), DataType::Integer(None)),
        DataType::Date,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_literals_keep_the_digits_written() {
        assert_eq!(decimal_type("10.3"), Some((3, 1)));
        assert_eq!(decimal_type("0.0000000000"), Some((10, 10)));
        assert_eq!(decimal_type("-007"), Some((1, 0)));
        assert_eq!(
            decimal_type(&format!("0.{}", "9".repeat(38))),
            Some((38, 38))
        );
        assert_eq!(decimal_type("1e3"), None);
        assert_eq!(decimal_type("."), None);
    }

    #[test]
    fn zones_are_named_as_trino_names_them() {
        assert_eq!(trino_zone("UTC-05:30").as_deref(), Some("-05:30"));
        assert_eq!(trino_zone("+8").as_deref(), Some("+08:00"));
        assert_eq!(trino_zone("-0800").as_deref(), Some("-08:00"));
        assert_eq!(trino_zone("GMT").as_deref(), Some("UTC"));
        assert_eq!(trino_zone("+00:00").as_deref(), Some("UTC"));
        assert_eq!(
            trino_zone("America/Los_Angeles").as_deref(),
            Some("America/Los_Angeles")
        );
        assert_eq!(trino_zone("Mars/Olympus"), None);
    }

    #[test]
    fn timestamp_text_splits_into_date_time_and_zone() {
        let t = split_date_time("2001-08-22 03:04:05.321 -08:00");
        assert_eq!(
            (t.date, t.time, t.zone),
            ("2001-08-22", Some("03:04:05.321"), Some("-08:00"))
        );
        let t = split_date_time("2019-01-01 00:00:00.000+01:00");
        assert_eq!((t.time, t.zone), (Some("00:00:00.000"), Some("+01:00")));
        let t = split_date_time("2001-08-22");
        assert_eq!((t.time, t.zone), (None, None));
    }

    #[test]
    fn a_local_time_skipped_by_a_change_of_offset_is_refused() {
        let refused = timestamp_literal("2021-03-28 02:30:00 Europe/Brussels");
        assert_eq!(
            refused.err().map(|e| e.code()),
            Some(ErrorCode::InvalidLiteral)
        );
        // A repeated one is its earlier instant.
        assert!(timestamp_literal("2002-10-27 01:30:00 US/Eastern").is_ok());
    }
}
