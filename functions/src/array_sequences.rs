//! Trino's `contains_sequence(x, seq)`: whether `seq`'s elements appear in `x` one after the
//! other, compared by identity (NULL matches NULL), as Trino compares them; an empty `seq` is
//! in every array. DataFusion has no such function.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanBuilder, ListArray};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::type_coercion::binary::comparison_coercion;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, result, unexpected_parameters};

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct ContainsSequence {
    signature: Signature,
}

impl ContainsSequence {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

fn element(t: &DataType) -> Option<DataType> {
    match t {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            Some(f.data_type().clone())
        }
        DataType::Null => Some(DataType::Null),
        _ => None,
    }
}

impl ScalarUDFImpl for ContainsSequence {
    fn name(&self) -> &str {
        "contains_sequence"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let common = match arg_types {
            [x, seq] => match (element(x), element(seq)) {
                (Some(a), Some(b)) if a == b => Some(a),
                (Some(DataType::Null), Some(t)) | (Some(t), Some(DataType::Null)) => Some(t),
                (Some(a), Some(b)) => comparison_coercion(&a, &b),
                _ => None,
            },
            _ => None,
        };
        match common {
            Some(t) => {
                let list = DataType::List(Arc::new(Field::new("item", t, true)));
                Ok(vec![list.clone(), list])
            }
            None => Err(unexpected_parameters(
                self.name(),
                arg_types,
                "(array(T), array(T))",
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [x, seq] = columns.as_slice() else {
            return exec_err!("contains_sequence takes two arrays");
        };
        let answer: ArrayRef = Arc::new(contains_sequence(x, seq)?);
        result(&args, answer)
    }
}

fn contains_sequence(
    x: &ArrayRef,
    seq: &ArrayRef,
) -> Result<datafusion::arrow::array::BooleanArray> {
    let (Some(x), Some(seq)) = (x.as_list_opt::<i32>(), seq.as_list_opt::<i32>()) else {
        return exec_err!("contains_sequence takes two arrays");
    };
    // Both arrays' elements as comparable rows, NULLs alike.
    let converter = RowConverter::new(vec![SortField::new(x.values().data_type().clone())])?;
    let haystack = converter.convert_columns(&[Arc::clone(x.values())])?;
    let needles = converter.convert_columns(&[Arc::clone(seq.values())])?;
    let mut out = BooleanBuilder::with_capacity(x.len());
    for row in 0..x.len() {
        if x.is_null(row) || seq.is_null(row) {
            out.append_null();
            continue;
        }
        let (from, to) = bounds(x, row);
        let (sfrom, sto) = bounds(seq, row);
        let wanted = sto - sfrom;
        let found = wanted == 0
            || (from..to).any(|start| {
                start + wanted <= to
                    && (0..wanted).all(|k| haystack.row(start + k) == needles.row(sfrom + k))
            });
        out.append_value(found);
    }
    Ok(out.finish())
}

fn bounds(list: &ListArray, row: usize) -> (usize, usize) {
    let offsets = list.value_offsets();
    (offsets[row] as usize, offsets[row + 1] as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::Int32Type;

    fn ints(rows: Vec<Option<Vec<Option<i32>>>>) -> ArrayRef {
        Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(rows))
    }

    /// Trino's TestArrayContainsSequence.
    #[test]
    fn a_run_of_elements_nulls_matching_nulls() -> Result<()> {
        let one_to_six = || Some((1..=6).map(Some).collect::<Vec<_>>());
        let x = ints(vec![
            Some(vec![
                Some(1),
                Some(2),
                Some(3),
                None,
                Some(4),
                Some(5),
                Some(6),
            ]),
            one_to_six(),
            one_to_six(),
            one_to_six(),
            None,
        ]);
        let seq = ints(vec![
            Some(vec![Some(3), None, Some(4)]),
            Some(vec![Some(1), Some(2), Some(4)]),
            Some(vec![]),
            Some(vec![Some(5), Some(6), Some(7)]),
            Some(vec![Some(1)]),
        ]);
        let found = contains_sequence(&x, &seq)?;
        assert_eq!(
            found.iter().collect::<Vec<_>>(),
            [Some(true), Some(false), Some(true), Some(false), None]
        );
        Ok(())
    }
}
