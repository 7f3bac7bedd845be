//! Measuring: the system calls, probes, signatures and loadfiles, scratch filesystems, the
//! executor, the plan driver and its run document, kernels built and booted in guests.
//!
//! One layer of sigbench (docs/ARCHITECTURE.md): it uses the layers below and never the
//! ones above, which Cargo enforces. The modules of the layers below are re-exported, so a
//! path reads the same in every crate (`crate::metric::Metric`).

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

pub use sigbench_model::{
    choice, clock, diag, input, metric, random, results, say, say_raw, shell, stamp, text, version,
};
