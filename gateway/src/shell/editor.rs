//! The line editor's view of SQL: Tab completion ([`super::completion`]), colours
//! ([`super::highlight`]) and Enter accepting a statement only once it is complete and reads as
//! SQL, checked by the same parser the server uses (as datafusion-cli does with its own).

use std::borrow::Cow;

use rustyline::completion::Completer;
use rustyline::highlight::{CmdKind, Highlighter};
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Helper};
use sqe_engine::error::ErrorCode;

use super::commands::shell_command;
use super::completion::{Defaults, ServerNames, complete};
use super::highlight::highlight;
use super::input::{is_blank, split_statements};

pub(super) struct SqlHelper {
    pub(super) names: ServerNames,
    pub(super) defaults: Defaults,
    /// Whether a statement must read as SQL before Enter sends it (`--no-validate`).
    pub(super) validate: bool,
    /// Colours are drawn only on a terminal that wants them (`NO_COLOR` unset).
    pub(super) colour: bool,
}

impl Completer for SqlHelper {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        Ok(complete(line, pos, &self.names, &self.defaults))
    }
}

impl Hinter for SqlHelper {
    type Hint = String;
}

impl Highlighter for SqlHelper {
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> Cow<'l, str> {
        match self.colour.then(|| highlight(line)).flatten() {
            Some(coloured) => Cow::Owned(coloured),
            None => Cow::Borrowed(line),
        }
    }

    fn highlight_char(&self, _line: &str, _pos: usize, kind: CmdKind) -> bool {
        self.colour && kind != CmdKind::MoveCursor
    }
}

impl Validator for SqlHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        Ok(validate(ctx.input(), self.validate))
    }
}

impl Helper for SqlHelper {}

/// Whether Enter ends the input: a shell command or blank line at once, SQL once it ends with
/// `;` outside literals and comments. With `check`, a statement the parser rejects stays in
/// the editor with the reason shown under it, to be mended.
pub(super) fn validate(input: &str, check: bool) -> ValidationResult {
    if is_blank(input) || (!input.contains('\n') && shell_command(input).is_some()) {
        return ValidationResult::Valid(None);
    }
    let (statements, rest) = split_statements(input);
    // A shell command may end the input without `;` (`SELECT 1; \dt`).
    let finished = is_blank(&rest) || shell_command(&rest).is_some();
    if statements.is_empty() || !finished {
        return ValidationResult::Incomplete;
    }
    for statement in statements.iter().filter(|_| check) {
        if shell_command(statement).is_some() {
            continue;
        }
        // With its `;`, an error at the end is located at it rather than at "EOF".
        if let Err(e) = sqe_engine::dialect::parse::check_syntax(&format!("{statement};"))
            && e.code() == ErrorCode::SyntaxError
        {
            let mut message = format!("\n{}: {e}", e.code().name());
            if let Some(at) = e.location() {
                message.push('\n');
                message.push_str(&super::caret(statement, at));
            }
            return ValidationResult::Invalid(Some(message));
        }
    }
    ValidationResult::Valid(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(input: &str) -> &'static str {
        match validate(input, true) {
            ValidationResult::Valid(_) => "valid",
            ValidationResult::Incomplete => "incomplete",
            ValidationResult::Invalid(_) => "invalid",
            _ => "other",
        }
    }

    #[test]
    fn enter_accepts_complete_statements_and_commands() {
        assert_eq!(verdict("SELECT 1;"), "valid");
        assert_eq!(verdict("SELECT 1"), "incomplete");
        assert_eq!(verdict("SELECT ';'"), "incomplete");
        assert_eq!(verdict("SELECT 1;\nSELECT"), "incomplete");
        assert_eq!(verdict("quit"), "valid");
        assert_eq!(verdict("\\dt"), "valid");
        assert_eq!(verdict("USE tpch;"), "valid");
        assert_eq!(verdict(""), "valid");
        assert_eq!(verdict("SHOW TABLES FROM tpch;"), "valid");
        assert_eq!(verdict("SELECT 1; \\dt"), "valid");
        assert_eq!(verdict("SELECT 1; USE tpch"), "valid");
        assert_eq!(verdict("SELECT 1; SELECT 2"), "incomplete");
    }

    #[test]
    fn a_statement_that_does_not_parse_stays_with_its_reason() {
        let ValidationResult::Invalid(Some(message)) = validate("SELECT 1\nFROM x WHERE;", true)
        else {
            panic!("expected invalid");
        };
        assert!(
            matches!(
                validate("SELECT 1\nFROM x WHERE;", false),
                ValidationResult::Valid(_)
            ),
            "unchecked, a complete statement is sent"
        );
        assert!(message.contains("SYNTAX_ERROR"), "{message}");
        assert!(message.contains('^'), "{message}");
        // Errors found only by planning (an unknown table) are the server's to answer.
        assert_eq!(verdict("SELECT * FROM no_such_table;"), "valid");
    }
}
