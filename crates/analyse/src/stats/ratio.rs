//! The ratio B/A of two medians with a bootstrap confidence interval.

use super::summary::{median, median_of};
use model::random::mix64;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    /// median(B) / median(A).
    pub ratio: f64,
    /// 95% percentile-bootstrap interval of the ratio (equal to `ratio` when both sides
    /// are constant).
    pub ci: (f64, f64),
}

const RESAMPLES: usize = 2000;

/// median(b)/median(a) with a percentile-bootstrap 95% CI (2000 resamples, fixed seed,
/// so the same data always gives the same interval).
pub fn ratio_of_medians(a: &[f64], b: &[f64]) -> Option<Ratio> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (ma, mb) = (median_of(a), median_of(b));
    if ma == 0.0 {
        return None;
    }
    let ratio = mb / ma;
    let mut state = 0x005e_ed0f_b007_u64;
    let mut draw = |v: &[f64], buf: &mut Vec<f64>| {
        buf.clear();
        for _ in 0..v.len() {
            state = mix64(state);
            buf.push(v[(state % v.len() as u64) as usize]);
        }
        buf.sort_by(|x, y| x.total_cmp(y));
        median(buf)
    };
    let (mut ba, mut bb) = (Vec::new(), Vec::new());
    let mut ratios: Vec<f64> = (0..RESAMPLES)
        .filter_map(|_| {
            let (ra, rb) = (draw(a, &mut ba), draw(b, &mut bb));
            (ra != 0.0).then(|| rb / ra)
        })
        .collect();
    ratios.sort_by(|x, y| x.total_cmp(y));
    let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q).round() as usize];
    let ci = if ratios.is_empty() {
        (ratio, ratio)
    } else {
        (at(0.025), at(0.975))
    };
    Some(Ratio { ratio, ci })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_sides_give_an_exact_ratio() {
        let r = ratio_of_medians(&[250.0; 10], &[31375.0; 10]).unwrap();
        assert_eq!(r.ratio, 125.5);
        assert_eq!(r.ci, (125.5, 125.5));
    }

    #[test]
    fn interval_brackets_the_ratio_and_is_reproducible() {
        let a = [10.2, 11.1, 9.8, 10.5, 10.9, 11.3, 10.0, 10.7, 10.4, 10.6];
        let b: Vec<f64> = a.iter().map(|x| x * 1.6).collect();
        let r = ratio_of_medians(&a, &b).unwrap();
        assert!((r.ratio - 1.6).abs() < 1e-12);
        assert!(
            r.ci.0 <= 1.6 && 1.6 <= r.ci.1 && r.ci.0 > 1.3 && r.ci.1 < 1.9,
            "{r:?}"
        );
        assert_eq!(r, ratio_of_medians(&a, &b).unwrap());
        assert!(ratio_of_medians(&[0.0], &[1.0]).is_none());
    }
}
