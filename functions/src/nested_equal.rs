//! `=` and `<>` of arrays, rows and maps as Trino answers them: a NULL anywhere inside that
//! decides nothing makes the answer NULL (`ARRAY[1, NULL] = ARRAY[1, NULL]` is NULL), a
//! difference anywhere makes it false (`ARRAY[1, NULL] = ARRAY[2, NULL]` is false), and
//! elements compare as their type's `=` does (a NaN equals nothing). Arrow's comparison took
//! NULL for equal to NULL (true) and NaN for equal to NaN. `contains` and `arrays_overlap`
//! compare elements alike: true when one matches, else NULL when a NULL could have, else false.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanBuilder};
use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::type_coercion::binary::comparison_coercion;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, result};

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct NestedEqual {
    signature: Signature,
}

impl NestedEqual {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for NestedEqual {
    fn name(&self) -> &str {
        "sqe_nested_equal"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [left, right] = arg_types else {
            return exec_err!("sqe_nested_equal compares two values");
        };
        match comparison_coercion(left, right) {
            Some(common) => Ok(vec![common.clone(), common]),
            None => Err(crate::args::unexpected_parameters("=", arg_types, "(T, T)")),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [left, right] = columns.as_slice() else {
            return exec_err!("sqe_nested_equal compares two values");
        };
        let mut out = BooleanBuilder::with_capacity(left.len());
        for row in 0..left.len() {
            out.append_option(equal(left, row, right, row)?);
        }
        result(&args, Arc::new(out.finish()))
    }
}

/// `contains(array, element)` (the dialect's `sqe_contains`) or `arrays_overlap(x, y)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Contains {
    signature: Signature,
    overlap: bool,
}

impl Contains {
    pub(crate) fn element() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
            overlap: false,
        }
    }

    pub(crate) fn arrays_overlap() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
            overlap: true,
        }
    }

    fn trino_name(&self) -> &'static str {
        if self.overlap {
            "arrays_overlap"
        } else {
            "contains"
        }
    }
}

/// The element type of an array type (`Null` for a NULL).
fn element_type(t: &DataType) -> Option<DataType> {
    match t {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            Some(f.data_type().clone())
        }
        DataType::Null => Some(DataType::Null),
        _ => None,
    }
}

fn list_of(element: DataType) -> DataType {
    DataType::List(Arc::new(
        datafusion::arrow::datatypes::Field::new_list_field(element, true),
    ))
}

impl ScalarUDFImpl for Contains {
    fn name(&self) -> &str {
        if self.overlap {
            "arrays_overlap"
        } else {
            "sqe_contains"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let refused = || {
            crate::args::unexpected_parameters(
                self.trino_name(),
                arg_types,
                if self.overlap {
                    "(array(T), array(T))"
                } else {
                    "(array(T), T)"
                },
            )
        };
        let [first, second] = arg_types else {
            return Err(refused());
        };
        let element = element_type(first).ok_or_else(refused)?;
        let other = if self.overlap {
            element_type(second).ok_or_else(refused)?
        } else {
            second.clone()
        };
        let common = comparison_coercion(&element, &other).ok_or_else(refused)?;
        let second = if self.overlap {
            list_of(common.clone())
        } else {
            common.clone()
        };
        Ok(vec![list_of(common), second])
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [first, second] = columns.as_slice() else {
            return exec_err!("{} takes two arguments", self.trino_name());
        };
        let mut out = BooleanBuilder::with_capacity(first.len());
        for row in 0..first.len() {
            if is_null(first, row) || is_null(second, row) {
                out.append_null();
                continue;
            }
            let values = first.as_list::<i32>().value(row);
            let (candidates, at): (ArrayRef, Vec<usize>) = if self.overlap {
                let other = second.as_list::<i32>().value(row);
                let n = other.len();
                (other, (0..n).collect())
            } else {
                (Arc::clone(second), vec![row])
            };
            let mut unknown = false;
            let mut found = false;
            'search: for k in 0..values.len() {
                for &c in &at {
                    match equal(&values, k, &candidates, c)? {
                        Some(true) => {
                            found = true;
                            break 'search;
                        }
                        None => unknown = true,
                        Some(false) => {}
                    }
                }
            }
            out.append_option(if found {
                Some(true)
            } else {
                (!unknown).then_some(false)
            });
        }
        result(&args, Arc::new(out.finish()))
    }
}

/// Whether `x[k]` is NULL: an array of NULLs alone (`ARRAY[NULL]`) has no null buffer, its
/// type says it.
fn is_null(x: &ArrayRef, k: usize) -> bool {
    x.data_type() == &DataType::Null || x.is_null(k)
}

/// `a[i] = b[j]` as Trino answers it: `None` where it is NULL.
fn equal(a: &ArrayRef, i: usize, b: &ArrayRef, j: usize) -> Result<Option<bool>> {
    if is_null(a, i) || is_null(b, j) {
        return Ok(None);
    }
    match (a.data_type(), b.data_type()) {
        (DataType::List(_), DataType::List(_)) => {
            let (x, y) = (a.as_list::<i32>().value(i), b.as_list::<i32>().value(j));
            all_equal(&x, &y)
        }
        (DataType::LargeList(_), DataType::LargeList(_)) => {
            let (x, y) = (a.as_list::<i64>().value(i), b.as_list::<i64>().value(j));
            all_equal(&x, &y)
        }
        (DataType::FixedSizeList(..), DataType::FixedSizeList(..)) => {
            let (x, y) = (
                a.as_fixed_size_list().value(i),
                b.as_fixed_size_list().value(j),
            );
            all_equal(&x, &y)
        }
        (DataType::Struct(_), DataType::Struct(_)) => {
            let (x, y) = (a.as_struct(), b.as_struct());
            if x.num_columns() != y.num_columns() {
                return Ok(Some(false));
            }
            all_of(
                x.columns()
                    .iter()
                    .zip(y.columns())
                    .map(|(cx, cy)| equal(cx, i, cy, j)),
            )
        }
        (DataType::Map(..), DataType::Map(..)) => map_equal(a, i, b, j),
        (DataType::Float64, DataType::Float64) => Ok(Some(
            a.as_primitive::<Float64Type>().value(i) == b.as_primitive::<Float64Type>().value(j),
        )),
        (DataType::Float32, DataType::Float32) => Ok(Some(
            a.as_primitive::<Float32Type>().value(i) == b.as_primitive::<Float32Type>().value(j),
        )),
        _ => Ok(Some(
            ScalarValue::try_from_array(a, i)? == ScalarValue::try_from_array(b, j)?,
        )),
    }
}

/// Trino's `AND` of the parts' equalities: false once one is false, else NULL if one is.
fn all_of(parts: impl Iterator<Item = Result<Option<bool>>>) -> Result<Option<bool>> {
    let mut unknown = false;
    for part in parts {
        match part? {
            Some(false) => return Ok(Some(false)),
            None => unknown = true,
            Some(true) => {}
        }
    }
    Ok((!unknown).then_some(true))
}

/// Element by element, of arrays of one length (of others: false).
fn all_equal(x: &ArrayRef, y: &ArrayRef) -> Result<Option<bool>> {
    if x.len() != y.len() {
        return Ok(Some(false));
    }
    all_of((0..x.len()).map(|k| equal(x, k, y, k)))
}

/// Maps: the same keys, and for each its values equal.
fn map_equal(a: &ArrayRef, i: usize, b: &ArrayRef, j: usize) -> Result<Option<bool>> {
    let (x, y) = (a.as_map().value(i), b.as_map().value(j));
    if x.len() != y.len() {
        return Ok(Some(false));
    }
    let (x_keys, x_values) = (x.column(0), x.column(1));
    let (y_keys, y_values) = (y.column(0), y.column(1));
    all_of((0..x.len()).map(|k| {
        for l in 0..y.len() {
            if equal(x_keys, k, y_keys, l)? == Some(true) {
                return equal(x_values, k, y_values, l);
            }
        }
        // A key the other map lacks.
        Ok(Some(false))
    }))
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int32Array, ListArray};
    use datafusion::arrow::datatypes::Int32Type;

    use super::*;

    fn list(rows: Vec<Option<Vec<Option<i32>>>>) -> ArrayRef {
        Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(rows))
    }

    #[test]
    fn a_null_inside_decides_nothing_and_a_difference_decides() -> Result<()> {
        let a = list(vec![
            Some(vec![Some(1), None]),
            Some(vec![Some(1), None]),
            Some(vec![Some(1), Some(2)]),
            Some(vec![Some(1)]),
            None,
        ]);
        let b = list(vec![
            Some(vec![Some(1), None]),
            Some(vec![Some(2), None]),
            Some(vec![Some(1), Some(2)]),
            Some(vec![Some(1), Some(2)]),
            Some(vec![]),
        ]);
        let answers: Vec<Option<bool>> =
            (0..5).map(|r| equal(&a, r, &b, r)).collect::<Result<_>>()?;
        assert_eq!(
            answers,
            vec![None, Some(false), Some(true), Some(false), None]
        );
        let nan =
            Arc::new(datafusion::arrow::array::Float64Array::from(vec![f64::NAN])) as ArrayRef;
        assert_eq!(equal(&nan, 0, &nan, 0)?, Some(false));
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![3]));
        assert_eq!(equal(&ints, 0, &ints, 0)?, Some(true));
        Ok(())
    }
}
