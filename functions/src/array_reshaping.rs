//! Trino's functions that pick an array's elements into new arrays: `trim_array` (all but
//! the last n), `combinations` (every n-element subset, in order) and `zip` (the arrays side
//! by side as rows, the shorter padded with NULLs). DataFusion has none of them.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, ListArray, MutableArrayData, StructArray, make_array,
};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, is_integer, longs, result, unexpected_parameters};
use crate::error::invalid_argument;

/// Trino's largest subset `combinations` makes.
const MAX_COMBINATION: i64 = 5;
/// Trino's cap on the elements of one array's subsets that `combinations` makes.
const MAX_ELEMENTS: u64 = 100_000;
/// Trino's `zip` takes two to five arrays.
const ZIP_ARITY: std::ops::RangeInclusive<usize> = 2..=5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Reshaping {
    TrimArray,
    Combinations,
    Zip,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct ArrayReshaping {
    kind: Reshaping,
    signature: Signature,
}

pub(crate) fn reshaping_functions() -> Vec<ArrayReshaping> {
    [
        Reshaping::TrimArray,
        Reshaping::Combinations,
        Reshaping::Zip,
    ]
    .into_iter()
    .map(|kind| ArrayReshaping {
        kind,
        signature: Signature::user_defined(Volatility::Immutable),
    })
    .collect()
}

fn list_of(element: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", element, true)))
}

/// An array argument's type as the function takes it (`NULL` as an array of unknown).
fn as_list(t: &DataType) -> Option<DataType> {
    match t {
        DataType::List(_) => Some(t.clone()),
        DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            Some(list_of(f.data_type().clone()))
        }
        DataType::Null => Some(list_of(DataType::Null)),
        _ => None,
    }
}

fn element_type(list: &DataType) -> Result<DataType> {
    match list {
        DataType::List(f) => Ok(f.data_type().clone()),
        other => plan_err!("expected an array, not {other}"),
    }
}

/// The row fields of `zip`: Trino's are anonymous; SQE names them as its anonymous rows.
fn zip_fields(lists: &[DataType]) -> Result<Fields> {
    lists
        .iter()
        .enumerate()
        .map(|(i, t)| Ok(Field::new(format!("c{i}"), element_type(t)?, true)))
        .collect()
}

impl ScalarUDFImpl for ArrayReshaping {
    fn name(&self) -> &str {
        match self.kind {
            Reshaping::TrimArray => "trim_array",
            Reshaping::Combinations => "combinations",
            Reshaping::Zip => "zip",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let coerced = match (self.kind, arg_types) {
            (Reshaping::TrimArray | Reshaping::Combinations, [list, n]) if is_integer(n) => {
                as_list(list).map(|list| vec![list, DataType::Int64])
            }
            (Reshaping::Zip, lists) if ZIP_ARITY.contains(&lists.len()) => {
                lists.iter().map(as_list).collect()
            }
            _ => None,
        };
        coerced.ok_or_else(|| {
            let expected = match self.kind {
                Reshaping::TrimArray => "(array(E), bigint)",
                Reshaping::Combinations => "(array(T), integer)",
                Reshaping::Zip => "(array(T1), array(T2), ...)",
            };
            unexpected_parameters(self.name(), arg_types, expected)
        })
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match (self.kind, arg_types.first()) {
            (Reshaping::TrimArray, Some(list)) => Ok(list.clone()),
            (Reshaping::Combinations, Some(list)) => Ok(list_of(list.clone())),
            (Reshaping::Zip, _) => Ok(list_of(DataType::Struct(zip_fields(arg_types)?))),
            _ => plan_err!("{} takes an array", self.name()),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let answer = match (self.kind, columns.as_slice()) {
            (Reshaping::TrimArray, [list, n]) => trim_array(list, n)?,
            (Reshaping::Combinations, [list, n]) => combinations(list, n)?,
            (Reshaping::Zip, lists) => zip(lists)?,
            _ => return exec_err!("{}: wrong number of arguments", self.name()),
        };
        result(&args, answer)
    }
}

/// Each row's element range `[begin, end)` in the list's values; `None` for a NULL array.
fn row_range(list: &ListArray, row: usize) -> Option<(usize, usize)> {
    if list.is_null(row) {
        return None;
    }
    let offsets = list.value_offsets();
    Some((offsets[row] as usize, offsets[row + 1] as usize))
}

fn list_array(array: &ArrayRef) -> Result<&ListArray> {
    match array.as_list_opt::<i32>() {
        Some(list) => Ok(list),
        None => exec_err!("expected an array, not {}", array.data_type()),
    }
}

/// `trim_array(a, n)`: `a` without its last `n` elements.
fn trim_array(list: &ArrayRef, n: &ArrayRef) -> Result<ArrayRef> {
    let (list, n) = (list_array(list)?, longs(n)?);
    let values = list.values().to_data();
    let mut taken = MutableArrayData::new(vec![&values], true, values.len());
    let mut offsets = vec![0i32];
    let mut valid = Vec::with_capacity(list.len());
    for row in 0..list.len() {
        let range = row_range(list, row).filter(|_| n.is_valid(row));
        if let Some((begin, end)) = range {
            let size = (end - begin) as i64;
            let trimmed = n.value(row);
            if trimmed < 0 {
                return Err(invalid_argument(format!(
                    "size must not be negative: {trimmed}"
                )));
            }
            if trimmed > size {
                return Err(invalid_argument(format!(
                    "size must not exceed array cardinality {size}: {trimmed}"
                )));
            }
            taken.extend(0, begin, end - trimmed as usize);
        }
        offsets.push(taken.len() as i32);
        valid.push(range.is_some());
    }
    let DataType::List(field) = list.data_type() else {
        return exec_err!("trim_array takes an array");
    };
    Ok(Arc::new(ListArray::try_new(
        field.clone(),
        OffsetBuffer::new(offsets.into()),
        make_array(taken.freeze()),
        Some(NullBuffer::from(valid)),
    )?))
}

/// Every `k`-element subset of `0..size` as index lists, in Trino's order (colexicographic:
/// by the last index, then the one before, …).
fn subsets(size: usize, k: usize) -> Vec<Vec<usize>> {
    if k > size {
        return Vec::new();
    }
    let mut all = Vec::new();
    let mut picked: Vec<usize> = (0..k).collect();
    loop {
        all.push(picked.clone());
        // The first index that can move right without meeting the next one.
        let Some(i) = (0..k).find(|&i| picked[i] + 1 < picked.get(i + 1).copied().unwrap_or(size))
        else {
            return all;
        };
        picked[i] += 1;
        for (j, index) in picked.iter_mut().enumerate().take(i) {
            *index = j;
        }
    }
}

/// How many `k`-element subsets `size` elements have (saturating).
fn subset_count(size: u64, k: u64) -> u64 {
    (0..k).fold(1u64, |count, i| count.saturating_mul(size - i) / (i + 1))
}

/// `combinations(a, n)`: every `n`-element subset of `a`'s elements, by position.
fn combinations(list: &ArrayRef, n: &ArrayRef) -> Result<ArrayRef> {
    let (list, n) = (list_array(list)?, longs(n)?);
    let values = list.values().to_data();
    let mut taken = MutableArrayData::new(vec![&values], true, values.len());
    let (mut inner_offsets, mut row_offsets) = (vec![0i32], vec![0i32]);
    let mut valid = Vec::with_capacity(list.len());
    for row in 0..list.len() {
        let range = row_range(list, row).filter(|_| n.is_valid(row));
        if let Some((begin, end)) = range {
            let k = n.value(row);
            if k < 0 {
                return Err(invalid_argument(format!(
                    "combination size must not be negative: {k}"
                )));
            }
            if k > MAX_COMBINATION {
                return Err(invalid_argument(format!(
                    "combination size must not exceed {MAX_COMBINATION}: {k}"
                )));
            }
            let size = end - begin;
            // Trino's bound is on the elements of all subsets together.
            if k as usize <= size
                && subset_count(size as u64, k as u64).saturating_mul(k as u64) > MAX_ELEMENTS
            {
                return Err(invalid_argument("combinations exceed max size"));
            }
            for subset in subsets(size, k as usize) {
                for index in subset {
                    taken.extend(0, begin + index, begin + index + 1);
                }
                inner_offsets.push(taken.len() as i32);
            }
        }
        row_offsets.push(inner_offsets.len() as i32 - 1);
        valid.push(range.is_some());
    }
    let DataType::List(element) = list.data_type() else {
        return exec_err!("combinations takes an array");
    };
    let subsets = ListArray::try_new(
        element.clone(),
        OffsetBuffer::new(inner_offsets.into()),
        make_array(taken.freeze()),
        None,
    )?;
    Ok(Arc::new(ListArray::try_new(
        Arc::new(Field::new("item", list.data_type().clone(), true)),
        OffsetBuffer::new(row_offsets.into()),
        Arc::new(subsets),
        Some(NullBuffer::from(valid)),
    )?))
}

/// `zip(a1, a2, …)`: row i holds each array's i-th element (NULL past an array's end), as
/// many rows as the longest array has elements; NULL when any array is.
fn zip(lists: &[ArrayRef]) -> Result<ArrayRef> {
    let lists = lists.iter().map(list_array).collect::<Result<Vec<_>>>()?;
    let Some(first) = lists.first() else {
        return exec_err!("zip takes arrays");
    };
    let rows = first.len();
    let values: Vec<_> = lists.iter().map(|l| l.values().to_data()).collect();
    let mut columns: Vec<MutableArrayData<'_>> = values
        .iter()
        .map(|v| MutableArrayData::new(vec![v], true, v.len()))
        .collect();
    let mut offsets = vec![0i32];
    let mut valid = Vec::with_capacity(rows);
    let mut length = 0usize;
    for row in 0..rows {
        let ranges: Option<Vec<(usize, usize)>> = lists.iter().map(|l| row_range(l, row)).collect();
        if let Some(ranges) = &ranges {
            let longest = ranges.iter().map(|(b, e)| e - b).max().unwrap_or(0);
            for (column, (begin, end)) in columns.iter_mut().zip(ranges) {
                column.extend(0, *begin, *end);
                column.extend_nulls(longest - (end - begin));
            }
            length += longest;
        }
        offsets.push(length as i32);
        valid.push(ranges.is_some());
    }
    let types: Vec<DataType> = lists.iter().map(|l| l.data_type().clone()).collect();
    let fields = zip_fields(&types)?;
    let children: Vec<ArrayRef> = columns
        .into_iter()
        .map(|c| make_array(c.freeze()))
        .collect();
    let entries = StructArray::try_new(fields.clone(), children, None)?;
    Ok(Arc::new(ListArray::try_new(
        Arc::new(Field::new("item", DataType::Struct(fields), true)),
        OffsetBuffer::new(offsets.into()),
        Arc::new(entries),
        Some(NullBuffer::from(valid)),
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::Int32Type;

    fn ints(rows: Vec<Option<Vec<Option<i32>>>>) -> ArrayRef {
        Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(rows))
    }

    fn rows_of(list: &ArrayRef) -> Vec<Option<String>> {
        let list = list.as_list::<i32>();
        (0..list.len())
            .map(|i| {
                (!list.is_null(i)).then(|| {
                    datafusion::arrow::util::display::array_value_to_string(list, i)
                        .unwrap_or_default()
                })
            })
            .collect()
    }

    #[test]
    fn trim_array_drops_the_last_elements_and_refuses_what_trino_refuses() -> Result<()> {
        let list = ints(vec![Some(vec![Some(1), Some(2), Some(3), Some(4)]), None]);
        let n: ArrayRef = Arc::new(Int64Array::from(vec![2, 1]));
        let trimmed = trim_array(&list, &n)?;
        assert_eq!(rows_of(&trimmed), [Some("[1, 2]".to_string()), None]);
        let too_many: ArrayRef = Arc::new(Int64Array::from(vec![5, 0]));
        assert!(trim_array(&list, &too_many).is_err());
        let negative: ArrayRef = Arc::new(Int64Array::from(vec![-1, 0]));
        assert!(trim_array(&list, &negative).is_err());
        Ok(())
    }

    #[test]
    fn combinations_are_subsets_in_order() -> Result<()> {
        assert_eq!(subsets(3, 2), [vec![0, 1], vec![0, 2], vec![1, 2]]);
        assert_eq!(
            subsets(4, 2),
            [
                vec![0, 1],
                vec![0, 2],
                vec![1, 2],
                vec![0, 3],
                vec![1, 3],
                vec![2, 3]
            ]
        );
        assert_eq!(subsets(2, 0), [Vec::<usize>::new()]);
        assert!(subsets(2, 3).is_empty());
        assert_eq!(subset_count(5, 2), 10);
        let list = ints(vec![Some(vec![Some(1), Some(2), Some(3)])]);
        let n: ArrayRef = Arc::new(Int64Array::from(vec![2]));
        assert_eq!(
            rows_of(&combinations(&list, &n)?),
            [Some("[[1, 2], [1, 3], [2, 3]]".to_string())]
        );
        let six: ArrayRef = Arc::new(Int64Array::from(vec![6]));
        assert!(combinations(&list, &six).is_err());
        Ok(())
    }

    #[test]
    fn zip_pads_the_shorter_arrays() -> Result<()> {
        let numbers = ints(vec![Some(vec![Some(1), Some(2)]), Some(vec![]), None]);
        let words: ArrayRef = Arc::new(ListArray::new(
            Arc::new(Field::new("item", DataType::Utf8, true)),
            OffsetBuffer::from_lengths([3, 0, 1]),
            Arc::new(StringArray::from(vec![
                Some("a"),
                None,
                Some("c"),
                Some("d"),
            ])),
            None,
        ));
        let zipped = zip(&[numbers, words])?;
        assert_eq!(
            rows_of(&zipped),
            [
                Some("[{c0: 1, c1: a}, {c0: 2, c1: }, {c0: , c1: c}]".to_string()),
                Some("[]".to_string()),
                None
            ]
        );
        Ok(())
    }
}
