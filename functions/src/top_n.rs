//! Trino's `max(x, n)` and `min(x, n)` (spelled `sqe_max_n`/`sqe_min_n` for the dialect): the
//! `n` largest (smallest) non-NULL values of `x`, largest (smallest) first, as an array.

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
    signature: Signature,
}

impl TopN {
    pub(crate) fn largest() -> Self {
        Self::new(true)
    }

    pub(crate) fn smallest() -> Self {
        Self::new(false)
    }

    fn new(largest: bool) -> Self {
        Self {
            largest,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }

    fn trino_name(&self) -> &'static str {
        if self.largest { "max" } else { "min" }
    }
}

impl AggregateUDFImpl for TopN {
    fn name(&self) -> &str {
        if self.largest {
            "sqe_max_n"
        } else {
            "sqe_min_n"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [x, n] if n.is_integer() || n.is_null() => Ok(vec![x.clone(), DataType::Int64]),
            _ => plan_err!(
                "{}(x, n) takes a value and a bigint count, not ({})",
                self.trino_name(),
                crate::args::type_names(arg_types)
            ),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(x) => Ok(DataType::new_list(x.clone(), true)),
            None => plan_err!("{}(x, n) takes two arguments", self.trino_name()),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        let Some(x) = args.input_fields.first() else {
            return plan_err!("{}(x, n) takes two arguments", self.trino_name());
        };
        Ok(vec![Arc::new(Field::new(
            format!("{}[values]", args.name),
            DataType::new_list(x.data_type().clone(), true),
            true,
        ))])
    }

    fn accumulator(&self, args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        let n = args
            .exprs
            .get(1)
            .and_then(|e| e.downcast_ref::<Literal>())
            .map(|l| l.value().clone());
        let n = match n {
            Some(ScalarValue::Int64(Some(n))) if (1..=MAX_N).contains(&n) => n as usize,
            Some(ScalarValue::Int64(Some(_))) => {
                return Err(invalid_argument(format!(
                    "second argument of {} must be between 1 and {MAX_N}",
                    self.trino_name()
                )));
            }
            _ => {
                return Err(invalid_argument(format!(
                    "second argument of {} must be a constant positive integer",
                    self.trino_name()
                )));
            }
        };
        let Some(x) = args.expr_fields.first() else {
            return exec_err!("{}(x, n) takes two arguments", self.trino_name());
        };
        Ok(Box::new(TopNAccumulator {
            largest: self.largest,
            n,
            data_type: x.data_type().clone(),
            values: Vec::new(),
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
    data_type: DataType,
    /// Candidates; cut back to the best `n` whenever they reach twice that.
    values: Vec<ScalarValue>,
}

impl TopNAccumulator {
    fn order(&self, a: &ScalarValue, b: &ScalarValue) -> Ordering {
        let ascending = a.partial_cmp(b).unwrap_or(Ordering::Equal);
        if self.largest {
            ascending.reverse()
        } else {
            ascending
        }
    }

    fn keep_best(&mut self) {
        let mut values = std::mem::take(&mut self.values);
        values.sort_by(|a, b| self.order(a, b));
        values.truncate(self.n);
        self.values = values;
    }

    fn add(&mut self, array: &ArrayRef) -> Result<()> {
        for i in 0..array.len() {
            if array.is_null(i) {
                continue;
            }
            self.values.push(ScalarValue::try_from_array(array, i)?);
            if self.values.len() >= 2 * self.n {
                self.keep_best();
            }
        }
        Ok(())
    }
}

impl Accumulator for TopNAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        match values.first() {
            Some(array) => self.add(array),
            None => exec_err!("max/min(x, n) takes two arguments"),
        }
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let Some(lists) = states.first() else {
            return exec_err!("max/min(x, n) has one state");
        };
        let lists = lists.as_list::<i32>();
        for i in 0..lists.len() {
            if !lists.is_null(i) {
                self.add(&lists.value(i))?;
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.keep_best();
        Ok(vec![ScalarValue::List(ScalarValue::new_list(
            &self.values,
            &self.data_type,
            true,
        ))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.keep_best();
        if self.values.is_empty() {
            return ScalarValue::try_from(DataType::new_list(self.data_type.clone(), true));
        }
        Ok(ScalarValue::List(ScalarValue::new_list(
            &self.values,
            &self.data_type,
            true,
        )))
    }

    fn size(&self) -> usize {
        size_of::<Self>() + ScalarValue::size_of_vec(&self.values)
    }
}
