//! Tab completion of keywords, catalogs, schemas, tables and columns. What can follow the word
//! under the cursor is decided here from the typed text alone; the names come from a
//! [`NameSource`] (the server's `system.jdbc` tables, see [`ServerNames`]).

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

use super::connection::Connection;
use sqe_engine::dialect::quoting::{ident, ident_if_needed, literal};

use super::input::unquote;

/// The keywords offered: the ones statements start with or are built of, not the parser's
/// whole vocabulary (which holds hundreds of dialects' words).
const KEYWORDS: &[&str] = &[
    "ALL",
    "ALTER",
    "AND",
    "ANALYZE",
    "ARRAY",
    "AS",
    "ASC",
    "BETWEEN",
    "BIGINT",
    "BOOLEAN",
    "BY",
    "CASE",
    "CAST",
    "CATALOGS",
    "COLUMN",
    "COLUMNS",
    "COMMENT",
    "CREATE",
    "CROSS",
    "DATE",
    "DECIMAL",
    "DELETE",
    "DESC",
    "DESCRIBE",
    "DISTINCT",
    "DOUBLE",
    "DROP",
    "ELSE",
    "END",
    "EXCEPT",
    "EXECUTE",
    "EXISTS",
    "EXPLAIN",
    "FALSE",
    "FETCH",
    "FIRST",
    "FOR",
    "FROM",
    "FULL",
    "FUNCTIONS",
    "GROUP",
    "HAVING",
    "IF",
    "IN",
    "INNER",
    "INSERT",
    "INTEGER",
    "INTERSECT",
    "INTERVAL",
    "INTO",
    "IS",
    "JOIN",
    "LAST",
    "LEFT",
    "LIKE",
    "LIMIT",
    "MAP",
    "NOT",
    "NULL",
    "NULLS",
    "OFFSET",
    "ON",
    "OR",
    "ORDER",
    "OUTER",
    "OVER",
    "PARTITION",
    "PROPERTIES",
    "REAL",
    "RENAME",
    "RIGHT",
    "ROW",
    "ROWS",
    "SCHEMA",
    "SCHEMAS",
    "SELECT",
    "SESSION",
    "SET",
    "SHOW",
    "SMALLINT",
    "TABLE",
    "TABLES",
    "THEN",
    "TIMESTAMP",
    "TINYINT",
    "TO",
    "TRUE",
    "UNION",
    "UNNEST",
    "UPDATE",
    "USE",
    "USING",
    "VALUES",
    "VARBINARY",
    "VARCHAR",
    "VERSION",
    "VIEW",
    "WHEN",
    "WHERE",
    "WITH",
];

/// Names the completer can look up.
pub trait NameSource {
    fn catalogs(&self) -> Vec<String>;
    fn schemas(&self, catalog: &str) -> Vec<String>;
    fn tables(&self, catalog: &str, schema: &str) -> Vec<String>;
    fn columns(&self, catalog: &str, schema: &str, table: &str) -> Vec<String>;
}

/// The session's defaults for unqualified names.
#[derive(Clone, Debug, Default)]
pub struct Defaults {
    pub catalog: String,
    pub schema: String,
}

/// Where the word under the cursor starts, and what may replace it from there.
pub fn complete(
    line: &str,
    pos: usize,
    names: &dyn NameSource,
    defaults: &Defaults,
) -> (usize, Vec<String>) {
    let Some(before) = line.get(..pos) else {
        return (pos, Vec::new());
    };
    if in_literal_or_comment(before) {
        return (pos, Vec::new());
    }
    let word_start = before
        .char_indices()
        .rev()
        .take_while(|&(_, c)| c.is_alphanumeric() || matches!(c, '_' | '.' | '"' | '$'))
        .last()
        .map_or(pos, |(i, _)| i);
    let word = &before[word_start..];
    let (qualifiers, prefix) = match word.rsplit_once('.') {
        Some((qualifiers, prefix)) => (qualifiers.split('.').map(unquote).collect(), prefix),
        None => (Vec::new(), word),
    };
    let start = pos - prefix.len();
    // A name being typed in quotes is offered in quotes.
    let quoted = prefix.starts_with('"');
    let wanted = prefix.trim_start_matches('"').to_lowercase();
    let (catalog, schema) = (defaults.catalog.as_str(), defaults.schema.as_str());
    let mut found = BTreeSet::new();
    let mut names_of = |list: Vec<String>| {
        found.extend(
            list.into_iter()
                .filter(|name| name.to_lowercase().starts_with(&wanted))
                .map(|name| {
                    if quoted {
                        ident(&name)
                    } else {
                        ident_if_needed(&name)
                    }
                }),
        );
    };
    match qualifiers.as_slice() {
        [] => {
            names_of(names.catalogs());
            names_of(names.schemas(catalog));
            names_of(names.tables(catalog, schema));
            for (c, s, t) in referenced_tables(line, defaults) {
                names_of(names.columns(&c, &s, &t));
            }
        }
        [first] => {
            if names.catalogs().contains(first) {
                names_of(names.schemas(first));
            }
            names_of(names.tables(catalog, first));
            names_of(names.columns(catalog, schema, first));
        }
        [first, second] => {
            names_of(names.tables(first, second));
            names_of(names.columns(catalog, first, second));
        }
        [c, s, t] => names_of(names.columns(c, s, t)),
        _ => {}
    }
    let mut candidates: Vec<String> = found.into_iter().collect();
    if qualifiers.is_empty() && !prefix.starts_with('"') {
        // Keywords in the case the word is being typed in.
        let upper = prefix.is_empty() || prefix.chars().any(char::is_uppercase);
        let keywords = KEYWORDS
            .iter()
            .filter(|k| k.to_lowercase().starts_with(&wanted))
            .map(|k| {
                if upper {
                    k.to_string()
                } else {
                    k.to_lowercase()
                }
            })
            .filter(|k| !candidates.contains(k));
        candidates.extend(keywords.collect::<Vec<_>>());
    }
    (start, candidates)
}

/// Whether the text ends inside a string literal or a comment (inside a quoted name, names
/// are offered).
fn in_literal_or_comment(before: &str) -> bool {
    let tokens = |text: &str| Tokenizer::new(&GenericDialect {}, text).tokenize();
    match tokens(before) {
        // Unterminated: a literal, unless closing a quoted name ends it.
        Err(_) => tokens(&format!("{before}\"")).is_err(),
        Ok(tokens) => matches!(
            tokens.last(),
            Some(Token::Whitespace(Whitespace::SingleLineComment { .. }))
        ),
    }
}

/// The tables the statement names after FROM, JOIN, INTO, UPDATE, TABLE or DESCRIBE, fully
/// qualified with the defaults: whose columns are worth offering.
fn referenced_tables(line: &str, defaults: &Defaults) -> Vec<(String, String, String)> {
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, line).tokenize() else {
        return Vec::new();
    };
    let tokens: Vec<Token> = tokens
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    let mut tables = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        let Token::Word(word) = token else { continue };
        if !matches!(
            word.keyword,
            Keyword::FROM
                | Keyword::JOIN
                | Keyword::INTO
                | Keyword::UPDATE
                | Keyword::TABLE
                | Keyword::DESCRIBE
        ) {
            continue;
        }
        let mut parts = Vec::new();
        let mut at = i + 1;
        while let Some(Token::Word(part)) = tokens.get(at) {
            parts.push(match part.quote_style {
                Some(_) => part.value.clone(),
                None => part.value.to_lowercase(),
            });
            if tokens.get(at + 1) != Some(&Token::Period) {
                break;
            }
            at += 2;
        }
        let d = defaults;
        let table = match parts.as_slice() {
            [t] => (d.catalog.clone(), d.schema.clone(), t.clone()),
            [s, t] => (d.catalog.clone(), s.clone(), t.clone()),
            [c, s, t] => (c.clone(), s.clone(), t.clone()),
            _ => continue,
        };
        if !tables.contains(&table) && tables.len() < 8 {
            tables.push(table);
        }
    }
    tables
}

/// How long a lookup may hold up the Tab key before completion goes without it.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(2);
/// After a lookup failed, how long completion goes without the server (one Tab asks for
/// several lists; a server that is down should cost one timeout, not one per list).
const RETRY_AFTER: Duration = Duration::from_secs(10);

/// Names read from the server's `system.jdbc` tables as completion needs them, kept until the
/// next statement runs (which may have changed them).
pub struct ServerNames {
    connection: Connection,
    runtime: tokio::runtime::Handle,
    cache: parking_lot::Mutex<HashMap<Vec<String>, Vec<String>>>,
    failed_at: parking_lot::Mutex<Option<std::time::Instant>>,
}

impl ServerNames {
    pub fn new(connection: Connection, runtime: tokio::runtime::Handle) -> Self {
        Self {
            connection,
            runtime,
            cache: parking_lot::Mutex::new(HashMap::new()),
            failed_at: parking_lot::Mutex::new(None),
        }
    }

    /// Forgets what was read: a statement ran.
    pub fn forget(&self) {
        self.cache.lock().clear();
    }

    /// The names at `path` (none: catalogs; a catalog: its schemas, ...), from the cache or
    /// the server. Called on the line editor's thread, outside the runtime's workers.
    fn lookup(&self, path: &[&str], sql: String) -> Vec<String> {
        let key: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        if let Some(names) = self.cache.lock().get(&key) {
            return names.clone();
        }
        if self
            .failed_at
            .lock()
            .is_some_and(|at| at.elapsed() < RETRY_AFTER)
        {
            return Vec::new();
        }
        let mut connection = self.connection.clone();
        let read = self.runtime.block_on(async move {
            tokio::time::timeout(LOOKUP_TIMEOUT, connection.strings(&sql)).await
        });
        match read {
            Ok(Ok(names)) => {
                self.cache.lock().insert(key, names.clone());
                names
            }
            // Completion is a convenience: a slow or failing server means no candidates.
            _ => {
                *self.failed_at.lock() = Some(std::time::Instant::now());
                Vec::new()
            }
        }
    }
}

impl NameSource for ServerNames {
    fn catalogs(&self) -> Vec<String> {
        self.lookup(&[], "SELECT table_cat FROM system.jdbc.catalogs".into())
    }

    fn schemas(&self, catalog: &str) -> Vec<String> {
        self.lookup(
            &[catalog],
            format!(
                "SELECT table_schem FROM system.jdbc.schemas WHERE table_catalog = {}",
                literal(catalog)
            ),
        )
    }

    fn tables(&self, catalog: &str, schema: &str) -> Vec<String> {
        self.lookup(
            &[catalog, schema],
            format!(
                "SELECT table_name FROM system.jdbc.tables \
                 WHERE table_cat = {} AND table_schem = {}",
                literal(catalog),
                literal(schema)
            ),
        )
    }

    fn columns(&self, catalog: &str, schema: &str, table: &str) -> Vec<String> {
        self.lookup(
            &[catalog, schema, table],
            format!(
                "SELECT column_name FROM system.jdbc.columns \
                 WHERE table_cat = {} AND table_schem = {} AND table_name = {} \
                 ORDER BY ordinal_position",
                literal(catalog),
                literal(schema),
                literal(table)
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed;

    impl NameSource for Fixed {
        fn catalogs(&self) -> Vec<String> {
            vec!["iceberg".into(), "tpch".into(), "system".into()]
        }
        fn schemas(&self, catalog: &str) -> Vec<String> {
            match catalog {
                "iceberg" => vec!["default".into(), "Sales".into()],
                "tpch" => vec!["tiny".into()],
                _ => Vec::new(),
            }
        }
        fn tables(&self, catalog: &str, schema: &str) -> Vec<String> {
            match (catalog, schema) {
                ("iceberg", "default") => vec!["nation".into(), "orders".into()],
                ("iceberg", "Sales") => vec!["t$snapshots".into()],
                ("tpch", "tiny") => vec!["lineitem".into(), "nation".into()],
                _ => Vec::new(),
            }
        }
        fn columns(&self, catalog: &str, schema: &str, table: &str) -> Vec<String> {
            match (catalog, schema, table) {
                ("iceberg", "default", "nation") => vec!["n_name".into(), "n_nationkey".into()],
                ("tpch", "tiny", "lineitem") => vec!["l_orderkey".into()],
                _ => Vec::new(),
            }
        }
    }

    fn defaults() -> Defaults {
        Defaults {
            catalog: "iceberg".into(),
            schema: "default".into(),
        }
    }

    fn complete_at_end(line: &str) -> (usize, Vec<String>) {
        complete(line, line.len(), &Fixed, &defaults())
    }

    #[test]
    fn keywords_in_the_typed_case_and_names_of_the_default_schema() {
        let (start, candidates) = complete_at_end("SEL");
        assert_eq!((start, candidates), (0, vec!["SELECT".to_string()]));
        assert_eq!(complete_at_end("sel").1, vec!["select"]);
        let (start, candidates) = complete_at_end("SELECT * FROM na");
        assert_eq!(start, 14);
        assert_eq!(candidates, vec!["nation"]);
    }

    #[test]
    fn qualified_names_complete_level_by_level() {
        assert_eq!(complete_at_end("SELECT * FROM tpch.").1, vec!["tiny"]);
        let (start, candidates) = complete_at_end("SELECT * FROM tpch.tiny.li");
        assert_eq!((start, candidates), (24, vec!["lineitem".to_string()]));
        assert_eq!(
            complete_at_end("SELECT * FROM iceberg.\"Sales\".").1,
            vec!["\"t$snapshots\""],
            "a name that needs quotes comes quoted"
        );
        assert_eq!(
            complete_at_end("SELECT nation.n_nat").1,
            vec!["n_nationkey"]
        );
        // Inside a quoted name not yet closed.
        assert_eq!(
            complete_at_end("SELECT * FROM iceberg.\"Sal"),
            (22, vec!["\"Sales\"".to_string()])
        );
        assert_eq!(complete_at_end("SELECT * FROM \"nat").1, vec!["\"nation\""]);
    }

    #[test]
    fn columns_of_the_tables_the_statement_names() {
        let line = "SELECT n_ FROM nation";
        assert_eq!(
            complete(line, "SELECT n_".len(), &Fixed, &defaults()).1,
            vec!["n_name", "n_nationkey"]
        );
        let line = "SELECT l_ FROM tpch.tiny.lineitem";
        assert_eq!(
            complete(line, "SELECT l_".len(), &Fixed, &defaults()).1,
            vec!["l_orderkey"]
        );
    }

    #[test]
    fn nothing_inside_literals_and_comments() {
        assert!(complete_at_end("SELECT 'na").1.is_empty());
        assert!(complete_at_end("SELECT 1 -- na").1.is_empty());
        assert!(complete_at_end("SELECT x FROM nowhere.").1.is_empty());
    }
}
