//! `sigbench record`: a signature from a strace log, or from running a command under strace.

use anyhow::{Context, Result, bail};
use measure::record::{self, Options, TraceFile};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  strace -f -tt -T -y -o rpm.trace rpm -U foo.rpm && sigbench record rpm.trace -o rpm.toml\n  sigbench record -o dpkg.toml -- dpkg -i foo.deb"
)]
pub struct Args {
    /// An `strace -f` log (with or without -tt, -T, -y)
    trace: Option<PathBuf>,
    /// Where to write the signature (default: stdout, summary on stderr)
    #[arg(short, long, value_name = "SIG.toml")]
    output: Option<PathBuf>,
    /// Record the calls under this directory (default: the one where most files changed)
    #[arg(long, value_name = "PATH")]
    under: Option<PathBuf>,
    /// Keep stat/access/read probes on the files instead of dropping them
    #[arg(long)]
    keep_probes: bool,
    /// Skip (and count) lines the parser does not understand instead of failing
    #[arg(long)]
    lenient: bool,
    /// Signature name (default: from the output file or the command)
    #[arg(long)]
    name: Option<String>,
    /// The traced program's initial working directory (for relative paths in traces taken
    /// without -y; default: the current directory when sigbench runs the command)
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Also write the trace lines that became steps: line, file, phase, syscall (TSV)
    #[arg(long, value_name = "FILE")]
    kept: Option<PathBuf>,
    /// Keep the strace log of `-- CMD` here
    #[arg(long, value_name = "FILE")]
    save_trace: Option<PathBuf>,
    /// Run CMD under `strace -f -tt -T -y` and record it
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

fn word(s: &str) -> String {
    let w: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let w = w.trim_matches('-').to_string();
    if w.is_empty() { "recorded".into() } else { w }
}

/// The private directory of a trace made by `-- CMD` and not asked to be kept: removed
/// when recording ends.
struct Temporary(Option<PathBuf>);

impl Drop for Temporary {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

pub fn run(args: Args) -> Result<i32> {
    // No output may be the trace it reads, or another output.
    let mut o = measure::outputs::Outputs::new(None);
    if let Some(t) = &args.trace {
        o = o.input("the trace", t);
    }
    for (flag, p) in [
        ("-o", &args.output),
        ("--kept", &args.kept),
        ("--save-trace", &args.save_trace),
    ] {
        if let Some(p) = p {
            o = o.output(flag, p);
        }
    }
    o.check()?;
    let mut temporary = Temporary(None);
    let (path, source, cwd) = match (&args.trace, args.command.is_empty()) {
        (Some(_), false) => bail!("give either a trace file or `-- CMD`, not both"),
        (None, true) => bail!("give a trace file, or `-- CMD ARGS…` to run one under strace"),
        (Some(t), true) => {
            std::fs::File::open(t).with_context(|| format!("cannot read trace {}", t.display()))?;
            (t.clone(), t.display().to_string(), args.cwd.clone())
        }
        (None, false) => {
            let strace = measure::testbed::require_tool("strace", "strace")?;
            let out = match &args.save_trace {
                Some(p) => p.clone(),
                None => {
                    // strace opens its log by name: in a directory of our own, never at a
                    // name in /tmp someone could have planted a link at.
                    let dir = measure::outputs::private_temp_dir("sigbench-record")?;
                    temporary.0 = Some(dir.clone());
                    dir.join("trace")
                }
            };
            measure::interrupt::install()?;
            let status = measure::child::status(
                Command::new(strace)
                    .args(["-f", "-tt", "-T", "-y", "-qq", "-o"])
                    .arg(&out)
                    .arg("--")
                    .args(&args.command),
                "strace",
            )?;
            if !status.success() {
                model::say!(
                    "sigbench: warning: `{}` exited with {status}; recording what it did",
                    args.command.join(" ")
                );
            }
            let cwd = args.cwd.clone().or_else(|| std::env::current_dir().ok());
            (out, format!("`{}`", args.command.join(" ")), cwd)
        }
    };
    let mut trace = TraceFile {
        path,
        source: source.clone(),
        lenient: args.lenient,
        skipped: 0,
    };
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| match (&args.output, args.command.first()) {
            (Some(o), _) => word(&o.file_stem().unwrap_or_default().to_string_lossy()),
            (None, Some(c)) => word(
                Path::new(c)
                    .file_name()
                    .map(|f| f.to_string_lossy())
                    .unwrap_or_default()
                    .as_ref(),
            ),
            _ => "recorded".into(),
        });
    let rec = record::record_trace(
        &mut trace,
        &Options {
            under: args.under.clone(),
            keep_probes: args.keep_probes,
            cwd,
            name,
            source: source.clone(),
        },
    )?;
    drop(temporary);
    let skipped = trace.skipped;
    let mut summary = rec.summary();
    if skipped > 0 {
        summary.push_str(&format!(
            "skipped {skipped} trace lines the parser did not understand (--lenient)\n"
        ));
    }
    if let Some(k) = &args.kept {
        let mut tsv = String::from("line\tfile\tphase\tsyscall\n");
        for c in &rec.kept_calls {
            tsv.push_str(&format!(
                "{}\t{}\t{}\t{}\n",
                c.line, c.file, c.phase, c.syscall
            ));
        }
        measure::outputs::write_file(k, tsv.as_bytes())?;
    }
    match &args.output {
        Some(o) => {
            measure::outputs::write_file(o, rec.toml.as_bytes())?;
            super::out(&format!("{summary}wrote {}\n", o.display()))?;
        }
        None => {
            super::out(&rec.toml)?;
            model::say_raw!("{summary}");
        }
    }
    Ok(0)
}
