//! The busy rules: when a host-time window shared its CPU with other work too much to
//! decide anything, per case and per comparison.

use super::*;

/// A window is busy when its thread waited for a CPU (or the hypervisor took the CPUs)
/// for at least this share of it. Measured (test3 on tmpfs and btrfs, N = 250, and ext4,
/// N = 2000, a 2-CPU machine): a quiet machine 0.1–2.6 %, one spinning process beside
/// the run 0.1–0.6 % (a CPU was free), two 57–61 %.
pub const BUSY_WINDOW_SHARE: f64 = 0.05;

/// A side's time is inconclusive when more than this share of a case's windows, and at
/// least two, were busy. One disturbed window is an outlier the tests absorb: A/A pairs of
/// test3 on tmpfs at `-r 3` on a quiet machine had one in 20 (bench/aa.sh).
pub const BUSY_WINDOWS: f64 = 0.2;

/// How busy the machine was in one case's windows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Busy {
    pub windows: usize,
    pub busy: usize,
    /// The largest share of a window the workload waited (or had its CPUs stolen).
    pub worst: f64,
}

impl Busy {
    pub fn inconclusive(&self) -> bool {
        self.busy >= 2 && self.busy as f64 > BUSY_WINDOWS * self.windows as f64
    }
}

/// The share of `c`'s window the machine was busy for it: its one thread waited for a
/// CPU, or a hypervisor took the CPUs (steal), at most all of it. None where that was not recorded,
/// and for runs whose times do not see the machine (the icount clock). With several
/// clients only the steal counts: their waits for each other are the workload's own.
pub fn busy_share(c: &CaseResult, timebase: &TimeBase) -> Option<f64> {
    if matches!(timebase, TimeBase::Icount { .. }) || c.wall_ns == 0 {
        return None;
    }
    let load = c.load?;
    let wall_ms = c.wall_ns as f64 / 1e6;
    let delay = load
        .run_delay_ms
        .filter(|_| c.clients.unwrap_or(1) <= 1)
        .unwrap_or(0.0);
    let steal = load.steal_ms.unwrap_or(0.0);
    // The thread may wait just before or after its timed span, still inside the window.
    Some((delay.max(steal) / wall_ms).min(1.0))
}

/// A case whose windows the machine was busy in, on one side of a pair.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BusyCase {
    pub case: CaseKey,
    pub label: String,
    #[serde(flatten)]
    pub load: Busy,
}

impl BusyCase {
    pub fn describe(&self) -> String {
        format!(
            "{} {}: the machine was busy in {} of {} windows (the workload waited for a CPU up to {:.0} % of a window)",
            self.label,
            self.case.short(),
            self.load.busy,
            self.load.windows,
            self.load.worst * 100.0
        )
    }
}

/// The busy cases of `cmp` ([`Pair::busy`]) that a judged time of `metrics` comes from.
pub fn busy_cases<'a>(cmp: &'a Comparison, metrics: &[Metric]) -> Vec<&'a BusyCase> {
    cmp.pairs
        .iter()
        .flat_map(|p| {
            p.busy.iter().filter(|b| {
                p.rows
                    .iter()
                    .any(|r| r.case == b.case && r.kind.timed() && metrics.contains(&r.metric))
            })
        })
        .collect()
}

/// What a [`Verdict::Busy`] says: inconclusive, and where the machine was busy.
pub fn busy_verdict(cmp: &Comparison, metrics: &[Metric]) -> String {
    let cases: Vec<String> = busy_cases(cmp, metrics)
        .iter()
        .map(|b| b.describe())
        .collect();
    format!(
        "inconclusive: the machine was busy ({}); measure again when nothing else runs",
        cases.join("; ")
    )
}
