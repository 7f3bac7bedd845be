//! Go benchmark text (`BenchmarkName-CPUS  1  123 ns/op  250 inode_evictions/op`), so
//! benchstat can compare sigbench results: one line per measured case, one file per label.

use super::Renderer;
use crate::probe::Reading;
use crate::results::RunDocument;
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
                "goos: linux\ngoarch: {goarch}\npkg: sigbench/{}\ncpu: {}",
                clean(&run.signature.name),
                run.host.cpu_model
            )
            .unwrap();
            last_header = Some(header);
        }
        // Not configuration lines: benchstat puts results with different configuration in
        // different tables, and comparing labels is the point.
        writeln!(
            out,
            "# sigbench label {}, kernel {}, fs {}",
            run.label, run.host.kernel_release, run.testbed.fs
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
