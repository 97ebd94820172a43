//! DataFusion's own functions whose refusal of their arguments is words only (`Function
//! 'upper' requires String, but received Int32 (DataType: Int32)`), wrapped so that the
//! refusal is Trino's `Unexpected parameters (integer) for function upper`, recorded for the
//! engine as SQE's functions record theirs ([`crate::args::unexpected_parameters`]). Nothing
//! else changes: the arguments are coerced as DataFusion's signature coerces them, and every
//! other question is the wrapped function's.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::Result;
use datafusion::logical_expr::interval_arithmetic::Interval;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::sort_properties::{ExprProperties, SortProperties};
use datafusion::logical_expr::type_coercion::functions::fields_with_udf;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature,
};

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Refusing {
    inner: Arc<ScalarUDF>,
    signature: Signature,
    /// The arguments it takes, as Trino writes them: `(varchar)`.
    expected: &'static str,
}

impl Refusing {
    pub(crate) fn new(inner: Arc<ScalarUDF>, expected: &'static str) -> Self {
        let signature = Signature::user_defined(inner.signature().volatility);
        Self {
            inner,
            signature,
            expected,
        }
    }
}

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
        let fields: Vec<FieldRef> = arg_types
            .iter()
            .map(|t| Arc::new(Field::new(self.name(), t.clone(), true)))
            .collect();
        match fields_with_udf(&fields, self.inner.as_ref()) {
            Ok(coerced) => Ok(coerced.iter().map(|f| f.data_type().clone()).collect()),
            Err(_) => Err(crate::args::unexpected_parameters(
                self.name(),
                arg_types,
                self.expected,
            )),
        }
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
}

/// DataFusion's functions that refuse in Trino's words here, with what they take.
pub(crate) fn refusing_functions() -> Vec<Refusing> {
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
