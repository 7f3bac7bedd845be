//! Guests side by side: a list of boots — a kernel and the plan it runs — executed with up
//! to J at once, their results handed back in the list's order. Under the icount clock a
//! guest's times do not depend on what else the host runs, so J guests (one single-threaded
//! QEMU each) can share the host's CPUs; on the host's clock they would disturb each other's
//! timings, so J is 1 unless asked for. `run --kernel`, `bisect`, `judge` and `watch` boot
//! their guests through here.

use super::boots::{guest_plan, in_guest, per_state};
use super::kernel::{self, Kernel, KernelSpec};
use super::{GuestRun, VmOptions};
use crate::plan::Plan;
use anyhow::Result;
use model::clock::ClockKind;
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
        model::diag::warn(format!(
            "{wanted} guests at once on the host's clock: they share the CPUs, and each one's times include the others' load (the icount clock does not: --clock icount)"
        ));
    }
    let per_guest = opts.mem_mib as u64 + QEMU_OVERHEAD_MIB;
    let spare = crate::testbed::spare_memory_mib();
    let fits = (spare / per_guest).max(1) as usize;
    if wanted > fits {
        model::diag::warn(format!(
            "{wanted} guests of {} MiB do not fit in the {spare} MiB of memory that can be spared: {fits} at once",
            opts.mem_mib
        ));
        return Ok(fits);
    }
    Ok(wanted)
}

/// Whether guests time with the icount clock (where states are sampled a boot each).
fn icount(opts: &VmOptions) -> Result<bool> {
    Ok(opts.expected_machine()?.clock == ClockKind::Icount)
}

/// Run `plan` on the prepared kernel `k` as guests run it (settled): one guest, or with
/// its states sampled under the icount clock one guest per repetition, one after another
/// (`boots::per_state`), their documents made one (`merged`).
pub fn run_on(k: &Kernel, plan: &Plan, opts: &VmOptions, verbose: bool) -> Result<GuestRun> {
    let parts = per_state(plan, icount(opts)?);
    let mut runs = Vec::new();
    for p in &parts {
        crate::interrupt::check()?;
        runs.push(run_one(k, p, opts, verbose)?);
    }
    Ok(merged(plan, runs))
}

/// One guest of `plan`.
fn run_one(k: &Kernel, plan: &Plan, opts: &VmOptions, verbose: bool) -> Result<GuestRun> {
    let guest = guest_plan(&in_guest(plan, icount(opts)?), verbose)?;
    super::run(k, plan.testbed.fs, &guest, opts)
}

/// The guests of one plan as one run: the first document with the repetitions of the
/// others after its own (numbered on, each case keeping its state's seed), their warnings
/// once each, the first error; and the spec that makes `plan` again here (a guest keeps
/// its own, with its paths for a signature file or a loadfile).
fn merged(plan: &Plan, runs: Vec<GuestRun>) -> GuestRun {
    let mut runs = runs.into_iter();
    let mut out = runs.next().expect("a plan has a boot");
    for (k, r) in runs.enumerate() {
        match (&mut out.doc, r.doc) {
            (Some(doc), Some(more)) => {
                for mut c in more.cases {
                    if !c.warmup {
                        c.rep += k as u32 + 1;
                    }
                    doc.cases.push(c);
                }
                for w in more.warnings {
                    if !doc.warnings.contains(&w) {
                        doc.warnings.push(w);
                    }
                }
                doc.peak_rss_kib = doc.peak_rss_kib.max(more.peak_rss_kib);
                if more.status != "complete" && doc.status == "complete" {
                    doc.status = more.status;
                    doc.error = more.error;
                }
            }
            (None, Some(more)) => out.doc = Some(more),
            _ => {}
        }
        if out.error.is_none() {
            out.error = r.error;
        }
    }
    if let Some(doc) = &mut out.doc {
        doc.plan.repetitions = plan.repetitions;
        doc.plan.spec = serde_json::to_value(crate::plan::spec::RunSpec::resolved(plan)).ok();
    }
    out
}

/// One guest of a boot: its kernel prepared (cached after the first), and its plan run.
fn part(b: &Boot, plan: &Plan, opts: &VmOptions, verbose: bool) -> Booted {
    let k = kernel::prepare(&b.spec, &b.name, &opts.cache)?;
    let run = run_one(&k, plan, opts, verbose)?;
    Ok((k, run))
}

/// A boot's guests as the boot's outcome: their runs made one (`merged`); an
/// interruption, or an error where no guest ran, as the error; a guest that could not be
/// started beside others that ran, as the run's error (what the others measured is kept).
fn joined(b: &Boot, parts: Vec<Booted>) -> Booted {
    let mut kernel = None;
    let mut runs = Vec::new();
    let mut failure: Option<anyhow::Error> = None;
    for p in parts {
        match p {
            Ok((k, r)) => {
                kernel.get_or_insert(k);
                runs.push(r);
            }
            Err(e) if crate::interrupt::Interrupted::caused(&e) => return Err(e),
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }
    match (kernel, failure) {
        (Some(k), failure) => {
            let mut run = merged(&b.plan, runs);
            if run.error.is_none() {
                run.error = failure;
            }
            Ok((k, run))
        }
        (None, Some(e)) => Err(e),
        (None, None) => anyhow::bail!("{}: no guest ran", b.name),
    }
}

/// Run `boots` with up to `jobs` guests at once — a boot whose states are sampled is a
/// guest per repetition (`boots::per_state`), and those run side by side too —, calling
/// `done` with each boot's outcome in the order of `boots` (a boot's result waits for the
/// ones before it). `started` is told when a boot begins. An error from `done` (or an
/// interruption) stops the guests not yet begun; those running end by themselves (they
/// see the interruption).
pub fn run_boots(
    boots: &[Boot],
    jobs: usize,
    opts: &VmOptions,
    verbose: bool,
    started: &(dyn Fn(usize, &Boot) + Sync),
    done: &mut dyn FnMut(usize, Booted) -> Result<()>,
) -> Result<()> {
    let icount = icount(opts)?;
    // Every guest: its boot, its plan, whether it is its boot's first and last.
    let mut parts: Vec<(usize, Plan, bool, bool)> = Vec::new();
    for (i, b) in boots.iter().enumerate() {
        let plans = per_state(&b.plan, icount);
        let n = plans.len();
        for (k, p) in plans.into_iter().enumerate() {
            parts.push((i, p, k == 0, k + 1 == n));
        }
    }
    let jobs = jobs.clamp(1, parts.len().max(1));
    let mut pending: Vec<Booted> = Vec::new();
    let mut deliver = |j: usize, r: Booted, done: &mut dyn FnMut(usize, Booted) -> Result<()>| {
        pending.push(r);
        let (i, _, _, last) = &parts[j];
        if *last {
            done(*i, joined(&boots[*i], std::mem::take(&mut pending)))
        } else {
            Ok(())
        }
    };
    if jobs == 1 {
        // One at a time, on this thread.
        for (j, (i, plan, first, _)) in parts.iter().enumerate() {
            crate::interrupt::check()?;
            if *first {
                started(*i, &boots[*i]);
            }
            let r = part(&boots[*i], plan, opts, verbose);
            deliver(j, r, done)?;
        }
        return Ok(());
    }
    let queue: Mutex<VecDeque<usize>> = Mutex::new((0..parts.len()).collect());
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, Booted)>();
    std::thread::scope(|scope| -> Result<()> {
        for _ in 0..jobs {
            let tx = tx.clone();
            let (queue, stop, parts) = (&queue, &stop, &parts);
            scope.spawn(move || {
                loop {
                    if stop.load(std::sync::atomic::Ordering::Relaxed)
                        || crate::interrupt::check().is_err()
                    {
                        return;
                    }
                    let Some(j) = queue.lock().expect("queue").pop_front() else {
                        return;
                    };
                    let (i, plan, first, _) = &parts[j];
                    if *first {
                        started(*i, &boots[*i]);
                    }
                    if tx.send((j, part(&boots[*i], plan, opts, verbose))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        // Results in the guests' order, so each boot's come together and in turn.
        let mut waiting: BTreeMap<usize, Booted> = BTreeMap::new();
        let mut next = 0;
        let mut failure = None;
        for (j, r) in rx {
            waiting.insert(j, r);
            while let Some(r) = waiting.remove(&next) {
                if failure.is_none()
                    && let Err(e) = deliver(next, r, done)
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
