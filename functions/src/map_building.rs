//! Trino's functions that build a map from other values: `map_from_entries` (an array of
//! key-value rows), `multimap_from_entries` (the same, each key's values as an array),
//! `map_concat` (maps merged, the last value of a key winning) and `array_histogram` (each
//! element's count). DataFusion has none of them. Keys are told apart as Trino's
//! `IS DISTINCT FROM` tells values apart (`crate::identity`).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Int64Array, ListArray, MapArray, MutableArrayData, StructArray,
    make_array,
};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::row::Rows;
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, result, unexpected_parameters};
use crate::error::invalid_argument;
use crate::identity::identity_rows;
use crate::map_aggregates::map_type;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Building {
    FromEntries,
    MultimapFromEntries,
    Concat,
    Histogram,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct MapBuilding {
    kind: Building,
    signature: Signature,
}

pub(crate) fn map_building_functions() -> Vec<MapBuilding> {
    [
        Building::FromEntries,
        Building::MultimapFromEntries,
        Building::Concat,
        Building::Histogram,
    ]
    .into_iter()
    .map(|kind| MapBuilding {
        kind,
        signature: Signature::user_defined(Volatility::Immutable),
    })
    .collect()
}

/// The key and value types of a map type.
fn entry_types(t: &DataType) -> Option<(DataType, DataType)> {
    let DataType::Map(entries, _) = t else {
        return None;
    };
    match entries.data_type() {
        DataType::Struct(fields) if fields.len() == 2 => {
            Some((fields[0].data_type().clone(), fields[1].data_type().clone()))
        }
        _ => None,
    }
}

/// The element type of an array type.
fn element(t: &DataType) -> Option<&DataType> {
    match t {
        DataType::List(f) => Some(f.data_type()),
        _ => None,
    }
}

impl ScalarUDFImpl for MapBuilding {
    fn name(&self) -> &str {
        match self.kind {
            Building::FromEntries => "map_from_entries",
            Building::MultimapFromEntries => "multimap_from_entries",
            Building::Concat => "map_concat",
            Building::Histogram => "array_histogram",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let takes = match (self.kind, arg_types) {
            (Building::FromEntries | Building::MultimapFromEntries, [t]) => {
                matches!(element(t), Some(DataType::Struct(f)) if f.len() == 2)
            }
            (Building::Histogram, [t]) => element(t).is_some(),
            // Maps of one type (Trino's map_concat(map(K,V), map(K,V), …)); NULL is one.
            (Building::Concat, maps) if maps.len() > 1 => {
                let mut types = maps
                    .iter()
                    .filter(|t| **t != DataType::Null)
                    .map(entry_types);
                let first = types.next();
                if let Some(Some(_)) = &first
                    && types.all(|t| t == first.clone().flatten())
                    && let Some(map) = maps.iter().find(|t| **t != DataType::Null)
                {
                    return Ok(vec![map.clone(); maps.len()]);
                }
                false
            }
            _ => false,
        };
        if !takes {
            let expected = match self.kind {
                Building::FromEntries | Building::MultimapFromEntries => "(array(row(K,V)))",
                Building::Concat => "(map(K,V), map(K,V), ...)",
                Building::Histogram => "(array(T))",
            };
            return Err(unexpected_parameters(self.name(), arg_types, expected));
        }
        Ok(arg_types.to_vec())
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match (self.kind, arg_types.first().map(|t| (t, element(t)))) {
            (Building::FromEntries, Some((_, Some(DataType::Struct(fields)))))
                if fields.len() == 2 =>
            {
                Ok(map_type(fields[0].data_type(), fields[1].data_type()))
            }
            (Building::MultimapFromEntries, Some((_, Some(DataType::Struct(fields)))))
                if fields.len() == 2 =>
            {
                Ok(map_type(
                    fields[0].data_type(),
                    &DataType::new_list(fields[1].data_type().clone(), true),
                ))
            }
            (Building::Concat, Some((first, _))) => Ok(first.clone()),
            (Building::Histogram, Some((_, Some(element)))) => {
                Ok(map_type(element, &DataType::Int64))
            }
            _ => plan_err!("{}: unexpected arguments", self.name()),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let answer = match (self.kind, columns.as_slice()) {
            (Building::FromEntries, [list]) => from_entries(list)?,
            (Building::MultimapFromEntries, [list]) => multimap_from_entries(list)?,
            (Building::Histogram, [list]) => histogram(list)?,
            (Building::Concat, maps) => concat(maps, args.return_field.data_type())?,
            _ => return exec_err!("{}: wrong number of arguments", self.name()),
        };
        result(&args, answer)
    }
}

/// Keys as rows that are equal where Trino's keys are the same.
fn key_rows(keys: &ArrayRef) -> Result<Rows> {
    match identity_rows(&[keys])?.pop() {
        Some(rows) => Ok(rows),
        None => exec_err!("no rows for the keys"),
    }
}

/// A map of `keys` and `values` (one entry each, in order) with `offsets` per row.
fn map_of(
    map_type: &DataType,
    offsets: Vec<i32>,
    keys: ArrayRef,
    values: ArrayRef,
    valid: Vec<bool>,
) -> Result<ArrayRef> {
    let DataType::Map(entries_field, _) = map_type else {
        return exec_err!("expected a map type, not {map_type}");
    };
    let DataType::Struct(fields) = entries_field.data_type() else {
        return exec_err!("a map's entries are rows");
    };
    let entries = StructArray::try_new(fields.clone(), vec![keys, values], None)?;
    Ok(Arc::new(MapArray::try_new(
        Arc::clone(entries_field),
        OffsetBuffer::new(offsets.into()),
        entries,
        Some(NullBuffer::from(valid)),
        false,
    )?))
}

/// An array of key-value rows, read as map entries.
struct Entries<'a> {
    list: &'a ListArray,
    keys: &'a ArrayRef,
    values: &'a ArrayRef,
    /// The keys as comparable rows.
    rows: Rows,
    // Logical: a column of NULLs (`ROW(NULL, 1)`) keeps no null buffer.
    entry_nulls: Option<NullBuffer>,
    key_nulls: Option<NullBuffer>,
}

impl<'a> Entries<'a> {
    fn of(function: &str, list: &'a ArrayRef) -> Result<Self> {
        let Some(list) = list.as_list_opt::<i32>() else {
            return exec_err!("{function} takes an array");
        };
        let Some(entries) = list.values().as_struct_opt() else {
            return exec_err!("{function} takes an array of rows");
        };
        let [keys, values] = entries.columns() else {
            return exec_err!("{function} takes rows of two fields");
        };
        Ok(Self {
            list,
            keys,
            values,
            rows: key_rows(keys)?,
            entry_nulls: entries.logical_nulls(),
            key_nulls: keys.logical_nulls(),
        })
    }

    /// Row `row`'s entries grouped by key (the indexes of each key's entries, keys in the
    /// order they first appear). A NULL entry or key is refused, and with `unique` a key seen
    /// again, as Trino refuses them.
    fn groups(&self, row: usize, unique: bool) -> Result<Vec<Vec<usize>>> {
        let is_null = |nulls: &Option<NullBuffer>, i| nulls.as_ref().is_some_and(|n| n.is_null(i));
        let offsets = self.list.value_offsets();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut places: HashMap<_, usize> = HashMap::new();
        for i in offsets[row] as usize..offsets[row + 1] as usize {
            if is_null(&self.entry_nulls, i) {
                return Err(invalid_argument("map entry cannot be null"));
            }
            if is_null(&self.key_nulls, i) {
                return Err(invalid_argument("map key cannot be null"));
            }
            match places.get(&self.rows.row(i)) {
                Some(_) if unique => {
                    return Err(invalid_argument(format!(
                        "Duplicate map keys ({}) are not allowed",
                        array_value_to_string(self.keys, i)?
                    )));
                }
                Some(&place) => groups[place].push(i),
                None => {
                    places.insert(self.rows.row(i), groups.len());
                    groups.push(vec![i]);
                }
            }
        }
        Ok(groups)
    }
}

/// `map_from_entries(array(row(K, V)))`: a NULL entry or key, or a key twice, is refused.
/// Only the entries of the rows given are read (a NULL array's or a slice's hidden entries
/// may hold anything).
fn from_entries(list: &ArrayRef) -> Result<ArrayRef> {
    let entries = Entries::of("map_from_entries", list)?;
    let (list, keys, values) = (entries.list, entries.keys, entries.values);
    let (key_data, value_data) = (keys.to_data(), values.to_data());
    let mut map_keys = MutableArrayData::new(vec![&key_data], false, 0);
    let mut map_values = MutableArrayData::new(vec![&value_data], true, 0);
    let mut offsets = vec![0i32];
    let mut valid = Vec::with_capacity(list.len());
    let bounds = list.value_offsets();
    for row in 0..list.len() {
        valid.push(list.is_valid(row));
        if list.is_valid(row) {
            entries.groups(row, true)?;
            let (start, end) = (bounds[row] as usize, bounds[row + 1] as usize);
            map_keys.extend(0, start, end);
            map_values.extend(0, start, end);
        }
        offsets.push(map_keys.len() as i32);
    }
    map_of(
        &map_type(keys.data_type(), values.data_type()),
        offsets,
        make_array(map_keys.freeze()),
        make_array(map_values.freeze()),
        valid,
    )
}

/// `multimap_from_entries(array(row(K, V)))`: each key's values as an array, in the order
/// the entries give them, keys in the order they first appear; a NULL entry or key is refused.
fn multimap_from_entries(list: &ArrayRef) -> Result<ArrayRef> {
    let entries = Entries::of("multimap_from_entries", list)?;
    let (list, keys, values) = (entries.list, entries.keys, entries.values);
    let (key_data, value_data) = (keys.to_data(), values.to_data());
    let mut map_keys = MutableArrayData::new(vec![&key_data], false, 0);
    let mut map_values = MutableArrayData::new(vec![&value_data], true, 0);
    let (mut map_offsets, mut value_offsets) = (vec![0i32], vec![0i32]);
    let mut valid = Vec::with_capacity(list.len());
    for row in 0..list.len() {
        valid.push(list.is_valid(row));
        if list.is_valid(row) {
            for members in entries.groups(row, false)? {
                // The key of its first entry, then the values of all of them.
                if let Some(&first) = members.first() {
                    map_keys.extend(0, first, first + 1);
                }
                for i in members {
                    map_values.extend(0, i, i + 1);
                }
                value_offsets.push(map_values.len() as i32);
            }
        }
        map_offsets.push(value_offsets.len() as i32 - 1);
    }
    let value_type = DataType::new_list(values.data_type().clone(), true);
    let DataType::List(item) = &value_type else {
        return exec_err!("a list type");
    };
    let grouped = ListArray::try_new(
        Arc::clone(item),
        OffsetBuffer::new(value_offsets.into()),
        make_array(map_values.freeze()),
        None,
    )?;
    map_of(
        &map_type(keys.data_type(), &value_type),
        map_offsets,
        make_array(map_keys.freeze()),
        Arc::new(grouped),
        valid,
    )
}

/// `map_concat(m1, m2, …)`: every key of the maps, with the value of the last map that has
/// it, in the order keys first appear; NULL when any map is NULL.
fn concat(maps: &[ArrayRef], map_type: &DataType) -> Result<ArrayRef> {
    let maps: Vec<&MapArray> = maps
        .iter()
        .map(|m| match m.as_map_opt() {
            Some(map) => Ok(map),
            None => exec_err!("map_concat takes maps"),
        })
        .collect::<Result<_>>()?;
    let Some(first) = maps.first() else {
        return exec_err!("map_concat takes maps");
    };
    let key_data: Vec<_> = maps.iter().map(|m| m.keys().to_data()).collect();
    let value_data: Vec<_> = maps.iter().map(|m| m.values().to_data()).collect();
    let rows = identity_rows(&maps.iter().map(|m| m.keys()).collect::<Vec<_>>())?;
    let mut keys = MutableArrayData::new(key_data.iter().collect(), false, 0);
    let mut values = MutableArrayData::new(value_data.iter().collect(), true, 0);
    let mut offsets = vec![0i32];
    let mut valid = Vec::with_capacity(first.len());
    for row in 0..first.len() {
        let present = maps.iter().all(|m| m.is_valid(row));
        valid.push(present);
        if present {
            // Each key's place in the answer, and the map and entry of its latest value.
            let mut places: HashMap<_, usize> = HashMap::new();
            let mut chosen: Vec<(usize, usize)> = Vec::new();
            for (m, map) in maps.iter().enumerate() {
                let entries = map.value_offsets();
                for i in entries[row] as usize..entries[row + 1] as usize {
                    match places.get(&rows[m].row(i)) {
                        Some(&place) => chosen[place] = (m, i),
                        None => {
                            places.insert(rows[m].row(i), chosen.len());
                            chosen.push((m, i));
                        }
                    }
                }
            }
            for (m, i) in chosen {
                keys.extend(m, i, i + 1);
                values.extend(m, i, i + 1);
            }
        }
        offsets.push(keys.len() as i32);
    }
    map_of(
        map_type,
        offsets,
        make_array(keys.freeze()),
        make_array(values.freeze()),
        valid,
    )
}

/// `array_histogram(array(T))`: each element's count, NULL elements skipped, in the order
/// elements first appear.
fn histogram(list: &ArrayRef) -> Result<ArrayRef> {
    let Some(list) = list.as_list_opt::<i32>() else {
        return exec_err!("array_histogram takes an array");
    };
    let elements = list.values();
    let rows = key_rows(elements)?;
    let data = elements.to_data();
    let mut keys = MutableArrayData::new(vec![&data], false, 0);
    let mut counts: Vec<i64> = Vec::new();
    let mut offsets = vec![0i32];
    let mut valid = Vec::with_capacity(list.len());
    let value_offsets = list.value_offsets();
    let nulls = elements.logical_nulls();
    for row in 0..list.len() {
        valid.push(list.is_valid(row));
        if list.is_valid(row) {
            let mut places = HashMap::new();
            for i in value_offsets[row] as usize..value_offsets[row + 1] as usize {
                if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
                    continue;
                }
                match places.get(&rows.row(i)) {
                    Some(&place) => counts[place] += 1,
                    None => {
                        places.insert(rows.row(i), counts.len());
                        counts.push(1);
                        keys.extend(0, i, i + 1);
                    }
                }
            }
        }
        offsets.push(counts.len() as i32);
    }
    let map = map_type(elements.data_type(), &DataType::Int64);
    map_of(
        &map,
        offsets,
        make_array(keys.freeze()),
        Arc::new(Int64Array::from(counts)),
        valid,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int32Array, StringArray};
    use datafusion::arrow::datatypes::{Field, Fields, Float64Type, Int32Type};

    /// The fields of a map's entries.
    fn entry_fields(map: &ArrayRef) -> Fields {
        match map.data_type() {
            DataType::Map(entries, _) => match entries.data_type() {
                DataType::Struct(fields) => fields.clone(),
                _ => Fields::empty(),
            },
            _ => Fields::empty(),
        }
    }

    fn shown(map: &ArrayRef) -> Vec<String> {
        (0..map.len())
            .map(|i| array_value_to_string(map, i).unwrap_or_default())
            .collect()
    }

    fn entries(keys: Vec<&str>, values: Vec<Option<i32>>, lengths: Vec<usize>) -> ArrayRef {
        entries_with_nulls(keys.into_iter().map(Some).collect(), values, lengths, None)
    }

    fn entries_with_nulls(
        keys: Vec<Option<&str>>,
        values: Vec<Option<i32>>,
        lengths: Vec<usize>,
        nulls: Option<NullBuffer>,
    ) -> ArrayRef {
        let fields = Fields::from(vec![
            Field::new("c0", DataType::Utf8, true),
            Field::new("c1", DataType::Int32, true),
        ]);
        let rows = StructArray::new(
            fields.clone(),
            vec![
                Arc::new(StringArray::from(keys)),
                Arc::new(Int32Array::from(values)),
            ],
            None,
        );
        Arc::new(ListArray::new(
            Arc::new(Field::new("item", DataType::Struct(fields), true)),
            OffsetBuffer::from_lengths(lengths),
            Arc::new(rows),
            nulls,
        ))
    }

    #[test]
    fn entries_hidden_by_a_null_array_or_a_slice_are_not_read() -> Result<()> {
        // The second row's entry has a NULL key: under a NULL array, or outside a slice.
        let (keys, values) = (vec![Some("a"), None], vec![Some(1), Some(2)]);
        let hidden = entries_with_nulls(
            keys.clone(),
            values.clone(),
            vec![1, 1],
            Some(NullBuffer::from(vec![true, false])),
        );
        assert_eq!(shown(&from_entries(&hidden)?), ["{a: 1}", ""]);
        let sliced = entries_with_nulls(keys, values, vec![1, 1], None).slice(0, 1);
        assert_eq!(shown(&from_entries(&sliced)?), ["{a: 1}"]);
        Ok(())
    }

    #[test]
    fn zeros_of_either_sign_are_one_key_and_nans_one_element() -> Result<()> {
        let list: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Float64Type, _, _>(vec![
            Some(vec![Some(0.0), Some(-0.0), Some(f64::NAN), Some(f64::NAN)]),
        ]));
        let counted = histogram(&list)?;
        assert_eq!(counted.as_map().value_length(0), 2);
        Ok(())
    }

    #[test]
    fn entries_become_a_map_and_a_repeated_key_is_refused() -> Result<()> {
        let map = from_entries(&entries(vec!["a", "b"], vec![Some(1), None], vec![2]))?;
        assert_eq!(shown(&map), ["{a: 1, b: }"]);
        assert_eq!(entry_fields(&map)[0].name(), "key");
        let twice = from_entries(&entries(vec!["a", "a"], vec![Some(1), Some(2)], vec![2]));
        let Err(e) = twice else {
            return exec_err!("a repeated key was taken");
        };
        assert!(
            e.to_string()
                .contains("Duplicate map keys (a) are not allowed")
        );
        Ok(())
    }

    #[test]
    fn concatenated_maps_keep_the_last_value_of_a_key() -> Result<()> {
        let left = from_entries(&entries(vec!["a", "b"], vec![Some(1), Some(2)], vec![2]))?;
        let right = from_entries(&entries(vec!["b", "c"], vec![Some(20), Some(30)], vec![2]))?;
        let map_type = left.data_type().clone();
        let merged = concat(&[left, right], &map_type)?;
        assert_eq!(shown(&merged), ["{a: 1, b: 20, c: 30}"]);
        Ok(())
    }

    #[test]
    fn a_histogram_counts_each_element_but_nulls() -> Result<()> {
        let list: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(42), Some(7), Some(42), None]),
            Some(vec![]),
            None,
        ]));
        let counted = histogram(&list)?;
        assert_eq!(shown(&counted), ["{42: 2, 7: 1}", "{}", ""]);
        assert!(counted.is_null(2));
        Ok(())
    }

    #[test]
    fn entries_of_one_key_gather_into_an_array() -> Result<()> {
        let map = multimap_from_entries(&entries(
            vec!["a", "b", "a"],
            vec![Some(1), Some(2), None],
            vec![3],
        ))?;
        assert_eq!(shown(&map), ["{a: [1, ], b: [2]}"]);
        Ok(())
    }
}
