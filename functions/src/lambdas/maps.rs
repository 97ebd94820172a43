//! Trino's functions of a map and a lambda over its entries: `transform_values(m, (k, v) ->
//! …)` gives each key a new value, `map_filter(m, (k, v) -> …)` keeps the entries the lambda
//! holds true for, `transform_keys(m, (k, v) -> …)` gives each value a new key, and
//! `map_zip_with(m1, m2, (k, v1, v2) -> …)` joins two maps by key. DataFusion's higher-order
//! functions cover arrays only.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, MapArray, StructArray, UInt32Array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::{filter, interleave, take};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::common::{Result, exec_datafusion_err, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, HigherOrderFunctionArgs, HigherOrderReturnFieldArgs, HigherOrderSignature,
    HigherOrderUDF, HigherOrderUDFImpl, LambdaParametersProgress, ValueOrLambda,
};

use super::{Form, Reads, form_methods};
use crate::args::unexpected_parameters;
use crate::error::invalid_argument;
use crate::identity::identity_rows;

/// What a function of one map and a lambda `(k, v) -> …` does with the entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Over {
    /// `transform_values`: each entry's value becomes the lambda's answer.
    Values,
    /// `map_filter`: entries the lambda answers true for stay.
    Filter,
    /// `transform_keys`: each entry's key becomes the lambda's answer.
    Keys,
}

impl Over {
    fn name(self) -> &'static str {
        match self {
            Over::Values => "transform_values",
            Over::Filter => "map_filter",
            Over::Keys => "transform_keys",
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct MapLambda {
    over: Over,
    form: Form,
}

/// A map and a lambda, or two maps and a lambda.
fn arguments(maps: usize) -> Vec<ValueOrLambda<(), ()>> {
    let mut args = vec![ValueOrLambda::Value(()); maps];
    args.push(ValueOrLambda::Lambda(()));
    args
}

/// `transform_values`, `map_filter`, `transform_keys` and `map_zip_with`, in each of their
/// forms (see [`super::reading_name`]).
pub(super) fn functions() -> Vec<Arc<HigherOrderUDF>> {
    let mut functions: Vec<Arc<HigherOrderUDF>> = [Over::Values, Over::Filter, Over::Keys]
        .into_iter()
        .flat_map(|over| Reads::forms(2).into_iter().map(move |reads| (over, reads)))
        .map(|(over, reads)| {
            Arc::new(HigherOrderUDF::new_from_impl(MapLambda {
                over,
                form: Form::new(over.name(), reads, arguments(1)),
            }))
        })
        .collect();
    functions.extend(Reads::forms(3).into_iter().map(|reads| {
        Arc::new(HigherOrderUDF::new_from_impl(MapZipWith {
            form: Form::new("map_zip_with", reads, arguments(2)),
        }))
    }));
    functions
}

/// The key and value fields of a map type.
fn entry_fields(name: &str, map: &DataType) -> Result<(FieldRef, FieldRef)> {
    match map {
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(fields) if fields.len() == 2 => {
                Ok((Arc::clone(&fields[0]), Arc::clone(&fields[1])))
            }
            other => plan_err!("{name}: a map's entries of type {other}"),
        },
        other => plan_err!("{name} expects a map, not {other}"),
    }
}

/// A map type of `key` and `value` fields, its entries named as in `like`.
fn map_type(like: &DataType, key: FieldRef, value: FieldRef) -> Result<DataType> {
    let DataType::Map(entries, sorted) = like else {
        return plan_err!("expected a map, not {like}");
    };
    let fields = Fields::from(vec![key, value]);
    Ok(DataType::Map(
        Arc::new(Field::new(entries.name(), DataType::Struct(fields), false)),
        *sorted,
    ))
}

/// A map array of `map_type` from its entries' keys and values, rows' offsets and NULLs.
fn map_array(
    map_type: &DataType,
    keys: ArrayRef,
    values: ArrayRef,
    offsets: OffsetBuffer<i32>,
    nulls: Option<datafusion::arrow::buffer::NullBuffer>,
) -> Result<ArrayRef> {
    let DataType::Map(entries_field, sorted) = map_type else {
        return exec_err!("expected a map type, not {map_type}");
    };
    let DataType::Struct(fields) = entries_field.data_type() else {
        return exec_err!("a map's entries must be a struct");
    };
    let entries = StructArray::try_new(fields.clone(), vec![keys, values], None)?;
    Ok(Arc::new(MapArray::try_new(
        Arc::clone(entries_field),
        offsets,
        entries,
        nulls,
        *sorted,
    )?))
}

/// The entries of the rows of `map` that are not NULL, each with the row it belongs to, and
/// each row's new offsets (a NULL row keeps none: its entries are never evaluated).
struct Entries {
    keys: ArrayRef,
    values: ArrayRef,
    rows: UInt32Array,
    offsets: OffsetBuffer<i32>,
}

impl Entries {
    fn of(map: &MapArray) -> Result<Self> {
        let offsets = map.value_offsets();
        let mut positions = Vec::new();
        let mut rows = Vec::new();
        let mut lengths = Vec::with_capacity(map.len());
        for row in 0..map.len() {
            if map.is_null(row) {
                lengths.push(0);
                continue;
            }
            let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
            lengths.push(end - start);
            for position in start..end {
                positions.push(u32::try_from(position).unwrap_or(u32::MAX));
                rows.push(u32::try_from(row).unwrap_or(u32::MAX));
            }
        }
        let positions = UInt32Array::from(positions);
        Ok(Self {
            keys: take(map.keys(), &positions, None)?,
            values: take(map.values(), &positions, None)?,
            rows: UInt32Array::from(rows),
            offsets: OffsetBuffer::from_lengths(lengths),
        })
    }
}

/// A map argument as an array of the batch's rows.
fn map_argument(name: &str, value: &ColumnarValue, rows: usize) -> Result<ArrayRef> {
    let map = value.to_array(rows)?;
    if map.as_map_opt().is_none() {
        return exec_err!("{name} expects a map, not {}", map.data_type());
    }
    Ok(map)
}

impl HigherOrderUDFImpl for MapLambda {
    form_methods!();

    fn coerce_value_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [map @ DataType::Map(..)] => Ok(vec![map.clone()]),
            [other] => plan_err!("{} expects a map, not {other}", self.over.name()),
            _ => plan_err!("{} expects a map and a lambda", self.over.name()),
        }
    }

    fn lambda_parameters(
        &self,
        _step: usize,
        fields: &[ValueOrLambda<FieldRef, Option<FieldRef>>],
    ) -> Result<LambdaParametersProgress> {
        let [ValueOrLambda::Value(map), ValueOrLambda::Lambda(_)] = fields else {
            return plan_err!(
                "{} expects a map and a lambda (k, v) -> …",
                self.over.name()
            );
        };
        let (key, value) = entry_fields(self.over.name(), map.data_type())?;
        Ok(LambdaParametersProgress::Complete(vec![
            self.form.reads.given(&[key, value]),
        ]))
    }

    fn return_field_from_args(&self, args: HigherOrderReturnFieldArgs<'_>) -> Result<FieldRef> {
        let name = self.over.name();
        let [ValueOrLambda::Value(map), ValueOrLambda::Lambda(answer)] = args.arg_fields else {
            return plan_err!("{name} expects a map and a lambda (k, v) -> …");
        };
        let (key, value) = entry_fields(name, map.data_type())?;
        let data_type = match self.over {
            Over::Filter => {
                if !matches!(answer.data_type(), DataType::Boolean | DataType::Null) {
                    return Err(unexpected_parameters(
                        name,
                        &[map.data_type().clone()],
                        "(map(K,V), function(K,V,boolean))",
                    ));
                }
                map.data_type().clone()
            }
            Over::Values => {
                let value = Field::new(value.name(), answer.data_type().clone(), true)
                    .with_metadata(answer.metadata().clone());
                map_type(map.data_type(), key, Arc::new(value))?
            }
            Over::Keys => {
                if matches!(answer.data_type(), DataType::Map(..)) {
                    return plan_err!("transform_keys: a map cannot be a map's key");
                }
                let key = Field::new(key.name(), answer.data_type().clone(), false)
                    .with_metadata(answer.metadata().clone());
                map_type(map.data_type(), Arc::new(key), value)?
            }
        };
        Ok(Arc::new(Field::new(name, data_type, map.is_nullable())))
    }

    fn invoke_with_args(&self, args: HigherOrderFunctionArgs) -> Result<ColumnarValue> {
        let name = self.over.name();
        let [ValueOrLambda::Value(map), ValueOrLambda::Lambda(lambda)] = args.args.as_slice()
        else {
            return exec_err!("{name} expects a map and a lambda");
        };
        let map = map_argument(name, map, args.number_rows)?;
        let map = map.as_map();
        let entries = Entries::of(map)?;
        let answers = self.form.reads.evaluate(
            lambda,
            &[Arc::clone(&entries.keys), Arc::clone(&entries.values)],
            &entries.rows,
        )?;
        let (keys, values, offsets) = match self.over {
            Over::Values => (entries.keys, answers, entries.offsets),
            Over::Keys => {
                distinct_keys(&answers, &entries.offsets)?;
                (answers, entries.values, entries.offsets)
            }
            Over::Filter => {
                // NULL is not true: the entry goes (also where the lambda answers only NULL).
                let keep = match answers.as_boolean_opt() {
                    Some(keep) => {
                        BooleanArray::from_iter(keep.iter().map(|b| Some(b == Some(true))))
                    }
                    None if answers.data_type() == &DataType::Null => {
                        BooleanArray::from(vec![false; answers.len()])
                    }
                    None => return exec_err!("map_filter's lambda must answer a boolean"),
                };
                let mut lengths = Vec::with_capacity(map.len());
                for bound in entries.offsets.windows(2) {
                    let (start, end) = (bound[0] as usize, bound[1] as usize);
                    lengths.push((start..end).filter(|&i| keep.value(i)).count());
                }
                (
                    filter(&entries.keys, &keep)?,
                    filter(&entries.values, &keep)?,
                    OffsetBuffer::from_lengths(lengths),
                )
            }
        };
        let result = map_array(
            args.return_type(),
            keys,
            values,
            offsets,
            map.nulls().cloned(),
        )?;
        Ok(ColumnarValue::Array(result))
    }
}

/// Refuses new keys that are NULL or repeat within a map, as Trino's `transform_keys` does.
fn distinct_keys(keys: &ArrayRef, offsets: &OffsetBuffer<i32>) -> Result<()> {
    if keys.null_count() > 0 {
        return Err(invalid_argument("map key cannot be null"));
    }
    let Some(rows) = identity_rows(&[keys])?.pop() else {
        return exec_err!("no rows for the keys");
    };
    for bound in offsets.windows(2) {
        let mut seen = std::collections::HashSet::new();
        for i in bound[0] as usize..bound[1] as usize {
            if !seen.insert(rows.row(i)) {
                let key = array_value_to_string(keys.as_ref(), i)?;
                return Err(invalid_argument(format!(
                    "Duplicate keys ({key}) are not allowed"
                )));
            }
        }
    }
    Ok(())
}

/// `map_zip_with(m1, m2, (k, v1, v2) -> …)`: every key of either map (the first map's in its
/// order, then the second's it lacks), its value the lambda's answer for the key and the two
/// maps' values (NULL where a map lacks the key). NULL when either map is.
#[derive(Debug, PartialEq, Eq, Hash)]
struct MapZipWith {
    form: Form,
}

impl HigherOrderUDFImpl for MapZipWith {
    form_methods!();

    fn coerce_value_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [left @ DataType::Map(..), right @ DataType::Map(..)] = arg_types else {
            return plan_err!("map_zip_with expects two maps and a lambda (k, v1, v2) -> …");
        };
        let (left_key, _) = entry_fields("map_zip_with", left)?;
        let (right_key, _) = entry_fields("map_zip_with", right)?;
        if !left_key.data_type().equals_datatype(right_key.data_type()) {
            return plan_err!(
                "map_zip_with's maps must have keys of one type, not {} and {}",
                left_key.data_type(),
                right_key.data_type()
            );
        }
        Ok(vec![left.clone(), right.clone()])
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
            return plan_err!("map_zip_with expects two maps and a lambda (k, v1, v2) -> …");
        };
        let (key, left_value) = entry_fields("map_zip_with", left.data_type())?;
        let (_, right_value) = entry_fields("map_zip_with", right.data_type())?;
        let nullable = |f: FieldRef| Arc::new(f.as_ref().clone().with_nullable(true));
        Ok(LambdaParametersProgress::Complete(vec![
            self.form
                .reads
                .given(&[key, nullable(left_value), nullable(right_value)]),
        ]))
    }

    fn return_field_from_args(&self, args: HigherOrderReturnFieldArgs<'_>) -> Result<FieldRef> {
        let [
            ValueOrLambda::Value(left),
            ValueOrLambda::Value(right),
            ValueOrLambda::Lambda(answer),
        ] = args.arg_fields
        else {
            return plan_err!("map_zip_with expects two maps and a lambda (k, v1, v2) -> …");
        };
        let (key, value) = entry_fields("map_zip_with", left.data_type())?;
        let value = Field::new(value.name(), answer.data_type().clone(), true)
            .with_metadata(answer.metadata().clone());
        Ok(Arc::new(Field::new(
            "map_zip_with",
            map_type(left.data_type(), key, Arc::new(value))?,
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
            return exec_err!("map_zip_with expects two maps and a lambda");
        };
        let left = map_argument("map_zip_with", left, args.number_rows)?;
        let right = map_argument("map_zip_with", right, args.number_rows)?;
        let (left, right) = (left.as_map(), right.as_map());
        let [left_keys, right_keys] =
            <[_; 2]>::try_from(identity_rows(&[left.keys(), right.keys()])?)
                .map_err(|_| exec_datafusion_err!("map_zip_with: rows for both maps' keys"))?;
        // Each entry: where its key is (0 the first map's keys, 1 the second's), and where its
        // values are in either map.
        let mut key_at = Vec::new();
        let mut left_at = Vec::new();
        let mut right_at = Vec::new();
        let mut rows = Vec::new();
        let mut lengths = Vec::with_capacity(args.number_rows);
        let position = |p: i32| usize::try_from(p).unwrap_or(0);
        for row in 0..args.number_rows {
            if left.is_null(row) || right.is_null(row) {
                lengths.push(0);
                continue;
            }
            let lo = left.value_offsets();
            let ro = right.value_offsets();
            let (ls, le) = (position(lo[row]), position(lo[row + 1]));
            let (rs, re) = (position(ro[row]), position(ro[row + 1]));
            let in_right: HashMap<_, usize> = (rs..re).map(|i| (right_keys.row(i), i)).collect();
            let mut matched = std::collections::HashSet::new();
            for i in ls..le {
                let other = in_right.get(&left_keys.row(i)).copied();
                if let Some(j) = other {
                    matched.insert(j);
                }
                key_at.push((0, i));
                left_at.push(u32::try_from(i).ok());
                right_at.push(other.and_then(|j| u32::try_from(j).ok()));
            }
            let unmatched = (rs..re).filter(|j| !matched.contains(j));
            let before = key_at.len();
            for j in unmatched {
                key_at.push((1, j));
                left_at.push(None);
                right_at.push(u32::try_from(j).ok());
            }
            let count = (le - ls) + (key_at.len() - before);
            rows.extend(std::iter::repeat_n(
                u32::try_from(row).unwrap_or(u32::MAX),
                count,
            ));
            lengths.push(count);
        }
        let keys = interleave(&[left.keys().as_ref(), right.keys().as_ref()], &key_at)?;
        let left_values = take(left.values(), &UInt32Array::from(left_at), None)?;
        let right_values = take(right.values(), &UInt32Array::from(right_at), None)?;
        let rows = UInt32Array::from(rows);
        let answers = self.form.reads.evaluate(
            lambda,
            &[Arc::clone(&keys), left_values, right_values],
            &rows,
        )?;
        let nulls = datafusion::arrow::buffer::NullBuffer::union(left.nulls(), right.nulls());
        let result = map_array(
            args.return_type(),
            keys,
            answers,
            OffsetBuffer::from_lengths(lengths),
            nulls,
        )?;
        Ok(ColumnarValue::Array(result))
    }
}
