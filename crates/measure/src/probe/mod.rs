//! Probes: what is measured around the timed window besides wall time.
//!
//! - counters: tracepoint hits (`tracepoint:SUBSYS:EVENT`) and kprobe hits
//!   (`kprobe:FUNC`, through tracefs where the kernel has kprobes), counted with
//!   perf_event_open — filtered to the test device when the event has a `dev` field,
//!   system-wide otherwise, and the reading says which;
//! - user and system CPU time of this process (getrusage);
//! - /proc/vmstat, /proc/slabinfo and the device's /sys/block/*/stat deltas.
//!
//! A probe this kernel cannot provide is reported as unavailable with the reason, never
//! as 0. A probe that does not exist at all (a typo) is an error before anything runs.
//! This module reads kernel counters only; it never touches the test filesystem.

pub mod perf;
pub mod procfs;
pub mod profile;
pub mod tracefs;

use anyhow::{Result, bail};
pub use model::results::{Counter, Cpu, Reading};
use perf::TracepointCounter;
use procfs::{Deltas, Snapshot};
use profile::{ProfileReading, Sampler, Symbols};
use std::sync::Arc;
use tracefs::{Event, Tracefs};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Tracepoint { subsys: String, event: String },
    Kprobe { func: String },
}

/// A probe as the user (or a default) asked for it: `[NAME=]tracepoint:SUBSYS:EVENT` or
/// `[NAME=]kprobe:FUNC`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeSpec {
    /// The name results are reported under (`inode_evictions`).
    pub name: String,
    pub kind: Kind,
    /// Written `?tracepoint:…`: where the kernel lacks it, the probe is unavailable
    /// rather than an error (a default probe of evidence some kernels do not have).
    pub optional: bool,
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

impl ProbeSpec {
    pub fn parse(text: &str) -> Result<ProbeSpec> {
        let (alias, body) = match text.split_once('=') {
            Some((a, b)) => (Some(a), b),
            None => (None, text),
        };
        let (optional, body) = match body.strip_prefix('?') {
            Some(b) => (true, b),
            None => (false, body),
        };
        let usage = "use tracepoint:SUBSYS:EVENT or kprobe:FUNCTION, optionally prefixed by NAME=";
        let kind = match body.split(':').collect::<Vec<_>>().as_slice() {
            ["tracepoint", subsys, event] if is_ident(subsys) && is_ident(event) => {
                Kind::Tracepoint {
                    subsys: subsys.to_string(),
                    event: event.to_string(),
                }
            }
            ["kprobe", func] if is_ident(func) => Kind::Kprobe {
                func: func.to_string(),
            },
            _ => bail!("unknown probe `{text}`: {usage}"),
        };
        let name = match alias {
            Some(a) if is_ident(a) => a.to_string(),
            Some(a) => bail!("unknown probe `{text}`: `{a}` is not a valid name; {usage}"),
            None => body.to_string(),
        };
        Ok(ProbeSpec {
            name,
            kind,
            optional,
        })
    }

    /// `name (source)`, or just the source when it has no alias.
    pub fn describe(&self) -> String {
        let source = self.source();
        if self.name == source {
            source
        } else {
            format!("{} ({source})", self.name)
        }
    }

    /// The spec without the alias (`tracepoint:btrfs:btrfs_inode_evict`).
    pub fn source(&self) -> String {
        match &self.kind {
            Kind::Tracepoint { subsys, event } => format!("tracepoint:{subsys}:{event}"),
            Kind::Kprobe { func } => format!("kprobe:{func}"),
        }
    }

    /// The spec as `--probe` takes it again (`NAME=?tracepoint:…`).
    pub fn arg(&self) -> String {
        let q = if self.optional { "?" } else { "" };
        if self.name == self.source() {
            format!("{q}{}", self.source())
        } else {
            format!("{}={q}{}", self.name, self.source())
        }
    }
}

/// The device the counters are scoped to.
#[derive(Clone, Debug)]
pub struct Scope {
    /// Name under /sys/block (`loop0`).
    pub block: String,
    pub major: u32,
    pub minor: u32,
}

impl Scope {
    /// dev_t as the kernel encodes it inside trace events (MKDEV: major << 20 | minor).
    fn kernel_dev(&self) -> u64 {
        ((self.major as u64) << 20) | self.minor as u64
    }
}

enum Source {
    Event(Event),
    Unavailable(String),
}

struct Resolved {
    spec: ProbeSpec,
    source: Source,
}

/// Probes resolved against the running kernel, ready to be opened around each window.
pub struct Probes {
    tracefs: Option<Tracefs>,
    items: Vec<Resolved>,
    kprobe_group: String,
    kprobes: Vec<String>,
    /// `--profile`: the rate, and the kernel's symbols (or why there are none).
    profiling: Option<Profiling>,
}

/// What every window of a profiled run shares.
#[derive(Clone)]
struct Profiling {
    hz: u64,
    /// The profile is taken in a second window of each case (`Rate::Apart`): the timed
    /// window samples nothing; `Probes::apart` makes the second window's probes.
    apart: bool,
    /// The fastest a window taken apart samples here (`profile::apart_max_hz`).
    apart_max_hz: u64,
    symbols: std::result::Result<Arc<Symbols>, String>,
    /// The online CPUs, read now: a sampler following clients needs a ring per CPU, and
    /// it is opened on a thread confined to the test filesystem, where /sys is not.
    cpus: Vec<i32>,
}

/// The prefix of kprobe groups sigbench creates (`sigbench_<pid>`), for cleanup.
pub const KPROBE_GROUP_PREFIX: &str = "sigbench_";

impl Probes {
    /// Resolve every spec. A tracepoint that does not exist is an error; a probe this
    /// kernel cannot provide becomes unavailable, with a warning pushed to `warnings`.
    pub fn resolve(specs: &[ProbeSpec], warnings: &mut Vec<String>) -> Result<Probes> {
        let needs_tracefs = !specs.is_empty();
        let tracefs = if needs_tracefs {
            match Tracefs::find_or_mount() {
                Ok(t) => Some(t),
                Err(e) => {
                    warnings.push(format!("tracing unavailable: {e:#}"));
                    None
                }
            }
        } else {
            None
        };
        let mut probes = Probes {
            tracefs,
            items: Vec::new(),
            kprobe_group: format!("{KPROBE_GROUP_PREFIX}{}", std::process::id()),
            kprobes: Vec::new(),
            profiling: None,
        };
        for spec in specs {
            let source = probes.resolve_one(spec)?;
            if let Source::Unavailable(why) = &source {
                warnings.push(format!("probe {} is unavailable: {why}", spec.describe()));
            }
            probes.items.push(Resolved {
                spec: spec.clone(),
                source,
            });
        }
        Ok(probes)
    }

    fn resolve_one(&mut self, spec: &ProbeSpec) -> Result<Source> {
        let Some(t) = &self.tracefs else {
            return Ok(Source::Unavailable("tracefs is not available".into()));
        };
        match &spec.kind {
            Kind::Tracepoint { subsys, event } => match t.event(subsys, event) {
                Some(ev) => Ok(Source::Event(ev)),
                None if spec.optional => Ok(Source::Unavailable(format!(
                    "this kernel has no tracepoint {subsys}:{event}"
                ))),
                None => bail!(
                    "unknown probe `{}`: this kernel has no tracepoint {subsys}:{event} (see `sigbench doctor --events {}`)",
                    spec.source(),
                    model::shell::quote(subsys)
                ),
            },
            Kind::Kprobe { func } => {
                if !t.has_kprobes() {
                    return Ok(Source::Unavailable(
                        "this kernel has no kprobes (no kprobe_events in tracefs)".into(),
                    ));
                }
                let name = format!("p_{}", func.replace('.', "_"));
                let ev = t
                    .add_kprobe(&self.kprobe_group, &name, func)
                    .map_err(|e| anyhow::anyhow!("unknown probe `{}`: {e:#}", spec.source()))?;
                self.kprobes.push(name);
                Ok(Source::Event(ev))
            }
        }
    }

    /// Profile every window at its rate (`--profile=HZ`), or in a second window of each
    /// case (`--profile=apart`, `Probes::apart`). A plan for a guest has `auto` resolved
    /// for its clock (`vm::boots::in_guest`); here it is the host's. The symbol table is
    /// read once, here; a kernel that hides its addresses makes every case's profile
    /// unavailable, said once.
    pub fn profile(&mut self, rate: profile::Rate, warnings: &mut Vec<String>) {
        let (hz, apart) = match rate.resolve(false) {
            profile::Rate::Window(hz) => (hz, false),
            _ => (profile::DEFAULT_HZ, true),
        };
        let symbols = Symbols::load().map(Arc::new).map_err(|e| format!("{e:#}"));
        let rate = if apart {
            format!(
                "in a second window of each case, right after the timed one, at up to {} Hz (none of its sampling is in the times)",
                profile::apart_max_hz()
            )
        } else {
            format!("at {hz} Hz")
        };
        match &symbols {
            Err(why) => warnings.push(format!("the profile is unavailable: {why}")),
            Ok(_) if !profile::hardware_pmu() => warnings.push(format!(
                "profile: sampled on cpu-clock, a software timer, {rate}: this machine has no hardware PMU, and the profile needs none"
            )),
            Ok(_) if apart => warnings.push(format!("profile: sampled on cpu-clock {rate}")),
            Ok(_) => {}
        }
        self.profiling = Some(Profiling {
            hz,
            apart,
            apart_max_hz: profile::apart_max_hz(),
            symbols,
            cpus: perf::online_cpus(),
        });
    }

    /// The probes of the second window of a case whose profile is taken apart, after a
    /// timed window of `timed_ns` in repetition `rep`: the sampler alone, at the rate that
    /// window's length allows (`profile::apart_hz`). None when the profile is not taken
    /// apart.
    pub fn apart(&self, timed_ns: u64, rep: u32) -> Option<Probes> {
        let p = self.profiling.as_ref().filter(|p| p.apart)?;
        let hz = profile::apart_hz(timed_ns, rep, p.apart_max_hz);
        Some(Probes {
            tracefs: None,
            items: Vec::new(),
            kprobe_group: self.kprobe_group.clone(),
            kprobes: Vec::new(),
            profiling: Some(Profiling {
                hz,
                apart: false,
                ..p.clone()
            }),
        })
    }

    pub fn specs(&self) -> impl Iterator<Item = &ProbeSpec> {
        self.items.iter().map(|r| &r.spec)
    }

    /// Open the counters for one window, scoped to `scope` where the events allow.
    /// Failures to open become unavailable readings (and warnings).
    pub fn window(&self, scope: Option<&Scope>, warnings: &mut Vec<String>) -> Window {
        let counters = self
            .items
            .iter()
            .map(|r| {
                let state = match &r.source {
                    Source::Unavailable(why) => Err(why.clone()),
                    Source::Event(ev) => {
                        let filter = scope
                            .filter(|_| ev.has_dev)
                            .map(|s| format!("dev == {}", s.kernel_dev()));
                        let scope_text = match (&filter, scope) {
                            (Some(_), Some(s)) => format!("/dev/{}", s.block),
                            _ => "system-wide".to_string(),
                        };
                        TracepointCounter::open(ev.id, filter.as_deref())
                            .map(|c| (c, scope_text))
                            .map_err(|e| {
                                let why = format!("{e:#}");
                                warnings.push(format!(
                                    "probe {} is unavailable: {why}",
                                    r.spec.describe()
                                ));
                                why
                            })
                    }
                };
                (r.spec.clone(), state)
            })
            .collect();
        Window {
            counters,
            sources: procfs::Sources::open(scope.map(|s| s.block.as_str())),
            before: None,
            segment: None,
            cpu0: None,
            delay0: None,
            settle: false,
            profiling: self.profiling.clone(),
            sampler: None,
            phase_names: Vec::new(),
        }
    }
}

impl Drop for Probes {
    fn drop(&mut self) {
        if let Some(t) = &self.tracefs {
            for name in &self.kprobes {
                let _ = t.remove_kprobe(&self.kprobe_group, name);
            }
        }
    }
}

/// Everything measured around one timed window.
#[derive(Clone, Debug, Default)]
pub struct Measurement {
    pub counters: Vec<Counter>,
    pub cpu: Cpu,
    pub deltas: Deltas,
    /// Slab changes since the last checkpoint (the whole window when there was none).
    pub last_segment_slab: Option<Vec<procfs::SlabDelta>>,
    /// The window's profile, when the run profiles.
    pub profile: Option<ProfileReading>,
}

/// A counter opened for one window with the scope it counts in, or why it could not be.
type OpenCounter = Result<(TracepointCounter, String), String>;

/// The probes of one window. `open` right before the timed loop, `close` right after.
pub struct Window {
    counters: Vec<(ProbeSpec, OpenCounter)>,
    sources: procfs::Sources,
    before: Option<Snapshot>,
    /// Where the current segment (between checkpoints) started.
    segment: Option<Snapshot>,
    cpu0: Option<Cpu>,
    /// The window's thread's run delay when it opened (ns).
    delay0: Option<u64>,
    /// Settle before opening (`Plan::settle`).
    pub settle: bool,
    profiling: Option<Profiling>,
    /// Opened on the workload's thread by `open` with the symbols that will name its
    /// samples, or why it could not be.
    sampler: Option<std::result::Result<(Sampler, Arc<Symbols>), String>>,
    /// The phases the profile's samples are attributed to (`phase_ended`'s indices).
    pub phase_names: Vec<String>,
}

/// How often and how long `Window::open` looks for a quiet machine.
const SETTLE_STEP: std::time::Duration = std::time::Duration::from_millis(5);
const SETTLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Return right after a timer tick: CLOCK_MONOTONIC_COARSE advances only at ticks.
/// Spins for at most one tick.
pub(crate) fn at_tick() {
    let start = crate::sys::os::coarse_now();
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(100);
    while crate::sys::os::coarse_now() == start && std::time::Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

fn rusage() -> Cpu {
    let ru = crate::sys::os::rusage_self();
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
    Cpu {
        user_ns: ns(ru.ru_utime),
        sys_ns: ns(ru.ru_stime),
    }
}

/// Peak resident set size of this process so far, in KiB.
pub fn peak_rss_kib() -> u64 {
    crate::sys::os::rusage_self().ru_maxrss as u64
}

impl Window {
    /// Arm: the slow snapshots first, the counters last, so the counters see only the window.
    ///
    /// With `settle`, first wait until nothing else runs, and after the snapshots start at
    /// a timer tick. In a guest under the icount clock every repetition then starts from
    /// the same place: no boot-time work (crypto self-tests, deferred probes) and no RCU
    /// callbacks of the previous case run inside the window, and the ticks fall at the
    /// same offsets into it. Measured in docs/statistics.md ("The icount clock").
    pub fn open(&mut self) {
        if self.sampler.is_none() {
            self.open_sampler(false);
        }
        if self.settle {
            self.wait_quiet();
        }
        self.before = Some(Snapshot::take(&self.sources));
        self.segment = self.before.clone();
        if self.settle {
            at_tick();
        }
        self.cpu0 = Some(rusage());
        self.delay0 = self.sources.run_delay_ns();
        for (_, c) in &self.counters {
            if let Ok((c, _)) = c {
                c.enable();
            }
        }
        if let Some(Ok((s, _))) = &mut self.sampler {
            s.enable();
        }
    }

    /// Wait until nothing else runs, warning when the machine stays busy — or, once a
    /// process, that this kernel cannot tell.
    fn wait_quiet(&self) {
        match self.sources.settle(SETTLE_STEP, SETTLE_LIMIT) {
            Some(s) if !s.quiet => model::diag::warn(format!(
                "the machine did not settle before a window: still busy after {:.1} s (something else runs: the window's times include it)",
                s.waited_ns as f64 / 1e9
            )),
            Some(_) => {}
            None => {
                static SAID: std::sync::atomic::AtomicBool =
                    std::sync::atomic::AtomicBool::new(false);
                if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    model::diag::warn(
                        "settle: this kernel does not show how busy its CPUs are (no /proc/schedstat): windows start at a timer tick without waiting for a quiet machine",
                    );
                }
            }
        }
    }

    /// With `settle`, the release of a run for a time, whose window opens later while the
    /// clients work: wait until nothing else runs, then return at a timer tick. In a guest
    /// every repetition's clients then start from a quiet machine at the same offset from
    /// the tick, as a window of one client does.
    pub fn settle_release(&mut self) {
        if self.settle {
            self.wait_quiet();
            at_tick();
        }
    }

    /// Open the sampler of a profiled run now, on the calling thread, following the
    /// threads it starts from now on (`inherit`: the clients of a run with several), before
    /// `open` enables it. The phase names must be set.
    pub fn prepare_profile(&mut self, inherit: bool) {
        self.open_sampler(inherit);
    }

    /// Open the sampler of a profiled run on the calling thread — the workload's, which
    /// it samples — before `open`; the phase names are known by then.
    fn open_sampler(&mut self, inherit: bool) {
        let Some(p) = self.profiling.as_ref().filter(|p| !p.apart) else {
            return;
        };
        self.sampler = Some(match &p.symbols {
            Err(why) => Err(why.clone()),
            Ok(symbols) => {
                Sampler::open(p.hz, self.phase_names.len(), inherit.then_some(&p.cpus[..]))
                    .map(|s| (s, symbols.clone()))
                    .map_err(|e| {
                        let why = format!("{e:#}");
                        model::diag::warn(format!("the profile is unavailable: {why}"));
                        why
                    })
            }
        });
    }

    /// Phase `k` ended (untimed, between phases): its samples so far are its own. The
    /// sampler pauses while they are moved, so the moving is in no phase's profile.
    pub fn phase_ended(&mut self, k: usize) {
        if let Some(Ok((s, _))) = &mut self.sampler {
            s.disable();
            s.drain(k);
            s.enable();
        }
    }

    /// Slab changes since the previous checkpoint (or the opening), taken between phases
    /// while the counters keep counting. Costs the RCU settling and a slabinfo read; the
    /// executor keeps it out of the phases' times.
    pub fn checkpoint(&mut self) -> Option<Vec<procfs::SlabDelta>> {
        let now = Snapshot::take_slab(&self.sources);
        let d = self
            .segment
            .as_ref()
            .and_then(|s| s.delta_to(&now).slabinfo);
        self.segment = Some(now);
        d
    }

    /// Disarm in the reverse order and read everything.
    pub fn close(mut self) -> Measurement {
        if let Some(Ok((s, _))) = &mut self.sampler {
            s.disable();
        }
        for (_, c) in &self.counters {
            if let Ok((c, _)) = c {
                c.disable();
            }
        }
        let cpu1 = rusage();
        let delay1 = self.sources.run_delay_ns();
        let after = Snapshot::take(&self.sources);
        let cpu0 = self.cpu0.unwrap_or(cpu1);
        let last_segment_slab = self
            .segment
            .as_ref()
            .and_then(|s| s.delta_to(&after).slabinfo);
        let mut deltas = self.before.map(|b| b.delta_to(&after)).unwrap_or_default();
        if let (Some(d0), Some(d1)) = (self.delay0, delay1) {
            let load = deltas.load.get_or_insert_with(Default::default);
            load.run_delay_ms = Some(d1.saturating_sub(d0) as f64 / 1e6);
        }
        let counters = self
            .counters
            .into_iter()
            .map(|(spec, state)| {
                let reading = match state {
                    Ok((c, scope)) => match c.read() {
                        Ok(value) => Reading::Counted { value, scope },
                        Err(e) => Reading::Unavailable {
                            reason: format!("{e:#}"),
                        },
                    },
                    Err(reason) => Reading::Unavailable { reason },
                };
                Counter {
                    probe: spec.source(),
                    name: spec.name,
                    reading,
                }
            })
            .collect();
        let profile = self.sampler.map(|opened| match opened {
            Ok((s, symbols)) => ProfileReading::Sampled(s.finish(&self.phase_names, &symbols)),
            Err(reason) => ProfileReading::Unavailable { reason },
        });
        Measurement {
            profile,
            counters,
            cpu: Cpu {
                user_ns: cpu1.user_ns.saturating_sub(cpu0.user_ns),
                sys_ns: cpu1.sys_ns.saturating_sub(cpu0.sys_ns),
            },
            deltas,
            last_segment_slab,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_probe_specs() {
        let p = ProbeSpec::parse("tracepoint:btrfs:btrfs_inode_evict").unwrap();
        assert_eq!(p.name, "tracepoint:btrfs:btrfs_inode_evict");
        assert_eq!(
            p.kind,
            Kind::Tracepoint {
                subsys: "btrfs".into(),
                event: "btrfs_inode_evict".into()
            }
        );
        let p = ProbeSpec::parse("inode_evictions=tracepoint:btrfs:btrfs_inode_evict").unwrap();
        assert_eq!(p.name, "inode_evictions");
        assert_eq!(p.source(), "tracepoint:btrfs:btrfs_inode_evict");
        let p = ProbeSpec::parse("kprobe:btrfs_evict_inode").unwrap();
        assert_eq!(
            p.kind,
            Kind::Kprobe {
                func: "btrfs_evict_inode".into()
            }
        );
        for bad in [
            "bpf:x",
            "tracepoint:btrfs",
            "kprobe:",
            "tracepoint:a:b:c",
            "x y=kprobe:f",
            "kprobe:a/b",
        ] {
            let e = ProbeSpec::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with("unknown probe"), "{bad}: {e}");
        }
    }

    #[test]
    fn kernel_dev_encoding() {
        let s = Scope {
            block: "loop0".into(),
            major: 7,
            minor: 3,
        };
        assert_eq!(s.kernel_dev(), (7 << 20) | 3);
    }

    #[test]
    fn readings_serialize_with_status() {
        let c = Counter {
            name: "inode_evictions".into(),
            probe: "tracepoint:btrfs:btrfs_inode_evict".into(),
            reading: Reading::Unavailable {
                reason: "no".into(),
            },
        };
        let j = serde_json::to_value(&c).unwrap();
        assert_eq!(j["status"], "unavailable");
        assert!(j.get("value").is_none());
    }
}
