//! `sigbench submit [SIGNATURE] [run options] --slurm --db postgres://…`: the plan split
//! into independent slices (kernel × filesystem × directory, × repetition with
//! --split-reps), run as a Slurm job array — each task `sigbench run --slice I/S` with the
//! same options, writing to the shared store. `submit --status JOBID` shows every slice's
//! state in Slurm and in the store.

use anyhow::{Context, Result, bail};
use sigbench::report::table::{Align, Table};
use sigbench::store::{Location, Selector, Store};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

#[derive(clap::Args)]
pub struct SubmitArgs {
    /// Run the slices as a Slurm job array (sbatch)
    #[arg(long, required_unless_present = "status")]
    slurm: bool,
    /// Slurm partition
    #[arg(long, value_name = "P")]
    partition: Option<String>,
    /// Time limit of each task (Slurm's format, e.g. 30:00)
    #[arg(long, value_name = "T")]
    time: Option<String>,
    /// At most K slices at once (the array's %K)
    #[arg(long, value_name = "K")]
    max_parallel: Option<u32>,
    /// Another sbatch option for the job script, e.g. --sbatch-arg=--exclusive (repeatable)
    #[arg(long = "sbatch-arg", value_name = "ARG", allow_hyphen_values = true)]
    sbatch_args: Vec<String>,
    /// Print the job script instead of submitting it
    #[arg(long)]
    dry_run: bool,
    /// Show the slices of a submitted job: Slurm's state and what the store holds
    #[arg(long, value_name = "JOBID")]
    status: Option<String>,
    /// Where the job script and every task's output go
    #[arg(long, value_name = "DIR", default_value = "sigbench-slurm")]
    log_dir: PathBuf,
    /// Everything `run` takes: the signature, --fs (a list), --dir, -n, -r, --kernel, --db…
    #[command(flatten)]
    run: super::measure::Args,
}

/// Options of `submit` itself, left out of the tasks' `run` command line: (flag, takes a
/// value).
const OWN: &[(&str, bool)] = &[
    ("--slurm", false),
    ("--partition", true),
    ("--time", true),
    ("--max-parallel", true),
    ("--sbatch-arg", true),
    ("--dry-run", false),
    ("--status", true),
    ("--log-dir", true),
    ("--db", true),
];

/// The `run` arguments of the command line that started `submit` (everything after the
/// subcommand but `submit`'s own options and --db, which the script passes without its
/// password).
fn run_argv(argv: &[String]) -> Vec<String> {
    let start = argv
        .iter()
        .position(|a| a == "submit")
        .map_or(argv.len(), |i| i + 1);
    let mut out = Vec::new();
    let mut it = argv[start..].iter();
    while let Some(a) = it.next() {
        if a == "--" {
            out.push(a.clone());
            out.extend(it.by_ref().cloned());
            break;
        }
        let name = a.split('=').next().unwrap_or(a);
        match OWN.iter().find(|(f, _)| *f == name) {
            Some((_, true)) if !a.contains('=') => {
                it.next();
            }
            Some(_) => {}
            None => out.push(a.clone()),
        }
    }
    out
}

/// `s` as one shell word.
fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The sbatch job script.
fn script(
    args: &SubmitArgs,
    slices: usize,
    run: &[String],
    log_dir: &std::path::Path,
) -> Result<String> {
    let exe = std::env::current_exe().context("cannot find the sigbench binary")?;
    let mut s = String::from("#!/bin/bash\n");
    s.push_str(&format!(
        "#SBATCH --job-name=sigbench-{}\n",
        quote(&args.run.signature)
    ));
    let throttle = args.max_parallel.map_or(String::new(), |k| format!("%{k}"));
    s.push_str(&format!("#SBATCH --array=0-{}{throttle}\n", slices - 1));
    s.push_str(&format!(
        "#SBATCH --output={}\n",
        quote(&log_dir.join("slice-%A_%a.out").display().to_string())
    ));
    if let Some(p) = &args.partition {
        s.push_str(&format!("#SBATCH --partition={}\n", quote(p)));
    }
    if let Some(t) = &args.time {
        s.push_str(&format!("#SBATCH --time={}\n", quote(t)));
    }
    for a in &args.sbatch_args {
        if a.contains('\n') {
            bail!("--sbatch-arg {a:?}: one line, please");
        }
        s.push_str(&format!("#SBATCH {a}\n"));
    }
    s.push_str(&format!(
        "# sigbench submit: {slices} slices, one per array task; every task runs the same plan's slice\n"
    ));
    let mut cmd = vec![quote(&exe.display().to_string()), "run".into()];
    cmd.extend(run.iter().map(|a| quote(a)));
    // The store without its password: the tasks read it from PGPASSWORD (sbatch exports
    // the submitting environment) or ~/.pgpass, so it is never written to disk here.
    cmd.extend([
        "--db".into(),
        quote(&args.run.store.db.to_string()),
        "--slice".into(),
        format!("\"${{SLURM_ARRAY_TASK_ID}}/{slices}\""),
    ]);
    s.push_str(&format!("exec {}\n", cmd.join(" ")));
    Ok(s)
}

pub fn run(args: SubmitArgs) -> Result<i32> {
    if let Some(job) = &args.status {
        return status(job, &args.run.store.db);
    }
    if args.run.slice.is_some() {
        bail!("submit makes the slices itself: drop --slice");
    }
    if args.run.no_store {
        bail!("submit's tasks keep their results only in the store: drop --no-store");
    }
    {
        use super::measure::RunOption::*;
        // Every task would write the same --json or --op-log file; kernels are slices
        // of their own (one kernel per task), so there is nothing to interleave.
        super::measure::refuse(&args.run, "submit", &[Json, OpLog, Interleave])?;
    }
    if let Some(k) = args.max_parallel
        && k == 0
    {
        bail!("--max-parallel: at least 1");
    }
    let slices = super::measure::slices(&args.run)?;
    if let Location::Sqlite(p) = &args.run.store.db {
        sigbench::say!(
            "sigbench: warning: --db {} is an SQLite file: tasks on other nodes cannot write it unless it is on a filesystem they share (give --db postgres://…)",
            p.display()
        );
    }
    let mut password = None;
    if let Location::Postgres(url) = &args.run.store.db {
        sigbench::store::location::check_pg_url(url)?;
        password = sigbench::store::location::pg_config(url)?
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned());
        // The tasks must reach it: fail here, not in every task (a dry run only prints).
        if !args.dry_run {
            Store::open(&args.run.store.db)?;
        }
    }
    let argv: Vec<String> = std::env::args().collect();
    let run = run_argv(&argv);
    std::fs::create_dir_all(&args.log_dir)
        .with_context(|| format!("cannot create {}", args.log_dir.display()))?;
    let log_dir = std::fs::canonicalize(&args.log_dir)?;
    let text = script(&args, slices.len(), &run, &log_dir)?;
    if args.dry_run {
        super::out(&text)?;
        return Ok(0);
    }
    let file = log_dir.join(format!("job-{}.sbatch", sigbench::results::new_run_id()));
    std::fs::write(&file, &text).with_context(|| format!("cannot write {}", file.display()))?;
    let mut cmd = Command::new("sbatch");
    cmd.arg("--parsable").arg(&file);
    if let Some(p) = password {
        cmd.env("PGPASSWORD", p);
    }
    let out = cmd
        .output()
        .context("cannot run sbatch (is Slurm installed here?)")?;
    if !out.status.success() {
        bail!(
            "sbatch {}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let job = String::from_utf8_lossy(&out.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap_or_default()
        .to_string();
    sigbench::say!(
        "sigbench: submitted {} slices as job {job} (script {}, output {}/slice-{job}_N.out); `sigbench submit --status {job} --db {}` shows them",
        slices.len(),
        file.display(),
        log_dir.display(),
        args.run.store.db
    );
    super::out(&format!("{job}\n"))?;
    Ok(0)
}

/// Slurm's state per array task of `job` (`scontrol -o show job`; accounting may be
/// absent). Pending ranges (`ArrayTaskId=2-3%1`) are expanded. None when Slurm no longer
/// knows the job.
fn slurm_states(job: &str) -> Result<Option<BTreeMap<usize, String>>> {
    let out = Command::new("scontrol")
        .args(["-o", "show", "job", job])
        .output()
        .context("cannot run scontrol (is Slurm installed here?)")?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("Invalid job id") {
            return Ok(None);
        }
        bail!("scontrol show job {job}: {}", err.trim());
    }
    let mut m = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let field = |k: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(k))
                .map(str::to_string)
        };
        let (Some(tasks), Some(state)) = (field("ArrayTaskId="), field("JobState=")) else {
            continue;
        };
        for part in tasks.split('%').next().unwrap_or("").split(',') {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) else {
                continue;
            };
            for i in a..=b.min(a + 100_000) {
                m.insert(i, state.clone());
            }
        }
    }
    Ok(Some(m))
}

fn status(job: &str, db: &Location) -> Result<i32> {
    let job = job.trim();
    if job.is_empty() || !job.bytes().all(|b| b.is_ascii_digit()) {
        bail!("--status {job}: give the job id sbatch printed (digits)");
    }
    let slurm = slurm_states(job)?;
    let store = Store::open_read(db)?;
    let prefix = format!("{job}_");
    let mut stored: BTreeMap<usize, Vec<sigbench::results::RunDocument>> = BTreeMap::new();
    let mut count = None;
    for d in store.load(&Selector::SlurmJob(job.to_string()))? {
        let Some(task) = d
            .slurm_job
            .as_deref()
            .and_then(|j| j.strip_prefix(&prefix))
            .and_then(|t| t.parse::<usize>().ok())
        else {
            continue;
        };
        if let Some((_, n)) = d.slice.as_deref().and_then(|s| s.split_once('/')) {
            count = n.parse::<usize>().ok().or(count);
        }
        stored.entry(task).or_default().push(d);
    }
    let mut tasks: Vec<usize> = stored.keys().copied().collect();
    if let Some(s) = &slurm {
        tasks.extend(s.keys());
    }
    if let Some(n) = count {
        tasks.extend(0..n);
    }
    tasks.sort_unstable();
    tasks.dedup();
    if tasks.is_empty() {
        bail!("job {job}: neither Slurm nor {db} knows it");
    }
    let mut t = Table::new(
        format!("job {job}"),
        &[
            ("slice", Align::Right),
            ("slurm", Align::Left),
            ("store", Align::Left),
            ("cases", Align::Right),
            ("label", Align::Left),
            ("machine", Align::Left),
        ],
    );
    for i in tasks {
        let state = match &slurm {
            Some(s) => s.get(&i).cloned().unwrap_or_else(|| "-".into()),
            None => "(no longer in Slurm)".into(),
        };
        let docs = stored.get(&i).map(Vec::as_slice).unwrap_or_default();
        let (st, cases, label, machine) = match docs.last() {
            Some(d) => (
                d.status.clone(),
                docs.iter()
                    .map(|d| d.cases.len())
                    .sum::<usize>()
                    .to_string(),
                d.label.clone(),
                d.host.hostname.clone(),
            ),
            None => ("nothing stored".into(), "0".into(), "-".into(), "-".into()),
        };
        t.push(vec![i.to_string(), state, st, cases, label, machine]);
    }
    super::out(&t.text())?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tasks_get_the_run_options_and_not_submits_own() {
        let argv: Vec<String> = [
            "sigbench",
            "submit",
            "churn",
            "--slurm",
            "--fs",
            "btrfs,ext4",
            "--time=10:00",
            "--partition",
            "p",
            "--sbatch-arg",
            "--exclusive",
            "--db",
            "postgres://x/y",
            "-n",
            "250",
            "--dry-run",
            "--max-parallel",
            "2",
            "--dir",
            "a",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            run_argv(&argv),
            ["churn", "--fs", "btrfs,ext4", "-n", "250", "--dir", "a"]
        );
    }

    #[test]
    fn quotes_for_the_shell() {
        assert_eq!(quote("btrfs,ext4"), "btrfs,ext4");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
    }
}
