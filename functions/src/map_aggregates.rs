//! Trino's aggregates that answer a map: `map_agg(key, value)` (each key with the first value
//! seen for it; rows with a NULL key are skipped) and `histogram(x)` (each non-NULL value with
//! how many rows have it). Both are NULL over no rows, as in Trino. The entries are ordered by
//! key, so an answer does not depend on which worker saw a row first.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, MapArray, StructArray};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::common::{Result, ScalarValue, exec_err, not_impl_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Signature, Volatility};

/// Which of the two aggregates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    MapAgg,
    Histogram,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct MapAggregate {
    kind: Kind,
    signature: Signature,
}

impl MapAggregate {
    pub(crate) fn map_agg() -> Self {
        Self::new(Kind::MapAgg)
    }

    pub(crate) fn histogram() -> Self {
        Self::new(Kind::Histogram)
    }

    fn new(kind: Kind) -> Self {
        Self {
            kind,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    /// The key and value types of the answer, from the argument types.
    fn entry_types(&self, arg_types: &[DataType]) -> Result<(DataType, DataType)> {
        match (self.kind, arg_types) {
            (Kind::MapAgg, [key, value]) => Ok((key.clone(), value.clone())),
            (Kind::Histogram, [key]) => Ok((key.clone(), DataType::Int64)),
            _ => Err(crate::args::unexpected_parameters(
                self.name(),
                arg_types,
                match self.kind {
                    Kind::MapAgg => "(K, V)",
                    Kind::Histogram => "(T)",
                },
            )),
        }
    }
}

/// Trino's `map(K, V)`, as DataFusion's `map` builds it.
pub(crate) fn map_type(key: &DataType, value: &DataType) -> DataType {
    DataType::Map(entries_field(key, value), false)
}

fn entries_field(key: &DataType, value: &DataType) -> FieldRef {
    Arc::new(Field::new(
        "entries",
        DataType::Struct(entry_fields(key, value)),
        false,
    ))
}

fn entry_fields(key: &DataType, value: &DataType) -> Fields {
    Fields::from(vec![
        Field::new("key", key.clone(), false),
        Field::new("value", value.clone(), true),
    ])
}

impl AggregateUDFImpl for MapAggregate {
    fn name(&self) -> &str {
        match self.kind {
            Kind::MapAgg => "map_agg",
            Kind::Histogram => "histogram",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.entry_types(arg_types)?;
        Ok(arg_types.to_vec())
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let (key, value) = self.entry_types(arg_types)?;
        Ok(map_type(&key, &value))
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        let types: Vec<DataType> = args
            .input_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let (key, value) = self.entry_types(&types)?;
        Ok(vec![
            Arc::new(Field::new(
                format!("{}[keys]", args.name),
                DataType::new_list(key, true),
                true,
            )),
            Arc::new(Field::new(
                format!("{}[values]", args.name),
                DataType::new_list(value, true),
                true,
            )),
        ])
    }

    fn accumulator(&self, args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        // DataFusion leaves DISTINCT to the accumulator where it cannot rewrite it away.
        if args.is_distinct {
            return not_impl_err!("{}(DISTINCT …) beside other aggregates", self.name());
        }
        let types: Vec<DataType> = args
            .expr_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let (key_type, value_type) = self.entry_types(&types)?;
        Ok(Box::new(MapAccumulator {
            kind: self.kind,
            key_type,
            value_type,
            positions: HashMap::new(),
            keys: Vec::new(),
            values: Vec::new(),
        }))
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }
}

#[derive(Debug)]
struct MapAccumulator {
    kind: Kind,
    key_type: DataType,
    value_type: DataType,
    /// Each key's place in `keys` and `values`.
    positions: HashMap<ScalarValue, usize>,
    keys: Vec<ScalarValue>,
    values: Vec<ScalarValue>,
}

impl MapAccumulator {
    /// One entry: map_agg keeps a key's first value, histogram adds the counts.
    fn add(&mut self, key: ScalarValue, value: ScalarValue) -> Result<()> {
        if key.is_null() {
            return Ok(());
        }
        match self.positions.get(&key) {
            Some(&at) => {
                if self.kind == Kind::Histogram {
                    self.values[at] = self.values[at].add_checked(&value)?;
                }
            }
            None => {
                self.positions.insert(key.clone(), self.keys.len());
                self.keys.push(key);
                self.values.push(value);
            }
        }
        Ok(())
    }

    fn add_arrays(&mut self, keys: &ArrayRef, values: Option<&ArrayRef>) -> Result<()> {
        for i in 0..keys.len() {
            if keys.is_null(i) {
                continue;
            }
            let value = match values {
                Some(values) => ScalarValue::try_from_array(values, i)?,
                None => ScalarValue::Int64(Some(1)),
            };
            self.add(ScalarValue::try_from_array(keys, i)?, value)?;
        }
        Ok(())
    }

    /// The entries ordered by key.
    fn sorted(&self) -> (Vec<ScalarValue>, Vec<ScalarValue>) {
        let mut order: Vec<usize> = (0..self.keys.len()).collect();
        order.sort_by(|&a, &b| {
            self.keys[a]
                .partial_cmp(&self.keys[b])
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        (
            order.iter().map(|&i| self.keys[i].clone()).collect(),
            order.iter().map(|&i| self.values[i].clone()).collect(),
        )
    }
}

impl Accumulator for MapAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        match (self.kind, values) {
            (Kind::MapAgg, [keys, values]) => self.add_arrays(keys, Some(values)),
            (Kind::Histogram, [keys]) => self.add_arrays(keys, None),
            _ => exec_err!("{:?} takes other arguments", self.kind),
        }
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let [keys, values] = states else {
            return exec_err!("a map aggregate's state is its keys and values");
        };
        let (keys, values) = (keys.as_list::<i32>(), values.as_list::<i32>());
        for row in 0..keys.len() {
            if keys.is_null(row) {
                continue;
            }
            self.add_arrays(&keys.value(row), Some(&values.value(row)))?;
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            ScalarValue::List(ScalarValue::new_list(&self.keys, &self.key_type, true)),
            ScalarValue::List(ScalarValue::new_list(&self.values, &self.value_type, true)),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let map = map_type(&self.key_type, &self.value_type);
        if self.keys.is_empty() {
            return ScalarValue::try_from(map);
        }
        let (keys, values) = self.sorted();
        let entries = StructArray::try_new(
            entry_fields(&self.key_type, &self.value_type),
            vec![
                ScalarValue::iter_to_array(keys)?,
                ScalarValue::iter_to_array(values)?,
            ],
            None,
        )?;
        let offsets = OffsetBuffer::from_lengths([entries.len()]);
        let array = MapArray::try_new(
            entries_field(&self.key_type, &self.value_type),
            offsets,
            entries,
            None,
            false,
        )?;
        ScalarValue::try_from_array(&array, 0)
    }

    fn size(&self) -> usize {
        size_of::<Self>()
            + ScalarValue::size_of_vec(&self.keys)
            + ScalarValue::size_of_vec(&self.values)
            + self.positions.capacity() * size_of::<(ScalarValue, usize)>()
    }
}
