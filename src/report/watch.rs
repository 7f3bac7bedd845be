//! What a maintainer receives from `sigbench watch` for a confirmed change: the LKP robot's
//! first line ("sigbench noticed a +5.2 % regression of … on: kernel …"), the test case,
//! the `%stddev %change %stddev` table between the last good and the first bad kernel,
//! the bisect's steps when one ran, the commands that reproduce it — as text, and as a
//! [`Document`] (with the series over the kernels, its change marked) for HTML.

use super::compare::lkp_table;
use super::compare::num;
use super::document::{Document, Figure};
use super::plot::{Judged, bisect_strip};
use super::table::{Align, Table, VISIBLE_ROWS, capped};
use crate::stats::compare::{Comparison, Row};
use crate::store::changes::ChangeRecord;
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
    pub bisects: Vec<&'a crate::bisect::Report>,
    /// The metric over the series: per kernel its name and repetitions (none: not
    /// measured), and whether it lies after the change.
    pub series: Vec<(String, Vec<f64>, bool)>,
    /// Commands that reproduce it.
    pub commands: Vec<String>,
    /// The profiles' flame graphs of the two kernels, the differential one first (none
    /// without `--profile`).
    pub flames: Vec<Figure>,
}

/// Functions named in "where the time went".
pub const TOP_FUNCTIONS: usize = 6;
/// New code paths named in the answer.
pub const TOP_NEW_PATHS: usize = 4;
/// Counter and slab rows named in the answer.
pub const TOP_KERNEL_ROWS: usize = 5;

/// The answer, before everything else: the change per phase (a slower delete is not hidden
/// by a faster create), the functions that added most time (share × the phase's time,
/// so two kernels compare in milliseconds), the kernel-wide rows that moved most.
pub fn answer(c: &Comparison) -> Vec<Table> {
    use crate::stats::compare::Kind;
    let Some(p) = c.pairs.first() else {
        return Vec::new();
    };
    let pct = |r: &Row| {
        let x = r.change_percent();
        let mark = if r.significant { "" } else { " ~" };
        if x.is_nan() {
            format!("new{mark}")
        } else {
            format!("{x:+.1} %{mark}")
        }
    };
    let mut phases = Table::new(
        format!("the change per phase ({} → {})", p.base, p.other),
        &[
            ("case", Align::Left),
            ("phase", Align::Left),
            (p.base.as_str(), Align::Right),
            (p.other.as_str(), Align::Right),
            ("change", Align::Right),
        ],
    );
    for r in &p.rows {
        let phase = match r.metric.as_str() {
            "wall_ms" => Some("whole window (ms)".to_string()),
            "throughput_mb_s" => Some("throughput (MB/s)".to_string()),
            m => m
                .strip_suffix(".wall_ms")
                .filter(|ph| !ph.contains('.'))
                .map(|ph| format!("{ph} (ms)")),
        };
        if let Some(phase) = phase {
            phases.push(vec![
                r.case.short(),
                phase,
                num(r.base.median),
                num(r.other.median),
                pct(r),
            ]);
        }
    }
    phases.note = Some("(medians; `~`: not significant)".into());
    let mut out = vec![phases];
    // Where the time went: each function's self time in its phase (or the window).
    // A case profiled per phase is read per phase, not also as a whole.
    let phased: std::collections::BTreeSet<&crate::stats::compare::CaseKey> = p
        .rows
        .iter()
        .filter(|r| r.kind == Kind::Profile && !r.metric.starts_with("profile."))
        .map(|r| &r.case)
        .collect();
    let mut added: Vec<(f64, Vec<String>)> = p
        .rows
        .iter()
        .filter(|r| r.kind == Kind::Profile && r.significant)
        .filter(|r| !(phased.contains(&r.case) && r.metric.starts_with("profile.")))
        .filter_map(|r| {
            let (phase, function) = profile_row(&r.metric, "self")?;
            // Profile rows are times already (share × the phase's time).
            let (b, o) = (r.base.median, r.other.median);
            Some((
                o - b,
                vec![
                    r.case.short(),
                    phase.to_string(),
                    function.to_string(),
                    format!("{} → {}", num(b), num(o)),
                    format!("{:+.3}", o - b),
                ],
            ))
        })
        .collect();
    added.sort_by(|a, b| b.0.abs().total_cmp(&a.0.abs()));
    if !added.is_empty() {
        let mut t = Table::new(
            "where the time went (functions by the time they added or saved)",
            &[
                ("case", Align::Left),
                ("phase", Align::Left),
                ("function", Align::Left),
                ("ms", Align::Right),
                ("added ms", Align::Right),
            ],
        );
        let more = added.len().saturating_sub(TOP_FUNCTIONS);
        for (_, row) in added.into_iter().take(TOP_FUNCTIONS) {
            t.push(row);
        }
        t.note = Some(format!(
            "(self time: the function's share of the profile × the phase's time, medians{})",
            if more > 0 {
                format!("; {more} more below")
            } else {
                String::new()
            }
        ));
        out.push(t);
    }
    // New code paths: functions with no time at all before, by their time with callees.
    // The outermost new function of a path leads it (its callees' time is within its
    // own): 6.12's simple_offset_add and simple_offset_remove under tmpfs, say.
    let mut new: Vec<(&Row, &str, &str)> = p
        .rows
        .iter()
        .filter(|r| r.kind == Kind::Profile && r.significant)
        .filter(|r| !(phased.contains(&r.case) && r.metric.starts_with("profile.")))
        .filter(|r| r.base.median == 0.0 && r.other.median > 0.0)
        .filter_map(|r| profile_row(&r.metric, "total").map(|(ph, f)| (r, ph, f)))
        .collect();
    new.sort_by(|a, b| b.0.other.median.total_cmp(&a.0.other.median));
    if !new.is_empty() {
        let mut t = Table::new(
            "new code paths (functions that took no time before, with their callees)",
            &[
                ("case", Align::Left),
                ("phase", Align::Left),
                ("function", Align::Left),
                ("ms", Align::Right),
            ],
        );
        for (r, phase, function) in new.iter().take(TOP_NEW_PATHS) {
            t.push(vec![
                r.case.short(),
                phase.to_string(),
                function.to_string(),
                num(r.other.median),
            ]);
        }
        out.push(t);
    }
    let mut kernel: Vec<&Row> = p
        .rows
        .iter()
        .filter(|r| r.kind == Kind::Kernel && r.significant)
        .collect();
    kernel.sort_by(|a, b| a.standout(b));
    if !kernel.is_empty() {
        let mut t = Table::new(
            "kernel-wide rows that moved most",
            &[
                (p.base.as_str(), Align::Right),
                (p.other.as_str(), Align::Right),
                ("change", Align::Right),
                ("metric", Align::Left),
            ],
        );
        for r in kernel.into_iter().take(TOP_KERNEL_ROWS) {
            t.push(vec![
                num(r.base.median),
                num(r.other.median),
                pct(r),
                format!("{}/{}", r.case.short(), r.metric),
            ]);
        }
        out.push(t);
    }
    out
}

/// A profile row's phase (`window` for the whole window) and function, when `metric` is
/// one of `what` (`self` or `total`): `delete.profile.self.memset_orig` → (delete,
/// memset_orig).
fn profile_row<'m>(metric: &'m str, what: &str) -> Option<(&'m str, &'m str)> {
    let tag = format!("profile.{what}.");
    let at = metric.find(&tag)?;
    let phase = metric[..at].strip_suffix('.').unwrap_or("window");
    Some((phase, &metric[at + tag.len()..]))
}

/// "+5.2 % regression" (a time or count that grew, a throughput that fell), "-3.1 %
/// improvement", or
/// "0 → 1495 change".
fn what(c: &ChangeRecord) -> String {
    let (from, to) = c
        .confirmed
        .as_ref()
        .map_or((c.before, c.after), |k| (k.good, k.bad));
    match c.ratio() {
        Some(r) => format!(
            "{:+.1} % {}",
            (r - 1.0) * 100.0,
            if (to > from) != crate::stats::compare::higher_is_better(&c.metric) {
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
    use crate::store::changes::Status;
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
        crate::store::changes::Status::Culprit => &c.first_bad,
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
        s.push_str(&format!(
            "; measured again, interleaved, {} repetitions each: {} → {}",
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
    let svg = bisect_strip(&c.metric, &c.metric, &steps)?;
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
        commands.push(vec![cmd.clone()]);
    }
    tables.push(commands);
    Ok(Document {
        title: headline(a),
        about: vec![summary(a)],
        runs: case_table(a),
        notices: Vec::new(),
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
            title: c.metric.clone(),
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
    })
}
