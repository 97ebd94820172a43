//! What `listagg` answers past Trino's limit on its output: the concatenated values are at most
//! 1,048,576 bytes (Trino's page size). The dialect writes `listagg(x, sep [ON OVERFLOW ERROR])
//! WITHIN GROUP (ORDER BY …)` as `sqe_listagg_output(string_agg(x, sep ORDER BY …))`, which
//! refuses a longer text (EXCEEDED_FUNCTION_MEMORY_LIMIT), and `… ON OVERFLOW TRUNCATE [filler]
//! {WITH | WITHOUT} COUNT` as `sqe_listagg_output(array_agg(x ORDER BY …), sep, filler,
//! with_count)`, which keeps the values that fit and then writes the separator, the filler
//! and, with the count, how many values were left out, as Trino's `ListaggAggregationFunction`.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, result, strings, unexpected_parameters};
use crate::error::{FunctionMemoryLimit, invalid_argument};

/// The function the dialect wraps `listagg`'s aggregate in.
pub const LISTAGG_OUTPUT: &str = "sqe_listagg_output";

/// Trino's limit on listagg's output, in bytes.
const MAX_OUTPUT: usize = 1_048_576;
/// Trino's limit on the overflow filler, in bytes.
const MAX_FILLER: usize = 65_536;

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct ListaggOutput {
    signature: Signature,
}

impl ListaggOutput {
    pub(crate) fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

fn too_long() -> datafusion::common::DataFusionError {
    datafusion::common::DataFusionError::External(Box::new(FunctionMemoryLimit(format!(
        "Concatenated string has the length in bytes larger than the maximum output length {MAX_OUTPUT}"
    ))))
}

/// The non-NULL `values` joined by `separator` up to Trino's limit, then the separator (after
/// at least one value), the filler and, `with_count`, `(n)` for the n values left out; NULL
/// without values.
fn truncated(
    values: impl Iterator<Item = Option<String>>,
    separator: &str,
    filler: &str,
    with_count: bool,
) -> Option<String> {
    let mut out = String::new();
    let (mut emitted, mut total, mut overflow) = (0usize, 0usize, false);
    for value in values.flatten() {
        total += 1;
        if overflow {
            continue;
        }
        let needed = value.len() + if emitted > 0 { separator.len() } else { 0 };
        if out.len() + needed > MAX_OUTPUT {
            overflow = true;
            continue;
        }
        if emitted > 0 {
            out.push_str(separator);
        }
        out.push_str(&value);
        emitted += 1;
    }
    if total == 0 {
        return None;
    }
    if overflow {
        if emitted > 0 {
            out.push_str(separator);
        }
        out.push_str(filler);
        if with_count {
            out.push_str(&format!("({})", total - emitted));
        }
    }
    Some(out)
}

impl ScalarUDFImpl for ListaggOutput {
    fn name(&self) -> &str {
        LISTAGG_OUTPUT
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [_] => Ok(vec![DataType::Utf8]),
            [DataType::List(_), _, _, _] => Ok(vec![
                DataType::new_list(DataType::Utf8, true),
                DataType::Utf8,
                DataType::Utf8,
                DataType::Boolean,
            ]),
            _ => Err(unexpected_parameters(
                LISTAGG_OUTPUT,
                arg_types,
                "(varchar) or (array(varchar), varchar, varchar, boolean)",
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let array: ArrayRef = match columns.as_slice() {
            [text] => {
                let texts = strings(text)?;
                if texts
                    .as_string::<i32>()
                    .iter()
                    .flatten()
                    .any(|t| t.len() > MAX_OUTPUT)
                {
                    return Err(too_long());
                }
                texts
            }
            [lists, separators, fillers, counts] => {
                let lists = lists.as_list::<i32>();
                let separators = strings(separators)?;
                let separators = separators.as_string::<i32>();
                let fillers = strings(fillers)?;
                let fillers = fillers.as_string::<i32>();
                let counts = counts.as_boolean();
                let mut out = StringBuilder::new();
                for row in 0..lists.len() {
                    if lists.is_null(row) {
                        out.append_null();
                        continue;
                    }
                    let filler = if fillers.is_null(row) {
                        ""
                    } else {
                        fillers.value(row)
                    };
                    if filler.len() > MAX_FILLER {
                        return Err(invalid_argument(format!(
                            "Overflow filler length {} exceeds maximum length {MAX_FILLER}",
                            filler.len()
                        )));
                    }
                    let separator = if separators.is_null(row) {
                        ""
                    } else {
                        separators.value(row)
                    };
                    let values = strings(&lists.value(row))?;
                    let values = values.as_string::<i32>();
                    out.append_option(truncated(
                        values.iter().map(|v| v.map(str::to_string)),
                        separator,
                        filler,
                        !counts.is_null(row) && counts.value(row),
                    ));
                }
                Arc::new(out.finish())
            }
            _ => return exec_err!("{LISTAGG_OUTPUT} takes 1 or 4 arguments"),
        };
        result(&args, array)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(texts: &[Option<&str>]) -> impl Iterator<Item = Option<String>> {
        texts
            .iter()
            .map(|t| t.map(str::to_string))
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn values_past_the_limit_become_the_filler_and_their_count() {
        let big = "x".repeat(MAX_OUTPUT - 2);
        // Two values fit (the separator counts); the third and fourth are left out.
        let kept = truncated(
            values(&[Some(&big), Some("a"), Some("bc"), Some("d")]),
            ",",
            "...",
            true,
        );
        assert_eq!(kept, Some(format!("{big},a,...(2)")));
        let kept = truncated(
            values(&[Some(&big), Some("a"), Some("bc")]),
            ",",
            "!",
            false,
        );
        assert_eq!(kept, Some(format!("{big},a,!")));
        // A first value past the limit: only the filler, no separator before it.
        let huge = "y".repeat(MAX_OUTPUT + 1);
        assert_eq!(
            truncated(values(&[Some(&huge), Some("a")]), ",", "...", true),
            Some("...(2)".to_string())
        );
        // Under the limit nothing is added; NULLs are skipped, none left is NULL.
        assert_eq!(
            truncated(values(&[Some("a"), None, Some("b")]), "-", "...", true),
            Some("a-b".to_string())
        );
        assert_eq!(truncated(values(&[None, None]), "-", "...", true), None);
    }
}
