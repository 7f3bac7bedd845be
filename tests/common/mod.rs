//! Helpers for end-to-end tests of the sigbench binary on real filesystems. They need root
//! (loop devices, mount, perf events), as CI runs them; without it they fail loudly.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn require_root() {
    assert_eq!(
        measure::sys::os::geteuid(),
        0,
        "the end-to-end tests need root (loop devices, mount, perf events): run them with sudo"
    );
}

pub fn sigbench() -> Command {
    require_root();
    let mut c = Command::new(env!("CARGO_BIN_EXE_sigbench"));
    c.current_dir(std::env::temp_dir());
    // Runs without --db store in a database of their own test rather than in whatever
    // directory the tests run from, so no test sees another's runs or an earlier run's.
    c.env("SIGBENCH_DB", test_db());
    // Guests run without the cost model (2-5× faster) unless a test is about it and
    // removes this: CI's 45 minutes on a cold machine.
    c.env("SIGBENCH_COST_MODEL", "off");
    // Repetitions in guests start from one state, in one boot, unless a test is about
    // states and removes this ([`run_over_states`]): a boot per repetition would multiply
    // the suite's guest time by its repetitions.
    c.env("SIGBENCH_STATES", "fixed");
    c
}

/// The default store of the calling test: one per test (libtest names each test's thread
/// after it), emptied the first time this test process uses it.
pub fn test_db() -> PathBuf {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static FRESH: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("main").replace("::", "-");
    let exe = std::env::current_exe().unwrap();
    let binary = exe.file_stem().unwrap().to_string_lossy().into_owned();
    let dir = std::env::temp_dir().join("sigbench-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join(format!("{binary}-{test}.db"));
    let mut fresh = FRESH.lock().unwrap();
    if fresh.get_or_insert_with(HashSet::new).insert(test) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
        }
    }
    db
}

pub fn run(args: &[&str]) -> Output {
    run_cmd(sigbench(), args)
}

/// [`run`] with the cost model on, as a user's runs have it: for tests about the model.
pub fn run_with_cost_model(args: &[&str]) -> Output {
    let mut c = sigbench();
    c.env_remove("SIGBENCH_COST_MODEL");
    run_cmd(c, args)
}

/// [`run`] with each repetition from a state of its own, as a user's runs have it: for
/// tests about states.
pub fn run_over_states(args: &[&str]) -> Output {
    let mut c = sigbench();
    c.env_remove("SIGBENCH_STATES");
    run_cmd(c, args)
}

/// [`run`] as a user's runs are: the cost model on, each repetition from a state of its own.
pub fn run_as_users_do(args: &[&str]) -> Output {
    let mut c = sigbench();
    c.env_remove("SIGBENCH_COST_MODEL");
    c.env_remove("SIGBENCH_STATES");
    run_cmd(c, args)
}

fn run_cmd(mut cmd: Command, args: &[&str]) -> Output {
    let out = cmd.args(args).output().expect("sigbench runs");
    eprintln!(
        "$ sigbench {}\n--- stdout\n{}--- stderr\n{}---",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The command succeeded; else the test fails with what it said on stderr.
#[track_caller]
pub fn assert_ok(o: &Output) {
    assert!(o.status.success(), "{}", stderr(o));
}

/// The s3e lines of a run's output.
pub fn s3e_lines(o: &Output) -> Vec<String> {
    stdout(o)
        .lines()
        .filter(|l| l.starts_with("..."))
        .map(String::from)
        .collect()
}

/// Whatever the run with `pid` left on the machine: mounts, loop devices, its workspace.
pub fn leftovers_of(pid: u32) -> Vec<String> {
    let ws = format!("/run/sigbench/{pid}");
    let mut v: Vec<String> = std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .filter(|l| l.contains(&ws))
        .map(|l| format!("mount: {l}"))
        .collect();
    if let Ok(rd) = std::fs::read_dir("/sys/block") {
        for e in rd.flatten() {
            if let Ok(b) = std::fs::read_to_string(e.path().join("loop/backing_file"))
                && b.starts_with(&ws)
            {
                v.push(format!(
                    "loop: {} -> {}",
                    e.file_name().to_string_lossy(),
                    b.trim()
                ));
            }
        }
    }
    if Path::new(&ws).exists() {
        v.push(format!("directory: {ws}"));
    }
    v
}

/// Wait until the run `pid` has its test filesystem mounted (it is inside a case).
pub fn wait_for_mount(child: &mut Child, timeout: Duration) {
    let target = format!("/run/sigbench/{}/mnt ", child.id());
    let start = Instant::now();
    while start.elapsed() < timeout {
        if std::fs::read_to_string("/proc/mounts")
            .unwrap()
            .contains(&target)
        {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("sigbench exited ({status}) before mounting its filesystem");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("sigbench did not mount its test filesystem within {timeout:?}");
}

/// Wait for `child` to end, or kill it after `limit` and fail saying `what` went wrong: a
/// regression that hangs fails with a message instead of never ending. `limit` is a bound
/// no working run comes near on a busy machine, never a speed target.
pub fn wait_within(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {limit:?}: {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `cmd` run to its end with its output collected, as `Command::output`, but killed after
/// `limit` and failed saying `what` (see [`wait_within`]).
pub fn output_within(cmd: &mut Command, limit: Duration, what: &str) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    // Drained on threads, so that a child writing more than a pipe holds is not stopped.
    let drain = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                r.read_to_end(&mut v).unwrap();
            }
            v
        })
    };
    let out = drain(child.stdout.take().map(|r| Box::new(r) as _));
    let err = drain(child.stderr.take().map(|r| Box::new(r) as _));
    let status = wait_within(&mut child, limit, what);
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

pub fn spawn(args: &[&str]) -> Child {
    sigbench()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sigbench starts")
}

pub fn signal(child: &Child, sig: i32) {
    measure::sys::os::kill(child.id() as i32, sig).unwrap();
}

/// Run a command that must succeed; its stdout, trimmed.
pub fn sh(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A loop device over a sparse file, made by the test with losetup and mkfs, so that
/// `--device` has something real to refuse or format. Torn down when dropped.
pub struct ScratchLoop {
    pub dev: String,
    image: PathBuf,
    mount: Option<PathBuf>,
}

impl ScratchLoop {
    /// A 400 MiB loop device over a sparse file, not formatted.
    fn blank(label: &str) -> ScratchLoop {
        require_root();
        let image =
            std::env::temp_dir().join(format!("sigbench-test-{}-{label}.img", std::process::id()));
        let f = std::fs::File::create(&image).unwrap();
        f.set_len(400 << 20).unwrap();
        let dev = sh("losetup", &["-f", "--show", image.to_str().unwrap()]);
        ScratchLoop {
            dev,
            image,
            mount: None,
        }
    }

    /// A 400 MiB loop device holding a btrfs labelled `label`.
    pub fn btrfs(label: &str) -> ScratchLoop {
        let s = ScratchLoop::blank(label);
        sh("mkfs.btrfs", &["-q", "-f", "-L", label, &s.dev]);
        s
    }

    /// A 400 MiB loop device holding an ext4 filesystem labelled `label` with a marker file.
    pub fn ext4(label: &str) -> ScratchLoop {
        let mut s = ScratchLoop::blank(label);
        sh("mkfs.ext4", &["-q", "-F", "-L", label, &s.dev]);
        s.mount_at_temp();
        std::fs::write(s.mount.as_ref().unwrap().join("marker"), "keep me").unwrap();
        s.unmount();
        s
    }

    pub fn mount_at_temp(&mut self) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("{}-mnt", self.image.display()));
        std::fs::create_dir_all(&dir).unwrap();
        sh("mount", &[&self.dev, dir.to_str().unwrap()]);
        self.mount = Some(dir.clone());
        dir
    }

    pub fn unmount(&mut self) {
        if let Some(m) = self.mount.take() {
            sh("umount", &[m.to_str().unwrap()]);
            let _ = std::fs::remove_dir(m);
        }
    }

    /// `TYPE LABEL` as blkid sees the device now.
    pub fn blkid(&self) -> String {
        let t = sh("blkid", &["-p", "-s", "TYPE", "-o", "value", &self.dev]);
        let l = sh("blkid", &["-p", "-s", "LABEL", "-o", "value", &self.dev]);
        format!("{t} {l}")
    }

    /// Whether the ext4 marker file is still there (the device was not reformatted).
    pub fn marker_intact(&mut self) -> bool {
        let m = self.mount_at_temp();
        let ok = std::fs::read_to_string(m.join("marker"))
            .map(|s| s == "keep me")
            .unwrap_or(false);
        self.unmount();
        ok
    }
}

impl Drop for ScratchLoop {
    fn drop(&mut self) {
        self.unmount();
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
        let _ = std::fs::remove_file(&self.image);
    }
}

/// Decode a PNG and count its distinct colours and non-white pixels.
pub fn png_stats(path: &Path) -> (usize, usize, u32, u32) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let mut colours = std::collections::HashSet::new();
    let mut inked = 0;
    for p in buf[..info.buffer_size()].chunks(px) {
        colours.insert(p[..3].to_vec());
        if p[..3].iter().any(|&c| c < 200) {
            inked += 1;
        }
    }
    (colours.len(), inked, info.width, info.height)
}

/// URLs the page itself requested, from Chromium's net log: requests whose initiator is a
/// document. (Chromium's own background requests, "not an origin", are not the page's.)
pub fn page_requests(netlog: &Path) -> Vec<String> {
    let log: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(netlog).unwrap()).unwrap();
    let start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
        .as_u64()
        .unwrap();
    log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"].as_u64() == Some(start_job))
        .filter(|e| e["params"]["url"].is_string() && e["params"]["initiator"] != "not an origin")
        .map(|e| e["params"]["url"].as_str().unwrap().to_string())
        .collect()
}

/// Render `html` in headless Chromium (offline flags) to a 1200×3000 screenshot `shot`;
/// the page's console messages and the network requests it made.
pub fn render_in_chromium(html: &Path, shot: &Path, dir: &Path) -> (Vec<String>, Vec<String>) {
    let netlog = dir.join("net.json");
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1200,3000",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--log-net-log={}", netlog.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium runs (scripts/deps.sh installs it)");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    let console = log
        .lines()
        .filter(|l| l.contains("CONSOLE"))
        .map(String::from)
        .collect();
    (console, page_requests(&netlog))
}

/// The steps of each phase of a signature file, as `syscall` names.
pub fn steps_of(path: &std::path::Path) -> Vec<(String, Vec<String>)> {
    let sig = measure::signature::Signature::from_file(path).unwrap();
    sig.phases
        .iter()
        .map(|p| {
            (
                p.name.clone(),
                p.steps.iter().map(|s| s.syscall.to_string()).collect(),
            )
        })
        .collect()
}

/// The one line of a bisect's step table marked `<- first bad` (asserts there is one).
pub fn marked_first_bad(text: &str) -> String {
    let marked: Vec<&str> = text
        .lines()
        .filter(|l| l.ends_with("<- first bad"))
        .collect();
    assert_eq!(marked.len(), 1, "{text}");
    marked[0].to_string()
}

/// A stored series with a step, for `watch --series`: one real run (tmpfs, N = 5, three
/// repetitions) written as six labels `nightly-1` … `nightly-6`, each claiming kernel
/// 6.1.0-4K, its wall times set to 1.00, 1.01 and 1.02 ms (a loaded machine's own spread
/// could hide the step), 30 % longer in the last three. Written as one export file
/// `dir/series.json`, the labels shuffled (the releases give the order).
pub fn stepped_series(dir: &Path) -> PathBuf {
    stepped_series_named(dir, "nightly-")
}

/// [`stepped_series`] with labels `PREFIX1` … `PREFIX6`.
pub fn stepped_series_named(dir: &Path, prefix: &str) -> PathBuf {
    edited_series(dir, prefix, |k, c| {
        let scale = if k > 3 { 1.3 } else { 1.0 };
        let w = c["wall_ns"].as_f64().unwrap();
        c["wall_ns"] = ((w * scale) as u64).into();
    })
}

/// An empty directory `sigbench-NAME-PID` under the temporary directory (emptied if a
/// killed run of the same process id left it).
pub fn fresh_dir(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("sigbench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// [`stepped_series_named`] imported into a new store `DIR/s.db`: the series file and the
/// store's path.
pub fn imported_series(dir: &Path, prefix: &str) -> (PathBuf, String) {
    let series = stepped_series_named(dir, prefix);
    let db = dir.join("s.db").to_str().unwrap().to_string();
    assert_ok(&run(&["import", series.to_str().unwrap(), "--db", &db]));
    (series, db)
}

/// Six labels `PREFIX1` … `PREFIX6` of one real run (see [`stepped_series`]), wall times
/// 1.00, 1.01 and 1.02 ms, each case then edited by `edit(k, case)` (k: the label's
/// number).
pub fn edited_series(
    dir: &Path,
    prefix: &str,
    edit: impl Fn(u64, &mut serde_json::Value),
) -> PathBuf {
    let one = dir.join("one.json");
    let out = run(&[
        "run",
        "--fs",
        "tmpfs",
        "-n",
        "5",
        "--dir",
        "a",
        "-r",
        "3",
        "--no-store",
        "--json",
        one.to_str().unwrap(),
    ]);
    assert_ok(&out);
    let base: serde_json::Value = serde_json::from_slice(&std::fs::read(&one).unwrap()).unwrap();
    let runs: Vec<serde_json::Value> = [4, 1, 6, 2, 5, 3]
        .iter()
        .map(|&k: &u64| {
            let mut d = base.clone();
            d["id"] = format!("series-{k}-{}", std::process::id()).into();
            d["label"] = format!("{prefix}{k}").into();
            d["host"]["kernel_release"] = format!("6.1.0-4{k}-amd64").into();
            d["started_at"] = format!("2026-11-0{k}T00:00:00Z").into();
            for (i, c) in d["cases"].as_array_mut().unwrap().iter_mut().enumerate() {
                c["wall_ns"] = (1_000_000 + 10_000 * i as u64).into();
                edit(k, c);
            }
            d
        })
        .collect();
    let file = dir.join("series.json");
    let export = serde_json::json!({"schema": "sigbench.export", "version": 1, "runs": runs});
    std::fs::write(&file, export.to_string()).unwrap();
    file
}

/// A Debian linux-image package of `series` (`6.1` or `6.12`), downloaded once into the
/// cache (apt-get download: the package registry is reachable from CI).
pub fn debian_kernel(pattern: &str) -> PathBuf {
    debian_kernel_nth(pattern, 0)
}

/// The `back`-th newest Debian linux-image package matching `pattern` (0: the newest).
pub fn debian_kernel_nth(pattern: &str, back: usize) -> PathBuf {
    let dir = Path::new("/var/cache/sigbench/debs");
    std::fs::create_dir_all(dir).unwrap();
    // Tests run in parallel: one downloads (and runs apt-get update) while the others wait,
    // so none sees a half-written package or meets apt's lock.
    let lock = std::fs::File::create(dir.join(".lock")).unwrap();
    use std::os::fd::AsFd;
    measure::sys::os::flock(lock.as_fd(), libc::LOCK_EX).unwrap();
    let search = |p: &str| -> Vec<String> {
        let out = Command::new("apt-cache")
            .args(["search", "--names-only", p])
            .output()
            .unwrap();
        let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().next().map(String::from))
            .collect();
        names.sort_by_key(|n| {
            n.split(|c: char| !c.is_ascii_digit())
                .filter_map(|x| x.parse::<u64>().ok())
                .collect::<Vec<_>>()
        });
        names
    };
    let mut names = search(pattern);
    if names.is_empty() {
        assert!(
            Command::new("apt-get")
                .args(["update", "-qq"])
                .status()
                .unwrap()
                .success()
        );
        names = search(pattern);
    }
    let name = names
        .iter()
        .rev()
        .nth(back)
        .unwrap_or_else(|| panic!("no Debian package matches {pattern} ({back} back)"))
        .clone();
    let existing = |d: &Path| {
        std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("{name}_"))
            })
    };
    if let Some(p) = existing(dir) {
        return p;
    }
    // Download beside the cache and move it in whole: an interrupted download never
    // passes for a package.
    let partial = dir.join(".partial");
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&partial).unwrap();
    let status = Command::new("apt-get")
        .args(["download", "-qq", &name])
        .current_dir(&partial)
        .status()
        .unwrap();
    assert!(status.success(), "apt-get download {name}");
    let got = existing(&partial).unwrap();
    let dest = dir.join(got.file_name().unwrap());
    std::fs::rename(&got, &dest).unwrap();
    dest
}

pub fn export_runs(out: &std::process::Output) -> Vec<serde_json::Value> {
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("--json - prints the export");
    assert_eq!(doc["schema"], "sigbench.export");
    doc["runs"].as_array().unwrap().clone()
}

/// Debian's 6.1 and 6.12 kernel packages, by name.
pub const DEB_61: &str = "^linux-image-6\\.1\\.0-[0-9]+-amd64$";
pub const DEB_612: &str = "^linux-image-6\\.12\\.[0-9]+\\+deb12-amd64$";

/// The maple tree nodes churn's create phase leaves: 6.12's stable directory offsets.
pub const MAPLE: &str = "create.slabinfo.maple_node.active_objs";

/// The plan the kernel bisects and watches measure: churn on tmpfs, N = 5000, -r 3 (the
/// create phase's maple_node row separates 6.1 from 6.12 at three repetitions; at N = 20,000
/// a guest run of two kernels took 56 CPU-s against 40: a boot is most of a run, the
/// window the rest).
pub const CHURN: &[&str] = &["churn", "--fs", "tmpfs", "-n", "5000", "-r", "3"];

/// `sigbench bisect` of `CHURN` over `kernels` on the maple_node row into `db`, with
/// `extra` options.
pub fn bisect_args<'a>(kernels: &'a [String], db: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["bisect"];
    v.extend_from_slice(CHURN);
    v.extend_from_slice(&["--metric", MAPLE, "--db", db, "--kernels"]);
    v.extend(kernels.iter().map(String::as_str));
    v.extend_from_slice(extra);
    v
}

/// The release `file` boots (from the package name: linux-image-RELEASE_…).
pub fn release_of(file: &Path) -> String {
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    name.trim_start_matches("linux-image-")
        .split('_')
        .next()
        .unwrap()
        .to_string()
}

/// `loops` processes triaging change `id` of `db` in turn `each` times, all loops at
/// once; returns the longest history any triage reported ("decision N of its history").
/// Every decision kept: it equals loops × each plus what was there.
pub fn parallel_triages(db: &str, id: &str, loops: usize, each: usize) -> usize {
    let decisions: Vec<usize> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..loops)
            .map(|l| {
                s.spawn(move || {
                    (0..each)
                        .map(|k| {
                            let note = format!("loop {l} decision {k}");
                            let out = sigbench()
                                .args(["triage", id, "acknowledged", "--note", &note, "--db", db])
                                .output()
                                .unwrap();
                            assert_ok(&out);
                            let text = stdout(&out);
                            text.split("(decision ")
                                .nth(1)
                                .and_then(|t| t.split(' ').next())
                                .and_then(|n| n.parse::<usize>().ok())
                                .unwrap_or_else(|| panic!("{text}"))
                        })
                        .max()
                        .unwrap_or(0)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    decisions.into_iter().max().unwrap_or(0)
}

/// How Chromium laid a page out ([`layout_in_chromium`]).
#[derive(Debug)]
pub struct Layout {
    /// The document's width against the window's (a wider document scrolls sideways as a
    /// whole).
    pub scroll: f64,
    pub client: f64,
    /// The smallest text of any plot as rendered (its font size times its SVG's scale).
    pub text_px: f64,
    /// The words of table cells drawn on more than one line ("labe|l", "500|0"), each as
    /// `cell text: word`.
    pub broken: Vec<String>,
}

/// How Chromium lays `page` out in a window `width` px wide ([`Layout`]). Measured by a
/// script in a copy of the page (the pages themselves carry none), read back with
/// `--dump-dom`.
pub fn layout_in_chromium(page: &Path, width: u32, dir: &Path) -> Layout {
    const PROBE: &str = r#"<script>
(function () {
  var min = 1e9;
  document.querySelectorAll('svg').forEach(function (svg) {
    var vb = svg.viewBox && svg.viewBox.baseVal;
    var w = (vb && vb.width) || svg.width.baseVal.value;
    var scale = svg.getBoundingClientRect().width / w;
    svg.querySelectorAll('text').forEach(function (t) {
      if (!t.textContent.trim()) return;
      min = Math.min(min, parseFloat(getComputedStyle(t).fontSize) * scale);
    });
  });
  // A word of a cell whose pieces sit on more than one line is broken.
  var broken = [];
  document.querySelectorAll('td, th').forEach(function (cell) {
    var walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (var n = walk.nextNode(); n; n = walk.nextNode()) {
      var re = /\S+/g, m;
      while ((m = re.exec(n.data)) !== null) {
        var r = document.createRange();
        r.setStart(n, m.index);
        r.setEnd(n, m.index + m[0].length);
        var tops = {};
        Array.prototype.forEach.call(r.getClientRects(), function (x) {
          tops[Math.round(x.top)] = 1;
        });
        if (Object.keys(tops).length > 1) {
          broken.push(cell.textContent.trim().slice(0, 60) + ': ' + m[0]);
        }
      }
    }
  });
  var out = document.createElement('pre');
  out.id = 'sigbench-layout';
  out.textContent = 'LAYOUT ' + document.documentElement.scrollWidth + ' ' +
    document.documentElement.clientWidth + ' ' + min + ' END';
  document.body.appendChild(out);
  var words = document.createElement('pre');
  words.id = 'sigbench-broken';
  words.textContent = JSON.stringify(broken);
  document.body.appendChild(words);
})();
</script>"#;
    let html = std::fs::read_to_string(page).unwrap();
    let copy = page.with_extension("layout.html");
    std::fs::write(&copy, html.replace("</body>", &format!("{PROBE}</body>"))).unwrap();
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--dump-dom",
        ])
        .arg(format!("--window-size={width},900"))
        .arg(format!(
            "--user-data-dir={}",
            dir.join("profile-layout").display()
        ))
        .arg(format!("file://{}", copy.display()))
        .output()
        .expect("chromium runs (scripts/deps.sh installs it)");
    let _ = std::fs::remove_file(&copy);
    let dom = String::from_utf8_lossy(&out.stdout);
    let missing = || -> ! {
        panic!(
            "no layout from chromium: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let line = dom
        .split("id=\"sigbench-layout\">LAYOUT ")
        .nth(1)
        .and_then(|l| l.split(" END").next())
        .unwrap_or_else(|| missing());
    let v: Vec<f64> = line.split(' ').map(|x| x.parse().unwrap()).collect();
    let words = dom
        .split("id=\"sigbench-broken\">")
        .nth(1)
        .and_then(|l| l.split("</pre>").next())
        .unwrap_or_else(|| missing())
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    Layout {
        scroll: v[0],
        client: v[1],
        text_px: v[2],
        broken: serde_json::from_str(&words).unwrap_or_else(|e| panic!("{e}: {words}")),
    }
}

/// A mail sigbench wrote (`report --format email`, `bisect --mail`, a watch alert's
/// `.eml`): every line at most 72 columns, a subject in the test robot's manner starting
/// with `subject`, the LKP table, the reproducer attached. Returns its subject (unfolded),
/// its body and the attached repro.c, decoded.
pub fn check_mail(path: &Path, subject: &str) -> (String, String, String) {
    let m = std::fs::read_to_string(path).unwrap();
    for l in m.lines() {
        assert!(
            l.chars().count() <= 72,
            "{}: a line of {} columns: {l}",
            path.display(),
            l.chars().count()
        );
    }
    // RFC 5322's From and Date come first; the subject, folded at 72 columns: its
    // continuation lines start with a space.
    assert!(m.starts_with("From: sigbench <"), "{m}");
    assert!(
        m.lines().nth(1).unwrap_or_default().starts_with("Date: "),
        "{m}"
    );
    let mut lines = m.lines().skip_while(|l| !l.starts_with("Subject: "));
    let mut first = lines.next().unwrap_or_default().to_string();
    for l in lines.take_while(|l| l.starts_with(' ')) {
        first.push_str(l);
    }
    assert!(first.starts_with(&format!("Subject: {subject}")), "{first}");
    let boundary = m
        .split_once("boundary=\"")
        .and_then(|(_, r)| r.split_once('"'))
        .map(|(b, _)| b.to_string())
        .unwrap_or_else(|| panic!("no multipart boundary: {m}"));
    let (body, rest) = m
        .split_once("filename=\"repro.c\"")
        .unwrap_or_else(|| panic!("no repro.c attached: {m}"));
    assert!(
        body.contains("base ± %stddev") && body.contains("%change"),
        "{body}"
    );
    assert!(
        body.contains("environment\n") && body.contains("to reproduce\n"),
        "{body}"
    );
    let qp = rest
        .split_once("\n\n")
        .unwrap()
        .1
        .split(&format!("\n--{boundary}"))
        .next()
        .unwrap();
    // Quoted-printable: soft breaks, then =XX escapes.
    let joined = qp.replace("=\n", "");
    let mut c = Vec::new();
    let b = joined.as_bytes();
    let mut k = 0;
    while k < b.len() {
        if b[k] == b'=' && k + 2 < b.len() + 1 {
            let hex = std::str::from_utf8(&b[k + 1..k + 3]).unwrap();
            c.push(u8::from_str_radix(hex, 16).unwrap());
            k += 3;
        } else {
            c.push(b[k]);
            k += 1;
        }
    }
    (first, body.to_string(), String::from_utf8(c).unwrap())
}

/// Compile C `source` with `cc -O2 -Wall -Wextra -Werror -pthread` in `dir`; the binary.
pub fn compile_c(dir: &Path, name: &str, source: &str) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, source).unwrap();
    let bin = dir.join(name);
    let out = Command::new("cc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-pthread", "-o"])
        .arg(&bin)
        .arg(&c)
        .output()
        .expect("cc");
    assert!(
        out.status.success(),
        "cc {}: {}",
        c.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    bin
}

/// CPU seconds so far: the whole machine's busy time (/proc/stat's first line, idle and
/// iowait left out) and this process's own with its reaped children's (/proc/self/stat:
/// utime, stime, cutime, cstime).
fn cpu_seconds() -> (f64, f64) {
    let hz = measure::sys::os::clock_ticks_per_second().unwrap_or(100) as f64;
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let ticks = measure::probe::procfs::cpu_ticks(&stat).expect("/proc/stat's cpu line");
    // user nice system idle iowait irq softirq steal: all but idle and iowait (guest time
    // is inside user).
    let busy = ticks.iter().take(8).sum::<u64>() - ticks[3] - ticks[4];
    let own = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The fields after the command's name (which may hold spaces) in parentheses.
    let after = own.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<u64> = after
        .split_whitespace()
        .skip(11)
        .take(4)
        .filter_map(|v| v.parse().ok())
        .collect();
    (busy as f64 / hz, fields.iter().sum::<u64>() as f64 / hz)
}

/// `f`'s result, the seconds it took and the share of the machine's CPUs that others (not
/// this process nor the children it reaped meanwhile) kept busy while it ran: above a
/// tenth, a host-time figure taken meanwhile is the load's as much as the code's.
pub fn with_others_share<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let (busy0, own0) = cpu_seconds();
    let started = Instant::now();
    let out = f();
    let took = started.elapsed().as_secs_f64();
    let (busy1, own1) = cpu_seconds();
    let others = ((busy1 - busy0) - (own1 - own0)).max(0.0);
    (out, took, others / (cpus * took.max(1e-3)))
}
