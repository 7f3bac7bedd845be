//! `sigbench watch [SIGNATURE] --kernels K1 … Kn [run options]`: notice a change in a
//! series of kernels by itself. The kernels (release order) are measured as `run --kernel`
//! does — only those the store lacks, `--jobs` at a time, every `--every`-th first — and
//! stored labelled by release; every metric's change points are found
//! (`stats::changepoint`); a change the store does not know yet is measured again
//! (the last kernel before and the first after, interleaved) and, when the verdict engine
//! confirms it, bisected over the kernels between that were not measured, written as a
//! report (`--report-dir`, text and HTML) and handed to `--exec`. `--ack ID` silences a
//! change; `--changes` lists what the store remembers.

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

#[derive(clap::Args)]
#[command(group = clap::ArgGroup::new("stored").args(["series", "series_glob"]))]
pub struct WatchArgs {
    /// The series, oldest to newest: .deb files (sorted by their Debian version when all
    /// are .deb), IMAGE[:MODULES] or build trees as --kernel takes
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
    /// Run this (with `sh -c`) once per new alert: the report's path is $1 (and
    /// $SIGBENCH_REPORT)
    #[arg(long, value_name = "CMD")]
    exec: Option<String>,
    /// Silence change point ID (as `--changes` lists them) and exit
    #[arg(long, value_name = "ID", conflicts_with = "watch_kernels")]
    ack: Option<i64>,
    /// List the change points the store remembers and exit
    #[arg(long, conflicts_with_all = ["watch_kernels", "ack"])]
    changes: bool,
    /// Everything `run` takes: the signature, --fs, -n, --dir, -r (repetitions per kernel)…
    #[command(flatten)]
    run: super::measure::Args,
}

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
}

impl Watch<'_> {
    fn say(&self, msg: &str) {
        sigbench::say!("sigbench: watch: {msg}");
    }

    /// Runs of `plan` on kernel `i` as boots (`reps` repetitions each), `jobs` at once;
    /// each stored under the kernel's release as it comes. Returns the documents, per boot.
    fn boot(&mut self, wanted: &[(usize, u32)]) -> Result<Vec<Option<RunDocument>>> {
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
                match super::bisect::store_run(store, &names[i], booted.map(|(_, run)| run))? {
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

    /// How many repetitions of kernel `i` are stored or measured.
    fn reps(&self, i: usize) -> u32 {
        self.points[i]
            .iter()
            .map(|d| d.cases.iter().filter(|c| !c.warmup).count() as u32)
            .sum::<u32>()
            / (self.plan.dirs.len() * self.plan.n_values.len()).max(1) as u32
    }

    fn changes(&self) -> Vec<Change> {
        let series = sigbench::watch::metric_series(&self.points, self.timebase.noise_floor());
        let p = changepoint::Params {
            min_effect: self.args.min_effect / 100.0,
            ..Default::default()
        };
        changepoint::changes(&series, &p)
    }
}

pub fn run(args: WatchArgs) -> Result<i32> {
    if let Some(id) = args.ack {
        let store = Store::open(&args.run.store.db)?;
        let c = store.acknowledge(id)?;
        super::out(&format!(
            "change point {id} acknowledged: {} {} from {} to {}\n",
            c.series, c.metric, c.last_good, c.first_bad
        ))?;
        return Ok(0);
    }
    if args.changes {
        return list_changes(&args);
    }
    if !args.series.is_empty() || args.series_glob.is_some() {
        return over_stored(&args);
    }
    sigbench::interrupt::install()?;
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
    let mut o = super::measure::outputs(&args.run);
    if let Some(d) = &args.report_dir {
        if !d.is_dir() {
            bail!(
                "--report-dir {}: not a directory (create it first)",
                d.display()
            );
        }
        o = o.output("--report-dir", d.join("x"));
    }
    o.check()?;
    let plan = super::measure::plan_of(&args.run)?;
    let opts = super::measure::vm_options(&args.run)?;
    let rev_map = rev_map(&args)?;
    let list = super::bisect::ordered(&args.list)?;
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
    let found = w.changes();
    let stored = w.store.changes(Some(&key))?;
    let mut alerts = Vec::new();
    let mut out = String::new();
    // Changes by where they are: one confirmation (and one bisect) per pair of kernels.
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
                    .is_none_or(|k| stored[k].status == Status::New)
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
        let mut records = confirm(&mut w, &key, g, b, &here, &stored)?;
        let confirmed: Vec<usize> = (0..records.len())
            .filter(|&k| records[k].status == Status::Confirmed)
            .collect();
        if confirmed.is_empty() {
            super::outln!(
                out,
                "change from {} to {}: not confirmed (rejected)",
                w.names[g],
                w.names[b]
            );
            continue;
        }
        let report = localise(&mut w, g, b, &mut records, &confirmed)?;
        let commits = match &rev_map {
            Some(map) => to_commit(&mut w, map, &mut records, &confirmed)?,
            None => None,
        };
        for k in &confirmed {
            w.store.keep_change(&mut records[*k])?;
        }
        alerts.push((g, b, records, confirmed, report, commits));
    }
    for (g, b, mut records, confirmed, kernels, commits) in alerts {
        let lead = sigbench::watch::lead(&records, &confirmed, true);
        let mut cmds = commands(&w, g, b, &records[lead].metric);
        if let (Some(c), Some(dir)) = (&commits, &args.tree) {
            cmds.push(tree_command(&w, b, c, dir));
        }
        let bisected: Vec<_> = kernels.into_iter().chain(commits).collect();
        let reporting = Reporting {
            store: &w.store,
            names: &w.names,
            points: &w.points,
            timebase: &w.timebase,
            signature: w.plan.signature.name.clone(),
            case: case_lines(&w.points[b][0], &w.timebase, machine()),
            report_dir: args.report_dir.as_deref(),
            exec: args.exec.as_deref(),
        };
        let text = write_report(&reporting, g, b, &mut records[lead], &bisected, cmds)?;
        out.push_str(&text);
        out.push('\n');
        if confirmed.len() > 1 {
            let others: Vec<String> = confirmed
                .iter()
                .filter(|&&k| k != lead)
                .map(|&k| format!("{} (id {})", records[k].metric, records[k].id))
                .collect();
            super::outln!(out, "confirmed with it: {}\n", others.join(", "));
        }
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
    Ok(0)
}

/// The machine that runs the guests, as a report names it.
fn machine() -> String {
    let host = sigbench::host::Host::current();
    format!("{} ({}, {} CPUs)", host.hostname, host.cpu_model, host.cpus)
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

/// Measure the last kernel before the change (`g`) and the first after it (`b`) again,
/// interleaved (g, b, g, b), and judge each changed metric on those runs alone: the
/// verdict engine, Holm over the metrics, and the change in the direction found. Returns
/// each change as a record (stored), confirmed or rejected.
fn confirm(
    w: &mut Watch,
    key: &str,
    g: usize,
    b: usize,
    here: &[&Change],
    stored: &[ChangeRecord],
) -> Result<Vec<ChangeRecord>> {
    let half = w.args.confirm_reps.max(2).div_ceil(2);
    let docs = w.boot(&[(g, half), (b, half), (g, half), (b, half)])?;
    let side = |k: usize| -> Vec<RunDocument> {
        docs.iter().skip(k).step_by(2).flatten().cloned().collect()
    };
    let (good, bad) = (side(0), side(1));
    let judged = sigbench::watch::confirm(&good, &bad, here, w.timebase.noise_floor());
    let mut out = Vec::new();
    for (c, (confirmation, yes)) in here.iter().zip(judged) {
        let mut r = match sigbench::watch::known(c, &w.names, stored) {
            Some(k) => stored[k].clone(),
            None => sigbench::watch::new_record(key, c, &w.names),
        };
        let p = confirmation.as_ref().map_or(1.0, |k| k.p);
        r.confirmed = confirmation;
        r.status = if yes {
            Status::Confirmed
        } else {
            Status::Rejected
        };
        w.say(&format!(
            "{}: {} (p {p:.2e})",
            c.metric,
            if yes { "confirmed" } else { "rejected" }
        ));
        w.store.keep_change(&mut r)?;
        out.push(r);
    }
    Ok(out)
}

/// `--tree` with its map of releases to revisions (`--rev-map`, read and checked before
/// anything is measured), or None.
fn rev_map(args: &WatchArgs) -> Result<Option<(PathBuf, sigbench::watch::RevMap)>> {
    let Some(dir) = &args.tree else {
        return Ok(None);
    };
    sigbench::bisect::git::Repo::open(dir)?;
    let map = match &args.rev_map {
        Some(f) => {
            let meta =
                std::fs::metadata(f).with_context(|| format!("--rev-map {}", f.display()))?;
            if !meta.is_file() || meta.len() > 1 << 20 {
                bail!(
                    "--rev-map {}: not a map (a text file of `RELEASE REVISION` lines, at most 1 MiB)",
                    f.display()
                );
            }
            let text = std::fs::read_to_string(f)
                .with_context(|| format!("--rev-map {}: cannot read it", f.display()))?;
            sigbench::watch::RevMap::parse(&f.display().to_string(), &text)?
        }
        None => Default::default(),
    };
    Ok(Some((dir.clone(), map)))
}

/// The bisect steps and parameters for `metric` (`DIR/N=… NAME`) of the watched plan:
/// stored runs are reused, so a step measured once is never measured again.
fn bisect_setup<'a>(
    w: &'a Watch,
    metric: &str,
    count: usize,
) -> Result<(super::bisect::Steps<'a>, BisectParams)> {
    let (case, name) = metric.split_once(' ').unwrap_or(("", metric));
    let (dir, n) = case.rsplit_once("/N=").unwrap_or((case, "0"));
    let steps = super::bisect::Steps {
        args: &w.args.run,
        plan: &w.plan,
        opts: w.opts.clone(),
        store: Store::open(&w.args.run.store.db)?,
        resume: true,
        metric: name.to_string(),
        case: Some((dir.to_string(), n.parse().unwrap_or(0))),
        timebase: w.timebase.clone(),
        docs: vec![None; count],
        measured_now: Vec::new(),
    };
    let params = BisectParams {
        metric: name.to_string(),
        reps: w.args.run.repetitions.max(1),
        max_reps: w.args.max_reps.max(w.args.run.repetitions),
        alpha: 0.05,
        jobs: w.jobs,
    };
    Ok((steps, params))
}

fn progress(p: Progress) {
    match p {
        Progress::Note(msg) => sigbench::say!("sigbench: watch: bisect: {msg}"),
        Progress::Step { name, .. } => sigbench::say!("sigbench: watch: bisect: {name}"),
    }
}

/// A bisect that ended in an error other than an interrupt: said, and not an alert's end.
fn failed_bisect<T>(w: &Watch, e: anyhow::Error) -> Result<Option<T>> {
    if e.downcast_ref::<sigbench::interrupt::Interrupted>()
        .is_some()
    {
        return Err(e);
    }
    w.say(&format!("the bisect found nothing: {e:#}"));
    Ok(None)
}

/// Bisect the kernels between `g` and `b` that were not measured, on the confirmed metric
/// that moved most; the first bad one becomes the changes' culprit. With none between,
/// `b` is the culprit.
fn localise(
    w: &mut Watch,
    g: usize,
    b: usize,
    records: &mut [ChangeRecord],
    confirmed: &[usize],
) -> Result<Option<sigbench::bisect::Report>> {
    let between: Vec<usize> = (g + 1..b).filter(|&i| w.keys[i].is_some()).collect();
    let lead = sigbench::watch::lead(records, confirmed, false);
    if between.is_empty() {
        for &k in confirmed {
            records[k].culprit = Some(w.names[b].clone());
        }
        return Ok(None);
    }
    let metric = records[lead].metric.clone();
    let idx: Vec<usize> = std::iter::once(g)
        .chain(between)
        .chain(std::iter::once(b))
        .collect();
    w.say(&format!(
        "bisecting the {} kernel(s) between {} and {} on {metric}",
        idx.len() - 2,
        w.names[g],
        w.names[b]
    ));
    let (steps, params) = bisect_setup(w, &metric, idx.len())?;
    let mut m = super::bisect::Kernels {
        steps,
        specs: idx.iter().map(|&i| w.specs[i].clone()).collect(),
        releases: idx.iter().map(|&i| Some(w.names[i].clone())).collect(),
        jobs: w.jobs,
        ahead: Default::default(),
    };
    let outcome = match bisect(&mut m, idx.len(), &params, &mut progress) {
        Ok(o) => o,
        Err(e) => return failed_bisect(w, e),
    };
    let docs = std::mem::take(&mut m.steps.docs);
    drop(m);
    // What the bisect measured is part of the series from now on.
    for (j, &i) in idx.iter().enumerate() {
        if let Some(d) = &docs[j]
            && w.points[i].is_empty()
        {
            w.points[i] = d.clone();
        }
    }
    let names: Vec<String> = idx.iter().map(|&i| w.names[i].clone()).collect();
    let report = sigbench::bisect::Report::new(
        format!("{} kernels", idx.len()),
        w.plan.signature.name.clone(),
        names,
        outcome,
    );
    // The change now lies between the bisect's last good and first bad kernels.
    if let Some(f) = report.outcome.first_bad {
        let last_good = super::bisect::last_good(&report.outcome, f).unwrap_or(0);
        for &k in confirmed {
            records[k].last_good = report.kernels[last_good].clone();
            records[k].first_bad = report.kernels[f].clone();
            records[k].culprit = Some(report.kernels[f].clone());
            records[k].status = Status::Bisected;
        }
    }
    Ok(Some(report))
}

/// `--tree`: bisect the commits between the last good release and the first bad one
/// (each mapped to its revision) on the confirmed metric that moved most, as
/// `bisect --tree` does; the first bad commit becomes the changes' culprit.
fn to_commit(
    w: &mut Watch,
    (dir, map): &(PathBuf, sigbench::watch::RevMap),
    records: &mut [ChangeRecord],
    confirmed: &[usize],
) -> Result<Option<sigbench::bisect::Report>> {
    let lead = sigbench::watch::lead(records, confirmed, false);
    let r = &records[lead];
    let bad_release = r.culprit.clone().unwrap_or_else(|| r.first_bad.clone());
    let repo = sigbench::bisect::git::Repo::open(dir)?;
    let mut revs = Vec::new();
    for release in [&r.last_good, &bad_release] {
        let found = map
            .candidates(release)
            .into_iter()
            .find(|rev| repo.commit(rev).is_ok());
        match found {
            Some(rev) => revs.push(rev),
            None => {
                w.say(&format!(
                    "--tree {}: no revision for {release} (add `{release} REVISION` to --rev-map, or tag it): not bisected over the commits",
                    dir.display()
                ));
                return Ok(None);
            }
        }
    }
    let metric = r.metric.clone();
    w.say(&format!(
        "bisecting the commits from {} ({}) to {} ({}) on {metric}",
        r.last_good, revs[0], bad_release, revs[1]
    ));
    let range = super::bisect::TreeRange {
        dir,
        good: &revs[0],
        bad: &revs[1],
        config: w.args.config.as_deref(),
    };
    let (steps, params) = bisect_setup(w, &metric, 0)?;
    let done = match super::bisect::over_tree(&range, steps, &params, &mut progress) {
        Ok(d) => d,
        Err(e) => return failed_bisect(w, e),
    };
    let report = done.report(&w.plan.signature.name);
    if let Some(f) = &report.first_bad {
        for &k in confirmed {
            records[k].culprit = Some(f.clone());
            records[k].status = Status::Culprit;
        }
    }
    Ok(Some(report))
}

/// The test case block of a report, from a run of the series; `machine` is where it ran.
fn case_lines(d: &RunDocument, timebase: &TimeBase, machine: String) -> Vec<(String, String)> {
    let n: Vec<String> = d.plan.n.iter().map(u64::to_string).collect();
    [
        (
            "signature",
            format!("{} (sha256 {})", d.signature.name, d.signature.sha256),
        ),
        (
            "filesystem",
            format!(
                "{} (mkfs options '{}', mount options '{}')",
                d.testbed.fs,
                d.testbed.mkfs_opts.join(" "),
                d.testbed.mount_opts
            ),
        ),
        ("directories", d.plan.dirs.join(" | ")),
        ("N", n.join(", ")),
        ("clock", timebase.to_string()),
        ("machine", machine),
    ]
    .map(|(k, v)| (k.to_string(), v))
    .into()
}

/// `sigbench run SIGNATURE --fs FS -n N --dir …` for the plan of `d`.
fn run_command(signature: &str, d: &RunDocument) -> String {
    format!("sigbench run {signature} {}", plan_options(d))
}

/// The options that give a run's plan: `--fs FS -n N… [--dir DIR]…`.
fn plan_options(d: &RunDocument) -> String {
    let n: Vec<String> = d.plan.n.iter().map(u64::to_string).collect();
    let mut c = format!("--fs {} -n {}", d.testbed.fs, n.join(","));
    for dir in &d.plan.dirs {
        c.push_str(&format!(" --dir '{dir}'"));
    }
    c
}

/// The commands that measure the change again.
fn commands(w: &Watch, g: usize, b: usize, metric: &str) -> Vec<String> {
    let a = &w.args.run;
    let run = run_command(&a.signature, &w.points[b][0]);
    let metric_name = metric.split_once(' ').map_or(metric, |x| x.1);
    vec![
        format!(
            "{run} -r {} --kernel {} --kernel {}",
            w.args.confirm_reps.max(3),
            w.specs[g].0,
            w.specs[b].0
        ),
        format!(
            "sigbench bisect {} {} --kernels {} {} --metric {metric_name}",
            a.signature,
            plan_options(&w.points[b][0]),
            w.specs[g].0,
            w.specs[b].0
        ),
    ]
}

/// The `bisect --tree` that repeats the bisect over the commits: its ends, by commit id.
fn tree_command(
    w: &Watch,
    b: usize,
    r: &sigbench::bisect::Report,
    dir: &std::path::Path,
) -> String {
    let id = |k: Option<&String>| {
        k.and_then(|n| n.split_whitespace().next())
            .unwrap_or("?")
            .to_string()
    };
    let mut c = format!(
        "sigbench bisect {} {} --tree {} --good {} --bad {} --metric {}",
        w.args.run.signature,
        plan_options(&w.points[b][0]),
        dir.display(),
        id(r.kernels.first()),
        id(r.kernels.last()),
        r.outcome.metric
    );
    if let Some(config) = &w.args.config {
        c.push_str(&format!(" --config {}", config.display()));
    }
    c
}

/// What a report is written from, and where it goes.
struct Reporting<'a> {
    store: &'a Store,
    /// The series' points: names and runs.
    names: &'a [String],
    points: &'a [Vec<RunDocument>],
    timebase: &'a TimeBase,
    signature: String,
    case: Vec<(String, String)>,
    report_dir: Option<&'a std::path::Path>,
    /// `--exec`: run for confirmed changes only.
    exec: Option<&'a str>,
}

/// Write the report of a change (text and HTML into `--report-dir`), run `--exec` on it
/// when it is confirmed, and return its text.
fn write_report(
    r: &Reporting,
    g: usize,
    b: usize,
    change: &mut ChangeRecord,
    bisected: &[sigbench::bisect::Report],
    commands: Vec<String>,
) -> Result<String> {
    // The last good and first bad kernels' runs (all that are stored now).
    let cmp = compare(
        &[
            Samples::from_runs(&r.names[g], &r.points[g]),
            Samples::from_runs(&r.names[b], &r.points[b]),
        ],
        sigbench::stats::Test::MannWhitney,
        0.05,
    );
    let series = sigbench::watch::values(r.points, &change.metric, r.timebase.noise_floor())
        .into_iter()
        .enumerate()
        .map(|(i, v)| (r.names[i].clone(), v, i >= b))
        .collect();
    let alert = sigbench::report::watch::Alert {
        change,
        signature: r.signature.clone(),
        case: r.case.clone(),
        comparison: cmp,
        bisects: bisected.iter().collect(),
        series,
        commands,
    };
    let text = sigbench::report::watch::text(&alert);
    if let Some(dir) = r.report_dir {
        let stem = format!("change-{}", change.id);
        let doc = sigbench::report::watch::document(&alert)?;
        let html = sigbench::report::renderer(sigbench::report::Format::Html)
            .report(&doc, &stem)
            .map(|r| r.text)
            .unwrap_or_default();
        let (txt, page) = (
            dir.join(format!("{stem}.txt")),
            dir.join(format!("{stem}.html")),
        );
        std::fs::write(&txt, &text).with_context(|| format!("cannot write {}", txt.display()))?;
        std::fs::write(&page, html).with_context(|| format!("cannot write {}", page.display()))?;
        sigbench::say!(
            "sigbench: watch: wrote {} and {}",
            txt.display(),
            page.display()
        );
        change.report = Some(txt.display().to_string());
        r.store.keep_change(change)?;
        let confirmed = change.status.alerted();
        if let (Some(cmd), true) = (r.exec, confirmed) {
            let status = std::process::Command::new("sh")
                .args(["-c", cmd, "sh"])
                .arg(&txt)
                .env("SIGBENCH_REPORT", &txt)
                .status()
                .with_context(|| format!("cannot run --exec {cmd}"))?;
            if !status.success() {
                sigbench::say!("sigbench: watch: --exec {cmd} {}: {status}", txt.display());
            }
        }
    }
    Ok(text)
}

/// `--series LABEL… | --series-glob PATTERN`: the change points of what the store holds.
/// Each plan among the labels' runs is a series; a change the store does not know is
/// recorded as a candidate (nothing can be measured again: the runs may come from any
/// machine) and reported, `--exec` staying quiet until it is confirmed by measuring.
fn over_stored(args: &WatchArgs) -> Result<i32> {
    let store = Store::open(&args.run.store.db)?;
    let labels: Vec<String> = match &args.series_glob {
        Some(p) => {
            let pattern = glob::Pattern::new(p)
                .map_err(|e| anyhow::anyhow!("--series-glob {p}: not a pattern ({e})"))?;
            let all = store.labels()?;
            let hit: Vec<String> = all.into_iter().filter(|l| pattern.matches(l)).collect();
            if hit.is_empty() {
                bail!(
                    "--series-glob {p}: no stored label matches in {} (`sigbench runs` lists them)",
                    store.location
                );
            }
            hit
        }
        None => args.series.clone(),
    };
    let mut loaded = Vec::new();
    for l in &labels {
        let runs = store.load(&sigbench::store::Selector::Label(l.clone()))?;
        if runs.is_empty() {
            bail!(
                "--series {l}: no runs labelled so in {} (`sigbench runs` lists them)",
                store.location
            );
        }
        loaded.push((l.clone(), runs));
    }
    let p = changepoint::Params {
        min_effect: args.min_effect / 100.0,
        ..Default::default()
    };
    let mut out = String::new();
    let mut new = 0;
    for (key, points) in sigbench::watch::stored_series(&loaded, args.order) {
        let names: Vec<String> = points.iter().map(|(l, _)| l.clone()).collect();
        let docs: Vec<Vec<RunDocument>> = points.into_iter().map(|(_, d)| d).collect();
        let timebase = docs[0][0].host.timebase();
        sigbench::say!(
            "sigbench: watch: {key}: {} point(s): {}",
            names.len(),
            names.join(", ")
        );
        let series = sigbench::watch::metric_series(&docs, timebase.noise_floor());
        let found = changepoint::changes(&series, &p);
        let stored = store.changes(Some(&key))?;
        let mut at: Vec<(usize, usize)> = found
            .iter()
            .filter(|c| {
                sigbench::watch::known(c, &names, &stored).is_none()
                    && !sigbench::watch::reported(c, &names, &stored)
            })
            .map(|c| (c.last_before, c.first_after))
            .collect();
        at.sort_unstable();
        at.dedup();
        for (g, b) in at {
            let mut records: Vec<ChangeRecord> = found
                .iter()
                .filter(|c| {
                    (c.last_before, c.first_after) == (g, b)
                        && sigbench::watch::known(c, &names, &stored).is_none()
                })
                .map(|c| sigbench::watch::new_record(&key, c, &names))
                .collect();
            for r in &mut records {
                store.keep_change(r)?;
            }
            let all: Vec<usize> = (0..records.len()).collect();
            let lead = sigbench::watch::lead(&records, &all, true);
            let d = &docs[b][0];
            let machine = format!(
                "{} ({}, {} CPUs)",
                d.host.hostname, d.host.cpu_model, d.host.cpus
            );
            let reporting = Reporting {
                store: &store,
                names: &names,
                points: &docs,
                timebase: &timebase,
                signature: d.signature.name.clone(),
                case: case_lines(d, &timebase, machine),
                report_dir: args.report_dir.as_deref(),
                exec: None,
            };
            let commands = vec![
                format!(
                    "sigbench compare {} {} --db {}",
                    names[g], names[b], store.location
                ),
                format!(
                    "{} -r {} --kernel <{}'s kernel> --kernel <{}'s kernel>",
                    run_command(&d.signature.name, d),
                    args.confirm_reps.max(3),
                    names[g],
                    names[b]
                ),
            ];
            out.push_str(&write_report(
                &reporting,
                g,
                b,
                &mut records[lead],
                &[],
                commands,
            )?);
            let others: Vec<String> = all
                .iter()
                .filter(|&&k| k != lead)
                .map(|&k| format!("{} (id {})", records[k].metric, records[k].id))
                .collect();
            if !others.is_empty() {
                super::outln!(out, "found with it: {}", others.join(", "));
            }
            super::outln!(
                out,
                "\na candidate: measure both again to confirm it (`watch --kernels` does)\n"
            );
            new += 1;
        }
    }
    if new == 0 {
        super::outln!(out, "no new change in {} label(s)", labels.len());
    }
    super::out(&out)?;
    Ok(0)
}

/// `--changes`: what the store remembers, one line per change point.
fn list_changes(args: &WatchArgs) -> Result<i32> {
    use sigbench::report::table::{Align, Table};
    let store = Store::open_read(&args.run.store.db)?;
    let mut t = Table::new(
        "change points",
        &[
            ("id", Align::Right),
            ("status", Align::Left),
            ("metric", Align::Left),
            ("last good", Align::Left),
            ("first bad", Align::Left),
            ("change", Align::Right),
            ("series", Align::Left),
        ],
    );
    for c in store.changes(None)? {
        let ratio = c.ratio().unwrap_or(f64::NAN);
        t.push(vec![
            c.id.to_string(),
            c.status.name().into(),
            c.metric.clone(),
            c.last_good.clone(),
            c.culprit.clone().unwrap_or(c.first_bad.clone()),
            if ratio.is_finite() {
                format!("{:+.1} %", (ratio - 1.0) * 100.0)
            } else {
                "from 0".into()
            },
            c.series.clone(),
        ]);
    }
    super::out(&t.text())?;
    Ok(0)
}
