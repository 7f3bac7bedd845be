//! Descriptive statistics of one set of samples.

use serde::{Deserialize, Serialize};

/// Summary of a set of samples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub mean: f64,
    /// Sample standard deviation (n - 1); 0 for a single sample.
    pub stdev: f64,
    /// stdev / mean, as a fraction.
    pub cv: f64,
    pub min: f64,
    pub max: f64,
    /// Distribution-free confidence interval of the median from order statistics.
    pub median_ci: (f64, f64),
    /// The interval's actual coverage (≥ 0.95 when n ≥ 6; less for fewer samples, where
    /// the interval is min…max).
    pub median_ci_level: f64,
    /// Samples outside Tukey's fences (1.5 × IQR beyond the quartiles).
    pub outliers: usize,
}

/// Median of sorted samples.
/// The median of unsorted samples.
pub fn median_of(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    median(&s)
}

/// Sample standard deviation (n − 1), 0 for fewer than two samples.
pub fn stdev(v: &[f64]) -> f64 {
    let n = v.len();
    if n < 2 {
        return 0.0;
    }
    let mean = v.iter().sum::<f64>() / n as f64;
    (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
}

pub fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// Quantile of sorted samples with linear interpolation (NumPy's default).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// P(X ≤ k) for X ~ Binomial(n, 1/2).
#[cfg(test)]
fn binom_half_cdf(n: usize, k: usize) -> f64 {
    // Sum C(n, i) / 2^n in log space to stay finite for large n.
    let ln_2n = n as f64 * std::f64::consts::LN_2;
    let mut ln_c = 0.0; // ln C(n, 0)
    let mut total = 0.0;
    for i in 0..=k.min(n) {
        if i > 0 {
            ln_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        total += (ln_c - ln_2n).exp();
    }
    total.min(1.0)
}

/// Order-statistic confidence interval for the median at (at least) `level`, with its
/// actual coverage. Falls back to min…max when n is too small to reach `level`.
fn median_ci(sorted: &[f64], level: f64) -> ((f64, f64), f64) {
    let n = sorted.len();
    let tail = (1.0 - level) / 2.0;
    // Largest j ≥ 1 with P(B ≤ j − 1) ≤ tail: the interval is x(j) … x(n − j + 1). The CDF
    // is accumulated term by term (binom_half_cdf's sum, once), so this is linear in n.
    let ln_2n = n as f64 * std::f64::consts::LN_2;
    let mut ln_c = 0.0; // ln C(n, j)
    let mut cdf = (-ln_2n).exp(); // P(B ≤ j)
    let mut prev = 0.0; // P(B ≤ j − 1)
    let mut j = 0;
    while j < n / 2 && cdf.min(1.0) <= tail {
        j += 1;
        ln_c += ((n - j + 1) as f64).ln() - (j as f64).ln();
        prev = cdf;
        cdf += (ln_c - ln_2n).exp();
    }
    if j == 0 {
        let coverage = 1.0 - 2.0 * cdf.min(1.0);
        return ((sorted[0], sorted[n - 1]), coverage.max(0.0));
    }
    let coverage = 1.0 - 2.0 * prev.min(1.0);
    ((sorted[j - 1], sorted[n - j]), coverage)
}

impl Summary {
    /// `None` for an empty set.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        let n = s.len();
        let mean = s.iter().sum::<f64>() / n as f64;
        let stdev = stdev(&s);
        let (q1, q3) = (quantile(&s, 0.25), quantile(&s, 0.75));
        let iqr = q3 - q1;
        let outliers = s
            .iter()
            .filter(|&&x| x < q1 - 1.5 * iqr || x > q3 + 1.5 * iqr)
            .count();
        let (median_ci, median_ci_level) = median_ci(&s, 0.95);
        Some(Summary {
            n,
            median: median(&s),
            mean,
            stdev,
            cv: if mean != 0.0 { stdev / mean.abs() } else { 0.0 },
            min: s[0],
            max: s[n - 1],
            median_ci,
            median_ci_level,
            outliers,
        })
    }

    /// Whether every sample is the same (an exact counter).
    pub fn is_constant(&self) -> bool {
        self.min == self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_reference_values() {
        // Reference: Python's statistics module —
        // statistics.median([2,4,4,4,5,5,7,9]) == 4.5, mean == 5.0, stdev == 2.138089935299395
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert_eq!(s.median, 4.5);
        assert_eq!(s.mean, 5.0);
        assert!((s.stdev - 2.138089935299395).abs() < 1e-12);
        assert!((s.cv - 2.138089935299395 / 5.0).abs() < 1e-12);
        assert_eq!((s.min, s.max), (2.0, 9.0));
        // numpy.percentile([2,4,4,4,5,5,7,9], [25, 75]) == [4.0, 5.5]
        let sorted = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(
            (quantile(&sorted, 0.25), quantile(&sorted, 0.75)),
            (4.0, 5.5)
        );
        // Fences 1.75 … 7.75: 9 is an outlier.
        assert_eq!(s.outliers, 1);
    }

    #[test]
    fn median_ci_agrees_with_the_sum_for_every_n() {
        // The incremental CDF gives binom_half_cdf's intervals.
        for n in [1usize, 2, 5, 6, 10, 17, 40, 101] {
            let v: Vec<f64> = (0..n).map(|k| k as f64).collect();
            let tail = 0.025;
            let mut j = 0;
            while j < n / 2 && binom_half_cdf(n, j) <= tail {
                j += 1;
            }
            let ((lo, hi), cov) = median_ci(&v, 0.95);
            if j == 0 {
                assert_eq!((lo, hi), (0.0, (n - 1) as f64), "n = {n}");
            } else {
                assert_eq!((lo, hi), ((j - 1) as f64, (n - j) as f64), "n = {n}");
                assert!((cov - (1.0 - 2.0 * binom_half_cdf(n, j - 1))).abs() < 1e-9);
            }
        }
        // Large samples (the sum was quadratic: 100 000 samples took seconds; the speed is
        // measured by bench/report-bisect.sh).
        let v: Vec<f64> = (0..200_000).map(|k| (k % 977) as f64).collect();
        let s = Summary::of(&v).unwrap();
        assert!(s.median_ci.0 <= s.median && s.median <= s.median_ci.1);
        assert!(s.median_ci_level >= 0.95);
    }

    #[test]
    fn median_ci_from_order_statistics() {
        // scipy.stats.binom.cdf(1, 10, 0.5) == 0.0107421875, cdf(2, 10, 0.5) == 0.0546875:
        // for n = 10 the 95% interval is x(2)…x(9), covering 1 − 2·0.0107421875.
        assert!((binom_half_cdf(10, 1) - 0.0107421875).abs() < 1e-12);
        assert!((binom_half_cdf(10, 2) - 0.0546875).abs() < 1e-12);
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        let s = Summary::of(&v).unwrap();
        assert_eq!(s.median_ci, (2.0, 9.0));
        assert!((s.median_ci_level - (1.0 - 2.0 * 0.0107421875)).abs() < 1e-12);
        // Five samples cannot reach 95%: min…max at 1 − 2/32.
        let s = Summary::of(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!(s.median_ci, (1.0, 5.0));
        assert!((s.median_ci_level - 0.9375).abs() < 1e-12);
        // Large n stays finite.
        let v: Vec<f64> = (0..2000).map(f64::from).collect();
        let s = Summary::of(&v).unwrap();
        assert!(s.median_ci.0 < s.median && s.median < s.median_ci.1);
    }

    #[test]
    fn single_empty_and_constant() {
        let s = Summary::of(&[3.0]).unwrap();
        assert_eq!((s.median, s.stdev, s.cv), (3.0, 0.0, 0.0));
        assert!(s.is_constant());
        assert!(Summary::of(&[]).is_none());
        assert_eq!(median(&[1.0, 3.0, 10.0]), 3.0);
    }
}
