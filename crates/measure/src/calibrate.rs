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
//!   guest's marks: what the plugin counted and priced.
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
        m.data(0, (at as u64) << 6, false, false);
        at = next[at];
    }
    let before = m.counts;
    for _ in 0..loads {
        m.data(0, (at as u64) << 6, false, false);
        at = next[at];
    }
    let mut c = m.counts.since(&before);
    c.insns = loads as u64;
    let w = crate::metric::COST_WEIGHTS;
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
    GuestStrides {
        schema: GUEST_SCHEMA.into(),
        strides: STRIDES.to_vec(),
        reads: READS,
        rounds: ROUNDS,
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

/// The guest's windows (from the plugin's records) paired with its strides.
pub fn strides(guest: &GuestStrides, records: &str) -> anyhow::Result<Vec<Stride>> {
    let windows = sigbench_cost::windows_in(records);
    if windows.len() != guest.strides.len() || windows.iter().any(Option::is_none) {
        anyhow::bail!(
            "the cost model's records hold {} window(s) for {} strides",
            windows.len(),
            guest.strides.len()
        );
    }
    let w = crate::metric::COST_WEIGHTS;
    Ok(guest
        .strides
        .iter()
        .zip(windows.into_iter().flatten())
        .map(|(&stride, win)| Stride {
            stride,
            counters: win.total,
            cost_ms: w.ms(&win.total),
            ns_per_read: w.ms(&win.total) * 1e6 / (guest.reads * guest.rounds) as f64,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let w = crate::metric::COST_WEIGHTS;
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
