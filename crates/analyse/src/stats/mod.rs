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
