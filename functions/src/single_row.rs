//! The value of a scalar subquery, as Trino requires it: NULL for no row, the value for one, and
//! an error for more (SUBQUERY_MULTIPLE_ROWS), where DataFusion joined every row the subquery
//! returned and so answered the outer query once per row. The engine's dialect puts this
//! aggregate over a scalar subquery that is not known to return one row at most.

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, UInt64Type};
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Signature, Volatility};

/// The aggregate's name in plans.
pub const SCALAR_SUBQUERY: &str = "sqe_scalar_subquery";

/// A scalar subquery returned more than one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("Scalar sub-query has returned multiple rows")]
pub struct SubqueryMultipleRows;

fn multiple_rows() -> DataFusionError {
    DataFusionError::External(Box::new(SubqueryMultipleRows))
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct ScalarSubquery {
    signature: Signature,
}

impl ScalarSubquery {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl AggregateUDFImpl for ScalarSubquery {
    fn name(&self) -> &str {
        SCALAR_SUBQUERY
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [t] => Ok(t.clone()),
            _ => exec_err!("{SCALAR_SUBQUERY} takes the subquery's one column"),
        }
    }

    fn return_field(&self, arg_fields: &[FieldRef]) -> Result<FieldRef> {
        // The column keeps its metadata (Trino's type of it, `varchar(3)`).
        match arg_fields {
            [field] => Ok(std::sync::Arc::new(
                field
                    .as_ref()
                    .clone()
                    .with_name(self.name())
                    .with_nullable(true),
            )),
            _ => exec_err!("{SCALAR_SUBQUERY} takes the subquery's one column"),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        Ok(vec![
            std::sync::Arc::new(Field::new("value", args.return_type().clone(), true)),
            std::sync::Arc::new(Field::new("rows", DataType::UInt64, false)),
        ])
    }

    fn accumulator(&self, args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(OneRow {
            value: ScalarValue::try_from(args.return_type())?,
            rows: 0,
        }))
    }
}

/// The one value seen, and how many rows (NULL ones too).
#[derive(Debug)]
struct OneRow {
    value: ScalarValue,
    rows: u64,
}

impl OneRow {
    fn add(&mut self, rows: u64, value: impl FnOnce() -> Result<ScalarValue>) -> Result<()> {
        if rows == 0 {
            return Ok(());
        }
        self.rows += rows;
        if self.rows > 1 {
            return Err(multiple_rows());
        }
        self.value = value()?;
        Ok(())
    }
}

impl Accumulator for OneRow {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(values) = values.first() else {
            return Ok(());
        };
        self.add(values.len() as u64, || {
            ScalarValue::try_from_array(values, 0)
        })
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let [values, rows] = states else {
            return exec_err!("{SCALAR_SUBQUERY} merges a value and a row count");
        };
        let rows = rows.as_primitive::<UInt64Type>();
        for i in 0..rows.len() {
            let n = rows.value(i);
            self.add(n, || ScalarValue::try_from_array(values, i))?;
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            self.value.clone(),
            ScalarValue::UInt64(Some(self.rows)),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(self.value.clone())
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.value.size() - std::mem::size_of_val(&self.value)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Int32Array, UInt64Array};

    use super::*;

    fn accumulator() -> OneRow {
        OneRow {
            value: ScalarValue::Int32(None),
            rows: 0,
        }
    }

    #[test]
    fn one_row_is_its_value_none_is_null_more_are_refused() -> Result<()> {
        let mut none = accumulator();
        none.update_batch(&[Arc::new(Int32Array::from(Vec::<i32>::new()))])?;
        assert_eq!(none.evaluate()?, ScalarValue::Int32(None));
        let mut one = accumulator();
        one.update_batch(&[Arc::new(Int32Array::from(vec![7]))])?;
        assert_eq!(one.evaluate()?, ScalarValue::Int32(Some(7)));
        // A NULL row is a row.
        let mut two = accumulator();
        two.update_batch(&[Arc::new(Int32Array::from(vec![None]))])?;
        let refused = two.update_batch(&[Arc::new(Int32Array::from(vec![1]))]);
        assert!(matches!(refused, Err(DataFusionError::External(_))));
        // Partial states: one row from each of two partitions is two rows.
        let mut merged = accumulator();
        let states: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(vec![Some(1), None])),
            Arc::new(UInt64Array::from(vec![1, 0])),
        ];
        merged.merge_batch(&states)?;
        assert_eq!(merged.evaluate()?, ScalarValue::Int32(Some(1)));
        let refused = merged.merge_batch(&states);
        assert!(matches!(refused, Err(DataFusionError::External(_))));
        Ok(())
    }
}
