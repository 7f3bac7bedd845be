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
//! has no steps to write out: `dbench_for` names the program that replays it already.

mod c;

use anyhow::{Result, bail};
use measure::plan::DEFAULT_SEED;
use measure::signature::Signature;
use measure::testbed::{DirSpec, Fs};
use model::results::RunDocument;

/// A reproducer: a signature and the cases it runs.
pub struct Repro {
    pub signature: Signature,
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
    /// A run for a time (`run --time`): the time and the warm-up before it. None: a fixed
    /// amount of work.
    pub time: Option<(std::time::Duration, std::time::Duration)>,
    /// How it was written, for the file's header: `as: sigbench repro …` or `from run …`.
    pub command: String,
}

impl Repro {
    /// A reproducer of `signature` with `run`'s defaults: its N, one repetition, the
    /// default seed.
    pub fn new(signature: Signature, fs: Fs, dirs: Vec<DirSpec>) -> Result<Repro> {
        if signature.is_loadfile() {
            bail!(
                "{} replays a dbench loadfile: dbench itself is its reproducer (see `sigbench repro {}`)",
                signature.name,
                model::shell::quote(&signature.name)
            );
        }
        if dirs.is_empty() {
            bail!("a reproducer needs at least one test directory");
        }
        let time = signature.default_time.map(|t| {
            let t = std::time::Duration::from_secs_f64(t);
            (t, t / 5)
        });
        Ok(Repro {
            ns: vec![signature.default_n],
            time,
            clients: signature.default_clients,
            signature,
            fs,
            dirs,
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

/// What reproduces a run: the C program, or for a loadfile signature the dbench command.
pub enum Reproducer {
    C(Box<Repro>),
    Dbench(model::shell::CommandLine),
}

impl Reproducer {
    /// The reproducer of the plan `doc` ran (its signature, filesystem, directories, N,
    /// clients — the largest K of a sweep —, repetitions and seed), from the document
    /// alone.
    pub fn of_run(doc: &RunDocument) -> Result<Reproducer> {
        let sig = Signature::parse(&doc.signature.source, &doc.signature.origin)?;
        let k = doc
            .plan
            .clients
            .as_ref()
            .and_then(|k| k.iter().max().copied());
        let seconds = doc.plan.time.map(|t| t.time_ns as f64 / 1e9);
        // The loadfile the run replayed (`--loadfile`), not the signature's own.
        let replayed = measure::plan::spec::kept_spec(doc).and_then(|s| s.loadfile);
        if let Some(cmd) = dbench_for(&sig, k, seconds, replayed.as_deref()) {
            return Ok(Reproducer::Dbench(cmd));
        }
        let fs = Fs::parse(&doc.testbed.fs)?;
        let dirs = doc
            .plan
            .dirs
            .iter()
            .map(|d| DirSpec::parse(d, fs))
            .collect::<Result<Vec<_>>>()?;
        let mut r = Repro::new(sig, fs, dirs)?;
        r.ns = doc.plan.n.clone();
        r.clients = k;
        r.repetitions = doc.plan.repetitions.max(1);
        r.seed = doc.plan.seed;
        r.time = doc.plan.time.map(|t| {
            (
                std::time::Duration::from_nanos(t.time_ns),
                std::time::Duration::from_nanos(t.warmup_ns),
            )
        });
        r.command = format!("from run {} (label {})", doc.id, doc.label);
        Ok(Reproducer::C(Box::new(r)))
    }

    /// The file to hand over (`repro.c`), if the reproducer is one.
    pub fn file(&self) -> Option<String> {
        match self {
            Reproducer::C(r) => Some(r.c_source()),
            Reproducer::Dbench(_) => None,
        }
    }

    /// How to run it, in a line or two.
    pub fn how(&self, file: &str) -> String {
        match self {
            Reproducer::C(_) => format!(
                "cc -O2 -pthread -o repro {file} && ./repro MOUNTED_DIR (an empty directory on the filesystem under test)"
            ),
            Reproducer::Dbench(cmd) => format!("{cmd} (dbench replays this loadfile itself)"),
        }
    }

    /// `of_run`, or none after saying on stderr why (`who` says for what): what hands a
    /// change over (a mail, a report) is still written, without its reproducer.
    pub fn of_run_or_say(doc: &RunDocument, who: &str) -> Option<Reproducer> {
        Reproducer::of_run(doc)
            .map_err(|e| model::say!("sigbench: {who}: no reproducer: {e:#}"))
            .ok()
    }
}

/// The dbench command that replays a loadfile signature (none for another signature):
/// `loadfile` — else the signature's own — with `clients` — else the signature's
/// `clients`, else one — for `seconds` — else its `time`, else 10 s —, in `MOUNTED_DIR`,
/// the directory the user puts in.
pub fn dbench_for(
    sig: &Signature,
    clients: Option<u32>,
    seconds: Option<f64>,
    loadfile: Option<&std::path::Path>,
) -> Option<model::shell::CommandLine> {
    let l = sig.loadfile.as_ref()?;
    let file = loadfile.map_or_else(|| l.dbench.clone(), |p| p.display().to_string());
    let clients = clients.or(sig.default_clients).unwrap_or(1);
    let seconds = seconds.or(sig.default_time).unwrap_or(10.0);
    Some(model::shell::CommandLine::new([
        "dbench".to_string(),
        "-c".into(),
        file,
        "-D".into(),
        "MOUNTED_DIR".into(),
        "-t".into(),
        (seconds.ceil() as u64).to_string(),
        clients.to_string(),
    ]))
}
