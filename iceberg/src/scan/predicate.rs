//! DataFusion filter expressions -> Iceberg predicates, for file and partition pruning.
//!
//! Conversion is best effort: a conjunct that has no Iceberg form is left out, which only makes
//! pruning less effective. SQE reports filters as `Inexact`, so DataFusion still applies every
//! filter to the rows the scan returns. Iceberg prunes files, row groups and rows with what is
//! pushed, though, so a pushed predicate must never be narrower than the SQL filter: values are
//! compared only on columns whose order Iceberg and Arrow agree on (not floating point, where
//! Arrow orders NaN above every number and Iceberg's statistics leave NaN out).

use datafusion::common::ScalarValue;
use datafusion::logical_expr::expr::InList;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Like, Operator};
use iceberg::expr::{Bind, Predicate, Reference};
use iceberg::spec::{Datum, PrimitiveType, SchemaRef, Type};

/// Converts the conjuncts that Iceberg can evaluate and that bind against `schema`.
pub fn filters_to_predicate(filters: &[Expr], schema: &SchemaRef) -> Option<Predicate> {
    let mut conjuncts = Vec::new();
    for filter in filters {
        split_conjunction(filter, &mut conjuncts);
    }
    conjuncts
        .into_iter()
        .filter_map(|expr| to_predicate(expr, schema))
        .filter(|p| p.clone().bind(schema.clone(), true).is_ok())
        .reduce(Predicate::and)
}

fn split_conjunction<'a>(expr: &'a Expr, out: &mut Vec<&'a Expr>) {
    match expr {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::And,
            right,
        }) => {
            split_conjunction(left, out);
            split_conjunction(right, out);
        }
        other => out.push(other),
    }
}

fn to_predicate(expr: &Expr, schema: &SchemaRef) -> Option<Predicate> {
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And => Some(to_predicate(left, schema)?.and(to_predicate(right, schema)?)),
            Operator::Or => Some(to_predicate(left, schema)?.or(to_predicate(right, schema)?)),
            _ => comparison(left, *op, right, schema),
        },
        Expr::Not(inner) => Some(to_predicate(inner, schema)?.negate()),
        Expr::IsNull(inner) => Some(column(inner)?.is_null()),
        Expr::IsNotNull(inner) => Some(column(inner)?.is_not_null()),
        Expr::InList(InList {
            expr,
            list,
            negated,
        }) => {
            let column = ordered_column(expr, schema)?;
            let values = list.iter().map(datum).collect::<Option<Vec<_>>>()?;
            Some(if *negated {
                column.is_not_in(values)
            } else {
                column.is_in(values)
            })
        }
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) => {
            let low = ordered_column(expr, schema)?.greater_than_or_equal_to(datum(low)?);
            let high = ordered_column(expr, schema)?.less_than_or_equal_to(datum(high)?);
            Some(low.and(high))
        }
        Expr::Like(Like {
            negated: false,
            expr,
            pattern,
            escape_char: None,
            case_insensitive: false,
        }) => {
            let Expr::Literal(value, _) = pattern.as_ref() else {
                return None;
            };
            let pattern = scalar_string(value)?;
            let prefix = pattern.strip_suffix('%')?;
            // `\` escapes even without an ESCAPE clause: 'a\%' matches the literal "a%".
            if prefix.contains(['%', '_', '\\']) {
                return None;
            }
            Some(ordered_column(expr, schema)?.starts_with(Datum::string(prefix)))
        }
        _ => None,
    }
}

fn comparison(left: &Expr, op: Operator, right: &Expr, schema: &SchemaRef) -> Option<Predicate> {
    let (column, value, op) = match (ordered_column(left, schema), datum(right)) {
        (Some(column), Some(value)) => (column, value, op),
        _ => (ordered_column(right, schema)?, datum(left)?, op.swap()?),
    };
    Some(match op {
        Operator::Eq => column.equal_to(value),
        Operator::NotEq => column.not_equal_to(value),
        Operator::Lt => column.less_than(value),
        Operator::LtEq => column.less_than_or_equal_to(value),
        Operator::Gt => column.greater_than(value),
        Operator::GtEq => column.greater_than_or_equal_to(value),
        _ => return None,
    })
}

/// A bare column reference.
fn column(expr: &Expr) -> Option<Reference> {
    match expr {
        Expr::Column(column) => Some(Reference::new(column.name.clone())),
        _ => None,
    }
}

/// A column whose values may be compared in Iceberg exactly as Arrow compares them.
fn ordered_column(expr: &Expr, schema: &SchemaRef) -> Option<Reference> {
    let reference = column(expr)?;
    let field = schema.field_by_name(reference.name())?;
    match field.field_type.as_ref() {
        Type::Primitive(PrimitiveType::Float | PrimitiveType::Double) => None,
        Type::Primitive(_) => Some(reference),
        _ => None,
    }
}

fn scalar_string(value: &ScalarValue) -> Option<&str> {
    match value {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Some(s.as_str()),
        _ => None,
    }
}

fn datum(expr: &Expr) -> Option<Datum> {
    let Expr::Literal(value, _) = expr else {
        return None;
    };
    Some(match value {
        ScalarValue::Boolean(Some(v)) => Datum::bool(*v),
        ScalarValue::Int8(Some(v)) => Datum::int(*v),
        ScalarValue::Int16(Some(v)) => Datum::int(*v),
        ScalarValue::Int32(Some(v)) => Datum::int(*v),
        ScalarValue::Int64(Some(v)) => Datum::long(*v),
        ScalarValue::UInt8(Some(v)) => Datum::int(*v),
        ScalarValue::UInt16(Some(v)) => Datum::int(*v),
        ScalarValue::UInt32(Some(v)) => Datum::long(*v),
        ScalarValue::Float32(Some(v)) => Datum::float(*v),
        ScalarValue::Float64(Some(v)) => Datum::double(*v),
        ScalarValue::Date32(Some(v)) => Datum::date(*v),
        ScalarValue::Decimal128(Some(mantissa), _, scale) => {
            Datum::decimal_from_str(decimal_text(*mantissa, *scale)?).ok()?
        }
        ScalarValue::TimestampSecond(Some(v), tz) => {
            timestamp(v.checked_mul(1_000_000)?, tz.is_some())
        }
        ScalarValue::TimestampMillisecond(Some(v), tz) => {
            timestamp(v.checked_mul(1_000)?, tz.is_some())
        }
        ScalarValue::TimestampMicrosecond(Some(v), tz) => timestamp(*v, tz.is_some()),
        ScalarValue::TimestampNanosecond(Some(v), tz) => {
            if tz.is_some() {
                Datum::timestamptz_nanos(*v)
            } else {
                Datum::timestamp_nanos(*v)
            }
        }
        other => Datum::string(scalar_string(other)?),
    })
}

/// `mantissa` x 10^-`scale` as decimal text (`150`, 2 -> `1.50`).
fn decimal_text(mantissa: i128, scale: i8) -> Option<String> {
    let scale = usize::try_from(scale).ok()?;
    let digits = mantissa.unsigned_abs().to_string();
    let sign = if mantissa < 0 { "-" } else { "" };
    if scale == 0 {
        return Some(format!("{sign}{digits}"));
    }
    let digits = format!("{digits:0>width$}", width = scale + 1);
    let (whole, fraction) = digits.split_at(digits.len() - scale);
    Some(format!("{sign}{whole}.{fraction}"))
}

fn timestamp(micros: i64, with_zone: bool) -> Datum {
    if with_zone {
        Datum::timestamptz_micros(micros)
    } else {
        Datum::timestamp_micros(micros)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::prelude::{col, lit};
    use iceberg::spec::{NestedField, PrimitiveType, Schema, Type};

    use super::*;

    fn schema() -> SchemaRef {
        Arc::new(
            Schema::builder()
                .with_fields(vec![
                    NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                    NestedField::optional(2, "name", Type::Primitive(PrimitiveType::String)).into(),
                    NestedField::optional(3, "score", Type::Primitive(PrimitiveType::Double))
                        .into(),
                    NestedField::optional(
                        4,
                        "price",
                        Type::Primitive(PrimitiveType::Decimal {
                            precision: 10,
                            scale: 2,
                        }),
                    )
                    .into(),
                ])
                .build()
                .expect("valid schema"),
        )
    }

    #[test]
    fn converts_supported_conjuncts_and_drops_the_rest() {
        let filters = vec![
            col("id").gt(lit(10i64)).and(col("name").like(lit("ab%"))),
            // Not expressible in Iceberg: left for DataFusion alone.
            (col("id") + lit(1i64)).eq(lit(3i64)),
            lit(5i64).gt_eq(col("id")),
        ];
        let predicate = filters_to_predicate(&filters, &schema()).map(|p| p.to_string());
        assert_eq!(
            predicate.as_deref(),
            Some("((id > 10) AND (name STARTS WITH \"ab\")) AND (id <= 5)")
        );
    }

    #[test]
    fn nothing_narrower_than_sql_is_pushed() {
        // Arrow keeps NaN for `score > 1` (NaN orders last); Iceberg statistics would prune it.
        assert!(filters_to_predicate(&[col("score").gt(lit(1.0f64))], &schema()).is_none());
        // 'ab\%' is the literal "ab%", not a prefix "ab\".
        assert!(filters_to_predicate(&[col("name").like(lit("ab\\%"))], &schema()).is_none());
        // NULL checks are fine on any column.
        let p = filters_to_predicate(&[col("score").is_null()], &schema()).map(|p| p.to_string());
        assert_eq!(p.as_deref(), Some("score IS NULL"));
    }

    #[test]
    fn decimals_keep_their_scale() {
        assert_eq!(decimal_text(150, 2).as_deref(), Some("1.50"));
        assert_eq!(decimal_text(-5, 3).as_deref(), Some("-0.005"));
        assert_eq!(decimal_text(42, 0).as_deref(), Some("42"));
        let filter = col("price").lt(lit(datafusion::common::ScalarValue::Decimal128(
            Some(1999),
            10,
            2,
        )));
        let p = filters_to_predicate(&[filter], &schema()).map(|p| p.to_string());
        assert_eq!(p.as_deref(), Some("price < 19.99"));
    }

    #[test]
    fn unknown_columns_are_not_pushed() {
        let filters = vec![col("missing").eq(lit(1i64))];
        assert!(filters_to_predicate(&filters, &schema()).is_none());
    }
}
