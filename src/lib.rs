//! sigbench: reproduce, measure and pin down Linux filesystem performance regressions from
//! syscall signatures.
//!
//! The library is a workspace of crates that follow the data (docs/ARCHITECTURE.md):
//! `sigbench-model` → `sigbench-measure` → `sigbench-analyse` → `sigbench-search` →
//! `sigbench-present`, each depending on the one below only, so no module reaches back up
//! the chain. This crate is the binary's: it re-exports every module (`sigbench::plan`) for
//! the commands under `cmd/` and the end-to-end tests.

#![deny(unsafe_code)]

pub use sigbench_present::*;
