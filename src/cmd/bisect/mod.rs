//! `sigbench bisect [SIGNATURE] --kernels K1 … Kn --metric M [run options]`: the first bad
//! kernel of an ordered list, every step booted as `run --kernel` does and stored as a run
//! labelled by its release (`--resume` reuses what is stored).
//!
//! `sigbench bisect --tree DIR --good REV --bad REV [--config FILE]`: the first bad commit
//! of a kernel git tree (`tree`): `git bisect` picking the commits, or with `--jobs J` over
//! a linear range J commits a round, each booted while the next builds; each is built in
//! the tree (`kbuild`), booted from it, and stored as a run labelled by its 12-digit
//! commit id.

mod tree;

use super::slurm::Takes;
use anyhow::{Context, Result, bail};
use sigbench::bisect::{Call, Measure, Measured, Params, Progress, bisect};
use sigbench::clock::TimeBase;
use sigbench::plan::Plan;
use sigbench::results::RunDocument;
use sigbench::stats::compare::Kind;
use sigbench::store::Store;
use sigbench::vm::kernel::{self, KernelSpec};
use sigbench::vm::{self, VmOptions, guests};
pub(super) use tree::{TreeRange, over_tree};

#[derive(clap::Args)]
pub struct BisectArgs {
    /// The kernels, oldest (known good) to newest (known bad), as --kernel takes them:
    /// packages (sorted by their version; a list mixing formats by kernel release),
    /// IMAGE[:MODULES] or build trees (kept in the order given)
    #[arg(long = "kernels", id = "bisect_kernels", num_args = 2.., required_unless_present = "tree", conflicts_with = "tree", value_name = "KERNEL")]
    list: Vec<String>,
    /// Bisect a kernel git tree instead (with --good and --bad): git bisect picks the
    /// commits (with --jobs J over a linear range: J a round, each booted while the next
    /// builds), each is configured, built in the tree (-j$(nproc)) and booted
    #[arg(long, value_name = "DIR", requires_all = ["good", "bad"])]
    tree: Option<std::path::PathBuf>,
    /// With --tree: the known-good revision
    #[arg(long, value_name = "REV", requires = "tree")]
    good: Option<String>,
    /// With --tree: the known-bad revision (a descendant of --good)
    #[arg(long, value_name = "REV", requires = "tree")]
    bad: Option<String>,
    /// With --tree: the base kernel config (default: the tree's .config, else tinyconfig);
    /// sigbench adds what its guest needs and runs olddefconfig for every commit
    #[arg(long, value_name = "FILE", requires = "tree")]
    config: Option<std::path::PathBuf>,
    /// The metric that tells good from bad (any `compare` metric)
    #[arg(long, default_value = "wall_ms")]
    metric: String,
    /// Repetitions an undecidable step may grow to before it is skipped
    #[arg(long, default_value_t = 12)]
    max_reps: u32,
    /// Reuse the steps already stored (same signature and plan), e.g. after Ctrl-C
    #[arg(long)]
    resume: bool,
    /// The same as --json: the outcome (first bad, the steps, each verdict) as JSON
    #[arg(long = "bisect-json", value_name = "FILE")]
    bisect_json: Option<String>,
    #[command(flatten)]
    slurm: super::slurm::SlurmArgs,
    /// Everything `run` takes: the signature, --fs, -n, --dir, -r (repetitions per step)…
    #[command(flatten)]
    run: super::measure::Args,
}

/// Options of `bisect` itself, which a Slurm task's `run` does not take (nor -r: each task
/// gets the repetitions its kernel lacks: `PER_KERNEL_TASK`).
const OWN: &[(&str, Takes)] = &[
    ("--kernels", Takes::Many),
    ("--tree", Takes::One),
    ("--good", Takes::One),
    ("--bad", Takes::One),
    ("--config", Takes::One),
    ("--metric", Takes::One),
    ("--max-reps", Takes::One),
    ("--resume", Takes::Flag),
    ("--bisect-json", Takes::One),
];

/// `--slurm`: a round's kernels go to Slurm as one job array.
pub(super) struct OnSlurm<'a> {
    pub(super) args: &'a super::slurm::SlurmArgs,
    /// The `run` arguments every task gets (the command's own left out).
    pub(super) argv: Vec<String>,
}

/// What both ways of bisecting share: the plan, the store, and the runs measured (or
/// found stored) per index of the list. `watch` bisects with it too.
pub(super) struct Steps<'a> {
    pub(super) args: &'a super::measure::Args,
    pub(super) plan: &'a Plan,
    pub(super) opts: VmOptions,
    pub(super) store: Store,
    pub(super) resume: bool,
    /// The metric and its case (directory, N): by default the plan's first directory at
    /// its largest N.
    pub(super) metric: String,
    pub(super) case: Option<(String, u64)>,
    /// The clock the steps are measured on: stored runs of another are not reused.
    pub(super) timebase: TimeBase,
    pub(super) docs: Vec<Option<Vec<RunDocument>>>,
    pub(super) measured_now: Vec<usize>,
}

impl Steps<'_> {
    /// The metric's noise floor: its clock's for a time, the default for a count.
    fn noise_floor(&self) -> f64 {
        let runs = self.docs.iter().flatten().flatten();
        match sigbench::stats::compare::kind_in(runs, &self.metric) {
            Some(Kind::Time | Kind::Latency | Kind::Throughput) => self.timebase.noise_floor(),
            _ => sigbench::stats::verdict::NOISE_FLOOR,
        }
    }

    /// The case bisected: the metric's, or the plan's first directory at its largest N.
    pub(super) fn case_of(&self) -> (String, u64) {
        self.case.clone().unwrap_or_else(|| {
            let n = self.plan.n_values.iter().copied().max().unwrap_or(0);
            (self.plan.dirs[0].name.clone(), n)
        })
    }

    /// The functions whose time grew from step `a` to step `b` (their profiles of the
    /// bisected case; None where one lacks a profile), most added time first.
    pub(super) fn grown(&self, a: usize, b: usize) -> Option<Vec<(String, f64)>> {
        let (dir, n) = self.case_of();
        let times = |i: usize| {
            let runs = self.docs.get(i)?.as_deref().unwrap_or_default();
            sigbench::bisect::suspects::function_times(runs, &dir, n)
        };
        Some(sigbench::bisect::suspects::grown(&times(a)?, &times(b)?))
    }

    /// The metric in its case, per repetition, at `i`.
    fn samples(&self, i: usize) -> Vec<f64> {
        let (dir, n) = self.case_of();
        self.docs[i]
            .iter()
            .flatten()
            .flat_map(|d| d.cases.iter())
            .filter(|c| !c.warmup && c.dir == dir && c.n == n)
            .map(|c| {
                sigbench::stats::compare::metrics_of(c)
                    .into_iter()
                    .find(|(m, _, _)| *m == self.metric)
                    .map_or(0.0, |(_, _, v)| v)
            })
            .collect()
    }

    /// Load what is stored for `i` under `label` the first time (with --resume): runs that
    /// measured the same plan (and, given `image`, on that very kernel image). Returns how
    /// many samples `i` has.
    fn load(&mut self, i: usize, label: &str, image: Option<&str>) -> Result<u32> {
        if self.docs[i].is_none() {
            let stored = if self.resume {
                sigbench::watch::stored_runs(&self.store, label, image, self.plan, &self.timebase)?
            } else {
                Vec::new()
            };
            self.docs[i] = Some(stored);
        }
        Ok(self.samples(i).len() as u32)
    }

    /// Measure `reps - have` more repetitions of `i` on kernel `k`, store them as `label`.
    fn top_up(&mut self, i: usize, k: &kernel::Kernel, label: &str, more: u32) -> Result<Measured> {
        let run = boot(self.args, self.plan, &self.opts, k, label, more);
        self.kept(i, label, run)
    }

    /// A boot of `i` kept as `label` (`keep`), and how long it took said.
    fn kept(&mut self, i: usize, label: &str, (run, took): Booted) -> Result<Measured> {
        let kept = self.keep(i, label, run);
        sigbench::say!(
            "sigbench: bisect: {label}: measured in {:.0} s",
            took.as_secs_f64()
        );
        kept
    }

    /// What a guest run of `i` gave: stored as `label`, its samples; or why it failed.
    fn keep(&mut self, i: usize, label: &str, run: Result<vm::GuestRun>) -> Result<Measured> {
        let doc = match store_run(&mut self.store, label, run)? {
            Ok(doc) => doc,
            Err(why) => return Ok(Measured::Failed(why)),
        };
        self.measured_now.push(i);
        self.docs[i].get_or_insert_with(Vec::new).push(doc);
        Ok(Measured::Samples(self.samples(i)))
    }

    fn reuse_stored(&self, i: usize, label: &str) -> Measured {
        sigbench::say!("sigbench: bisect: {label}: stored, not measured again");
        Measured::Samples(self.samples(i))
    }
}

/// A step's guest run, and how long it took.
type Booted = (Result<vm::GuestRun>, std::time::Duration);

/// Boot `k` for `more` repetitions of `plan` (said as `label`): the guest's run and how
/// long it took. Apart from `Steps` (whose store stays on one thread), so that a round's
/// guests can run side by side.
fn boot(
    args: &super::measure::Args,
    plan: &Plan,
    opts: &VmOptions,
    k: &kernel::Kernel,
    label: &str,
    more: u32,
) -> Booted {
    let plan = Plan {
        repetitions: more,
        ..plan.clone()
    };
    sigbench::say!("sigbench: bisect: {label}: {more} repetition(s)");
    let started = std::time::Instant::now();
    let run = super::run::guest_run(args, &plan, k, opts);
    (run, started.elapsed())
}

/// A guest run's document, labelled `label` and stored; or why there is none (it did not
/// boot, failed, or brought nothing back). An interruption, or a store that cannot take
/// the run, is an error. `bisect` and `watch` keep their guests' runs this way.
pub(super) fn store_run(
    store: &mut Store,
    label: &str,
    run: Result<vm::GuestRun>,
) -> Result<std::result::Result<RunDocument, String>> {
    let run = match run {
        Ok(r) => r,
        Err(e) => {
            if e.downcast_ref::<sigbench::interrupt::Interrupted>()
                .is_some()
            {
                return Err(e);
            }
            return Ok(Err(format!("{e:#}")));
        }
    };
    if let Some(e) = run.error {
        return Ok(Err(format!("{e:#}")));
    }
    let Some(mut doc) = run.doc else {
        return Ok(Err("no results".into()));
    };
    doc.label = label.to_string();
    store
        .import(&doc)
        .with_context(|| format!("storing the run of {label}"))?;
    Ok(Ok(doc))
}

/// The kernels of a list: kernel `i` is unpacked and booted as `run --kernel` does; a
/// round's kernels side by side (`--jobs`).
pub(super) struct Kernels<'a> {
    pub(super) steps: Steps<'a>,
    pub(super) specs: Vec<(String, KernelSpec)>,
    pub(super) releases: Vec<Option<String>>,
    /// Each kernel's package changelog, once it is unpacked (`Kernel::changelog`).
    pub(super) changelogs: Vec<Option<std::path::PathBuf>>,
    pub(super) jobs: usize,
    /// What a round measured ahead (prefetch), until `measure` asks for it.
    pub(super) ahead: std::collections::HashMap<usize, Measured>,
    /// `--slurm`: measured by Slurm's tasks instead of here.
    pub(super) slurm: Option<OnSlurm<'a>>,
}

/// A kernel of a round that lacks repetitions.
struct Short {
    i: usize,
    release: String,
    more: u32,
}

impl Kernels<'_> {
    /// The kernels of `wanted` (each with the repetitions it must have) that lack
    /// repetitions, with how many more; one that cannot be unpacked is failed ahead.
    fn short_of(&mut self, wanted: &[(usize, u32)]) -> Result<Vec<Short>> {
        let mut out = Vec::new();
        for &(i, reps) in wanted {
            let (name, spec) = self.specs[i].clone();
            let k = match kernel::prepare(&spec, &name, &self.steps.opts.cache) {
                Ok(k) => k,
                Err(e) => {
                    self.ahead.insert(i, Measured::Failed(format!("{e:#}")));
                    continue;
                }
            };
            self.releases[i] = Some(k.release.clone());
            self.changelogs[i] = k.changelog.clone();
            let have = self.steps.load(i, &k.release, Some(&k.key))?;
            if have < reps {
                out.push(Short {
                    i,
                    release: k.release,
                    more: reps - have,
                });
            }
        }
        Ok(out)
    }

    /// Measure `wanted` (each with the repetitions it must have) as one Slurm job array,
    /// each task `sigbench run --kernel K` into the store; what each stored is read back.
    fn on_slurm(&mut self, wanted: &[(usize, u32)]) -> Result<()> {
        if self.slurm.is_none() {
            return Ok(());
        }
        let short = self.short_of(wanted)?;
        let tasks: Vec<super::slurm::Task> = short
            .iter()
            .map(|s| super::slurm::Task {
                kernel: super::slurm::task_kernel(&self.specs[s.i].0),
                repetitions: s.more,
            })
            .collect();
        let who = short.into_iter().map(|s| s.i);
        let Some(slurm) = &self.slurm else {
            return Ok(());
        };
        let runs = super::slurm::run_round(
            slurm.args,
            &self.steps.plan.signature.name,
            &slurm.argv,
            &self.steps.args.store.db,
            &tasks,
        )?;
        for (i, docs) in who.zip(runs) {
            if docs.is_empty() {
                self.ahead.insert(
                    i,
                    Measured::Failed(
                        "its Slurm task stored nothing (see the task's output)".into(),
                    ),
                );
                continue;
            }
            self.steps.measured_now.push(i);
            self.steps.docs[i].get_or_insert_with(Vec::new).extend(docs);
            self.ahead
                .insert(i, Measured::Samples(self.steps.samples(i)));
        }
        Ok(())
    }
}

impl Measure for Kernels<'_> {
    fn noise_floor(&self) -> f64 {
        self.steps.noise_floor()
    }

    fn name(&self, i: usize) -> String {
        match &self.releases[i] {
            Some(r) => r.clone(),
            None => self.specs[i].0.clone(),
        }
    }

    fn prefetch(&mut self, wanted: &[(usize, u32)]) -> Result<()> {
        if self.slurm.is_some() {
            return self.on_slurm(wanted);
        }
        if self.jobs < 2 {
            return Ok(());
        }
        // The kernels of the round that need measuring, each with the repetitions missing.
        let mut boots = Vec::new();
        let mut who = Vec::new();
        for s in self.short_of(wanted)? {
            let (name, spec) = self.specs[s.i].clone();
            let plan = Plan {
                repetitions: s.more,
                ..self.steps.plan.clone()
            };
            sigbench::say!(
                "sigbench: bisect: {}: {} repetition(s), side by side",
                s.release,
                s.more
            );
            boots.push(guests::Boot { name, spec, plan });
            who.push((s.i, s.release));
        }
        let opts = self.steps.opts.clone();
        let verbose = self.steps.args.verbose;
        let mut results = Vec::new();
        guests::run_boots(
            &boots,
            self.jobs,
            &opts,
            verbose,
            &|_, _| {},
            &mut |n, booted| {
                results.push((n, booted.map(|(_, run)| run)));
                Ok(())
            },
        )?;
        for (n, run) in results {
            let (i, label) = who[n].clone();
            let m = self.steps.keep(i, &label, run)?;
            self.ahead.insert(i, m);
        }
        Ok(())
    }

    fn measure(&mut self, i: usize, reps: u32) -> Result<Measured> {
        if let Some(m) = self.ahead.remove(&i) {
            let enough = matches!(&m, Measured::Samples(s) if s.len() as u32 >= reps);
            if enough || matches!(m, Measured::Failed(_)) {
                return Ok(m);
            }
        }
        if self.slurm.is_some() {
            self.on_slurm(&[(i, reps)])?;
            if let Some(m) = self.ahead.remove(&i) {
                return Ok(m);
            }
            // Nothing was short: what is stored is reused below.
        }
        let (name, spec) = self.specs[i].clone();
        let k = match kernel::prepare(&spec, &name, &self.steps.opts.cache) {
            Ok(k) => k,
            Err(e) => return Ok(Measured::Failed(format!("{e:#}"))),
        };
        self.releases[i] = Some(k.release.clone());
        self.changelogs[i] = k.changelog.clone();
        let have = self.steps.load(i, &k.release, Some(&k.key))?;
        if have >= reps {
            return Ok(self.steps.reuse_stored(i, &k.release));
        }
        self.steps.top_up(i, &k, &k.release, reps - have)
    }
}

/// Seconds as a rough duration for a human ("40 s", "12 min", "1.5 h").
fn duration(s: f64) -> String {
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5400.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

pub fn run(args: BisectArgs) -> Result<i32> {
    sigbench::interrupt::install()?;
    if !args.run.kernels.is_empty() {
        bail!(
            "bisect takes its kernels with --kernels K1 … Kn (oldest first) or --tree, not --kernel"
        );
    }
    if args.run.no_store {
        bail!("bisect stores every step (that is what --resume reuses): drop --no-store");
    }
    if args.slurm.slurm && args.tree.is_some() {
        bail!(
            "--slurm measures a list of kernels (--kernels): a --tree is built and bisected in one place"
        );
    }
    if args.run.json.is_some() && args.bisect_json.is_some() {
        bail!("--json and --bisect-json both name the bisect's JSON document: give one");
    }
    {
        // The bisect's document is written at the end: never onto the store or an input.
        let mut o = super::measure::outputs(&args.run);
        if let Some(j) = &args.bisect_json {
            o = o.output("--bisect-json", j);
        }
        o.check()?;
    }
    {
        use super::measure::RunOption::*;
        // Steps are labelled by release or commit, booted one kernel at a time.
        super::measure::refuse(
            &args.run,
            "bisect",
            &[Label, Interleave, Slice, SplitReps, OpLog],
        )?;
    }
    let plan = super::measure::plan_of(&args.run)?;
    let params = Params {
        metric: args.metric.clone(),
        reps: args.run.repetitions.max(1),
        max_reps: args.max_reps.max(args.run.repetitions),
        alpha: 0.05,
        jobs: guests::how_many(&super::measure::vm_options(&args.run)?, args.run.jobs)?,
    };
    let started = std::time::Instant::now();
    let mut progress = |p: Progress| {
        let t = started.elapsed().as_secs_f64();
        match p {
            Progress::Note(msg) => sigbench::say!("sigbench: bisect [{t:.0} s]: {msg}"),
            Progress::Step { k, of, name } => {
                // The two ends and k - 1 steps took `t`; about of - k + 1 steps are left.
                let eta = t / (k + 1) as f64 * (of + 1).saturating_sub(k) as f64;
                sigbench::say!(
                    "sigbench: bisect [{t:.0} s]: step {k} of ~{of}: {name} (about {} left)",
                    duration(eta)
                )
            }
        }
    };
    let opts = super::measure::vm_options(&args.run)?;
    let steps = Steps {
        args: &args.run,
        plan: &plan,
        timebase: opts.expected_machine()?.timebase(),
        opts,
        store: Store::open(&args.run.store.db)?,
        resume: args.resume,
        metric: args.metric.clone(),
        case: None,
        docs: Vec::new(),
        measured_now: Vec::new(),
    };
    let done = match &args.tree {
        Some(dir) => {
            let range = TreeRange {
                dir,
                good: args.good.as_deref().unwrap_or_default(),
                bad: args.bad.as_deref().unwrap_or_default(),
                config: args.config.as_deref(),
                jobs_asked: args.run.jobs.is_some(),
            };
            over_tree(&range, steps, &params, &mut progress)?
        }
        None => over_list(&args, steps, &params, &mut progress)?,
    };
    let report = done.report(&plan.signature.name);
    let mut o = format!(
        "bisect of {} on {}, metric {}\n",
        report.signature, report.what, args.metric
    );
    o.push_str(&sigbench::report::bisect::steps_table(&report).text());
    let code = conclusion(&mut o, &done, report.changed.as_ref());
    super::outln!(
        o,
        "{} {} measured now, {} from the store; {:.0} s",
        done.outcome
            .steps
            .iter()
            .filter(|s| done.measured_now.contains(&s.index))
            .count(),
        if args.tree.is_some() {
            "commits"
        } else {
            "kernels"
        },
        done.outcome
            .steps
            .iter()
            .filter(|s| !s.samples.is_empty() && !done.measured_now.contains(&s.index))
            .count(),
        started.elapsed().as_secs_f64()
    );
    if let Some(dest) = args.bisect_json.as_ref().or(args.run.json.as_ref()) {
        sigbench::report::json::write(&report, dest)?;
    }
    super::out(&o)?;
    Ok(code)
}

/// A finished bisect, with what the binary says about it.
pub(super) struct Bisected {
    outcome: sigbench::bisect::Outcome,
    /// Each kernel's (release) or commit's (`ID subject`) name, oldest first.
    names: Vec<String>,
    /// Where each came from (the file or argument), when that says more than its name.
    sources: Vec<Option<String>>,
    what: String,
    measured_now: Vec<usize>,
    /// The stored runs of every measured step, by index (for the evidence).
    docs: Vec<Option<Vec<RunDocument>>>,
    /// Ranked before bisecting (a tree with `--profile`).
    suspects: Vec<sigbench::bisect::suspects::Suspect>,
    /// A list with `--profile`: the functions whose time grew between the ends.
    suspect_functions: Vec<(String, f64)>,
    /// A list with `--profile`: the changelog lines between the last good and the first
    /// bad package that name those functions or their subsystems.
    changelog: Vec<sigbench::bisect::changelog::Mention>,
}

impl Bisected {
    /// The differential flame graph from step `g` to step `b` (both profiled).
    fn flame(&self, g: usize, b: usize) -> Option<String> {
        let runs = |i: usize| self.docs.get(i)?.clone().filter(|d| !d.is_empty());
        let label = |i: usize| {
            self.names[i]
                .split(' ')
                .next()
                .unwrap_or_default()
                .to_string()
        };
        sigbench::report::document::flame_figures(&[(label(g), runs(g)?), (label(b), runs(b)?)])
            .into_iter()
            .find(|f| f.id.starts_with("flame_diff_"))
            .map(|f| f.svg)
    }

    /// The bisect as its document has it, with what changed from the last good step to
    /// the first bad one.
    pub(super) fn report(&self, signature: &str) -> sigbench::bisect::Report {
        let mut report = sigbench::bisect::Report::new(
            self.what.clone(),
            signature.to_string(),
            self.names.clone(),
            self.outcome.clone(),
        );
        report.changed = self
            .outcome
            .first_bad
            .and_then(|i| evidence(self, last_good(&self.outcome, i)?, i))
            .map(|t| sigbench::report::table::to_changed(&t));
        report.suspects = self.suspects.clone();
        report.flame = self
            .outcome
            .first_bad
            .and_then(|i| Some((last_good(&self.outcome, i)?, i)))
            .and_then(|(g, b)| self.flame(g, b));
        report.suspect_functions = self
            .suspect_functions
            .iter()
            .map(|(f, t)| sigbench::bisect::suspects::Grown {
                function: f.clone(),
                added_ms: *t,
            })
            .collect();
        report.changelog = self.changelog.clone();
        report
    }
}

fn over_list(
    args: &BisectArgs,
    mut steps: Steps,
    params: &Params,
    progress: &mut dyn FnMut(Progress),
) -> Result<Bisected> {
    let list = kernel::ordered(&args.list)?;
    let specs: Vec<(String, KernelSpec)> = list
        .iter()
        .map(|k| Ok((k.clone(), KernelSpec::parse(k)?)))
        .collect::<Result<_>>()?;
    if specs.iter().any(|(_, s)| *s == KernelSpec::Host) {
        bail!("bisect boots every kernel of the list: `host` has no place in it");
    }
    steps.docs = vec![None; specs.len()];
    let mut m = Kernels {
        steps,
        releases: vec![None; specs.len()],
        changelogs: vec![None; specs.len()],
        specs,
        jobs: params.jobs,
        ahead: Default::default(),
        slurm: args.slurm.slurm.then(|| OnSlurm {
            args: &args.slurm,
            argv: super::slurm::task_argv(
                &std::env::args().collect::<Vec<_>>(),
                "bisect",
                &[OWN, super::slurm::PER_KERNEL_TASK].concat(),
            ),
        }),
    };
    let mut suspect_functions = Vec::new();
    if m.steps.args.profile.is_some() {
        // No tree, no commits to rank: the functions whose time grew between the ends.
        let last = list.len() - 1;
        measure_ends_first(&mut m, last, params.reps)?;
        if let Some(grown) = m.steps.grown(0, last) {
            progress(Progress::Note(&format!(
                "suspect functions (took more time at the newest kernel): {}",
                if grown.is_empty() {
                    "none".to_string()
                } else {
                    grown
                        .iter()
                        .take(8)
                        .map(|(f, t)| format!("{f} +{t:.3} ms"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )));
            suspect_functions = grown;
        }
    }
    let outcome = bisect(&mut m, list.len(), params, progress)?;
    let changelog = changelog_mentions(&m, &outcome, &suspect_functions, progress);
    let mut names: Vec<String> = (0..list.len()).map(|i| m.name(i)).collect();
    // Two files of one release (a rebuilt or a damaged copy): told apart by file name.
    let named = names.clone();
    for (i, n) in names.iter_mut().enumerate() {
        if named.iter().filter(|x| *x == n).count() > 1 {
            let file = std::path::Path::new(&list[i]).file_name();
            n.push_str(&format!(
                " ({})",
                file.map_or(list[i].clone(), |f| f.to_string_lossy().into_owned())
            ));
        }
    }
    Ok(Bisected {
        outcome,
        sources: list
            .iter()
            .zip(&names)
            .map(|(l, n)| (l != n).then(|| l.clone()))
            .collect(),
        what: format!("{} kernels", list.len()),
        names,
        measured_now: m.steps.measured_now,
        docs: m.steps.docs,
        suspects: Vec::new(),
        suspect_functions,
        changelog,
    })
}

/// With suspect functions and an answer: the lines of the first bad package's changelog
/// since the last good one's that name those functions or their subsystems — said as a
/// note, kept in the report. Nothing where a package carries no changelog.
fn changelog_mentions(
    m: &Kernels,
    outcome: &sigbench::bisect::Outcome,
    grown: &[(String, f64)],
    progress: &mut dyn FnMut(Progress),
) -> Vec<sigbench::bisect::changelog::Mention> {
    use sigbench::bisect::changelog;
    let Some((g, b)) = outcome
        .first_bad
        .and_then(|b| Some((last_good(outcome, b)?, b)))
    else {
        return Vec::new();
    };
    if grown.is_empty() {
        return Vec::new();
    }
    let (Some(old), Some(new)) = (&m.changelogs[g], &m.changelogs[b]) else {
        return Vec::new();
    };
    let (old, new) = match (changelog::read(old), changelog::read(new)) {
        (Ok(o), Ok(n)) => (o, n),
        (Err(e), _) | (_, Err(e)) => {
            progress(Progress::Note(&format!(
                "the packages' changelogs could not be read: {e:#}"
            )));
            return Vec::new();
        }
    };
    let grown: Vec<sigbench::bisect::suspects::Grown> = grown
        .iter()
        .map(|(f, t)| sigbench::bisect::suspects::Grown {
            function: f.clone(),
            added_ms: *t,
        })
        .collect();
    let found = changelog::mentions(&new, &old, &grown);
    progress(Progress::Note(&format!(
        "changelog of {} since {}: {} line(s) name a suspect function or its subsystem{}",
        m.name(b),
        m.name(g),
        found.len(),
        found
            .iter()
            .take(5)
            .map(|x| format!("\n  {} — {}", x.line, x.functions.join(", ")))
            .collect::<String>()
    )));
    found
}

/// The skipped steps, the first bad one with its evidence (what changed from the last
/// good one to it), or the candidates skips leave open. Returns the exit code.
fn conclusion(o: &mut String, b: &Bisected, changed: Option<&sigbench::bisect::Changed>) -> i32 {
    let (names, outcome) = (&b.names, &b.outcome);
    let mut skipped: Vec<&sigbench::bisect::Step> = outcome
        .steps
        .iter()
        .filter(|s| s.call == Call::Skipped)
        .collect();
    skipped.sort_by_key(|s| s.index);
    for s in skipped {
        super::outln!(o, "skipped {}: {}", names[s.index], s.why);
    }
    if let Some(doubt) = &outcome.doubt {
        super::outln!(o, "\nno answer: {doubt}");
        return 1;
    }
    let Some(i) = outcome.first_bad else {
        let c: Vec<&str> = outcome
            .candidates
            .iter()
            .map(|&i| names[i].as_str())
            .collect();
        super::outln!(
            o,
            "\nthe first bad one is one of: {} (skipped ones leave it open)",
            c.join(", ")
        );
        return 1;
    };
    let step = outcome.steps.iter().find(|s| s.index == i);
    super::outln!(
        o,
        "\n{}: {}{}; evidence: {}",
        if outcome.improvement {
            "first improved (an improvement: the newer end is better)"
        } else {
            "first bad"
        },
        names[i],
        b.sources[i]
            .as_ref()
            .map_or(String::new(), |s| format!(" ({s})")),
        step.map_or("-", |s| s.why.as_str())
    );
    if !b.suspects.is_empty() {
        let at = b
            .suspects
            .iter()
            .position(|s| names[i].starts_with(s.commit.get(..12).unwrap_or(&s.commit)));
        super::outln!(
            o,
            "{}",
            match at {
                Some(k) => format!(
                    "it was suspect {} of {} (ranked by the ends' profiles before bisecting)",
                    k + 1,
                    b.suspects.len()
                ),
                None => format!(
                    "it was not among the {} suspects the ends' profiles ranked before bisecting",
                    b.suspects.len()
                ),
            }
        );
        o.push_str("suspects:\n");
        for line in sigbench::bisect::suspects::lines(&b.suspects, 5) {
            super::outln!(o, "  {line}");
        }
    }
    if let Some(c) = changed {
        o.push('\n');
        o.push_str(&sigbench::report::table::from_changed(c).text());
    }
    0
}

/// Measure both ends (`0` and `last`) now, side by side where the measuring allows, so that
/// their profiles can be read before the search starts (which then finds them measured).
pub(super) fn measure_ends_first(m: &mut dyn Measure, last: usize, reps: u32) -> Result<()> {
    m.prefetch(&[(0, reps), (last, reps)])?;
    for i in [0, last] {
        m.measure(i, reps)?;
    }
    Ok(())
}

/// The measured good step closest below `bad`.
pub(super) fn last_good(outcome: &sigbench::bisect::Outcome, bad: usize) -> Option<usize> {
    outcome
        .steps
        .iter()
        .filter(|s| s.call == Call::Good && s.index < bad)
        .map(|s| s.index)
        .max()
}

/// What changed significantly from the last good step to the first bad one, every metric
/// (phase slab changes included), as `compare` ranks them.
fn evidence(b: &Bisected, good: usize, bad: usize) -> Option<sigbench::report::table::Table> {
    use sigbench::stats::compare::{Samples, compare};
    let runs = |i: usize| b.docs.get(i)?.as_ref().filter(|d| !d.is_empty());
    let (g, x) = (runs(good)?, runs(bad)?);
    let label = |i: usize| b.names[i].split(' ').next().unwrap_or_default().to_string();
    let cmp = compare(
        &[
            Samples::from_runs(&label(good), g),
            Samples::from_runs(&label(bad), x),
        ],
        sigbench::stats::Test::MannWhitney,
        0.05,
    );
    let mut t = sigbench::report::compare::changed_table(&cmp);
    t.title = format!(
        "what changed from the last good {} to the first bad {}",
        label(good),
        label(bad)
    );
    // The metric bisected first, then as compare ranks them: the first twelve rows, and
    // of a profiled bisect the six profile rows that moved most besides (where the time
    // went; they rank after the kernel-wide deltas).
    t.rows
        .sort_by_key(|r| r.get(3).is_none_or(|m| *m != b.outcome.metric));
    let (mut profile, mut rest): (Vec<_>, Vec<_>) = t
        .rows
        .drain(..)
        .partition(|r| r.get(3).is_some_and(|m| m.contains("profile.")));
    rest.truncate(12);
    profile.truncate(6);
    t.rows = rest.into_iter().chain(profile).collect();
    Some(t)
}
