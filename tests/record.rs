//! `sigbench record` end to end: real rpm and dpkg upgrades of packages with a few hundred
//! files, recorded from strace and replayed on btrfs, the replay checked call by call
//! against what the recorder kept.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const FILES: usize = 300;

/// A scratch directory removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("sigbench-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
    fn s(&self, rel: &str) -> String {
        self.path(rel).to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `FILES` files of 1–4 KiB of pseudo-random bytes (different per version).
fn payload(dir: &Path, version: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let mut state = version.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for i in 1..=FILES {
        let size = 1024 + (i * 37) % 3072;
        let mut data = Vec::with_capacity(size);
        while data.len() < size {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            data.extend_from_slice(&state.to_le_bytes());
        }
        data.truncate(size);
        std::fs::write(dir.join(format!("doc_{i:03}.txt.gz")), data).unwrap();
    }
}

/// (file, phase) → syscalls in order, from `record --kept` TSV.
fn kept_sequences(tsv: &str) -> BTreeMap<(u64, u32), Vec<String>> {
    let mut m: BTreeMap<(u64, u32), Vec<String>> = BTreeMap::new();
    for l in tsv.lines().skip(1) {
        let f: Vec<&str> = l.split('\t').collect();
        m.entry((f[1].parse().unwrap(), f[2].parse().unwrap()))
            .or_default()
            .push(f[3].to_string());
    }
    m
}

/// (file, phase) → syscalls in order, from `run --op-log`; also checks the phases ran in order.
fn replayed_sequences(log: &str) -> BTreeMap<(u64, u32), Vec<String>> {
    let mut m: BTreeMap<(u64, u32), Vec<String>> = BTreeMap::new();
    let mut last_phase = 0;
    for l in log.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = l.split('\t').collect();
        let phase: u32 = f[0].parse().unwrap();
        assert!(
            phase >= last_phase,
            "phase {phase} ran after phase {last_phase}"
        );
        last_phase = phase;
        m.entry((f[1].parse().unwrap(), phase))
            .or_default()
            .push(f[2].to_string());
    }
    m
}

fn totals(m: &BTreeMap<(u64, u32), Vec<String>>) -> BTreeMap<String, usize> {
    let mut t = BTreeMap::new();
    for v in m.values() {
        for s in v {
            *t.entry(s.clone()).or_insert(0) += 1;
        }
    }
    t
}

/// `strace -c -f` of a command: syscall → calls.
fn strace_counts(args: &[&str], out: &Path) -> BTreeMap<String, usize> {
    let mut all = vec![
        "-c",
        "-f",
        "-o",
        out.to_str().unwrap(),
        env!("CARGO_BIN_EXE_sigbench"),
    ];
    all.extend_from_slice(args);
    sh("strace", &all);
    std::fs::read_to_string(out)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // % time, seconds, usecs/call, calls, [errors], syscall
            if f.len() >= 5 && f[0].parse::<f64>().is_ok() {
                Some((f.last()?.to_string(), f[3].parse().ok()?))
            } else {
                None
            }
        })
        .collect()
}

/// Record `trace`, replay it with an op log, and check the replay against the recording.
fn record_and_replay(dir: &Scratch, trace: &Path) -> (String, BTreeMap<(u64, u32), Vec<String>>) {
    let sig = dir.s("sig.toml");
    let kept = dir.s("kept.tsv");
    let out = run(&[
        "record",
        trace.to_str().unwrap(),
        "-o",
        &sig,
        "--kept",
        &kept,
    ]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains(&format!("recorded {FILES} files under ")),
        "{}",
        stdout(&out)
    );
    let toml = std::fs::read_to_string(&sig).unwrap();
    let recorded = kept_sequences(&std::fs::read_to_string(&kept).unwrap());
    assert_eq!(recorded.keys().map(|(f, _)| *f).max(), Some(FILES as u64));

    let log = dir.s("replay.log");
    let out = run(&["run", &sig, "--op-log", &log]);
    assert_ok(&out);
    let line = &s3e_lines(&out)[0];
    assert!(
        line.starts_with(&format!("...replaying {FILES} files on ")),
        "{line}"
    );
    let replayed = replayed_sequences(&std::fs::read_to_string(&log).unwrap());
    assert_eq!(
        replayed, recorded,
        "the replay issues each file's recorded calls, phase by phase, in order"
    );

    // Once more under strace -c -f: the calls only the executor issues match exactly.
    // --no-store: SQLite fchowns its journal files as root, which is not the replay.
    let counts = strace_counts(&["run", &sig, "--no-store"], &dir.path("strace-c.txt"));
    for (syscall, n) in totals(&recorded) {
        let seen = counts.get(&syscall).copied().unwrap_or(0);
        if ["openat", "close", "write", "read"].contains(&syscall.as_str()) {
            assert!(seen >= n, "{syscall}: strace saw {seen}, recorded {n}");
        } else {
            assert_eq!(seen, n, "{syscall}: strace -c -f count of the replay");
        }
    }
    (toml, recorded)
}

/// `sigbench minimize` of the recorded signature with `inode_evictions >= N`: the steps
/// left per phase (syscall names). The result must be 1-minimal, replay, and keep the
/// predicate.
fn minimize_recorded(dir: &Scratch) -> Vec<(String, Vec<String>)> {
    let min = dir.path("min.toml");
    let out = run(&[
        "minimize",
        &dir.s("sig.toml"),
        "--until",
        "inode_evictions >= N",
        "-o",
        min.to_str().unwrap(),
    ]);
    assert_ok(&out);
    let summary = stdout(&out);
    assert!(summary.contains("1-minimal: yes"), "{summary}");
    let replay = run(&["run", min.to_str().unwrap(), "--no-store"]);
    assert_ok(&replay);
    for line in s3e_lines(&replay) {
        let evictions: u64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(evictions >= FILES as u64, "{line}");
    }
    steps_of(&min)
}

#[test]
fn rpm_upgrade_is_recorded_and_replayed_call_for_call() {
    require_root();
    let d = Scratch::new("rpm");
    for v in [1u64, 2] {
        payload(&d.path(&format!("src{v}/usr/share/sigtest")), v);
        let spec = format!(
            "Name: sigtest\nVersion: {v}\nRelease: 1\nSummary: t\nLicense: MIT\nBuildArch: noarch\n\
             %description\nt\n%install\nmkdir -p %{{buildroot}}\ncp -a {}/src{v}/. %{{buildroot}}/\n\
             %files\n/usr/share/sigtest\n",
            d.0.display()
        );
        std::fs::write(d.path(&format!("v{v}.spec")), spec).unwrap();
        sh(
            "rpmbuild",
            &[
                "-bb",
                "--quiet",
                "--define",
                &format!("_topdir {}", d.s(&format!("top{v}"))),
                &d.s(&format!("v{v}.spec")),
            ],
        );
    }
    let rpm = |v: u64| d.s(&format!("top{v}/RPMS/noarch/sigtest-{v}-1.noarch.rpm"));
    let root = d.s("root");
    sh("rpm", &["--root", &root, "--initdb"]);
    sh("rpm", &["-i", "--root", &root, "--nodeps", &rpm(1)]);
    let trace = d.path("upgrade.trace");
    sh(
        "strace",
        &[
            "-f",
            "-tt",
            "-T",
            "-y",
            "-o",
            trace.to_str().unwrap(),
            "rpm",
            "-U",
            "--root",
            &root,
            "--nodeps",
            &rpm(2),
        ],
    );

    let (toml, recorded) = record_and_replay(&d, &trace);
    // rpm 4.18: write every `name;token`, then rename every one over the old file.
    let phases: Vec<u32> = recorded.keys().map(|(_, p)| *p).collect();
    assert_eq!(phases.iter().max(), Some(&2), "{toml}");
    assert!(
        toml.contains(r#"{ op = "renameat", from = "{name};"#),
        "{toml}"
    );
    assert!(
        toml.contains("[setup]\npopulate"),
        "the old files exist before the upgrade: {toml}"
    );
    assert_eq!(recorded[&(1, 2)], ["renameat"]);

    // Minimized: create the temporary name (and close it), rename it over the old file.
    let min = minimize_recorded(&d);
    let calls: Vec<&str> = min
        .iter()
        .flat_map(|(_, s)| s.iter().map(String::as_str))
        .collect();
    assert_eq!(calls, ["openat", "close", "renameat"], "{min:?}");
}

#[test]
fn dpkg_upgrade_keeps_its_three_phases() {
    require_root();
    let d = Scratch::new("dpkg");
    for v in [1u64, 2] {
        let pkg = d.path(&format!("pkg{v}"));
        payload(&pkg.join("usr/share/sigtest"), v);
        std::fs::create_dir_all(pkg.join("DEBIAN")).unwrap();
        std::fs::write(
            pkg.join("DEBIAN/control"),
            format!("Package: sigtest\nVersion: {v}\nArchitecture: all\nMaintainer: t <t@example.org>\nDescription: t\n"),
        )
        .unwrap();
        sh(
            "dpkg-deb",
            &[
                "--build",
                "-Znone",
                pkg.to_str().unwrap(),
                &d.s(&format!("sigtest_{v}.deb")),
            ],
        );
    }
    let root = d.s("root");
    for sub in ["var/lib/dpkg/info", "var/lib/dpkg/updates"] {
        std::fs::create_dir_all(d.path("root").join(sub)).unwrap();
    }
    std::fs::write(d.path("root/var/lib/dpkg/status"), "").unwrap();
    let dpkg = |deb: &str| -> Vec<String> {
        [
            "dpkg",
            &format!("--root={root}"),
            "--force-script-chrootless",
            "--log=/dev/null",
            "-i",
            deb,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let v1 = dpkg(&d.s("sigtest_1.deb"));
    sh(
        &v1[0],
        &v1[1..].iter().map(String::as_str).collect::<Vec<_>>(),
    );

    // This time sigbench runs strace itself.
    let trace = d.path("upgrade.trace");
    let v2 = dpkg(&d.s("sigtest_2.deb"));
    let mut args = vec![
        "record",
        "-o",
        "/dev/null",
        "--save-trace",
        trace.to_str().unwrap(),
        "--",
    ];
    args.extend(v2.iter().map(String::as_str));
    let out = run(&args);
    assert_ok(&out);

    let (toml, recorded) = record_and_replay(&d, &trace);
    // Unpack each file as .dpkg-new and hard-link a backup; rename each into place;
    // unlink each backup.
    let sig_phases: Vec<&str> = toml.split("[[phase]]").skip(1).collect();
    assert_eq!(sig_phases.len(), 3, "{toml}");
    assert!(
        sig_phases[0].contains(r#"op = "openat", path = "{name}.dpkg-new""#),
        "{toml}"
    );
    assert!(
        sig_phases[0].contains(r#"{ op = "link", from = "{name}", to = "{name}.dpkg-tmp" }"#),
        "{toml}"
    );
    assert!(
        sig_phases[1].contains(r#"{ op = "rename", from = "{name}.dpkg-new", to = "{name}" }"#),
        "{toml}"
    );
    assert!(
        sig_phases[2].contains(r#"{ op = "unlink", path = "{name}.dpkg-tmp" }"#),
        "{toml}"
    );
    assert_eq!(recorded[&(7, 2)], ["rename"]);

    // Minimized: unpack as .dpkg-new and rename it over the old file; the backup link and
    // its unlink only move the eviction to the last phase.
    let min = minimize_recorded(&d);
    let calls: Vec<&str> = min
        .iter()
        .flat_map(|(_, s)| s.iter().map(String::as_str))
        .collect();
    assert_eq!(calls, ["openat", "close", "rename"], "{min:?}");
}

#[test]
fn validate_names_the_line_and_the_closest_op() {
    let d = Scratch::new("validate");
    let f = d.path("typo.toml");
    std::fs::write(&f, "format = 1\nname = \"t\"\n[[phase]]\nsteps = [\n  { op = \"renmae\", from = \"{name}\", to = \"{name}-x\" },\n]\n").unwrap();
    let out = run(&["validate", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).trim(),
        format!(
            "{}:5: unknown op `renmae`: did you mean `rename`?",
            f.display()
        )
    );
    let out = run(&[
        "validate",
        concat!(env!("CARGO_MANIFEST_DIR"), "/signatures/s3e-test3.toml"),
    ]);
    assert_ok(&out);
}

#[test]
fn malformed_traces_fail_with_the_line_or_are_counted_with_lenient() {
    let d = Scratch::new("badtrace");
    let f = d.path("t.trace");
    std::fs::write(&f, "1 openat(AT_FDCWD, \"/x/a\", O_WRONLY|O_CREAT, 0644) = 3\nnonsense here\n1 close(3) = 0\n1 openat(AT_FDCWD, \"/x/b\", O_WRONLY|O_CR").unwrap();
    let out = run(&["record", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("t.trace: line 2: not a system call"),
        "{}",
        stderr(&out)
    );
    let out = run(&["record", f.to_str().unwrap(), "--lenient"]);
    assert_ok(&out);
    assert!(
        stderr(&out).contains("skipped 2 trace lines"),
        "{}",
        stderr(&out)
    );
    // A byte that is not UTF-8: named with its line, or skipped with --lenient.
    let mut t =
        b"1 openat(AT_FDCWD, \"/x/a\", O_WRONLY|O_CREAT, 0644) = 3\n1 close(3) = 0\n".to_vec();
    t.extend_from_slice(b"1 unlink(\"/x/\xe9t\xe9\") = 0\n");
    t.extend_from_slice(
        b"1 openat(AT_FDCWD, \"/x/b\", O_WRONLY|O_CREAT, 0644) = 3\n1 close(3) = 0\n",
    );
    std::fs::write(&f, t).unwrap();
    let out = run(&["record", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("t.trace: line 3: byte 0xe9 at column 14 is not UTF-8"),
        "{}",
        stderr(&out)
    );
    let out = run(&["record", f.to_str().unwrap(), "--lenient"]);
    assert_ok(&out);
    assert!(
        stderr(&out).contains("skipped 1 trace lines"),
        "{}",
        stderr(&out)
    );
}
