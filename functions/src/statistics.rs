//! Trino's statistical functions of doubles that DataFusion lacks: `normal_cdf(mean, sd, v)`,
//! `inverse_normal_cdf(mean, sd, p)`, `beta_cdf(a, b, v)`, `inverse_beta_cdf(a, b, p)` and the
//! Wilson score interval's bounds
//! `wilson_interval_lower/upper(successes, trials, z)`, with Trino's refusals. The error
//! function is libm's (FreeBSD's, correct to an ulp); Trino's is Apache Commons Math's, so the
//! last digit of an answer may differ.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Builder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use crate::args::{arrays, is_integer, result, unexpected_parameters};
use crate::error::invalid_argument;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Statistic {
    NormalCdf,
    InverseNormalCdf,
    BetaCdf,
    InverseBetaCdf,
    WilsonLower,
    WilsonUpper,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct StatisticFunction {
    kind: Statistic,
    signature: Signature,
}

pub(crate) fn statistic_functions() -> Vec<StatisticFunction> {
    [
        Statistic::NormalCdf,
        Statistic::InverseNormalCdf,
        Statistic::BetaCdf,
        Statistic::InverseBetaCdf,
        Statistic::WilsonLower,
        Statistic::WilsonUpper,
    ]
    .into_iter()
    .map(|kind| StatisticFunction {
        kind,
        signature: Signature::user_defined(Volatility::Immutable),
    })
    .collect()
}

impl Statistic {
    fn wilson(self) -> bool {
        matches!(self, Statistic::WilsonLower | Statistic::WilsonUpper)
    }

    fn evaluate(self, a: f64, b: f64, c: f64) -> Result<f64> {
        match self {
            Statistic::NormalCdf => normal_cdf(a, b, c),
            Statistic::InverseNormalCdf => inverse_normal_cdf(a, b, c),
            Statistic::BetaCdf => beta_cdf(a, b, c),
            Statistic::InverseBetaCdf => inverse_beta_cdf(a, b, c),
            Statistic::WilsonLower | Statistic::WilsonUpper => {
                wilson_interval(a, b, c, self == Statistic::WilsonUpper)
            }
        }
    }
}

impl ScalarUDFImpl for StatisticFunction {
    fn name(&self) -> &str {
        match self.kind {
            Statistic::NormalCdf => "normal_cdf",
            Statistic::InverseNormalCdf => "inverse_normal_cdf",
            Statistic::BetaCdf => "beta_cdf",
            Statistic::InverseBetaCdf => "inverse_beta_cdf",
            Statistic::WilsonLower => "wilson_interval_lower",
            Statistic::WilsonUpper => "wilson_interval_upper",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let number = |t: &DataType| t.is_numeric() || *t == DataType::Null;
        match arg_types {
            [s, n, z] if self.kind.wilson() && is_integer(s) && is_integer(n) && number(z) => {
                Ok(vec![DataType::Int64, DataType::Int64, DataType::Float64])
            }
            [a, b, c] if !self.kind.wilson() && number(a) && number(b) && number(c) => {
                Ok(vec![DataType::Float64; 3])
            }
            _ => Err(unexpected_parameters(
                self.name(),
                arg_types,
                if self.kind.wilson() {
                    "(bigint, bigint, double)"
                } else {
                    "(double, double, double)"
                },
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let columns = arrays(&args)?;
        let [a, b, c] = columns.as_slice() else {
            return exec_err!("{} takes three arguments", self.name());
        };
        let doubles =
            |column: &ArrayRef| -> Result<ArrayRef> { Ok(cast(column, &DataType::Float64)?) };
        let (a, b, c) = (doubles(a)?, doubles(b)?, doubles(c)?);
        let (a, b, c) = (
            a.as_primitive::<Float64Type>(),
            b.as_primitive::<Float64Type>(),
            c.as_primitive::<Float64Type>(),
        );
        let mut out = Float64Builder::with_capacity(a.len());
        for i in 0..a.len() {
            if a.is_null(i) || b.is_null(i) || c.is_null(i) {
                out.append_null();
            } else {
                out.append_value(self.kind.evaluate(a.value(i), b.value(i), c.value(i))?);
            }
        }
        let answer: ArrayRef = Arc::new(out.finish());
        result(&args, answer)
    }
}

/// The normal distribution's cumulative probability of `value`.
fn normal_cdf(mean: f64, sd: f64, value: f64) -> Result<f64> {
    // NaN is refused too, as Trino's `sd > 0` check refuses it.
    if sd <= 0.0 || sd.is_nan() {
        return Err(invalid_argument("standardDeviation must be > 0"));
    }
    Ok(0.5 * (1.0 + libm::erf((value - mean) / (sd * std::f64::consts::SQRT_2))))
}

/// The value whose cumulative probability is `p`: Acklam's rational approximation, refined by
/// one step of Halley's method on the error function.
fn inverse_normal_cdf(mean: f64, sd: f64, p: f64) -> Result<f64> {
    if !(p > 0.0 && p < 1.0) {
        return Err(invalid_argument("p must be 0 > p > 1"));
    }
    if sd <= 0.0 || sd.is_nan() {
        return Err(invalid_argument("sd must be > 0"));
    }
    Ok(mean + sd * standard_normal_quantile(p))
}

/// The beta distribution's cumulative probability of `value`: the regularized incomplete beta
/// function, from its continued fraction.
fn beta_cdf(a: f64, b: f64, value: f64) -> Result<f64> {
    if !(0.0..=1.0).contains(&value) {
        return Err(invalid_argument("value must be 0 >= v >= 1"));
    }
    if !(a > 0.0 && b > 0.0) {
        return Err(invalid_argument("a, b must be > 0"));
    }
    Ok(regularized_beta(a, b, value))
}

/// The value whose beta cumulative probability is `p`, by bisection to the last bit (Trino's
/// solver stops at an absolute accuracy of 1e-9, so answers may differ past the ninth place).
fn inverse_beta_cdf(a: f64, b: f64, p: f64) -> Result<f64> {
    if !(0.0..=1.0).contains(&p) {
        return Err(invalid_argument("p must be 0 >= p >= 1"));
    }
    if !(a > 0.0 && b > 0.0) {
        return Err(invalid_argument("a, b must be > 0"));
    }
    let (mut low, mut high) = (0.0f64, 1.0f64);
    if p == 0.0 {
        return Ok(0.0);
    }
    if p == 1.0 {
        return Ok(1.0);
    }
    for _ in 0..200 {
        let middle = 0.5 * (low + high);
        if middle <= low || middle >= high {
            break;
        }
        if regularized_beta(a, b, middle) < p {
            low = middle;
        } else {
            high = middle;
        }
    }
    Ok(0.5 * (low + high))
}

/// I_x(a, b), with the continued fraction on the side where it converges fast.
fn regularized_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let log_front =
        libm::lgamma(a + b) - libm::lgamma(a) - libm::lgamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        log_front.exp() * beta_fraction(a, b, x) / a
    } else {
        1.0 - log_front.exp() * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of the incomplete beta function, by the modified Lentz method.
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0));
    let mut fraction = d;
    for m in 1..=500 {
        let m = f64::from(m);
        // The even step, then the odd one.
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 / guard(1.0 + even * d);
        c = guard(1.0 + even / c);
        fraction *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 / guard(1.0 + odd * d);
        c = guard(1.0 + odd / c);
        let step = d * c;
        fraction *= step;
        if (step - 1.0).abs() < 1e-16 {
            break;
        }
    }
    fraction
}

fn standard_normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const LOW: f64 = 0.024_25;
    if p == 0.5 {
        return 0.0;
    }
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    let x = if p < LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - LOW {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    };
    // One Halley step on Φ(x) - p.
    let e = 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2) - p;
    let u = e * (2.0 * std::f64::consts::PI).sqrt() * (x * x / 2.0).exp();
    x - u / (1.0 + x * u / 2.0)
}

/// A bound of the Wilson score interval of `successes` in `trials` at the z-score `z`.
fn wilson_interval(successes: f64, trials: f64, z: f64, upper: bool) -> Result<f64> {
    if successes < 0.0 {
        return Err(invalid_argument("number of successes must not be negative"));
    }
    if trials <= 0.0 {
        return Err(invalid_argument("number of trials must be positive"));
    }
    if successes > trials {
        return Err(invalid_argument(
            "number of successes must not be larger than number of trials",
        ));
    }
    if z < 0.0 || z.is_nan() {
        return Err(invalid_argument("z-score must not be negative"));
    }
    let p = successes / trials;
    let z2 = z * z;
    let center = p + z2 / (2.0 * trials);
    let half_width = z * (p * (1.0 - p) / trials + z2 / (4.0 * trials * trials)).sqrt();
    let bound = if upper {
        center + half_width
    } else {
        center - half_width
    };
    Ok(bound / (1.0 + z2 / trials))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_normal_distribution_and_its_inverse() -> Result<()> {
        assert_eq!(normal_cdf(0.0, 1.0, 0.0)?, 0.5);
        assert!((normal_cdf(0.0, 1.0, 1.96)? - 0.975_002_104_851_780).abs() < 1e-15);
        assert!(normal_cdf(0.0, 0.0, 1.0).is_err());
        assert_eq!(inverse_normal_cdf(0.0, 1.0, 0.5)?, 0.0);
        // Φ(x) through erfc, which keeps its digits in the tails (1 + erf does not).
        let phi = |x: f64| 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2);
        for p in [1e-10, 0.01, 0.3, 0.7, 0.975, 1.0 - 1e-10] {
            let x = inverse_normal_cdf(0.0, 1.0, p)?;
            let error = (phi(x) - p).abs() / p.min(1.0 - p);
            assert!(error < 1e-6, "{p}: {error}");
        }
        assert!((inverse_normal_cdf(10.0, 2.0, 0.975)? - 13.919_927_969_080_1).abs() < 1e-12);
        assert!(inverse_normal_cdf(0.0, 1.0, 1.0).is_err());
        Ok(())
    }

    #[test]
    fn the_beta_distribution_and_its_inverse() -> Result<()> {
        // Uniform: the value itself; a = 2, b = 1: v²; symmetric: 0.5 at the middle.
        assert!((beta_cdf(1.0, 1.0, 0.3)? - 0.3).abs() < 1e-15);
        assert!((beta_cdf(2.0, 1.0, 0.5)? - 0.25).abs() < 1e-15);
        assert!((beta_cdf(3.0, 3.0, 0.5)? - 0.5).abs() < 1e-15);
        // Integer a and b: I_x(a, b) is P(Binomial(a + b - 1, x) >= a).
        assert!((beta_cdf(3.0, 4.0, 0.2)? - 0.098_88).abs() < 1e-15);
        assert!((beta_cdf(3.0, 4.0, 0.0004)? / 1.278_848_368_599_040_3e-9 - 1.0).abs() < 1e-12);
        for (a, b) in [(0.5, 0.5), (2.0, 5.0), (30.0, 4.0)] {
            for p in [0.01, 0.3, 0.9] {
                let x = inverse_beta_cdf(a, b, p)?;
                assert!((beta_cdf(a, b, x)? - p).abs() < 1e-12, "{a} {b} {p}");
            }
        }
        assert_eq!(inverse_beta_cdf(2.0, 3.0, 0.0)?, 0.0);
        assert!(beta_cdf(0.0, 1.0, 0.5).is_err());
        assert!(beta_cdf(1.0, 1.0, 1.5).is_err());
        assert!(inverse_beta_cdf(1.0, 1.0, -0.1).is_err());
        Ok(())
    }

    #[test]
    fn wilson_bounds() -> Result<()> {
        // 5 of 10 at 95%: the textbook 0.2366 to 0.7634.
        assert!((wilson_interval(5.0, 10.0, 1.96, false)? - 0.2366).abs() < 1e-4);
        assert!((wilson_interval(5.0, 10.0, 1.96, true)? - 0.7634).abs() < 1e-4);
        assert!(wilson_interval(5.0, 4.0, 2.0, false).is_err());
        assert!(wilson_interval(1.0, 0.0, 2.0, false).is_err());
        Ok(())
    }
}
