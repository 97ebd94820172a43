//! Trino's `CREATE [OR REPLACE] VIEW v [COMMENT '…'] [SECURITY DEFINER | INVOKER] AS query`:
//! the parser has no place for Trino's comment and security clauses, so they are read as the
//! view options `WITH (comment = '…', security = '…')` it does take; and the query's text, which
//! a view stores as the statement wrote it.

use datafusion::sql::sqlparser::ast::{CreateTableOptions, CreateView, Expr, SqlOption, Value};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{
    Location, Token, TokenWithSpan, Tokenizer, Whitespace,
};

use super::parse::next_significant;
use crate::error::{Error, Result};

/// The clauses of a CREATE VIEW besides its name and query.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ViewOptions {
    pub comment: Option<String>,
    /// `DEFINER` or `INVOKER`, as written.
    pub security: Option<String>,
}

/// Significant token positions of `CREATE [OR REPLACE] VIEW name`: the index just after the
/// name, if the tokens start so.
fn after_view_name(tokens: &[TokenWithSpan]) -> Option<usize> {
    let keyword =
        |i: usize, k: Keyword| matches!(&tokens[i].token, Token::Word(w) if w.keyword == k);
    let mut i = next_significant(tokens, 0)?;
    if !keyword(i, Keyword::CREATE) {
        return None;
    }
    i = next_significant(tokens, i + 1)?;
    if keyword(i, Keyword::OR) {
        i = next_significant(tokens, i + 1)?;
        if !keyword(i, Keyword::REPLACE) {
            return None;
        }
        i = next_significant(tokens, i + 1)?;
    }
    if !keyword(i, Keyword::VIEW) {
        return None;
    }
    // The name: words joined by periods.
    i = next_significant(tokens, i + 1)?;
    loop {
        if !matches!(tokens[i].token, Token::Word(_)) {
            return None;
        }
        match next_significant(tokens, i + 1) {
            Some(dot) if tokens[dot].token == Token::Period => {
                i = next_significant(tokens, dot + 1)?;
            }
            _ => return Some(i + 1),
        }
    }
}

/// `COMMENT '…'` and `SECURITY DEFINER | INVOKER` between a view's name and `AS` become
/// `WITH (comment = '…', security = '…')`.
pub(super) fn view_clauses_as_options(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let Some(start) = after_view_name(&tokens) else {
        return tokens;
    };
    let mut options: Vec<(&str, String)> = Vec::new();
    let mut i = start;
    let end = loop {
        let Some(at) = next_significant(&tokens, i) else {
            return tokens;
        };
        let Token::Word(word) = &tokens[at].token else {
            return tokens;
        };
        let value = next_significant(&tokens, at + 1);
        match (word.keyword, value.map(|v| &tokens[v].token)) {
            (Keyword::AS, _) => break at,
            (Keyword::COMMENT, Some(Token::SingleQuotedString(text))) => {
                options.push(("comment", text.clone()));
            }
            (Keyword::SECURITY, Some(Token::Word(mode)))
                if matches!(mode.keyword, Keyword::DEFINER | Keyword::INVOKER) =>
            {
                options.push(("security", mode.value.to_uppercase()));
            }
            _ => return tokens,
        }
        i = value.map_or(at + 1, |v| v + 1);
    };
    if options.is_empty() {
        return tokens;
    }
    let span = tokens[start.min(tokens.len() - 1)].span;
    let token = |t: Token| TokenWithSpan::new(t, span);
    let mut out: Vec<TokenWithSpan> = tokens[..start].to_vec();
    out.push(token(Token::Whitespace(Whitespace::Space)));
    out.push(token(Token::make_keyword("WITH")));
    out.push(token(Token::LParen));
    for (n, (key, value)) in options.into_iter().enumerate() {
        if n > 0 {
            out.push(token(Token::Comma));
        }
        out.push(token(Token::make_word(key, None)));
        out.push(token(Token::Eq));
        out.push(token(Token::SingleQuotedString(value)));
    }
    out.push(token(Token::RParen));
    out.push(token(Token::Whitespace(Whitespace::Space)));
    out.extend_from_slice(&tokens[end..]);
    out
}

/// The options of a parsed CREATE VIEW; any other option is refused.
pub fn view_options(create: &CreateView) -> Result<ViewOptions> {
    let mut out = ViewOptions::default();
    let options = match &create.options {
        CreateTableOptions::None => return Ok(out),
        CreateTableOptions::With(options) => options,
        other => return Err(Error::NotSupported(format!("CREATE VIEW options {other}"))),
    };
    for option in options {
        let SqlOption::KeyValue { key, value } = option else {
            return Err(Error::NotSupported(format!("CREATE VIEW option {option}")));
        };
        let text = match value {
            Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(text) => Some(text.clone()),
                _ => None,
            },
            _ => None,
        };
        match (key.value.to_lowercase().as_str(), text) {
            ("comment", Some(text)) => out.comment = Some(text),
            ("security", Some(mode)) => out.security = Some(mode),
            _ => return Err(Error::NotSupported(format!("CREATE VIEW option {option}"))),
        }
    }
    Ok(out)
}

/// The text of the query a `CREATE VIEW … AS query` statement holds, as written (without a
/// final `;`); `None` when `sql` is no such statement.
pub fn view_query_text(sql: &str) -> Option<String> {
    let tokens = Tokenizer::new(&GenericDialect {}, sql)
        .tokenize_with_location()
        .ok()?;
    let start = after_view_name(&tokens)?;
    let mut i = start;
    let as_token = loop {
        let at = next_significant(&tokens, i)?;
        if matches!(&tokens[at].token, Token::Word(w) if w.keyword == Keyword::AS) {
            break at;
        }
        i = at + 1;
    };
    let offset = byte_offset(sql, tokens[as_token].span.end)?;
    let query = sql[offset..].trim();
    Some(query.trim_end_matches(';').trim_end().to_string())
}

/// Where a tokenizer location (1-based line and column, in characters) is in `sql`.
fn byte_offset(sql: &str, at: Location) -> Option<usize> {
    let mut line = 1;
    let mut column = 1;
    for (offset, c) in sql.char_indices() {
        if line == at.line && column == at.column {
            return Some(offset);
        }
        if c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    (line == at.line && column == at.column).then_some(sql.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::parse::parse;
    use datafusion::sql::parser::Statement as DFStatement;
    use datafusion::sql::sqlparser::ast::Statement;

    fn create_view(sql: &str) -> Result<CreateView> {
        match parse(sql)?.statement {
            DFStatement::Statement(statement) => match *statement {
                Statement::CreateView(create) => Ok(create),
                other => Err(Error::Internal(format!("not a CREATE VIEW: {other}"))),
            },
            other => Err(Error::Internal(format!("not a CREATE VIEW: {other}"))),
        }
    }

    #[test]
    fn trino_view_clauses_read_as_options() -> Result<()> {
        let create = create_view(
            "CREATE OR REPLACE VIEW s.v COMMENT 'it''s counted' SECURITY definer AS SELECT 1 AS n",
        )?;
        assert!(create.or_replace);
        assert_eq!(create.name.to_string(), "s.v");
        assert_eq!(
            view_options(&create)?,
            ViewOptions {
                comment: Some("it's counted".into()),
                security: Some("DEFINER".into()),
            }
        );
        let plain = create_view("CREATE VIEW v AS SELECT 1 AS n")?;
        assert_eq!(view_options(&plain)?, ViewOptions::default());
        let invoker = create_view("create view \"a\".\"b\" security invoker as select 1")?;
        assert_eq!(view_options(&invoker)?.security.as_deref(), Some("INVOKER"));
        Ok(())
    }

    #[test]
    fn other_options_are_refused() -> Result<()> {
        let create = create_view("CREATE VIEW v WITH (owner = 'x') AS SELECT 1")?;
        assert!(matches!(view_options(&create), Err(Error::NotSupported(_))));
        Ok(())
    }

    #[test]
    fn the_query_text_is_kept_as_written() {
        assert_eq!(
            view_query_text("CREATE VIEW v AS SELECT 1 AS n").as_deref(),
            Some("SELECT 1 AS n")
        );
        assert_eq!(
            view_query_text(
                "create or replace view x.y\n  comment 'c as d'\n  security definer as\n  with t AS (select 1 as a)\n  select a  from t ;\n"
            )
            .as_deref(),
            Some("with t AS (select 1 as a)\n  select a  from t")
        );
        assert_eq!(
            view_query_text("CREATE VIEW \"é\" AS SELECT 'ü' AS u").as_deref(),
            Some("SELECT 'ü' AS u")
        );
        assert_eq!(view_query_text("SELECT 1"), None);
        assert_eq!(view_query_text("CREATE TABLE t AS SELECT 1"), None);
    }
}
