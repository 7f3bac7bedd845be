//! What a maintainer receives from `sigbench watch` for a confirmed change: the LKP robot's
//! first line ("sigbench noticed a +5.2 % regression of … on: kernel …"), the test case,
//! the `%stddev %change %stddev` table between the last good and the first bad kernel,
//! the bisect's steps when one ran, the commands that reproduce it — as text, and as a
//! [`Document`] (with the series over the kernels, its change marked) for HTML.

use super::answer::answer;
use super::compare::lkp_table;
use super::document::{Document, Figure};
use super::plot::{Judged, bisect_strip};
use super::table::{Align, Table, VISIBLE_ROWS, capped};
use analyse::stats::compare::Comparison;
use analyse::store::changes::ChangeRecord;
use anyhow::Result;

/// One confirmed change, with everything its report shows.
pub struct Alert<'a> {
    pub change: &'a ChangeRecord,
    pub signature: String,
    /// The test case: (what, value) lines — signature, filesystem, options, N, clock,
    /// machine.
    pub case: Vec<(String, String)>,
    /// The last good kernel against the first bad one (the confirmation's runs).
    pub comparison: Comparison,
    /// The bisects that ran: over the kernels between, then over the commits between the
    /// two releases (`--tree`).
    pub bisects: Vec<&'a search::bisect::Report>,
    /// The metric over the series: per kernel its name and repetitions (none: not
    /// measured), and whether it lies after the change.
    pub series: Vec<(String, Vec<f64>, bool)>,
    /// Commands that reproduce it.
    pub commands: Vec<model::shell::CommandLine>,
    /// The profiles' flame graphs of the two kernels, the differential one first (none
    /// without `--profile`).
    pub flames: Vec<Figure>,
}

/// "+5.2 % regression" (a time or count that grew, a throughput that fell), "-3.1 %
/// improvement", or
/// "0 → 1495 change".
fn what(c: &ChangeRecord) -> String {
    let (from, to) = c.values();
    match c.ratio() {
        Some(r) => format!(
            "{:+.1} % {}",
            (r - 1.0) * 100.0,
            if c.regressed() {
                "regression"
            } else {
                "improvement"
            }
        ),
        None => format!(
            "{} → {} change",
            super::compare::num(from),
            super::compare::num(to)
        ),
    }
}

/// The first line, in the LKP robot's words; a change not measured again is a candidate.
pub fn headline(a: &Alert) -> String {
    use analyse::store::changes::Status;
    let c = a.change;
    let on = match (c.status, &c.culprit) {
        (Status::New, _) => format!("label {} (not confirmed)", c.first_bad),
        // "ID subject": the robot's `commit: ID ("subject")`.
        (Status::Culprit, Some(commit)) => match commit.split_once(' ') {
            Some((id, subject)) => format!("commit {id} (\"{subject}\")"),
            None => format!("commit {commit}"),
        },
        (_, culprit) => format!("kernel {}", culprit.as_deref().unwrap_or(&c.first_bad)),
    };
    format!(
        "sigbench noticed a {}{} of {} {} on: {on}",
        if c.status == Status::New {
            "candidate "
        } else {
            ""
        },
        what(c),
        a.signature,
        c.metric,
    )
}

/// The test case block of a report, from a run: the signature, the filesystem with its
/// options, the directories, N (and K clients), the clock its times count (`clock`, in
/// the words the caller has for it) and the machine that ran it.
pub fn test_case(
    d: &model::results::RunDocument,
    clock: String,
    machine: String,
) -> Vec<(String, String)> {
    let n: Vec<String> = d.plan.n.iter().map(u64::to_string).collect();
    let mut v = vec![
        (
            "signature",
            format!("{} (sha256 {})", d.signature.name, d.signature.sha256),
        ),
        (
            "filesystem",
            format!(
                "{} (mkfs options '{}', mount options '{}', on {})",
                d.testbed.fs,
                d.testbed.mkfs_opts.join(" "),
                d.testbed.mount_opts,
                d.testbed.device_kind
            ),
        ),
        ("directories", d.plan.dirs.join(" | ")),
        ("N", n.join(", ")),
    ];
    if let Some(k) = &d.plan.clients {
        let k: Vec<String> = k.iter().map(u32::to_string).collect();
        v.push(("clients", k.join(", ")));
    }
    v.push(("clock", clock));
    v.push(("machine", machine));
    v.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn case_table(a: &Alert) -> Table {
    let mut t = Table::new("test case", &[("", Align::Left), ("", Align::Left)]);
    for (k, v) in &a.case {
        t.push(vec![k.clone(), v.clone()]);
    }
    t
}

fn summary(a: &Alert) -> String {
    let c = a.change;
    let bad = match c.status {
        analyse::store::changes::Status::Culprit => &c.first_bad,
        _ => c.culprit.as_deref().unwrap_or(&c.first_bad),
    };
    let mut s = format!(
        "last good {}, first bad {bad}; in the series {} → {} (p {:.2e} over its metrics)",
        c.last_good,
        super::compare::num(c.before),
        super::compare::num(c.after),
        c.p
    );
    if let Some(k) = &c.confirmed {
        // Confirmed where the series found it; a bisect may have narrowed it since.
        let ends: Vec<&str> = a
            .comparison
            .labels
            .iter()
            .map(|l| l.label.as_str())
            .collect();
        let of = match ends[..] {
            [g, b] if (g, b) != (c.last_good.as_str(), bad) => {
                format!(" of {g} and {b}")
            }
            _ => String::new(),
        };
        s.push_str(&format!(
            "; measured again, interleaved, {} repetitions each{of}: {} → {}",
            k.repetitions,
            super::compare::num(k.good),
            super::compare::num(k.bad)
        ));
        if let (Some(r), Some(ci)) = (k.ratio(), k.ci) {
            s.push_str(&format!(
                ", ratio {r:.4} (95 % CI {:.4} … {:.4})",
                ci.0, ci.1
            ));
        }
        s.push_str(&format!(", p {:.2e}", k.p));
    }
    s
}

/// The report as text (what `watch` prints and writes as `.txt`).
pub fn text(a: &Alert) -> String {
    let mut o = format!("{}\n\n{}\n\n", headline(a), summary(a));
    for t in answer(&a.comparison) {
        o.push_str(&t.text());
        o.push('\n');
    }
    o.push_str(&case_table(a).text());
    if !a.comparison.pairs.is_empty() {
        o.push('\n');
        let rest = "(the HTML report and `sigbench compare … --all` show them)";
        o.push_str(&capped(lkp_table(&a.comparison, 0, false), VISIBLE_ROWS, rest).text());
    }
    for b in &a.bisects {
        o.push_str(&format!(
            "\nbisect of {} on {}, metric {}\n",
            b.signature, b.what, b.outcome.metric
        ));
        o.push_str(&super::bisect::steps_table(b).text());
        if let Some(f) = &b.first_bad {
            o.push_str(&format!("first bad: {f}\n"));
        }
        if let Some(changed) = &b.changed {
            o.push('\n');
            o.push_str(&super::table::from_changed(changed).text());
        }
    }
    o.push_str("\nto reproduce:\n");
    for c in &a.commands {
        o.push_str(&format!("  {c}\n"));
    }
    o
}

/// The report as a document (HTML).
pub fn document(a: &Alert) -> Result<Document> {
    let c = a.change;
    let steps: Vec<(String, Vec<f64>, Judged)> = a
        .series
        .iter()
        .map(|(name, v, after)| {
            let j = match (v.is_empty(), after) {
                (true, _) => Judged::Skipped,
                (false, false) => Judged::Good,
                (false, true) => Judged::Bad,
            };
            (name.chars().take(24).collect(), v.clone(), j)
        })
        .collect();
    let shown = c.metric.to_string();
    let svg = bisect_strip(&shown, &shown, &steps)?;
    let mut tables = Vec::new();
    let mut details = Vec::new();
    for b in &a.bisects {
        let mut t = super::bisect::steps_table(b);
        t.title = format!("bisect over {}, metric {}", b.what, b.outcome.metric);
        tables.push(t);
        details.extend(b.changed.iter().map(super::table::from_changed));
    }
    let mut commands = Table::new("to reproduce", &[("command", Align::Left)]);
    for cmd in &a.commands {
        commands.push(vec![cmd.to_string()]);
    }
    tables.push(commands);
    Ok(Document {
        title: headline(a),
        about: vec![summary(a)],
        runs: case_table(a),
        notices: Vec::new(),
        lead: a
            .comparison
            .pairs
            .iter()
            .map(super::answer::lead_line)
            .collect(),
        changed: {
            let mut v = answer(&a.comparison);
            if !a.comparison.pairs.is_empty() {
                let all = lkp_table(&a.comparison, 0, false);
                let more = all.rows.len() > VISIBLE_ROWS;
                v.push(capped(all.clone(), VISIBLE_ROWS, "below, under every row"));
                if more {
                    details.insert(0, all);
                }
            }
            v
        },
        figures: std::iter::once(Figure {
            id: "series".into(),
            title: shown.clone(),
            caption: format!(
                "{} over the kernels, oldest first, every repetition a point: green before the change, red after it, grey not measured.",
                c.metric
            ),
            svg,
        })
        .chain(a.flames.iter().cloned())
        .collect(),
        tables,
        details,
        warnings: Vec::new(),
        files: Vec::new(),
    })
}
