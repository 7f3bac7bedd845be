//! Presenting: reports in every format, the static site, the C reproducer.
//!
//! One layer of sigbench (docs/ARCHITECTURE.md): it uses the layers below and never the
//! ones above, which Cargo enforces. Nothing below is re-exported: a path names the crate
//! a thing lives in (`model::metric::Metric`, `measure::plan::Plan`), each crate a
//! dependency under its short name.

#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod report;
pub mod repro;
pub mod site;
