//! Recognizes the Trino statements SQE answers itself rather than hand to DataFusion: session
//! (`USE`, `SET/RESET SESSION`), prepared statements, transactions and `SHOW`/`DESCRIBE`.
//! Works on tokens, so quoting, comments and case are handled as SQL handles them.

use datafusion::sql::sqlparser::ast::Expr;
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer, Word};

use crate::error::{Error, ErrorCode, ObjectKind, Result};

/// A statement SQE handles before planning.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientStatement {
    Use {
        catalog: Option<String>,
        schema: String,
    },
    SetSession {
        name: String,
        value: Box<Expr>,
    },
    ResetSession {
        name: String,
    },
    Prepare {
        name: String,
        sql: String,
    },
    Execute {
        name: String,
        parameters: Vec<Expr>,
    },
    ExecuteImmediate {
        sql: String,
        parameters: Vec<Expr>,
    },
    Deallocate {
        name: String,
    },
    DescribeInput {
        name: String,
    },
    DescribeOutput {
        name: String,
    },
    StartTransaction,
    Commit,
    Rollback,
    Show(Show),
    /// `SET ROLE (role | ALL | NONE) [IN catalog]`: `role` upper-cased for `ALL` and `NONE`.
    SetRole {
        role: String,
        catalog: Option<String>,
    },
    /// `CALL system.runtime.kill_query(query_id => '...', message => '...')`
    KillQuery {
        query_id: String,
        message: Option<String>,
    },
}

impl ClientStatement {
    /// The statement's name, which Trino also reports as its `updateType`.
    pub fn name(&self) -> &'static str {
        match self {
            ClientStatement::Use { .. } => "USE",
            ClientStatement::SetSession { .. } => "SET SESSION",
            ClientStatement::ResetSession { .. } => "RESET SESSION",
            ClientStatement::Prepare { .. } => "PREPARE",
            ClientStatement::Execute { .. } => "EXECUTE",
            ClientStatement::ExecuteImmediate { .. } => "EXECUTE IMMEDIATE",
            ClientStatement::Deallocate { .. } => "DEALLOCATE",
            ClientStatement::DescribeInput { .. } => "DESCRIBE INPUT",
            ClientStatement::DescribeOutput { .. } => "DESCRIBE OUTPUT",
            ClientStatement::StartTransaction => "START TRANSACTION",
            ClientStatement::Commit => "COMMIT",
            ClientStatement::Rollback => "ROLLBACK",
            ClientStatement::Show(_) => "SHOW",
            ClientStatement::SetRole { .. } => "SET ROLE",
            ClientStatement::KillQuery { .. } => "CALL",
        }
    }
}

/// The `SHOW` statements (and `DESCRIBE table`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Show {
    Catalogs {
        like: Option<String>,
    },
    Schemas {
        catalog: Option<String>,
        like: Option<String>,
    },
    Tables {
        /// `[catalog.]schema`
        schema: Vec<String>,
        like: Option<String>,
    },
    /// `SHOW COLUMNS FROM t`, `DESCRIBE t`: `[[catalog.]schema.]table`
    Columns {
        table: Vec<String>,
    },
    CreateTable {
        table: Vec<String>,
    },
    CreateView {
        view: Vec<String>,
    },
    Functions {
        like: Option<String>,
    },
    Session {
        like: Option<String>,
    },
}

fn syntax(message: impl Into<String>) -> Error {
    Error::Syntax {
        message: message.into(),
        location: None,
    }
}

/// The statement's tokens without whitespace and comments, and the whole token list.
struct Tokens {
    all: Vec<Token>,
    /// Indexes into `all` of the significant tokens.
    significant: Vec<usize>,
    at: usize,
}

impl Tokens {
    fn new(all: Vec<Token>) -> Self {
        let significant = all
            .iter()
            .enumerate()
            .filter(|(_, t)| !matches!(t, Token::Whitespace(_) | Token::SemiColon))
            .map(|(i, _)| i)
            .collect();
        Self {
            all,
            significant,
            at: 0,
        }
    }

    fn peek(&self) -> Option<&Token> {
        self.significant.get(self.at).map(|&i| &self.all[i])
    }

    fn next(&mut self) -> Option<&Token> {
        let token = self.significant.get(self.at).map(|&i| &self.all[i]);
        self.at += 1;
        token
    }

    fn peek_keyword(&self, keyword: &str) -> bool {
        matches!(self.peek(), Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(keyword))
    }

    fn keyword(&mut self, keyword: &str) -> bool {
        let found = self.peek_keyword(keyword);
        if found {
            self.at += 1;
        }
        found
    }

    fn keywords(&mut self, keywords: &[&str]) -> bool {
        let start = self.at;
        if keywords.iter().all(|k| self.keyword(k)) {
            true
        } else {
            self.at = start;
            false
        }
    }

    fn at_end(&self) -> bool {
        self.peek().is_none_or(|t| matches!(t, Token::EOF))
    }

    fn end(&self) -> Result<()> {
        match self.peek() {
            None | Some(Token::EOF) => Ok(()),
            Some(other) => Err(syntax(format!("unexpected '{other}'"))),
        }
    }

    /// An identifier, lower-cased unless quoted (as Trino resolves names).
    fn identifier(&mut self) -> Result<String> {
        match self.next() {
            Some(Token::Word(w)) => Ok(identifier_text(w)),
            Some(other) => Err(syntax(format!("expected a name, found '{other}'"))),
            None => Err(syntax("expected a name")),
        }
    }

    /// `a`, `a.b`, `a.b.c`
    fn qualified_name(&mut self) -> Result<Vec<String>> {
        let mut parts = vec![self.identifier()?];
        while matches!(self.peek(), Some(Token::Period)) {
            self.at += 1;
            parts.push(self.identifier()?);
        }
        Ok(parts)
    }

    fn string(&mut self) -> Result<String> {
        match self.next() {
            Some(Token::SingleQuotedString(s)) => Ok(s.replace("''", "'")),
            Some(other) => Err(syntax(format!("expected a string, found '{other}'"))),
            None => Err(syntax("expected a string")),
        }
    }

    fn like(&mut self) -> Result<Option<String>> {
        if !self.keyword("LIKE") {
            return Ok(None);
        }
        let pattern = self.string()?;
        if self.keyword("ESCAPE") {
            return Err(Error::NotSupported("LIKE ... ESCAPE in SHOW".into()));
        }
        Ok(Some(pattern))
    }

    /// The rest of the statement as SQL text, comments and spacing kept.
    fn rest_text(&self) -> String {
        let Some(&from) = self.significant.get(self.at) else {
            return String::new();
        };
        let text = print(&self.all[from..], |_| None);
        text.trim().trim_end_matches(';').trim().to_string()
    }

    /// `USING v1, v2, ...` up to the end, or nothing.
    fn using(&mut self) -> Result<Vec<Expr>> {
        if self.keyword("USING") {
            self.expressions()
        } else {
            self.end()?;
            Ok(Vec::new())
        }
    }

    /// The rest as a comma-separated list of expressions.
    fn expressions(&self) -> Result<Vec<Expr>> {
        let Some(&from) = self.significant.get(self.at) else {
            return Err(syntax("expected parameter values after USING"));
        };
        let tokens: Vec<Token> = self.all[from..]
            .iter()
            .filter(|t| !matches!(t, Token::SemiColon))
            .cloned()
            .collect();
        let dialect = GenericDialect {};
        let mut parser = Parser::new(&dialect).with_tokens(tokens);
        let expressions = parser
            .parse_comma_separated(Parser::parse_expr)
            .map_err(|e| syntax(e.to_string()))?;
        parser
            .expect_token(&Token::EOF)
            .map_err(|e| syntax(e.to_string()))?;
        Ok(expressions)
    }
}

fn identifier_text(word: &Word) -> String {
    if word.quote_style.is_some() {
        word.value.replace("\"\"", "\"")
    } else {
        word.value.to_ascii_lowercase()
    }
}

/// Tokens exactly as written: string contents are not unescaped, so printing them back gives
/// the original text.
pub fn tokenize(sql: &str) -> Result<Vec<Token>> {
    let dialect = GenericDialect {};
    Tokenizer::new(&dialect, sql)
        .with_unescape(false)
        .tokenize()
        .map_err(|e| syntax(e.to_string()))
}

/// Recognizes `sql` as one of the statements SQE answers itself; `None` for everything else.
pub fn recognize(sql: &str) -> Result<Option<ClientStatement>> {
    recognize_tokens(tokenize(sql)?)
}

/// [`recognize`] on the statement's [`tokenize`]d form, for callers that already have it.
pub fn recognize_tokens(tokens: Vec<Token>) -> Result<Option<ClientStatement>> {
    let mut t = Tokens::new(tokens);
    let statement = if t.keyword("USE") {
        let mut name = t.qualified_name()?;
        let (catalog, schema) = match name.len() {
            1 => (None, name.remove(0)),
            2 => (Some(name.remove(0)), name.remove(0)),
            _ => return Err(syntax("USE takes a schema or catalog.schema")),
        };
        ClientStatement::Use { catalog, schema }
    } else if t.keywords(&["SET", "SESSION"]) {
        if t.peek_keyword("AUTHORIZATION") {
            return Err(Error::NotSupported("SET SESSION AUTHORIZATION".into()));
        }
        let name = t.qualified_name()?.join(".");
        if !matches!(t.next(), Some(Token::Eq)) {
            return Err(syntax(format!("expected '=' after SET SESSION {name}")));
        }
        let mut value = t.expressions()?;
        if value.len() != 1 {
            return Err(syntax("SET SESSION takes one value"));
        }
        return Ok(Some(ClientStatement::SetSession {
            name,
            value: Box::new(value.remove(0)),
        }));
    } else if t.keywords(&["SET", "ROLE"]) {
        let role = if t.keyword("ALL") {
            "ALL".to_string()
        } else if t.keyword("NONE") {
            "NONE".to_string()
        } else {
            t.identifier()?
        };
        let catalog = if t.keyword("IN") {
            Some(t.identifier()?)
        } else {
            None
        };
        ClientStatement::SetRole { role, catalog }
    } else if t.keywords(&["RESET", "SESSION"]) {
        if t.peek_keyword("AUTHORIZATION") {
            return Err(Error::NotSupported("RESET SESSION AUTHORIZATION".into()));
        }
        ClientStatement::ResetSession {
            name: t.qualified_name()?.join("."),
        }
    } else if t.keyword("PREPARE") {
        let name = t.identifier()?;
        if !t.keyword("FROM") {
            return Err(syntax(format!("expected FROM after PREPARE {name}")));
        }
        let sql = t.rest_text();
        if sql.is_empty() {
            return Err(syntax("PREPARE needs a statement after FROM"));
        }
        return Ok(Some(ClientStatement::Prepare { name, sql }));
    } else if t.keywords(&["EXECUTE", "IMMEDIATE"]) {
        let sql = t.string()?;
        let parameters = t.using()?;
        return Ok(Some(ClientStatement::ExecuteImmediate { sql, parameters }));
    } else if t.keyword("EXECUTE") {
        let name = t.identifier()?;
        let parameters = t.using()?;
        return Ok(Some(ClientStatement::Execute { name, parameters }));
    } else if t.keywords(&["DEALLOCATE", "PREPARE"]) {
        ClientStatement::Deallocate {
            name: t.identifier()?,
        }
    } else if t.keyword("DESCRIBE") || t.keyword("DESC") {
        if t.keyword("INPUT") {
            ClientStatement::DescribeInput {
                name: t.identifier()?,
            }
        } else if t.keyword("OUTPUT") {
            ClientStatement::DescribeOutput {
                name: t.identifier()?,
            }
        } else {
            ClientStatement::Show(Show::Columns {
                table: table_name(&mut t)?,
            })
        }
    } else if t.keywords(&["START", "TRANSACTION"]) {
        // Isolation level and access mode are accepted: every statement commits on its own.
        while !t.at_end() {
            t.next();
        }
        ClientStatement::StartTransaction
    } else if t.keyword("COMMIT") {
        t.keyword("WORK");
        ClientStatement::Commit
    } else if t.keyword("ROLLBACK") {
        t.keyword("WORK");
        ClientStatement::Rollback
    } else if t.keyword("CALL") {
        let procedure = t.qualified_name()?.join(".").to_ascii_lowercase();
        if procedure != "system.runtime.kill_query" && procedure != "runtime.kill_query" {
            return Err(Error::not_found(ObjectKind::Procedure, procedure));
        }
        let mut arguments = call_arguments(&mut t, &["query_id", "message"])?;
        let query_id = arguments
            .remove("query_id")
            .ok_or_else(|| syntax("kill_query needs a query_id"))?;
        ClientStatement::KillQuery {
            query_id,
            message: arguments.remove("message"),
        }
    } else if t.keyword("SHOW") {
        let Some(show) = show(&mut t)? else {
            return Ok(None);
        };
        ClientStatement::Show(show)
    } else {
        return Ok(None);
    };
    t.end()?;
    Ok(Some(statement))
}

/// `ALTER TABLE t EXECUTE procedure[(name => 'value', ...)]`: one of Trino's Iceberg table
/// procedures, with its arguments by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableProcedureCall {
    /// `[[catalog.]schema.]table`
    pub table: Vec<String>,
    /// Lower case: `optimize`, `expire_snapshots`, `remove_orphan_files`.
    pub procedure: String,
    pub arguments: std::collections::HashMap<String, String>,
    /// optimize's `WHERE` condition, as written: which partitions it rewrites.
    pub filter: Option<String>,
}

/// The table procedures and the names of their arguments, in order.
const TABLE_PROCEDURES: &[(&str, &[&str])] = &[
    ("optimize", &["file_size_threshold"]),
    ("expire_snapshots", &["retention_threshold"]),
    ("remove_orphan_files", &["retention_threshold"]),
];

/// The statement as a table procedure call, if it is `ALTER TABLE ... EXECUTE ...` (which the
/// SQL parser does not read).
pub fn table_procedure(tokens: Vec<Token>) -> Result<Option<TableProcedureCall>> {
    let mut t = Tokens::new(tokens);
    if !t.keywords(&["ALTER", "TABLE"]) || t.peek_keyword("IF") {
        return Ok(None);
    }
    let Ok(table) = table_name(&mut t) else {
        return Ok(None);
    };
    // Quoted or not, as the statements the SQL parser reads fold them.
    let table = table.iter().map(|part| part.to_lowercase()).collect();
    if !t.keyword("EXECUTE") {
        return Ok(None);
    }
    let procedure = t.identifier()?.to_ascii_lowercase();
    let Some((_, names)) = TABLE_PROCEDURES.iter().find(|(name, _)| *name == procedure) else {
        return Err(Error::not_found(ObjectKind::Procedure, procedure));
    };
    let arguments = if matches!(t.peek(), Some(Token::LParen)) {
        call_arguments(&mut t, names)?
    } else {
        std::collections::HashMap::new()
    };
    let filter = if t.keyword("WHERE") {
        if procedure != "optimize" {
            return Err(Error::NotSupported(format!(
                "ALTER TABLE EXECUTE {procedure} ... WHERE: it runs on the whole table"
            )));
        }
        let condition = t.rest_text();
        if condition.is_empty() {
            return Err(syntax("expected a condition after WHERE"));
        }
        Some(condition)
    } else {
        t.end()?;
        None
    };
    Ok(Some(TableProcedureCall {
        table,
        procedure,
        arguments,
        filter,
    }))
}

/// A procedure's string arguments, by name (`name => 'v'`) or in `names` order.
fn call_arguments(
    t: &mut Tokens,
    names: &[&str],
) -> Result<std::collections::HashMap<String, String>> {
    let mut arguments = std::collections::HashMap::new();
    if !matches!(t.next(), Some(Token::LParen)) {
        return Err(syntax("expected '(' after the procedure name"));
    }
    let mut position = 0;
    loop {
        if matches!(t.peek(), Some(Token::RParen)) {
            t.next();
            return Ok(arguments);
        }
        let name = if matches!(t.peek(), Some(Token::Word(_))) {
            let name = t.identifier()?.to_ascii_lowercase();
            if !matches!(t.next(), Some(Token::RArrow)) {
                return Err(syntax(format!("expected '=>' after argument {name}")));
            }
            if !names.contains(&name.as_str()) {
                return Err(syntax(format!("unknown argument {name}")));
            }
            name
        } else {
            names
                .get(position)
                .map(|n| n.to_string())
                .ok_or_else(|| syntax("too many arguments"))?
        };
        position += 1;
        arguments.insert(name, t.string()?);
        match t.next() {
            Some(Token::Comma) => {}
            Some(Token::RParen) => return Ok(arguments),
            _ => return Err(syntax("expected ',' or ')' between arguments")),
        }
    }
}

fn table_name(t: &mut Tokens) -> Result<Vec<String>> {
    let name = t.qualified_name()?;
    if name.len() > 3 {
        return Err(syntax(format!("too many parts in {}", name.join("."))));
    }
    Ok(name)
}

fn show(t: &mut Tokens) -> Result<Option<Show>> {
    let show = if t.keyword("CATALOGS") {
        Show::Catalogs { like: t.like()? }
    } else if t.keyword("SCHEMAS") {
        let catalog = if t.keyword("FROM") || t.keyword("IN") {
            Some(t.identifier()?)
        } else {
            None
        };
        Show::Schemas {
            catalog,
            like: t.like()?,
        }
    } else if t.keyword("TABLES") {
        let schema = if t.keyword("FROM") || t.keyword("IN") {
            let name = t.qualified_name()?;
            if name.len() > 2 {
                return Err(syntax("SHOW TABLES FROM takes schema or catalog.schema"));
            }
            name
        } else {
            Vec::new()
        };
        Show::Tables {
            schema,
            like: t.like()?,
        }
    } else if t.keyword("COLUMNS") {
        if !(t.keyword("FROM") || t.keyword("IN")) {
            return Err(syntax("expected FROM after SHOW COLUMNS"));
        }
        Show::Columns {
            table: table_name(t)?,
        }
    } else if t.keywords(&["CREATE", "TABLE"]) {
        Show::CreateTable {
            table: table_name(t)?,
        }
    } else if t.keywords(&["CREATE", "VIEW"]) {
        Show::CreateView {
            view: table_name(t)?,
        }
    } else if t.keyword("FUNCTIONS") {
        Show::Functions { like: t.like()? }
    } else if t.keyword("SESSION") {
        Show::Session { like: t.like()? }
    } else {
        // SHOW STATS, SHOW GRANTS, ...: DataFusion answers or refuses.
        return Ok(None);
    };
    Ok(Some(show))
}

/// `sql` with every `?` parameter replaced by the matching value in parentheses. The values
/// are parsed expressions printed back as SQL, so they cannot change the statement's shape.
pub fn bind_parameters(sql: &str, parameters: &[Expr]) -> Result<String> {
    let tokens = tokenize(sql)?;
    check_parameter_count(count_parameters(&tokens), parameters.len())?;
    let mut values = parameters.iter();
    Ok(print(&tokens, |token| {
        is_parameter(token).then(|| {
            values
                .next()
                .map(|value| format!("({value})"))
                .unwrap_or_default()
        })
    }))
}

/// `sql` with its `?` parameters numbered `$1`, `$2`, ... (DataFusion's placeholders), for
/// inferring their types.
pub fn number_parameters(sql: &str) -> Result<String> {
    let mut n = 0;
    Ok(print(&tokenize(sql)?, |token| {
        is_parameter(token).then(|| {
            n += 1;
            format!("${n}")
        })
    }))
}

fn is_parameter(token: &Token) -> bool {
    matches!(token, Token::Placeholder(p) if p == "?")
}

/// The tokens printed back as SQL; `replace` gives another text for a token.
fn print(tokens: &[Token], mut replace: impl FnMut(&Token) -> Option<String>) -> String {
    let mut out = String::new();
    for token in tokens {
        if matches!(token, Token::EOF) {
            continue;
        }
        match replace(token) {
            Some(text) => out.push_str(&text),
            None => out.push_str(&token.to_string()),
        }
    }
    out
}

fn count_parameters(tokens: &[Token]) -> usize {
    tokens.iter().filter(|t| is_parameter(t)).count()
}

/// A statement run as it is must have no `?` parameters (as in Trino, which counts them).
pub fn require_no_parameters(sql: &str) -> Result<()> {
    check_parameter_count(count_parameters(&tokenize(sql)?), 0)
}

fn check_parameter_count(expected: usize, found: usize) -> Result<()> {
    if expected == found {
        return Ok(());
    }
    Err(Error::invalid(
        ErrorCode::InvalidParameterUsage,
        format!("Incorrect number of parameters: expected {expected} but found {found}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(sql: &str) -> Option<Show> {
        match recognize(sql) {
            Ok(Some(ClientStatement::Show(show))) => Some(show),
            _ => None,
        }
    }

    #[test]
    fn recognizes_session_statements() -> Result<()> {
        assert_eq!(
            recognize("use Iceberg.\"TpcH\"")?,
            Some(ClientStatement::Use {
                catalog: Some("iceberg".into()),
                schema: "TpcH".into()
            })
        );
        match recognize("SET SESSION task_concurrency = 8;")? {
            Some(ClientStatement::SetSession { name, value }) => {
                assert_eq!(name, "task_concurrency");
                assert_eq!(value.to_string(), "8");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            recognize("RESET SESSION iceberg.x")?,
            Some(ClientStatement::ResetSession {
                name: "iceberg.x".into()
            })
        );
        assert!(recognize("SET SESSION x 1").is_err());
        assert_eq!(recognize("SET TIME ZONE 'UTC'")?, None);
        assert_eq!(
            recognize("start transaction read only")?,
            Some(ClientStatement::StartTransaction)
        );
        assert_eq!(recognize("COMMIT")?, Some(ClientStatement::Commit));
        assert_eq!(recognize("select 1")?, None);
        Ok(())
    }

    #[test]
    fn recognizes_prepared_statements() -> Result<()> {
        assert_eq!(
            recognize("PREPARE q1 FROM SELECT * FROM t WHERE a = ? -- note\n")?,
            Some(ClientStatement::Prepare {
                name: "q1".into(),
                sql: "SELECT * FROM t WHERE a = ? -- note".into()
            })
        );
        match recognize("EXECUTE IMMEDIATE 'SELECT ''x'', ?' USING DOUBLE '1.5'")? {
            Some(ClientStatement::ExecuteImmediate { sql, parameters }) => {
                assert_eq!(sql, "SELECT 'x', ?");
                assert_eq!(parameters.len(), 1);
            }
            other => panic!("{other:?}"),
        }
        match recognize("EXECUTE q1 USING 1, 'a'")? {
            Some(ClientStatement::Execute { name, parameters }) => {
                assert_eq!(name, "q1");
                assert_eq!(parameters.len(), 2);
            }
            other => panic!("{other:?}"),
        }
        // A value list must be only values: nothing may follow them.
        assert!(recognize("EXECUTE q1 USING 1; DROP TABLE t").is_err());
        assert_eq!(
            recognize("DESCRIBE OUTPUT q1")?,
            Some(ClientStatement::DescribeOutput { name: "q1".into() })
        );
        assert_eq!(
            recognize("deallocate prepare q1")?,
            Some(ClientStatement::Deallocate { name: "q1".into() })
        );
        Ok(())
    }

    #[test]
    fn recognizes_table_procedures() -> std::result::Result<(), Box<dyn std::error::Error>> {
        let call = |sql: &str| table_procedure(tokenize(sql)?);
        assert_eq!(
            call("ALTER TABLE s.t EXECUTE optimize(file_size_threshold => '10MB')")?,
            Some(TableProcedureCall {
                table: vec!["s".into(), "t".into()],
                procedure: "optimize".into(),
                arguments: [("file_size_threshold".to_string(), "10MB".to_string())].into(),
                filter: None,
            })
        );
        let bare = call("alter table \"T\" execute OPTIMIZE")?.ok_or("not read")?;
        assert_eq!(
            (bare.table, bare.procedure),
            (vec!["t".to_string()], "optimize".to_string())
        );
        assert!(bare.arguments.is_empty());
        let expire = call("ALTER TABLE t EXECUTE expire_snapshots('7d')")?.ok_or("not read")?;
        assert_eq!(
            expire
                .arguments
                .get("retention_threshold")
                .map(String::as_str),
            Some("7d")
        );
        // Other ALTER TABLE statements are the SQL parser's.
        assert_eq!(call("ALTER TABLE t ADD COLUMN c INT")?, None);
        assert_eq!(call("ALTER TABLE IF EXISTS t RENAME TO u")?, None);
        assert_eq!(call("SELECT 1")?, None);
        let unknown = call("ALTER TABLE t EXECUTE vacuum")
            .err()
            .ok_or("must fail")?;
        assert_eq!(unknown.code(), ErrorCode::ProcedureNotFound);
        assert!(call("ALTER TABLE t EXECUTE optimize(retention_threshold => '1d')").is_err());
        let some = call("ALTER TABLE t EXECUTE optimize WHERE a = 1 AND b IN ('x', 'y');")?
            .ok_or("not read")?;
        assert_eq!(some.filter.as_deref(), Some("a = 1 AND b IN ('x', 'y')"));
        assert!(call("ALTER TABLE t EXECUTE optimize WHERE").is_err());
        let whole = call("ALTER TABLE t EXECUTE expire_snapshots WHERE a = 1")
            .err()
            .ok_or("expire_snapshots took a WHERE")?;
        assert_eq!(whole.code(), ErrorCode::NotSupported);
        Ok(())
    }

    #[test]
    fn recognizes_kill_query() -> Result<()> {
        let kill = |sql: &str| recognize(sql);
        assert_eq!(
            kill("CALL system.runtime.kill_query(query_id => '20261130_1', message => 'slow')")?,
            Some(ClientStatement::KillQuery {
                query_id: "20261130_1".into(),
                message: Some("slow".into()),
            })
        );
        assert_eq!(
            kill("call runtime.kill_query('q1')")?,
            Some(ClientStatement::KillQuery {
                query_id: "q1".into(),
                message: None,
            })
        );
        assert!(matches!(
            kill("CALL system.runtime.drop_everything('x')"),
            Err(Error::NotFound {
                kind: ObjectKind::Procedure,
                ..
            })
        ));
        assert!(kill("CALL system.runtime.kill_query(message => 'm')").is_err());
        assert!(kill("CALL system.runtime.kill_query(query_id => 'a' 'b')").is_err());
        Ok(())
    }

    #[test]
    fn recognizes_show_statements() {
        assert_eq!(
            show("SHOW TABLES FROM iceberg.tpch LIKE 'n%'"),
            Some(Show::Tables {
                schema: vec!["iceberg".into(), "tpch".into()],
                like: Some("n%".into())
            })
        );
        assert_eq!(
            show("describe tpch.nation"),
            Some(Show::Columns {
                table: vec!["tpch".into(), "nation".into()]
            })
        );
        assert_eq!(
            show("SHOW SCHEMAS FROM iceberg"),
            Some(Show::Schemas {
                catalog: Some("iceberg".into()),
                like: None
            })
        );
        assert_eq!(show("SHOW CATALOGS"), Some(Show::Catalogs { like: None }));
        assert_eq!(
            show("SHOW CREATE TABLE t"),
            Some(Show::CreateTable {
                table: vec!["t".into()]
            })
        );
        assert_eq!(
            show("SHOW CREATE VIEW s.v"),
            Some(Show::CreateView {
                view: vec!["s".into(), "v".into()]
            })
        );
        assert!(recognize("SHOW TABLES FROM a.b.c").is_err());
    }

    #[test]
    fn binds_parameters_as_parenthesised_values() -> Result<()> {
        let values = match recognize("EXECUTE q USING 'it''s', 2")? {
            Some(ClientStatement::Execute { parameters, .. }) => parameters,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            bind_parameters("SELECT ? AS a, '?' AS b WHERE x = ?", &values)?,
            "SELECT ('it''s') AS a, '?' AS b WHERE x = (2)"
        );
        assert!(bind_parameters("SELECT ?", &values).is_err());
        assert_eq!(number_parameters("SELECT ?, ?")?, "SELECT $1, $2");
        Ok(())
    }
}
