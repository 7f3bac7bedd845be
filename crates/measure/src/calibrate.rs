//! `sigbench calibrate`: what the cost model (`sigbench_cost`) charges, against what a
//! machine pays. Two measurements, both printed with their figures:
//!
//! - on this machine, a dependent-load chase (lmbench's `lat_mem_rd` idea: each load's
//!   address is the value the previous one read, in a random cycle over the working set,
//!   so no load can start before the last one finished) over working sets from 16 KiB to
//!   256 MiB, in ns per load — and the model's price of the very same chase, run through
//!   the model in this process;
//! - in a guest under the model, a loop reading 4,096 addresses 150 times at a stride of
//!   4 B, 64 B and 4 KiB (the same instructions; only the addresses differ) between the
//!   guest's marks: what the plugin counted and priced;
//! - a ping-pong of two threads on two CPUs passing one cache line back and forth: its
//!   round trip on this machine, and in a guest of two CPUs what the model counted
//!   (coherence misses) and priced.
//!
//! The weights are fixed (`metric::COST_WEIGHTS`): a cost compares across
//! machines as an instruction count does. This machine's chase informs them; it does not
//! set them (a VM's memory latency includes nested paging).

use serde::{Deserialize, Serialize};
use std::time::Instant;

/// The working sets of the chase, bytes.
pub const WORKING_SETS: [usize; 6] = [16 << 10, 256 << 10, 2 << 20, 16 << 20, 64 << 20, 256 << 20];

/// One working set's dependent-load latency: measured here and priced by the model.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Chase {
    pub bytes: usize,
    pub measured_ns: f64,
    pub model_ns: f64,
}

/// A random cycle through the 64-byte lines of `bytes` (Sattolo's shuffle, seeded): entry
/// k holds the index of the line after line k.
fn cycle(bytes: usize, seed: u64) -> Vec<usize> {
    let lines = (bytes / 64).max(2);
    let mut order: Vec<usize> = (0..lines).collect();
    let mut x = seed | 1;
    for i in (1..lines).rev() {
        // xorshift64
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = (x % i as u64) as usize;
        order.swap(i, j);
    }
    let mut next = vec![0usize; lines];
    for w in 0..lines {
        next[order[w]] = order[(w + 1) % lines];
    }
    next
}

/// The chase over `bytes` on this machine: ns per dependent load (`loads` of them after
/// one pass to warm the caches).
pub fn chase_here(bytes: usize, loads: usize) -> f64 {
    let next = cycle(bytes, 0x5167);
    // Each line's first word holds the next line's word index: the loads depend on each
    // other through memory, as a linked structure's do.
    let mut mem = vec![0usize; next.len() * 8];
    for (k, &n) in next.iter().enumerate() {
        mem[k * 8] = n * 8;
    }
    let mut at = 0usize;
    for _ in 0..next.len() {
        at = mem[at];
    }
    let started = Instant::now();
    for _ in 0..loads {
        at = mem[at];
    }
    let ns = started.elapsed().as_nanos() as f64 / loads as f64;
    std::hint::black_box(at);
    ns
}

/// The model's price of the same chase: its lines (as physical addresses) through
/// `sigbench_cost::Machine`, each load an instruction.
pub fn chase_model(bytes: usize, loads: usize) -> f64 {
    let next = cycle(bytes, 0x5167);
    let mut m = sigbench_cost::Machine::new(1);
    let mut at = 0usize;
    for _ in 0..next.len() {
        m.data(0, (at as u64) << 6, false, sigbench_cost::Kind::Plain);
        at = next[at];
    }
    let before = m.counts;
    for _ in 0..loads {
        m.data(0, (at as u64) << 6, false, sigbench_cost::Kind::Plain);
        at = next[at];
    }
    let mut c = m.counts.since(&before);
    c.insns = loads as u64;
    let w = model::metric::COST_WEIGHTS;
    w.cycles(&c) / w.ghz / loads as f64
}

/// The strides the guest reads at, bytes.
pub const STRIDES: [u64; 3] = [4, 64, 4096];
/// Addresses read per round, and rounds: 3.1 million instructions, a window shorter than
/// a 250 Hz kernel's tick, which it opens right after (no interrupt inside it).
pub const READS: u64 = 4096;
pub const ROUNDS: u64 = 150;

/// What the guest says it ran (over the results port), in the order of its windows.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct GuestStrides {
    pub schema: String,
    pub strides: Vec<u64>,
    pub reads: u64,
    pub rounds: u64,
    /// With two CPUs or more: the ping-pong's round trips, its window after the strides'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ping_pong: Option<u64>,
}

/// Round trips of the ping-pong on this machine, and in a guest (where each turn runs as
/// emulated instructions, and the other CPU's turn comes when this one spins: `pause`
/// hands QEMU's one thread to the next guest CPU).
pub const ROUND_TRIPS_HERE: u64 = 1_000_000;
pub const ROUND_TRIPS_GUEST: u64 = 2_000;

/// Two threads on CPUs 0 and 1 pass a counter in one cache line back and forth,
/// `round_trips` times after 1,000 untimed: each waits until the line holds the other's
/// value and writes its own, so every turn moves the line from one CPU's caches to the
/// other's (a write-invalidate machine moves it twice a round trip). Returns the ns a
/// round trip took on this clock; `marks`: between the cost model's marks (in a guest).
pub fn ping_pong(round_trips: u64, marks: bool) -> anyhow::Result<f64> {
    use std::sync::atomic::{AtomicU64, Ordering::Acquire, Ordering::Release};
    /// The line, alone in its 64 bytes.
    #[repr(align(64))]
    struct Line(AtomicU64);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        anyhow::bail!("the ping-pong needs two CPUs; this machine lets sigbench use {cpus}");
    }
    let line = Line(AtomicU64::new(0));
    // Set by a thread that could not be placed: the other stops waiting.
    let gave_up = std::sync::atomic::AtomicBool::new(false);
    let warm = 1000;
    let total = warm + round_trips;
    // Wait until the line holds `v`; false when the other thread gave up.
    let wait = |v: u64| loop {
        if line.0.load(Acquire) == v {
            return true;
        }
        if gave_up.load(std::sync::atomic::Ordering::Relaxed) {
            return false;
        }
        std::hint::spin_loop();
    };
    std::thread::scope(|s| {
        let other = s.spawn(|| -> std::io::Result<()> {
            if let Err(e) = crate::sys::os::pin_to_cpu(1) {
                gave_up.store(true, Release);
                return Err(e);
            }
            for k in 0..total {
                if !wait(2 * k + 1) {
                    break;
                }
                line.0.store(2 * k + 2, Release);
            }
            Ok(())
        });
        // Both sides on threads of their own: the caller's thread (and what it starts
        // later, a guest's QEMU) keeps the CPUs it had.
        let first = s.spawn(|| -> std::io::Result<f64> {
            if let Err(e) = crate::sys::os::pin_to_cpu(0) {
                gave_up.store(true, Release);
                return Err(e);
            }
            let mut started = Instant::now();
            for k in 0..total {
                if k == warm {
                    if marks {
                        crate::sys::os::mark(sigbench_cost::Mark::Arm);
                        crate::sys::os::mark(sigbench_cost::Mark::Open);
                    }
                    started = Instant::now();
                }
                line.0.store(2 * k + 1, Release);
                if !wait(2 * k + 2) {
                    break;
                }
            }
            let ns = started.elapsed().as_nanos() as f64 / round_trips as f64;
            if marks {
                crate::sys::os::mark(sigbench_cost::Mark::Close);
            }
            Ok(ns)
        });
        let panicked = |_| anyhow::anyhow!("a thread of the ping-pong panicked");
        let ns = first.join().map_err(panicked)?;
        let theirs = other.join().map_err(panicked)?;
        let ns = ns.map_err(|e| anyhow::anyhow!("cannot run the ping-pong on CPU 0: {e}"))?;
        theirs.map_err(|e| anyhow::anyhow!("cannot run the ping-pong on CPU 1: {e}"))?;
        Ok(ns)
    })
}

pub const GUEST_SCHEMA: &str = "sigbench.calibrate-guest";

/// In the guest: for each stride, the cases' marks around `ROUNDS` rounds of `READS`
/// reads (a first round, untimed, warms the caches; the window opens at a timer tick, as a
/// settled case's does), then what ran.
pub fn guest_strides() -> GuestStrides {
    use sigbench_cost::Mark;
    let span = (READS * STRIDES[STRIDES.len() - 1]) as usize;
    // Touched now: no page fault inside a window.
    let mut mem = vec![1u8; span];
    for (k, b) in mem.iter_mut().enumerate() {
        *b = k as u8;
    }
    for &stride in &STRIDES {
        crate::sys::os::mark(Mark::Arm);
        let mut sum = read_rounds(&mem, stride, 1);
        crate::probe::at_tick();
        crate::sys::os::mark(Mark::Open);
        sum = sum.wrapping_add(read_rounds(&mem, stride, ROUNDS));
        crate::sys::os::mark(Mark::Close);
        std::hint::black_box(sum);
    }
    // With a second CPU, the ping-pong in a window of its own (its time in the guest is
    // the instruction count's: the model's counters are what it is for).
    // `ping_pong` refuses a guest of one CPU.
    let ping_pong = ping_pong(ROUND_TRIPS_GUEST, true)
        .is_ok()
        .then_some(ROUND_TRIPS_GUEST);
    GuestStrides {
        schema: GUEST_SCHEMA.into(),
        strides: STRIDES.to_vec(),
        reads: READS,
        rounds: ROUNDS,
        ping_pong,
    }
}

/// `rounds` rounds reading `READS` bytes `stride` apart: the same instructions whatever
/// the stride (`sys::os::read_strided`: five a read).
fn read_rounds(mem: &[u8], stride: u64, rounds: u64) -> u64 {
    crate::sys::os::read_strided(mem, stride as usize, READS as usize, rounds as usize)
}

/// One stride as the guest's plugin counted it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Stride {
    pub stride: u64,
    pub counters: sigbench_cost::Counters,
    pub cost_ms: f64,
    /// The model's price of one read, ns (the window's cost over its reads).
    pub ns_per_read: f64,
}

/// The ping-pong in a guest of two CPUs as the plugin counted it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GuestPingPong {
    pub round_trips: u64,
    pub counters: sigbench_cost::Counters,
    /// Coherence misses a round trip (2 on a write-invalidate machine).
    pub transfers_per_round_trip: f64,
    /// The model's price of those transfers, ns a round trip — what a machine's round
    /// trip is made of.
    pub transfer_ns: f64,
    /// The window's whole price a round trip, ns: the transfers and the instructions of
    /// the turns, spinning included (under icount a CPU spins until `pause` hands QEMU's
    /// thread to the other, so this is not a machine's round trip).
    pub cost_ns: f64,
}

/// The guest's windows (from the plugin's records): its strides', then the ping-pong's.
pub fn guest_figures(
    guest: &GuestStrides,
    records: &str,
) -> anyhow::Result<(Vec<Stride>, Option<GuestPingPong>)> {
    let windows = sigbench_cost::windows_in(records);
    let wanted = guest.strides.len() + usize::from(guest.ping_pong.is_some());
    if windows.len() != wanted || windows.iter().any(Option::is_none) {
        anyhow::bail!(
            "the cost model's records hold {} window(s) for {} strides{}",
            windows.len(),
            guest.strides.len(),
            if guest.ping_pong.is_some() {
                " and the ping-pong"
            } else {
                ""
            }
        );
    }
    let w = model::metric::COST_WEIGHTS;
    let mut windows = windows.into_iter().flatten();
    let strides = guest
        .strides
        .iter()
        .zip(windows.by_ref())
        .map(|(&stride, win)| Stride {
            stride,
            counters: win.total,
            cost_ms: w.ms(&win.total),
            ns_per_read: w.ms(&win.total) * 1e6 / (guest.reads * guest.rounds) as f64,
        })
        .collect();
    let ping_pong = guest.ping_pong.zip(windows.next()).map(|(trips, win)| {
        let c = win.total;
        let transfers = sigbench_cost::Counters {
            l1d_misses: c.coherence_misses,
            l2_misses: c.coherence_misses,
            coherence_misses: c.coherence_misses,
            ..Default::default()
        };
        GuestPingPong {
            round_trips: trips,
            counters: c,
            transfers_per_round_trip: c.coherence_misses as f64 / trips as f64,
            transfer_ns: w.ms(&transfers) * 1e6 / trips as f64,
            cost_ns: w.ms(&c) * 1e6 / trips as f64,
        }
    });
    Ok((strides, ping_pong))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ping-pong on this machine: its round trip is a time, and a machine of one CPU
    /// is told so instead of measuring the scheduler.
    #[test]
    fn a_ping_pong_times_a_round_trip_or_says_why_not() {
        // No bound above: on a busy machine a turn can wait for its CPU.
        match ping_pong(2_000, false) {
            Ok(ns) => assert!(ns > 0.0 && ns.is_finite(), "{ns} ns a round trip"),
            Err(e) => assert!(
                std::thread::available_parallelism().map_or(1, |n| n.get()) < 2,
                "{e}"
            ),
        }
    }

    #[test]
    fn a_cycle_visits_every_line_once() {
        let next = cycle(64 * 1000, 7);
        let mut at = 0;
        let mut seen = vec![false; next.len()];
        for _ in 0..next.len() {
            assert!(!seen[at]);
            seen[at] = true;
            at = next[at];
        }
        assert_eq!(at, 0);
    }

    #[test]
    fn the_model_prices_a_chase_by_where_its_lines_fit() {
        let w = model::metric::COST_WEIGHTS;
        let ns = |cycles: f64| cycles / w.ghz;
        // In L1: one cycle a load; in L2: a first-level miss each; beyond the last level:
        // memory each.
        assert!((chase_model(16 << 10, 100_000) - ns(w.insn)).abs() < 0.01);
        assert!((chase_model(256 << 10, 100_000) - ns(w.insn + w.l2_hit)).abs() < 0.05);
        let far = chase_model(64 << 20, 100_000);
        assert!(
            far > ns(w.insn + w.l2_hit + w.ll_hit + w.memory) * 0.9,
            "{far}"
        );
    }
}
