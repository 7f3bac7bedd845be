//! Subcommands: each parses its arguments and calls the library.

pub mod bisect;
pub mod calibrate;
pub mod compare;
pub mod console;
pub mod doctor;
pub mod export;
pub mod judge;
pub mod list;
pub mod measure;
pub mod minimize;
pub mod options;
pub mod record;
pub mod report;
pub mod repro;
pub mod run;
pub mod runs;
pub mod show;
pub mod site;
pub mod slurm;
pub mod submit;
pub mod triage;
pub mod validate;
pub mod watch;

/// Write what the user asked for to stdout. A failed write (a full disk behind `>`, a
/// closed pipe) is an error: the command must not report success for output nobody got.
pub fn out(text: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes())
        .and_then(|()| o.flush())
        .context("cannot write to stdout")
}

/// `println!` into a String (for `out`).
macro_rules! outln {
    ($buf:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($buf, $($arg)*);
    }};
}
pub(crate) use outln;
