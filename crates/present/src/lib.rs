//! Presenting: reports in every format, the static site, the C reproducer.
//!
//! One layer of sigbench (docs/ARCHITECTURE.md): it uses the layers below and never the
//! ones above, which Cargo enforces. The modules of the layers below are re-exported, so a
//! path reads the same in every crate (`crate::metric::Metric`).

#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod report;
pub mod repro;
pub mod site;

pub use sigbench_search::{
    bisect, calibrate, capability, child, choice, clock, diag, exec, host, input, interrupt,
    kbuild, loadfile, metric, minimize, outputs, plan, probe, random, record, request, results,
    say, say_raw, schedule, shell, signature, stamp, stats, store, storing, sys, testbed, text,
    version, vm, watch,
};
