//! `CAST(varchar AS boolean)` as Trino reads the text: `true`, `t` and `1` are true, `false`,
//! `f` and `0` false (letters in either case, nothing around them); anything else is
//! INVALID_CAST_ARGUMENT (NULL under `TRY_CAST`). Arrow's cast also took `yes`, `on` and
//! padded text as true: a value Trino refuses.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, BooleanBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::error::ArrowError;
use datafusion::common::{DataFusionError, Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, result, strings};

/// The name the dialect calls it by: `sqe_text_boolean(text, fallible)`.
pub(crate) const TEXT_BOOLEAN: &str = "sqe_text_boolean";

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct TextBoolean {
    signature: Signature,
}

impl TextBoolean {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::exact(
                vec![DataType::Utf8, DataType::Boolean],
                Volatility::Immutable,
            ),
        }
    }
}

/// Trino's boolean of `text`, `None` when it names none.
pub(crate) fn boolean_of(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "t" | "1" => Some(true),
        "false" | "f" | "0" => Some(false),
        _ => None,
    }
}

impl ScalarUDFImpl for TextBoolean {
    fn name(&self) -> &str {
        TEXT_BOOLEAN
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let fallible = match args.args.get(1) {
            Some(ColumnarValue::Scalar(ScalarValue::Boolean(Some(f)))) => *f,
            _ => return exec_err!("{TEXT_BOOLEAN} takes a constant `fallible`"),
        };
        let columns = arrays(&args)?;
        let Some(text) = columns.first() else {
            return exec_err!("{TEXT_BOOLEAN} takes a text");
        };
        let text = strings(text)?;
        let text = text.as_string::<i32>();
        let mut out = BooleanBuilder::with_capacity(text.len());
        for i in 0..text.len() {
            if text.is_null(i) {
                out.append_null();
                continue;
            }
            match boolean_of(text.value(i)) {
                Some(b) => out.append_value(b),
                None if fallible => out.append_null(),
                None => {
                    return Err(DataFusionError::ArrowError(
                        Box::new(ArrowError::CastError(format!(
                            "Cannot cast '{}' to BOOLEAN",
                            text.value(i)
                        ))),
                        None,
                    ));
                }
            }
        }
        result(&args, Arc::new(out.finish()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_trinos_spellings_are_booleans() {
        for (text, b) in [("true", true), ("TRUE", true), ("t", true), ("1", true)] {
            assert_eq!(boolean_of(text), Some(b), "{text}");
        }
        for (text, b) in [("False", false), ("F", false), ("0", false)] {
            assert_eq!(boolean_of(text), Some(b), "{text}");
        }
        for text in ["yes", "on", " true", "true ", "", "2", "tru"] {
            assert_eq!(boolean_of(text), None, "{text}");
        }
    }
}
