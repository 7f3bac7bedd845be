//! sigbench: reproduce, measure and pin down Linux filesystem performance regressions from
//! syscall signatures.
//!
//! The data flows one way (docs/ARCHITECTURE.md):
//! `plan` → `testbed` → `exec` (with `probe` around the timed window) → `results` →
//! `report`. No module reaches back up that chain.

#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod bisect;
pub mod calibrate;
pub mod capability;
pub mod child;
pub mod clock;
pub mod diag;
pub mod exec;
pub mod host;
pub mod input;
pub mod interrupt;
pub mod kbuild;
pub mod loadfile;
pub mod metric;
pub mod minimize;
pub mod outputs;
pub mod plan;
pub mod probe;
pub mod record;
pub mod report;
pub mod repro;
pub mod results;
pub mod schedule;
pub mod shell;
pub mod signature;
pub mod site;
pub mod stats;
pub mod store;
#[allow(unsafe_code)]
pub mod sys;
pub mod testbed;
pub mod text;
pub mod version;
pub mod vm;
pub mod watch;
