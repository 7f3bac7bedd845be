//! The answer a comparison leads with, in every report that has one — a watch alert,
//! `compare`'s text, `report`'s HTML: the change per phase (a slower delete is not hidden
//! by a faster create), where the time went (the functions that added most, in ms), the
//! new code paths, the kernel-wide rows and the cost model's counts that moved most.
//! Everything else comes after it.

use super::table::{Align, Table, num};
use analyse::stats::compare::{CaseKey, Comparison, Pair, Row};
use model::metric::{Family, Kind, Metric, Share, Source};
use std::collections::BTreeSet;

/// Functions named in "where the time went".
pub const TOP_FUNCTIONS: usize = 6;
/// New code paths named in the answer.
pub const TOP_NEW_PATHS: usize = 4;
/// Rows of a family of evidence (kernel-wide, the cost model's counts) named in the answer.
pub const TOP_KERNEL_ROWS: usize = 5;

/// The answer, before everything else: the change per phase (a slower delete is not hidden
/// by a faster create), the functions that added most time (share × the phase's time,
/// so two kernels compare in milliseconds), the kernel-wide rows that moved most.
pub fn answer(c: &Comparison) -> Vec<Table> {
    c.pairs.first().map(answer_pair).unwrap_or_default()
}

/// The answer for one pair of labels ([`answer`]).
pub fn answer_pair(p: &Pair) -> Vec<Table> {
    // A case profiled per phase is read per phase, not also as a whole.
    let phased: BTreeSet<&CaseKey> = p
        .rows
        .iter()
        .filter(|r| r.metric.profiled() && r.metric.phase().is_some())
        .map(|r| &r.case)
        .collect();
    let mut out = vec![phase_table(p)];
    out.extend(time_went(p, &phased));
    out.extend(new_paths(p, &phased));
    out.extend(family_rows(
        p,
        Family::KernelWide,
        "kernel-wide rows that moved most",
    ));
    out.extend(family_rows(
        p,
        Family::CostModel,
        "the cost model's counts that moved most",
    ));
    out
}

/// Which way a row moved: worse for its metric (a longer time, a lower throughput).
pub fn regressed(r: &Row) -> bool {
    let x = r.change_percent();
    if r.metric.higher_is_better() {
        x < 0.0
    } else {
        x > 0.0
    }
}

/// The change that matters most, which every report leads with (`compare`'s first line,
/// the report's answer, the mail's subject): of the significant primary rows (times,
/// prices, throughputs, the signature's counts), a time or throughput users feel before a
/// count, a regression before an improvement, then the largest change. None when none of
/// them moved — never a change that is not significant.
pub fn lead(p: &Pair) -> Option<&Row> {
    let felt = |r: &Row| r.metric.felt_time() || r.kind == Kind::Throughput;
    p.rows
        .iter()
        .filter(|r| r.significant && r.metric.primary())
        .max_by(|a, b| {
            (felt(a), regressed(a)).cmp(&(felt(b), regressed(b))).then(
                a.change_percent()
                    .abs()
                    .total_cmp(&b.change_percent().abs()),
            )
        })
}

/// What a row measures, in words: its phase (`update`), or the window's time, price or
/// throughput.
pub fn what(r: &Row) -> String {
    let of = match r.metric.source() {
        Source::Wall => "time",
        Source::Cost => "cost",
        Source::Throughput => "throughput",
        _ => r.metric.name(),
    };
    match (r.metric.phase(), r.metric.source()) {
        (Some(ph), Source::Wall) => ph.to_string(),
        (Some(ph), _) => format!("{ph} {of}"),
        (None, _) => of.to_string(),
    }
}

/// A row's change in per cent, `new` from nothing.
pub fn percent(r: &Row) -> String {
    let x = r.change_percent();
    if x.is_finite() {
        format!("{x:+.1} %")
    } else {
        "new".into()
    }
}

/// The line a pair's comparison starts with: its [`lead`] change, in words and figures,
/// and how many rows changed; or that no time, price or throughput moved.
pub fn lead_line(p: &Pair) -> String {
    let moved = p.rows.iter().filter(|r| r.significant).count();
    match lead(p) {
        Some(r) => {
            let unit = match r.metric.source() {
                Source::Wall | Source::Cost => " ms",
                Source::Throughput => " MB/s",
                _ => "",
            };
            format!(
                "{} → {}: {} {} of {} ({}, {} → {}{unit}), the change that matters most of {moved} significant row(s)",
                p.base,
                p.other,
                if regressed(r) {
                    "regression"
                } else {
                    "improvement"
                },
                percent(r),
                what(r),
                r.case.short(),
                num(r.base.median),
                num(r.other.median),
            )
        }
        None => format!(
            "{} → {}: no significant change of a time, price or throughput ({moved} other row(s) moved)",
            p.base, p.other
        ),
    }
}

/// A row's change in per cent, `new` from nothing; `~` when not significant.
fn change_cell(r: &Row) -> String {
    let x = r.change_percent();
    let mark = if r.significant { "" } else { " ~" };
    if x.is_nan() {
        format!("new{mark}")
    } else {
        format!("{x:+.1} %{mark}")
    }
}

/// The change per phase: each case's whole window and phases, wall time and price (and a
/// loadfile's throughput), medians on both sides.
fn phase_table(p: &Pair) -> Table {
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
        let unit = match r.metric.source() {
            Source::Wall => "ms",
            Source::Cost => "cost ms",
            Source::Throughput => "MB/s",
            _ => continue,
        };
        let phase = match (r.metric.phase(), r.metric.source()) {
            (None, Source::Throughput) => format!("throughput ({unit})"),
            (None, _) => format!("whole window ({unit})"),
            (Some(_), Source::Throughput) => continue,
            (Some(ph), _) => format!("{ph} ({unit})"),
        };
        phases.push(vec![
            r.case.short(),
            phase,
            num(r.base.median),
            num(r.other.median),
            change_cell(r),
        ]);
    }
    phases.note = Some("(medians; `~`: not significant)".into());
    phases
}

/// Where the time went: each function's self time in its phase (or the window), those
/// that added or saved most first.
fn time_went(p: &Pair, phased: &BTreeSet<&CaseKey>) -> Option<Table> {
    let mut added: Vec<(f64, Vec<String>)> = p
        .rows
        .iter()
        .filter(|r| r.kind == Kind::Profile && r.significant)
        .filter(|r| !(phased.contains(&r.case) && r.metric.phase().is_none()))
        .filter_map(|r| {
            let (phase, function) = profile_row(&r.metric, Share::Own)?;
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
    if added.is_empty() {
        return None;
    }
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
    Some(t)
}

/// New code paths: functions with no time at all before, by their time with callees.
/// The outermost new function of a path leads it (its callees' time is within its own):
/// 6.12's simple_offset_add and simple_offset_remove under tmpfs, say.
fn new_paths(p: &Pair, phased: &BTreeSet<&CaseKey>) -> Option<Table> {
    let mut new: Vec<(&Row, &str, &str)> = p
        .rows
        .iter()
        .filter(|r| r.kind == Kind::Profile && r.significant)
        .filter(|r| !(phased.contains(&r.case) && r.metric.phase().is_none()))
        .filter(|r| r.base.median == 0.0 && r.other.median > 0.0)
        .filter_map(|r| profile_row(&r.metric, Share::Total).map(|(ph, f)| (r, ph, f)))
        .collect();
    new.sort_by(|a, b| b.0.other.median.total_cmp(&a.0.other.median));
    if new.is_empty() {
        return None;
    }
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
    Some(t)
}

/// The rows of one family of evidence that moved most, by how far they stand out of
/// their noise: the kernel-wide rows, and the cost model's counts (never among the
/// kernel-wide: issue 59).
fn family_rows(p: &Pair, family: Family, title: &str) -> Option<Table> {
    let mut rows: Vec<&Row> = p
        .rows
        .iter()
        .filter(|r| r.metric.family() == family && !r.metric.primary() && r.significant)
        .collect();
    rows.sort_by(|a, b| a.standout(b));
    if rows.is_empty() {
        return None;
    }
    let mut t = Table::new(
        title,
        &[
            (p.base.as_str(), Align::Right),
            (p.other.as_str(), Align::Right),
            ("change", Align::Right),
            ("metric", Align::Left),
        ],
    );
    for r in rows.into_iter().take(TOP_KERNEL_ROWS) {
        t.push(vec![
            num(r.base.median),
            num(r.other.median),
            change_cell(r),
            format!("{}/{}", r.case.short(), r.metric),
        ]);
    }
    Some(t)
}

/// A profile row's phase (`window` for the whole window) and function, when `metric` is
/// a function's `share` of a profile: `delete.profile.self.memset_orig` → (delete,
/// memset_orig).
fn profile_row(metric: &Metric, share: Share) -> Option<(&str, &str)> {
    match metric.source() {
        Source::Profile { share: s, function } if *s == share => {
            Some((metric.phase().unwrap_or("window"), function.as_str()))
        }
        _ => None,
    }
}
