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
    let mut script = String::from(
        "hostname \"$1\" && mkdir -p /run/sigbench && mount -t tmpfs sigbench /run/sigbench && shift && exec \"$@\"",
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
    assert!(oa.status.success(), "{}", stderr(&oa));
    assert!(ob.status.success(), "{}", stderr(&ob));
    // Both wrote at once: neither waited for the other's machine lock.
    assert!(
        !stderr(&oa).contains("waiting for another")
            && !stderr(&ob).contains("waiting for another")
    );

    // Every case is there, once.
    let out = run(&["export", "--db", &url]);
    assert!(out.status.success(), "{}", stderr(&out));
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
    assert!(cmp.status.success(), "{}", stderr(&cmp));
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
    assert!(imp.status.success(), "{}", stderr(&imp));
    let runs_pg = stdout(&run(&["runs", "--db", &url]));
    let runs_lite = stdout(&run(&["runs", "--db", lite]));
    let body = |t: &str| t.lines().skip(1).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(body(&runs_pg), body(&runs_lite));
    let cmp_lite = run(&["compare", "lab-a", "lab-b", "--db", lite]);
    assert_eq!(stdout(&cmp), stdout(&cmp_lite));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn postgres_going_away_mid_run_stops_it_with_one_error_and_nothing_half_written() {
    require_root();
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
            "5000",
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
    let started_wait = Instant::now();
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        started_wait.elapsed() < Duration::from_secs(60),
        "the run stops soon after its store is gone"
    );
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
    // The document holds what finished; the server, back, holds whole cases only.
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let finished = doc["cases"].as_array().unwrap().len();
    assert!((1..5000).contains(&finished), "{finished}");
    assert_eq!(doc["status"], "failed");
    pg.ctl_start();
    let out = run(&["export", "--db", &url]);
    let export: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let stored = cases_per_run(&export)[0].1;
    assert!(stored <= finished, "{stored} stored, {finished} finished");
    // Importing the document completes the run in the store.
    let imp = run(&["import", json.to_str().unwrap(), "--db", &url]);
    assert!(imp.status.success(), "{}", stderr(&imp));
    let out = run(&["export", "--db", &url]);
    let export: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(cases_per_run(&export), [("gone".to_string(), finished)]);
    assert_eq!(export["runs"][0]["status"], "failed");
    std::fs::remove_dir_all(&dir).unwrap();
}
