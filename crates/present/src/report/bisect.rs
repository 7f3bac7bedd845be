//! A bisect as a report: the step table a maintainer pastes into a mail (reference 002's
//! columns: reps, mean, range, diff vs the good end, stdev, cv, verdict, `<- first bad`),
//! and, for the HTML report, the metric per step coloured by verdict.

use super::document::{Document, Figure};
use super::plot::{Judged, bisect_strip};
use super::table::{Align, Table};
use analyse::stats::Summary;
use anyhow::Result;
use model::metric::Metric;
use search::bisect::steps::Bisected;
use search::bisect::{Call, Report, Step};

fn sorted(r: &Report) -> Vec<&Step> {
    let mut v: Vec<&Step> = r.outcome.steps.iter().collect();
    v.sort_by_key(|s| s.index);
    v
}

/// The steps in list order (oldest first).
pub fn steps_table(r: &Report) -> Table {
    let good = r
        .outcome
        .steps
        .iter()
        .find(|s| s.index == 0)
        .and_then(|s| Summary::of(&s.samples))
        .map_or(f64::NAN, |s| s.mean);
    let mut t = Table::new(
        "",
        &[
            ("kernel", Align::Left),
            ("reps", Align::Right),
            ("mean", Align::Right),
            ("range", Align::Right),
            ("diff", Align::Right),
            ("stdev", Align::Right),
            ("cv", Align::Right),
            ("verdict", Align::Left),
        ],
    );
    for s in sorted(r) {
        let name: String = r.kernels[s.index].chars().take(60).collect();
        let mut row = vec![name];
        match Summary::of(&s.samples) {
            Some(x) => row.extend([
                x.n.to_string(),
                format!("{:.2}", x.mean),
                format!("{:.1} … {:.1}", x.min, x.max),
                if good.is_finite() && good != 0.0 {
                    format!("{:+.1}%", (x.mean / good - 1.0) * 100.0)
                } else {
                    format!("{:+.1}", x.mean - good)
                },
                format!("{:.2}", x.stdev),
                format!("{:.2}%", x.cv * 100.0),
            ]),
            None => row.extend(["0", "-", "-", "-", "-", "-"].map(String::from)),
        }
        // Bisecting an improvement: "bad" is "like the newer, better end".
        let verdict = match (s.call, r.outcome.improvement) {
            (Call::Good, false) => "good",
            (Call::Bad, false) => "bad",
            (Call::Good, true) => "old",
            (Call::Bad, true) => "improved",
            (Call::Skipped, _) => "skipped",
        };
        row.push(if r.outcome.first_bad == Some(s.index) {
            format!(
                "{verdict}  <- first {}",
                if r.outcome.improvement {
                    "improved"
                } else {
                    "bad"
                }
            )
        } else {
            verdict.to_string()
        });
        t.push(row);
    }
    t
}

/// The HTML/Markdown report of a bisect.
pub fn document(r: &Report) -> Result<Document> {
    let mut runs = steps_table(r);
    runs.title = "Steps".into();
    // Each step's evidence: a table of its own, not a warning.
    let mut why = Table::new(
        "evidence per step",
        &[("kernel", Align::Left), ("evidence", Align::Left)],
    );
    for s in sorted(r).into_iter().filter(|s| s.index != 0) {
        why.push(vec![r.kernels[s.index].clone(), s.why.clone()]);
    }
    let mut tables: Vec<Table> = [suspects(r), suspect_functions(r), changelog(r)]
        .into_iter()
        .flatten()
        .collect();
    tables.push(why);
    let (title, about, figures) = (title(r), about(r), figures(r));
    Ok(Document {
        title,
        about,
        runs,
        notices: Vec::new(),
        lead: Vec::new(),
        changed: r
            .changed
            .iter()
            .map(|c| {
                super::table::capped(
                    super::table::from_changed(c),
                    super::table::VISIBLE_ROWS,
                    "below, under every row",
                )
            })
            .collect(),
        figures,
        tables,
        details: r
            .changed
            .iter()
            .map(super::table::from_changed)
            .filter(|t| t.rows.len() > super::table::VISIBLE_ROWS)
            .collect(),
        warnings: Vec::new(),
        files: Vec::new(),
    })
}

/// The document's title: the first bad (or improved) step, or why there is none.
fn title(r: &Report) -> String {
    match (&r.first_bad, &r.outcome.doubt) {
        (Some(k), _) if r.outcome.improvement => {
            format!("bisect: first improved {k} (an improvement, not a regression)")
        }
        (Some(k), _) => format!("bisect: first bad {k}"),
        (None, Some(_)) => {
            "bisect: no answer (the last good and first bad found do not differ)".to_string()
        }
        (None, None) => "bisect: the first bad one is left open by skipped steps".to_string(),
    }
}

/// What was bisected, on what, over which steps; why there is no answer, if none.
fn about(r: &Report) -> Vec<String> {
    let mut about = vec![
        format!(
            "{} bisected on {}, metric {}; {} steps measured.",
            r.signature,
            r.what,
            r.outcome.metric,
            r.outcome.steps.len()
        ),
        format!("Oldest first: {}.", r.kernels.join(" · ")),
    ];
    if let Some(doubt) = &r.outcome.doubt {
        about.push(format!("No answer: {doubt}."));
    } else if r.first_bad.is_none() {
        let c: Vec<&str> = r
            .outcome
            .candidates
            .iter()
            .filter_map(|&i| r.kernels.get(i).map(String::as_str))
            .collect();
        about.push(format!("The first bad one is one of: {}.", c.join(", ")));
    }
    about
}

/// The metric per step, every repetition a point; with profiles, the differential flame
/// graph of the last good and first bad steps.
fn figures(r: &Report) -> Vec<Figure> {
    let steps: Vec<(String, Vec<f64>, Judged)> = sorted(r)
        .into_iter()
        .map(|s| {
            let name: String = r.kernels[s.index].chars().take(24).collect();
            let j = match s.call {
                Call::Good => Judged::Good,
                Call::Bad => Judged::Bad,
                Call::Skipped => Judged::Skipped,
            };
            (name, s.samples.clone(), j)
        })
        .collect();
    let metric = r.outcome.metric.to_string();
    let figures = match bisect_strip(&metric, &metric, &steps) {
        Ok(svg) => vec![Figure {
            id: "bisect".into(),
            title: metric.clone(),
            caption: format!(
                "{} per step, every repetition a point, oldest first; green: like the good end, red: like the bad end, grey: skipped.",
                r.outcome.metric
            ),
            svg,
        }],
        Err(_) => Vec::new(),
    };
    let mut figures = figures;
    if let Some(f) = &r.flame_stacks {
        // Drawn here from the stacks: every name escaped as any text of a report is.
        figures.push(Figure {
            id: "flame_diff".into(),
            title: "last good → first bad: where the time moved".into(),
            caption: "The first bad step's flame graph coloured by each frame's share minus its share at the last good step (same call path): red grew, blue shrank, the deeper the more.".into(),
            svg: super::flame::diff_svg(
                &format!("{} → {} — {}", f.good, f.bad, f.case),
                &f.good_stacks,
                &f.bad_stacks,
            ),
        });
    }
    figures
}

/// With a tree and `--profile`: the suspects ranked before bisecting.
fn suspects(r: &Report) -> Option<Table> {
    if r.suspects.is_empty() {
        return None;
    }
    let mut t = Table::new(
        "suspects, ranked by the ends' profiles before bisecting",
        &[
            ("#", Align::Right),
            ("commit", Align::Left),
            ("functions whose time grew", Align::Left),
            ("added ms", Align::Right),
            ("", Align::Left),
        ],
    );
    for (k, s) in r.suspects.iter().enumerate() {
        let first = r
            .first_bad
            .as_deref()
            .is_some_and(|f| f.starts_with(s.commit.get(..12).unwrap_or(&s.commit)));
        t.push(vec![
            (k + 1).to_string(),
            format!("{} {}", s.commit.get(..12).unwrap_or(&s.commit), s.subject),
            s.functions.join(", "),
            format!("{:+.3}", s.added_ms),
            match (first, s.kept) {
                (true, _) => "<- the bisect's answer".into(),
                (false, false) => "undone later in the range".into(),
                _ => String::new(),
            },
        ]);
    }
    Some(t)
}

/// A list with `--profile`: the functions whose time grew between the ends.
fn suspect_functions(r: &Report) -> Option<Table> {
    if r.suspect_functions.is_empty() {
        return None;
    }
    let mut t = Table::new(
        "suspect functions (took more time at the newest kernel than at the oldest)",
        &[("function", Align::Left), ("added ms", Align::Right)],
    );
    for g in r.suspect_functions.iter().take(10) {
        t.push(vec![g.function.clone(), format!("{:+.3}", g.added_ms)]);
    }
    Some(t)
}

/// A list of packages with `--profile`: the changelog lines that name a suspect.
fn changelog(r: &Report) -> Option<Table> {
    if r.changelog.is_empty() {
        return None;
    }
    let mut t = Table::new(
        "the first bad package's changelog since the last good one: lines that name a suspect function or its subsystem",
        &[
            ("version", Align::Left),
            ("line", Align::Left),
            ("functions", Align::Left),
            ("", Align::Left),
        ],
    );
    for m in r.changelog.iter().take(20) {
        t.push(vec![
            m.version.clone(),
            m.line.clone(),
            m.functions.join(", "),
            if m.exact {
                "names it".into()
            } else {
                "its subsystem".into()
            },
        ]);
    }
    Some(t)
}

/// A finished bisect's document: its outcome and what was found before it
/// (`Bisected::report`), and what changed from the last good step to the first bad one,
/// as a table kept in the document.
pub fn report_of(done: &Bisected, signature: &str) -> Report {
    let mut report = done.report(signature);
    report.changed = evidence(done).map(|t| super::table::to_changed(&t));
    report
}

/// What changed significantly from the last good step to the first bad one, every metric
/// (phase slab changes included), as `compare` ranks them.
fn evidence(b: &Bisected) -> Option<Table> {
    use analyse::stats::compare::{Samples, compare};
    let [(good, g), (bad, x)] = b.first_change()?;
    let cmp = compare(
        &[Samples::from_runs(&good, g), Samples::from_runs(&bad, x)],
        analyse::stats::Test::MannWhitney,
        0.05,
    );
    // The metric bisected first, then as compare ranks them: the first twelve rows, and
    // of a profiled bisect six profile rows besides (where the time went; they rank after
    // the kernel-wide deltas).
    let mut rows = super::compare::changed_rows(&cmp);
    rows.sort_by_key(|(_, _, r)| r.metric != b.outcome.metric);
    let (profile, mut rest): (Vec<_>, Vec<_>) =
        rows.into_iter().partition(|(_, _, r)| r.metric.profiled());
    rest.truncate(12);
    let rows = rest
        .into_iter()
        .chain(profile_rows(profile, |(_, _, r)| &r.metric, 6))
        .collect();
    let mut t = super::compare::rows_table(&cmp, rows);
    t.title = format!("what changed from the last good {good} to the first bad {bad}");
    Some(t)
}

/// At most `keep` of a comparison's profile rows (ranked), the functions' own times first:
/// a slower function adds its time to the total of every caller up to the system call, so
/// the totals that moved most are its callers, all by the same milliseconds, and say less
/// than where the time was spent. Two totals are kept where there are any (a new code
/// path's), the rest are self rows, each kind in its ranked order.
/// `metric` reads a row's metric.
fn profile_rows<T>(profile: Vec<T>, metric: impl Fn(&T) -> &Metric, keep: usize) -> Vec<T> {
    let (own, total): (Vec<_>, Vec<_>) =
        profile.into_iter().partition(|r| metric(r).profiled_self());
    let own_kept = own.len().min(keep - total.len().min(2));
    let total_kept = total.len().min(keep - own_kept);
    own.into_iter()
        .take(own_kept)
        .chain(total.into_iter().take(total_kept))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use search::bisect::Outcome;

    fn report() -> Report {
        let step = |index, samples: Vec<f64>, call| Step {
            index,
            kernel: format!("k{index}"),
            samples,
            call,
            why: format!("why {index}"),
        };
        Report::new(
            "4 kernels".into(),
            "lkp-churn".into(),
            (0..4).map(|i| format!("k{i}")).collect(),
            Outcome {
                metric: "create.slabinfo.maple_node.active_objs".into(),
                steps: vec![
                    step(0, vec![0.0, 0.0, 0.0], Call::Good),
                    step(3, vec![1424.0, 1410.0, 1433.0], Call::Bad),
                    step(1, vec![], Call::Skipped),
                    step(2, vec![1420.0, 1424.0, 1422.0], Call::Bad),
                ],
                first_bad: Some(2),
                candidates: vec![2],
                doubt: None,
                improvement: false,
            },
        )
    }

    fn changed() -> search::bisect::Changed {
        let mut t = Table::new(
            "what changed from the last good k0 to the first bad k2",
            &[("metric", Align::Left), ("change", Align::Right)],
        );
        t.push(vec![
            "create.slabinfo.maple_node.active_objs".into(),
            "from 0".into(),
        ]);
        super::super::table::to_changed(&t)
    }

    #[test]
    fn the_table_is_in_list_order_with_the_first_bad_marked() {
        let text = steps_table(&report()).text();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("kernel"), "{text}");
        assert!(
            lines[1].starts_with("k0") && lines[1].ends_with("good"),
            "{text}"
        );
        assert!(
            lines[2].starts_with("k1") && lines[2].ends_with("skipped"),
            "{text}"
        );
        assert!(lines[3].starts_with("k2") && lines[3].ends_with("bad  <- first bad"));
        assert!(
            lines[4].starts_with("k3") && lines[4].ends_with("bad"),
            "{text}"
        );
        assert_eq!(text.matches("<- first bad").count(), 1);
        // No good mean to relate to (0): the difference is absolute.
        assert!(lines[3].contains("+1422.0"), "{text}");
    }

    #[test]
    fn the_document_has_the_plot_and_the_reasons() {
        let d = document(&report()).unwrap();
        assert_eq!(d.title, "bisect: first bad k2");
        assert_eq!(d.figures.len(), 1);
        assert!(d.figures[0].svg.matches("<circle").count() >= 9);
        assert!(d.warnings.is_empty());
        assert!(d.tables[0].rows.iter().any(|row| row == &["k1", "why 1"]));
        let page = crate::report::renderer(crate::report::Format::Html)
            .report(&d, "bisect")
            .unwrap()
            .text;
        assert!(page.contains("first bad k2") && page.contains("&lt;- first bad"));
        assert!(d.changed.is_empty() && !page.contains("What changed"));
        // With what changed from the last good step to the first bad one, as the text has it.
        let mut r = report();
        r.changed = Some(changed());
        let d = document(&r).unwrap();
        assert_eq!(d.changed.len(), 1);
        assert_eq!(d.changed[0].headers[1].1, Align::Right);
        let page = crate::report::renderer(crate::report::Format::Html)
            .report(&d, "bisect")
            .unwrap()
            .text;
        assert!(
            page.contains("What changed") && page.contains("from 0"),
            "{page}"
        );
    }

    #[test]
    fn reads_back_what_it_writes() {
        let r = report();
        let dir = std::env::temp_dir().join(format!("sigbench-bisect-doc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("b.json");
        std::fs::write(&f, serde_json::to_string(&r).unwrap()).unwrap();
        let back = Report::read(&f).unwrap();
        assert_eq!(back.first_bad.as_deref(), Some("k2"));
        assert_eq!(back.outcome.steps.len(), 4);
        assert_eq!(back.changed, None);
        let mut r = r;
        r.changed = Some(changed());
        std::fs::write(&f, serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(Report::read(&f).unwrap().changed, Some(changed()));
        std::fs::write(&f, r#"{"schema":"sigbench.run","version":1}"#).unwrap();
        let e = Report::read(&f).unwrap_err().to_string();
        assert!(e.contains("not a sigbench bisect document"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[cfg(test)]
mod evidence_tests {
    use super::profile_rows;
    use model::metric::Metric;

    fn row(metric: &str) -> Metric {
        metric.parse().unwrap()
    }

    /// udelay's caller chain moves as one: the bisect's evidence names where the time went
    /// (the self rows) before the callers' totals, and keeps two totals.
    #[test]
    fn own_times_come_before_their_callers_totals() {
        let ranked = vec![
            row("delete.profile.total.do_syscall_64"),
            row("delete.profile.total.do_unlinkat"),
            row("delete.profile.total.shmem_unlink"),
            row("delete.profile.self.delay_tsc"),
            row("delete.profile.self.shmem_unlink"),
        ];
        let kept: Vec<String> = profile_rows(ranked.clone(), |m| m, 4)
            .iter()
            .map(Metric::to_string)
            .collect();
        assert_eq!(
            kept,
            [
                "delete.profile.self.delay_tsc",
                "delete.profile.self.shmem_unlink",
                "delete.profile.total.do_syscall_64",
                "delete.profile.total.do_unlinkat"
            ]
        );
        // Fewer self rows than room: the totals fill it.
        assert_eq!(profile_rows(ranked.clone(), |m| m, 6).len(), 5);
        assert_eq!(profile_rows(ranked[..3].to_vec(), |m| m, 6).len(), 3);
    }
}
