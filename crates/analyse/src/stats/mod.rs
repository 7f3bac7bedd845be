//! Statistics over repeated samples: descriptive summaries with confidence intervals,
//! two-sample tests, ratios with confidence intervals, and scaling exponents.
//! Pure functions; no I/O. Reference values in the tests come from SciPy.

pub mod changepoint;
pub mod compare;
pub mod hypothesis;
pub mod ratio;
pub mod run;
pub mod scaling;
pub mod summary;
pub mod verdict;

pub use hypothesis::{Test, mann_whitney_u, min_p_value, welch_t};
pub use ratio::{Ratio, ratio_of_medians};
pub use scaling::{Scaling, fit_exponent};
pub use summary::{Summary, median};

/// A seeded generator for simulations (tests: the rates they measure are the same every run)
/// and for permutation tests (`verdict::within_modes`: the same p-value every time).
pub mod sim {
    /// splitmix64.
    pub struct Rng(pub u64);

    impl Rng {
        pub fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        pub fn uniform(&mut self) -> f64 {
            ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        pub fn normal(&mut self) -> f64 {
            let (u, v) = (self.uniform(), self.uniform());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        }
    }
}
