//! Which state of the machine a repetition starts from (docs/statistics.md, "States").
//!
//! Under a deterministic clock a guest repeats itself to the nanosecond — for one state of
//! the machine: where the kernel and its pages landed, what its random number generator
//! gave the slab and page allocators, which tree blocks happened to be contiguous. That
//! state is chaotic in everything before the window (the binary, the plan's size in the
//! initramfs, the seed), and a verdict about a kernel taken on one state takes that
//! state's offset for the kernel's. So each repetition starts from a state chosen by a
//! seed of its own — STABILIZER's idea (Curtsinger & Berger, ASPLOS 2013), made
//! reproducible: any repetition runs again to the digit from its seed (`run --state
//! SEED`).
//!
//! What a seed decides, in a guest (`vm`): the kernel's command line carries it
//! (`sigbench.state=…`, mixed into the kernel's random number generator before anything
//! draws from it: the slab allocator's freelist order, hash salts, stack offsets), the
//! initramfs' size (the kernel's physical and virtual placement — KASLR hashes the boot
//! parameters that hold it — and the pages its archive occupies and frees), the 32-byte
//! seed the guest's init credits to its generator, and the memory's age before the plan:
//! files written to /tmp and most removed again, as an earlier case's ramdisk leaves it,
//! and anonymous pages taken with a part given back one at a time (`files`, `churn`), and
//! where the executor's loop lies in its pages (`layout`: one of its copies). The
//! page allocator's shuffle is left as Debian ships it (off): turned on, it moved every
//! state away from what a machine runs. A boot per state: a repetition's state is its
//! boot's. docs/statistics.md ("States") has what was measured.

use model::random::mix64;
use serde::{Deserialize, Serialize};

/// Where a run's repetitions start from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum States {
    /// Each repetition from a state of its own (a boot each under the icount clock), its
    /// seed made from the run's seed and the repetition's number.
    #[default]
    Sampled,
    /// One state for every repetition: a boot holds them all and repeats the last boot to
    /// the digit (a deliberate A/B of a tiny code path on the same state).
    Fixed,
    /// The one state of this seed (`--state SEED`: a repetition run again).
    One(u64),
}

impl States {
    /// The `--states`/`--state` words that give this.
    pub fn words(self) -> Vec<String> {
        match self {
            States::Sampled => Vec::new(),
            States::Fixed => vec!["--states".into(), "fixed".into()],
            States::One(s) => vec!["--state".into(), format!("{s:#x}")],
        }
    }

    /// Which copy of the executor's loop runs (`exec::steps::LAYOUTS`): the state's, else
    /// the first.
    pub fn layout(self) -> usize {
        match self {
            States::One(s) => layout(s),
            States::Sampled | States::Fixed => 0,
        }
    }

    /// How a report says it.
    pub fn describe(self) -> String {
        match self {
            States::Sampled => {
                "sampled: each repetition from a state of its own, a seed each".into()
            }
            States::Fixed => "fixed: every repetition from one state (--states fixed)".into(),
            States::One(s) => format!("one: the state of seed {s:#x} (--state)"),
        }
    }
}

/// The seed of the `index`-th state of a run of `run_seed` (0: its first repetition's).
pub fn seed_of(run_seed: u64, index: u32) -> u64 {
    mix64(mix64(run_seed ^ 0x7374_6174_6573_2121) ^ u64::from(index))
}

/// Where the code of a guest in state `seed` lies within its pages in the cost model
/// (`sigbench_cost::Machine::with_placement`): a relink of the kernel and of sigbench, as
/// the first-level instruction cache sees one. Never 0 (0 is "as linked").
pub fn placement(seed: u64) -> u64 {
    mix64(seed ^ 0x706c_6163_6564) | 1
}

/// `--state SEED`: decimal or `0x…` hexadecimal.
pub fn parse_seed(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse::<u64>(),
    };
    parsed.map_err(|_| format!("`{s}` is not a state seed (a number, decimal or 0x…)"))
}

/// The kernel command line words that put a guest in the state of `seed`.
pub fn cmdline(seed: u64) -> String {
    format!("sigbench.state={seed:#018x}")
}

/// The state seed a guest's command line carries (`sigbench.state=…`), if any.
pub fn from_cmdline(cmdline: &str) -> Option<u64> {
    cmdline
        .split_whitespace()
        .find_map(|w| w.strip_prefix("sigbench.state="))
        .and_then(|s| parse_seed(s).ok())
}

/// The initramfs' length for `len` bytes of archives: a whole number of MiB — so the
/// plan's size, the binary's or a seed's digits do not move the kernel's placement — and
/// with a state, a seed-chosen number of 64 KiB steps more (up to 4 MiB): the kernel's
/// placement is the seed's to choose.
pub fn initramfs_len(len: usize, state: Option<u64>) -> usize {
    const MIB: usize = 1 << 20;
    let whole = len.div_ceil(MIB) * MIB;
    whole + state.map_or(0, |s| (mix64(s ^ 0x696e_6974) % 64) as usize * (64 << 10))
}

/// Where the executor's loop lies in state `seed`: one of its `LAYOUTS` copies, each a
/// quarter of a kilobyte further into its function (`exec::steps`).
pub fn layout(seed: u64) -> usize {
    (mix64(seed ^ 0x6c61_796f_7574) % crate::exec::steps::LAYOUTS as u64) as usize
}

/// The 32 bytes a guest in state `seed` credits to its random number generator.
pub fn random_seed(seed: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut z = seed ^ 0x7261_6e64_6f6d;
    for chunk in out.chunks_mut(8) {
        z = mix64(z);
        chunk.copy_from_slice(&z.to_le_bytes());
    }
    out
}

/// The page allocator churn of state `seed`, which ages the machine as running does: how
/// many pages to take (8 to 64 MiB, each touched), and which of them to give back, in
/// order (a seed-chosen 30 to 90 % of them, one page at a time, in a seed-chosen order);
/// the others stay taken, so the free memory the plan allocates from is fragmented in the
/// state's own way — as on a machine that has run for a while, where a kernel finds
/// physically consecutive pages (6.12's contiguous extent buffers) or does not.
pub fn churn(seed: u64) -> (usize, Vec<usize>) {
    let pages = 2048 + (mix64(seed ^ 0x7061_6765) % 14_336) as usize;
    let freed = pages * (30 + (mix64(seed ^ 0x6672_6565) % 61) as usize) / 100;
    let mut order: Vec<usize> = (0..pages).collect();
    let mut z = seed ^ 0x006f_7264_6572;
    for k in (1..order.len()).rev() {
        z = mix64(z);
        order.swap(k, (z % (k as u64 + 1)) as usize);
    }
    order.truncate(freed);
    (pages, order)
}

/// The files a guest in state `seed` writes to its /tmp before the plan, as the testbed of
/// an earlier case would (a ramdisk's pages taken, then mostly given back): each file's
/// size in pages, and whether it is removed again (kept: its pages stay taken). 16 to 256
/// MiB in files of 1 to 1024 pages; a seed-chosen 40 to 95 % of them removed.
pub fn files(seed: u64) -> Vec<(usize, bool)> {
    let total = 4096 + (mix64(seed ^ 0x0074_6f74_616c) % 61_440) as usize;
    let removed = 40 + mix64(seed ^ 0x7265_6d6f_7665) % 56;
    let mut out = Vec::new();
    let (mut z, mut sum) = (seed ^ 0x0066_696c_6573, 0);
    while sum < total {
        z = mix64(z);
        let pages = (1 + (z % 1024) as usize).min(total - sum);
        sum += pages;
        out.push((pages, mix64(z) % 100 < removed));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_distinct_and_reproducible() {
        let a: Vec<u64> = (0..100).map(|i| seed_of(7, i)).collect();
        let mut b = a.clone();
        b.sort();
        b.dedup();
        assert_eq!(b.len(), 100);
        assert_eq!(seed_of(7, 3), a[3]);
        assert_ne!(seed_of(8, 3), a[3]);
    }

    #[test]
    fn states_spread_over_every_place_of_the_executors_loop() {
        let mut seen = [0u32; crate::exec::steps::LAYOUTS];
        for i in 0..1600 {
            seen[States::One(seed_of(7, i)).layout()] += 1;
        }
        // Every place about equally often (100 expected each), and each state keeps its own.
        assert!(seen.iter().all(|&n| (60..=140).contains(&n)), "{seen:?}");
        assert_eq!(States::One(5).layout(), layout(5));
        assert_eq!(States::Fixed.layout(), 0);
        assert_eq!(States::Sampled.layout(), 0);
    }

    #[test]
    fn the_command_line_carries_the_seed_back() {
        let s = seed_of(1, 2);
        assert_eq!(
            from_cmdline(&format!("console=ttyS0 {} rdinit=/init", cmdline(s))),
            Some(s)
        );
        assert_eq!(from_cmdline("console=ttyS0"), None);
        assert_eq!(parse_seed("0x10"), Ok(16));
        assert_eq!(parse_seed("16"), Ok(16));
        assert!(parse_seed("x").is_err());
    }

    #[test]
    fn the_initramfs_is_whole_mib_and_the_state_adds_steps() {
        assert_eq!(initramfs_len(1, None), 1 << 20);
        assert_eq!(initramfs_len(1 << 20, None), 1 << 20);
        let lens: std::collections::BTreeSet<usize> = (0..200)
            .map(|i| initramfs_len(5 << 20, Some(seed_of(1, i))))
            .collect();
        assert!(lens.len() > 40, "{}", lens.len());
        assert!(lens.iter().all(|l| (5 << 20..=(9 << 20)).contains(l)));
    }

    #[test]
    fn the_files_of_a_state_are_its_own() {
        let f = files(seed_of(1, 0));
        let pages: usize = f.iter().map(|(p, _)| p).sum();
        assert!((4096..4096 + 61_440).contains(&pages), "{pages}");
        assert!(f.iter().any(|(_, gone)| *gone) && f.iter().any(|(_, gone)| !*gone));
        assert_eq!(f, files(seed_of(1, 0)));
        assert_ne!(f, files(seed_of(1, 1)));
    }

    #[test]
    fn the_churn_frees_some_pages_once_each_and_keeps_the_rest() {
        for s in 0..50 {
            let (pages, mut order) = churn(seed_of(1, s));
            assert!((2048..2048 + 14_336).contains(&pages));
            let freed = order.len();
            assert!(
                freed >= pages * 3 / 10 && freed <= pages * 9 / 10 + 1,
                "{freed} of {pages}"
            );
            order.sort();
            order.dedup();
            assert_eq!(order.len(), freed);
            assert!(order.iter().all(|&k| k < pages));
        }
    }
}
