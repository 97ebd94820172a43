//! DataFusion's own functions, whose refusal of their arguments is words only and in Arrow's
//! type names (`Function 'upper' requires String, but received Int32 (DataType: Int32)`,
//! `Failed to coerce arguments to satisfy a call to 'ln' function: coercion from Utf8 …`),
//! wrapped so that the refusal is Trino's `Unexpected parameters (integer) for function
//! upper. Expected: upper(varchar)`, recorded for the engine as SQE's functions record theirs
//! ([`crate::args::unexpected_parameters`]). Every default function SQE does not replace is
//! wrapped ([`refusing_defaults`]); what it takes is written by hand for some, and read from its
//! signature (or its documentation's syntax) for the others. Nothing else changes: the
//! arguments are coerced as DataFusion's signature coerces them, and every other question is the
//! wrapped function's (each method of the trait is forwarded).

use std::sync::Arc;

use std::collections::HashSet;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::{ExprSchema, Result, ScalarValue};
use datafusion::logical_expr::interval_arithmetic::Interval;
use datafusion::logical_expr::preimage::PreimageResult;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::sort_properties::{ExprProperties, SortProperties};
use datafusion::logical_expr::type_coercion::functions::{UDFCoercionExt, fields_with_udf};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ExpressionPlacement, ReturnFieldArgs, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, StructFieldMapping,
};

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Refusing {
    inner: Arc<ScalarUDF>,
    signature: Signature,
    /// The arguments it takes, as Trino writes them after the name: `(varchar)`, or
    /// `(double), ln(real)` for several.
    expected: String,
}

impl Refusing {
    pub(crate) fn new(inner: Arc<ScalarUDF>, expected: impl Into<String>) -> Self {
        let signature = Signature::user_defined(inner.signature().volatility);
        Self {
            inner,
            signature,
            expected: expected.into(),
        }
    }

    /// `inner`, with what it takes read from its signature.
    fn of(inner: Arc<ScalarUDF>) -> Self {
        let expected = expected_of(&inner);
        Self::new(inner, expected)
    }
}

/// At most this many argument lists are listed after `Expected:`.
const LISTED: usize = 6;

/// What `function` takes, in Trino's type names: its signature's example argument types, or
/// else its documentation's syntax (`(array)`), or else `(...)`.
fn expected_of(function: &ScalarUDF) -> String {
    expected_from(
        function.name(),
        function.signature(),
        function.documentation(),
    )
}

/// What a function named `name` with `signature` and `documentation` takes (see
/// [`expected_of`]); for aggregates too.
pub(crate) fn expected_from(
    name: &str,
    signature: &Signature,
    documentation: Option<&Documentation>,
) -> String {
    let mut lists: Vec<String> = Vec::new();
    for types in signature.type_signature.get_example_types() {
        let list = format!("({})", crate::args::type_names(&types));
        if !lists.contains(&list) {
            lists.push(list);
        }
    }
    if lists.is_empty() {
        let syntax = documentation
            .map(|d| d.syntax_example.trim().to_string())
            .unwrap_or_default();
        return match syntax.find('(') {
            Some(open) if syntax.ends_with(')') => syntax[open..].to_string(),
            _ => "(...)".to_string(),
        };
    }
    let more = lists.len() > LISTED;
    lists.truncate(LISTED);
    let mut expected = lists.join(&format!(", {name}"));
    if more {
        expected.push_str(", …");
    }
    expected
}

/// `arg_types` as `function`'s own signature coerces them, or Trino's refusal of them naming
/// what it takes (`expected`); for scalar and aggregate functions alike.
pub(crate) fn coerced_or_refused<F: UDFCoercionExt>(
    function: &F,
    arg_types: &[DataType],
    expected: &str,
) -> Result<Vec<DataType>> {
    let fields: Vec<FieldRef> = arg_types
        .iter()
        .map(|t| Arc::new(Field::new(function.name(), t.clone(), true)))
        .collect();
    match fields_with_udf(&fields, function) {
        Ok(coerced) => Ok(coerced.iter().map(|f| f.data_type().clone()).collect()),
        Err(_) => Err(crate::args::unexpected_parameters(
            function.name(),
            arg_types,
            expected,
        )),
    }
}

#[warn(clippy::missing_trait_methods)] // Forwards, so it implements every method.
impl ScalarUDFImpl for Refusing {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        self.inner.inner().schema_name(args)
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerced_or_refused(self.inner.as_ref(), arg_types, &self.expected)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        self.inner.invoke_with_args(args)
    }

    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        self.inner.simplify(args, info)
    }

    fn short_circuits(&self) -> bool {
        self.inner.short_circuits()
    }

    fn evaluate_bounds(&self, input: &[&Interval]) -> Result<Interval> {
        self.inner.evaluate_bounds(input)
    }

    fn propagate_constraints(
        &self,
        interval: &Interval,
        inputs: &[&Interval],
    ) -> Result<Option<Vec<Interval>>> {
        self.inner.propagate_constraints(interval, inputs)
    }

    fn output_ordering(&self, inputs: &[ExprProperties]) -> Result<SortProperties> {
        self.inner.output_ordering(inputs)
    }

    fn preserves_lex_ordering(&self, inputs: &[ExprProperties]) -> Result<bool> {
        self.inner.preserves_lex_ordering(inputs)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }

    fn display_name(&self, args: &[Expr]) -> Result<String> {
        #[expect(deprecated)]
        self.inner.inner().display_name(args)
    }

    fn is_nullable(&self, args: &[Expr], schema: &dyn ExprSchema) -> bool {
        #[expect(deprecated)]
        self.inner.inner().is_nullable(args, schema)
    }

    fn with_updated_config(&self, config: &ConfigOptions) -> Option<ScalarUDF> {
        // A function that reads the session (its time zone) is made anew for it: wrapped again.
        let updated = self.inner.inner().with_updated_config(config)?;
        Some(ScalarUDF::new_from_impl(Self::new(
            Arc::new(updated),
            self.expected.clone(),
        )))
    }

    fn preimage(
        &self,
        args: &[Expr],
        lit_expr: &Expr,
        info: &SimplifyContext,
    ) -> Result<PreimageResult> {
        self.inner.inner().preimage(args, lit_expr, info)
    }

    fn conditional_arguments<'a>(
        &self,
        args: &'a [Expr],
    ) -> Option<(Vec<&'a Expr>, Vec<&'a Expr>)> {
        self.inner.inner().conditional_arguments(args)
    }

    fn struct_field_mapping(
        &self,
        literal_args: &[Option<ScalarValue>],
    ) -> Option<StructFieldMapping> {
        self.inner.inner().struct_field_mapping(literal_args)
    }

    fn placement(&self, args: &[ExpressionPlacement]) -> ExpressionPlacement {
        self.inner.inner().placement(args)
    }
}

/// DataFusion's functions left as they are: those that build or read SQE's own values and
/// rewrites (rows, arrays, casts), and those DataFusion's SQL planner builds itself for syntax
/// (`EXTRACT` is `date_part`, `POSITION` `strpos`, `a || b` of arrays `array_concat`, `a[i]`
/// `array_element`): a call of the same function by name must stay equal to those (`SELECT
/// year(d) … GROUP BY extract(year FROM d)`).
const UNWRAPPED: &[&str] = &[
    "get_field",
    "named_struct",
    "struct",
    "make_array",
    "arrow_cast",
    "arrow_typeof",
    "date_part",
    "strpos",
    "overlay",
    "array_element",
    "array_has",
    "array_has_all",
    "array_has_any",
    "array_concat",
    "array_append",
    "array_prepend",
    "map",
];

/// Every default scalar function of DataFusion that SQE does not replace (by name or alias:
/// `replaced`), refusing arguments in Trino's words; those of [`refusing_functions`] with
/// what they take written by hand.
pub(crate) fn refusing_defaults(replaced: &HashSet<String>) -> Vec<Refusing> {
    let by_hand = refusing_functions();
    let mut wrapped: Vec<Refusing> = datafusion::functions::all_default_functions()
        .into_iter()
        .chain(datafusion::functions_nested::all_default_nested_functions())
        .filter(|f| {
            // One that reads the session's settings (`now`'s zone) is made anew for each
            // session from DataFusion's own: left as it is.
            f.inner()
                .with_updated_config(&ConfigOptions::default())
                .is_none()
                && !UNWRAPPED.contains(&f.name())
                && !replaced.contains(f.name())
                && !by_hand.iter().any(|r| r.name() == f.name())
        })
        .map(Refusing::of)
        .collect();
    wrapped.extend(by_hand.into_iter().filter(|r| !replaced.contains(r.name())));
    wrapped
}

/// DataFusion's functions whose arguments are written here by hand, as Trino writes them.
fn refusing_functions() -> Vec<Refusing> {
    use datafusion::functions::{math, string, unicode};
    vec![
        Refusing::new(string::upper(), "(varchar)"),
        Refusing::new(string::lower(), "(varchar)"),
        Refusing::new(string::btrim(), "(varchar [, varchar])"),
        Refusing::new(string::ltrim(), "(varchar [, varchar])"),
        Refusing::new(string::rtrim(), "(varchar [, varchar])"),
        Refusing::new(string::starts_with(), "(varchar, varchar)"),
        Refusing::new(string::ends_with(), "(varchar, varchar)"),
        Refusing::new(unicode::character_length(), "(varchar)"),
        Refusing::new(math::abs(), "(a number)"),
        Refusing::new(math::sqrt(), "(double)"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrapped(name: &str) -> Refusing {
        let mut all = refusing_defaults(&HashSet::from(["upper".to_string()]));
        match all.iter().position(|f| f.name() == name) {
            Some(at) => all.swap_remove(at),
            None => panic!("{name} is not wrapped"),
        }
    }

    #[test]
    fn a_default_refuses_in_trinos_words_and_coerces_as_before() -> Result<()> {
        let ln = wrapped("ln");
        let refused = ln
            .coerce_types(&[DataType::Utf8])
            .map(|_| ())
            .map_err(|e| e.to_string());
        assert_eq!(
            refused,
            Err(
                "Error during planning: Unexpected parameters (varchar) for function ln. \
                 Expected: ln(double), ln(real)"
                    .to_string()
            )
        );
        assert_eq!(
            ln.coerce_types(&[DataType::Int32])?,
            vec![DataType::Float64]
        );
        // Written by hand where Trino's list is shorter than the signature's.
        assert_eq!(wrapped("lower").expected, "(varchar)");
        Ok(())
    }

    #[test]
    fn functions_sqe_replaces_or_that_read_the_session_are_left_alone() {
        let all = refusing_defaults(&HashSet::from(["upper".to_string()]));
        let names: Vec<&str> = all.iter().map(|f| f.name()).collect();
        for left in [
            "upper",
            "now",
            "to_timestamp",
            "get_field",
            "make_array",
            "date_part",
        ] {
            assert!(!names.contains(&left), "{left} is wrapped");
        }
        assert!(names.contains(&"power") && names.contains(&"array_max"));
    }
}
