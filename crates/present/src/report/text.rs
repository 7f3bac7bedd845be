//! Plain text: what a terminal shows. s3e's line per case, the run summary (computed in
//! `stats::run`, laid out here), `-v`'s kernel counters, a comparison's tables, and the
//! aligned-columns layout of every [`Table`].

use super::render::Renderer;
use super::table::{Align, Table};
use analyse::stats::compare::Comparison;
use analyse::stats::run::{RunSummary, SlabEvidence};
use measure::plan::Plan;
use measure::probe::Reading;
use model::results::{CaseResult, RunDocument};
use std::fmt::Write;

pub struct Text;

impl Renderer for Text {
    fn comparison(&self, c: &Comparison, all: bool) -> Option<String> {
        // The answer first: each pair's change that matters most, one line.
        let mut out = String::new();
        for p in &c.pairs {
            out.push_str(&super::answer::lead_line(p));
            out.push('\n');
        }
        if !c.pairs.is_empty() {
            out.push('\n');
        }
        for t in super::compare::tables(c, all) {
            out.push_str(&t.text());
            out.push('\n');
        }
        if !c.warnings.is_empty() {
            out.push_str("warnings:\n");
            for w in &c.warnings {
                out.push_str(&format!("  {w}\n"));
            }
        }
        Some(out)
    }
}

impl Table {
    /// Aligned columns, two spaces apart, the title above and the note below.
    pub fn text(&self) -> String {
        let w = self.widths();
        let line = |cells: Vec<&str>| -> String {
            let parts: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| pad(c, w[i], self.headers[i].1))
                .collect();
            parts.join("  ").trim_end().to_string() + "\n"
        };
        let mut out = String::new();
        if !self.title.is_empty() {
            out.push_str(&self.title);
            out.push('\n');
        }
        out.push_str(&line(
            self.headers.iter().map(|(h, _)| h.as_str()).collect(),
        ));
        for r in &self.rows {
            out.push_str(&line(r.iter().map(String::as_str).collect()));
        }
        if let Some(n) = &self.note {
            out.push_str(n);
            out.push('\n');
        }
        out
    }
}

impl Table {
    /// [`Table::text`] in lines of at most `width` columns where the cells allow: when a
    /// row is wider, each row's last column (a metric's name, a description) goes on a
    /// line of its own under it, indented. A mail's tables are laid out so.
    pub fn text_within(&self, width: usize) -> String {
        let full = self.text();
        let k = self.headers.len();
        if k < 2 || full.lines().all(|l| l.chars().count() <= width) {
            return full;
        }
        let headers: Vec<(&str, Align)> = self.headers[..k - 1]
            .iter()
            .map(|(h, a)| (h.as_str(), *a))
            .collect();
        let mut first = Table::new("", &headers);
        first.rows = self.rows.iter().map(|r| r[..k - 1].to_vec()).collect();
        let mut lines = first.text().lines().map(str::to_string).collect::<Vec<_>>();
        let last = |cell: &str| format!("    {cell}");
        let mut out = String::new();
        if !self.title.is_empty() {
            out.push_str(&self.title);
            out.push('\n');
        }
        let mut rows = lines.drain(..);
        if let Some(h) = rows.next() {
            out.push_str(&h);
            out.push('\n');
            if !self.headers[k - 1].0.is_empty() {
                out.push_str(&last(&self.headers[k - 1].0));
                out.push('\n');
            }
        }
        for (line, row) in rows.zip(&self.rows) {
            out.push_str(&line);
            out.push('\n');
            out.push_str(&last(&row[k - 1]));
            out.push('\n');
        }
        if let Some(n) = &self.note {
            out.push_str(n);
            out.push('\n');
        }
        out
    }
}

fn pad(cell: &str, width: usize, align: Align) -> String {
    let fill = " ".repeat(width.saturating_sub(cell.chars().count()));
    match align {
        Align::Left => format!("{cell}{fill}"),
        Align::Right => format!("{fill}{cell}"),
    }
}

/// Column widths for the s3e lines, fixed up front so the lines of one run align.
#[derive(Clone, Copy, Debug)]
pub struct LineLayout {
    n_width: usize,
    path_width: usize,
}

impl LineLayout {
    pub fn new(plan: &Plan, mount_point_len: usize) -> LineLayout {
        let n_width = plan
            .n_values
            .iter()
            .map(|n| n.to_string().len())
            .max()
            .unwrap_or(1);
        let longest = plan.dirs.iter().map(|d| d.name.len()).max().unwrap_or(0);
        LineLayout {
            n_width,
            // "<mount>/<dir>:"
            path_width: (mount_point_len + 1 + longest + 1).min(MAX_PAD),
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
    if let Some(k) = &r.cost {
        let cost = model::metric::COST_WEIGHTS.ms(k);
        write!(line, " (cost {:>5} ms)", ms((cost * 1e6) as u64)).unwrap();
    }
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

/// The summary printed after the s3e lines.
/// `slab`: the signature's evidence is the slab caches — show them without `-v`.
pub fn summary(doc: &RunDocument, verbose: bool, slab: bool) -> String {
    let Some(s) = RunSummary::of(doc) else {
        return String::new();
    };
    let mut out = header(doc);
    let w = Widths::of(&s);
    if s.cases.iter().any(|c| c.throughput.is_some()) {
        out.push_str(&throughput_table(&s, doc.plan.repetitions));
        out.push_str(&operations_table(&s));
        out.push_str(&client_scaling_tables(&s));
    } else {
        out.push_str(&cases_table(&s, doc.plan.repetitions, &w));
        out.push_str(&latency_table(&s, &w));
    }
    for c in &s.cases {
        if let Some(m) = &c.modes {
            out.push_str(&format!(
                "{} N={}: the repetitions fall in two clusters — {} near {:.3} ms, {} near {:.3} ms (the states a kernel reaches fall in two modes; the median hides which)\n",
                c.dir, c.n, m.low.0, m.low.1, m.high.0, m.high.1
            ));
        }
    }
    out.push_str(&scaling_lines(&s, &w));
    if let Some(p) = &s.phases {
        let mut headers: Vec<(&str, Align)> = vec![("dir", Align::Left), ("N", Align::Right)];
        let mut cols: Vec<String> = p.names.iter().map(|n| format!("{n} ms")).collect();
        if p.costs.is_some() {
            cols.extend(p.names.iter().map(|n| format!("{n} cost ms")));
        }
        headers.extend(cols.iter().map(|c| (c.as_str(), Align::Right)));
        let title = if p.costs.is_some() {
            "phases (wall ms and the cost model's ms, summed over rounds)"
        } else {
            "phases (wall ms, summed over rounds)"
        };
        let mut t = Table::new(title, &headers);
        for (k, (dir, n, medians)) in p.rows.iter().enumerate() {
            let mut row = vec![dir.clone(), n.to_string()];
            row.extend(medians.iter().map(|v| format!("{v:.2}")));
            if let Some(costs) = &p.costs {
                row.extend(costs[k].2.iter().map(|v| format!("{v:.2}")));
            }
            t.push(row);
        }
        out.push('\n');
        out.push_str(&t.text());
    }
    if slab {
        out.push_str(&slab_tables(&s.slab));
    }
    if verbose {
        for c in doc.cases.iter().filter(|c| !c.warmup) {
            out.push_str(&kernel_deltas(c, 8));
        }
    }
    out
}

/// Which states a guest's repetitions started from (docs/statistics.md, "States").
fn states_line(doc: &RunDocument) -> String {
    let mut seeds: Vec<u64> = doc
        .cases
        .iter()
        .filter(|c| !c.warmup)
        .filter_map(|c| c.state)
        .collect();
    seeds.sort();
    seeds.dedup();
    match seeds.len() {
        0 => format!(
            "states: one, fixed: the repetitions share one boot's history{} (--states fixed; by default each is a boot from a state of its own)\n",
            if doc.host.clock.as_ref().and_then(|c| c.boot) == Some(model::clock::Boot::Pvh) {
                ", its kernel unpacked and entered through PVH (no decompressor, no KASLR)"
            } else {
                ""
            }
        ),
        1 => format!(
            "states: one, seed {:#x} (every repetition from it; `sigbench runs -v` lists the seeds)\n",
            seeds[0]
        ),
        n => format!(
            "states: {n} sampled, a boot each from a seed of its own (`sigbench runs -v` lists them; `--state SEED` runs one again)\n"
        ),
    }
}

/// What ran where, and how each counter was counted.
fn header(doc: &RunDocument) -> String {
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
    let mut out = format!(
        "\n{} on {} ({device}), kernel {}{}, {} repetition{}\n",
        doc.signature.name,
        t.fs,
        doc.host.kernel_release,
        doc.host
            .accelerator
            .as_ref()
            .map_or(String::new(), |a| format!(
                " in {a} with {} CPU{}",
                doc.host.cpus,
                if doc.host.cpus == 1 { "" } else { "s" }
            )),
        reps,
        if reps == 1 { "" } else { "s" }
    );
    let timebase = doc.host.timebase();
    match timebase {
        model::clock::TimeBase::Icount { .. } => {
            out.push_str(&format!("times: {}\n", model::clock::ICOUNT_NOTE));
            out.push_str(&states_line(doc));
            if let Some(m) = doc.host.clock.as_ref().and_then(|c| c.cost_model.as_ref()) {
                out.push_str(&format!("cost: {} ({m})\n", model::clock::cost_note()));
            }
        }
        model::clock::TimeBase::Emulated => {
            out.push_str(&format!(
                "timings are emulated (QEMU TCG{}): compare counts, not times\n",
                if doc.host.cpus > 1 {
                    format!(", multi-threaded: {} guest CPUs in parallel", doc.host.cpus)
                } else {
                    String::new()
                }
            ));
        }
        model::clock::TimeBase::Hardware => {}
    }
    if let Some(k) = doc.plan.clients.as_ref().and_then(|k| k.iter().max()) {
        out.push_str(&clients_note(*k, doc.host.cpus as u32, &timebase));
    }
    if let Some(t) = doc.plan.time {
        writeln!(
            out,
            "each case ran for {} s after a {} s warm-up (counts start afresh after it)",
            fmt_g(t.time_ns as f64 / 1e9),
            fmt_g(t.warmup_ns as f64 / 1e9)
        )
        .unwrap();
    }
    let first = doc.cases.iter().find(|c| !c.warmup);
    for c in first.map_or(&[][..], |c| &c.counters) {
        let how = match &c.reading {
            Reading::Counted { scope, .. } if scope == "system-wide" => {
                "counted system-wide (the event cannot be filtered to the test device)".to_string()
            }
            Reading::Counted { scope, .. } => format!("counted on {scope} only"),
            Reading::Unavailable { reason } => format!("unavailable: {reason}"),
        };
        writeln!(out, "{}: {}, {how}", c.name, c.probe).unwrap();
    }
    out
}

/// `v` as C's `%g` prints it: six significant digits, trailing zeros dropped (dbench's
/// "Throughput 980.047 MB/sec").
pub fn fmt_g(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let exp = v.abs().log10().floor() as i32;
    if !(-5..6).contains(&exp) {
        let t = format!("{v:.5e}");
        let (m, e) = t.split_once('e').unwrap_or((&t, "0"));
        let m = m.trim_end_matches('0').trim_end_matches('.');
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let decimals = (5 - exp).max(0) as usize;
    let t = format!("{v:.decimals$}");
    if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    }
}

/// dbench's closing line for one case: `Throughput 980.047 MB/sec  12 clients  12 procs
/// max_latency=155.636 ms` (each client is a thread with its own descriptors and
/// directory, as a dbench process is).
pub fn throughput_line(r: &CaseResult) -> Option<String> {
    let t = r.throughput?;
    let k = r.clients.unwrap_or(1);
    Some(format!(
        "Throughput {} MB/sec  {k} clients  {k} procs  max_latency={:.3} ms",
        fmt_g(t.mb_per_s),
        t.max_latency_ns as f64 / 1e6
    ))
}

/// The same line for a signature's case, whose throughput is first its operations.
pub fn ops_line(r: &CaseResult) -> Option<String> {
    let t = r.throughput?;
    let k = r.clients.unwrap_or(1);
    Some(format!(
        "Throughput {} ops/sec ({} MB/sec)  {k} clients  max_latency={:.3} ms",
        fmt_g(t.ops_per_s),
        fmt_g(t.mb_per_s),
        t.max_latency_ns as f64 / 1e6
    ))
}

/// dbench's latency table of one case (its rows, in its order), with the median and the
/// 99th percentile beside its average and maximum: milliseconds.
pub fn dbench_table(r: &CaseResult) -> String {
    let mut out = String::from(
        " Operation      Count    AvgLat    MaxLat    p50Lat    p99Lat\n ------------------------------------------------------------\n",
    );
    for o in &r.operations {
        writeln!(
            out,
            " {:<12} {:>7} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            o.syscall,
            o.count,
            o.mean_ns / 1e6,
            o.max_ns as f64 / 1e6,
            o.p50_ns as f64 / 1e6,
            o.p99_ns as f64 / 1e6
        )
        .unwrap();
    }
    out
}

/// What a run prints as a case finishes: a loadfile's case as dbench does (its table and
/// Throughput line), a signature's as s3e does, with its throughput when it has clients or
/// ran for a time.
pub fn case_lines(plan: &Plan, r: &CaseResult, layout: &LineLayout) -> String {
    if !r.operations.is_empty() || plan.loadfile.is_some() {
        let k = r.clients.unwrap_or(1);
        let how = match r.time {
            Some(t) => format!(
                "{} s after a {} s warm-up",
                fmt_g(t.time_ns as f64 / 1e9),
                fmt_g(t.warmup_ns as f64 / 1e9)
            ),
            None => format!("{} pass{}", r.n, if r.n == 1 { "" } else { "es" }),
        };
        let mut out = format!(
            "\n{} on {}: {k} client{}, {how}, repetition {}{}\n\n",
            plan.signature.name,
            r.path,
            if k == 1 { "" } else { "s" },
            r.rep,
            if r.warmup { " (warm-up, excluded)" } else { "" }
        );
        out.push_str(&dbench_table(r));
        out.push('\n');
        if let Some(l) = throughput_line(r) {
            out.push_str(&l);
        }
        return out;
    }
    let mut out = s3e_line(plan, r, layout);
    if let Some(l) = ops_line(r) {
        out.push('\n');
        out.push_str(&l);
    }
    out
}

/// The cases of a run with clients, for a time or of a loadfile: what they got done.
fn throughput_table(s: &RunSummary, reps: u32) -> String {
    let counted_n = s.cases.iter().any(|c| c.n > 0);
    let mut headers: Vec<(&str, Align)> = vec![("dir", Align::Left)];
    if counted_n {
        headers.push(("N", Align::Right));
    }
    headers.extend([
        ("K", Align::Right),
        ("reps", Align::Right),
        ("MB/s", Align::Right),
    ]);
    if reps > 1 {
        headers.push(("CV", Align::Right));
    }
    headers.extend([
        ("ops/s", Align::Right),
        ("max lat ms", Align::Right),
        ("user ms", Align::Right),
        ("sys ms", Align::Right),
        ("off-CPU", Align::Right),
        ("blocks/op", Align::Right),
    ]);
    headers.extend(s.counter_names.iter().map(|n| (n.as_str(), Align::Right)));
    let mut t = Table::new("", &headers);
    for c in &s.cases {
        let Some(tp) = &c.throughput else { continue };
        let mut row = vec![c.dir.clone()];
        if counted_n {
            row.push(c.n.to_string());
        }
        row.extend([
            c.clients.unwrap_or(1).to_string(),
            c.reps.to_string(),
            format!("{:.2}", tp.mb_per_s.median),
        ]);
        if reps > 1 {
            row.push(format!("{:.1}%", tp.mb_per_s.cv * 100.0));
        }
        row.extend([
            format!("{:.0}", tp.ops_per_s),
            format!("{:.3}", tp.max_latency_ms),
            format!("{:.0}", c.user_ms),
            format!("{:.0}", c.sys_ms),
            format!("{:.1}%", tp.off_cpu_pct),
            format!("{:.3}", tp.blocks_per_op),
        ]);
        row.extend(
            c.counters
                .iter()
                .map(|v| v.map_or("-".to_string(), |v| format!("{v:.0}"))),
        );
        t.push(row);
    }
    let mut out = String::from("\n");
    out.push_str(&t.text());
    if reps > 1 {
        out.push_str("(medians over the repetitions; CV of MB/s)\n");
    }
    out.push_str(
        "(off-CPU: the clients' share of the window off a CPU, blocked or waiting to run; blocks/op: voluntary context switches per operation)\n",
    );
    out
}

/// Per operation (a loadfile's, or a syscall), per case: medians of the latencies.
fn operations_table(s: &RunSummary) -> String {
    let kind = if s.operations { "operation" } else { "syscall" };
    let many_k = s
        .cases
        .iter()
        .filter_map(|c| c.clients)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        > 1
        || s.cases
            .iter()
            .map(|c| &c.dir)
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            > 1;
    let mut headers: Vec<(&str, Align)> = vec![(kind, Align::Left)];
    if many_k {
        headers.extend([("dir", Align::Left), ("K", Align::Right)]);
    }
    headers.extend([
        ("count", Align::Right),
        ("avg µs", Align::Right),
        ("p50 µs", Align::Right),
        ("p99 µs", Align::Right),
        ("max µs", Align::Right),
    ]);
    let mut t = Table::new("", &headers);
    for l in &s.latency {
        let mut row = vec![l.syscall.clone()];
        if many_k {
            row.extend([l.dir.clone(), l.clients.unwrap_or(1).to_string()]);
        }
        row.extend([
            l.count.to_string(),
            format!("{:.1}", l.avg_us),
            format!("{:.1}", l.p50_us),
            format!("{:.1}", l.p99_us),
            format!("{:.1}", l.max_us),
        ]);
        t.push(row);
    }
    format!("\n{}", t.text())
}

/// Throughput and each operation's latency against K, where K was swept.
fn client_scaling_tables(s: &RunSummary) -> String {
    let mut out = String::new();
    for cs in &s.client_scaling {
        let base = cs.rows.first().map_or(f64::NAN, |r| r.0);
        let mut t = Table::new(
            format!(
                "scaling with clients, {}{} (medians)",
                cs.dir,
                if cs.n > 0 {
                    format!(" N={}", cs.n)
                } else {
                    String::new()
                }
            ),
            &[
                ("K", Align::Right),
                ("MB/s", Align::Right),
                ("speedup", Align::Right),
                ("per client", Align::Right),
                ("ops/s", Align::Right),
                ("max lat ms", Align::Right),
                ("off-CPU", Align::Right),
            ],
        );
        let k0 = cs.ks.first().copied().unwrap_or(1) as f64;
        for (k, (mb, ops, lat, off)) in cs.ks.iter().zip(&cs.rows) {
            let speedup = mb / base;
            t.push(vec![
                k.to_string(),
                format!("{mb:.2}"),
                format!("{speedup:.2}×"),
                format!("{:.0}%", 100.0 * speedup * k0 / *k as f64),
                format!("{ops:.0}"),
                format!("{lat:.3}"),
                format!("{off:.1}%"),
            ]);
        }
        t.note = Some(format!(
            "(speedup: MB/s against K={}; per client: the speedup per client added, 100% when they do not contend)",
            cs.ks.first().copied().unwrap_or(1)
        ));
        out.push('\n');
        out.push_str(&t.text());
        let cols: Vec<String> = cs.ks.iter().map(|k| format!("K={k}")).collect();
        let mut headers: Vec<(&str, Align)> = vec![("avg latency µs", Align::Left)];
        headers.extend(cols.iter().map(|c| (c.as_str(), Align::Right)));
        let mut t = Table::new("", &headers);
        for (name, per_k) in &cs.ops {
            let mut row = vec![name.clone()];
            row.extend(per_k.iter().map(|v| format!("{v:.1}")));
            t.push(row);
        }
        out.push('\n');
        out.push_str(&t.text());
    }
    out
}

/// How K clients shared the CPUs: in parallel, or interleaved — deterministically under
/// the icount clock, where one guest CPU runs them in turn.
pub fn clients_note(k: u32, cpus: u32, timebase: &model::clock::TimeBase) -> String {
    let cpus = cpus.max(1);
    let on = format!(
        "clients: up to {k} on {cpus} CPU{}",
        if cpus == 1 { "" } else { "s" }
    );
    if k as u64 <= cpus as u64 {
        format!("{on}, in parallel\n")
    } else if timebase.deterministic() {
        format!("{on}, interleaved (the same way every run: the icount clock)\n")
    } else {
        format!("{on}, interleaved by the scheduler\n")
    }
}

/// The widths of the directory and N columns, shared by the summary's tables.
/// The widest a column is padded to: a name from a stored document can be any length, and
/// `format!` panics on a width over 65,535.
const MAX_PAD: usize = 200;

struct Widths {
    dir: usize,
    n: usize,
}

impl Widths {
    fn of(s: &RunSummary) -> Widths {
        Widths {
            dir: s
                .cases
                .iter()
                .map(|c| c.dir.len())
                .max()
                .unwrap_or(3)
                .clamp(3, MAX_PAD),
            n: s.cases
                .iter()
                .map(|c| c.n.to_string().len())
                .max()
                .unwrap_or(1)
                .max(1),
        }
    }
}

fn cases_table(s: &RunSummary, reps: u32, w: &Widths) -> String {
    let (dir_w, n_w) = (w.dir, w.n);
    let priced = s.cases.iter().any(|c| c.cost_ms.is_some());
    let mut out = format!(
        "\n{:<dir_w$} {:>n_w$} {:>4} {:>10}",
        "dir", "N", "reps", "wall ms"
    );
    if priced {
        write!(out, " {:>10}", "cost ms").unwrap();
    }
    if reps > 1 {
        write!(out, " {:>20} {:>6}", "mean ± stdev ms", "CV").unwrap();
    }
    write!(out, " {:>9} {:>9} {:>10}", "user ms", "sys ms", "ops/s").unwrap();
    for name in &s.counter_names {
        write!(out, " {:>w$}", name, w = name.len().max(8)).unwrap();
    }
    out.push('\n');
    for c in &s.cases {
        let wall = &c.wall;
        write!(
            out,
            "{:<dir_w$} {:>n_w$} {:>4} {:>10.2}",
            c.dir, c.n, c.reps, wall.median
        )
        .unwrap();
        if priced {
            match c.cost_ms {
                Some(v) => write!(out, " {v:>10.2}").unwrap(),
                None => write!(out, " {:>10}", "-").unwrap(),
            }
        }
        if reps > 1 {
            write!(
                out,
                " {:>20} {:>5.1}%",
                format!("{:.2} ± {:.2}", wall.mean, wall.stdev),
                wall.cv * 100.0
            )
            .unwrap();
        }
        write!(
            out,
            " {:>9.2} {:>9.2} {:>10.0}",
            c.user_ms, c.sys_ms, c.ops_per_s
        )
        .unwrap();
        for (name, v) in s.counter_names.iter().zip(&c.counters) {
            let w = name.len().clamp(8, MAX_PAD);
            match v {
                Some(v) => write!(out, " {v:>w$}").unwrap(),
                None => write!(out, " {:>w$}", "-").unwrap(),
            }
        }
        out.push('\n');
    }
    if reps > 1 {
        out.push_str("(wall ms, CPU, ops/s and counters are medians over the repetitions)\n");
    }
    out
}

fn latency_table(s: &RunSummary, w: &Widths) -> String {
    let (dir_w, n_w) = (w.dir, w.n);
    let mut out = format!(
        "\n{:<12} {:<dir_w$} {:>n_w$} {:>9} {:>9} {:>9} {:>9}\n",
        "syscall", "dir", "N", "count", "p50 µs", "p99 µs", "max µs"
    );
    for l in &s.latency {
        writeln!(
            out,
            "{:<12} {:<dir_w$} {:>n_w$} {:>9} {:>9.1} {:>9.1} {:>9.1}",
            l.syscall, l.dir, l.n, l.count, l.p50_us, l.p99_us, l.max_us
        )
        .unwrap();
    }
    out
}

fn scaling_lines(s: &RunSummary, w: &Widths) -> String {
    if s.scaling.is_empty() {
        return String::new();
    }
    let dir_w = w.dir;
    let mut out = String::from("\nscaling with N (log-log fit; 1 = linear, 2 = quadratic)\n");
    for r in &s.scaling {
        let text = match &r.scaling {
            Some(x) => format!(
                "{:.2}{}  {}",
                x.exponent,
                x.ci.map_or(String::new(), |(lo, hi)| format!(" [{lo:.2} … {hi:.2}]")),
                x.verdict()
            ),
            None => "cannot fit (a value is 0)".into(),
        };
        writeln!(out, "  {:<dir_w$} {:<16} {text}", r.dir, r.metric).unwrap();
    }
    out
}

/// The slab caches that moved most per case (per phase too), and for a sweep how the top
/// ones grow with N.
fn slab_tables(e: &SlabEvidence) -> String {
    let mut out = String::new();
    for top in &e.tops {
        let mut headers: Vec<(&str, Align)> = vec![
            ("slab cache", Align::Left),
            ("active_objs", Align::Right),
            ("num_objs", Align::Right),
            ("pages", Align::Right),
        ];
        let cols: Vec<String> = e.phases.iter().map(|p| format!("{p}: active")).collect();
        headers.extend(cols.iter().map(|c| (c.as_str(), Align::Right)));
        let mut t = Table::new(
            format!(
                "slab caches over the timed window, {} N={}{}",
                top.dir,
                top.n,
                if top.reps > 1 {
                    format!(" (medians of {})", top.reps)
                } else {
                    String::new()
                }
            ),
            &headers,
        );
        for r in &top.rows {
            let mut row = vec![
                r.cache.clone(),
                format!("{:+.0}", r.active[0]),
                format!("{:+.0}", r.num_objs),
                format!("{:+.0}", r.pages),
            ];
            row.extend(r.active[1..].iter().map(|v| format!("{v:+.0}")));
            t.push(row);
        }
        out.push('\n');
        out.push_str(&t.text());
    }
    for g in &e.growth {
        let mut headers: Vec<(&str, Align)> =
            vec![("slab cache", Align::Left), ("in", Align::Left)];
        let cols: Vec<String> = g.ns.iter().map(|n| format!("N={n}")).collect();
        headers.extend(cols.iter().map(|c| (c.as_str(), Align::Right)));
        headers.push(("exponent", Align::Right));
        let mut t = Table::new(
            format!("slab growth with N, {} (active objects)", g.dir),
            &headers,
        );
        for (cache, segment, values, exponent) in &g.rows {
            let mut row = vec![cache.clone(), segment.clone()];
            row.extend(values.iter().map(|v| format!("{v:+.0}")));
            row.push(exponent.map_or("-".into(), |e| format!("{e:.2}")));
            t.push(row);
        }
        out.push('\n');
        out.push_str(&t.text());
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

#[cfg(test)]
mod tests {
    use super::*;
    use model::results::fixtures;

    #[test]
    fn the_summary_lays_out_the_run() {
        let mut d = fixtures::doc("a", &[10.0, 30.0, 20.0], &[1400, 1500, 1450]);
        for c in &mut d.cases {
            c.counters = vec![fixtures::counter("evictions", Some(250))];
        }
        let s = summary(&d, false, true);
        assert!(s.contains("\nlkp-churn on tmpfs (no device), kernel a, 3 repetitions\n"));
        assert!(s.contains("evictions: tracepoint:test:evictions, counted system-wide"));
        // The case row: median 20 ms, mean ± stdev, CV, the counter's median.
        let row = s.lines().find(|l| l.starts_with("churn ")).unwrap();
        assert!(
            row.contains("20.00") && row.contains("20.00 ± 10.00"),
            "{row}"
        );
        assert!(row.trim_end().ends_with("250"), "{row}");
        // Phase and slab tables start on a line of their own (no literal "\n").
        assert!(!s.contains("\\n"), "{s}");
        assert!(s.contains("\nphases (wall ms, summed over rounds)\n"));
        assert!(s.contains("\nslab caches over the timed window, churn N=20000 (medians of 3)\n"));
        let maple = s.lines().find(|l| l.starts_with("maple_node")).unwrap();
        assert_eq!(
            maple.split_whitespace().collect::<Vec<_>>(),
            ["maple_node", "+0", "+0", "+0", "+1450", "+0"]
        );
        assert!(!summary(&d, false, false).contains("slab caches"));
    }

    #[test]
    fn verbose_shows_what_moved_most_and_says_what_is_unavailable() {
        let mut d = fixtures::doc("a", &[10.0], &[1400]);
        d.cases[0].vmstat = Some([("pgfree".to_string(), -7), ("nr_dirty".to_string(), 3)].into());
        let s = kernel_deltas(&d.cases[0], 8);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[1],
            "churn N=20000 rep 1: kernel counters over the timed window"
        );
        assert_eq!(lines[2].split_whitespace().next(), Some("slab"));
        assert!(s.contains("    pgfree") && s.find("pgfree") < s.find("nr_dirty"));
        assert!(s.contains("  block device: unavailable"));
    }
}
