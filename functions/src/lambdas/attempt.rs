//! Trino's `try(x)`: `x`, or NULL for the rows where evaluating it fails with an error of a
//! bad value (a division by zero, an invalid cast or function argument, an overflow; see
//! [`crate::error::value_error_in`]). The dialect writes `try(x)` as `sqe_try(__sqe_try_row ->
//! x)`: as a lambda of the row, `x` can be evaluated again for each row alone once the whole
//! batch has failed. Any other error stays an error.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, new_null_array};
use datafusion::arrow::compute::concat;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, HigherOrderFunctionArgs, HigherOrderReturnFieldArgs, HigherOrderSignature,
    HigherOrderUDF, HigherOrderUDFImpl, LambdaArgument, LambdaParametersProgress, ValueOrLambda,
    Volatility,
};

/// The function the dialect writes `try` as.
pub const TRY: &str = "sqe_try";
/// The parameter of the lambda it is given: no value, only the batch's number of rows (a
/// lambda with neither parameters nor captured columns would have no rows).
pub const TRY_ROW: &str = "__sqe_try_row";

pub(super) fn function() -> Arc<HigherOrderUDF> {
    Arc::new(HigherOrderUDF::new_from_impl(Try {
        signature: HigherOrderSignature::exact(
            vec![ValueOrLambda::Lambda(())],
            Volatility::Immutable,
        ),
    }))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Try {
    signature: HigherOrderSignature,
}

/// `lambda` over `rows` rows starting at `offset` of the batch's captured columns.
fn evaluate(lambda: &LambdaArgument, offset: usize, rows: usize, whole: bool) -> Result<ArrayRef> {
    let row = || -> Result<ArrayRef> { Ok(new_null_array(&DataType::Null, rows)) };
    let spread = |captured: &[ArrayRef]| {
        Ok(if whole {
            captured.to_vec()
        } else {
            captured.iter().map(|c| c.slice(offset, rows)).collect()
        })
    };
    lambda.evaluate(&[&row], spread)?.into_array(rows)
}

impl HigherOrderUDFImpl for Try {
    fn name(&self) -> &str {
        TRY
    }

    fn signature(&self) -> &HigherOrderSignature {
        &self.signature
    }

    fn short_circuits(&self) -> bool {
        // A lambda's body is evaluated only for some rows, or none: nothing in it may be
        // evaluated for all rows ahead of it (common subexpressions).
        true
    }

    fn coerce_value_types(&self, _arg_types: &[DataType]) -> Result<Vec<DataType>> {
        // Its one argument is the lambda.
        Ok(Vec::new())
    }

    fn lambda_parameters(
        &self,
        _step: usize,
        fields: &[ValueOrLambda<FieldRef, Option<FieldRef>>],
    ) -> Result<LambdaParametersProgress> {
        let [ValueOrLambda::Lambda(_)] = fields else {
            return plan_err!("try expects one expression");
        };
        Ok(LambdaParametersProgress::Complete(vec![vec![Arc::new(
            Field::new(TRY_ROW, DataType::Null, true),
        )]]))
    }

    fn return_field_from_args(&self, args: HigherOrderReturnFieldArgs<'_>) -> Result<FieldRef> {
        let [ValueOrLambda::Lambda(answer)] = args.arg_fields else {
            return plan_err!("try expects one expression");
        };
        Ok(Arc::new(
            Field::new("try", answer.data_type().clone(), true)
                .with_metadata(answer.metadata().clone()),
        ))
    }

    fn invoke_with_args(&self, args: HigherOrderFunctionArgs) -> Result<ColumnarValue> {
        let [ValueOrLambda::Lambda(lambda)] = args.args.as_slice() else {
            return exec_err!("try expects one expression");
        };
        let rows = args.number_rows;
        match evaluate(lambda, 0, rows, true) {
            Ok(answers) => return Ok(ColumnarValue::Array(answers)),
            Err(e) if crate::error::value_error_in(&e).is_none() => return Err(e),
            Err(_) => {}
        }
        // Some row failed: each row alone, NULL for those that fail so.
        let mut answers = Vec::with_capacity(rows);
        for row in 0..rows {
            match evaluate(lambda, row, 1, false) {
                Ok(answer) => answers.push(answer),
                Err(e) if crate::error::value_error_in(&e).is_some() => {
                    answers.push(new_null_array(args.return_type(), 1));
                }
                Err(e) => return Err(e),
            }
        }
        let answers: Vec<&dyn datafusion::arrow::array::Array> =
            answers.iter().map(|a| a.as_ref()).collect();
        if answers.is_empty() {
            return Ok(ColumnarValue::Array(new_null_array(args.return_type(), 0)));
        }
        Ok(ColumnarValue::Array(concat(&answers)?))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{AsArray, Int32Array, RecordBatch};
    use datafusion::arrow::datatypes::{Int32Type, Schema};
    use datafusion::common::config::ConfigOptions;
    use datafusion::logical_expr::Operator;
    use datafusion::physical_expr::PhysicalExpr;
    use datafusion::physical_expr::expressions::{BinaryExpr, Column};

    use super::*;

    /// `try(body)` over three rows of captured columns `c` and `p`.
    fn attempt(body: Arc<dyn PhysicalExpr>) -> Result<ColumnarValue> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("c", DataType::Int32, true),
            Field::new("p", DataType::Int32, true),
        ]));
        let captured = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from(vec![100, 5, 8])),
                Arc::new(Int32Array::from(vec![4, 0, 2])),
            ],
        )?;
        let row = Arc::new(Field::new(TRY_ROW, DataType::Null, true));
        let lambda = LambdaArgument::new(vec![row], body, Some(captured));
        let answer = Arc::new(Field::new("a", DataType::Int32, true));
        Try {
            signature: HigherOrderSignature::exact(
                vec![ValueOrLambda::Lambda(())],
                Volatility::Immutable,
            ),
        }
        .invoke_with_args(HigherOrderFunctionArgs {
            args: vec![ValueOrLambda::Lambda(lambda)],
            arg_fields: vec![ValueOrLambda::Lambda(Arc::clone(&answer))],
            number_rows: 3,
            return_field: answer,
            config_options: Arc::new(ConfigOptions::default()),
        })
    }

    fn quotient(divisor: usize) -> Arc<dyn PhysicalExpr> {
        Arc::new(BinaryExpr::new(
            Arc::new(Column::new("c", 0)),
            Operator::Divide,
            Arc::new(Column::new("p", divisor)),
        ))
    }

    #[test]
    fn rows_failing_with_an_error_of_a_value_are_null_and_the_others_kept() -> Result<()> {
        let answers = attempt(quotient(1))?.into_array(3)?;
        let answers = answers.as_primitive::<Int32Type>();
        assert_eq!(
            answers.iter().collect::<Vec<_>>(),
            vec![Some(25), None, Some(4)]
        );
        Ok(())
    }

    #[test]
    fn other_errors_stay_errors() {
        // A column the batch does not have: an internal fault, not a value's.
        assert!(attempt(quotient(7)).is_err());
    }
}
