//! `sigbench minimize SIG.toml --until PREDICATE -o MIN.toml [run options]`: shrink a
//! signature to the steps that still show an effect (the library's `minimize`).

use anyhow::{Context, Result, bail};
use measure::signature::Signature;
use search::minimize::{Budget, InGuest, Minimizer, Predicate, RunJudge, Source};
use std::time::Instant;

#[derive(clap::Args)]
pub struct MinimizeArgs {
    /// What must stay true, e.g. 'inode_evictions >= N', 'ratio(wall_ms, zstd/uncompressed) > 3',
    /// 'create.slabinfo.maple_node.active_objs > 1000' (docs/minimize.md)
    #[arg(long, value_name = "PREDICATE")]
    until: String,
    /// Where to write the minimized signature
    #[arg(short = 'o', long = "output", value_name = "MIN.toml")]
    output: std::path::PathBuf,
    /// Repetitions per evaluation: a candidate keeps the effect only if the predicate holds
    /// in every one (default: -r, at least 3)
    #[arg(long, value_name = "R")]
    reps: Option<u32>,
    /// Keep the directories' properties (compression, chattr…) as they are
    #[arg(long)]
    keep_dir_props: bool,
    /// Stop after this many evaluations and keep the smallest signature found so far
    #[arg(long, value_name = "N", default_value_t = Budget::DEFAULT.max_evals)]
    max_evals: usize,
    /// Stop after this many seconds (checked between evaluations) and keep the smallest
    /// signature found so far
    #[arg(long, value_name = "SECS", default_value_t = Budget::DEFAULT.max_time.as_secs())]
    max_time: u64,
    /// Everything `run` takes: the signature, --fs, -n, --dir, --device, options…
    #[command(flatten)]
    run: super::measure::Args,
}

pub fn run(args: MinimizeArgs) -> Result<i32> {
    measure::interrupt::install()?;
    // A bad predicate is one line before anything runs.
    let predicate = Predicate::parse(&args.until)?;
    {
        use super::measure::RunOption::*;
        // Candidates are replayed, judged and thrown away: nothing is stored or written
        // but the minimal signature (-o).
        super::measure::refuse(
            &args.run,
            "minimize",
            &[Json, Label, Interleave, Slice, SplitReps, Kconfig],
        )?;
    }
    // -o is written after the whole search: it must be writable, and not the signature
    // or the store, before the search starts.
    let req = super::measure::request(&args.run)?;
    req.outputs().output("-o", &args.output).check()?;
    let plan = req.plan()?;
    let sig: &Signature = &plan.signature;
    let source = Source::parse(&sig.source, &sig.origin)?;
    let dirs: Vec<String> = plan.dirs.iter().map(|d| d.text.clone()).collect();
    let start = source.whole(dirs);
    if args.reps == Some(0) {
        bail!("--reps: at least one repetition per evaluation");
    }
    let reps = args.reps.unwrap_or(args.run.repetitions.max(3));
    let guest = in_guest(&req, &plan)?;
    // A plan that cannot run here is one line now, not "the predicate does not hold"
    // after a replay that failed (a guest says so itself).
    if guest.is_none() {
        plan.check_fits()?;
    }
    let width = guest.as_ref().map_or(1, |g| g.jobs);
    let on = guest
        .as_ref()
        .map_or(String::new(), |g| format!(" on kernel {}", g.release));
    let mut judge = RunJudge {
        plan: plan.clone(),
        predicate: predicate.clone(),
        reps,
        checked: false,
        guest,
    };
    if args.max_evals == 0 || args.max_time == 0 {
        bail!("--max-evals and --max-time must be at least 1");
    }
    let began = Instant::now();
    let mut m = Minimizer::new(source, &mut judge);
    m.width = width;
    m.budget = Budget {
        max_evals: args.max_evals,
        max_time: std::time::Duration::from_secs(args.max_time),
    };
    m.on_evaluation = progress(began, args.max_evals);
    let found = m.run(start.clone(), !args.keep_dir_props)?;
    if let Some(why) = &found.stopped {
        model::say!(
            "sigbench: minimize: {why}: writing the smallest signature found so far (not known to be 1-minimal)"
        );
    }
    let min = found.candidate;
    let removable = if found.stopped.is_some() {
        None
    } else {
        m.check_one_minimal(&min)?
    };

    let keeps = format!(
        "--until '{}' in every one of {reps} repetitions, N = {}, {}{on}",
        predicate.text,
        plan.n_values
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(","),
        plan.testbed.fs.name()
    );
    let removed = search::minimize::removed(sig, &start, &min);
    let header = header(sig, &keeps, &removed, &removable, &found.stopped);
    write_signature(&m.source.render(&min, &header)?, &args.output)?;
    let summary = format!(
        "\n{} evaluations in {:.1} s; {} → {} steps; 1-minimal: {}; wrote {}",
        m.log.len(),
        began.elapsed().as_secs_f64(),
        steps(&start),
        steps(&min),
        match &removable {
            Some(r) if r.is_empty() => "yes",
            Some(_) => "no",
            None => "unknown (budget)",
        },
        args.output.display()
    );
    super::out(&format!("{}{summary}\n", evaluations(&m.log)))?;
    Ok(0)
}

/// The steps of a candidate, over its phases.
fn steps(c: &search::minimize::Candidate) -> usize {
    c.phases.iter().map(|p| p.1.len()).sum()
}

/// The minimal signature `text`, checked to parse, written to `output` (-o).
fn write_signature(text: &str, output: &std::path::Path) -> Result<()> {
    Signature::parse(text, &output.display().to_string())
        .context("the minimized signature does not parse (a sigbench bug)")?;
    measure::outputs::write_file(output, text.as_bytes())
}

/// A line on stderr per evaluation: its stage, verdict, value and candidate, and how many
/// are left of the pass (pairs) with the time they should take at the rate so far.
fn progress(began: Instant, max_evals: usize) -> Box<dyn FnMut(&search::minimize::Evaluation)> {
    let mut done = 0usize;
    Box::new(move |e| {
        done += 1;
        // Side by side, evaluations share their time: the rate is what the clock says.
        let spent = began.elapsed().as_secs_f64();
        let left = e
            .left_in_pass
            .map(|n| {
                format!(
                    "; ≤{n} left in this pass, ~{:.0} s",
                    n as f64 * spent / done as f64
                )
            })
            .unwrap_or_default();
        model::say!(
            "sigbench: minimize: {:<16} {:<5} {:>10}  {:>6.1} s  {}  [{done}/{max_evals}{left}]",
            e.stage,
            if e.holds { "holds" } else { "no" },
            e.value,
            e.took.as_secs_f64(),
            e.candidate,
        );
    })
}

/// The minimized signature's leading comments: where it came from, what it keeps, what
/// was removed, whether it is 1-minimal.
fn header(
    sig: &Signature,
    keeps: &str,
    removed: &[String],
    removable: &Option<Vec<String>>,
    stopped: &Option<String>,
) -> String {
    let mut header = format!(
        "# Minimized by `sigbench minimize` from {} ({}).\n# Keeps: {keeps}.\n# Removed:\n",
        sig.origin, sig.name,
    );
    if removed.is_empty() {
        header.push_str("#   (nothing: every step is needed)\n");
    }
    for r in removed {
        header.push_str(&format!("#   {r}\n"));
    }
    header.push_str(&format!(
        "# 1-minimal: {}\n",
        match (removable, stopped) {
            (Some(r), _) if r.is_empty() =>
                "yes, removing any single remaining step breaks the predicate".to_string(),
            (Some(r), _) => format!("no, these could go: {}", r.join(", ")),
            (None, Some(why)) => format!("unknown: the search stopped early ({why})"),
            (None, None) => "unknown: the budget ran out during the check".to_string(),
        }
    ));
    header
}

/// `--kernel K`: the candidates run in guests of K, `--jobs` at once; none: here, one at a
/// time (a host run has one testbed and the host's clock).
fn in_guest(
    req: &search::request::RunRequest,
    plan: &measure::plan::Plan,
) -> Result<Option<InGuest>> {
    use measure::vm::{boots, guests, kernel, kernel::KernelSpec};
    let spec = match req.kernels.as_slice() {
        [] => None,
        [k] => Some((k.clone(), KernelSpec::parse(k)?)),
        _ => {
            bail!("minimize runs on one kernel: give one --kernel (the one that shows the effect)")
        }
    };
    let Some(kernel) = spec.filter(|(_, s)| *s != KernelSpec::Host) else {
        if req.vm.jobs.is_some_and(|j| j > 1) {
            bail!(
                "--jobs: candidates run here one at a time (one testbed, the host's clock); with --kernel K they run in guests side by side"
            );
        }
        return Ok(None);
    };
    // What cannot go to a guest (a --device path) is refused before anything runs.
    boots::guest_plan(plan, req.verbose)?;
    let opts = req.vm()?;
    let jobs = guests::how_many(&opts, req.vm.jobs)?;
    // A kernel that cannot be unpacked, or cannot run the plan, is one line now, before
    // the search.
    measure::vm::preflight(std::slice::from_ref(&kernel), plan.testbed.fs, &opts)?;
    let release = kernel::prepare(&kernel.1, &kernel.0, &opts.cache)?.release;
    model::say!("sigbench: minimize: candidates run in guests of kernel {release}, {jobs} at once");
    Ok(Some(InGuest {
        kernel,
        release,
        opts,
        jobs,
        verbose: req.verbose,
    }))
}

/// The evaluations as a table, one line each.
fn evaluations(log: &[search::minimize::Evaluation]) -> String {
    let mut o = String::new();
    super::outln!(
        o,
        "{:<4} {:<18} {:<6} {:>12} {:>8}  candidate",
        "#",
        "stage",
        "holds",
        "value",
        "time s"
    );
    for (k, e) in log.iter().enumerate() {
        super::outln!(
            o,
            "{:<4} {:<18} {:<6} {:>12} {:>8.2}  {}",
            k + 1,
            e.stage,
            if e.holds { "yes" } else { "no" },
            e.value,
            e.took.as_secs_f64(),
            e.candidate
        );
    }
    o
}
