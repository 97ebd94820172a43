//! Trino functions that are another spelling of DataFusion expressions, rewritten in the
//! parsed statement so DataFusion plans (and coerces) them as if the user had written its own
//! spelling: `year(d)` is `CAST(date_part('year', d) AS BIGINT)`, `if(c, a, b)` a `CASE`,
//! `count_if(x)` a `count` of a `CASE`, `max_by(x, y)` an ordered `first_value`. Functions
//! that need code of their own live in `sqe_functions`.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::LazyLock;

use datafusion::sql::sqlparser::ast::{
    DuplicateTreatment, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentClause,
    FunctionArguments, Ident, ListAggOnOverflow, ObjectName, UnaryOperator, Value, ValueWithSpan,
    VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;

/// Trino's name, its number of arguments, and DataFusion's spelling with `$n` for the n-th.
const SPELLINGS: &[(&str, usize, &str)] = &[
    // Date and time fields (Trino: bigint; weeks and days of week as ISO 8601 counts them).
    ("year", 1, "CAST(date_part('year', $1) AS BIGINT)"),
    ("quarter", 1, "CAST(date_part('quarter', $1) AS BIGINT)"),
    ("month", 1, "CAST(date_part('month', $1) AS BIGINT)"),
    ("week", 1, "CAST(date_part('week', $1) AS BIGINT)"),
    ("week_of_year", 1, "CAST(date_part('week', $1) AS BIGINT)"),
    ("day", 1, "CAST(date_part('day', $1) AS BIGINT)"),
    ("day_of_month", 1, "CAST(date_part('day', $1) AS BIGINT)"),
    ("day_of_week", 1, "CAST(date_part('isodow', $1) AS BIGINT)"),
    ("dow", 1, "CAST(date_part('isodow', $1) AS BIGINT)"),
    ("day_of_year", 1, "CAST(date_part('doy', $1) AS BIGINT)"),
    ("doy", 1, "CAST(date_part('doy', $1) AS BIGINT)"),
    (
        "year_of_week",
        1,
        "CAST(date_part('isoyear', $1) AS BIGINT)",
    ),
    ("yow", 1, "CAST(date_part('isoyear', $1) AS BIGINT)"),
    ("hour", 1, "CAST(date_part('hour', $1) AS BIGINT)"),
    ("minute", 1, "CAST(date_part('minute', $1) AS BIGINT)"),
    ("second", 1, "CAST(date_part('second', $1) AS BIGINT)"),
    // DataFusion's milliseconds include the seconds.
    (
        "millisecond",
        1,
        "CAST(date_part('millisecond', $1) % 1000 AS BIGINT)",
    ),
    (
        "last_day_of_month",
        1,
        "CAST(date_trunc('month', $1) + INTERVAL '1' MONTH - INTERVAL '1' DAY AS DATE)",
    ),
    // `regexp_replace(s, pattern)` removes the matches.
    ("regexp_replace", 2, "regexp_replace($1, $2, '')"),
    // Functions of lambdas (`x -> …`, see `super::lambdas`).
    ("transform", 2, "array_transform($1, $2)"),
    ("filter", 2, "array_filter($1, $2)"),
    // Conditionals and arithmetic.
    ("if", 2, "CASE WHEN $1 THEN $2 END"),
    ("if", 3, "CASE WHEN $1 THEN $2 ELSE $3 END"),
    ("mod", 2, "$1 % $2"),
    ("e", 0, "exp(CAST(1 AS DOUBLE))"),
    ("ceiling", 1, "ceil($1)"),
    // Trino's `date(x)` is `CAST(x AS date)`.
    ("date", 1, "CAST($1 AS DATE)"),
    // Seconds as a double, with their fraction (DataFusion's is a whole bigint).
    ("to_unixtime", 1, "date_part('epoch', $1)"),
    // Answered in Trino's types by the dialect's `signum`.
    ("sign", 1, "signum($1)"),
    // A decimal keeps its type (the dialect's `trunc` of a decimal); a real number is trunc's.
    ("truncate", 1, "trunc($1)"),
    ("truncate", 2, "trunc($1, $2)"),
    // Trino's empty map, map(unknown, unknown).
    ("map", 0, "map(make_array(), make_array())"),
    // Calendar dates (`2024-01-02`); week and ordinal dates are refused as invalid casts.
    ("from_iso8601_date", 1, "CAST($1 AS DATE)"),
    // Strings and binary.
    ("length", 1, "CAST(character_length($1) AS BIGINT)"),
    ("strpos", 2, "CAST(strpos($1, $2) AS BIGINT)"),
    ("strpos", 3, "sqe_strpos_instance($1, $2, $3)"),
    // Teradata's spelling of strpos.
    ("index", 2, "CAST(strpos($1, $2) AS BIGINT)"),
    // The n largest (smallest) values, as an array.
    ("max", 2, "sqe_max_n($1, $2)"),
    ("min", 2, "sqe_min_n($1, $2)"),
    // The values of the n rows with the largest (smallest) keys, as an array.
    ("max_by", 3, "sqe_max_by_n($1, $2, $3)"),
    ("min_by", 3, "sqe_min_by_n($1, $2, $3)"),
    ("codepoint", 1, "CAST(ascii($1) AS INTEGER)"),
    ("to_utf8", 1, "CAST($1 AS VARBINARY)"),
    // Both count code points.
    (
        "levenshtein_distance",
        2,
        "CAST(levenshtein($1, $2) AS BIGINT)",
    ),
    ("to_hex", 1, "upper(encode($1, 'hex'))"),
    ("from_hex", 1, "decode($1, 'hex')"),
    // Arrays (DataFusion counts in unsigned integers; Trino's position is 0 when absent).
    (
        "array_position",
        2,
        "CASE WHEN $1 IS NULL OR $2 IS NULL THEN NULL \
         ELSE coalesce(CAST(array_position($1, $2) AS BIGINT), 0) END",
    ),
    // NULL where a NULL element could have matched, as in Trino (`sqe_functions`).
    ("contains", 2, "sqe_contains($1, $2)"),
    // Trino sorts NULLs last (DataFusion's default puts them first).
    ("array_sort", 1, "array_sort($1, 'ASC', 'NULLS LAST')"),
    // An array of `count` copies (DataFusion's `repeat` repeats a string).
    ("repeat", 2, "array_repeat($1, $2)"),
    // An array's element (NULL past the end, from the end when negative) or a map's value
    // (NULL for a missing key), where a subscript fails.
    ("element_at", 2, "sqe_subscript($1, $2, 'element_at')"),
    // Aggregates.
    ("count_if", 1, "count(CASE WHEN $1 THEN 1 END)"),
    (
        "max_by",
        2,
        "first_value($1 ORDER BY $2 DESC) FILTER (WHERE $2 IS NOT NULL)",
    ),
    (
        "min_by",
        2,
        "first_value($1 ORDER BY $2 ASC) FILTER (WHERE $2 IS NOT NULL)",
    ),
    ("approx_distinct", 1, "CAST(approx_distinct($1) AS BIGINT)"),
    ("every", 1, "bool_and($1)"),
    // A value that is not NULL, if there is one.
    (
        "arbitrary",
        1,
        "first_value($1) FILTER (WHERE $1 IS NOT NULL)",
    ),
    (
        "any_value",
        1,
        "first_value($1) FILTER (WHERE $1 IS NOT NULL)",
    ),
    ("variance", 1, "var_samp($1)"),
    ("geometric_mean", 1, "exp(avg(ln(CAST($1 AS DOUBLE))))"),
    // Bitwise (Trino: bigint). Not cast to bigint first: the dialect refuses operands that
    // are not integers (DataFusion's operators would take decimals). `-1 - x` is `~x` and
    // cannot overflow.
    ("bitwise_and", 2, "CAST(($1 & $2) AS BIGINT)"),
    ("bitwise_or", 2, "CAST(($1 | $2) AS BIGINT)"),
    ("bitwise_xor", 2, "CAST(($1 ^ $2) AS BIGINT)"),
    ("bitwise_not", 1, "CAST(-1 - ($1 | 0) AS BIGINT)"),
    ("bitwise_and_agg", 1, "CAST(bit_and($1) AS BIGINT)"),
    ("bitwise_or_agg", 1, "CAST(bit_or($1) AS BIGINT)"),
    ("bitwise_xor_agg", 1, "CAST(bit_xor($1) AS BIGINT)"),
];

type Parsed = HashMap<(&'static str, usize), Expr>;

/// The spellings parsed once, by name and number of arguments.
static PARSED: LazyLock<Parsed> = LazyLock::new(|| parsed(SPELLINGS));

/// [`WINDOW_SPELLINGS`] parsed once.
static WINDOW_PARSED: LazyLock<Parsed> = LazyLock::new(|| parsed(WINDOW_SPELLINGS));

fn parsed(spellings: &[(&'static str, usize, &str)]) -> Parsed {
    spellings
        .iter()
        // A spelling that does not parse is a defect the unit tests below report.
        .filter_map(|(name, arity, text)| parse(text).map(|expr| ((*name, *arity), expr)))
        .collect()
}

/// The aggregates among [`SPELLINGS`].
const AGGREGATES: &[&str] = &[
    "max",
    "min",
    "count_if",
    "max_by",
    "min_by",
    "approx_distinct",
    "every",
    "arbitrary",
    "any_value",
    "variance",
    "geometric_mean",
    "bitwise_and_agg",
    "bitwise_or_agg",
    "bitwise_xor_agg",
];

/// A respelled function as `SHOW FUNCTIONS` lists it: name, whether it is an aggregate, and
/// what it stands for.
pub(crate) fn listed() -> impl Iterator<Item = (&'static str, bool, String)> {
    SPELLINGS
        .iter()
        .map(|(name, _, text)| {
            (
                *name,
                AGGREGATES.contains(name),
                format!("Trino's {name}: {text}"),
            )
        })
        .chain(std::iter::once((
            "listagg",
            true,
            "Trino's listagg(x, separator [ON OVERFLOW ...]) WITHIN GROUP (ORDER BY ...): \
             string_agg(x, separator ORDER BY ...), or array_agg for ON OVERFLOW TRUNCATE, \
             held to Trino's 1 MiB"
                .to_string(),
        )))
}

/// Whether SQE rewrites a call of `name` with `arity` arguments: the call's types are then the
/// rewritten expression's, not those of a registered function of that name.
pub(crate) fn is_respelled(name: &str, arity: usize) -> bool {
    name == "listagg" || SPELLINGS.iter().any(|(n, a, _)| *n == name && *a == arity)
}

/// What `DISTINCT` does to an aggregate of [`AGGREGATES`] (by name and number of arguments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Distinct {
    /// Nothing: the answer is the same over the distinct values (`max_by`, `every`).
    Same,
    /// The aggregate its spelling calls takes it (`count_if(DISTINCT x)` is
    /// `count(DISTINCT CASE …)`).
    Passed,
    /// SQE's own aggregate of the spelling does not take it.
    Refused,
}

fn distinct(name: &str, arity: usize) -> Distinct {
    match (name, arity) {
        ("max" | "min", 2) | ("max_by" | "min_by", 3) => Distinct::Refused,
        (
            "max_by" | "min_by" | "approx_distinct" | "every" | "arbitrary" | "any_value"
            | "bitwise_and_agg" | "bitwise_or_agg",
            _,
        ) => Distinct::Same,
        _ => Distinct::Passed,
    }
}

/// Whether `function` is an aggregate of [`AGGREGATES`] called with `DISTINCT`.
fn is_distinct_call(function: &Function) -> bool {
    matches!(
        &function.args,
        FunctionArguments::List(list)
            if matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct))
    )
}

/// The refusal of `DISTINCT` in a respelled aggregate as a window function (as Trino refuses
/// it) or whose spelling is SQE's own aggregate, which would not honour it
/// (`max(DISTINCT x, 2)`).
pub(super) fn refused_distinct(function: &Function) -> Option<crate::error::Error> {
    let name = function.name.to_string().to_ascii_lowercase();
    let FunctionArguments::List(list) = &function.args else {
        return None;
    };
    let respelled = PARSED.contains_key(&(name.as_str(), list.args.len()));
    if !respelled || !is_distinct_call(function) {
        return None;
    }
    if function.over.is_some() {
        return Some(crate::error::Error::NotSupported(
            "DISTINCT in window function parameters".to_string(),
        ));
    }
    (distinct(&name, list.args.len()) == Distinct::Refused).then(|| {
        crate::error::Error::NotSupported(format!(
            "{name}(DISTINCT …) with {} arguments",
            list.args.len()
        ))
    })
}

/// DataFusion's spelling of `function`, if it is one of [`SPELLINGS`] called without
/// ordering of its own (and with `DISTINCT` only if it is an aggregate); an aggregate's
/// `FILTER`, `OVER` and `DISTINCT` go on the aggregate its spelling calls
/// (`count_if(x) FILTER (WHERE y)` is `count(CASE …) FILTER (WHERE y)`).
pub(super) fn respelled(function: &Function) -> Option<Expr> {
    let name = function.name.to_string().to_ascii_lowercase();
    let windowed_or_filtered = function.over.is_some() || function.filter.is_some();
    if function.name.0.len() != 1
        || (windowed_or_filtered && !AGGREGATES.contains(&name.as_str()))
        || function.null_treatment.is_some()
        || !function.within_group.is_empty()
    {
        return None;
    }
    let FunctionArguments::List(list) = &function.args else {
        return None;
    };
    let distinct_call = is_distinct_call(function);
    if (distinct_call && !AGGREGATES.contains(&name.as_str())) || !list.clauses.is_empty() {
        return None;
    }
    let args: Vec<Expr> = list
        .args
        .iter()
        .map(|arg| match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let key = (name.as_str(), args.len());
    let window_template = function.over.as_ref().and_then(|_| WINDOW_PARSED.get(&key));
    let template = window_template.or_else(|| PARSED.get(&key))?;
    let mut spelled = substituted(template.clone(), &args);
    let pass_distinct = distinct_call && distinct(&name, args.len()) == Distinct::Passed;
    if windowed_or_filtered || pass_distinct {
        let _ = spelled.visit(&mut Qualify::new(
            function.filter.as_deref(),
            function.over.as_ref(),
            pass_distinct,
        ));
    }
    Some(spelled)
}

/// The refusal of a window function SQE's spelling cannot compute: `max_by`/`min_by` over a
/// frame that does not start at the partition's first row (their window spelling's aggregate
/// cannot take rows back out of a sliding frame).
pub(super) fn refused_window(function: &Function) -> Option<crate::error::Error> {
    use datafusion::sql::sqlparser::ast::{WindowFrameBound, WindowType};
    let Some(WindowType::WindowSpec(spec)) = &function.over else {
        return None;
    };
    let name = function.name.to_string().to_ascii_lowercase();
    let FunctionArguments::List(list) = &function.args else {
        return None;
    };
    let windowed = WINDOW_PARSED.contains_key(&(name.as_str(), list.args.len()));
    let sliding = spec
        .window_frame
        .as_ref()
        .is_some_and(|frame| !matches!(frame.start_bound, WindowFrameBound::Preceding(None)));
    (windowed && sliding).then(|| {
        crate::error::Error::NotSupported(format!(
            "{name} over a window frame that does not start at the partition's first row"
        ))
    })
}

/// Aggregates spelled otherwise when they are window functions: DataFusion's window
/// functions take no ordering of their own arguments (`first_value(x ORDER BY y)`).
const WINDOW_SPELLINGS: &[(&str, usize, &str)] = &[
    (
        "max_by",
        2,
        "sqe_subscript(sqe_max_by_n($1, $2, 1), 1, 'element_at')",
    ),
    (
        "min_by",
        2,
        "sqe_subscript(sqe_min_by_n($1, $2, 1), 1, 'element_at')",
    ),
];

/// The aggregates the spellings of [`AGGREGATES`] call.
const SPELLING_AGGREGATES: &[&str] = &[
    "sqe_max_n",
    "sqe_min_n",
    "sqe_max_by_n",
    "sqe_min_by_n",
    "count",
    "first_value",
    "approx_distinct",
    "bool_and",
    "var_samp",
    "avg",
    "bit_and",
    "bit_or",
    "bit_xor",
];

/// Puts a call's `FILTER` (with the spelling's own, if any), `OVER` and `DISTINCT` on the
/// aggregate its spelling calls: the outermost aggregate call, not one in the arguments (a window function's
/// argument may be a group's aggregate: `count_if(avg(x) > 1) OVER ()`).
struct Qualify<'a> {
    filter: Option<&'a Expr>,
    over: Option<&'a datafusion::sql::sqlparser::ast::WindowType>,
    distinct: bool,
    /// For each expression being visited, whether it is the qualified call.
    entered: Vec<bool>,
}

impl<'a> Qualify<'a> {
    fn new(
        filter: Option<&'a Expr>,
        over: Option<&'a datafusion::sql::sqlparser::ast::WindowType>,
        distinct: bool,
    ) -> Self {
        Self {
            filter,
            over,
            distinct,
            entered: Vec::new(),
        }
    }
}

impl VisitorMut for Qualify<'_> {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let inside = self.entered.contains(&true);
        let qualified = match expr {
            Expr::Function(function) if !inside => {
                let name = function.name.to_string().to_ascii_lowercase();
                SPELLING_AGGREGATES.contains(&name.as_str())
            }
            _ => false,
        };
        if let (true, Expr::Function(function)) = (qualified, &mut *expr) {
            if let Some(filter) = self.filter {
                let filter = Expr::Nested(Box::new(filter.clone()));
                function.filter = Some(Box::new(match function.filter.take() {
                    Some(own) => Expr::BinaryOp {
                        left: Box::new(Expr::Nested(own)),
                        op: datafusion::sql::sqlparser::ast::BinaryOperator::And,
                        right: Box::new(filter),
                    },
                    None => filter,
                }));
            }
            if let Some(over) = self.over {
                function.over = Some(over.clone());
            }
            if let (true, FunctionArguments::List(list)) = (self.distinct, &mut function.args) {
                list.duplicate_treatment = Some(DuplicateTreatment::Distinct);
            }
        }
        self.entered.push(qualified);
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, _expr: &mut Expr) -> ControlFlow<()> {
        self.entered.pop();
        ControlFlow::Continue(())
    }
}

/// `LISTAGG(x [, separator] [ON OVERFLOW …]) WITHIN GROUP (ORDER BY …)` (Trino's separator is
/// `''` unless given) as DataFusion's `string_agg(x, separator ORDER BY …)` held to Trino's
/// limit on the output, or, `ON OVERFLOW TRUNCATE [filler] {WITH | WITHOUT} COUNT`, the
/// ordered values (`array_agg`) cut where the limit falls (`sqe_listagg_output`). `None` for
/// anything else.
pub(super) fn listagg(function: &Function) -> Option<Expr> {
    if !function.name.to_string().eq_ignore_ascii_case("listagg")
        || function.within_group.is_empty()
        || function.over.is_some()
        || function.null_treatment.is_some()
    {
        return None;
    }
    let FunctionArguments::List(list) = &function.args else {
        return None;
    };
    let overflow = match list.clauses.as_slice() {
        [] => None,
        [FunctionArgumentClause::OnOverflow(overflow)] => Some(overflow.clone()),
        _ => return None,
    };
    let mut args = list.args.clone();
    if args.len() == 1 {
        args.push(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(
            Value::SingleQuotedString(String::new()).into(),
        ))));
    }
    let [
        value,
        FunctionArg::Unnamed(FunctionArgExpr::Expr(separator)),
    ] = args.as_slice()
    else {
        return None;
    };
    let aggregate = |name: &str, args: Vec<FunctionArg>| {
        let mut list = list.clone();
        list.args = args;
        list.clauses = vec![FunctionArgumentClause::OrderBy(
            function.within_group.clone(),
        )];
        Expr::Function(Function {
            name: ObjectName::from(vec![Ident::new(name)]),
            args: FunctionArguments::List(list),
            within_group: Vec::new(),
            ..function.clone()
        })
    };
    match overflow {
        None | Some(ListAggOnOverflow::Error) => spelled(
            &format!("{}($1)", sqe_functions::LISTAGG_OUTPUT),
            &[aggregate("string_agg", args.clone())],
        ),
        Some(ListAggOnOverflow::Truncate { filler, with_count }) => {
            let filler = filler
                .map(|f| *f)
                .unwrap_or_else(|| Expr::Value(Value::SingleQuotedString("...".into()).into()));
            spelled(
                &format!("{}($1, $2, $3, $4)", sqe_functions::LISTAGG_OUTPUT),
                &[
                    aggregate("array_agg", vec![value.clone()]),
                    separator.clone(),
                    filler,
                    Expr::Value(Value::Boolean(with_count).into()),
                ],
            )
        }
    }
}

/// `normalize(s [, form])` as `sqe_normalize(s, 'FORM')`: Trino's form is a bare word (`NFD`,
/// read as a column otherwise), NFC unless given.
pub(super) fn normalize(function: &Function) -> Option<Expr> {
    if !function.name.to_string().eq_ignore_ascii_case("normalize") || function.over.is_some() {
        return None;
    }
    let FunctionArguments::List(list) = &function.args else {
        return None;
    };
    let args: Vec<&Expr> = list
        .args
        .iter()
        .map(|arg| match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let form = match args.as_slice() {
        [_] => "NFC".to_string(),
        [_, Expr::Identifier(form)] => form.value.clone(),
        _ => return None,
    };
    let form = Expr::Value(Value::SingleQuotedString(form).into());
    spelled("sqe_normalize($1, $2)", &[args[0].clone(), form])
}

/// `from_unixtime(x, hours, minutes)` with constant hours and minutes as
/// `from_unixtime(x, '+HH:MM')`: the offset is the answer's zone, so it must be known when
/// the statement is planned.
pub(super) fn from_unixtime_offset(function: &Function) -> Option<Expr> {
    if !function
        .name
        .to_string()
        .eq_ignore_ascii_case("from_unixtime")
    {
        return None;
    }
    let FunctionArguments::List(list) = &function.args else {
        return None;
    };
    let [seconds, hours, minutes] = list.args.as_slice() else {
        return None;
    };
    let constant = |arg: &FunctionArg| -> Option<i64> {
        let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = arg else {
            return None;
        };
        integer_literal(e)
    };
    let (hours, minutes) = (constant(hours)?, constant(minutes)?);
    let FunctionArg::Unnamed(FunctionArgExpr::Expr(seconds)) = seconds else {
        return None;
    };
    // Trino's offset is hours * 60 + minutes minutes east of UTC.
    let offset = hours.checked_mul(60)?.checked_add(minutes)?;
    let sign = if offset < 0 { '-' } else { '+' };
    let zone = format!("{sign}{:02}:{:02}", offset.abs() / 60, offset.abs() % 60);
    let zone = Expr::Value(Value::SingleQuotedString(zone).into());
    spelled("from_unixtime($1, $2)", &[seconds.clone(), zone])
}

/// The statement's clock as Trino reads it, of precision 3 unless given:
/// `current_timestamp[(p)]` and `now()` a `timestamp(p) with time zone` in the session's zone;
/// `localtimestamp[(p)]` and `localtime[(p)]` its wall clock there as a `timestamp(p)` /
/// `time(p)`; `current_time[(p)]` the same wall clock (Trino's is a `time(p) with time zone`,
/// a type SQE lacks).
pub(super) fn clock(function: &Function) -> Option<Expr> {
    let name = function.name.to_string().to_ascii_lowercase();
    let precision = match &function.args {
        FunctionArguments::None => 3,
        FunctionArguments::List(list) => match list.args.as_slice() {
            [] if name == "now" => 3,
            [FunctionArg::Unnamed(FunctionArgExpr::Expr(p))] if name != "now" => {
                integer_literal(p)?
            }
            _ => return None,
        },
        FunctionArguments::Subquery(_) => return None,
    };
    // Left as they are by this rewrite: DataFusion's own clock, to nanoseconds.
    let instant = "current_timestamp";
    let local = format!("CAST({instant} AS TIMESTAMP({precision}))");
    parse(&match name.as_str() {
        "current_timestamp" | "now" => {
            format!("CAST({instant} AS TIMESTAMP({precision}) WITH TIME ZONE)")
        }
        "localtimestamp" => local,
        "localtime" | "current_time" => format!("CAST({local} AS TIME({precision}))"),
        _ => return None,
    })
}

/// An integer literal, as the dialect has written it by now (`CAST(5 AS INTEGER)`, `-5`).
fn integer_literal(e: &Expr) -> Option<i64> {
    match e {
        Expr::Value(ValueWithSpan {
            value: Value::Number(n, _),
            ..
        }) => n.parse().ok(),
        Expr::Cast { expr, .. } => integer_literal(expr),
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => integer_literal(expr).and_then(i64::checked_neg),
        _ => None,
    }
}

/// `text` (DataFusion's SQL with `$n` for the n-th of `args`) as an expression.
pub(super) fn spelled(text: &str, args: &[Expr]) -> Option<Expr> {
    parse(text).map(|template| substituted(template, args))
}

fn parse(text: &str) -> Option<Expr> {
    Parser::new(&GenericDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .ok()
}

fn substituted(mut template: Expr, args: &[Expr]) -> Expr {
    let _ = template.visit(&mut Substitute { args });
    template
}

/// Replaces `$n` with the n-th argument.
struct Substitute<'a> {
    args: &'a [Expr],
}

impl VisitorMut for Substitute<'_> {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Value(ValueWithSpan {
            value: Value::Placeholder(p),
            ..
        }) = expr
            && let Some(arg) = p
                .strip_prefix('$')
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| self.args.get(n.wrapping_sub(1)))
        {
            *expr = arg.clone();
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_parses() {
        assert_eq!(PARSED.len(), SPELLINGS.len());
        assert_eq!(WINDOW_PARSED.len(), WINDOW_SPELLINGS.len());
    }

    /// A FILTER or OVER of an aggregate's call must find the aggregate its spelling calls.
    #[test]
    fn every_aggregate_spelling_calls_an_aggregate_to_qualify() {
        let filter = Expr::Identifier(Ident::new("keep"));
        let aggregates = SPELLINGS.iter().filter(|(n, _, _)| AGGREGATES.contains(n));
        for (name, _, text) in aggregates.chain(WINDOW_SPELLINGS) {
            let mut spelled = parse(text).expect("a spelling that parses");
            let _ = spelled.visit(&mut Qualify::new(Some(&filter), None, true));
            assert!(spelled.to_string().contains("(keep)"), "{name}: {spelled}");
            assert!(
                spelled.to_string().contains("(DISTINCT "),
                "{name}: {spelled}"
            );
        }
    }
}
