//! Casts to `varchar(n)` and `char(n)` as Trino does them: a string longer than n keeps its
//! first n code points, any other value too long for n is an invalid cast (NULL under
//! `TRY_CAST`), and `char(n)` pads with spaces to n. The result carries its Trino type in
//! its field's metadata (Arrow has no bounded strings).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::arrow::error::ArrowError;
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, is_string, result, strings};

/// The field metadata key that holds a column's Trino type where Arrow's type says less.
pub const TRINO_TYPE: &str = "trino.type";

/// The name the dialect calls: `sqe_cast_bounded(value, n, 'varchar' | 'char' |
/// 'try_varchar' | 'try_char')`.
pub const CAST_BOUNDED: &str = "sqe_cast_bounded";

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct CastBounded {
    signature: Signature,
}

impl CastBounded {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::any(3, Volatility::Immutable),
        }
    }
}

/// The length and form (`char`?, `try`?) from the constant arguments.
fn form(length: Option<&ScalarValue>, kind: Option<&ScalarValue>) -> Result<(usize, bool, bool)> {
    let n = match length {
        Some(ScalarValue::Int64(Some(n))) => usize::try_from(*n).ok(),
        _ => None,
    };
    let kind = kind.and_then(|k| k.try_as_str().flatten());
    match (n, kind) {
        (Some(n), Some(kind @ ("varchar" | "char" | "try_varchar" | "try_char"))) => Ok((
            n,
            kind.ends_with("char") && !kind.ends_with("varchar"),
            kind.starts_with("try"),
        )),
        _ => plan_err!("{CAST_BOUNDED} takes a value, a constant length and a constant kind"),
    }
}

/// `text` as `varchar(n)` (or `char(n)`, padded) holds it: a string longer than `n` keeps its
/// first `n` code points; `None` for the text of another value (a number) that is too long.
pub(crate) fn bounded_text(text: &str, n: usize, char: bool, from_string: bool) -> Option<String> {
    let count = text.chars().count();
    let kept = if count <= n {
        text
    } else if from_string {
        let end = text.char_indices().nth(n).map_or(text.len(), |(at, _)| at);
        &text[..end]
    } else {
        return None;
    };
    let padding = if char {
        n.saturating_sub(count.min(n))
    } else {
        0
    };
    Some(format!("{kept}{}", " ".repeat(padding)))
}

/// The length and kind (`char`?) of a bounded text type as [`TRINO_TYPE`] names it
/// (`varchar(3)`, `char(12)`).
pub(crate) fn bound_of(trino_type: &str) -> Option<(usize, bool)> {
    let (char, rest) = match trino_type.strip_prefix("varchar(") {
        Some(rest) => (false, rest),
        None => (true, trino_type.strip_prefix("char(")?),
    };
    Some((rest.strip_suffix(')')?.parse().ok()?, char))
}

impl ScalarUDFImpl for CastBounded {
    fn name(&self) -> &str {
        CAST_BOUNDED
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let (n, char, _) = form(
            args.scalar_arguments.get(1).copied().flatten(),
            args.scalar_arguments.get(2).copied().flatten(),
        )?;
        let trino = if char {
            format!("char({n})")
        } else {
            format!("varchar({n})")
        };
        Ok(Arc::new(
            Field::new(self.name(), DataType::Utf8, true)
                .with_metadata(HashMap::from([(TRINO_TYPE.to_string(), trino)])),
        ))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let constant = |i: usize| match args.args.get(i) {
            Some(ColumnarValue::Scalar(v)) => Some(v.clone()),
            _ => None,
        };
        let (n, char, fallible) = form(constant(1).as_ref(), constant(2).as_ref())?;
        let columns = arrays(&args)?;
        let Some(value) = columns.first() else {
            return exec_err!("{CAST_BOUNDED} takes 3 arguments");
        };
        let from_string = is_string(value.data_type());
        let text = strings(value)?;
        let text = text.as_string::<i32>();
        let mut out = StringBuilder::with_capacity(text.len(), text.len() * n);
        let target = if char { "char" } else { "varchar" };
        for v in text.iter() {
            let Some(v) = v else {
                out.append_null();
                continue;
            };
            match bounded_text(v, n, char, from_string) {
                Some(kept) => out.append_value(kept),
                None if fallible => out.append_null(),
                None => {
                    return Err(DataFusionError::ArrowError(
                        Box::new(ArrowError::CastError(format!(
                            "Value {v} cannot be represented as {target}({n})"
                        ))),
                        None,
                    ));
                }
            }
        }
        let array: Arc<dyn Array> = Arc::new(out.finish());
        result(&args, array)
    }
}
