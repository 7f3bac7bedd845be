//! Searching: bisecting kernels and commits, watching a series of kernels, minimising a
//! signature, scheduling a list of kernels, storing a run as it runs (`storing`: the plan
//! driver's observer that writes to the store). It returns data; `sigbench-present` draws it.
//!
//! One layer of sigbench (docs/ARCHITECTURE.md): it uses the layers below and never the
//! ones above, which Cargo enforces. The modules of the layers below are re-exported, so a
//! path reads the same in every crate (`crate::metric::Metric`).

#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod bisect;
pub mod minimize;
pub mod request;
pub mod schedule;
pub mod storing;
pub mod watch;

pub use sigbench_analyse::{stats, store};
pub use sigbench_measure::{
    calibrate, capability, child, choice, clock, diag, exec, host, input, interrupt, kbuild,
    loadfile, metric, outputs, plan, probe, random, record, results, say, say_raw, shell,
    signature, stamp, sys, testbed, text, version, vm,
};
