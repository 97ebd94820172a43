//! `length(varbinary)`: its bytes, as a `bigint` (DataFusion's `length` reads text only, and
//! read a varbinary cast to text: its code points, or an error for bytes that are not UTF-8).

use std::sync::Arc;

use datafusion::arrow::compute::{cast, kernels::length::length};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, result};

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct ByteLength {
    signature: Signature,
}

impl ByteLength {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ByteLength {
    fn name(&self) -> &str {
        "sqe_byte_length"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let Some(bytes) = columns.first() else {
            return exec_err!("sqe_byte_length takes a varbinary");
        };
        let lengths = cast(&length(bytes)?, &DataType::Int64)?;
        result(&args, Arc::new(lengths))
    }
}
