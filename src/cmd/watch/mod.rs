//! `sigbench watch [SIGNATURE] --kernels K1 … Kn [run options]`: notice a change in a
//! series of kernels by itself. The kernels (release order) are measured as `run --kernel`
//! does — only those the store lacks, `--jobs` at a time, every `--every`-th first — and
//! stored labelled by release; every metric's change points are found
//! (`stats::changepoint`); a change the store does not know yet is measured again
//! (the last kernel before and the first after, interleaved) and, when the verdict engine
//! confirms it, bisected over the kernels between that were not measured, written as a
//! report (`--report-dir`, text and HTML) and handed to `--exec`. `--ack ID` silences a
//! change; `--changes` lists what the store remembers.

use analyse::stats::changepoint;
use analyse::stats::compare::{Samples, compare};
use analyse::store::Store;
use analyse::store::changes::ChangeRecord;
use anyhow::{Context, Result, bail};
use measure::outputs::OutDir;
use measure::vm::guests;
use measure::vm::kernel;
use model::clock::TimeBase;
use model::metric::Metric;
use model::results::RunDocument;
use search::watch::locate::{Alert, examine};
use search::watch::series::{Settings, Watch, prepare};
use std::path::PathBuf;

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
    #[arg(
        long,
        value_parser = super::options::choice::<analyse::store::series::Order>(),
        default_value = "release",
        requires = "stored"
    )]
    order: analyse::store::series::Order,
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
    metrics: Vec<Metric>,
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

pub fn run(args: WatchArgs) -> Result<i32> {
    if args.slurm.slurm && args.list.is_empty() {
        bail!(
            "--slurm measures a series of kernels (--kernels): --series, --changes and --ack measure nothing"
        );
    }
    if let Some(id) = args.ack {
        let store = Store::open_existing(&args.run.store.db)?;
        let c = store.acknowledge(id, &measure::host::login())?;
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
    over_kernels(&args)
}

/// `--kernels`: measure the series where it lacks runs, find its changes, confirm, bisect
/// and report them.
fn over_kernels(args: &WatchArgs) -> Result<i32> {
    measure::interrupt::install()?;
    check(args)?;
    let rev_map = rev_map(args)?;
    let started = std::time::Instant::now();
    let mut w = watch_of(args)?;
    prepare(&mut w)?;
    let key = analyse::store::series::series_key(&w.plan.series_plan(), &w.timebase);
    let reps = args.run.repetitions.max(1);
    let first: Vec<(usize, u32)> = search::watch::every(w.specs.len(), args.every)
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
        reporting::report(args, &w, alert, &mut out)?;
    }
    let unjudged = search::watch::undecided(&w.points, &w.names);
    for line in &unjudged {
        model::say!("sigbench: watch: {line}");
    }
    if out.is_empty() {
        super::outln!(
            out,
            "no new change in {} kernels{}",
            w.specs.len(),
            if unjudged.is_empty() {
                ""
            } else {
                "; but some could not be judged (a busy machine, or times spread widely): stderr says which"
            }
        );
    }
    super::outln!(
        out,
        "{} run(s) measured now; {:.0} s",
        w.measured,
        started.elapsed().as_secs_f64()
    );
    super::out(&out)?;
    write_site(args, &w.store)?;
    if w.unconfirmed > 0 {
        model::say!(
            "sigbench: watch: {} change(s) could not be confirmed (exit 1): they stay new, and the next watch measures them again",
            w.unconfirmed
        );
        return Ok(1);
    }
    Ok(0)
}

/// The watch of `args`' series: its settings, machine, store, plan and remote.
fn watch_of(args: &WatchArgs) -> Result<Watch<'_>> {
    let req = super::measure::request(&args.run)?;
    let plan = req.plan()?;
    let opts = req.vm()?;
    let specs = kernel::booted_list(&args.list, "watch boots every kernel of the series")?;
    Ok(Watch {
        settings: Settings {
            metrics: args.metrics.clone(),
            min_effect: args.min_effect,
            confirm_reps: args.confirm_reps,
            repetitions: args.run.repetitions,
            max_reps: args.max_reps,
            verbose: req.verbose,
            db: req.store.clone(),
            config: args.config.clone(),
            jobs_asked: req.vm.jobs.is_some(),
        },
        timebase: opts.expected_machine()?.timebase(),
        jobs: guests::how_many(&opts, req.vm.jobs)?,
        store: Store::open(&req.store)?,
        plan,
        opts,
        names: Vec::new(),
        keys: Vec::new(),
        points: vec![Vec::new(); specs.len()],
        specs,
        measured: 0,
        unconfirmed: 0,
        remote: super::slurm::remote(&args.slurm, &req),
        build: measure::build::current(),
    })
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
            &[Label, Interleave, Slice, SplitReps, OpLog, Kconfig],
        )?;
    }
    check_report_dir(args)
}

/// `--site DIR`: the store as a static site, after the watch.
pub(super) fn write_site(args: &WatchArgs, store: &Store) -> Result<()> {
    if let Some(dir) = &args.site {
        let pages = present::site::write(store, dir, "--site")?;
        model::say!(
            "sigbench: watch: wrote the site ({pages} pages) to {}",
            dir.display()
        );
    }
    Ok(())
}

/// The outputs, `--report-dir` among them, checked before anything is measured or
/// recorded: a directory, not the store, writable.
fn check_report_dir(args: &WatchArgs) -> Result<()> {
    let mut o = super::measure::request(&args.run)?.outputs();
    for k in &args.list {
        o = o.kernel(k);
    }
    for (what, f) in [
        ("--tree", &args.tree),
        ("--config", &args.config),
        ("--rev-map", &args.rev_map),
    ] {
        if let Some(f) = f {
            o = o.input(what, f);
        }
    }
    let store = args.run.store.db.path().filter(|_| !args.run.no_store);
    if let Some(d) = &args.report_dir {
        let created = !d.exists();
        // Created here, before anything is measured (with its parents, as `mkdir -p`);
        // a link is refused.
        let dir = OutDir::open("--report-dir", d, store)?;
        if created {
            model::say!("sigbench: watch: created --report-dir {}", d.display());
        }
        // Writable by this process (root passes mode bits, not a read-only mount).
        dir.writable()
            .with_context(|| format!("--report-dir {}: cannot write there", d.display()))?;
    }
    if let Some(d) = &args.site {
        OutDir::open("--site", d, store)?.check("index.html")?;
    }
    o.check()
}

/// `--tree` with its map of releases to revisions (`--rev-map`, read and checked before
/// anything is measured), or None.
fn rev_map(args: &WatchArgs) -> Result<Option<(PathBuf, search::watch::RevMap)>> {
    let Some(dir) = &args.tree else {
        return Ok(None);
    };
    search::bisect::git::Repo::open(dir)?;
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
            search::watch::RevMap::parse(&f.display().to_string(), &text)?
        }
        None => Default::default(),
    };
    Ok(Some((dir.clone(), map)))
}
