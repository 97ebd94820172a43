//! Trino's session functions (`version()`, `current_user`, `current_catalog`,
//! `current_schema`, `current_timezone()`), the constants clients use in parameters
//! (`infinity()`, `nan()`) and `typeof(x)`. Each is a constant for the statement, folded away
//! while planning (`typeof` by the dialect's rewrite, which sees the argument's Trino type),
//! so workers never need them.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// A function of no arguments with one value for the whole statement.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Constant {
    name: &'static str,
    value: ScalarValueKey,
    signature: Signature,
}

/// The value, in a form that is `Eq + Hash` (floats are compared by bits).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum ScalarValueKey {
    Text(Option<String>),
    Double(u64),
}

impl ScalarValueKey {
    fn scalar(&self) -> ScalarValue {
        match self {
            ScalarValueKey::Text(text) => ScalarValue::Utf8(text.clone()),
            ScalarValueKey::Double(bits) => ScalarValue::Float64(Some(f64::from_bits(*bits))),
        }
    }
}

impl ScalarUDFImpl for Constant {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.value.scalar().data_type())
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(ColumnarValue::Scalar(self.value.scalar()))
    }
}

fn constant(name: &'static str, value: ScalarValueKey, volatility: Volatility) -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(Constant {
        name,
        value,
        signature: Signature::nullary(volatility),
    }))
}

/// `typeof(x)`: the name of x's Trino type.
#[derive(Debug, PartialEq, Eq, Hash)]
struct TypeOf {
    signature: Signature,
}

impl ScalarUDFImpl for TypeOf {
    fn name(&self) -> &str {
        "typeof"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = args
            .arg_fields
            .first()
            .map(|f| super::types::TrinoType::from_field(f).client_name());
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(name)))
    }
}

/// What the session functions return for one statement.
#[derive(Debug, Clone, Default)]
pub struct SessionContext {
    pub user: String,
    pub catalog: Option<String>,
    pub schema: Option<String>,
    pub time_zone: String,
}

/// The functions to register in a statement's session.
pub fn session_functions(context: &SessionContext) -> Vec<Arc<ScalarUDF>> {
    let text = |v: Option<&str>| ScalarValueKey::Text(v.map(str::to_string));
    vec![
        constant(
            "version",
            text(Some(env!("CARGO_PKG_VERSION"))),
            Volatility::Immutable,
        ),
        constant(
            "current_user",
            text(Some(&context.user)),
            Volatility::Stable,
        ),
        constant(
            "current_catalog",
            text(context.catalog.as_deref()),
            Volatility::Stable,
        ),
        constant(
            "current_schema",
            text(context.schema.as_deref()),
            Volatility::Stable,
        ),
        constant(
            "current_timezone",
            text(Some(&context.time_zone)),
            Volatility::Stable,
        ),
        constant(
            "infinity",
            ScalarValueKey::Double(f64::INFINITY.to_bits()),
            Volatility::Immutable,
        ),
        constant(
            "nan",
            ScalarValueKey::Double(f64::NAN.to_bits()),
            Volatility::Immutable,
        ),
        Arc::new(ScalarUDF::new_from_impl(TypeOf {
            signature: Signature::any(1, Volatility::Immutable),
        })),
        sqe_functions::from_unixtime_function(&context.time_zone),
        sqe_functions::from_iso8601_timestamp_function(&context.time_zone),
        sqe_functions::parse_datetime_function(&context.time_zone),
        sqe_functions::from_unixtime_nanos_function(&context.time_zone),
        sqe_functions::at_timezone_function(&context.time_zone),
        sqe_functions::with_timezone_function(&context.time_zone),
    ]
}
