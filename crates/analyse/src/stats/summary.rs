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

/// A side's values in two clusters (docs/statistics.md, "States"): under a deterministic
/// clock the states a kernel reaches can fall in two modes (6.12's btrfs extent buffers:
/// contiguous or not), and a median then hides which one a side sampled.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Modes {
    /// The lower cluster: how many values, their median.
    pub low: (usize, f64),
    /// The higher one.
    pub high: (usize, f64),
}

/// The largest gap between sorted values divided by the spread within the two clusters it
/// leaves, above which a normal sample of n values shows that gap 1 % of the time
/// (seeded simulation, 40 000 samples each: docs/statistics.md); linear between the
/// points, the last one beyond.
const MODE_GAP: [(usize, f64); 12] = [
    (5, 16.7),
    (6, 11.3),
    (7, 8.3),
    (8, 6.7),
    (10, 5.1),
    (12, 4.1),
    (16, 3.2),
    (20, 2.8),
    (24, 2.6),
    (32, 2.3),
    (48, 2.05),
    (64, 2.0),
];

fn mode_gap(n: usize) -> f64 {
    let mut prev = MODE_GAP[0];
    for &(m, g) in &MODE_GAP {
        if n <= m {
            let f = (n - prev.0) as f64 / (m - prev.0).max(1) as f64;
            return prev.1 + (g - prev.1) * f;
        }
        prev = (m, g);
    }
    prev.1
}

/// The two clusters `values` fall in, if they do: at least 5 values, the largest gap
/// between neighbours wider than a normal sample of that size shows 1 % of the time
/// (relative to the spread within the clusters), and than 3 × `floor` of the level (a gap
/// within the measurement's resolution is none).
pub fn modes(values: &[f64], floor: f64) -> Option<Modes> {
    if values.len() < 5 {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let (at, gap) = v
        .windows(2)
        .enumerate()
        .map(|(i, w)| (i, w[1] - w[0]))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let (low, high) = v.split_at(at + 1);
    let var = |c: &[f64]| {
        let m = c.iter().sum::<f64>() / c.len() as f64;
        c.iter().map(|x| (x - m).powi(2)).sum::<f64>()
    };
    let within = ((var(low) + var(high)) / v.len() as f64).sqrt();
    let level = median_of(&v).abs();
    let resolution = 3.0 * floor * level;
    let clear = if within > 0.0 {
        gap / within >= mode_gap(v.len())
    } else {
        gap > 0.0
    };
    (clear && gap > resolution).then(|| Modes {
        low: (low.len(), median_of(low)),
        high: (high.len(), median_of(high)),
    })
}

#[cfg(test)]
mod mode_tests {
    use super::*;

    /// Two clusters are said where they are (6.12's slow extent-buffer windows beside the
    /// fast ones), and a normal sample is said to have them about 1 % of the time.
    #[test]
    fn two_clusters_are_found_and_noise_rarely_is() {
        let slow = [65.1, 65.4, 65.9, 66.0, 65.6, 68.6, 68.7, 65.3];
        let m = modes(&slow, 0.001).unwrap();
        assert_eq!((m.low.0, m.high.0), (6, 2));
        assert!((m.high.1 - 68.65).abs() < 1e-9);
        assert!(modes(&[65.1, 65.4, 65.9, 66.0, 65.6, 65.7, 65.2, 65.3], 0.001).is_none());
        assert!(modes(&[1.0, 1.0, 1.0, 1.0, 1.0], 0.001).is_none());
        // Within the floor: no modes.
        assert!(modes(&[100.0, 100.0, 100.0, 100.0, 100.05], 0.001).is_none());
        let mut rng = model::random::Rng(5);
        for n in [5, 8, 12, 24] {
            let said = (0..4000)
                .filter(|_| {
                    let v: Vec<f64> = (0..n)
                        .map(|_| 100.0 * (1.0 + 0.01 * rng.normal()))
                        .collect();
                    modes(&v, 0.001).is_some()
                })
                .count();
            println!(
                "modes said of a normal sample of {n}: {:.2} %",
                said as f64 / 40.0
            );
            assert!(said < 4000 / 50, "{n}: {said}");
        }
    }
}
