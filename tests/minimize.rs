//! `sigbench minimize` on the host: built-in signatures shrunk to the steps that keep an
//! effect, the result replayed and checked. (The recorded rpm and dpkg upgrades are
//! minimized in tests/record.rs, where they are recorded.)

mod common;

use common::*;
use std::path::PathBuf;

fn out_file(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("sigbench-min-{name}-{}.toml", std::process::id()))
}

#[test]
fn s3e_test5_shrinks_to_rename_and_unlink() {
    let min = out_file("test5");
    let out = run(&[
        "minimize",
        "test5",
        "--dir",
        "a",
        "-n",
        "250",
        "--until",
        "inode_evictions >= N",
        "-o",
        min.to_str().unwrap(),
    ]);
    assert_ok(&out);
    let text = stdout(&out);
    assert!(text.contains("1-minimal: yes"), "{text}");
    assert_eq!(
        steps_of(&min),
        // rpm's calls of test 5 without the stat probes, the write — and the create, whose
        // open and close can only go together: rename → unlink, each file's last link.
        [(
            "update".to_string(),
            ["rename", "unlink"].map(String::from).to_vec()
        )],
        "{}",
        std::fs::read_to_string(&min).unwrap()
    );
    let file = std::fs::read_to_string(&min).unwrap();
    assert!(
        file.contains("# Removed:") && file.contains("inode_evictions >= N"),
        "{file}"
    );
    // It replays on its own and still evicts one inode per file.
    let replay = run(&["run", min.to_str().unwrap(), "-n", "250", "--no-store"]);
    assert_ok(&replay);
    assert!(
        s3e_lines(&replay)[0].ends_with("@inode_evictions: 250"),
        "{}",
        stdout(&replay)
    );
    std::fs::remove_file(&min).unwrap();
}

#[test]
fn churn_recreate_keeps_the_creates_and_the_deletes() {
    let min = out_file("churn");
    let out = run(&[
        "minimize",
        "lkp-churn-recreate",
        "--fs",
        "tmpfs",
        "-n",
        "20000",
        "--until",
        "create.slabinfo.maple_node.active_objs > 1000",
        "-o",
        min.to_str().unwrap(),
    ]);
    assert_ok(&out);
    let phases: Vec<String> = steps_of(&min).into_iter().map(|(p, _)| p).collect();
    assert_eq!(phases, ["create", "delete"], "{}", stdout(&out));
    std::fs::remove_file(&min).unwrap();
}

#[test]
fn a_predicate_false_from_the_start_or_malformed_is_one_line() {
    let min = out_file("false");
    let out = run(&[
        "minimize",
        "test3",
        "--dir",
        "a",
        "-n",
        "50",
        "--until",
        "inode_evictions > 2 * N",
        "-o",
        min.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| !l.contains("minimize:") && !l.contains("waiting for another"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("does not hold for the signature as it is"),
        "{err}"
    );
    assert!(!min.exists());
    for bad in ["inode_evictions", "wall_ms >> 3", "ratio(wall_ms) > 1"] {
        let out = run(&[
            "minimize",
            "test3",
            "--until",
            bad,
            "-o",
            min.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(1), "{bad}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("--until") && !err.contains("waiting"), "{err}");
    }
    // A metric the run does not have (a typo) is an error naming the ones it has — not a
    // 0 that "holds" in every evaluation and cuts the signature to one step.
    for typo in ["unlnk.p99_us < 1000", "ratio(nosuch, a/a) < 2"] {
        let out = run(&[
            "minimize",
            "test3",
            "--dir",
            "a",
            "-n",
            "20",
            "--until",
            typo,
            "-o",
            min.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(1), "{typo}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("--until: no metric") && err.contains("unlink.p99_us"),
            "{err}"
        );
        assert!(!min.exists());
    }
}

#[test]
fn a_budget_ends_the_search_and_keeps_the_best_so_far() {
    let min = out_file("budget");
    let out = run(&[
        "minimize",
        "test3",
        "--dir",
        "a",
        "-n",
        "20",
        "--until",
        "inode_evictions >= N",
        "--max-evals",
        "4",
        "-o",
        min.to_str().unwrap(),
    ]);
    assert_ok(&out);
    let err = stderr(&out);
    assert!(
        err.contains("the budget of 4 evaluations (--max-evals) is spent"),
        "{err}"
    );
    // The progress line says how far the search is into its budget.
    assert!(err.contains("[4/4"), "{err}");
    let text = std::fs::read_to_string(&min).unwrap();
    assert!(
        text.contains("# 1-minimal: unknown: the search stopped early"),
        "{text}"
    );
    assert!(text.contains("s3e-test3"), "still a signature: {text}");
    let _ = std::fs::remove_file(&min);
    let out = run(&[
        "minimize",
        "test3",
        "--until",
        "calls > 0",
        "--max-evals",
        "0",
        "-o",
        min.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
}
