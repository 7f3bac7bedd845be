//! `sigbench repro SIGNATURE -o repro.c`: the signature as one C file a maintainer
//! compiles and runs without sigbench (`sigbench::repro`).

use anyhow::{Result, bail};
use sigbench::plan::DEFAULT_SEED;
use sigbench::repro::{Repro, dbench_for};
use sigbench::signature::Signature;
use sigbench::testbed::Fs;

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
    /// Repeat every case R times and print the median
    #[arg(
        short = 'r',
        long = "repetitions",
        default_value_t = 1,
        value_name = "R"
    )]
    repetitions: u32,
    /// The filesystem the directories' properties are checked for
    #[arg(long, value_enum, default_value = "btrfs")]
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

pub fn run(args: Args) -> Result<i32> {
    // -o is never the signature it reads (nor a directory, nor a link's target).
    if let Some(path) = &args.output {
        let mut o = sigbench::outputs::Outputs::new(None).output("-o", path);
        if std::path::Path::new(&args.signature).is_file() {
            o = o.input("the signature", &args.signature);
        }
        o.check()?;
    }
    let sig = Signature::load(&args.signature)?;
    if let Some(cmd) = dbench_for(&sig, args.clients, None) {
        sigbench::say!(
            "sigbench: {} replays a dbench loadfile, so dbench itself reproduces it (no C file written); on an empty directory of the filesystem under test:",
            sig.name
        );
        super::out(&format!("{cmd}\n"))?;
        return Ok(0);
    }
    if args.repetitions == 0 {
        bail!("-r must be at least 1");
    }
    if let Some(k) = args.clients {
        sigbench::signature::limits::check(
            "--clients",
            k as u64,
            sigbench::signature::limits::MAX_CLIENTS as u64,
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
        sigbench::signature::limits::check("-n", n, sigbench::signature::limits::MAX_N)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let dirs = sigbench::plan::spec::directories(&args.dirs, &sig, args.fs)?;
    let mut repro = Repro::new(sig, args.fs, dirs)?;
    if !args.ns.is_empty() {
        repro.ns = args.ns.clone();
    }
    repro.clients = args.clients;
    repro.repetitions = args.repetitions;
    repro.seed = args.seed;
    let words: Vec<String> = std::iter::once("sigbench".to_string())
        .chain(std::env::args().skip(1))
        .collect();
    repro.command = format!("as: {}", sigbench::shell::command(&words));
    let text = repro.c_source();
    match &args.output {
        Some(path) => {
            sigbench::outputs::write_file(path, text.as_bytes())?;
            sigbench::say!(
                "sigbench: wrote {}; build it with `cc -O2 -pthread -o repro {}`, run it as `./repro MOUNTED_DIR`",
                path.display(),
                sigbench::shell::quote(&path.display().to_string())
            );
        }
        None => super::out(&text)?,
    }
    Ok(0)
}
