//! `sigbench bisect --tree` and `git bisect run sigbench judge` on a real kernel git tree:
//! Debian's linux-source-6.1 with eight commits on top (tests/data/kernel-tree.sh), one of
//! which does not build and one of which makes every tmpfs unlink 300 µs slower. The tree
//! and its build products are cached under /var/cache/sigbench/test-tree, so after the
//! first (cold) build every step is an incremental one.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const TREE: &str = "/var/cache/sigbench/test-tree/linux";
/// The median unlink latency: 300 µs more on the slow commit, and not moved by a guest
/// that is preempted now and then on a loaded host (as a phase's wall time is).
const METRIC: &str = "unlink.p50_us";

/// The test tree, made once (about two minutes) and checked out at its bad end.
fn kernel_tree() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kernel-tree.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(TREE)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(TREE)
}

fn git(tree: &Path, args: &[&str]) -> String {
    let mut v = vec!["-C", tree.to_str().unwrap()];
    v.extend_from_slice(args);
    sh("git", &v)
}

/// The plan every step measures: churn on tmpfs, 300 files.
const PLAN: &[&str] = &["churn", "--fs", "tmpfs", "-n", "300", "--metric", METRIC];

/// Both bisects in one test: they share the tree (one checkout at a time).
#[test]
fn bisecting_a_kernel_tree_names_the_slow_commit_and_skips_the_broken_one() {
    let tree = kernel_tree();
    let rev = |r: &str| git(&tree, &["rev-parse", r]);
    let (good, bad) = (rev("sigbench-good"), rev("sigbench-bad"));
    let slow = rev("sigbench-bad~2");
    let broken = rev("sigbench-bad~4");
    assert_eq!(
        git(&tree, &["log", "-1", "--format=%s", &slow]),
        "mm/shmem: wait 300 us in every unlink"
    );
    let dir = std::env::temp_dir().join(format!("sigbench-tree-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("t.db");
    let json = dir.join("bisect.json");

    // sigbench drives git bisect, building every commit it tests.
    let mut args = vec![
        "bisect",
        "--tree",
        TREE,
        "--good",
        "sigbench-good",
        "--bad",
        "sigbench-bad",
        "--db",
        db.to_str().unwrap(),
        "--bisect-json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(PLAN);
    args.extend_from_slice(&["-r", "3"]);
    let started = std::time::Instant::now();
    let out = run(&args);
    eprintln!("bisect --tree: {:.0} s", started.elapsed().as_secs_f64());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(marked_first_bad(&text).starts_with(&slow[..12]), "{text}");
    assert!(
        text.contains(&format!(
            "first bad: {} mm/shmem: wait 300 us in every unlink",
            &slow[..12]
        )),
        "{text}"
    );
    let skipped = format!(
        "skipped {} mm/shmem: call a function that does not exist",
        &broken[..12]
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with(&skipped) && l.contains("does not build")),
        "{text}"
    );
    assert!(
        stderr(&out).contains("built in"),
        "build times are reported"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(
        doc["first_bad"].as_str().unwrap().starts_with(&slow[..12]),
        "{doc}"
    );
    // The tree is handed back as it was found.
    assert_eq!(rev("HEAD"), bad);
    assert_eq!(
        git(&tree, &["status", "--porcelain", "--untracked-files=no"]),
        ""
    );
    // The HTML report renders the bisect.
    let page = dir.join("bisect.html");
    let out = run(&[
        "report",
        "--bisect",
        json.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(&format!("first bad {}", &slow[..12])));
    assert!(html.contains("<svg") && html.contains("&lt;- first bad"));

    // The same tree bisected by git itself, `sigbench judge` deciding every step against
    // the good end the bisect above stored (labelled by its commit id).
    let log = dir.join("make.log");
    let mut judge = vec![
        env!("CARGO_BIN_EXE_sigbench").to_string(),
        "judge".into(),
        "--kernel".into(),
        TREE.into(),
        "--baseline".into(),
        good[..12].to_string(),
        "--db".into(),
        db.display().to_string(),
    ];
    judge.extend(PLAN.iter().map(|s| s.to_string()));
    // Six repetitions against the good end's three (so a rank test can decide "no change"),
    // and a minimum effect far below the slowdown's but above the spread between boots.
    judge.extend(["-r", "6", "--min-effect", "50"].map(String::from));
    let script = dir.join("step.sh");
    std::fs::write(
        &script,
        format!(
            "make -C {TREE} -j$(nproc) olddefconfig bzImage >> {} 2>&1 || exit 125\nexec {}\n",
            log.display(),
            judge.join(" ")
        ),
    )
    .unwrap();
    git(&tree, &["bisect", "start", &bad, &good]);
    let out = Command::new("git")
        .args(["-C", TREE, "bisect", "run", "sh"])
        .arg(&script)
        .output()
        .unwrap();
    let said = stdout(&out);
    eprintln!("git bisect run:\n{said}\n{}", stderr(&out));
    let _ = Command::new("git")
        .args(["-C", TREE, "bisect", "reset"])
        .output();
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!("{slow} is the first bad commit")),
        "{said}"
    );
    assert_eq!(rev("HEAD"), bad);
    std::fs::remove_dir_all(&dir).unwrap();
}
