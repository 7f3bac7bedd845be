//! A function-level profile of the timed window (`--profile`): the workload thread sampled
//! on the `cpu-clock` software event (an hrtimer: no hardware PMU needed, and under the
//! icount clock it fires at the same instruction counts every run), kernel call chains
//! resolved with the symbol table of the kernel that ran them (`/proc/kallsyms`, modules
//! included), folded per phase.
//!
//! What is kept per phase are the folded stacks (`root;…;leaf` → samples); a function's
//! self share (samples where it is the leaf) and total share (samples with it anywhere on
//! the stack, once per sample) are derived from them. Samples taken in user mode are one
//! frame, `[user]`: the workload issues syscalls and nothing else, and its own frames
//! carry no frame pointers to walk.

use anyhow::{Context, Result, bail};
use perf_event::events::Software;
use perf_event::{Builder, SampleFlag};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Samples a second when `--profile` names no rate.
pub const DEFAULT_HZ: u64 = 4000;
/// The highest rate `--profile` accepts: beyond it the sampling interrupt would be a
/// large share of the window it measures.
pub const MAX_HZ: u64 = 20_000;
/// The highest rate of a profile taken apart (`Rate::Apart`): `cpu-clock` is an hrtimer
/// the kernel never arms for less than 10 µs.
pub const APART_MAX_HZ: u64 = 100_000;
/// The samples a profile taken apart aims at in its window: within the ring buffer, so
/// a window of seconds drains nothing early, and ample for a window of milliseconds.
pub const APART_TARGET_SAMPLES: f64 = 20_000.0;

/// How `--profile` samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rate {
    /// `--profile`: apart under the icount clock (a guest knows its clock: the host
    /// decides before it boots), in the timed window at [`DEFAULT_HZ`] on any other.
    Auto,
    /// `--profile=HZ`: in the timed window, at HZ samples a second. Each sample is an
    /// interrupt and a stack walk, inside the time measured.
    Window(u64),
    /// `--profile=apart`: in a second window of each case, run right after the timed one on
    /// a fresh filesystem, at a rate its length allows (up to [`APART_MAX_HZ`]): none of the
    /// sampling is in the times, and a 5 ms window gets 500 samples instead of 20. Under
    /// the icount clock the second window runs the same code as the timed one.
    Apart,
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rate::Auto => f.write_str("auto"),
            Rate::Window(hz) => write!(f, "{hz}"),
            Rate::Apart => f.write_str("apart"),
        }
    }
}

impl std::str::FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Rate, String> {
        match s {
            "auto" => Ok(Rate::Auto),
            "apart" => Ok(Rate::Apart),
            _ => match s.parse::<u64>() {
                Ok(hz) if (1..=MAX_HZ).contains(&hz) => Ok(Rate::Window(hz)),
                _ => Err(format!(
                    "give a rate from 1 to {MAX_HZ} samples a second, `apart` or `auto`"
                )),
            },
        }
    }
}

impl Rate {
    /// What `Auto` means on a machine with (`icount`) or without the icount clock.
    pub fn resolve(self, icount: bool) -> Rate {
        match self {
            Rate::Auto if icount => Rate::Apart,
            Rate::Auto => Rate::Window(DEFAULT_HZ),
            r => r,
        }
    }
}

/// The rate of the window taken apart after a timed window of `timed_ns` in repetition
/// `rep`: [`APART_TARGET_SAMPLES`] over the window, between [`DEFAULT_HZ`] and `max_hz`;
/// each repetition 3 % slower than the one before (over a cycle of four), so that under a
/// deterministic clock repetitions sample other instants of the same code instead of
/// repeating one another's samples.
pub fn apart_hz(timed_ns: u64, rep: u32, max_hz: u64) -> u64 {
    let window_s = (timed_ns as f64 / 1e9).max(1e-6);
    let hz = (APART_TARGET_SAMPLES / window_s).clamp(DEFAULT_HZ as f64, max_hz as f64);
    let step = 1.0 - 0.03 * (rep.saturating_sub(1) % 4) as f64;
    (hz * step).round().max(1.0) as u64
}

/// The fastest this kernel lets a profile taken apart sample: [`APART_MAX_HZ`], or less
/// where `kernel.perf_event_max_sample_rate` is lower (past it the kernel throttles).
pub fn apart_max_hz() -> u64 {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map_or(APART_MAX_HZ, |r| r.clamp(DEFAULT_HZ, APART_MAX_HZ))
}

/// The ring buffer the kernel writes samples into, drained between phases (outside their
/// times) and after the window. A sample with a 40-frame chain is about 350 bytes, so this
/// holds about 45 000 samples: 11 s of one phase at the default rate. Samples that do not
/// fit are counted as lost, and the profile says so.
const BUFFER_BYTES: usize = 16 << 20;
/// Frames the kernel walks per sample at most.
const MAX_STACK: u16 = 64;
/// The frame of a sample taken in user mode.
pub const USER_FRAME: &str = "[user]";
/// A kernel address no symbol covers.
const UNKNOWN_FRAME: &str = "[unknown]";
/// Call-chain entries at or above this are context markers (PERF_CONTEXT_KERNEL, …),
/// not addresses.
const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;
/// Kernel addresses on x86-64 are in the upper half.
const KERNEL_START: u64 = 0xffff_8000_0000_0000;

/// One phase's samples, folded: `root;…;leaf` → samples.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct PhaseProfile {
    pub name: String,
    pub samples: u64,
    pub stacks: BTreeMap<String, u64>,
}

/// A function's share of a profile's samples, in per cent.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FunctionShare {
    pub function: String,
    /// Samples where it was running (the leaf).
    pub self_pct: f64,
    /// Samples with it anywhere on the stack (itself or a callee running).
    pub total_pct: f64,
}

/// The profile of one window.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Profile {
    /// The sampling event (`cpu-clock`).
    pub event: String,
    /// Samples a second of the thread's CPU time.
    pub hz: u64,
    pub samples: u64,
    /// Samples the ring buffer could not hold (0 when the profile is whole).
    pub lost: u64,
    /// Times the kernel throttled the sampling (it took too long): samples missing.
    #[serde(default)]
    pub throttled: u64,
    pub phases: Vec<PhaseProfile>,
    /// Taken apart from the timed window (`Rate::Apart`): that second window's own time,
    /// longer than the timed one by its sampling. The shares are its; the times they are
    /// taken of, the timed window's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apart_ns: Option<u64>,
    /// The functions of the whole window with at least `LISTED_PCT` total share, most
    /// self first: the same numbers `functions()` derives from the stacks, kept for
    /// readers of the document.
    #[serde(default)]
    pub functions: Vec<FunctionShare>,
}

/// The smallest share (self or total) a function needs to be listed and compared: below
/// it a share is a handful of samples.
pub const LISTED_PCT: f64 = 0.1;

/// A case's profile, or why it could not be taken.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ProfileReading {
    Sampled(Profile),
    Unavailable { reason: String },
}

/// A function's name as two kernels are compared by it: the compiler's clones
/// (`.isra.0`, `.constprop.3`, `.part.1`, `.cold`, `.llvm.123…`, `.lto_priv.0`) are the
/// function, and 6.10's allocation-profiling wrappers renamed `kmem_cache_alloc` to
/// `kmem_cache_alloc_noprof` without changing what it does. Flame graphs keep real names.
pub fn fold_symbol(name: &str) -> &str {
    let mut s = name;
    loop {
        let before = s;
        // `.SUFFIX` or `.SUFFIX.DIGITS` at the end.
        if let Some((head, tail)) = s.rsplit_once('.') {
            if !tail.is_empty() && tail.chars().all(|c| c.is_ascii_digit()) {
                if let Some((h2, kind)) = head.rsplit_once('.')
                    && CLONE_SUFFIXES.contains(&kind)
                    && !h2.is_empty()
                {
                    s = h2;
                }
            } else if CLONE_SUFFIXES.contains(&tail) && !head.is_empty() {
                s = head;
            }
        }
        if let Some(h) = s.strip_suffix("_noprof")
            && !h.is_empty()
        {
            s = h;
        }
        if s == before {
            return s;
        }
    }
}

/// The suffixes GCC and Clang give a function's clones and split parts.
const CLONE_SUFFIXES: &[&str] = &[
    "isra",
    "constprop",
    "part",
    "cold",
    "llvm",
    "lto_priv",
    "specialized",
    "localalias",
];

/// `stacks` with every frame's name folded ([`fold_symbol`]): stacks that differ only by
/// a clone's name are one.
pub fn folded_stacks<'a>(
    stacks: impl IntoIterator<Item = (&'a String, &'a u64)>,
) -> BTreeMap<String, u64> {
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    for (stack, &n) in stacks {
        let s: Vec<&str> = stack.split(';').map(fold_symbol).collect();
        *out.entry(s.join(";")).or_default() += n;
    }
    out
}

/// Self and total shares of the samples in `stacks` (the folded stacks of one phase or
/// several), every function with at least `min_pct` of either, most self first.
pub fn shares<'a>(
    stacks: impl IntoIterator<Item = (&'a String, &'a u64)>,
    min_pct: f64,
) -> Vec<FunctionShare> {
    let mut own: HashMap<&str, u64> = HashMap::new();
    let mut total: HashMap<&str, u64> = HashMap::new();
    let mut samples = 0u64;
    for (stack, &n) in stacks {
        samples += n;
        let frames: Vec<&str> = stack.split(';').collect();
        if let Some(leaf) = frames.last() {
            *own.entry(leaf).or_default() += n;
        }
        let mut seen: Vec<&str> = Vec::with_capacity(frames.len());
        for f in frames {
            if !seen.contains(&f) {
                seen.push(f);
                *total.entry(f).or_default() += n;
            }
        }
    }
    if samples == 0 {
        return Vec::new();
    }
    let pct = |n: u64| n as f64 * 100.0 / samples as f64;
    let mut v: Vec<FunctionShare> = total
        .iter()
        .map(|(f, &t)| FunctionShare {
            function: f.to_string(),
            self_pct: pct(own.get(f).copied().unwrap_or(0)),
            total_pct: pct(t),
        })
        .filter(|s| s.self_pct >= min_pct || s.total_pct >= min_pct)
        .collect();
    v.sort_by(|a, b| {
        b.self_pct
            .total_cmp(&a.self_pct)
            .then_with(|| b.total_pct.total_cmp(&a.total_pct))
            .then_with(|| a.function.cmp(&b.function))
    });
    v
}

impl Profile {
    /// What the profile misses, in words, when it is not whole: samples the ring buffer
    /// could not hold, or times the kernel throttled the sampling. Its shares then count
    /// what was kept, which need not be what ran.
    pub fn shortfall(&self) -> Option<String> {
        let mut what = Vec::new();
        if self.lost > 0 {
            what.push(format!(
                "lost {} of {} samples (its buffer was full)",
                self.lost,
                self.lost + self.samples
            ));
        }
        if self.throttled > 0 {
            what.push(format!(
                "was throttled {} time(s) by the kernel (sampling took too long)",
                self.throttled
            ));
        }
        (!what.is_empty()).then(|| {
            let lower = match self.hz / 4 {
                0 => String::new(),
                hz => format!("; a lower rate (--profile={hz}) misses less"),
            };
            format!(
                "the profile {}: its shares may not be what ran{lower}",
                what.join(" and ")
            )
        })
    }

    /// The whole window's folded stacks (every phase's summed).
    pub fn stacks(&self) -> BTreeMap<String, u64> {
        let mut all: BTreeMap<String, u64> = BTreeMap::new();
        for p in &self.phases {
            for (s, n) in &p.stacks {
                *all.entry(s.clone()).or_default() += n;
            }
        }
        all
    }

    /// The whole window's function shares (`LISTED_PCT` and more).
    pub fn functions(&self) -> Vec<FunctionShare> {
        shares(&self.stacks(), LISTED_PCT)
    }
}

/// The kernel's text symbols, sorted by address: what a sampled address is called.
pub struct Symbols {
    /// (address, name) ascending.
    table: Vec<(u64, String)>,
}

/// A compiler's suffix (`.isra.0`, `.constprop.0`, `.part.0`, `.cold`, `.llvm.…`) names
/// a copy of the function, not another function: kernels built by different compilers
/// must name it alike to be compared.
fn base_name(name: &str) -> &str {
    match name.find('.') {
        Some(i) if i > 0 => &name[..i],
        _ => name,
    }
}

impl Symbols {
    /// The running kernel's symbols.
    pub fn load() -> Result<Symbols> {
        let text = std::fs::read_to_string("/proc/kallsyms")
            .context("cannot read /proc/kallsyms to name the sampled functions")?;
        Symbols::parse(&text)
    }

    /// `/proc/kallsyms` text: `ADDRESS TYPE NAME [MODULE]` per line; text symbols only.
    pub fn parse(text: &str) -> Result<Symbols> {
        let mut table = Vec::new();
        let mut hidden = true;
        for line in text.lines() {
            let mut f = line.split_whitespace();
            let (Some(addr), Some(ty), Some(name)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            hidden &= addr == 0;
            if matches!(ty, "t" | "T" | "w" | "W") && addr != 0 {
                table.push((addr, base_name(name).to_string()));
            }
        }
        if hidden {
            bail!(
                "/proc/kallsyms shows no addresses (kernel.kptr_restrict hides them): set `sysctl kernel.kptr_restrict=0` to profile"
            );
        }
        table.sort_unstable();
        Ok(Symbols { table })
    }

    /// The function holding `addr`.
    pub fn name(&self, addr: u64) -> &str {
        let i = self.table.partition_point(|(a, _)| *a <= addr);
        if i == 0 {
            UNKNOWN_FRAME
        } else {
            &self.table[i - 1].1
        }
    }
}

/// The sampler of one window, opened on the thread it samples.
pub struct Sampler {
    /// One ring: the thread's. Following the threads it starts: one per CPU, since the
    /// kernel maps no ring of an inherited event that follows a task on every CPU (the
    /// children would all write to one buffer); each CPU's ring takes the samples of
    /// whichever of the threads ran there.
    rings: Vec<perf_event::Sampler>,
    hz: u64,
    /// Per phase: raw call chains (leaf first; empty for a user-mode sample) → samples.
    raw: Vec<HashMap<Vec<u64>, u64>>,
    lost: u64,
    throttled: u64,
}

/// The smallest ring of a CPU when the buffer is shared out among several.
const MIN_RING_BYTES: usize = 1 << 20;

impl Sampler {
    /// A disabled sampler of the calling thread at `hz` samples a second of its CPU time
    /// (a fixed period, so every run samples at the same instants of its own clock). With
    /// `inherit` (the online CPUs), also of every thread it starts afterwards (a run's
    /// clients): their samples go to this sampler's rings, and enabling or disabling it
    /// does theirs.
    pub fn open(hz: u64, phases: usize, inherit: Option<&[i32]>) -> Result<Sampler> {
        let period = 1_000_000_000 / hz.clamp(1, APART_MAX_HZ);
        let cpus: Vec<Option<usize>> = match inherit {
            Some(cpus) if !cpus.is_empty() => cpus.iter().map(|&c| Some(c as usize)).collect(),
            _ => vec![None],
        };
        let ring_bytes = (BUFFER_BYTES / cpus.len()).max(MIN_RING_BYTES);
        let mut rings = Vec::with_capacity(cpus.len());
        for cpu in cpus {
            let mut b = Builder::new(Software::CPU_CLOCK);
            b.observe_self();
            match cpu {
                Some(c) => b.one_cpu(c),
                None => b.any_cpu(),
            };
            let counter = b
                .inherit(cpu.is_some())
                .sample_period(period)
                .sample(SampleFlag::IP | SampleFlag::CALLCHAIN)
                .include_kernel()
                .exclude_hv(true)
                .exclude_callchain_user(true)
                .sample_max_stack(MAX_STACK)
                .enabled(false)
                .build()
                .map_err(|e| anyhow::anyhow!("perf_event_open(cpu-clock sampling): {e}"))?;
            rings.push(
                counter
                    .sampled(ring_bytes)
                    .map_err(|e| anyhow::anyhow!("mapping the profile's ring buffer: {e}"))?,
            );
        }
        Ok(Sampler {
            rings,
            hz,
            raw: vec![HashMap::new(); phases.max(1)],
            lost: 0,
            throttled: 0,
        })
    }

    pub fn enable(&mut self) {
        for r in &mut self.rings {
            let _ = r.reset();
            let _ = r.enable();
        }
    }

    pub fn disable(&mut self) {
        for r in &mut self.rings {
            let _ = r.disable();
        }
    }

    /// Move the samples written so far to `phase`.
    pub fn drain(&mut self, phase: usize) {
        use perf_event::data::Record;
        let phase = phase.min(self.raw.len() - 1);
        for ring in &mut self.rings {
            while let Some(record) = ring.next_record() {
                match record.parse_record() {
                    Ok(Record::Sample(s)) => {
                        let chain: Vec<u64> = match s.ip() {
                            Some(ip) if ip < KERNEL_START => Vec::new(),
                            ip => s
                                .callchain()
                                .map(|c| {
                                    c.iter()
                                        .copied()
                                        .filter(|&a| a < PERF_CONTEXT_MAX)
                                        .collect()
                                })
                                .filter(|c: &Vec<u64>| !c.is_empty())
                                .unwrap_or_else(|| ip.into_iter().collect()),
                        };
                        *self.raw[phase].entry(chain).or_default() += 1;
                    }
                    Ok(Record::Lost(l)) => self.lost += l.lost,
                    Ok(Record::LostSamples(l)) => self.lost += l.lost,
                    Ok(Record::Throttle(_)) => self.throttled += 1,
                    _ => {}
                }
            }
        }
    }

    /// Drain what is left into the last phase and name every frame.
    pub fn finish(mut self, names: &[String], symbols: &Symbols) -> Profile {
        let last = self.raw.len() - 1;
        self.drain(last);
        let mut phases = Vec::new();
        let mut samples = 0;
        for (k, raw) in self.raw.iter().enumerate() {
            let mut p = PhaseProfile {
                name: names.get(k).cloned().unwrap_or_else(|| "window".into()),
                ..Default::default()
            };
            for (chain, &n) in raw {
                *p.stacks.entry(fold(chain, symbols)).or_default() += n;
                p.samples += n;
            }
            samples += p.samples;
            phases.push(p);
        }
        let mut profile = Profile {
            event: "cpu-clock".into(),
            hz: self.hz,
            samples,
            lost: self.lost,
            throttled: self.throttled,
            phases,
            apart_ns: None,
            functions: Vec::new(),
        };
        profile.functions = profile.functions();
        profile
    }
}

/// A raw chain (leaf first) as a folded stack, root first. A function calling itself
/// through inlined frames shows once per frame, as the kernel unwound it.
fn fold(chain: &[u64], symbols: &Symbols) -> String {
    if chain.is_empty() {
        return USER_FRAME.to_string();
    }
    chain
        .iter()
        .rev()
        .map(|&a| symbols.name(a))
        .collect::<Vec<_>>()
        .join(";")
}

/// Whether this machine has a hardware PMU (a `cpu` event source): without one only
/// software events sample, which is what the profile uses anyway.
pub fn hardware_pmu() -> bool {
    std::path::Path::new("/sys/bus/event_source/devices/cpu").exists()
        || std::path::Path::new("/sys/bus/event_source/devices/cpu_core").exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window taken apart samples as its length allows: a 5 ms window at the cap (a 2 %
    /// change of it is 10 samples a repetition), a 2 s one at 10 000 Hz, a 60 s one at the
    /// default; repetitions step the rate down 3 % so that they sample other instants.
    #[test]
    fn a_window_taken_apart_samples_as_its_length_allows() {
        assert_eq!(apart_hz(5_000_000, 1, APART_MAX_HZ), 100_000);
        assert_eq!(apart_hz(5_000_000, 1, 50_000), 50_000);
        assert_eq!(apart_hz(2_000_000_000, 1, APART_MAX_HZ), 10_000);
        assert_eq!(apart_hz(60_000_000_000, 1, APART_MAX_HZ), DEFAULT_HZ);
        assert_eq!(apart_hz(0, 1, APART_MAX_HZ), 100_000);
        let reps: Vec<u64> = (1..=5)
            .map(|r| apart_hz(5_000_000, r, APART_MAX_HZ))
            .collect();
        assert_eq!(reps, [100_000, 97_000, 94_000, 91_000, 100_000]);
        let change = 0.02 * 5e-3 * apart_hz(5_000_000, 1, APART_MAX_HZ) as f64;
        assert!(change >= 10.0, "{change}");
    }

    #[test]
    fn clones_and_renames_fold_to_the_function() {
        for (raw, folded) in [
            ("kmem_cache_alloc_noprof", "kmem_cache_alloc"),
            ("kmem_cache_alloc", "kmem_cache_alloc"),
            ("btrfs_search_slot.isra.0", "btrfs_search_slot"),
            ("do_unlinkat.constprop.0.isra.0", "do_unlinkat"),
            ("__d_lookup_rcu.part.12", "__d_lookup_rcu"),
            ("shrink_dentry_list.cold", "shrink_dentry_list"),
            (
                "memcg_slab_post_alloc_hook.llvm.1234567",
                "memcg_slab_post_alloc_hook",
            ),
            ("__kmalloc_node_noprof.cold", "__kmalloc_node"),
            // Not clones: a dot-less name, a version-like name, a bare suffix.
            ("ext4_da_write_end", "ext4_da_write_end"),
            ("foo.1", "foo.1"),
            (".cold", ".cold"),
            ("_noprof", "_noprof"),
            ("[unknown]", "[unknown]"),
        ] {
            assert_eq!(fold_symbol(raw), folded, "{raw}");
        }
        let stacks: BTreeMap<String, u64> = [
            ("a;kmem_cache_alloc".to_string(), 3),
            ("a;kmem_cache_alloc_noprof".to_string(), 4),
            ("a.isra.0;b".to_string(), 1),
        ]
        .into_iter()
        .collect();
        let f = folded_stacks(&stacks);
        assert_eq!(f.get("a;kmem_cache_alloc"), Some(&7));
        assert_eq!(f.get("a;b"), Some(&1));
    }

    const KALLSYMS: &str = "\
ffffffff81000000 T _stext
ffffffff81001000 t do_syscall_64
ffffffff81002000 T shmem_mknod
ffffffff81003000 t simple_offset_add.isra.0
ffffffff81004000 D some_data
ffffffff81005000 t mas_store
ffffffffc0001000 t btrfs_create\t[btrfs]
";

    #[test]
    fn a_profile_that_is_not_whole_says_what_it_misses() {
        let mut p = Profile {
            event: "cpu-clock".into(),
            hz: 4000,
            samples: 900,
            lost: 0,
            throttled: 0,
            phases: vec![],
            apart_ns: None,
            functions: vec![],
        };
        assert_eq!(p.shortfall(), None);
        p.lost = 100;
        let why = p.shortfall().unwrap();
        assert!(why.contains("lost 100 of 1000 samples"), "{why}");
        assert!(
            why.contains("--profile=1000") && !why.contains("throttled"),
            "{why}"
        );
        p.throttled = 2;
        let why = p.shortfall().unwrap();
        assert!(why.contains(" and was throttled 2 time(s)"), "{why}");
        p.lost = 0;
        p.hz = 3;
        let why = p.shortfall().unwrap();
        assert!(why.starts_with("the profile was throttled"), "{why}");
        assert!(!why.contains("--profile="), "never a rate of 0: {why}");
    }

    #[test]
    fn kallsyms_names_addresses_by_the_symbol_below_them() {
        let s = Symbols::parse(KALLSYMS).unwrap();
        assert_eq!(s.name(0xffffffff81001010), "do_syscall_64");
        assert_eq!(s.name(0xffffffff81003fff), "simple_offset_add");
        // Data symbols do not name code: the text symbol before it does.
        assert_eq!(s.name(0xffffffff81004010), "simple_offset_add");
        assert_eq!(s.name(0xffffffffc0001234), "btrfs_create");
        assert_eq!(s.name(0x1000), UNKNOWN_FRAME);
        let hidden = "0000000000000000 T _stext\n0000000000000000 t x\n";
        let e = Symbols::parse(hidden).err().unwrap().to_string();
        assert!(e.contains("kptr_restrict"), "{e}");
    }

    #[test]
    fn compiler_suffixes_name_the_same_function() {
        for n in [
            "foo.isra.0",
            "foo.constprop.0.isra.0",
            "foo.part.1",
            "foo.cold",
        ] {
            assert_eq!(base_name(n), "foo");
        }
        assert_eq!(base_name("foo"), "foo");
        assert_eq!(base_name(".L123"), ".L123");
    }

    #[test]
    fn chains_fold_root_first_and_user_samples_are_one_frame() {
        let s = Symbols::parse(KALLSYMS).unwrap();
        let chain = [0xffffffff81005001, 0xffffffff81003001, 0xffffffff81002001];
        assert_eq!(fold(&chain, &s), "shmem_mknod;simple_offset_add;mas_store");
        assert_eq!(fold(&[], &s), USER_FRAME);
    }

    #[test]
    fn self_and_total_shares_count_each_sample_once() {
        let stacks: BTreeMap<String, u64> = [
            ("a;b;c".to_string(), 6u64),
            ("a;b".to_string(), 2),
            ("a;x;a;y".to_string(), 2), // recursion: a counted once per sample
        ]
        .into_iter()
        .collect();
        let v = shares(&stacks, 0.0);
        let get = |f: &str| v.iter().find(|s| s.function == f).unwrap();
        assert_eq!(get("c").self_pct, 60.0);
        assert_eq!(get("c").total_pct, 60.0);
        assert_eq!(get("b").self_pct, 20.0);
        assert_eq!(get("b").total_pct, 80.0);
        assert_eq!(get("a").total_pct, 100.0);
        assert_eq!(get("a").self_pct, 0.0);
        assert_eq!(v[0].function, "c", "most self first");
        // The floor drops functions below it on both shares.
        assert!(shares(&stacks, 25.0).iter().all(|s| s.function != "y"));
        assert!(shares(&BTreeMap::new(), 0.0).is_empty());
    }
}
