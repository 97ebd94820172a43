//! Trino's `max(x, n)` and `min(x, n)` (spelled `sqe_max_n`/`sqe_min_n` for the dialect): the
//! `n` largest (smallest) non-NULL values of `x`, largest (smallest) first, as an array; and
//! `max_by(x, y, n)` and `min_by(x, y, n)` (`sqe_max_by_n`/`sqe_min_by_n`): the values of `x`
//! of the `n` rows with the largest (smallest) `y`, in that order (rows whose `y` is NULL
//! skipped, a NaN `y` least preferred; `x` may be NULL).

use std::cmp::Ordering;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Signature, Volatility};
use datafusion::physical_expr::expressions::Literal;

use crate::error::invalid_argument;

/// The most values `n` may ask for (Trino's limit).
const MAX_N: i64 = 10_000;

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct TopN {
    largest: bool,
    /// `max_by`/`min_by`: ordered by a key of their own.
    keyed: bool,
    signature: Signature,
}

impl TopN {
    pub(crate) fn largest() -> Self {
        Self::new(true, false)
    }

    pub(crate) fn smallest() -> Self {
        Self::new(false, false)
    }

    pub(crate) fn largest_by() -> Self {
        Self::new(true, true)
    }

    pub(crate) fn smallest_by() -> Self {
        Self::new(false, true)
    }

    fn new(largest: bool, keyed: bool) -> Self {
        Self {
            largest,
            keyed,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    fn trino_name(&self) -> &'static str {
        match (self.largest, self.keyed) {
            (true, false) => "max",
            (false, false) => "min",
            (true, true) => "max_by",
            (false, true) => "min_by",
        }
    }

    /// Where the count is among the arguments, as Trino's messages name it.
    fn count_place(&self) -> (usize, &'static str) {
        if self.keyed {
            (2, "third")
        } else {
            (1, "second")
        }
    }
}

impl AggregateUDFImpl for TopN {
    fn name(&self) -> &str {
        match (self.largest, self.keyed) {
            (true, false) => "sqe_max_n",
            (false, false) => "sqe_min_n",
            (true, true) => "sqe_max_by_n",
            (false, true) => "sqe_min_by_n",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let counted = |n: &DataType| n.is_integer() || n.is_null();
        match (self.keyed, arg_types) {
            (false, [x, n]) if counted(n) => Ok(vec![x.clone(), DataType::Int64]),
            (true, [x, y, n]) if counted(n) => Ok(vec![x.clone(), y.clone(), DataType::Int64]),
            _ => Err(crate::args::unexpected_parameters(
                self.trino_name(),
                arg_types,
                if self.keyed {
                    "(V, K, bigint)"
                } else {
                    "(E, bigint)"
                },
            )),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(x) => Ok(DataType::new_list(x.clone(), true)),
            None => plan_err!("{} takes arguments", self.trino_name()),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        let list = |i: usize, what: &str| -> Result<FieldRef> {
            let Some(field) = args.input_fields.get(i) else {
                return plan_err!("{} takes more arguments", self.trino_name());
            };
            Ok(Arc::new(Field::new(
                format!("{}[{what}]", args.name),
                DataType::new_list(field.data_type().clone(), true),
                true,
            )))
        };
        if self.keyed {
            Ok(vec![list(1, "keys")?, list(0, "values")?])
        } else {
            Ok(vec![list(0, "values")?])
        }
    }

    fn accumulator(&self, args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        let (place, ordinal) = self.count_place();
        let n = args
            .exprs
            .get(place)
            .and_then(|e| e.downcast_ref::<Literal>())
            .map(|l| l.value().clone());
        let name = self.trino_name();
        let n = match n {
            Some(ScalarValue::Int64(Some(n))) if (1..=MAX_N).contains(&n) => n as usize,
            Some(ScalarValue::Int64(Some(n))) if n > MAX_N => {
                return Err(invalid_argument(format!(
                    "{ordinal} argument of {name} must be less than or equal to {MAX_N}; found {n}"
                )));
            }
            Some(ScalarValue::Int64(Some(_))) => {
                return Err(invalid_argument(format!(
                    "{ordinal} argument of {name} must be a positive integer"
                )));
            }
            _ => {
                return Err(invalid_argument(format!(
                    "{ordinal} argument of {name} must be a constant positive integer"
                )));
            }
        };
        let field_type = |i: usize| -> Result<DataType> {
            match args.expr_fields.get(i) {
                Some(f) => Ok(f.data_type().clone()),
                None => exec_err!("{name} takes more arguments"),
            }
        };
        Ok(Box::new(TopNAccumulator {
            largest: self.largest,
            n,
            value_type: field_type(0)?,
            key_type: if self.keyed {
                Some(field_type(1)?)
            } else {
                None
            },
            entries: Vec::new(),
        }))
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }
}

#[derive(Debug)]
struct TopNAccumulator {
    largest: bool,
    n: usize,
    value_type: DataType,
    /// The key's type for `max_by`/`min_by`; `None` when the value is its own key.
    key_type: Option<DataType>,
    /// Candidates as (key, value; `None` when the key is the value); cut back to the best
    /// `n` whenever they reach twice that.
    entries: Vec<(ScalarValue, Option<ScalarValue>)>,
}

fn is_nan(v: &ScalarValue) -> bool {
    match v {
        ScalarValue::Float64(Some(f)) => f.is_nan(),
        ScalarValue::Float32(Some(f)) => f.is_nan(),
        ScalarValue::Float16(Some(f)) => f.is_nan(),
        _ => false,
    }
}

impl TopNAccumulator {
    /// Best first; for max_by/min_by a NaN key is the least preferred, as in Trino.
    fn order(&self, a: &ScalarValue, b: &ScalarValue) -> Ordering {
        if self.key_type.is_some() {
            match (is_nan(a), is_nan(b)) {
                (true, true) => return Ordering::Equal,
                (true, false) => return Ordering::Greater,
                (false, true) => return Ordering::Less,
                (false, false) => {}
            }
        }
        let ascending = a.partial_cmp(b).unwrap_or(Ordering::Equal);
        if self.largest {
            ascending.reverse()
        } else {
            ascending
        }
    }

    fn keep_best(&mut self) {
        let mut entries = std::mem::take(&mut self.entries);
        entries.sort_by(|(a, _), (b, _)| self.order(a, b));
        entries.truncate(self.n);
        self.entries = entries;
    }

    /// Rows of `keys` (and `values`, for a keyed aggregate) whose key is not NULL.
    fn add(&mut self, keys: &ArrayRef, values: Option<&ArrayRef>) -> Result<()> {
        // Logical: a column of NULLs keeps no null buffer.
        let nulls = keys.logical_nulls();
        for i in 0..keys.len() {
            if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
                continue;
            }
            let value = match values {
                Some(values) => Some(ScalarValue::try_from_array(values, i)?),
                None => None,
            };
            self.entries
                .push((ScalarValue::try_from_array(keys, i)?, value));
            if self.entries.len() >= 2 * self.n {
                self.keep_best();
            }
        }
        Ok(())
    }

    fn values(&self) -> Vec<ScalarValue> {
        self.entries
            .iter()
            .map(|(key, value)| value.as_ref().unwrap_or(key).clone())
            .collect()
    }

    fn keys(&self) -> Vec<ScalarValue> {
        self.entries.iter().map(|(key, _)| key.clone()).collect()
    }
}

impl Accumulator for TopNAccumulator {
    fn update_batch(&mut self, columns: &[ArrayRef]) -> Result<()> {
        match (&self.key_type, columns) {
            (None, [values, ..]) => self.add(values, None),
            (Some(_), [values, keys, ..]) => self.add(keys, Some(values)),
            _ => exec_err!("top n: missing arguments"),
        }
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let lists: Vec<_> = states.iter().map(|s| s.as_list_opt::<i32>()).collect();
        match (&self.key_type, lists.as_slice()) {
            (None, [Some(values)]) => {
                for i in 0..values.len() {
                    if !values.is_null(i) {
                        self.add(&values.value(i), None)?;
                    }
                }
            }
            (Some(_), [Some(keys), Some(values)]) => {
                for i in 0..keys.len() {
                    if !keys.is_null(i) {
                        self.add(&keys.value(i), Some(&values.value(i)))?;
                    }
                }
            }
            _ => return exec_err!("top n: unexpected state"),
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.keep_best();
        let values = ScalarValue::List(ScalarValue::new_list(
            &self.values(),
            &self.value_type,
            true,
        ));
        Ok(match &self.key_type {
            None => vec![values],
            Some(key_type) => vec![
                ScalarValue::List(ScalarValue::new_list(&self.keys(), key_type, true)),
                values,
            ],
        })
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.keep_best();
        if self.entries.is_empty() {
            return ScalarValue::try_from(DataType::new_list(self.value_type.clone(), true));
        }
        Ok(ScalarValue::List(ScalarValue::new_list(
            &self.values(),
            &self.value_type,
            true,
        )))
    }

    fn size(&self) -> usize {
        size_of::<Self>()
            + self
                .entries
                .iter()
                .map(|(key, value)| key.size() + value.as_ref().map_or(0, ScalarValue::size))
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Float64Array, StringArray};

    fn keyed(largest: bool) -> TopNAccumulator {
        TopNAccumulator {
            largest,
            n: 2,
            value_type: DataType::Utf8,
            key_type: Some(DataType::Float64),
            entries: Vec::new(),
        }
    }

    /// Trino's TestMinMaxByNAggregation: NaN keys are the least preferred either way.
    #[test]
    fn the_values_of_the_best_keys_nan_last() -> Result<()> {
        let values: ArrayRef = Arc::new(StringArray::from(vec!["a", "b", "c", "d"]));
        let keys: ArrayRef = Arc::new(Float64Array::from(vec![f64::NAN, 2.0, 3.0, 4.0]));
        let mut smallest = keyed(false);
        smallest.update_batch(&[Arc::clone(&values), Arc::clone(&keys)])?;
        assert_eq!(
            smallest.evaluate()?.to_string(),
            ScalarValue::List(ScalarValue::new_list(
                &[ScalarValue::from("b"), ScalarValue::from("c")],
                &DataType::Utf8,
                true
            ))
            .to_string()
        );
        let mut largest = keyed(true);
        // Through its state, as a partial aggregate on a worker hands it on.
        let mut partial = keyed(true);
        partial.update_batch(&[values, keys])?;
        let state: Vec<ArrayRef> = partial
            .state()?
            .iter()
            .map(|s| s.to_array())
            .collect::<Result<_>>()?;
        largest.merge_batch(&state)?;
        assert_eq!(
            largest.evaluate()?.to_string(),
            ScalarValue::List(ScalarValue::new_list(
                &[ScalarValue::from("d"), ScalarValue::from("c")],
                &DataType::Utf8,
                true
            ))
            .to_string()
        );
        Ok(())
    }
}
