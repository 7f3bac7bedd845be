//! The executor: issues a workload's system calls from this process, exactly as the
//! workload names them, and measures them — with one client or with K at once, over a
//! fixed amount of work or for a fixed time.
//!
//! It owns the timed window's inner loop and nothing else: it never formats, mounts or
//! probes (what surrounds the window reaches it through [`Around`]). A workload is a
//! [`Client`]: a signature's steps over N files (`steps.rs`) or a compiled dbench loadfile
//! (`script.rs`) — each client owns its thread, its descriptors and its histograms
//! ([`Tally`]); merging them belongs to the results ([`Timed`]), not to the clients.
//!
//! - One client over a fixed amount of work runs on the calling thread, exactly as the
//!   executor always has: nothing else is in its timed window.
//! - K clients run on K threads, each with its own working directory and descriptor table
//!   (`unshare(CLONE_FS | CLONE_FILES)`: as dbench's processes have), confined with the
//!   calling thread's root. They are released together through a [`Gate`]; over a fixed
//!   amount of work the phases of a signature are released together too, so each phase's
//!   time, slab changes and profile stay its own.
//! - For a fixed time the clients loop until a deadline the coordinating thread (the
//!   calling one) sets: a warm-up first, at whose end every client resets its tally (an
//!   epoch the clients see between operations) and the window opens; one-second ticks of
//!   operations, bytes and the longest operation so far; then stop. A client checks the
//!   stop flag and the epoch between operations: two relaxed loads.
//!
//! Memory is O(1) in N: names are rendered into reused buffers and latencies go into
//! fixed-size HDR histograms, one per kind of operation and client.

pub mod script;
pub mod steps;

use crate::interrupt;
use anyhow::{Result, anyhow};
use hdrhistogram::Histogram;
pub use model::results::{ClientResult, OpLatency, Tick};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The longest a client's pause goes without looking for a signal.
const PAUSE_SLICE: Duration = Duration::from_millis(20);

/// What the timed window produced.
#[derive(Clone, Debug, Default)]
pub struct Timed {
    /// The window: the sum of the phases' times (checkpoints between phases excluded), or
    /// for a run for a time, from the warm-up's end to the stop.
    pub wall_ns: u64,
    /// Time of each phase, summed over rounds, in signature order (for a run for a time,
    /// the clients' average time in each).
    pub phase_ns: Vec<u64>,
    /// System calls issued in the window.
    pub calls: u64,
    /// Per syscall (a signature) or per loadfile operation (a script), every client's.
    pub latency: Vec<OpLatency>,
    /// Operations: syscalls for a signature, loadfile operations for a script.
    pub ops: u64,
    /// Bytes the reads and writes asked for (dbench's throughput counts these).
    pub bytes: u64,
    pub max_latency_ns: u64,
    pub clients: Vec<ClientResult>,
    pub ticks: Vec<Tick>,
    /// What the clients found that does not stop a run (a failed read a loadfile expected
    /// to succeed), one line each with how often.
    pub notes: Vec<String>,
}

impl Timed {
    /// The window's operations and bytes a second (a run for a time, or of clients).
    pub fn throughput(&self) -> model::results::Throughput {
        let s = (self.wall_ns as f64 / 1e9).max(1e-9);
        model::results::Throughput {
            ops: self.ops,
            bytes: self.bytes,
            ops_per_s: self.ops as f64 / s,
            mb_per_s: self.bytes as f64 / 1e6 / s,
            max_latency_ns: self.max_latency_ns,
            passes: self.clients.iter().map(|c| c.passes).sum(),
        }
    }
}

/// The kinds of operation of one client, each with a histogram, and its counts.
pub struct Tally {
    classes: Vec<(&'static str, Histogram<u32>, u64)>,
    /// The client thread's CPU and context switches when the tally last started.
    start: Option<Usage>,
    /// Time since then spent waiting at the gates (for the release, between phases):
    /// the clients' own interval, off-CPU included, is the window's less these waits.
    pub gated_ns: u64,
    pub ops: u64,
    pub calls: u64,
    pub bytes: u64,
    pub max_ns: u64,
    /// Units of work done (files, loadfile lines): what progress counts.
    pub done: u64,
}

/// 1 ns .. 10 min at 3 significant digits. The counts are 32-bit (a bucket would need 4
/// billion operations of one latency to overflow) and untouched buckets are never paged
/// in, so a histogram costs little memory per client.
fn histogram() -> Result<Histogram<u32>> {
    Histogram::new_with_bounds(1, 600_000_000_000, 3).map_err(|e| anyhow!("histogram: {e}"))
}

impl Tally {
    pub fn new(names: &[&'static str]) -> Result<Tally> {
        Ok(Tally {
            classes: names
                .iter()
                .map(|n| Ok((*n, histogram()?, 0)))
                .collect::<Result<_>>()?,
            start: None,
            gated_ns: 0,
            ops: 0,
            calls: 0,
            bytes: 0,
            max_ns: 0,
            done: 0,
        })
    }

    /// One operation of kind `class` that took `ns`.
    #[inline]
    pub fn record(&mut self, class: usize, ns: u64) {
        let (_, h, sum) = &mut self.classes[class];
        h.saturating_record(ns.max(1));
        *sum += ns;
        self.ops += 1;
        self.max_ns = self.max_ns.max(ns);
    }

    /// Start counting afresh, on the client's thread: before the window, and again when
    /// the warm-up ended.
    pub fn reset(&mut self) {
        self.start = Some(Usage::now());
        self.gated_ns = 0;
        for (_, h, sum) in &mut self.classes {
            h.reset();
            *sum = 0;
        }
        self.ops = 0;
        self.calls = 0;
        self.bytes = 0;
        self.max_ns = 0;
        self.done = 0;
    }

    /// Every kind of operation that happened, over the tallies of all clients.
    pub fn merge(tallies: &[&Tally]) -> Result<Vec<OpLatency>> {
        let Some(first) = tallies.first() else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for (k, (name, _, _)) in first.classes.iter().enumerate() {
            let mut h = histogram()?;
            let mut sum = 0u64;
            for t in tallies {
                let (_, th, ts) = &t.classes[k];
                h.add(th).map_err(|e| anyhow!("merging histograms: {e}"))?;
                sum += ts;
            }
            if h.is_empty() {
                continue;
            }
            out.push(OpLatency {
                syscall: name.to_string(),
                count: h.len(),
                min_ns: h.min(),
                p50_ns: h.value_at_quantile(0.5),
                p90_ns: h.value_at_quantile(0.9),
                p99_ns: h.value_at_quantile(0.99),
                max_ns: h.max(),
                mean_ns: sum as f64 / h.len() as f64,
            });
        }
        Ok(out)
    }
}

/// What a client publishes for the coordinator after each operation (its own values:
/// single writer, relaxed stores), on a cache line of its own.
#[derive(Default)]
#[repr(align(64))]
pub struct Progress {
    epoch: AtomicU32,
    done: AtomicU64,
    ops: AtomicU64,
    bytes: AtomicU64,
    max_ns: AtomicU64,
}

/// What the clients of one case share with the thread that coordinates them.
pub struct Ctl {
    stop: AtomicBool,
    epoch: AtomicU32,
    progress: Box<[Progress]>,
    /// The first error a client met (the others are stopped).
    failed: Mutex<Option<anyhow::Error>>,
    /// Wakes the coordinator when a client fails, so it need not poll: in a guest of one
    /// CPU every wake-up of the coordinator preempts a client.
    woken: Condvar,
}

impl Ctl {
    pub fn new(clients: usize) -> Ctl {
        Ctl {
            stop: AtomicBool::new(false),
            epoch: AtomicU32::new(0),
            progress: (0..clients).map(|_| Progress::default()).collect(),
            failed: Mutex::new(None),
            woken: Condvar::new(),
        }
    }

    /// Whether the clients must stop now: the deadline passed, a client failed, or a
    /// signal asked the run to stop.
    #[inline]
    pub fn stopping(&self) -> bool {
        self.stop.load(Relaxed) || interrupt::requested()
    }

    pub fn stop(&self) {
        self.stop.store(true, Relaxed);
        // Under the lock, so a client between its check and its wait in `pause` is not
        // missed.
        let _f = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        self.woken.notify_all();
    }

    /// A client's wait (a loadfile's Sleep, a timestamp's pacing): `d` long, or until the
    /// run stops — the deadline or a failure at once, a signal within [`PAUSE_SLICE`].
    /// False when it ended because the run is stopping.
    pub fn pause(&self, d: Duration) -> bool {
        let until = Instant::now().checked_add(d);
        loop {
            if self.stopping() {
                return false;
            }
            let now = Instant::now();
            let left = match until {
                Some(u) if u <= now => return true,
                Some(u) => u - now,
                None => PAUSE_SLICE,
            };
            let f = self.failed.lock().unwrap_or_else(|p| p.into_inner());
            if self.stop.load(Relaxed) {
                return false;
            }
            let _ = self.woken.wait_timeout(f, left.min(PAUSE_SLICE));
        }
    }

    /// The warm-up's generation: it moves when the warm-up ends.
    #[inline]
    pub fn epoch(&self) -> u32 {
        self.epoch.load(Relaxed)
    }

    /// Make `t` what client `me` has done, for the coordinator's ticks.
    #[inline]
    pub fn publish(&self, me: usize, epoch: u32, t: &Tally) {
        if let Some(p) = self.progress.get(me) {
            p.epoch.store(epoch, Relaxed);
            p.done.store(t.done, Relaxed);
            p.ops.store(t.ops, Relaxed);
            p.bytes.store(t.bytes, Relaxed);
            p.max_ns.store(t.max_ns, Relaxed);
        }
    }

    /// A client failed: keep its error (the first one) and stop the others.
    pub fn fail(&self, e: anyhow::Error) {
        {
            let mut f = self.failed.lock().unwrap_or_else(|p| p.into_inner());
            if f.is_none() {
                *f = Some(e);
            }
        }
        self.stop();
    }

    /// Sleep until `until`, or until a client fails, or at most a second (a signal is
    /// noticed within it).
    fn sleep_until(&self, until: Instant) {
        let now = Instant::now();
        if until <= now {
            return;
        }
        let f = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        if f.is_some() {
            return;
        }
        let _ = self
            .woken
            .wait_timeout(f, (until - now).min(Duration::from_secs(1)));
    }

    fn take_failure(&self) -> Option<anyhow::Error> {
        self.failed.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    fn failed(&self) -> bool {
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// The clients' work done, operations, bytes and longest operation, of this epoch.
    fn totals(&self) -> (u64, u64, u64, u64) {
        let epoch = self.epoch();
        let mut t = (0, 0, 0, 0);
        for p in self.progress.iter() {
            t.0 += p.done.load(Relaxed);
            if p.epoch.load(Relaxed) == epoch {
                t.1 += p.ops.load(Relaxed);
                t.2 += p.bytes.load(Relaxed);
                t.3 = t.3.max(p.max_ns.load(Relaxed));
            }
        }
        t
    }
}

/// A barrier for the clients and their coordinator that can be given up: when a client
/// fails or a thread cannot be started, `abort` releases every waiter, now and later, so
/// nobody waits for a party that will never come.
pub struct Gate {
    parties: usize,
    state: Mutex<GateState>,
    cv: Condvar,
}

struct GateState {
    arrived: usize,
    generation: u64,
    given_up: bool,
    /// When the last generation opened: the last party's arrival, not when a waiter woke
    /// (on a loaded machine that can be long after).
    opened: Option<Instant>,
}

impl Gate {
    pub fn new(parties: usize) -> Gate {
        Gate {
            parties,
            state: Mutex::new(GateState {
                arrived: 0,
                generation: 0,
                given_up: false,
                opened: None,
            }),
            cv: Condvar::new(),
        }
    }

    /// Wait until every party arrived; false when the gate was given up.
    pub fn wait(&self) -> bool {
        self.wait_idle(&mut || {}).is_some()
    }

    /// As `wait`, calling `idle` every 100 ms while it waits (the coordinator's progress
    /// and signal checks). Returns when the gate opened, None when it was given up.
    pub fn wait_idle(&self, idle: &mut dyn FnMut()) -> Option<Instant> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.given_up {
            return None;
        }
        let generation = s.generation;
        s.arrived += 1;
        if s.arrived == self.parties {
            s.arrived = 0;
            s.generation += 1;
            let now = Instant::now();
            s.opened = Some(now);
            self.cv.notify_all();
            return Some(now);
        }
        loop {
            let (next, _) = self
                .cv
                .wait_timeout(s, Duration::from_millis(100))
                .unwrap_or_else(|p| p.into_inner());
            s = next;
            if s.given_up {
                return None;
            }
            if s.generation != generation {
                return s.opened;
            }
            drop(s);
            idle();
            s = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if s.given_up {
                return None;
            }
            if s.generation != generation {
                return s.opened;
            }
        }
    }

    pub fn abort(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.given_up = true;
        self.cv.notify_all();
    }
}

/// How long the clients work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// A fixed amount of work: a signature's window once, a loadfile N times.
    Count,
    /// Loop until `time` has passed after a `warmup`.
    Time { warmup: Duration, time: Duration },
}

/// What surrounds the timed window: the probes, progress, checkpoints. The plan drives the
/// probes through it; the executor says when.
pub trait Around {
    /// Client threads are about to start (a profile must exist before them to cover them).
    fn before_clients(&mut self) {}
    /// The clients of a run for a time are ready and about to be released, the window to
    /// open only after the warm-up (a guest waits for a quiet machine and a timer tick).
    fn before_release(&mut self) {}
    /// Units of work done, for a progress bar (setup and a run over a fixed amount).
    fn progress(&mut self, done: u64);
    /// Arm the window. `running`: the clients are already working (after a warm-up), so
    /// the machine cannot be waited on to be quiet.
    fn open(&mut self, running: bool);
    /// Between phases, untimed, every client waiting: phase `k` ended.
    fn phase_ended(&mut self, k: usize);
    /// A second of a run for a time passed (`warmup`: still in the warm-up).
    fn second(&mut self, tick: &Tick, clients: usize, warmup: bool);
    /// Disarm the window, right after the last operation.
    fn close(&mut self);
}

/// What a client tells the one that runs it, from inside its timed part.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// Units of work done so far (every few thousand), for progress.
    Done(u64),
    /// Phase `k` ended (a run over a fixed amount of work, between phases).
    PhaseEnded(usize),
}

/// Nothing around the window: no probes, no progress (the unit tests' seam).
#[cfg(test)]
pub struct Quiet;

#[cfg(test)]
impl Around for Quiet {
    fn progress(&mut self, _: u64) {}
    fn open(&mut self, _: bool) {}
    fn phase_ended(&mut self, _: usize) {}
    fn second(&mut self, _: &Tick, _: usize, _: bool) {}
    fn close(&mut self) {}
}

/// One client's work. `prepare` runs untimed on the client's thread, in its directory.
pub trait Client: Send {
    fn prepare(&mut self, progress: &mut dyn FnMut(u64)) -> Result<()>;
    /// Phases a run over a fixed amount of work goes through (a signature's rounds ×
    /// phases; 1 for a loadfile).
    fn segments(&self) -> usize;
    /// The timed part: over a fixed amount of work (telling `hook` of progress and of
    /// every phase's end but the last), or until `ctl` says stop. `me` is the client's
    /// index.
    fn run(
        &mut self,
        ctl: &Ctl,
        me: usize,
        bound: Bound,
        hook: Option<&mut dyn FnMut(Event)>,
    ) -> Result<()>;
    fn tally(&self) -> &Tally;
    fn tally_mut(&mut self) -> &mut Tally;
    /// Time spent in each phase.
    fn phase_ns(&self) -> Vec<u64>;
    fn passes(&self) -> f64;
    /// Non-fatal findings, each once with how often.
    fn notes(&self) -> Vec<(String, u64)>;
    /// Close what the workload left open (untimed).
    fn finish(&mut self);
}

/// A thread's CPU time and context switches, to take differences of.
#[derive(Clone, Copy, Debug)]
struct Usage {
    at: Instant,
    cpu_ns: u64,
    voluntary: u64,
    involuntary: u64,
}

impl Usage {
    fn now() -> Usage {
        let ru = crate::sys::os::rusage_thread();
        Usage {
            at: Instant::now(),
            cpu_ns: crate::sys::os::thread_cpu_ns(),
            voluntary: ru.ru_nvcsw as u64,
            involuntary: ru.ru_nivcsw as u64,
        }
    }
}

/// What client `c` did since its tally started, on its own thread.
fn client_result(c: &dyn Client) -> ClientResult {
    let end = Usage::now();
    let t = c.tally();
    let start = t.start.unwrap_or(end);
    let wall = (end.at.duration_since(start.at).as_nanos() as u64).saturating_sub(t.gated_ns);
    let cpu = end.cpu_ns.saturating_sub(start.cpu_ns);
    ClientResult {
        ops: t.ops,
        bytes: t.bytes,
        passes: c.passes(),
        cpu_ns: cpu,
        off_cpu_ns: wall.saturating_sub(cpu),
        voluntary_switches: end.voluntary.saturating_sub(start.voluntary),
        involuntary_switches: end.involuntary.saturating_sub(start.involuntary),
    }
}

/// A client ready to run: the workload and the directory it works in (relative to the
/// working directory of the calling thread, made for it; None: that directory itself).
pub struct Seat<C> {
    pub client: C,
    pub dir: Option<String>,
}

/// Run the clients' timed window — one client over a fixed amount of work on this thread,
/// anything else on threads of their own coordinated from this one.
pub fn run<C: Client>(
    mut seats: Vec<Seat<C>>,
    bound: Bound,
    around: &mut dyn Around,
) -> Result<Timed> {
    if seats.len() == 1 && seats[0].dir.is_none() && bound == Bound::Count {
        return inline(&mut seats[0].client, around);
    }
    coordinate(seats, bound, around)
}

/// One client over a fixed amount of work, on the calling thread: exactly the executor of
/// a single workload thread.
fn inline<C: Client>(c: &mut C, around: &mut dyn Around) -> Result<Timed> {
    let ctl = Ctl::new(1);
    c.prepare(&mut |d| around.progress(d))?;
    c.tally_mut().reset();
    around.open(false);
    let r = {
        let mut hook = |e: Event| match e {
            Event::Done(d) => around.progress(d),
            Event::PhaseEnded(k) => around.phase_ended(k),
        };
        c.run(&ctl, 0, Bound::Count, Some(&mut hook))
    };
    around.close();
    let client = client_result(&*c);
    let out = r.and_then(|()| {
        let phase_ns = c.phase_ns();
        collect(&[&*c as &dyn Client], vec![client], phase_ns, Vec::new())
    });
    c.finish();
    out
}

/// The clients' results merged.
fn collect(
    clients: &[&dyn Client],
    results: Vec<ClientResult>,
    phase_ns: Vec<u64>,
    ticks: Vec<Tick>,
) -> Result<Timed> {
    let tallies: Vec<&Tally> = clients.iter().map(|c| c.tally()).collect();
    // The same finding in several clients is one note, with every client's count.
    let mut counted: Vec<(String, u64)> = Vec::new();
    for (m, n) in clients.iter().flat_map(|c| c.notes()) {
        match counted.iter_mut().find(|(x, _)| *x == m) {
            Some(c) => c.1 += n,
            None => counted.push((m, n)),
        }
    }
    let notes = counted
        .into_iter()
        .map(|(m, n)| {
            if n == 1 {
                m
            } else {
                format!("{m} ({n} times)")
            }
        })
        .collect();
    Ok(Timed {
        wall_ns: phase_ns.iter().sum(),
        phase_ns,
        calls: tallies.iter().map(|t| t.calls).sum(),
        latency: Tally::merge(&tallies)?,
        ops: tallies.iter().map(|t| t.ops).sum(),
        bytes: tallies.iter().map(|t| t.bytes).sum(),
        max_latency_ns: tallies.iter().map(|t| t.max_ns).max().unwrap_or(0),
        clients: results,
        ticks,
        notes,
    })
}

/// The gates of a coordinated run, in the order they are passed.
struct Gates {
    /// Every client prepared.
    ready: Gate,
    /// The window is open (or the warm-up may start): go.
    start: Gate,
    /// A phase ended for every client (a run over a fixed amount).
    phase_end: Gate,
    /// The checkpoint is taken: the next phase starts.
    phase_start: Gate,
    /// Every client stopped.
    done: Gate,
    /// The window is closed: the clients may close their descriptors.
    closed: Gate,
}

impl Gates {
    fn new(parties: usize) -> Gates {
        Gates {
            ready: Gate::new(parties),
            start: Gate::new(parties),
            phase_end: Gate::new(parties),
            phase_start: Gate::new(parties),
            done: Gate::new(parties),
            closed: Gate::new(parties),
        }
    }

    fn abort(&self) {
        for g in [
            &self.ready,
            &self.start,
            &self.phase_end,
            &self.phase_start,
            &self.done,
            &self.closed,
        ] {
            g.abort();
        }
    }
}

/// A client's thread: its own directory and descriptor table, prepare, then the gates.
fn client_thread<C: Client>(
    seat: Seat<C>,
    me: usize,
    bound: Bound,
    ctl: &Ctl,
    g: &Gates,
) -> (C, Result<()>, ClientResult) {
    let Seat { mut client, dir } = seat;
    // Whatever else unwinds this thread, the others must not wait for it at a gate.
    let _abandon = Abandon { me, ctl, g };
    let prepared = caught(|| -> Result<()> {
        crate::sys::os::unshare_fs_files()
            .map_err(|e| anyhow!("client {me}: unshare(CLONE_FS|CLONE_FILES): {e}"))?;
        if let Some(d) = &dir {
            match std::fs::create_dir(d) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(anyhow!("client {me}: cannot create its directory {d}: {e}")),
            }
            std::env::set_current_dir(d)
                .map_err(|e| anyhow!("client {me}: cannot enter its directory {d}: {e}"))?;
        }
        let progress = &ctl.progress[me];
        client
            .prepare(&mut |done| progress.done.store(done, Relaxed))
            .map_err(|e| anyhow!("client {me}: {e:#}"))
    })
    .map_err(|e| anyhow!("client {me}: {e:#}"))
    .and_then(|r| r);
    if let Err(e) = prepared {
        ctl.fail(e);
    }
    g.ready.wait();
    client.tally_mut().reset();
    let waited = Instant::now();
    g.start.wait();
    client.tally_mut().gated_ns += waited.elapsed().as_nanos() as u64;
    let r = if ctl.stopping() {
        Ok(())
    } else {
        let mut gated = 0u64;
        let mut hook = |e: Event| {
            if let Event::PhaseEnded(_) = e {
                let waited = Instant::now();
                g.phase_end.wait();
                g.phase_start.wait();
                gated += waited.elapsed().as_nanos() as u64;
            }
        };
        let r = caught(|| client.run(ctl, me, bound, Some(&mut hook))).and_then(|r| r);
        client.tally_mut().gated_ns += gated;
        r
    };
    let result = client_result(&client);
    if let Err(e) = &r {
        ctl.fail(anyhow!("client {me}: {e:#}"));
    }
    g.done.wait();
    g.closed.wait();
    client.finish();
    (client, r, result)
}

/// `f`, with a panic turned into an error: a client that panics fails its case like any
/// other error, and releases the clients waiting for it.
fn caught<T>(f: impl FnOnce() -> T) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        anyhow!("panicked ({what}): a bug in sigbench, please report it")
    })
}

/// Gives a client's gates up if its thread unwinds past them.
struct Abandon<'a> {
    me: usize,
    ctl: &'a Ctl,
    g: &'a Gates,
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.ctl
                .fail(anyhow!("client {}: its thread panicked", self.me));
            self.g.abort();
        }
    }
}

/// K client threads, released together, coordinated from this thread.
/// A client thread as joined: the client, how its run ended, what it counted.
type Joined<C> = std::thread::Result<(C, Result<()>, ClientResult)>;

fn coordinate<C: Client>(
    seats: Vec<Seat<C>>,
    bound: Bound,
    around: &mut dyn Around,
) -> Result<Timed> {
    let k = seats.len();
    let ctl = Ctl::new(k);
    let segments = seats.first().map_or(1, |s| s.client.segments()).max(1);
    let g = Gates::new(k + 1);
    around.before_clients();
    let (finished, phase_ns, ticks, window) = std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(k);
        for (me, seat) in seats.into_iter().enumerate() {
            let (ctl, g) = (&ctl, &g);
            let spawned = std::thread::Builder::new()
                .name(format!("sigbench-client-{me}"))
                .spawn_scoped(s, move || client_thread(seat, me, bound, ctl, g));
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    ctl.fail(anyhow!(
                        "cannot start client {me} of {k}: {e} (run fewer clients, or raise the limits on threads: ulimit -u, /proc/sys/kernel/threads-max)"
                    ));
                    g.abort();
                    break;
                }
            }
        }
        let watch = |around: &mut dyn Around| {
            if interrupt::requested() {
                ctl.stop();
            }
            if ctl.failed() {
                // Nobody waits for a client that gave up.
                ctl.stop();
                g.abort();
            }
            around.progress(ctl.totals().0);
        };
        let _ = g.ready.wait_idle(&mut || watch(around));
        let mut ticks = Vec::new();
        let mut phase_ns = vec![0u64; segments];
        let mut window = Duration::ZERO;
        match bound {
            Bound::Count => phase_ns = phase_times(&g, segments, around, &watch),
            Bound::Time { warmup, time } => {
                if warmup.is_zero() {
                    around.open(false);
                } else {
                    around.before_release();
                }
                g.start.wait();
                let opened = timed_loop(&ctl, k, warmup, time, around, &mut ticks);
                let done = g
                    .done
                    .wait_idle(&mut || watch(around))
                    .unwrap_or_else(Instant::now);
                window = opened.map_or(Duration::ZERO, |o| done.saturating_duration_since(o));
            }
        }
        around.close();
        g.closed.wait();
        let finished: Vec<Joined<C>> = handles.into_iter().map(|h| h.join()).collect();
        (finished, phase_ns, ticks, window)
    });
    let (clients, results) = joined(finished, &ctl)?;
    interrupt::check()?;
    let refs: Vec<&dyn Client> = clients.iter().map(|c| c as &dyn Client).collect();
    match bound {
        Bound::Count => collect(&refs, results, phase_ns, ticks),
        Bound::Time { .. } => {
            // Each phase: the clients' average time in it; the window: as measured.
            let per: Vec<Vec<u64>> = refs.iter().map(|c| c.phase_ns()).collect();
            let phases = per.first().map_or(0, Vec::len);
            let avg = (0..phases)
                .map(|p| per.iter().map(|v| v[p]).sum::<u64>() / per.len().max(1) as u64)
                .collect();
            let mut t = collect(&refs, results, avg, ticks)?;
            t.wall_ns = window.as_nanos() as u64;
            Ok(t)
        }
    }
}

/// A run over a count, from the release: each phase's time, from its gate's opening to the
/// next's — the moments the clients were released and the last one finished, whenever
/// this thread woke — `watch` called while it waits.
fn phase_times(
    g: &Gates,
    segments: usize,
    around: &mut dyn Around,
    watch: &dyn Fn(&mut dyn Around),
) -> Vec<u64> {
    let mut phase_ns = vec![0u64; segments];
    around.open(false);
    let mut t = g.start.wait_idle(&mut || {}).unwrap_or_else(Instant::now);
    for (seg, ns) in phase_ns.iter_mut().enumerate() {
        let last = seg + 1 == segments;
        let end = if last { &g.done } else { &g.phase_end };
        let ended = end
            .wait_idle(&mut || watch(around))
            .unwrap_or_else(Instant::now);
        *ns = ended.saturating_duration_since(t).as_nanos() as u64;
        if !last {
            around.phase_ended(seg);
            t = g
                .phase_start
                .wait_idle(&mut || {})
                .unwrap_or_else(Instant::now);
        }
    }
    phase_ns
}

/// The clients and their results once their threads are joined, or the first failure: the
/// one a client reported to the others (`Ctl`), else the first error returned or panic.
fn joined<C: Client>(finished: Vec<Joined<C>>, ctl: &Ctl) -> Result<(Vec<C>, Vec<ClientResult>)> {
    let mut clients = Vec::new();
    let mut results = Vec::new();
    let mut first_error = None;
    for f in finished {
        match f {
            Ok((c, r, res)) => {
                if let Err(e) = r {
                    first_error.get_or_insert(e);
                }
                clients.push(c);
                results.push(res);
            }
            Err(_) => {
                first_error.get_or_insert(anyhow!("a client thread panicked"));
            }
        }
    }
    match ctl.take_failure().or(first_error) {
        Some(e) => Err(e),
        None => Ok((clients, results)),
    }
}

/// A run for a time, from the release: the warm-up, its end (a new epoch, the window
/// opens), a tick a second, the deadline. Returns when the window opened (None: it never
/// did, the run was stopped first).
fn timed_loop(
    ctl: &Ctl,
    clients: usize,
    warmup: Duration,
    time: Duration,
    around: &mut dyn Around,
    ticks: &mut Vec<Tick>,
) -> Option<Instant> {
    let released = Instant::now();
    let mut opened = warmup.is_zero().then_some(released);
    let mut next = released + Duration::from_secs(1);
    loop {
        let now = Instant::now();
        let deadline = match opened {
            Some(o) => o + time,
            None => released + warmup,
        };
        // Awake only when something is due: in a guest of one CPU every wake-up preempts
        // a client, and under the icount clock moves where the others are interleaved.
        if next.min(deadline) > now {
            ctl.sleep_until(next.min(deadline));
        }
        if ctl.stopping() || ctl.failed() {
            ctl.stop();
            return opened;
        }
        let now = Instant::now();
        if opened.is_none() && now >= released + warmup {
            ctl.epoch.fetch_add(1, Relaxed);
            around.open(true);
            let o = Instant::now();
            opened = Some(o);
            next = o + Duration::from_secs(1);
            continue;
        }
        if let Some(o) = opened
            && now >= o + time
        {
            ctl.stop();
            return opened;
        }
        if now >= next {
            let (_, ops, bytes, max) = ctl.totals();
            let since = opened.unwrap_or(released);
            let tick = Tick {
                s: now.duration_since(since).as_secs_f64().round() as u32,
                ops,
                bytes,
                max_latency_ns: max,
            };
            if opened.is_some() {
                ticks.push(tick);
            }
            around.second(&tick, clients, opened.is_none());
            next += Duration::from_secs(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::script::ScriptClient;
    use super::steps::Executor;
    use super::*;
    use crate::signature::Signature;
    use crate::testbed::confine::run_in_dir;
    use std::sync::Arc;

    fn temp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("sigbench-exec-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// What the window saw: opened while running or not, phases ended, seconds ticked.
    #[derive(Default)]
    struct Seen {
        opened: Vec<bool>,
        phases: Vec<usize>,
        seconds: Vec<(u32, bool)>,
        closed: bool,
        before: bool,
    }

    impl Around for Seen {
        fn before_clients(&mut self) {
            self.before = true;
        }
        fn progress(&mut self, _: u64) {}
        fn open(&mut self, running: bool) {
            self.opened.push(running);
        }
        fn phase_ended(&mut self, k: usize) {
            self.phases.push(k);
        }
        fn second(&mut self, t: &Tick, _: usize, warmup: bool) {
            self.seconds.push((t.s, warmup));
        }
        fn close(&mut self) {
            self.closed = true;
        }
    }

    /// `k` clients of `sig` over `n` files each, in directories `client0` … of their own.
    fn seats_of(sig: &Signature, k: usize, n: u64) -> Vec<Seat<Executor<'_>>> {
        (0..k)
            .map(|i| Seat {
                client: Executor::new(sig, n, 1).unwrap(),
                dir: Some(format!("client{i}")),
            })
            .collect()
    }

    fn churn() -> Signature {
        Signature::parse(
            "format = 1\nname = \"c\"\n[[phase]]\nname = \"create\"\nsteps = [\n\
             { op = \"openat\", path = \"{name}\", flags = \"O_WRONLY|O_CREAT|O_EXCL\", slot = \"f\" },\n\
             { op = \"write\", slot = \"f\", size = 100 },\n\
             { op = \"close\", slot = \"f\" },\n]\n\
             [[phase]]\nname = \"delete\"\nsteps = [ { op = \"unlink\", path = \"{name}\" } ]\n",
            "churn.toml",
        )
        .unwrap()
    }

    #[test]
    fn clients_run_in_directories_of_their_own_and_phases_are_released_together() {
        let dir = temp("count");
        let sig = churn();
        let seats = seats_of(&sig, 3, 50);
        let mut seen = Seen::default();
        let t = run_in_dir(&dir, || run(seats, Bound::Count, &mut seen))
            .unwrap()
            .unwrap();
        // Every client did its own 50 files: 4 calls each, in two phases.
        assert_eq!(t.calls, 3 * 50 * 4);
        assert_eq!(t.clients.len(), 3);
        assert!(t.clients.iter().all(|c| c.ops == 200 && c.bytes == 5000));
        assert_eq!(t.bytes, 15000);
        assert_eq!(t.phase_ns.len(), 2);
        assert_eq!(t.wall_ns, t.phase_ns.iter().sum::<u64>());
        // One checkpoint between the phases, with every client waiting; the window around.
        assert_eq!(seen.phases, [0]);
        assert_eq!(seen.opened, [false]);
        assert!(seen.before && seen.closed);
        let calls: Vec<(&str, u64)> = t
            .latency
            .iter()
            .map(|l| (l.syscall.as_str(), l.count))
            .collect();
        assert_eq!(
            calls,
            [
                ("openat", 150),
                ("write", 150),
                ("close", 150),
                ("unlink", 150)
            ]
        );
        for i in 0..3 {
            // Created and deleted: each directory exists and is empty again.
            let d = dir.join(format!("client{i}"));
            assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0, "{}", d.display());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_copy_of_the_loop_does_the_same_work() {
        let sig = churn();
        let mut done = Vec::new();
        for layout in 0..steps::LAYOUTS + 1 {
            let dir = temp(&format!("layout{layout}"));
            let mut e = Executor::new(&sig, 30, 1).unwrap();
            e.place(layout);
            let seats = vec![Seat {
                client: e,
                dir: None,
            }];
            let t = run_in_dir(&dir, || run(seats, Bound::Count, &mut Seen::default()))
                .unwrap()
                .unwrap();
            let calls: Vec<(String, u64)> = t
                .latency
                .iter()
                .map(|l| (l.syscall.clone(), l.count))
                .collect();
            done.push((t.calls, t.bytes, calls));
            assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
            std::fs::remove_dir_all(&dir).unwrap();
        }
        assert_eq!(done[0].0, 30 * 4);
        assert!(done.iter().all(|d| *d == done[0]), "{done:?}");
    }

    #[test]
    fn a_run_for_a_time_loops_warms_up_and_opens_the_window_at_the_warm_ups_end() {
        let dir = temp("time");
        let sig = churn();
        let seats = seats_of(&sig, 2, 20);
        let mut seen = Seen::default();
        let bound = Bound::Time {
            warmup: Duration::from_millis(300),
            time: Duration::from_millis(1300),
        };
        let started = Instant::now();
        let t = run_in_dir(&dir, || run(seats, bound, &mut seen))
            .unwrap()
            .unwrap();
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(1600), "{took:?}");
        assert!(took < Duration::from_secs(4), "{took:?}");
        // The window opened while the clients ran, after the warm-up, and lasted its time.
        assert_eq!(seen.opened, [true]);
        assert!(
            t.wall_ns >= 1_300_000_000 && t.wall_ns < 2_500_000_000,
            "{}",
            t.wall_ns
        );
        // Many passes over 20 files each; only the window's counted.
        assert!(t.clients.iter().all(|c| c.passes >= 2.0), "{:?}", t.clients);
        assert_eq!(t.ops, t.clients.iter().map(|c| c.ops).sum::<u64>());
        assert_eq!(t.calls, t.ops);
        // One tick in the warm-up is not kept; the window's second is.
        assert!(seen.seconds.iter().any(|(_, w)| !w), "{:?}", seen.seconds);
        assert_eq!(
            t.ticks.len(),
            seen.seconds.iter().filter(|(_, w)| !w).count()
        );
        assert!(t.ticks[0].ops > 0 && t.ticks[0].ops <= t.ops);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_client_that_fails_stops_the_others_with_its_error() {
        let dir = temp("fail");
        let sig = churn();
        // Client 1 finds its files there already: its O_EXCL create fails.
        std::fs::create_dir_all(dir.join("client1")).unwrap();
        std::fs::write(dir.join("client1/file_7"), "x").unwrap();
        let seats = seats_of(&sig, 3, 50);
        let e = run_in_dir(&dir, || run(seats, Bound::Count, &mut Quiet))
            .unwrap()
            .unwrap_err();
        let e = format!("{e:#}");
        assert!(
            e.starts_with("client 1: churn.toml:6: phase `create`, file 7 of 50: openat(\"file_7\") failed with EEXIST"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Runs `f` on a thread of its own and gives up after `limit`: a test of something
    /// that used to hang fails instead of hanging the suite.
    fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(limit)
            .unwrap_or_else(|_| panic!("still running after {limit:?}"))
    }

    /// A client that panics in its run (issue 45, item 1: a loadfile's timestamp once
    /// panicked every client and the coordinator waited forever at `done`).
    struct Panics<'s>(Executor<'s>, bool);

    impl Client for Panics<'_> {
        fn prepare(&mut self, p: &mut dyn FnMut(u64)) -> Result<()> {
            self.0.prepare(p)
        }
        fn segments(&self) -> usize {
            self.0.segments()
        }
        fn run(
            &mut self,
            ctl: &Ctl,
            me: usize,
            bound: Bound,
            hook: Option<&mut dyn FnMut(Event)>,
        ) -> Result<()> {
            if self.1 {
                panic!("planted");
            }
            self.0.run(ctl, me, bound, hook)
        }
        fn tally(&self) -> &Tally {
            self.0.tally()
        }
        fn tally_mut(&mut self) -> &mut Tally {
            self.0.tally_mut()
        }
        fn phase_ns(&self) -> Vec<u64> {
            self.0.phase_ns()
        }
        fn passes(&self) -> f64 {
            self.0.passes()
        }
        fn notes(&self) -> Vec<(String, u64)> {
            self.0.notes()
        }
        fn finish(&mut self) {
            self.0.finish()
        }
    }

    #[test]
    fn a_client_that_panics_fails_the_case_and_releases_the_others() {
        let dir = temp("panic");
        for bound in [
            Bound::Count,
            Bound::Time {
                warmup: Duration::from_millis(100),
                time: Duration::from_secs(30),
            },
        ] {
            let dir = dir.clone();
            let e = within(Duration::from_secs(20), move || {
                let sig = churn();
                let seats: Vec<Seat<Panics>> = (0..3)
                    .map(|i| Seat {
                        client: Panics(Executor::new(&sig, 20, 1).unwrap(), i == 1),
                        dir: Some(format!("client{i}")),
                    })
                    .collect();
                run_in_dir(&dir, || run(seats, bound, &mut Quiet))
                    .unwrap()
                    .map(|_| ())
                    .unwrap_err()
            });
            let e = format!("{e:#}");
            assert!(
                e.starts_with("client 1: panicked (planted)"),
                "{bound:?}: {e}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_client_s_waits_end_at_the_deadline_and_at_a_stop() {
        // Issue 45, item 3: a minute's Sleep and a timestamp hours into the pass, in a run
        // of 300 ms: both end with the run.
        let dir = temp("pause");
        for text in [
            "Mkdir \"\\clients\" NT_STATUS_OK\nSleep 60000000 NT_STATUS_OK\n",
            "0 Mkdir \"\\clients\" NT_STATUS_OK\n80000 Mkdir \"\\x\" NT_STATUS_OK\n",
        ] {
            let s = script(text);
            let dir = dir.clone();
            let started = Instant::now();
            let t = within(Duration::from_secs(20), move || {
                let seats: Vec<Seat<ScriptClient>> = (0..2)
                    .map(|id| Seat {
                        client: ScriptClient::new(Arc::clone(&s), id, 1, vec![0u8; 1].into())
                            .unwrap(),
                        dir: None,
                    })
                    .collect();
                let bound = Bound::Time {
                    warmup: Duration::from_millis(100),
                    time: Duration::from_millis(300),
                };
                run_in_dir(&dir, || run(seats, bound, &mut Quiet))
                    .unwrap()
                    .unwrap()
            });
            let took = started.elapsed();
            assert!(took < Duration::from_millis(1500), "{text:?}: {took:?}");
            assert!(t.wall_ns >= 300_000_000, "{}", t.wall_ns);
        }
        // A stop wakes a pause at once; an unbounded one too.
        let ctl = Arc::new(Ctl::new(1));
        let c = Arc::clone(&ctl);
        let waiter = std::thread::spawn(move || {
            let t = Instant::now();
            (c.pause(Duration::MAX), t.elapsed())
        });
        std::thread::sleep(Duration::from_millis(100));
        ctl.stop();
        let (done, took) = waiter.join().unwrap();
        assert!(!done && took < Duration::from_millis(300), "{took:?}");
        assert!(Ctl::new(1).pause(Duration::from_millis(5)));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Probes that take their time to open and to take a checkpoint, as slab and vmstat
    /// snapshots do.
    struct SlowProbes;

    impl Around for SlowProbes {
        fn progress(&mut self, _: u64) {}
        fn open(&mut self, _: bool) {
            std::thread::sleep(Duration::from_millis(150));
        }
        fn phase_ended(&mut self, _: usize) {
            std::thread::sleep(Duration::from_millis(150));
        }
        fn second(&mut self, _: &Tick, _: usize, _: bool) {}
        fn close(&mut self) {}
    }

    #[test]
    fn warm_up_work_is_never_counted_and_off_cpu_shares_stay_within_the_window() {
        // Issue 45, item 9: a Mkdir at t = 0, then a Sleep across the warm-up's end and
        // the whole window: the Mkdir was the warm-up's, so the window counts nothing.
        let dir = temp("warmup");
        let s = script("Mkdir \"\\clients\" NT_STATUS_OK\nSleep 60000000 NT_STATUS_OK\n");
        let seats: Vec<Seat<ScriptClient>> = (0..2)
            .map(|id| Seat {
                client: ScriptClient::new(Arc::clone(&s), id, 1, vec![0u8; 1].into()).unwrap(),
                dir: None,
            })
            .collect();
        let bound = Bound::Time {
            warmup: Duration::from_millis(200),
            time: Duration::from_millis(300),
        };
        let t = run_in_dir(&dir, || run(seats, bound, &mut Quiet))
            .unwrap()
            .unwrap();
        assert_eq!(t.ops, 0, "{:?}", t.latency);
        assert!(t.latency.is_empty(), "{:?}", t.latency);
        assert!(t.clients.iter().all(|c| c.passes == 0.0), "{:?}", t.clients);
        // Clients waiting at the gates while probes open and checkpoints are taken are
        // not off a CPU in the window (4 clients' share read 229 %).
        let sig = churn();
        let seats = seats_of(&sig, 4, 20);
        let t = run_in_dir(&dir, || run(seats, Bound::Count, &mut SlowProbes))
            .unwrap()
            .unwrap();
        let off: u64 = t.clients.iter().map(|c| c.off_cpu_ns).sum();
        assert!(
            off <= 4 * t.wall_ns,
            "off-CPU {off} ns over 4 clients of a {} ns window",
            t.wall_ns
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_gate_releases_everyone_and_can_be_given_up() {
        let g = Gate::new(3);
        std::thread::scope(|s| {
            let a = s.spawn(|| g.wait());
            let b = s.spawn(|| g.wait());
            assert!(g.wait());
            assert!(a.join().unwrap() && b.join().unwrap());
        });
        // Given up: a waiter returns at once, now and later.
        let g = Gate::new(2);
        std::thread::scope(|s| {
            let a = s.spawn(|| g.wait());
            std::thread::sleep(Duration::from_millis(50));
            g.abort();
            assert!(!a.join().unwrap());
        });
        assert!(!g.wait());
    }

    fn script(text: &str) -> Arc<crate::loadfile::Script> {
        Arc::new(crate::loadfile::parse(text, "t.txt").unwrap())
    }

    #[test]
    fn a_loadfile_replays_with_dbench_semantics_per_client() {
        let dir = temp("script");
        let s = script(
            r#"Deltree "\clients\client1" NT_STATUS_OK
Mkdir "\clients" NT_STATUS_OK
NTCreateX "\clients\client1" 0x1 0x2 16385 NT_STATUS_OK
Close 16385 NT_STATUS_OK
NTCreateX "\clients\client1\a.txt" 0x40 0x2 7 NT_STATUS_OK
WriteX 7 0 4096 4096 NT_STATUS_OK
ReadX 7 0 4096 4096 NT_STATUS_OK
QUERY_FILE_INFORMATION 7 258 NT_STATUS_OK
SET_FILE_INFORMATION 7 1004 NT_STATUS_OK
LockX 7 2147483538 1 NT_STATUS_OK
UnlockX 7 2147483538 1 NT_STATUS_OK
Flush 7 NT_STATUS_OK
Close 7 NT_STATUS_OK
NTCreateX "\clients\client1\missing" 0x40 0x1 8 NT_STATUS_OBJECT_NAME_NOT_FOUND
FIND_FIRST "\clients\client1\*.txt" 260 1366 0 NT_STATUS_OK
QUERY_FS_INFORMATION 1 NT_STATUS_OK
Rename "\clients\client1\a.txt" "\clients\client1\b.txt" NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\b.txt" 1004 NT_STATUS_OK
"#,
        );
        let zeros: Arc<[u8]> = vec![0u8; 4096].into();
        let seats: Vec<Seat<ScriptClient>> = (0..2)
            .map(|id| Seat {
                client: ScriptClient::new(Arc::clone(&s), id, 3, Arc::clone(&zeros)).unwrap(),
                dir: None,
            })
            .collect();
        let t = run_in_dir(&dir, || run(seats, Bound::Count, &mut Quiet))
            .unwrap()
            .unwrap();
        // Three passes of 18 lines per client; every pass's Deltree unlinked b.txt (and
        // left the directory), so each pass ended the same way.
        for id in 0..2 {
            let d = dir.join(format!("clients/client{id}"));
            let names: Vec<String> = std::fs::read_dir(&d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            assert_eq!(names, ["b.txt"], "{}", d.display());
            assert_eq!(std::fs::metadata(d.join("b.txt")).unwrap().len(), 4096);
        }
        assert!(t.clients.iter().all(|c| c.passes == 3.0 && c.ops == 54));
        let rows: Vec<(&str, u64)> = t
            .latency
            .iter()
            .map(|l| (l.syscall.as_str(), l.count))
            .collect();
        assert_eq!(
            rows,
            [
                ("NTCreateX", 18),
                ("Close", 12),
                ("Rename", 6),
                ("Deltree", 6),
                ("Mkdir", 6),
                ("Qpathinfo", 6),
                ("Qfileinfo", 6),
                ("Qfsinfo", 6),
                ("Sfileinfo", 6),
                ("Find", 6),
                ("WriteX", 6),
                ("ReadX", 6),
                ("LockX", 6),
                ("UnlockX", 6),
                ("Flush", 6)
            ]
        );
        // Bytes asked of reads and writes: 8 KiB a pass.
        assert_eq!(t.bytes, 2 * 3 * 8192);
        // The expected failure is not a note; nothing else went wrong.
        assert!(t.notes.is_empty(), "{:?}", t.notes);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_fatal_status_names_the_client_the_line_and_the_operation() {
        let dir = temp("script-fail");
        let s = script(
            "Mkdir \"\\clients\" NT_STATUS_OK\nUnlink \"\\clients\\client1\\nope\" 0x6 NT_STATUS_OK\n",
        );
        let zeros: Arc<[u8]> = vec![0u8; 1].into();
        let seats = vec![Seat {
            client: ScriptClient::new(Arc::clone(&s), 4, 1, zeros).unwrap(),
            dir: None,
        }];
        let bound = Bound::Time {
            warmup: Duration::ZERO,
            time: Duration::from_secs(5),
        };
        let e = run_in_dir(&dir, || run(seats, bound, &mut Quiet))
            .unwrap()
            .unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "client 0: t.txt:2: Unlink clients/client4/nope failed with ENOENT (No such file or directory), the loadfile expects success"
        );
        // A handle that was never opened stops the client too, as it stops dbench.
        let s = script("Close 9 NT_STATUS_OK\n");
        let seats = vec![Seat {
            client: ScriptClient::new(s, 0, 1, vec![0u8; 1].into()).unwrap(),
            dir: None,
        }];
        let e = run_in_dir(&dir, || run(seats, Bound::Count, &mut Quiet))
            .unwrap()
            .unwrap_err();
        assert_eq!(format!("{e:#}"), "t.txt:1: Close: handle 9 is not open");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
