//! `sigbench report [LABELS…] -o report.html`: one self-contained page with plots.

use analyse::stats::Test;
use analyse::store::{Store, runs_of};
use anyhow::{Context, Result, bail};
use measure::outputs::Outputs;
use model::results::RunDocument;
use present::report::{document, renderer};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// Labels from the store or JSON files (default: every label with runs of the
    /// signature run last)
    labels: Vec<String>,
    /// Compare runs of signatures that share a name but not their content (by default
    /// refused: a minimized signature keeps its name)
    #[arg(long)]
    different_signatures: bool,
    /// Also use runs that did not complete (interrupted, killed, failed, running): the
    /// label says how many
    #[arg(long)]
    incomplete: bool,
    /// Output file (default: report.html; report.eml for --format email)
    #[arg(short, long)]
    output: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "html")]
    format: super::options::ReportFormat,
    /// Significance level of the comparisons
    #[arg(long, default_value_t = 0.05)]
    alpha: f64,
    /// Also list metrics without a significant change
    #[arg(long)]
    all: bool,
    /// Render a bisect (its --bisect-json file) instead of stored labels
    #[arg(long, value_name = "FILE", conflicts_with = "labels")]
    bisect: Option<PathBuf>,
    #[command(flatten)]
    store: super::options::StoreOptions,
}

pub fn run(mut args: Args) -> Result<i32> {
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| match args.format.document_format() {
            Some(_) => PathBuf::from("report.html"),
            None => PathBuf::from("report.eml"),
        });
    args.output = Some(output.clone());
    // Before anything is read: -o must not be the store, an input or a directory.
    let mut outputs = Outputs::new(args.store.db.path()).output("-o", &output);
    if let Some(f) = &args.bisect {
        outputs = outputs.input("the bisect document", f);
    }
    for l in args.labels.iter().filter(|l| Path::new(l).is_file()) {
        outputs = outputs.input("an input", l);
    }
    outputs.check()?;
    if let Some(f) = &args.bisect {
        return bisect_report(&args, f, &output);
    }
    let mut sets = label_sets(&args)?;
    check_signatures(&sets, args.different_signatures)?;
    // Labels may come from anyone's export: never print their control characters.
    for (label, _) in &mut sets {
        *label = present::report::table::escape_control(label);
    }
    one_signature(&mut sets)?;
    if args.format.document_format().is_none() {
        return mail(&args, &output, &sets);
    }
    let doc = document::build(&sets, Test::MannWhitney, args.alpha, args.all)?;
    write(&args, &doc)?;
    model::say!(
        "sigbench: wrote {} ({} label(s), {} plot(s))",
        output.display(),
        sets.len(),
        doc.figures.len()
    );
    Ok(0)
}

/// `report --bisect FILE`: the bisect document's page, its reproducer beside it.
fn bisect_report(args: &Args, f: &Path, output: &Path) -> Result<i32> {
    if args.format.document_format().is_none() {
        bail!("a bisect's mail needs its steps' runs: `sigbench bisect … --mail FILE` writes it");
    }
    let r = search::bisect::Report::read(f)?;
    let mut doc = present::report::bisect::document(&r)?;
    // The reproducer the bisect kept, beside the page and linked from it.
    if let Some(c) = &r.reproducer {
        let stem = output.file_stem().unwrap_or_default().to_string_lossy();
        let name = format!("{stem}.repro.c");
        let beside = output
            .parent()
            .map(PathBuf::from)
            .unwrap_or_default()
            .join(&name);
        Outputs::new(args.store.db.path())
            .input("the bisect document", f)
            .output("-o", output)
            .output("the reproducer", &beside)
            .check()?;
        measure::outputs::write_file(&beside, c.as_bytes())?;
        doc.files
            .push((name, present::report::mail::REPRO_ABOUT.into()));
    }
    write(args, &doc)?;
    model::say!(
        "sigbench: wrote {} (a bisect of {} steps)",
        output.display(),
        r.outcome.steps.len()
    );
    Ok(0)
}

/// The runs to report, per label: the labels named, else every label in the store (one
/// whose runs all stopped early is left out, not an error).
fn label_sets(args: &Args) -> Result<Vec<(String, Vec<RunDocument>)>> {
    let mut store: Option<Store> = None;
    let mut sets = Vec::new();
    if !args.labels.is_empty() {
        for l in &args.labels {
            sets.push(runs_of(l, &args.store.db, &mut store, args.incomplete)?);
        }
        return Ok(sets);
    }
    if !args.store.db.exists() {
        bail!(
            "no results database at {} (run `sigbench run` first, or pass --db or labels)",
            args.store.db
        );
    }
    store = Some(Store::open_read(&args.store.db)?);
    let s = store.as_ref().expect("opened");
    for label in s.labels()? {
        let (l, runs) = analyse::store::all_runs_of(&label, &args.store.db, &mut store)?;
        if args.incomplete || runs.iter().any(|r| r.status == "complete") {
            sets.push(analyse::store::keep_complete(
                &label,
                l,
                runs,
                args.incomplete,
            )?);
        }
    }
    Ok(sets)
}

/// One signature per report: the one run last; labels without runs of it are said and
/// left out.
fn one_signature(sets: &mut Vec<(String, Vec<RunDocument>)>) -> Result<()> {
    let last = sets
        .iter()
        .flat_map(|(_, r)| r.iter())
        .max_by(|a, b| a.started_at.cmp(&b.started_at))
        .map(|r| r.signature.name.clone())
        .context("no runs to report")?;
    let mut skipped = Vec::new();
    for (label, runs) in sets.iter_mut() {
        runs.retain(|r| r.signature.name == last);
        if runs.is_empty() {
            skipped.push(label.clone());
        }
    }
    sets.retain(|(_, r)| !r.is_empty());
    if !skipped.is_empty() {
        model::say!(
            "sigbench: reporting on {last}; no runs of it under {}",
            skipped.join(", ")
        );
    }
    Ok(())
}

/// The document in the format asked for, and the files that go beside it (Markdown's
/// plots, named after the output's stem).
fn write(args: &Args, doc: &present::report::document::Document) -> Result<()> {
    let output = args.output.as_deref().expect("set by run");
    let stem = output
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let format = args
        .format
        .document_format()
        .expect("a mail is written by `mail`");
    let r = renderer(format)
        .report(doc, &stem)
        .expect("every document --format renders a report");
    let dir = output.parent().map(PathBuf::from).unwrap_or_default();
    // The files beside it (Markdown's plots) are outputs too.
    r.files
        .iter()
        .fold(
            Outputs::new(args.store.db.path()).output("-o", output),
            |o, (name, _)| o.output("a plot", dir.join(name)),
        )
        .check()?;
    for (name, content) in r.files {
        let p = dir.join(&name);
        measure::outputs::write_file(&p, content.as_bytes())?;
    }
    measure::outputs::write_file(output, r.text.as_bytes())
}

/// The mail of two labels (`--format email`): base first, the newest run of the second
/// the environment and the reproducer.
fn mail(args: &Args, output: &std::path::Path, sets: &[(String, Vec<RunDocument>)]) -> Result<i32> {
    use analyse::stats::compare::{Samples, compare};
    let [(base, b), (new, n)] = sets else {
        bail!(
            "a mail compares two labels, base first: give them (`sigbench report BASE NEW --format email`; {} given)",
            sets.len()
        );
    };
    let cmp = compare(
        &[Samples::from_runs(base, b), Samples::from_runs(new, n)],
        Test::MannWhitney,
        args.alpha,
    );
    let run = n
        .iter()
        .max_by(|x, y| x.started_at.cmp(&y.started_at))
        .context("no runs of the new label")?;
    let reproducer = present::repro::Reproducer::of_run_or_say(run, "report");
    let commands = vec![
        measure::plan::spec::reproduce(run, None),
        compare_command(base, new, &[]),
    ];
    let mail = present::report::mail::mail(&present::report::mail::Telling {
        comparison: &cmp,
        run,
        bisect: None,
        reproducer: reproducer.as_ref(),
        commands: &commands,
    });
    measure::outputs::write_file(
        output,
        mail.message(&measure::host::mail_from(), &model::stamp::now_rfc5322())
            .as_bytes(),
    )?;
    model::say!("sigbench: wrote {} ({})", output.display(), mail.subject);
    Ok(0)
}

/// Refuse to compare labels whose signatures share a name but not their content, unless
/// `allowed` (`--different-signatures`: then said as a warning).
pub(crate) fn check_signatures(
    sets: &[(String, Vec<model::results::RunDocument>)],
    allowed: bool,
) -> Result<()> {
    let found = analyse::stats::compare::signature_mismatches(sets);
    match found.first() {
        Some(first) if !allowed => {
            bail!("{first}: compare runs of one signature, or give --different-signatures")
        }
        _ => {
            for w in &found {
                model::say!("sigbench: warning: {w}");
            }
            Ok(())
        }
    }
}

/// `sigbench compare BASE NEW EXTRA…`: a label that starts with `-` after `--`, so it is
/// not read as an option.
pub(crate) fn compare_command(base: &str, new: &str, extra: &[&str]) -> model::shell::CommandLine {
    let mut w = vec!["sigbench", "compare"];
    if base.starts_with('-') || new.starts_with('-') {
        // Options before `--`, the labels after it.
        w.extend_from_slice(extra);
        w.extend_from_slice(&["--", base, new]);
    } else {
        w.extend_from_slice(&[base, new]);
        w.extend_from_slice(extra);
    }
    model::shell::CommandLine::new(w)
}
