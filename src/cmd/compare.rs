//! `sigbench compare A B [C…]`: is B (and C…) different from A, by how much, and is it real?

use analyse::stats::Test;
use analyse::stats::compare::{
    Samples, Verdict, busy_verdict, cannot_judge, compare, compare_metrics, metric_names, verdict,
};
use analyse::store::runs_of;
use anyhow::{Result, bail};
use model::metric::{Metric, list};
use model::results;
use present::report::{Format, renderer};

/// The exit code of every error of `compare` (unknown label, missing file, bad option):
/// `git bisect run` stops on codes ≥ 128, where 1 would mark the commit bad and 125 skip it.
pub const ERROR_EXIT: i32 = 128;

#[derive(clap::Args)]
pub struct Args {
    /// Labels from the store (or JSON files from `run --json` / `export`); the first is the baseline
    /// Compare runs of signatures that share a name but not their content (by default
    /// refused: a minimized signature keeps its name)
    #[arg(long)]
    different_signatures: bool,
    /// Also use runs that did not complete (interrupted, killed, failed, running): the
    /// label says how many
    #[arg(long)]
    incomplete: bool,
    #[arg(required = true, num_args = 2..)]
    labels: Vec<String>,
    #[arg(long, value_enum, default_value = "text")]
    format: super::options::CompareFormat,
    /// Significance level
    #[arg(long, default_value_t = 0.05)]
    alpha: f64,
    /// Two-sample test: mann-whitney (no distribution assumed) or welch
    #[arg(long, value_parser = super::options::choice::<Test>(), default_value = "mann-whitney")]
    test: Test,
    /// Also show metrics without a significant change
    #[arg(long)]
    all: bool,
    /// Exit 1 on a significant regression beyond PCT percent (`regression` or
    /// `regression:5`), 0 without one, 125 when the data cannot decide, 128 on any error
    /// (for `git bisect run`: good, bad, skip, stop)
    #[arg(long, value_name = "regression[:PCT]")]
    fail_on: Option<String>,
    /// Metrics --fail-on judges (default: wall_ms, the timed window)
    #[arg(long = "metric", value_name = "NAME")]
    metrics: Vec<Metric>,
    /// Only runs measured on this machine (its hostname); repeatable
    #[arg(long = "machine", value_name = "HOST")]
    machines: Vec<String>,
    /// Compare each label's machines apart (LABEL@HOST)
    #[arg(long)]
    by_machine: bool,
    #[command(flatten)]
    store: super::options::StoreOptions,
}

pub fn run(args: Args) -> Result<i32> {
    let test = args.test;
    if !(0.0 < args.alpha && args.alpha < 1.0) {
        bail!("--alpha must be between 0 and 1, not {}", args.alpha);
    }
    let threshold = match args.fail_on.as_deref() {
        None => None,
        Some("regression") => Some(analyse::stats::compare::DEFAULT_MIN_EFFECT_PCT),
        Some(s) => match s
            .strip_prefix("regression:")
            .map(|p| p.trim_end_matches('%').parse::<f64>())
        {
            Some(Ok(p)) if p.is_finite() && p >= 0.0 => Some(p),
            _ => bail!("--fail-on takes `regression` or `regression:PCT` with PCT ≥ 0, not `{s}`"),
        },
    };
    let mut store = None;
    let mut sets = Vec::new();
    for l in &args.labels {
        let (label, runs) = runs_of(l, &args.store.db, &mut store, args.incomplete)?;
        // A label may come from anyone's export: never print its control characters.
        let label = present::report::table::escape_control(&label);
        let measured_on: std::collections::BTreeSet<String> = runs
            .iter()
            .map(|d| results::machine(d).to_string())
            .collect();
        let runs = results::on_machines(runs, &args.machines);
        if runs.is_empty() {
            bail!(
                "no runs of `{label}` on {} (it was measured on {})",
                args.machines.join(", "),
                measured_on.into_iter().collect::<Vec<_>>().join(", ")
            );
        }
        if args.by_machine {
            sets.extend(results::split_by_machine(&label, runs));
        } else {
            sets.push((label, runs));
        }
    }
    super::report::check_signatures(&sets, args.different_signatures)?;
    if let Some(w) = results::machines_warning(&sets).filter(|_| !args.by_machine) {
        model::say!("sigbench: warning: {w}");
    }
    if let Some(w) = results::builds_warning(&sets) {
        model::say!("sigbench: warning: {w}");
    }
    let samples: Vec<Samples> = sets
        .iter()
        .map(|(label, runs)| Samples::from_runs(label, runs))
        .collect();
    let cmp = compare(&samples, test, args.alpha);
    let known = metric_names(&cmp);
    if let Some(m) = args.metrics.iter().find(|m| !known.contains(m)) {
        bail!(
            "--metric {m}: no such metric in this comparison (metrics: {})",
            list(&known)
        );
    }
    let format = Format::from(args.format);
    let out = renderer(format)
        .comparison(&cmp, args.all)
        .expect("every --format choice renders a comparison");
    super::out(&out)?;
    // Machine formats carry no warnings: they go to stderr.
    if matches!(format, Format::Csv | Format::Json) {
        for w in &cmp.warnings {
            model::say!("sigbench: warning: {w}");
        }
    }
    let Some(pct) = threshold else { return Ok(0) };
    let metrics = if args.metrics.is_empty() {
        vec![Metric::wall()]
    } else {
        args.metrics.clone()
    };
    // The judge's own family: the judged metrics, named in advance.
    let judged = compare_metrics(&samples, test, args.alpha, Some(&metrics));
    if let Some(why) = cannot_judge(&judged, &metrics) {
        bail!("--fail-on: {why}");
    }
    let v = verdict(&judged, &metrics, pct);
    model::say!(
        "sigbench: {}",
        match v {
            Verdict::NoRegression => format!(
                "no significant regression of {} beyond {pct}%",
                list(&metrics)
            ),
            Verdict::Regression =>
                format!("significant regression of {} beyond {pct}%", list(&metrics)),
            Verdict::Undecidable => format!(
                "not enough data to decide on {} (more repetitions: -r)",
                list(&metrics)
            ),
            Verdict::Busy => busy_verdict(&judged, &metrics),
        }
    );
    Ok(v.exit_code())
}
