//! Searching: bisecting kernels and commits, watching a series of kernels, minimising a
//! signature, scheduling a list of kernels, storing a run as it runs (`storing`: the plan
//! driver's observer that writes to the store). It returns data; `sigbench-present` draws it.
//!
//! One layer of sigbench (docs/ARCHITECTURE.md): it uses the layers below and never the
//! ones above, which Cargo enforces. Nothing below is re-exported: a path names the crate
//! a thing lives in (`model::metric::Metric`, `measure::plan::Plan`), each crate a
//! dependency under its short name.

#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod bisect;
pub mod minimize;
pub mod request;
pub mod schedule;
pub mod storing;
pub mod watch;
