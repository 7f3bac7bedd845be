//! A metric of a measured case, as a type: where it was taken (the whole window or one
//! phase) and what it measures (a time, the cost model's price or one of its counts, a
//! throughput, a probe's count, a latency statistic, a kernel-wide delta, a function's
//! profiled time). What kind of quantity it is, which way is better and whether it is
//! primary (what users feel) or evidence are methods here; text is only its name at the
//! edges — the CLI's `--metric`, the store, reports — shown by `Display` and read back by
//! `FromStr`. Nothing else asks a name what it is (issue 47: a `--dir` with a space, and a
//! throughput named with its case, were both misread from text).

use serde::{Deserialize, Serialize};
use std::fmt;

/// What kind of quantity a metric is; decides how it is compared and shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Wall and CPU time of the timed window (ms).
    Time,
    /// Counts: probe counters and syscalls issued.
    Counter,
    /// Per-syscall latency percentiles (µs).
    Latency,
    /// Kernel-wide deltas: slabinfo, vmstat, block device.
    Kernel,
    /// A function's share of the window's profile samples, in per cent (`--profile`):
    /// `profile.self.FUNCTION` where it ran, `profile.total.FUNCTION` with its callees.
    Profile,
    /// Work done per second (`throughput_mb_s`, `ops_per_s`): higher is better, so a drop
    /// is the regression.
    Throughput,
}

impl Kind {
    /// Whether more of it is better (throughput), rather than less (time, counts).
    pub fn higher_is_better(self) -> bool {
        self == Kind::Throughput
    }

    /// Whether it is measured on a clock (times, latencies and the rates made of them).
    pub fn timed(self) -> bool {
        matches!(self, Kind::Time | Kind::Latency | Kind::Throughput)
    }
}

/// Which family of rows a metric belongs to: what produced it, so a report can group its
/// rows (the cost model's counts under the cost model, not among the kernel-wide deltas)
/// and say what kind of evidence a row is. Decided by [`Metric::family`], one `match` on
/// the source with no wildcard: a new source must say its family. In the order a reader
/// wants them: what users feel, then the evidence from the most telling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// The window's or a phase's wall time, and CPU time.
    Time,
    /// The cost model's price (`cost_ms`) and its counts (`cost.NAME`).
    CostModel,
    /// Counts of the workload's own operations: syscalls, probes of its operations, a
    /// loadfile's operations.
    Counts,
    /// Work per second.
    Throughput,
    /// A function's profiled time.
    Profile,
    /// Kernel-wide behaviour: probes that count the kernel's (lock contention), slab,
    /// vmstat and block deltas.
    KernelWide,
    /// A syscall's or a loadfile operation's latency statistic.
    Latency,
    /// The clients' experience: the slowest operation, time off the CPU, blocking.
    Clients,
    /// The kernel's estimate of the user/system split of CPU time.
    UserSystem,
}

impl Family {
    /// The family in a word or two, as reports and watch's notes say it.
    pub fn word(self) -> &'static str {
        match self {
            Family::Time => "time",
            Family::UserSystem => "user/system",
            Family::CostModel => "cost model",
            Family::Counts => "counts",
            Family::Throughput => "throughput",
            Family::Latency => "latency",
            Family::Clients => "clients",
            Family::KernelWide => "kernel-wide",
            Family::Profile => "profile",
        }
    }
}

/// Probes that count kernel-wide behaviour rather than the workload's own operations (the
/// default probes of runs with clients: lock contention, btrfs's space flushes —
/// `plan::spec::CONTENTION_PROBE`, `Fs::contention_probes`): compared as kernel-wide
/// rows, evidence and never an alert. A new probe there needs its name here.
pub const KERNEL_WIDE_PROBES: &[&str] = &["lock_contention", "space_flushes"];

/// The weights `cost_ms` is priced with (`sigbench_cost::Weights`' defaults: a current
/// x86 server's latencies at 3 GHz; docs/statistics.md).
pub const COST_WEIGHTS: sigbench_cost::Weights = sigbench_cost::Weights::DEFAULT;

/// A statistic of one call's (or a loadfile operation's) latencies, in µs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stat {
    Avg,
    P50,
    P99,
    Max,
}

impl Stat {
    const ALL: [Stat; 4] = [Stat::Avg, Stat::P50, Stat::P99, Stat::Max];

    fn suffix(self) -> &'static str {
        match self {
            Stat::Avg => "avg_us",
            Stat::P50 => "p50_us",
            Stat::P99 => "p99_us",
            Stat::Max => "max_us",
        }
    }
}

/// Which of a function's profiled times: where it ran itself, or with its callees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Share {
    /// `profile.self.F`.
    Own,
    /// `profile.total.F`.
    Total,
}

/// What a metric measures.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// `wall_ms`: the window's (or the phase's) wall time.
    Wall,
    /// `user_ms`, `sys_ms`: the kernel's split of CPU time, an estimate from timer ticks.
    User,
    Sys,
    /// `cpu_ms`: user + system, exact.
    Cpu,
    /// `calls`: the syscalls the window issued.
    Calls,
    /// `cost_ms`: the cost model's price (a guest under the icount clock).
    Cost,
    /// `cost.NAME`: one of the cost model's counts, its evidence.
    CostCount(String),
    /// A probe's count of the workload's own operations.
    Count(String),
    /// A probe's count of kernel-wide behaviour ([`KERNEL_WIDE_PROBES`]).
    KernelCount(String),
    /// `CALL.p50_us` …: a syscall's or a loadfile operation's latency statistic.
    Latency {
        call: String,
        stat: Stat,
    },
    /// `OP.count`: how often a loadfile operation ran.
    Operations(String),
    /// `slabinfo.CACHE.active_objs`, `vmstat.KEY`, `block.KEY`: kernel-wide deltas,
    /// stored only when they moved.
    Slab(String),
    Vmstat(String),
    Block(String),
    /// `throughput_mb_s`, `ops_per_s`: work per second.
    Throughput,
    OpsPerSecond,
    /// `max_latency_ms`: the slowest operation of a loadfile run.
    MaxLatency,
    /// `off_cpu_ms`, `context_switches`: the clients' time off the CPU, and how often they
    /// blocked.
    OffCpu,
    ContextSwitches,
    /// `profile.self.F`, `profile.total.F`: a function's profiled time (ms).
    Profile {
        share: Share,
        function: String,
    },
}

/// Names of sources with no parameter, as `Display` writes them.
const PLAIN: &[(&str, Source)] = &[
    ("wall_ms", Source::Wall),
    ("user_ms", Source::User),
    ("sys_ms", Source::Sys),
    ("cpu_ms", Source::Cpu),
    ("calls", Source::Calls),
    ("cost_ms", Source::Cost),
    ("throughput_mb_s", Source::Throughput),
    ("ops_per_s", Source::OpsPerSecond),
    ("max_latency_ms", Source::MaxLatency),
    ("off_cpu_ms", Source::OffCpu),
    ("context_switches", Source::ContextSwitches),
];

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((name, _)) = PLAIN.iter().find(|(_, s)| s == self) {
            return f.write_str(name);
        }
        match self {
            Source::CostCount(n) => write!(f, "cost.{n}"),
            Source::Count(n) | Source::KernelCount(n) => f.write_str(n),
            Source::Latency { call, stat } => write!(f, "{call}.{}", stat.suffix()),
            Source::Operations(op) => write!(f, "{op}.count"),
            Source::Slab(c) => write!(f, "slabinfo.{c}.active_objs"),
            Source::Vmstat(k) => write!(f, "vmstat.{k}"),
            Source::Block(k) => write!(f, "block.{k}"),
            Source::Profile { share, function } => {
                let s = match share {
                    Share::Own => "self",
                    Share::Total => "total",
                };
                write!(f, "profile.{s}.{function}")
            }
            _ => unreachable!("every parameterless source is in PLAIN"),
        }
    }
}

impl Source {
    /// A probe's count, kernel-wide when its name says the probe counts the kernel's
    /// behaviour rather than the workload's ([`KERNEL_WIDE_PROBES`]).
    pub fn probe(name: &str) -> Source {
        if KERNEL_WIDE_PROBES.contains(&name) {
            Source::KernelCount(name.to_string())
        } else {
            Source::Count(name.to_string())
        }
    }

    /// The source a name shows, as a whole window has it (None: not a window's name).
    fn parse(text: &str) -> Option<Source> {
        if let Some((_, s)) = PLAIN.iter().find(|(n, _)| *n == text) {
            return Some(s.clone());
        }
        let nonempty = |s: &str| (!s.is_empty()).then(|| s.to_string());
        if let Some(f) = text.strip_prefix("profile.self.") {
            return nonempty(f).map(|function| Source::Profile {
                share: Share::Own,
                function,
            });
        }
        if let Some(f) = text.strip_prefix("profile.total.") {
            return nonempty(f).map(|function| Source::Profile {
                share: Share::Total,
                function,
            });
        }
        if let Some(c) = text
            .strip_prefix("slabinfo.")
            .and_then(|t| t.strip_suffix(".active_objs"))
        {
            return nonempty(c).map(Source::Slab);
        }
        if let Some(k) = text.strip_prefix("vmstat.") {
            return nonempty(k).map(Source::Vmstat);
        }
        if let Some(k) = text.strip_prefix("block.") {
            return nonempty(k).map(Source::Block);
        }
        if let Some(n) = text.strip_prefix("cost.") {
            return nonempty(n).map(Source::CostCount);
        }
        for stat in Stat::ALL {
            if let Some(call) = text
                .strip_suffix(stat.suffix())
                .and_then(|t| t.strip_suffix('.'))
            {
                return nonempty(call).map(|call| Source::Latency { call, stat });
            }
        }
        if let Some(op) = text.strip_suffix(".count") {
            return nonempty(op).map(Source::Operations);
        }
        None
    }

    /// Whether a phase can have it: its time, its price, its slab objects, its profile.
    fn per_phase(&self) -> bool {
        matches!(
            self,
            Source::Wall | Source::Cost | Source::Slab(_) | Source::Profile { .. }
        )
    }
}

/// One metric of a case: the window's or a phase's, and what it measures. Ordered, equal
/// and hashed by its name, so tables keep the order they have always had.
#[derive(Clone, Debug)]
pub struct Metric {
    phase: Option<String>,
    source: Source,
    /// The name `Display` shows, made once.
    name: String,
}

impl Metric {
    /// The whole window's `source`.
    pub fn window(source: Source) -> Metric {
        Metric {
            name: source.to_string(),
            phase: None,
            source,
        }
    }

    /// Phase `phase`'s `source` (`create.wall_ms`).
    pub fn in_phase(phase: &str, source: Source) -> Metric {
        Metric {
            name: format!("{phase}.{source}"),
            phase: Some(phase.to_string()),
            source,
        }
    }

    /// `phase`'s `source`, or the window's when `phase` is None.
    pub fn of(phase: Option<&str>, source: Source) -> Metric {
        match phase {
            Some(p) => Metric::in_phase(p, source),
            None => Metric::window(source),
        }
    }

    /// The window's wall time, `wall_ms`: every case has it.
    pub fn wall() -> Metric {
        Metric::window(Source::Wall)
    }

    pub fn source(&self) -> &Source {
        &self.source
    }

    /// The phase it was taken in (None: the whole window).
    pub fn phase(&self) -> Option<&str> {
        self.phase.as_deref()
    }

    /// Its name (`wall_ms`, `delete.cost_ms`, `profile.self.vfs_unlink`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Which family of rows it belongs to (what produced it).
    pub fn family(&self) -> Family {
        match &self.source {
            Source::Wall | Source::Cpu => Family::Time,
            Source::User | Source::Sys => Family::UserSystem,
            Source::Cost | Source::CostCount(_) => Family::CostModel,
            Source::Calls | Source::Count(_) | Source::Operations(_) => Family::Counts,
            Source::Throughput | Source::OpsPerSecond => Family::Throughput,
            Source::Latency { .. } => Family::Latency,
            Source::MaxLatency | Source::OffCpu | Source::ContextSwitches => Family::Clients,
            Source::KernelCount(_) | Source::Slab(_) | Source::Vmstat(_) | Source::Block(_) => {
                Family::KernelWide
            }
            Source::Profile { .. } => Family::Profile,
        }
    }

    /// Whether a run that lacks it measured 0 — the one rule for a missing value.
    /// Kernel-wide deltas (slab, vmstat, block) are stored only when they moved, and a
    /// function absent from a profile took no samples: their absence is 0. Anything else
    /// absent was not measured (no cost model, no such probe, no latencies, another
    /// signature) and is not comparable, never 0.
    pub fn absent_is_zero(&self) -> bool {
        match &self.source {
            Source::Slab(_) | Source::Vmstat(_) | Source::Block(_) | Source::Profile { .. } => true,
            Source::Wall
            | Source::User
            | Source::Sys
            | Source::Cpu
            | Source::Calls
            | Source::Cost
            | Source::CostCount(_)
            | Source::Count(_)
            | Source::KernelCount(_)
            | Source::Latency { .. }
            | Source::Operations(_)
            | Source::Throughput
            | Source::OpsPerSecond
            | Source::MaxLatency
            | Source::OffCpu
            | Source::ContextSwitches => false,
        }
    }

    /// What kind of quantity it is.
    pub fn kind(&self) -> Kind {
        match &self.source {
            Source::Wall | Source::User | Source::Sys | Source::Cpu | Source::Cost => Kind::Time,
            Source::OffCpu => Kind::Time,
            Source::Calls | Source::Count(_) | Source::Operations(_) => Kind::Counter,
            Source::Latency { .. } | Source::MaxLatency => Kind::Latency,
            Source::CostCount(_)
            | Source::KernelCount(_)
            | Source::Slab(_)
            | Source::Vmstat(_)
            | Source::Block(_)
            | Source::ContextSwitches => Kind::Kernel,
            Source::Throughput | Source::OpsPerSecond => Kind::Throughput,
            Source::Profile { .. } => Kind::Profile,
        }
    }

    /// Whether more of it is better (a throughput).
    pub fn higher_is_better(&self) -> bool {
        self.kind().higher_is_better()
    }

    /// Whether it is what users feel — the window's and each phase's wall time and price,
    /// CPU time, throughput, the signature's own counts — rather than evidence. Profile
    /// times, kernel-wide counts (slab, vmstat, block, lock contention, the cost model's
    /// counts), latency statistics and the user/system split are evidence: over seventeen
    /// bookworm kernels four of six watch alerts were profile shares of small functions
    /// while the time stood still. The two are separate Holm families in a comparison and
    /// in a watch; only primary metrics raise a watch's alert.
    pub fn primary(&self) -> bool {
        match self.kind() {
            Kind::Throughput | Kind::Counter => true,
            Kind::Time => matches!(self.source, Source::Wall | Source::Cpu | Source::Cost),
            Kind::Latency | Kind::Kernel | Kind::Profile => false,
        }
    }

    /// Primary, or named by the user (`--metric`).
    pub fn primary_or_in(&self, named: &[Metric]) -> bool {
        self.primary() || named.contains(self)
    }

    /// A time users feel on its own: wall time or the cost model's price.
    pub fn felt_time(&self) -> bool {
        matches!(self.source, Source::Wall | Source::Cost)
    }

    /// The kernel's estimate of the user/system split of CPU time, from which mode each
    /// timer tick interrupted: shown, never significant on its own (their sum is exact).
    pub fn split_estimate(&self) -> bool {
        matches!(self.source, Source::User | Source::Sys)
    }

    /// A function's profiled time.
    pub fn profiled(&self) -> bool {
        matches!(self.source, Source::Profile { .. })
    }

    /// A function's own profiled time (`profile.self.F`).
    pub fn profiled_self(&self) -> bool {
        matches!(
            self.source,
            Source::Profile {
                share: Share::Own,
                ..
            }
        )
    }

    /// A latency statistic in µs (a call's or a loadfile operation's).
    pub fn latency_stat(&self) -> Option<Stat> {
        match self.source {
            Source::Latency { stat, .. } => Some(stat),
            _ => None,
        }
    }

    /// The slab cache it counts, if it counts one.
    pub fn slab_cache(&self) -> Option<&str> {
        match &self.source {
            Source::Slab(c) => Some(c),
            _ => None,
        }
    }

    /// What kind of evidence it is, in a word or two: its family's word.
    pub fn evidence_kind(&self) -> &'static str {
        self.family().word()
    }
}

/// Metrics' names, comma-separated (for a message).
pub fn list<'a>(metrics: impl IntoIterator<Item = &'a Metric>) -> String {
    let names: Vec<&str> = metrics.into_iter().map(Metric::name).collect();
    names.join(", ")
}

/// The window's wall time: the metric every case has.
impl Default for Metric {
    fn default() -> Metric {
        Metric::wall()
    }
}

impl PartialEq for Metric {
    fn eq(&self, other: &Metric) -> bool {
        self.name == other.name
    }
}

impl Eq for Metric {}

impl PartialOrd for Metric {
    fn partial_cmp(&self, other: &Metric) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Metric {
    fn cmp(&self, other: &Metric) -> std::cmp::Ordering {
        self.name.cmp(&other.name)
    }
}

impl std::hash::Hash for Metric {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.name.hash(h)
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl std::str::FromStr for Metric {
    type Err = String;

    /// A metric from its name: the window's (`wall_ms`, `unlink.p50_us`,
    /// `profile.self.F`), a phase's (`delete.wall_ms`), or else a probe's count.
    fn from_str(text: &str) -> Result<Metric, String> {
        if text.is_empty() || text.chars().any(char::is_whitespace) {
            return Err(format!(
                "`{text}` is not a metric name (a name has no spaces: wall_ms, delete.cost_ms, unlink.p50_us)"
            ));
        }
        if let Some(source) = Source::parse(text) {
            return Ok(Metric::window(source));
        }
        if let Some((phase, rest)) = text.split_once('.')
            && let Some(source) = Source::parse(rest).filter(Source::per_phase)
            && !phase.is_empty()
        {
            return Ok(Metric::in_phase(phase, source));
        }
        Ok(Metric::window(Source::probe(text)))
    }
}

/// Tests name metrics as text.
#[cfg(any(test, feature = "fixtures"))]
impl From<&str> for Metric {
    fn from(text: &str) -> Metric {
        text.parse().expect("a metric name")
    }
}

/// Tests compare metrics with their names.
#[cfg(any(test, feature = "fixtures"))]
impl PartialEq<&str> for Metric {
    fn eq(&self, text: &&str) -> bool {
        self.name == *text
    }
}

impl Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name)
    }
}

impl<'de> Deserialize<'de> for Metric {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Metric, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_source() -> Vec<Source> {
        let s = |x: &str| x.to_string();
        let mut v: Vec<Source> = PLAIN.iter().map(|(_, s)| s.clone()).collect();
        v.extend([
            Source::CostCount(s("l1d_misses")),
            Source::Count(s("inode_evictions")),
            Source::KernelCount(s("lock_contention")),
            Source::Operations(s("NTCreateX")),
            Source::Slab(s("maple_node")),
            Source::Slab(s(":0000064")),
            Source::Vmstat(s("nr_dirty")),
            Source::Block(s("write_sectors")),
            Source::Profile {
                share: Share::Own,
                function: s("shmem_unlink.cold"),
            },
            Source::Profile {
                share: Share::Total,
                function: s("vfs_unlink"),
            },
        ]);
        for stat in Stat::ALL {
            v.push(Source::Latency {
                call: s("unlink"),
                stat,
            });
        }
        v
    }

    /// Every metric's name reads back as the same metric, with the same kind — the
    /// window's and, where a phase has it, a phase's.
    #[test]
    fn every_name_reads_back_as_its_metric() {
        for source in every_source() {
            let mut metrics = vec![Metric::window(source.clone())];
            if source.per_phase() {
                metrics.push(Metric::in_phase("delete", source.clone()));
            }
            for m in metrics {
                let back: Metric = m.name().parse().unwrap();
                assert_eq!(back.source(), m.source(), "{m}");
                assert_eq!(back.phase(), m.phase(), "{m}");
                assert_eq!(back.kind(), m.kind(), "{m}");
                let json = serde_json::to_string(&m).unwrap();
                assert_eq!(json, format!("\"{m}\""));
                assert_eq!(serde_json::from_str::<Metric>(&json).unwrap(), m);
            }
        }
    }

    /// What a metric is comes from its type: throughput is better higher whatever its
    /// case, a phase's wall time is primary, a latency and a profile are evidence.
    #[test]
    fn kind_direction_and_family_are_the_metrics() {
        let m = |t: &str| t.parse::<Metric>().unwrap();
        assert!(m("throughput_mb_s").higher_is_better() && m("ops_per_s").primary());
        assert!(!m("wall_ms").higher_is_better());
        for p in [
            "wall_ms",
            "cpu_ms",
            "cost_ms",
            "delete.wall_ms",
            "delete.cost_ms",
        ] {
            assert!(m(p).primary(), "{p}");
        }
        for e in [
            "user_ms",
            "off_cpu_ms",
            "unlink.p50_us",
            "profile.self.f",
            "delete.profile.total.f",
            "cost.ll_misses",
            "lock_contention",
            "slabinfo.maple_node.active_objs",
        ] {
            assert!(!m(e).primary(), "{e}");
        }
        assert_eq!(m("inode_evictions").kind(), Kind::Counter);
        assert_eq!(m("space_flushes").kind(), Kind::Kernel);
        assert_eq!(m("create.profile.self.f").phase(), Some("create"));
        assert_eq!(m("unlink.p50_us").phase(), None);
        assert_eq!(m("sys_ms").evidence_kind(), "user/system");
        assert!(m("delete.slabinfo.x.active_objs").absent_is_zero());
        assert!(m("create.profile.self.f").absent_is_zero());
        assert!(!m("cost.ll_misses").absent_is_zero() && !m("unlink.p50_us").absent_is_zero());
        assert!("a b".parse::<Metric>().is_err() && "".parse::<Metric>().is_err());
    }

    /// Every source's family and its rule for absence (issue 59: `cost.*`, the clients'
    /// rows and `max_latency_ms` were called kernel-wide). `variant` has no wildcard, so a
    /// new source fails to compile here until the table has it.
    #[test]
    fn every_source_has_its_family_and_its_rule_for_absence() {
        fn variant(s: &Source) -> usize {
            match s {
                Source::Wall => 0,
                Source::User => 1,
                Source::Sys => 2,
                Source::Cpu => 3,
                Source::Calls => 4,
                Source::Cost => 5,
                Source::CostCount(_) => 6,
                Source::Count(_) => 7,
                Source::KernelCount(_) => 8,
                Source::Latency { .. } => 9,
                Source::Operations(_) => 10,
                Source::Slab(_) => 11,
                Source::Vmstat(_) => 12,
                Source::Block(_) => 13,
                Source::Throughput => 14,
                Source::OpsPerSecond => 15,
                Source::MaxLatency => 16,
                Source::OffCpu => 17,
                Source::ContextSwitches => 18,
                Source::Profile { .. } => 19,
            }
        }
        use Family::*;
        let table = [
            ("wall_ms", Time, false),
            ("user_ms", UserSystem, false),
            ("sys_ms", UserSystem, false),
            ("cpu_ms", Time, false),
            ("calls", Counts, false),
            ("cost_ms", CostModel, false),
            ("cost.l2_misses", CostModel, false),
            ("inode_evictions", Counts, false),
            ("lock_contention", KernelWide, false),
            ("unlink.p99_us", Latency, false),
            ("Rename.count", Counts, false),
            ("slabinfo.maple_node.active_objs", KernelWide, true),
            ("vmstat.nr_dirty", KernelWide, true),
            ("block.write_ios", KernelWide, true),
            ("throughput_mb_s", Throughput, false),
            ("ops_per_s", Throughput, false),
            ("max_latency_ms", Clients, false),
            ("off_cpu_ms", Clients, false),
            ("context_switches", Clients, false),
            ("profile.self.vfs_unlink", Profile, true),
        ];
        let mut seen = [false; 20];
        for (name, family, absent) in table {
            let m: Metric = name.parse().unwrap();
            seen[variant(m.source())] = true;
            assert_eq!(m.family(), family, "{name}");
            assert_eq!(m.absent_is_zero(), absent, "{name}");
            assert_eq!(
                m.evidence_kind() == "kernel-wide",
                family == KernelWide,
                "{name}"
            );
        }
        assert!(seen.iter().all(|&s| s), "a source without a row: {seen:?}");
    }

    /// Names order as text, as the tables always have.
    #[test]
    fn metrics_order_by_name() {
        let mut v: Vec<Metric> = ["wall_ms", "calls", "create.wall_ms", "profile.self.a"]
            .iter()
            .map(|t| t.parse().unwrap())
            .collect();
        v.sort();
        let names: Vec<&str> = v.iter().map(Metric::name).collect();
        assert_eq!(
            names,
            ["calls", "create.wall_ms", "profile.self.a", "wall_ms"]
        );
    }
}
