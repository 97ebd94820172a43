//! The clauses of Trino's SQL/JSON functions, which the SQL parser does not read:
//! `json_exists(j, 'lax $.a' UNKNOWN ON ERROR)`, `json_value(j, p DEFAULT 0 ON EMPTY NULL ON
//! ERROR)`, `json_query(j, p WITH CONDITIONAL ARRAY WRAPPER OMIT QUOTES EMPTY ARRAY ON EMPTY)`.
//! Each call is written as the function with its clauses as trailing arguments, in the order
//! `sqe_functions`' `sql_json` module reads them. `json_value`'s `RETURNING type` becomes a last
//! argument `CAST(NULL AS type)`, whose type the function answers in. `FORMAT JSON` after the
//! input and `json_query`'s `RETURNING varchar` are what the functions do anyway; `PASSING` and
//! `json_query`'s other `RETURNING` types are refused as not supported.

use datafusion::sql::sqlparser::tokenizer::{Span, Token, TokenWithSpan};

use super::parse::next_significant;
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Function {
    Exists,
    Value,
    Query,
}

impl Function {
    fn named(name: &str) -> Option<Function> {
        match name.to_ascii_lowercase().as_str() {
            "json_exists" => Some(Function::Exists),
            "json_value" => Some(Function::Value),
            "json_query" => Some(Function::Query),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Function::Exists => "json_exists",
            Function::Value => "json_value",
            Function::Query => "json_query",
        }
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
        let inner = json_clauses(tokens[open + 1..close].to_vec())?;
        out.push(tokens[i].clone());
        out.push(tokens[open].clone());
        out.extend(arguments(function, inner, tokens[open].span)?);
        out.push(tokens[close].clone());
        i = close + 1;
    }
    Ok(out)
}

fn closing(tokens: &[TokenWithSpan], open: usize) -> Result<usize> {
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

fn syntax(message: impl Into<String>) -> Error {
    Error::Syntax {
        message: message.into(),
        location: None,
    }
}

/// The unquoted word of `token`, upper-cased.
fn word(token: Option<&TokenWithSpan>) -> Option<String> {
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

/// The call's arguments: input, path, then its clauses as constants (and `json_value`'s
/// defaults as the expressions they are).
fn arguments(
    function: Function,
    inner: Vec<TokenWithSpan>,
    span: Span,
) -> Result<Vec<TokenWithSpan>> {
    let tokens: Vec<TokenWithSpan> = inner
        .into_iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .collect();
    // Top-level positions: the depth before each token.
    let mut depth = 0i32;
    let top: Vec<bool> = tokens
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
    let Some(comma) = (0..tokens.len()).find(|&j| top[j] && tokens[j].token == Token::Comma) else {
        return Ok(tokens);
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
        return Ok(tokens);
    }
    let clauses = read_clauses(function, &tokens[clauses_at..], &top[clauses_at..])?;
    let text = |s: &str| TokenWithSpan::new(Token::SingleQuotedString(s.to_string()), span);
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
            if let Some(type_tokens) = clauses.returning {
                let mut typed_null = vec![
                    TokenWithSpan::new(Token::make_keyword("CAST"), span),
                    TokenWithSpan::new(Token::LParen, span),
                ];
                typed_null.extend(null());
                typed_null.push(TokenWithSpan::new(Token::make_keyword("AS"), span));
                typed_null.extend(type_tokens);
                typed_null.push(TokenWithSpan::new(Token::RParen, span));
                push(typed_null);
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
    }
    Ok(out)
}

/// `FORMAT JSON [ENCODING …]` after the input: JSON text is what the functions read.
fn strip_format_json(input: &mut Vec<TokenWithSpan>) {
    let n = input.len();
    let words: Vec<Option<String>> = input.iter().map(|t| word(Some(t))).collect();
    let at = |j: usize, w: &str| words.get(j).and_then(|x| x.as_deref()) == Some(w);
    if n >= 4 && at(n - 4, "FORMAT") && at(n - 3, "JSON") && at(n - 2, "ENCODING") {
        input.truncate(n - 4);
    } else if n >= 2 && at(n - 2, "FORMAT") && at(n - 1, "JSON") {
        input.truncate(n - 2);
    }
}

#[derive(Default)]
struct Clauses {
    on_empty: Option<String>,
    empty_default: Option<Vec<TokenWithSpan>>,
    on_error: Option<String>,
    error_default: Option<Vec<TokenWithSpan>>,
    wrapper: Option<String>,
    omit_quotes: bool,
    /// `json_value`'s returned type, as written.
    returning: Option<Vec<TokenWithSpan>>,
}

fn read_clauses(function: Function, tokens: &[TokenWithSpan], top: &[bool]) -> Result<Clauses> {
    let name = function.name();
    let mut clauses = Clauses::default();
    let mut at = 0;
    let w = |j: usize| word(tokens.get(j));
    let is = |j: usize, s: &str| w(j).as_deref() == Some(s);
    let unexpected = |j: usize| -> Error {
        match tokens.get(j) {
            Some(t) => syntax(format!("unexpected {} in {name}", t.token)),
            None => syntax(format!("{name}'s clauses end too early")),
        }
    };
    while at < tokens.len() {
        let first = w(at).ok_or_else(|| unexpected(at))?;
        match first.as_str() {
            "PASSING" => {
                return Err(Error::NotSupported(format!(
                    "{name} … PASSING (JSON path variables)"
                )));
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
                // Types whose values the function converts to; `char(n)` and `varchar(n)` would
                // read as a plain varchar, without Trino's padding and length.
                let first = w(start).unwrap_or_default();
                let parameterized = tokens
                    .get(start + 1)
                    .is_some_and(|t| t.token == Token::LParen);
                let returnable = match first.as_str() {
                    "VARCHAR" => !parameterized,
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
                if !(is(at + 1, "VARCHAR")
                    && tokens.get(at + 2).is_none_or(|t| t.token != Token::LParen))
                {
                    let type_name = tokens
                        .get(at + 1)
                        .map_or(String::new(), |t| t.token.to_string());
                    return Err(Error::NotSupported(format!(
                        "{name} … RETURNING {type_name} (it returns varchar: cast its result)"
                    )));
                }
                at += 2;
                if is(at, "FORMAT") && is(at + 1, "JSON") {
                    at += 2;
                    if is(at, "ENCODING") {
                        at += 2;
                    }
                }
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
    fn clauses_trino_does_not_read_and_ones_sqe_does_not_do() {
        assert!(matches!(
            rewritten("SELECT json_value(j, 'lax $a' PASSING 1 AS a)"),
            Err(Error::NotSupported(_))
        ));
        for unsupported in [
            "SELECT json_query(j, 'lax $.a' RETURNING bigint)",
            "SELECT json_value(j, 'lax $.a' RETURNING char(12))",
            "SELECT json_value(j, 'lax $.a' RETURNING varchar(3))",
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
