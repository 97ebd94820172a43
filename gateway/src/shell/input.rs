//! Splitting typed or piped SQL into statements at `;`, the way a SQL lexer would: semicolons
//! inside string literals, quoted identifiers and comments do not end a statement.

/// Statements complete in `text`, and the unfinished rest (to be continued by more input).
pub fn split_statements(text: &str) -> (Vec<String>, String) {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Code,
        SingleQuoted,
        DoubleQuoted,
        LineComment,
        BlockComment,
    }
    let mut state = State::Code;
    let mut statements = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        state = match (state, c) {
            (State::Code, '\'') => State::SingleQuoted,
            (State::Code, '"') => State::DoubleQuoted,
            (State::Code, '-') if next == Some('-') => {
                chars.next();
                State::LineComment
            }
            (State::Code, '/') if next == Some('*') => {
                chars.next();
                State::BlockComment
            }
            (State::Code, ';') => {
                push_statement(&mut statements, &text[start..i]);
                start = i + 1;
                State::Code
            }
            // A doubled quote is an escaped quote: leaving and re-entering gives the same state.
            (State::SingleQuoted, '\'') => State::Code,
            (State::DoubleQuoted, '"') => State::Code,
            (State::LineComment, '\n') => State::Code,
            (State::BlockComment, '*') if next == Some('/') => {
                chars.next();
                State::Code
            }
            (state, _) => state,
        };
    }
    (statements, text[start..].to_string())
}

fn push_statement(statements: &mut Vec<String>, text: &str) {
    if !is_blank(text) {
        statements.push(text.trim().to_string());
    }
}

/// Whether `text` holds nothing but whitespace and comments.
pub fn is_blank(text: &str) -> bool {
    let mut rest = text.trim_start();
    loop {
        if let Some(comment) = rest.strip_prefix("--") {
            rest = comment.split_once('\n').map_or("", |(_, r)| r).trim_start();
        } else if let Some(comment) = rest.strip_prefix("/*") {
            rest = comment.split_once("*/").map_or("", |(_, r)| r).trim_start();
        } else {
            return rest.is_empty();
        }
    }
}

/// An identifier as SQL means it: quoted keeps its case, unquoted is folded to lower case.
pub fn unquote(identifier: &str) -> String {
    match identifier
        .strip_prefix('"')
        .and_then(|i| i.strip_suffix('"'))
    {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None => identifier.to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_semicolons_outside_literals_and_comments() {
        let (statements, rest) = split_statements(
            "SELECT 'a;b', \"c;d\" FROM t; -- x; y\nSELECT 2 /* ; */;\n SELECT 'it''s;' ; SELECT",
        );
        assert_eq!(
            statements,
            vec![
                "SELECT 'a;b', \"c;d\" FROM t",
                "-- x; y\nSELECT 2 /* ; */",
                "SELECT 'it''s;'",
            ]
        );
        assert_eq!(rest, " SELECT");
    }

    #[test]
    fn an_open_literal_continues_on_the_next_line() {
        let (statements, rest) = split_statements("SELECT 'a;\n");
        assert!(statements.is_empty());
        let (statements, rest) = split_statements(&format!("{rest}b';"));
        assert_eq!(statements, vec!["SELECT 'a;\nb'"]);
        assert_eq!(rest, "");
    }

    #[test]
    fn empty_statements_and_comments_are_skipped() {
        let (statements, rest) = split_statements(";; -- only a comment\n; /* c */ ;");
        assert!(statements.is_empty(), "{statements:?}");
        assert!(is_blank(&rest));
        assert!(!is_blank("/* c */ SELECT 1"));
    }
}
