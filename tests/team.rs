//! Team scale on real servers: a throwaway PostgreSQL (initdb into a temp directory, its
//! own port) as the shared store, and a single-node Slurm cluster (munge with its own key,
//! slurmctld and slurmd in the foreground) running `submit`'s job arrays. Two "machines"
//! are two mount and UTS namespaces: each has its own /run/sigbench (so neither waits for
//! the other's machine lock) and its own hostname.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The tests of this file one at a time: a test "machine" is a mount namespace, made as a
/// copy of this one, and must not catch another test's filesystems mounted (see
/// `on_machine`).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// A PostgreSQL server of its own in a temp directory, stopped and removed when dropped.
struct Postgres {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
}

fn as_postgres(bin: &Path, tool: &str, args: &[&str]) -> std::process::Output {
    let out = Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .arg(bin.join(tool))
        .args(args)
        .current_dir("/")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{tool} {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl Postgres {
    fn start(name: &str) -> Postgres {
        let mut bins: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL is installed (scripts/deps.sh)")
            .flatten()
            .map(|e| e.path().join("bin"))
            .filter(|b| b.join("initdb").exists())
            .collect();
        bins.sort();
        let bin = bins.pop().expect("an initdb under /usr/lib/postgresql");
        let dir = std::env::temp_dir().join(format!("sigbench-pg-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        sh("chown", &["postgres:postgres", dir.to_str().unwrap()]);
        sh("chmod", &["755", dir.to_str().unwrap()]);
        let port = 20000 + (std::process::id() % 20000) as u16 + name.len() as u16;
        let data = dir.join("data");
        as_postgres(
            &bin,
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
            ],
        );
        let pg = Postgres { dir, bin, port };
        pg.ctl_start();
        as_postgres(
            &pg.bin,
            "createdb",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-U",
                "postgres",
                "sigbench",
            ],
        );
        pg
    }

    fn ctl_start(&self) {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.display()
        );
        as_postgres(
            &self.bin,
            "pg_ctl",
            &[
                "-D",
                self.dir.join("data").to_str().unwrap(),
                "-l",
                self.dir.join("log").to_str().unwrap(),
                "-o",
                &opts,
                "-w",
                "start",
            ],
        );
    }

    /// Stop at once, as a crash or a lost network would look to a client.
    fn stop(&self) {
        let _ = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join("pg_ctl"))
            .args([
                "-D",
                self.dir.join("data").to_str().unwrap(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ])
            .current_dir("/")
            .output();
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/sigbench", self.port)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `sigbench ARGS` on another "machine": a mount namespace with its own /run/sigbench (its
/// own machine lock and testbeds) and a UTS namespace with the hostname `host`.
fn on_machine(host: &str, args: &[&str]) -> Child {
    // The new mount namespace starts as a copy of this one: the test filesystems other
    // tests have mounted at that moment would stay mounted in it (its propagation is
    // private), keeping their loop devices busy for the next mkfs. A machine of its own
    // sees none of them.
    let mut script = String::from(
        "hostname \"$1\" && { findmnt -rn -o TARGET | grep '^/run/sigbench/' | sort -r | xargs -r umount -l; } && mkdir -p /run/sigbench && mount -t tmpfs sigbench /run/sigbench && shift && exec \"$@\"",
    );
    script.push('\n');
    Command::new("unshare")
        .args([
            "--mount",
            "--uts",
            "--propagation",
            "private",
            "sh",
            "-c",
            &script,
            "sh",
            host,
        ])
        .arg(env!("CARGO_BIN_EXE_sigbench"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn cases_per_run(export: &serde_json::Value) -> Vec<(String, usize)> {
    export["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let cases = r["cases"].as_array().unwrap();
            (r["label"].as_str().unwrap().to_string(), cases.len())
        })
        .collect()
}

#[test]
fn two_machines_write_one_postgres_store_at_once() {
    require_root();
    let _serial = one_at_a_time();
    let pg = Postgres::start("two");
    let url = pg.url();
    let dir = std::env::temp_dir().join(format!("sigbench-team-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // 2 × 60 repetitions × 2 N = 240 cases, written while both run.
    let plan = |label: &'static str| -> Vec<String> {
        [
            "run", "churn", "--fs", "tmpfs", "-n", "5,10", "-r", "60", "--label", label, "--db",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([url.clone()])
        .collect()
    };
    let a = plan("lab-a");
    let b = plan("lab-b");
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let b: Vec<&str> = b.iter().map(String::as_str).collect();
    let ca = on_machine("node-a", &a);
    let cb = on_machine("node-b", &b);
    let (oa, ob) = (
        ca.wait_with_output().unwrap(),
        cb.wait_with_output().unwrap(),
    );
    assert_ok(&oa);
    assert_ok(&ob);
    // Both wrote at once: neither waited for the other's machine lock.
    assert!(
        !stderr(&oa).contains("waiting for another")
            && !stderr(&ob).contains("waiting for another")
    );

    // Every case is there, once.
    let out = run(&["export", "--db", &url]);
    assert_ok(&out);
    let export: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let mut counts = cases_per_run(&export);
    counts.sort();
    assert_eq!(
        counts,
        [("lab-a".to_string(), 120), ("lab-b".to_string(), 120)]
    );
    for r in export["runs"].as_array().unwrap() {
        let mut keys: Vec<(u64, u64)> = r["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["n"].as_u64().unwrap(), c["rep"].as_u64().unwrap()))
            .collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), 120, "no case twice");
    }

    // compare reads it, and says the labels ran on different machines.
    let cmp = run(&["compare", "lab-a", "lab-b", "--db", &url]);
    assert_ok(&cmp);
    assert!(
        stderr(&cmp).contains("`lab-a` on node-a, `lab-b` on node-b"),
        "{}",
        stderr(&cmp)
    );
    let only = run(&[
        "compare",
        "lab-a",
        "lab-b",
        "--db",
        &url,
        "--machine",
        "node-a",
    ]);
    assert!(!only.status.success());
    assert!(stderr(&only).contains("no runs of `lab-b` on node-a (it was measured on node-b)"));

    // PostgreSQL → export → SQLite: the same runs and the same comparison.
    let file = dir.join("all.json");
    std::fs::write(&file, stdout(&out)).unwrap();
    let lite = dir.join("copy.db");
    let lite = lite.to_str().unwrap();
    let imp = run(&["import", file.to_str().unwrap(), "--db", lite]);
    assert_ok(&imp);
    let runs_pg = stdout(&run(&["runs", "--db", &url]));
    let runs_lite = stdout(&run(&["runs", "--db", lite]));
    let body = |t: &str| t.lines().skip(1).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(body(&runs_pg), body(&runs_lite));
    let cmp_lite = run(&["compare", "lab-a", "lab-b", "--db", lite]);
    assert_eq!(stdout(&cmp), stdout(&cmp_lite));

    // `watch` keeps its change points in PostgreSQL as in SQLite: found once, listed,
    // silenced.
    let series = stepped_series(&dir);
    let out = run(&["import", series.to_str().unwrap(), "--db", &url]);
    assert_ok(&out);
    let watch = || run(&["watch", "--series-glob", "nightly-*", "--db", &url]);
    let found = stdout(&watch());
    assert!(
        found.starts_with("sigbench noticed a candidate +30.0 % regression of "),
        "{found}"
    );
    assert!(stdout(&watch()).contains("no new change in 6 label(s)"));
    let listed = stdout(&run(&["watch", "--changes", "--db", &url]));
    let id = listed
        .lines()
        .find(|l| l.contains(" wall_ms ") && l.contains(" new "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{listed}"))
        .to_string();
    let ack = run(&["watch", "--ack", &id, "--db", &url]);
    assert_ok(&ack);
    let listed = stdout(&run(&["watch", "--changes", "--db", &url]));
    assert!(
        listed
            .lines()
            .any(|l| l.split_whitespace().next() == Some(id.as_str()) && l.contains("acknowledged")),
        "{listed}"
    );
    // Triage (issue 38) in PostgreSQL as in SQLite: the state, note and user kept.
    let t = run(&[
        "triage",
        &id,
        "invalid",
        "--note",
        "the runner was busy",
        "--db",
        &url,
    ]);
    assert_ok(&t);
    assert!(stdout(&t).contains("triaged invalid by "), "{}", stdout(&t));
    // Issue 45, item 6: concurrent triages each append (acknowledged, then invalid: 2).
    assert_eq!(parallel_triages(&url, &id, 3, 10), 2 + 30);
    let t = run(&[
        "triage",
        &id,
        "invalid",
        "--note",
        "the runner was busy",
        "--db",
        &url,
    ]);
    assert_ok(&t);
    let listed = stdout(&run(&["watch", "--changes", "--db", &url]));
    assert!(
        listed
            .lines()
            .any(|l| l.split_whitespace().next() == Some(id.as_str())
                && l.contains("invalid (")
                && l.contains("the runner was busy")),
        "{listed}"
    );
    assert!(stdout(&watch()).contains("no new change in 6 label(s)"));

    // A password in the URL is never shown, not even when the server cannot be reached.
    let out = run(&[
        "runs",
        "--db",
        "postgres://postgres:s3cret@127.0.0.1:1/sigbench",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("cannot connect to postgres://postgres@127.0.0.1:1/sigbench"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("s3cret") && !stdout(&out).contains("s3cret"));
    // A database of a newer sigbench is refused, clearly, by readers and writers.
    as_postgres(
        &pg.bin,
        "psql",
        &[
            "-h",
            "127.0.0.1",
            "-p",
            &pg.port.to_string(),
            "-U",
            "postgres",
            "-d",
            "sigbench",
            "-c",
            "UPDATE sigbench_schema SET version = 99",
        ],
    );
    for args in [
        vec!["runs", "--db", &url],
        vec![
            "run", "--fs", "tmpfs", "-n", "5", "--dir", "a", "--db", &url,
        ],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&out).contains("has schema version 99, newer than this sigbench"),
            "{}",
            stderr(&out)
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn postgres_going_away_mid_run_is_one_error_and_nothing_half_written() {
    require_root();
    let _serial = one_at_a_time();
    let pg = Postgres::start("gone");
    let url = pg.url();
    let dir = std::env::temp_dir().join(format!("sigbench-run-gone-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("run.json");
    let child = sigbench()
        .args([
            "run",
            "churn",
            "--fs",
            "tmpfs",
            "-n",
            "10",
            "-r",
            "300",
            "--label",
            "gone",
            "--db",
            &url,
            "--json",
            json.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for some cases to be stored, then take the server away.
    let start = Instant::now();
    loop {
        let out = run(&["export", "--db", &url]);
        let stored = serde_json::from_str::<serde_json::Value>(&stdout(&out))
            .ok()
            .and_then(|e| cases_per_run(&e).first().map(|c| c.1))
            .unwrap_or(0);
        if stored >= 20 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "nothing stored");
        std::thread::sleep(Duration::from_millis(200));
    }
    pg.stop();
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let errors: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("could not store"))
        .collect();
    assert_eq!(errors.len(), 1, "one error, said once: {err}");
    assert!(errors[0].contains("could not store the results in postgres://postgres@127.0.0.1"));
    assert!(
        errors[0].contains(&format!("sigbench import {}", json.display())),
        "{err}"
    );
    // The run measured on: the document holds every case; the server, back, holds whole
    // cases only, those written before it went away.
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let finished = doc["cases"].as_array().unwrap().len();
    assert_eq!(finished, 300);
    assert_eq!(doc["status"], "complete");
    pg.ctl_start();
    let out = run(&["export", "--db", &url]);
    let export: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let stored = cases_per_run(&export)[0].1;
    assert!(
        (20..finished).contains(&stored),
        "{stored} stored, {finished} finished"
    );
    // Importing the document completes the run in the store.
    let imp = run(&["import", json.to_str().unwrap(), "--db", &url]);
    assert_ok(&imp);
    let out = run(&["export", "--db", &url]);
    let export: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(cases_per_run(&export), [("gone".to_string(), finished)]);
    assert_eq!(export["runs"][0]["status"], "complete");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A single-node Slurm cluster of its own: munged with its own key and socket, slurmctld
/// and slurmd in the foreground on ports of their own, all in a temp directory; stopped
/// and removed when dropped. Commands reach it through `SLURM_CONF`.
struct Slurm {
    dir: PathBuf,
    conf: PathBuf,
    daemons: Vec<Child>,
}

impl Slurm {
    fn start() -> Slurm {
        let dir = std::env::temp_dir().join(format!("sigbench-slurm-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for d in ["state", "spool", "log"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        // Daemons reach their sockets through it.
        sh("chmod", &["755", dir.to_str().unwrap()]);
        let p = |f: &str| dir.join(f).display().to_string();
        sh("mungekey", &["--create", "--keyfile", &p("munge.key")]);
        sh(
            "munged",
            &[
                "--force",
                "--key-file",
                &p("munge.key"),
                "--socket",
                &p("munge.sock"),
                "--pid-file",
                &p("munged.pid"),
                "--log-file",
                &p("log/munged.log"),
                "--seed-file",
                &p("munged.seed"),
            ],
        );
        // This machine's node line as slurmd sees it (name, CPUs, memory).
        let node = sh("slurmd", &["-C"]);
        let node = node.lines().next().unwrap();
        let port = 30000 + (std::process::id() % 10000) as u16 * 2;
        let conf = dir.join("slurm.conf");
        std::fs::write(
            &conf,
            format!(
                "ClusterName=sigbenchtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={port}
SlurmdPort={}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={}
CredType=cred/munge
StateSaveLocation={}
SlurmdSpoolDir={}
SlurmctldPidFile={}
SlurmdPidFile={}
SlurmctldLogFile={}
SlurmdLogFile={}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SchedulerParameters=batch_sched_delay=0
MailProg=/bin/true
ReturnToService=2
{node} NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
",
                port + 1,
                p("munge.sock"),
                p("state"),
                p("spool"),
                p("slurmctld.pid"),
                p("slurmd.pid"),
                p("log/slurmctld.log"),
                p("log/slurmd.log"),
            ),
        )
        .unwrap();
        let daemon = |cmd: &str| {
            Command::new(cmd)
                .arg("-D")
                .arg("-f")
                .arg(&conf)
                .env("SLURM_CONF", &conf)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        };
        let daemons = vec![daemon("slurmctld"), daemon("slurmd")];
        let s = Slurm { daemons, dir, conf };
        let start = Instant::now();
        loop {
            let out = s
                .command("sinfo")
                .args(["-h", "-o", "%t"])
                .output()
                .unwrap();
            if String::from_utf8_lossy(&out.stdout).trim() == "idle" {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the test's Slurm node did not become idle: {}",
                std::fs::read_to_string(s.dir.join("log/slurmctld.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        s
    }

    /// Every task's output, for a failed assertion's message.
    fn logs(&self) -> String {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.dir.join("jobs"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "out"))
            .collect();
        v.sort();
        v.iter()
            .map(|p| {
                format!(
                    "== {}\n{}",
                    p.display(),
                    std::fs::read_to_string(p).unwrap_or_default()
                )
            })
            .collect()
    }

    fn command(&self, cmd: &str) -> Command {
        let mut c = Command::new(cmd);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    /// `sigbench ARGS` talking to this cluster.
    fn sigbench(&self, args: &[&str]) -> std::process::Output {
        let out = sigbench()
            .env("SLURM_CONF", &self.conf)
            .args(args)
            .output()
            .unwrap();
        eprintln!(
            "$ sigbench {}\n--- stdout\n{}--- stderr\n{}---",
            args.join(" "),
            stdout(&out),
            stderr(&out)
        );
        out
    }

    /// Slurm's state of every task of `job` (`ArrayTaskId=… JobState=…`).
    fn states(&self, job: &str) -> Vec<(String, String)> {
        let out = self
            .command("scontrol")
            .args(["-o", "show", "job", job])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let f = |k: &str| {
                    l.split_whitespace()
                        .find_map(|w| w.strip_prefix(k))
                        .map(str::to_string)
                };
                Some((f("ArrayTaskId=")?, f("JobState=")?))
            })
            .collect()
    }

    /// Until every task of `job` has ended (COMPLETING, for one, has not yet).
    fn wait(&self, job: &str, timeout: Duration) {
        const ENDED: &[&str] = &[
            "COMPLETED",
            "FAILED",
            "CANCELLED",
            "TIMEOUT",
            "NODE_FAIL",
            "OUT_OF_MEMORY",
            "PREEMPTED",
            "BOOT_FAIL",
            "DEADLINE",
        ];
        let start = Instant::now();
        while self
            .states(job)
            .iter()
            .any(|(_, s)| !ENDED.contains(&s.as_str()))
        {
            assert!(
                start.elapsed() < timeout,
                "job {job}: {:?}",
                self.states(job)
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        for d in &mut self.daemons {
            let _ = d.kill();
            let _ = d.wait();
        }
        if let Ok(pid) = std::fs::read_to_string(self.dir.join("munged.pid")) {
            let _ = Command::new("kill").arg(pid.trim()).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `submit --status`'s row for a slice: (slurm state, store state, cases).
fn slice_row(status: &str, slice: usize) -> (String, String, String) {
    let row = status
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&slice.to_string()))
        .unwrap_or_else(|| panic!("no slice {slice} in\n{status}"));
    let w: Vec<&str> = row.split_whitespace().collect();
    // "nothing stored" is two words.
    if w[2] == "nothing" {
        return (w[1].into(), "nothing stored".into(), w[4].into());
    }
    (w[1].into(), w[2].into(), w[3].into())
}

#[test]
fn a_matrix_submitted_to_slurm_lands_in_one_postgres_store() {
    require_root();
    let _serial = one_at_a_time();
    let pg = Postgres::start("slurm");
    let url = pg.url();
    let slurm = Slurm::start();
    let logs = slurm.dir.join("jobs");
    let logs = logs.to_str().unwrap();
    let matrix = |label: &'static str, n: &'static str| -> Vec<String> {
        [
            "submit",
            "--slurm",
            "--fs",
            "btrfs,ext4",
            "--dir",
            "a",
            "--dir",
            "b",
            "-n",
            n,
            "-r",
            "3",
            "--label",
            label,
            "--log-dir",
            logs,
            "--db",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([url.clone()])
        .collect()
    };

    // The script, without submitting: four slices, each task one `run --slice`.
    let mut dry: Vec<String> = matrix("lab", "250");
    dry.push("--dry-run".into());
    let out = slurm.sigbench(&dry.iter().map(String::as_str).collect::<Vec<_>>());
    assert_ok(&out);
    let script = stdout(&out);
    assert!(script.contains("#SBATCH --array=0-3\n"), "{script}");
    assert!(
        script.contains("--slice \"${SLURM_ARRAY_TASK_ID}/4\""),
        "{script}"
    );

    // The 4-slice matrix (2 filesystems × 2 directories), N = 250, 3 repetitions.
    let args = matrix("lab", "250");
    let out = slurm.sigbench(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_ok(&out);
    let job = stdout(&out).trim().to_string();
    assert!(job.bytes().all(|b| b.is_ascii_digit()), "{job}");
    slurm.wait(&job, Duration::from_secs(300));
    let status = slurm.sigbench(&["submit", "--status", &job, "--db", &url]);
    assert_ok(&status);
    let table = stdout(&status);
    let host = sh("hostname", &[]);
    for i in 0..4 {
        assert_eq!(
            slice_row(&table, i),
            ("COMPLETED".into(), "complete".into(), "3".into()),
            "{table}{}",
            slurm.logs()
        );
    }
    assert!(table.contains(&host), "the node's hostname: {table}");
    // compare reads all four slices: both directories of both filesystems.
    let cmp = run(&["compare", "lab/btrfs", "lab/ext4", "--db", &url]);
    assert_ok(&cmp);
    let text = stdout(&cmp);
    assert!(
        text.lines().any(|l| l.starts_with("lab/btrfs     2 "))
            && text.lines().any(|l| l.starts_with("lab/ext4      2 ")),
        "two runs (slices) per filesystem: {text}"
    );
    for dir in ["a", "b"] {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().take(3).collect::<Vec<_>>()
                    == ["s3e-test3", dir, "250"]),
            "directory {dir} compared: {text}"
        );
    }

    // The same matrix larger, one slice at a time; slice 1 cancelled while it runs.
    let mut args = matrix("cut", "20000");
    args.extend(["--max-parallel".into(), "1".into()]);
    let out = slurm.sigbench(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_ok(&out);
    let job = stdout(&out).trim().to_string();
    let start = Instant::now();
    while !slurm
        .states(&job)
        .iter()
        .any(|(t, s)| t == "1" && s == "RUNNING")
    {
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "{:?}",
            slurm.states(&job)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = slurm
        .command("scancel")
        .arg(format!("{job}_1"))
        .output()
        .unwrap();
    assert_ok(&out);
    slurm.wait(&job, Duration::from_secs(600));
    let status = slurm.sigbench(&["submit", "--status", &job, "--db", &url]);
    assert_ok(&status);
    let table = stdout(&status);
    let (state, stored, cases) = slice_row(&table, 1);
    assert_eq!(state, "CANCELLED", "{table}");
    assert!(
        ["interrupted", "nothing stored"].contains(&stored.as_str()) && cases == "0",
        "the cancelled slice is not taken for a finished one: {table}"
    );
    for i in [0, 2, 3] {
        assert_eq!(
            slice_row(&table, i),
            ("COMPLETED".into(), "complete".into(), "3".into()),
            "{table}{}",
            slurm.logs()
        );
    }
    // The other slices' results are whole in the store.
    let out = run(&["export", "--db", &url]);
    let export: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let mut cut: Vec<(String, usize)> = cases_per_run(&export)
        .into_iter()
        .filter(|(l, c)| l.starts_with("cut/") && *c > 0)
        .collect();
    cut.sort();
    assert_eq!(
        cut,
        [
            ("cut/btrfs".to_string(), 3),
            ("cut/ext4".to_string(), 3),
            ("cut/ext4".to_string(), 3)
        ]
    );
    // Nothing of the cancelled task is left on the machine.
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(!mounts.contains("/run/sigbench/"), "{mounts}");
}

/// `bisect --slurm`: each round's kernels are one job array on the throwaway Slurm node,
/// every task a `sigbench run --kernel` into the shared PostgreSQL, the round read back
/// from it — the same first bad as a bisect on one machine (tests/vm.rs).
#[test]
fn a_bisect_on_slurm_names_the_first_612_build() {
    require_root();
    let _serial = one_at_a_time();
    let kernels: Vec<String> = [(DEB_61, 1), (DEB_61, 0), (DEB_612, 1), (DEB_612, 0)]
        .iter()
        .map(|&(p, n)| debian_kernel_nth(p, n).display().to_string())
        .collect();
    let first_bad = release_of(Path::new(&kernels[2]));
    let pg = Postgres::start("bisect");
    let url = pg.url();
    let slurm = Slurm::start();
    let logs = slurm.dir.join("jobs");
    let args = bisect_args(
        &kernels,
        &url,
        &[
            "--jobs",
            "2",
            "--slurm",
            "--log-dir",
            logs.to_str().unwrap(),
        ],
    );
    let started = Instant::now();
    let out = slurm.sigbench(&args);
    eprintln!("bisect --slurm: {:.0} s", started.elapsed().as_secs_f64());
    assert!(out.status.success(), "{}{}", stderr(&out), slurm.logs());
    let text = stdout(&out);
    assert!(
        text.contains(&format!("first bad: {first_bad}")),
        "{text}{}",
        slurm.logs()
    );
    assert!(stderr(&out).contains("as Slurm job"), "{}", stderr(&out));
    // Every step ran in a Slurm task: the store holds each kernel's runs with its job.
    let exported = run(&["export", "--db", &url]);
    let export: serde_json::Value = serde_json::from_str(&stdout(&exported)).unwrap();
    let runs = export["runs"].as_array().expect("runs");
    assert!(runs.len() >= 3, "{export}");
    assert!(
        runs.iter().all(|r| r["slurm_job"].as_str().is_some()),
        "{export}"
    );
    // `watch --slurm` over the same kernels and store: what the bisect's tasks stored is
    // not measured again; the change is confirmed by a job array of its own.
    let mut args = vec!["watch"];
    args.extend_from_slice(CHURN);
    args.extend_from_slice(&[
        "--slurm",
        "--log-dir",
        logs.to_str().unwrap(),
        "--db",
        &url,
        // A slab count alerts only when named (issue 37).
        "--metric",
        "create.slabinfo.maple_node.active_objs",
        "--kernels",
    ]);
    args.extend(kernels.iter().map(String::as_str));
    let started = Instant::now();
    let out = slurm.sigbench(&args);
    eprintln!("watch --slurm: {:.0} s", started.elapsed().as_secs_f64());
    assert!(out.status.success(), "{}{}", stderr(&out), slurm.logs());
    let text = stdout(&out);
    assert!(
        text.lines().any(|l| l.starts_with("sigbench noticed")
            && l.ends_with(&format!("on: kernel {first_bad}"))),
        "{text}"
    );
    assert!(
        text.contains("create.slabinfo.maple_node.active_objs"),
        "{text}"
    );
    let said = stderr(&out);
    assert!(said.contains("as Slurm job"), "{said}");
    assert!(said.contains("measuring both again"), "{said}");
    // Nothing of the tasks is left on the machine.
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(!mounts.contains("/run/sigbench/"), "{mounts}");
}

/// Issue 39, 22: a dry run changes nothing (the log directory is not created), and no
/// option can add a line to the job script.
#[test]
fn submit_dry_run_creates_nothing_and_options_stay_on_one_line() {
    let dir = std::env::temp_dir().join(format!("sigbench-dry-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let logs = dir.join("logs");
    let db = dir.join("s.db");
    let base = [
        "submit",
        "test3",
        "--fs",
        "tmpfs",
        "-n",
        "5",
        "--dir",
        "a",
        "--slurm",
        "--dry-run",
        "--log-dir",
        logs.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ];
    let out = run(&base);
    assert_ok(&out);
    assert!(
        stdout(&out).contains("#SBATCH --array=0-0\n"),
        "{}",
        stdout(&out)
    );
    assert!(!logs.exists(), "a dry run created {}", logs.display());
    for (flag, v) in [
        ("--partition", "debug\n#SBATCH --uid=0"),
        ("--time-limit", "30:00\r\n#SBATCH --uid=0"),
        ("--sbatch-arg", "--exclusive\n#SBATCH --uid=0"),
    ] {
        let mut a = base.to_vec();
        a.extend([flag, v]);
        let out = run(&a);
        assert_eq!(out.status.code(), Some(1), "{flag}: {}", stdout(&out));
        let err = stderr(&out);
        assert!(
            err.starts_with(&format!("sigbench: {flag} ")) && err.lines().count() == 1,
            "{err}"
        );
    }
    let nl = dir.join("a\n#SBATCH --uid=0");
    let a: Vec<&str> = base
        .iter()
        .map(|&w| {
            if w == logs.to_str().unwrap() {
                nl.to_str().unwrap()
            } else {
                w
            }
        })
        .collect();
    let out = run(&a);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--log-dir "), "{}", stderr(&out));
    std::fs::remove_dir_all(&dir).unwrap();
}
