//! The comparison of labels as tables: who was compared, the s3e summary ("250 files:
//! 21.1× more time, 125× more inode evictions"), the LKP-style metric table
//! (`A ± %stddev | %change | B ± %stddev | metric`) and the scaling exponents. Each
//! output format renders these the same way.

use super::table::{Align, Table};
use analyse::stats::compare::{Comparison, Row};
use analyse::stats::verdict::Evidence;
use model::metric::{Kind, Metric, Source, Stat};
use std::collections::BTreeMap;

pub use super::table::num;

fn stddev_pct(r: &analyse::stats::Summary) -> String {
    if r.mean == 0.0 {
        "±0%".into()
    } else {
        format!("±{:.0}%", r.stdev / r.mean.abs() * 100.0)
    }
}

/// `+40.2%`, with `~` when the change is not significant.
fn change(r: &Row) -> String {
    let c = r.change_percent();
    let text = if c.is_nan() {
        "new".into()
    } else {
        format!("{c:+.1}%")
    };
    if r.significant {
        text
    } else {
        format!("{text} ~")
    }
}

/// How the row was decided, with its Holm-adjusted p-value.
fn evidence(r: &Row) -> String {
    if r.exact {
        "exact".into()
    } else if r.insufficient {
        "too few samples".into()
    } else {
        let how = match r.evidence {
            Evidence::Separation => "sep ",
            _ => "",
        };
        match r.p_adjusted.or(r.p_value) {
            Some(p) if p < 0.0001 => format!("{how}p<0.0001"),
            Some(p) => format!("{how}p={p:.4}"),
            None => "-".into(),
        }
    }
}

fn labels_table(c: &Comparison) -> Table {
    let mut t = Table::new(
        "",
        &[
            ("label", Align::Left),
            ("runs", Align::Right),
            ("kernel", Align::Left),
            ("fs", Align::Left),
            ("note", Align::Left),
        ],
    );
    for l in &c.labels {
        let note = [l.states.as_deref(), l.clock_note.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("; ");
        t.push(vec![
            l.label.clone(),
            l.runs.to_string(),
            l.kernels.join(", "),
            l.filesystems.join(", "),
            note,
        ]);
    }
    t
}

/// s3e's comparison: per directory and N, how many times more time and counter events.
fn s3e_table(c: &Comparison, pair: usize) -> Table {
    let p = &c.pairs[pair];
    let mut counters: Vec<&Metric> = p
        .rows
        .iter()
        .filter(|r| r.kind == Kind::Counter && *r.metric.source() != Source::Calls)
        .map(|r| &r.metric)
        .collect();
    counters.sort();
    counters.dedup();
    let mut headers = vec![
        ("signature", Align::Left),
        ("dir", Align::Left),
        ("N", Align::Right),
        ("time", Align::Right),
    ];
    // The cost model's price beside the time, where the labels have one.
    let cost = Metric::window(Source::Cost);
    let priced = p.rows.iter().any(|r| r.metric == cost);
    if priced {
        headers.push(("cost", Align::Right));
    }
    let names: Vec<String> = counters.iter().map(|c| c.to_string()).collect();
    for n in &names {
        headers.push((n.as_str(), Align::Right));
    }
    let mut t = Table::new(format!("{} compared to {}", p.other, p.base), &headers);
    let mut by_case: BTreeMap<(String, u64, String), Vec<&Row>> = BTreeMap::new();
    for r in &p.rows {
        by_case
            .entry((r.case.dir.clone(), r.case.n, r.case.signature.clone()))
            .or_default()
            .push(r);
    }
    for ((dir, n, sig), rows) in by_case {
        let cell = |metric: &Metric, what: &str| -> String {
            match rows.iter().find(|r| r.metric == *metric) {
                Some(r) => match &r.ratio {
                    Some(x) => {
                        let what = if what.is_empty() {
                            String::new()
                        } else {
                            format!(" {what}")
                        };
                        format!(
                            "{:.2}×{what}{}",
                            x.ratio,
                            if r.significant { "" } else { " ~" }
                        )
                    }
                    None => format!("{} → {} {what}", num(r.base.median), num(r.other.median)),
                },
                None => "-".into(),
            }
        };
        let mut row = vec![sig, dir, n.to_string(), cell(&Metric::wall(), "time")];
        if priced {
            row.push(cell(&cost, "cost"));
        }
        for m in &counters {
            row.push(cell(m, ""));
        }
        t.push(row.into_iter().map(|s| s.trim_end().to_string()).collect());
    }
    t.note = Some("(ratio of medians; `~`: not significant at α)".into());
    t
}

/// LKP's table: significant rows first; within them time and counters, latency, then
/// kernel deltas, largest change first; unchanged rows only with `all`.
pub fn lkp_table(c: &Comparison, pair: usize, all: bool) -> Table {
    let p = &c.pairs[pair];
    let mut rows: Vec<&Row> = p.rows.iter().filter(|r| all || r.significant).collect();
    rows.sort_by(|a, b| {
        b.significant
            .cmp(&a.significant)
            // Time and counters first, then latency, then kernel-wide deltas.
            .then_with(|| a.kind.cmp(&b.kind))
            // Kernel-wide deltas (slab, vmstat, block) by how far the change stands out of
            // the noise, so the cache that really moved comes first.
            .then_with(|| {
                if a.kind == b.kind && matches!(a.kind, Kind::Kernel | Kind::Profile) {
                    a.standout(b)
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            // Finite changes by size, then metrics that were 0 on the baseline.
            .then_with(|| {
                a.change_percent()
                    .is_nan()
                    .cmp(&b.change_percent().is_nan())
            })
            .then_with(|| {
                b.change_percent()
                    .abs()
                    .total_cmp(&a.change_percent().abs())
            })
            .then_with(|| a.metric.cmp(&b.metric))
    });
    let base_h = format!("{} ± %stddev", p.base);
    let other_h = format!("{} ± %stddev", p.other);
    let mut t = Table::new(
        format!(
            "{} → {}: {} of {} metrics changed significantly",
            p.base,
            p.other,
            p.rows.iter().filter(|r| r.significant).count(),
            p.rows.len()
        ),
        &[
            (base_h.as_str(), Align::Right),
            ("", Align::Left),
            ("%change", Align::Right),
            (other_h.as_str(), Align::Right),
            ("", Align::Left),
            ("evidence", Align::Left),
            ("metric", Align::Left),
        ],
    );
    for r in rows {
        t.push(vec![
            num(r.base.median),
            stddev_pct(&r.base),
            change(r),
            num(r.other.median),
            stddev_pct(&r.other),
            evidence(r),
            format!("{}/{}", r.case.short(), r.metric),
        ]);
    }
    if t.rows.is_empty() {
        let mut row = vec![String::new(); 6];
        row.push("(no metric changed significantly)".into());
        t.push(row);
    }
    let tested = p.rows.iter().filter(|r| !r.exact);
    let primaries = tested.clone().filter(|r| r.metric.primary()).count();
    let evidence = tested.count() - primaries;
    t.note = Some(format!(
        "(medians{}; {} or separated ranges for small samples, p-values Holm-adjusted in two families — {primaries} tested rows of time, throughput and counts, {evidence} of evidence (profile, kernel-wide, latency) —: family-wise error ≤ α = {} in each; `sep`: decided by separation, docs/statistics.md)",
        if all {
            ""
        } else {
            "; rows without a significant change hidden, --all shows them"
        },
        c.test.name(),
        c.alpha
    ));
    t
}

fn scaling_table(c: &Comparison) -> Table {
    let mut t = Table::new(
        "scaling with N (log-log fit over every sample)",
        &[
            ("label", Align::Left),
            ("dir", Align::Left),
            ("metric", Align::Left),
            ("exponent", Align::Right),
            ("95% CI", Align::Left),
            ("", Align::Left),
        ],
    );
    for s in &c.scaling {
        let (e, ci, v) = match &s.scaling {
            Some(x) => (
                format!("{:.2}", x.exponent),
                x.ci.map_or("-".into(), |(lo, hi)| format!("{lo:.2} … {hi:.2}")),
                x.verdict(),
            ),
            None => ("-".into(), "-".into(), "cannot fit (a value is 0)".into()),
        };
        t.push(vec![
            s.label.clone(),
            s.dir.clone(),
            s.metric.to_string(),
            e,
            ci,
            v,
        ]);
    }
    t
}

/// Where a kind's rows stand in "what changed": the window's own times and counters, the
/// kernel-wide deltas, the profile's shares (where the time went), latency percentiles.
fn changed_rank(kind: Kind) -> u8 {
    match kind {
        Kind::Throughput | Kind::Time | Kind::Counter => 0,
        Kind::Kernel => 1,
        Kind::Profile => 2,
        Kind::Latency => 3,
    }
}

/// Every table of the comparison, in reading order.
/// Every significant row of every pair, the evidence first: time, counters and the
/// kernel's own counters (phase slab changes included) ranked by how far they stand out
/// of their noise; then the profile's shares (where the time went); latency percentiles
/// last. What a maintainer reads first.
pub fn changed_table(c: &Comparison) -> Table {
    rows_table(c, changed_rows(c))
}

/// A significant row of a pair: its base label, its other label, the row.
pub type PairRow<'a> = (&'a str, &'a str, &'a Row);

/// Every significant row of every pair, ranked as [`changed_table`] shows them.
pub fn changed_rows(c: &Comparison) -> Vec<PairRow<'_>> {
    let mut rows: Vec<PairRow<'_>> = c
        .pairs
        .iter()
        .flat_map(|p| {
            p.rows
                .iter()
                .filter(|r| r.significant)
                .map(move |r| (p.base.as_str(), p.other.as_str(), r))
        })
        .collect();
    rows.sort_by(|a, b| {
        changed_rank(a.2.kind)
            .cmp(&changed_rank(b.2.kind))
            .then_with(|| a.2.standout(b.2))
            .then_with(|| a.2.metric.cmp(&b.2.metric))
    });
    rows
}

/// `rows` of `c` as [`changed_table`] draws them.
pub fn rows_table(c: &Comparison, rows: Vec<PairRow<'_>>) -> Table {
    // One pair: its labels are the title's, not two columns repeated on every row.
    let one = match &c.pairs[..] {
        [p] => Some(format!("what changed ({} → {})", p.base, p.other)),
        _ => None,
    };
    let mut columns = Vec::new();
    if one.is_none() {
        columns.extend([("from", Align::Left), ("to", Align::Left)]);
    }
    let metric_at = columns.len() + 1;
    columns.extend([
        ("case", Align::Left),
        ("metric", Align::Left),
        ("from (median)", Align::Right),
        ("to (median)", Align::Right),
        ("change", Align::Right),
        ("evidence", Align::Left),
    ]);
    let mut t = Table::new(one.as_deref().unwrap_or("what changed"), &columns);
    for (a, b, r) in rows {
        let mut row = Vec::new();
        if one.is_none() {
            row.extend([a.to_string(), b.to_string()]);
        }
        row.extend([
            r.case.short(),
            r.metric.to_string(),
            num(r.base.median),
            num(r.other.median),
            change(r),
            evidence(r),
        ]);
        t.push(row);
    }
    if t.rows.is_empty() {
        let mut row = vec![String::new(); columns.len()];
        row[metric_at] = "(nothing changed significantly)".into();
        t.push(row);
    }
    t
}

/// A change as the reference writes it: `+11.5 % throughput`, `~` when not significant.
fn said(r: &Row, what: &str) -> String {
    let c = r.change_percent();
    let tilde = if r.significant { "" } else { " ~" };
    if c.is_nan() {
        format!(
            "{what} {} → {}{tilde}",
            num(r.base.median),
            num(r.other.median)
        )
    } else {
        format!("{c:+.1} % {what}{tilde}").replace('-', "−")
    }
}

/// The headline of a loadfile's comparison, as reference 001 sums up its patch: the
/// throughput's change, the longest operation's, and the operation whose longest
/// latency moved most ("+11.5 % throughput, −25.8 % max latency, Rename max latency
/// −77.8 %"). None when the case has no throughput.
pub fn headline(rows: &[&Row]) -> Option<String> {
    let find = |s: Source| {
        let m = Metric::window(s);
        rows.iter().copied().find(|r| r.metric == m)
    };
    let tp = find(Source::Throughput)?;
    let mut parts = vec![said(tp, "throughput")];
    if let Some(r) = find(Source::MaxLatency) {
        parts.push(said(r, "max latency"));
    }
    // The operation users would feel: a significant change before a noisy one, then the
    // one that moved by the most milliseconds (a tiny lock call doubling is not news).
    let op = rows
        .iter()
        .copied()
        .filter(|r| r.metric.latency_stat() == Some(Stat::Max) && r.change_percent().is_finite())
        .max_by(|a, b| {
            a.significant
                .cmp(&b.significant)
                .then(a.delta().total_cmp(&b.delta()))
        });
    if let Some(r) = op
        && let Source::Latency { call, .. } = r.metric.source()
    {
        parts.push(said(r, &format!("{call} max latency")));
    }
    Some(parts.join(", "))
}

/// dbench's table side by side for each loadfile case of a pair: count, average and
/// longest latency (ms) of every operation on both sides, then the throughput — under the
/// headline.
fn dbench_tables(c: &Comparison, pair: usize) -> Vec<Table> {
    let p = &c.pairs[pair];
    let mut by_case: BTreeMap<String, Vec<&Row>> = BTreeMap::new();
    for r in &p.rows {
        by_case.entry(r.case.short()).or_default().push(r);
    }
    by_case
        .into_iter()
        .filter(|(_, rows)| {
            rows.iter()
                .any(|r| r.metric.latency_stat() == Some(Stat::Avg))
        })
        .filter_map(|(case, rows)| dbench_table(&p.base, &p.other, &case, &rows))
        .collect()
}

/// One case's dbench table of `b` against `a`: per operation its count, average and
/// longest latency, then throughput and the longest latency of all.
fn dbench_table(a: &str, b: &str, case: &str, rows: &[&Row]) -> Option<Table> {
    let head = headline(rows)?;
    let find = |s: Source| {
        let m = Metric::window(s);
        rows.iter().copied().find(|r| r.metric == m)
    };
    let h = [
        format!("Count {a}"),
        format!("Count {b}"),
        format!("AvgLat {a}"),
        format!("AvgLat {b}"),
        format!("MaxLat {a}"),
        format!("MaxLat {b}"),
    ];
    let mut t = Table::new(
        format!("{b} compared to {a}, {case}: {head}"),
        &[
            ("Operation", Align::Left),
            (h[0].as_str(), Align::Right),
            (h[1].as_str(), Align::Right),
            (h[2].as_str(), Align::Right),
            (h[3].as_str(), Align::Right),
            ("change", Align::Right),
            (h[4].as_str(), Align::Right),
            (h[5].as_str(), Align::Right),
            ("change", Align::Right),
        ],
    );
    let ms = |r: Option<&Row>, base: bool| {
        r.map_or("-".to_string(), |r| {
            let s = if base { &r.base } else { &r.other };
            format!("{:.3}", s.median / 1e3)
        })
    };
    let count = |r: Option<&Row>, base: bool| {
        r.map_or("-".to_string(), |r| {
            format!("{:.0}", if base { r.base.median } else { r.other.median })
        })
    };
    for op in measure::loadfile::OPS.iter().filter_map(|o| o.row) {
        let latency = |stat| {
            let call = op.to_string();
            find(Source::Latency { call, stat })
        };
        let (avg, max) = (latency(Stat::Avg), latency(Stat::Max));
        let n = find(Source::Operations(op.to_string()));
        if avg.is_none() && n.is_none() {
            continue;
        }
        t.push(vec![
            op.to_string(),
            count(n, true),
            count(n, false),
            ms(avg, true),
            ms(avg, false),
            avg.map_or("-".into(), change),
            ms(max, true),
            ms(max, false),
            max.map_or("-".into(), change),
        ]);
    }
    for (label, r) in [
        ("Throughput MB/s", find(Source::Throughput)),
        ("max_latency ms", find(Source::MaxLatency)),
    ] {
        if let Some(r) = r {
            t.push(vec![
                label.to_string(),
                num(r.base.median),
                num(r.other.median),
                String::new(),
                String::new(),
                change(r),
                String::new(),
                String::new(),
                String::new(),
            ]);
        }
    }
    t.note =
        Some("(latencies in ms, medians over the repetitions; `~`: not significant at α)".into());
    Some(t)
}

pub fn tables(c: &Comparison, all: bool) -> Vec<Table> {
    let mut v = vec![labels_table(c)];
    for i in 0..c.pairs.len() {
        v.extend(pair_summary(c, i));
        v.extend(super::answer::answer_pair(&c.pairs[i]));
        v.push(lkp_table(c, i, all));
    }
    v.extend(scaling(c));
    v
}

/// A pair's one-line summary per case: s3e's ("2000 files: 2.82× time …"), or for runs of
/// a loadfile dbench's table side by side under reference 001's headline.
pub fn pair_summary(c: &Comparison, pair: usize) -> Vec<Table> {
    let dbench = dbench_tables(c, pair);
    if dbench.is_empty() {
        vec![s3e_table(c, pair)]
    } else {
        dbench
    }
}

/// The scaling table, when the labels were swept over N.
pub fn scaling(c: &Comparison) -> Option<Table> {
    (!c.scaling.is_empty()).then(|| scaling_table(c))
}
