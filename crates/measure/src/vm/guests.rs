//! Guests side by side: a list of boots — a kernel and the plan it runs — executed with up
//! to J at once, their results handed back in the list's order. Under the icount clock a
//! guest's times do not depend on what else the host runs, so J guests (one single-threaded
//! QEMU each) can share the host's CPUs; on the host's clock they would disturb each other's
//! timings, so J is 1 unless asked for. `run --kernel`, `bisect`, `judge` and `watch` boot
//! their guests through here.

use super::boots::{guest_plan, in_guest};
use super::kernel::{self, Kernel, KernelSpec};
use super::{GuestRun, VmOptions};
use crate::clock::ClockKind;
use crate::plan::Plan;
use anyhow::Result;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::sync::mpsc;

/// One boot: which kernel (its name as given and its spec) and the plan it runs.
#[derive(Clone, Debug)]
pub struct Boot {
    pub name: String,
    pub spec: KernelSpec,
    pub plan: Plan,
}

/// How a boot went: the kernel as prepared, and the guest's run; an error when the kernel
/// could not be prepared or the guest not started (an interruption among them).
pub type Booted = Result<(Kernel, GuestRun)>;

/// Memory a guest needs beyond its RAM (QEMU itself, the translation cache).
const QEMU_OVERHEAD_MIB: u64 = 320;

/// How many guests may run at once: `asked` (`--jobs`), else one per host CPU under the
/// icount clock and one otherwise; never more than the memory available holds (then said
/// once). More than one on the host's clock is allowed, with a warning.
pub fn how_many(opts: &VmOptions, asked: Option<usize>) -> Result<usize> {
    let machine = opts.expected_machine()?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let wanted = match (asked, machine.clock) {
        (Some(0), _) => anyhow::bail!(
            "--jobs 0: at least one guest at a time (--jobs 1 runs them one after another)"
        ),
        (Some(j), _) => j,
        (None, ClockKind::Icount) => cpus,
        (None, ClockKind::Host) => 1,
    };
    if wanted > 1 && machine.clock == ClockKind::Host {
        crate::diag::warn(format!(
            "{wanted} guests at once on the host's clock: they share the CPUs, and each one's times include the others' load (the icount clock does not: --clock icount)"
        ));
    }
    let per_guest = opts.mem_mib as u64 + QEMU_OVERHEAD_MIB;
    let spare = crate::testbed::spare_memory_mib();
    let fits = (spare / per_guest).max(1) as usize;
    if wanted > fits {
        crate::diag::warn(format!(
            "{wanted} guests of {} MiB do not fit in the {spare} MiB of memory that can be spared: {fits} at once",
            opts.mem_mib
        ));
        return Ok(fits);
    }
    Ok(wanted)
}

/// Run `plan` on the prepared kernel `k` in one guest, as a guest runs it (settled).
pub fn run_on(k: &Kernel, plan: &Plan, opts: &VmOptions, verbose: bool) -> Result<GuestRun> {
    let icount = opts.expected_machine()?.clock == crate::clock::ClockKind::Icount;
    let guest = guest_plan(&in_guest(plan, icount), verbose)?;
    let mut run = super::run(k, plan.testbed.fs, &guest, opts)?;
    // The guest kept its own spec (its paths for a signature file or a loadfile): the
    // document keeps the one that makes this plan again here.
    if let Some(doc) = &mut run.doc {
        doc.plan.spec = serde_json::to_value(crate::plan::spec::RunSpec::resolved(plan)).ok();
    }
    Ok(run)
}

/// Prepare and run one boot.
fn boot_one(b: &Boot, opts: &VmOptions, verbose: bool) -> Booted {
    let k = kernel::prepare(&b.spec, &b.name, &opts.cache)?;
    let run = run_on(&k, &b.plan, opts, verbose)?;
    Ok((k, run))
}

/// Run `boots` with up to `jobs` at once, calling `done` with each one's outcome in the
/// order of `boots` (a boot's result waits for the ones before it). `started` is told when
/// a boot begins. An error from `done` (or an interruption) stops the boots not yet begun;
/// those running end by themselves (they see the interruption).
pub fn run_boots(
    boots: &[Boot],
    jobs: usize,
    opts: &VmOptions,
    verbose: bool,
    started: &(dyn Fn(usize, &Boot) + Sync),
    done: &mut dyn FnMut(usize, Booted) -> Result<()>,
) -> Result<()> {
    let jobs = jobs.clamp(1, boots.len().max(1));
    if jobs == 1 {
        // One at a time, on this thread.
        for (k, b) in boots.iter().enumerate() {
            crate::interrupt::check()?;
            started(k, b);
            done(k, boot_one(b, opts, verbose))?;
        }
        return Ok(());
    }
    let queue: Mutex<VecDeque<usize>> = Mutex::new((0..boots.len()).collect());
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, Booted)>();
    std::thread::scope(|scope| -> Result<()> {
        for _ in 0..jobs {
            let tx = tx.clone();
            let (queue, stop) = (&queue, &stop);
            scope.spawn(move || {
                loop {
                    if stop.load(std::sync::atomic::Ordering::Relaxed)
                        || crate::interrupt::check().is_err()
                    {
                        return;
                    }
                    let Some(k) = queue.lock().expect("queue").pop_front() else {
                        return;
                    };
                    started(k, &boots[k]);
                    if tx.send((k, boot_one(&boots[k], opts, verbose))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        // Results in the boots' order.
        let mut waiting: BTreeMap<usize, Booted> = BTreeMap::new();
        let mut next = 0;
        let mut failure = None;
        for (k, r) in rx {
            waiting.insert(k, r);
            while let Some(r) = waiting.remove(&next) {
                if failure.is_none()
                    && let Err(e) = done(next, r)
                {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    failure = Some(e);
                }
                next += 1;
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
        crate::interrupt::check()?;
        Ok(())
    })
}
