//! Subcommands: each parses its arguments and calls the library.

pub mod doctor;
pub mod list;
pub mod record;
pub mod run;
pub mod show;
pub mod validate;
