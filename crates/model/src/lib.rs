//! The model every layer shares: the run document and the records it is made of
//! (`results`), what a metric is (`metric::Metric`), what a run's times count (`clock`),
//! the named values a command line chooses from (`choice`), text laid out and escaped for
//! shells and terminals, queued diagnostics (`say!`),
//! package versions, the one seeded mixer (`random`), times as documents write them
//! (`stamp`), an input file read whole within its limit (`input`).
//!
//! The bottom layer of sigbench (docs/ARCHITECTURE.md): no I/O but stderr, the clock and
//! reading one input file, and no other sigbench crate but the cost model's pure parts.

#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod choice;
pub mod clock;
pub mod diag;
pub mod input;
pub mod metric;
pub mod random;
pub mod results;
pub mod shell;
pub mod stamp;
pub mod text;
pub mod version;
