//! sigbench: reproduce, measure and pin down Linux filesystem performance regressions from
//! syscall signatures.
//!
//! The library is a workspace of crates that follow the data (docs/ARCHITECTURE.md):
//! `sigbench-model` → `sigbench-measure` and `sigbench-analyse` → `sigbench-search` →
//! `sigbench-present`, each depending on crates below it by need, so no module reaches back
//! up. This crate is the binary's: it re-exports every module (`sigbench::plan`) for
//! the commands under `cmd/` and the end-to-end tests.

#![deny(unsafe_code)]

pub use sigbench_present::{
    bisect, calibrate, capability, child, choice, clock, diag, exec, host, input, interrupt,
    kbuild, loadfile, metric, minimize, outputs, plan, probe, random, record, report, repro,
    request, results, say, say_raw, schedule, shell, signature, site, stamp, stats, store, storing,
    sys, testbed, text, version, vm, watch,
};
