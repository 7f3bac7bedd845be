//! Every built-in signature replays on a real filesystem, issuing the calls it declares.

mod common;

use common::*;

#[test]
fn every_builtin_signature_replays_on_btrfs() {
    let out = run(&["list"]);
    assert!(out.status.success());
    let names: Vec<String> = stdout(&out)
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert!(names.len() >= 8, "{names:?}");
    for name in &names {
        // Enough files for the churn signature to keep some (it deletes all but every 1000th).
        let n = if name == "lkp-churn" { "2500" } else { "40" };
        let out = run(&["run", name, "-n", n, "--dir", "a", "--json", "-"]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let case = &doc["cases"][0];
        assert_eq!(doc["signature"]["name"], name.as_str());
        let per_syscall: u64 = case["latency"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["count"].as_u64().unwrap())
            .sum();
        assert_eq!(Some(per_syscall), case["calls"].as_u64(), "{name}");
        assert!(per_syscall > 0, "{name}");
    }
}

#[test]
fn show_prints_the_signature_file_verbatim() {
    let out = run(&["show", "test3"]);
    assert!(out.status.success());
    assert_eq!(stdout(&out), include_str!("../signatures/s3e-test3.toml"));
    let out = run(&["show", "no-such-signature"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("unknown signature `no-such-signature`"));
}
