//! The model every layer shares: what a metric is (`metric::Metric`), text laid out and
//! escaped for shells and terminals, queued diagnostics (`say!`), package versions.
//!
//! The bottom layer of sigbench (docs/ARCHITECTURE.md): no I/O but stderr, and no other
//! sigbench crate but the cost model's pure parts.

#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod diag;
pub mod metric;
pub mod shell;
pub mod text;
pub mod version;
