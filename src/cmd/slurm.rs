//! Slurm for the commands that measure: `submit` (a plan's slices as a job array) and
//! `bisect --slurm` (each round's kernels as a job array, read back from the shared store).
//! The sbatch options they share, the job script's header, submitting it, waiting for it,
//! and the command a task runs: `sigbench task`, its `run` options as JSON.

use analyse::store::{Location, Selector, Store};
use anyhow::{Context, Result, bail};
use model::results::RunDocument;
use search::request::RunRequest;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How tasks go to Slurm.
#[derive(clap::Args, Clone, Debug)]
pub struct SlurmArgs {
    /// Run on Slurm: as a job array (submit: the slices; bisect: each round's kernels,
    /// read back from the shared --db)
    #[arg(long)]
    pub slurm: bool,
    /// Slurm partition
    #[arg(long, value_name = "P", requires = "slurm")]
    pub partition: Option<String>,
    /// Time limit of each task (Slurm's format, e.g. 30:00; sbatch's --time)
    #[arg(long, value_name = "T", requires = "slurm")]
    pub time_limit: Option<String>,
    /// At most K tasks at once (the array's %K)
    #[arg(long, value_name = "K", requires = "slurm")]
    pub max_parallel: Option<u32>,
    /// Another sbatch option for the job script, e.g. --sbatch-arg=--exclusive (repeatable)
    #[arg(
        long = "sbatch-arg",
        value_name = "ARG",
        allow_hyphen_values = true,
        requires = "slurm"
    )]
    pub sbatch_args: Vec<String>,
    /// Where the job scripts and every task's output go
    #[arg(long, value_name = "DIR", default_value = "sigbench-slurm")]
    pub log_dir: PathBuf,
}

/// The end of a task's here-document (its run options, one line of JSON, come before it).
const TASK_END: &str = "SIGBENCH_TASK";

/// The job script's command for one task: `sigbench task` (with `--slice SLICE`, shell
/// text), its run request as data — one line of JSON in a quoted here-document, so
/// nothing in it is expanded and nothing can add a line to the script. The store travels
/// without its password (the task finds it in PGPASSWORD, which sbatch exports, or
/// ~/.pgpass), so it is never written to disk.
pub fn task_command(run: &RunRequest, slice: Option<&str>) -> Result<String> {
    let exe = std::env::current_exe().context("cannot find the sigbench binary")?;
    let mut cmd = vec![quote(&exe.display().to_string()), "task".into()];
    if let Some(s) = slice {
        cmd.extend(["--slice".into(), s.into()]);
    }
    let json = serde_json::to_string(run)?;
    Ok(format!(
        "exec {} <<'{TASK_END}'\n{json}\n{TASK_END}\n",
        cmd.join(" ")
    ))
}

pub use model::shell::quote;

impl SlurmArgs {
    /// The job script's header: `tasks` array tasks named `name`, output under `log_dir`.
    pub fn header(&self, name: &str, tasks: usize, log_dir: &Path) -> Result<String> {
        let mut s = String::from("#!/bin/bash\n");
        s.push_str(&format!("#SBATCH --job-name=sigbench-{}\n", quote(name)));
        let throttle = self.max_parallel.map_or(String::new(), |k| format!("%{k}"));
        s.push_str(&format!("#SBATCH --array=0-{}{throttle}\n", tasks - 1));
        s.push_str(&format!(
            "#SBATCH --output={}\n",
            quote(&log_dir.join("slice-%A_%a.out").display().to_string())
        ));
        if let Some(p) = &self.partition {
            s.push_str(&format!("#SBATCH --partition={}\n", quote(p)));
        }
        if let Some(t) = &self.time_limit {
            s.push_str(&format!("#SBATCH --time={}\n", quote(t)));
        }
        for a in &self.sbatch_args {
            // `prepare` refused control characters.
            s.push_str(&format!("#SBATCH {a}\n"));
        }
        Ok(s)
    }

    /// Check what a job needs before anything is submitted: --max-parallel ≥ 1, options
    /// that fit on one `#SBATCH` line, a store the tasks can reach (said when it is an
    /// SQLite file), the log directory (created unless `dry_run`: a dry run changes
    /// nothing). Returns the store's password (handed to sbatch in the environment, never
    /// written) and the log directory, absolute.
    pub fn prepare(
        &self,
        db: &Location,
        reach: bool,
        dry_run: bool,
    ) -> Result<(Option<String>, PathBuf)> {
        if self.max_parallel == Some(0) {
            bail!("--max-parallel: at least 1");
        }
        let log_dir = self.log_dir.display().to_string();
        let lines = [
            ("--partition", self.partition.as_deref()),
            ("--time-limit", self.time_limit.as_deref()),
            ("--log-dir", Some(log_dir.as_str())),
        ]
        .into_iter()
        .chain(
            self.sbatch_args
                .iter()
                .map(|a| ("--sbatch-arg", Some(a.as_str()))),
        );
        for (flag, v) in lines {
            if let Some(v) = v
                && v.chars().any(char::is_control)
            {
                bail!(
                    "{flag} {}: a control character (a newline would add a line to the job script): give it on one line",
                    present::report::table::escape_control(v)
                );
            }
        }
        let mut password = None;
        match db {
            Location::Sqlite(p) => model::say!(
                "sigbench: warning: --db {} is an SQLite file: tasks on other nodes cannot write it unless it is on a filesystem they share (give --db postgres://…)",
                p.display()
            ),
            Location::Postgres(url) => {
                analyse::store::location::check_pg_url(url)?;
                password = analyse::store::location::pg_config(url)?
                    .get_password()
                    .map(|p| String::from_utf8_lossy(p).into_owned());
                // The tasks must reach it: fail here, not in every task.
                if reach {
                    Store::open(db)?;
                }
            }
        }
        if dry_run {
            return Ok((password, std::path::absolute(&self.log_dir)?));
        }
        std::fs::create_dir_all(&self.log_dir)
            .with_context(|| format!("cannot create {}", self.log_dir.display()))?;
        let log_dir = std::fs::canonicalize(&self.log_dir)?;
        Ok((password, log_dir))
    }
}

/// Write the job script `text` into `log_dir` and submit it; the job's id.
pub fn submit(text: &str, log_dir: &Path, password: Option<&str>) -> Result<(String, PathBuf)> {
    // Absolute: sbatch would read a relative `-x/job-….sbatch` as an option.
    let file =
        std::path::absolute(log_dir.join(format!("job-{}.sbatch", measure::host::new_run_id())))?;
    measure::outputs::write_file(&file, text.as_bytes())?;
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
    if job.is_empty() || !job.bytes().all(|b| b.is_ascii_digit()) {
        bail!("sbatch {}: no job id in its answer", file.display());
    }
    Ok((job, file))
}

/// Slurm's state per array task of `job` (`scontrol -o show job`; accounting may be
/// absent). Pending ranges (`ArrayTaskId=2-3%1`) are expanded. None when Slurm no longer
/// knows the job.
pub fn states(job: &str) -> Result<Option<BTreeMap<usize, String>>> {
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

/// Whether a task in Slurm state `s` may still run (or is finishing).
fn active(s: &str) -> bool {
    matches!(
        s,
        "PENDING"
            | "RUNNING"
            | "CONFIGURING"
            | "COMPLETING"
            | "REQUEUED"
            | "RESIZING"
            | "SUSPENDED"
    )
}

/// Wait until no task of `job` is pending or running. An interrupt cancels the job.
pub fn wait(job: &str) -> Result<()> {
    loop {
        if let Err(e) = measure::interrupt::check() {
            let _ = Command::new("scancel").arg(job).status();
            model::say!("sigbench: cancelled Slurm job {job}");
            return Err(e.into());
        }
        match states(job)? {
            Some(s) if s.values().any(|v| active(v)) => {}
            _ => return Ok(()),
        }
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
}

/// A kernel argument as a task gets it: a file by its absolute path (the task may start
/// in another directory, on another node), anything else as it is.
pub fn task_kernel(arg: &str) -> String {
    match std::fs::canonicalize(arg) {
        Ok(p) => p.display().to_string(),
        Err(_) => arg.to_string(),
    }
}

use search::bisect::steps::Remote;
/// One task of a round: `sigbench run` on one kernel (as `--kernel` takes it), for so
/// many repetitions.
pub use search::bisect::steps::RemoteTask as Task;

/// Run `tasks` as one Slurm job array — task i the request `run` on kernel K_i for R_i
/// repetitions (a guest at a time, no JSON file of its own) — wait for it, and read back
/// what each task stored (by the job's id, so nothing stored before is mixed in). Per
/// task its runs (none: see its output file).
pub fn run_round(
    slurm: &SlurmArgs,
    name: &str,
    run: &RunRequest,
    tasks: &[Task],
) -> Result<Vec<Vec<RunDocument>>> {
    if tasks.is_empty() {
        return Ok(Vec::new());
    }
    let db = &run.store;
    let (password, log_dir) = slurm.prepare(db, false, false)?;
    let mut s = slurm.header(name, tasks.len(), &log_dir)?;
    s.push_str(&format!(
        "# sigbench: {} kernel(s), one per array task\ncase \"$SLURM_ARRAY_TASK_ID\" in\n",
        tasks.len()
    ));
    for (i, t) in tasks.iter().enumerate() {
        let mut task = run.clone();
        task.kernels = vec![t.kernel.clone()];
        task.spec.repetitions = t.repetitions;
        task.json = None;
        task.vm.jobs = None;
        s.push_str(&format!("{i})\n{};;\n", task_command(&task, None)?));
    }
    s.push_str("esac\nexit 2\n");
    let (job, file) = submit(&s, &log_dir, password.as_deref())?;
    model::say!(
        "sigbench: {} kernel(s) as Slurm job {job} (script {}, output {}/slice-{job}_N.out)",
        tasks.len(),
        file.display(),
        log_dir.display()
    );
    wait(&job)?;
    let store = Store::open_read(db)?;
    let prefix = format!("{job}_");
    let mut out = vec![Vec::new(); tasks.len()];
    for d in store.load(&Selector::SlurmJob(job.clone()))? {
        let task = d
            .slurm_job
            .as_deref()
            .and_then(|j| j.strip_prefix(&prefix))
            .and_then(|t| t.parse::<usize>().ok());
        if let Some(t) = task.filter(|&t| t < tasks.len()) {
            out[t].push(d);
        }
    }
    for (i, runs) in out.iter().enumerate() {
        if runs.is_empty() {
            model::say!(
                "sigbench: Slurm task {job}_{i} ({}) stored nothing: see {}/slice-{job}_{i}.out",
                tasks[i].kernel,
                log_dir.display()
            );
        }
    }
    Ok(out)
}

/// `--slurm` on a command that measures kernels (`bisect`, `watch`), when asked: a round's
/// kernels go to Slurm as one job array, each task the command's run request `run` on
/// its kernel, storing its run in their store.
pub fn remote<'a>(args: &'a SlurmArgs, run: &RunRequest) -> Option<Box<dyn Remote + 'a>> {
    args.slurm.then(|| -> Box<dyn Remote + 'a> {
        Box::new(OnSlurm {
            args,
            run: run.clone(),
        })
    })
}

/// The [`Remote`] of `--slurm`.
struct OnSlurm<'a> {
    args: &'a SlurmArgs,
    /// The request every task gets (its kernel and repetitions its own).
    run: RunRequest,
}

impl Remote for OnSlurm<'_> {
    fn round(&self, signature: &str, tasks: &[Task]) -> Result<Vec<Vec<RunDocument>>> {
        let tasks: Vec<Task> = tasks
            .iter()
            .map(|t| Task {
                kernel: task_kernel(&t.kernel),
                repetitions: t.repetitions,
            })
            .collect();
        run_round(self.args, signature, &self.run, &tasks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task's options travel whole, on one line of the script whatever they hold, and
    /// without the store's password.
    #[test]
    fn a_task_gets_the_run_request_as_one_line_of_json() {
        use clap::Parser;
        #[derive(Parser)]
        struct Run {
            #[command(flatten)]
            args: super::super::measure::Args,
        }
        let run = Run::try_parse_from([
            "run",
            "churn",
            "--fs",
            "btrfs,ext4",
            "--dir",
            "a\n#SBATCH --uid=0",
            "--label",
            "l'$(reboot)",
            "--db",
            "postgres://me:secret@db/s",
        ])
        .unwrap()
        .args;
        let run = super::super::measure::request(&run).unwrap();
        let text = task_command(&run, Some("\"${SLURM_ARRAY_TASK_ID}/4\"")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(
            lines[0].ends_with(" task --slice \"${SLURM_ARRAY_TASK_ID}/4\" <<'SIGBENCH_TASK'"),
            "{text}"
        );
        assert_eq!(lines[2], TASK_END);
        assert!(!text.contains("secret"), "{text}");
        let back: RunRequest = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(back.spec, run.spec);
        assert_eq!(back.label, run.label);
        assert_eq!(back.store.to_string(), "postgres://me@db/s");
    }

    #[test]
    fn a_task_is_active_until_slurm_ends_it() {
        assert!(active("PENDING") && active("RUNNING") && active("COMPLETING"));
        assert!(!active("COMPLETED") && !active("FAILED") && !active("CANCELLED"));
    }
}
