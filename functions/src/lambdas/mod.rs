//! Trino's functions of lambdas that DataFusion lacks, as DataFusion higher-order functions:
//! of maps (`transform_values`, `map_filter`, `transform_keys`, `map_zip_with`), of arrays
//! (`zip_with`, `reduce`, `array_sort` of a comparator) and `try`, whose argument is evaluated as a lambda of the row so
//! that a failing row can be evaluated again alone.
//!
//! DataFusion 54 numbers a lambda's parameters without the unread ones, so `(k, v) -> v`
//! would read the key. The engine's dialect drops parameters a body never reads when a read
//! one follows them, and calls the form of the function given only the read ones
//! ([`reading_name`]); each function here is registered in every such form.

mod arrays;
mod attempt;
mod maps;
mod sort;

use std::sync::Arc;

use datafusion::arrow::array::ArrayRef;
use datafusion::common::Result;
use datafusion::logical_expr::{
    HigherOrderSignature, HigherOrderUDF, LambdaArgument, ValueOrLambda, Volatility,
};

pub use attempt::{TRY, TRY_ROW};
pub use sort::SORT_BY_COMPARATOR;

/// A function whose lambda has several parameters: where its lambda is among the arguments,
/// and how many parameters it declares.
#[derive(Debug, Clone, Copy)]
pub struct LambdaShape {
    pub name: &'static str,
    pub lambda_at: usize,
    pub params: usize,
}

/// SQE's functions whose lambda takes several parameters.
pub const SEVERAL_PARAMETERS: &[LambdaShape] = &[
    LambdaShape {
        name: "transform_values",
        lambda_at: 1,
        params: 2,
    },
    LambdaShape {
        name: "map_filter",
        lambda_at: 1,
        params: 2,
    },
    LambdaShape {
        name: "transform_keys",
        lambda_at: 1,
        params: 2,
    },
    LambdaShape {
        name: "map_zip_with",
        lambda_at: 2,
        params: 3,
    },
    LambdaShape {
        name: "zip_with",
        lambda_at: 2,
        params: 2,
    },
    LambdaShape {
        name: "reduce",
        lambda_at: 2,
        params: 2,
    },
    LambdaShape {
        name: SORT_BY_COMPARATOR,
        lambda_at: 1,
        params: 2,
    },
];

/// How many parameters the lambda at argument `position` of SQE's function `function` (by
/// Trino's name) takes; `None` where it takes no lambda.
pub fn lambda_arity(function: &str, position: usize) -> Option<usize> {
    if function == "reduce" && position == 3 {
        return Some(1);
    }
    SEVERAL_PARAMETERS
        .iter()
        .find(|shape| shape.name == function && shape.lambda_at == position)
        .map(|shape| shape.params)
}

/// The name of the form of `function` given only the parameters `read` marks, when one it
/// leaves out comes before one it keeps (the only case DataFusion misnumbers); `None` when
/// the function itself serves.
pub fn reading_name(function: &str, read: &[bool]) -> Option<String> {
    let first_unread = read.iter().position(|r| !r)?;
    if !read[first_unread..].iter().any(|r| *r) {
        return None;
    }
    let bits: String = read.iter().map(|r| if *r { '1' } else { '0' }).collect();
    Some(format!("sqe_{function}_reading_{bits}"))
}

/// The function a form named by [`reading_name`] is a form of (`sqe_zip_with_reading_01` is
/// `zip_with`'s); `None` for other names.
pub fn form_of(name: &str) -> Option<&str> {
    let (function, bits) = name.strip_prefix("sqe_")?.rsplit_once("_reading_")?;
    (!bits.is_empty() && bits.chars().all(|c| c == '0' || c == '1')).then_some(function)
}

/// The name Trino calls one of these functions or their forms by (`sqe_array_sort` and its
/// forms are `array_sort`, `sqe_zip_with_reading_01` is `zip_with`).
pub fn trino_name(name: &str) -> &str {
    let function = form_of(name).unwrap_or(name);
    if function == SORT_BY_COMPARATOR {
        "array_sort"
    } else {
        function
    }
}

/// A form of one of these functions: its name, its signature and which of its lambda's
/// parameters it gives.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Form {
    pub(crate) name: String,
    pub(crate) reads: Reads,
    pub(crate) signature: HigherOrderSignature,
}

impl Form {
    /// `function` in the form `reads`, taking `args` (values and lambdas).
    pub(crate) fn new(function: &str, reads: Reads, args: Vec<ValueOrLambda<(), ()>>) -> Self {
        Self {
            name: reads.name(function),
            reads,
            signature: HigherOrderSignature::exact(args, Volatility::Immutable),
        }
    }
}

/// The methods every form implements alike (its `form` field's name and signature, and how
/// it evaluates), in an
/// `impl HigherOrderUDFImpl`.
macro_rules! form_methods {
    () => {
        fn name(&self) -> &str {
            &self.form.name
        }

        fn signature(&self) -> &HigherOrderSignature {
            &self.form.signature
        }

        fn short_circuits(&self) -> bool {
            // A lambda's body is evaluated only for some rows, or none: nothing in it may be
            // evaluated for all rows ahead of it (common subexpressions).
            true
        }

        fn clear_null_values(&self) -> bool {
            // Each form leaves a NULL row's elements or entries out itself.
            false
        }
    };
}
pub(crate) use form_methods;

/// Which of a lambda's declared parameters are given to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Reads(Vec<bool>);

impl Reads {
    pub(crate) fn all(params: usize) -> Self {
        Self(vec![true; params])
    }

    /// Every form of a lambda of `params` parameters that [`reading_name`] names, and the
    /// whole one.
    pub(crate) fn forms(params: usize) -> Vec<Self> {
        let mut forms = vec![Self::all(params)];
        for mask in 0..(1u32 << params) {
            let read: Vec<bool> = (0..params).map(|i| mask & (1 << i) != 0).collect();
            if reading_name("", &read).is_some() {
                forms.push(Self(read));
            }
        }
        forms
    }

    /// The function's name in this form.
    pub(crate) fn name(&self, function: &str) -> String {
        reading_name(function, &self.0).unwrap_or_else(|| function.to_string())
    }

    /// The parameters this form gives, of all `declared`.
    pub(crate) fn given<T: Clone>(&self, declared: &[T]) -> Vec<T> {
        declared
            .iter()
            .zip(&self.0)
            .filter(|(_, read)| **read)
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// `lambda` evaluated over the `declared` parameters' values (the given ones), its
    /// captured columns taken at `rows` (one outer row per value).
    pub(crate) fn evaluate(
        &self,
        lambda: &LambdaArgument,
        declared: &[ArrayRef],
        rows: &datafusion::arrow::array::UInt32Array,
    ) -> Result<ArrayRef> {
        let len = declared.first().map_or(rows.len(), |a| a.len());
        let given = self.given(declared);
        let closures: Vec<Box<dyn Fn() -> Result<ArrayRef>>> = given
            .into_iter()
            .map(|array| Box::new(move || Ok(Arc::clone(&array))) as Box<_>)
            .collect();
        let closures: Vec<&dyn Fn() -> Result<ArrayRef>> =
            closures.iter().map(|c| c.as_ref()).collect();
        let spread = |captured: &[ArrayRef]| {
            Ok(datafusion::arrow::compute::take_arrays(
                captured, rows, None,
            )?)
        };
        lambda.evaluate(&closures, spread)?.into_array(len)
    }
}

/// Trino's functions of lambdas that SQE implements itself, in every form.
pub fn lambda_functions() -> Vec<Arc<HigherOrderUDF>> {
    let mut functions = maps::functions();
    functions.extend(arrays::functions());
    functions.extend(sort::functions());
    functions.push(attempt::function());
    functions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_forms_that_leave_out_a_parameter_before_a_read_one_are_named() {
        assert_eq!(reading_name("zip_with", &[true, true]), None);
        assert_eq!(reading_name("zip_with", &[true, false]), None);
        assert_eq!(reading_name("zip_with", &[false, false]), None);
        assert_eq!(
            reading_name("zip_with", &[false, true]).as_deref(),
            Some("sqe_zip_with_reading_01")
        );
        assert_eq!(
            reading_name("map_zip_with", &[true, false, true]).as_deref(),
            Some("sqe_map_zip_with_reading_101")
        );
        assert_eq!(
            form_of("sqe_map_zip_with_reading_101"),
            Some("map_zip_with")
        );
        assert_eq!(form_of("map_zip_with"), None);
        // The whole form, and the four of three parameters that need one of their own.
        assert_eq!(Reads::forms(3).len(), 5);
        assert_eq!(Reads::forms(2).len(), 2);
    }
}
