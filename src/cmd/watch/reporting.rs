//! A confirmed change's report: the test case, the commands that reproduce it, the text
//! and HTML written to `--report-dir`, `--exec` run on it.

use super::*;
use measure::outputs::OutDir;
use model::shell::CommandLine;
use present::report::bisect::report_of;

/// The machine that runs the guests, as a report names it.
pub(super) fn machine() -> String {
    let host = measure::host::current();
    format!("{} ({}, {} CPUs)", host.hostname, host.cpu_model, host.cpus)
}

/// Write an alert's report (see [`write_report`]) and add its text to `out`, with the
/// other metrics confirmed with it.
pub(super) fn report(args: &WatchArgs, w: &Watch, a: Alert, out: &mut String) -> Result<()> {
    let Alert {
        g,
        b,
        mut records,
        confirmed,
        kernels,
        commits,
    } = a;
    let lead = search::watch::lead(&records, &confirmed, true);
    let mut cmds = commands(args, w, g, b, &records[lead].metric);
    let commits = commits.map(|d| report_of(&d, &w.plan.signature.name));
    if let (Some(c), Some(dir)) = (&commits, &args.tree) {
        cmds.push(tree_command(args, w, b, c, dir));
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
        crate::cmd::outln!(out, "confirmed with it: {}\n", others.join(", "));
    }
    Ok(())
}

/// The test case block of a report, from a run of the series; `machine` is where it ran.
pub(super) fn case_lines(
    d: &RunDocument,
    timebase: &TimeBase,
    machine: String,
) -> Vec<(String, String)> {
    present::report::watch::test_case(d, timebase.to_string(), machine)
}

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| s.to_string()).collect()
}

/// The commands that measure the change again.
fn commands(
    args: &WatchArgs,
    w: &Watch,
    g: usize,
    b: usize,
    metric: &analyse::stats::compare::MetricKey,
) -> Vec<CommandLine> {
    let doc = &w.points[b][0];
    let mut run = measure::plan::spec::reproduce(doc, Some(args.confirm_reps.max(3)));
    let metric_name = metric.name.name();
    let (good, bad) = (w.specs[g].0.to_string(), w.specs[b].0.to_string());
    run.0.extend(words(&["--kernel", &good, "--kernel", &bad]));
    let mut bisect = words(&["sigbench", "bisect", &args.run.signature]);
    bisect.extend(measure::plan::spec::plan_options(doc, None));
    bisect.extend(words(&["--kernels", &good, &bad, "--metric", metric_name]));
    vec![run, CommandLine(bisect)]
}

/// The `bisect --tree` that repeats the bisect over the commits: its ends, by commit id.
fn tree_command(
    args: &WatchArgs,
    w: &Watch,
    b: usize,
    r: &search::bisect::Report,
    dir: &std::path::Path,
) -> CommandLine {
    let id = |k: Option<&String>| {
        k.and_then(|n| n.split_whitespace().next())
            .unwrap_or("?")
            .to_string()
    };
    let mut c = words(&["sigbench", "bisect", &args.run.signature]);
    c.extend(measure::plan::spec::plan_options(&w.points[b][0], None));
    c.extend(words(&[
        "--tree",
        &dir.display().to_string(),
        "--good",
        &id(r.kernels.first()),
        "--bad",
        &id(r.kernels.last()),
        "--metric",
        r.outcome.metric.name(),
    ]));
    if let Some(config) = &args.config {
        c.extend(words(&["--config", &config.display().to_string()]));
    }
    CommandLine(c)
}

/// What a report is written from, and where it goes.
pub(super) struct Reporting<'a> {
    pub(super) store: &'a Store,
    /// The series' points: names and runs.
    pub(super) names: &'a [String],
    pub(super) points: &'a [Vec<RunDocument>],
    pub(super) timebase: &'a TimeBase,
    pub(super) signature: String,
    pub(super) case: Vec<(String, String)>,
    pub(super) report_dir: Option<&'a std::path::Path>,
    /// `--exec`: run for confirmed changes only.
    pub(super) exec: Option<&'a str>,
}

/// Write the report of a change (text and HTML into `--report-dir`), run `--exec` on it
/// when it is confirmed, and return its text.
pub(super) fn write_report(
    r: &Reporting,
    g: usize,
    b: usize,
    change: &mut ChangeRecord,
    bisected: &[search::bisect::Report],
    commands: Vec<CommandLine>,
) -> Result<String> {
    let alert = alert(r, g, b, change, bisected, commands);
    let text = present::report::watch::text(&alert);
    if let Some(dir) = r.report_dir {
        let (txt, files) = write_files(r, dir, &alert, b, bisected, &text, change.id)?;
        change.report = Some(txt.display().to_string());
        r.store.keep_change(change)?;
        // What `site` publishes: the report itself, kept in the store.
        for (ext, content) in files {
            r.store.keep_report(change.id, ext, &content)?;
        }
        if let (Some(cmd), true) = (r.exec, change.status.alerted()) {
            exec(cmd, &txt)?;
        }
    }
    Ok(text)
}

/// What a change's report shows: the last good and first bad kernels' runs compared (all
/// that are stored now), the series, their flame graphs (the differential one first, with
/// --profile), the bisects and the commands.
fn alert<'a>(
    r: &Reporting,
    g: usize,
    b: usize,
    change: &'a ChangeRecord,
    bisected: &'a [search::bisect::Report],
    commands: Vec<CommandLine>,
) -> present::report::watch::Alert<'a> {
    let comparison = compare(
        &[
            Samples::from_runs(&r.names[g], &r.points[g]),
            Samples::from_runs(&r.names[b], &r.points[b]),
        ],
        analyse::stats::Test::MannWhitney,
        0.05,
    );
    let series = search::watch::values(r.points, &change.metric, r.timebase.noise_floor())
        .into_iter()
        .enumerate()
        .map(|(i, v)| (r.names[i].clone(), v, i >= b))
        .collect();
    let mut flames = present::report::document::flame_figures(&[
        (r.names[g].clone(), r.points[g].clone()),
        (r.names[b].clone(), r.points[b].clone()),
    ]);
    if flames.len() == 3 {
        flames.rotate_right(1);
    }
    present::report::watch::Alert {
        flames,
        change,
        signature: r.signature.clone(),
        case: r.case.clone(),
        comparison,
        bisects: bisected.iter().collect(),
        series,
        commands,
    }
}

/// The report's files in `dir` (text, page, mail and reproducer: the names checked —
/// never the store — before any is written, the directory opened again, never through a
/// link): the text's absolute path, and each file's kind and content for the store.
fn write_files(
    r: &Reporting,
    dir: &std::path::Path,
    alert: &present::report::watch::Alert,
    b: usize,
    bisected: &[search::bisect::Report],
    text: &str,
    id: i64,
) -> Result<(std::path::PathBuf, Vec<(&'static str, String)>)> {
    let stem = format!("change-{id}");
    let mut doc = present::report::watch::document(alert)?;
    let (mail, repro) = hand_over(alert, &r.points[b][0], bisected);
    let (mail_name, repro_name) = (format!("{stem}.eml"), format!("{stem}.repro.c"));
    if repro.is_some() {
        doc.files.push((
            repro_name.clone(),
            present::report::mail::REPRO_ABOUT.into(),
        ));
    }
    doc.files.push((
        mail_name.clone(),
        "this report as a mail to send, the reproducer attached".into(),
    ));
    let html = present::report::renderer(present::report::Format::Html)
        .report(&doc, &stem)
        .map(|r| r.text)
        .unwrap_or_default();
    let out = OutDir::open("--report-dir", dir, r.store.location.path())?;
    let (txt_name, html_name) = (format!("{stem}.txt"), format!("{stem}.html"));
    for name in [&txt_name, &html_name, &mail_name, &repro_name] {
        out.check(name)?;
    }
    out.write(&txt_name, text.as_bytes())?;
    out.write(&html_name, html.as_bytes())?;
    out.write(&mail_name, mail.as_bytes())?;
    if let Some(c) = &repro {
        out.write(&repro_name, c.as_bytes())?;
    }
    // Where it is, absolute: a site or a person reading the store elsewhere finds it.
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let (txt, page) = (dir.join(&txt_name), dir.join(&html_name));
    model::say!(
        "sigbench: watch: wrote {} and {}",
        txt.display(),
        page.display()
    );
    let mut files = vec![("txt", text.to_string()), ("html", html), ("eml", mail)];
    files.extend(repro.map(|c| ("repro.c", c)));
    Ok((txt, files))
}

/// `--exec CMD` on a confirmed change's report: `sh -c CMD sh TXT`, SIGBENCH_REPORT=TXT;
/// a command that fails is said, not fatal.
fn exec(cmd: &str, txt: &std::path::Path) -> Result<()> {
    let status = std::process::Command::new("sh")
        .args(["-c", cmd, "sh"])
        .arg(txt)
        .env("SIGBENCH_REPORT", txt)
        .status()
        .with_context(|| format!("cannot run --exec {cmd}"))?;
    if !status.success() {
        model::say!("sigbench: watch: --exec {cmd} {}: {status}", txt.display());
    }
    Ok(())
}

/// An alert as a mail (the message) and its reproducer's C file, from a run of the first
/// bad kernel; the bisect over the commits when one ran, else over the kernels.
fn hand_over(
    alert: &present::report::watch::Alert,
    run: &RunDocument,
    bisected: &[search::bisect::Report],
) -> (String, Option<String>) {
    let reproducer = present::repro::Reproducer::of_run_or_say(run, "watch");
    let mail = present::report::mail::mail(&present::report::mail::Telling {
        comparison: &alert.comparison,
        run,
        bisect: bisected.last(),
        reproducer: reproducer.as_ref(),
        commands: &alert.commands,
    });
    (
        mail.message(&measure::host::mail_from(), &model::stamp::now_rfc5322()),
        reproducer.and_then(|r| r.file()),
    )
}
