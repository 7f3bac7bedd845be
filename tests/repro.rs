//! `sigbench repro`: the C reproducer of a signature compiles clean (warnings as errors,
//! and under AddressSanitizer and UBSan), runs on a fresh loop btrfs, leaves the directory
//! it was given as it found it, and under strace issues the calls sigbench issues for the
//! same signature, N and clients — as tests/dbench.rs compares the loadfile with dbench.

mod common;
use common::*;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sigbench-repro-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `sigbench repro ARGS -o DIR/repro.c`, compiled twice: `-O2 -Wall -Wextra -Werror`, and
/// the same with `-fsanitize=address,undefined`. Returns (plain, sanitized) binaries.
fn build(dir: &Path, args: &[&str]) -> (PathBuf, PathBuf) {
    let c = dir.join("repro.c");
    let mut all = vec!["repro"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", c.to_str().unwrap()]);
    let out = run(&all);
    assert_ok(&out);
    assert!(stdout(&out).is_empty(), "-o given: nothing on stdout");
    let mut bins = Vec::new();
    for (name, extra) in [
        ("repro", &[][..]),
        ("repro-san", &["-fsanitize=address,undefined", "-g"][..]),
    ] {
        let bin = dir.join(name);
        let out = Command::new("cc")
            .args(["-O2", "-Wall", "-Wextra", "-Werror", "-pthread"])
            .args(extra)
            .arg("-o")
            .arg(&bin)
            .arg(&c)
            .output()
            .expect("cc (build-essential)");
        assert!(
            out.status.success(),
            "cc {extra:?} {}:\n{}",
            c.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        bins.push(bin);
    }
    (bins.remove(0), bins.remove(0))
}

/// One syscall of a workload's thread, comparable between programs: calls on paths
/// relative to the working directory and on the descriptors they opened (numbers as
/// `FD`); everything else a program does besides (its probes, its allocator, its own
/// files by absolute path) is left out. None for a line that is not such a call.
struct Workload {
    fds: HashSet<String>,
}

impl Workload {
    fn new() -> Workload {
        Workload {
            fds: HashSet::new(),
        }
    }

    fn call(&mut self, line: &str) -> Option<String> {
        let (call, ret) = line.rsplit_once(" = ")?;
        let call = call.trim_end().strip_suffix(')')?;
        let (name, args) = call.split_once('(')?;
        if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return None;
        }
        let ret = ret.split(" (").next().unwrap_or(ret).trim().to_string();
        let mut fields: Vec<String> = args.split(", ").map(str::to_string).collect();
        let relative = |f: &str| f.starts_with('"') && f.len() > 2 && !f.starts_with("\"/");
        let first = fields.first().cloned().unwrap_or_default();
        let on_fd = self.fds.contains(&first);
        let by_path = match fields.as_slice() {
            [at, p, ..] if at == "AT_FDCWD" => relative(p),
            [p, ..] => relative(p),
            [] => false,
        };
        if !(on_fd || by_path || name == "sync") {
            return None;
        }
        if on_fd {
            fields[0] = "FD".into();
            if name == "close" {
                self.fds.remove(&first);
            }
        }
        // What a read or stat wrote is the filesystem's, not the program's.
        if [
            "read",
            "pread64",
            "getdents64",
            "fstat",
            "stat",
            "lstat",
            "newfstatat",
            "statx",
        ]
        .contains(&name)
        {
            fields.retain(|f| !f.starts_with('{') && !f.starts_with('"') || relative(f));
        }
        let opened = ["openat", "open", "creat", "dup"].contains(&name)
            && ret.bytes().all(|b| b.is_ascii_digit());
        let ret = if opened {
            self.fds.insert(ret);
            "FD".to_string()
        } else {
            ret
        };
        Some(format!("{name}({}) = {ret}", fields.join(", ")))
    }
}

/// The workload calls of every thread `strace -ff -o DIR/t` saw that worked on the file
/// `first` (the signature's first file), each thread's in order; threads ordered by their
/// calls.
fn workloads(dir: &Path, first: &str) -> Vec<Vec<String>> {
    let first = format!("\"{first}\"");
    let mut v: Vec<Vec<String>> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let mut w = Workload::new();
            std::fs::read_to_string(e.path())
                .unwrap()
                .lines()
                .filter_map(|l| w.call(l))
                .collect::<Vec<_>>()
        })
        .filter(|calls: &Vec<String>| calls.iter().any(|c| c.contains(&first)))
        .collect();
    v.sort();
    v
}

fn strace(out: &Path, cmd: &Path, args: &[&str]) -> std::process::Output {
    std::fs::create_dir_all(out).unwrap();
    Command::new("strace")
        .args(["-ff", "-qq", "-s", "64", "-o"])
        .arg(out.join("t"))
        .arg(cmd)
        .args(args)
        .output()
        .expect("strace")
}

/// The reproducer of `sig` at `n` (with `clients`) against `sigbench run` of the same.
fn same_calls(sig: &str, n: &str, dir: &str, clients: Option<&str>, first: &str) {
    let work = temp(&format!("{sig}-{n}"));
    let mut args = vec![sig, "-n", n, "--dir", dir];
    if let Some(k) = clients {
        args.extend_from_slice(&["--clients", k]);
    }
    let (plain, sanitized) = build(&work, &args);

    let mut scratch = ScratchLoop::btrfs(&format!("repro-{sig}-{n}"));
    let mnt = scratch.mount_at_temp();
    let target = mnt.join("t");
    std::fs::create_dir(&target).unwrap();
    let t = target.to_str().unwrap();
    // Sanitized first: a memory or UB fault fails it (ASan exits non-zero).
    let out = Command::new(&sanitized).arg(t).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        0,
        "left files behind"
    );
    let out = strace(&work.join("rp"), &plain, &[t]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let name = dir.split(':').next().unwrap();
    assert!(
        text.lines().any(|l| l.starts_with("...")
            && l.contains(&format!("{t}/{name}:"))
            && l.contains(" Job took ")),
        "{text}"
    );
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        0,
        "left files behind"
    );
    scratch.unmount();

    let mut run_args = vec!["run"];
    run_args.extend_from_slice(&args);
    run_args.extend_from_slice(&["--no-store", "--no-default-probes"]);
    let out = strace(
        &work.join("sb"),
        Path::new(env!("CARGO_BIN_EXE_sigbench")),
        &run_args,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let want = workloads(&work.join("sb"), first);
    let got = workloads(&work.join("rp"), first);
    let k: usize = clients.map_or(1, |k| k.parse().unwrap());
    assert_eq!(want.len(), k, "sigbench's workload threads");
    assert_eq!(got.len(), k, "the reproducer's client threads");
    for (w, g) in want.iter().zip(&got) {
        if let Some(at) = (0..w.len().min(g.len())).find(|&j| w[j] != g[j]) {
            let around: Vec<String> = (at.saturating_sub(2)..(at + 3).min(w.len()).min(g.len()))
                .map(|j| format!("  sigbench {}\n  repro    {}", w[j], g[j]))
                .collect();
            panic!("{sig} -n {n}: call {at} differs:\n{}", around.join("\n"));
        }
        assert_eq!(w.len(), g.len(), "{sig}: the same calls, not as many");
    }
    let calls: usize = want.iter().map(Vec::len).sum();
    assert!(calls as u64 > n.parse::<u64>().unwrap(), "{calls} calls");
    eprintln!("{sig} -n {n}: {calls} calls, identical");
    std::fs::remove_dir_all(&work).unwrap();
}

#[test]
fn test3_reproducer_calls_what_sigbench_calls() {
    same_calls("test3", "200", "zstd:compression=zstd:1", None, "file_1");
}

#[test]
fn test3_reproducer_with_two_clients_calls_what_sigbench_calls() {
    same_calls("test3", "100", "lzo:compression=lzo", Some("2"), "file_1");
}

#[test]
fn rename_log_reproducer_calls_what_sigbench_calls() {
    same_calls("btrfs-rename-log", "1000", "log", None, "testdir/file_1");
}

#[test]
fn churn_reproducer_calls_what_sigbench_calls() {
    same_calls("churn", "2000", "churn", None, "a");
}

#[test]
fn the_reproducer_refuses_a_directory_that_is_not_empty_and_leaves_it_alone() {
    let work = temp("refuse");
    let (plain, _) = build(
        &work,
        &["test3", "-n", "10", "--dir", "plain", "--fs", "ext4"],
    );
    let target = work.join("busy");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("precious"), "keep").unwrap();
    let out = Command::new(&plain).arg(&target).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is not empty") && err.contains("precious"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(target.join("precious")).unwrap(),
        "keep"
    );
    let out = Command::new(&plain)
        .arg(work.join("missing"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("No such file"));
    std::fs::remove_dir_all(&work).unwrap();
}

/// A link legal where it is made (`sub/deeper/up` → `../..`, the test directory) that
/// points out once renamed (`up` → `../..`, two levels above it): the reproducer's clients
/// are confined to the directory given, as sigbench's workload is — as root, and as a
/// user without privileges (in a user namespace of their own) — and what they made
/// beside the case's directory is removed with it. Before the fix the program created
/// `a/f1`, outside `a/t`.
#[test]
fn a_link_renamed_out_of_its_depth_stays_in_the_directory() {
    let work = temp("escape");
    let sig = work.join("escape.toml");
    std::fs::write(
        &sig,
        r#"format = 1
name = "escape"
n = 2
file = "f{i}"
dirs = ["d"]
prelude = [
  { op = "symlink", target = "../..", path = "sub/deeper/up" },
  { op = "rename", from = "sub/deeper/up", to = "up" },
]
[setup]
mkdir = ["sub", "sub/deeper"]
[[phase]]
name = "p"
steps = [
  { op = "openat", path = "up/{name}", flags = "O_WRONLY|O_CREAT", mode = 0o644, slot = "s", expect = "any" },
  { op = "close", slot = "s", expect = "any" },
  { op = "unlink", path = "up/t", expect = "any" },
]
"#,
    )
    .unwrap();
    let (plain, _) = build(&work, &[sig.to_str().unwrap(), "--fs", "ext4"]);
    let a = work.join("a");
    let t = a.join("t");
    for user in [None, Some("nobody")] {
        std::fs::create_dir_all(&t).unwrap();
        std::fs::write(a.join("keep"), "keep").unwrap();
        let mut cmd = match user {
            None => Command::new(&plain),
            Some(u) => {
                sh("chown", &["-R", u, a.to_str().unwrap()]);
                let mut c = Command::new("setpriv");
                c.args([
                    "--reuid",
                    u,
                    "--regid",
                    "nogroup",
                    "--clear-groups",
                    plain.to_str().unwrap(),
                ]);
                c
            }
        };
        let out = cmd.arg(&t).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{user:?}: {err}");
        let mut beside: Vec<String> = std::fs::read_dir(&a)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        beside.sort();
        assert_eq!(
            beside,
            ["keep", "t"],
            "{user:?}: made outside its directory"
        );
        assert_eq!(
            std::fs::read_dir(&t).unwrap().count(),
            0,
            "{user:?}: left files"
        );
        assert!(!work.join("f1").exists() && !work.join("f2").exists());
        std::fs::remove_dir_all(&a).unwrap();
    }
    // The root directory, a file and a missing path are refused before anything runs.
    for (target, says) in [
        ("/", "is the root directory"),
        ("/etc/passwd", "Not a directory"),
    ] {
        let out = Command::new(&plain).arg(target).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{target}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{target}"
        );
    }
    std::fs::remove_dir_all(&work).unwrap();
}

#[test]
fn a_loadfile_signature_points_to_dbench_with_the_exact_command() {
    let out = run(&["repro", "dbench", "--clients", "4"]);
    assert_ok(&out);
    assert_eq!(
        stdout(&out).trim(),
        "dbench -c /usr/share/dbench/client.txt -D MOUNTED_DIR -t 10 4"
    );
    assert!(
        stderr(&out).contains("no C file written"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_arguments_are_one_line_errors() {
    for (args, says) in [
        (&["repro", "test3", "-r", "0"][..], "-r must be at least 1"),
        (
            &["repro", "test3", "--clients", "0"][..],
            "--clients must be at least 1",
        ),
        (
            &[
                "repro",
                "test3",
                "--dir",
                "x:compression=zstd",
                "--fs",
                "ext4",
            ][..],
            "bad --dir",
        ),
        (&["repro", "no-such-signature"][..], "unknown signature"),
    ] {
        check(args, says);
    }
    // The signature it reads is never its output.
    let dir = temp("own-input");
    let sig = dir.join("mine.toml");
    std::fs::write(&sig, stdout(&run(&["show", "test3"]))).unwrap();
    let s = sig.to_str().unwrap();
    check(&["repro", s, "-o", s], "which this command reads");
    assert!(std::fs::read_to_string(&sig).unwrap().contains("s3e-test3"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `sigbench ARGS` fails with exit 1 and one line that says `says`.
fn check(args: &[&str], says: &str) {
    let out = run(args);
    assert_eq!(out.status.code(), Some(1), "{args:?}");
    let err = stderr(&out);
    assert!(err.contains(says), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
}

/// Issue 56, item 8 and the reproducer's low ones: a run for a time is reproduced as one
/// (the clients loop for the time after a warm-up and the program prints calls per
/// second, not a fixed amount of work); `./repro --signature` prints the signature file
/// byte for byte (the header's copy is a comment, where `*/` cannot stand: it did not
/// match its sha256); a `??/` in a name is no trigraph warning under -Werror; `-o -` is
/// stdout, not a file named `-`; a dbench signature refuses what only a C file takes, and
/// -r has a limit.
#[test]
fn a_timed_run_a_hostile_signature_and_the_options_reproduce_as_they_say() {
    let work = temp("timed");
    let sig = work.join("timed.toml");
    let text = "format = 1\nname = \"timed\"\nn = 20\nfile = \"f{i}??/x */ y\"\ndescription = \"a comment */ and a trigraph ??/\"\n[setup]\nmkdir = [\"f1??\"]\n[[phase]]\nname = \"w\"\nsteps = [\n  { op = \"openat\", path = \"f1??/{i}\", flags = \"O_WRONLY|O_CREAT\", mode = 0o644, slot = \"s\" },\n  { op = \"close\", slot = \"s\" },\n  { op = \"unlink\", path = \"f1??/{i}\" },\n]\n";
    std::fs::write(&sig, text).unwrap();
    let s = sig.to_str().unwrap();
    let (plain, _) = build(&work, &[s, "--fs", "ext4", "--time", "1", "--clients", "2"]);
    let target = work.join("t");
    std::fs::create_dir(&target).unwrap();
    let started = std::time::Instant::now();
    let out = Command::new(&plain).arg(&target).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed().as_secs_f64() >= 1.2,
        "{:?}",
        started.elapsed()
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(" calls/s over 1.0 s (2 clients)"), "{said}");
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    let own = Command::new(&plain).arg("--signature").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&own.stdout), text);
    // -o - is stdout.
    let out = run(&["repro", s, "--fs", "ext4", "-o", "-"]);
    assert_ok(&out);
    assert!(stdout(&out).starts_with("/*\n * sigbench reproducer: timed"));
    assert!(!std::env::temp_dir().join("-").exists());
    check(
        &["repro", "dbench", "-o", "x.c", "-n", "5", "-r", "3"],
        "-o, -n, -r do not apply",
    );
    check(&["repro", "test3", "-r", "4294967295"], "is over the limit");
    std::fs::remove_dir_all(&work).unwrap();
}
