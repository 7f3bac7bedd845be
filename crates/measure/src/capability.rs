//! What this machine can do for sigbench (`sigbench doctor`): root, loop devices, each
//! filesystem and its mkfs tool, zram/brd, tracefs with the default tracepoints and
//! whether perf can count them, kprobes, KVM and QEMU — each a check with its detail.

use crate::probe::perf::TracepointCounter;
use crate::probe::tracefs::Tracefs;
use crate::testbed::{Fs, find_tool, tool_version};
use crate::vm::qemu::cached_probe;
use std::path::Path;

/// One thing checked: whether it works here, and what was found.
#[derive(Clone, Debug)]
pub struct Check {
    pub name: String,
    pub ok: bool,
    pub detail: String,
}

impl Check {
    fn new(name: &str, ok: bool, detail: impl AsRef<str>) -> Check {
        Check {
            name: name.to_string(),
            ok,
            detail: detail.as_ref().to_string(),
        }
    }
}

/// Every check, in the order `doctor` prints them; `cache` holds the KVM verdict.
pub fn checks(tracefs: &anyhow::Result<Tracefs>, cache: &Path) -> Vec<Check> {
    let mut v = Vec::new();
    machine(&mut v);
    filesystems(&mut v);
    tracing(tracefs, &mut v);
    guests(cache, &mut v);
    v
}

fn machine(v: &mut Vec<Check>) {
    let root = crate::sys::os::geteuid() == 0;
    v.push(Check::new(
        "root",
        root,
        if root {
            "running as root"
        } else {
            "sigbench run needs root (mount, loop devices, perf events)"
        },
    ));
    let loop_ok = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/loop-control")
        .is_ok();
    v.push(Check::new("loop devices", loop_ok, "/dev/loop-control"));
    let cpu = Path::new("/sys/devices/system/cpu");
    v.push(match crate::host::frequency(cpu) {
        None => Check::new(
            "CPU frequency",
            true,
            "no cpufreq: the clock speed is not this kernel's to set (a virtual machine?)",
        ),
        Some(f) => {
            let governors: Vec<String> = f
                .governors
                .iter()
                .map(|(g, n)| format!("{g} on {n}"))
                .collect();
            let turbo = match f.turbo {
                Some(true) => ", turbo on",
                Some(false) => ", turbo off",
                None => "",
            };
            match f.warning() {
                Some(w) => Check::new("CPU frequency", false, w),
                None => Check::new(
                    "CPU frequency",
                    true,
                    format!("{}: {}{turbo}", f.driver, governors.join(", ")),
                ),
            }
        }
    });
}

fn filesystems(v: &mut Vec<Check>) {
    let filesystems = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    for fs in Fs::ALL {
        let in_kernel = filesystems
            .lines()
            .any(|l| l.split_whitespace().last() == Some(fs.name()));
        let (ok, detail) = match fs.mkfs_tool() {
            _ if !in_kernel => (
                false,
                "not in /proc/filesystems (module not loaded?)".to_string(),
            ),
            None => (true, "in the kernel (no mkfs needed)".to_string()),
            Some(tool) => match find_tool(tool) {
                Some(_) => (true, tool_version(fs).unwrap_or_else(|| tool.to_string())),
                None => (false, format!("{tool} not found (sudo make deps)")),
            },
        };
        v.push(Check::new(fs.name(), ok, detail));
    }
    let zram = Path::new("/sys/class/zram-control").exists();
    v.push(Check::new(
        "zram",
        zram,
        if zram {
            "--device zram available"
        } else {
            "no zram in this kernel"
        },
    ));
    let brd = Path::new("/sys/module/brd").exists();
    v.push(Check::new(
        "brd",
        brd,
        if brd {
            "--device ram available"
        } else {
            "brd not loaded (modprobe brd may work)"
        },
    ));
}

fn tracing(tracefs: &anyhow::Result<Tracefs>, v: &mut Vec<Check>) {
    match tracefs {
        Ok(t) => {
            v.push(Check::new("tracefs", true, t.root.display().to_string()));
            for probe in Fs::ALL.iter().flat_map(|f| f.default_probes()) {
                let src = probe.split_once('=').map_or(*probe, |(_, s)| s);
                let parts: Vec<&str> = src.split(':').collect();
                let ev = t.event(parts[1], parts[2]);
                let perf = ev.as_ref().map(|e| TracepointCounter::open(e.id, None));
                let (ok, detail) = match (&ev, perf) {
                    (None, _) => (false, format!("{src}: no such tracepoint")),
                    (Some(_), Some(Ok(_))) => {
                        (true, format!("{src}: counted with perf_event_open"))
                    }
                    (Some(_), Some(Err(e))) => {
                        (false, format!("{src}: perf_event_open failed: {e:#}"))
                    }
                    (Some(_), None) => unreachable!(),
                };
                v.push(Check::new("  tracepoint", ok, detail));
            }
            let kp = t.has_kprobes();
            v.push(Check::new(
                "kprobes",
                kp,
                if kp {
                    "kprobe:FUNC probes available"
                } else {
                    "none in this kernel: kprobe probes are reported unavailable"
                },
            ));
        }
        Err(e) => v.push(Check::new("tracefs", false, format!("{e:#}"))),
    }
    let paranoid =
        std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap_or_default();
    v.push(Check::new("perf_event_paranoid", true, paranoid.trim()));
}

fn guests(cache: &Path, v: &mut Vec<Check>) {
    let kvm = kvm_api();
    let kvm_guests = kvm.is_some() && cached_probe(cache).is_some_and(|p| p.works);
    let (ok, detail) = match (kvm, cached_probe(cache)) {
        (None, _) => (
            false,
            "/dev/kvm absent or unusable: `run --kernel` uses TCG (emulation)".to_string(),
        ),
        (Some(_), Some(p)) if p.works => (
            true,
            format!("{} ({}): `run --kernel` uses KVM", p.detail, p.probed_at),
        ),
        (Some(_), Some(p)) => (
            false,
            format!(
                "{} ({}): `run --kernel` uses TCG (emulation)",
                p.detail, p.probed_at
            ),
        ),
        (Some(v), None) => (
            false,
            format!(
                "/dev/kvm answers (API {v}) but no guest has been boot-tested yet; the first `run --kernel` does (10 s at most) and remembers"
            ),
        ),
    };
    v.push(Check::new("kvm", ok, detail));
    use crate::vm::qemu::{Accel, Machine, Qemus, version_of};
    let said = |p: &std::path::Path| match version_of(p) {
        Some(ver) => format!(
            "{} (QEMU {ver}, plugin API {})",
            p.display(),
            crate::vm::cost::plugin_api(Some(&ver))
        ),
        None => format!("{} (no version)", p.display()),
    };
    let qemu = crate::vm::qemu::qemu();
    let has_qemu = qemu.is_ok();
    let mut detail = qemu.as_deref().map_or_else(|e| format!("{e:#}"), said);
    if has_qemu {
        // Which QEMU an icount guest of several CPUs runs on, or why none can.
        let two = Machine::resolve_on(
            Some(Accel::Tcg),
            Some(model::clock::ClockKind::Icount),
            crate::vm::qemu::Cpus::Given(2),
            || Ok(false),
            &Qemus::here(),
        );
        detail.push_str(&match two {
            Ok(m) => format!("; icount guests of several CPUs: {}", said(&m.qemu)),
            Err(e) => format!("; icount guests of several CPUs: none ({e:#})"),
        });
    }
    v.push(Check::new("qemu", has_qemu, detail));
    v.push(Check::new("clocks", true, clocks(has_qemu, kvm_guests)));
    v.push(packages());
}

/// Which kernel packages `--kernel` can unpack here (`vm::package`), and what to install
/// for the others.
fn packages() -> Check {
    let has = |t: &str| crate::testbed::find_tool(t).is_some();
    let formats = [
        (".deb", has("dpkg-deb"), "dpkg"),
        (".rpm", has("rpm") && has("bsdtar"), "rpm, libarchive-tools"),
        (".pkg.tar.zst", has("bsdtar"), "libarchive-tools"),
    ];
    let ok: Vec<&str> = formats.iter().filter(|f| f.1).map(|f| f.0).collect();
    let missing: Vec<String> = formats
        .iter()
        .filter(|f| !f.1)
        .map(|f| format!("{} (install {})", f.0, f.2))
        .collect();
    let depmod = has("depmod");
    let mut detail = format!("`--kernel` unpacks {}", ok.join(", "));
    if ok.is_empty() {
        detail = "`--kernel` unpacks no kernel package".to_string();
    }
    if !missing.is_empty() {
        detail.push_str(&format!("; not {}", missing.join(", ")));
    }
    if !depmod {
        detail.push_str("; no depmod (install kmod): packages without modules.dep cannot boot");
    }
    Check::new("kernel packages", missing.is_empty() && depmod, detail)
}

/// Which clocks `run` can time with here (`model::clock`).
fn clocks(qemu: bool, kvm_guests: bool) -> String {
    let mut v = vec!["host (runs here; real time)".to_string()];
    if qemu {
        v.push(format!(
            "icount (guests under TCG, the default there: instructions at 1 ns{})",
            if kvm_guests { "; --clock icount" } else { "" }
        ));
        v.push(if kvm_guests {
            "host in KVM guests (their default)".to_string()
        } else {
            "host in TCG guests (--clock host: emulated real time)".to_string()
        });
    }
    v.join("; ")
}

/// KVM_GET_API_VERSION, when /dev/kvm opens.
fn kvm_api() -> Option<i32> {
    use std::os::fd::AsFd;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .ok()?;
    let v = crate::sys::os::kvm_api_version(f.as_fd()).ok()?;
    (v > 0).then_some(v)
}
