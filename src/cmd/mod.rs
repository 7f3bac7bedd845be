//! Subcommands: each parses its arguments and calls the library.

pub mod doctor;
pub mod list;
pub mod run;
pub mod show;
