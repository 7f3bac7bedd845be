//! `sigbench run` end to end, on real loop devices, filesystems and tracepoints.

mod common;

use common::*;
use std::time::Duration;

#[test]
fn default_run_counts_one_eviction_per_file_and_leaves_nothing() {
    let child = spawn(&["run"]);
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_ok(&out);
    let lines = s3e_lines(&out);
    assert_eq!(
        lines.len(),
        3,
        "one s3e line per default directory: {lines:#?}"
    );
    for (line, dir) in lines.iter().zip(["zstd", "lzo", "uncompressed"]) {
        assert!(
            line.starts_with("...updating 250 files on /run/sigbench/"),
            "{line}"
        );
        assert!(line.contains(&format!("/mnt/{dir}:")), "{line}");
        assert!(line.contains("Job took"), "{line}");
        assert!(line.ends_with("@inode_evictions: 250"), "{line}");
    }
    assert_eq!(leftovers_of(pid), Vec::<String>::new());
}

#[test]
fn sweep_writes_a_json_document_with_evictions_equal_to_n() {
    let json = std::env::temp_dir().join(format!("sigbench-sweep-{}.json", std::process::id()));
    let out = run(&["run", "-n", "50,100,1000", "--json", json.to_str().unwrap()]);
    assert_ok(&out);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();
    assert_eq!(doc["schema"], "sigbench.run");
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["status"], "complete");
    assert_eq!(doc["testbed"]["fs"], "btrfs");
    assert!(
        doc["host"]["kernel_release"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    let cases = doc["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 9);
    for c in cases {
        let n = c["n"].as_u64().unwrap();
        let ev = c["counters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == "inode_evictions")
            .unwrap();
        assert_eq!(ev["status"], "counted");
        assert_eq!(ev["value"].as_u64(), Some(n), "{} at N={n}", c["dir"]);
        assert_eq!(c["calls"].as_u64(), Some(4 * n));
        assert!(c["wall_ns"].as_u64().unwrap() > 0);
        let ops: Vec<&str> = c["latency"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["syscall"].as_str().unwrap())
            .collect();
        assert_eq!(ops, ["renameat2", "unlink", "openat", "close"]);
    }
}

#[test]
fn json_to_stdout_is_the_only_thing_on_stdout() {
    let out = run(&["run", "-n", "20", "--dir", "a", "--json", "-"]);
    assert_ok(&out);
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("stdout is exactly one JSON document");
    assert_eq!(doc["cases"][0]["n"], 20);
    assert!(
        stderr(&out).contains("...updating 20 files"),
        "the text report goes to stderr"
    );
}

#[test]
fn ext4_and_xfs_run_plain_directories_and_refuse_compression() {
    for fs in ["ext4", "xfs"] {
        let out = run(&["run", "--fs", fs, "--dir", "a"]);
        assert!(out.status.success(), "{fs}: {}", stderr(&out));
        let lines = s3e_lines(&out);
        assert_eq!(lines.len(), 1, "{fs}");
        assert!(lines[0].contains("/mnt/a:"), "{}", lines[0]);
        assert!(lines[0].ends_with("@inode_evictions: 250"), "{}", lines[0]);

        let out = run(&["run", "--fs", fs, "--dir", "a:compression=zstd"]);
        assert_eq!(out.status.code(), Some(1));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "one-line error: {err}");
        assert!(err.contains(&format!("{fs} has no compression")), "{err}");
        assert!(s3e_lines(&out).is_empty());
    }
}

#[test]
fn mounted_device_is_refused() {
    let mut scratch = ScratchLoop::ext4("sigbench");
    scratch.mount_at_temp();
    let out = run(&["run", "--device", &scratch.dev, "--force", "-n", "10"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("refusing --device") && err.contains("is mounted at"),
        "{err}"
    );
    scratch.unmount();
    assert_eq!(
        scratch.blkid(),
        "ext4 sigbench",
        "the device was left alone"
    );
}

#[test]
fn foreign_filesystem_is_refused_without_force() {
    let mut scratch = ScratchLoop::ext4("data");
    let out = run(&["run", "--device", &scratch.dev, "-n", "10"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("filesystem of type ext4 labelled \"data\""),
        "{err}"
    );
    assert!(err.contains("--force"), "{err}");
    assert!(
        scratch.marker_intact(),
        "refused device must not be touched"
    );

    let out = run(&[
        "run",
        "--device",
        &scratch.dev,
        "--force",
        "-n",
        "10",
        "--dir",
        "a",
    ]);
    assert_ok(&out);
    assert_eq!(scratch.blkid(), "btrfs sigbench");
    // Now it carries sigbench's label: no --force needed any more.
    let out = run(&["run", "--device", &scratch.dev, "-n", "10", "--dir", "a"]);
    assert_ok(&out);
}

/// mke2fs leaves a block device's inode tables to the kernel's ext4lazyinit thread, which
/// zeroes them in the background during the first windows (churn N = 2,000: first
/// repetitions up to 40 % slow): sigbench's ext4 has them written at mkfs.
#[test]
fn ext4_is_made_with_its_inode_tables_written() {
    let scratch = ScratchLoop::ext4("sigbench");
    let out = run(&[
        "run",
        "--device",
        &scratch.dev,
        "--fs",
        "ext4",
        "-n",
        "10",
        "--dir",
        "a",
    ]);
    assert_ok(&out);
    let dump = std::process::Command::new("dumpe2fs")
        .arg(&scratch.dev)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&dump.stdout);
    let groups = text
        .lines()
        .filter(|l| l.starts_with("Group ") && l.contains(": (Blocks"))
        .count();
    let zeroed = text.matches("ITABLE_ZEROED").count();
    assert!(groups > 0, "{text}");
    assert_eq!(zeroed, groups, "inode tables left to ext4lazyinit");
}

#[test]
fn bad_probe_or_dir_fails_in_one_line_before_formatting() {
    let mut scratch = ScratchLoop::ext4("sigbench");
    for args in [
        &["--probe", "bogus:thing"][..],
        &["--probe", "tracepoint:btrfs:no_such_event"],
        &["--dir", "a:colour=blue"],
        &["--dir", "a:compression=zstd:42"],
    ] {
        let mut all = vec!["run", "--device", &scratch.dev, "-n", "10"];
        all.extend_from_slice(args);
        let child = spawn(&all);
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("unknown probe") || err.contains("bad --dir"),
            "{err}"
        );
        assert!(stdout(&out).is_empty(), "{args:?}");
        assert!(leftovers_of(pid).is_empty());
        assert!(scratch.marker_intact(), "{args:?} formatted the device");
    }
}

#[test]
fn unexpected_errno_stops_the_run_and_says_where() {
    let sig = std::env::temp_dir().join(format!("sigbench-bad-{}.toml", std::process::id()));
    std::fs::write(
        &sig,
        r#"format = 1
name = "bad"
n = 5
[setup]
populate = { size = 0 }
[[phase]]
name = "oops"
steps = [
  { op = "renameat2", from = "{name}", to = "{name}-RPMDELETE" },
  { op = "unlink", path = "{name}" },
]
"#,
    )
    .unwrap();
    let child = spawn(&["run", sig.to_str().unwrap(), "--dir", "a"]);
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    std::fs::remove_file(&sig).unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains(":10: phase `oops`, file 1 of 5: unlink(\"file_1\") failed with ENOENT"),
        "{err}"
    );
    assert!(leftovers_of(pid).is_empty());
}

#[test]
fn sigint_and_sigterm_mid_run_leave_nothing_behind() {
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let mut child = spawn(&["run", "-n", "400000", "--dir", "a"]);
        let pid = child.id();
        wait_for_mount(&mut child, Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(300));
        signal(&child, sig);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
        assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
        assert_eq!(leftovers_of(pid), Vec::<String>::new(), "signal {sig}");
    }
}

#[test]
fn doctor_finds_and_removes_what_a_killed_run_left() {
    let mut child = spawn(&["run", "-n", "400000", "--dir", "a"]);
    let pid = child.id();
    wait_for_mount(&mut child, Duration::from_secs(30));
    signal(&child, libc::SIGKILL);
    child.wait().unwrap();
    let left = leftovers_of(pid);
    assert!(left.iter().any(|l| l.starts_with("mount:")), "{left:?}");

    let out = run(&["doctor"]);
    assert_ok(&out);
    assert!(
        stdout(&out).contains(&format!("pid {pid}: mount: btrfs")),
        "{}",
        stdout(&out)
    );

    let out = run(&["doctor", "--cleanup"]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert_eq!(leftovers_of(pid), Vec::<String>::new());
}

#[test]
fn ctrl_c_while_waiting_for_another_run_ends_the_wait_at_once_and_stores_nothing() {
    // This test holds the machine-wide lock itself, as a run that is measuring would.
    std::fs::create_dir_all("/run/sigbench").unwrap();
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open("/run/sigbench/lock")
        .unwrap();
    use std::os::fd::AsFd;
    measure::sys::os::flock(lock.as_fd(), libc::LOCK_EX).unwrap();
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let mut child = spawn(&["run", "--fs", "tmpfs", "-n", "5", "--dir", "a"]);
        let mut err = child.stderr.take().unwrap();
        // Wait until it says it is waiting.
        let mut said = Vec::new();
        let started = std::time::Instant::now();
        while !String::from_utf8_lossy(&said).contains("waiting for another") {
            use std::io::Read;
            let mut buf = [0u8; 256];
            let n = err.read(&mut buf).unwrap();
            assert!(n > 0, "{}", String::from_utf8_lossy(&said));
            said.extend_from_slice(&buf[..n]);
            assert!(started.elapsed() < Duration::from_secs(120));
        }
        signal(&child, sig);
        // The test holds the lock until after this: an exit proves the wait ended on
        // the signal, not when the lock was free.
        let status = wait_within(
            &mut child,
            Duration::from_secs(120),
            "the signal did not end the wait for the lock",
        );
        assert_eq!(status.code(), Some(128 + sig), "{sig}");
    }
    drop(lock);
    // Nothing was stored: not even an empty interrupted run.
    let out = run(&["runs"]);
    assert!(!stdout(&out).contains("interrupted"), "{}", stdout(&out));
}
