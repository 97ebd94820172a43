//! Trino's SQL read into DataFusion's statement, so that it means what it means in Trino:
//! tokens first (identifiers are case-insensitive even when quoted, `key` and its kin are
//! names, `ARRAY(T)` and `ROW(f T)` are types), then the parsed statement (see
//! [`super::rewrite`]: literal types, output names).

use datafusion::sql::parser::{DFParserBuilder, Statement as DFStatement};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Span, Token, TokenWithSpan, Tokenizer, Word};

use super::rewrite;
pub use super::rewrite::Label;
use crate::error::{Error, Result};

/// A statement ready for DataFusion's planner.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub statement: DFStatement,
    /// Trino's names of a query's columns, by position (`None`: not a query).
    pub labels: Option<Vec<Label>>,
}

/// Reads one statement of Trino's SQL.
pub fn parse(sql: &str) -> Result<Parsed> {
    let (tokens, table_comment) = take_table_comment(tokenize(sql)?);
    // Labels keep the case the statement wrote its aliases in; the statement planned is the
    // one whose quoted names are folded as Trino folds them.
    let labels = match single(tokens.clone())? {
        DFStatement::Statement(statement) => rewrite::labels(&statement),
        _ => None,
    };
    let mut statement = single(fold_names(tokens))?;
    if let (Some(text), DFStatement::Statement(inner)) = (table_comment, &mut statement)
        && let datafusion::sql::sqlparser::ast::Statement::CreateTable(create) = inner.as_mut()
    {
        create.comment = Some(datafusion::sql::sqlparser::ast::CommentDef::WithoutEq(text));
    }
    rewrite_statement(&mut statement)?;
    Ok(Parsed { statement, labels })
}

/// `statement` rewritten for DataFusion, also the one an `EXPLAIN [ANALYZE]` shows or runs (so
/// the plan explained is the plan a query gets, with Trino's types and functions).
fn rewrite_statement(statement: &mut DFStatement) -> Result<()> {
    match statement {
        DFStatement::Statement(inner) => rewrite::to_datafusion(inner),
        DFStatement::Explain(explain) => rewrite_statement(&mut explain.statement),
        _ => Ok(()),
    }
}

/// One statement with its names folded as [`parse`] folds them, nothing else rewritten: for
/// statements SQE turns into others before they are rewritten (MERGE).
pub(crate) fn raw_statement(sql: &str) -> Result<DFStatement> {
    single(fold_names(tokenize(sql)?))
}

/// A statement built from [`raw_statement`]'s parts, rewritten for DataFusion as [`parse`]
/// rewrites what it reads.
pub(crate) fn rewritten(
    mut statement: datafusion::sql::sqlparser::ast::Statement,
) -> Result<DFStatement> {
    rewrite::to_datafusion(&mut statement)?;
    Ok(DFStatement::Statement(Box::new(statement)))
}

/// A statement as the servers read it before planning.
#[derive(Debug, Clone)]
pub enum Read {
    /// One of the statements SQE answers itself (`SHOW ...`, `USE`, `SET SESSION`, ...).
    Client(super::statements::ClientStatement),
    /// `ALTER TABLE t EXECUTE procedure(...)`.
    TableProcedure(super::statements::TableProcedureCall),
    /// Trino's SQL, parsed for DataFusion's planner.
    Sql(Parsed),
}

/// Reads one statement: SQE's own statements first, then Trino's SQL.
pub fn read(sql: &str) -> Result<Read> {
    let tokens = super::statements::tokenize(sql)?;
    if let Some(call) = super::statements::table_procedure(tokens.clone())? {
        return Ok(Read::TableProcedure(call));
    }
    match super::statements::recognize_tokens(tokens)? {
        Some(statement) => Ok(Read::Client(statement)),
        None => parse(sql).map(Read::Sql),
    }
}

/// Whether `sql` reads as one statement, checked as the servers read it before planning: what
/// a client can check without a session or catalog.
pub fn check_syntax(sql: &str) -> Result<()> {
    read(sql).map(|_| ())
}

fn tokenize(sql: &str) -> Result<Vec<TokenWithSpan>> {
    let tokens = Tokenizer::new(&GenericDialect {}, sql)
        .tokenize_with_location()
        .map_err(|e| Error::Syntax {
            message: e.to_string(),
            location: None,
        })?;
    let tokens = super::json_clauses::json_clauses(super::json_table::json_tables(
        super::lambdas::as_calls(tokens)?,
    )?)?;
    super::periods::fold_query_periods(demote_index_words(parenthesize_values(
        rewrite_type_syntax(call_niladic_functions(ipaddress_literals(
            super::views::view_clauses_as_options(set_properties_as_options(tokens)),
        ))),
    )))
}

/// Trino's `CREATE TABLE t (…) COMMENT '…' WITH (…) [AS …]`: the parser reads a table's
/// comment only where MySQL writes it (after `WITH`'s place), so it is taken out of the tokens
/// here and put on the parsed statement.
fn take_table_comment(mut tokens: Vec<TokenWithSpan>) -> (Vec<TokenWithSpan>, Option<String>) {
    let significant: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .collect();
    let keyword = |i: usize, k: Keyword| matches!(&tokens[i].token, Token::Word(w) if w.keyword == k && w.quote_style.is_none());
    let mut at = 0;
    let is_create_table = significant
        .first()
        .is_some_and(|&i| keyword(i, Keyword::CREATE))
        && {
            at = 1;
            if significant.get(1).is_some_and(|&i| keyword(i, Keyword::OR))
                && significant
                    .get(2)
                    .is_some_and(|&i| keyword(i, Keyword::REPLACE))
            {
                at = 3;
            }
            significant
                .get(at)
                .is_some_and(|&i| keyword(i, Keyword::TABLE))
        };
    if !is_create_table {
        return (tokens, None);
    }
    let mut depth = 0usize;
    for pair in significant[at..].windows(2) {
        match &tokens[pair[0]].token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            Token::Word(w) if depth == 0 && w.keyword == Keyword::AS => break,
            Token::Word(w)
                if depth == 0 && w.keyword == Keyword::COMMENT && w.quote_style.is_none() =>
            {
                if let Token::SingleQuotedString(text) = &tokens[pair[1]].token {
                    let text = text.clone();
                    let (comment, value) = (pair[0], pair[1]);
                    tokens.remove(value);
                    tokens.remove(comment);
                    return (tokens, Some(text));
                }
            }
            _ => {}
        }
    }
    (tokens, None)
}

/// `IPADDRESS '…'`, which the parser reads as a column with an alias, as the cast it means
/// (`sqe_functions::SixteenBytes::IpAddress`'s, INVALID_CAST_ARGUMENT for text that is no
/// address).
fn ipaddress_literals(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let significant = |t: &TokenWithSpan| !matches!(t.token, Token::Whitespace(_));
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let token = &tokens[i];
        i += 1;
        let is_type = matches!(&token.token, Token::Word(w)
            if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("ipaddress"));
        let after_period = out
            .iter()
            .rev()
            .find(|t| significant(t))
            .is_some_and(|t: &TokenWithSpan| t.token == Token::Period);
        let string = tokens[i..]
            .iter()
            .position(significant)
            .map(|n| i + n)
            .filter(|&at| matches!(tokens[at].token, Token::SingleQuotedString(_)));
        match string {
            Some(at) if is_type && !after_period => {
                let name = sqe_functions::SixteenBytes::IpAddress.from_text();
                out.push(TokenWithSpan::new(Token::make_word(name, None), token.span));
                out.push(TokenWithSpan::new(Token::LParen, token.span));
                out.push(tokens[at].clone());
                out.push(TokenWithSpan::new(Token::RParen, tokens[at].span));
                i = at + 1;
            }
            _ => out.push(token.clone()),
        }
    }
    out
}

/// Trino's niladic functions written without parentheses (`current_schema`), which the SQL
/// parser would otherwise read as column names, become calls: `(` and `)` go in where the
/// word ends, so that error positions stay those of the statement as written.
fn call_niladic_functions(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    const NILADIC: &[&str] = &["current_schema"];
    let significant = |t: &&TokenWithSpan| !matches!(t.token, Token::Whitespace(_));
    let mut out = Vec::with_capacity(tokens.len());
    for (i, token) in tokens.iter().enumerate() {
        out.push(token.clone());
        let niladic = matches!(&token.token, Token::Word(w)
            if w.quote_style.is_none() && NILADIC.iter().any(|n| w.value.eq_ignore_ascii_case(n)));
        if !niladic {
            continue;
        }
        let next = tokens[i + 1..].iter().find(significant).map(|t| &t.token);
        let prev = tokens[..i].iter().rev().find(significant).map(|t| &t.token);
        if !matches!(next, Some(Token::LParen)) && !matches!(prev, Some(Token::Period)) {
            let at = Span::new(token.span.end, token.span.end);
            out.push(TokenWithSpan::new(Token::LParen, at));
            out.push(TokenWithSpan::new(Token::RParen, at));
        }
    }
    out
}

fn single(tokens: Vec<TokenWithSpan>) -> Result<DFStatement> {
    let mut statements = DFParserBuilder::new(tokens)
        .with_dialect(&GenericDialect {})
        .build()?
        .parse_statements()?;
    if statements.len() > 1 {
        return Err(Error::Syntax {
            message: "only one statement may be sent at a time".into(),
            location: None,
        });
    }
    statements.pop_front().ok_or_else(|| Error::Syntax {
        message: "the statement is empty".into(),
        location: None,
    })
}

/// Trino's `ALTER TABLE t SET PROPERTIES a = x, b = y` in the form the parser reads, Hive's
/// `SET TBLPROPERTIES (a = x, b = y)`.
fn set_properties_as_options(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let words: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .collect();
    let is = |i: usize, word: &str| {
        matches!(&tokens[i].token, Token::Word(w)
            if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
    };
    if !(words.len() > 4 && is(words[0], "ALTER") && is(words[1], "TABLE")) {
        return tokens;
    }
    let Some(at) = words
        .windows(2)
        .find(|pair| is(pair[0], "SET") && is(pair[1], "PROPERTIES"))
        .map(|pair| pair[1])
    else {
        return tokens;
    };
    let span = tokens[at].span;
    tokens[at] = TokenWithSpan::new(Token::make_keyword("TBLPROPERTIES"), span);
    // The properties run to the statement's end (before a final `;`).
    let Some(&last) = words
        .iter()
        .rev()
        .find(|&&i| !matches!(tokens[i].token, Token::SemiColon | Token::EOF))
    else {
        return tokens;
    };
    let last_span = tokens[last].span;
    tokens.insert(last + 1, TokenWithSpan::new(Token::RParen, last_span));
    tokens.insert(at + 1, TokenWithSpan::new(Token::LParen, span));
    tokens
}

/// Trino matches names case-insensitively, quoted or not: quoted names are folded to lower
/// case here (unquoted ones DataFusion folds itself).
fn fold_names(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    for token in &mut tokens {
        if let Token::Word(word) = &mut token.token
            && word.quote_style == Some('"')
        {
            word.value = word.value.to_lowercase();
        }
    }
    tokens
}

/// Words that MySQL reserves for index definitions (`KEY`, `INDEX`, ...) are plain names in
/// Trino, which has no such definitions.
fn demote_index_words(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    for token in &mut tokens {
        if let Token::Word(word) = &mut token.token
            && matches!(
                word.keyword,
                Keyword::KEY | Keyword::INDEX | Keyword::FULLTEXT | Keyword::SPATIAL
            )
        {
            word.keyword = Keyword::NoKeyword;
        }
    }
    tokens
}

/// Trino's parenthesized type constructors in the form the parser reads: `ARRAY(T)` as
/// `ARRAY<T>` and, where a type is expected, `ROW(f T, ...)` as `STRUCT<f T, ...>`.
fn rewrite_type_syntax(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    // For each open parenthesis: whether it opened a type constructor, to be closed by `>`.
    let mut parens: Vec<bool> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let token = &tokens[i];
        let next_is_paren =
            next_significant(&tokens, i + 1).is_some_and(|j| tokens[j].token == Token::LParen);
        match &token.token {
            Token::Word(w) if next_is_paren && is_type_constructor(w, &out, &parens) => {
                let j = next_significant(&tokens, i + 1).unwrap_or(i + 1);
                let mut word = w.clone();
                if w.keyword == Keyword::ROW {
                    word = Word {
                        value: "STRUCT".into(),
                        quote_style: None,
                        keyword: Keyword::STRUCT,
                    };
                }
                out.push(TokenWithSpan::new(Token::Word(word), token.span));
                out.push(TokenWithSpan::new(Token::Lt, tokens[j].span));
                parens.push(true);
                i = j + 1;
                continue;
            }
            Token::LParen => parens.push(false),
            // Every `)` closes its parenthesis; one that opened a type closes it with `>`.
            Token::RParen if parens.pop() == Some(true) => {
                out.push(TokenWithSpan::new(Token::Gt, token.span));
                i += 1;
                continue;
            }
            _ => {}
        }
        out.push(token.clone());
        i += 1;
    }
    out
}

/// Whether `word (` starts a type: `ARRAY(` always (Trino has no such expression), `ROW(`
/// after `AS` (a cast), after a column name (a column definition) or inside another type.
fn is_type_constructor(word: &Word, before: &[TokenWithSpan], parens: &[bool]) -> bool {
    if word.quote_style.is_some() {
        return false;
    }
    match word.keyword {
        Keyword::ARRAY => true,
        Keyword::ROW => {
            if parens.last() == Some(&true) {
                return true;
            }
            let mut significant = before
                .iter()
                .rev()
                .filter(|t| !matches!(t.token, Token::Whitespace(_)));
            match (
                significant.next().map(|t| &t.token),
                significant.next().map(|t| &t.token),
            ) {
                (Some(Token::Word(w)), _) if w.keyword == Keyword::AS => true,
                (Some(Token::Word(w)), _) if w.keyword == Keyword::NoKeyword => true,
                // A column definition whose name is a keyword: `(value ROW(...)`.
                (Some(Token::Word(_)), Some(Token::LParen | Token::Comma)) => true,
                (Some(Token::Lt), _) => true,
                _ => false,
            }
        }
        _ => false,
    }
}

/// Trino's `VALUES 1, 2` (one-column rows without parentheses) as `VALUES (1), (2)`.
fn parenthesize_values(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let token = tokens[i].clone();
        i += 1;
        let is_values = matches!(&token.token, Token::Word(w) if w.keyword == Keyword::VALUES);
        out.push(token);
        if !is_values {
            continue;
        }
        let Some(first) = next_significant(&tokens, i) else {
            continue;
        };
        let bare = match &tokens[first].token {
            Token::LParen => false,
            Token::Word(w) => w.keyword != Keyword::ROW,
            _ => true,
        };
        if !bare {
            continue;
        }
        let span = tokens[first].span;
        out.push(TokenWithSpan::new(Token::LParen, span));
        let mut depth = 0usize;
        while i < tokens.len() {
            let t = &tokens[i];
            let ends = depth == 0
                && match &t.token {
                    Token::RParen | Token::SemiColon | Token::EOF => true,
                    Token::Word(w) => matches!(
                        w.keyword,
                        Keyword::ORDER
                            | Keyword::LIMIT
                            | Keyword::OFFSET
                            | Keyword::FETCH
                            | Keyword::UNION
                            | Keyword::EXCEPT
                            | Keyword::INTERSECT
                    ),
                    _ => false,
                };
            if ends {
                break;
            }
            match &t.token {
                // An array's brackets hold commas of their own too (`VALUES ARRAY[1, 2]`).
                Token::LParen | Token::LBracket => depth += 1,
                Token::RParen | Token::RBracket => depth = depth.saturating_sub(1),
                Token::Comma if depth == 0 => {
                    out.push(TokenWithSpan::new(Token::RParen, t.span));
                    out.push(t.clone());
                    out.push(TokenWithSpan::new(Token::LParen, t.span));
                    i += 1;
                    continue;
                }
                _ => {}
            }
            out.push(t.clone());
            i += 1;
        }
        out.push(TokenWithSpan::new(Token::RParen, span));
    }
    out
}

pub(super) fn next_significant(tokens: &[TokenWithSpan], from: usize) -> Option<usize> {
    (from..tokens.len()).find(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sql_of(sql: &str) -> String {
        match parse(sql) {
            Ok(parsed) => parsed.statement.to_string(),
            Err(e) => format!("error: {e}"),
        }
    }

    /// An explained statement is rewritten as the statement itself: the plan shown (or run,
    /// under ANALYZE) is the plan the query gets.
    #[test]
    fn explained_statements_are_rewritten_as_themselves() {
        let query = "SELECT truncate(x), 2.5E0 FROM t FETCH FIRST 2 ROWS ONLY";
        for explain in ["EXPLAIN", "EXPLAIN ANALYZE", "EXPLAIN VERBOSE"] {
            let explained = sql_of(&format!("{explain} {query}"));
            assert_eq!(
                explained.strip_prefix(explain).map(str::trim),
                Some(sql_of(query).as_str()),
                "{explained}"
            );
        }
        assert!(sql_of(query).contains("trunc("), "{}", sql_of(query));
    }

    #[test]
    fn set_properties_reads_as_table_options() {
        assert_eq!(
            sql_of(
                "alter table s.t set properties partitioning = ARRAY['a', 'day(b)'], format_version = 2;"
            ),
            "ALTER TABLE s.t SET TBLPROPERTIES(partitioning = ARRAY['a', 'day(b)'], format_version = 2)"
        );
        // Only ALTER TABLE's SET PROPERTIES.
        assert_eq!(
            sql_of("SELECT properties FROM t"),
            "SELECT properties FROM t"
        );
    }

    #[test]
    fn quoted_names_are_folded_and_index_words_are_names() {
        assert_eq!(
            sql_of(r#"SELECT "Name", key FROM "T""#),
            r#"SELECT "name", key FROM "t""#
        );
        assert_eq!(
            sql_of("CREATE TABLE t (key INT, index VARCHAR)"),
            "CREATE TABLE t (key INT, index VARCHAR)"
        );
    }

    #[test]
    fn parenthesized_types_are_read_as_types() {
        assert_eq!(
            sql_of("SELECT CAST(x AS ARRAY(ROW(a INTEGER, b ARRAY(VARCHAR))))"),
            "SELECT CAST(x AS ARRAY<STRUCT<a INTEGER, b ARRAY<VARCHAR>>>) AS _col0"
        );
        assert_eq!(
            sql_of("CREATE TABLE t (r ROW(x BIGINT, y DOUBLE))"),
            "CREATE TABLE t (r STRUCT<x BIGINT, y DOUBLE>)"
        );
        // ROW(...) as a value stays a value.
        assert_eq!(
            sql_of("SELECT ROW(1, 2) AS r"),
            "SELECT ROW(CAST(1 AS INTEGER), CAST(2 AS INTEGER)) AS r"
        );
    }

    #[test]
    fn values_without_parentheses_are_one_column_rows() {
        assert_eq!(
            sql_of("SELECT x FROM (VALUES 1, NULL, 2) AS t(x) ORDER BY x"),
            "SELECT x FROM (VALUES (CAST(1 AS INTEGER)), (NULL), (CAST(2 AS INTEGER))) AS t (x) ORDER BY x"
        );
        assert_eq!(
            sql_of("VALUES (1, 'a'), (2, 'b')"),
            "VALUES (CAST(1 AS INTEGER), 'a'), (CAST(2 AS INTEGER), 'b')"
        );
        assert_eq!(
            sql_of("SELECT x FROM (VALUES ARRAY[1, 2], NULL) AS t(x)"),
            "SELECT x FROM (VALUES (ARRAY[CAST(1 AS INTEGER), CAST(2 AS INTEGER)]), (NULL)) AS t (x)"
        );
    }

    #[test]
    fn labels_keep_the_written_case_of_aliases() {
        let parsed = parse(r#"SELECT a AS "MixedCase", b AS Other, c, 1 FROM t"#)
            .ok()
            .and_then(|p| p.labels);
        assert_eq!(
            parsed,
            Some(vec![
                Label::Alias("MixedCase".into()),
                Label::Alias("Other".into()),
                Label::Name("c".into()),
                Label::Position,
            ])
        );
    }

    #[test]
    fn syntax_is_checked_as_the_servers_read_statements() {
        for accepted in [
            "SELECT 1",
            "USE tpch",
            "SET SESSION query_max_run_time = '1m'",
            "SHOW TABLES FROM tpch",
            "SELECT current_schema",
            "SELECT * FROM t FOR VERSION AS OF 1",
        ] {
            assert!(check_syntax(accepted).is_ok(), "{accepted}");
        }
        let typo = check_syntax("SELEC 1").expect_err("a typo");
        assert_eq!(typo.code(), crate::error::ErrorCode::SyntaxError);
        assert_eq!(
            typo.location(),
            Some(crate::error::Location { line: 1, column: 1 })
        );
        assert!(check_syntax("SELECT 'open").is_err());
    }

    #[test]
    fn niladic_functions_are_calls_and_errors_point_into_the_statement_as_written() {
        let called = |sql: &str| match parse(sql) {
            Ok(parsed) => parsed.statement.to_string(),
            Err(e) => e.to_string(),
        };
        assert_eq!(
            called("SELECT current_schema, current_timezone(), t.current_schema FROM t"),
            "SELECT current_schema() AS _col0, current_timezone() AS _col1, t.current_schema FROM t"
        );
        let sql = "SELECT current_schema, current_schema, (1 FROM t";
        let error = check_syntax(sql).expect_err("an unclosed parenthesis");
        let column = sql.find("FROM").map(|i| i as u64 + 1);
        assert_eq!(error.location().map(|l| l.column), column, "{error}");
    }
}
