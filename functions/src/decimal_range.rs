//! A decimal sum or difference whose type is capped at 38 digits, checked against them: Trino
//! refuses a result past its type (NUMERIC_VALUE_OUT_OF_RANGE, "Decimal overflow"), where
//! Arrow's addition only fails past i128 and answered `10^38` for `DECIMAL '99…9' + 1` (38
//! nines), a value its type `decimal(38,0)` cannot hold. The dialect calls it only where the
//! operands' digits could need more than 38 (below that the type always holds the result).

use std::sync::Arc;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::{DataType, Decimal128Type};
use datafusion::arrow::error::ArrowError;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, result};

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct DecimalInRange {
    signature: Signature,
}

impl DecimalInRange {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for DecimalInRange {
    fn name(&self) -> &str {
        "sqe_decimal_in_range"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [t @ DataType::Decimal128(..)] => Ok(t.clone()),
            _ => exec_err!("sqe_decimal_in_range takes a decimal"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let Some(values) = columns.first() else {
            return exec_err!("sqe_decimal_in_range takes a decimal");
        };
        let DataType::Decimal128(precision, _) = values.data_type() else {
            return exec_err!("sqe_decimal_in_range takes a decimal");
        };
        let decimals = values.as_primitive::<Decimal128Type>();
        if decimals.validate_decimal_precision(*precision).is_err() {
            return Err(ArrowError::ArithmeticOverflow("Decimal overflow".into()).into());
        }
        result(&args, Arc::clone(values))
    }
}
