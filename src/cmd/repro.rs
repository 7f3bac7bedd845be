//! `sigbench repro SIGNATURE -o repro.c`: the signature as one C file a maintainer
//! compiles and runs without sigbench (`present::repro`).

use anyhow::{Result, bail};
use measure::plan::DEFAULT_SEED;
use measure::signature::Signature;
use measure::testbed::Fs;
use present::repro::{Repro, dbench_for};

#[derive(clap::Args)]
pub struct Args {
    /// Built-in signature name or a signature file
    signature: String,
    /// Number of files N; a comma-separated list runs each
    #[arg(
        short = 'n',
        long = "files",
        value_delimiter = ',',
        value_name = "N[,N...]"
    )]
    ns: Vec<u64>,
    /// K clients, each a thread in a directory of its own, released together
    #[arg(long, value_name = "K")]
    clients: Option<u32>,
    /// A run for a time: the clients loop over their work for SECONDS after a warm-up of a
    /// fifth of it, and the program prints calls per second (as `run --time`)
    #[arg(long, value_name = "SECONDS")]
    time: Option<f64>,
    /// Repeat every case R times and print the median
    #[arg(
        short = 'r',
        long = "repetitions",
        default_value_t = 1,
        value_name = "R"
    )]
    repetitions: u32,
    /// The filesystem the directories' properties are checked for
    #[arg(long, value_parser = super::options::choice::<Fs>(), default_value = "btrfs")]
    fs: Fs,
    /// Test directory NAME[:key=value,...], as `run --dir`; repeatable
    #[arg(long = "dir", value_name = "NAME[:PROPS]")]
    dirs: Vec<String>,
    /// Seed for per-file {token} names, as `run --seed`
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
    /// Write the C file here (default: stdout)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<std::path::PathBuf>,
}

pub fn run(mut args: Args) -> Result<i32> {
    // `-o -` is stdout, as everywhere.
    if args.output.as_deref() == Some(std::path::Path::new("-")) {
        args.output = None;
    }
    // -o is never the signature it reads (nor a directory, nor a link's target).
    if let Some(path) = &args.output {
        let mut o = measure::outputs::Outputs::new(None).output("-o", path);
        if std::path::Path::new(&args.signature).is_file() {
            o = o.input("the signature", &args.signature);
        }
        o.check()?;
    }
    let sig = Signature::load(&args.signature)?;
    if sig.is_loadfile() {
        // What a C file would take has no meaning for dbench: refused, not ignored.
        let given: Vec<&str> = [
            ("-o", args.output.is_some()),
            ("-n", !args.ns.is_empty()),
            ("-r", args.repetitions != 1),
            ("--dir", !args.dirs.is_empty()),
            ("--seed", args.seed != DEFAULT_SEED),
        ]
        .iter()
        .filter(|(_, g)| *g)
        .map(|(f, _)| *f)
        .collect();
        if !given.is_empty() {
            bail!(
                "{} replays a dbench loadfile: its reproducer is the dbench command, not a C file ({} do not apply; --clients does)",
                sig.name,
                given.join(", ")
            );
        }
    }
    if let Some(cmd) = dbench_for(&sig, args.clients, args.time, None) {
        model::say!(
            "sigbench: {} replays a dbench loadfile, so dbench itself reproduces it (no C file written); on an empty directory of the filesystem under test:",
            sig.name
        );
        super::out(&format!("{cmd}\n"))?;
        return Ok(0);
    }
    if args.repetitions == 0 {
        bail!("-r must be at least 1");
    }
    measure::signature::limits::check(
        "-r",
        args.repetitions as u64,
        measure::signature::limits::MAX_REPETITIONS as u64,
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(k) = args.clients {
        measure::signature::limits::check(
            "--clients",
            k as u64,
            measure::signature::limits::MAX_CLIENTS as u64,
        )
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        if k == 0 {
            bail!("--clients must be at least 1");
        }
    }
    for &n in &args.ns {
        if n == 0 {
            bail!("-n must be at least 1");
        }
        measure::signature::limits::check("-n", n, measure::signature::limits::MAX_N)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let dirs = measure::plan::spec::directories(&args.dirs, &sig, args.fs)?;
    let mut repro = Repro::new(sig, args.fs, dirs)?;
    if !args.ns.is_empty() {
        // As `run`: -n is a fixed amount of work, the signature's `time` is not taken.
        repro.ns = args.ns.clone();
        repro.time = None;
    }
    if let Some(t) = args.time {
        if !(t > 0.0 && t <= measure::signature::limits::MAX_TIME_S) {
            bail!(
                "--time {t}: give a number of seconds above 0 and at most {}",
                measure::signature::limits::MAX_TIME_S
            );
        }
        let t = std::time::Duration::from_secs_f64(t);
        repro.time = Some((t, t / 5));
    }
    repro.clients = args.clients.or(repro.clients);
    repro.repetitions = args.repetitions;
    repro.seed = args.seed;
    let words: Vec<String> = std::iter::once("sigbench".to_string())
        .chain(std::env::args().skip(1))
        .collect();
    repro.command = format!("as: {}", model::shell::command(&words));
    let text = repro.c_source();
    match &args.output {
        Some(path) => {
            measure::outputs::write_file(path, text.as_bytes())?;
            model::say!(
                "sigbench: wrote {}; build it with `cc -O2 -pthread -o repro {}`, run it as `./repro MOUNTED_DIR`",
                path.display(),
                model::shell::quote(&path.display().to_string())
            );
        }
        None => super::out(&text)?,
    }
    Ok(0)
}
