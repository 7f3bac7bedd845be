//! Every built-in signature replays on a real filesystem, issuing the calls it declares.

mod common;

use common::*;

#[test]
fn every_builtin_signature_replays_on_btrfs() {
    let out = run(&["list"]);
    assert_ok(&out);
    let names: Vec<String> = stdout(&out)
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert!(names.len() >= 8, "{names:?}");
    for name in &names {
        // Enough files for the churn signature to keep some (it deletes all but every 1000th);
        // dbench's loadfile runs for a time: one second, two clients, no warm-up.
        let args: &[&str] = match name.as_str() {
            "lkp-churn" => &["-n", "2500"],
            "dbench" => &["--time", "1", "--warmup-time", "0", "--clients", "2"],
            _ => &["-n", "40"],
        };
        let mut argv = vec!["run", name, "--dir", "a", "--json", "-"];
        argv.extend_from_slice(args);
        let out = run(&argv);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let case = &doc["cases"][0];
        assert_eq!(doc["signature"]["name"], name.as_str());
        let sum = |rows: &serde_json::Value| -> u64 {
            rows.as_array()
                .map_or(0, |r| r.iter().map(|l| l["count"].as_u64().unwrap()).sum())
        };
        let calls = case["calls"].as_u64().unwrap();
        if doc["signature"]["loadfile"].is_object() {
            // A loadfile's times are per operation (each several syscalls), none per syscall.
            let ops = sum(&case["operations"]);
            assert_eq!(Some(ops), case["throughput"]["ops"].as_u64(), "{name}");
            assert!(
                ops > 0 && calls > ops,
                "{name}: {ops} operations, {calls} calls"
            );
            assert_eq!(sum(&case["latency"]), 0, "{name}");
        } else {
            assert_eq!(sum(&case["latency"]), calls, "{name}");
            assert!(calls > 0, "{name}");
        }
    }
}

#[test]
fn show_prints_the_signature_file_verbatim() {
    let out = run(&["show", "test3"]);
    assert_ok(&out);
    assert_eq!(stdout(&out), include_str!("../signatures/s3e-test3.toml"));
    let out = run(&["show", "no-such-signature"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("unknown signature `no-such-signature`"));
}
