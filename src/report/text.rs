//! The human-readable report of a run: s3e's line per case, then a summary of CPU,
//! counters and per-syscall latency, and with `-v` the kernel counters that moved most.

use crate::plan::Plan;
use crate::probe::Reading;
use crate::probe::procfs::SlabDelta;
use crate::report::table::{Align, Table};
use crate::results::{CaseResult, RunDocument};
use crate::stats::{Summary, fit_exponent};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Column widths for the s3e lines, fixed up front so the lines of one run align.
#[derive(Clone, Copy, Debug)]
pub struct LineLayout {
    n_width: usize,
    path_width: usize,
}

impl LineLayout {
    pub fn new(plan: &Plan, mount_point_len: usize) -> LineLayout {
        let n_width = plan
            .ns
            .iter()
            .map(|n| n.to_string().len())
            .max()
            .unwrap_or(1);
        let longest = plan.dirs.iter().map(|d| d.name.len()).max().unwrap_or(0);
        LineLayout {
            n_width,
            // "<mount>/<dir>:"
            path_width: mount_point_len + 1 + longest + 1,
        }
    }
}

fn ms(ns: u64) -> String {
    let ms = ns as f64 / 1e6;
    if ms >= 10.0 {
        format!("{ms:.0}")
    } else {
        format!("{ms:.1}")
    }
}

/// `...updating 250 files on /mnt/zstd:  Job took 17 ms @inode_evictions: 250`
pub fn s3e_line(plan: &Plan, r: &CaseResult, layout: &LineLayout) -> String {
    let sig = &plan.signature;
    let mut line = format!(
        "...{} {:>nw$} {} on {:<pw$} Job took {:>5} ms",
        sig.verb,
        r.n,
        sig.unit,
        format!("{}:", r.path),
        ms(r.wall_ns),
        nw = layout.n_width,
        pw = layout.path_width,
    );
    for c in &r.counters {
        match &c.reading {
            Reading::Counted { value, .. } => write!(line, " @{}: {value}", c.name).unwrap(),
            Reading::Unavailable { .. } => write!(line, " @{}: unavailable", c.name).unwrap(),
        }
    }
    if r.warmup {
        line.push_str(" (warm-up, excluded)");
    }
    line
}

/// Cases grouped by (dir, N) in plan order, warm-ups excluded.
fn groups(doc: &RunDocument) -> Vec<(String, u64, Vec<&CaseResult>)> {
    let mut out: Vec<(String, u64, Vec<&CaseResult>)> = Vec::new();
    for c in doc.cases.iter().filter(|c| !c.warmup) {
        match out.iter_mut().find(|(d, n, _)| *d == c.dir && *n == c.n) {
            Some((_, _, v)) => v.push(c),
            None => out.push((c.dir.clone(), c.n, vec![c])),
        }
    }
    out
}

fn summary_of(cases: &[&CaseResult], f: impl Fn(&CaseResult) -> Option<f64>) -> Option<Summary> {
    let v: Vec<f64> = cases.iter().filter_map(|c| f(c)).collect();
    if v.len() < cases.len() {
        None
    } else {
        Summary::of(&v)
    }
}

/// The summary printed after the s3e lines.
/// `slab`: the signature's evidence is the slab caches — show them without `-v`.
pub fn summary(doc: &RunDocument, verbose: bool, slab: bool) -> String {
    let mut out = String::new();
    let groups = groups(doc);
    if groups.is_empty() {
        return out;
    }
    let reps = doc.plan.repetitions;
    let t = &doc.testbed;
    let device = if t.device.is_empty() {
        "no device".to_string()
    } else {
        format!(
            "{} {}, {} MiB",
            t.device_kind,
            t.device,
            t.device_bytes >> 20
        )
    };
    writeln!(
        out,
        "\n{} on {} ({device}), kernel {}{}, {} repetition{}",
        doc.signature.name,
        t.fs,
        doc.host.kernel_release,
        doc.host
            .accelerator
            .as_ref()
            .map_or(String::new(), |a| format!(" in {a}")),
        reps,
        if reps == 1 { "" } else { "s" }
    )
    .unwrap();
    if doc.host.emulated {
        writeln!(
            out,
            "timings are emulated (QEMU TCG): compare counts, not times"
        )
        .unwrap();
    }

    // Say how each counter was counted, once.
    let first = groups[0].2[0];
    for c in &first.counters {
        let how = match &c.reading {
            Reading::Counted { scope, .. } if scope == "system-wide" => {
                "counted system-wide (the event cannot be filtered to the test device)".to_string()
            }
            Reading::Counted { scope, .. } => format!("counted on {scope} only"),
            Reading::Unavailable { reason } => format!("unavailable: {reason}"),
        };
        writeln!(out, "{}: {}, {how}", c.name, c.probe).unwrap();
    }

    let dir_w = groups.iter().map(|g| g.0.len()).max().unwrap_or(3).max(3);
    let n_w = groups
        .iter()
        .map(|g| g.1.to_string().len())
        .max()
        .unwrap_or(1)
        .max(1);
    let mut header = format!(
        "\n{:<dir_w$} {:>n_w$} {:>4} {:>10}",
        "dir", "N", "reps", "wall ms"
    );
    if reps > 1 {
        write!(header, " {:>20} {:>6}", "mean ± stdev ms", "CV").unwrap();
    }
    write!(header, " {:>9} {:>9} {:>10}", "user ms", "sys ms", "ops/s").unwrap();
    for c in &first.counters {
        write!(header, " {:>w$}", c.name, w = c.name.len().max(8)).unwrap();
    }
    writeln!(out, "{header}").unwrap();
    for (dir, n, cases) in &groups {
        let wall =
            summary_of(cases, |c| Some(c.wall_ns as f64 / 1e6)).expect("cases are not empty");
        let mut row = format!(
            "{dir:<dir_w$} {n:>n_w$} {:>4} {:>10.2}",
            cases.len(),
            wall.median
        );
        if reps > 1 {
            write!(
                row,
                " {:>20} {:>5.1}%",
                format!("{:.2} ± {:.2}", wall.mean, wall.stdev),
                wall.cv * 100.0
            )
            .unwrap();
        }
        let user =
            summary_of(cases, |c| Some(c.cpu.user_ns as f64 / 1e6)).map_or(f64::NAN, |s| s.median);
        let sys =
            summary_of(cases, |c| Some(c.cpu.sys_ns as f64 / 1e6)).map_or(f64::NAN, |s| s.median);
        let ops = summary_of(cases, |c| {
            Some(c.calls as f64 / (c.wall_ns.max(1) as f64 / 1e9))
        })
        .map_or(f64::NAN, |s| s.median);
        write!(row, " {user:>9.2} {sys:>9.2} {ops:>10.0}").unwrap();
        for c in &first.counters {
            let w = c.name.len().max(8);
            let s = summary_of(cases, |r| {
                r.counter(&c.name)?.reading.value().map(|v| v as f64)
            });
            match s {
                Some(s) => write!(row, " {:>w$}", s.median).unwrap(),
                None => write!(row, " {:>w$}", "-").unwrap(),
            }
        }
        writeln!(out, "{row}").unwrap();
    }
    if reps > 1 {
        writeln!(
            out,
            "(wall ms, CPU, ops/s and counters are medians over the repetitions)"
        )
        .unwrap();
    }

    writeln!(
        out,
        "\n{:<12} {:<dir_w$} {:>n_w$} {:>9} {:>9} {:>9} {:>9}",
        "syscall", "dir", "N", "count", "p50 µs", "p99 µs", "max µs"
    )
    .unwrap();
    for (dir, n, cases) in &groups {
        for op in &cases[0].latency {
            let pick = |f: fn(&crate::exec::OpLatency) -> u64| {
                summary_of(cases, |c| {
                    c.latency
                        .iter()
                        .find(|l| l.syscall == op.syscall)
                        .map(|l| f(l) as f64 / 1e3)
                })
                .map_or(f64::NAN, |s| s.median)
            };
            writeln!(
                out,
                "{:<12} {dir:<dir_w$} {n:>n_w$} {:>9} {:>9.1} {:>9.1} {:>9.1}",
                op.syscall,
                op.count,
                pick(|l| l.p50_ns),
                pick(|l| l.p99_ns),
                pick(|l| l.max_ns)
            )
            .unwrap();
        }
    }

    let scaling: Vec<_> = crate::stats::compare::scaling(
        &crate::stats::compare::Samples::from_runs(&doc.label, std::slice::from_ref(doc)),
    )
    .into_iter()
    .filter(|s| s.metric == "wall_ms" || first.counters.iter().any(|c| c.name == s.metric))
    .collect();
    if !scaling.is_empty() {
        writeln!(
            out,
            "\nscaling with N (log-log fit; 1 = linear, 2 = quadratic)"
        )
        .unwrap();
        for s in scaling {
            let text = match &s.scaling {
                Some(x) => format!(
                    "{:.2}{}  {}",
                    x.exponent,
                    x.ci.map_or(String::new(), |(lo, hi)| format!(" [{lo:.2} … {hi:.2}]")),
                    x.verdict()
                ),
                None => "cannot fit (a value is 0)".into(),
            };
            writeln!(out, "  {:<dir_w$} {:<16} {text}", s.dir, s.metric).unwrap();
        }
    }

    out.push_str(&phase_times(&groups));
    if slab {
        out.push_str(&slab_evidence(&groups));
    }

    if verbose {
        for c in doc.cases.iter().filter(|c| !c.warmup) {
            out.push_str(&kernel_deltas(c, 8));
        }
    }
    out
}

/// The kernel counters that moved most in one case (`-v`).
pub fn kernel_deltas(c: &CaseResult, top: usize) -> String {
    let mut out = format!(
        "\n{} N={} rep {}: kernel counters over the timed window\n",
        c.dir, c.n, c.rep
    );
    match &c.slabinfo {
        Some(s) if !s.is_empty() => {
            writeln!(
                out,
                "  {:<28} {:>12} {:>12} {:>8}",
                "slab cache", "active_objs", "num_objs", "pages"
            )
            .unwrap();
            for d in s.iter().take(top) {
                writeln!(
                    out,
                    "  {:<28} {:>+12} {:>+12} {:>+8}",
                    d.cache, d.active_objs, d.num_objs, d.pages
                )
                .unwrap();
            }
        }
        Some(_) => out.push_str("  slabinfo: no change\n"),
        None => out.push_str("  slabinfo: unavailable (/proc/slabinfo unreadable)\n"),
    }
    for (name, m) in [("vmstat", &c.vmstat), ("block device", &c.blockstat)] {
        match m {
            Some(m) if !m.is_empty() => {
                writeln!(out, "  {name}:").unwrap();
                for (k, d) in ranked(m, top) {
                    writeln!(out, "    {k:<34} {d:>+12}").unwrap();
                }
            }
            Some(_) => writeln!(out, "  {name}: no change").unwrap(),
            None => writeln!(out, "  {name}: unavailable").unwrap(),
        }
    }
    out
}

/// The `top` entries with the largest absolute change.
fn ranked(m: &std::collections::BTreeMap<String, i64>, top: usize) -> Vec<(&String, &i64)> {
    let mut v: Vec<(&String, &i64)> = m.iter().collect();
    v.sort_by_key(|(k, d)| (std::cmp::Reverse(d.unsigned_abs()), *k));
    v.truncate(top);
    v
}

fn median_of(v: Vec<f64>) -> f64 {
    Summary::of(&v).map_or(f64::NAN, |s| s.median)
}

/// Per-phase times, when a signature has several phases.
fn phase_times(groups: &[(String, u64, Vec<&CaseResult>)]) -> String {
    let names: Vec<String> = groups[0].2[0]
        .phases
        .iter()
        .map(|p| p.name.clone())
        .collect();
    if names.len() < 2 {
        return String::new();
    }
    let mut headers: Vec<(&str, Align)> = vec![("dir", Align::Left), ("N", Align::Right)];
    let cols: Vec<String> = names.iter().map(|n| format!("{n} ms")).collect();
    headers.extend(cols.iter().map(|c| (c.as_str(), Align::Right)));
    let mut t = Table::new("\nphases (wall ms, summed over rounds)", &headers);
    for (dir, n, cases) in groups {
        let mut row = vec![dir.clone(), n.to_string()];
        for k in 0..names.len() {
            let v = median_of(
                cases
                    .iter()
                    .filter_map(|c| c.phases.get(k))
                    .map(|p| p.wall_ns as f64 / 1e6)
                    .collect(),
            );
            row.push(format!("{v:.2}"));
        }
        t.push(row);
    }
    t.text()
}

/// The slab caches that changed most over the timed window — LKP's evidence — per case
/// (medians over repetitions, per phase when the signature has several), and for a sweep,
/// how the top caches grow with N. Caches rank by their largest change in active objects
/// over the window or any phase (a cache that grows by 1 500 while files are created and
/// shrinks as they are deleted matters though its net change is small), then by pages.
fn slab_evidence(groups: &[(String, u64, Vec<&CaseResult>)]) -> String {
    let mut out = String::new();
    let phases: Vec<String> = groups[0].2[0]
        .phases
        .iter()
        .filter(|p| p.slabinfo.is_some())
        .map(|p| p.name.clone())
        .collect();
    // Segments: the whole window, then each phase.
    let segments: Vec<String> = std::iter::once("window".to_string())
        .chain(phases.iter().cloned())
        .collect();
    // (cache, segment) → (dir, N) → median active_objs, for the sweep table.
    let mut growth: BTreeMap<(String, usize), BTreeMap<(String, u64), f64>> = BTreeMap::new();
    for (dir, n, cases) in groups {
        let slab_of = |c: &CaseResult, seg: usize| -> Option<Vec<SlabDelta>> {
            if seg == 0 {
                c.slabinfo.clone()
            } else {
                c.phases
                    .iter()
                    .filter(|p| p.slabinfo.is_some())
                    .nth(seg - 1)?
                    .slabinfo
                    .clone()
            }
        };
        let mut caches: Vec<String> = (0..segments.len())
            .flat_map(|seg| {
                cases
                    .iter()
                    .flat_map(move |c| slab_of(c, seg).into_iter().flatten().map(|d| d.cache))
            })
            .collect();
        caches.sort();
        caches.dedup();
        let med = |cache: &str, seg: usize, f: fn(&SlabDelta) -> i64| -> f64 {
            median_of(
                cases
                    .iter()
                    .map(|c| {
                        slab_of(c, seg)
                            .and_then(|v| v.iter().find(|d| d.cache == cache).map(f))
                            .unwrap_or(0) as f64
                    })
                    .collect(),
            )
        };
        // cache, per-segment active, num, pages, and its ranking key.
        let mut rows: Vec<(String, Vec<f64>, f64, f64, f64)> = caches
            .iter()
            .map(|c| {
                let active: Vec<f64> = (0..segments.len())
                    .map(|seg| med(c, seg, |d| d.active_objs))
                    .collect();
                let peak = active.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                (
                    c.clone(),
                    active,
                    med(c, 0, |d| d.num_objs),
                    med(c, 0, |d| d.pages),
                    peak,
                )
            })
            .collect();
        for r in &rows {
            for (seg, v) in r.1.iter().enumerate() {
                growth
                    .entry((r.0.clone(), seg))
                    .or_default()
                    .insert((dir.clone(), *n), *v);
            }
        }
        rows.sort_by(|a, b| {
            b.4.total_cmp(&a.4)
                .then_with(|| b.3.abs().total_cmp(&a.3.abs()))
        });
        let mut top: Vec<usize> = (0..rows.len().min(8)).collect();
        let mut by_pages: Vec<usize> = (0..rows.len()).collect();
        by_pages.sort_by(|&a, &b| rows[b].3.abs().total_cmp(&rows[a].3.abs()));
        for k in by_pages.into_iter().take(3) {
            if !top.contains(&k) && rows[k].3 != 0.0 {
                top.push(k);
            }
        }
        let mut headers: Vec<(&str, Align)> = vec![
            ("slab cache", Align::Left),
            ("active_objs", Align::Right),
            ("num_objs", Align::Right),
            ("pages", Align::Right),
        ];
        let cols: Vec<String> = phases.iter().map(|p| format!("{p}: active")).collect();
        headers.extend(cols.iter().map(|c| (c.as_str(), Align::Right)));
        let reps = cases.len();
        let mut t = Table::new(
            format!(
                "\nslab caches over the timed window, {dir} N={n}{}",
                if reps > 1 {
                    format!(" (medians of {reps})")
                } else {
                    String::new()
                }
            ),
            &headers,
        );
        for k in top {
            let (cache, active, num, pages, _) = &rows[k];
            let mut row = vec![
                cache.clone(),
                format!("{:+.0}", active[0]),
                format!("{num:+.0}"),
                format!("{pages:+.0}"),
            ];
            row.extend(active[1..].iter().map(|v| format!("{v:+.0}")));
            t.push(row);
        }
        out.push_str(&t.text());
    }

    // A sweep: how the caches that moved most grow with N, in the segment where each
    // moved most.
    let mut ns: Vec<u64> = groups.iter().map(|g| g.1).collect();
    ns.sort_unstable();
    ns.dedup();
    if ns.len() > 1 {
        let mut dirs: Vec<String> = groups.iter().map(|g| g.0.clone()).collect();
        dirs.sort();
        dirs.dedup();
        let largest = *ns.last().expect("two or more N");
        for dir in dirs {
            // Per cache, the segment where it grew most at the largest N (where it only
            // shrank, the largest shrinkage).
            let mut best: BTreeMap<&String, (usize, f64)> = BTreeMap::new();
            for ((cache, seg), m) in &growth {
                let v = m.get(&(dir.clone(), largest)).copied().unwrap_or(0.0);
                let rank = |v: f64| if v > 0.0 { (1, v) } else { (0, -v) };
                let e = best.entry(cache).or_insert((*seg, v));
                if rank(v) > rank(e.1) {
                    *e = (*seg, v);
                }
            }
            let mut ranked: Vec<(&String, (usize, f64))> = best.into_iter().collect();
            ranked.sort_by(|a, b| b.1.1.abs().total_cmp(&a.1.1.abs()));
            let mut headers: Vec<(&str, Align)> =
                vec![("slab cache", Align::Left), ("in", Align::Left)];
            let cols: Vec<String> = ns.iter().map(|n| format!("N={n}")).collect();
            headers.extend(cols.iter().map(|c| (c.as_str(), Align::Right)));
            headers.push(("exponent", Align::Right));
            let mut t = Table::new(
                format!("\nslab growth with N, {dir} (active objects)"),
                &headers,
            );
            for (cache, (seg, _)) in ranked.into_iter().take(6) {
                let m = &growth[&(cache.clone(), seg)];
                let values: Vec<f64> = ns
                    .iter()
                    .map(|n| m.get(&(dir.clone(), *n)).copied().unwrap_or(0.0))
                    .collect();
                let mut row = vec![cache.clone(), segments[seg].clone()];
                row.extend(values.iter().map(|v| format!("{v:+.0}")));
                // Fit the magnitude: a cache that shrinks with N scales too.
                let points: Vec<(f64, f64)> = ns
                    .iter()
                    .zip(&values)
                    .map(|(n, v)| (*n as f64, v.abs()))
                    .collect();
                row.push(
                    fit_exponent(&points).map_or("-".into(), |s| format!("{:.2}", s.exponent)),
                );
                t.push(row);
            }
            out.push_str(&t.text());
        }
    }
    out
}
