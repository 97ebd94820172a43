//! Trino's `skewness(x)` and `kurtosis(x)` of doubles, which DataFusion lacks: from the count,
//! mean and central moments of the values, kept as Welford's and Pébay's updates keep them
//! (exact enough where sums of powers would cancel), merged from workers' partial states.
//! `skewness` is Fisher's moment coefficient, `sqrt(n) * m3 / m2^1.5` (NULL below 3 values);
//! `kurtosis` is the unbiased excess kurtosis (NULL below 4 values), as Trino computes them.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Signature, Volatility};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Shape {
    Skewness,
    Kurtosis,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct ShapeAggregate {
    shape: Shape,
    signature: Signature,
}

impl ShapeAggregate {
    pub(crate) fn new(shape: Shape) -> Self {
        Self {
            shape,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// The state's fields, in order.
const STATE: [&str; 5] = ["count", "mean", "m2", "m3", "m4"];

impl AggregateUDFImpl for ShapeAggregate {
    fn name(&self) -> &str {
        match self.shape {
            Shape::Skewness => "skewness",
            Shape::Kurtosis => "kurtosis",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [t] if t.is_numeric() || *t == DataType::Null => Ok(vec![DataType::Float64]),
            _ => Err(crate::args::unexpected_parameters(
                self.name(),
                arg_types,
                "(double)",
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        Ok(STATE
            .iter()
            .map(|part| {
                Arc::new(Field::new(
                    format!("{}[{part}]", args.name),
                    DataType::Float64,
                    true,
                ))
            })
            .collect())
    }

    fn accumulator(&self, _args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(MomentsAccumulator {
            shape: self.shape,
            moments: Moments::default(),
        }))
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }
}

/// The count, mean and sums of the 2nd to 4th powers of the deviations from the mean.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Moments {
    n: f64,
    mean: f64,
    m2: f64,
    m3: f64,
    m4: f64,
}

impl Moments {
    /// `other` merged in (Pébay's pairwise formulas; one value is a set of one).
    fn merge(&mut self, other: Moments) {
        if other.n == 0.0 {
            return;
        }
        if self.n == 0.0 {
            *self = other;
            return;
        }
        let (na, nb) = (self.n, other.n);
        let n = na + nb;
        let delta = other.mean - self.mean;
        let (d2, d3, d4) = (delta * delta, delta.powi(3), delta.powi(4));
        let m4 = self.m4
            + other.m4
            + d4 * na * nb * (na * na - na * nb + nb * nb) / n.powi(3)
            + 6.0 * d2 * (na * na * other.m2 + nb * nb * self.m2) / (n * n)
            + 4.0 * delta * (na * other.m3 - nb * self.m3) / n;
        let m3 = self.m3
            + other.m3
            + d3 * na * nb * (na - nb) / (n * n)
            + 3.0 * delta * (na * other.m2 - nb * self.m2) / n;
        let m2 = self.m2 + other.m2 + d2 * na * nb / n;
        self.mean += delta * nb / n;
        self.n = n;
        self.m2 = m2;
        self.m3 = m3;
        self.m4 = m4;
    }

    fn add(&mut self, x: f64) {
        self.merge(Moments {
            n: 1.0,
            mean: x,
            ..Moments::default()
        });
    }

    fn skewness(&self) -> Option<f64> {
        (self.n >= 3.0).then(|| self.n.sqrt() * self.m3 / self.m2.powf(1.5))
    }

    fn kurtosis(&self) -> Option<f64> {
        let n = self.n;
        (n >= 4.0).then(|| {
            n * (n + 1.0) * (n - 1.0) / ((n - 2.0) * (n - 3.0)) * self.m4 / (self.m2 * self.m2)
                - 3.0 * (n - 1.0) * (n - 1.0) / ((n - 2.0) * (n - 3.0))
        })
    }
}

#[derive(Debug)]
struct MomentsAccumulator {
    shape: Shape,
    moments: Moments,
}

impl Accumulator for MomentsAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(values) = values.first() else {
            return exec_err!("{:?} takes one argument", self.shape);
        };
        let values = cast(values, &DataType::Float64)?;
        for x in values.as_primitive::<Float64Type>().iter().flatten() {
            self.moments.add(x);
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let parts = states
            .iter()
            .map(|s| cast(s, &DataType::Float64))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let [n, mean, m2, m3, m4] = parts.as_slice() else {
            return exec_err!("{:?}: unexpected state", self.shape);
        };
        let column = |a: &ArrayRef| a.as_primitive::<Float64Type>().clone();
        let (n, mean, m2, m3, m4) = (column(n), column(mean), column(m2), column(m3), column(m4));
        for i in 0..n.len() {
            if n.is_null(i) {
                continue;
            }
            self.moments.merge(Moments {
                n: n.value(i),
                mean: mean.value(i),
                m2: m2.value(i),
                m3: m3.value(i),
                m4: m4.value(i),
            });
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let Moments {
            n,
            mean,
            m2,
            m3,
            m4,
        } = self.moments;
        Ok([n, mean, m2, m3, m4]
            .into_iter()
            .map(|v| ScalarValue::Float64(Some(v)))
            .collect())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Float64(match self.shape {
            Shape::Skewness => self.moments.skewness(),
            Shape::Kurtosis => self.moments.kurtosis(),
        }))
    }

    fn size(&self) -> usize {
        size_of::<Self>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(values: &[f64]) -> Moments {
        let mut moments = Moments::default();
        for v in values {
            moments.add(*v);
        }
        moments
    }

    /// The textbook two-pass values, and the same from two merged halves.
    #[test]
    fn moments_match_the_two_pass_formulas_and_merge() {
        let values = [1.0, 2.0, 3.0, 10.0, 4.5, -2.0];
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let central = |p: i32| values.iter().map(|v| (v - mean).powi(p)).sum::<f64>();
        let (m2, m3, m4) = (central(2), central(3), central(4));
        let skewness = n.sqrt() * m3 / m2.powf(1.5);
        let kurtosis = n * (n + 1.0) * (n - 1.0) / ((n - 2.0) * (n - 3.0)) * m4 / (m2 * m2)
            - 3.0 * (n - 1.0).powi(2) / ((n - 2.0) * (n - 3.0));
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-12);
        let whole = of(&values);
        assert!(close(whole.skewness(), skewness));
        assert!(close(whole.kurtosis(), kurtosis));
        let mut merged = of(&values[..2]);
        merged.merge(of(&values[2..]));
        assert!(close(merged.skewness(), skewness));
        assert!(close(merged.kurtosis(), kurtosis));
        assert_eq!(of(&[1.0, 2.0]).skewness(), None);
        assert_eq!(of(&[1.0, 2.0, 3.0]).kurtosis(), None);
    }
}
