//! `sigbench doctor`: what this machine can do, and leftovers of killed runs.

use anyhow::Result;
use sigbench::probe::perf::TracepointCounter;
use sigbench::probe::tracefs::Tracefs;
use sigbench::testbed::{Fs, find_tool, tool_version, workspace};
use sigbench::vm::qemu::cached_probe;
use std::path::Path;

#[derive(clap::Args)]
pub struct Args {
    /// Remove what killed sigbench runs left behind (mounts, loop and zram devices,
    /// kprobe events, directories under /run/sigbench)
    #[arg(long)]
    cleanup: bool,
    /// List the tracepoints of a subsystem (e.g. btrfs)
    #[arg(long, value_name = "SUBSYS")]
    events: Option<String>,
    #[command(flatten)]
    cache: super::options::CacheOptions,
    #[command(flatten)]
    store: super::options::StoreOptions,
}

fn line(what: &str, ok: bool, detail: impl AsRef<str>) {
    println!(
        "{:<22} {:<4} {}",
        what,
        if ok { "ok" } else { "no" },
        detail.as_ref()
    );
}

pub fn run(args: Args) -> Result<i32> {
    if args.cleanup {
        let done = workspace::cleanup();
        if done.is_empty() {
            println!("nothing to clean up");
        }
        let failed = done.iter().filter(|d| d.starts_with("FAILED")).count();
        for d in &done {
            println!("{d}");
        }
        // Runs a SIGKILL stopped stay `running` in the store: with no sigbench measuring
        // now (the machine lock is free), every such run is dead.
        if args.store.db.exists()
            && let Some(_lock) = workspace::try_lock()?
        {
            let n = sigbench::store::Store::open(&args.store.db)?.mark_running("killed")?;
            if n > 0 {
                println!(
                    "marked {n} run{} still `running` in {} as `killed`",
                    if n == 1 { "" } else { "s" },
                    args.store.db
                );
            }
        }
        return Ok(if failed > 0 { 1 } else { 0 });
    }
    let tracefs = Tracefs::find_or_mount();
    if let Some(subsys) = &args.events {
        let t = tracefs?;
        let events = t.events_of(subsys);
        if events.is_empty() {
            anyhow::bail!("no tracepoints in subsystem `{subsys}` on this kernel");
        }
        for e in events {
            println!("tracepoint:{subsys}:{e}");
        }
        return Ok(0);
    }

    let root = sigbench::sys::os::geteuid() == 0;
    line(
        "root",
        root,
        if root {
            "running as root"
        } else {
            "sigbench run needs root (mount, loop devices, perf events)"
        },
    );
    let loop_ok = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/loop-control")
        .is_ok();
    line("loop devices", loop_ok, "/dev/loop-control");
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
        line(fs.name(), ok, detail);
    }
    let zram = Path::new("/sys/class/zram-control").exists();
    line(
        "zram",
        zram,
        if zram {
            "--device zram available"
        } else {
            "no zram in this kernel"
        },
    );
    let brd = Path::new("/sys/module/brd").exists();
    line(
        "brd",
        brd,
        if brd {
            "--device ram available"
        } else {
            "brd not loaded (modprobe brd may work)"
        },
    );

    match &tracefs {
        Ok(t) => {
            line("tracefs", true, t.root.display().to_string());
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
                line("  tracepoint", ok, detail);
            }
            let kp = t.has_kprobes();
            line(
                "kprobes",
                kp,
                if kp {
                    "kprobe:FUNC probes available"
                } else {
                    "none in this kernel: kprobe probes are reported unavailable"
                },
            );
        }
        Err(e) => line("tracefs", false, format!("{e:#}")),
    }
    let paranoid =
        std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap_or_default();
    line("perf_event_paranoid", true, paranoid.trim());
    let kvm = kvm_api();
    let (ok, detail) = match (kvm, cached_probe(&args.cache.cache_dir)) {
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
    line("kvm", ok, detail);
    let qemu = sigbench::vm::qemu::qemu();
    line(
        "qemu",
        qemu.is_ok(),
        qemu.map_or_else(|e| format!("{e:#}"), |p| p.display().to_string()),
    );

    let left = workspace::leftovers();
    if left.is_empty() {
        println!("\nno leftovers of killed runs");
    } else {
        println!("\nleftovers of killed runs (remove with `sigbench doctor --cleanup`):");
        for l in &left {
            println!("  pid {}: {}", l.pid, l.what);
        }
    }
    Ok(0)
}

/// KVM_GET_API_VERSION, when /dev/kvm opens.
fn kvm_api() -> Option<i32> {
    use std::os::fd::AsFd;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .ok()?;
    let v = sigbench::sys::os::kvm_api_version(f.as_fd()).ok()?;
    (v > 0).then_some(v)
}
