//! `sum` as Trino's: a sum of integers is a `bigint` and a sum of `decimal(p,s)` a
//! `decimal(38,s)`, and either fails with NUMERIC_VALUE_OUT_OF_RANGE when it leaves its type
//! (DataFusion's wraps around: `sum` of two `9223372036854775807` answered `-2`). The checked
//! accumulators are DataFusion's own groups accumulator given a checked addition, and row
//! accumulators over Arrow's checked `sum` kernel; a `real`'s sum is computed in double and
//! answered as a `real` (as Trino's); other sums (doubles, `DISTINCT`) are DataFusion's.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use datafusion::arrow::compute::sum_checked;
use datafusion::arrow::datatypes::{
    ArrowNativeTypeOp, ArrowPrimitiveType, DECIMAL128_MAX_PRECISION, DataType, Decimal128Type,
    FieldRef, Int64Type,
};
use datafusion::arrow::error::ArrowError;
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::functions_aggregate::sum::sum_udaf;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, ReversedUDAF,
    Signature, Volatility,
};
use datafusion_functions_aggregate_common::aggregate::groups_accumulator::prim_op::PrimitiveGroupsAccumulator;

use crate::aggregates::{coerce_keeping_real, real_accumulator, real_state_fields};

/// Trino's `sum`, over DataFusion's for what needs no check.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Sum {
    inner: Arc<AggregateUDF>,
    /// User-defined: [`coerce_keeping_real`].
    signature: Signature,
}

impl Sum {
    pub(crate) fn new() -> Self {
        Self {
            inner: sum_udaf(),
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// What a sum answering `answer` adds in, when it is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checked {
    Bigint,
    Decimal,
}

impl Checked {
    fn of(answer: &DataType) -> Option<Self> {
        match answer {
            DataType::Int64 => Some(Self::Bigint),
            DataType::Decimal128(..) => Some(Self::Decimal),
            _ => None,
        }
    }
}

/// The error of a sum that left its type, as Trino words it.
fn overflow(answer: &DataType) -> DataFusionError {
    let message = match answer {
        DataType::Int64 => "bigint addition overflow".to_string(),
        _ => "Decimal overflow".to_string(),
    };
    DataFusionError::ArrowError(Box::new(ArrowError::ArithmeticOverflow(message)), None)
}

/// `sums` in their type's range: a decimal's within its precision (i128 holds more).
fn within_precision(sums: ArrayRef, answer: &DataType) -> Result<ArrayRef> {
    if let DataType::Decimal128(precision, _) = answer {
        sums.as_primitive::<Decimal128Type>()
            .validate_decimal_precision(*precision)
            .map_err(|_| overflow(answer))?;
    }
    Ok(sums)
}

impl AggregateUDFImpl for Sum {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        coerce_keeping_real(&self.inner, arg_types)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [DataType::Float32] => Ok(DataType::Float32),
            [DataType::Decimal128(_, scale)] => {
                Ok(DataType::Decimal128(DECIMAL128_MAX_PRECISION, *scale))
            }
            _ => self.inner.return_type(arg_types),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        if *args.return_field.data_type() == DataType::Float32 {
            return real_state_fields(&self.inner, args);
        }
        // DataFusion's: the running sum in the answer's type (or the distinct values).
        self.inner.state_fields(args)
    }

    fn accumulator(&self, args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        let answer = args.return_field.data_type().clone();
        if answer == DataType::Float32 {
            return real_accumulator(&self.inner, args, false);
        }
        match Checked::of(&answer) {
            Some(checked) if args.is_distinct => Ok(Box::new(CheckedDistinctSum {
                inner: self.inner.accumulator(args)?,
                checked,
                answer,
            })),
            Some(Checked::Bigint) => Ok(Box::new(CheckedSum::<Int64Type>::new(answer))),
            Some(Checked::Decimal) => Ok(Box::new(CheckedSum::<Decimal128Type>::new(answer))),
            None => self.inner.accumulator(args),
        }
    }

    fn create_sliding_accumulator(
        &self,
        args: AccumulatorArgs<'_>,
    ) -> Result<Box<dyn Accumulator>> {
        if *args.return_field.data_type() == DataType::Float32 {
            return real_accumulator(&self.inner, args, true);
        }
        // A window frame's sum: the same accumulator, which also retracts.
        if !args.is_distinct && Checked::of(args.return_field.data_type()).is_some() {
            return self.accumulator(args);
        }
        self.inner.create_sliding_accumulator(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs<'_>) -> bool {
        // A real's sum goes row by row (its values need a cast first).
        *args.return_field.data_type() != DataType::Float32
            && self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs<'_>,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        let answer = args.return_field.data_type().clone();
        match Checked::of(&answer) {
            Some(Checked::Bigint) => Ok(checked_groups::<Int64Type>(answer)),
            Some(Checked::Decimal) => Ok(checked_groups::<Decimal128Type>(answer)),
            None => self.inner.create_groups_accumulator(args),
        }
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }
}

/// One running sum, checked; it counts its values so a window frame can retract them.
#[derive(Debug)]
struct CheckedSum<T: ArrowPrimitiveType> {
    sum: T::Native,
    values: u64,
    answer: DataType,
}

impl<T: ArrowPrimitiveType> CheckedSum<T> {
    fn new(answer: DataType) -> Self {
        Self {
            sum: T::Native::ZERO,
            values: 0,
            answer,
        }
    }

    /// The sum of `values`'s non-null values, with how many there were.
    fn batch(&self, values: &ArrayRef) -> Result<(T::Native, u64)> {
        let values = values.as_primitive::<T>();
        let sum = sum_checked(values)
            .map_err(|_| overflow(&self.answer))?
            .unwrap_or(T::Native::ZERO);
        Ok((sum, (values.len() - values.null_count()) as u64))
    }

    fn add(&mut self, values: &ArrayRef) -> Result<()> {
        let (sum, count) = self.batch(values)?;
        self.sum = self
            .sum
            .add_checked(sum)
            .map_err(|_| overflow(&self.answer))?;
        self.values += count;
        Ok(())
    }

    fn current(&self) -> Result<ScalarValue> {
        let sum = (self.values > 0).then_some(self.sum);
        ScalarValue::new_primitive::<T>(sum, &self.answer)
    }
}

impl<T: ArrowPrimitiveType + Debug> Accumulator for CheckedSum<T> {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        values.first().map_or(Ok(()), |values| self.add(values))
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.update_batch(states)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(values) = values.first() else {
            return Ok(());
        };
        let (sum, count) = self.batch(values)?;
        self.sum = self
            .sum
            .sub_checked(sum)
            .map_err(|_| overflow(&self.answer))?;
        self.values = self.values.saturating_sub(count);
        Ok(())
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        // A partial sum may pass the precision a final one is held to.
        Ok(vec![self.current()?])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let sum = self.current()?;
        within_precision(sum.to_array()?, &self.answer)?;
        Ok(sum)
    }

    fn size(&self) -> usize {
        size_of::<Self>()
    }
}

/// `sum(DISTINCT …)`: DataFusion's accumulator gathers the distinct values (its state) and
/// wraps around when it adds them up; they are added up here, checked.
#[derive(Debug)]
struct CheckedDistinctSum {
    inner: Box<dyn Accumulator>,
    checked: Checked,
    answer: DataType,
}

impl Accumulator for CheckedDistinctSum {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.inner.update_batch(values)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.inner.merge_batch(states)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.inner.state()
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let state = self.inner.state()?;
        let [ScalarValue::List(distinct)] = state.as_slice() else {
            return Err(DataFusionError::Internal(format!(
                "a distinct sum's state is its values, not {state:?}"
            )));
        };
        let values = datafusion::arrow::compute::cast(&distinct.value(0), &self.answer)?;
        match self.checked {
            Checked::Bigint => checked_total::<Int64Type>(&values, &self.answer),
            Checked::Decimal => checked_total::<Decimal128Type>(&values, &self.answer),
        }
    }

    fn size(&self) -> usize {
        size_of::<Self>() + self.inner.size()
    }
}

/// The sum of `values` (of `T`) as `answer`, checked.
fn checked_total<T: ArrowPrimitiveType + Debug>(
    values: &ArrayRef,
    answer: &DataType,
) -> Result<ScalarValue> {
    let mut sum = CheckedSum::<T>::new(answer.clone());
    sum.add(values)?;
    sum.evaluate()
}

/// DataFusion's groups accumulator for sums, whose addition notes an overflow instead of
/// wrapping; the batch that overflowed fails.
struct CheckedGroups<
    T: ArrowPrimitiveType + Send,
    F: Fn(&mut T::Native, T::Native) + Send + Sync + 'static,
> {
    inner: PrimitiveGroupsAccumulator<T, F>,
    overflowed: Arc<AtomicBool>,
    answer: DataType,
}

/// A [`CheckedGroups`] summing values of `T` into `answer`.
fn checked_groups<T: ArrowPrimitiveType + Send>(answer: DataType) -> Box<dyn GroupsAccumulator> {
    let overflowed = Arc::new(AtomicBool::new(false));
    let noted = Arc::clone(&overflowed);
    // A function of its own type (not boxed), so the accumulator's loop inlines it.
    let add = move |sum: &mut T::Native, value: T::Native| match sum.add_checked(value) {
        Ok(total) => *sum = total,
        Err(_) => noted.store(true, Ordering::Relaxed),
    };
    Box::new(CheckedGroups {
        inner: PrimitiveGroupsAccumulator::<T, _>::new(&answer, add),
        overflowed,
        answer,
    })
}

impl<T: ArrowPrimitiveType + Send, F: Fn(&mut T::Native, T::Native) + Send + Sync + 'static>
    CheckedGroups<T, F>
{
    fn checked(&self) -> Result<()> {
        if self.overflowed.load(Ordering::Relaxed) {
            return Err(overflow(&self.answer));
        }
        Ok(())
    }
}

impl<T, F> GroupsAccumulator for CheckedGroups<T, F>
where
    T: ArrowPrimitiveType + Send,
    F: Fn(&mut T::Native, T::Native) + Send + Sync + 'static,
{
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.inner
            .update_batch(values, group_indices, opt_filter, total_num_groups)?;
        self.checked()
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.inner
            .merge_batch(values, group_indices, opt_filter, total_num_groups)?;
        self.checked()
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        within_precision(self.inner.evaluate(emit_to)?, &self.answer)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        self.inner.state(emit_to)
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        self.inner.convert_to_state(values, opt_filter)
    }

    fn supports_convert_to_state(&self) -> bool {
        self.inner.supports_convert_to_state()
    }

    fn size(&self) -> usize {
        self.inner.size() + size_of::<Self>()
    }
}
