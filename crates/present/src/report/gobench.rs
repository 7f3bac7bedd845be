//! Go benchmark text (`BenchmarkName-CPUS  1  123 ns/op  250 inode_evictions/op`), so
//! benchstat can compare sigbench results: one line per measured case, one file per label.

use super::render::Renderer;
use measure::probe::Reading;
use model::results::RunDocument;
use std::fmt::Write;

/// A benchmark name component: letters, digits and `_-=.` only.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_-=.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Free text on one line: a newline in a stored label must not start a line benchstat
/// reads as a result (`BenchmarkFake 1 1 ns/op`).
fn one_line(s: &str) -> String {
    super::table::escape_control(s)
}

/// Go requires `Benchmark` to be followed by an upper-case letter or digit.
fn bench_name(sig: &str) -> String {
    let c = clean(sig);
    let mut chars = c.chars();
    match chars.next() {
        Some(f) => f.to_ascii_uppercase().to_string() + chars.as_str(),
        None => "Sigbench".into(),
    }
}

pub struct Gobench;

impl Renderer for Gobench {
    fn runs(&self, runs: &[RunDocument]) -> Option<String> {
        Some(lines(runs))
    }
}

fn lines(runs: &[RunDocument]) -> String {
    let mut out = String::new();
    let mut last_header = None;
    for run in runs {
        let header = (
            run.host.arch.clone(),
            run.signature.name.clone(),
            run.host.cpu_model.clone(),
        );
        if last_header.as_ref() != Some(&header) {
            let goarch = if run.host.arch == "x86_64" {
                "amd64"
            } else {
                run.host.arch.as_str()
            };
            writeln!(
                out,
                "goos: linux\ngoarch: {}\npkg: sigbench/{}\ncpu: {}",
                clean(goarch),
                clean(&run.signature.name),
                one_line(&run.host.cpu_model)
            )
            .unwrap();
            last_header = Some(header);
        }
        // Not configuration lines: benchstat puts results with different configuration in
        // different tables, and comparing labels is the point.
        writeln!(
            out,
            "# sigbench label {}, kernel {}, fs {}",
            one_line(&run.label),
            one_line(&run.host.kernel_release),
            one_line(&run.testbed.fs)
        )
        .unwrap();
        for c in run.cases.iter().filter(|c| !c.warmup) {
            write!(
                out,
                "Benchmark{}/dir={}/n={}-{} 1 {} ns/op {} user-ns/op {} sys-ns/op {} calls/op",
                bench_name(&run.signature.name),
                clean(&c.dir),
                c.n,
                run.host.cpus,
                c.wall_ns,
                c.cpu.user_ns,
                c.cpu.sys_ns,
                c.calls
            )
            .unwrap();
            for k in &c.counters {
                if let Reading::Counted { value, .. } = k.reading {
                    write!(out, " {value} {}/op", clean(&k.name)).unwrap();
                }
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::results::fixtures;

    /// Issue 39, 12: a newline in a label (stored by an older sigbench, or in a document
    /// never imported) cannot inject a result line into benchstat's input.
    #[test]
    fn a_label_cannot_inject_a_benchmark_line() {
        let mut d = fixtures::doc("x", &[1.0, 1.0], &[0, 0]);
        d.label = "x\nBenchmarkFake 1 1 ns/op".into();
        d.host.kernel_release = "6.1\r\nBenchmarkFake2 1 1 ns/op".into();
        d.host.cpu_model = "cpu\nBenchmarkFake3 1 1 ns/op".into();
        let text = lines(&[d]);
        assert!(!text.contains("\nBenchmarkFake"), "{text}");
        let results = text.lines().filter(|l| l.starts_with("Benchmark")).count();
        assert_eq!(results, 2, "{text}");
    }
}
