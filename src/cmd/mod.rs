//! Subcommands: each parses its arguments and calls the library.

pub mod compare;
pub mod doctor;
pub mod export;
pub mod list;
pub mod options;
pub mod record;
pub mod report;
pub mod run;
pub mod runs;
pub mod show;
pub mod validate;
