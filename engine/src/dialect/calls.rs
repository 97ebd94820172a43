//! Expressions whose Trino meaning DataFusion spells differently, rewritten before the plan
//! is analyzed (so the argument types are the ones written):
//! - `concat` is NULL when an argument is (DataFusion skips NULLs), and of arrays concatenates
//!   them (or appends an element);
//! - `reverse` of an array reverses the array; `concat_ws` of an array joins its elements;
//! - a `char(n)` compares without its trailing spaces, and real numbers as IEEE 754 does (NaN
//!   equal to nothing, not even itself, and -0.0 equal to 0.0; Arrow orders NaN above every
//!   number and -0.0 below 0.0);
//! - `sign` answers in its argument's type; `length` of a varbinary counts its bytes;
//! - `date_trunc` of a date is a date; `EXTRACT`'s fields are bigints, `DOW` the ISO day;
//! - `ceil`, `floor` and `truncate` of a decimal have no fraction digits (`truncate` of a
//!   decimal is otherwise a double), and of an integer keep its type;
//! - a cast of a real number to an integer rounds it, half away from zero (DataFusion
//!   truncates); so does a cast that lowers a timestamp's or a time's precision (half up);
//! - a real number cast to text is written as Java writes it (`1.0E-10`, not `1e-10`), and a
//!   timestamp as Trino does (`2020-01-01 10:00:00.500`, not ISO's `…T10:00:00.500`); a zoned
//!   timestamp cast to a zone-less one keeps its wall-clock reading (Arrow keeps UTC's);
//! - a real number cast to a decimal rounds the digits Java shows, half up;
//! - text cast to a boolean is Trino's `true`/`t`/`1` or `false`/`f`/`0` only;
//! - only text casts to `varbinary`;
//! - bitwise operations (Trino's `bitwise_*`) take integers only (DataFusion's also take
//!   decimals, with another meaning);
//! - a division of decimals (or of a decimal and an integer) has Trino's type and rounds half
//!   up (DataFusion's has a wider scale, truncated);
//! - a time plus or minus an interval is a time (DataFusion's is an interval);
//! - `+`, `-`, `*`, negation and `abs` of integers fail on overflow (DataFusion's wrap around,
//!   or fail as internal errors);
//! - where real numbers and decimals meet as one value (`coalesce`, `greatest`, `least`,
//!   `ARRAY[…]`, a `CASE`'s results), the decimals become the real type, as Trino coerces
//!   them (DataFusion picked a `decimal(30,15)`, failing above 10^15).

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::functions::core::expr_fn::coalesce;
use datafusion::functions::math::expr_fn::round;
use datafusion::functions_nested::expr_fn::{
    array_append, array_concat, array_prepend, array_reverse,
};
use datafusion::logical_expr::expr::{Cast, ScalarFunction, TryCast};
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, Operator, cast, lit};

use crate::error::{Error, ErrorCode};

/// `expr` in Trino's meaning, its arguments already rewritten.
pub(super) fn rewrite(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    match expr {
        Expr::ScalarFunction(call) => function(call, schema),
        // An integer literal typed `integer` by the literal rewrite is an Int32 literal: plans
        // (and the result cache's keys) then read as the SQL did.
        Expr::Cast(Cast { expr, field })
            if *field.data_type() == DataType::Int32 && small_integer(&expr).is_some() =>
        {
            Ok(Transformed::yes(Expr::Literal(
                ScalarValue::Int32(small_integer(&expr)),
                None,
            )))
        }
        cast @ (Expr::Cast(_) | Expr::TryCast(_)) => trino_cast(cast, schema),
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: op @ (Operator::Plus | Operator::Minus | Operator::Multiply | Operator::Divide),
            right,
        }) => arithmetic(*left, op, *right, schema),
        // A negated literal stays one: planning folds it, checked.
        Expr::Negative(operand)
            if !matches!(*operand, Expr::Literal(..)) && is_integer(&operand.get_type(schema)?) =>
        {
            Ok(Transformed::yes(checked(
                sqe_functions::IntegerOperation::Negate,
                vec![*operand],
            )))
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right })
            if is_ordering(op)
                || matches!(op, Operator::IsDistinctFrom | Operator::IsNotDistinctFrom) =>
        {
            comparison(*left, op, *right, schema)
        }
        Expr::BinaryExpr(BinaryExpr {
            ref left,
            op: Operator::BitwiseAnd | Operator::BitwiseOr | Operator::BitwiseXor,
            ref right,
        }) => {
            for operand in [left, right] {
                let t = operand.get_type(schema)?;
                if !is_integer(&t) && t != DataType::Null {
                    // Trino's name for arguments no signature of the function takes.
                    return Err(refused(
                        ErrorCode::FunctionNotFound,
                        format!(
                            "Unexpected parameter of type {} for a bitwise function: expected bigint",
                            type_name(operand, schema)?
                        ),
                    ));
                }
            }
            Ok(Transformed::no(expr))
        }
        Expr::InSubquery(ref in_subquery) => {
            let value = in_subquery.expr.get_type(schema)?;
            let subquery = &in_subquery.subquery.subquery;
            if let Some(result) = subquery.schema().fields().first()
                && text_beside_other(&[&value, result.data_type()]).is_some()
            {
                return Err(refused(
                    ErrorCode::TypeMismatch,
                    format!(
                        "value and result of subquery must be of the same type for IN \
                         expression: {} vs {}",
                        type_name(&in_subquery.expr, schema)?,
                        super::logical::output_type_name(subquery, 0)
                    ),
                ));
            }
            Ok(Transformed::no(expr))
        }
        Expr::InList(in_list) => {
            let items = std::iter::once(&*in_list.expr).chain(&in_list.list);
            refuse_text_beside_other("IN value and list items", items, schema)?;
            real_in_list(in_list, schema)
        }
        Expr::Case(case) => {
            if let Some(operand) = &case.expr {
                let compared = case.when_then_expr.iter().map(|(when, _)| when.as_ref());
                refuse_text_beside_other(
                    "CASE operand and WHEN clause operands",
                    std::iter::once(operand.as_ref()).chain(compared),
                    schema,
                )?;
            }
            let results = case.when_then_expr.iter().map(|(_, then)| then.as_ref());
            refuse_text_beside_other(
                "All CASE results",
                results.chain(case.else_expr.as_deref()),
                schema,
            )?;
            real_case(case, schema)
        }
        other => Ok(Transformed::no(other)),
    }
}

/// The real type Trino gives a mix of real numbers and decimals (`double` beside a double,
/// else `real`); `None` when `types` do not mix them.
pub(super) fn real_of_mix<'a>(
    types: impl IntoIterator<Item = &'a DataType> + Clone,
) -> Option<DataType> {
    let mut reals = types.clone().into_iter().filter(|t| is_real(t)).peekable();
    reals.peek()?;
    let widest = if reals.any(|t| *t == DataType::Float64) {
        DataType::Float64
    } else {
        DataType::Float32
    };
    types.into_iter().any(is_decimal).then_some(widest)
}

/// `expr` of type `t` as `real` when it is a decimal.
fn decimal_as(expr: Expr, t: &DataType, real: &DataType) -> Expr {
    if is_decimal(t) {
        cast(expr, real.clone())
    } else {
        expr
    }
}

/// A `CASE` whose results mix real numbers and decimals, its decimal results as the real type.
fn real_case(
    mut case: datafusion::logical_expr::expr::Case,
    schema: &DFSchema,
) -> Result<Transformed<Expr>> {
    let mut types = case
        .when_then_expr
        .iter()
        .map(|(_, then)| then.get_type(schema))
        .collect::<Result<Vec<_>>>()?;
    if let Some(otherwise) = &case.else_expr {
        types.push(otherwise.get_type(schema)?);
    }
    let Some(real) = real_of_mix(&types) else {
        return Ok(Transformed::no(Expr::Case(case)));
    };
    let mut types = types.iter();
    for (_, then) in &mut case.when_then_expr {
        if let Some(t) = types.next() {
            let value = std::mem::replace(then.as_mut(), lit(0));
            **then = decimal_as(value, t, &real);
        }
    }
    if let (Some(otherwise), Some(t)) = (&mut case.else_expr, types.next()) {
        let value = std::mem::replace(otherwise.as_mut(), lit(0));
        **otherwise = decimal_as(value, t, &real);
    }
    Ok(Transformed::yes(Expr::Case(case)))
}

/// `x [NOT] IN (…)` of real numbers as Trino's: each item compared as `=` compares them (IEEE
/// 754: NaN matches nothing, -0.0 matches 0.0; Arrow's list matched NaN with NaN and kept -0.0
/// apart), and a decimal among them taken as the real type (DataFusion cast the reals to a
/// decimal, failing on NaN and above 10^15). Other lists stay as they are.
fn real_in_list(
    in_list: datafusion::logical_expr::expr::InList,
    schema: &DFSchema,
) -> Result<Transformed<Expr>> {
    use datafusion::functions::math::expr_fn::isnan;
    use datafusion::logical_expr::expr::InList;
    let types = std::iter::once(&*in_list.expr)
        .chain(&in_list.list)
        .map(|e| e.get_type(schema))
        .collect::<Result<Vec<_>>>()?;
    let Some(real) = types
        .iter()
        .filter(|t| is_real(t))
        .max_by_key(|t| matches!(t, DataType::Float64))
        .cloned()
    else {
        return Ok(Transformed::no(Expr::InList(in_list)));
    };
    let InList {
        expr,
        list,
        negated,
    } = in_list;
    let as_real = |e: Expr, t: &DataType| {
        if is_decimal(t) {
            cast(e, real.clone())
        } else {
            e
        }
    };
    // x + 0.0 is x, but +0.0 for -0.0.
    let signless = |e: Expr| e + cast(lit(0.0), real.clone());
    let x = as_real(*expr, &types[0]);
    let mut nulls: Vec<Expr> = Vec::new();
    let mut items = Vec::with_capacity(list.len());
    for (item, t) in list.into_iter().zip(&types[1..]) {
        match &item {
            Expr::Literal(value, _) if value.is_null() => nulls.push(lit(true)),
            Expr::Literal(..) => {}
            other => nulls.push(other.clone().is_null()),
        }
        // A NaN item matches nothing: x is not NaN where the list is asked.
        if is_nan_literal(&item) {
            continue;
        }
        items.push(match as_real(item, t) {
            literal @ Expr::Literal(..) => signless_literal(literal),
            other if is_real(t) || is_decimal(t) => signless(other),
            other => other,
        });
    }
    // x NaN: each `=` is false, or NULL beside a NULL item.
    let nan_answer = match nulls.into_iter().reduce(Expr::or) {
        None => lit(false),
        Some(any_null) => null_when_else_false(any_null),
    };
    let matched = if items.is_empty() {
        // Only NaN items: NULL for a NULL x, false otherwise.
        null_when_else_false(x.clone().is_null())
    } else {
        Expr::InList(InList::new(Box::new(signless(x.clone())), items, false))
    };
    let answer = Expr::Case(datafusion::logical_expr::Case::new(
        None,
        vec![(Box::new(isnan(x)), Box::new(nan_answer))],
        Some(Box::new(matched)),
    ));
    Ok(Transformed::yes(if negated {
        std::ops::Not::not(answer)
    } else {
        answer
    }))
}

/// `CASE WHEN condition THEN NULL ELSE false END`.
fn null_when_else_false(condition: Expr) -> Expr {
    Expr::Case(datafusion::logical_expr::Case::new(
        None,
        vec![(
            Box::new(condition),
            Box::new(lit(ScalarValue::Boolean(None))),
        )],
        Some(Box::new(lit(false))),
    ))
}

/// Whether `e` is a real-number literal holding NaN.
fn is_nan_literal(e: &Expr) -> bool {
    match e {
        Expr::Literal(ScalarValue::Float64(Some(v)), _) => v.is_nan(),
        Expr::Literal(ScalarValue::Float32(Some(v)), _) => v.is_nan(),
        _ => false,
    }
}

/// A real-number literal other than NaN with -0.0 made +0.0 (`v + 0.0`); anything else as it is.
fn signless_literal(e: Expr) -> Expr {
    match e {
        Expr::Literal(ScalarValue::Float64(Some(v)), m) if !v.is_nan() => {
            Expr::Literal(ScalarValue::Float64(Some(v + 0.0)), m)
        }
        Expr::Literal(ScalarValue::Float32(Some(v)), m) if !v.is_nan() => {
            Expr::Literal(ScalarValue::Float32(Some(v + 0.0)), m)
        }
        other => other,
    }
}

pub(super) fn is_decimal(t: &DataType) -> bool {
    matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..))
}

/// `left op right` for `+`, `-`, `*` and `/` as Trino means them: a quotient of decimals (or of
/// a decimal and an integer, as the decimal that holds it: `integer` is `decimal(10,0)`) in
/// Trino's type, and integer `+`, `-`, `*` failing on overflow, each a function of SQE's; other
/// operands as they were.
fn arithmetic(
    left: Expr,
    op: Operator,
    right: Expr,
    schema: &DFSchema,
) -> Result<Transformed<Expr>> {
    let (left_type, right_type) = (left.get_type(schema)?, right.get_type(schema)?);
    let call = |function, args| {
        Ok(Transformed::yes(Expr::ScalarFunction(
            ScalarFunction::new_udf(function, args),
        )))
    };
    let is_time = |t: &DataType| matches!(t, DataType::Time32(_) | DataType::Time64(_));
    let is_interval = |t: &DataType| matches!(t, DataType::Interval(_));
    match op {
        // A time moved by an interval is a time, wrapping around midnight.
        Operator::Plus | Operator::Minus if is_time(&left_type) && is_interval(&right_type) => {
            let sign = if op == Operator::Plus { 1_i64 } else { -1 };
            return call(
                sqe_functions::time_plus_function(),
                vec![left, right, lit(sign)],
            );
        }
        Operator::Plus if is_interval(&left_type) && is_time(&right_type) => {
            return call(
                sqe_functions::time_plus_function(),
                vec![right, left, lit(1_i64)],
            );
        }
        _ => {}
    }
    if op == Operator::Divide {
        if is_decimal_quotient(&left_type, &right_type) {
            return Ok(Transformed::yes(decimal_quotient(
                left,
                &left_type,
                right,
                &right_type,
            )));
        }
    } else if is_integer(&left_type) && is_integer(&right_type) {
        let operation = match op {
            Operator::Plus => sqe_functions::IntegerOperation::Add,
            Operator::Minus => sqe_functions::IntegerOperation::Subtract,
            _ => sqe_functions::IntegerOperation::Multiply,
        };
        return Ok(Transformed::yes(checked(operation, vec![left, right])));
    }
    Ok(Transformed::no(Expr::BinaryExpr(BinaryExpr::new(
        Box::new(left),
        op,
        Box::new(right),
    ))))
}

/// Whether a division of these operand types is a quotient of decimals (a decimal by a
/// decimal or an integer, or an integer by a decimal), which has Trino's type.
pub(super) fn is_decimal_quotient(left: &DataType, right: &DataType) -> bool {
    let is_decimal128 = |t: &DataType| matches!(t, DataType::Decimal128(..));
    let in_quotient =
        |t: &DataType| is_decimal128(t) || sqe_functions::types::integer_digits(t).is_some();
    (is_decimal128(left) || is_decimal128(right)) && in_quotient(left) && in_quotient(right)
}

/// A decimal's precision and scale, or an integer's as the decimal that holds it.
fn decimal_digits(t: &DataType) -> Option<(u8, i8)> {
    match t {
        DataType::Decimal128(p, s) => Some((*p, *s)),
        other => sqe_functions::types::integer_digits(other).map(|d| (d, 0)),
    }
}

/// Whether `left + right` (or `-`) of decimals (an integer taken as the decimal that holds
/// it) needs more than 38 digits by Trino's rule, `max(p1 - s1, p2 - s2) + max(s1, s2) + 1`:
/// its type is then capped at 38 and a result can exceed it.
pub(super) fn decimal_sum_overflows_type(left: &DataType, right: &DataType) -> bool {
    if !is_decimal_quotient(left, right) {
        return false;
    }
    let (Some((p1, s1)), Some((p2, s2))) = (decimal_digits(left), decimal_digits(right)) else {
        return false;
    };
    let (p1, s1, p2, s2) = (i16::from(p1), i16::from(s1), i16::from(p2), i16::from(s2));
    (p1 - s1).max(p2 - s2) + s1.max(s2) + 1 > 38
}

/// Trino's type of `left * right` where one is a decimal and the other a decimal or an
/// integer (taken as the decimal that holds it): `decimal(min(38, p1 + p2), s1 + s2)`; `None`
/// for other operands.
pub(super) fn decimal_product_type(left: &DataType, right: &DataType) -> Option<DataType> {
    if !is_decimal_quotient(left, right) {
        return None;
    }
    let ((p1, s1), (p2, s2)) = (decimal_digits(left)?, decimal_digits(right)?);
    let scale = s1.checked_add(s2).filter(|s| (0..=38).contains(s))?;
    let precision = (u16::from(p1) + u16::from(p2)).min(38) as u8;
    Some(DataType::Decimal128(
        precision.max(scale.unsigned_abs()),
        scale,
    ))
}

/// `left / right` of decimals (see [`is_decimal_quotient`]) in Trino's type, rounded half up.
pub(super) fn decimal_quotient(
    left: Expr,
    left_type: &DataType,
    right: Expr,
    right_type: &DataType,
) -> Expr {
    let as_decimal = |expr: Expr, t: &DataType| match sqe_functions::types::integer_digits(t) {
        Some(digits) => cast(expr, DataType::Decimal128(digits, 0)),
        None => expr,
    };
    Expr::ScalarFunction(ScalarFunction::new_udf(
        sqe_functions::decimal_divide_function(),
        vec![as_decimal(left, left_type), as_decimal(right, right_type)],
    ))
}

/// `operation` on integer `args`, failing on overflow.
fn checked(operation: sqe_functions::IntegerOperation, args: Vec<Expr>) -> Expr {
    Expr::ScalarFunction(ScalarFunction::new_udf(
        sqe_functions::checked_arithmetic_function(operation),
        args,
    ))
}

/// A user error of `code`, carried through DataFusion's planning to the engine's classifier.
fn refused(code: ErrorCode, message: String) -> DataFusionError {
    DataFusionError::External(Box::new(Error::invalid(code, message)))
}

/// A cast (or `TRY_CAST`) as Trino means it: refused with TYPE_MISMATCH when Trino has no
/// such cast; a real number to an integer rounded first, and a timestamp or time to a lower
/// precision too (Arrow's cast truncates).
fn trino_cast(cast: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let (input, target) = match &cast {
        Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => {
            (expr.as_ref(), field.data_type())
        }
        _ => return Ok(Transformed::no(cast)),
    };
    let (source, field) = {
        let (_, field) = input.to_field(schema)?;
        (field.data_type().clone(), field)
    };
    if sqe_functions::is_json(&field) {
        let target = target.clone();
        return json_cast(cast, &target);
    }
    if let Some(of) = sqe_functions::SixteenBytes::of_field(&field) {
        let target = target.clone();
        let source = type_name(input, schema)?;
        return sixteen_bytes_cast(cast, of, &target, &source);
    }
    if is_integer(target) {
        let rounded = with_input(cast, |input| rounded(input, schema))?;
        return rounded.transform_data(|cast| checked_cast(cast, schema));
    }
    if is_text(&source) && *target == DataType::Boolean {
        // Trino's spellings only (`true`, `t`, `1`, …); Arrow's also took `yes` and `on`.
        let fallible = matches!(cast, Expr::TryCast(_));
        return Ok(Transformed::yes(Expr::ScalarFunction(
            ScalarFunction::new_udf(
                sqe_functions::text_boolean_function(),
                vec![
                    datafusion::logical_expr::cast(input.clone(), DataType::Utf8),
                    lit(fallible),
                ],
            ),
        )));
    }
    if let (DataType::Float32 | DataType::Float64, DataType::Decimal128(p, s)) = (&source, target) {
        // Rounded half up from the digits Java shows (`1.005E0` is `1.01` at scale 2), as
        // Trino's cast; Arrow scales the binary value (1.00499…, so `1.00`).
        let fallible = matches!(cast, Expr::TryCast(_));
        return Ok(Transformed::yes(Expr::ScalarFunction(
            ScalarFunction::new_udf(
                sqe_functions::real_decimal_function(),
                vec![
                    input.clone(),
                    lit(i64::from(*p)),
                    lit(i64::from(*s)),
                    lit(fallible),
                ],
            ),
        )));
    }
    let to_text = is_text(target);
    let text_function = match source {
        // Java's text for the value (Arrow writes `1e-10` for Trino's `1.0E-10`).
        DataType::Float32 | DataType::Float64 if to_text => {
            Some(sqe_functions::real_text_function())
        }
        // A space, not ISO's `T`, and the zone after the time.
        DataType::Timestamp(..) if to_text => Some(sqe_functions::timestamp_text_function()),
        // `1-2` and `3 00:00:00.000`, not Arrow's `1 years 2 mons` and `3 days`.
        DataType::Interval(_) | DataType::Duration(_) if to_text => {
            Some(sqe_functions::interval_text_function())
        }
        // The wall-clock reading in its zone (Arrow keeps the UTC reading), rounded to the
        // precision the cast that stays sets (it would truncate).
        DataType::Timestamp(unit, Some(_)) if matches!(target, DataType::Timestamp(_, None)) => {
            let local = DataType::Timestamp(unit, None);
            let digits = sqe_functions::lowered_digits(&local, target);
            return with_input(cast, |input| {
                let reading = Expr::ScalarFunction(ScalarFunction::new_udf(
                    sqe_functions::wall_clock_function(),
                    vec![input],
                ));
                Ok(Transformed::yes(match digits {
                    Some(digits) => Expr::ScalarFunction(ScalarFunction::new_udf(
                        sqe_functions::round_fraction_function(),
                        vec![reading, lit(i64::from(digits))],
                    )),
                    None => reading,
                }))
            });
        }
        _ => None,
    };
    if let Some(function) = text_function {
        // The cast that stays only changes how the text is held.
        return with_input(cast, |input| {
            Ok(Transformed::yes(Expr::ScalarFunction(
                ScalarFunction::new_udf(function, vec![input]),
            )))
        });
    }
    if !castable(&source, target) {
        return Err(refused(
            ErrorCode::TypeMismatch,
            format!(
                "Cannot cast {} to {}",
                type_name(input, schema)?,
                super::types::TrinoType::from_arrow(target)
            ),
        ));
    }
    match sqe_functions::lowered_digits(&source, target) {
        Some(digits) => with_input(cast, |input| {
            Ok(Transformed::yes(Expr::ScalarFunction(
                ScalarFunction::new_udf(
                    sqe_functions::round_fraction_function(),
                    vec![input, lit(i64::from(digits))],
                ),
            )))
        })?
        .transform_data(|cast| checked_cast(cast, schema)),
        None => checked_cast(cast, schema),
    }
}

/// A `CAST` (not `TRY_CAST`) that can fail on a value as SQE's, which fails in Trino's words
/// and codes ([`sqe_functions::can_fail`]).
fn checked_cast(cast: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Expr::Cast(Cast { expr, field }) = &cast else {
        return Ok(Transformed::no(cast));
    };
    let source = expr.get_type(schema)?;
    if !sqe_functions::can_fail(&source, field.data_type()) {
        return Ok(Transformed::no(cast));
    }
    let target = ScalarValue::try_from(field.data_type())?;
    Ok(Transformed::yes(Expr::ScalarFunction(
        ScalarFunction::new_udf(
            sqe_functions::checked_cast_function(),
            vec![expr.as_ref().clone(), Expr::Literal(target, None)],
        ),
    )))
}

/// A cast of `json` to a scalar: the cast of its text (a JSON string's own text, see
/// `sqe_functions::JSON_TO_TEXT`); to an array, map or row: not yet.
fn json_cast(cast: Expr, target: &DataType) -> Result<Transformed<Expr>> {
    if target.is_nested() {
        return Err(DataFusionError::NotImplemented(format!(
            "CAST of json to {}",
            super::types::TrinoType::from_arrow(target)
        )));
    }
    with_input(cast, |input| {
        Ok(Transformed::yes(Expr::ScalarFunction(
            ScalarFunction::new_udf(sqe_functions::json_to_text_function(), vec![input]),
        )))
    })
}

/// A cast of `uuid` or `ipaddress`: to text, its text; to `varbinary`, its bytes; to anything
/// else, TYPE_MISMATCH, as in Trino.
fn sixteen_bytes_cast(
    cast: Expr,
    of: sqe_functions::SixteenBytes,
    target: &DataType,
    source: &str,
) -> Result<Transformed<Expr>> {
    if is_text(target) {
        return with_input(cast, |input| {
            Ok(Transformed::yes(Expr::ScalarFunction(
                ScalarFunction::new_udf(
                    sqe_functions::sixteen_bytes_text_function(of),
                    vec![input],
                ),
            )))
        });
    }
    if matches!(
        target,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView
    ) || *target == DataType::FixedSizeBinary(16)
    {
        return Ok(Transformed::no(cast));
    }
    Err(refused(
        ErrorCode::TypeMismatch,
        format!(
            "Cannot cast {source} to {}",
            super::types::TrinoType::from_arrow(target)
        ),
    ))
}

/// A JSON constructor's values as Trino takes them: one of a type an item is read from as
/// it is, any other that casts to varchar as its text (a date, a uuid, a timestamp), the rest
/// (arrays, maps, rows, varbinary without `FORMAT JSON`) NOT_SUPPORTED; a key is text.
fn json_constructor(
    call: ScalarFunction,
    (clauses, stride): (usize, usize),
    schema: &DFSchema,
) -> Result<Transformed<Expr>> {
    let name = call.func.name().to_string();
    let constant = |e: &Expr| match e {
        Expr::Literal(value, _) => value.try_as_str().flatten().map(str::to_string),
        _ => None,
    };
    let mut args = call.args;
    let mut changed = false;
    for at in (clauses..args.len()).step_by(stride) {
        let value_at = at + stride - 1;
        let (Some(format), Some(value)) = (
            args.get(value_at - 1).and_then(constant),
            args.get(value_at),
        ) else {
            break;
        };
        if name == "json_object" {
            let key_type = args[at].get_type(schema)?;
            if !is_text(&key_type) && key_type != DataType::Null {
                return Err(refused(
                    ErrorCode::TypeMismatch,
                    format!(
                        "Invalid type of JSON object key: {}",
                        type_name(&args[at], schema)?
                    ),
                ));
            }
        }
        let (_, field) = value.to_field(schema)?;
        if sqe_functions::json_item_readable(&field, &format) {
            continue;
        }
        let source = field.data_type();
        let castable_to_text = format == "SQL"
            && !source.is_nested()
            && !matches!(
                source,
                DataType::Binary | DataType::LargeBinary | DataType::BinaryView
            )
            && (sqe_functions::SixteenBytes::of_field(&field).is_some()
                || castable(source, &DataType::Utf8));
        if !castable_to_text {
            let read_as = if format == "SQL" {
                String::new()
            } else {
                " using formatting JSON".to_string()
            };
            return Err(refused(
                ErrorCode::NotSupported,
                format!(
                    "Unsupported type {} for {} value{read_as}",
                    type_name(value, schema)?,
                    name.to_uppercase()
                ),
            ));
        }
        let text = datafusion::logical_expr::cast(value.clone(), DataType::Utf8);
        args[value_at] = trino_cast(text, schema)?.data;
        changed = true;
    }
    let rebuilt = Expr::ScalarFunction(ScalarFunction::new_udf(call.func, args));
    Ok(if changed {
        Transformed::yes(rebuilt)
    } else {
        Transformed::no(rebuilt)
    })
}

/// The cast with its input replaced by what `f` makes of it.
fn with_input(
    cast: Expr,
    f: impl FnOnce(Expr) -> Result<Transformed<Expr>>,
) -> Result<Transformed<Expr>> {
    match cast {
        Expr::Cast(Cast { expr, field }) => {
            Ok(f(*expr)?
                .update_data(|input| Expr::Cast(Cast::new_from_field(Box::new(input), field))))
        }
        Expr::TryCast(TryCast { expr, field }) => Ok(f(*expr)?.update_data(|input| {
            Expr::TryCast(TryCast {
                expr: Box::new(input),
                field,
            })
        })),
        other => Ok(Transformed::no(other)),
    }
}

/// Whether Trino has the cast. Arrow also casts a single value to a one-element list and a
/// number's bytes to `varbinary`; Trino casts only a list to an array, a map to a map, a row
/// to a row, and text to `varbinary`. Otherwise Arrow's castability decides (DataFusion
/// would refuse the rest while planning, in Arrow's type names); a struct to a struct is
/// DataFusion's own, by position after [`super::logical`].
fn castable(source: &DataType, target: &DataType) -> bool {
    let nested = |t: &DataType| match t {
        DataType::List(_)
        | DataType::LargeList(_)
        | DataType::FixedSizeList(..)
        | DataType::ListView(_)
        | DataType::LargeListView(_) => Some("array"),
        DataType::Map(..) => Some("map"),
        DataType::Struct(_) => Some("row"),
        _ => None,
    };
    let bytes_or_text = |t: &DataType| {
        matches!(
            t,
            DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Binary
                | DataType::LargeBinary
                | DataType::BinaryView
                | DataType::FixedSizeBinary(_)
        )
    };
    let to_binary = matches!(
        target,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView
    );
    match (source, target) {
        (DataType::Null, _) | (DataType::Struct(_), DataType::Struct(_)) => true,
        _ if nested(source) != nested(target) => false,
        _ if to_binary => bytes_or_text(source),
        _ => datafusion::arrow::compute::can_cast_types(source, target),
    }
}

fn small_integer(expr: &Expr) -> Option<i32> {
    match expr {
        Expr::Literal(ScalarValue::Int64(Some(v)), None) => i32::try_from(*v).ok(),
        _ => None,
    }
}

fn is_integer(t: &DataType) -> bool {
    sqe_functions::types::integer_digits(t).is_some()
}

/// A real number rounded to an integer value in its own type, ready for an integer cast.
fn rounded(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    match expr.get_type(schema)? {
        DataType::Float16 | DataType::Float32 | DataType::Float64 => {
            Ok(Transformed::yes(round(vec![expr])))
        }
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) if s > 0 => {
            // A decimal rescaled to no fraction rounds half away from zero.
            let digits = (i16::from(p) - i16::from(s) + 1).clamp(1, 38) as u8;
            Ok(Transformed::yes(Expr::Cast(Cast::new(
                Box::new(expr),
                DataType::Decimal128(digits, 0),
            ))))
        }
        _ => Ok(Transformed::no(expr)),
    }
}

/// A text literal typed `varchar` (as a function's result is, not `varchar(n)` as a literal).
fn unbounded_text(text: String) -> Expr {
    let metadata = std::collections::BTreeMap::from([(
        super::types::TRINO_TYPE.to_string(),
        "varchar".to_string(),
    )]);
    Expr::Literal(
        ScalarValue::Utf8(Some(text)),
        Some(datafusion::common::metadata::FieldMetadata::from(metadata)),
    )
}

/// The Trino type name of `expr` (a string literal's as [`super::logical`] types it).
fn type_name(expr: &Expr, schema: &DFSchema) -> Result<String> {
    if let Expr::Literal(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)), None) = expr {
        return Ok(super::logical::literal_type(s));
    }
    let (_, field) = expr.to_field(schema)?;
    Ok(super::types::TrinoType::from_field(&field).client_name())
}

fn is_list(t: &DataType) -> bool {
    matches!(
        t,
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)
    )
}

fn function(call: ScalarFunction, schema: &DFSchema) -> Result<Transformed<Expr>> {
    if let Some(layout) = sqe_functions::json_constructor_layout(call.func.name()) {
        return json_constructor(call, layout, schema);
    }
    let types = call
        .args
        .iter()
        .map(|a| a.get_type(schema))
        .collect::<Result<Vec<_>>>()?;
    let original = Expr::ScalarFunction(call.clone());
    let rewritten = match (call.func.name(), types.as_slice()) {
        ("concat", types) if types.iter().any(is_list) => concat_arrays(call.args, types),
        ("concat", types) if !types.iter().all(concatenable) => {
            return Err(unconcatenable(types));
        }
        ("concat", _) if call.args.len() > 1 => Some(concat_strings(call.args)),
        // Of an array, its elements joined (NULLs skipped); DataFusion's writes the array.
        ("concat_ws", [_, t]) if is_list(t) => {
            let mut args = call.args.into_iter();
            match (args.next(), args.next()) {
                (Some(separator), Some(array)) => Some(
                    datafusion::functions_nested::expr_fn::array_to_string(array, separator),
                ),
                _ => None,
            }
        }
        ("reverse", [t]) if is_list(t) => call.args.into_iter().next().map(array_reverse),
        // Real numbers and timestamps joined as Trino writes them (`1.0`, a space before the
        // time), not as Arrow does (`1`, ISO's `T`).
        ("array_to_string", [DataType::List(element), ..])
            if matches!(
                element.data_type(),
                DataType::Float32 | DataType::Float64 | DataType::Timestamp(..)
            ) =>
        {
            let mut args = call.args;
            args[0] = Expr::ScalarFunction(ScalarFunction::new_udf(
                sqe_functions::list_text_function(),
                vec![args[0].clone()],
            ));
            Some(Expr::ScalarFunction(ScalarFunction::new_udf(
                call.func, args,
            )))
        }
        ("abs", [t]) if is_integer(t) => {
            Some(checked(sqe_functions::IntegerOperation::Abs, call.args))
        }
        ("typeof", [_]) => Some(unbounded_text(type_name(&call.args[0], schema)?)),
        // Of a varbinary, its bytes (DataFusion read it as text: code points, or an error).
        ("character_length", [DataType::Binary | DataType::LargeBinary | DataType::BinaryView]) => {
            Some(Expr::ScalarFunction(ScalarFunction::new_udf(
                sqe_functions::byte_length_function(),
                call.args,
            )))
        }
        // Trino's decimal(p - s + 1, 0); DataFusion's keeps the scale (`2.0` for `2`). Rounded
        // in a type one digit wider, so `ceil(DECIMAL '9.5')` has room for 10; the fraction is
        // then zero, so the last cast is exact.
        ("ceil" | "floor", [DataType::Decimal128(p, s)]) if *s > 0 => {
            let wider = cast(
                call.args[0].clone(),
                DataType::Decimal128((*p + 1).min(38), *s),
            );
            Some(cast(
                Expr::ScalarFunction(ScalarFunction::new_udf(call.func, vec![wider])),
                DataType::Decimal128((i16::from(*p) - i16::from(*s) + 1).clamp(1, 38) as u8, 0),
            ))
        }
        // Of an integer, the integer itself in its type (DataFusion's is a double).
        ("ceil" | "floor" | "round" | "trunc", [t]) if is_integer(t) => {
            call.args.into_iter().next()
        }
        ("round", [t, d]) if is_integer(t) && is_integer(d) => Some(Expr::ScalarFunction(
            ScalarFunction::new_udf(sqe_functions::integer_round_function(), call.args),
        )),
        // Trino's decimal(p - s + 1, 0) (DataFusion's keeps p digits: decimal(3,0) for a
        // decimal(3,2)); the rounded value always fits.
        ("round", [DataType::Decimal128(p, s)]) if *s > 0 => Some(cast(
            Expr::ScalarFunction(call),
            DataType::Decimal128((i16::from(*p) - i16::from(*s) + 1).clamp(1, 38) as u8, 0),
        )),
        // Trino's decimal(min(38, p + 1), s): the scale kept, a digit for the carry
        // (`round(2.55, 1)` is `2.60`; DataFusion's took the scale to the places asked for).
        ("round", [DataType::Decimal128(p, s), d]) if is_integer(d) => {
            let wider = DataType::Decimal128((*p + 1).min(38), *s);
            let mut args = call.args;
            args[0] = cast(args[0].clone(), wider.clone());
            Some(cast(
                Expr::ScalarFunction(ScalarFunction::new_udf(call.func, args)),
                wider,
            ))
        }
        // Trino's take and answer doubles only; DataFusion's answered a real of a real (its
        // precision: `sqrt(REAL '2')` is 1.4142135, not 1.4142135623730951), and atan2 of
        // integers too.
        (name, types)
            if DOUBLE_ONLY.contains(&name)
                && types
                    .iter()
                    .any(|t| t.is_numeric() && *t != DataType::Float64) =>
        {
            let args = call
                .args
                .into_iter()
                .zip(types)
                .map(|(arg, t)| {
                    if t.is_numeric() && *t != DataType::Float64 {
                        cast(arg, DataType::Float64)
                    } else {
                        arg
                    }
                })
                .collect();
            Some(Expr::ScalarFunction(ScalarFunction::new_udf(
                call.func, args,
            )))
        }
        // The first argument's type and value (DataFusion answered it in the common type of
        // both: `nullif(1, 2.0)` was the decimal 1.0).
        ("nullif", [first, second]) if first != second && *first != DataType::Null => {
            let mut args = call.args.into_iter();
            match (args.next(), args.next()) {
                (Some(value), Some(other)) => Some(
                    datafusion::logical_expr::when(value.clone().eq(other), lit(ScalarValue::Null))
                        .otherwise(value)?,
                ),
                _ => None,
            }
        }
        ("date_part", [_, _]) => Some(extracted(call, schema)?),
        // Trino's `sign` (spelled `signum`): -1, 0 or 1 in the argument's type (a decimal's is
        // decimal(1,0)), NaN for NaN; DataFusion's answers a double and 1 for zero.
        ("signum", [t]) if t.is_numeric() => Some(signed(call.args, t)?),
        ("trunc", [DataType::Decimal128(p, s), rest @ ..]) if rest.len() <= 1 => {
            Some(truncated_decimal(call.args, *p, *s)?)
        }
        ("date_trunc", [_, DataType::Date32 | DataType::Date64]) => Some(Expr::Cast(Cast::new(
            Box::new(Expr::ScalarFunction(call)),
            DataType::Date32,
        ))),
        ("get_field" | "map_extract", [DataType::Map(entries, _), key]) => {
            map_lookup(call.func, call.args, entries, key, schema)?
        }
        (sqe_functions::SUBSCRIPT, [DataType::Map(entries, _), key, _]) => {
            let mut args = call.args;
            let mode = args.pop();
            map_lookup(call.func, args, entries, key, schema)?.map(|lookup| match (lookup, mode) {
                (Expr::ScalarFunction(mut f), Some(mode)) => {
                    f.args.push(mode);
                    Expr::ScalarFunction(f)
                }
                (other, _) => other,
            })
        }
        ("coalesce", types) if text_beside_other(&types.iter().collect::<Vec<_>>()).is_some() => {
            refuse_text_beside_other("All COALESCE operands", call.args.iter(), schema)?;
            None
        }
        ("coalesce" | "nvl" | "ifnull" | "greatest" | "least" | "make_array", types)
            if real_of_mix(types).is_some() =>
        {
            let real = real_of_mix(types).unwrap_or(DataType::Float64);
            let args = call
                .args
                .into_iter()
                .zip(types)
                .map(|(arg, t)| decimal_as(arg, t, &real))
                .collect();
            Some(Expr::ScalarFunction(ScalarFunction::new_udf(
                call.func, args,
            )))
        }
        _ => None,
    };
    Ok(match rewritten {
        Some(expr) => Transformed::yes(expr),
        None => Transformed::no(original),
    })
}

/// Trino's functions that take and answer only doubles (of which DataFusion's answer a real
/// for a real).
const DOUBLE_ONLY: [&str; 21] = [
    "acos", "asin", "atan", "atan2", "cbrt", "cos", "cosh", "degrees", "exp", "ln", "log", "log10",
    "log2", "pow", "power", "radians", "sin", "sinh", "sqrt", "tan", "tanh",
];

/// A map's subscript (or `map_extract`) with its key in the map's key type (an `integer`
/// literal for `bigint` keys; Arrow compares only equal types, and failed as an internal
/// error), and a subscript by a key that differs from row to row as `map_extract`'s first
/// value (DataFusion's subscript takes only constants). A key of another kind than the map's
/// is TYPE_MISMATCH.
fn map_lookup(
    func: std::sync::Arc<datafusion::logical_expr::ScalarUDF>,
    mut args: Vec<Expr>,
    entries: &datafusion::arrow::datatypes::FieldRef,
    key_type: &DataType,
    schema: &DFSchema,
) -> Result<Option<Expr>> {
    let Some(wanted) = map_key_type(entries).cloned() else {
        return Ok(None);
    };
    let (Some(key), Some(map)) = (args.pop(), args.pop()) else {
        return Ok(None);
    };
    let same_kind = (wanted.is_numeric() && key_type.is_numeric())
        || (is_text(&wanted) && is_text(key_type))
        || *key_type == DataType::Null
        || wanted == *key_type;
    if !same_kind {
        return Err(refused(
            ErrorCode::TypeMismatch,
            format!(
                "Cannot use {} as a key of {}",
                type_name(&key, schema)?,
                type_name(&map, schema)?
            ),
        ));
    }
    let constant = matches!(key, Expr::Literal(..));
    let retyped = *key_type != wanted;
    let key = if retyped { cast(key, wanted) } else { key };
    if func.name() == "get_field" && !constant {
        let values = datafusion::functions_nested::expr_fn::map_extract(map, key);
        return Ok(Some(datafusion::functions_nested::expr_fn::array_element(
            values,
            lit(1_i64),
        )));
    }
    Ok(retyped.then(|| Expr::ScalarFunction(ScalarFunction::new_udf(func, vec![map, key]))))
}

/// The key type of a map's entries.
fn map_key_type(entries: &datafusion::arrow::datatypes::FieldRef) -> Option<&DataType> {
    match entries.data_type() {
        DataType::Struct(fields) => fields.first().map(|f| f.data_type()),
        _ => None,
    }
}

pub(super) fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// Text beside a number or a boolean among `types`, which Trino never coerces into one another
/// (DataFusion compares `'10' < 9` as numbers but a text column with `9` as text): the text
/// type and the other.
pub(super) fn text_beside_other<'a>(
    types: &[&'a DataType],
) -> Option<(&'a DataType, &'a DataType)> {
    let text = types.iter().copied().find(|t| is_text(t))?;
    let other = types
        .iter()
        .copied()
        .find(|t| t.is_numeric() || **t == DataType::Boolean)?;
    Some((text, other))
}

/// Trino's refusal of `values` of which one is text and another a number or boolean (it
/// finds no common type for them; DataFusion made them all text).
fn refuse_text_beside_other<'a>(
    what: &str,
    values: impl Iterator<Item = &'a Expr>,
    schema: &DFSchema,
) -> Result<()> {
    let types = values
        .map(|e| e.get_type(schema))
        .collect::<Result<Vec<_>>>()?;
    let typed: Vec<&DataType> = types.iter().collect();
    let Some((text, other)) = text_beside_other(&typed) else {
        return Ok(());
    };
    let mut names: Vec<String> = Vec::new();
    for t in &types {
        let name = super::types::trino_type_name(t);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    Err(refused(
        ErrorCode::TypeMismatch,
        format!(
            "{what} must be the same type or coercible to a common type. Cannot find common \
             type between {} and {}, all types (without duplicates): [{}]",
            super::types::trino_type_name(other),
            super::types::trino_type_name(text),
            names.join(", ")
        ),
    ))
}

/// An operator as Trino's messages write it.
fn trino_operator(op: Operator) -> String {
    match op {
        Operator::NotEq => "<>".to_string(),
        Operator::IsDistinctFrom => "IS DISTINCT FROM".to_string(),
        Operator::IsNotDistinctFrom => "IS NOT DISTINCT FROM".to_string(),
        other => other.to_string(),
    }
}

/// A comparison as Trino means it: arrays, rows and maps equal or not with NULLs inside
/// ([`sqe_functions::nested_equal_function`]), a `char(n)` as if both sides were padded to one length
/// (without their trailing spaces: `CAST('ab' AS char(5)) = 'ab'` is true in Trino), real
/// numbers as IEEE 754 compares them ([`ieee_comparison`]).
fn comparison(
    left: Expr,
    op: Operator,
    right: Expr,
    schema: &DFSchema,
) -> Result<Transformed<Expr>> {
    let (left_type, right_type) = (left.get_type(schema)?, right.get_type(schema)?);
    if text_beside_other(&[&left_type, &right_type]).is_some() {
        return Err(refused(
            ErrorCode::TypeMismatch,
            format!(
                "Cannot apply operator: {} {} {}",
                type_name(&left, schema)?,
                trino_operator(op),
                type_name(&right, schema)?
            ),
        ));
    }
    // Arrays, rows and maps: NULL where a NULL inside decides nothing (Arrow took NULL for
    // equal to NULL).
    if matches!(op, Operator::Eq | Operator::NotEq)
        && (is_nested(&left_type) || is_nested(&right_type))
    {
        let equal = Expr::ScalarFunction(ScalarFunction::new_udf(
            sqe_functions::nested_equal_function(),
            vec![left, right],
        ));
        return Ok(Transformed::yes(if op == Operator::Eq {
            equal
        } else {
            std::ops::Not::not(equal)
        }));
    }
    if is_char(&left, schema)? || is_char(&right, schema)? {
        let unpadded = |e: Expr| datafusion::functions::string::expr_fn::rtrim(vec![e, lit(" ")]);
        return Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
            Box::new(unpadded(left)),
            op,
            Box::new(unpadded(right)),
        ))));
    }
    // A decimal beside a real number is compared as that real type, as Trino coerces it:
    // DataFusion would cast the double to a decimal (failing above 10^15, and `1e20 = DECIMAL
    // '100000000000000000000'` was false).
    let (left, left_type, right, right_type) = match (&left_type, &right_type) {
        (l, r) if is_real(l) && is_decimal(r) => (
            left,
            left_type.clone(),
            cast(right, left_type.clone()),
            left_type,
        ),
        (l, r) if is_decimal(l) && is_real(r) => (
            cast(left, right_type.clone()),
            right_type.clone(),
            right,
            right_type,
        ),
        _ => (left, left_type, right, right_type),
    };
    if is_ordering(op) && (is_real(&left_type) || is_real(&right_type)) {
        return Ok(Transformed::yes(ieee_comparison(
            (left, left_type),
            op,
            (right, right_type),
        )));
    }
    Ok(Transformed::no(Expr::BinaryExpr(BinaryExpr::new(
        Box::new(left),
        op,
        Box::new(right),
    ))))
}

/// An array, row or map.
fn is_nested(t: &DataType) -> bool {
    matches!(
        t,
        DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(..)
            | DataType::Struct(_)
            | DataType::Map(..)
    )
}

/// `=`, `<>`, `<`, `<=`, `>` or `>=`.
fn is_ordering(op: Operator) -> bool {
    matches!(
        op,
        Operator::Eq
            | Operator::NotEq
            | Operator::Lt
            | Operator::LtEq
            | Operator::Gt
            | Operator::GtEq
    )
}

fn is_real(t: &DataType) -> bool {
    matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64)
}

/// A comparison of real numbers as Trino's (IEEE 754): NaN is neither equal to, less than nor
/// greater than anything, itself included, and unequal to everything; `-0.0` equals `0.0`.
/// Arrow compares in a total order where NaN is the greatest value and equal to itself, and
/// `-0.0` is less than `0.0` (`nan() > 0` was true, `-0.0E0 = 0E0` false).
fn ieee_comparison(left: (Expr, DataType), op: Operator, right: (Expr, DataType)) -> Expr {
    use datafusion::functions::math::expr_fn::isnan;
    // Beside a number other than zero, -0.0 and 0.0 compare alike, and the bare column keeps
    // its statistics for pruning; beside anything else a zero is made +0.0 (x + 0.0 is x, but
    // +0.0 for -0.0).
    let zero_or_unknown = |e: &Expr| match e {
        Expr::Literal(ScalarValue::Float64(Some(v)), _) => *v == 0.0,
        Expr::Literal(ScalarValue::Float32(Some(v)), _) => *v == 0.0,
        Expr::Literal(ScalarValue::Int8(Some(v)), _) => *v == 0,
        Expr::Literal(ScalarValue::Int16(Some(v)), _) => *v == 0,
        Expr::Literal(ScalarValue::Int32(Some(v)), _) => *v == 0,
        Expr::Literal(ScalarValue::Int64(Some(v)), _) => *v == 0,
        Expr::Literal(ScalarValue::Decimal128(Some(v), ..), _) => *v == 0,
        _ => true,
    };
    let normalize = |e: Expr, t: &DataType, beside: &Expr| -> Expr {
        match e {
            literal @ Expr::Literal(..) => signless_literal(literal),
            e if is_real(t) && zero_or_unknown(beside) => e + cast(lit(0.0), t.clone()),
            e => e,
        }
    };
    // A NaN in an operand that may hold one, unless the other operand is NULL (then the
    // comparison is NULL, as Trino's).
    let mut nans = Vec::new();
    for ((e, t), other) in [(&left, &right.0), (&right, &left.0)] {
        if is_real(t)
            && !matches!(e, Expr::Literal(ScalarValue::Float64(Some(v)), _) if !v.is_nan())
            && !matches!(e, Expr::Literal(ScalarValue::Float32(Some(v)), _) if !v.is_nan())
        {
            nans.push(isnan(e.clone()).and(other.clone().is_not_null()));
        }
    }
    let (l, r) = (
        normalize(left.0.clone(), &left.1, &right.0),
        normalize(right.0, &right.1, &left.0),
    );
    let compared = Expr::BinaryExpr(BinaryExpr::new(Box::new(l), op, Box::new(r)));
    if op == Operator::NotEq {
        nans.into_iter().fold(compared, Expr::or)
    } else {
        nans.into_iter()
            .fold(compared, |all, nan| all.and(std::ops::Not::not(nan)))
    }
}

/// Whether `expr` is a `char(n)` (its field says so: Arrow has no padded strings).
fn is_char(expr: &Expr, schema: &DFSchema) -> Result<bool> {
    let (_, field) = expr.to_field(schema)?;
    Ok(field
        .metadata()
        .get(super::types::TRINO_TYPE)
        .is_some_and(|t| t.starts_with("char(")))
}

/// `sign(x)` as a `CASE` over `x` of type `t`, its answers in Trino's type.
fn signed(args: Vec<Expr>, t: &DataType) -> Result<Expr> {
    let x = args
        .into_iter()
        .next()
        .unwrap_or_else(|| lit(ScalarValue::Null));
    let answer = match t {
        DataType::Decimal128(..) | DataType::Decimal256(..) => DataType::Decimal128(1, 0),
        other => other.clone(),
    };
    let zero = || cast(lit(0), t.clone());
    let answer_of = |n: i64| cast(lit(n), answer.clone());
    // NaN's sign is NaN and a zero's (-0.0 too) itself, as Java's Math.signum; Arrow's total
    // order would find NaN above zero and -0.0 below it.
    let mut first = if is_real(t) {
        datafusion::logical_expr::when(
            datafusion::functions::math::expr_fn::isnan(x.clone())
                .or((x.clone() + cast(lit(0.0), t.clone())).eq(zero())),
            x.clone(),
        )
    } else {
        datafusion::logical_expr::when(lit(false), answer_of(0))
    };
    first
        .when(x.clone().gt(zero()), answer_of(1))
        .when(x.clone().lt(zero()), answer_of(-1))
        .when(x.eq(zero()), answer_of(0))
        .otherwise(cast(lit(ScalarValue::Null), answer))
}

/// `EXTRACT(field FROM x)` (DataFusion's `date_part`) with Trino's fields and type: a bigint,
/// `DOW`/`DAY_OF_WEEK` the ISO day (Monday 1 to Sunday 7; DataFusion's `dow` is Sunday 0),
/// `DAY_OF_YEAR`, `DAY_OF_MONTH`, `YEAR_OF_WEEK`/`YOW` the ISO week's year, `TIMEZONE_HOUR` and
/// `TIMEZONE_MINUTE` the offset of a zoned timestamp.
fn extracted(call: ScalarFunction, schema: &DFSchema) -> Result<Expr> {
    let ScalarFunction { func, mut args } = call;
    if let Some(Expr::Literal(ScalarValue::Utf8(Some(field)), _)) = args.first_mut() {
        let datafusion_field = match field.to_ascii_lowercase().as_str() {
            "dow" | "day_of_week" => Some("isodow"),
            "doy" | "day_of_year" => Some("doy"),
            "day_of_month" => Some("day"),
            "yow" | "year_of_week" => Some("isoyear"),
            zone_field @ ("timezone_hour" | "timezone_minute") => {
                let zoned = match args.get(1) {
                    Some(x) => x.get_type(schema)?,
                    None => DataType::Null,
                };
                if !matches!(zoned, DataType::Timestamp(_, Some(_))) {
                    return Err(refused(
                        ErrorCode::TypeMismatch,
                        format!(
                            "Cannot extract {} from {}",
                            zone_field.to_ascii_uppercase(),
                            sqe_functions::types::trino_type_name(&zoned)
                        ),
                    ));
                }
                let function = if zone_field == "timezone_hour" {
                    sqe_functions::timezone_hour_function()
                } else {
                    sqe_functions::timezone_minute_function()
                };
                return Ok(Expr::ScalarFunction(ScalarFunction::new_udf(
                    function,
                    args.into_iter().skip(1).collect(),
                )));
            }
            _ => None,
        };
        if let Some(datafusion_field) = datafusion_field {
            *field = datafusion_field.to_string();
        }
    }
    let part = Expr::ScalarFunction(ScalarFunction::new_udf(func, args));
    Ok(match part.get_type(schema)? {
        DataType::Int32 => cast(part, DataType::Int64),
        _ => part,
    })
}

/// Trino's `truncate(x [, n])` of a `decimal(p,s)`: toward zero, to no fraction in a
/// `decimal(max(1, p - s), 0)`, or to `n` digits after the point (before it when negative) in
/// `x`'s type. DataFusion's `trunc` would answer a double. `x - x % 10^-n` is exact.
fn truncated_decimal(args: Vec<Expr>, p: u8, s: i8) -> Result<Expr> {
    let mut args = args.into_iter();
    let x = args.next().unwrap_or_else(|| lit(ScalarValue::Null));
    let (digits, answer) = match args.next() {
        None => (0, DataType::Decimal128((p as i8 - s).max(1) as u8, 0)),
        Some(n) if constant_integer(&n).is_some() => (
            constant_integer(&n).unwrap_or(0),
            DataType::Decimal128(p, s),
        ),
        Some(_) => {
            return Err(refused(
                ErrorCode::NotSupported,
                "truncate of a decimal takes a constant number of digits".to_string(),
            ));
        }
    };
    if digits >= i64::from(s) {
        return Ok(cast(x, answer));
    }
    // 10^-digits as a decimal: one unit in the last place kept.
    let unit = if digits >= 0 {
        ScalarValue::Decimal128(Some(1), (digits + 1).clamp(1, 38) as u8, digits as i8)
    } else {
        let places = u32::try_from(digits.unsigned_abs()).unwrap_or(u32::MAX);
        match 10_i128.checked_pow(places).filter(|_| places < 38) {
            Some(unit) => ScalarValue::Decimal128(Some(unit), places as u8 + 1, 0),
            // More digits than a decimal holds: nothing is left.
            None => return Ok(cast(lit(0), answer)),
        }
    };
    let fraction = Expr::BinaryExpr(BinaryExpr::new(
        Box::new(x.clone()),
        Operator::Modulo,
        Box::new(lit(unit)),
    ));
    Ok(cast(
        Expr::BinaryExpr(BinaryExpr::new(
            Box::new(x),
            Operator::Minus,
            Box::new(fraction),
        )),
        answer,
    ))
}

/// The value of an integer constant as written (a literal, maybe cast or negated).
fn constant_integer(expr: &Expr) -> Option<i64> {
    match expr {
        Expr::Literal(ScalarValue::Int64(v), _) => *v,
        Expr::Literal(ScalarValue::Int32(v), _) => v.map(i64::from),
        Expr::Literal(ScalarValue::Int16(v), _) => v.map(i64::from),
        Expr::Literal(ScalarValue::Int8(v), _) => v.map(i64::from),
        Expr::Cast(Cast { expr, .. }) => constant_integer(expr),
        Expr::Negative(expr) => constant_integer(expr).and_then(i64::checked_neg),
        _ => None,
    }
}

/// `concat` over arrays: arrays joined, a single element appended or prepended.
fn concat_arrays(args: Vec<Expr>, types: &[DataType]) -> Option<Expr> {
    if let [a, b] = types
        && is_list(a) != is_list(b)
    {
        let mut args = args.into_iter();
        let (first, second) = (args.next()?, args.next()?);
        return Some(if is_list(a) {
            array_append(first, second)
        } else {
            array_prepend(first, second)
        });
    }
    Some(array_concat(args))
}

/// `concat(a, b, ...)` as `a || b || ...`, which is NULL when any part is.
/// Whether `concat` (and `||`) takes a value of type `t` beside text: text, varbinary or NULL
/// (arrays are [`concat_arrays`]'). Trino has no implicit cast of numbers, booleans or dates to
/// text (DataFusion's `'a' || 1` was `a1`).
pub(super) fn concatenable(t: &DataType) -> bool {
    is_text(t)
        || matches!(
            t,
            DataType::Binary
                | DataType::LargeBinary
                | DataType::BinaryView
                | DataType::FixedSizeBinary(_)
                | DataType::Null
        )
        || matches!(t, DataType::Dictionary(_, value) if concatenable(value))
}

/// Trino's refusal of `concat` of `types` some of which it does not take.
pub(super) fn unconcatenable(types: &[DataType]) -> DataFusionError {
    refused(
        ErrorCode::FunctionNotFound,
        format!(
            "Unexpected parameters ({}) for function concat. Expected: concat(varchar, ...), \
             concat(varbinary, ...), concat(array(E), ...)",
            types
                .iter()
                .map(super::types::trino_type_name)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
}

fn concat_strings(args: Vec<Expr>) -> Expr {
    let mut args = args.into_iter();
    let first = args.next().unwrap_or_else(|| lit(""));
    args.fold(first, |joined, next| {
        Expr::BinaryExpr(BinaryExpr::new(
            Box::new(joined),
            Operator::StringConcat,
            Box::new(next),
        ))
    })
}

/// The `coalesce` of two USING keys, for the join rewrite beside this one.
pub(super) fn coalesced(left: Expr, right: Expr) -> Expr {
    coalesce(vec![left, right])
}
