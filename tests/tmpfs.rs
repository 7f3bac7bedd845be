//! tmpfs as the filesystem under test, and the LKP create/delete churn with its slab
//! evidence (reference 004).

mod common;

use common::*;
use std::time::Duration;

/// The value in `column` of the first row of a table whose first cell is `cache`.
fn cell(table_text: &str, cache: &str, column: &str) -> i64 {
    let mut header: Vec<&str> = Vec::new();
    for line in table_text.lines() {
        let cells: Vec<&str> = line
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        if cells.first() == Some(&"slab cache") {
            header = cells;
        } else if cells.first() == Some(&cache) && !header.is_empty() {
            let k = header
                .iter()
                .position(|h| *h == column)
                .unwrap_or_else(|| panic!("no column {column} in {header:?}"));
            return cells[k].parse().unwrap_or_else(|_| panic!("{line}"));
        }
    }
    panic!("no row {cache}:\n{table_text}");
}

#[test]
fn churn_on_tmpfs_shows_the_offset_tree_in_the_slab_caches() {
    let child = spawn(&[
        "run", "churn", "--fs", "tmpfs", "-n", "20000", "--json", "-",
    ]);
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_ok(&out);
    // With --json -, the text report is on stderr.
    let text = stderr(&out);
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("...")).collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(
        lines[0].starts_with("...churning 20000 files on /run/sigbench/"),
        "{}",
        lines[0]
    );
    assert!(
        !lines[0].contains('@'),
        "tmpfs has no eviction counter; none may be printed: {}",
        lines[0]
    );
    // Creating 20 000 files in one directory adds ≈ 1 500 maple_node objects on 6.18.
    let created = cell(&text, "maple_node", "create: active");
    assert!(
        (1000..2500).contains(&created),
        "maple_node +{created} while creating:\n{text}"
    );
    assert!(text.contains("phases (wall ms"), "{text}");

    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let case = &doc["cases"][0];
    assert_eq!(doc["testbed"]["fs"], "tmpfs");
    assert_eq!(doc["testbed"]["device_kind"], "none");
    assert_eq!(case["counters"].as_array().unwrap().len(), 0);
    let phases = case["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2);
    assert!(
        phases[0]["slabinfo"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["cache"] == "maple_node")
    );
    let total: u64 = phases.iter().map(|p| p["wall_ns"].as_u64().unwrap()).sum();
    assert_eq!(case["wall_ns"].as_u64(), Some(total));
    assert_eq!(leftovers_of(pid), Vec::<String>::new());
}

#[test]
fn churn_sweep_shows_maple_node_growing_with_n() {
    let out = run(&["run", "churn", "--fs", "tmpfs", "-n", "1000,5000,20000"]);
    assert_ok(&out);
    let text = stdout(&out);
    let growth = &text[text
        .find("slab growth with N")
        .expect("a sweep prints the growth table")..];
    assert!(
        growth
            .lines()
            .any(|l| l.starts_with("maple_node") && l.contains(" create ")),
        "maple_node grows while files are created:\n{growth}"
    );
    let values: Vec<i64> = ["N=1000", "N=5000", "N=20000"]
        .iter()
        .map(|c| cell(growth, "maple_node", c))
        .collect();
    assert!(
        values[0] < values[1] && values[1] < values[2],
        "maple_node {values:?}:\n{growth}"
    );
    assert!(values[2] > 1000, "{values:?}");
}

#[test]
fn rounds_continue_the_names_and_recreate_works() {
    let out = run(&[
        "run",
        "churn-recreate",
        "--fs",
        "tmpfs",
        "-n",
        "3000",
        "--rounds",
        "2",
        "--json",
        "-",
    ]);
    assert_ok(&out);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let case = &doc["cases"][0];
    // Per round: 3000 creates (2 calls), 2997 unlinks, 2997 re-creates (2 calls).
    assert_eq!(case["calls"].as_u64(), Some(2 * (6000 + 2997 + 2 * 2997)));
    assert_eq!(case["phases"].as_array().unwrap().len(), 3);
}

#[test]
fn tmpfs_refuses_what_it_cannot_do_before_mounting() {
    for (args, expect) in [
        (
            &["--dir", "a:compression=zstd"][..],
            "tmpfs has no compression",
        ),
        (&["--dir", "a:nocow"], "tmpfs does not support chattr +C"),
        (&["--device", "zram"], "tmpfs has no device"),
        (&["--mkfs-opts", "-O x"], "not made with mkfs"),
    ] {
        let mut all = vec!["run", "churn", "--fs", "tmpfs", "-n", "100"];
        all.extend_from_slice(args);
        let out = run(&all);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(expect), "{args:?}: {err}");
    }
    // Mount options reach tmpfs: 500 inodes cannot hold 1000 files.
    let child = spawn(&[
        "run",
        "churn",
        "--fs",
        "tmpfs",
        "-n",
        "1000",
        "--mount-opts",
        "size=64m,nr_inodes=500",
    ]);
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("failed with ENOSPC"),
        "{}",
        stderr(&out)
    );
    assert_eq!(leftovers_of(pid), Vec::<String>::new());
}

#[test]
fn sigint_in_a_tmpfs_run_leaves_nothing_behind() {
    let mut child = spawn(&["run", "churn", "--fs", "tmpfs", "-n", "3000000"]);
    let pid = child.id();
    wait_for_mount(&mut child, Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(500));
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert_eq!(leftovers_of(pid), Vec::<String>::new());
}

#[test]
fn a_host_run_profiles_the_window_without_a_hardware_pmu_and_says_so() {
    // Churn on tmpfs, N = 5000, profiled as `profile` says: its output and run document.
    let profiled = |profile: &str| {
        let out = run(&[
            "run",
            "churn",
            "--fs",
            "tmpfs",
            "-n",
            "5000",
            profile,
            "--no-store",
            "--json",
            "-",
        ]);
        assert_ok(&out);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (out, doc)
    };
    let (out, doc) = profiled("--profile");
    let p = &doc["cases"][0]["profile"];
    assert_eq!(p["status"], "sampled", "{p}");
    assert_eq!(p["event"], "cpu-clock");
    assert!(p["samples"].as_u64().unwrap() > 20, "{p}");
    // Attributed per phase, and the creates go through tmpfs's mknod.
    let phases: Vec<&str> = p["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ph| ph["name"].as_str().unwrap())
        .collect();
    assert_eq!(phases, ["create", "delete"]);
    let create = &p["phases"][0]["stacks"];
    assert!(
        create
            .as_object()
            .unwrap()
            .keys()
            .any(|s| s.contains(";shmem_mknod")),
        "{create}"
    );
    // This machine has no hardware PMU: the profile says what it sampled on instead.
    if !std::path::Path::new("/sys/bus/event_source/devices/cpu").exists() {
        assert!(stderr(&out).contains("no hardware PMU"), "{}", stderr(&out));
    }
    // Taken apart: a second window of each case samples, faster; the timed window does
    // not, so its time has none of the sampling in it.
    let (apart, apart_doc) = profiled("--profile=apart");
    let c = &apart_doc["cases"][0];
    let q = &c["profile"];
    assert_eq!(q["status"], "sampled", "{q}");
    assert!(q["hz"].as_u64().unwrap() > 4000, "{q}");
    assert!(q["apart_ns"].as_u64().unwrap() > 0, "{q}");
    assert!(
        q["samples"].as_u64().unwrap() > p["samples"].as_u64().unwrap(),
        "apart: {} samples, in the window: {}",
        q["samples"],
        p["samples"]
    );
    assert!(stderr(&apart).contains("in a second window of each case"));
    // A rate out of range is one line before anything runs.
    let out = run(&["run", "churn", "--fs", "tmpfs", "--profile=0", "--no-store"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("--profile=0") && err.lines().count() == 1,
        "{err}"
    );
}
