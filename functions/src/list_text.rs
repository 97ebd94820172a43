//! An array of real numbers or timestamps as the array of their text as Trino writes it, for
//! `array_join` (DataFusion's `array_to_string`, which wrote `1` for `1.0E0`'s `1.0` and
//! ISO's `2020-01-01T10:00:00.500` for Trino's `2020-01-01 10:00:00.500`).

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, ListArray};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, result, strings};

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct ListText {
    signature: Signature,
}

impl ListText {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

fn text_list() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true)))
}

impl ScalarUDFImpl for ListText {
    fn name(&self) -> &str {
        "sqe_list_text"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(text_list())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let Some(list) = columns.first() else {
            return exec_err!("sqe_list_text takes an array");
        };
        let DataType::List(_) = list.data_type() else {
            return exec_err!("sqe_list_text takes an array, not {}", list.data_type());
        };
        let list = list.as_list::<i32>();
        let text = strings(list.values())?;
        let (_, offsets, _, nulls) = list.clone().into_parts();
        let field = Arc::new(Field::new_list_field(DataType::Utf8, true));
        result(
            &args,
            Arc::new(ListArray::try_new(field, offsets, text, nulls)?),
        )
    }
}
