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

/// A client-side command the shell handles itself instead of sending it to the server.
#[derive(Debug, PartialEq, Eq)]
pub enum ShellCommand {
    Quit,
    Help,
    /// `USE schema` or `USE catalog.schema`.
    Use {
        catalog: Option<String>,
        schema: String,
    },
}

/// Recognizes the shell's own commands; anything else is SQL for the server.
pub fn shell_command(statement: &str) -> Option<ShellCommand> {
    let statement = statement.trim().trim_end_matches(';').trim();
    let lower = statement.to_ascii_lowercase();
    match lower.as_str() {
        "quit" | "exit" | "\\q" => return Some(ShellCommand::Quit),
        "help" | "\\?" => return Some(ShellCommand::Help),
        _ => {}
    }
    let mut words = statement.split_whitespace();
    let keyword = words.next()?;
    let target = words.next()?;
    if !keyword.eq_ignore_ascii_case("use") || words.next().is_some() {
        return None;
    }
    let parts: Vec<String> = target.split('.').map(unquote).collect();
    match parts.as_slice() {
        [schema] if !schema.is_empty() => Some(ShellCommand::Use {
            catalog: None,
            schema: schema.clone(),
        }),
        [catalog, schema] if !catalog.is_empty() && !schema.is_empty() => Some(ShellCommand::Use {
            catalog: Some(catalog.clone()),
            schema: schema.clone(),
        }),
        _ => None,
    }
}

/// An identifier as SQL means it: quoted keeps its case, unquoted is folded to lower case.
fn unquote(identifier: &str) -> String {
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

    #[test]
    fn recognizes_shell_commands() {
        assert_eq!(shell_command("quit"), Some(ShellCommand::Quit));
        assert_eq!(shell_command("EXIT;"), Some(ShellCommand::Quit));
        assert_eq!(shell_command(" help "), Some(ShellCommand::Help));
        assert_eq!(
            shell_command("use TPCH"),
            Some(ShellCommand::Use {
                catalog: None,
                schema: "tpch".into()
            })
        );
        assert_eq!(
            shell_command("USE iceberg.\"Mixed\""),
            Some(ShellCommand::Use {
                catalog: Some("iceberg".into()),
                schema: "Mixed".into()
            })
        );
        assert_eq!(shell_command("USE a.b.c"), None);
        assert_eq!(shell_command("user_table"), None);
        assert_eq!(shell_command("SELECT 1"), None);
    }
}
