//! Trino's functions of a map and a lambda over its entries: `transform_values(m, (k, v) ->
//! …)` gives each key a new value, `map_filter(m, (k, v) -> …)` keeps the entries the lambda
//! holds true for. DataFusion's higher-order functions cover arrays only.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, MapArray, StructArray, UInt32Array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::{filter, take, take_arrays};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, HigherOrderFunctionArgs, HigherOrderReturnFieldArgs, HigherOrderSignature,
    HigherOrderUDF, HigherOrderUDFImpl, LambdaArgument, LambdaParametersProgress, ValueOrLambda,
    Volatility,
};

/// What a map-and-lambda function does with the entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Over {
    /// `transform_values`: each entry's value becomes the lambda's answer.
    Values,
    /// `map_filter`: entries the lambda answers true for stay.
    Filter,
}

/// The parameters the lambda is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Params {
    /// `(k, v) -> …`: Trino's form.
    KeyAndValue,
    /// `v -> …`: what SQE's dialect writes for a lambda that does not read its key
    /// (DataFusion's lambdas misplace a later parameter when an earlier one goes unread).
    Value,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct MapLambda {
    over: Over,
    params: Params,
    signature: HigherOrderSignature,
}

/// The name of the form of `transform_values` (`Over::Values`) or `map_filter` whose lambda
/// takes the value alone.
pub const TRANSFORM_VALUES_OF_VALUE: &str = "sqe_transform_values_of_value";
pub const MAP_FILTER_OF_VALUE: &str = "sqe_map_filter_of_value";

/// Trino's `transform_values` and `map_filter`, and their forms of a lambda of the value.
pub fn map_lambda_functions() -> Vec<Arc<HigherOrderUDF>> {
    [Over::Values, Over::Filter]
        .into_iter()
        .flat_map(|over| [Params::KeyAndValue, Params::Value].map(move |params| (over, params)))
        .map(|(over, params)| {
            Arc::new(HigherOrderUDF::new_from_impl(MapLambda {
                over,
                params,
                signature: HigherOrderSignature::exact(
                    vec![ValueOrLambda::Value(()), ValueOrLambda::Lambda(())],
                    Volatility::Immutable,
                ),
            }))
        })
        .collect()
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

    /// The lambda's answer for every entry, captured columns spread to the entries' rows.
    fn evaluate(&self, lambda: &LambdaArgument, params: Params) -> Result<ArrayRef> {
        let keys = || Ok(Arc::clone(&self.keys));
        let values = || Ok(Arc::clone(&self.values));
        let spread = |captured: &[ArrayRef]| Ok(take_arrays(captured, &self.rows, None)?);
        match params {
            Params::KeyAndValue => lambda.evaluate(&[&keys, &values], spread),
            Params::Value => lambda.evaluate(&[&values], spread),
        }?
        .into_array(self.keys.len())
    }
}

impl HigherOrderUDFImpl for MapLambda {
    fn name(&self) -> &str {
        match (self.over, self.params) {
            (Over::Values, Params::KeyAndValue) => "transform_values",
            (Over::Filter, Params::KeyAndValue) => "map_filter",
            (Over::Values, Params::Value) => TRANSFORM_VALUES_OF_VALUE,
            (Over::Filter, Params::Value) => MAP_FILTER_OF_VALUE,
        }
    }

    fn signature(&self) -> &HigherOrderSignature {
        &self.signature
    }

    fn coerce_value_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [map @ DataType::Map(..)] => Ok(vec![map.clone()]),
            [other] => plan_err!("{} expects a map, not {other}", self.name()),
            _ => plan_err!("{} expects a map and a lambda", self.name()),
        }
    }

    fn lambda_parameters(
        &self,
        _step: usize,
        fields: &[ValueOrLambda<FieldRef, Option<FieldRef>>],
    ) -> Result<LambdaParametersProgress> {
        let [ValueOrLambda::Value(map), ValueOrLambda::Lambda(_)] = fields else {
            return plan_err!("{} expects a map and a lambda (k, v) -> …", self.name());
        };
        let (key, value) = entry_fields(self.name(), map.data_type())?;
        let params = match self.params {
            Params::KeyAndValue => vec![key, value],
            Params::Value => vec![value],
        };
        Ok(LambdaParametersProgress::Complete(vec![params]))
    }

    fn return_field_from_args(&self, args: HigherOrderReturnFieldArgs<'_>) -> Result<FieldRef> {
        let [ValueOrLambda::Value(map), ValueOrLambda::Lambda(answer)] = args.arg_fields else {
            return plan_err!("{} expects a map and a lambda (k, v) -> …", self.name());
        };
        let DataType::Map(entries, sorted) = map.data_type() else {
            return plan_err!("{} expects a map, not {}", self.name(), map.data_type());
        };
        let data_type = match self.over {
            Over::Filter => {
                if !matches!(answer.data_type(), DataType::Boolean | DataType::Null) {
                    return plan_err!(
                        "map_filter's lambda must answer a boolean, not {}",
                        answer.data_type()
                    );
                }
                map.data_type().clone()
            }
            Over::Values => {
                let (key, value) = entry_fields(self.name(), map.data_type())?;
                let value = Field::new(value.name(), answer.data_type().clone(), true)
                    .with_metadata(answer.metadata().clone());
                let fields = Fields::from(vec![key, Arc::new(value)]);
                DataType::Map(
                    Arc::new(Field::new(entries.name(), DataType::Struct(fields), false)),
                    *sorted,
                )
            }
        };
        Ok(Arc::new(Field::new(
            self.name(),
            data_type,
            map.is_nullable(),
        )))
    }

    fn clear_null_values(&self) -> bool {
        // NULL maps' entries are left out here ([`Entries::of`]).
        false
    }

    fn invoke_with_args(&self, args: HigherOrderFunctionArgs) -> Result<ColumnarValue> {
        let [ValueOrLambda::Value(map), ValueOrLambda::Lambda(lambda)] = args.args.as_slice()
        else {
            return exec_err!("{} expects a map and a lambda", self.name());
        };
        let map = map.to_array(args.number_rows)?;
        let Some(map) = map.as_map_opt() else {
            return exec_err!("{} expects a map, not {}", self.name(), map.data_type());
        };
        let entries = Entries::of(map)?;
        let answers = entries.evaluate(lambda, self.params)?;
        let DataType::Map(entries_field, sorted) = args.return_type() else {
            return exec_err!("{} answers a map", self.name());
        };
        let DataType::Struct(fields) = entries_field.data_type() else {
            return exec_err!("{} answers a map of entries", self.name());
        };
        let (keys, values, offsets) = match self.over {
            Over::Values => (entries.keys, answers, entries.offsets),
            Over::Filter => {
                let Some(keep) = answers.as_boolean_opt() else {
                    return exec_err!("map_filter's lambda must answer a boolean");
                };
                // NULL is not true: the entry goes.
                let keep = BooleanArray::from_iter(keep.iter().map(|b| Some(b == Some(true))));
                let mut lengths = Vec::with_capacity(map.len());
                let bounds = entries.offsets.windows(2);
                for bound in bounds {
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
        let entries = StructArray::try_new(fields.clone(), vec![keys, values], None)?;
        let result = MapArray::try_new(
            Arc::clone(entries_field),
            offsets,
            entries,
            map.nulls().cloned(),
            *sorted,
        )?;
        Ok(ColumnarValue::Array(Arc::new(result)))
    }
}
