//! How a metric grows with N: the slope of a least-squares fit of log(value) on log(N).
//! 1 is linear, 2 quadratic — the 5.15 regression's N(N+1)/2 evictions fit ≈ 2.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scaling {
    pub exponent: f64,
    /// 95% interval of the exponent; `None` with fewer than three points.
    pub ci: Option<(f64, f64)>,
    pub points: usize,
}

impl Scaling {
    /// `~linear`, `superlinear (N^1.9)`, `sublinear (N^0.5)` or `~constant`.
    pub fn verdict(&self) -> String {
        // A perfect fit (an exact counter) has a zero-width interval: allow rounding.
        let (lo, hi) = match self.ci {
            Some((lo, hi)) => (lo - 1e-6, hi + 1e-6),
            None => (self.exponent - 0.1, self.exponent + 0.1),
        };
        if lo <= 1.0 && 1.0 <= hi {
            "~linear".into()
        } else if lo > 1.0 {
            format!("superlinear (N^{})", exponent_text(self.exponent))
        } else if lo <= 0.0 && 0.0 <= hi {
            "~constant".into()
        } else {
            format!("sublinear (N^{})", exponent_text(self.exponent))
        }
    }
}

/// One decimal, or two where one would round to a misleading 1.0 (N^0.98 is not N^1.0).
fn exponent_text(e: f64) -> String {
    let one = format!("{e:.1}");
    if one == "1.0" { format!("{e:.2}") } else { one }
}

/// Fit over (N, value) points. `None` when there are fewer than two distinct N or a value
/// is not positive (its logarithm is undefined).
pub fn fit_exponent(points: &[(f64, f64)]) -> Option<Scaling> {
    if points
        .iter()
        .any(|&(n, v)| n <= 0.0 || v <= 0.0 || !v.is_finite())
    {
        return None;
    }
    let xs: Vec<f64> = points.iter().map(|p| p.0.ln()).collect();
    let ys: Vec<f64> = points.iter().map(|p| p.1.ln()).collect();
    let m = xs.len() as f64;
    let mx = xs.iter().sum::<f64>() / m;
    let my = ys.iter().sum::<f64>() / m;
    let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let slope = sxy / sxx;
    let ci = if points.len() > 2 {
        let intercept = my - slope * mx;
        let sse: f64 = xs
            .iter()
            .zip(&ys)
            .map(|(x, y)| (y - intercept - slope * x).powi(2))
            .sum();
        let df = m - 2.0;
        let se = (sse / df / sxx).sqrt();
        let t = StudentsT::new(0.0, 1.0, df)
            .expect("df > 0")
            .inverse_cdf(0.975);
        Some((slope - t * se, slope + t * se))
    } else {
        None
    };
    Some(Scaling {
        exponent: slope,
        ci,
        points: points.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quadratic_evictions_fit_about_two() {
        // The 5.15 regression: N(N+1)/2 evictions. Reference, SciPy 1.17.1:
        //   r = stats.linregress(np.log(N), np.log(V)); t = stats.t.ppf(0.975, 3)
        //   slope 1.9939681325942975, CI 1.9896946231005843 … 1.9982416420880107
        let pts: Vec<(f64, f64)> = [50.0, 100.0, 250.0, 500.0, 1000.0]
            .iter()
            .map(|&n| (n, n * (n + 1.0) / 2.0))
            .collect();
        let s = fit_exponent(&pts).unwrap();
        assert!((s.exponent - 1.9939681325942975).abs() < 1e-9);
        let (lo, hi) = s.ci.unwrap();
        assert!((lo - 1.9896946231005843).abs() < 1e-6 && (hi - 1.9982416420880107).abs() < 1e-6);
        assert_eq!(s.verdict(), "superlinear (N^2.0)");
    }

    #[test]
    fn noisy_linear_time_contains_one() {
        // SciPy: slope 1.083692542335595, CI 0.9808387611184608 … 1.1865463235527292
        let pts = [
            (50.0, 1.9),
            (50.0, 2.1),
            (100.0, 4.6),
            (100.0, 4.4),
            (250.0, 12.0),
            (250.0, 11.0),
        ];
        let s = fit_exponent(&pts).unwrap();
        assert!((s.exponent - 1.083692542335595).abs() < 1e-9);
        let (lo, hi) = s.ci.unwrap();
        assert!((lo - 0.9808387611184608).abs() < 1e-6 && (hi - 1.1865463235527292).abs() < 1e-6);
        assert_eq!(s.verdict(), "~linear");
    }

    #[test]
    fn exact_linear_counter_has_a_point_interval() {
        let pts: Vec<(f64, f64)> = [50.0, 100.0, 250.0].iter().map(|&n| (n, n)).collect();
        let s = fit_exponent(&pts).unwrap();
        assert!((s.exponent - 1.0).abs() < 1e-12);
        let (lo, hi) = s.ci.unwrap();
        assert!((lo - 1.0).abs() < 1e-9 && (hi - 1.0).abs() < 1e-9);
        assert_eq!(s.verdict(), "~linear");
        assert!(fit_exponent(&[(10.0, 0.0), (20.0, 1.0)]).is_none());
        assert!(fit_exponent(&[(10.0, 1.0), (10.0, 2.0)]).is_none());
        assert_eq!(
            fit_exponent(&[(10.0, 5.0), (20.0, 5.0), (40.0, 5.0)])
                .unwrap()
                .verdict(),
            "~constant"
        );
    }
}
