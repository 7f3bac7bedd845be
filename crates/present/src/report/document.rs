//! The full report of one signature's results across labels — what ran where, a plot per
//! metric against N, the comparison tables, per-syscall latency and scaling — as a model
//! that `html.rs` and `markdown.rs` render.

use super::compare;
use super::plot::{self, Series};
use super::table::{Align, Table, VISIBLE_ROWS, capped};
use analyse::stats::Test;
use analyse::stats::compare::{Samples, scaling};
use analyse::stats::{Summary, compare as compare_labels};
use anyhow::Result;
use model::metric::{Kind, Metric, Source, Stat};
use model::results::RunDocument;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug)]
pub struct Figure {
    /// A file-name-safe identifier (`wall_ms`).
    pub id: String,
    pub title: String,
    pub caption: String,
    pub svg: String,
}

pub struct Document {
    pub title: String,
    /// Paragraphs about what ran.
    pub about: Vec<String>,
    /// Per label: where and how it ran.
    pub runs: Table,
    /// Emulation and similar notices that change how to read the numbers.
    pub notices: Vec<String>,
    /// The lines that answer, before any table (comparisons only): each pair's change
    /// that matters most ([`super::answer::lead_line`]).
    pub lead: Vec<String>,
    /// What changed (comparisons only): the significant rows, and s3e's "N× time, M×
    /// evictions" per case.
    pub changed: Vec<Table>,
    pub figures: Vec<Figure>,
    pub tables: Vec<Table>,
    /// Tables folded away (HTML: inside `<details>`): everything after the answer.
    pub details: Vec<Table>,
    pub warnings: Vec<String>,
    /// Files written beside the page that it links (file name, what it is): the
    /// reproducer, the mail.
    pub files: Vec<(String, String)>,
}

/// The distinct values, in the order met, joined by ", ".
pub fn join<T: AsRef<str>>(v: impl IntoIterator<Item = T>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for s in v {
        let s = s.as_ref().to_string();
        if !seen.contains(&s) {
            seen.push(s);
        }
    }
    seen.join(", ")
}

fn runs_table(sets: &[(String, Vec<RunDocument>)]) -> Table {
    let mut t = Table::new(
        "",
        &[
            ("label", Align::Left),
            ("kernel", Align::Left),
            ("where", Align::Left),
            ("fs", Align::Left),
            ("mkfs options", Align::Left),
            ("mount options", Align::Left),
            ("device", Align::Left),
            ("runs", Align::Right),
            ("repetitions", Align::Right),
            ("N", Align::Left),
        ],
    );
    for (label, runs) in sets {
        let hosts = join(runs.iter().map(|r| {
            let h = &r.host;
            let place = match &h.accelerator {
                Some(a) => format!("{a} guest on {}", h.hostname),
                None => h.hostname.clone(),
            };
            format!("{place} ({}, {} CPUs)", h.cpu_model, h.cpus)
        }));
        let ns: BTreeSet<u64> = runs.iter().flat_map(|r| r.plan.n.iter().copied()).collect();
        t.push(vec![
            label.clone(),
            join(runs.iter().map(|r| r.host.kernel_release.clone())),
            hosts,
            join(runs.iter().map(|r| r.testbed.fs.clone())),
            join(runs.iter().map(|r| {
                if r.testbed.mkfs_opts.is_empty() {
                    "-".into()
                } else {
                    r.testbed.mkfs_opts.join(" ")
                }
            })),
            join(runs.iter().map(|r| {
                if r.testbed.mount_opts.is_empty() {
                    "-".to_string()
                } else {
                    r.testbed.mount_opts.clone()
                }
            })),
            join(runs.iter().map(|r| r.testbed.device_kind.clone())),
            runs.len().to_string(),
            join(runs.iter().map(|r| r.plan.repetitions.to_string())),
            ns.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
        ]);
    }
    t
}

/// A metric of one phase (`create.wall_ms`, `create.slabinfo.maple_node.active_objs`):
/// where the story usually is, and not plotted otherwise.
fn is_phase_metric(r: &analyse::stats::compare::Row) -> bool {
    r.metric.phase().is_some() && !r.metric.profiled()
}

/// What a plotted metric is called and measured in.
fn describe(metric: &Metric) -> (String, String) {
    let m = metric.name().replace('_', " ");
    match (metric.source(), metric.kind()) {
        (Source::Wall, _) if metric.phase().is_none() => {
            ("time of the timed window".into(), "ms".into())
        }
        (Source::Sys, _) => ("system CPU time".into(), "ms".into()),
        (_, Kind::Time) => (m, "ms".into()),
        (_, Kind::Profile) => (m, "ms (share of samples × time)".into()),
        (Source::Slab(_), _) => (m, "objects (change)".into()),
        _ => (m, "events".into()),
    }
}

/// A metric's figure's id in a page: its name with anything but letters, digits and `_`
/// as `_`.
fn figure_id(metric: &Metric) -> String {
    metric
        .name()
        .replace(|c: char| !c.is_ascii_alphanumeric() && c != '_', "_")
}

/// The metrics a report plots: time, system CPU, every counter any label has, and what
/// changed.
fn plotted(samples: &[Samples], changed: &[Metric]) -> Vec<Metric> {
    let mut metrics: Vec<Metric> = vec![Metric::wall(), Metric::window(Source::Sys)];
    let mut counters: BTreeSet<Metric> = BTreeSet::new();
    for s in samples {
        for m in s.cases.values() {
            counters.extend(
                m.keys()
                    .filter(|n| n.kind() == Kind::Counter && *n.source() != Source::Calls)
                    .cloned(),
            );
        }
    }
    metrics.extend(counters);
    for m in changed {
        if !metrics.contains(m) {
            metrics.push(m.clone());
        }
    }
    metrics
}

/// A series' name: its label, and its directory when the report has several.
fn series_name(label: &str, dir: &str, multi_dir: bool) -> String {
    if multi_dir {
        format!("{label} · {dir}")
    } else {
        label.to_string()
    }
}

fn figures(samples: &[Samples], changed: &[Metric]) -> Result<Vec<Figure>> {
    // Labels that share a single N: the repetitions themselves, side by side.
    let ns: BTreeSet<u64> = samples
        .iter()
        .flat_map(|s| s.cases.keys().map(|k| k.n))
        .collect();
    let multi_dir = samples
        .iter()
        .flat_map(|s| s.cases.keys().map(|k| k.dir.clone()))
        .collect::<BTreeSet<_>>()
        .len()
        > 1;
    let mut out = Vec::new();
    for metric in plotted(samples, changed) {
        let figure = match ns.iter().next() {
            Some(&n) if ns.len() == 1 => strip_figure(samples, &metric, n, multi_dir)?,
            _ => n_figure(samples, &metric, multi_dir)?,
        };
        out.extend(figure);
    }
    Ok(out)
}

/// At a single N: every repetition of `metric` per label, the bar at the median.
fn strip_figure(
    samples: &[Samples],
    metric: &Metric,
    n: u64,
    multi_dir: bool,
) -> Result<Option<Figure>> {
    let mut groups = Vec::new();
    for s in samples {
        for (key, m) in &s.cases {
            if let Some(v) = m.get(metric) {
                groups.push((series_name(&s.label, &key.dir, multi_dir), v.clone()));
            }
        }
    }
    if groups.is_empty() {
        return Ok(None);
    }
    let (title, unit) = describe(metric);
    Ok(Some(Figure {
        id: figure_id(metric),
        caption: format!("{title} at N = {n}: every repetition per label, the bar at the median"),
        svg: plot::strip(&title, &unit, &groups)?,
        title,
    }))
}

/// Against N: `metric`'s median per label and directory, bars from the fastest to the
/// slowest repetition.
fn n_figure(samples: &[Samples], metric: &Metric, multi_dir: bool) -> Result<Option<Figure>> {
    let mut series = Vec::new();
    for s in samples {
        let mut by_dir: BTreeMap<&str, Vec<(f64, f64, f64, f64)>> = BTreeMap::new();
        for (key, m) in &s.cases {
            if let Some(v) = m.get(metric)
                && let Some(sum) = Summary::of(v)
            {
                by_dir.entry(&key.dir).or_default().push((
                    key.n as f64,
                    sum.median,
                    sum.min,
                    sum.max,
                ));
            }
        }
        for (dir, mut points) in by_dir {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let name = series_name(&s.label, dir, multi_dir);
            series.push(Series { name, points });
        }
    }
    if series.is_empty() {
        return Ok(None);
    }
    let (title, unit) = describe(metric);
    let svg = plot::metric(&title, &unit, &series)?;
    Ok(Some(Figure {
        id: figure_id(metric),
        caption: format!(
            "{title} against N: median of the repetitions, bars from the fastest to the slowest{}",
            if metric.kind() == Kind::Time {
                ""
            } else {
                "; counts are exact"
            }
        ),
        title,
        svg,
    }))
}

fn latency_table(samples: &[Samples]) -> Table {
    let mut t = Table::new(
        "per-syscall latency (µs, medians of the repetitions)",
        &[
            ("label", Align::Left),
            ("dir", Align::Left),
            ("N", Align::Right),
            ("syscall", Align::Left),
            ("p50", Align::Right),
            ("p99", Align::Right),
        ],
    );
    for s in samples {
        for (key, m) in &s.cases {
            let syscalls: BTreeSet<&str> = m
                .keys()
                .filter_map(|k| match k.source() {
                    Source::Latency {
                        call,
                        stat: Stat::P50,
                    } => Some(call.as_str()),
                    _ => None,
                })
                .collect();
            for sc in syscalls {
                let med = |stat: Stat| {
                    let call = sc.to_string();
                    m.get(&Metric::window(Source::Latency { call, stat }))
                        .and_then(|v| Summary::of(v))
                        .map_or("-".to_string(), |x| compare::num(x.median))
                };
                t.push(vec![
                    s.label.clone(),
                    key.dir.clone(),
                    key.n.to_string(),
                    sc.to_string(),
                    med(Stat::P50),
                    med(Stat::P99),
                ]);
            }
        }
    }
    t
}

/// What a report is about: its signature, labels and test directories.
fn about(sets: &[(String, Vec<RunDocument>)], sig: &model::results::SignatureMeta) -> Vec<String> {
    let mut about = vec![format!(
        "Signature {} ({}, sha256 {}), {} label(s): {}.",
        sig.name,
        sig.origin,
        &sig.sha256[..12.min(sig.sha256.len())],
        sets.len(),
        join(sets.iter().map(|(l, _)| l.as_str()))
    )];
    if let Ok(parsed) = measure::signature::Signature::parse(&sig.source, &sig.origin) {
        about.push(parsed.description);
    }
    let dirs = join(
        sets.iter()
            .flat_map(|(_, r)| r.iter().flat_map(|d| d.plan.dirs.clone())),
    );
    about.push(format!("Test directories: {dirs}."));
    about
}

/// What each label's times are: the icount clock's, or emulation's.
fn notices(samples: &[Samples]) -> Vec<String> {
    samples
        .iter()
        .filter_map(|s| {
            if s.timebases.iter().any(|b| b.deterministic()) {
                Some(format!("{}: times on the {}.", s.label, model::clock::ICOUNT_NOTE))
            } else if s.emulated {
                Some(format!("{} ran under QEMU TCG (emulation): its timings are not the hardware's — compare its counts, not its times.", s.label))
            } else {
                None
            }
        })
        .collect()
}

/// The significant per-phase metrics, most standing out first, that get a figure too (the
/// create-phase slab change of reference 004, say): at most six.
fn phase_figures(cmp: &analyse::stats::compare::Comparison) -> Vec<Metric> {
    let mut sig: Vec<&analyse::stats::compare::Row> = cmp
        .pairs
        .iter()
        .flat_map(|p| {
            p.rows
                .iter()
                .filter(|r| r.significant && is_phase_metric(r))
        })
        .collect();
    sig.sort_by(|a, b| a.standout(b));
    let mut metrics: Vec<Metric> = Vec::new();
    for r in sig {
        if !metrics.contains(&r.metric) && metrics.len() < 6 {
            metrics.push(r.metric.clone());
        }
    }
    metrics
}

/// Build the report of `sets` (label → runs of one signature).
pub fn build(
    sets: &[(String, Vec<RunDocument>)],
    test: Test,
    alpha: f64,
    all: bool,
) -> Result<Document> {
    let first = sets
        .iter()
        .flat_map(|(_, r)| r.first())
        .next()
        .ok_or_else(|| anyhow::anyhow!("nothing to report: no runs"))?;
    let samples: Vec<Samples> = sets.iter().map(|(l, r)| Samples::from_runs(l, r)).collect();
    let sig = &first.signature;
    let about = about(sets, sig);
    let notices = notices(&samples);

    let mut tables = Vec::new();
    let mut details = Vec::new();
    let mut warnings = Vec::new();
    let mut changed = Vec::new();
    let mut lead = Vec::new();
    let mut changed_metrics: Vec<Metric> = Vec::new();
    if samples.len() > 1 {
        let cmp = compare_labels::compare(&samples, test, alpha);
        // The answer first — per pair s3e's line per case, the change per phase, where
        // the time went, the kernel-wide rows that moved most — then the first rows of
        // what changed; every row of each pair's table under <details>.
        for (i, p) in cmp.pairs.iter().enumerate() {
            lead.push(super::answer::lead_line(p));
            changed.extend(compare::pair_summary(&cmp, i));
            changed.extend(super::answer::answer_pair(p));
        }
        let rest = "below, under every row";
        changed.push(capped(compare::changed_table(&cmp), VISIBLE_ROWS, rest));
        // Each pair's whole table (its first rows are what changed's) under <details>.
        details.extend((0..cmp.pairs.len()).map(|i| compare::lkp_table(&cmp, i, all)));
        tables.extend(compare::scaling(&cmp));
        changed_metrics = phase_figures(&cmp);
        warnings = cmp.warnings;
    } else if let Some(s) = samples.first() {
        let rows = scaling(s);
        if !rows.is_empty() {
            let cmp = analyse::stats::compare::Comparison {
                alpha,
                test,
                labels: Vec::new(),
                pairs: Vec::new(),
                scaling: rows,
                warnings: Vec::new(),
            };
            tables.extend(compare::scaling(&cmp));
        }
    }
    let latency = latency_table(&samples);
    if latency.rows.len() > VISIBLE_ROWS {
        details.push(latency.clone());
    }
    tables.push(capped(latency, VISIBLE_ROWS, "below, under every row"));
    Ok(Document {
        title: format!("sigbench report: {}", sig.name),
        about,
        runs: runs_table(sets),
        notices,
        lead,
        changed,
        figures: {
            let mut f = figures(&samples, &changed_metrics)?;
            f.extend(flame_figures(sets));
            f
        },
        tables,
        details,
        warnings,
        files: Vec::new(),
    })
}

/// The profiles' flame graphs (`--profile`): of one case — the first directory at the
/// largest N the first label profiled — each label's samples over its repetitions, then
/// the difference from the first label to each other one.
pub fn flame_figures(sets: &[(String, Vec<RunDocument>)]) -> Vec<Figure> {
    let Some(model::results::Profiles {
        dir,
        n,
        hz,
        labels: per_label,
    }) = model::results::profiles(sets)
    else {
        return Vec::new();
    };
    let safe = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect()
    };
    let mut figs: Vec<Figure> = per_label
        .iter()
        .map(|(label, stacks, reps)| Figure {
            id: format!("flame_{}", safe(label)),
            title: format!("{label}: where the time went"),
            caption: format!(
                "{label}, {dir}/N={n}: the timed window's kernel call stacks sampled on cpu-clock at {hz} Hz, {} samples over {reps} repetition(s); each frame as wide as its share, its callers below it (hover a frame for its samples and share; [user]: time in sigbench itself).",
                stacks.values().sum::<u64>()
            ),
            svg: super::flame::svg(&format!("{label} — {dir}/N={n}"), stacks),
        })
        .collect();
    if let Some((base, b, _)) = per_label.first() {
        for (other, o, _) in &per_label[1..] {
            figs.push(Figure {
                id: format!("flame_diff_{}_{}", safe(base), safe(other)),
                title: format!("{base} → {other}: where the time moved"),
                caption: format!(
                    "{other}'s flame graph coloured by each frame's share minus its share on {base} (same call path): red grew, blue shrank, the deeper the more; frames only {base} had are not drawn."
                ),
                svg: super::flame::diff_svg(&format!("{base} → {other} — {dir}/N={n}"), b, o),
            });
        }
    }
    figs
}
