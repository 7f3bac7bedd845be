//! sigbench formats only what it proved to be scratch, never more than memory holds, and
//! stops at once when asked — even in the middle of a long mkfs.

mod common;

use common::*;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// A loop device over a sparse file the test made; detached and removed when dropped.
struct TestLoop {
    file: PathBuf,
    dev: String,
}

impl TestLoop {
    fn new(name: &str, size: &str) -> TestLoop {
        let file =
            std::env::temp_dir().join(format!("sigbench-dev-{name}-{}.img", std::process::id()));
        let _ = std::fs::remove_file(&file);
        sh("truncate", &["-s", size, file.to_str().unwrap()]);
        let dev = sh("losetup", &["-f", "--show", file.to_str().unwrap()]);
        TestLoop { file, dev }
    }
}

impl Drop for TestLoop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
        let _ = std::fs::remove_file(&self.file);
    }
}

fn blkid_type(dev: &str) -> String {
    let out = Command::new("blkid")
        .args(["-p", "-o", "value", "-s", "TYPE", dev])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn mkfs_options_cannot_format_another_device() {
    let victim = TestLoop::new("victim", "64M");
    sh("mkfs.ext4", &["-q", "-F", "-L", "victim", &victim.dev]);
    for opts in [
        victim.dev.clone(),
        format!("-q {}", victim.dev),
        format!("-J device={}", victim.dev),
        // A relative name: mkfs runs in sigbench's empty workspace, and bare words are refused.
        format!("-q {}", victim.dev.trim_start_matches("/dev/")),
    ] {
        let out = sigbench()
            .current_dir("/dev")
            .args([
                "run",
                "-n",
                "5",
                "--dir",
                "a",
                "--no-store",
                "--mkfs-opts",
                &opts,
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{opts}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("--mkfs-opts"), "{err}");
        assert_eq!(
            blkid_type(&victim.dev),
            "ext4",
            "{opts} formatted the victim"
        );
    }
    for opts in [
        format!("device={}", victim.dev),
        format!("logdev={}", victim.dev),
    ] {
        let out = run(&[
            "run",
            "-n",
            "5",
            "--dir",
            "a",
            "--no-store",
            "--mount-opts",
            &opts,
        ]);
        assert_eq!(out.status.code(), Some(1), "{opts}");
        assert!(stderr(&out).contains("--mount-opts"), "{}", stderr(&out));
    }
    assert_eq!(blkid_type(&victim.dev), "ext4");
    // Options that only tune the filesystem still work.
    let ok = run(&[
        "run",
        "-n",
        "5",
        "--dir",
        "a",
        "--no-store",
        "--mkfs-opts",
        "-O no-holes -R free-space-tree",
    ]);
    assert_ok(&ok);
}

#[test]
fn a_plan_larger_than_memory_is_refused_before_anything_is_created() {
    for args in [
        vec!["run", "seqwr", "-n", "1000000", "--dir", "a", "--no-store"],
        vec![
            "run",
            "seqwr",
            "-n",
            "1000000",
            "--fs",
            "tmpfs",
            "--dir",
            "a",
            "--no-store",
        ],
    ] {
        let child = spawn(&args);
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("RAM-backed") && err.contains("--device"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(leftovers_of(pid).is_empty());
    }
}

#[test]
fn sigint_stops_a_long_mkfs_at_once() {
    // mkfs.ext4 -c reads the whole device for bad blocks: minutes on a 64 GiB device.
    let scratch = TestLoop::new("slow", "64G");
    let mut child = spawn(&[
        "run",
        "--fs",
        "ext4",
        "--device",
        &scratch.dev,
        "--mkfs-opts",
        "-c",
        "-n",
        "5",
        "--dir",
        "a",
        "--no-store",
    ]);
    let pid = child.id();
    // Wait until mkfs (or the badblocks it starts) is running under sigbench.
    let start = Instant::now();
    let running = || {
        let out = Command::new("pgrep")
            .args(["-f", &format!("mkfs.ext4 .*{}", scratch.dev)])
            .output()
            .unwrap();
        out.status.success()
    };
    while !running() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "mkfs never started"
        );
        if let Ok(Some(s)) = child.try_wait() {
            panic!("sigbench exited early: {s}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let sent = Instant::now();
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    let took = sent.elapsed();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    // badblocks alone reads the 64 GiB for minutes: a minute is far from both on a busy
    // machine.
    assert!(took < Duration::from_secs(60), "SIGINT took {took:?}");
    assert!(!running(), "mkfs still running after sigbench exited");
    let bb = Command::new("pgrep")
        .args(["-f", &format!("badblocks.*{}", scratch.dev)])
        .output()
        .unwrap();
    assert!(!bb.status.success(), "badblocks still running");
    assert!(leftovers_of(pid).is_empty(), "{:?}", leftovers_of(pid));
}
