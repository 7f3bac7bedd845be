//! `sigbench watch [SIGNATURE] --kernels K1 … Kn [run options]`: notice a change in a
//! series of kernels by itself. The kernels (release order) are measured as `run --kernel`
//! does — only those the store lacks, `--jobs` at a time, every `--every`-th first — and
//! stored labelled by release; every metric's change points are found
//! (`stats::changepoint`); a change the store does not know yet is measured again
//! (the last kernel before and the first after, interleaved) and, when the verdict engine
//! confirms it, bisected over the kernels between that were not measured, written as a
//! report (`--report-dir`, text and HTML) and handed to `--exec`. `--ack ID` silences a
//! change; `--changes` lists what the store remembers.

use super::slurm::Takes;
use anyhow::{Context, Result, bail};
use sigbench::bisect::{Params as BisectParams, Progress, bisect};
use sigbench::clock::TimeBase;
use sigbench::plan::Plan;
use sigbench::results::RunDocument;
use sigbench::stats::changepoint::{self, Change};
use sigbench::stats::compare::{Samples, compare};
use sigbench::store::Store;
use sigbench::store::changes::{ChangeRecord, Status};
use sigbench::vm::kernel::{self, KernelSpec};
use sigbench::vm::{VmOptions, guests};
use std::path::PathBuf;

mod locate;
mod reporting;
mod stored;

#[derive(clap::Args)]
#[command(group = clap::ArgGroup::new("stored").args(["series", "series_glob"]))]
pub struct WatchArgs {
    /// The series, oldest to newest, as --kernel takes them: packages (sorted by their
    /// version; a list mixing formats by kernel release), IMAGE[:MODULES] or build trees
    /// (kept in the order given)
    #[arg(long = "kernels", id = "watch_kernels", num_args = 1.., value_name = "KERNEL", required_unless_present_any = ["ack", "changes", "series", "series_glob"])]
    list: Vec<String>,
    /// Watch what the store holds instead of booting kernels: these labels (runs written
    /// by `run`, `submit` or `import`) are the points; every plan among their runs is a
    /// series of its own. A change found is a candidate: nothing is measured again
    #[arg(long, num_args = 1.., value_name = "LABEL", conflicts_with_all = ["watch_kernels", "series_glob"])]
    series: Vec<String>,
    /// As --series, every stored label matching this shell pattern (`nightly-*`)
    #[arg(long, value_name = "PATTERN", conflicts_with = "watch_kernels")]
    series_glob: Option<String>,
    /// The order of --series points: by the kernel release their runs measured, or by
    /// when the label's first run started
    #[arg(long, value_enum, default_value = "release", requires = "stored")]
    order: sigbench::watch::Order,
    /// Measure every K-th kernel (and the newest) first; the ones between only when a
    /// change lies next to them (bisected)
    #[arg(long, default_value_t = 1, value_name = "K")]
    every: usize,
    /// The smallest change reported, in percent of the level
    #[arg(long, default_value_t = 2.0, value_name = "PCT")]
    min_effect: f64,
    /// A metric that alerts besides the times, throughputs and counts (as `compare`
    /// names it, e.g. `slabinfo.maple_node.active_objs`, `delete.profile.total.vfs_unlink`);
    /// repeatable. Profile, kernel-wide and latency rows are otherwise evidence shown with
    /// an alert, never an alert of their own
    #[arg(long = "metric", value_name = "METRIC")]
    metrics: Vec<String>,
    /// Repetitions of each of the two kernels when a change is measured again
    #[arg(long, default_value_t = 6, value_name = "R")]
    confirm_reps: u32,
    /// Repetitions an undecidable bisect step may grow to
    #[arg(long, default_value_t = 12)]
    max_reps: u32,
    /// A kernel git tree: a confirmed change is bisected further, over the commits between
    /// the last good and the first bad release (as `bisect --tree` does)
    #[arg(long, value_name = "DIR", requires = "watch_kernels")]
    tree: Option<PathBuf>,
    /// With --tree: the revision each release was built from, one `RELEASE REVISION` per
    /// line (default: tags named RELEASE or vRELEASE)
    #[arg(long, value_name = "FILE", requires = "tree")]
    rev_map: Option<PathBuf>,
    /// With --tree: the base kernel config of every commit (as `bisect --config`)
    #[arg(long, value_name = "FILE", requires = "tree")]
    config: Option<PathBuf>,
    /// Write each new alert's report here (NAME.txt and NAME.html)
    #[arg(long, value_name = "DIR")]
    report_dir: Option<PathBuf>,
    /// After the watch, write the store as a static site here (as `sigbench site -o DIR`)
    #[arg(long, value_name = "DIR")]
    site: Option<PathBuf>,
    /// Run this (with `sh -c`) once per new alert: the report's path is $1 (and
    /// $SIGBENCH_REPORT)
    #[arg(long, value_name = "CMD")]
    exec: Option<String>,
    /// Silence change point ID (as `--changes` lists them) and exit: `sigbench triage ID
    /// acknowledged`
    #[arg(long, value_name = "ID", conflicts_with = "watch_kernels")]
    ack: Option<i64>,
    /// List the change points the store remembers and exit
    #[arg(long, conflicts_with_all = ["watch_kernels", "ack"])]
    changes: bool,
    #[command(flatten)]
    slurm: super::slurm::SlurmArgs,
    /// Everything `run` takes: the signature, --fs, -n, --dir, -r (repetitions per kernel)…
    #[command(flatten)]
    run: super::measure::Args,
}

/// Options of `watch` itself, which a Slurm task's `run` does not take (nor -r: each task
/// gets the repetitions its kernel lacks: `PER_KERNEL_TASK`).
const OWN: &[(&str, Takes)] = &[
    ("--kernels", Takes::Many),
    ("--series", Takes::Many),
    ("--series-glob", Takes::One),
    ("--order", Takes::One),
    ("--every", Takes::One),
    ("--min-effect", Takes::One),
    ("--metric", Takes::One),
    ("--confirm-reps", Takes::One),
    ("--max-reps", Takes::One),
    ("--tree", Takes::One),
    ("--rev-map", Takes::One),
    ("--config", Takes::One),
    ("--report-dir", Takes::One),
    ("--site", Takes::One),
    ("--exec", Takes::One),
    ("--ack", Takes::One),
    ("--changes", Takes::Flag),
];

/// The series as it is being watched.
struct Watch<'a> {
    args: &'a WatchArgs,
    plan: Plan,
    opts: VmOptions,
    timebase: TimeBase,
    store: Store,
    jobs: usize,
    specs: Vec<(String, KernelSpec)>,
    /// Each kernel's release once prepared (None: it could not be unpacked).
    names: Vec<String>,
    keys: Vec<Option<String>>,
    /// Each kernel's runs of this plan (stored, or measured now).
    points: Vec<Vec<RunDocument>>,
    measured: usize,
    /// Changes whose confirmation could not run (no runs of a side): exit 1.
    unconfirmed: usize,
    /// `--slurm`: the `run` arguments of every task (the kernels are measured there).
    slurm: Option<Vec<String>>,
}

impl Watch<'_> {
    fn say(&self, msg: &str) {
        sigbench::say!("sigbench: watch: {msg}");
    }

    /// Runs of `plan` on kernel `i` as boots (`reps` repetitions each), `jobs` at once;
    /// each stored under the kernel's release as it comes. Returns the documents, per boot.
    fn boot(&mut self, wanted: &[(usize, u32)]) -> Result<Vec<Option<RunDocument>>> {
        if self.slurm.is_some() {
            return self.on_slurm(wanted);
        }
        let boots: Vec<guests::Boot> = wanted
            .iter()
            .map(|&(i, reps)| guests::Boot {
                name: self.specs[i].0.clone(),
                spec: self.specs[i].1.clone(),
                plan: Plan {
                    repetitions: reps,
                    ..self.plan.clone()
                },
            })
            .collect();
        let mut out = vec![None; boots.len()];
        let names = self.names.clone();
        let started = |k: usize, _: &guests::Boot| {
            sigbench::say!(
                "sigbench: watch: {} ({} repetition(s))",
                names[wanted[k].0],
                wanted[k].1
            )
        };
        let (opts, verbose) = (self.opts.clone(), self.args.run.verbose);
        let store = &mut self.store;
        guests::run_boots(
            &boots,
            self.jobs,
            &opts,
            verbose,
            &started,
            &mut |k, booted| {
                let i = wanted[k].0;
                match sigbench::bisect::steps::store_run(
                    store,
                    &names[i],
                    booted.map(|(_, run)| run),
                )? {
                    Ok(doc) => out[k] = Some(doc),
                    Err(why) => sigbench::say!("sigbench: watch: {}: {why}", names[i]),
                }
                Ok(())
            },
        )?;
        for (k, doc) in out.iter().enumerate() {
            if let Some(d) = doc {
                self.points[wanted[k].0].push(d.clone());
                self.measured += 1;
            }
        }
        Ok(out)
    }

    /// As [`Watch::boot`], the boots one Slurm job array (each task `sigbench run
    /// --kernel`, storing as it goes), read back when it has ended.
    fn on_slurm(&mut self, wanted: &[(usize, u32)]) -> Result<Vec<Option<RunDocument>>> {
        let tasks: Vec<super::slurm::Task> = wanted
            .iter()
            .map(|&(i, reps)| super::slurm::Task {
                kernel: super::slurm::task_kernel(&self.specs[i].0),
                repetitions: reps,
            })
            .collect();
        let runs = super::slurm::run_round(
            &self.args.slurm,
            &self.plan.signature.name,
            self.slurm.as_deref().unwrap_or_default(),
            &self.args.run.store.db,
            &tasks,
        )?;
        let mut out = Vec::new();
        for (&(i, _), docs) in wanted.iter().zip(runs) {
            out.push(docs.first().cloned());
            self.measured += docs.len();
            self.points[i].extend(docs);
        }
        Ok(out)
    }

    /// How many repetitions of kernel `i` are stored or measured.
    fn reps(&self, i: usize) -> u32 {
        self.points[i]
            .iter()
            .map(|d| d.cases.iter().filter(|c| !c.warmup).count() as u32)
            .sum::<u32>()
            / (self.plan.dirs.len() * self.plan.n_values.len()).max(1) as u32
    }

    /// The changes that alert, and the evidence that moved.
    fn changes(&self) -> Result<(Vec<Change>, Vec<Change>)> {
        let series = sigbench::watch::metric_series(
            &self.points,
            self.timebase.noise_floor(),
            &self.args.metrics,
        );
        sigbench::watch::check_named(&series, &self.args.metrics)?;
        let p = changepoint::Params {
            min_effect: self.args.min_effect / 100.0,
            ..Default::default()
        };
        Ok(sigbench::watch::changes(&series, &p))
    }
}

pub fn run(args: WatchArgs) -> Result<i32> {
    if args.slurm.slurm && args.list.is_empty() {
        bail!(
            "--slurm measures a series of kernels (--kernels): --series, --changes and --ack measure nothing"
        );
    }
    if let Some(id) = args.ack {
        let store = Store::open_existing(&args.run.store.db)?;
        let c = store.acknowledge(id)?;
        super::out(&format!(
            "change point {id} acknowledged (triage: it never alerts again; `sigbench triage {id} new` undoes it): {} {} from {} to {}\n",
            c.series, c.metric, c.last_good, c.first_bad
        ))?;
        return Ok(0);
    }
    if args.changes {
        return stored::list_changes(&args);
    }
    if !args.series.is_empty() || args.series_glob.is_some() {
        return stored::over_stored(&args);
    }
    sigbench::interrupt::install()?;
    check(&args)?;
    let plan = super::measure::plan_of(&args.run)?;
    let opts = super::measure::vm_options(&args.run)?;
    let rev_map = locate::rev_map(&args)?;
    let list = kernel::ordered(&args.list)?;
    let specs: Vec<(String, KernelSpec)> = list
        .iter()
        .map(|k| Ok((k.clone(), KernelSpec::parse(k)?)))
        .collect::<Result<_>>()?;
    if specs.iter().any(|(_, s)| *s == KernelSpec::Host) {
        bail!("watch boots every kernel of the series: `host` has no place in it");
    }
    let started = std::time::Instant::now();
    let mut w = Watch {
        args: &args,
        timebase: opts.expected_machine()?.timebase(),
        jobs: guests::how_many(&opts, args.run.jobs)?,
        store: Store::open(&args.run.store.db)?,
        plan,
        opts,
        names: Vec::new(),
        keys: Vec::new(),
        points: vec![Vec::new(); specs.len()],
        specs,
        measured: 0,
        unconfirmed: 0,
        slurm: args.slurm.slurm.then(|| {
            super::slurm::task_argv(
                &std::env::args().collect::<Vec<_>>(),
                "watch",
                &[OWN, super::slurm::PER_KERNEL_TASK].concat(),
            )
        }),
    };
    prepare(&mut w)?;
    let key = sigbench::watch::series_key(&w.plan, &w.timebase);
    let reps = args.run.repetitions.max(1);
    let first: Vec<(usize, u32)> = sigbench::watch::every(w.specs.len(), args.every)
        .into_iter()
        .filter(|&i| w.keys[i].is_some() && w.reps(i) < reps)
        .map(|i| (i, reps - w.reps(i)))
        .collect();
    w.say(&format!(
        "{} kernels, {} with stored runs; measuring {}",
        w.specs.len(),
        (0..w.specs.len())
            .filter(|&i| !w.points[i].is_empty())
            .count(),
        first.len()
    ));
    w.boot(&first)?;
    let mut out = String::new();
    let alerts = examine(&mut w, &key, rev_map.as_ref(), &mut out)?;
    for alert in alerts {
        reporting::report(&w, alert, &mut out)?;
    }
    if out.is_empty() {
        super::outln!(out, "no new change in {} kernels", w.specs.len());
    }
    super::outln!(
        out,
        "{} run(s) measured now; {:.0} s",
        w.measured,
        started.elapsed().as_secs_f64()
    );
    super::out(&out)?;
    write_site(&args, &w.store)?;
    if w.unconfirmed > 0 {
        sigbench::say!(
            "sigbench: watch: {} change(s) could not be confirmed (exit 1): they stay new, and the next watch measures them again",
            w.unconfirmed
        );
        return Ok(1);
    }
    Ok(0)
}

/// The arguments a series of kernels cannot take, and the outputs that must not
/// overwrite an input.
fn check(args: &WatchArgs) -> Result<()> {
    if !args.run.kernels.is_empty() {
        bail!("watch takes its series with --kernels K1 … Kn (oldest first), not --kernel");
    }
    if args.run.no_store {
        bail!("watch keeps its series and change points in the store: drop --no-store");
    }
    if args.every == 0 {
        bail!("--every must be at least 1 (1: measure every kernel)");
    }
    if !(args.min_effect.is_finite() && args.min_effect > 0.0) {
        bail!("--min-effect must be a percentage > 0");
    }
    {
        use super::measure::RunOption::*;
        super::measure::refuse(
            &args.run,
            "watch",
            &[Label, Interleave, Slice, SplitReps, OpLog],
        )?;
    }
    check_report_dir(args)
}

/// `--site DIR`: the store as a static site, after the watch.
pub(super) fn write_site(args: &WatchArgs, store: &Store) -> Result<()> {
    if let Some(dir) = &args.site {
        let pages = sigbench::site::write(store, dir)?;
        sigbench::say!(
            "sigbench: watch: wrote the site ({pages} pages) to {}",
            dir.display()
        );
    }
    Ok(())
}

/// The outputs, `--report-dir` among them, checked before anything is measured or
/// recorded: a directory, not the store, writable.
fn check_report_dir(args: &WatchArgs) -> Result<()> {
    let mut o = super::measure::outputs(&args.run);
    if let Some(d) = &args.report_dir {
        if !d.exists() {
            // Created here, before anything is measured (with its parents, as `mkdir -p`).
            std::fs::create_dir_all(d)
                .with_context(|| format!("--report-dir {}: cannot create it", d.display()))?;
            sigbench::say!("sigbench: watch: created --report-dir {}", d.display());
        }
        if !d.is_dir() {
            bail!(
                "--report-dir {}: not a directory (name a directory, or one to create)",
                d.display()
            );
        }
        // Writable by this process (root passes mode bits, not a read-only mount).
        let probe = d.join(format!(".sigbench-write-test-{}", std::process::id()));
        // Created exclusively: a link planted at the name is not followed.
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&probe)
            .with_context(|| format!("--report-dir {}: cannot write there", d.display()))?;
        let _ = std::fs::remove_file(&probe);
        o = o.output("--report-dir", d.join("x"));
    }
    if let Some(d) = &args.site {
        if d.exists() && !d.is_dir() {
            bail!(
                "--site {}: not a directory (name a directory, or one to create)",
                d.display()
            );
        }
        std::fs::create_dir_all(d)
            .with_context(|| format!("--site {}: cannot create it", d.display()))?;
        o = o.output("--site", d.join("index.html"));
    }
    o.check()
}

/// A change confirmed between kernels `g` and `b`: a record per metric (`confirmed`
/// indexes those that alert), and the bisects that ran.
struct Alert {
    g: usize,
    b: usize,
    records: Vec<ChangeRecord>,
    confirmed: Vec<usize>,
    kernels: Option<sigbench::bisect::Report>,
    commits: Option<sigbench::bisect::Report>,
}

/// The changes of the series the store does not know yet, by where they are: each place
/// measured again once, and bisected when confirmed. A rejected place is said in `out`.
fn examine(
    w: &mut Watch,
    key: &str,
    rev_map: Option<&(PathBuf, sigbench::watch::RevMap)>,
    out: &mut String,
) -> Result<Vec<Alert>> {
    let (found, evidence) = w.changes()?;
    for line in sigbench::watch::evidence_only(&found, &evidence, &w.names) {
        w.say(&line);
    }
    let stored = w.store.changes(Some(key))?;
    let mut alerts = Vec::new();
    let mut at: Vec<(usize, usize)> = found
        .iter()
        .map(|c| (c.last_before, c.first_after))
        .collect();
    at.sort_unstable();
    at.dedup();
    for (g, b) in at {
        let here: Vec<&Change> = found
            .iter()
            .filter(|c| (c.last_before, c.first_after) == (g, b))
            .filter(|c| {
                sigbench::watch::known(c, &w.names, &stored)
                    .is_none_or(|k| stored[k].status == Status::New && !stored[k].silenced())
                    && !sigbench::watch::reported(c, &w.names, &stored)
            })
            .collect();
        if here.is_empty() {
            continue;
        }
        w.say(&format!(
            "{} metric(s) changed from {} to {}: measuring both again",
            here.len(),
            w.names[g],
            w.names[b]
        ));
        let mut records = locate::confirm(w, key, g, b, &here, &stored)?;
        let confirmed: Vec<usize> = (0..records.len())
            .filter(|&k| records[k].status == Status::Confirmed)
            .collect();
        if confirmed.is_empty() {
            let retry = records.iter().any(|r| r.status == Status::New);
            super::outln!(
                out,
                "change from {} to {}: {}",
                w.names[g],
                w.names[b],
                if retry {
                    "could not be confirmed (its kernels gave no runs again); the next watch tries again"
                } else {
                    "not confirmed (rejected)"
                }
            );
            continue;
        }
        let kernels = locate::localise(w, g, b, &mut records, &confirmed)?;
        let commits = match rev_map {
            Some(map) => locate::to_commit(w, map, &mut records, &confirmed)?,
            None => None,
        };
        for k in &confirmed {
            w.store.keep_change(&mut records[*k])?;
        }
        alerts.push(Alert {
            g,
            b,
            records,
            confirmed,
            kernels,
            commits,
        });
    }
    Ok(alerts)
}

/// Unpack every kernel (in the cache) for its release, and read what the store has of it.
fn prepare(w: &mut Watch) -> Result<()> {
    for (name, spec) in w.specs.clone() {
        match kernel::prepare(&spec, &name, &w.opts.cache) {
            Ok(k) => {
                let (image, plan) = (Some(k.key.as_str()), &w.plan);
                let runs =
                    sigbench::watch::stored_runs(&w.store, &k.release, image, plan, &w.timebase)?;
                w.points[w.names.len()] = runs;
                w.names.push(k.release);
                w.keys.push(Some(k.key));
            }
            Err(e) => {
                w.say(&format!("{name}: left out: {e:#}"));
                w.names.push(name);
                w.keys.push(None);
            }
        }
    }
    Ok(())
}
