//! Trino's aggregates that answer a map: `map_agg(key, value)` (each key with the first value
//! seen for it; rows with a NULL key are skipped), `histogram(x)` (each non-NULL value with
//! how many rows have it), `map_union(m)` (the maps' entries, a key's first value kept) and
//! `multimap_agg(key, value)` (each key with all its values, as an array). Each is NULL over
//! no rows, as in Trino. The entries are ordered by key, so an answer does not depend on which
//! worker saw a row first.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, MapArray, StructArray};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::common::{Result, ScalarValue, exec_err, not_impl_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Signature, Volatility};

use crate::identity::identity_key;

/// Which of the two aggregates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    MapAgg,
    Histogram,
    MapUnion,
    MultimapAgg,
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

    pub(crate) fn map_union() -> Self {
        Self::new(Kind::MapUnion)
    }

    pub(crate) fn multimap_agg() -> Self {
        Self::new(Kind::MultimapAgg)
    }

    fn new(kind: Kind) -> Self {
        Self {
            kind,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    /// The key and value types of the entries it keeps (a multimap's values one by one),
    /// from the argument types.
    fn entry_types(&self, arg_types: &[DataType]) -> Result<(DataType, DataType)> {
        match (self.kind, arg_types) {
            (Kind::MapAgg | Kind::MultimapAgg, [key, value]) => Ok((key.clone(), value.clone())),
            (Kind::Histogram, [key]) => Ok((key.clone(), DataType::Int64)),
            (Kind::MapUnion, [DataType::Map(entries, _)]) => match entries.data_type() {
                DataType::Struct(fields) if fields.len() == 2 => {
                    Ok((fields[0].data_type().clone(), fields[1].data_type().clone()))
                }
                _ => exec_err!("a map's entries are rows of two fields"),
            },
            _ => Err(crate::args::unexpected_parameters(
                self.name(),
                arg_types,
                match self.kind {
                    Kind::MapAgg | Kind::MultimapAgg => "(K, V)",
                    Kind::Histogram => "(T)",
                    Kind::MapUnion => "(map(K,V))",
                },
            )),
        }
    }

    /// The answer's value type: a multimap's is an array of the values.
    fn answer_value_type(&self, value: DataType) -> DataType {
        match self.kind {
            Kind::MultimapAgg => DataType::new_list(value, true),
            _ => value,
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
            Kind::MapUnion => "map_union",
            Kind::MultimapAgg => "multimap_agg",
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
        Ok(map_type(&key, &self.answer_value_type(value)))
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        let types = crate::args::data_types(args.input_fields);
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
        let types = crate::args::data_types(args.expr_fields);
        let (key_type, value_type) = self.entry_types(&types)?;
        Ok(Box::new(MapAccumulator {
            kind: self.kind,
            key_type,
            value_type,
            positions: HashMap::new(),
            keys: Vec::new(),
            values: Vec::new(),
            more_values: Vec::new(),
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
    /// Each key's place in `keys` and `values`, by its identity (`crate::identity`).
    positions: HashMap<ScalarValue, usize>,
    keys: Vec<ScalarValue>,
    values: Vec<ScalarValue>,
    /// A multimap's values after each key's first, by the key's place.
    more_values: Vec<Vec<ScalarValue>>,
}

impl MapAccumulator {
    /// One entry: map_agg and map_union keep a key's first value, histogram adds the
    /// counts, multimap_agg keeps them all.
    fn add(&mut self, key: ScalarValue, value: ScalarValue) -> Result<()> {
        if key.is_null() {
            return Ok(());
        }
        let identity = identity_key(&key)?;
        match self.positions.get(&identity) {
            Some(&at) => match self.kind {
                Kind::Histogram => self.values[at] = self.values[at].add_checked(&value)?,
                Kind::MultimapAgg => self.more_values[at].push(value),
                Kind::MapAgg | Kind::MapUnion => {}
            },
            None => {
                self.positions.insert(identity, self.keys.len());
                self.keys.push(key);
                self.values.push(value);
                if self.kind == Kind::MultimapAgg {
                    self.more_values.push(Vec::new());
                }
            }
        }
        Ok(())
    }

    /// Every entry kept, a multimap's keys once per value.
    fn entries(&self) -> (Vec<ScalarValue>, Vec<ScalarValue>) {
        let (mut keys, mut values) = (self.keys.clone(), self.values.clone());
        for (at, more) in self.more_values.iter().enumerate() {
            for value in more {
                keys.push(self.keys[at].clone());
                values.push(value.clone());
            }
        }
        (keys, values)
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

    /// The entries ordered by key; a multimap's values gathered into an array.
    fn sorted(&self) -> (Vec<ScalarValue>, Vec<ScalarValue>) {
        let mut order: Vec<usize> = (0..self.keys.len()).collect();
        order.sort_by(|&a, &b| {
            self.keys[a]
                .partial_cmp(&self.keys[b])
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let value = |i: usize| match self.kind {
            Kind::MultimapAgg => {
                let all: Vec<ScalarValue> = std::iter::once(self.values[i].clone())
                    .chain(self.more_values[i].iter().cloned())
                    .collect();
                ScalarValue::List(ScalarValue::new_list(&all, &self.value_type, true))
            }
            _ => self.values[i].clone(),
        };
        (
            order.iter().map(|&i| self.keys[i].clone()).collect(),
            order.iter().map(|&i| value(i)).collect(),
        )
    }
}

impl Accumulator for MapAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        match (self.kind, values) {
            (Kind::MapAgg | Kind::MultimapAgg, [keys, values]) => {
                self.add_arrays(keys, Some(values))
            }
            (Kind::Histogram, [keys]) => self.add_arrays(keys, None),
            (Kind::MapUnion, [maps]) => {
                let Some(maps) = maps.as_map_opt() else {
                    return exec_err!("map_union takes maps");
                };
                for row in 0..maps.len() {
                    if maps.is_valid(row) {
                        let entries = maps.value(row);
                        let [keys, values] = entries.columns() else {
                            return exec_err!("a map's entries are keys and values");
                        };
                        self.add_arrays(keys, Some(values))?;
                    }
                }
                Ok(())
            }
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
        let (keys, values) = self.entries();
        Ok(vec![
            ScalarValue::List(ScalarValue::new_list(&keys, &self.key_type, true)),
            ScalarValue::List(ScalarValue::new_list(&values, &self.value_type, true)),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let value_type = match self.kind {
            Kind::MultimapAgg => DataType::new_list(self.value_type.clone(), true),
            _ => self.value_type.clone(),
        };
        let map = map_type(&self.key_type, &value_type);
        if self.keys.is_empty() {
            return ScalarValue::try_from(map);
        }
        let (keys, values) = self.sorted();
        let entries = StructArray::try_new(
            entry_fields(&self.key_type, &value_type),
            vec![
                ScalarValue::iter_to_array(keys)?,
                ScalarValue::iter_to_array(values)?,
            ],
            None,
        )?;
        let offsets = OffsetBuffer::from_lengths([entries.len()]);
        let array = MapArray::try_new(
            entries_field(&self.key_type, &value_type),
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
            + self
                .more_values
                .iter()
                .map(ScalarValue::size_of_vec)
                .sum::<usize>()
            + self.positions.capacity() * size_of::<(ScalarValue, usize)>()
    }
}
