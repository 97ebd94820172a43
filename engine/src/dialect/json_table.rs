//! Trino's `json_table(input, path [AS name] [PASSING …] COLUMNS (…) [PLAN …] [… ON ERROR])`,
//! which the SQL parser does not read, written in the tokens ([`json_tables`]) as a call
//! `sqe_json_table(input, spec, …)`: its definition as JSON (`sqe_functions::JsonTableSpec`:
//! paths, columns, plan, `ON ERROR`), each column's type as a typed NULL, each `DEFAULT` cast to
//! its column's type, then the `PASSING` variables (the function is `sqe_functions`'
//! `json_table` module). The statement then joins the call's rows where they belong
//! (`json_table_lateral`).

use datafusion::sql::sqlparser::tokenizer::{Span, Token, TokenWithSpan};
use sqe_functions::{
    JSON_TABLE, JsonTableBehaviour as Behaviour, JsonTableColumn, JsonTablePath, JsonTableSpec,
    SiblingPlan,
};

use super::json_clauses::{
    Function, cast, closing, read_clauses, significant, strip_format_json, syntax, text_token,
    top_level_items, word,
};
use super::parse::next_significant;
use crate::error::{Error, ErrorCode, Result};

/// `tokens` with every `json_table(…)` written as a call of `sqe_json_table`.
pub(super) fn json_tables(tokens: Vec<TokenWithSpan>) -> Result<Vec<TokenWithSpan>> {
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let named = matches!(&tokens[i].token, Token::Word(w)
            if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("json_table"));
        let after_period = out
            .iter()
            .rev()
            .find(|t| !matches!(t.token, Token::Whitespace(_)))
            .is_some_and(|t| t.token == Token::Period);
        let open = next_significant(&tokens, i + 1).filter(|&j| tokens[j].token == Token::LParen);
        let (true, false, Some(open)) = (named, after_period, open) else {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        };
        let close = closing(&tokens, open)?;
        let span = tokens[i].span;
        out.push(TokenWithSpan::new(Token::make_word(JSON_TABLE, None), span));
        out.push(TokenWithSpan::new(Token::LParen, span));
        for (n, argument) in arguments(tokens[open + 1..close].to_vec(), span)?
            .into_iter()
            .enumerate()
        {
            if n > 0 {
                out.push(TokenWithSpan::new(Token::Comma, span));
            }
            out.extend(argument);
        }
        out.push(TokenWithSpan::new(Token::RParen, span));
        i = close + 1;
    }
    Ok(out)
}

/// The function's arguments after the input and the definition.
struct Arguments {
    list: Vec<Vec<TokenWithSpan>>,
    span: Span,
}

impl Arguments {
    /// Adds `argument`, answering its index.
    fn push(&mut self, argument: Vec<TokenWithSpan>) -> usize {
        self.list.push(argument);
        self.list.len() - 1
    }

    fn typed_null(&mut self, type_tokens: &[TokenWithSpan]) -> usize {
        let null = vec![TokenWithSpan::new(Token::make_keyword("NULL"), self.span)];
        let typed = cast(null, type_tokens.to_vec(), self.span);
        self.push(typed)
    }
}

/// Names as Trino reads identifiers: unquoted upper-cased, quoted as written.
fn identifier(token: Option<&TokenWithSpan>) -> Option<String> {
    match token.map(|t| &t.token) {
        Some(Token::Word(w)) if w.quote_style == Some('"') => Some(w.value.clone()),
        Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.to_uppercase()),
        _ => None,
    }
}

fn path_literal(token: Option<&TokenWithSpan>) -> Result<String> {
    match token.map(|t| &t.token) {
        Some(Token::SingleQuotedString(path)) => Ok(path.clone()),
        Some(other) => Err(syntax(format!(
            "json_table expects a JSON path as a string literal, not {other}"
        ))),
        None => Err(syntax("json_table's path is missing")),
    }
}

/// A path's `AS name` at `at`, if written (the name taken), and where the tokens go on.
fn path_name(
    tokens: &[TokenWithSpan],
    at: usize,
    names: &mut Names,
) -> Result<(Option<String>, usize)> {
    if word(tokens.get(at)).as_deref() != Some("AS") {
        return Ok((None, at));
    }
    let name = identifier(tokens.get(at + 1))
        .ok_or_else(|| syntax("a json_table path's name must be an identifier"))?;
    names.take(&name)?;
    Ok((Some(name), at + 2))
}

fn duplicate(name: &str) -> Error {
    Error::invalid(
        ErrorCode::DuplicateColumnOrPathName,
        format!("All column and path names in JSON_TABLE invocation must be unique: {name}"),
    )
}

/// Names already taken by the table's columns and paths (each as Trino reads it).
#[derive(Default)]
struct Names(Vec<String>);

impl Names {
    fn take(&mut self, name: &str) -> Result<()> {
        if self.0.iter().any(|n| n.eq_ignore_ascii_case(name)) {
            return Err(duplicate(name));
        }
        self.0.push(name.to_string());
        Ok(())
    }
}

fn arguments(inner: Vec<TokenWithSpan>, span: Span) -> Result<Vec<Vec<TokenWithSpan>>> {
    let (tokens, top) = significant(inner);
    let w = |j: usize| word(tokens.get(j));
    let is = |j: usize, s: &str| w(j).as_deref() == Some(s);
    let Some(comma) = (0..tokens.len()).find(|&j| top[j] && tokens[j].token == Token::Comma) else {
        return Err(syntax("json_table takes an input, a JSON path and COLUMNS"));
    };
    let mut input = tokens[..comma].to_vec();
    if input.is_empty() {
        return Err(syntax("json_table's input is missing"));
    }
    let input_format = match strip_format_json(&mut input) {
        Some(Some(encoding)) => format!("JSON {encoding}"),
        _ => "JSON".to_string(),
    };
    let mut names = Names::default();
    let root_path = path_literal(tokens.get(comma + 1))?;
    let (root_name, mut at) = path_name(&tokens, comma + 2, &mut names)?;
    let columns_at = (at..tokens.len())
        .find(|&j| top[j] && is(j, "COLUMNS"))
        .ok_or_else(|| syntax("json_table needs COLUMNS (…)"))?;
    let passing = if columns_at > at {
        if !is(at, "PASSING") {
            return Err(syntax(format!(
                "unexpected {} in json_table",
                tokens[at].token
            )));
        }
        let clauses = read_clauses(
            Function::Value,
            &tokens[at..columns_at],
            &top[at..columns_at],
        )?;
        if clauses.on_empty.is_some() || clauses.on_error.is_some() || clauses.returning.is_some() {
            return Err(syntax("json_table takes PASSING and then COLUMNS"));
        }
        clauses.passing
    } else {
        Vec::new()
    };
    let open = columns_at + 1;
    if tokens.get(open).map(|t| &t.token) != Some(&Token::LParen) {
        return Err(syntax("json_table needs COLUMNS (…)"));
    }
    let close = closing(&tokens, open)?;
    let mut arguments = Arguments {
        list: vec![input, Vec::new()],
        span,
    };
    let columns = columns(&tokens[open + 1..close], &mut arguments, &mut names, 0)?;
    let mut root = JsonTablePath {
        path: root_path,
        name: root_name,
        columns,
        inner: false,
        siblings: None,
    };
    at = close + 1;
    let mut plan = None;
    if is(at, "PLAN") {
        let default = is(at + 1, "DEFAULT");
        let open = at + 1 + usize::from(default);
        if tokens.get(open).map(|t| &t.token) != Some(&Token::LParen) {
            return Err(syntax("PLAN needs its plan in parentheses"));
        }
        let close = closing(&tokens, open)?;
        plan = Some((default, &tokens[open + 1..close]));
        at = close + 1;
    }
    let mut error_on_error = false;
    if (is(at, "ERROR") || is(at, "EMPTY")) && is(at + 1, "ON") && is(at + 2, "ERROR") {
        error_on_error = is(at, "ERROR");
        at += 3;
    }
    if let Some(extra) = tokens.get(at) {
        return Err(syntax(format!("unexpected {} in json_table", extra.token)));
    }
    match plan {
        None => default_plan(&mut root, false, false),
        Some((true, words)) => {
            let (inner, cross) = read_default_plan(words)?;
            default_plan(&mut root, inner, cross);
        }
        Some((false, words)) => {
            let (plan, end) = read_plan(words, 0, 0)?;
            if end != words.len() {
                return Err(syntax(format!(
                    "unexpected {} in json_table's PLAN",
                    words[end].token
                )));
            }
            require_names(&root)?;
            apply_plan(&mut root, &plan)?;
        }
    }
    let passing_at = arguments.list.len();
    for variable in passing {
        arguments.push(vec![text_token(&variable.name, span)]);
        arguments.push(vec![text_token(&variable.format, span)]);
        arguments.push(variable.value);
    }
    let spec = JsonTableSpec {
        input_format,
        root,
        error_on_error,
        outer: false,
        passing: passing_at,
    };
    let spec = serde_json::to_string(&spec)
        .map_err(|e| Error::Internal(format!("json_table's definition: {e}")))?;
    arguments.list[1] = vec![text_token(&spec, span)];
    Ok(arguments.list)
}

/// How deep NESTED paths and a plan's parentheses may go (deeper input is refused rather
/// than read by ever deeper recursion).
const MAX_DEPTH: usize = 32;

/// Words that end a column's type.
const AFTER_TYPE: [&str; 10] = [
    "FORMAT", "PATH", "ERROR", "NULL", "DEFAULT", "WITH", "WITHOUT", "KEEP", "OMIT", "EMPTY",
];

/// The column definitions of a `COLUMNS (…)` list.
fn columns(
    list: &[TokenWithSpan],
    arguments: &mut Arguments,
    names: &mut Names,
    depth: usize,
) -> Result<Vec<JsonTableColumn>> {
    if depth > MAX_DEPTH {
        return Err(syntax(format!(
            "json_table's NESTED paths go deeper than {MAX_DEPTH} levels"
        )));
    }
    let (list, top) = significant(list.to_vec());
    let mut columns = Vec::new();
    for range in top_level_items(&list, &top) {
        let (tokens, top) = (&list[range.clone()], &top[range]);
        let w = |j: usize| word(tokens.get(j));
        let is = |j: usize, s: &str| w(j).as_deref() == Some(s);
        if tokens.is_empty() {
            return Err(syntax("json_table has an empty column definition"));
        }
        if is(0, "NESTED") {
            let at = 1 + usize::from(is(1, "PATH"));
            let path = path_literal(tokens.get(at))?;
            let (name, at) = path_name(tokens, at + 1, names)?;
            if !is(at, "COLUMNS") || tokens.get(at + 1).map(|t| &t.token) != Some(&Token::LParen) {
                return Err(syntax("NESTED PATH needs COLUMNS (…)"));
            }
            let close = closing(tokens, at + 1)?;
            if close + 1 != tokens.len() {
                return Err(syntax(format!(
                    "unexpected {} after NESTED PATH's COLUMNS",
                    tokens[close + 1].token
                )));
            }
            let nested = self::columns(&tokens[at + 2..close], arguments, names, depth + 1)?;
            columns.push(JsonTableColumn::Nested(JsonTablePath {
                path,
                name,
                columns: nested,
                inner: false,
                siblings: None,
            }));
            continue;
        }
        let name = identifier(tokens.first()).ok_or_else(|| {
            syntax(format!(
                "unexpected {} in json_table's COLUMNS",
                tokens[0].token
            ))
        })?;
        names.take(&name)?;
        // Output names are folded as Trino's identifiers are; the implicit path reads the
        // name as Trino reads it (`a` reads the member "A").
        let output = name.to_lowercase();
        if is(1, "FOR") && is(2, "ORDINALITY") && tokens.len() == 3 {
            columns.push(JsonTableColumn::Ordinality { name: output });
            continue;
        }
        let type_end = (1..tokens.len())
            .find(|&j| top[j] && w(j).is_some_and(|w| AFTER_TYPE.contains(&w.as_str())))
            .unwrap_or(tokens.len());
        if type_end == 1 {
            return Err(syntax(format!("json_table's column {output} needs a type")));
        }
        let type_tokens = &tokens[1..type_end];
        let mut at = type_end;
        let mut format = None;
        if is(at, "FORMAT") && is(at + 1, "JSON") {
            at += 2;
            let mut encoding = None;
            if is(at, "ENCODING") {
                encoding =
                    Some(w(at + 1).ok_or_else(|| syntax("ENCODING needs UTF8, UTF16 or UTF32"))?);
                at += 2;
            }
            format = Some(encoding);
        }
        let mut path = format!("lax $.{}", quoted_key(&name));
        if is(at, "PATH") {
            path = path_literal(tokens.get(at + 1))?;
            at += 2;
        }
        let function = if format.is_some() {
            Function::Query
        } else {
            Function::Value
        };
        let clauses = read_clauses(function, &tokens[at..], &top[at..])?;
        if !clauses.passing.is_empty()
            || clauses.returning.is_some()
            || clauses.query_output.is_some()
        {
            return Err(syntax(format!(
                "json_table's column {output} takes no PASSING or RETURNING"
            )));
        }
        let returned = arguments.typed_null(type_tokens);
        let mut defaulted = |default: Option<Vec<TokenWithSpan>>| -> Result<usize> {
            let default = default
                .ok_or_else(|| syntax(format!("DEFAULT of column {output} has no value")))?;
            let span = arguments.span;
            Ok(arguments.push(cast(default, type_tokens.to_vec(), span)))
        };
        let mut behaviour = |written: Option<String>, default| -> Result<Option<Behaviour>> {
            Ok(match written.as_deref() {
                None => None,
                Some("ERROR") => Some(Behaviour::Error),
                Some("DEFAULT") => Some(Behaviour::Default(defaulted(default)?)),
                Some(_) => Some(Behaviour::Null),
            })
        };
        columns.push(match format {
            None => JsonTableColumn::Value {
                name: output.clone(),
                path,
                returned,
                on_empty: behaviour(clauses.on_empty, clauses.empty_default)?
                    .unwrap_or(Behaviour::Null),
                on_error: behaviour(clauses.on_error, clauses.error_default)?,
            },
            Some(encoding) => JsonTableColumn::Query {
                name: output.clone(),
                path,
                returned,
                encoding,
                wrapper: clauses.wrapper.unwrap_or_else(|| "WITHOUT".to_string()),
                omit_quotes: clauses.omit_quotes,
                on_empty: clauses.on_empty.unwrap_or_else(|| "NULL".to_string()),
                on_error: clauses.on_error,
            },
        });
    }
    if columns.is_empty() {
        return Err(syntax("json_table needs at least one column"));
    }
    Ok(columns)
}

/// `name` as a quoted member key of a JSON path.
fn quoted_key(name: &str) -> String {
    let escaped: String = name
        .chars()
        .flat_map(|c| match c {
            '"' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    format!("\"{escaped}\"")
}

fn nested_count(path: &JsonTablePath) -> usize {
    path.columns
        .iter()
        .filter(|c| matches!(c, JsonTableColumn::Nested(_)))
        .count()
}

fn nested_mut(path: &mut JsonTablePath) -> impl Iterator<Item = &mut JsonTablePath> {
    path.columns.iter_mut().filter_map(|c| match c {
        JsonTableColumn::Nested(nested) => Some(nested),
        _ => None,
    })
}

/// `PLAN DEFAULT (…)` (or no plan): every parent joins its children `inner` or outer, and
/// siblings combine by `cross` or union.
fn default_plan(path: &mut JsonTablePath, inner: bool, cross: bool) {
    let n = nested_count(path);
    path.inner = inner;
    path.siblings = match n {
        0 => None,
        1 => Some(SiblingPlan::Nested(0)),
        _ => {
            let parts = (0..n).map(SiblingPlan::Nested).collect();
            Some(if cross {
                SiblingPlan::Cross(parts)
            } else {
                SiblingPlan::Union(parts)
            })
        }
    };
    for nested in nested_mut(path) {
        default_plan(nested, inner, cross);
    }
}

/// `OUTER|INNER [, UNION|CROSS]` or the other way round: (inner, cross).
fn read_default_plan(words: &[TokenWithSpan]) -> Result<(bool, bool)> {
    let (tokens, top) = significant(words.to_vec());
    let mut join = None;
    let mut siblings = None;
    for range in top_level_items(&tokens, &top) {
        let item = &tokens[range];
        match (item.len(), word(item.first()).as_deref()) {
            (1, Some(w @ ("INNER" | "OUTER"))) if join.is_none() => join = Some(w == "INNER"),
            (1, Some(w @ ("UNION" | "CROSS"))) if siblings.is_none() => {
                siblings = Some(w == "CROSS");
            }
            _ => {
                return Err(syntax(
                    "PLAN DEFAULT takes OUTER or INNER, and UNION or CROSS",
                ));
            }
        }
    }
    Ok((join.unwrap_or(false), siblings.unwrap_or(false)))
}

/// A specific plan, as written.
#[derive(Debug, Clone, PartialEq)]
enum Plan {
    Path(String),
    Join {
        parent: String,
        inner: bool,
        child: Box<Plan>,
    },
    Union(Vec<Plan>),
    Cross(Vec<Plan>),
}

fn invalid_plan(message: impl Into<String>) -> Error {
    Error::invalid(ErrorCode::InvalidPlan, message)
}

/// A plan from `tokens[at..]`, and where it ends.
fn read_plan(tokens: &[TokenWithSpan], at: usize, depth: usize) -> Result<(Plan, usize)> {
    if depth > MAX_DEPTH {
        return Err(syntax(format!(
            "json_table's PLAN nests deeper than {MAX_DEPTH} levels"
        )));
    }
    let (first, mut at) = read_primary(tokens, at, depth)?;
    let next = word(tokens.get(at));
    match (next.as_deref(), &first) {
        (Some(kind @ ("INNER" | "OUTER")), Plan::Path(parent)) => {
            let (child, end) = read_primary(tokens, at + 1, depth)?;
            Ok((
                Plan::Join {
                    parent: parent.clone(),
                    inner: kind == "INNER",
                    child: Box::new(child),
                },
                end,
            ))
        }
        (Some(kind @ ("UNION" | "CROSS")), _) => {
            let mut parts = vec![first];
            while word(tokens.get(at)).as_deref() == Some(kind) {
                let (part, end) = read_primary(tokens, at + 1, depth)?;
                parts.push(part);
                at = end;
            }
            Ok((
                if kind == "UNION" {
                    Plan::Union(parts)
                } else {
                    Plan::Cross(parts)
                },
                at,
            ))
        }
        _ => Ok((first, at)),
    }
}

fn read_primary(tokens: &[TokenWithSpan], at: usize, depth: usize) -> Result<(Plan, usize)> {
    match tokens.get(at).map(|t| &t.token) {
        Some(Token::LParen) => {
            let close = closing(tokens, at)?;
            let (plan, end) = read_plan(tokens, at + 1, depth + 1)?;
            if end != close {
                return Err(syntax("unexpected words in json_table's PLAN"));
            }
            Ok((plan, close + 1))
        }
        _ => match identifier(tokens.get(at)) {
            Some(name) => Ok((Plan::Path(name), at + 1)),
            None => Err(syntax("json_table's PLAN names paths")),
        },
    }
}

/// A specific plan names every path: each must have a name.
fn require_names(path: &JsonTablePath) -> Result<()> {
    if path.name.is_none() {
        return Err(Error::invalid(
            ErrorCode::MissingPathName,
            format!(
                "All JSON paths must be named when specific plan is given: {}",
                path.path
            ),
        ));
    }
    path.columns.iter().try_for_each(|c| match c {
        JsonTableColumn::Nested(nested) => require_names(nested),
        _ => Ok(()),
    })
}

/// Sets each path's join and siblings from `plan`, which must cover `path` and its descendants,
/// each once.
fn apply_plan(path: &mut JsonTablePath, plan: &Plan) -> Result<()> {
    let name = path.name.clone().unwrap_or_default();
    match plan {
        Plan::Path(named) if *named == name => {
            if nested_count(path) > 0 {
                return Err(invalid_plan(format!(
                    "JSON_TABLE plan for path {name} must include its child paths"
                )));
            }
            path.siblings = None;
            Ok(())
        }
        Plan::Join {
            parent,
            inner,
            child,
        } if *parent == name => {
            let n = nested_count(path);
            if n == 0 {
                return Err(invalid_plan(format!(
                    "JSON_TABLE plan: path {name} has no child paths"
                )));
            }
            let mut used = vec![false; n];
            let siblings = sibling_plan(path, child, &mut used)?;
            if used.contains(&false) {
                return Err(invalid_plan(format!(
                    "JSON_TABLE plan for path {name} must include all its child paths"
                )));
            }
            path.inner = *inner;
            path.siblings = Some(siblings);
            Ok(())
        }
        _ => Err(invalid_plan(format!(
            "JSON_TABLE plan should start with path {name}"
        ))),
    }
}

fn sibling_plan(path: &mut JsonTablePath, plan: &Plan, used: &mut [bool]) -> Result<SiblingPlan> {
    match plan {
        Plan::Path(named) | Plan::Join { parent: named, .. } => {
            let Some(k) = nested_mut(path).position(|n| n.name.as_deref() == Some(named)) else {
                return Err(invalid_plan(format!(
                    "JSON_TABLE plan: {named} is not a child path of {}",
                    path.name.as_deref().unwrap_or_default()
                )));
            };
            if std::mem::replace(&mut used[k], true) {
                return Err(invalid_plan(format!(
                    "JSON_TABLE plan names path {named} twice"
                )));
            }
            if let Some(nested) = nested_mut(path).nth(k) {
                apply_plan(nested, plan)?;
            }
            Ok(SiblingPlan::Nested(k))
        }
        Plan::Union(parts) => Ok(SiblingPlan::Union(
            parts
                .iter()
                .map(|part| sibling_plan(path, part, used))
                .collect::<Result<_>>()?,
        )),
        Plan::Cross(parts) => Ok(SiblingPlan::Cross(
            parts
                .iter()
                .map(|part| sibling_plan(path, part, used))
                .collect::<Result<_>>()?,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::tokenizer::Tokenizer;

    /// The definition the dialect writes for `sql`'s json_table.
    fn spec(sql: &str) -> Result<JsonTableSpec> {
        let tokens = Tokenizer::new(&GenericDialect {}, sql)
            .tokenize_with_location()
            .map_err(|e| syntax(e.to_string()))?;
        let out = json_tables(tokens)?;
        out.iter()
            .find_map(|t| match &t.token {
                Token::SingleQuotedString(s) if s.starts_with('{') => serde_json::from_str(s).ok(),
                _ => None,
            })
            .ok_or_else(|| syntax("no definition"))
    }

    #[test]
    fn plans_say_how_paths_join() -> Result<()> {
        let columns = "COLUMNS(a int PATH 'lax 1', NESTED PATH 'lax $' AS \"b\" COLUMNS(x int PATH 'lax 1'), \
                       NESTED PATH 'lax $' AS \"c\" COLUMNS(y int PATH 'lax 1', NESTED PATH 'lax $' AS \"d\" COLUMNS(z int PATH 'lax 1')))";
        // Without a plan: OUTER and UNION everywhere.
        let default = spec(&format!(
            "SELECT * FROM json_table(j, 'lax $' AS \"r\" {columns})"
        ))?;
        assert!(!default.root.inner);
        assert_eq!(
            default.root.siblings,
            Some(SiblingPlan::Union(vec![
                SiblingPlan::Nested(0),
                SiblingPlan::Nested(1)
            ]))
        );
        let specific = spec(&format!(
            "SELECT * FROM json_table(j, 'lax $' AS \"r\" {columns} PLAN (\"r\" INNER (\"c\" OUTER \"d\" CROSS \"b\")))"
        ));
        // `"c" OUTER "d" CROSS "b"` reads as a join whose child is "d": the CROSS is left over.
        assert!(specific.is_err());
        let specific = spec(&format!(
            "SELECT * FROM json_table(j, 'lax $' AS \"r\" {columns} PLAN (\"r\" INNER ((\"c\" INNER \"d\") CROSS \"b\")))"
        ))?;
        assert!(specific.root.inner);
        assert_eq!(
            specific.root.siblings,
            Some(SiblingPlan::Cross(vec![
                SiblingPlan::Nested(1),
                SiblingPlan::Nested(0)
            ]))
        );
        let JsonTableColumn::Nested(c) = &specific.root.columns[2] else {
            return Err(syntax("the third column is path c"));
        };
        assert!(c.inner);
        assert_eq!(c.siblings, Some(SiblingPlan::Nested(0)));
        // Each path once, every path named.
        let twice = spec(&format!(
            "SELECT * FROM json_table(j, 'lax $' AS \"r\" {columns} PLAN (\"r\" OUTER (\"b\" UNION \"b\")))"
        ));
        assert!(matches!(twice, Err(e) if e.code() == ErrorCode::InvalidPlan));
        let unnamed =
            spec("SELECT * FROM json_table(j, 'lax $' COLUMNS(a int PATH 'lax 1') PLAN (\"r\"))");
        assert!(matches!(unnamed, Err(e) if e.code() == ErrorCode::MissingPathName));
        Ok(())
    }

    #[test]
    fn deep_nesting_is_refused_not_recursed_into() {
        let mut columns = "a int PATH 'lax 1'".to_string();
        for _ in 0..40 {
            columns = format!("NESTED PATH 'lax $' COLUMNS({columns})");
        }
        let deep = spec(&format!(
            "SELECT * FROM json_table(j, 'lax $' COLUMNS({columns}))"
        ));
        assert!(matches!(deep, Err(e) if e.code() == ErrorCode::SyntaxError));
        let parens = format!("{}\"r\"{}", "(".repeat(100), ")".repeat(100));
        let plan = spec(&format!(
            "SELECT * FROM json_table(j, 'lax $' AS \"r\" COLUMNS(a int PATH 'lax 1') PLAN ({parens}))"
        ));
        assert!(matches!(plan, Err(e) if e.code() == ErrorCode::SyntaxError));
    }

    #[test]
    fn columns_take_their_types_defaults_and_implicit_paths() -> Result<()> {
        let spec = spec(
            "SELECT * FROM json_table(j, 'lax $' PASSING 1 AS x COLUMNS(a integer DEFAULT -1 ON EMPTY, \"Bb\" varchar(3) FORMAT JSON WITH ARRAY WRAPPER, o FOR ORDINALITY) ERROR ON ERROR)",
        )?;
        assert!(spec.error_on_error);
        // input, definition, a's type, its default, Bb's type, then the variable's triple.
        assert_eq!(spec.passing, 5);
        assert_eq!(
            spec.root.columns,
            vec![
                JsonTableColumn::Value {
                    name: "a".into(),
                    path: "lax $.\"A\"".into(),
                    returned: 2,
                    on_empty: Behaviour::Default(3),
                    on_error: None,
                },
                JsonTableColumn::Query {
                    name: "bb".into(),
                    path: "lax $.\"Bb\"".into(),
                    returned: 4,
                    encoding: None,
                    wrapper: "UNCONDITIONAL".into(),
                    omit_quotes: false,
                    on_empty: "NULL".into(),
                    on_error: None,
                },
                JsonTableColumn::Ordinality { name: "o".into() },
            ]
        );
        let duplicate = self::spec("SELECT * FROM json_table(j, 'lax $' AS a COLUMNS(a int))");
        assert!(matches!(duplicate, Err(e) if e.code() == ErrorCode::DuplicateColumnOrPathName));
        Ok(())
    }
}
