//! `sigbench repro`: a signature as one C file a maintainer compiles and runs without
//! sigbench — syzbot's kind of reproducer, for a filesystem's timing.
//!
//! The program does what `run` does with the same signature, N and clients, on a mounted
//! directory it is given instead of a filesystem it makes: the test directories with their
//! properties, the untimed setup (sub-directories, N files populated, sync, the directory's
//! fsync, the prelude), then every phase's steps over the selected files — each step the
//! system call the signature names, issued with `syscall(2)` so that no C library wrapper
//! picks another, with the same paths, flags, modes, sizes and order — timed with
//! CLOCK_MONOTONIC, K clients as K threads released together at every phase. It prints
//! s3e's line per case and the median over the repetitions, and removes what it made.
//!
//! `c.rs` writes the C; this file is what the command line chose. A loadfile signature
//! has no steps to write out: `dbench_command` is the program that replays it already.

mod c;

use crate::plan::DEFAULT_SEED;
use crate::signature::Signature;
use crate::testbed::{DirSpec, Fs};
use anyhow::{Result, bail};

/// A reproducer: a signature and the cases it runs.
pub struct Repro<'a> {
    pub signature: &'a Signature,
    /// The filesystem the directories' properties were checked for.
    pub fs: Fs,
    pub dirs: Vec<DirSpec>,
    /// The numbers of files, in the order the cases run.
    pub ns: Vec<u64>,
    /// K clients (each in `client<i>`, as `run --clients K`), or one in the directory.
    pub clients: Option<u32>,
    pub repetitions: u32,
    /// The seed `{token}` names are made from (`run --seed`).
    pub seed: u64,
    /// The command line that wrote it, quoted, for the file's header.
    pub command: String,
}

impl<'a> Repro<'a> {
    /// A reproducer of `signature` with `run`'s defaults: its N, one repetition, the
    /// default seed.
    pub fn new(signature: &'a Signature, fs: Fs, dirs: Vec<DirSpec>) -> Result<Repro<'a>> {
        if signature.is_loadfile() {
            bail!(
                "{} replays a dbench loadfile: dbench itself is its reproducer (see `sigbench repro {}`)",
                signature.name,
                signature.name
            );
        }
        if dirs.is_empty() {
            bail!("a reproducer needs at least one test directory");
        }
        Ok(Repro {
            ns: vec![signature.default_n],
            signature,
            fs,
            dirs,
            clients: None,
            repetitions: 1,
            seed: DEFAULT_SEED,
            command: String::new(),
        })
    }

    /// The C program.
    pub fn c_source(&self) -> String {
        c::program(self)
    }
}

/// The dbench command that replays `loadfile` as a loadfile signature does: `K` clients
/// for `seconds` in `dir`.
pub fn dbench_command(loadfile: &str, clients: u32, seconds: f64, dir: &str) -> String {
    use crate::shell::quote;
    format!(
        "dbench -c {} -D {} -t {} {clients}",
        quote(loadfile),
        quote(dir),
        seconds.ceil() as u64
    )
}
