//! Trino's `map(keys, values)`: DataFusion's, with its arguments checked as Trino checks
//! them first, so that arrays of different lengths, a NULL key or a repeated key are the
//! caller's `INVALID_FUNCTION_ARGUMENT` (DataFusion's refusals are internal errors in words).

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};

use crate::error::invalid_argument;
use crate::identity::identity_key;

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct MapConstructor {
    inner: Arc<ScalarUDF>,
}

impl MapConstructor {
    pub(crate) fn new() -> Self {
        Self {
            inner: datafusion::functions_nested::map::map_udf(),
        }
    }
}

/// Row `row`'s entries of a list (or large or fixed-size list) array; `None` when NULL.
fn entries(lists: &ArrayRef, row: usize) -> Option<ArrayRef> {
    if lists.is_null(row) {
        return None;
    }
    match lists.data_type() {
        DataType::List(_) => Some(lists.as_list::<i32>().value(row)),
        DataType::LargeList(_) => Some(lists.as_list::<i64>().value(row)),
        DataType::FixedSizeList(..) => Some(lists.as_fixed_size_list().value(row)),
        _ => None,
    }
}

/// Refuses what Trino refuses of `map(keys, values)`.
fn check(keys: &ArrayRef, values: &ArrayRef) -> Result<()> {
    for row in 0..keys.len() {
        let (Some(keys), Some(values)) = (entries(keys, row), entries(values, row)) else {
            continue;
        };
        if keys.len() != values.len() {
            return Err(invalid_argument(
                "Key and value arrays must be the same length",
            ));
        }
        let mut seen = HashSet::with_capacity(keys.len());
        for i in 0..keys.len() {
            if keys.is_null(i) {
                return Err(invalid_argument("map key cannot be null"));
            }
            let key = ScalarValue::try_from_array(&keys, i)?;
            if !seen.insert(identity_key(&key)?) {
                return Err(invalid_argument(format!(
                    "Duplicate map keys ({key}) are not allowed"
                )));
            }
        }
    }
    Ok(())
}

impl ScalarUDFImpl for MapConstructor {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if let [keys, values] = args.args.as_slice() {
            // Constants are checked once, not once per row.
            let constant = matches!(
                (keys, values),
                (ColumnarValue::Scalar(_), ColumnarValue::Scalar(_))
            );
            let rows = if constant { 1 } else { args.number_rows };
            check(&keys.to_array(rows)?, &values.to_array(rows)?)?;
        }
        self.inner.invoke_with_args(args)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}
