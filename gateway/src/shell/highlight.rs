//! Colours for SQL as it is typed: keywords, literals and comments, found by the SQL parser's
//! own tokenizer so that the colours agree with how the statement will be read.

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

const KEYWORD: &str = "\x1b[1;34m";
const LITERAL: &str = "\x1b[32m";
const NUMBER: &str = "\x1b[33m";
const COMMENT: &str = "\x1b[90m";
const RESET: &str = "\x1b[0m";

/// `line` with ANSI colours around its keywords, literals and comments; unchanged when it does
/// not tokenize (an unfinished string) or has nothing to colour. The text itself, and so its
/// width on screen, stays the same.
pub(super) fn highlight(line: &str) -> Option<String> {
    let tokens = Tokenizer::new(&GenericDialect {}, line)
        .tokenize_with_location()
        .ok()?;
    let mut starts = LineStarts::new(line);
    let mut out = String::with_capacity(line.len() * 2);
    let mut coloured = false;
    for (i, token) in tokens.iter().enumerate() {
        let start = starts.offset(token.span.start.line, token.span.start.column)?;
        let end = match tokens.get(i + 1) {
            Some(next) => starts.offset(next.span.start.line, next.span.start.column)?,
            None => line.len(),
        };
        let text = line.get(start..end)?;
        match colour(&token.token) {
            Some(colour) => {
                coloured = true;
                out.push_str(colour);
                out.push_str(text);
                out.push_str(RESET);
            }
            None => out.push_str(text),
        }
    }
    coloured.then_some(out)
}

fn colour(token: &Token) -> Option<&'static str> {
    match token {
        Token::Word(word) if word.quote_style.is_none() && word.keyword != Keyword::NoKeyword => {
            Some(KEYWORD)
        }
        Token::Number(..) => Some(NUMBER),
        Token::SingleQuotedString(_)
        | Token::NationalStringLiteral(_)
        | Token::EscapedStringLiteral(_)
        | Token::UnicodeStringLiteral(_)
        | Token::HexStringLiteral(_)
        | Token::SingleQuotedByteStringLiteral(_)
        | Token::DoubleQuotedByteStringLiteral(_) => Some(LITERAL),
        Token::Whitespace(Whitespace::SingleLineComment { .. })
        | Token::Whitespace(Whitespace::MultiLineComment(_)) => Some(COMMENT),
        _ => None,
    }
}

/// Byte offsets of the tokenizer's 1-based line and (character) column positions, found by
/// walking forward: tokens come in order, so the whole line is walked once.
struct LineStarts<'a> {
    text: &'a str,
    /// The byte offset, line and column reached so far.
    at: (usize, u64, u64),
}

impl<'a> LineStarts<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            at: (0, 1, 1),
        }
    }

    fn offset(&mut self, line: u64, column: u64) -> Option<usize> {
        let (mut offset, mut l, mut c) = self.at;
        if (line, column) < (l, c) {
            return None;
        }
        let mut chars = self.text.get(offset..)?.chars();
        while (l, c) < (line, column) {
            let ch = chars.next()?;
            offset += ch.len_utf8();
            if ch == '\n' {
                (l, c) = (l + 1, 1);
            } else {
                c += 1;
            }
        }
        self.at = (offset, l, c);
        Some(offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(coloured: &str) -> String {
        let mut out = String::new();
        let mut rest = coloured;
        while let Some(at) = rest.find('\x1b') {
            out.push_str(&rest[..at]);
            rest = rest[at..].split_once('m').map_or("", |(_, r)| r);
        }
        out + rest
    }

    #[test]
    fn keywords_literals_and_comments_are_coloured_and_the_text_kept() {
        let sql = "SELECT n_name, 'é;x', 42 -- note\nFROM \"Select\" /* c */ WHERE é = 1";
        let coloured = highlight(sql).expect("something to colour");
        assert_eq!(plain(&coloured), sql);
        assert!(coloured.contains(&format!("{KEYWORD}SELECT{RESET}")));
        assert!(coloured.contains(&format!("{KEYWORD}FROM{RESET}")));
        assert!(coloured.contains(&format!("{LITERAL}'é;x'{RESET}")));
        assert!(coloured.contains(&format!("{NUMBER}42{RESET}")));
        assert!(coloured.contains(&format!("{COMMENT}-- note\n{RESET}")));
        assert!(
            !coloured.contains(&format!("{KEYWORD}\"Select\"")),
            "a quoted name is a name"
        );
    }

    #[test]
    fn unfinished_input_is_left_alone() {
        assert_eq!(highlight("SELECT 'open"), None);
        assert_eq!(highlight("n_name"), None);
        assert_eq!(highlight(""), None);
    }
}
