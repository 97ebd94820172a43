//! Trino's subscripts of arrays and maps, and `element_at`: `sqe_subscript(container, key,
//! 'subscript' | 'element_at')`.
//!
//! - `a[i]`: from 1; `i` of 0, below 0 or past the end is INVALID_FUNCTION_ARGUMENT, as in
//!   Trino (DataFusion's counts a negative `i` from the end, and answers NULL past it);
//! - `element_at(a, i)`: a negative `i` counts from the end, past either end is NULL, 0 is an
//!   error;
//! - `m[k]`: a key the map lacks is INVALID_FUNCTION_ARGUMENT (`Key not present in map`);
//!   `element_at(m, k)` is NULL for it.
//!
//! A NULL container or key gives NULL. The key is taken in the map's key type (the dialect
//! refuses a key of another kind before it gets here).

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, GenericListArray, Int64Array, MapArray, OffsetSizeTrait, UInt64Array,
};
use datafusion::arrow::compute::{cast, take};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, result, unexpected_parameters};
use crate::error::invalid_argument;
use crate::identity::identity_rows;

/// The name the dialect calls.
pub const SUBSCRIPT: &str = "sqe_subscript";

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Subscript {
    signature: Signature,
}

impl Subscript {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// Whether the third argument says `element_at` (else: a subscript).
fn lenient(mode: Option<&ColumnarValue>) -> Result<bool> {
    match mode {
        Some(ColumnarValue::Scalar(value)) => match value.try_as_str().flatten() {
            Some("element_at") => Ok(true),
            Some("subscript") => Ok(false),
            _ => plan_err!("{SUBSCRIPT} takes 'subscript' or 'element_at'"),
        },
        _ => plan_err!("{SUBSCRIPT} takes 'subscript' or 'element_at'"),
    }
}

fn element_type(container: &DataType) -> Option<&DataType> {
    match container {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            Some(f.data_type())
        }
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(fields) if fields.len() == 2 => Some(fields[1].data_type()),
            _ => None,
        },
        _ => None,
    }
}

impl ScalarUDFImpl for Subscript {
    fn name(&self) -> &str {
        SUBSCRIPT
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [
                container @ (DataType::List(_)
                | DataType::LargeList(_)
                | DataType::FixedSizeList(..)),
                index,
                mode,
            ] if index.is_integer() || *index == DataType::Null => {
                Ok(vec![container.clone(), DataType::Int64, mode.clone()])
            }
            [container @ DataType::Map(..), key, mode] => {
                Ok(vec![container.clone(), key.clone(), mode.clone()])
            }
            _ => Err(unexpected_parameters(
                "element_at",
                arg_types.get(..2).unwrap_or(arg_types),
                "(array(E), bigint) or (map(K, V), K)",
            )),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first().and_then(element_type) {
            Some(t) => Ok(t.clone()),
            None => plan_err!("{SUBSCRIPT} takes an array or a map"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let lenient = lenient(args.args.get(2))?;
        let columns = arrays(&args)?;
        let (Some(container), Some(key)) = (columns.first(), columns.get(1)) else {
            return exec_err!("{SUBSCRIPT} takes a container and a key");
        };
        let picked = match container.data_type() {
            DataType::List(_) => list_element(container.as_list::<i32>(), key, lenient)?,
            DataType::LargeList(_) => list_element(container.as_list::<i64>(), key, lenient)?,
            DataType::FixedSizeList(f, _) => {
                let list = cast(container, &DataType::List(Arc::clone(f)))?;
                list_element(list.as_list::<i32>(), key, lenient)?
            }
            DataType::Map(..) => map_value(container.as_map(), key, lenient)?,
            other => return exec_err!("{SUBSCRIPT} of {other}"),
        };
        result(&args, picked)
    }
}

fn list_element<O: OffsetSizeTrait>(
    list: &GenericListArray<O>,
    index: &ArrayRef,
    lenient: bool,
) -> Result<ArrayRef> {
    let index = cast(index, &DataType::Int64)?;
    let index: &Int64Array = index.as_primitive();
    let offsets = list.value_offsets();
    let mut positions = Vec::with_capacity(list.len());
    for row in 0..list.len() {
        if list.is_null(row) || index.is_null(row) {
            positions.push(None);
            continue;
        }
        let i = index.value(row);
        let start = offsets[row].as_usize() as u64;
        let length = (offsets[row + 1].as_usize() - offsets[row].as_usize()) as i64;
        if i == 0 {
            return Err(invalid_argument("SQL array indices start at 1"));
        }
        let at = if lenient {
            match i {
                i if i > length || -i > length => None,
                i if i > 0 => Some(i - 1),
                i => Some(length + i),
            }
        } else if i < 0 {
            return Err(invalid_argument(format!(
                "Array subscript is negative: {i}"
            )));
        } else if i > length {
            return Err(invalid_argument(format!(
                "Array subscript must be less than or equal to array length: {i} > {length}"
            )));
        } else {
            Some(i - 1)
        };
        positions.push(at.map(|at| start + at as u64));
    }
    Ok(take(list.values(), &UInt64Array::from(positions), None)?)
}

fn map_value(map: &MapArray, key: &ArrayRef, lenient: bool) -> Result<ArrayRef> {
    let keys = map.keys();
    let wanted = cast(key, keys.data_type())?;
    // Keys are found as maps are built: by Trino's identity (0.0 is -0.0, NaNs are one).
    let rows = identity_rows(&[keys, &wanted])?;
    let (Some(key_rows), Some(wanted_rows)) = (rows.first(), rows.get(1)) else {
        return exec_err!("rows for a map's keys and the keys looked up");
    };
    let offsets = map.value_offsets();
    let mut positions = Vec::with_capacity(map.len());
    for row in 0..map.len() {
        if map.is_null(row) || wanted.is_null(row) {
            positions.push(None);
            continue;
        }
        let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
        let found = (start..end).find(|&j| key_rows.row(j) == wanted_rows.row(row));
        match found {
            Some(j) => positions.push(Some(j as u64)),
            None if lenient => positions.push(None),
            None => {
                let shown = ScalarValue::try_from_array(key, row)?;
                return Err(invalid_argument(format!("Key not present in map: {shown}")));
            }
        }
    }
    Ok(take(map.values(), &UInt64Array::from(positions), None)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int32Array, ListArray, MapBuilder, StringBuilder};
    use datafusion::arrow::datatypes::Int32Type;

    fn list() -> ListArray {
        ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), Some(2), Some(3)]),
            None,
        ])
    }

    fn indices(values: Vec<Option<i64>>) -> ArrayRef {
        Arc::new(Int64Array::from(values))
    }

    #[test]
    fn subscripts_count_from_one_and_refuse_what_they_miss() -> Result<()> {
        let picked = list_element(&list(), &indices(vec![Some(3), Some(1)]), false)?;
        let picked: &Int32Array = picked.as_primitive();
        assert_eq!(picked.iter().collect::<Vec<_>>(), vec![Some(3), None]);
        for bad in [-1, 0, 4] {
            assert!(list_element(&list(), &indices(vec![Some(bad), None]), false).is_err());
        }
        Ok(())
    }

    #[test]
    fn element_at_counts_back_and_is_null_past_the_ends() -> Result<()> {
        let picked = list_element(&list(), &indices(vec![Some(-1), Some(1)]), true)?;
        let picked: &Int32Array = picked.as_primitive();
        assert_eq!(picked.iter().collect::<Vec<_>>(), vec![Some(3), None]);
        let past = list_element(&list(), &indices(vec![Some(-4), None]), true)?;
        assert!(past.is_null(0));
        assert!(list_element(&list(), &indices(vec![Some(0), None]), true).is_err());
        Ok(())
    }

    #[test]
    fn map_subscripts_refuse_a_missing_key() -> Result<()> {
        let mut builder = MapBuilder::new(None, StringBuilder::new(), Int32Array::builder(2));
        builder.keys().append_value("a");
        builder.values().append_value(1);
        builder.keys().append_value("b");
        builder.values().append_null();
        builder.append(true)?;
        let map = builder.finish();
        let key = |k: &str| -> ArrayRef {
            Arc::new(datafusion::arrow::array::StringArray::from(vec![k]))
        };
        let found = map_value(&map, &key("b"), false)?;
        assert!(found.is_null(0), "a present key's NULL value");
        let found = map_value(&map, &key("a"), false)?;
        assert_eq!(found.as_primitive::<Int32Type>().value(0), 1);
        assert!(map_value(&map, &key("c"), false).is_err());
        assert!(map_value(&map, &key("c"), true)?.is_null(0));
        Ok(())
    }
}
