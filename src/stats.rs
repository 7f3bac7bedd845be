//! Descriptive statistics over repeated samples. Pure functions; no I/O.

/// Summary of a set of samples.
#[derive(Clone, Copy, Debug, PartialEq)]
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
        let stdev = if n > 1 {
            (s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Some(Summary {
            n,
            median: median(&s),
            mean,
            stdev,
            cv: if mean != 0.0 { stdev / mean } else { 0.0 },
            min: s[0],
            max: s[n - 1],
        })
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
    }

    #[test]
    fn single_and_empty() {
        let s = Summary::of(&[3.0]).unwrap();
        assert_eq!((s.median, s.stdev, s.cv), (3.0, 0.0, 0.0));
        assert!(Summary::of(&[]).is_none());
        assert_eq!(median(&[1.0, 3.0, 10.0]), 3.0);
    }
}
