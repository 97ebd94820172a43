//! `slice`, `ngrams` and `cardinality`, which DataFusion spells differently, answers
//! differently or lacks, with Trino's bounds and refusals (`sequence` is `sequences`).

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Int64Array, ListArray, MutableArrayData, make_array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, is_integer, longs, result};
use crate::error::invalid_argument;

/// `slice(array, start, length)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Slice {
    signature: Signature,
}

impl Slice {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// The element range `[from, to)` (0-based) of an array of `size` that `slice` takes: from
/// `start` (1-based, negative from the end) for `length` elements.
fn slice_range(size: i64, start: i64, length: i64) -> Result<(i64, i64)> {
    if length < 0 {
        return Err(invalid_argument(
            "length must be greater than or equal to 0",
        ));
    }
    if start == 0 {
        return Err(invalid_argument("SQL array indices start at 1"));
    }
    let from = if start < 0 { size + start + 1 } else { start };
    let to = from.saturating_add(length).min(size + 1);
    if from < 1 || from >= to {
        return Ok((0, 0));
    }
    Ok((from - 1, to - 1))
}

impl ScalarUDFImpl for Slice {
    fn name(&self) -> &str {
        "slice"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [list @ DataType::List(_), s, l] if is_integer(s) && is_integer(l) => {
                Ok(vec![list.clone(), DataType::Int64, DataType::Int64])
            }
            [DataType::Null, s, l] if is_integer(s) && is_integer(l) => Ok(vec![
                DataType::List(Arc::new(Field::new("item", DataType::Null, true))),
                DataType::Int64,
                DataType::Int64,
            ]),
            _ => Err(crate::args::unexpected_parameters(
                "slice",
                arg_types,
                "(array(T), bigint, bigint)",
            )),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(list) => Ok(list.clone()),
            None => plan_err!("slice takes an array"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [list, start, length] = columns.as_slice() else {
            return exec_err!("slice takes 3 arguments");
        };
        let (start, length) = (longs(start)?, longs(length)?);
        let Some(list) = list.as_list_opt::<i32>() else {
            return exec_err!("slice takes an array, not {}", list.data_type());
        };
        let values = list.values().to_data();
        let mut taken = MutableArrayData::new(vec![&values], true, values.len());
        let mut offsets = Vec::with_capacity(list.len() + 1);
        offsets.push(0i32);
        let mut nulls = Vec::with_capacity(list.len());
        for i in 0..list.len() {
            let valid = !(list.is_null(i) || start.is_null(i) || length.is_null(i));
            if valid {
                let (begin, end) = (list.value_offsets()[i], list.value_offsets()[i + 1]);
                let (from, to) =
                    slice_range(i64::from(end - begin), start.value(i), length.value(i))?;
                let (from, to) = (usize::try_from(from), usize::try_from(to));
                let (Ok(from), Ok(to)) = (from, to) else {
                    return exec_err!("slice bounds out of range");
                };
                let begin = begin as usize;
                taken.extend(0, begin + from, begin + to);
            }
            let Some(last) = offsets.last().copied() else {
                return exec_err!("no offsets");
            };
            let added = taken.len() as i32 - last;
            offsets.push(last + added);
            nulls.push(valid);
        }
        let Some(field) = (match list.data_type() {
            DataType::List(field) => Some(field.clone()),
            _ => None,
        }) else {
            return exec_err!("slice takes an array");
        };
        let sliced = ListArray::try_new(
            field,
            OffsetBuffer::new(offsets.into()),
            make_array(taken.freeze()),
            Some(nulls.into()),
        )?;
        result(&args, Arc::new(sliced) as ArrayRef)
    }
}

/// `ngrams(array, n)`: every run of `n` adjacent elements, in order; an array of `n` or fewer
/// elements is its one n-gram.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Ngrams {
    signature: Signature,
}

impl Ngrams {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// The element ranges `[from, to)` of the n-grams of an array of `size`.
fn ngram_ranges(size: usize, n: i64) -> Result<Vec<(usize, usize)>> {
    if n <= 0 {
        return Err(invalid_argument("N must be positive"));
    }
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    if size <= n {
        return Ok(vec![(0, size)]);
    }
    Ok((0..=size - n).map(|from| (from, from + n)).collect())
}

impl ScalarUDFImpl for Ngrams {
    fn name(&self) -> &str {
        "ngrams"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [list @ DataType::List(_), n] if is_integer(n) => {
                Ok(vec![list.clone(), DataType::Int64])
            }
            _ => Err(crate::args::unexpected_parameters(
                "ngrams",
                arg_types,
                "(array(T), bigint)",
            )),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(list @ DataType::List(_)) => Ok(DataType::List(Arc::new(Field::new(
                "item",
                list.clone(),
                true,
            )))),
            _ => plan_err!("ngrams takes an array"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [list, n] = columns.as_slice() else {
            return exec_err!("ngrams takes 2 arguments");
        };
        let n = longs(n)?;
        let Some(list) = list.as_list_opt::<i32>() else {
            return exec_err!("ngrams takes an array, not {}", list.data_type());
        };
        let DataType::List(element) = list.data_type() else {
            return exec_err!("ngrams takes an array");
        };
        let values = list.values().to_data();
        let mut taken = MutableArrayData::new(vec![&values], true, values.len());
        let (mut gram_offsets, mut row_offsets) = (vec![0i32], vec![0i32]);
        let mut nulls = Vec::with_capacity(list.len());
        for i in 0..list.len() {
            let valid = !(list.is_null(i) || n.is_null(i));
            if valid {
                let offsets = list.value_offsets();
                let (begin, end) = (offsets[i] as usize, offsets[i + 1] as usize);
                for (from, to) in ngram_ranges(end - begin, n.value(i))? {
                    taken.extend(0, begin + from, begin + to);
                    gram_offsets.push(taken.len() as i32);
                }
            }
            row_offsets.push(gram_offsets.len() as i32 - 1);
            nulls.push(valid);
        }
        let grams = ListArray::try_new(
            element.clone(),
            OffsetBuffer::new(gram_offsets.into()),
            make_array(taken.freeze()),
            None,
        )?;
        let rows = ListArray::try_new(
            Arc::new(Field::new("item", list.data_type().clone(), true)),
            OffsetBuffer::new(row_offsets.into()),
            Arc::new(grams),
            Some(nulls.into()),
        )?;
        result(&args, Arc::new(rows) as ArrayRef)
    }
}

/// `cardinality(x)`: an array's length or a map's number of entries, as a `bigint`. (DataFusion's
/// own counts every element of nested arrays: 6 for `ARRAY[ARRAY[1,2,3], ARRAY[4,5,6]]`.)
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Cardinality {
    signature: Signature,
}

impl Cardinality {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for Cardinality {
    fn name(&self) -> &str {
        "cardinality"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [t @ (DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..))]
            | [t @ (DataType::Map(..) | DataType::Null)] => Ok(vec![t.clone()]),
            _ => Err(crate::args::unexpected_parameters(
                "cardinality",
                arg_types,
                "(array(T)) or (map(K,V))",
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [x] = columns.as_slice() else {
            return exec_err!("cardinality takes 1 argument");
        };
        let sizes: Vec<Option<i64>> = match x.data_type() {
            DataType::List(_) => {
                let list = x.as_list::<i32>();
                (0..list.len())
                    .map(|i| list.is_valid(i).then(|| i64::from(list.value_length(i))))
                    .collect()
            }
            DataType::LargeList(_) => {
                let list = x.as_list::<i64>();
                (0..list.len())
                    .map(|i| list.is_valid(i).then(|| list.value_length(i)))
                    .collect()
            }
            DataType::FixedSizeList(_, size) => (0..x.len())
                .map(|i| x.is_valid(i).then_some(i64::from(*size)))
                .collect(),
            DataType::Map(..) => {
                let map = x.as_map();
                let offsets = map.value_offsets();
                (0..map.len())
                    .map(|i| {
                        map.is_valid(i)
                            .then(|| i64::from(offsets[i + 1] - offsets[i]))
                    })
                    .collect()
            }
            _ => vec![None; x.len()],
        };
        result(&args, Arc::new(Int64Array::from(sizes)) as ArrayRef)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_ranges_follow_trino() {
        assert_eq!(slice_range(4, 2, 2).ok(), Some((1, 3)));
        assert_eq!(slice_range(4, -2, 2).ok(), Some((2, 4)));
        assert_eq!(slice_range(4, -2, 5).ok(), Some((2, 4)));
        assert_eq!(slice_range(4, 3, 10).ok(), Some((2, 4)));
        assert_eq!(slice_range(4, 5, 1).ok(), Some((0, 0)));
        assert_eq!(slice_range(4, -5, 2).ok(), Some((0, 0)));
        assert_eq!(slice_range(4, 1, 0).ok(), Some((0, 0)));
        assert_eq!(slice_range(0, 1, 1).ok(), Some((0, 0)));
        assert_eq!(slice_range(4, 1, i64::MAX).ok(), Some((0, 4)));
        assert!(slice_range(4, 0, 1).is_err());
        assert!(slice_range(4, 1, -1).is_err());
    }

    #[test]
    fn ngrams_follow_trino() -> Result<()> {
        assert_eq!(ngram_ranges(4, 2)?, [(0, 2), (1, 3), (2, 4)]);
        assert_eq!(ngram_ranges(4, 4)?, [(0, 4)]);
        assert_eq!(ngram_ranges(4, 5)?, [(0, 4)]);
        assert_eq!(ngram_ranges(0, 2)?, [(0, 0)]);
        assert!(ngram_ranges(4, 0).is_err());
        assert!(ngram_ranges(4, -1).is_err());
        Ok(())
    }
}
