//! `sigbench bisect [SIGNATURE] --kernels K1 … Kn --metric M [run options]`: the first bad
//! kernel of an ordered list, every step booted as `run --kernel` does and stored as a run
//! labelled by its release (`--resume` reuses what is stored).
//!
//! `sigbench bisect --tree DIR --good REV --bad REV [--config FILE]`: the first bad commit
//! of a kernel git tree (`tree`): `git bisect` picking the commits, or with `--jobs J` over
//! a linear range J commits a round, each booted while the next builds; each is built in
//! the tree (`kbuild`), booted from it, and stored as a run labelled by its 12-digit
//! commit id.

use analyse::store::Store;
use anyhow::{Result, bail};
use measure::vm::guests;
use model::metric::Metric;
use search::bisect::steps::{Bisected, Steps};
pub(super) use search::bisect::tree::{TreeRange, over_tree};
use search::bisect::{Call, Params, Progress};

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
    metric: Metric,
    /// Repetitions an undecidable step may grow to before it is skipped
    #[arg(long, default_value_t = 12)]
    max_reps: u32,
    /// Reuse the steps already stored (same signature and plan), e.g. after Ctrl-C
    #[arg(long)]
    resume: bool,
    /// The same as --json: the outcome (first bad, the steps, each verdict) as JSON
    #[arg(long = "bisect-json", value_name = "FILE")]
    bisect_json: Option<String>,
    /// Write the finding as a mail to send (plain text, lines of at most 72 columns, the
    /// reproducer attached): the subject, what changed from the last good step to the
    /// first bad one, the bisect, the environment
    #[arg(long, value_name = "FILE")]
    mail: Option<std::path::PathBuf>,
    #[command(flatten)]
    slurm: super::slurm::SlurmArgs,
    /// Everything `run` takes: the signature, --fs, -n, --dir, -r (repetitions per step)…
    #[command(flatten)]
    run: super::measure::Args,
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
    measure::interrupt::install()?;
    let req = super::measure::request(&args.run)?;
    check(&args, &req)?;
    let plan = req.plan()?;
    let opts = req.vm()?;
    let params = Params {
        metric: args.metric.clone(),
        reps: args.run.repetitions.max(1),
        max_reps: args.max_reps.max(args.run.repetitions),
        alpha: 0.05,
        jobs: guests::how_many(&opts, req.vm.jobs)?,
    };
    let started = std::time::Instant::now();
    let mut progress = progress(started);
    let steps = Steps {
        plan: &plan,
        verbose: req.verbose,
        timebase: opts.expected_machine()?.timebase(),
        opts,
        store: Store::open(&req.store)?,
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
                jobs_asked: req.vm.jobs.is_some(),
            };
            over_tree(&range, steps, &params, &mut progress)?
        }
        None => search::bisect::list::over_list(
            &args.list,
            steps,
            &params,
            super::slurm::remote(&args.slurm, &req),
            &mut progress,
        )?,
    };
    let mut report = present::report::bisect::report_of(&done, &plan.signature.name);
    let reproducer = done
        .first_change()
        .and_then(|[_, (_, runs)]| runs.last())
        .and_then(|run| present::repro::Reproducer::of_run_or_say(run, "bisect"));
    report.reproducer = reproducer.as_ref().and_then(|r| r.file());
    if let Some(path) = &args.mail {
        mail(path, &done, &report, reproducer.as_ref())?;
    }
    let mut o = format!(
        "bisect of {} on {}, metric {}\n",
        report.signature, report.what, args.metric
    );
    o.push_str(&present::report::bisect::steps_table(&report).text());
    let code = conclusion(&mut o, &done, report.changed.as_ref());
    tally(&mut o, &done, args.tree.is_some(), started);
    if let Some(dest) = args.bisect_json.as_ref().or(args.run.json.as_ref()) {
        measure::outputs::write_json(&report, dest)?;
    }
    super::out(&o)?;
    Ok(code)
}

/// What `bisect` refuses before anything runs: options it has no use for, outputs that
/// would overwrite the store or an input.
fn check(args: &BisectArgs, req: &search::request::RunRequest) -> Result<()> {
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
        let mut o = req.outputs();
        for k in &args.list {
            o = o.kernel(k);
        }
        if let Some(t) = &args.tree {
            o = o.input("--tree", t);
        }
        if let Some(c) = &args.config {
            o = o.input("--config", c);
        }
        if let Some(j) = &args.bisect_json {
            o = o.output("--bisect-json", j);
        }
        if let Some(m) = &args.mail {
            o = o.output("--mail", m);
        }
        o.check()?;
    }
    {
        use super::measure::RunOption::*;
        // Steps are labelled by release or commit, booted one kernel at a time.
        super::measure::refuse(
            &args.run,
            "bisect",
            &[Label, Interleave, Slice, SplitReps, OpLog, Kconfig],
        )?;
    }
    Ok(())
}

/// Progress on stderr: each note, and each step with the time left at the rate so far.
fn progress(started: std::time::Instant) -> impl FnMut(Progress) {
    move |p: Progress| {
        let t = started.elapsed().as_secs_f64();
        match p {
            Progress::Note(msg) => model::say!("sigbench: bisect [{t:.0} s]: {msg}"),
            Progress::Step { k, of, name } => {
                // The two ends and k - 1 steps took `t`; about of - k + 1 steps are left.
                let eta = t / (k + 1) as f64 * (of + 1).saturating_sub(k) as f64;
                model::say!(
                    "sigbench: bisect [{t:.0} s]: step {k} of ~{of}: {name} (about {} left)",
                    duration(eta)
                )
            }
        }
    }
}

/// The last line: steps measured now and taken from the store, and the time it took.
fn tally(o: &mut String, done: &Bisected, tree: bool, started: std::time::Instant) {
    super::outln!(
        *o,
        "{} {} measured now, {} from the store; {:.0} s",
        done.outcome
            .steps
            .iter()
            .filter(|s| done.measured_now.contains(&s.index))
            .count(),
        if tree { "commits" } else { "kernels" },
        done.outcome
            .steps
            .iter()
            .filter(|s| !s.samples.is_empty() && !done.measured_now.contains(&s.index))
            .count(),
        started.elapsed().as_secs_f64()
    );
}

/// The skipped steps, the first bad one with its evidence (what changed from the last
/// good one to it), or the candidates skips leave open. Returns the exit code.
fn conclusion(o: &mut String, b: &Bisected, changed: Option<&search::bisect::Changed>) -> i32 {
    let (names, outcome) = (&b.names, &b.outcome);
    let mut skipped: Vec<&search::bisect::Step> = outcome
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
        for line in search::bisect::suspects::lines(&b.suspects, 5) {
            super::outln!(o, "  {line}");
        }
    }
    if let Some(c) = changed {
        o.push('\n');
        o.push_str(&present::report::table::from_changed(c).text());
    }
    0
}

/// `--mail`: the last good and first bad steps' runs compared, the bisect, the
/// environment of the first bad one, its reproducer attached.
fn mail(
    path: &std::path::Path,
    done: &Bisected,
    report: &search::bisect::Report,
    reproducer: Option<&present::repro::Reproducer>,
) -> Result<()> {
    use analyse::stats::compare::{Samples, compare};
    let Some([(good, g), (bad, x)]) = done.first_change() else {
        model::say!(
            "sigbench: bisect: no mail written: no first bad step with runs on both sides of it"
        );
        return Ok(());
    };
    let Some(run) = x.last() else {
        return Ok(());
    };
    let cmp = compare(
        &[Samples::from_runs(&good, g), Samples::from_runs(&bad, x)],
        analyse::stats::Test::MannWhitney,
        0.05,
    );
    let words: Vec<String> = std::iter::once("sigbench".to_string())
        .chain(std::env::args().skip(1))
        .collect();
    let commands = vec![model::shell::CommandLine(words)];
    let m = present::report::mail::mail(&present::report::mail::Telling {
        comparison: &cmp,
        run,
        bisect: Some(report),
        reproducer,
        commands: &commands,
    });
    measure::outputs::write_file(
        path,
        m.message(&measure::host::mail_from(), &model::stamp::now_rfc5322())
            .as_bytes(),
    )?;
    model::say!("sigbench: bisect: wrote {} ({})", path.display(), m.subject);
    Ok(())
}
