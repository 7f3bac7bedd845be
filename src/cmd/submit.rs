//! `sigbench submit [SIGNATURE] [run options] --slurm --db postgres://…`: the plan split
//! into independent slices (kernel × filesystem × directory, × repetition with
//! --split-reps), run as a Slurm job array — each task `run --slice I/S` with the same options
//! (`sigbench task`, the run request as JSON), writing to the shared store. `submit --status JOBID` shows every slice's
//! state in Slurm and in the store.

use analyse::store::{Location, Selector, Store};
use anyhow::{Result, bail};
use present::report::table::{Align, Table};
use search::request::RunRequest;
use std::collections::BTreeMap;

#[derive(clap::Args)]
pub struct SubmitArgs {
    /// Print the job script instead of submitting it
    #[arg(long)]
    dry_run: bool,
    /// Show the slices of a submitted job: Slurm's state and what the store holds
    #[arg(long, value_name = "JOBID")]
    status: Option<String>,
    #[command(flatten)]
    slurm: super::slurm::SlurmArgs,
    /// Everything `run` takes: the signature, --fs (a list), --dir, -n, -r, --kernel, --db…
    #[command(flatten)]
    run: super::measure::Args,
}

/// The sbatch job script: every task runs its slice of the same request (`sigbench task`).
fn script(
    args: &SubmitArgs,
    req: &RunRequest,
    slices: usize,
    log_dir: &std::path::Path,
) -> Result<String> {
    let mut s = args.slurm.header(&req.spec.signature, slices, log_dir)?;
    s.push_str(&format!(
        "# sigbench submit: {slices} slices, one per array task; every task runs the same plan's slice\n"
    ));
    let slice = format!("\"${{SLURM_ARRAY_TASK_ID}}/{slices}\"");
    s.push_str(&super::slurm::task_command(req, Some(&slice))?);
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
        super::measure::refuse(&args.run, "submit", &[Json, OpLog, Interleave, Kconfig])?;
    }
    if !args.slurm.slurm {
        bail!("submit runs the plan on Slurm: give --slurm (or --status JOBID)");
    }
    let req = super::measure::request(&args.run)?;
    let slices = req.slices()?;
    let (password, log_dir) =
        args.slurm
            .prepare(&args.run.store.db, !args.dry_run, args.dry_run)?;
    let text = script(&args, &req, slices.len(), &log_dir)?;
    if args.dry_run {
        super::out(&text)?;
        return Ok(0);
    }
    let (job, file) = super::slurm::submit(&text, &log_dir, password.as_deref())?;
    model::say!(
        "sigbench: submitted {} slices as job {job} (script {}, output {}/slice-{job}_N.out); `sigbench submit --status {job} --db {}` shows them",
        slices.len(),
        file.display(),
        log_dir.display(),
        model::shell::quote(&args.run.store.db.to_string())
    );
    super::out(&format!("{job}\n"))?;
    Ok(0)
}

fn status(job: &str, db: &Location) -> Result<i32> {
    let job = job.trim();
    if job.is_empty() || !job.bytes().all(|b| b.is_ascii_digit()) {
        bail!("--status {job}: give the job id sbatch printed (digits)");
    }
    let slurm = super::slurm::states(job)?;
    let store = Store::open_read(db)?;
    let prefix = format!("{job}_");
    let mut stored: BTreeMap<usize, Vec<model::results::RunDocument>> = BTreeMap::new();
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
