//! Trino's `array_sort(a, (x, y) -> …)`: an array sorted by a comparator lambda answering -1, 0
//! or 1 as `x` comes before, ties with or comes after `y`.
//!
//! The lambda is evaluated for a batch of pairs at a time, not once per comparison: a bottom-up
//! merge sort advances every merge of every row in step, so each step compares the heads of all
//! merges under way in one evaluation. A longest array of n elements takes about 2n
//! evaluations in all. The merge is stable, as Trino's sort (Java's) is: elements the comparator
//! ties keep their order.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, ListArray, UInt32Array};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::{cast, take};
use datafusion::arrow::datatypes::{DataType, FieldRef, Int64Type};
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, HigherOrderFunctionArgs, HigherOrderReturnFieldArgs, HigherOrderSignature,
    HigherOrderUDF, HigherOrderUDFImpl, LambdaArgument, LambdaParametersProgress, ValueOrLambda,
};

use super::arrays::{as_list, element, index, list_argument};
use super::{Form, Reads, form_methods};
use crate::error::invalid_argument;

/// The name the dialect calls `array_sort` of a comparator by (DataFusion's own `array_sort`
/// is a function of values, which its planner would pick first).
pub const SORT_BY_COMPARATOR: &str = "sqe_array_sort";

/// The function in each of its forms (see [`super::reading_name`]).
pub(super) fn functions() -> Vec<Arc<HigherOrderUDF>> {
    Reads::forms(2)
        .into_iter()
        .map(|reads| {
            let args = vec![ValueOrLambda::Value(()), ValueOrLambda::Lambda(())];
            Arc::new(HigherOrderUDF::new_from_impl(SortByComparator {
                form: Form::new(SORT_BY_COMPARATOR, reads, args),
            }))
        })
        .collect()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SortByComparator {
    form: Form,
}

const USAGE: &str = "array_sort expects an array and a comparator (x, y) -> …";

impl HigherOrderUDFImpl for SortByComparator {
    form_methods!();

    fn coerce_value_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [array] = arg_types else {
            return plan_err!("{USAGE}");
        };
        Ok(vec![as_list("array_sort", array)?])
    }

    fn lambda_parameters(
        &self,
        _step: usize,
        fields: &[ValueOrLambda<FieldRef, Option<FieldRef>>],
    ) -> Result<LambdaParametersProgress> {
        let [ValueOrLambda::Value(array), ValueOrLambda::Lambda(_)] = fields else {
            return plan_err!("{USAGE}");
        };
        let element = element("array_sort", array.data_type())?;
        let param = Arc::new(element.as_ref().clone().with_nullable(true));
        Ok(LambdaParametersProgress::Complete(vec![
            self.form.reads.given(&[Arc::clone(&param), param]),
        ]))
    }

    fn return_field_from_args(&self, args: HigherOrderReturnFieldArgs<'_>) -> Result<FieldRef> {
        let [ValueOrLambda::Value(array), ValueOrLambda::Lambda(answer)] = args.arg_fields else {
            return plan_err!("{USAGE}");
        };
        if !answer.data_type().is_integer() && answer.data_type() != &DataType::Null {
            return Err(crate::args::unexpected_parameters(
                "array_sort",
                &[array.data_type().clone()],
                "(array(T), function(T,T,integer))",
            ));
        }
        Ok(Arc::new(
            array
                .as_ref()
                .clone()
                .with_name("array_sort")
                .with_data_type(as_list("array_sort", array.data_type())?),
        ))
    }

    fn invoke_with_args(&self, args: HigherOrderFunctionArgs) -> Result<ColumnarValue> {
        let [
            ValueOrLambda::Value(array),
            ValueOrLambda::Lambda(comparator),
        ] = args.args.as_slice()
        else {
            return exec_err!("{USAGE}");
        };
        let list = list_argument("array_sort", array, args.number_rows)?;
        let order = self.sorted_positions(&list, comparator)?;
        let values = take(list.values(), &UInt32Array::from(order), None)?;
        // The rows' lengths again over the sorted values alone (a NULL row has none).
        let lengths = (0..list.len()).map(|row| {
            if list.is_null(row) {
                0
            } else {
                list.value_length(row) as usize
            }
        });
        let offsets = OffsetBuffer::from_lengths(lengths);
        let (field, _, _, nulls) = list.into_parts();
        Ok(ColumnarValue::Array(Arc::new(ListArray::try_new(
            field, offsets, values, nulls,
        )?)))
    }
}

/// One merge of two sorted runs of a row's elements (positions into the array's values):
/// `left` and `right` are what is left of each, `merged` what has been taken.
struct Merge {
    row: u32,
    left: std::vec::IntoIter<u32>,
    right: std::vec::IntoIter<u32>,
    heads: Option<(u32, u32)>,
    merged: Vec<u32>,
}

impl Merge {
    fn new(row: u32, left: Vec<u32>, right: Vec<u32>) -> Self {
        let mut merge = Self {
            row,
            left: left.into_iter(),
            right: right.into_iter(),
            heads: None,
            merged: Vec::new(),
        };
        merge.heads = match (merge.left.next(), merge.right.next()) {
            (Some(l), Some(r)) => Some((l, r)),
            (l, r) => {
                // A side is empty: the other, whole, is the merge.
                merge
                    .merged
                    .extend(l.into_iter().chain(merge.left.by_ref()));
                merge
                    .merged
                    .extend(r.into_iter().chain(merge.right.by_ref()));
                None
            }
        };
        merge
    }

    /// Takes the left head when the comparator says it does not come after the right one
    /// (ties keep the left first: a stable merge), else the right head.
    fn advance(&mut self, right_first: bool) {
        let Some((l, r)) = self.heads else {
            return;
        };
        let next = if right_first {
            self.merged.push(r);
            self.right.next().map(|r| (l, r))
        } else {
            self.merged.push(l);
            self.left.next().map(|l| (l, r))
        };
        self.heads = next;
        if next.is_none() {
            // One side is used up: the other follows in its order. Its head is the one that
            // was not taken.
            if right_first {
                self.merged.push(l);
                self.merged.extend(self.left.by_ref());
            } else {
                self.merged.push(r);
                self.merged.extend(self.right.by_ref());
            }
        }
    }
}

impl SortByComparator {
    /// Every row's positions into `list`'s values, each row's sorted by `comparator`, row
    /// after row (a NULL row has none).
    fn sorted_positions(&self, list: &ListArray, comparator: &LambdaArgument) -> Result<Vec<u32>> {
        let offsets = list.value_offsets();
        // Each row's runs, at first one per element.
        let mut rows: Vec<(u32, Vec<Vec<u32>>)> = (0..list.len())
            .filter(|&row| !list.is_null(row))
            .map(|row| {
                let (start, end) = (offsets[row], offsets[row + 1]);
                let runs = (start..end).map(|p| vec![index(p as usize)]).collect();
                (index(row), runs)
            })
            .collect();
        while rows.iter().any(|(_, runs)| runs.len() > 1) {
            // Pair the runs of every row, then merge all pairs in step.
            let mut merges = Vec::new();
            let mut owners = Vec::new();
            for (owner, (row, runs)) in rows.iter_mut().enumerate() {
                let mut taken = std::mem::take(runs).into_iter();
                while let Some(left) = taken.next() {
                    let right = taken.next().unwrap_or_default();
                    owners.push(owner);
                    merges.push(Merge::new(*row, left, right));
                }
            }
            self.merge_all(list, comparator, &mut merges)?;
            for (owner, merge) in owners.into_iter().zip(merges) {
                rows[owner].1.push(merge.merged);
            }
        }
        Ok(rows
            .into_iter()
            .flat_map(|(_, runs)| runs.into_iter().flatten())
            .collect())
    }

    /// Advances every merge until each has merged its runs, one evaluation of the comparator
    /// per step for the heads of all merges still comparing.
    fn merge_all(
        &self,
        list: &ListArray,
        comparator: &LambdaArgument,
        merges: &mut [Merge],
    ) -> Result<()> {
        loop {
            let comparing: Vec<usize> = (0..merges.len())
                .filter(|&m| merges[m].heads.is_some())
                .collect();
            if comparing.is_empty() {
                return Ok(());
            }
            let (mut xs, mut ys, mut outer) = (Vec::new(), Vec::new(), Vec::new());
            for &m in &comparing {
                if let Some((l, r)) = merges[m].heads {
                    xs.push(l);
                    ys.push(r);
                    outer.push(merges[m].row);
                }
            }
            let xs = take(list.values(), &UInt32Array::from(xs), None)?;
            let ys = take(list.values(), &UInt32Array::from(ys), None)?;
            let answers =
                self.form
                    .reads
                    .evaluate(comparator, &[xs, ys], &UInt32Array::from(outer))?;
            let answers = cast(&answers, &DataType::Int64)?;
            let answers = answers.as_primitive::<Int64Type>();
            for (k, &m) in comparing.iter().enumerate() {
                let right_first = match answers.is_valid(k).then(|| answers.value(k)) {
                    Some(-1 | 0) => false,
                    Some(1) => true,
                    _ => {
                        return Err(invalid_argument(
                            "Lambda comparator must return either -1, 0, or 1",
                        ));
                    }
                };
                merges[m].advance(right_first);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merge_takes_the_left_head_on_ties_and_the_rest_when_a_side_is_used_up() {
        let mut merge = Merge::new(0, vec![1, 3], vec![2]);
        assert_eq!(merge.heads, Some((1, 2)));
        merge.advance(false);
        assert_eq!(merge.heads, Some((3, 2)));
        merge.advance(true);
        assert_eq!(merge.heads, None);
        assert_eq!(merge.merged, vec![1, 2, 3]);
        let alone = Merge::new(0, vec![4, 5, 6], Vec::new());
        assert_eq!((alone.heads, alone.merged), (None, vec![4, 5, 6]));
    }
}
