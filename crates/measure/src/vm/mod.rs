//! Running a plan on another kernel: unpack the kernel (`kernel`), build its initramfs
//! (`initramfs`, `cpio`), boot it in QEMU (`qemu`) where sigbench runs as PID 1
//! (`guest`), and bring the run document back over the guest's second serial port.

pub mod boots;
pub mod cost;
pub mod cpio;
pub mod guest;
pub mod guests;
pub mod initramfs;
pub mod kernel;
pub mod package;
pub mod qemu;
pub mod unpacked;

use crate::testbed::Fs;
use anyhow::{Context, Result, bail};
use kernel::Kernel;
use model::clock::{Boot, ClockKind};
use model::results::{RunDocument, parse_documents};
use qemu::{Accel, Machine, Outcome};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How guests are to run, as asked (`--cache-dir`, `--accel`, `--clock`, `--guest-mem`,
/// `--guest-cpus`, `--guest-timeout`, `--no-cost-model`, `--jobs`): data, part of a run
/// request a Slurm task receives whole; [`VmOptions::new`] checks it and resolves the
/// defaults, on whichever machine boots the guests.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestOptions {
    /// Where unpacked kernels, initramfs images and the KVM verdict are kept.
    pub cache: PathBuf,
    pub accel: Option<Accel>,
    pub clock: Option<ClockKind>,
    /// Guest memory in MiB (default [`DEFAULT_GUEST_MEM_MIB`]).
    pub mem_mib: Option<u32>,
    pub cpus: Option<u32>,
    /// Seconds the plan may run once the guest is up.
    pub timeout_s: Option<u64>,
    /// `--no-cost-model`: leave the cost model out.
    pub no_cost_model: bool,
    /// The cost model left out of every run where the request was made
    /// (`SIGBENCH_COST_MODEL=off`, as the test suite sets it): not an option given, so a
    /// run on this machine's kernel does not refuse it.
    pub cost_model_off: bool,
    /// Guests at once (`guests::how_many` resolves the default).
    pub jobs: Option<usize>,
}

impl GuestOptions {
    /// The first option given that only a guest has a use for (its flag), so a run on this
    /// machine's kernel refuses it rather than ignore it.
    pub fn first_given(&self) -> Option<&'static str> {
        [
            ("--clock", self.clock.is_some()),
            ("--accel", self.accel.is_some()),
            ("--guest-mem", self.mem_mib.is_some()),
            ("--guest-cpus", self.cpus.is_some()),
            ("--guest-timeout", self.timeout_s.is_some()),
            ("--no-cost-model", self.no_cost_model),
            ("--jobs", self.jobs.is_some()),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag))
    }
}

/// A guest's memory unless asked otherwise.
pub const DEFAULT_GUEST_MEM_MIB: u32 = 2048;
/// The least memory a guest boots in: the initramfs alone (this binary, mkfs and its
/// libraries, the modules) is ~130 MB.
const MIN_GUEST_MEM_MIB: u32 = 512;
/// The shortest and longest time a plan may run in a guest, in seconds.
const GUEST_TIMEOUT_S: std::ops::RangeInclusive<u64> = 10..=7 * 24 * 3600;

/// How guests are run: [`GuestOptions`] checked, with the defaults resolved.
#[derive(Clone, Debug)]
pub struct VmOptions {
    pub cache: PathBuf,
    /// Force an accelerator; otherwise KVM if a test boot showed it works here, else TCG.
    pub accel: Option<Accel>,
    /// Force a clock; otherwise icount under TCG, the host's under KVM.
    pub clock: Option<ClockKind>,
    pub mem_mib: u32,
    /// Guest CPUs (`--guest-cpus`); otherwise as [`qemu::Cpus::For`] says for `clients`.
    pub cpus: Option<u32>,
    /// The most clients a case of the plan runs at once (1 without `--clients`).
    pub clients: u32,
    /// How long the plan may run once the guest is up (stretched under TCG when not given).
    pub timeout: Option<Duration>,
    /// Count every timed window with the cost model (`cost`) under the icount clock.
    pub cost_model: bool,
}

impl VmOptions {
    /// The one way to make them: `asked`'s values checked before QEMU sees them (0, 1 and
    /// 4294967295 went straight to it), the cache a private directory, the machine they
    /// ask for one that exists here (icount with KVM is refused before anything runs);
    /// `clients` is the most clients a case of the plan runs at once.
    pub fn new(asked: &GuestOptions, clients: u32) -> Result<VmOptions> {
        if let Some(m) = asked.mem_mib {
            let host_mib = crate::host::mem_total_kib() / 1024;
            if m < MIN_GUEST_MEM_MIB || (host_mib > 0 && u64::from(m) > host_mib) {
                bail!(
                    "--guest-mem {m}: give MiB from {MIN_GUEST_MEM_MIB} to the host's {host_mib}"
                );
            }
        }
        if let Some(t) = asked.timeout_s
            && !GUEST_TIMEOUT_S.contains(&t)
        {
            bail!(
                "--guest-timeout {t}: give seconds from {} to {}",
                GUEST_TIMEOUT_S.start(),
                GUEST_TIMEOUT_S.end()
            );
        }
        crate::host::private_dir(&asked.cache, "--cache-dir")?;
        let opts = VmOptions {
            cache: asked.cache.clone(),
            accel: asked.accel,
            clock: asked.clock,
            mem_mib: asked.mem_mib.unwrap_or(DEFAULT_GUEST_MEM_MIB),
            cpus: asked.cpus,
            clients,
            timeout: asked.timeout_s.map(Duration::from_secs),
            cost_model: !(asked.no_cost_model || asked.cost_model_off),
        };
        // `--guest-cpus` is checked here, by the machine it asks for.
        let machine = opts.expected_machine()?;
        if opts.cpus.is_none() && opts.clients > 1 && machine.cpus == 1 {
            model::say!(
                "sigbench: note: the {} clients run interleaved on one guest CPU: no QEMU here runs an icount guest of several (scripts/qemu10.sh installs one; --guest-cpus 1 says this is meant)",
                opts.clients
            );
        }
        Ok(opts)
    }

    /// The CPUs asked for: `--guest-cpus`, else the default for the plan's clients.
    pub fn asked_cpus(&self) -> qemu::Cpus {
        match self.cpus {
            Some(c) => qemu::Cpus::Given(c),
            None => qemu::Cpus::For {
                clients: self.clients,
            },
        }
    }

    /// The machine guests will run on, as far as it is known before a boot: KVM counts as
    /// working only if a test boot here said so (`qemu::cached_probe`).
    pub fn expected_machine(&self) -> Result<Machine> {
        Machine::resolve(self.accel, self.clock, self.asked_cpus(), || {
            Ok(qemu::cached_probe(&self.cache).is_some_and(|p| p.works))
        })
    }
}

/// The document a guest sent back, and how it ran. `error` is set when the guest did not
/// finish cleanly; `doc` still holds whatever cases it completed.
pub struct GuestRun {
    pub doc: Option<RunDocument>,
    pub machine: Machine,
    pub error: Option<anyhow::Error>,
}

/// Hold the cache's lock while unpacking kernels or building initramfs images in it, so
/// two sigbench processes never build the same entry at once.
pub fn cache_lock(cache: &std::path::Path) -> Result<std::fs::File> {
    crate::host::private_dir(cache, "the cache")?;
    std::fs::create_dir_all(cache)
        .with_context(|| format!("cannot create the cache {}", cache.display()))?;
    crate::testbed::workspace::lock_file(&cache.join("lock"), "sigbench preparing a kernel")
}

/// Make ready each guest kernel of a command line — unpacked, and its initramfs for `fs`
/// built (both cached, so the boots find them) — so that a kernel that cannot run the plan
/// (a package that is not one kernel, an image without its modules, no module for the
/// filesystem) is a one-line error before anything boots.
pub fn preflight(kernels: &[(String, kernel::KernelSpec)], fs: Fs, opts: &VmOptions) -> Result<()> {
    for (name, spec) in kernels {
        if *spec == kernel::KernelSpec::Host {
            continue;
        }
        let k = kernel::prepare(spec, name, &opts.cache)?;
        let _lock = cache_lock(&opts.cache)?;
        initramfs::base(&k, fs, &opts.cache)?;
    }
    Ok(())
}

/// Run `args` (the guest's `sigbench run` arguments) on `kernel`.
pub fn run(
    kernel: &Kernel,
    fs: Fs,
    guest: &boots::GuestPlan,
    opts: &VmOptions,
) -> Result<GuestRun> {
    with_guest(kernel, fs, opts, |base, workdir, machine| {
        run_in(kernel, base, guest, opts, workdir, machine)
    })
}

/// `sigbench calibrate` in a guest of `kernel` under the cost model: what its guest sent
/// (`calibrate::GuestStrides`, JSON) and the plugin's records.
pub fn calibrate(kernel: &Kernel, opts: &VmOptions) -> Result<(String, String)> {
    let guest = boots::GuestPlan {
        work: boots::GuestWork::Calibrate,
        signature: None,
        loadfile: None,
        state: None,
    };
    with_guest(kernel, Fs::Tmpfs, opts, |base, workdir, machine| {
        if machine.clock != ClockKind::Icount {
            bail!("calibrate runs its guest under the icount clock (--clock icount, TCG)");
        }
        let b = boot_guest(kernel, base, &guest, opts, workdir, &machine)?;
        match (b.outcome, b.results, b.records) {
            (Outcome::Finished { exit: 0 }, Some(r), Some(rec)) => Ok((r, rec)),
            (outcome, _, _) => bail!(
                "kernel {}: the calibration guest did not finish ({outcome:?}); console: {}",
                kernel.name,
                qemu::last_lines(&b.console, 6)
            ),
        }
    })
}

/// A guest of `kernel` with the initramfs for `fs`: its work directory and base image
/// made, the machine resolved and the run lock taken, `f` run, the directory removed.
fn with_guest<T>(
    kernel: &Kernel,
    fs: Fs,
    opts: &VmOptions,
    f: impl FnOnce(&Path, &Path, Machine) -> Result<T>,
) -> Result<T> {
    // Each boot its own directory: guests of one process may run side by side.
    static BOOTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = BOOTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let workdir =
        opts.cache
            .join("runs")
            .join(format!("{}-{}-{n}", std::process::id(), kernel.key));
    std::fs::create_dir_all(&workdir)?;
    let base = (|| -> Result<PathBuf> {
        let _lock = cache_lock(&opts.cache)?;
        let cached = initramfs::base(kernel, fs, &opts.cache)
            .with_context(|| format!("kernel {}: building its initramfs", kernel.name))?;
        // A link of this boot's own (same filesystem): another sigbench binary that
        // replaces the cached image cannot take it away while this boot waits its turn.
        let mine = workdir.join("base.cpio");
        std::fs::hard_link(&cached, &mine)
            .with_context(|| format!("cannot link {}", cached.display()))?;
        Ok(mine)
    })();
    let base = match base {
        Ok(b) => b,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&workdir);
            return Err(e);
        }
    };
    let machine = Machine::resolve(opts.accel, opts.clock, opts.asked_cpus(), || {
        qemu::kvm_works(&kernel.image, &base, &opts.cache, &workdir)
    });
    let result = machine.and_then(|machine| {
        // A guest measures too: on the host's clock it must not share the machine with
        // another run; under icount only host-clock runs disturb it (and it them).
        let _lock = if machine.clock == ClockKind::Icount {
            crate::testbed::workspace::lock_shared()?
        } else {
            crate::testbed::workspace::lock()?
        };
        f(&base, &workdir, machine)
    });
    let _ = std::fs::remove_dir_all(&workdir);
    result
}

/// A guest booted and finished (or not): how it ended, its console, what it sent on the
/// results port, and the cost model's records (None without the model).
struct Booted {
    /// How the kernel was entered.
    entry: Boot,
    outcome: Outcome,
    console: String,
    results: Option<String>,
    records: Option<String>,
}

/// Boot `guest` on `kernel` with the initramfs `base` and wait for it; under the icount
/// clock with the cost model loaded.
fn boot_guest(
    kernel: &Kernel,
    base: &Path,
    guest: &boots::GuestPlan,
    opts: &VmOptions,
    workdir: &Path,
    machine: &Machine,
) -> Result<Booted> {
    let initrd = workdir.join("initrd.cpio");
    let mut bytes = std::fs::read(base)?;
    bytes.extend(initramfs::plan_archive(guest)?);
    // Zeros after the last archive (the kernel skips them): a whole number of MiB, and
    // the state's steps more — the kernel's placement is the state's, not the plan's size.
    bytes.resize(
        crate::plan::states::initramfs_len(bytes.len(), guest.state),
        0,
    );
    std::fs::write(&initrd, bytes)?;
    // Under the icount clock the cost model counts every timed window (one host thread
    // runs the guest: the plugin's counts are the same every boot).
    let records = workdir.join("cost.records");
    let plugin = (machine.clock == ClockKind::Icount && opts.cost_model)
        .then(|| cost::Plugin::new(&machine.qemu))
        .transpose()?;
    let extra = match &plugin {
        Some(p) => cost::qemu_args(
            &p.path(),
            &records,
            machine.cpus,
            guest.state.map_or(0, crate::plan::states::placement),
        ),
        None => Vec::new(),
    };
    // The fixed state boots the kernel unpacked (no decompressor under TCG); a sampled
    // state its image, whose decompressor places it (`unpacked.rs`).
    let (image, entry) = match (&kernel.unpacked, guest.state) {
        (Some(elf), None) => (elf, Boot::Pvh),
        _ => (&kernel.image, Boot::Bzimage),
    };
    let mut boot = qemu::start(
        image,
        &initrd,
        machine,
        opts.mem_mib,
        workdir,
        &extra,
        plugin.as_ref().map(cost::Plugin::fd),
        guest.state,
    )?;
    drop(plugin);
    // Limits that only catch a hang, never a slow machine: emulation boots in 3–5 s on a
    // quiet machine, a minute and more on a loaded one (CI with every CPU busy took over
    // 60 s); the cost model slows the boot (its callbacks run, idle) and the plan (up to
    // 6×, docs/statistics.md).
    let accel = machine.accel;
    let (boot_model, run_model) = if extra.is_empty() { (1, 1) } else { (2, 6) };
    let boot_limit = Duration::from_secs(30 * accel.slowdown() as u64 * boot_model);
    let run_limit = opts.timeout.unwrap_or(Duration::from_secs(
        120 * accel.slowdown() as u64 * run_model,
    ));
    let outcome = boot.wait(boot_limit, run_limit)?;
    Ok(Booted {
        entry,
        outcome,
        console: boot.console_text(),
        results: std::fs::read_to_string(&boot.results)
            .ok()
            .filter(|t| !t.trim().is_empty()),
        records: (!extra.is_empty()).then(|| std::fs::read_to_string(&records).unwrap_or_default()),
    })
}

/// What went wrong with a boot of kernel `name` that ended in `outcome`, sending `doc`
/// (`tail`: the console's last lines); None when it finished with results.
fn failure(
    outcome: &Outcome,
    name: &str,
    doc: Option<&RunDocument>,
    tail: String,
) -> Option<anyhow::Error> {
    match outcome {
        Outcome::Finished { exit: 0 } if doc.is_some() => None,
        Outcome::Finished { exit: 0 } => Some(anyhow::anyhow!(
            "kernel {name}: the guest sent no results; console: {tail}"
        )),
        &Outcome::Finished { exit } => {
            let why = doc.and_then(|d| d.error.clone()).unwrap_or(tail);
            Some(anyhow::anyhow!(
                "kernel {name}: the run in the guest failed (exit {exit}): {why}"
            ))
        }
        Outcome::Died {
            qemu_status,
            stderr,
        } => {
            let qemu_said = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .to_string();
            let console_said = if !tail.is_empty() {
                format!("console: {tail}")
            } else if qemu_said.is_empty() {
                "nothing on the console: it reset before the kernel could print (a truncated or non-x86 image?)".to_string()
            } else if qemu_said.contains("plugin") {
                // QEMU said why: the cost model's plugin, not the kernel.
                "nothing on the console: QEMU stopped before the guest (the cost model's plugin; --no-cost-model runs without it)".to_string()
            } else {
                "nothing on the console: QEMU stopped before the guest".to_string()
            };
            Some(anyhow::anyhow!(
                "kernel {name} did not boot or died (qemu {qemu_status}{}); {console_said}",
                if qemu_said.is_empty() {
                    String::new()
                } else {
                    format!(": {qemu_said}")
                }
            ))
        }
        &Outcome::TimedOut { phase, after } => Some(anyhow::anyhow!(
            "kernel {name}: no {} after {} s ({}); console: {}",
            if phase == "boot" {
                "sign of life from the guest"
            } else {
                "result"
            },
            after.as_secs(),
            if phase == "boot" {
                "hung at boot?"
            } else {
                "hung or too slow: --guest-timeout"
            },
            if tail.is_empty() {
                "empty".to_string()
            } else {
                tail
            }
        )),
    }
}

/// The warning of a kernel that saw fewer CPUs than QEMU gave it (built without SMP, or
/// with a smaller NR_CPUS): its clients then share them, which the run must not hide.
fn fewer_cpus(kernel: &str, seen: u64, given: u32) -> Option<String> {
    (seen < u64::from(given)).then(|| {
        format!(
            "kernel {kernel}: the guest saw {seen} CPU{} of the {given} QEMU gave it (a kernel without CONFIG_SMP, or with a smaller CONFIG_NR_CPUS)",
            if seen == 1 { "" } else { "s" },
        )
    })
}

/// A guest's document as a run here: the host's run id, start time and hostname (a
/// deterministic guest makes the same "random" id and reads the same fixed date every
/// boot; its own hostname is "(none)"), the kernel image and the machine it ran on, and
/// the cost model's records attached (or a warning why not).
fn as_run_here(
    mut d: RunDocument,
    kernel: &Kernel,
    machine: &Machine,
    entry: Boot,
    records: Option<&str>,
    started_at: &str,
) -> RunDocument {
    d.id = crate::host::new_run_id();
    d.started_at = started_at.to_string();
    d.host.hostname = crate::host::current().hostname;
    d.host.kernel_image = Some(kernel.key.clone());
    d.host.emulated = machine.emulated();
    d.host.accelerator = Some(format!("qemu-{}", machine.accel.name()));
    if let Some(w) = fewer_cpus(&kernel.name, d.host.cpus as u64, machine.cpus) {
        d.warnings.push(w);
    }
    let mut clock = machine.clock_record();
    clock.boot = Some(entry);
    if let Some(text) = records {
        match cost::attach(&mut d, text) {
            None => clock.cost_model = Some(cost::model()),
            Some(why) => d.warnings.push(why),
        }
    }
    d.host.clock = Some(clock);
    d
}

fn run_in(
    kernel: &Kernel,
    base: &std::path::Path,
    guest: &boots::GuestPlan,
    opts: &VmOptions,
    workdir: &std::path::Path,
    machine: Machine,
) -> Result<GuestRun> {
    // When the guest started, by the host's clock: the guest's own is fixed (icount).
    let started_at = model::stamp::now_rfc3339();
    let Booted {
        entry,
        outcome,
        console,
        results,
        records,
    } = boot_guest(kernel, base, guest, opts, workdir, &machine)?;
    let tail = qemu::last_lines(&console, 6);
    let name = &kernel.name;
    let doc = results
        .map(|t| parse_documents(&t, &format!("results of {name}")))
        .transpose()
        .ok()
        .flatten()
        .and_then(|mut v| v.pop());
    let error = failure(&outcome, name, doc.as_ref(), tail);
    let doc = doc.map(|d| as_run_here(d, kernel, &machine, entry, records.as_deref(), &started_at));
    if doc.is_none() && error.is_none() {
        bail!("kernel {name}: no results");
    }
    Ok(GuestRun {
        doc,
        machine,
        error,
    })
}

/// The boot directories (`<cache>/runs/<pid>-…`) of sigbench processes no longer running.
fn dead_boots(cache: &Path) -> Vec<(u32, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(cache.join("runs")) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let pid: u32 = name.to_str()?.split('-').next()?.parse().ok()?;
            (!crate::testbed::workspace::alive(pid)).then(|| (pid, e.path()))
        })
        .collect()
}

/// Processes (a QEMU) whose command line names a file in one of `dirs`.
fn processes_in(dirs: &[(u32, PathBuf)]) -> Vec<(u32, u32, String)> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if let Some((owner, _)) = dirs.iter().find(|(_, d)| {
            let d = format!("{}/", d.display());
            args.iter().any(|a| a.contains(&d))
        }) {
            let exe = args.first().cloned().unwrap_or_default();
            out.push((*owner, p, exe));
        }
    }
    out
}

/// What killed guest runs left: QEMU processes still running (a sigbench killed with
/// SIGKILL before QEMU died with it) and boot directories in the cache.
pub fn leftovers(cache: &Path) -> Vec<crate::testbed::workspace::Leftover> {
    use crate::testbed::workspace::Leftover;
    let dead = dead_boots(cache);
    let mut out: Vec<Leftover> = processes_in(&dead)
        .into_iter()
        .map(|(pid, p, exe)| Leftover {
            pid,
            what: format!("process {p}: {exe} (a guest)"),
        })
        .collect();
    out.extend(dead.into_iter().map(|(pid, d)| Leftover {
        pid,
        what: format!("directory: {}", d.display()),
    }));
    out
}

/// Stop what killed guest runs left running and remove their boot directories.
pub fn cleanup(cache: &Path) -> Vec<String> {
    let dead = dead_boots(cache);
    let mut done = Vec::new();
    for (_, p, exe) in processes_in(&dead) {
        match crate::sys::os::kill(p as i32, libc::SIGKILL) {
            Ok(()) => done.push(format!("stopped process {p} ({exe})")),
            Err(e) => done.push(format!("FAILED to stop process {p} ({exe}): {e}")),
        }
    }
    for (_, d) in dead {
        match std::fs::remove_dir_all(&d) {
            Ok(()) => done.push(format!("removed {}", d.display())),
            Err(e) => done.push(format!("FAILED to remove {}: {e}", d.display())),
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A uniprocessor kernel given two CPUs is named (kernels sigbench builds have SMP, so
    /// no end-to-end test boots one any more); one that saw them all is not.
    #[test]
    fn a_kernel_that_saw_fewer_cpus_is_named() {
        assert_eq!(
            fewer_cpus("6.1.0+", 1, 2).as_deref(),
            Some(
                "kernel 6.1.0+: the guest saw 1 CPU of the 2 QEMU gave it (a kernel without CONFIG_SMP, or with a smaller CONFIG_NR_CPUS)"
            )
        );
        assert!(
            fewer_cpus("k", 2, 4)
                .unwrap()
                .contains("saw 2 CPUs of the 4")
        );
        assert_eq!(fewer_cpus("k", 4, 4), None);
        assert_eq!(fewer_cpus("k", 1, 1), None);
    }

    /// Only options given are refused on a run without a guest: the environment's
    /// `SIGBENCH_COST_MODEL=off` is a default, not `--no-cost-model`.
    #[test]
    fn a_default_from_the_environment_is_no_option_given() {
        let off_by_env = GuestOptions {
            cost_model_off: true,
            ..GuestOptions::default()
        };
        assert_eq!(off_by_env.first_given(), None);
        let given = GuestOptions {
            no_cost_model: true,
            ..GuestOptions::default()
        };
        assert_eq!(given.first_given(), Some("--no-cost-model"));
        let jobs = GuestOptions {
            jobs: Some(2),
            ..GuestOptions::default()
        };
        assert_eq!(jobs.first_given(), Some("--jobs"));
    }
}
