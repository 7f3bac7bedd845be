//! Nothing measured is lost silently: store failures, output failures and races are
//! errors (non-zero exit) with the results still written somewhere `import` can read.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// `sigbench run --fs tmpfs -n 5 --dir a` with `extra` arguments: the smallest real run.
fn tiny(extra: &[&str]) -> std::process::Output {
    let mut args = vec!["run", "--fs", "tmpfs", "-n", "5", "--dir", "a"];
    args.extend_from_slice(extra);
    run(&args)
}

fn tmp(name: &str) -> PathBuf {
    fresh_dir(&format!("st-{name}"))
}

/// A small tmpfs the test mounts (and unmounts when dropped).
struct SmallFs {
    dir: PathBuf,
}

impl SmallFs {
    fn new(name: &str, size: &str) -> SmallFs {
        let dir = tmp(name);
        sh(
            "mount",
            &[
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size}"),
                "sigbench-test",
                dir.to_str().unwrap(),
            ],
        );
        SmallFs { dir }
    }

    fn fill(&self) {
        let _ = Command::new("dd")
            .args([
                "if=/dev/zero",
                &format!("of={}/filler", self.dir.display()),
                "bs=4k",
            ])
            .stderr(Stdio::null())
            .status();
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The JSON document a failed store points to (`the results are in PATH`).
fn recovery_file(err: &str) -> PathBuf {
    let at = err
        .find("the results are in ")
        .unwrap_or_else(|| panic!("{err}"));
    let rest = &err[at + "the results are in ".len()..];
    PathBuf::from(rest.split(':').next().unwrap().trim())
}

fn count_cases(db: &Path) -> usize {
    let out = run(&["export", "--db", db.to_str().unwrap()]);
    assert_ok(&out);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cases"].as_array().unwrap().len())
        .sum()
}

#[test]
fn a_store_that_fills_up_mid_run_is_an_error_and_the_results_survive() {
    let fs = SmallFs::new("full", "2m");
    let db = fs.dir.join("full.db");
    let first = tiny(&["--db", db.to_str().unwrap()]);
    assert_ok(&first);
    let mut child = spawn(&[
        "run",
        "--fs",
        "tmpfs",
        "-n",
        "200",
        "--dir",
        "a",
        "-r",
        "30",
        "--db",
        db.to_str().unwrap(),
    ]);
    wait_for_mount(&mut child, Duration::from_secs(30));
    fs.fill();
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    eprintln!("{err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("could not store"), "{err}");
    let doc = recovery_file(&err);
    assert!(
        !doc.starts_with(&fs.dir),
        "not on the full filesystem: {}",
        doc.display()
    );
    // import brings every case back, into another store.
    let other = tmp("full-import").join("other.db");
    let imp = run(&[
        "import",
        doc.to_str().unwrap(),
        "--db",
        other.to_str().unwrap(),
    ]);
    assert_ok(&imp);
    assert_eq!(count_cases(&other), 30);
    std::fs::remove_file(&doc).unwrap();
}

#[test]
fn a_corrupt_store_is_an_error_not_a_complete_run() {
    let dir = tmp("corrupt");
    let db = dir.join("c.db");
    for _ in 0..3 {
        let out = run(&[
            "run",
            "--fs",
            "tmpfs",
            "-n",
            "20",
            "--dir",
            "a",
            "-r",
            "3",
            "--db",
            db.to_str().unwrap(),
        ]);
        assert_ok(&out);
    }
    // Garbage over every page but the first (the header and schema stay readable).
    let mut bytes = std::fs::read(&db).unwrap();
    assert!(bytes.len() > 8192, "{}", bytes.len());
    for b in &mut bytes[4096..] {
        *b = 0xa5;
    }
    std::fs::write(&db, bytes).unwrap();
    let out = run(&[
        "run",
        "--fs",
        "tmpfs",
        "-n",
        "20",
        "--dir",
        "a",
        "--db",
        db.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("stored as"), "{err}");
    if err.contains("the results are in ") {
        std::fs::remove_file(recovery_file(&err)).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_report_nobody_could_read_is_an_error_and_a_closed_stderr_no_panic() {
    let full = sigbench()
        .args([
            "run",
            "--fs",
            "tmpfs",
            "-n",
            "5",
            "--dir",
            "a",
            "--no-store",
        ])
        .stdout(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .output()
        .unwrap();
    assert_eq!(full.status.code(), Some(1), "{}", stderr(&full));
    assert!(
        stderr(&full).contains("could not write the report to stdout"),
        "{}",
        stderr(&full)
    );

    // stderr on a full device: diagnostics are lost, the run is not.
    let quiet = sigbench()
        .args([
            "run",
            "--fs",
            "tmpfs",
            "-n",
            "5",
            "--dir",
            "a",
            "--no-store",
        ])
        .stderr(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .output()
        .unwrap();
    assert_eq!(quiet.status.code(), Some(0));
    assert_eq!(s3e_lines(&quiet).len(), 1);
}

#[test]
fn two_runs_creating_one_store_at_once_both_succeed() {
    let dir = tmp("race");
    for round in 0..3 {
        let db = dir.join(format!("race{round}.db"));
        let a = spawn(&[
            "run",
            "--fs",
            "tmpfs",
            "-n",
            "5",
            "--dir",
            "a",
            "--db",
            db.to_str().unwrap(),
        ]);
        let b = spawn(&[
            "run",
            "--fs",
            "tmpfs",
            "-n",
            "5",
            "--dir",
            "a",
            "--db",
            db.to_str().unwrap(),
        ]);
        for c in [a, b] {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success(), "round {round}: {}", stderr(&out));
        }
        assert_eq!(count_cases(&db), 2);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failed_run_still_writes_its_document() {
    let out = run(&[
        "run",
        "seqwr",
        "--fs",
        "tmpfs",
        "--mount-opts",
        "size=1m",
        "-n",
        "200",
        "--no-store",
        "--json",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("a JSON document on stdout");
    assert_eq!(doc["status"], "failed");
    assert!(
        doc["error"].as_str().unwrap().contains("ENOSPC"),
        "{}",
        doc["error"]
    );
}

#[test]
fn outputs_cannot_overwrite_the_store() {
    let dir = tmp("outputs");
    let db = dir.join("keep.db");
    let first = tiny(&["--db", db.to_str().unwrap()]);
    assert_ok(&first);
    let before = std::fs::read(&db).unwrap();
    for flag in ["--json", "--op-log"] {
        let out = tiny(&["--db", db.to_str().unwrap(), flag, db.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{flag}");
        assert!(
            stderr(&out).contains("is the results store"),
            "{}",
            stderr(&out)
        );
    }
    let same = dir.join("x.out");
    let out = run(&[
        "run",
        "--no-store",
        "--json",
        same.to_str().unwrap(),
        "--op-log",
        same.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    // Every command's output: the store itself, a link to it, its journal — refused in
    // one line before anything is read or measured.
    let label = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap()
        .trim()
        .to_string();
    let link = dir.join("report.html");
    std::os::unix::fs::symlink(&db, &link).unwrap();
    let wal = format!("{}-wal", db.display());
    let d = db.to_str().unwrap();
    let sig = dir.join("mine.toml");
    std::fs::write(&sig, stdout(&run(&["show", "test3"]))).unwrap();
    let s = sig.to_str().unwrap();
    for args in [
        vec!["report", &label, &label, "--db", d, "-o", d],
        vec!["report", "--db", d, "-o", link.to_str().unwrap()],
        vec!["report", "--db", d, "--format", "markdown", "-o", &wal],
        vec!["export", "--db", d, "-o", d],
        vec!["export", "--db", d, "-o", link.to_str().unwrap()],
        vec!["minimize", s, "--until", "calls >= 1", "--db", d, "-o", d],
        vec![
            "bisect",
            "--kernels",
            "a.deb",
            "b.deb",
            "--metric",
            "wall_ms",
            "--db",
            d,
            "--bisect-json",
            d,
        ],
        vec![
            "judge",
            "--kernel",
            "host",
            "--baseline",
            &label,
            "--db",
            d,
            "--json",
            d,
        ],
    ] {
        let out = run(&args);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains("is the results store"), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
    // Nor an input: the signature minimize reads, the bisect document report reads.
    let out = run(&[
        "minimize",
        s,
        "--until",
        "calls >= 1",
        "--no-store",
        "-o",
        s,
    ]);
    assert!(
        stderr(&out).contains("is the signature, which this command reads"),
        "{}",
        stderr(&out)
    );
    assert!(std::fs::read_to_string(&sig).unwrap().contains("s3e-test3"));
    // A missing directory or a directory: before the search, not after it (no
    // evaluation's progress line, `[1/…]`, was printed).
    for o in [dir.join("no/such/min.toml"), dir.clone()] {
        let out = run(&[
            "minimize",
            s,
            "--until",
            "calls >= 1",
            "--no-store",
            "-o",
            o.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(1));
        let err = stderr(&out);
        assert!(
            err.contains("does not exist") || err.contains("is a directory"),
            "{err}"
        );
        assert!(
            !err.contains("[1/"),
            "refused after the search began: {err}"
        );
    }
    assert_eq!(std::fs::read(&db).unwrap(), before);
    assert_eq!(count_cases(&db), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_read_only_store_can_be_read() {
    let dir = tmp("ro");
    let db = dir.join("ro.db");
    let out = tiny(&["--label", "ro", "--db", db.to_str().unwrap()]);
    assert_ok(&out);
    sh(
        "mount",
        &["--bind", dir.to_str().unwrap(), dir.to_str().unwrap()],
    );
    sh("mount", &["-o", "remount,bind,ro", dir.to_str().unwrap()]);
    let runs = run(&["runs", "--db", db.to_str().unwrap()]);
    let export = run(&["export", "--db", db.to_str().unwrap()]);
    let compare = run(&["compare", "ro", "ro", "--db", db.to_str().unwrap()]);
    let _ = Command::new("umount").arg(&dir).status();
    assert_ok(&runs);
    assert!(stdout(&runs).contains("ro"));
    assert_ok(&export);
    assert_ok(&compare);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn import_refuses_a_newer_run_inside_an_older_export() {
    let dir = tmp("import");
    let doc = dir.join("x.json");
    let out = tiny(&["--no-store", "--json", doc.to_str().unwrap()]);
    assert_ok(&out);
    let mut run_doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&doc).unwrap()).unwrap();
    run_doc["version"] = 2.into();
    let export = serde_json::json!({"schema": "sigbench.export", "version": 1, "runs": [run_doc]});
    std::fs::write(&doc, export.to_string()).unwrap();
    let out = run(&[
        "import",
        doc.to_str().unwrap(),
        "--db",
        dir.join("i.db").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("version 2, newer"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 37: a profile that moves while the time stands still is evidence, not an alert
/// (over seventeen Debian kernels four of six alerts were such shares); named with
/// `--metric` it alerts. A `--report-dir` that does not exist yet is created.
#[test]
fn a_profile_only_move_raises_no_alert_unless_named() {
    let dir = tmp("profile-only");
    let db = dir.join("s.db");
    let db = db.to_str().unwrap();
    let series = edited_series(&dir, "pnightly-", |k, c| {
        let moved = k > 3;
        let stacks = if moved {
            serde_json::json!({"do_unlinkat;iput": 400, "do_unlinkat;evict": 300, "do_unlinkat;evict;clear_inode": 100})
        } else {
            serde_json::json!({"do_unlinkat;iput": 400, "do_unlinkat;evict": 400})
        };
        c["profile"] = serde_json::json!({
            "status": "sampled", "event": "cpu-clock", "hz": 4000, "samples": 800, "lost": 0,
            "phases": [{"name": "window", "samples": 800, "stacks": stacks}]
        });
    });
    let out = run(&["import", series.to_str().unwrap(), "--db", db]);
    assert_ok(&out);
    let reports = dir.join("new").join("reports");
    let watch = |extra: &[&str]| {
        let mut a = vec![
            "watch",
            "--db",
            db,
            "--series-glob",
            "pnightly-*",
            "--report-dir",
            reports.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        run(&a)
    };
    let out = watch(&[]);
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "{err}");
    assert!(text.contains("no new change in 6 label(s)"), "{text}");
    assert!(
        err.contains("pnightly-3 to pnightly-4: ")
            && err.contains(" profile; most: a/N=5 profile.")
            && err.contains("while no time, throughput or count did: no alert"),
        "{err}"
    );
    assert!(reports.is_dir(), "--report-dir was not created");
    assert_eq!(std::fs::read_dir(&reports).unwrap().count(), 0);
    // Named, it alerts; a name the series lacks is one line before anything is stored.
    let typo = watch(&["--metric", "profile.total.clear_inod"]);
    assert_eq!(typo.status.code(), Some(1));
    assert!(
        stderr(&typo).contains("--metric profile.total.clear_inod: no such metric in this series")
            && stderr(&typo).trim().lines().count() <= 2,
        "{}",
        stderr(&typo)
    );
    let named = watch(&["--metric", "profile.total.clear_inode"]);
    let text = stdout(&named);
    assert_ok(&named);
    assert!(
        text.lines()
            .next()
            .unwrap_or_default()
            .contains("profile.total.clear_inode"),
        "{text}"
    );
    // The answer first: the change per phase (the time stood still), then where the
    // time went — clear_inode's share × the window's time.
    let first = text.lines().take(30).collect::<Vec<_>>().join("\n");
    assert!(
        first.contains("the change per phase (pnightly-3 → pnightly-4)"),
        "{text}"
    );
    assert!(first.contains("whole window (ms)"), "{text}");
    let went = first
        .lines()
        .find(|l| l.contains(" clear_inode "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(went.contains("0 → "), "{went}");
    // One change: its text, HTML, mail and reproducer.
    assert_eq!(std::fs::read_dir(&reports).unwrap().count(), 4);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn watch_over_stored_labels_finds_a_step_once_as_a_candidate() {
    let dir = tmp("series");
    let db = dir.join("s.db");
    let db = db.to_str().unwrap();
    let series = stepped_series(&dir);
    let out = run(&["import", series.to_str().unwrap(), "--db", db]);
    assert_ok(&out);
    let reports = dir.join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    let watch = |extra: &[&str]| {
        let mut a = vec![
            "watch",
            "--db",
            db,
            "--report-dir",
            reports.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        run(&a)
    };
    let out = watch(&["--series-glob", "nightly-*"]);
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "{err}");
    // In release order: nightly-1 … 6, whatever order they were stored in.
    assert!(
        err.contains(
            "6 point(s): nightly-1, nightly-2, nightly-3, nightly-4, nightly-5, nightly-6"
        ),
        "{err}"
    );
    let headline = text.lines().next().unwrap_or_default();
    assert!(
        headline.starts_with("sigbench noticed a candidate +30.0 % regression of ")
            && headline.contains(" wall_ms on: label nightly-4 (not confirmed)"),
        "{text}"
    );
    assert!(text.contains("%change") && text.contains("sigbench compare nightly-3 nightly-4"));
    // One change: its text, HTML, mail and reproducer.
    assert_eq!(std::fs::read_dir(&reports).unwrap().count(), 4);
    let listed = stdout(&run(&["watch", "--changes", "--db", db]));
    let wall = listed
        .lines()
        .find(|l| l.contains(" a/N=5 wall_ms ") || l.contains(" wall_ms "))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(
        wall.contains(" new ") && wall.contains("nightly-4"),
        "{wall}"
    );
    // Triaged invalid (issue 38): kept with its note and user, listed so; a change point
    // the store lacks, a state it does not know and a control character are one line.
    let id = wall.split_whitespace().next().unwrap();
    let t = run(&["triage", id, "invalid", "--note", "noise", "--db", db]);
    assert_ok(&t);
    let listed = stdout(&run(&["watch", "--changes", "--db", db]));
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with(&format!("{id} "))
                || l.trim_start().starts_with(&format!("{id} ")))
            && listed.contains("invalid (")
            && listed.contains(": noise)"),
        "{listed}"
    );
    // Issue 45, item 6: three loops of 20 triages at once lose no decision.
    assert_eq!(parallel_triages(db, id, 3, 20), 1 + 60);
    for (bad, says) in [
        (vec!["triage", "999", "invalid"], "no change point 999"),
        (vec!["triage", id, "wontfix"], "invalid value 'wontfix'"),
        (
            vec!["triage", id, "fixed", "--note", "a\x07b"],
            "control character",
        ),
    ] {
        let mut a = bad.clone();
        a.extend(["--db", db]);
        let out = run(&a);
        assert_ne!(out.status.code(), Some(0));
        assert!(stderr(&out).contains(says), "{bad:?}: {}", stderr(&out));
    }
    // Again, and listed by name: nothing new.
    let again = watch(&[
        "--series",
        "nightly-2",
        "nightly-5",
        "nightly-1",
        "nightly-6",
        "nightly-3",
        "nightly-4",
    ]);
    assert_ok(&again);
    assert!(
        stdout(&again).contains("no new change in 6 label(s)"),
        "{}",
        stdout(&again)
    );
    // By time they are in the same order here; a label the store lacks is one line.
    let by_time = watch(&["--series-glob", "nightly-?", "--order", "time"]);
    assert!(stdout(&by_time).contains("no new change"));
    let missing = watch(&["--series", "nightly-1", "nightly-9"]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(
        stderr(&missing).trim().lines().count(),
        1,
        "{}",
        stderr(&missing)
    );
    assert!(stderr(&missing).contains("nightly-9: no runs labelled so in"));
    let none = watch(&["--series-glob", "weekly-*"]);
    assert_eq!(none.status.code(), Some(1));
    assert!(
        stderr(&none).contains("no stored label matches"),
        "{}",
        stderr(&none)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_sigkilled_run_is_marked_killed_by_doctor_cleanup() {
    let dir = tmp("killed");
    let db = dir.join("k.db");
    let mut child = spawn(&[
        "run",
        "--fs",
        "tmpfs",
        "-n",
        "2000",
        "--dir",
        "a",
        "-r",
        "50",
        "--db",
        db.to_str().unwrap(),
    ]);
    wait_for_mount(&mut child, Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGKILL);
    let _ = child.wait();
    assert!(stdout(&run(&["runs", "--db", db.to_str().unwrap()])).contains("running"));
    // Other tests may be measuring (holding the machine lock): try until none is.
    let start = std::time::Instant::now();
    loop {
        let out = run(&["doctor", "--cleanup", "--db", db.to_str().unwrap()]);
        assert_ok(&out);
        let listed = stdout(&run(&["runs", "--db", db.to_str().unwrap()]));
        if listed.contains("killed") {
            assert!(!listed.contains("running"), "{listed}");
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "{listed}");
        std::thread::sleep(Duration::from_millis(200));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn small_things_are_errors_or_escaped() {
    // The same directory twice would run every case twice and call it 2 repetitions.
    let out = tiny(&["--dir", "a", "--no-store"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("given twice"), "{}", stderr(&out));

    // A property setxattr would refuse is described as the user wrote it, not as Rust
    // debug text.
    let long = format!("a:user.{}=v", "k".repeat(300));
    let out = run(&[
        "run",
        "--fs",
        "xfs",
        "-n",
        "5",
        "--dir",
        &long,
        "--no-store",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    // Refused before mkfs now (issue 39, 21): setxattr(2) would refuse a name this long.
    assert!(
        err.contains("`user.kkk")
            && err.contains("an xattr needs a name after `user.` (at most 255 bytes")
            && !err.contains("Xattr {"),
        "{err}"
    );

    // A slot opened again while open: no hidden close() in the timed window.
    let sig = std::env::temp_dir().join(format!("sigbench-reopen-{}.toml", std::process::id()));
    std::fs::write(
        &sig,
        "format = 1\nname = \"reopen\"\nn = 3\n[[phase]]\nsteps = [\n  { op = \"openat\", path = \"{name}\", flags = \"O_WRONLY|O_CREAT\", slot = \"f\" },\n]\n",
    )
    .unwrap();
    let out = run(&["run", sig.to_str().unwrap(), "--fs", "tmpfs", "--no-store"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("while it is still open") && err.contains(":6:"),
        "{err}"
    );
    std::fs::remove_file(&sig).unwrap();

    // A label with a terminal escape sequence is refused at input (issue 39, 6), and the
    // refusal prints it escaped.
    let dir = tmp("escape");
    let db = dir.join("e.db");
    let label = "evil\u{1b}]0;pwned\u{7}\u{1b}[2J";
    let out = tiny(&["--label", label, "--db", db.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(!err.contains('\u{1b}'), "a raw escape on stderr: {err:?}");
    assert!(
        err.contains("evil\\x{1b}]0;pwned") && err.contains("control character"),
        "{err}"
    );
    assert!(!db.exists(), "a refused run created its store");
    // --db naming what cannot be a database: one clear line.
    for (db_arg, says) in [
        (dir.to_str().unwrap(), "is a directory"),
        ("/dev/null", "is not a regular file"),
    ] {
        for args in [
            vec!["runs", "--db", db_arg],
            vec!["import", "--db", db_arg, "x.json"],
        ] {
            let out = run(&args);
            assert_eq!(out.status.code(), Some(1), "{args:?}");
            assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        }
    }
    // minimize: --reps 0, and a plan that does not fit in memory, before the search.
    let m = dir.join("m.toml");
    let out = run(&[
        "minimize",
        "test3",
        "--until",
        "calls > 0",
        "--reps",
        "0",
        "-o",
        m.to_str().unwrap(),
    ]);
    assert!(
        stderr(&out).contains("--reps: at least one"),
        "{}",
        stderr(&out)
    );
    let out = run(&[
        "minimize",
        "seqwr",
        "-n",
        "10000000",
        "--until",
        "calls > 0",
        "-o",
        m.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("needs about"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("does not hold"), "{}", stderr(&out));
    // Markdown does not pass a label's HTML through.
    let html = "<script>alert(1)</script>";
    let out = tiny(&["--label", html, "--db", db.to_str().unwrap()]);
    assert_ok(&out);
    let md = dir.join("r.md");
    let out = run(&[
        "report",
        html,
        html,
        "--format",
        "markdown",
        "--db",
        db.to_str().unwrap(),
        "-o",
        md.to_str().unwrap(),
    ]);
    assert_ok(&out);
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(!text.contains("<script>"), "{text}");
    assert!(text.contains("&lt;script&gt;"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 39, 2: a label made to run a command when pasted (`w-$(touch …)`) is printed
/// quoted in every "to reproduce" command: bash reads it back as one word and runs
/// nothing. Issue 39, 6: a label no report could show is refused at input; 17 and 18:
/// watch's messages about stored changes name real flags and never create a store.
#[test]
fn hostile_labels_are_quoted_in_commands_and_bounded_at_input() {
    let dir = tmp("hostile-labels");
    let pwned = dir.join("pwned");
    let prefix = format!("w-$(touch {})-'`id`-", pwned.display());
    let (_, db) = imported_series(&dir, &prefix);
    let db = db.as_str();
    let reports = dir.join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    let glob = format!("{prefix}*").replace('[', "[[]");
    let out = run(&[
        "watch",
        "--db",
        db,
        "--report-dir",
        reports.to_str().unwrap(),
        "--series-glob",
        &glob,
    ]);
    let text = stdout(&out);
    assert_ok(&out);
    let commands: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("sigbench compare ") || l.starts_with("sigbench run "))
        .collect();
    assert_eq!(commands.len(), 2, "{text}");
    for c in &commands {
        // What a person pasting the line would run, with `sigbench` replaced by printf.
        let words = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "printf '%s\\n' {}",
                c.trim_start_matches("sigbench ")
            ))
            .output()
            .unwrap();
        assert!(words.status.success(), "{c}");
        let words = String::from_utf8(words.stdout).unwrap();
        assert!(
            words
                .lines()
                .any(|w| w == format!("{prefix}3") || w == format!("<{prefix}3's kernel>")),
            "{c}\n{words}"
        );
    }
    assert!(!pwned.exists(), "pasting a printed command ran the label");

    // Issue 39, 17: `--ack` of a change that is not there names a flag that exists.
    let out = run(&["watch", "--db", db, "--ack", "0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("(`sigbench watch --changes` lists them)"),
        "{}",
        stderr(&out)
    );
    assert_ok(&run(&["watch", "--db", db, "--changes"]));
    // Issue 39, 18: a reading watch never creates a store where none is.
    let typo = dir.join("typo.db");
    for mode in [
        &["--series-glob", "w-*"][..],
        &["--ack", "1"],
        &["--changes"],
    ] {
        let mut a = vec!["watch", "--db", typo.to_str().unwrap()];
        a.extend_from_slice(mode);
        let out = run(&a);
        assert_eq!(out.status.code(), Some(1), "{mode:?}");
        assert!(
            stderr(&out).contains(&format!(
                "there is no results database at {}",
                typo.display()
            )),
            "{mode:?}: {}",
            stderr(&out)
        );
        assert!(!typo.exists(), "{mode:?} created {}", typo.display());
    }

    // A label too long, or with a control character, is refused in one line.
    let long = "x".repeat(70_000);
    for label in [long.as_str(), "a\nBenchmarkFake 1 1 ns/op"] {
        let out = run(&[
            "run", "--fs", "tmpfs", "-n", "5", "--label", label, "--db", db,
        ]);
        assert_eq!(out.status.code(), Some(1));
        let err = stderr(&out);
        assert!(
            err.starts_with("sigbench: --label: ") && err.lines().count() == 1,
            "{err}"
        );
        assert!(err.len() < 300, "{}", &err[..300]);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 39, 4: in --series mode a --report-dir that cannot take the report is refused
/// before anything is recorded, and a report that fails to be written leaves the change
/// unrecorded: the next watch reports it (the store said "no new change" before).
#[test]
fn a_series_change_is_recorded_only_with_its_report() {
    let dir = tmp("series-report-dir");
    let db = dir.join("s.db");
    let db = db.to_str().unwrap();
    let series = stepped_series(&dir);
    let out = run(&["import", series.to_str().unwrap(), "--db", db]);
    assert_ok(&out);
    let watch = |report_dir: &str| {
        run(&[
            "watch",
            "--db",
            db,
            "--report-dir",
            report_dir,
            "--series-glob",
            "nightly-*",
        ])
    };
    let changes = || stdout(&run(&["watch", "--changes", "--db", db]));
    let none = changes();
    // The store itself as --report-dir: refused up front, nothing recorded.
    let out = watch(db);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not a directory"), "{}", stderr(&out));
    assert_eq!(changes(), none);
    // A directory where the report cannot be written (its name is taken by a directory).
    let reports = dir.join("reports");
    std::fs::create_dir_all(reports.join("change-1.txt")).unwrap();
    let out = watch(reports.to_str().unwrap());
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("the next watch reports it again"),
        "{}",
        stderr(&out)
    );
    assert_eq!(changes(), none, "a change was recorded without its report");
    std::fs::remove_dir_all(reports.join("change-1.txt")).unwrap();
    // Once the report can be written, the change is reported.
    let out = watch(reports.to_str().unwrap());
    assert_ok(&out);
    assert!(
        stdout(&out).starts_with("sigbench noticed a candidate"),
        "{}",
        stdout(&out)
    );
    assert_ne!(changes(), none);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 45, item 8: a directory named with a space is one case. A +40 % step in its
/// wall time alerts (watch once split `a b/N=5 wall_ms` at its first space, read the
/// metric `b/N=5 wall_ms` as no time at all and filed the step as evidence).
#[test]
fn a_directory_with_a_space_is_watched_like_any_other() {
    let dir = tmp("spaced");
    let db = dir.join("w.db");
    let db = db.to_str().unwrap();
    let series = edited_series(&dir, "sp-", |k, c| {
        let scale = if k > 3 { 1.4 } else { 1.0 };
        let w = c["wall_ns"].as_f64().unwrap();
        c["wall_ns"] = ((w * scale) as u64).into();
        c["dir"] = "a b".into();
    });
    let mut export: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&series).unwrap()).unwrap();
    for r in export["runs"].as_array_mut().unwrap() {
        r["plan"]["dirs"] = serde_json::json!(["a b"]);
    }
    std::fs::write(&series, export.to_string()).unwrap();
    let out = run(&["import", series.to_str().unwrap(), "--db", db]);
    assert_ok(&out);
    let out = run(&["watch", "--series-glob", "sp-*", "--db", db]);
    assert_ok(&out);
    let text = stdout(&out);
    assert!(
        text.starts_with("sigbench noticed a candidate +40.0 % regression of ")
            && text.lines().next().unwrap().contains("a b/N=5 wall_ms"),
        "{text}\n{}",
        stderr(&out)
    );
    let listed = stdout(&run(&["watch", "--changes", "--db", db]));
    assert!(listed.contains("a b/N=5 wall_ms"), "{listed}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 45, items 12, 13 and 14: what is not a store is said to be none, and changes
/// nothing; every text field of an imported run is checked as labels are (a newline in a
/// hostname, a bidirectional override in a label), numbers no measurement has are
/// refused; Markdown escapes emphasis; a 2,000-character note wraps in the site's table.
#[test]
fn text_and_stores_are_what_they_claim() {
    let dir = tmp("claims");
    let one_line = |out: &std::process::Output, says: &str| {
        assert_eq!(out.status.code(), Some(1), "{}", stdout(out));
        let e = stderr(out);
        assert!(e.trim().lines().count() == 1 && e.contains(says), "{e}");
    };
    // Item 13: an empty file stays empty; /proc/self/status is no store.
    let empty = dir.join("empty.db");
    std::fs::write(&empty, "").unwrap();
    let e = empty.to_str().unwrap();
    one_line(
        &run(&["triage", "1", "invalid", "--db", e]),
        "is not a sigbench store (an empty file)",
    );
    one_line(
        &run(&["site", "-o", dir.join("s").to_str().unwrap(), "--db", e]),
        "not a sigbench store",
    );
    one_line(&run(&["runs", "--db", e]), "not a sigbench store");
    assert_eq!(
        std::fs::metadata(&empty).unwrap().len(),
        0,
        "the empty file was made a store"
    );
    one_line(
        &run(&["runs", "--db", "/proc/self/status"]),
        "/proc/self/status is not a sigbench store (not a SQLite database)",
    );
    let text = dir.join("notes.txt");
    std::fs::write(&text, "my notes\n").unwrap();
    one_line(
        &run(&["import", "--db", text.to_str().unwrap(), "x.json"]),
        "not a sigbench store",
    );
    assert_eq!(std::fs::read_to_string(&text).unwrap(), "my notes\n");

    // Item 14: every text field checked at import, and every number.
    let db = dir.join("s.db");
    let db = db.to_str().unwrap();
    let series = stepped_series_named(&dir, "claims-");
    let base: serde_json::Value = serde_json::from_slice(&std::fs::read(&series).unwrap()).unwrap();
    let import_edited = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut doc = base["runs"][0].clone();
        edit(&mut doc);
        let f = dir.join("edited.json");
        std::fs::write(&f, doc.to_string()).unwrap();
        run(&["import", f.to_str().unwrap(), "--db", db])
    };
    one_line(
        &import_edited(&|d| d["host"]["hostname"] = "evil\nhost".into()),
        "run 1: field `host.hostname` holds the control character \\n",
    );
    one_line(
        &import_edited(&|d| d["label"] = "6.1.0-\u{202e}65-amd64".into()),
        "holds the bidirectional formatting character",
    );
    one_line(
        &import_edited(&|d| d["cases"][0]["load"]["steal_ms"] = serde_json::json!(1e308)),
        "field `cases[0].load.steal_ms`: 1e+308 is beyond any measurement",
    );
    // Item 12: a label or note with a bidirectional override is refused at input.
    one_line(
        &run(&[
            "run",
            "--fs",
            "tmpfs",
            "-n",
            "5",
            "--label",
            "a\u{202e}b",
            "--db",
            db,
        ]),
        "bidirectional formatting character",
    );
    assert!(
        run(&["import", series.to_str().unwrap(), "--db", db])
            .status
            .success()
    );
    let found = run(&["watch", "--series-glob", "claims-*", "--db", db]);
    assert_ok(&found);
    let listed = stdout(&run(&["watch", "--changes", "--db", db]));
    let id = listed
        .lines()
        .find(|l| l.contains(" wall_ms "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{listed}"))
        .to_string();
    one_line(
        &run(&["triage", &id, "invalid", "--note", "x\u{2066}y", "--db", db]),
        "bidirectional formatting character",
    );
    let long = "n".repeat(2000);
    // Acknowledged: on the first screen, not inside a closed <details>.
    assert!(
        run(&["triage", &id, "acknowledged", "--note", &long, "--db", db])
            .status
            .success()
    );
    let site = dir.join("site");
    assert!(
        run(&["site", "-o", site.to_str().unwrap(), "--db", db])
            .status
            .success()
    );
    for page in ["index.html", "series-1.html"] {
        let l = layout_in_chromium(&site.join(page), 1400, &dir);
        assert!(
            l.scroll <= l.client,
            "{page}: {} px wide in a {} px window",
            l.scroll,
            l.client
        );
        // Item 18: every plot's text readable as rendered.
        assert!(l.text_px >= 11.0, "{page}: plot text of {} px", l.text_px);
        // Issue 59: no cell breaks a word or a number ("bise cted", "+15 .4 %").
        assert!(
            l.broken.is_empty(),
            "{page}: broken in cells: {:?}",
            l.broken
        );
    }

    // Item 18: a series of 40 labels plots a strip three times the page's width; its text
    // stays readable (it scrolls rather than shrinks).
    let wide = dir.join("wide.db");
    let wide = wide.to_str().unwrap();
    let runs: Vec<serde_json::Value> = (10..50)
        .map(|k| {
            let mut d = base["runs"][0].clone();
            d["id"] = format!("wide-{k}").into();
            d["label"] = format!("wide-{k}").into();
            d["host"]["kernel_release"] = format!("6.1.0-{k}-amd64").into();
            d
        })
        .collect();
    let f = dir.join("wide.json");
    let export = serde_json::json!({"schema": "sigbench.export", "version": 1, "runs": runs});
    std::fs::write(&f, export.to_string()).unwrap();
    assert!(
        run(&["import", f.to_str().unwrap(), "--db", wide])
            .status
            .success()
    );
    let wide_site = dir.join("wide-site");
    assert!(
        run(&["site", "-o", wide_site.to_str().unwrap(), "--db", wide])
            .status
            .success()
    );
    let l = layout_in_chromium(&wide_site.join("series-1.html"), 1400, &dir);
    assert!(
        l.scroll <= l.client,
        "{} px wide in a {} px window",
        l.scroll,
        l.client
    );
    assert!(l.text_px >= 11.0, "plot text of {} px", l.text_px);

    // Item 14: labels with emphasis marks stay text in Markdown.
    let md = dir.join("r.md");
    assert!(
        import_edited(&|d| {
            d["label"] = "_rc_*1*".into();
            d["id"] = "emph".into();
        })
        .status
        .success()
    );
    let out = run(&[
        "report",
        "_rc_*1*",
        "--format",
        "markdown",
        "--db",
        db,
        "-o",
        md.to_str().unwrap(),
    ]);
    assert_ok(&out);
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(
        text.contains("\\_rc\\_\\*1\\*") && !text.contains(" _rc_*1*"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 45, item 17: a host-clock series measured on a loaded machine — windows of 4 to
/// 64 ms before the fourth label, 23 to 48 ms after, the workload waiting for a CPU a
/// third of each — is not passed over in silence: watch says which labels it cannot judge
/// and why.
#[test]
fn a_watch_over_busy_windows_says_it_could_not_judge() {
    let dir = tmp("busy-watch");
    let db = dir.join("b.db");
    let db = db.to_str().unwrap();
    let series = edited_series(&dir, "busy-", |k, c| {
        let rep = c["rep"].as_u64().unwrap_or(1) as usize;
        let ms = if k > 3 {
            [23.0, 35.0, 48.0]
        } else {
            [4.0, 30.0, 64.0]
        }[(rep - 1) % 3];
        c["wall_ns"] = ((ms * 1e6) as u64).into();
        c["load"] =
            serde_json::json!({"run_delay_ms": ms / 3.0, "cpu_pressure_ms": 0.0, "steal_ms": 0.0});
    });
    assert!(
        run(&["import", series.to_str().unwrap(), "--db", db])
            .status
            .success()
    );
    let out = run(&["watch", "--series-glob", "busy-*", "--db", db]);
    assert_ok(&out);
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(
        err.contains("the machine was busy at busy-1 a/N=5 (3 of 3 windows, waited up to 33 %)")
            && err.contains("busy-6 a/N=5"),
        "{err}"
    );
    assert!(
        err.contains("times spread widely at busy-1 a/N=5 (CV "),
        "{err}"
    );
    if text.starts_with("no new change") {
        assert!(text.contains("could not be judged"), "{text}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 56, item 12: the site publishes what a store keeps, and a store is data —
/// imported, or crafted. A change's HTML report holding a `<script>` and an `onerror=`
/// (written into the store as a crafted one would be) is published inside a sandboxed
/// frame, its markup escaped: rendered in Chromium, nothing of it runs. A report of a
/// format the site does not know (`svg`, which a browser would run) is not published.
#[test]
fn a_crafted_report_in_the_store_runs_nothing_in_the_site() {
    let dir = tmp("crafted-report");
    let series = stepped_series_named(&dir, "crafted-");
    let db = dir.join("c.db");
    let d = db.to_str().unwrap();
    assert_ok(&run(&["import", series.to_str().unwrap(), "--db", d]));
    assert_ok(&run(&["watch", "--series-glob", "crafted-*", "--db", d]));
    let evil = "<script>console.log('sigbench-pwned-script')</script>\
                <img src=x onerror=\"console.log('sigbench-pwned-img')\">\
                <p>the report</p>";
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        let id: i64 = c
            .query_row("SELECT MIN(id) FROM changes", [], |r| r.get(0))
            .unwrap();
        for (format, body) in [("html", evil), ("svg", "<svg onload=\"alert(1)\"/>")] {
            c.execute(
                "INSERT INTO change_reports (change_id, format, body) VALUES (?1, ?2, ?3)",
                rusqlite::params![id, format, body],
            )
            .unwrap();
        }
    }
    let site = dir.join("site");
    assert_ok(&run(&["site", "-o", site.to_str().unwrap(), "--db", d]));
    let reports: Vec<PathBuf> = std::fs::read_dir(site.join("reports"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(
        reports.iter().all(|p| p.extension().unwrap() != "svg"),
        "{reports:?}"
    );
    let page = reports
        .iter()
        .find(|p| p.extension().unwrap() == "html")
        .unwrap_or_else(|| panic!("{reports:?}"));
    let html = std::fs::read_to_string(page).unwrap();
    assert!(
        !html.contains("<script") && !html.contains("<img"),
        "{html}"
    );
    assert!(html.contains("<iframe sandbox"), "{html}");
    let (console, _) = render_in_chromium(page, &dir.join("shot.png"), &dir);
    assert!(
        !console.iter().any(|l| l.contains("sigbench-pwned")),
        "{console:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
