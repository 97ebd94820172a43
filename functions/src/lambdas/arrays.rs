//! Trino's functions of arrays and lambdas that DataFusion lacks: `zip_with(a, b, (x, y) ->
//! …)` joins two arrays element by element, `reduce(a, initial, (s, x) -> …, s -> …)` folds
//! an array into one value.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, ListArray, UInt32Array, new_null_array};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::{cast, interleave, take};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, HigherOrderFunctionArgs, HigherOrderReturnFieldArgs, HigherOrderSignature,
    HigherOrderUDF, HigherOrderUDFImpl, LambdaParametersProgress, ValueOrLambda,
};

use super::{Form, Reads, form_methods};
use crate::types::integer_digits;

/// `zip_with` and `reduce`, in each of their forms (see [`super::reading_name`]).
pub(super) fn functions() -> Vec<Arc<HigherOrderUDF>> {
    let (value, lambda) = (ValueOrLambda::Value(()), ValueOrLambda::Lambda(()));
    let zip_with = Reads::forms(2).into_iter().map(|reads| {
        let args = vec![value.clone(), value.clone(), lambda.clone()];
        Arc::new(HigherOrderUDF::new_from_impl(ZipWith {
            form: Form::new("zip_with", reads, args),
        }))
    });
    let reduce = Reads::forms(2).into_iter().map(|reads| {
        let args = vec![value.clone(), value.clone(), lambda.clone(), lambda.clone()];
        Arc::new(HigherOrderUDF::new_from_impl(Reduce {
            form: Form::new("reduce", reads, args),
        }))
    });
    zip_with.chain(reduce).collect()
}

/// The element field of an array type.
pub(super) fn element(name: &str, array: &DataType) -> Result<FieldRef> {
    match array {
        DataType::List(element)
        | DataType::LargeList(element)
        | DataType::FixedSizeList(element, _) => Ok(Arc::clone(element)),
        DataType::Null => Ok(Arc::new(Field::new_list_field(DataType::Null, true))),
        other => plan_err!("{name} expects an array, not {other}"),
    }
}

/// An array type as the `List` the functions read.
pub(super) fn as_list(name: &str, array: &DataType) -> Result<DataType> {
    Ok(DataType::List(element(name, array)?))
}

pub(super) fn list_argument(name: &str, value: &ColumnarValue, rows: usize) -> Result<ListArray> {
    let array = value.to_array(rows)?;
    match array.data_type() {
        DataType::List(_) => Ok(array.as_list::<i32>().clone()),
        DataType::Null => Ok(ListArray::new_null(
            Arc::new(Field::new_list_field(DataType::Null, true)),
            rows,
        )),
        other => exec_err!("{name} expects an array, not {other}"),
    }
}

pub(super) fn index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// `zip_with(a, b, (x, y) -> …)`: the lambda's answers for the two arrays' elements at each
/// position, the shorter array taken as padded with NULLs; NULL when either array is.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ZipWith {
    form: Form,
}

impl HigherOrderUDFImpl for ZipWith {
    form_methods!();

    fn coerce_value_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [left, right] = arg_types else {
            return plan_err!("zip_with expects two arrays and a lambda (x, y) -> …");
        };
        Ok(vec![
            as_list("zip_with", left)?,
            as_list("zip_with", right)?,
        ])
    }

    fn lambda_parameters(
        &self,
        _step: usize,
        fields: &[ValueOrLambda<FieldRef, Option<FieldRef>>],
    ) -> Result<LambdaParametersProgress> {
        let [
            ValueOrLambda::Value(left),
            ValueOrLambda::Value(right),
            ValueOrLambda::Lambda(_),
        ] = fields
        else {
            return plan_err!("zip_with expects two arrays and a lambda (x, y) -> …");
        };
        let nullable = |f: FieldRef| Arc::new(f.as_ref().clone().with_nullable(true));
        let x = nullable(element("zip_with", left.data_type())?);
        let y = nullable(element("zip_with", right.data_type())?);
        Ok(LambdaParametersProgress::Complete(vec![
            self.form.reads.given(&[x, y]),
        ]))
    }

    fn return_field_from_args(&self, args: HigherOrderReturnFieldArgs<'_>) -> Result<FieldRef> {
        let [
            ValueOrLambda::Value(left),
            ValueOrLambda::Value(right),
            ValueOrLambda::Lambda(answer),
        ] = args.arg_fields
        else {
            return plan_err!("zip_with expects two arrays and a lambda (x, y) -> …");
        };
        let element = Field::new_list_field(answer.data_type().clone(), true)
            .with_metadata(answer.metadata().clone());
        Ok(Arc::new(Field::new(
            "zip_with",
            DataType::List(Arc::new(element)),
            left.is_nullable() || right.is_nullable(),
        )))
    }

    fn invoke_with_args(&self, args: HigherOrderFunctionArgs) -> Result<ColumnarValue> {
        let [
            ValueOrLambda::Value(left),
            ValueOrLambda::Value(right),
            ValueOrLambda::Lambda(lambda),
        ] = args.args.as_slice()
        else {
            return exec_err!("zip_with expects two arrays and a lambda");
        };
        let left = list_argument("zip_with", left, args.number_rows)?;
        let right = list_argument("zip_with", right, args.number_rows)?;
        let mut left_at = Vec::new();
        let mut right_at = Vec::new();
        let mut rows = Vec::new();
        let mut lengths = Vec::with_capacity(args.number_rows);
        for row in 0..args.number_rows {
            if left.is_null(row) || right.is_null(row) {
                lengths.push(0);
                continue;
            }
            let (ls, ll) = (left.value_offsets()[row], left.value_length(row));
            let (rs, rl) = (right.value_offsets()[row], right.value_length(row));
            let len = ll.max(rl);
            for i in 0..len {
                left_at.push((i < ll).then(|| index((ls + i) as usize)));
                right_at.push((i < rl).then(|| index((rs + i) as usize)));
                rows.push(index(row));
            }
            lengths.push(usize::try_from(len).unwrap_or(0));
        }
        let xs = take(left.values(), &UInt32Array::from(left_at), None)?;
        let ys = take(right.values(), &UInt32Array::from(right_at), None)?;
        let answers = self
            .form
            .reads
            .evaluate(lambda, &[xs, ys], &UInt32Array::from(rows))?;
        let DataType::List(element) = args.return_type() else {
            return exec_err!("zip_with answers an array");
        };
        let nulls = datafusion::arrow::buffer::NullBuffer::union(left.nulls(), right.nulls());
        let result = ListArray::try_new(
            Arc::clone(element),
            OffsetBuffer::from_lengths(lengths),
            answers,
            nulls,
        )?;
        Ok(ColumnarValue::Array(Arc::new(result)))
    }
}

/// `reduce(a, initial, (s, x) -> …, s -> …)`: the state starts as `initial`, becomes the
/// input lambda's answer for it and each element in turn, and the output lambda's answer for
/// the last state is the result; NULL when the array is. The state's type is the initial
/// value's, or the input lambda's answer's when the initial value widens to it (`0` and a
/// `bigint` sum), as Trino binds it.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Reduce {
    form: Form,
}

/// Whether every value of `from` is a value of `to` (Trino's implicit coercions among
/// numbers).
fn widens(from: &DataType, to: &DataType) -> bool {
    use DataType as T;
    if from.equals_datatype(to) || from == &T::Null {
        return true;
    }
    match (from, to) {
        (T::Int8 | T::Int16 | T::Int32 | T::Int64, T::Int8 | T::Int16 | T::Int32 | T::Int64) => {
            integer_digits(from) <= integer_digits(to)
        }
        (T::Int8 | T::Int16 | T::Int32 | T::Int64, T::Decimal128(p, s)) => {
            integer_digits(from).is_some_and(|d| i16::from(*p) - i16::from(*s) >= i16::from(d))
        }
        (T::Decimal128(p1, s1), T::Decimal128(p2, s2)) => {
            s2 >= s1 && i16::from(*p2) - i16::from(*s2) >= i16::from(*p1) - i16::from(*s1)
        }
        (T::Int8 | T::Int16 | T::Int32 | T::Int64 | T::Decimal128(..) | T::Float32, T::Float64) => {
            true
        }
        (T::Int8 | T::Int16 | T::Int32 | T::Int64 | T::Decimal128(..), T::Float32) => true,
        _ => false,
    }
}

/// The state's type: the initial value's, or the input lambda's answer's when the initial
/// value widens to it. A decimal state is a `decimal(38,s)`, `s` the larger scale of the initial
/// value and the elements: taken from them, not from the answer, it is the same while planning
/// (which sees a first answer) and running (which sees the last), and an answer whose scale grows
/// with the state's (a product) does not fit it and is refused.
fn state_type(initial: &DataType, element: &DataType, answer: &DataType) -> DataType {
    if initial.equals_datatype(answer) {
        return initial.clone();
    }
    if matches!(answer, DataType::Decimal128(..)) {
        let scale = |t: &DataType| match t {
            DataType::Decimal128(_, s) => *s,
            _ => 0,
        };
        let widest = DataType::Decimal128(38, scale(initial).max(scale(element)));
        if widens(initial, &widest) {
            return widest;
        }
    }
    if widens(initial, answer) {
        answer.clone()
    } else {
        initial.clone()
    }
}

impl Reduce {
    fn params(&self, state: &DataType, element: FieldRef) -> (Vec<FieldRef>, Vec<FieldRef>) {
        let s = Arc::new(Field::new("s", state.clone(), true));
        let x = Arc::new(element.as_ref().clone().with_nullable(true));
        (self.form.reads.given(&[Arc::clone(&s), x]), vec![s])
    }
}

impl HigherOrderUDFImpl for Reduce {
    form_methods!();

    fn coerce_value_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [array, initial] = arg_types else {
            return plan_err!("reduce expects an array, an initial state and two lambdas");
        };
        Ok(vec![as_list("reduce", array)?, initial.clone()])
    }

    fn lambda_parameters(
        &self,
        _step: usize,
        fields: &[ValueOrLambda<FieldRef, Option<FieldRef>>],
    ) -> Result<LambdaParametersProgress> {
        let [
            ValueOrLambda::Value(array),
            ValueOrLambda::Value(initial),
            ValueOrLambda::Lambda(input),
            ValueOrLambda::Lambda(_),
        ] = fields
        else {
            return plan_err!(
                "reduce expects an array, an initial state and lambdas (s, x) -> … and s -> …"
            );
        };
        let element = element("reduce", array.data_type())?;
        match input {
            // First the input lambda with the initial value's type, to see what it answers.
            None => {
                let (input, _) = self.params(initial.data_type(), element);
                Ok(LambdaParametersProgress::Partial(vec![Some(input), None]))
            }
            Some(answer) => {
                let state =
                    state_type(initial.data_type(), element.data_type(), answer.data_type());
                let (input, output) = self.params(&state, element);
                Ok(LambdaParametersProgress::Complete(vec![input, output]))
            }
        }
    }

    fn return_field_from_args(&self, args: HigherOrderReturnFieldArgs<'_>) -> Result<FieldRef> {
        let [
            ValueOrLambda::Value(array),
            ValueOrLambda::Value(initial),
            ValueOrLambda::Lambda(input),
            ValueOrLambda::Lambda(output),
        ] = args.arg_fields
        else {
            return plan_err!(
                "reduce expects an array, an initial state and lambdas (s, x) -> … and s -> …"
            );
        };
        let element = element("reduce", array.data_type())?;
        let state = state_type(initial.data_type(), element.data_type(), input.data_type());
        if !input.data_type().equals_datatype(&state) && input.data_type() != &DataType::Null {
            // The input function answers what the state cannot hold.
            return Err(crate::args::unexpected_parameters(
                "reduce",
                &[array.data_type().clone(), initial.data_type().clone()],
                "(array(T), S, function(S,T,S), function(S,R))",
            ));
        }
        Ok(Arc::new(
            Field::new("reduce", output.data_type().clone(), true)
                .with_metadata(output.metadata().clone()),
        ))
    }

    fn invoke_with_args(&self, args: HigherOrderFunctionArgs) -> Result<ColumnarValue> {
        let [
            ValueOrLambda::Value(array),
            ValueOrLambda::Value(initial),
            ValueOrLambda::Lambda(input),
            ValueOrLambda::Lambda(output),
        ] = args.args.as_slice()
        else {
            return exec_err!("reduce expects an array, an initial state and two lambdas");
        };
        let rows = args.number_rows;
        let list = list_argument("reduce", array, rows)?;
        let Some(ValueOrLambda::Lambda(answer)) = args.arg_fields.get(2) else {
            return exec_err!("reduce expects an input lambda");
        };
        let initial = initial.to_array(rows)?;
        let element = element("reduce", list.data_type())?;
        let state_type = state_type(initial.data_type(), element.data_type(), answer.data_type());
        let mut state = cast(&initial, &state_type)?;
        let present: Vec<usize> = (0..rows).filter(|&r| !list.is_null(r)).collect();
        let longest = present
            .iter()
            .map(|&r| list.value_length(r))
            .max()
            .unwrap_or(0);
        for step in 0..longest {
            let active: Vec<usize> = present
                .iter()
                .copied()
                .filter(|&r| list.value_length(r) > step)
                .collect();
            let outer = UInt32Array::from_iter_values(active.iter().map(|&r| index(r)));
            let positions = UInt32Array::from_iter_values(
                active
                    .iter()
                    .map(|&r| index((list.value_offsets()[r] + step) as usize)),
            );
            let states = take(&state, &outer, None)?;
            let elements = take(list.values(), &positions, None)?;
            let mut next = self
                .form
                .reads
                .evaluate(input, &[states, elements], &outer)?;
            if next.data_type() != state.data_type() {
                next = cast(&next, state.data_type())?;
            }
            let mut from = Vec::with_capacity(rows);
            let mut k = 0;
            for r in 0..rows {
                if active.get(k) == Some(&r) {
                    from.push((1, k));
                    k += 1;
                } else {
                    from.push((0, r));
                }
            }
            state = interleave(&[state.as_ref(), next.as_ref()], &from)?;
        }
        // The output lambda for the arrays that are not NULL; NULL for the others.
        let outer = UInt32Array::from_iter_values(present.iter().map(|&r| index(r)));
        let states = take(&state, &outer, None)?;
        let answers = Reads::all(1).evaluate(output, &[states], &outer)?;
        let mut back = vec![None; rows];
        for (k, &r) in present.iter().enumerate() {
            back[r] = Some(index(k));
        }
        let result = if present.is_empty() {
            new_null_array(args.return_type(), rows)
        } else {
            take(&answers, &UInt32Array::from(back), None)?
        };
        if result.data_type() != args.return_type() {
            return Ok(ColumnarValue::Array(cast(&result, args.return_type())?));
        }
        Ok(ColumnarValue::Array(result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_widens_only_to_a_type_holding_all_its_values() {
        use DataType as T;
        let d = |p, s| T::Decimal128(p, s);
        assert_eq!(state_type(&T::Int32, &T::Int32, &T::Int32), T::Int32);
        assert_eq!(state_type(&T::Int32, &T::Int32, &T::Int64), T::Int64);
        // A decimal sum's type would grow with each step: the state takes the widest at the
        // elements' scale, whatever the answer's.
        assert_eq!(state_type(&T::Int32, &d(2, 1), &d(12, 1)), d(38, 1));
        assert_eq!(state_type(&T::Int32, &d(2, 1), &d(38, 2)), d(38, 1));
        // Narrowing is not the state's: the input function's answer is refused.
        assert_eq!(state_type(&T::Int64, &T::Int32, &T::Int32), T::Int64);
        assert_eq!(state_type(&T::Float64, &T::Int32, &T::Int32), T::Float64);
    }
}
