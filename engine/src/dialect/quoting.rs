//! Writing text back as SQL: string literals and identifiers, quoted so that they read back as
//! themselves.

/// `'text'` as an SQL literal.
pub fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// `"name"` as an SQL identifier.
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A name bare when it is a plain lower-case word (so it reads back as itself unquoted),
/// quoted otherwise.
pub fn ident_if_needed(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain { name.to_string() } else { ident(name) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_literals_are_quoted_to_read_back_as_themselves() {
        assert_eq!(literal("it's"), "'it''s'");
        assert_eq!(ident_if_needed("nation"), "nation");
        assert_eq!(ident_if_needed("t$snapshots"), "\"t$snapshots\"");
        assert_eq!(ident_if_needed("Mixed"), "\"Mixed\"");
        assert_eq!(ident_if_needed("a\"b"), "\"a\"\"b\"");
    }
}
