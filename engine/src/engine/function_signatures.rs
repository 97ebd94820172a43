//! The argument and return types `SHOW FUNCTIONS` lists. DataFusion's signatures are mostly
//! rules (a coercion, "any numeric"), not lists, so each function is asked which calls of
//! Trino's scalar types it takes as they are (the check planning makes) and what such a call
//! returns; each answer is one row, as Trino lists one row per signature. Precisions are
//! written as parameters (`decimal(p,s)`, `timestamp(p)`): a call's precision follows its
//! argument's; a function that takes every call of a number of arguments is listed with type
//! variables (`count(T)`). Functions of arrays, maps, rows or lambdas are not asked (their
//! types are generic); they list no types.

use std::collections::{BTreeSet, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef, IntervalUnit, TimeUnit};
use datafusion::logical_expr::function::WindowUDFFieldArgs;
use datafusion::logical_expr::type_coercion::functions::fields_with_udf;
use datafusion::logical_expr::{
    AggregateUDF, Documentation, ReturnFieldArgs, ScalarUDF, Signature, WindowUDF,
};
use sqe_functions::types::trino_type_name;

/// One signature: its number of arguments, their types (comma-separated) and the return type.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Listed {
    pub arity: usize,
    pub arguments: String,
    pub returns: String,
}

/// A function of the session's registry.
#[derive(Clone, Copy)]
pub(super) enum Function<'a> {
    Scalar(&'a ScalarUDF),
    Aggregate(&'a AggregateUDF),
    Window(&'a WindowUDF),
}

/// Functions are the same in every session of a process: each is asked once.
type Asked = HashMap<(&'static str, String), Arc<Vec<Listed>>>;
static ASKED: LazyLock<Mutex<Asked>> = LazyLock::new(Mutex::default);

/// The signatures `function` takes, in Trino's type names; empty when it takes none of the
/// types asked about.
pub(super) fn signatures(function: Function<'_>) -> Arc<Vec<Listed>> {
    let key = (function.kind(), function.name().to_string());
    if let Some(known) = ASKED.lock().get(&key) {
        return Arc::clone(known);
    }
    let found = Arc::new(ask(function));
    ASKED.lock().insert(key, Arc::clone(&found));
    found
}

impl<'a> Function<'a> {
    /// As `SHOW FUNCTIONS` names the kind.
    pub(super) fn kind(self) -> &'static str {
        match self {
            Function::Scalar(_) => "scalar",
            Function::Aggregate(_) => "aggregate",
            Function::Window(_) => "window",
        }
    }

    fn name(self) -> &'a str {
        match self {
            Function::Scalar(f) => f.name(),
            Function::Aggregate(f) => f.name(),
            Function::Window(f) => f.name(),
        }
    }

    pub(super) fn signature(self) -> &'a Signature {
        match self {
            Function::Scalar(f) => f.signature(),
            Function::Aggregate(f) => f.signature(),
            Function::Window(f) => f.signature(),
        }
    }

    pub(super) fn documentation(self) -> Option<&'a Documentation> {
        match self {
            Function::Scalar(f) => f.documentation(),
            Function::Aggregate(f) => f.documentation(),
            Function::Window(f) => f.documentation(),
        }
    }

    /// Whether a call of `args` is taken as it is, and its return type if so.
    fn returns(self, args: &[DataType]) -> Option<DataType> {
        let fields: Vec<FieldRef> = args
            .iter()
            .enumerate()
            .map(|(i, t)| Arc::new(Field::new(format!("arg_{i}"), t.clone(), true)))
            .collect();
        // A signature check or return type that panics on a call it did not expect is a
        // call not taken.
        catch_unwind(AssertUnwindSafe(|| {
            let coerced = match self {
                Function::Scalar(f) => fields_with_udf(&fields, f),
                Function::Aggregate(f) => fields_with_udf(&fields, f),
                Function::Window(f) => fields_with_udf(&fields, f),
            };
            if !coerced.is_ok_and(|c| c.iter().map(|f| f.data_type()).eq(args.iter())) {
                return None;
            }
            let returned = match self {
                Function::Scalar(f) => f.return_field_from_args(ReturnFieldArgs {
                    arg_fields: &fields,
                    scalar_arguments: &vec![None; fields.len()],
                }),
                Function::Aggregate(f) => f.return_field(&fields),
                Function::Window(f) => f.field(WindowUDFFieldArgs::new(&fields, f.name())),
            };
            Some(returned.ok()?.data_type().clone())
        }))
        .ok()
        .flatten()
    }
}

/// Trino's scalar types as SQE holds them.
fn types() -> Vec<DataType> {
    vec![
        DataType::Boolean,
        DataType::Int8,
        DataType::Int16,
        DataType::Int32,
        DataType::Int64,
        DataType::Float32,
        DataType::Float64,
        DataType::Decimal128(38, 2),
        DataType::Utf8,
        DataType::Binary,
        DataType::Date32,
        DataType::Time64(TimeUnit::Microsecond),
        DataType::Timestamp(TimeUnit::Microsecond, None),
        DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        DataType::Interval(IntervalUnit::MonthDayNano),
        DataType::Interval(IntervalUnit::YearMonth),
    ]
}

/// The types three-argument calls are asked with (all of them would be 4,096 calls).
fn three_argument_types() -> Vec<DataType> {
    vec![
        DataType::Int64,
        DataType::Float64,
        DataType::Utf8,
        DataType::Date32,
        DataType::Timestamp(TimeUnit::Microsecond, None),
    ]
}

fn ask(function: Function<'_>) -> Vec<Listed> {
    let all = types();
    let mut calls: Vec<Vec<DataType>> = vec![vec![]];
    calls.extend(all.iter().map(|t| vec![t.clone()]));
    for a in &all {
        calls.extend(all.iter().map(|b| vec![a.clone(), b.clone()]));
    }
    let three = three_argument_types();
    for a in &three {
        for b in &three {
            calls.extend(three.iter().map(|c| vec![a.clone(), b.clone(), c.clone()]));
        }
    }
    let mut asked = [0usize; 4];
    let mut answered: Vec<(Vec<DataType>, DataType)> = Vec::new();
    for args in calls {
        asked[args.len()] += 1;
        if let Some(returns) = function.returns(&args) {
            answered.push((args, returns));
        }
    }
    let mut listed = BTreeSet::new();
    for (arity, asked) in asked.into_iter().enumerate() {
        let calls: Vec<&(Vec<DataType>, DataType)> =
            answered.iter().filter(|(a, _)| a.len() == arity).collect();
        listed.extend(generic(arity, asked, &calls).unwrap_or_else(|| {
            calls
                .iter()
                .map(|(args, returns)| Listed {
                    arity,
                    arguments: args.iter().map(type_name).collect::<Vec<_>>().join(", "),
                    returns: type_name(returns),
                })
                .collect()
        }));
    }
    listed.into_iter().collect()
}

/// A function that takes every call of `arity` asked about is listed with type variables, as
/// Trino lists `count(T)`: one row instead of hundreds, when its return type is one type, or
/// its first argument's.
fn generic(
    arity: usize,
    asked: usize,
    calls: &[&(Vec<DataType>, DataType)],
) -> Option<Vec<Listed>> {
    if arity == 0 || calls.len() != asked {
        return None;
    }
    let variables: Vec<String> = match arity {
        1 => vec!["T".into()],
        n => (1..=n).map(|i| format!("T{i}")).collect(),
    };
    let arguments = variables.join(", ");
    let first = &calls.first()?.1;
    let returns = if calls.iter().all(|(_, r)| r == first) {
        type_name(first)
    } else if calls.iter().all(|(args, r)| args.first() == Some(r)) {
        variables[0].clone()
    } else {
        return None;
    };
    Some(vec![Listed {
        arity,
        arguments,
        returns,
    }])
}

/// Trino's name of a type, precisions as parameters.
fn type_name(data_type: &DataType) -> String {
    match data_type {
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => "decimal(p,s)".into(),
        DataType::Time32(_) | DataType::Time64(_) => "time(p)".into(),
        DataType::Timestamp(_, None) => "timestamp(p)".into(),
        DataType::Timestamp(_, Some(_)) => "timestamp(p) with time zone".into(),
        other => trino_type_name(other),
    }
}

#[cfg(test)]
mod tests {
    use datafusion::execution::SessionStateBuilder;

    use super::*;

    fn has(listed: &[Listed], arguments: &str, returns: &str) -> bool {
        listed
            .iter()
            .any(|l| l.arguments == arguments && l.returns == returns)
    }

    fn scalar(name: &str) -> Arc<Vec<Listed>> {
        let state = SessionStateBuilder::new().with_default_features().build();
        let function = state.scalar_functions().get(name).cloned().expect(name);
        signatures(Function::Scalar(&function))
    }

    #[test]
    fn lists_each_type_a_function_takes_with_what_it_returns() {
        let abs = scalar("abs");
        for (arguments, returns) in [
            ("bigint", "bigint"),
            ("double", "double"),
            ("integer", "integer"),
            ("decimal(p,s)", "decimal(p,s)"),
        ] {
            assert!(has(&abs, arguments, returns), "{abs:?}");
        }
        assert!(!abs.iter().any(|l| l.arguments == "varchar"), "{abs:?}");
    }

    #[test]
    fn lists_calls_of_several_arguments() {
        let listed = scalar("starts_with");
        assert!(has(&listed, "varchar, varchar", "boolean"), "{listed:?}");
    }

    #[test]
    fn aggregates_and_windows_are_asked_too() {
        let state = SessionStateBuilder::new().with_default_features().build();
        let sum = state
            .aggregate_functions()
            .get("sum")
            .cloned()
            .expect("sum");
        let listed = signatures(Function::Aggregate(&sum));
        assert!(has(&listed, "bigint", "bigint"), "{listed:?}");
        let rank = state.window_functions().get("rank").cloned().expect("rank");
        let listed = signatures(Function::Window(&rank));
        assert!(listed.iter().any(|l| l.arity == 0), "{listed:?}");
        // Any argument at all: one row with a type variable, as Trino lists `count(T)`.
        let count = state
            .aggregate_functions()
            .get("count")
            .cloned()
            .expect("count");
        let listed = signatures(Function::Aggregate(&count));
        assert!(has(&listed, "T", "bigint"), "{listed:?}");
        assert!(!has(&listed, "varchar", "bigint"), "{listed:?}");
    }
}
