//! The clauses of Trino's SQL/JSON functions, which the SQL parser does not read:
//! `json_exists(j, 'lax $.a' UNKNOWN ON ERROR)`, `json_value(j, p DEFAULT 0 ON EMPTY NULL ON
//! ERROR)`, `json_query(j, p WITH CONDITIONAL ARRAY WRAPPER OMIT QUOTES EMPTY ARRAY ON EMPTY)`.
//! Each call is written as the function with its clauses as trailing arguments, in the order
//! `sqe_functions`' `sql_json` module reads them. `json_value`'s `RETURNING type` becomes an
//! argument `CAST(NULL AS type)`, whose type the function answers in; `PASSING v AS name`
//! becomes the variables' (name, format, value) triples after the clauses. `FORMAT JSON` after
//! the input and `json_query`'s `RETURNING varchar` are what the functions do anyway; its
//! `RETURNING varchar(n)` or `char(n)` is a cast of its result, as in Trino.
//!
//! The constructors `json_array(v, … [NULL|ABSENT ON NULL] [RETURNING t])` and
//! `json_object(k : v, …` (or `[KEY] k VALUE v`) `… [WITH|WITHOUT UNIQUE KEYS] [RETURNING t])`
//! are written with their clauses as leading constants and each value's format before it
//! (`SQL`, or `JSON [encoding]` for `v FORMAT JSON [ENCODING e]` and for a nested call of a
//! function that returns JSON).

use datafusion::sql::sqlparser::tokenizer::{Span, Token, TokenWithSpan};

use super::parse::next_significant;
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Function {
    Exists,
    Value,
    Query,
    Array,
    Object,
}

impl Function {
    fn named(name: &str) -> Option<Function> {
        match name.to_ascii_lowercase().as_str() {
            "json_exists" => Some(Function::Exists),
            "json_value" => Some(Function::Value),
            "json_query" => Some(Function::Query),
            "json_array" => Some(Function::Array),
            "json_object" => Some(Function::Object),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Function::Exists => "json_exists",
            Function::Value => "json_value",
            Function::Query => "json_query",
            Function::Array => "json_array",
            Function::Object => "json_object",
        }
    }

    /// Whether the function returns JSON text (a value the constructors take as JSON).
    fn returns_json(self) -> bool {
        matches!(self, Function::Query | Function::Array | Function::Object)
    }
}

/// `tokens` with every SQL/JSON function call's clauses written as arguments.
pub(super) fn json_clauses(tokens: Vec<TokenWithSpan>) -> Result<Vec<TokenWithSpan>> {
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let called = match &tokens[i].token {
            Token::Word(w) if w.quote_style.is_none() => Function::named(&w.value),
            _ => None,
        };
        let after_period = out
            .iter()
            .rev()
            .find(|t| !matches!(t.token, Token::Whitespace(_)))
            .is_some_and(|t| t.token == Token::Period);
        let open = next_significant(&tokens, i + 1).filter(|&j| tokens[j].token == Token::LParen);
        let (Some(function), false, Some(open)) = (called, after_period, open) else {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        };
        let close = closing(&tokens, open)?;
        let raw = tokens[open + 1..close].to_vec();
        let span = tokens[open].span;
        match function {
            // Its elements are read as written (a nested call of a JSON function is JSON),
            // then rewritten one by one.
            Function::Array | Function::Object => {
                out.extend(constructor(function, raw, span)?);
            }
            _ => {
                let (arguments, output) = arguments(function, json_clauses(raw)?, span)?;
                let mut call = vec![tokens[i].clone(), tokens[open].clone()];
                call.extend(arguments);
                call.push(tokens[close].clone());
                out.extend(made_into(call, output.unwrap_or(Output::AsIs), span));
            }
        }
        i = close + 1;
    }
    Ok(out)
}

pub(super) fn closing(tokens: &[TokenWithSpan], open: usize) -> Result<usize> {
    let mut depth = 0usize;
    for (j, token) in tokens.iter().enumerate().skip(open) {
        match token.token {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 0 {
                    return Ok(j);
                }
            }
            _ => {}
        }
    }
    Err(syntax("a JSON function call is not closed"))
}

pub(super) fn syntax(message: impl Into<String>) -> Error {
    Error::Syntax {
        message: message.into(),
        location: None,
    }
}

/// The unquoted word of `token`, upper-cased.
pub(super) fn word(token: Option<&TokenWithSpan>) -> Option<String> {
    match token.map(|t| &t.token) {
        Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    }
}

/// Words that start a clause after the path.
const CLAUSE_WORDS: [&str; 13] = [
    "PASSING",
    "RETURNING",
    "ERROR",
    "NULL",
    "DEFAULT",
    "WITH",
    "WITHOUT",
    "KEEP",
    "OMIT",
    "EMPTY",
    "TRUE",
    "FALSE",
    "UNKNOWN",
];

/// `inner` without whitespace, and for each token whether it is at the call's top level
/// (not inside parentheses or brackets; a closing one is not).
pub(super) fn significant(inner: Vec<TokenWithSpan>) -> (Vec<TokenWithSpan>, Vec<bool>) {
    let tokens: Vec<TokenWithSpan> = inner
        .into_iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .collect();
    let mut depth = 0i32;
    let top = tokens
        .iter()
        .map(|t| {
            let at_top = depth == 0;
            match t.token {
                Token::LParen | Token::LBracket => depth += 1,
                Token::RParen | Token::RBracket => depth -= 1,
                _ => {}
            }
            at_top && !matches!(t.token, Token::RParen | Token::RBracket)
        })
        .collect();
    (tokens, top)
}

/// The ranges between top-level commas (none for no tokens; an empty one where two commas
/// meet or one ends the list).
pub(super) fn top_level_items(
    tokens: &[TokenWithSpan],
    top: &[bool],
) -> Vec<std::ops::Range<usize>> {
    if tokens.is_empty() {
        return Vec::new();
    }
    let mut items = Vec::new();
    let mut start = 0;
    for (j, token) in tokens.iter().enumerate() {
        if top[j] && token.token == Token::Comma {
            items.push(start..j);
            start = j + 1;
        }
    }
    items.push(start..tokens.len());
    items
}

pub(super) fn text_token(s: &str, span: Span) -> TokenWithSpan {
    TokenWithSpan::new(Token::SingleQuotedString(s.to_string()), span)
}

/// `CAST(call AS type)`.
pub(super) fn cast(
    call: Vec<TokenWithSpan>,
    type_tokens: Vec<TokenWithSpan>,
    span: Span,
) -> Vec<TokenWithSpan> {
    let mut out = vec![
        TokenWithSpan::new(Token::make_keyword("CAST"), span),
        TokenWithSpan::new(Token::LParen, span),
    ];
    out.extend(call);
    out.push(TokenWithSpan::new(Token::make_keyword("AS"), span));
    out.extend(type_tokens);
    out.push(TokenWithSpan::new(Token::RParen, span));
    out
}

/// The call's arguments: input, path, then its clauses as constants (and `json_value`'s
/// defaults as the expressions they are), then the `PASSING` variables; and what its result
/// is made into (`json_query … RETURNING varchar(n)`).
fn arguments(
    function: Function,
    inner: Vec<TokenWithSpan>,
    span: Span,
) -> Result<(Vec<TokenWithSpan>, Option<Output>)> {
    let (tokens, top) = significant(inner);
    let Some(comma) = (0..tokens.len()).find(|&j| top[j] && tokens[j].token == Token::Comma) else {
        return Ok((tokens, None));
    };
    let mut input = tokens[..comma].to_vec();
    strip_format_json(&mut input);
    let clauses_at = (comma + 2..tokens.len())
        .find(|&j| {
            top[j] && word(tokens.get(j)).is_some_and(|w| CLAUSE_WORDS.contains(&w.as_str()))
        })
        .unwrap_or(tokens.len());
    let path = tokens[comma + 1..clauses_at].to_vec();
    if clauses_at == tokens.len() {
        return Ok((tokens, None));
    }
    let mut clauses = read_clauses(function, &tokens[clauses_at..], &top[clauses_at..])?;
    let text = |s: &str| text_token(s, span);
    let comma = || TokenWithSpan::new(Token::Comma, span);
    let null = || vec![TokenWithSpan::new(Token::make_keyword("NULL"), span)];
    let mut out = input;
    out.push(comma());
    out.extend(path);
    let mut push = |value: Vec<TokenWithSpan>| {
        out.push(comma());
        out.extend(value);
    };
    match function {
        Function::Exists => push(vec![text(clauses.on_error.as_deref().unwrap_or("FALSE"))]),
        Function::Value => {
            for (behaviour, default) in [
                (clauses.on_empty, clauses.empty_default),
                (clauses.on_error, clauses.error_default),
            ] {
                push(vec![text(behaviour.as_deref().unwrap_or("NULL"))]);
                push(default.unwrap_or_else(null));
            }
            // The returned type as a typed NULL: `CAST(NULL AS type)`.
            if let Some(type_tokens) = clauses.returning.take() {
                push(cast(null(), type_tokens, span));
            }
        }
        Function::Query => {
            push(vec![text(clauses.wrapper.as_deref().unwrap_or("WITHOUT"))]);
            push(vec![text(if clauses.omit_quotes {
                "OMIT"
            } else {
                "KEEP"
            })]);
            push(vec![text(clauses.on_empty.as_deref().unwrap_or("NULL"))]);
            push(vec![text(clauses.on_error.as_deref().unwrap_or("NULL"))]);
        }
        Function::Array | Function::Object => {}
    }
    for variable in clauses.passing {
        push(vec![text(&variable.name)]);
        push(vec![text(&variable.format)]);
        push(variable.value);
    }
    let output = match function {
        Function::Query => clauses.query_output,
        _ => None,
    };
    Ok((out, output))
}

/// The format a value is read in: `JSON [encoding]` for `v FORMAT JSON [ENCODING e]` (the
/// words removed from `value`) and for a call of a function that returns JSON, else `SQL`;
/// and whether the format was written.
fn value_format(value: &mut Vec<TokenWithSpan>) -> (String, bool) {
    if let Some(encoding) = strip_format_json(value) {
        let format = match encoding {
            Some(encoding) => format!("JSON {encoding}"),
            None => "JSON".to_string(),
        };
        return (format, true);
    }
    let format = if is_json_call(value) { "JSON" } else { "SQL" };
    (format.to_string(), false)
}

/// Whether `value` is one call of a function that returns JSON text: `json_query(…)`,
/// `json_array(…)`, `json_object(…)` as the user wrote it (before this module rewrites it: a
/// `CAST` of one the user wrote is text, as in Trino).
fn is_json_call(value: &[TokenWithSpan]) -> bool {
    let (Some(first), Some(open)) = (value.first(), value.get(1)) else {
        return false;
    };
    let called = match &first.token {
        Token::Word(w) if w.quote_style.is_none() => Function::named(&w.value),
        _ => None,
    };
    open.token == Token::LParen
        && called.is_some_and(Function::returns_json)
        && closing(value, 1).is_ok_and(|close| close + 1 == value.len())
}

/// Removes `FORMAT JSON [ENCODING e]` from the end of `value`: `None` when it has none, else
/// the encoding named, if one is.
pub(super) fn strip_format_json(value: &mut Vec<TokenWithSpan>) -> Option<Option<String>> {
    let n = value.len();
    let words: Vec<Option<String>> = value.iter().map(|t| word(Some(t))).collect();
    let at = |j: usize, w: &str| words.get(j).and_then(|x| x.as_deref()) == Some(w);
    if n >= 4 && at(n - 4, "FORMAT") && at(n - 3, "JSON") && at(n - 2, "ENCODING") {
        let encoding = words[n - 1].clone();
        value.truncate(n - 4);
        Some(encoding)
    } else if n >= 2 && at(n - 2, "FORMAT") && at(n - 1, "JSON") {
        value.truncate(n - 2);
        Some(None)
    } else {
        None
    }
}

/// A constructor's clauses.
struct ConstructorClauses {
    absent_on_null: bool,
    unique_keys: bool,
    /// `VARCHAR` or `VARBINARY <encoding>`.
    returning: String,
    /// What the result is then made into: a cast (`varchar(n)`, `char(n)`), or `json_parse`
    /// for `json`.
    output: Output,
}

pub(super) enum Output {
    AsIs,
    Cast(Vec<TokenWithSpan>),
    Json,
    /// Text's bytes in an encoding (`sqe_encoded_text(text, 'UTF16')`).
    Encoded(String),
}

/// `call` (text) made into what its `RETURNING` asks.
fn made_into(call: Vec<TokenWithSpan>, output: Output, span: Span) -> Vec<TokenWithSpan> {
    let wrapped = |function: &str, constant: Option<&str>| {
        let mut out = vec![
            TokenWithSpan::new(Token::make_word(function, None), span),
            TokenWithSpan::new(Token::LParen, span),
        ];
        out.extend(call.clone());
        if let Some(constant) = constant {
            out.push(TokenWithSpan::new(Token::Comma, span));
            out.push(text_token(constant, span));
        }
        out.push(TokenWithSpan::new(Token::RParen, span));
        out
    };
    match output {
        Output::AsIs => call,
        Output::Cast(type_tokens) => cast(call, type_tokens, span),
        Output::Json => wrapped("json_parse", None),
        Output::Encoded(encoding) => wrapped(sqe_functions::ENCODED_TEXT, Some(&encoding)),
    }
}

/// `json_array(…)` or `json_object(…)` written as the function reads it (see the module
/// documentation), with its `RETURNING` applied.
fn constructor(
    function: Function,
    inner: Vec<TokenWithSpan>,
    span: Span,
) -> Result<Vec<TokenWithSpan>> {
    let name = function.name();
    let (tokens, top) = significant(inner);
    let items = top_level_items(&tokens, &top);
    // The clauses follow the last element (or stand alone: `json_object(RETURNING varchar)`).
    let clauses_at = items.last().and_then(|last| {
        last.clone().find(|&j| {
            let w = |k: usize| word(tokens.get(k));
            let is = |k: usize, s: &str| w(k).as_deref() == Some(s);
            let first_of_item = j == last.start;
            top[j]
                && (is(j, "RETURNING")
                    || (!first_of_item
                        && ((is(j, "NULL") || is(j, "ABSENT"))
                            && is(j + 1, "ON")
                            && is(j + 2, "NULL")
                            || (function == Function::Object
                                && (is(j, "WITH") || is(j, "WITHOUT"))
                                && is(j + 1, "UNIQUE")))))
        })
    });
    let clauses =
        read_constructor_clauses(function, &tokens[clauses_at.unwrap_or(tokens.len())..])?;
    // Every element is written (`json_array(1,)` is an error); only clauses may stand alone.
    let clauses_alone = items
        .last()
        .is_some_and(|last| clauses_at == Some(last.start));
    if items.iter().any(|item| item.is_empty()) || (clauses_alone && items.len() > 1) {
        return Err(syntax(format!("an element of {name} is missing")));
    }
    let elements: Vec<std::ops::Range<usize>> = items
        .into_iter()
        .map(|item| item.start..clauses_at.map_or(item.end, |at| item.end.min(at)))
        .filter(|item| !item.is_empty())
        .collect();
    let text = |s: &str| text_token(s, span);
    let comma = || TokenWithSpan::new(Token::Comma, span);
    let mut call = vec![
        TokenWithSpan::new(Token::make_word(name, None), span),
        TokenWithSpan::new(Token::LParen, span),
        text(if clauses.absent_on_null {
            "ABSENT"
        } else {
            "NULL"
        }),
    ];
    if function == Function::Object {
        call.push(comma());
        call.push(text(if clauses.unique_keys {
            "WITH"
        } else {
            "WITHOUT"
        }));
    }
    call.push(comma());
    call.push(text(&clauses.returning));
    let mut any_formatted = false;
    for element in elements {
        let element_tokens = tokens[element.clone()].to_vec();
        let element_top = &top[element];
        let (key, mut value) = match function {
            Function::Object => key_and_value(element_tokens, element_top)?,
            _ => (None, element_tokens),
        };
        let (format, written) = value_format(&mut value);
        any_formatted |= written;
        if value.is_empty() || key.as_ref().is_some_and(Vec::is_empty) {
            return Err(syntax(format!("an element of {name} is empty")));
        }
        let value = json_clauses(value)?;
        let key = key.map(json_clauses).transpose()?;
        if let Some(key) = key {
            call.push(comma());
            call.extend(key);
        }
        call.push(comma());
        call.push(text(&format));
        call.push(comma());
        call.extend(value);
    }
    if clauses.unique_keys && any_formatted {
        return Err(Error::NotSupported(
            "WITH UNIQUE KEYS behavior is not supported for JSON_OBJECT function when input \
             expression has FORMAT"
                .to_string(),
        ));
    }
    call.push(TokenWithSpan::new(Token::RParen, span));
    Ok(made_into(call, clauses.output, span))
}

/// An object member's key and value: `[KEY] k VALUE v` or `k : v`, split at whichever comes
/// first at the top level (`key`, `value` and `t.value` may be columns: Trino's words are not
/// reserved).
fn key_and_value(
    tokens: Vec<TokenWithSpan>,
    top: &[bool],
) -> Result<(Option<Vec<TokenWithSpan>>, Vec<TokenWithSpan>)> {
    let separator = (1..tokens.len()).find(|&j| {
        top[j]
            && (tokens[j].token == Token::Colon
                || (word(tokens.get(j)).as_deref() == Some("VALUE")
                    && tokens[j - 1].token != Token::Period))
    });
    let Some(at) = separator else {
        return Err(syntax(
            "a member of json_object is written key : value or KEY key VALUE value",
        ));
    };
    // `KEY k VALUE v`: the word KEY goes, unless it is the key itself (`key VALUE v`).
    let keyword = tokens[at].token != Token::Colon
        && at > 1
        && word(tokens.first()).as_deref() == Some("KEY");
    let key_start = usize::from(keyword);
    Ok((
        Some(tokens[key_start..at].to_vec()),
        tokens[at + 1..].to_vec(),
    ))
}

/// The clauses after a constructor's last element.
fn read_constructor_clauses(
    function: Function,
    tokens: &[TokenWithSpan],
) -> Result<ConstructorClauses> {
    let name = function.name();
    let mut clauses = ConstructorClauses {
        // json_array leaves NULLs out by default; json_object writes them as JSON null.
        absent_on_null: function == Function::Array,
        unique_keys: false,
        returning: "VARCHAR".to_string(),
        output: Output::AsIs,
    };
    let w = |j: usize| word(tokens.get(j));
    let is = |j: usize, s: &str| w(j).as_deref() == Some(s);
    let unexpected = |j: usize| unexpected(tokens, name, j);
    let mut at = 0;
    while at < tokens.len() {
        if (is(at, "NULL") || is(at, "ABSENT")) && is(at + 1, "ON") && is(at + 2, "NULL") {
            clauses.absent_on_null = is(at, "ABSENT");
            at += 3;
        } else if function == Function::Object
            && (is(at, "WITH") || is(at, "WITHOUT"))
            && is(at + 1, "UNIQUE")
        {
            clauses.unique_keys = is(at, "WITH");
            at += 2;
            if is(at, "KEYS") {
                at += 1;
            }
        } else if is(at, "RETURNING") {
            let start = at + 1;
            let end = (start..tokens.len())
                .find(|&j| is(j, "FORMAT"))
                .unwrap_or(tokens.len());
            let mut format = tokens[end..].to_vec();
            let encoding = match strip_format_json(&mut format) {
                Some(encoding) if format.is_empty() => encoding,
                None if format.is_empty() => None,
                _ => return Err(unexpected(end)),
            };
            (clauses.returning, clauses.output) =
                returned(name, &tokens[start..end], encoding.as_deref())?;
            at = tokens.len();
        } else {
            return Err(unexpected(at));
        }
    }
    Ok(clauses)
}

/// The `RETURNING` constant and what the text is made into for the type `type_tokens` name.
fn returned(
    name: &str,
    type_tokens: &[TokenWithSpan],
    encoding: Option<&str>,
) -> Result<(String, Output)> {
    let first = word(type_tokens.first()).unwrap_or_default();
    let parameterized = type_tokens.get(1).is_some_and(|t| t.token == Token::LParen);
    let written = || {
        type_tokens
            .iter()
            .map(|t| t.token.to_string())
            .collect::<Vec<_>>()
            .join("")
    };
    let refused = || {
        Error::NotSupported(format!(
            "{name} … RETURNING {}: cannot output JSON value as {} using formatting JSON{}",
            written(),
            written(),
            encoding.map_or(String::new(), |e| format!(" ENCODING {e}"))
        ))
    };
    match first.as_str() {
        // The constructors write the bytes themselves; json_query's text is encoded after.
        "VARBINARY" if type_tokens.len() == 1 => {
            let encoding = encoding.unwrap_or("UTF8");
            if !matches!(encoding, "UTF8" | "UTF16" | "UTF32") {
                return Err(refused());
            }
            let output = if name == "json_query" {
                Output::Encoded(encoding.to_string())
            } else {
                Output::AsIs
            };
            Ok((format!("VARBINARY {encoding}"), output))
        }
        _ if encoding.is_some() => Err(refused()),
        "VARCHAR" if !parameterized && type_tokens.len() == 1 => {
            Ok(("VARCHAR".to_string(), Output::AsIs))
        }
        "VARCHAR" | "CHAR" => Ok(("VARCHAR".to_string(), Output::Cast(type_tokens.to_vec()))),
        "JSON" if type_tokens.len() == 1 && name != "json_query" => {
            Ok(("VARCHAR".to_string(), Output::Json))
        }
        _ => Err(refused()),
    }
}

#[derive(Default)]
pub(super) struct Clauses {
    pub(super) on_empty: Option<String>,
    pub(super) empty_default: Option<Vec<TokenWithSpan>>,
    pub(super) on_error: Option<String>,
    pub(super) error_default: Option<Vec<TokenWithSpan>>,
    pub(super) wrapper: Option<String>,
    pub(super) omit_quotes: bool,
    /// `json_value`'s returned type, as written.
    pub(super) returning: Option<Vec<TokenWithSpan>>,
    /// What `json_query`'s text is made into for its `RETURNING`.
    pub(super) query_output: Option<Output>,
    pub(super) passing: Vec<Variable>,
}

/// A path variable of `PASSING value [FORMAT JSON] AS name`.
pub(super) struct Variable {
    /// As Trino names it: an unquoted name upper-cased, a quoted one as written.
    pub(super) name: String,
    /// `SQL` or `JSON [encoding]`.
    pub(super) format: String,
    pub(super) value: Vec<TokenWithSpan>,
}

/// The syntax error of the token at `j` of a call's clauses (or of their end).
fn unexpected(tokens: &[TokenWithSpan], name: &str, j: usize) -> Error {
    match tokens.get(j) {
        Some(t) => syntax(format!("unexpected {} in {name}", t.token)),
        None => syntax(format!("{name}'s clauses end too early")),
    }
}

pub(super) fn read_clauses(
    function: Function,
    tokens: &[TokenWithSpan],
    top: &[bool],
) -> Result<Clauses> {
    let name = function.name();
    let mut clauses = Clauses::default();
    let mut at = 0;
    let w = |j: usize| word(tokens.get(j));
    let is = |j: usize, s: &str| w(j).as_deref() == Some(s);
    let unexpected = |j: usize| unexpected(tokens, name, j);
    while at < tokens.len() {
        let first = w(at).ok_or_else(|| unexpected(at))?;
        match first.as_str() {
            "PASSING" => {
                at += 1;
                loop {
                    let as_at = (at..tokens.len())
                        .find(|&j| top[j] && is(j, "AS"))
                        .ok_or_else(|| unexpected(tokens.len()))?;
                    let mut value = tokens[at..as_at].to_vec();
                    if value.is_empty() {
                        return Err(unexpected(as_at));
                    }
                    let (format, _) = value_format(&mut value);
                    let name = match tokens.get(as_at + 1).map(|t| &t.token) {
                        Some(Token::Word(w)) if w.quote_style.is_some() => w.value.clone(),
                        Some(Token::Word(w)) => w.value.to_uppercase(),
                        _ => return Err(unexpected(as_at + 1)),
                    };
                    if clauses.passing.iter().any(|v| v.name == name) {
                        return Err(syntax(format!(
                            "{name} is passed twice to {}",
                            function.name()
                        )));
                    }
                    clauses.passing.push(Variable {
                        name,
                        format,
                        value,
                    });
                    at = as_at + 2;
                    if tokens.get(at).is_some_and(|t| t.token == Token::Comma) && top[at] {
                        at += 1;
                    } else {
                        break;
                    }
                }
            }
            "RETURNING" if function == Function::Value => {
                // The type's tokens, up to the next behaviour (`timestamp(3) with time zone`).
                let start = at + 1;
                let end = (start..tokens.len())
                    .find(|&j| {
                        top[j] && matches!(w(j).as_deref(), Some("NULL" | "ERROR" | "DEFAULT"))
                    })
                    .unwrap_or(tokens.len());
                if end == start {
                    return Err(unexpected(start));
                }
                // Types whose values the function converts to.
                let first = w(start).unwrap_or_default();
                let returnable = match first.as_str() {
                    // A bounded text type: the function keeps a string to its length (and
                    // pads a char), as Trino's cast of the item's value.
                    "VARCHAR" | "CHAR" => true,
                    "DECIMAL" | "NUMERIC" => true,
                    "TINYINT" | "SMALLINT" | "INTEGER" | "INT" | "BIGINT" | "REAL" | "DOUBLE"
                    | "BOOLEAN" | "DATE" => end == start + 1,
                    _ => false,
                };
                if !returnable {
                    let written: Vec<String> = tokens[start..end]
                        .iter()
                        .map(|t| t.token.to_string())
                        .collect();
                    return Err(Error::NotSupported(format!(
                        "{name} … RETURNING {}",
                        written.join(" ")
                    )));
                }
                clauses.returning = Some(tokens[start..end].to_vec());
                at = end;
            }
            "RETURNING" if function == Function::Query => {
                // The type's tokens, up to its format or the next clause.
                let start = at + 1;
                let end = (start..tokens.len())
                    .find(|&j| {
                        top[j]
                            && w(j).is_some_and(|w| {
                                w == "FORMAT" || (j > start && CLAUSE_WORDS.contains(&w.as_str()))
                            })
                    })
                    .unwrap_or(tokens.len());
                at = end;
                let mut encoding = None;
                if is(at, "FORMAT") && is(at + 1, "JSON") {
                    at += 2;
                    if is(at, "ENCODING") {
                        encoding = w(at + 1);
                        at += 2;
                    }
                }
                // Text as the function answers it, cast to a bounded text type, or its bytes.
                let (_, output) = returned(name, &tokens[start..end], encoding.as_deref())?;
                if matches!(output, Output::Json) {
                    return Err(Error::NotSupported(format!(
                        "{name} … RETURNING {}",
                        tokens[start..end]
                            .iter()
                            .map(|t| t.token.to_string())
                            .collect::<Vec<_>>()
                            .join(" ")
                    )));
                }
                clauses.query_output = Some(output);
            }
            "WITHOUT" | "WITH" if function == Function::Query => {
                let mut kind = if first == "WITHOUT" {
                    "WITHOUT"
                } else {
                    "UNCONDITIONAL"
                };
                at += 1;
                if first == "WITH" && (is(at, "CONDITIONAL") || is(at, "UNCONDITIONAL")) {
                    kind = if is(at, "CONDITIONAL") {
                        "CONDITIONAL"
                    } else {
                        "UNCONDITIONAL"
                    };
                    at += 1;
                }
                if is(at, "ARRAY") {
                    at += 1;
                }
                if !is(at, "WRAPPER") {
                    return Err(unexpected(at));
                }
                at += 1;
                clauses.wrapper = Some(kind.to_string());
            }
            "KEEP" | "OMIT" if function == Function::Query => {
                if !is(at + 1, "QUOTES") {
                    return Err(unexpected(at + 1));
                }
                clauses.omit_quotes = first == "OMIT";
                at += 2;
                if is(at, "ON") && is(at + 1, "SCALAR") && is(at + 2, "STRING") {
                    at += 3;
                }
            }
            _ => {
                // A behaviour, then ON EMPTY or ON ERROR.
                let mut default = None;
                let behaviour = match (function, first.as_str()) {
                    (Function::Exists, "TRUE" | "FALSE" | "UNKNOWN" | "ERROR") => {
                        at += 1;
                        first.clone()
                    }
                    (Function::Value | Function::Query, "NULL" | "ERROR") => {
                        at += 1;
                        first.clone()
                    }
                    (Function::Query, "EMPTY") if is(at + 1, "ARRAY") || is(at + 1, "OBJECT") => {
                        let what = w(at + 1).unwrap_or_default();
                        at += 2;
                        format!("EMPTY {what}")
                    }
                    (Function::Value, "DEFAULT") => {
                        let start = at + 1;
                        let end = (start..tokens.len())
                            .find(|&j| {
                                top[j] && is(j, "ON") && (is(j + 1, "EMPTY") || is(j + 1, "ERROR"))
                            })
                            .ok_or_else(|| unexpected(tokens.len()))?;
                        if end == start {
                            return Err(unexpected(end));
                        }
                        default = Some(tokens[start..end].to_vec());
                        at = end;
                        first.clone()
                    }
                    _ => return Err(unexpected(at)),
                };
                if !is(at, "ON") {
                    return Err(unexpected(at));
                }
                match w(at + 1).as_deref() {
                    Some("EMPTY") if function != Function::Exists => {
                        clauses.on_empty = Some(behaviour);
                        clauses.empty_default = default;
                    }
                    Some("ERROR") => {
                        clauses.on_error = Some(behaviour);
                        clauses.error_default = default;
                    }
                    _ => return Err(unexpected(at + 1)),
                }
                at += 2;
            }
        }
    }
    Ok(clauses)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::tokenizer::Tokenizer;

    fn rewritten(sql: &str) -> Result<String> {
        let tokens = Tokenizer::new(&GenericDialect {}, sql)
            .tokenize_with_location()
            .map_err(|e| syntax(e.to_string()))?;
        let out = json_clauses(tokens)?;
        Ok(out
            .iter()
            .filter(|t| !matches!(t.token, Token::Whitespace(_)))
            .map(|t| t.token.to_string())
            .collect::<Vec<_>>()
            .join(" "))
    }

    #[test]
    fn clauses_become_arguments() {
        assert_eq!(
            rewritten("SELECT json_value(j, 'lax $.a')").ok().as_deref(),
            Some("SELECT json_value ( j , 'lax $.a' )")
        );
        assert_eq!(
            rewritten("SELECT json_exists(j FORMAT JSON, 'strict $.a' UNKNOWN ON ERROR)")
                .ok()
                .as_deref(),
            Some("SELECT json_exists ( j , 'strict $.a' , 'UNKNOWN' )")
        );
        assert_eq!(
            rewritten("SELECT JSON_VALUE(j, 'lax $.a' RETURNING decimal(10, 2) DEFAULT upper(x) ON EMPTY ERROR ON ERROR)")
                .ok()
                .as_deref(),
            Some("SELECT JSON_VALUE ( j , 'lax $.a' , 'DEFAULT' , upper ( x ) , 'ERROR' , NULL , CAST ( NULL AS decimal ( 10 , 2 ) ) )")
        );
        assert_eq!(
            rewritten("SELECT json_query(j, 'lax $.a' WITH CONDITIONAL ARRAY WRAPPER OMIT QUOTES ON SCALAR STRING EMPTY OBJECT ON ERROR)")
                .ok()
                .as_deref(),
            Some("SELECT json_query ( j , 'lax $.a' , 'CONDITIONAL' , 'OMIT' , 'NULL' , 'EMPTY OBJECT' )")
        );
        // Nested calls are rewritten too.
        assert_eq!(
            rewritten(
                "SELECT json_value(json_query(j, 'lax $.a' WITH WRAPPER), 'lax $[0]' NULL ON EMPTY)"
            )
            .ok()
            .as_deref(),
            Some(
                "SELECT json_value ( json_query ( j , 'lax $.a' , 'UNCONDITIONAL' , 'KEEP' , 'NULL' , 'NULL' ) , 'lax $[0]' , 'NULL' , NULL , 'NULL' , NULL )"
            )
        );
    }

    #[test]
    fn passing_becomes_named_formatted_values() {
        assert_eq!(
            rewritten(
                "SELECT json_query(j, 'lax $a + $B' PASSING x + 1 AS a, '[1]' FORMAT JSON AS \"B\")"
            )
            .ok()
            .as_deref(),
            Some(
                "SELECT json_query ( j , 'lax $a + $B' , 'WITHOUT' , 'KEEP' , 'NULL' , 'NULL' , 'A' , 'SQL' , x + 1 , 'B' , 'JSON' , '[1]' )"
            )
        );
        assert_eq!(
            rewritten("SELECT json_value(j, 'lax $v' PASSING CAST(y AS varchar) AS \"v\" RETURNING bigint ERROR ON ERROR)")
                .ok()
                .as_deref(),
            Some("SELECT json_value ( j , 'lax $v' , 'NULL' , NULL , 'ERROR' , NULL , CAST ( NULL AS bigint ) , 'v' , 'SQL' , CAST ( y AS varchar ) )")
        );
        assert_eq!(
            rewritten(
                "SELECT json_query(j, 'lax $' RETURNING varbinary FORMAT JSON ENCODING UTF16)"
            )
            .ok()
            .as_deref(),
            Some(
                "SELECT sqe_encoded_text ( json_query ( j , 'lax $' , 'WITHOUT' , 'KEEP' , 'NULL' , 'NULL' ) , 'UTF16' )"
            )
        );
        assert_eq!(
            rewritten("SELECT json_query(j, 'lax $' RETURNING char(10))")
                .ok()
                .as_deref(),
            Some(
                "SELECT CAST ( json_query ( j , 'lax $' , 'WITHOUT' , 'KEEP' , 'NULL' , 'NULL' ) AS char ( 10 ) )"
            )
        );
    }

    #[test]
    fn constructors_write_their_clauses_and_formats() {
        assert_eq!(
            rewritten("SELECT json_array()").ok().as_deref(),
            Some("SELECT json_array ( 'ABSENT' , 'VARCHAR' )")
        );
        assert_eq!(
            rewritten("SELECT json_array(true, null, '[1]' FORMAT JSON NULL ON NULL RETURNING varbinary FORMAT JSON ENCODING UTF16)")
                .ok()
                .as_deref(),
            Some("SELECT json_array ( 'NULL' , 'VARBINARY UTF16' , 'SQL' , true , 'SQL' , null , 'JSON' , '[1]' )")
        );
        assert_eq!(
            rewritten("SELECT json_object(KEY 'a' VALUE 1, 'b' : json_array(x) ABSENT ON NULL WITH UNIQUE KEYS RETURNING varchar(100))")
                .ok()
                .as_deref(),
            Some("SELECT CAST ( json_object ( 'ABSENT' , 'WITH' , 'VARCHAR' , 'a' , 'SQL' , 1 , 'b' , 'JSON' , json_array ( 'ABSENT' , 'VARCHAR' , 'SQL' , x ) ) AS varchar ( 100 ) )")
        );
        assert_eq!(
            rewritten("SELECT json_object('a' VALUE null NULL ON NULL RETURNING json)")
                .ok()
                .as_deref(),
            Some(
                "SELECT json_parse ( json_object ( 'NULL' , 'WITHOUT' , 'VARCHAR' , 'a' , 'SQL' , null ) )"
            )
        );
        assert!(matches!(
            rewritten("SELECT json_object('a' : '{}' FORMAT JSON WITH UNIQUE KEYS)"),
            Err(Error::NotSupported(_))
        ));
        assert!(matches!(
            rewritten("SELECT json_array(1 RETURNING bigint)"),
            Err(Error::NotSupported(_))
        ));
        for bad in [
            "SELECT json_object('a' 1)",
            "SELECT json_array(,)",
            "SELECT json_array(1,)",
            "SELECT json_array(1,, 2)",
            "SELECT json_object('a' : 1, RETURNING varchar)",
        ] {
            assert!(matches!(rewritten(bad), Err(Error::Syntax { .. })), "{bad}");
        }
        assert_eq!(
            rewritten("SELECT json_object(RETURNING varchar)")
                .ok()
                .as_deref(),
            Some("SELECT json_object ( 'NULL' , 'WITHOUT' , 'VARCHAR' )")
        );
    }

    #[test]
    fn clauses_trino_does_not_read_and_ones_sqe_does_not_do() {
        for unsupported in [
            "SELECT json_query(j, 'lax $.a' RETURNING bigint)",
            "SELECT json_value(j, 'lax $.a' RETURNING timestamp(3) with time zone)",
        ] {
            assert!(
                matches!(rewritten(unsupported), Err(Error::NotSupported(_))),
                "{unsupported}"
            );
        }
        for bad in [
            "SELECT json_exists(j, 'lax $' NULL ON ERROR)",
            "SELECT json_value(j, 'lax $' EMPTY ARRAY ON EMPTY)",
            "SELECT json_query(j, 'lax $' WITH ARRAY)",
            "SELECT json_value(j, 'lax $' DEFAULT ON EMPTY)",
            "SELECT json_value(j, 'lax $' NULL ON NOTHING)",
        ] {
            assert!(matches!(rewritten(bad), Err(Error::Syntax { .. })), "{bad}");
        }
    }
}
