//! Two-sample tests: Mann–Whitney U (the default: no assumption about the shape of the
//! timing distribution) and Welch's t-test.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Test {
    MannWhitney,
    Welch,
}

impl model::choice::Choice for Test {
    const ALL: &'static [Test] = &[Test::MannWhitney, Test::Welch];
    fn arg(self) -> &'static str {
        match self {
            Test::MannWhitney => "mann-whitney",
            Test::Welch => "welch",
        }
    }
    fn aliases(self) -> &'static [&'static str] {
        match self {
            Test::MannWhitney => &["mwu", "u"],
            Test::Welch => &["t"],
        }
    }
}

impl Test {
    pub fn name(self) -> &'static str {
        match self {
            Test::MannWhitney => "Mann-Whitney U",
            Test::Welch => "Welch's t",
        }
    }

    /// Two-sided p-value of the difference between `a` and `b`.
    pub fn p_value(self, a: &[f64], b: &[f64]) -> f64 {
        match self {
            Test::MannWhitney => mann_whitney_u(a, b),
            Test::Welch => welch_t(a, b),
        }
    }
}

/// Ranks with ties averaged, and the tie groups' sizes.
pub(crate) fn ranks(all: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut idx: Vec<usize> = (0..all.len()).collect();
    idx.sort_by(|&i, &j| all[i].total_cmp(&all[j]));
    let mut r = vec![0.0; all.len()];
    let mut ties = Vec::new();
    let mut k = 0;
    while k < idx.len() {
        let mut m = k;
        while m + 1 < idx.len() && all[idx[m + 1]] == all[idx[k]] {
            m += 1;
        }
        let avg = (k + m) as f64 / 2.0 + 1.0;
        for &i in &idx[k..=m] {
            r[i] = avg;
        }
        if m > k {
            ties.push(m - k + 1);
        }
        k = m + 1;
    }
    (r, ties)
}

/// Number of arrangements giving each U, for sample sizes n1, n2 (no ties).
fn u_counts(n1: usize, n2: usize) -> Vec<f64> {
    // f(i, j, u): arrangements of i and j items with statistic u; recurse on the largest
    // item belonging to sample 1 (adds j to U) or sample 2.
    let max_u = n1 * n2;
    let mut table = vec![vec![vec![0.0f64; max_u + 1]; n2 + 1]; n1 + 1];
    for (i, row) in table.iter_mut().enumerate() {
        for (j, cell) in row.iter_mut().enumerate() {
            if i == 0 || j == 0 {
                cell[0] = 1.0;
            }
        }
    }
    for i in 1..=n1 {
        for j in 1..=n2 {
            for u in 0..=i * j {
                let from_1 = if u >= j { table[i - 1][j][u - j] } else { 0.0 };
                let from_2 = table[i][j - 1][u];
                table[i][j][u] = from_1 + from_2;
            }
        }
    }
    table[n1][n2].clone()
}

/// Two-sided Mann–Whitney U p-value, as SciPy's `mannwhitneyu(method="auto")`: the exact
/// distribution when both samples have at most 8 values and there are no ties, otherwise
/// the normal approximation with tie and continuity corrections.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return f64::NAN;
    }
    let all: Vec<f64> = a.iter().chain(b).copied().collect();
    let (r, ties) = ranks(&all);
    let r1: f64 = r[..n1].iter().sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let u2 = (n1 * n2) as f64 - u1;
    let u = u1.max(u2);
    if n1 <= 8 && n2 <= 8 && ties.is_empty() {
        let counts = u_counts(n1, n2);
        let total: f64 = counts.iter().sum();
        // P(U ≥ u) for the larger U, doubled.
        let tail: f64 = counts[u.round() as usize..].iter().sum::<f64>() / total;
        return (2.0 * tail).min(1.0);
    }
    let n = (n1 + n2) as f64;
    let mu = (n1 * n2) as f64 / 2.0;
    let tie_term: f64 = ties.iter().map(|&t| (t * t * t - t) as f64).sum::<f64>() / (n * (n - 1.0));
    let sigma = ((n1 * n2) as f64 / 12.0 * ((n + 1.0) - tie_term)).sqrt();
    if sigma == 0.0 {
        return 1.0;
    }
    let z = (u - mu - 0.5) / sigma;
    // Cannot fail: a mean of 0 and a deviation of 1 are always valid.
    let normal = Normal::new(0.0, 1.0).expect("standard normal");
    (2.0 * normal.sf(z)).min(1.0)
}

/// The smallest two-sided p-value Mann–Whitney can give for these sample sizes: when it
/// is above α, no amount of difference can be called significant.
pub fn min_p_value(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    // 2 / C(n1 + n2, n1)
    let mut ln_c = 0.0;
    for k in 1..=n1 {
        ln_c += ((n2 + k) as f64).ln() - (k as f64).ln();
    }
    (2.0 * (-ln_c).exp()).min(1.0)
}

/// Two-sided p-value of Welch's unequal-variances t-test (SciPy's
/// `ttest_ind(equal_var=False)`).
pub fn welch_t(a: &[f64], b: &[f64]) -> f64 {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    if na < 2.0 || nb < 2.0 {
        return f64::NAN;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let var =
        |v: &[f64], m: f64| v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() as f64 - 1.0);
    let (ma, mb) = (mean(a), mean(b));
    let (va, vb) = (var(a, ma) / na, var(b, mb) / nb);
    if va + vb == 0.0 {
        return if ma == mb { 1.0 } else { 0.0 };
    }
    let t = (ma - mb) / (va + vb).sqrt();
    let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    two_sided_t(t, df)
}

/// Two-sided p-value of Student's t-test with pooled variance (SciPy's
/// `ttest_ind(equal_var=True)`), df = nA + nB − 2.
pub fn student_t(a: &[f64], b: &[f64]) -> f64 {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    if na < 2.0 || nb < 2.0 {
        return f64::NAN;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let ss = |v: &[f64], m: f64| v.iter().map(|x| (x - m).powi(2)).sum::<f64>();
    let (ma, mb) = (mean(a), mean(b));
    let df = na + nb - 2.0;
    let pooled = (ss(a, ma) + ss(b, mb)) / df;
    if pooled == 0.0 {
        return if ma == mb { 1.0 } else { 0.0 };
    }
    let t = (ma - mb) / (pooled * (1.0 / na + 1.0 / nb)).sqrt();
    two_sided_t(t, df)
}

/// The two-sided p-value of `t` with `df` degrees of freedom; NaN (no decision, never a
/// panic) when stored values made either not finite — an infinite rate from a zero time.
fn two_sided_t(t: f64, df: f64) -> f64 {
    match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) if t.is_finite() => (2.0 * dist.sf(t.abs())).min(1.0),
        _ => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn student_t_matches_scipy() {
        // SciPy 1.17.1: stats.ttest_ind(A, B, equal_var=True).pvalue
        assert!(
            close(student_t(&A, &B), 9.339388570353555e-06, 1e-9),
            "{}",
            student_t(&A, &B)
        );
    }

    // Reference values from SciPy 1.17.1:
    //   from scipy import stats
    //   stats.mannwhitneyu(A, B, alternative="two-sided")            # method="auto"
    //   stats.mannwhitneyu(C, D, alternative="two-sided", method="asymptotic")
    //   stats.mannwhitneyu(E, F, alternative="two-sided", method="exact")
    //   stats.ttest_ind(A, B, equal_var=False)
    const A: [f64; 8] = [10.2, 11.1, 9.8, 10.5, 10.9, 11.3, 10.0, 10.7];
    const B: [f64; 8] = [12.1, 11.8, 12.6, 11.9, 12.4, 13.0, 12.2, 11.7];
    const C: [f64; 12] = [1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
    const D: [f64; 12] = [
        3.0, 4.0, 4.0, 5.0, 6.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0,
    ];

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    #[test]
    fn mann_whitney_exact_small_samples() {
        // U = 0, p = 0.0001554001554001554
        assert!(close(mann_whitney_u(&A, &B), 0.0001554001554001554, 1e-9));
        assert!(close(mann_whitney_u(&B, &A), 0.0001554001554001554, 1e-9));
        // E = [5.1, 4.9, 5.3], F = [5.0, 5.2, 5.4, 5.6]: U = 3, p = 0.4
        assert!(close(
            mann_whitney_u(&[5.1, 4.9, 5.3], &[5.0, 5.2, 5.4, 5.6]),
            0.4,
            1e-9
        ));
    }

    #[test]
    fn mann_whitney_normal_approximation_with_ties() {
        // U = 34.5, p = 0.03179664481638196
        assert!(close(mann_whitney_u(&C, &D), 0.03179664481638196, 1e-9));
    }

    #[test]
    fn welch_matches_scipy() {
        // t = -6.74866180411923, p = 1.1294038188812383e-05
        assert!(close(welch_t(&A, &B), 1.1294038188812383e-05, 1e-6));
        // t = -2.364920727984858, p = 0.027440301240805976
        assert!(close(welch_t(&C, &D), 0.027440301240805976, 1e-6));
    }

    #[test]
    fn identical_samples_are_not_different() {
        assert_eq!(mann_whitney_u(&[3.0; 10], &[3.0; 10]), 1.0);
        assert_eq!(welch_t(&[3.0; 10], &[3.0; 10]), 1.0);
        assert_eq!(welch_t(&[3.0; 10], &[4.0; 10]), 0.0);
    }

    #[test]
    fn smallest_reachable_p() {
        assert!(close(min_p_value(3, 3), 0.1, 1e-12));
        assert!(close(min_p_value(8, 8), 2.0 / 12870.0, 1e-9));
        assert!(min_p_value(5, 5) < 0.05);
    }
}

#[cfg(test)]
mod nonfinite_tests {
    use super::*;

    /// A rate from a zero time is infinite: the tests say "no decision", never panic.
    #[test]
    fn infinite_values_give_no_decision() {
        let a = [1.0, f64::INFINITY, 2.0];
        let b = [1.0, 2.0, 3.0];
        assert!(welch_t(&a, &b).is_nan());
        assert!(student_t(&a, &b).is_nan());
    }
}
