//! Trino's lambda expressions (`x -> x + 1`, `(s, x) -> s + x`) for DataFusion's
//! higher-order functions. The SQL parser reads lambdas only in dialects whose other rules SQE
//! does not want, so the tokens write each one as a call of a marker function
//! ([`as_calls`]) and the parsed statement turns those back into lambdas ([`restore`]).
//! Trino's names of the functions that take them are DataFusion's where the meaning is the
//! same (`transform`, `filter`, `any_match`); `all_match` and `none_match` are `any_match`
//! negated ([`matches`]); `transform_values`, `map_filter`, `transform_keys`, `map_zip_with`,
//! `zip_with`, `reduce`, `array_sort` of a comparator and `try` are SQE's
//! (`sqe_functions::lambdas`; `try(x)` is given `x` as a lambda, [`attempts`]; `array_sort`
//! of a lambda is called by another name, [`comparator_sorts`]).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    CastKind, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList,
    FunctionArguments, Ident, LambdaFunction, LambdaFunctionParameter, LambdaSyntax, ObjectName,
    OneOrManyWithParens, Statement, UnaryOperator, Value, Visit, VisitMut, Visitor, VisitorMut,
};
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::error::{Error, ErrorCode, Result};

/// The function a lambda is written as until the parsed statement turns it back into one
/// ([`restore`]).
const LAMBDA_CALL: &str = "__sqe_lambda";

/// Trino's lambda expressions (`x -> x + 1`, `(s, x) -> s + x`), which the SQL parser reads
/// only in dialects whose other rules SQE does not want, become calls of [`LAMBDA_CALL`]:
/// `x -> body` is `__sqe_lambda(x, body)`. A body ends where its argument does (at a `,` or
/// a closing bracket of the call around it).
pub(super) fn as_calls(mut tokens: Vec<TokenWithSpan>) -> Result<Vec<TokenWithSpan>> {
    let significant = |t: &TokenWithSpan| !matches!(t.token, Token::Whitespace(_));
    let arrows: Vec<usize> = (0..tokens.len())
        .filter(|&i| tokens[i].token == Token::Arrow)
        .collect();
    // Right to left: a lambda in another's body is a balanced call before the outer one is
    // rewritten, and the indices of the arrows still to do (all before it) stay as they were.
    for &arrow in arrows.iter().rev() {
        let at = tokens[arrow].span;
        let misplaced = || Error::Syntax {
            message: "'->' must follow a lambda's parameters: x -> … or (x, y) -> …".into(),
            location: Some(crate::error::Location {
                line: at.start.line,
                column: at.start.column,
            }),
        };
        let previous = |from: usize| (0..from).rev().find(|&i| significant(&tokens[i]));
        let last = previous(arrow).ok_or_else(misplaced)?;
        let (start, params) = match &tokens[last].token {
            Token::Word(_) => (last, vec![tokens[last].clone()]),
            Token::RParen => {
                let mut params = Vec::new();
                let mut at = last;
                let mut want_name = true;
                loop {
                    at = previous(at).ok_or_else(misplaced)?;
                    match &tokens[at].token {
                        Token::Word(_) if want_name => params.push(tokens[at].clone()),
                        Token::Comma if !want_name => {}
                        Token::LParen if !want_name => break,
                        _ => return Err(misplaced()),
                    }
                    want_name = !want_name;
                }
                params.reverse();
                (at, params)
            }
            _ => return Err(misplaced()),
        };
        let mut depth = 0usize;
        let mut end = tokens.len();
        for (i, token) in tokens.iter().enumerate().skip(arrow + 1) {
            match token.token {
                Token::LParen | Token::LBracket => depth += 1,
                Token::RParen | Token::RBracket if depth == 0 => {
                    end = i;
                    break;
                }
                Token::RParen | Token::RBracket => depth -= 1,
                Token::Comma | Token::SemiColon if depth == 0 => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        let mark = |token: Token| TokenWithSpan::new(token, at);
        let mut call = vec![
            mark(Token::make_word(LAMBDA_CALL, None)),
            mark(Token::LParen),
        ];
        for param in params {
            call.push(param);
            call.push(mark(Token::Comma));
        }
        call.extend(tokens[arrow + 1..end].iter().cloned());
        call.push(mark(Token::RParen));
        tokens.splice(start..end, call);
    }
    Ok(tokens)
}

/// Whether `statement` has a lambda expression.
pub fn has_lambdas(statement: &datafusion::sql::parser::Statement) -> bool {
    struct Finds;
    impl Visitor for Finds {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            match expr {
                Expr::Lambda(_) => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            }
        }
    }
    match statement {
        datafusion::sql::parser::Statement::Statement(inner) => {
            Visit::visit(inner.as_ref(), &mut Finds).is_break()
        }
        datafusion::sql::parser::Statement::Explain(explain) => has_lambdas(&explain.statement),
        _ => false,
    }
}

/// The functions that take lambdas, by Trino's names and DataFusion's.
const TAKING_LAMBDAS: &[&str] = &[
    "transform",
    "filter",
    "any_match",
    "all_match",
    "none_match",
    "array_transform",
    "array_filter",
    "array_any_match",
    "list_transform",
    "list_filter",
    "list_any_match",
    "transform_values",
    "map_filter",
    "transform_keys",
    "map_zip_with",
    "zip_with",
    "reduce",
    sqe_functions::lambdas::TRY,
    sqe_functions::lambdas::SORT_BY_COMPARATOR,
];

/// `statement` with every [`LAMBDA_CALL`] a lambda again; a lambda anywhere but among the
/// arguments of a function that takes one is refused as Trino refuses it (DataFusion would
/// answer with a dump of its syntax tree).
pub(super) fn restore(statement: &mut Statement) -> Result<()> {
    struct Restore;
    impl VisitorMut for Restore {
        type Break = Error;
        fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<Error> {
            let Expr::Function(function) = expr else {
                return ControlFlow::Continue(());
            };
            if !is_named(function, LAMBDA_CALL) {
                return ControlFlow::Continue(());
            }
            match lambda(function) {
                Ok(lambda) => {
                    *expr = Expr::Lambda(lambda);
                    ControlFlow::Continue(())
                }
                Err(e) => ControlFlow::Break(e),
            }
        }
    }
    if let ControlFlow::Break(e) = statement.visit(&mut Restore) {
        return Err(e);
    }
    attempts(statement);
    comparator_sorts(statement);
    within_bodies(statement);
    // Every lambda must be an argument of a function that takes one.
    struct Placed {
        lambdas: usize,
        as_arguments: usize,
        misplaced: Option<String>,
    }
    impl Visitor for Placed {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            match expr {
                Expr::Lambda(_) => self.lambdas += 1,
                Expr::Function(function) => {
                    let lambdas = arguments(function)
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|arg| matches!(arg, Expr::Lambda(_)))
                        .count();
                    if lambdas > 0 && !TAKING_LAMBDAS.iter().any(|n| is_named(function, n)) {
                        self.misplaced = Some(function.name.to_string());
                    }
                    self.as_arguments += lambdas;
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let mut placed = Placed {
        lambdas: 0,
        as_arguments: 0,
        misplaced: None,
    };
    let _ = Visit::visit(&*statement, &mut placed);
    if let Some(function) = placed.misplaced {
        return Err(Error::invalid(
            ErrorCode::FunctionNotFound,
            format!("Unexpected parameters for function {function}: it takes no lambda expression"),
        ));
    }
    if placed.lambdas > placed.as_arguments {
        return Err(Error::invalid(
            ErrorCode::TypeMismatch,
            "Lambda expression should always be used inside a function",
        ));
    }
    check_arity(statement)?;
    reading_forms(statement);
    Ok(())
}

/// Calls of SQE's functions of a lambda of several parameters whose body leaves out one
/// before one it reads, as the form of the function given only the read ones
/// (`sqe_functions::lambdas::reading_name`): DataFusion numbers a lambda's parameters without
/// the unread ones, so `(k, v) -> v` would read the key.
fn reading_forms(statement: &mut Statement) {
    struct Rewrite;
    impl VisitorMut for Rewrite {
        type Break = ();
        fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            let Expr::Function(function) = expr else {
                return ControlFlow::Continue(());
            };
            let Some(shape) = sqe_functions::lambdas::SEVERAL_PARAMETERS
                .iter()
                .find(|shape| is_named(function, shape.name))
            else {
                return ControlFlow::Continue(());
            };
            let FunctionArguments::List(list) = &mut function.args else {
                return ControlFlow::Continue(());
            };
            let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Lambda(lambda)))) =
                list.args.get_mut(shape.lambda_at)
            else {
                return ControlFlow::Continue(());
            };
            let params: Vec<LambdaFunctionParameter> = match &lambda.params {
                OneOrManyWithParens::One(one) => vec![one.clone()],
                OneOrManyWithParens::Many(many) => many.clone(),
            };
            let read: Vec<bool> = params
                .iter()
                .map(|param| reads(&lambda.body, &param.name))
                .collect();
            let Some(name) = sqe_functions::lambdas::reading_name(shape.name, &read) else {
                return ControlFlow::Continue(());
            };
            let kept: Vec<LambdaFunctionParameter> = params
                .into_iter()
                .zip(&read)
                .filter(|(_, read)| **read)
                .map(|(param, _)| param)
                .collect();
            lambda.params = match <[LambdaFunctionParameter; 1]>::try_from(kept) {
                Ok([one]) => OneOrManyWithParens::One(one),
                Err(many) => OneOrManyWithParens::Many(many),
            };
            function.name = ObjectName::from(vec![Ident::new(name)]);
            ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Rewrite);
}

/// What DataFusion's SQL planner cannot read in a lambda's body, in forms it can:
/// `ARRAY[…]` as `make_array(…)` (it plans an array literal's elements without the lambda's
/// parameters, so `x -> ARRAY[x]` found no column `x`), and `r.f` of a parameter `r` as the
/// field access `get_field(r, 'f')` (it looks a compound name up among the columns only).
fn within_bodies(statement: &mut Statement) {
    struct Rewrite {
        params: Vec<Vec<Ident>>,
    }
    impl Rewrite {
        fn is_param(&self, name: &Ident) -> bool {
            self.params
                .iter()
                .flatten()
                .any(|p| p.value.eq_ignore_ascii_case(&name.value))
        }
    }
    impl VisitorMut for Rewrite {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            if let Expr::Lambda(lambda) = expr {
                let names = match &lambda.params {
                    // `try`'s lambda of the row has no parameter a body reads.
                    OneOrManyWithParens::One(one)
                        if one.name.value == sqe_functions::lambdas::TRY_ROW =>
                    {
                        Vec::new()
                    }
                    OneOrManyWithParens::One(one) => vec![one.name.clone()],
                    OneOrManyWithParens::Many(many) => {
                        many.iter().map(|p| p.name.clone()).collect()
                    }
                };
                self.params.push(names);
            }
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            match expr {
                Expr::Lambda(_) => {
                    self.params.pop();
                }
                _ if self.params.iter().all(Vec::is_empty) => {}
                Expr::Array(array) => {
                    *expr = call("make_array", std::mem::take(&mut array.elem));
                }
                Expr::CompoundIdentifier(parts) if parts.len() > 1 && self.is_param(&parts[0]) => {
                    let mut parts = std::mem::take(parts).into_iter();
                    let Some(root) = parts.next() else {
                        return ControlFlow::Continue(());
                    };
                    *expr = parts.fold(Expr::Identifier(root), |row, field| {
                        call(
                            "get_field",
                            vec![row, Expr::value(Value::SingleQuotedString(field.value))],
                        )
                    });
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Rewrite { params: Vec::new() });
}

/// A plain call of `name` on `args`.
pub(super) fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e)))
                .collect(),
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

/// Trino's `try(x)` as `sqe_try(__sqe_try_row -> x)`: a lambda of the row, which the function
/// can evaluate again for each row alone when the whole batch fails.
fn attempts(statement: &mut Statement) {
    struct Rewrite;
    impl VisitorMut for Rewrite {
        type Break = ();
        fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            let Expr::Function(function) = expr else {
                return ControlFlow::Continue(());
            };
            if !is_named(function, "try") {
                return ControlFlow::Continue(());
            }
            let FunctionArguments::List(list) = &mut function.args else {
                return ControlFlow::Continue(());
            };
            let [FunctionArg::Unnamed(FunctionArgExpr::Expr(body))] = list.args.as_mut_slice()
            else {
                return ControlFlow::Continue(());
            };
            // A cast of its own is a TRY_CAST: DataFusion refuses a failing cast of a constant
            // while planning, before any row is tried.
            let mut whole = &mut *body;
            while let Expr::Nested(inner) = whole {
                whole = inner;
            }
            if let Expr::Cast { kind, .. } = whole
                && *kind == CastKind::Cast
            {
                *kind = CastKind::TryCast;
            }
            let lambda = LambdaFunction {
                params: OneOrManyWithParens::One(LambdaFunctionParameter {
                    name: Ident::new(sqe_functions::lambdas::TRY_ROW),
                    data_type: None,
                }),
                body: Box::new(body.clone()),
                syntax: LambdaSyntax::Arrow,
            };
            *body = Expr::Lambda(lambda);
            function.name = ObjectName::from(vec![Ident::new(sqe_functions::lambdas::TRY)]);
            ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Rewrite);
}

/// Trino's `array_sort(a, (x, y) -> …)` as SQE's function of a comparator: DataFusion's
/// planner would take its own `array_sort`, a function of values, for the name.
fn comparator_sorts(statement: &mut Statement) {
    struct Rewrite;
    impl VisitorMut for Rewrite {
        type Break = ();
        fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            if let Expr::Function(function) = expr
                && is_named(function, "array_sort")
                && matches!(arguments(function).as_deref(), Some([_, Expr::Lambda(_)]))
            {
                function.name =
                    ObjectName::from(vec![Ident::new(sqe_functions::lambdas::SORT_BY_COMPARATOR)]);
            }
            ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Rewrite);
}

/// Whether `body` names `param` anywhere (as a name or the first part of one), outside the
/// bodies of lambdas that declare a parameter of the same name.
fn reads(body: &Expr, param: &Ident) -> bool {
    struct Finds<'a> {
        param: &'a Ident,
        shadowed: usize,
    }
    impl Finds<'_> {
        fn redeclares(&self, expr: &Expr) -> bool {
            let Expr::Lambda(lambda) = expr else {
                return false;
            };
            match &lambda.params {
                OneOrManyWithParens::One(one) => vec![one],
                OneOrManyWithParens::Many(many) => many.iter().collect(),
            }
            .into_iter()
            .any(|p| p.name.value.eq_ignore_ascii_case(&self.param.value))
        }
    }
    impl Visitor for Finds<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            if self.redeclares(expr) {
                self.shadowed += 1;
            }
            let named = match expr {
                Expr::Identifier(ident) => Some(ident),
                Expr::CompoundIdentifier(parts) => parts.first(),
                _ => None,
            };
            match named {
                Some(ident)
                    if self.shadowed == 0
                        && ident.value.eq_ignore_ascii_case(&self.param.value) =>
                {
                    ControlFlow::Break(())
                }
                _ => ControlFlow::Continue(()),
            }
        }
        fn post_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            if self.redeclares(expr) {
                self.shadowed -= 1;
            }
            ControlFlow::Continue(())
        }
    }
    Visit::visit(body, &mut Finds { param, shadowed: 0 }).is_break()
}

/// A lambda of SQE's functions with another number of parameters than its place takes, refused
/// as Trino refuses it (DataFusion would bind the ones written to the first ones given).
fn check_arity(statement: &Statement) -> Result<()> {
    struct Check;
    impl Visitor for Check {
        type Break = Error;
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<Error> {
            let Expr::Function(function) = expr else {
                return ControlFlow::Continue(());
            };
            let [part] = function.name.0.as_slice() else {
                return ControlFlow::Continue(());
            };
            let Some(name) = part.as_ident().map(|i| i.value.to_lowercase()) else {
                return ControlFlow::Continue(());
            };
            for (position, arg) in arguments(function)
                .unwrap_or_default()
                .into_iter()
                .enumerate()
            {
                let Expr::Lambda(lambda) = arg else {
                    continue;
                };
                let Some(wanted) = sqe_functions::lambdas::lambda_arity(&name, position) else {
                    continue;
                };
                let written = match &lambda.params {
                    OneOrManyWithParens::One(_) => 1,
                    OneOrManyWithParens::Many(many) => many.len(),
                };
                if written != wanted {
                    let name = sqe_functions::lambdas::trino_name(&name);
                    return ControlFlow::Break(Error::invalid(
                        ErrorCode::FunctionNotFound,
                        format!(
                            "Unexpected parameters for function {name}: the lambda of argument {} \
                             takes {wanted} parameters, not {written}",
                            position + 1
                        ),
                    ));
                }
            }
            ControlFlow::Continue(())
        }
    }
    match Visit::visit(statement, &mut Check) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

fn is_named(function: &Function, name: &str) -> bool {
    matches!(function.name.0.as_slice(), [part]
        if part.as_ident().is_some_and(|i| i.value.eq_ignore_ascii_case(name)))
}

fn arguments(function: &Function) -> Option<Vec<&Expr>> {
    let FunctionArguments::List(list) = &function.args else {
        return None;
    };
    list.args
        .iter()
        .map(|arg| match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
            _ => None,
        })
        .collect()
}

fn lambda(call: &Function) -> Result<LambdaFunction> {
    let malformed = || Error::Syntax {
        message: "a lambda's parameters are names: x -> … or (x, y) -> …".into(),
        location: None,
    };
    let args = arguments(call).ok_or_else(malformed)?;
    let (body, params) = args.split_last().ok_or_else(malformed)?;
    let params: Vec<LambdaFunctionParameter> = params
        .iter()
        .map(|param| match param {
            Expr::Identifier(name) => Ok(LambdaFunctionParameter {
                name: name.clone(),
                data_type: None,
            }),
            _ => Err(malformed()),
        })
        .collect::<Result<_>>()?;
    let params = match <[LambdaFunctionParameter; 1]>::try_from(params) {
        Ok([one]) => OneOrManyWithParens::One(one),
        Err(many) => OneOrManyWithParens::Many(many),
    };
    Ok(LambdaFunction {
        params,
        body: Box::new((*body).clone()),
        syntax: LambdaSyntax::Arrow,
    })
}

/// Trino's `all_match(a, x -> p)` as `NOT any_match(a, x -> NOT p)` and `none_match(a, f)` as
/// `NOT any_match(a, f)`: with SQL's three values, the same answers (NULL where a predicate is
/// NULL and no element decides).
pub(super) fn matches(function: &Function) -> Option<Expr> {
    let negate = |e: Expr| Expr::UnaryOp {
        op: UnaryOperator::Not,
        expr: Box::new(Expr::Nested(Box::new(e))),
    };
    let all = is_named(function, "all_match");
    if !all && !is_named(function, "none_match") {
        return None;
    }
    let args = arguments(function)?;
    let [array, Expr::Lambda(predicate)] = args.as_slice() else {
        return None;
    };
    let mut predicate = predicate.clone();
    if all {
        predicate.body = Box::new(negate(*predicate.body));
    }
    let mut any = function.clone();
    any.name = ObjectName::from(vec![Ident::new("any_match")]);
    let FunctionArguments::List(list) = &mut any.args else {
        return None;
    };
    list.args = vec![
        FunctionArg::Unnamed(FunctionArgExpr::Expr((*array).clone())),
        FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Lambda(predicate))),
    ];
    Some(negate(Expr::Function(any)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lambdas_in(sql: &str) -> Result<Vec<String>> {
        let parsed = super::super::parse::parse(sql)?;
        struct Collect(Vec<String>);
        impl Visitor for Collect {
            type Break = ();
            fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
                if let Expr::Lambda(lambda) = expr {
                    self.0.push(lambda.to_string());
                }
                ControlFlow::Continue(())
            }
        }
        let mut found = Collect(Vec::new());
        if let datafusion::sql::parser::Statement::Statement(statement) = &parsed.statement {
            let _ = Visit::visit(statement.as_ref(), &mut found);
        }
        Ok(found.0)
    }

    #[test]
    fn lambdas_are_read_with_their_parameters_and_whole_bodies() -> Result<()> {
        let found = lambdas_in(
            "SELECT transform(a, x -> x + f(x, 1)), \
             any_match(b, (s, t) -> s = t AND (s > 0 OR t IN (1, 2))), '->' FROM t",
        )?;
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("x -> x + f(x, "), "{found:?}");
        assert!(found[1].starts_with("(s, t) -> s = t AND"), "{found:?}");
        assert!(found[1].contains("IN ("), "{found:?}");
        Ok(())
    }

    #[test]
    fn a_lambda_in_a_lambda_is_its_body() -> Result<()> {
        let found = lambdas_in("SELECT transform(a, r -> filter(r, x -> x > 0)) FROM t")?;
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("r -> "), "{found:?}");
        assert!(found[0].contains("x -> x > "), "{found:?}");
        Ok(())
    }

    fn rewritten(sql: &str) -> Result<String> {
        Ok(super::super::parse::parse(sql)?.statement.to_string())
    }

    #[test]
    fn a_parameter_left_out_before_a_read_one_calls_the_form_given_the_read_ones() -> Result<()> {
        let sql = rewritten(
            "SELECT zip_with(a, b, (x, y) -> y), zip_with(a, b, (x, y) -> x), \
             map_zip_with(m, n, (k, v1, v2) -> k || v2), transform_values(m, (k, v) -> v + v) \
             FROM t",
        )?;
        assert!(
            sql.contains("sqe_zip_with_reading_01(a, b, y -> y)"),
            "{sql}"
        );
        assert!(sql.contains(" zip_with(a, b, (x, y) -> x)"), "{sql}");
        assert!(
            sql.contains("sqe_map_zip_with_reading_101(m, n, (k, v2) -> k || v2)"),
            "{sql}"
        );
        assert!(
            sql.contains("sqe_transform_values_reading_01(m, v -> v + v)"),
            "{sql}"
        );
        Ok(())
    }

    #[test]
    fn try_is_given_its_argument_as_a_lambda_of_the_row() -> Result<()> {
        let sql = rewritten("SELECT try(a / b) FROM t")?;
        assert!(sql.contains("sqe_try(__sqe_try_row -> a / b)"), "{sql}");
        Ok(())
    }

    #[test]
    fn misplaced_arrows_are_syntax_errors() {
        for sql in ["SELECT transform(a, -> 1)", "SELECT transform(a, (1) -> 1)"] {
            assert!(
                matches!(super::super::parse::parse(sql), Err(Error::Syntax { .. })),
                "{sql}"
            );
        }
    }
}
