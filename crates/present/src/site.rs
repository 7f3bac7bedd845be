//! `sigbench site`: the store as a static site — every series (signature × filesystem ×
//! plan × clock) with its latest state and open changes first, a page per series with its
//! primary metrics plotted over its labels (release order, as `watch` orders them) and its
//! changes (each linking to its alert report, copied beside), a page per label with its
//! runs. No server, no JavaScript, nothing fetched: it reads from file:// and from any web
//! server directory. Noise stays off the first screen: rejected, invalid and fixed changes
//! are inside `<details>`.

use crate::report::document::join;
use crate::report::html::{self, escape};
use crate::report::plot::{Judged, bisect_strip};
use crate::report::table::Align;
use analyse::stats::changepoint::Series;
use analyse::store::changes::{ChangeRecord, Status, TriageState};
use analyse::store::series::Point;
use anyhow::Result;
use model::metric::Source;
use model::results::RunDocument;
use std::collections::BTreeMap;

/// The site: its pages (file name, HTML) and the alert reports the store keeps to write
/// beside them (change id, format: `txt`, `html`, the mail `eml` or the reproducer
/// `repro.c`, written as `reports/change-ID.FORMAT`).
pub struct Site {
    pub pages: Vec<(String, String)>,
    pub reports: Vec<(i64, String)>,
}

/// The most metrics plotted on a series page (each plot is ~10–30 KB of SVG over a few
/// dozen labels, ~120 KB over a thousand).
pub const MAX_PLOTS: usize = 16;
/// The bytes of plots a series page holds at most: every page stays under 1 MB.
pub const PLOT_BUDGET: usize = 600_000;
/// The most labels a plot shows (the newest): a plot over a thousand labels is ~900 KB.
pub const PLOT_LABELS: usize = 120;

/// Whether a change still wants attention: it alerted or is a candidate, and nobody
/// triaged it invalid or fixed (acknowledged ones stay listed: someone is on them).
pub fn open(c: &ChangeRecord) -> bool {
    (c.status.alerted() || c.status == Status::New)
        && !matches!(c.triage_state(), TriageState::Invalid | TriageState::Fixed)
}

fn page(title: &str, body: &str) -> String {
    html::page(
        title,
        "\nnav { font-size: 0.9em; margin-bottom: 1em; }\n.open { color: #b22; font-weight: bold; }\n",
        "<nav><a href=\"index.html\">all series</a></nav>\n",
        body,
        "static site, generated ",
    )
}

/// A table whose cells are markup already (links); text is escaped where it is made.
fn table(caption: &str, headers: &[&str], rows: &[Vec<String>]) -> String {
    html::table_markup(
        caption,
        headers.iter().map(|&h| (h, Align::Left)),
        rows.iter().cloned(),
    )
}

fn link(href: &str, text: &str) -> String {
    format!("<a href=\"{}\">{}</a>", escape(href), escape(text))
}

/// A file name for the k-th item: only [a-z0-9-].
fn file(kind: &str, k: usize) -> String {
    format!("{kind}-{k}.html")
}

fn change_pct(c: &ChangeRecord) -> String {
    match c.ratio() {
        Some(r) if r.is_finite() => format!("{:+.1} %", (r - 1.0) * 100.0),
        _ => format!(
            "{} → {}",
            crate::report::compare::num(c.before),
            crate::report::compare::num(c.after)
        ),
    }
}

fn triage_cell(c: &ChangeRecord) -> String {
    match c.triage.last() {
        Some(t) => {
            let note = if t.note.is_empty() {
                String::new()
            } else {
                format!(": {}", t.note)
            };
            escape(&format!("{} ({}, {}{note})", t.state.name(), t.user, t.at))
        }
        None => escape(c.triage_state().name()),
    }
}

/// The site of `labels` (each with its runs), the change points `changes` and the
/// reports the store keeps for them (`reports`: change id, format).
pub fn build(
    labels: &[Point],
    changes: &[ChangeRecord],
    reports: &[(i64, String)],
) -> Result<Site> {
    let series =
        analyse::store::series::stored_series(labels, analyse::store::series::Order::Release);
    // The reports the store keeps, under reports/ (`change-ID.txt|html`); a change links
    // to its HTML one, else its text. Only changes listed here get one: nothing is read
    // from where a stored path points.
    let reports: Vec<(i64, String)> = reports
        .iter()
        .filter(|(id, f)| {
            REPORT_FORMATS.contains(&f.as_str()) && changes.iter().any(|c| c.id == *id)
        })
        .cloned()
        .collect();
    let at = Places::new(labels, &series, changes, &reports);
    let mut pages = vec![(
        "index.html".to_string(),
        page("sigbench: every series", &at.index(labels, &series)),
    )];
    for (key, points) in &series {
        let body = at.series(key, points)?;
        pages.push((at.series_page[key.as_str()].clone(), page(key, &body)));
    }
    for (l, rs) in labels {
        pages.push((
            at.label_page[l.as_str()].clone(),
            page(&format!("label {l}"), &at.label(rs)),
        ));
    }
    Ok(Site { pages, reports })
}

/// Where each page of a site is, and the change points its pages list and link.
struct Places<'a> {
    changes: &'a [ChangeRecord],
    label_page: BTreeMap<&'a str, String>,
    series_page: BTreeMap<&'a str, String>,
    /// Each change's report under `reports/`.
    report_of: BTreeMap<i64, String>,
}

impl<'a> Places<'a> {
    fn new(
        labels: &'a [Point],
        series: &'a [(String, Vec<Point>)],
        changes: &'a [ChangeRecord],
        reports: &[(i64, String)],
    ) -> Places<'a> {
        let label_page = labels
            .iter()
            .enumerate()
            .map(|(k, (l, _))| (l.as_str(), file("label", k + 1)))
            .collect();
        let series_page = series
            .iter()
            .enumerate()
            .map(|(k, (key, _))| (key.as_str(), file("series", k + 1)))
            .collect();
        let mut report_of: BTreeMap<i64, String> = BTreeMap::new();
        for (id, ext) in reports {
            // The page a change links: its HTML report, else its text.
            if ext == "html" || ext == "txt" && !report_of.contains_key(id) {
                report_of.insert(*id, format!("reports/{}", report_file(*id, ext)));
            }
        }
        Places {
            changes,
            label_page,
            series_page,
            report_of,
        }
    }

    /// A change's report, else the report of the change found with it (same series and
    /// kernels): `watch` writes one report per place, for the change that leads there.
    fn report_for(&self, c: &ChangeRecord) -> Option<&String> {
        let (report_of, changes) = (&self.report_of, self.changes);
        report_of.get(&c.id).or_else(|| {
            changes
                .iter()
                .filter(|o| {
                    (&o.series, &o.last_good, &o.first_bad)
                        == (&c.series, &c.last_good, &c.first_bad)
                })
                .find_map(|o| report_of.get(&o.id))
        })
    }

    /// A change's row in a changes table (with its series' column on the index).
    fn change_row(&self, c: &ChangeRecord, with_series: bool) -> Vec<String> {
        let (label_page, series_page) = (&self.label_page, &self.series_page);
        let mut row = vec![
            c.id.to_string(),
            if open(c) {
                format!("<span class=\"open\">{}</span>", escape(c.status.name()))
            } else {
                escape(c.status.name())
            },
            triage_cell(c),
            escape(&c.metric.to_string()),
            format!(
                "{} → {}",
                label_page
                    .get(c.last_good.as_str())
                    .map_or(escape(&c.last_good), |p| link(p, &c.last_good)),
                label_page
                    .get(c.first_bad.as_str())
                    .map_or(escape(&c.first_bad), |p| link(p, &c.first_bad)),
            ),
            escape(&change_pct(c)),
            self.report_for(c).map_or("-".into(), |r| link(r, "report")),
        ];
        if with_series {
            row.insert(
                1,
                series_page
                    .get(c.series.as_str())
                    .map_or(escape(&c.series), |p| link(p, &c.series)),
            );
        }
        row
    }

    /// Changes as a table: the open ones, the others inside `<details>`.
    fn changes_block(&self, cs: &[&ChangeRecord], with_series: bool) -> String {
        let (shown, hidden): (Vec<&&ChangeRecord>, Vec<&&ChangeRecord>) =
            cs.iter().partition(|c| open(c));
        let mut out = String::new();
        let h = change_headers(with_series);
        if shown.is_empty() {
            out.push_str("<p class=\"about\">No open change.</p>\n");
        } else {
            let rows: Vec<Vec<String>> = shown
                .iter()
                .map(|c| self.change_row(c, with_series))
                .collect();
            out.push_str(&table("open changes", &h, &rows));
        }
        if !hidden.is_empty() {
            let rows: Vec<Vec<String>> = hidden
                .iter()
                .map(|c| self.change_row(c, with_series))
                .collect();
            out.push_str(&format!(
            "<details>\n<summary>{} rejected, invalid or fixed change(s)</summary>\n{}</details>\n",
            hidden.len(),
            table("", &h, &rows)
        ));
        }
        out
    }

    /// The index page's body: series with open changes first, every change, every label.
    fn index(&self, labels: &[Point], series: &[(String, Vec<Point>)]) -> String {
        let (changes, label_page, series_page) =
            (self.changes, &self.label_page, &self.series_page);
        // The index: series with open changes first.
        let mut order: Vec<usize> = (0..series.len()).collect();
        let open_in = |key: &str| {
            changes
                .iter()
                .filter(|c| c.series == key && open(c))
                .count()
        };
        order.sort_by_key(|&k| std::cmp::Reverse(open_in(&series[k].0)));
        let series_rows: Vec<Vec<String>> = order
            .iter()
            .map(|&k| {
                let (key, points) = &series[k];
                let latest = points.last().map(|p| p.0.as_str()).unwrap_or("-");
                let n_open = open_in(key);
                vec![
                    link(&series_page[key.as_str()], key),
                    points.len().to_string(),
                    label_page
                        .get(latest)
                        .map_or(escape(latest), |p| link(p, latest)),
                    if n_open > 0 {
                        format!("<span class=\"open\">{n_open} open</span>")
                    } else {
                        "none open".into()
                    },
                ]
            })
            .collect();
        let runs: usize = labels.iter().map(|(_, r)| r.len()).sum();
        let all: Vec<&ChangeRecord> = changes.iter().collect();
        let label_rows: Vec<Vec<String>> = labels
            .iter()
            .map(|(l, rs)| {
                vec![
                    link(&label_page[l.as_str()], l),
                    rs.len().to_string(),
                    escape(&join(rs.iter().map(|d| d.host.kernel_release.as_str()))),
                    escape(&join(rs.iter().map(|d| d.testbed.fs.as_str()))),
                    escape(
                        rs.iter()
                            .map(|d| d.started_at.as_str())
                            .min()
                            .unwrap_or("-"),
                    ),
                ]
            })
            .collect();
        let mut body = format!(
            "<p class=\"about\">{} series over {} label(s), {} run(s); {} change point(s), {} open.</p>\n",
            series.len(),
            labels.len(),
            runs,
            changes.len(),
            changes.iter().filter(|c| open(c)).count()
        );
        body.push_str(&table(
            "series (open changes first)",
            &["series", "points", "latest", "changes"],
            &series_rows,
        ));
        body.push_str("<h2>Changes</h2>\n");
        body.push_str(&self.changes_block(&all, true));
        body.push_str("<h2>Labels</h2>\n");
        body.push_str(&table(
            "",
            &["label", "runs", "kernels", "filesystems", "first started"],
            &label_rows,
        ));
        body
    }

    /// A series page's body: its changes, its primary metrics plotted, its points.
    fn series(&self, key: &str, points: &[Point]) -> Result<String> {
        let (changes, label_page) = (self.changes, &self.label_page);
        let docs: Vec<Vec<RunDocument>> = points.iter().map(|(_, d)| d.clone()).collect();
        let floor = docs
            .first()
            .and_then(|d| d.first())
            .map_or(model::clock::ICOUNT_NOISE_FLOOR, |d| {
                d.host.timebase().noise_floor()
            });
        let mine: Vec<&ChangeRecord> = changes.iter().filter(|c| c.series == key).collect();
        let mut body = String::new();
        body.push_str(&self.changes_block(&mine, false));
        body.push_str("<h2>Metrics</h2>\n");
        let mut metrics: Vec<_> = search::watch::metric_series(&docs, floor, &[])
            .into_iter()
            .filter(|s| s.primary && *s.metric.name.source() != Source::Calls)
            .collect();
        // The window's time first, then the phases', throughput, the rest.
        metrics.sort_by_key(|s| {
            let m = &s.metric.name;
            let wall = *m.source() == Source::Wall;
            (
                !(wall && m.phase().is_none()),
                !(wall && m.phase().is_some()),
                *m.source() != Source::Throughput,
                s.metric.clone(),
            )
        });
        body.push_str(&plots(&metrics, &mine, points)?);
        let rows: Vec<Vec<String>> = points
            .iter()
            .map(|(l, rs)| {
                vec![
                    link(&label_page[l.as_str()], l),
                    escape(&join(rs.iter().map(|d| d.host.kernel_release.as_str()))),
                    rs.len().to_string(),
                    rs.iter()
                        .map(|d| d.cases.iter().filter(|c| !c.warmup).count())
                        .sum::<usize>()
                        .to_string(),
                ]
            })
            .collect();
        body.push_str("<h2>Points</h2>\n");
        body.push_str(&table(
            "",
            &["label", "kernel", "runs", "measured cases"],
            &rows,
        ));
        Ok(body)
    }

    /// A label page's body: its runs, each linking to its series.
    fn label(&self, rs: &[RunDocument]) -> String {
        let series_page = &self.series_page;
        let rows: Vec<Vec<String>> = rs
            .iter()
            .map(|d| {
                vec![
                    escape(&d.id),
                    escape(&d.status),
                    escape(&d.started_at),
                    escape(&d.signature.name),
                    escape(&d.testbed.fs),
                    escape(&d.host.kernel_release),
                    escape(&d.host.hostname),
                    escape(&d.host.timebase().to_string()),
                    series_page
                        .get(analyse::store::series::series_key_of(d).as_str())
                        .map_or("-".into(), |p| link(p, "series")),
                ]
            })
            .collect();
        table(
            "runs",
            &[
                "run",
                "status",
                "started",
                "signature",
                "fs",
                "kernel",
                "host",
                "clock",
                "",
            ],
            &rows,
        )
    }
}

/// A series' primary metrics plotted over its newest labels, as many as `MAX_PLOTS` and
/// `PLOT_BUDGET` allow (points after an open change of the metric in red), and how many
/// more there are.
fn plots(metrics: &[Series], mine: &[&ChangeRecord], points: &[Point]) -> Result<String> {
    let mut body = String::new();
    let mut plotted = 0;
    let mut bytes = 0;
    for s in metrics.iter().take(MAX_PLOTS) {
        // Points after an open change of this metric in red.
        let first_bad = mine
            .iter()
            .filter(|c| c.metric == s.metric && open(c))
            .filter_map(|c| points.iter().position(|(l, _)| *l == c.first_bad))
            .min();
        let from = points.len().saturating_sub(PLOT_LABELS);
        let steps: Vec<(String, Vec<f64>, Judged)> = points
            .iter()
            .zip(&s.points)
            .enumerate()
            .skip(from)
            .map(|(i, ((l, _), v))| {
                let j = if v.is_empty() {
                    Judged::Skipped
                } else if first_bad.is_some_and(|b| i >= b) {
                    Judged::Bad
                } else {
                    Judged::Good
                };
                (l.chars().take(24).collect(), v.clone(), j)
            })
            .collect();
        let shown = s.metric.to_string();
        let svg = bisect_strip(&shown, &shown, &steps)?;
        if plotted > 0 && bytes + svg.len() > PLOT_BUDGET {
            break;
        }
        bytes += svg.len();
        plotted += 1;
        body.push_str(&format!(
            "<figure>\n{svg}\n<figcaption>{} over {} (release order), every repetition a point{}.</figcaption>\n</figure>\n",
            escape(&shown),
            if from > 0 {
                format!("the newest {PLOT_LABELS} of {} labels", points.len())
            } else {
                "the labels".to_string()
            },
            if first_bad.is_some() {
                "; red from the first bad label of an open change on"
            } else {
                ""
            }
        ));
    }
    if metrics.len() > plotted {
        body.push_str(&format!(
            "<p class=\"about\">{} more metrics: `sigbench compare` shows them.</p>\n",
            metrics.len() - plotted
        ));
    }
    Ok(body)
}

/// The columns of a changes table (with its series' column on the index).
fn change_headers(with_series: bool) -> Vec<&'static str> {
    let mut h = vec![
        "id",
        "status",
        "triage",
        "metric",
        "last good → first bad",
        "change",
        "report",
    ];
    if with_series {
        h.insert(1, "series");
    }
    h
}

/// The formats of a change's report the site publishes (`change-ID.FORMAT`): no other
/// (an `svg` or `xhtml` row of a crafted store would be a page a browser runs).
pub const REPORT_FORMATS: [&str; 4] = ["txt", "html", "eml", "repro.c"];

/// A stored report of change `id` as the site publishes it (None: a format it does not
/// publish): HTML [`framed`] (with links to the `siblings`, the change's other formats
/// the site publishes), the others as they are.
pub fn published(id: i64, format: &str, body: &str, siblings: &[&str]) -> Option<String> {
    match format {
        "html" => Some(framed(id, body, siblings)),
        f if REPORT_FORMATS.contains(&f) => Some(body.to_string()),
        _ => None,
    }
}

/// A stored HTML report as the site publishes it: its markup escaped into the `srcdoc` of
/// a sandboxed frame (no scripts, forms, pop-ups or navigation of the page around it) on a
/// page of the site's own. A store is data — imported from elsewhere, or crafted — and the
/// site promises no JavaScript: a `<script>` or an `onload=` kept in a report is shown
/// inert, never run in the reader's browser. The other formats (text, mail, C) are
/// written as they are: no browser runs them.
fn framed(id: i64, html: &str, siblings: &[&str]) -> String {
    let what = |f: &str| match f {
        "txt" => "the text",
        "eml" => "the mail",
        "repro.c" => "the reproducer",
        _ => "",
    };
    let links: String = siblings
        .iter()
        .filter(|f| REPORT_FORMATS.contains(f) && **f != "html")
        .map(|f| format!(" · <a href=\"{}\">{}</a>", report_file(id, f), what(f)))
        .collect();
    html::page(
        &format!("change {id}: its report"),
        "\niframe { width: 100%; height: 85vh; border: 1px solid #ccc; }\n",
        &format!("<nav><a href=\"../index.html\">all series</a>{links}</nav>\n"),
        &format!(
            "<iframe sandbox title=\"the report\" srcdoc=\"{}\"></iframe>\n",
            escape(html)
        ),
        "static site, generated ",
    )
}

/// A report's file name under `reports/`.
fn report_file(id: i64, format: &str) -> String {
    format!("change-{id}.{format}")
}

/// Build the site of everything `store` holds and write it into `dir` (`flag` names it in
/// errors: `-o`, `--site`; created if missing, never through a link; pages written whole,
/// one at a time, over regular files only, the store's reports under `reports/`). Every
/// name is checked before the first is written: a site never replaces the store. Returns
/// how many pages were written.
pub fn write(store: &analyse::store::Store, dir: &std::path::Path, flag: &str) -> Result<usize> {
    let out = measure::outputs::OutDir::open(flag, dir, store.location.path())?;
    let mut labels = Vec::new();
    for l in store.labels()? {
        let runs = store.load(&analyse::store::Selector::Label(l.clone()))?;
        labels.push((l, runs));
    }
    let changes = store.changes(None)?;
    let site = build(&labels, &changes, &store.report_formats()?)?;
    let reports_dir = out.sub("reports")?;
    for (name, _) in &site.pages {
        out.check(name)?;
    }
    for (id, format) in &site.reports {
        reports_dir.check(&report_file(*id, format))?;
    }
    for (name, html) in &site.pages {
        out.write(name, html.as_bytes())?;
    }
    for (id, format) in &site.reports {
        let body = store.report(*id, format)?.unwrap_or_default();
        let siblings: Vec<&str> = site
            .reports
            .iter()
            .filter(|(i, f)| i == id && f != format)
            .map(|(_, f)| f.as_str())
            .collect();
        if let Some(body) = published(*id, format, &body, &siblings) {
            reports_dir.write(&report_file(*id, format), body.as_bytes())?;
        }
    }
    Ok(site.pages.len())
}
