//! Trino's query periods, `t FOR VERSION AS OF <snapshot id | 'branch or tag'>` and
//! `t FOR TIMESTAMP AS OF TIMESTAMP '… <zone>'`, which the SQL parser does not read: folded
//! into the name of the table they follow (see [`Addressed`]), so the planner looks up that
//! state of the table like any other table.

use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan};

use super::parse::next_significant;
use super::rewrite::zoned_timestamp_millis;
use crate::catalog::Addressed;
use crate::error::{Error, ErrorCode, Result};

/// `tokens` with every query period folded into the table name before it.
pub(super) fn fold_query_periods(tokens: Vec<TokenWithSpan>) -> Result<Vec<TokenWithSpan>> {
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let Some((addressed, end)) = period_at(&tokens, i)? else {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        };
        while out
            .last()
            .is_some_and(|t| matches!(t.token, Token::Whitespace(_)))
        {
            out.pop();
        }
        match out.last_mut().map(|t| &mut t.token) {
            Some(Token::Word(word)) => {
                // Unquoted names are folded here, as the planner would have.
                let name = if word.quote_style.is_some() {
                    word.value.clone()
                } else {
                    word.value.to_lowercase()
                };
                word.value = addressed.name_for(&name);
                word.quote_style = Some('"');
                word.keyword = Keyword::NoKeyword;
            }
            _ => {
                return Err(syntax(
                    "FOR VERSION / TIMESTAMP AS OF must follow a table name",
                ));
            }
        }
        i = end;
    }
    Ok(out)
}

/// The state the period starting at `i` addresses and the index after it, if one starts there.
fn period_at(tokens: &[TokenWithSpan], i: usize) -> Result<Option<(Addressed, usize)>> {
    let keyword = |at: Option<usize>, keyword: Keyword| {
        at.filter(|&j| matches!(&tokens[j].token, Token::Word(w) if w.keyword == keyword && w.quote_style.is_none()))
    };
    let Some(for_) = keyword(Some(i), Keyword::FOR) else {
        return Ok(None);
    };
    let kind = next_significant(tokens, for_ + 1);
    let (by_version, kind) = match (
        keyword(kind, Keyword::VERSION),
        keyword(kind, Keyword::TIMESTAMP),
    ) {
        (Some(k), _) => (true, k),
        (None, Some(k)) => (false, k),
        (None, None) => return Ok(None),
    };
    let Some(of) = keyword(next_significant(tokens, kind + 1), Keyword::AS)
        .and_then(|as_| keyword(next_significant(tokens, as_ + 1), Keyword::OF))
    else {
        return Ok(None);
    };
    let value = next_significant(tokens, of + 1).ok_or_else(|| syntax("AS OF needs a value"))?;
    if by_version {
        version(tokens, value).map(Some)
    } else {
        instant(tokens, value).map(Some)
    }
}

/// `<snapshot id>`, `-<snapshot id>` or `'<branch or tag>'`.
fn version(tokens: &[TokenWithSpan], at: usize) -> Result<(Addressed, usize)> {
    let (negative, at) = match tokens[at].token {
        Token::Minus => (
            true,
            next_significant(tokens, at + 1)
                .ok_or_else(|| syntax("FOR VERSION AS OF needs a snapshot id"))?,
        ),
        _ => (false, at),
    };
    match &tokens[at].token {
        Token::Number(digits, _) => {
            let id: i64 = digits.parse().map_err(|_| {
                Error::invalid(
                    ErrorCode::InvalidArguments,
                    format!("'{digits}' is not a snapshot id (a bigint)"),
                )
            })?;
            Ok((Addressed::Snapshot(if negative { -id } else { id }), at + 1))
        }
        Token::SingleQuotedString(name) if !negative => {
            Ok((Addressed::Reference(name.clone()), at + 1))
        }
        _ => Err(syntax(
            "FOR VERSION AS OF takes a snapshot id or the name of a branch or tag",
        )),
    }
}

/// `TIMESTAMP '… <zone>'`: a temporal pointer must name its zone, as in Trino.
fn instant(tokens: &[TokenWithSpan], at: usize) -> Result<(Addressed, usize)> {
    let literal = match &tokens[at].token {
        Token::Word(w) if w.keyword == Keyword::TIMESTAMP => next_significant(tokens, at + 1),
        _ => None,
    };
    let Some((text, end)) = literal.and_then(|j| match &tokens[j].token {
        Token::SingleQuotedString(text) => Some((text, j + 1)),
        _ => None,
    }) else {
        return Err(Error::NotSupported(
            "FOR TIMESTAMP AS OF takes a TIMESTAMP '…' literal with a time zone".into(),
        ));
    };
    match zoned_timestamp_millis(text)? {
        Some(millis) => Ok((Addressed::AsOf(millis), end)),
        None => Err(Error::invalid(
            ErrorCode::TypeMismatch,
            format!(
                "Pointer value TIMESTAMP '{text}' has no time zone: FOR TIMESTAMP AS OF takes a \
                 timestamp with time zone"
            ),
        )),
    }
}

fn syntax(message: &str) -> Error {
    Error::Syntax {
        message: message.to_string(),
        location: None,
    }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::tokenizer::Tokenizer;

    use super::*;

    fn folded(sql: &str) -> Result<String> {
        let tokens = Tokenizer::new(&GenericDialect {}, sql)
            .tokenize_with_location()
            .map_err(|e| syntax(&e.to_string()))?;
        Ok(fold_query_periods(tokens)?
            .iter()
            .map(|t| t.token.to_string())
            .collect())
    }

    #[test]
    fn periods_become_the_names_of_the_states_they_address() -> Result<()> {
        assert_eq!(
            folded("SELECT * FROM s.Orders FOR VERSION AS OF 42 o")?,
            r#"SELECT * FROM s."orders@42" o"#
        );
        assert_eq!(
            folded("SELECT * FROM \"T\" FOR VERSION AS OF 'audit'")?,
            r#"SELECT * FROM "T@ref:audit""#
        );
        assert_eq!(
            folded("SELECT * FROM t FOR TIMESTAMP AS OF TIMESTAMP '2024-01-01 01:00:00 +01:00'")?,
            r#"SELECT * FROM "t@as_of:1704067200000""#
        );
        // Not a period: left alone.
        assert_eq!(folded("SELECT 1 FOR UPDATE")?, "SELECT 1 FOR UPDATE");
        Ok(())
    }

    #[test]
    fn a_period_that_names_no_state_is_refused() {
        let code = |sql: &str| folded(sql).err().map(|e| e.code());
        assert_eq!(
            code("SELECT * FROM t FOR TIMESTAMP AS OF TIMESTAMP '2024-01-01 00:00:00'"),
            Some(ErrorCode::TypeMismatch)
        );
        assert_eq!(
            code("SELECT * FROM t FOR TIMESTAMP AS OF now()"),
            Some(ErrorCode::NotSupported)
        );
        assert_eq!(
            code("SELECT * FROM t FOR VERSION AS OF x"),
            Some(ErrorCode::SyntaxError)
        );
        assert_eq!(
            code("SELECT * FROM t FOR VERSION AS OF 99999999999999999999"),
            Some(ErrorCode::InvalidArguments)
        );
        assert_eq!(
            code("SELECT (1) FOR VERSION AS OF 1"),
            Some(ErrorCode::SyntaxError)
        );
    }
}
