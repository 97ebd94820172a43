//! The SQL/JSON path language of `json_exists`, `json_value` and `json_query`, as Trino
//! evaluates it: a path is read once (`lax` or `strict` mode, then an expression) and evaluated
//! against each row's JSON item into a sequence of items.
//!
//! Supported: literals, `$`, `@`, `last`, member (`.key`, `."key"`), wildcard member (`.*`),
//! descendant member (`..key`), array accessors (`[0, 2 to last]`, `[*]`), filters
//! (`?(@.a > 1 && exists(@.b) || @.c starts with "x" || (…) is unknown)`), the item methods
//! `type()`, `size()`, `double()`, `ceiling()`, `floor()`, `abs()`, `keyvalue()`, and arithmetic.
//! Named variables (`$name`) take the values of the call's `PASSING` clause. Not supported
//! (refused when the path is read): `like_regex` and `datetime()`.
//!
//! Numbers keep their kind as Trino reads JSON: an integer is a `bigint`, a number with a
//! fraction and no exponent a decimal (written back with its scale), one with an exponent a
//! double.

use std::cmp::Ordering;

use crate::decimals::rescaled;
use crate::real_text::double_text;

/// A JSON item.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Item {
    Null,
    Bool(bool),
    Number(Number),
    Text(String),
    Array(Vec<Item>),
    /// Members in the order the text gives them.
    Object(Vec<(String, Item)>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Number {
    Integer(i64),
    /// Unscaled value and scale.
    Decimal(i128, u32),
    Double(f64),
}

impl Number {
    pub(crate) fn as_f64(self) -> f64 {
        match self {
            Number::Integer(i) => i as f64,
            Number::Decimal(v, s) => v as f64 / 10f64.powi(s as i32),
            Number::Double(d) => d,
        }
    }

    /// As a decimal (unscaled, scale), when exact.
    fn as_decimal(self) -> Option<(i128, u32)> {
        match self {
            Number::Integer(i) => Some((i128::from(i), 0)),
            Number::Decimal(v, s) => Some((v, s)),
            Number::Double(_) => None,
        }
    }

    fn compare(self, other: Number) -> Option<Ordering> {
        match (self.as_decimal(), other.as_decimal()) {
            (Some((a, sa)), Some((b, sb))) => {
                let scale = sa.max(sb);
                let a = rescaled(a, sa, scale)?;
                let b = rescaled(b, sb, scale)?;
                Some(a.cmp(&b))
            }
            _ => self.as_f64().partial_cmp(&other.as_f64()),
        }
    }

    /// The number as SQL writes it as text (a double as Java writes it).
    pub(crate) fn text(self) -> String {
        match self {
            Number::Integer(i) => i.to_string(),
            Number::Decimal(v, s) => decimal_text(v, s),
            Number::Double(d) => double_text(d),
        }
    }
}

fn decimal_text(value: i128, scale: u32) -> String {
    let digits = value.unsigned_abs().to_string();
    let sign = if value < 0 { "-" } else { "" };
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let scale = scale as usize;
    let digits = format!("{digits:0>width$}", width = scale + 1);
    let (whole, fraction) = digits.split_at(digits.len() - scale);
    format!("{sign}{whole}.{fraction}")
}

impl Item {
    /// The item as JSON text, compact (`{"a":[1,2]}`).
    pub(crate) fn json(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }

    fn write_json(&self, out: &mut String) {
        match self {
            Item::Null => out.push_str("null"),
            Item::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Item::Number(Number::Double(d)) if !d.is_finite() => out.push_str("null"),
            Item::Number(n) => out.push_str(&n.text()),
            Item::Text(s) => write_string(s, out),
            Item::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write_json(out);
                }
                out.push(']');
            }
            Item::Object(members) => {
                out.push('{');
                for (i, (key, item)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_string(key, out);
                    out.push(':');
                    item.write_json(out);
                }
                out.push('}');
            }
        }
    }

    fn type_name(&self) -> &'static str {
        match self {
            Item::Null => "null",
            Item::Bool(_) => "boolean",
            Item::Number(_) => "number",
            Item::Text(_) => "string",
            Item::Array(_) => "array",
            Item::Object(_) => "object",
        }
    }
}

/// `s` as a JSON string, escaped by serde_json as SQE writes JSON text elsewhere (`json_format`,
/// casts to `json`).
fn write_string(s: &str, out: &mut String) {
    // Serializing text cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

/// Reads JSON text into an item; `None` when it is not one JSON value.
pub(crate) fn parse_json(text: &str) -> Option<Item> {
    let mut reader = JsonReader {
        bytes: text.as_bytes(),
        at: 0,
        depth: 0,
    };
    let item = reader.value()?;
    reader.skip_space();
    (reader.at == reader.bytes.len()).then_some(item)
}

/// Deep enough for any document a user writes; deeper text is refused rather than
/// overflowing the stack.
const MAX_DEPTH: usize = 512;

struct JsonReader<'a> {
    bytes: &'a [u8],
    at: usize,
    depth: usize,
}

impl JsonReader<'_> {
    fn skip_space(&mut self) {
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    fn literal(&mut self, word: &str, item: Item) -> Option<Item> {
        if self.bytes[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Some(item)
        } else {
            None
        }
    }

    fn value(&mut self) -> Option<Item> {
        self.skip_space();
        match *self.bytes.get(self.at)? {
            b'n' => self.literal("null", Item::Null),
            b't' => self.literal("true", Item::Bool(true)),
            b'f' => self.literal("false", Item::Bool(false)),
            b'"' => self.string().map(Item::Text),
            b'[' => {
                self.nest()?;
                self.at += 1;
                let mut items = Vec::new();
                self.skip_space();
                if self.bytes.get(self.at) == Some(&b']') {
                    self.at += 1;
                } else {
                    loop {
                        items.push(self.value()?);
                        self.skip_space();
                        match self.bytes.get(self.at)? {
                            b',' => self.at += 1,
                            b']' => {
                                self.at += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
                self.depth -= 1;
                Some(Item::Array(items))
            }
            b'{' => {
                self.nest()?;
                self.at += 1;
                let mut members = Vec::new();
                self.skip_space();
                if self.bytes.get(self.at) == Some(&b'}') {
                    self.at += 1;
                } else {
                    loop {
                        self.skip_space();
                        let key = self.string()?;
                        self.skip_space();
                        if self.bytes.get(self.at) != Some(&b':') {
                            return None;
                        }
                        self.at += 1;
                        members.push((key, self.value()?));
                        self.skip_space();
                        match self.bytes.get(self.at)? {
                            b',' => self.at += 1,
                            b'}' => {
                                self.at += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
                self.depth -= 1;
                Some(Item::Object(members))
            }
            _ => self.number().map(Item::Number),
        }
    }

    fn nest(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    fn string(&mut self) -> Option<String> {
        if self.bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        let start = self.at;
        self.at += 1;
        loop {
            match *self.bytes.get(self.at)? {
                b'"' => break,
                b'\\' => self.at += 2,
                b if b < 0x20 => return None,
                _ => self.at += 1,
            }
        }
        self.at += 1;
        let text = std::str::from_utf8(&self.bytes[start..self.at]).ok()?;
        serde_json::from_str::<String>(text).ok()
    }

    fn number(&mut self) -> Option<Number> {
        let start = self.at;
        if self.bytes.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        let digits = |reader: &mut Self| {
            let from = reader.at;
            while reader.bytes.get(reader.at).is_some_and(u8::is_ascii_digit) {
                reader.at += 1;
            }
            reader.at - from
        };
        let whole = digits(self);
        if whole == 0 || (whole > 1 && self.bytes[self.at - whole] == b'0') {
            return None;
        }
        let mut fraction = None;
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            let n = digits(self);
            if n == 0 {
                return None;
            }
            fraction = Some(n);
        }
        let mut exponent = false;
        if matches!(self.bytes.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.bytes.get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if digits(self) == 0 {
                return None;
            }
            exponent = true;
        }
        let text = std::str::from_utf8(&self.bytes[start..self.at]).ok()?;
        number_from_text(text, fraction, exponent)
    }
}

fn number_from_text(text: &str, fraction: Option<usize>, exponent: bool) -> Option<Number> {
    if !exponent {
        match fraction {
            None => {
                if let Ok(i) = text.parse::<i64>() {
                    return Some(Number::Integer(i));
                }
                if let Ok(v) = text.parse::<i128>()
                    && v.unsigned_abs() < 10u128.pow(38)
                {
                    return Some(Number::Decimal(v, 0));
                }
            }
            Some(scale) => {
                let unscaled: String = text.chars().filter(|c| *c != '.').collect();
                if let Ok(v) = unscaled.parse::<i128>()
                    && v.unsigned_abs() < 10u128.pow(38)
                {
                    return Some(Number::Decimal(v, scale as u32));
                }
            }
        }
    }
    text.parse::<f64>().ok().map(Number::Double)
}

/// A path read: its mode and expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JsonPath {
    lax: bool,
    expr: Expr,
    /// The names of the variables the path reads (`$name`), as written.
    variables: Vec<String>,
}

/// The values of a path's named variables: each a sequence (one item, or none for a NULL
/// passed as JSON).
pub(crate) type Variables = [(String, Vec<Item>)];

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Literal(Item),
    Context,
    Current,
    Last,
    Variable(String),
    Member(Box<Expr>, String),
    AnyMember(Box<Expr>),
    Descendant(Box<Expr>, String),
    Elements(Box<Expr>, Vec<(Expr, Option<Expr>)>),
    AllElements(Box<Expr>),
    Filter(Box<Expr>, Box<Predicate>),
    Method(Box<Expr>, Method),
    Negate(Box<Expr>),
    Plus(Box<Expr>),
    Arithmetic(Arithmetic, Box<Expr>, Box<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Method {
    Type,
    Size,
    Double,
    Ceiling,
    Floor,
    Abs,
    KeyValue,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Arithmetic {
    Add,
    Subtract,
    Multiply,
    Divide,
    Modulo,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Comparison {
    Equal,
    NotEqual,
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
}

#[derive(Debug, Clone, PartialEq)]
enum Predicate {
    And(Box<Predicate>, Box<Predicate>),
    Or(Box<Predicate>, Box<Predicate>),
    Not(Box<Predicate>),
    Exists(Expr),
    Compare(Comparison, Expr, Expr),
    StartsWith(Expr, Expr),
    IsUnknown(Box<Predicate>),
}

/// Why a path could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathSyntaxError(pub(crate) String);

/// Why a path's evaluation failed (a structural error in strict mode, a type error,
/// division by zero): what `ON ERROR` decides about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EvaluationError(pub(crate) String);

type Evaluated = Result<Vec<Item>, EvaluationError>;

fn fail<T>(message: impl Into<String>) -> Result<T, EvaluationError> {
    Err(EvaluationError(message.into()))
}

impl JsonPath {
    /// Reads `text`: `lax` or `strict`, then the path expression.
    pub(crate) fn parse(text: &str) -> Result<JsonPath, PathSyntaxError> {
        let tokens = tokenize(text)?;
        let mut parser = PathParser {
            tokens,
            at: 0,
            variables: Vec::new(),
        };
        let lax = match parser.next() {
            Some(Tok::Word(w)) if w == "lax" => true,
            Some(Tok::Word(w)) if w == "strict" => false,
            _ => return Err(syntax("a JSON path starts with its mode, lax or strict")),
        };
        let expr = parser.expr()?;
        if parser.at != parser.tokens.len() {
            return Err(syntax(format!(
                "unexpected {} in JSON path",
                parser.tokens[parser.at].describe()
            )));
        }
        Ok(JsonPath {
            lax,
            expr,
            variables: parser.variables,
        })
    }

    /// The names of the variables the path reads.
    pub(crate) fn variables(&self) -> &[String] {
        &self.variables
    }

    /// The sequence of items the path answers for `root`, its variables taking `variables`.
    pub(crate) fn evaluate(&self, root: &Item, variables: &Variables) -> Evaluated {
        let scope = Scope {
            lax: self.lax,
            root,
            variables,
            current: None,
            last: None,
        };
        scope.eval(&self.expr)
    }
}

fn syntax(message: impl Into<String>) -> PathSyntaxError {
    PathSyntaxError(message.into())
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Quoted(String),
    Number(Number),
    Dollar,
    Named(String),
    At,
    Symbol(&'static str),
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Word(w) => format!("'{w}'"),
            Tok::Quoted(s) => format!("\"{s}\""),
            Tok::Number(n) => format!("'{}'", n.text()),
            Tok::Dollar => "'$'".into(),
            Tok::Named(n) => format!("'${n}'"),
            Tok::At => "'@'".into(),
            Tok::Symbol(s) => format!("'{s}'"),
        }
    }
}

const SYMBOLS: [&str; 22] = [
    "..", "&&", "||", "==", "<>", "!=", "<=", ">=", ".", "[", "]", "(", ")", ",", "?", "!", "<",
    ">", "+", "-", "*", "/",
];

fn tokenize(text: &str) -> Result<Vec<Tok>, PathSyntaxError> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let b = bytes[at];
        if b.is_ascii_whitespace() {
            at += 1;
        } else if b == b'"' {
            let start = at;
            at += 1;
            while at < bytes.len() && bytes[at] != b'"' {
                at += if bytes[at] == b'\\' { 2 } else { 1 };
            }
            at += 1;
            let quoted = text
                .get(start..at.min(text.len()))
                .and_then(|s| serde_json::from_str::<String>(s).ok())
                .ok_or_else(|| syntax("unterminated string in JSON path"))?;
            tokens.push(Tok::Quoted(quoted));
        } else if b.is_ascii_digit() {
            let start = at;
            while at < bytes.len() && bytes[at].is_ascii_digit() {
                at += 1;
            }
            let mut fraction = None;
            // `1.5` is a number; `$[1 to last]` and `$.a[1].b` are not fractions.
            if at + 1 < bytes.len() && bytes[at] == b'.' && bytes[at + 1].is_ascii_digit() {
                at += 1;
                let from = at;
                while at < bytes.len() && bytes[at].is_ascii_digit() {
                    at += 1;
                }
                fraction = Some(at - from);
            }
            let mut exponent = false;
            if at < bytes.len() && matches!(bytes[at], b'e' | b'E') {
                let mut end = at + 1;
                if end < bytes.len() && matches!(bytes[end], b'+' | b'-') {
                    end += 1;
                }
                if end < bytes.len() && bytes[end].is_ascii_digit() {
                    at = end;
                    while at < bytes.len() && bytes[at].is_ascii_digit() {
                        at += 1;
                    }
                    exponent = true;
                }
            }
            let number = number_from_text(&text[start..at], fraction, exponent)
                .ok_or_else(|| syntax(format!("invalid number {}", &text[start..at])))?;
            tokens.push(Tok::Number(number));
        } else if b.is_ascii_alphabetic() || b == b'_' {
            let start = at;
            while at < bytes.len() && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'_') {
                at += 1;
            }
            tokens.push(Tok::Word(text[start..at].to_string()));
        } else if b == b'$' {
            at += 1;
            let start = at;
            while at < bytes.len() && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'_') {
                at += 1;
            }
            tokens.push(if at == start {
                Tok::Dollar
            } else {
                Tok::Named(text[start..at].to_string())
            });
        } else if b == b'@' {
            at += 1;
            tokens.push(Tok::At);
        } else if let Some(symbol) = SYMBOLS.iter().find(|s| text[at..].starts_with(**s)) {
            at += symbol.len();
            tokens.push(Tok::Symbol(symbol));
        } else if b == b'%' {
            at += 1;
            tokens.push(Tok::Symbol("%"));
        } else {
            let c = text[at..].chars().next().unwrap_or('?');
            return Err(syntax(format!("unexpected '{c}' in JSON path")));
        }
    }
    Ok(tokens)
}

struct PathParser {
    tokens: Vec<Tok>,
    at: usize,
    variables: Vec<String>,
}

impl PathParser {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Tok> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn eat(&mut self, symbol: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Symbol(s)) if *s == symbol) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn eat_word(&mut self, word: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Word(w)) if w == word) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, symbol: &str) -> Result<(), PathSyntaxError> {
        if self.eat(symbol) {
            Ok(())
        } else {
            Err(syntax(format!(
                "expected '{symbol}' in JSON path, found {}",
                self.peek().map_or("the end".into(), Tok::describe)
            )))
        }
    }

    fn expr(&mut self) -> Result<Expr, PathSyntaxError> {
        let mut left = self.term()?;
        loop {
            let op = if self.eat("+") {
                Arithmetic::Add
            } else if self.eat("-") {
                Arithmetic::Subtract
            } else {
                return Ok(left);
            };
            left = Expr::Arithmetic(op, Box::new(left), Box::new(self.term()?));
        }
    }

    fn term(&mut self) -> Result<Expr, PathSyntaxError> {
        let mut left = self.unary()?;
        loop {
            let op = if self.eat("*") {
                Arithmetic::Multiply
            } else if self.eat("/") {
                Arithmetic::Divide
            } else if self.eat("%") {
                Arithmetic::Modulo
            } else {
                return Ok(left);
            };
            left = Expr::Arithmetic(op, Box::new(left), Box::new(self.unary()?));
        }
    }

    fn unary(&mut self) -> Result<Expr, PathSyntaxError> {
        if self.eat("-") {
            return Ok(Expr::Negate(Box::new(self.unary()?)));
        }
        if self.eat("+") {
            return Ok(Expr::Plus(Box::new(self.unary()?)));
        }
        self.accessors()
    }

    fn primary(&mut self) -> Result<Expr, PathSyntaxError> {
        match self.next() {
            Some(Tok::Dollar) => Ok(Expr::Context),
            Some(Tok::At) => Ok(Expr::Current),
            Some(Tok::Number(n)) => Ok(Expr::Literal(Item::Number(n))),
            Some(Tok::Quoted(s)) => Ok(Expr::Literal(Item::Text(s))),
            Some(Tok::Word(w)) if w == "true" => Ok(Expr::Literal(Item::Bool(true))),
            Some(Tok::Word(w)) if w == "false" => Ok(Expr::Literal(Item::Bool(false))),
            Some(Tok::Word(w)) if w == "null" => Ok(Expr::Literal(Item::Null)),
            Some(Tok::Word(w)) if w == "last" => Ok(Expr::Last),
            Some(Tok::Symbol("(")) => {
                let inner = self.expr()?;
                self.expect(")")?;
                Ok(inner)
            }
            Some(Tok::Named(name)) => {
                if !self.variables.contains(&name) {
                    self.variables.push(name.clone());
                }
                Ok(Expr::Variable(name))
            }
            other => Err(syntax(format!(
                "unexpected {} in JSON path",
                other.map_or("end".into(), |t| t.describe())
            ))),
        }
    }

    fn accessors(&mut self) -> Result<Expr, PathSyntaxError> {
        let mut expr = self.primary()?;
        loop {
            if self.eat("..") {
                let key = self.key()?;
                expr = Expr::Descendant(Box::new(expr), key);
            } else if self.eat(".") {
                if self.eat("*") {
                    expr = Expr::AnyMember(Box::new(expr));
                    continue;
                }
                let key = self.key()?;
                if self.eat("(") {
                    self.expect(")")?;
                    let method = match key.as_str() {
                        "type" => Method::Type,
                        "size" => Method::Size,
                        "double" => Method::Double,
                        "ceiling" => Method::Ceiling,
                        "floor" => Method::Floor,
                        "abs" => Method::Abs,
                        "keyvalue" => Method::KeyValue,
                        other => {
                            return Err(syntax(format!(
                                "JSON path method {other}() is not supported"
                            )));
                        }
                    };
                    expr = Expr::Method(Box::new(expr), method);
                } else {
                    expr = Expr::Member(Box::new(expr), key);
                }
            } else if self.eat("[") {
                if self.eat("*") {
                    self.expect("]")?;
                    expr = Expr::AllElements(Box::new(expr));
                    continue;
                }
                let mut subscripts = Vec::new();
                loop {
                    let from = self.expr()?;
                    let to = if self.eat_word("to") {
                        Some(self.expr()?)
                    } else {
                        None
                    };
                    subscripts.push((from, to));
                    if !self.eat(",") {
                        break;
                    }
                }
                self.expect("]")?;
                expr = Expr::Elements(Box::new(expr), subscripts);
            } else if self.eat("?") {
                self.expect("(")?;
                let predicate = self.predicate()?;
                self.expect(")")?;
                expr = Expr::Filter(Box::new(expr), Box::new(predicate));
            } else {
                return Ok(expr);
            }
        }
    }

    fn key(&mut self) -> Result<String, PathSyntaxError> {
        match self.next() {
            Some(Tok::Word(w)) => Ok(w),
            Some(Tok::Quoted(s)) => Ok(s),
            other => Err(syntax(format!(
                "expected a member name in JSON path, found {}",
                other.map_or("the end".into(), |t| t.describe())
            ))),
        }
    }

    fn predicate(&mut self) -> Result<Predicate, PathSyntaxError> {
        let mut left = self.conjunction()?;
        while self.eat("||") {
            left = Predicate::Or(Box::new(left), Box::new(self.conjunction()?));
        }
        Ok(left)
    }

    fn conjunction(&mut self) -> Result<Predicate, PathSyntaxError> {
        let mut left = self.negation()?;
        while self.eat("&&") {
            left = Predicate::And(Box::new(left), Box::new(self.negation()?));
        }
        Ok(left)
    }

    fn negation(&mut self) -> Result<Predicate, PathSyntaxError> {
        if self.eat("!") {
            return Ok(Predicate::Not(Box::new(self.negation()?)));
        }
        self.simple_predicate()
    }

    fn simple_predicate(&mut self) -> Result<Predicate, PathSyntaxError> {
        if self.eat_word("exists") {
            self.expect("(")?;
            let path = self.expr()?;
            self.expect(")")?;
            return Ok(Predicate::Exists(path));
        }
        // `( predicate )`, possibly `is unknown`; else a parenthesized path of a comparison.
        if matches!(self.peek(), Some(Tok::Symbol("("))) {
            let mark = self.at;
            self.at += 1;
            if let Ok(inner) = self.predicate()
                && self.eat(")")
            {
                if self.eat_word("is") {
                    if !self.eat_word("unknown") {
                        return Err(syntax("expected 'unknown' after 'is' in JSON path"));
                    }
                    return Ok(Predicate::IsUnknown(Box::new(inner)));
                }
                return Ok(inner);
            }
            self.at = mark;
        }
        let left = self.expr()?;
        if self.eat_word("starts") {
            if !self.eat_word("with") {
                return Err(syntax("expected 'with' after 'starts' in JSON path"));
            }
            return Ok(Predicate::StartsWith(left, self.expr()?));
        }
        if self.eat_word("like_regex") {
            return Err(syntax("like_regex in JSON path is not supported"));
        }
        let comparison = match self.next() {
            Some(Tok::Symbol("==")) => Comparison::Equal,
            Some(Tok::Symbol("<>" | "!=")) => Comparison::NotEqual,
            Some(Tok::Symbol("<")) => Comparison::Less,
            Some(Tok::Symbol("<=")) => Comparison::LessEqual,
            Some(Tok::Symbol(">")) => Comparison::Greater,
            Some(Tok::Symbol(">=")) => Comparison::GreaterEqual,
            other => {
                return Err(syntax(format!(
                    "expected a comparison in JSON path filter, found {}",
                    other.map_or("the end".into(), |t| t.describe())
                )));
            }
        };
        Ok(Predicate::Compare(comparison, left, self.expr()?))
    }
}

/// What a path is evaluated against.
#[derive(Clone, Copy)]
struct Scope<'a> {
    lax: bool,
    root: &'a Item,
    variables: &'a Variables,
    current: Option<&'a Item>,
    last: Option<i64>,
}

impl Scope<'_> {
    fn eval(&self, expr: &Expr) -> Evaluated {
        match expr {
            Expr::Literal(item) => Ok(vec![item.clone()]),
            Expr::Context => Ok(vec![self.root.clone()]),
            Expr::Current => match self.current {
                Some(item) => Ok(vec![item.clone()]),
                None => fail("@ outside a filter"),
            },
            Expr::Last => match self.last {
                Some(last) => Ok(vec![Item::Number(Number::Integer(last))]),
                None => fail("last outside an array accessor"),
            },
            Expr::Variable(name) => match self.variables.iter().find(|(n, _)| n == name) {
                Some((_, value)) => Ok(value.clone()),
                None => fail(format!("no value passed for parameter {name}")),
            },
            Expr::Member(base, key) => {
                let mut out = Vec::new();
                for item in self.unwrapped(self.eval(base)?) {
                    match item {
                        Item::Object(members) => {
                            match members.into_iter().find(|(k, _)| k == key) {
                                Some((_, value)) => out.push(value),
                                None if self.lax => {}
                                None => return fail(format!("JSON object has no member {key}")),
                            }
                        }
                        _ if self.lax => {}
                        other => {
                            return fail(format!(
                                "member accessor on a JSON {}",
                                other.type_name()
                            ));
                        }
                    }
                }
                Ok(out)
            }
            Expr::AnyMember(base) => {
                let mut out = Vec::new();
                for item in self.unwrapped(self.eval(base)?) {
                    match item {
                        Item::Object(members) => out.extend(members.into_iter().map(|(_, v)| v)),
                        _ if self.lax => {}
                        other => {
                            return fail(format!(
                                "wildcard member accessor on a JSON {}",
                                other.type_name()
                            ));
                        }
                    }
                }
                Ok(out)
            }
            Expr::Descendant(base, key) => {
                let mut out = Vec::new();
                for item in self.eval(base)? {
                    descendants(&item, key, &mut out);
                }
                Ok(out)
            }
            Expr::AllElements(base) => {
                let mut out = Vec::new();
                for item in self.eval(base)? {
                    match item {
                        Item::Array(items) => out.extend(items),
                        other if self.lax => out.push(other),
                        other => {
                            return fail(format!("array accessor on a JSON {}", other.type_name()));
                        }
                    }
                }
                Ok(out)
            }
            Expr::Elements(base, subscripts) => {
                let mut out = Vec::new();
                for item in self.eval(base)? {
                    let items = match item {
                        Item::Array(items) => items,
                        other if self.lax => vec![other],
                        other => {
                            return fail(format!("array accessor on a JSON {}", other.type_name()));
                        }
                    };
                    let scope = Scope {
                        last: Some(items.len() as i64 - 1),
                        ..*self
                    };
                    for (from, to) in subscripts {
                        let from = scope.index(from)?;
                        let to = match to {
                            Some(to) => scope.index(to)?,
                            None => from,
                        };
                        if from > to {
                            if self.lax {
                                continue;
                            }
                            return fail(format!("invalid array range {from} to {to}"));
                        }
                        for i in from..=to {
                            match usize::try_from(i).ok().and_then(|i| items.get(i)) {
                                Some(element) => out.push(element.clone()),
                                None if self.lax => {}
                                None => return fail(format!("array index {i} out of bounds")),
                            }
                        }
                    }
                }
                Ok(out)
            }
            Expr::Filter(base, predicate) => {
                let mut out = Vec::new();
                for item in self.unwrapped(self.eval(base)?) {
                    let scope = Scope {
                        current: Some(&item),
                        ..*self
                    };
                    if scope.test(predicate) == Some(true) {
                        out.push(item);
                    }
                }
                Ok(out)
            }
            Expr::Method(base, method) => self.method(*method, self.eval(base)?),
            Expr::Negate(inner) => self
                .unwrapped(self.eval(inner)?)
                .into_iter()
                .map(|item| match item {
                    Item::Number(n) => negate(n).map(Item::Number),
                    other => fail(format!("unary minus of a JSON {}", other.type_name())),
                })
                .collect(),
            Expr::Plus(inner) => self
                .unwrapped(self.eval(inner)?)
                .into_iter()
                .map(|item| match item {
                    Item::Number(n) => Ok(Item::Number(n)),
                    other => fail(format!("unary plus of a JSON {}", other.type_name())),
                })
                .collect(),
            Expr::Arithmetic(op, left, right) => {
                let left = self.single_number(left)?;
                let right = self.single_number(right)?;
                Ok(vec![Item::Number(arithmetic(*op, left, right)?)])
            }
        }
    }

    /// Lax mode's unwrapping of the arrays of a sequence (one level).
    fn unwrapped(&self, items: Vec<Item>) -> Vec<Item> {
        if !self.lax {
            return items;
        }
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Item::Array(elements) => out.extend(elements),
                other => out.push(other),
            }
        }
        out
    }

    fn single_number(&self, expr: &Expr) -> Result<Number, EvaluationError> {
        match self.unwrapped(self.eval(expr)?).as_slice() {
            [Item::Number(n)] => Ok(*n),
            _ => fail("an arithmetic operand is not a single number"),
        }
    }

    fn index(&self, expr: &Expr) -> Result<i64, EvaluationError> {
        match self.single_number(expr)? {
            Number::Integer(i) => Ok(i),
            Number::Decimal(v, s) => {
                let scaled = v / 10i128.pow(s);
                i64::try_from(scaled).or_else(|_| fail("array index out of range"))
            }
            Number::Double(d) if d.is_finite() => Ok(d.trunc() as i64),
            Number::Double(_) => fail("array index is not a number"),
        }
    }

    fn method(&self, method: Method, items: Vec<Item>) -> Evaluated {
        match method {
            Method::Type => Ok(items
                .iter()
                .map(|i| Item::Text(i.type_name().to_string()))
                .collect()),
            Method::Size => items
                .into_iter()
                .map(|item| match item {
                    Item::Array(elements) => {
                        Ok(Item::Number(Number::Integer(elements.len() as i64)))
                    }
                    _ if self.lax => Ok(Item::Number(Number::Integer(1))),
                    other => fail(format!("size() of a JSON {}", other.type_name())),
                })
                .collect(),
            Method::KeyValue => {
                let mut out = Vec::new();
                for (id, item) in self.unwrapped(items).into_iter().enumerate() {
                    let Item::Object(members) = item else {
                        return fail(format!("keyvalue() of a JSON {}", item.type_name()));
                    };
                    for (name, value) in members {
                        out.push(Item::Object(vec![
                            ("name".to_string(), Item::Text(name)),
                            ("value".to_string(), value),
                            ("id".to_string(), Item::Number(Number::Integer(id as i64))),
                        ]));
                    }
                }
                Ok(out)
            }
            Method::Double | Method::Ceiling | Method::Floor | Method::Abs => self
                .unwrapped(items)
                .into_iter()
                .map(|item| numeric_method(method, item).map(Item::Number))
                .collect(),
        }
    }

    /// A predicate's truth: `None` is unknown.
    fn test(&self, predicate: &Predicate) -> Option<bool> {
        match predicate {
            Predicate::And(a, b) => match (self.test(a), self.test(b)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            Predicate::Or(a, b) => match (self.test(a), self.test(b)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            Predicate::Not(inner) => self.test(inner).map(|b| !b),
            Predicate::IsUnknown(inner) => Some(self.test(inner).is_none()),
            Predicate::Exists(path) => self.eval(path).ok().map(|items| !items.is_empty()),
            Predicate::Compare(op, left, right) => {
                let left = self.unwrapped(self.eval(left).ok()?);
                let right = self.unwrapped(self.eval(right).ok()?);
                let pairs = left
                    .iter()
                    .flat_map(|l| right.iter().map(move |r| compare(*op, l, r)));
                self.any(pairs)
            }
            Predicate::StartsWith(whole, prefix) => {
                let prefix = match self.eval(prefix).ok()?.as_slice() {
                    [Item::Text(p)] => p.clone(),
                    _ => return None,
                };
                let items = self.unwrapped(self.eval(whole).ok()?);
                self.any(items.iter().map(|item| match item {
                    Item::Text(s) => Some(s.starts_with(&prefix)),
                    _ => None,
                }))
            }
        }
    }

    /// True when one of the outcomes is; an error first (lax) or anywhere (strict) is unknown.
    fn any(&self, outcomes: impl Iterator<Item = Option<bool>>) -> Option<bool> {
        let (mut found, mut error) = (false, false);
        for outcome in outcomes {
            match outcome {
                Some(true) if self.lax => return Some(true),
                Some(true) => found = true,
                Some(false) => {}
                None if self.lax => return None,
                None => error = true,
            }
        }
        if error { None } else { Some(found) }
    }
}

fn descendants(item: &Item, key: &str, out: &mut Vec<Item>) {
    match item {
        Item::Object(members) => {
            for (k, v) in members {
                if k == key {
                    out.push(v.clone());
                }
            }
            for (_, v) in members {
                descendants(v, key, out);
            }
        }
        Item::Array(items) => {
            for v in items {
                descendants(v, key, out);
            }
        }
        _ => {}
    }
}

/// A comparison of two items by Trino's rules: `None` where they cannot be compared.
fn compare(op: Comparison, left: &Item, right: &Item) -> Option<bool> {
    let order = match (left, right) {
        (Item::Null, Item::Null) => return Some(op == Comparison::Equal),
        (Item::Null, _) | (_, Item::Null) => return Some(false),
        (Item::Number(a), Item::Number(b)) => a.compare(*b)?,
        (Item::Text(a), Item::Text(b)) => a.cmp(b),
        (Item::Bool(a), Item::Bool(b)) => a.cmp(b),
        _ => return None,
    };
    Some(match op {
        Comparison::Equal => order == Ordering::Equal,
        Comparison::NotEqual => order != Ordering::Equal,
        Comparison::Less => order == Ordering::Less,
        Comparison::LessEqual => order != Ordering::Greater,
        Comparison::Greater => order == Ordering::Greater,
        Comparison::GreaterEqual => order != Ordering::Less,
    })
}

fn negate(n: Number) -> Result<Number, EvaluationError> {
    Ok(match n {
        Number::Integer(i) => match i.checked_neg() {
            Some(v) => Number::Integer(v),
            None => return fail("bigint overflow"),
        },
        Number::Decimal(v, s) => Number::Decimal(-v, s),
        Number::Double(d) => Number::Double(-d),
    })
}

fn numeric_method(method: Method, item: Item) -> Result<Number, EvaluationError> {
    let n = match item {
        Item::Number(n) => n,
        Item::Text(s) if method == Method::Double => {
            return match s.trim().parse::<f64>() {
                Ok(d) => Ok(Number::Double(d)),
                Err(_) => fail(format!("double() of the text {s}")),
            };
        }
        other => return fail(format!("numeric method of a JSON {}", other.type_name())),
    };
    Ok(match (method, n) {
        (Method::Double, n) => Number::Double(n.as_f64()),
        (Method::Abs, Number::Integer(i)) => match i.checked_abs() {
            Some(v) => Number::Integer(v),
            None => return fail("bigint overflow"),
        },
        (Method::Abs, Number::Decimal(v, s)) => Number::Decimal(v.abs(), s),
        (Method::Abs, Number::Double(d)) => Number::Double(d.abs()),
        (_, Number::Integer(i)) => Number::Integer(i),
        // Trino's ceiling and floor of a decimal(p, s) is a decimal(p - s + 1, 0).
        (Method::Ceiling, Number::Decimal(v, s)) => {
            let unit = 10i128.pow(s);
            let whole = v.div_euclid(unit);
            Number::Decimal(
                if v.rem_euclid(unit) > 0 {
                    whole + 1
                } else {
                    whole
                },
                0,
            )
        }
        (Method::Floor, Number::Decimal(v, s)) => Number::Decimal(v.div_euclid(10i128.pow(s)), 0),
        (Method::Ceiling, Number::Double(d)) => Number::Double(d.ceil()),
        (Method::Floor, Number::Double(d)) => Number::Double(d.floor()),
        (_, n) => n,
    })
}

fn arithmetic(op: Arithmetic, a: Number, b: Number) -> Result<Number, EvaluationError> {
    if let (Number::Integer(x), Number::Integer(y)) = (a, b) {
        let result = match op {
            Arithmetic::Add => x.checked_add(y),
            Arithmetic::Subtract => x.checked_sub(y),
            Arithmetic::Multiply => x.checked_mul(y),
            Arithmetic::Divide if y == 0 => return fail("Division by zero"),
            Arithmetic::Divide => x.checked_div(y),
            Arithmetic::Modulo if y == 0 => return fail("Division by zero"),
            Arithmetic::Modulo => x.checked_rem(y),
        };
        return result
            .map(Number::Integer)
            .map_or_else(|| fail("bigint overflow"), Ok);
    }
    if let (Some((x, sx)), Some((y, sy)), Arithmetic::Add | Arithmetic::Subtract) =
        (a.as_decimal(), b.as_decimal(), op)
    {
        let scale = sx.max(sy);
        let x = rescaled(x, sx, scale);
        let y = rescaled(y, sy, scale);
        let sum = match (x, y, op) {
            (Some(x), Some(y), Arithmetic::Add) => x.checked_add(y),
            (Some(x), Some(y), _) => x.checked_sub(y),
            _ => None,
        };
        return match sum {
            Some(v) if v.unsigned_abs() < 10u128.pow(38) => Ok(Number::Decimal(v, scale)),
            _ => fail("decimal overflow"),
        };
    }
    let (x, y) = (a.as_f64(), b.as_f64());
    Ok(Number::Double(match op {
        Arithmetic::Add => x + y,
        Arithmetic::Subtract => x - y,
        Arithmetic::Multiply => x * y,
        Arithmetic::Divide => x / y,
        Arithmetic::Modulo => x % y,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(path: &str, json: &str) -> Result<Vec<String>, EvaluationError> {
        let path = JsonPath::parse(path).expect("a path");
        let item = parse_json(json).expect("JSON");
        Ok(path.evaluate(&item, &[])?.iter().map(Item::json).collect())
    }

    #[test]
    fn variables_take_the_passed_values() {
        let path = JsonPath::parse("lax $[$i] + $n").expect("a path");
        assert_eq!(path.variables(), ["i".to_string(), "n".to_string()]);
        let item = parse_json("[10, 20]").expect("JSON");
        let variables = [
            ("i".to_string(), vec![Item::Number(Number::Integer(1))]),
            ("n".to_string(), vec![Item::Number(Number::Integer(5))]),
        ];
        let answer = path
            .evaluate(&item, &variables)
            .map(|items| items[0].json());
        assert_eq!(answer, Ok("25".to_string()));
        // A variable passed as JSON NULL is the empty sequence.
        let path = JsonPath::parse("lax $v").expect("a path");
        assert_eq!(
            path.evaluate(&item, &[("v".to_string(), vec![])]),
            Ok(vec![])
        );
    }

    const CUSTOMER: &str = r#"{"comment" : "nice", "children" : [10, 13, 16]}"#;

    #[test]
    fn accessors_in_lax_and_strict_mode() {
        assert_eq!(
            eval("lax $.children", CUSTOMER),
            Ok(vec!["[10,13,16]".into()])
        );
        assert_eq!(
            eval("lax $.children[*]", CUSTOMER),
            Ok(vec!["10".into(), "13".into(), "16".into()])
        );
        assert_eq!(
            eval("lax $.children[last]", CUSTOMER),
            Ok(vec!["16".into()])
        );
        assert_eq!(
            eval("lax $.children[0, last - 1 to last]", CUSTOMER),
            Ok(vec!["10".into(), "13".into(), "16".into()])
        );
        // Lax: a missing member or element is nothing; strict: an error.
        assert_eq!(eval("lax $.children[5]", CUSTOMER), Ok(vec![]));
        assert!(eval("strict $.children[5]", CUSTOMER).is_err());
        assert_eq!(eval("lax $.missing", CUSTOMER), Ok(vec![]));
        assert!(eval("strict $.missing", CUSTOMER).is_err());
        // Lax unwraps arrays for members and wraps scalars for elements.
        assert_eq!(
            eval(r#"lax $.a.b"#, r#"{"a":[{"b":1},{"b":2}]}"#),
            Ok(vec!["1".into(), "2".into()])
        );
        assert!(eval(r#"strict $.a.b"#, r#"{"a":[{"b":1},{"b":2}]}"#).is_err());
        assert_eq!(eval("lax $[0]", "7"), Ok(vec!["7".into()]));
        assert_eq!(
            eval(r#"lax $."comment""#, CUSTOMER),
            Ok(vec![r#""nice""#.into()])
        );
        assert_eq!(
            eval("lax $.*", r#"{"a":1,"b":[true,null]}"#),
            Ok(vec!["1".into(), "[true,null]".into()])
        );
        assert_eq!(
            eval(
                "lax $..comment",
                r#"{"id":1,"notes":[{"comment":"foo"},{"comment":null}],"comment":["bar"]}"#
            ),
            Ok(vec![r#"["bar"]"#.into(), r#""foo""#.into(), "null".into()])
        );
    }

    #[test]
    fn filters_methods_and_arithmetic() {
        assert_eq!(
            eval("lax $.children[*]?(@ > 12)", CUSTOMER),
            Ok(vec!["13".into(), "16".into()])
        );
        let people = r#"[{"customer":100,"region":"AFRICA"},{"region":"ASIA"},{"customer":300,"region":"AFRICA","comment":null}]"#;
        assert_eq!(
            eval(r#"lax $[*]?(@.region != "ASIA").customer"#, people),
            Ok(vec!["100".into(), "300".into()])
        );
        assert_eq!(
            eval("lax $[*]?(!exists(@.customer)).region", people),
            Ok(vec![r#""ASIA""#.into()])
        );
        assert_eq!(
            eval(
                r#"lax $[*]?(@.region starts with "AF" && @.customer >= 300).customer"#,
                people
            ),
            Ok(vec!["300".into()])
        );
        // Comparing text with a number is unknown: the item is not kept, `is unknown` says so.
        assert_eq!(
            eval(r#"lax $[*]?((@.region > 1) is unknown).region"#, people).map(|v| v.len()),
            Ok(3)
        );
        assert_eq!(eval("lax $.size()", CUSTOMER), Ok(vec!["1".into()]));
        assert_eq!(
            eval("lax $.children.size()", CUSTOMER),
            Ok(vec!["3".into()])
        );
        assert_eq!(
            eval("lax $[*].type()", r#"[1, "a", null, true, [], {}]"#),
            Ok([
                "\"number\"",
                "\"string\"",
                "\"null\"",
                "\"boolean\"",
                "\"array\"",
                "\"object\""
            ]
            .map(String::from)
            .to_vec())
        );
        assert_eq!(
            eval("lax $[*].ceiling()", "[-1.5, -1, 1.3]"),
            Ok(vec!["-1".into(), "-1".into(), "2".into()])
        );
        assert_eq!(eval("lax $[*].abs()", "[-1.50]"), Ok(vec!["1.50".into()]));
        assert_eq!(
            eval("lax $.a + $.b * 2", r#"{"a":1,"b":3}"#),
            Ok(vec!["7".into()])
        );
        assert_eq!(
            eval("lax $.a + 0.25", r#"{"a":1.5}"#),
            Ok(vec!["1.75".into()])
        );
        assert!(eval("lax $.a / 0", r#"{"a":1}"#).is_err());
        // A scale past 38 digits cannot be aligned: an error, not an overflow of the power of ten.
        let tiny = r#"{"a":0.0000000000000000000000000000000000000001}"#;
        assert!(eval("lax $.a + 1", tiny).is_err());
        assert_eq!(
            eval("lax $.keyvalue()", r#"{"a":1}"#),
            Ok(vec![r#"{"name":"a","value":1,"id":0}"#.into()])
        );
    }

    #[test]
    fn paths_trino_refuses() {
        for bad in [
            "$.a",
            "lax",
            "lax $.",
            "lax $[1",
            "lax $.a.like()",
            "lax $ ?(@ like_regex \"a\")",
            "lax $ $",
        ] {
            assert!(JsonPath::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn json_text_keeps_number_kinds_and_refuses_what_is_not_json() {
        assert_eq!(parse_json("1.50").map(|i| i.json()), Some("1.50".into()));
        assert_eq!(parse_json("-7").map(|i| i.json()), Some("-7".into()));
        assert_eq!(parse_json("1e3").map(|i| i.json()), Some("1000.0".into()));
        // Control characters in their short escapes where JSON has one, as serde_json (and
        // Trino's Jackson) write them.
        assert_eq!(
            parse_json(r#""a\u0008\n\u0001""#).map(|i| i.json()),
            Some(r#""a\b\n\u0001""#.into())
        );
        assert_eq!(
            parse_json(r#" {"a" : "x\"y" } "#).map(|i| i.json()),
            Some(r#"{"a":"x\"y"}"#.into())
        );
        for bad in [
            "",
            "{",
            "[1,]",
            "01",
            "1.",
            "tru",
            "{\"a\" 1}",
            "1 2",
            "\"\u{1}\"",
        ] {
            assert_eq!(parse_json(bad), None, "{bad}");
        }
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_eq!(parse_json(&deep), None);
    }
}
