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
pub use model::results::{
    FunctionShare, LISTED_PCT, PhaseProfile, Profile, ProfileReading, fold_symbol, folded_stacks,
    shares,
};
use perf_event::events::Software;
use perf_event::{Builder, SampleFlag};
use std::collections::HashMap;

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
}
