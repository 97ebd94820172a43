//! `cosine_similarity(x, y)` as Trino's: of two sparse vectors, `map(varchar, double)` (the
//! dot product over the keys both have, divided by the product of each map's norm), or of two
//! arrays of doubles of one length (INVALID_FUNCTION_ARGUMENT otherwise). NULL when a vector
//! holds a NULL; NaN when a norm is 0, as Trino's division answers.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array, Float64Builder};
use datafusion::arrow::datatypes::{DataType, Field, Float64Type};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, is_string, result, unexpected_parameters};
use crate::error::invalid_argument;

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct CosineSimilarity {
    signature: Signature,
}

impl CosineSimilarity {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// `t` with its numbers as doubles: a map's values, an array's elements.
fn of_doubles(t: &DataType) -> Option<DataType> {
    match t {
        DataType::Map(entries, sorted) => {
            let DataType::Struct(fields) = entries.data_type() else {
                return None;
            };
            let [key, value] = fields.iter().collect::<Vec<_>>()[..] else {
                return None;
            };
            if !is_string(key.data_type()) || !value.data_type().is_numeric() {
                return None;
            }
            let fields = vec![
                Field::new(key.name(), DataType::Utf8, false),
                Field::new(value.name(), DataType::Float64, true),
            ];
            Some(DataType::Map(
                Arc::new(Field::new(
                    entries.name(),
                    DataType::Struct(fields.into()),
                    false,
                )),
                *sorted,
            ))
        }
        DataType::List(item) if item.data_type().is_numeric() => {
            Some(DataType::new_list(DataType::Float64, true))
        }
        _ => None,
    }
}

impl ScalarUDFImpl for CosineSimilarity {
    fn name(&self) -> &str {
        "cosine_similarity"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let expected =
            "(map(varchar, double), map(varchar, double)) or (array(double), array(double))";
        let refused = || unexpected_parameters(self.name(), arg_types, expected);
        let [left, right] = arg_types else {
            return Err(refused());
        };
        match (of_doubles(left), of_doubles(right)) {
            (Some(l @ DataType::Map(..)), Some(r @ DataType::Map(..))) => Ok(vec![l, r]),
            (Some(l @ DataType::List(_)), Some(r @ DataType::List(_))) => Ok(vec![l, r]),
            _ => Err(refused()),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [left, right] = columns.as_slice() else {
            return exec_err!("cosine_similarity takes two vectors");
        };
        let answers = match (left.data_type(), right.data_type()) {
            (DataType::Map(..), DataType::Map(..)) => of_maps(left, right)?,
            (DataType::List(_), DataType::List(_)) => of_arrays(left, right)?,
            (l, r) => return exec_err!("cosine_similarity of {l} and {r}"),
        };
        result(&args, Arc::new(answers))
    }
}

/// A vector's values, `None` when one is NULL.
fn values(array: &ArrayRef) -> Option<Vec<f64>> {
    let doubles: &Float64Array = array.as_primitive::<Float64Type>();
    (doubles.null_count() == 0).then(|| doubles.values().to_vec())
}

fn norm(values: &[f64]) -> f64 {
    values.iter().map(|v| v * v).sum::<f64>().sqrt()
}

/// The answer of each row: NULL where either vector is NULL.
fn per_row(
    left: &dyn Array,
    right: &dyn Array,
    mut answer: impl FnMut(usize) -> Result<Option<f64>>,
) -> Result<Float64Array> {
    let mut out = Float64Builder::with_capacity(left.len());
    for row in 0..left.len() {
        if left.is_null(row) || right.is_null(row) {
            out.append_null();
        } else {
            out.append_option(answer(row)?);
        }
    }
    Ok(out.finish())
}

fn of_maps(left: &ArrayRef, right: &ArrayRef) -> Result<Float64Array> {
    let (left, right) = (left.as_map(), right.as_map());
    per_row(left, right, |row| {
        let (l, r) = (left.value(row), right.value(row));
        let (Some(lv), Some(rv)) = (values(l.column(1)), values(r.column(1))) else {
            return Ok(None);
        };
        let lk = l.column(0).as_string::<i32>();
        let rk = r.column(0).as_string::<i32>();
        let by_key: HashMap<&str, f64> = (0..lk.len()).map(|i| (lk.value(i), lv[i])).collect();
        let dot: f64 = (0..rk.len())
            .filter_map(|i| by_key.get(rk.value(i)).map(|v| v * rv[i]))
            .sum();
        Ok(Some(dot / (norm(&lv) * norm(&rv))))
    })
}

fn of_arrays(left: &ArrayRef, right: &ArrayRef) -> Result<Float64Array> {
    let (left, right) = (left.as_list::<i32>(), right.as_list::<i32>());
    per_row(left, right, |row| {
        let (l, r) = (left.value(row), right.value(row));
        if l.len() != r.len() {
            return Err(invalid_argument(
                "Both array arguments need to have identical size",
            ));
        }
        let (Some(lv), Some(rv)) = (values(&l), values(&r)) else {
            return Ok(None);
        };
        let dot: f64 = lv.iter().zip(&rv).map(|(a, b)| a * b).sum();
        Ok(Some(dot / (norm(&lv) * norm(&rv))))
    })
}
