//! Booting a kernel in QEMU: choosing KVM or TCG (KVM only after a timed test boot has
//! shown it works here, remembered per machine), the command line, the timeouts, and
//! what came back — the console log and the results port.

use crate::interrupt;
use anyhow::{Context, Result};
use model::clock::{Clock, ClockKind};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    Kvm,
    Tcg,
}

impl Accel {
    pub fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }

    /// Emulation is slow: every timeout stretches by this much.
    pub fn slowdown(self) -> u32 {
        match self {
            Accel::Kvm => 1,
            Accel::Tcg => 10,
        }
    }
}

/// How a guest is run: the accelerator, what its clock counts, how many CPUs it has, and
/// the QEMU that runs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    pub accel: Accel,
    pub clock: ClockKind,
    pub cpus: u32,
    pub qemu: PathBuf,
}

/// Where `scripts/qemu10.sh` (which `make test` runs) unpacks bookworm-backports' QEMU 10,
/// beside the system's: an icount guest of several CPUs runs on it when the system's QEMU
/// cannot run one (7.2 hangs bringing up the second CPU).
pub const OWN_QEMU: &str = "/opt/sigbench/qemu-10/qemu-system-x86_64";

/// The QEMUs a machine can be run on, and how to ask one its version.
pub struct Qemus {
    /// `SIGBENCH_QEMU`, checked: when set, the only one.
    pub given: Option<std::result::Result<PathBuf, String>>,
    /// `qemu-system-x86_64` on the PATH, or what to install.
    pub system: std::result::Result<PathBuf, String>,
    /// Finds [`OWN_QEMU`] when it is there and root's alone, or says why it is not used:
    /// asked only for an icount guest of several CPUs the system's QEMU cannot run (the
    /// walk of its directory is no work for every other run), once.
    pub find_own: fn() -> std::result::Result<PathBuf, String>,
    own: std::cell::OnceCell<std::result::Result<PathBuf, String>>,
    /// How to ask a QEMU its version (a `--version` run): asked once per QEMU
    /// ([`Qemus::version_at`]).
    pub version: fn(&Path) -> Option<String>,
    versions: std::cell::RefCell<Vec<(PathBuf, Option<String>)>>,
}

impl Qemus {
    /// This machine's.
    pub fn here() -> Qemus {
        Qemus {
            given: given_qemu().map(|r| r.map_err(|e| format!("{e:#}"))),
            system: crate::testbed::require_tool("qemu-system-x86_64", "qemu-system-x86")
                .map_err(|e| format!("{e:#}")),
            find_own: || own_qemu(Path::new(OWN_QEMU)),
            own: std::cell::OnceCell::new(),
            version: version_of,
            versions: Default::default(),
        }
    }

    /// `qemu`'s version, asked once: choosing the default CPUs and then the machine asks
    /// the same QEMUs again.
    fn version_at(&self, qemu: &Path) -> Option<String> {
        if let Some((_, v)) = self.versions.borrow().iter().find(|(q, _)| q == qemu) {
            return v.clone();
        }
        let v = (self.version)(qemu);
        self.versions
            .borrow_mut()
            .push((qemu.to_path_buf(), v.clone()));
        v
    }

    /// [`Qemus::find_own`]'s answer, found once.
    fn own(&self) -> &std::result::Result<PathBuf, String> {
        self.own.get_or_init(self.find_own)
    }

    /// Whether the QEMU an icount guest of several CPUs would run on can run one.
    fn runs_icount_smp(&self) -> bool {
        self.choose(true)
            .is_ok_and(|q| icount_smp(self.version_at(&q).as_deref()))
    }

    /// The QEMU for a guest: the given one; else the system's, unless `icount_cpus` (an
    /// icount guest of several CPUs) needs QEMU ≥ 10 and the system's is older — then
    /// sigbench's own when it is usable (else the system's, which [`Machine::resolve`]
    /// refuses, saying why).
    fn choose(&self, icount_cpus: bool) -> Result<PathBuf> {
        if let Some(g) = &self.given {
            return g.clone().map_err(anyhow::Error::msg);
        }
        let system = self.system.clone().map_err(anyhow::Error::msg)?;
        if !icount_cpus || icount_smp(self.version_at(&system).as_deref()) {
            return Ok(system);
        }
        match self.own() {
            Ok(own) if icount_smp(self.version_at(own).as_deref()) => Ok(own.clone()),
            _ => Ok(system),
        }
    }
}

/// `dir` and everything under it, and every directory above it, owned by root and not
/// writable by group or others (links excepted: their mode means nothing): QEMU runs as
/// root, so a file another user could have replaced is never run.
fn roots_alone(path: &Path) -> std::result::Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let check = |p: &Path| -> std::result::Result<(), String> {
        let m = std::fs::symlink_metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
        if m.uid() != 0 || (!m.file_type().is_symlink() && m.mode() & 0o022 != 0) {
            return Err(format!(
                "{} is not root's alone (its owner, or group/other may write)",
                p.display()
            ));
        }
        Ok(())
    };
    for above in path.ancestors() {
        check(above)?;
    }
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        for e in std::fs::read_dir(path).map_err(|e| format!("{}: {e}", path.display()))? {
            let e = e.map_err(|e| format!("{}: {e}", path.display()))?;
            roots_alone_below(&e.path(), &check)?;
        }
    }
    Ok(())
}

fn roots_alone_below(
    p: &Path,
    check: &dyn Fn(&Path) -> std::result::Result<(), String>,
) -> std::result::Result<(), String> {
    check(p)?;
    let m = std::fs::symlink_metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
    if m.is_dir() {
        for e in std::fs::read_dir(p).map_err(|e| format!("{}: {e}", p.display()))? {
            let e = e.map_err(|e| format!("{}: {e}", p.display()))?;
            roots_alone_below(&e.path(), check)?;
        }
    }
    Ok(())
}

/// sigbench's own QEMU at `wrapper` ([`OWN_QEMU`]) when it is there and root's alone.
fn own_qemu(wrapper: &Path) -> std::result::Result<PathBuf, String> {
    if !wrapper.is_file() {
        return Err(format!(
            "{} is not there (scripts/qemu10.sh unpacks it)",
            wrapper.display()
        ));
    }
    let dir = wrapper.parent().unwrap_or(Path::new("/"));
    roots_alone(dir).map_err(|e| format!("{} is not used: {e}", wrapper.display()))?;
    Ok(wrapper.to_path_buf())
}

/// The guest CPU model under TCG. Without rdrand and rdseed the guest's random numbers
/// come from its own entropy pool, which under the icount clock is fed only by what the
/// guest did (see `Machine::args`).
pub const TCG_CPU: &str = "max,-rdrand,-rdseed";
/// The most CPUs a guest is given (`--guest-cpus`).
pub const MAX_GUEST_CPUS: u32 = 64;
/// The most CPUs a guest gets for its clients when `--guest-cpus` is not given: one a
/// client up to this many. Under icount one host thread runs every guest CPU in turn, so
/// each CPU more slows the guest down; four make contention between CPUs (a lock's line
/// moving between caches, a waiter on another CPU) without the run taking four times as long.
pub const CLIENT_CPUS: u32 = 4;

/// The CPUs a guest is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cpus {
    /// `--guest-cpus K`.
    Given(u32),
    /// Nothing given: the default for a plan whose cases run up to `clients` clients at
    /// once (1 without `--clients`) — a CPU a client, up to [`CLIENT_CPUS`], where a QEMU
    /// here runs them (under icount: QEMU ≥ 10); else 1 under icount, 2 on the host's clock.
    For { clients: u32 },
}

impl Machine {
    /// The machine the options ask for. `kvm_works` (a test boot, remembered) is asked
    /// only when neither the accelerator nor the clock decides: the icount clock needs
    /// TCG, and is TCG's default. CPUs as [`Cpus`] says.
    pub fn resolve(
        accel: Option<Accel>,
        clock: Option<ClockKind>,
        cpus: Cpus,
        kvm_works: impl FnOnce() -> Result<bool>,
    ) -> Result<Machine> {
        Machine::resolve_on(accel, clock, cpus, kvm_works, &Qemus::here())
    }

    /// [`Machine::resolve`] among `qemus`.
    pub fn resolve_on(
        accel: Option<Accel>,
        clock: Option<ClockKind>,
        cpus: Cpus,
        kvm_works: impl FnOnce() -> Result<bool>,
        qemus: &Qemus,
    ) -> Result<Machine> {
        let accel = match (accel, clock) {
            (Some(Accel::Kvm), Some(ClockKind::Icount)) => anyhow::bail!(
                "--clock icount needs --accel tcg: KVM runs the guest on the real CPU, which QEMU cannot count instructions of"
            ),
            (Some(a), _) => a,
            (None, Some(ClockKind::Icount)) => Accel::Tcg,
            (None, _) => {
                if kvm_works()? {
                    Accel::Kvm
                } else {
                    Accel::Tcg
                }
            }
        };
        let clock = match (accel, clock) {
            (_, Some(c)) => c,
            (Accel::Tcg, None) => ClockKind::Icount,
            (Accel::Kvm, None) => ClockKind::Host,
        };
        let cpus = match cpus {
            Cpus::Given(c) => c,
            Cpus::For { clients } => {
                let want = clients.clamp(1, CLIENT_CPUS);
                match clock {
                    ClockKind::Icount if want > 1 && qemus.runs_icount_smp() => want,
                    ClockKind::Icount => 1,
                    ClockKind::Host => want.max(2),
                }
            }
        };
        if cpus == 0 || cpus > MAX_GUEST_CPUS {
            anyhow::bail!("--guest-cpus {cpus}: give 1 to {MAX_GUEST_CPUS} CPUs");
        }
        let icount_cpus = clock == ClockKind::Icount && cpus > 1;
        let qemu = qemus.choose(icount_cpus)?;
        let version = if icount_cpus {
            qemus.version_at(&qemu)
        } else {
            None
        };
        if icount_cpus && version.is_none() {
            anyhow::bail!(
                "{} --version says no version: it is not a QEMU this sigbench can run (SIGBENCH_QEMU chooses another)",
                qemu.display()
            );
        }
        if icount_cpus && !icount_smp(version.as_deref()) {
            // QEMU 7.2 runs every CPU of an icount guest on one thread in turn, and a CPU
            // spinning on another (bringing up CPUs, IPIs, TLB shootdowns) keeps the thread
            // for its whole time slice: Debian's 6.1 with 2 CPUs never got past "Bringing
            // up secondary CPUs" in 40 s, while one CPU booted in 2 s of guest time.
            // QEMU 10 (bookworm-backports) brings the second CPU up in 0.27 s of guest time.
            let own = match (&qemus.given, qemus.own()) {
                (Some(_), _) => "SIGBENCH_QEMU chose it".to_string(),
                (None, Ok(p)) => format!("{} is no QEMU 10 either", p.display()),
                (None, Err(why)) => why.clone(),
            };
            anyhow::bail!(
                "--guest-cpus {cpus} with the icount clock: this QEMU ({}, {}) hangs bringing up the second CPU of an icount guest; QEMU 10 does not ({own}; scripts/qemu10.sh unpacks bookworm-backports' at {OWN_QEMU}, which sigbench then uses for such guests), or keep one CPU (clients then run interleaved on it, deterministically), or give --clock host for {cpus} CPUs on multi-threaded TCG (real parallelism, emulated real time)",
                qemu.display(),
                version.unwrap_or_else(|| "unknown version".into())
            );
        }
        Ok(Machine {
            accel,
            clock,
            cpus,
            qemu,
        })
    }

    /// Times are emulated: not the hardware's (plain TCG), or not time at all (icount).
    pub fn emulated(&self) -> bool {
        self.accel == Accel::Tcg
    }

    /// The guest CPU model QEMU is given.
    pub fn cpu_model(&self) -> &'static str {
        match self.accel {
            Accel::Kvm => "host",
            Accel::Tcg => TCG_CPU,
        }
    }

    /// QEMU's arguments for the accelerator, clock and CPUs.
    fn args(&self) -> Vec<String> {
        let mut v: Vec<String> = match (self.accel, self.clock) {
            (Accel::Kvm, _) => vec!["-accel".into(), "kvm".into()],
            // Each guest CPU on a host thread of its own: real parallelism (emulated time).
            (Accel::Tcg, ClockKind::Host) => vec!["-accel".into(), "tcg,thread=multi".into()],
            // One thread runs every guest CPU, and the guest's clock advances by one
            // nanosecond per instruction (sleep=off: an idle guest jumps to its next
            // timer instead of waiting in real time), so nothing of the host's time
            // reaches the guest: not through its clocks, not through its timers. The
            // real-time clock starts at a fixed date and follows the guest's clock.
            (Accel::Tcg, ClockKind::Icount) => vec![
                "-accel".into(),
                "tcg,thread=single".into(),
                "-icount".into(),
                format!("shift={},sleep=off", model::clock::ICOUNT_SHIFT),
                "-rtc".into(),
                "base=2020-01-01T00:00:00,clock=vm".into(),
            ],
        };
        v.extend([
            "-cpu".into(),
            self.cpu_model().into(),
            "-smp".into(),
            self.cpus.to_string(),
        ]);
        v
    }

    /// The time base of the runs this machine measures (`model::clock`).
    pub fn timebase(&self) -> model::clock::TimeBase {
        use model::clock::TimeBase;
        match (self.accel, self.clock) {
            (Accel::Tcg, ClockKind::Icount) => TimeBase::Icount {
                shift: model::clock::ICOUNT_SHIFT,
                cpu: self.cpu_model().to_string(),
            },
            (Accel::Tcg, ClockKind::Host) => TimeBase::Emulated,
            (Accel::Kvm, _) => TimeBase::Hardware,
        }
    }

    /// What the run document records of this machine's clock.
    pub fn clock_record(&self) -> Clock {
        let icount = self.clock == ClockKind::Icount;
        Clock {
            kind: self.clock,
            shift: icount.then_some(model::clock::ICOUNT_SHIFT),
            qemu: version_of(&self.qemu),
            cpu: Some(self.cpu_model().to_string()),
            cost_model: None,
            boot: None,
        }
    }
}

/// Whether QEMU `version` runs an icount guest of several CPUs: 7.2 hangs bringing up
/// the second (above); 10.0 does not (docs/statistics.md, "Several guest CPUs").
pub fn icount_smp(version: Option<&str>) -> bool {
    version
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse::<u32>().ok())
        .is_some_and(|major| major >= 10)
}

/// The version number of the QEMU guests run on when nothing asks for several icount CPUs
/// (`doctor`).
pub fn qemu_version() -> Option<String> {
    version_of(&qemu().ok()?)
}

/// `QEMU --version`'s version number.
pub fn version_of(qemu: &Path) -> Option<String> {
    let out = Command::new(qemu).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next()?;
    first
        .split_whitespace()
        .skip_while(|w| *w != "version")
        .nth(1)
        .map(String::from)
}

/// The console line the guest prints once it is up and about to run the plan.
pub const READY: &str = "sigbench-guest: ready";
/// The console line the guest prints last, with its exit code.
pub const EXIT: &str = "sigbench-guest: exit ";

/// What the last KVM probe found on this machine.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KvmProbe {
    pub machine: String,
    pub works: bool,
    pub detail: String,
    pub probed_at: String,
}

/// Identity of this machine for the probe cache: a KVM verdict from another host (or
/// another host kernel) does not apply.
pub fn machine_identity() -> String {
    let h = crate::host::current();
    format!("{} {} {}", h.hostname, h.kernel_release, h.cpu_model)
}

pub fn probe_file(cache: &Path) -> PathBuf {
    cache.join("kvm-probe.json")
}

/// The remembered verdict, if it was made on this machine.
pub fn cached_probe(cache: &Path) -> Option<KvmProbe> {
    let p: KvmProbe =
        serde_json::from_str(&std::fs::read_to_string(probe_file(cache)).ok()?).ok()?;
    (p.machine == machine_identity()).then_some(p)
}

/// The QEMU guests run on: `SIGBENCH_QEMU` when set (a QEMU of one's own, such as
/// bookworm-backports' 10.0 that `scripts/qemu10.sh` unpacks beside the system's: icount
/// guests of several CPUs need it), else `qemu-system-x86_64` on the PATH.
pub fn qemu() -> Result<PathBuf> {
    match given_qemu() {
        Some(given) => given,
        None => crate::testbed::require_tool("qemu-system-x86_64", "qemu-system-x86"),
    }
}

/// `SIGBENCH_QEMU`, checked, when it is set.
fn given_qemu() -> Option<Result<PathBuf>> {
    let given = PathBuf::from(std::env::var_os("SIGBENCH_QEMU").filter(|q| !q.is_empty())?);
    Some(checked_given(given))
}

fn checked_given(given: PathBuf) -> Result<PathBuf> {
    // The program that is checked is the one that runs: a name without a slash is looked
    // up on the PATH (as exec would), a path made absolute here.
    let q = if given.components().count() == 1 && !given.is_absolute() {
        crate::testbed::find_tool(&given.to_string_lossy())
    } else {
        std::path::absolute(&given).ok()
    };
    use std::os::unix::fs::PermissionsExt;
    match q.as_ref().and_then(|q| std::fs::metadata(q).ok()) {
        Some(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => Ok(q.expect("found")),
        _ => anyhow::bail!(
            "SIGBENCH_QEMU={}: not an executable file{} (unset it to use qemu-system-x86_64 from the PATH)",
            given.display(),
            if given.components().count() == 1 {
                " on the PATH"
            } else {
                ""
            }
        ),
    }
}

/// A QEMU run in progress, with its files.
pub struct Boot {
    child: Child,
    pub console: PathBuf,
    pub results: PathBuf,
    started: Instant,
}

/// How a boot ended.
#[derive(Debug)]
pub enum Outcome {
    /// The guest powered off after printing its exit code.
    Finished { exit: i32 },
    /// QEMU ended without the guest's exit line (panic, failed boot, QEMU error).
    Died { qemu_status: String, stderr: String },
    /// Not ready within the boot timeout, or not finished within the run timeout.
    TimedOut {
        phase: &'static str,
        after: Duration,
    },
}

/// How long QEMU may keep running after the guest printed its exit line before it is
/// stopped (a guest whose kernel halts instead of resetting never ends QEMU itself).
const EXIT_GRACE: Duration = Duration::from_secs(3);

/// The guest kernel's command line. `cryptomgr.notests`: the kernel tests every crypto
/// algorithm a module registers (crc32c, sha256, xxhash, zstd… for btrfs) in a background
/// thread that, emulated, keeps the CPU busy for seconds after boot — on Debian 6.12 it
/// made churn's first repetition 26 % slower and the next ones vary by 50 %.
/// `SIGBENCH_GUEST_END=halt` in the environment makes the guest halt instead of resetting
/// at the end (a test hook: see `guest::init`).
/// The guest kernel's command line; with a state, its seed (`plan::states::cmdline`).
fn cmdline(state: Option<u64>) -> String {
    let mut c = String::from("console=ttyS0 panic=-1 loglevel=4 rdinit=/init cryptomgr.notests");
    if let Some(s) = state {
        c.push(' ');
        c.push_str(&crate::plan::states::cmdline(s));
    }
    if std::env::var("SIGBENCH_GUEST_END").as_deref() == Ok("halt") {
        c.push_str(" sigbench.end=halt");
    }
    c
}

fn exit_code(console: &str) -> Option<i32> {
    console
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix(EXIT))
        .map(|code| code.trim().parse().unwrap_or(1))
}

/// Start QEMU: `image` with the concatenated `initrd`, the console (the first serial port)
/// on a file and the results on the second serial port, another file. Not virtio-serial:
/// measured under the icount clock, a virtio-serial device alone (bound, never written)
/// made two boots of one initramfs differ from their first repetition on, while two
/// emulated UARTs gave the same times to the nanosecond — QEMU serves virtio's control
/// queue from its main loop, whose timing the guest then sees. `inherit`: a descriptor
/// QEMU keeps open across its exec (the cost model's plugin, which `extra` names as
/// `/proc/self/fd/N`). `state`: the seed of the state the guest boots in.
#[allow(clippy::too_many_arguments)]
pub fn start(
    image: &Path,
    initrd: &Path,
    machine: &Machine,
    mem_mib: u32,
    workdir: &Path,
    extra: &[String],
    inherit: Option<std::os::fd::BorrowedFd<'_>>,
    state: Option<u64>,
) -> Result<Boot> {
    let console = workdir.join("console.log");
    let results = workdir.join("results.json");
    let _ = std::fs::remove_file(&console);
    let _ = std::fs::remove_file(&results);
    let mut cmd = Command::new(&machine.qemu);
    // A sigbench killed with SIGKILL takes its QEMU with it.
    crate::sys::os::die_with_parent(&mut cmd);
    if let Some(fd) = inherit {
        crate::sys::os::keep_across_exec(&mut cmd, fd);
    }
    let child = cmd
        .args(machine.args())
        .args(["-m", &mem_mib.to_string()])
        .args([
            "-nodefaults",
            "-no-reboot",
            "-display",
            "none",
            "-monitor",
            "none",
        ])
        .arg("-kernel")
        .arg(image)
        .arg("-initrd")
        .arg(initrd)
        .arg("-append")
        .arg(cmdline(state))
        .arg("-serial")
        .arg(format!("file:{}", console.display()))
        .arg("-serial")
        .arg(format!("file:{}", results.display()))
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start qemu-system-x86_64")?;
    Ok(Boot {
        child,
        console,
        results,
        started: Instant::now(),
    })
}

impl Boot {
    pub fn console_text(&self) -> String {
        std::fs::read(&self.console)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// Wait for the guest: ready within `boot`, finished within `run` after that.
    /// SIGINT/SIGTERM on the host stop the guest too.
    pub fn wait(&mut self, boot: Duration, run: Duration) -> Result<Outcome> {
        let mut ready_at: Option<Instant> = None;
        let mut exited_at: Option<(Instant, i32)> = None;
        loop {
            if let Some(status) = self.child.try_wait()? {
                if let Some(exit) = exit_code(&self.console_text()) {
                    return Ok(Outcome::Finished { exit });
                }
                let mut stderr = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    let _ = e.read_to_string(&mut stderr);
                }
                return Ok(Outcome::Died {
                    qemu_status: status.to_string(),
                    stderr,
                });
            }
            let console = self.console_text();
            if ready_at.is_none() && console.contains(READY) {
                ready_at = Some(Instant::now());
            }
            // The guest said how it ended: its results are complete. Give QEMU a moment to
            // end by itself, then end it.
            if exited_at.is_none()
                && let Some(exit) = exit_code(&console)
            {
                exited_at = Some((Instant::now(), exit));
            }
            if let Some((at, exit)) = exited_at
                && at.elapsed() > EXIT_GRACE
            {
                self.kill();
                return Ok(Outcome::Finished { exit });
            }
            let timed_out = match ready_at {
                None if self.started.elapsed() > boot => Some(("boot", self.started.elapsed())),
                Some(r) if r.elapsed() > run => Some(("run", self.started.elapsed())),
                _ => None,
            };
            if let Some((phase, after)) = timed_out {
                self.kill();
                return Ok(Outcome::TimedOut { phase, after });
            }
            if let Err(e) = interrupt::check() {
                self.kill();
                return Err(e.into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Boot {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
    }
}

/// The last `n` non-empty console lines, for error messages.
pub fn last_lines(console: &str, n: usize) -> String {
    let lines: Vec<&str> = console
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let start = lines.len().saturating_sub(n);
    lines[start..].join(" | ")
}

/// Whether KVM guests run here: only if /dev/kvm is there and a timed test boot of
/// `image` + `initrd` (which powers off at once) reached the guest's ready line.
pub fn kvm_works(image: &Path, initrd: &Path, cache: &Path, workdir: &Path) -> Result<bool> {
    if let Some(p) = cached_probe(cache) {
        return Ok(p.works);
    }
    let (works, detail) = if !Path::new("/dev/kvm").exists() {
        (false, "no /dev/kvm".to_string())
    } else {
        let dir = workdir.join("kvm-probe");
        std::fs::create_dir_all(&dir)?;
        let kvm = Machine {
            accel: Accel::Kvm,
            clock: ClockKind::Host,
            cpus: 1,
            qemu: qemu()?,
        };
        let mut b = start(image, initrd, &kvm, 512, &dir, &[], None, None)?;
        let limit = Duration::from_secs(10);
        let start = Instant::now();
        let mut seen = false;
        let mut ended = None;
        while start.elapsed() < limit {
            if b.console_text().contains(READY) {
                seen = true;
                break;
            }
            if let Ok(Some(status)) = b.child.try_wait() {
                ended = Some(status);
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let took = start.elapsed();
        b.kill();
        // QEMU that could not run at all says nothing about KVM: an error, not a verdict
        // remembered for this machine.
        if let (false, Some(status)) = (seen, ended) {
            let mut said = String::new();
            if let Some(mut e) = b.child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut said);
            }
            let line = crate::child::first_line(&said);
            if !said.to_lowercase().contains("kvm") {
                anyhow::bail!(
                    "QEMU ({}) could not start a test guest ({status}{}): not a KVM verdict, nothing remembered",
                    kvm.qemu.display(),
                    if line.is_empty() {
                        String::new()
                    } else {
                        format!(": {line}")
                    }
                );
            }
        }
        if seen {
            (
                true,
                format!("a test guest booted in {:.1} s", took.as_secs_f64()),
            )
        } else {
            (
                false,
                format!(
                    "a test guest did not boot within {} s (KVM guests hang here)",
                    limit.as_secs()
                ),
            )
        }
    };
    let p = KvmProbe {
        machine: machine_identity(),
        works,
        detail,
        probed_at: model::stamp::now_rfc3339(),
    };
    std::fs::create_dir_all(cache)?;
    std::fs::write(probe_file(cache), serde_json::to_string_pretty(&p)?)?;
    model::diag::warn(format!(
        "KVM {}: {}; using {}",
        if works { "works" } else { "is not usable" },
        p.detail,
        if works {
            "KVM"
        } else {
            "TCG (emulation; its default clock counts instructions: --clock)"
        }
    ));
    Ok(works)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fake QEMUs' versions, by name.
    fn version(p: &Path) -> Option<String> {
        Some(
            if p.ends_with("ten/qemu") {
                "10.0.2"
            } else {
                "7.2.22"
            }
            .into(),
        )
    }

    /// QEMU 7.2 on the PATH, sigbench's own QEMU 10 when `own`: versions by name.
    fn qemus(own: bool) -> Qemus {
        Qemus {
            given: None,
            system: Ok(PathBuf::from("/usr/bin/qemu")),
            find_own: if own {
                || Ok(PathBuf::from("/opt/ten/qemu"))
            } else {
                || Err("/opt/ten/qemu is not there".into())
            },
            own: std::cell::OnceCell::new(),
            version,
            versions: Default::default(),
        }
    }

    #[test]
    fn each_qemu_is_asked_its_version_once_a_resolution() {
        static ASKED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
        fn counting(p: &Path) -> Option<String> {
            ASKED.lock().unwrap().push(p.to_path_buf());
            version(p)
        }
        let mut q = qemus(true);
        q.version = counting;
        let m = Machine::resolve_on(
            None,
            Some(ClockKind::Icount),
            Cpus::For { clients: 4 },
            || Ok(false),
            &q,
        )
        .unwrap();
        assert_eq!((m.cpus, m.qemu.as_path()), (4, Path::new("/opt/ten/qemu")));
        // The default's choice and the machine's asked the system's and sigbench's own
        // QEMU: each once (six `--version` runs before).
        let asked = ASKED.lock().unwrap().clone();
        assert_eq!(
            asked,
            [
                PathBuf::from("/usr/bin/qemu"),
                PathBuf::from("/opt/ten/qemu")
            ]
        );
    }

    fn resolve(a: Option<Accel>, c: Option<ClockKind>, kvm: bool) -> Result<Machine> {
        Machine::resolve_on(a, c, Cpus::For { clients: 1 }, || Ok(kvm), &qemus(false))
    }

    #[test]
    fn several_icount_cpus_run_on_sigbenchs_own_qemu_10_and_nothing_else_does() {
        let two = |own: bool| {
            Machine::resolve_on(
                None,
                Some(ClockKind::Icount),
                Cpus::Given(2),
                || Ok(false),
                &qemus(own),
            )
        };
        assert_eq!(two(true).unwrap().qemu, Path::new("/opt/ten/qemu"));
        let e = two(false).unwrap_err().to_string();
        assert!(
            e.contains("/usr/bin/qemu, 7.2.22") && e.contains("/opt/ten/qemu is not there"),
            "{e}"
        );
        // One CPU, or the host's clock: the system's QEMU, as before.
        for (clock, cpus) in [(ClockKind::Icount, 1), (ClockKind::Host, 2)] {
            let m = Machine::resolve_on(
                None,
                Some(clock),
                Cpus::Given(cpus),
                || Ok(false),
                &qemus(true),
            );
            assert_eq!(m.unwrap().qemu, Path::new("/usr/bin/qemu"));
        }
        // SIGBENCH_QEMU is the only one when set.
        let mut given = qemus(true);
        given.given = Some(Ok(PathBuf::from("/usr/bin/qemu")));
        let e = Machine::resolve_on(
            None,
            Some(ClockKind::Icount),
            Cpus::Given(2),
            || Ok(false),
            &given,
        )
        .unwrap_err();
        assert!(e.to_string().contains("SIGBENCH_QEMU chose it"), "{e}");
    }

    #[test]
    fn clients_get_a_cpu_each_up_to_four_where_a_qemu_runs_them() {
        let cpus = |clients: u32, clock: ClockKind, own: bool| {
            Machine::resolve_on(
                None,
                Some(clock),
                Cpus::For { clients },
                || Ok(false),
                &qemus(own),
            )
            .map(|m| (m.cpus, m.qemu))
            .unwrap()
        };
        let ten = PathBuf::from("/opt/ten/qemu");
        let system = PathBuf::from("/usr/bin/qemu");
        assert_eq!(cpus(1, ClockKind::Icount, true), (1, system.clone()));
        assert_eq!(cpus(3, ClockKind::Icount, true), (3, ten.clone()));
        assert_eq!(cpus(12, ClockKind::Icount, true), (CLIENT_CPUS, ten));
        // No QEMU here runs several icount CPUs: one, on the system's (never a refusal).
        assert_eq!(cpus(12, ClockKind::Icount, false), (1, system.clone()));
        // The host's clock: at least the two it always had.
        assert_eq!(cpus(1, ClockKind::Host, false), (2, system.clone()));
        assert_eq!(cpus(12, ClockKind::Host, false), (CLIENT_CPUS, system));
        // Given, the number is the user's.
        let m = Machine::resolve_on(
            None,
            Some(ClockKind::Icount),
            Cpus::Given(1),
            || Ok(false),
            &qemus(true),
        );
        assert_eq!(m.unwrap().cpus, 1);
    }

    #[test]
    fn an_own_qemu_another_user_could_have_replaced_is_not_run() {
        // Under /tmp (group and others may write there): refused, naming why.
        let dir = std::env::temp_dir().join(format!("sigbench-own-qemu-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let wrapper = dir.join("qemu-system-x86_64");
        std::fs::write(&wrapper, "#!/bin/sh\n").unwrap();
        let e = own_qemu(&wrapper).unwrap_err();
        assert!(e.contains("is not root's alone"), "{e}");
        assert!(
            own_qemu(&dir.join("absent"))
                .unwrap_err()
                .contains("is not there")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn icount_is_tcgs_default_clock_and_impossible_with_kvm() {
        let m = resolve(None, None, false).unwrap();
        assert_eq!(
            (m.accel, m.clock, m.cpus),
            (Accel::Tcg, ClockKind::Icount, 1)
        );
        let m = resolve(None, None, true).unwrap();
        assert_eq!((m.accel, m.clock, m.cpus), (Accel::Kvm, ClockKind::Host, 2));
        let m = resolve(Some(Accel::Tcg), Some(ClockKind::Host), true).unwrap();
        assert_eq!((m.accel, m.clock, m.cpus), (Accel::Tcg, ClockKind::Host, 2));
        // An explicit icount never asks whether KVM works.
        let m = Machine::resolve_on(
            None,
            Some(ClockKind::Icount),
            Cpus::Given(1),
            || panic!("KVM probed"),
            &qemus(false),
        )
        .unwrap();
        assert_eq!((m.accel, m.cpus), (Accel::Tcg, 1));
        // Several CPUs under icount hang the boot: refused, pointing at --clock host.
        for clock in [None, Some(ClockKind::Icount)] {
            let e = Machine::resolve_on(None, clock, Cpus::Given(2), || Ok(false), &qemus(false))
                .unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("--guest-cpus 2 with the icount clock")
                    && e.to_string().contains("--clock host"),
                "{e}"
            );
        }
        let m = Machine::resolve_on(
            None,
            Some(ClockKind::Host),
            Cpus::Given(4),
            || Ok(false),
            &qemus(false),
        )
        .unwrap();
        assert_eq!((m.accel, m.clock, m.cpus), (Accel::Tcg, ClockKind::Host, 4));
        assert!(m.args().join(" ").contains("-accel tcg,thread=multi"));
        assert!(
            Machine::resolve_on(
                None,
                Some(ClockKind::Host),
                Cpus::Given(4294967295),
                || Ok(false),
                &qemus(false)
            )
            .is_err()
        );
        let e = resolve(Some(Accel::Kvm), Some(ClockKind::Icount), true).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--clock icount needs --accel tcg"),
            "{e}"
        );
        assert!(
            Machine::resolve_on(None, None, Cpus::Given(0), || Ok(false), &qemus(false)).is_err()
        );
    }

    #[test]
    fn the_icount_machine_runs_one_thread_on_the_instruction_counter() {
        let m = resolve(None, None, false).unwrap();
        let a = m.args().join(" ");
        assert!(
            a.contains("-accel tcg,thread=single -icount shift=0,sleep=off"),
            "{a}"
        );
        assert!(a.contains("-rtc base=2020-01-01T00:00:00,clock=vm"), "{a}");
        assert!(a.ends_with("-smp 1"), "{a}");
        let c = m.clock_record();
        assert_eq!((c.kind, c.shift), (ClockKind::Icount, Some(0)));
        let m = resolve(Some(Accel::Tcg), Some(ClockKind::Host), false).unwrap();
        assert!(!m.args().join(" ").contains("icount"));
        assert_eq!(m.clock_record().shift, None);
    }
}
