//! Analysing: the statistics over run documents and the results store with its series
//! queries.
//!
//! One layer of sigbench (docs/ARCHITECTURE.md): it uses the layers below and never the
//! ones above, which Cargo enforces. The modules of the layers below are re-exported, so a
//! path reads the same in every crate (`crate::metric::Metric`).

#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod stats;
pub mod store;

pub use sigbench_model::{
    choice, clock, diag, input, metric, random, results, say, say_raw, shell, stamp, text, version,
};
