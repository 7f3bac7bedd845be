//! `sigbench judge --kernel K --baseline LABEL [--metric M] [run options]`: one step of a
//! `git bisect run` someone drives themselves. Runs the plan on K (booted as `run --kernel`
//! does, or `host`), stores it, and compares it with a stored baseline with the verdict
//! engine: exit 0 good, 1 bad (a regression beyond the minimum effect), 125 skip (the
//! kernel did not boot or the data cannot decide), 128 on any error (stops the bisect).

use analyse::stats::Test;
use analyse::stats::compare::{
    DEFAULT_MIN_EFFECT_PCT, Samples, Verdict, busy_verdict, cannot_judge, compare_metrics, verdict,
};
use analyse::store::{Store, runs_of};
use anyhow::{Result, bail};
use measure::plan::Plan;
use measure::vm::kernel;
use model::clock::TimeBase;
use model::metric::{Metric, list};
use model::results::RunDocument;
use search::request::RunRequest;

#[derive(clap::Args)]
pub struct JudgeArgs {
    /// The stored label of the known-good kernel's results
    #[arg(long)]
    baseline: String,
    /// Metrics that tell good from bad (default wall_ms)
    #[arg(long = "metric", value_name = "NAME")]
    metrics: Vec<Metric>,
    /// Minimum effect in percent a significant change must clear to be "bad"
    #[arg(long, default_value_t = DEFAULT_MIN_EFFECT_PCT)]
    min_effect: f64,
    /// Everything `run` takes: the signature, --kernel (exactly one), --fs, -n, -r…
    #[command(flatten)]
    run: super::measure::Args,
}

pub fn run(args: JudgeArgs) -> Result<i32> {
    measure::interrupt::install()?;
    if args.run.kernels.len() != 1 {
        bail!("judge needs exactly one --kernel (a build tree, an image, a .deb, or host)");
    }
    if !(args.min_effect.is_finite() && args.min_effect >= 0.0) {
        bail!("--min-effect must be a percentage ≥ 0");
    }
    let metrics = if args.metrics.is_empty() {
        vec![Metric::wall()]
    } else {
        args.metrics.clone()
    };
    {
        use super::measure::RunOption::*;
        // One kernel, stored: that is what the next step compares with.
        super::measure::refuse(
            &args.run,
            "judge",
            &[Interleave, Slice, SplitReps, NoStore, Kconfig],
        )?;
    }
    let req = super::measure::request(&args.run)?;
    req.outputs().check()?;
    let plan = req.plan()?;
    // The baseline must exist before anything is booted.
    let mut store = None;
    let (base_label, base_runs) = runs_of(&args.baseline, &req.store, &mut store, false)?;
    drop(store);
    check_baseline(&base_label, &base_runs, &plan, &metrics)?;
    let spec = kernel::KernelSpec::parse(&req.kernels[0])?;
    check_clock(&req, &spec, &base_label, &base_runs, &metrics)?;
    let measured = if spec == kernel::KernelSpec::Host {
        measure_here(&req, &plan)?
    } else {
        measure_in_guest(&req, &plan, &spec)?
    };
    let Some(doc) = measured else {
        return Ok(SKIP);
    };
    if let Some(dest) = &req.json {
        measure::outputs::write_json(&doc, dest)?;
    }
    decide(&args, &metrics, &base_label, &base_runs, &doc)
}

/// `git bisect run`'s "skip this commit".
const SKIP: i32 = 125;

/// A time measured on another clock than the baseline's cannot be judged: said before
/// anything is booted.
fn check_clock(
    run: &RunRequest,
    spec: &kernel::KernelSpec,
    base_label: &str,
    base_runs: &[RunDocument],
    metrics: &[Metric],
) -> Result<()> {
    let here = if *spec == kernel::KernelSpec::Host {
        TimeBase::Hardware
    } else {
        run.vm()?.expected_machine()?.timebase()
    };
    let times: Vec<&Metric> = metrics
        .iter()
        .filter(|m| m.kind().timed() && analyse::stats::compare::measured_in(base_runs, m))
        .collect();
    let bases: std::collections::BTreeSet<TimeBase> = base_runs
        .iter()
        .map(|d| d.host.timebase())
        .chain([here])
        .collect();
    if let (Some(m), Some(why)) = (times.first(), model::clock::mixed(&bases)) {
        bail!(
            "judge: --metric {m} of {base_label}: {why}; measure the baseline with the same --clock"
        );
    }
    Ok(())
}

/// The plan on this kernel, stored; None when the run failed (skip this step).
fn measure_here(run: &RunRequest, plan: &Plan) -> Result<Option<RunDocument>> {
    let s = Store::open(&run.store)?;
    let (doc, outcome, store_error) =
        super::run::run_here(&super::run::Here::of(run), plan, Some(s));
    if let Some(e) = store_error {
        bail!("could not store the results: {e}");
    }
    match outcome {
        Ok(()) => Ok(Some(doc)),
        Err(e) if measure::interrupt::Interrupted::caused(&e) => Err(e),
        Err(e) => {
            model::say!("sigbench: judge: the run failed, skip this one: {e:#}");
            Ok(None)
        }
    }
}

/// The plan in a guest of the kernel `spec`, stored; None when it did not boot or gave no
/// results (skip this step).
fn measure_in_guest(
    run: &RunRequest,
    plan: &Plan,
    spec: &kernel::KernelSpec,
) -> Result<Option<RunDocument>> {
    let opts = run.vm()?;
    let outcome = kernel::prepare(spec, &run.kernels[0], &opts.cache)
        .and_then(|k| super::run::guest_run(run, plan, &k, &opts));
    let guest = match outcome {
        Ok(r) => r,
        Err(e) if measure::interrupt::Interrupted::caused(&e) => return Err(e),
        Err(e) => {
            model::say!("sigbench: judge: {e:#}; skip this one");
            return Ok(None);
        }
    };
    match (guest.doc, guest.error) {
        (Some(mut doc), None) => {
            if let Some(l) = &run.label {
                doc.label = l.clone();
            }
            Store::open(&run.store)?.import(&doc)?;
            Ok(Some(doc))
        }
        (_, Some(e)) => {
            model::say!("sigbench: judge: {e:#}; skip this one");
            Ok(None)
        }
        (None, None) => {
            model::say!("sigbench: judge: no results; skip this one");
            Ok(None)
        }
    }
}

/// The verdict of `doc` against the baseline, said, as the exit code.
fn decide(
    args: &JudgeArgs,
    metrics: &[Metric],
    base_label: &str,
    base_runs: &[RunDocument],
    doc: &RunDocument,
) -> Result<i32> {
    let samples = [
        Samples::from_runs(base_label, base_runs),
        Samples::from_runs(&doc.label, std::slice::from_ref(doc)),
    ];
    let judged = compare_metrics(&samples, Test::MannWhitney, 0.05, Some(metrics));
    let known: std::collections::BTreeSet<&Metric> = samples
        .iter()
        .flat_map(|s| s.cases.values().flat_map(|m| m.keys()))
        .collect();
    if let Some(m) = metrics.iter().find(|m| !known.contains(m)) {
        bail!(
            "--metric {m}: no such metric here (metrics: {})",
            list(known)
        );
    }
    if let Some(why) = cannot_judge(&judged, metrics) {
        bail!("judge: {why}");
    }
    let v = verdict(&judged, metrics, args.min_effect);
    model::say!(
        "sigbench: judge: {} vs {base_label} on {}: {}",
        doc.label,
        list(metrics),
        match v {
            Verdict::NoRegression => "good".to_string(),
            Verdict::Regression => "bad".to_string(),
            Verdict::Undecidable => "cannot decide (skip; more repetitions: -r)".to_string(),
            Verdict::Busy => format!("{} (skip)", busy_verdict(&judged, metrics)),
        }
    );
    Ok(v.exit_code())
}

/// The baseline must have a case of this plan (its signature, a directory and an N) and
/// the judged metrics, or no step could ever be judged: an error (128) before anything
/// runs, not a "skip" after a run that is then stored.
fn check_baseline(
    label: &str,
    runs: &[model::results::RunDocument],
    plan: &measure::plan::Plan,
    metrics: &[Metric],
) -> Result<()> {
    let base = Samples::from_runs(label, runs);
    let shared: Vec<_> = base
        .cases
        .iter()
        .filter(|(k, _)| {
            k.signature == plan.signature.name
                && plan.dirs.iter().any(|d| d.name == k.dir)
                && plan.n_values.contains(&k.n)
        })
        .collect();
    if shared.is_empty() {
        let had: Vec<String> = base
            .cases
            .keys()
            .map(|k| format!("{} {}", k.signature, k.short()))
            .collect();
        bail!(
            "judge: the baseline {label} has no case of this plan ({} in {} at N = {}); it has {}",
            plan.signature.name,
            plan.dirs
                .iter()
                .map(|d| d.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            plan.n_values
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(","),
            if had.is_empty() {
                "no complete case".to_string()
            } else {
                had.join(", ")
            }
        );
    }
    let known: std::collections::BTreeSet<&Metric> =
        shared.iter().flat_map(|(_, m)| m.keys()).collect();
    if let Some(m) = metrics.iter().find(|m| !known.contains(m)) {
        bail!(
            "judge: --metric {m}: the baseline {label} has no such metric (metrics: {})",
            list(known)
        );
    }
    Ok(())
}
