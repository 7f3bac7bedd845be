//! Measuring: the system calls, probes, signatures and loadfiles, scratch filesystems, the
//! executor, the plan driver and its run document, kernels built and booted in guests.
//!
//! One layer of sigbench (docs/ARCHITECTURE.md): it uses the layers below and never the
//! ones above, which Cargo enforces. Nothing below is re-exported: a path names the crate
//! a thing lives in (`model::metric::Metric`, `measure::plan::Plan`), each crate a
//! dependency under its short name.

#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod build;
pub mod calibrate;
pub mod capability;
pub mod child;
pub mod exec;
pub mod host;
pub mod interrupt;
pub mod kbuild;
pub mod loadfile;
pub mod outputs;
pub mod plan;
pub mod probe;
pub mod record;
pub mod signature;
#[allow(unsafe_code)]
pub mod sys;
pub mod testbed;
pub mod vm;
