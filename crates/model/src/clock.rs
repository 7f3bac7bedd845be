//! What a run's times measure — its clock — and which times may be compared.
//!
//! A run on the host, or in a KVM guest, is timed by the machine's clock: real time, with
//! the machine's noise in it. A guest under plain TCG is timed by the host's clock too, but
//! the code runs emulated, so its times are neither the hardware's nor steady. A guest
//! under QEMU's instruction-count clock (`-icount shift=S,sleep=off`, single-threaded TCG)
//! sees one guest instruction as 2^S ns: its times are the exact cost of the code path,
//! kernel and user — the same on a busy host, on any machine with the same QEMU and CPU
//! model. Cache misses it does not see: the cost model (`sigbench_cost`, `vm::cost`)
//! prices a guest's memory accesses beside it (`cost_ms`); I/O waits and lock contention
//! neither sees, so a finding is confirmed on hardware or KVM.
//!
//! This module owns that model: the clock a run document records (`Clock`), the time base
//! two runs must share for their times to be compared (`TimeBase`), and how much noise the
//! verdict engine assumes for a time measured on each (`TimeBase::noise_floor`).

use serde::{Deserialize, Serialize};
use std::fmt;

/// What the times of a guest count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockKind {
    /// Guest instructions executed, 2^shift ns each (QEMU `-icount`).
    Icount,
    /// The host's real time (KVM, or TCG without -icount).
    Host,
}

impl ClockKind {
    pub fn name(self) -> &'static str {
        match self {
            ClockKind::Icount => "icount",
            ClockKind::Host => "host",
        }
    }
}

/// How a guest's kernel was entered (`measure::vm::unpacked`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Boot {
    /// The kernel unpacked on the host, through its PVH entry: no decompressor, no KASLR
    /// (the fixed state).
    Pvh,
    /// The bzImage, through its decompressor, which draws KASLR (a sampled state).
    Bzimage,
}

/// The clock of a run in a guest, as its document records it (`host.clock`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Clock {
    pub kind: ClockKind,
    /// icount: one guest instruction is 2^shift ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shift: Option<u32>,
    /// QEMU's version (`qemu-system-x86_64 --version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qemu: Option<String>,
    /// The guest CPU model QEMU was given (`-cpu`): it decides which instructions the
    /// kernel's alternatives patch in, so icount times of two models differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// The cost model that counted the windows (`vm::cost::model`), when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_model: Option<String>,
    /// How the guest's kernel was entered (absent in runs from before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<Boot>,
}

/// The shift sigbench gives `-icount`: 1 instruction = 1 ns.
pub const ICOUNT_SHIFT: u32 = 0;

/// What one sentence says about the instruction-count clock wherever its times appear.
pub const ICOUNT_NOTE: &str = "icount clock: instructions executed, kernel and user, at 1 ns each — the exact cost of the code path; cache misses are priced only by cost_ms (the cost model, in guests that ran it), I/O waits and lock contention by neither, so confirm a finding on hardware or KVM";

/// What one sentence says about the cost model wherever `cost_ms` appears (its weights
/// as `metric::COST_WEIGHTS` has them).
pub fn cost_note() -> String {
    let w = crate::metric::COST_WEIGHTS;
    format!(
        "the cost model's price of the window at {} GHz — each instruction {} cycle (a rep string instruction by the cache lines it touches, not per iteration), each first-level miss {} cycles more, each second-level miss {} more, each memory access {} more, each locked instruction {} more, each line taken from another CPU's caches {} more than a last-level hit — deterministic like icount; TLB misses, prefetching, branch prediction and the overlap of misses are not modelled",
        w.ghz, w.insn, w.l2_hit, w.ll_hit, w.memory, w.locked, w.coherence
    )
}

/// The time base of a run: runs compare their times only within one.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TimeBase {
    /// The hardware's clock: the host itself, or a KVM guest.
    Hardware,
    /// The host's clock around emulated code (TCG without -icount).
    Emulated,
    /// Instructions counted by QEMU, with the shift and the guest CPU model.
    Icount { shift: u32, cpu: String },
}

impl TimeBase {
    /// The time base of a run whose machine recorded `clock` (guests only) and ran
    /// `emulated` or not.
    pub fn of(clock: Option<&Clock>, emulated: bool) -> TimeBase {
        match clock {
            Some(c) if c.kind == ClockKind::Icount => TimeBase::Icount {
                shift: c.shift.unwrap_or(ICOUNT_SHIFT),
                cpu: c.cpu.clone().unwrap_or_default(),
            },
            _ if emulated => TimeBase::Emulated,
            _ => TimeBase::Hardware,
        }
    }

    /// Times on this base repeat exactly for the same code path.
    pub fn deterministic(&self) -> bool {
        matches!(self, TimeBase::Icount { .. })
    }

    /// The smallest spread, as a fraction of the level, a time measured on this base is
    /// judged against (stats::verdict): a change must clear [`crate::stats::verdict::SEPARATION_K`]
    /// times it to be decided from a few samples. Measured, docs/statistics.md:
    /// - icount: 10 repetitions of one kernel spread by at most 0.05 % (max/min − 1), so
    ///   0.1 % — a change of 0.3 % is decided at n = 3;
    /// - the host's clock drifts between blocks of repetitions by several per cent on a
    ///   shared machine (sequential A/A pairs at `-r 3`), so 3 % — a change of 9 % is
    ///   decided at n = 3, a smaller one needs the rank test (`-r 10`).
    pub fn noise_floor(&self) -> f64 {
        match self {
            TimeBase::Icount { .. } => ICOUNT_NOISE_FLOOR,
            TimeBase::Hardware | TimeBase::Emulated => HOST_NOISE_FLOOR,
        }
    }
}

/// See [`TimeBase::noise_floor`].
pub const ICOUNT_NOISE_FLOOR: f64 = 0.001;
/// See [`TimeBase::noise_floor`].
pub const HOST_NOISE_FLOOR: f64 = 0.03;

impl fmt::Display for TimeBase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeBase::Hardware => write!(f, "the host's clock"),
            TimeBase::Emulated => write!(f, "the host's clock under TCG emulation"),
            TimeBase::Icount { shift, cpu } => {
                write!(f, "the icount clock (shift {shift}")?;
                if !cpu.is_empty() {
                    write!(f, ", -cpu {cpu}")?;
                }
                write!(f, ")")
            }
        }
    }
}

/// When a set of time bases cannot be compared: one sentence saying which clocks are
/// mixed. Hardware and emulated times mix with a notice elsewhere (they are both real
/// time); an icount time never mixes with anything but the same icount clock.
pub fn mixed<'a>(bases: impl IntoIterator<Item = &'a TimeBase>) -> Option<String> {
    let set: std::collections::BTreeSet<&TimeBase> = bases.into_iter().collect();
    let icount = set.iter().any(|b| b.deterministic());
    if !icount || set.len() < 2 {
        return None;
    }
    let names: Vec<String> = set.iter().map(|b| b.to_string()).collect();
    Some(format!(
        "times measured on different clocks cannot be compared: {} (an instruction count is not a real time; measure both with one --clock)",
        names.join(" vs ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn icount(cpu: &str) -> Option<Clock> {
        Some(Clock {
            kind: ClockKind::Icount,
            shift: Some(0),
            qemu: Some("7.2.22".into()),
            cpu: Some(cpu.into()),
            cost_model: None,
            boot: None,
        })
    }

    /// The record's words for how a kernel was entered, and a record from before it was kept.
    #[test]
    fn a_clock_records_how_its_kernel_was_entered() {
        let mut c = icount("max").unwrap();
        c.boot = Some(Boot::Pvh);
        let text = serde_json::to_string(&c).unwrap();
        assert!(text.contains(r#""boot":"pvh""#), "{text}");
        assert_eq!(serde_json::from_str::<Clock>(&text).unwrap(), c);
        c.boot = Some(Boot::Bzimage);
        assert!(
            serde_json::to_string(&c)
                .unwrap()
                .contains(r#""boot":"bzimage""#)
        );
        let old: Clock = serde_json::from_str(r#"{"kind":"icount","shift":0}"#).unwrap();
        assert_eq!(old.boot, None);
    }

    #[test]
    fn a_run_has_the_time_base_of_its_clock() {
        assert_eq!(TimeBase::of(None, false), TimeBase::Hardware);
        assert_eq!(TimeBase::of(None, true), TimeBase::Emulated);
        let host_clock = Some(Clock {
            kind: ClockKind::Host,
            shift: None,
            qemu: None,
            cpu: None,
            cost_model: None,
            boot: None,
        });
        assert_eq!(TimeBase::of(host_clock.as_ref(), true), TimeBase::Emulated);
        let b = TimeBase::of(icount("max").as_ref(), true);
        assert!(b.deterministic());
        assert_eq!(b.to_string(), "the icount clock (shift 0, -cpu max)");
        assert!(b.noise_floor() < TimeBase::Hardware.noise_floor());
    }

    #[test]
    fn icount_mixes_only_with_the_same_icount_clock() {
        let i = TimeBase::of(icount("max").as_ref(), true);
        let j = TimeBase::of(icount("qemu64").as_ref(), true);
        assert_eq!(mixed([&i, &i]), None);
        assert_eq!(mixed([&TimeBase::Hardware, &TimeBase::Emulated]), None);
        let m = mixed([&i, &TimeBase::Hardware]).unwrap();
        assert!(
            m.contains("icount clock") && m.contains("host's clock"),
            "{m}"
        );
        assert!(mixed([&i, &j]).is_some());
    }
}
