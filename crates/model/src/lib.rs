//! The model every layer shares: text escaping and shell quoting, diagnostics, package versions, and what a metric is.
//!
//! One layer of sigbench (docs/ARCHITECTURE.md): it uses the layers below and never
//! the ones above, which Cargo enforces. The modules of the layers below are re-exported
//! so a path reads the same in every crate (`crate::metric::Metric`).

#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod diag;
pub mod metric;
pub mod shell;
pub mod text;
pub mod version;
