//! Inside the guest: sigbench as PID 1. Mount the pseudo filesystems, load the modules
//! the host resolved, find the results port, run the plan with its JSON going to the
//! port, say how it ended on the console, power off.

use super::boots::GuestWork;
use super::initramfs::{MODULE_ORDER, PLAN};
use super::qemu::{EXIT, READY};
use anyhow::{Context, Result};
use std::ffi::CString;
use std::time::{Duration, Instant};

fn mount(source: &str, target: &str, fstype: &str) {
    let _ = std::fs::create_dir_all(target);
    let (s, t, f) = (
        CString::new(source).unwrap_or_default(),
        CString::new(target).unwrap_or_default(),
        CString::new(fstype).unwrap_or_default(),
    );
    if let Err(e) = crate::sys::os::mount(&s, &t, &f, 0, None) {
        model::say!("sigbench-guest: mount {fstype} on {target}: {e}");
    }
}

/// Load the modules in order (dependencies first) with finit_module.
fn load_modules() {
    let list = std::fs::read_to_string(MODULE_ORDER).unwrap_or_default();
    for path in list.lines().filter(|l| !l.is_empty()) {
        let f = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) => {
                model::say!("sigbench-guest: {path}: {e}");
                continue;
            }
        };
        use std::os::fd::AsFd;
        if let Err(e) = crate::sys::os::finit_module(f.as_fd())
            && e.raw_os_error() != Some(libc::EEXIST)
        {
            model::say!("sigbench-guest: loading {path}: {e}");
        }
    }
}

/// The results port: the second serial port (the first is the console).
pub const RESULTS_PORT: &str = "/dev/ttyS1";

/// Make the results port a raw byte stream (no newline translation), once it exists.
fn results_port() -> Result<String> {
    let start = Instant::now();
    loop {
        if let Ok(f) = std::fs::OpenOptions::new().write(true).open(RESULTS_PORT) {
            use std::os::fd::AsFd;
            crate::sys::os::tty_raw(f.as_fd())
                .with_context(|| format!("{RESULTS_PORT}: the results port"))?;
            return Ok(RESULTS_PORT.to_string());
        }
        if start.elapsed() > Duration::from_secs(30) {
            anyhow::bail!(
                "no second serial port {RESULTS_PORT} (does this kernel have the 8250 serial driver?)"
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Wait until everything written to the results port has left the guest.
fn drain_results() {
    if let Ok(f) = std::fs::OpenOptions::new().write(true).open(RESULTS_PORT) {
        use std::os::fd::AsFd;
        let _ = crate::sys::os::tty_drain(f.as_fd());
    }
}

/// The seed the guest's random number generator starts from in the fixed state.
const RANDOM_SEED: [u8; 32] = *b"sigbench guest: a constant seed.";

/// Make the kernel's random number generator ready at once, from a constant seed. A guest
/// without rdrand gathers entropy only from interrupt timing, and until its generator is
/// ready every random number (each new tmpfs inode takes one) costs a hash of the whole
/// input pool: measured on Debian 6.12, 25 % of LKP churn's window (707 ms instead of
/// 533 ms at N = 20 000). A real machine's generator is ready within a second of boot;
/// the constant seed keeps a guest under the icount clock deterministic. Nothing in a
/// throwaway measuring guest needs secret random numbers.
/// With a state (`plan::states`), the seed is the state's.
fn seed_random(state: Option<u64>) {
    let seed = state.map_or(RANDOM_SEED, crate::plan::states::random_seed);
    let done = std::fs::File::open("/dev/random").and_then(|f| {
        use std::os::fd::AsFd;
        crate::sys::os::credit_entropy(f.as_fd(), &seed)
    });
    if let Err(e) = done {
        model::say!("sigbench-guest: cannot seed the random number generator: {e}");
    }
}

/// The sampling rate the guest's kernel allows (`kernel.perf_event_max_sample_rate`): twice
/// what a profile taken apart uses (`probe::profile::APART_MAX_HZ`). The kernel throttles
/// an event that interrupts more often than this rate allows in one timer tick, and at its
/// default of 100 000 a 10 µs sampler is at that limit.
const MAX_SAMPLE_RATE: u64 = 2 * crate::probe::profile::APART_MAX_HZ;

/// Let a profile taken apart sample at its full rate (a throwaway guest's setting).
fn allow_fast_sampling() {
    let path = "/proc/sys/kernel/perf_event_max_sample_rate";
    if let Err(e) = std::fs::write(path, MAX_SAMPLE_RATE.to_string())
        && std::path::Path::new(path).exists()
    {
        model::say!("sigbench-guest: {path}: {e}");
    }
}

/// The clocksource the kernel starts on while it calibrates the TSC.
const EARLY_CLOCKSOURCE: &str = "tsc-early";

/// Wait (at most 5 s) until the kernel has left its early TSC clocksource. x86 kernels
/// time with `tsc-early` until a delayed work replaces it with `tsc` a second after boot,
/// and until then hrtimers run in low resolution: they fire at the tick only. A small
/// kernel is up in less than that second of guest time, and its profile got one sample
/// per 4 ms tick, whatever the rate (a tinyconfig 6.1: 1 sample in a 3.7 ms window at
/// 4000 Hz and at 100 000 Hz); Debian's kernels boot for longer and were past it.
fn wait_for_high_resolution_timers() {
    let path = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
    let start = Instant::now();
    while std::fs::read_to_string(path).is_ok_and(|c| c.trim() == EARLY_CLOCKSOURCE) {
        if start.elapsed() > Duration::from_secs(5) {
            model::say!(
                "sigbench-guest: the clock is still {EARLY_CLOCKSOURCE} after 5 s: timers fire at the tick only, and a profile samples once a tick"
            );
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The state's churn of the page allocator (`plan::states::churn`): pages taken and
/// touched, then a part of them given back one at a time in the state's order, so the
/// per-CPU and buddy free lists the modules, the testbed and the window allocate from are
/// the state's.
fn churn_pages(state: u64) {
    let (pages, order) = crate::plan::states::churn(state);
    match crate::sys::os::TouchedPages::new(pages) {
        Ok(mut taken) => {
            // The pages not given back stay taken while the guest lives (the mapping is
            // never unmapped): the free memory stays fragmented the state's way.
            for k in order {
                taken.release(k);
            }
        }
        Err(e) => model::say!("sigbench-guest: cannot churn the page allocator: {e}"),
    }
}

/// Age the guest's memory the state's way before the modules load and the plan runs
/// (`plan::states`): files written to /tmp and most of them removed, as an earlier case's
/// ramdisk would leave it, and anonymous pages taken with a part given back one at a
/// time; what stays taken fragments the free memory the plan allocates from.
fn age_memory(state: u64) {
    let page = [0x5au8; 4096];
    for (k, (pages, removed)) in crate::plan::states::files(state).into_iter().enumerate() {
        let path = format!("/tmp/sigbench-state-{k}");
        let written = std::fs::File::create(&path).and_then(|mut f| {
            use std::io::Write;
            (0..pages).try_for_each(|_| f.write_all(&page))
        });
        if let Err(e) = written {
            model::say!("sigbench-guest: cannot age the memory ({path}): {e}");
            return;
        }
        if removed {
            let _ = std::fs::remove_file(&path);
        }
    }
    churn_pages(state);
}

/// Prepare the guest; `None` when there is no plan (a boot test), else its work and the
/// results port its JSON goes to.
fn setup() -> Result<Option<(GuestWork, String)>> {
    mount("proc", "/proc", "proc");
    mount("sysfs", "/sys", "sysfs");
    mount("devtmpfs", "/dev", "devtmpfs");
    let state = std::fs::read_to_string("/proc/cmdline")
        .ok()
        .and_then(|c| crate::plan::states::from_cmdline(&c));
    seed_random(state);
    allow_fast_sampling();
    wait_for_high_resolution_timers();
    mount("tmpfs", "/run", "tmpfs");
    mount("tmpfs", "/tmp", "tmpfs");
    if let Some(s) = state {
        age_memory(s);
    }
    load_modules();
    let Ok(plan) = std::fs::read_to_string(PLAN) else {
        model::say!("{READY} (no plan: boot test)");
        return Ok(None);
    };
    let work: GuestWork = serde_json::from_str(&plan).context("unreadable plan")?;
    let port = results_port()?;
    model::say!("{READY}");
    Ok(Some((work, port)))
}

/// Run as PID 1: `run` does the guest's work (`sigbench run`'s plan from its spec,
/// `calibrate`'s loop), its JSON going to the results port (the second argument), and
/// returns the exit code. Never returns: the machine powers off.
pub fn init(run: &mut dyn FnMut(GuestWork, String) -> i32) -> ! {
    let code = match setup() {
        Ok(Some((work, port))) => run(work, port),
        Ok(None) => 0,
        Err(e) => {
            model::say!("sigbench-guest: {e:#}");
            1
        }
    };
    drain_results();
    model::say!("{EXIT}{code}");
    // End QEMU. A reset does that on every kernel config (QEMU runs with -no-reboot), while
    // a power-off needs ACPI: without it the kernel turns power-off into a halt and QEMU
    // would keep running. `sigbench.end=halt` on the kernel command line forces the halt,
    // so the host's handling of a guest that never goes away can be tested.
    let halt = std::fs::read_to_string("/proc/cmdline")
        .is_ok_and(|c| c.split_whitespace().any(|w| w == "sigbench.end=halt"));
    let _ = crate::sys::os::sync_and_reboot(if halt {
        libc::RB_HALT_SYSTEM
    } else {
        libc::RB_AUTOBOOT
    });
    // reboot(2) does not return for PID 1; if it did, never exit (that would panic).
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
