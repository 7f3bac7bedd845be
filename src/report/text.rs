//! The human-readable report of a run: s3e's line per case, then a summary of CPU,
//! counters and per-syscall latency, and with `-v` the kernel counters that moved most.

use crate::plan::Plan;
use crate::probe::Reading;
use crate::results::{CaseResult, RunDocument};
use crate::stats::Summary;
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
pub fn summary(doc: &RunDocument, verbose: bool) -> String {
    let mut out = String::new();
    let groups = groups(doc);
    if groups.is_empty() {
        return out;
    }
    let reps = doc.plan.repetitions;
    let t = &doc.testbed;
    writeln!(
        out,
        "\n{} on {} ({} {}, {} MiB), kernel {}, {} repetition{}",
        doc.signature.name,
        t.fs,
        t.device_kind,
        t.device,
        t.device_bytes >> 20,
        doc.host.kernel_release,
        reps,
        if reps == 1 { "" } else { "s" }
    )
    .unwrap();

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
