//! Trino's identity of values, the one map keys and histogram elements are told apart by
//! (its `IS DISTINCT FROM`): as Arrow's row format compares them, except that every NaN is
//! one value and `-0.0` is `0.0`. The row format orders floats by their bits, which keeps
//! both pairs apart.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayData, ArrayRef, Float32Array, Float64Array, make_array,
};
use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type};
use datafusion::arrow::row::{RowConverter, Rows, SortField};
use datafusion::common::{Result, ScalarValue};

/// `arrays` (all of one type) as rows that are equal where Trino's values are identical.
pub(crate) fn identity_rows(arrays: &[&ArrayRef]) -> Result<Vec<Rows>> {
    let Some(first) = arrays.first() else {
        return Ok(Vec::new());
    };
    let converter = RowConverter::new(vec![SortField::new(first.data_type().clone())])?;
    arrays
        .iter()
        .map(|array| Ok(converter.convert_columns(&[canonical(array)?])?))
        .collect()
}

/// A value to look keys up by: identical values give equal keys. The value itself (what
/// an answer shows) is kept by the caller.
pub(crate) fn identity_key(value: &ScalarValue) -> Result<ScalarValue> {
    match value {
        ScalarValue::Float64(v) => Ok(ScalarValue::Float64(v.map(canonical_f64))),
        ScalarValue::Float32(v) => Ok(ScalarValue::Float32(v.map(canonical_f32))),
        v if has_floats(&v.data_type()) => {
            ScalarValue::try_from_array(&canonical(&v.to_array()?)?, 0)
        }
        v => Ok(v.clone()),
    }
}

fn canonical_f64(v: f64) -> f64 {
    if v == 0.0 {
        0.0
    } else if v.is_nan() {
        f64::NAN
    } else {
        v
    }
}

fn canonical_f32(v: f32) -> f32 {
    if v == 0.0 {
        0.0
    } else if v.is_nan() {
        f32::NAN
    } else {
        v
    }
}

/// `array` with its floats (at any depth) made canonical; untouched when it has none.
fn canonical(array: &ArrayRef) -> Result<ArrayRef> {
    if !has_floats(array.data_type()) {
        return Ok(Arc::clone(array));
    }
    Ok(make_array(canonical_data(array.to_data())?))
}

fn canonical_data(data: ArrayData) -> Result<ArrayData> {
    Ok(match data.data_type() {
        DataType::Float64 => Float64Array::from(data)
            .unary::<_, Float64Type>(canonical_f64)
            .into_data(),
        DataType::Float32 => Float32Array::from(data)
            .unary::<_, Float32Type>(canonical_f32)
            .into_data(),
        t if !has_floats(t) => data,
        _ => {
            let children = data
                .child_data()
                .iter()
                .cloned()
                .map(canonical_data)
                .collect::<Result<Vec<_>>>()?;
            data.into_builder().child_data(children).build()?
        }
    })
}

fn has_floats(t: &DataType) -> bool {
    match t {
        DataType::Float32 | DataType::Float64 => true,
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => has_floats(f.data_type()),
        DataType::Struct(fields) => fields.iter().any(|f| has_floats(f.data_type())),
        DataType::Dictionary(_, values) => has_floats(values),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int32Array, ListArray, StructArray};
    use datafusion::arrow::datatypes::Field;

    fn equal_rows(array: ArrayRef, a: usize, b: usize) -> Result<bool> {
        let rows = identity_rows(&[&array])?;
        Ok(rows[0].row(a) == rows[0].row(b))
    }

    #[test]
    fn zeros_of_either_sign_and_all_nans_are_one_value() -> Result<()> {
        let nan_with_payload = f64::from_bits(f64::NAN.to_bits() | 1);
        let doubles: ArrayRef = Arc::new(Float64Array::from(vec![
            0.0,
            -0.0,
            f64::NAN,
            nan_with_payload,
            1.0,
        ]));
        assert!(equal_rows(Arc::clone(&doubles), 0, 1)?);
        assert!(equal_rows(Arc::clone(&doubles), 2, 3)?);
        assert!(!equal_rows(Arc::clone(&doubles), 0, 4)?);
        let reals: ArrayRef = Arc::new(Float32Array::from(vec![0.0, -0.0]));
        assert!(equal_rows(reals, 0, 1)?);
        Ok(())
    }

    #[test]
    fn nested_floats_are_made_canonical_too() -> Result<()> {
        let lists: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Float64Type, _, _>(vec![
            Some(vec![Some(-0.0)]),
            Some(vec![Some(0.0)]),
        ]));
        assert!(equal_rows(lists, 0, 1)?);
        let rows: ArrayRef = Arc::new(StructArray::from(vec![
            (
                Arc::new(Field::new("a", DataType::Int32, true)),
                Arc::new(Int32Array::from(vec![1, 1])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("b", DataType::Float64, true)),
                Arc::new(Float64Array::from(vec![0.0, -0.0])) as ArrayRef,
            ),
        ]));
        assert!(equal_rows(rows, 0, 1)?);
        Ok(())
    }

    #[test]
    fn keys_of_identical_values_are_equal() -> Result<()> {
        let key = |v: f64| identity_key(&ScalarValue::Float64(Some(v)));
        assert_eq!(key(-0.0)?, key(0.0)?);
        assert_eq!(key(f64::NAN)?, key(f64::from_bits(f64::NAN.to_bits() | 1))?);
        assert_ne!(key(1.0)?, key(0.0)?);
        Ok(())
    }
}
