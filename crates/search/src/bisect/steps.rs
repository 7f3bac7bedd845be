//! Measuring a bisect's steps: the runs of each index of the list, measured in guests
//! (`Steps`: stored as runs labelled by release or commit, reused with `resume`), and the
//! kernels of a list of packages or images as a [`Measure`] (`Kernels`: unpacked, booted
//! `--jobs` at once, or measured elsewhere through a [`Remote`]). `bisect --tree`'s
//! commits and `watch`'s bisects measure through `Steps` too.

use super::{Call, Measure, Measured, Outcome};
use analyse::store::Store;
use anyhow::{Context, Result};
use measure::plan::Plan;
use measure::vm::kernel::{self, KernelSpec};
use measure::vm::{self, VmOptions, guests};
use model::clock::TimeBase;
use model::metric::Metric;
use model::results::RunDocument;

/// What both ways of bisecting share: the plan, the store, and the runs measured (or
/// found stored) per index of the list. `watch` bisects with it too.
pub struct Steps<'a> {
    pub plan: &'a Plan,
    /// Guests print their console as they run.
    pub verbose: bool,
    pub opts: VmOptions,
    pub store: Store,
    pub resume: bool,
    /// The metric and its case (directory, N): by default the plan's first directory at
    /// its largest N.
    pub metric: Metric,
    pub case: Option<(String, u64)>,
    /// The clock the steps are measured on: stored runs of another are not reused.
    pub timebase: TimeBase,
    pub docs: Vec<Option<Vec<RunDocument>>>,
    pub measured_now: Vec<usize>,
}

impl Steps<'_> {
    /// The metric's noise floor: its clock's for a time, the default for a count.
    pub fn noise_floor(&self) -> f64 {
        let runs = self.docs.iter().flatten().flatten();
        if self.metric.kind().timed() && analyse::stats::compare::measured_in(runs, &self.metric) {
            self.timebase.noise_floor()
        } else {
            analyse::stats::verdict::NOISE_FLOOR
        }
    }

    /// The case bisected: the metric's, or the plan's first directory at its largest N.
    pub fn case_of(&self) -> (String, u64) {
        self.case.clone().unwrap_or_else(|| {
            let n = self.plan.n_values.iter().copied().max().unwrap_or(0);
            (self.plan.dirs[0].name.clone(), n)
        })
    }

    /// The functions whose time grew from step `a` to step `b` (their profiles of the
    /// bisected case; None where one lacks a profile), most added time first.
    pub fn grown(&self, a: usize, b: usize) -> Option<Vec<(String, f64)>> {
        let (dir, n) = self.case_of();
        let times = |i: usize| {
            let runs = self.docs.get(i)?.as_deref().unwrap_or_default();
            crate::bisect::suspects::function_times(runs, &dir, n)
        };
        Some(crate::bisect::suspects::grown(&times(a)?, &times(b)?))
    }

    /// The metric in its case, per repetition, at `i`.
    pub fn samples(&self, i: usize) -> Vec<f64> {
        let (dir, n) = self.case_of();
        // Under a deterministic clock a state repeated is a copy: counted once.
        let mut seen = std::collections::BTreeSet::new();
        self.docs[i]
            .iter()
            .flatten()
            .flat_map(|d| {
                let exact = d.host.timebase().deterministic();
                d.cases.iter().map(move |c| (exact, c))
            })
            .filter(|(_, c)| !c.warmup && c.dir == dir && c.n == n)
            .filter(|(exact, c)| {
                !exact || seen.insert((c.state, c.state.is_none().then_some(c.rep), c.wall_ns))
            })
            .map(|(_, c)| {
                analyse::stats::compare::metrics_of(c)
                    .into_iter()
                    .find(|(m, _)| *m == self.metric)
                    .map_or(0.0, |(_, v)| v)
            })
            .collect()
    }

    /// Load what is stored for `i` under `label` the first time (with --resume): runs that
    /// measured the same plan (and, given `image`, on that very kernel image). Returns how
    /// many samples `i` has.
    pub fn load(&mut self, i: usize, label: &str, image: Option<&str>) -> Result<u32> {
        if self.docs[i].is_none() {
            let stored = if self.resume {
                let stored = analyse::store::series::stored_runs(
                    &self.store,
                    label,
                    image,
                    &self.plan.series_plan(),
                    &self.timebase,
                    measure::build::current().as_deref(),
                )?;
                if let Some(said) = stored.left_out(label) {
                    model::say!("sigbench: bisect: {said}");
                }
                stored.runs
            } else {
                Vec::new()
            };
            self.docs[i] = Some(stored);
        }
        Ok(self.samples(i).len() as u32)
    }

    /// How many repetitions of `i`'s case are stored (copies of a state included): the
    /// number the next repetitions' states start from, so they are new ones.
    pub fn stored_reps(&self, i: usize) -> u32 {
        let (dir, n) = self.case_of();
        self.docs[i]
            .iter()
            .flatten()
            .flat_map(|d| d.cases.iter())
            .filter(|c| !c.warmup && c.dir == dir && c.n == n)
            .count() as u32
    }

    /// Measure `more` repetitions of `i` on kernel `k`, from states not measured yet, and
    /// store them as `label`.
    pub fn top_up(
        &mut self,
        i: usize,
        k: &kernel::Kernel,
        label: &str,
        more: u32,
    ) -> Result<Measured> {
        let first = self.stored_reps(i);
        let run = boot(self.plan, &self.opts, k, label, more, first, self.verbose);
        self.kept(i, label, run)
    }

    /// A boot of `i` kept as `label` (`keep`), and how long it took said.
    pub fn kept(&mut self, i: usize, label: &str, (run, took): Booted) -> Result<Measured> {
        let kept = self.keep(i, label, run);
        model::say!(
            "sigbench: bisect: {label}: measured in {:.0} s",
            took.as_secs_f64()
        );
        kept
    }

    /// What a guest run of `i` gave: stored as `label`, its samples; or why it failed.
    pub fn keep(&mut self, i: usize, label: &str, run: Result<vm::GuestRun>) -> Result<Measured> {
        let doc = match store_run(&mut self.store, label, run)? {
            Ok(doc) => doc,
            Err(why) => return Ok(Measured::Failed(why)),
        };
        self.measured_now.push(i);
        self.docs[i].get_or_insert_with(Vec::new).push(doc);
        Ok(Measured::Samples(self.samples(i)))
    }

    pub fn reuse_stored(&self, i: usize, label: &str) -> Measured {
        model::say!("sigbench: bisect: {label}: stored, not measured again");
        Measured::Samples(self.samples(i))
    }
}

/// A step's guest run, and how long it took.
pub type Booted = (Result<vm::GuestRun>, std::time::Duration);

/// Boot `k` for `more` repetitions of `plan` (said as `label`), their states from the
/// `first`-th on (those before it are measured): the guest's run and how long it took.
/// Apart from `Steps` (whose store stays on one thread), so that a round's guests can run
/// side by side.
pub fn boot(
    plan: &Plan,
    opts: &VmOptions,
    k: &kernel::Kernel,
    label: &str,
    more: u32,
    first: u32,
    verbose: bool,
) -> Booted {
    let plan = Plan {
        repetitions: more,
        first_state: plan.first_state + first,
        ..plan.clone()
    };
    model::say!("sigbench: bisect: {label}: {more} repetition(s)");
    let started = std::time::Instant::now();
    let run = guests::run_on(k, &plan, opts, verbose);
    for w in model::diag::take() {
        model::say!("sigbench: {w}");
    }
    (run, started.elapsed())
}

/// A guest run's document, labelled `label` and stored; or why there is none (it did not
/// boot, failed, or brought nothing back). An interruption, or a store that cannot take
/// the run, is an error. `bisect` and `watch` keep their guests' runs this way.
pub fn store_run(
    store: &mut Store,
    label: &str,
    run: Result<vm::GuestRun>,
) -> Result<std::result::Result<RunDocument, String>> {
    let run = match run {
        Ok(r) => r,
        Err(e) => return Ok(Err(measure::interrupt::step_failed(e)?)),
    };
    if let Some(e) = run.error {
        // A guest stopped by a signal says so in its error: the signal ends the search
        // (exit 130), it does not skip the kernel.
        return Ok(Err(measure::interrupt::step_failed(e)?));
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
pub struct Kernels<'a> {
    pub steps: Steps<'a>,
    pub specs: Vec<(String, KernelSpec)>,
    pub releases: Vec<Option<String>>,
    /// Each kernel's package changelog, once it is unpacked (`Kernel::changelog`).
    pub changelogs: Vec<Option<std::path::PathBuf>>,
    pub jobs: usize,
    /// What a round measured ahead (prefetch), until `measure` asks for it.
    pub ahead: std::collections::HashMap<usize, Measured>,
    /// Measured elsewhere (`--slurm`: Slurm's tasks) instead of here.
    pub remote: Option<Box<dyn Remote + 'a>>,
}

/// What measures a round's kernels elsewhere, each into the store (`bisect --slurm`: one
/// Slurm job array): the runs each task stored, in the order of `tasks` (none where a task
/// stored nothing).
pub trait Remote {
    fn round(&self, signature: &str, tasks: &[RemoteTask]) -> Result<Vec<Vec<RunDocument>>>;
}

/// A remote lent to another user (a watch's bisect measures where the watch does).
impl<R: Remote + ?Sized> Remote for &R {
    fn round(&self, signature: &str, tasks: &[RemoteTask]) -> Result<Vec<Vec<RunDocument>>> {
        (**self).round(signature, tasks)
    }
}

/// One kernel of a remote round: the kernel as given (a package path, a version) and the
/// repetitions it lacks.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteTask {
    pub kernel: String,
    pub repetitions: u32,
}

/// A kernel of a round that lacks repetitions.
struct Short {
    i: usize,
    release: String,
    more: u32,
    /// Repetitions stored already: where the new ones' states start.
    stored: u32,
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
                    let why = measure::interrupt::step_failed(e)?;
                    self.ahead.insert(i, Measured::Failed(why));
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
                    stored: self.steps.stored_reps(i),
                });
            }
        }
        Ok(out)
    }

    /// Measure `wanted` (each with the repetitions it must have) elsewhere in one round
    /// ([`Remote`]); what each stored is read back.
    fn remotely(&mut self, wanted: &[(usize, u32)]) -> Result<()> {
        if self.remote.is_none() {
            return Ok(());
        }
        let short = self.short_of(wanted)?;
        let tasks: Vec<RemoteTask> = short
            .iter()
            .map(|s| RemoteTask {
                kernel: self.specs[s.i].0.clone(),
                repetitions: s.more,
            })
            .collect();
        let who = short.into_iter().map(|s| s.i);
        let signature = self.steps.plan.signature.name.clone();
        let Some(remote) = &self.remote else {
            return Ok(());
        };
        let runs = remote.round(&signature, &tasks)?;
        for (i, docs) in who.zip(runs) {
            if docs.is_empty() {
                self.ahead.insert(
                    i,
                    Measured::Failed(
                        "its remote task stored nothing (see the task's output)".into(),
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
        if self.remote.is_some() {
            return self.remotely(wanted);
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
                first_state: self.steps.plan.first_state + s.stored,
                ..self.steps.plan.clone()
            };
            model::say!(
                "sigbench: bisect: {}: {} repetition(s), side by side",
                s.release,
                s.more
            );
            boots.push(guests::Boot { name, spec, plan });
            who.push((s.i, s.release));
        }
        let opts = self.steps.opts.clone();
        let verbose = self.steps.verbose;
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
        if self.remote.is_some() {
            self.remotely(&[(i, reps)])?;
            if let Some(m) = self.ahead.remove(&i) {
                return Ok(m);
            }
            // Nothing was short: what is stored is reused below.
        }
        let (name, spec) = self.specs[i].clone();
        let k = match kernel::prepare(&spec, &name, &self.steps.opts.cache) {
            Ok(k) => k,
            Err(e) => return Ok(Measured::Failed(measure::interrupt::step_failed(e)?)),
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

/// Measure both ends (`0` and `last`) now, side by side where the measuring allows, so that
/// their profiles can be read before the search starts (which then finds them measured).
pub fn measure_ends_first(m: &mut dyn Measure, last: usize, reps: u32) -> Result<()> {
    m.prefetch(&[(0, reps), (last, reps)])?;
    for i in [0, last] {
        m.measure(i, reps)?;
    }
    Ok(())
}

/// The measured good step closest below `bad`.
pub fn last_good(outcome: &Outcome, bad: usize) -> Option<usize> {
    outcome
        .steps
        .iter()
        .filter(|s| s.call == Call::Good && s.index < bad)
        .map(|s| s.index)
        .max()
}

/// A finished bisect: its outcome, the steps' names and runs, and what was found before
/// it (suspects, changelog lines); `report` is its document.
pub struct Bisected {
    pub outcome: crate::bisect::Outcome,
    /// Each kernel's (release) or commit's (`ID subject`) name, oldest first.
    pub names: Vec<String>,
    /// Where each came from (the file or argument), when that says more than its name.
    pub sources: Vec<Option<String>>,
    pub what: String,
    pub measured_now: Vec<usize>,
    /// The stored runs of every measured step, by index (for the evidence).
    pub docs: Vec<Option<Vec<RunDocument>>>,
    /// Ranked before bisecting (a tree with `--profile`).
    pub suspects: Vec<crate::bisect::suspects::Suspect>,
    /// A list with `--profile`: the functions whose time grew between the ends.
    pub suspect_functions: Vec<(String, f64)>,
    /// A list with `--profile`: the changelog lines between the last good and the first
    /// bad package that name those functions or their subsystems.
    pub changelog: Vec<crate::bisect::changelog::Mention>,
}

impl Bisected {
    /// The call stacks of step `g` and step `b` (both profiled).
    fn flame(&self, g: usize, b: usize) -> Option<crate::bisect::FlameStacks> {
        let runs = |i: usize| self.docs.get(i)?.clone().filter(|d| !d.is_empty());
        let label = |i: usize| {
            self.names[i]
                .split(' ')
                .next()
                .unwrap_or_default()
                .to_string()
        };
        let p = model::results::profiles(&[(label(g), runs(g)?), (label(b), runs(b)?)])?;
        let [(good, good_stacks, _), (bad, bad_stacks, _)]: [_; 2] = p.labels.try_into().ok()?;
        Some(crate::bisect::FlameStacks {
            case: format!("{}/N={}", p.dir, p.n),
            good,
            good_stacks,
            bad,
            bad_stacks,
        })
    }

    /// The last good step and the first bad one, each with its label (a kernel's release,
    /// a commit's id) and stored runs: what changed between them is the bisect's evidence.
    pub fn first_change(&self) -> Option<[(String, &[RunDocument]); 2]> {
        let bad = self.outcome.first_bad?;
        let good = last_good(&self.outcome, bad)?;
        let side = |i: usize| {
            let runs = self.docs.get(i)?.as_deref().filter(|d| !d.is_empty())?;
            let label = self.names[i].split(' ').next().unwrap_or_default();
            Some((label.to_string(), runs))
        };
        Some([side(good)?, side(bad)?])
    }

    /// The bisect as its document has it (`report::bisect::report_of` adds what changed
    /// from the last good step to the first bad one).
    pub fn report(&self, signature: &str) -> crate::bisect::Report {
        let mut report = crate::bisect::Report::new(
            self.what.clone(),
            signature.to_string(),
            self.names.clone(),
            self.outcome.clone(),
        );
        report.suspects = self.suspects.clone();
        report.flame_stacks = self
            .outcome
            .first_bad
            .and_then(|i| Some((last_good(&self.outcome, i)?, i)))
            .and_then(|(g, b)| self.flame(g, b));
        report.suspect_functions = self
            .suspect_functions
            .iter()
            .map(|(f, t)| crate::bisect::suspects::Grown {
                function: f.clone(),
                added_ms: *t,
            })
            .collect();
        report.changelog = self.changelog.clone();
        report
    }
}
