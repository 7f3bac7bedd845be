//! Snapshot counters the kernel exports as text — /proc/vmstat, /proc/slabinfo and a block
//! device's /sys/block/*/stat — and the deltas between two snapshots.

pub use model::results::{Load, SlabDelta};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

/// Names of the fields of /sys/block/<dev>/stat (Documentation/block/stat.rst).
const BLOCK_FIELDS: &[&str] = &[
    "read_ios",
    "read_merges",
    "read_sectors",
    "read_ticks_ms",
    "write_ios",
    "write_merges",
    "write_sectors",
    "write_ticks_ms",
    "in_flight",
    "io_ticks_ms",
    "time_in_queue_ms",
    "discard_ios",
    "discard_merges",
    "discard_sectors",
    "discard_ticks_ms",
    "flush_ios",
    "flush_ticks_ms",
];

#[derive(Clone, Debug, Default)]
pub struct Slab {
    active_objs: i64,
    num_objs: i64,
    pages: i64,
}

/// Parse `name value` lines (/proc/vmstat).
pub fn parse_vmstat(text: &str) -> BTreeMap<String, i64> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let k = it.next()?;
            let v = it.next()?.parse().ok()?;
            Some((k.to_string(), v))
        })
        .collect()
}

/// Parse /proc/slabinfo version 2.x.
fn parse_slabinfo(text: &str) -> BTreeMap<String, Slab> {
    text.lines()
        .filter(|l| !l.starts_with("slabinfo") && !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // name active num objsize perslab pagesperslab : tunables a b c : slabdata act num shared
            if f.len() < 16 || f[6] != ":" {
                return None;
            }
            let n = |i: usize| f[i].parse::<i64>().ok();
            let pages_per_slab = n(5)?;
            let num_slabs = n(14)?;
            Some((
                f[0].to_string(),
                Slab {
                    active_objs: n(1)?,
                    num_objs: n(2)?,
                    pages: num_slabs * pages_per_slab,
                },
            ))
        })
        .collect()
}

/// Parse /sys/block/<dev>/stat.
pub fn parse_blockstat(text: &str) -> BTreeMap<String, i64> {
    text.split_whitespace()
        .zip(BLOCK_FIELDS)
        .filter_map(|(v, k)| Some((k.to_string(), v.parse().ok()?)))
        .collect()
}

/// Non-zero differences `after - before`, for keys in either map.
pub fn delta(
    before: &BTreeMap<String, i64>,
    after: &BTreeMap<String, i64>,
) -> BTreeMap<String, i64> {
    after
        .iter()
        .filter_map(|(k, a)| {
            let d = a - before.get(k).copied().unwrap_or(0);
            (d != 0).then(|| (k.clone(), d))
        })
        .chain(
            before
                .iter()
                .filter(|(k, _)| !after.contains_key(*k))
                .map(|(k, b)| (k.clone(), -b)),
        )
        .collect()
}

/// Slab caches that changed, largest absolute change in active objects first.
/// Add one slab delta list into another (per phase, over rounds).
pub fn add_slab(into: &mut Vec<SlabDelta>, more: &[SlabDelta]) {
    for m in more {
        match into.iter_mut().find(|d| d.cache == m.cache) {
            Some(d) => {
                d.active_objs += m.active_objs;
                d.num_objs += m.num_objs;
                d.pages += m.pages;
            }
            None => into.push(m.clone()),
        }
    }
    into.retain(|d| d.active_objs != 0 || d.num_objs != 0 || d.pages != 0);
    into.sort_by_key(|d| {
        (
            std::cmp::Reverse(d.active_objs.abs()),
            std::cmp::Reverse(d.pages.abs()),
        )
    });
}

fn slab_delta(before: &BTreeMap<String, Slab>, after: &BTreeMap<String, Slab>) -> Vec<SlabDelta> {
    let zero = Slab::default();
    let mut out: Vec<SlabDelta> = after
        .iter()
        .map(|(k, a)| {
            let b = before.get(k).unwrap_or(&zero);
            SlabDelta {
                cache: k.clone(),
                active_objs: a.active_objs - b.active_objs,
                num_objs: a.num_objs - b.num_objs,
                pages: a.pages - b.pages,
            }
        })
        .filter(|d| d.active_objs != 0 || d.num_objs != 0 || d.pages != 0)
        .collect();
    out.sort_by_key(|d| {
        (
            std::cmp::Reverse(d.active_objs.abs()),
            std::cmp::Reverse(d.pages.abs()),
        )
    });
    out
}

/// A snapshot of the text counters, taken right before and right after the window.
#[derive(Clone, Default)]
pub struct Snapshot {
    vmstat: Option<BTreeMap<String, i64>>,
    slab: Option<BTreeMap<String, Slab>>,
    block: Option<BTreeMap<String, i64>>,
    /// /proc/pressure/cpu's "some total" (µs).
    pressure_us: Option<u64>,
    /// /proc/stat's steal time, all CPUs (USER_HZ ticks).
    steal_ticks: Option<u64>,
}

/// The second field of a task's schedstat (`cpu_ns run_delay_ns timeslices`).
fn parse_run_delay(text: &str) -> Option<u64> {
    text.split_whitespace().nth(1)?.parse().ok()
}

/// "some … total=N" of a /proc/pressure file (µs).
fn parse_pressure_some(text: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with("some "))?
        .split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// The fields of /proc/stat's first line (`cpu user nice system idle iowait irq softirq
/// steal …`, all CPUs), in USER_HZ ticks; None when the text does not start with it.
pub fn cpu_ticks(text: &str) -> Option<Vec<u64>> {
    let l = text.lines().next()?.strip_prefix("cpu ")?;
    l.split_whitespace().map(|f| f.parse().ok()).collect()
}

/// The steal field of /proc/stat's first line, in USER_HZ ticks.
fn parse_steal(text: &str) -> Option<u64> {
    cpu_ticks(text)?.get(7).copied()
}

/// What changed between two snapshots. `None` means the source was unreadable.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Deltas {
    pub vmstat: Option<BTreeMap<String, i64>>,
    pub slabinfo: Option<Vec<SlabDelta>>,
    pub blockstat: Option<BTreeMap<String, i64>>,
    pub load: Option<Load>,
}

/// Wait for two RCU grace periods (membarrier(MEMBARRIER_CMD_GLOBAL) is
/// synchronize_rcu()), so objects the workload freed with call_rcu — inodes, dentries,
/// maple-tree nodes — are back in their slab caches before it is read. Without this, a
/// slab delta counts frees still in flight: on 6.18, 20 000 creates in one tmpfs directory
/// read anywhere from +2 000 to +3 700 maple_node objects instead of the stable ≈ +1 500.
/// It takes ~25 ms, always outside the timed window.
fn settle_rcu() {
    for _ in 0..2 {
        crate::sys::os::membarrier_global();
    }
}

/// The files snapshots read, opened once per window and re-read from the start each
/// time. Opened before the workload's thread is confined to the test filesystem (where
/// /proc and /sys are not), they still read the kernel's counters from inside it.
pub struct Sources {
    schedstat: Option<File>,
    vmstat: Option<File>,
    slabinfo: Option<File>,
    block: Option<File>,
    pressure: Option<File>,
    stat: Option<File>,
    /// /proc/self/task: the schedstat of the thread that takes a snapshot.
    tasks: Option<File>,
}

fn reread(f: &Option<File>) -> Option<String> {
    let mut f = f.as_ref()?;
    f.seek(SeekFrom::Start(0)).ok()?;
    let mut text = String::new();
    f.read_to_string(&mut text).ok()?;
    Some(text)
}

impl Sources {
    /// `block` is the device name under /sys/block (`loop0`), when there is a device.
    pub fn open(block: Option<&str>) -> Sources {
        let open = |p: &str| File::open(p).ok();
        Sources {
            schedstat: open("/proc/schedstat"),
            vmstat: open("/proc/vmstat"),
            slabinfo: open("/proc/slabinfo"),
            block: block.and_then(|b| open(&format!("/sys/block/{b}/stat"))),
            pressure: open("/proc/pressure/cpu"),
            stat: open("/proc/stat"),
            tasks: open("/proc/self/task"),
        }
    }
}

/// The time every CPU has spent running tasks, from /proc/schedstat (ns).
fn busy_ns(text: &str) -> Option<u64> {
    let mut sum = 0;
    let mut any = false;
    for l in text.lines().filter(|l| l.starts_with("cpu")) {
        // cpuN yld_count 0 sched_count sched_goidle ttwu_count ttwu_local rq_cpu_time …
        sum += l.split_whitespace().nth(7)?.parse::<u64>().ok()?;
        any = true;
    }
    any.then_some(sum)
}

/// How the machine settled before a window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settled {
    /// How long the wait took (ns of CLOCK_MONOTONIC).
    pub waited_ns: u64,
    /// False when the machine was still busy at the limit.
    pub quiet: bool,
}

impl Sources {
    /// The calling thread's run delay so far (ns): how long it was ready to run and
    /// waited for a CPU, through /proc/self/task opened beforehand.
    pub fn run_delay_ns(&self) -> Option<u64> {
        use std::os::fd::AsFd;
        let rel = std::ffi::CString::new(format!("{}/schedstat", crate::sys::os::gettid())).ok()?;
        let mut f = crate::sys::os::open_in(self.tasks.as_ref()?.as_fd(), &rel).ok()?;
        let mut text = String::new();
        f.read_to_string(&mut text).ok()?;
        parse_run_delay(&text)
    }

    /// Wait until nothing else runs: two consecutive intervals of `step` in which the
    /// CPUs were busy less than 1 % of the time (background work from boot or from the
    /// previous case — RCU callbacks, kworkers, self-tests — would otherwise run inside
    /// the window). At most `limit`. None when the kernel does not show its CPUs' busy
    /// time (no /proc/schedstat: built without CONFIG_SCHED_INFO): it cannot be told.
    pub fn settle(&self, step: std::time::Duration, limit: std::time::Duration) -> Option<Settled> {
        let start = std::time::Instant::now();
        let read = || reread(&self.schedstat).and_then(|t| busy_ns(&t));
        let mut before = read()?;
        let mut quiet_steps = 0;
        while start.elapsed() < limit {
            let t0 = std::time::Instant::now();
            std::thread::sleep(step);
            let now = read()?;
            let busy = now.saturating_sub(before) as f64 / t0.elapsed().as_nanos() as f64;
            before = now;
            quiet_steps = if busy < 0.01 { quiet_steps + 1 } else { 0 };
            if quiet_steps >= 2 {
                return Some(Settled {
                    waited_ns: start.elapsed().as_nanos() as u64,
                    quiet: true,
                });
            }
        }
        Some(Settled {
            waited_ns: start.elapsed().as_nanos() as u64,
            quiet: false,
        })
    }
}

impl Snapshot {
    pub fn take(src: &Sources) -> Snapshot {
        settle_rcu();
        Snapshot {
            vmstat: reread(&src.vmstat).map(|t| parse_vmstat(&t)),
            slab: reread(&src.slabinfo).map(|t| parse_slabinfo(&t)),
            block: reread(&src.block).map(|t| parse_blockstat(&t)),
            pressure_us: reread(&src.pressure).and_then(|t| parse_pressure_some(&t)),
            steal_ticks: reread(&src.stat).and_then(|t| parse_steal(&t)),
        }
    }

    /// Only the slab caches (for checkpoints between phases).
    pub fn take_slab(src: &Sources) -> Snapshot {
        settle_rcu();
        Snapshot {
            slab: reread(&src.slabinfo).map(|t| parse_slabinfo(&t)),
            ..Default::default()
        }
    }

    pub fn delta_to(&self, after: &Snapshot) -> Deltas {
        Deltas {
            vmstat: both(&self.vmstat, &after.vmstat).map(|(b, a)| delta(b, a)),
            slabinfo: both(&self.slab, &after.slab).map(|(b, a)| slab_delta(b, a)),
            blockstat: both(&self.block, &after.block).map(|(b, a)| delta(b, a)),
            load: self.load_to(after),
        }
    }

    fn load_to(&self, after: &Snapshot) -> Option<Load> {
        let pressure = both(&self.pressure_us, &after.pressure_us)
            .map(|(b, a)| a.saturating_sub(*b) as f64 / 1e3);
        let hz = crate::sys::os::clock_ticks_per_second();
        let steal = both(&self.steal_ticks, &after.steal_ticks)
            .zip(hz)
            .map(|((b, a), hz)| a.saturating_sub(*b) as f64 * 1e3 / hz as f64);
        (pressure.is_some() || steal.is_some()).then_some(Load {
            run_delay_ms: None,
            cpu_pressure_ms: pressure,
            steal_ms: steal,
        })
    }
}

fn both<'a, T>(a: &'a Option<T>, b: &'a Option<T>) -> Option<(&'a T, &'a T)> {
    Some((a.as_ref()?, b.as_ref()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLAB_BEFORE: &str = "slabinfo - version: 2.1
# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>
maple_node           100    128    256   32    2 : tunables    0    0    0 : slabdata      4      4      0
dentry              5000   5040    192   21    1 : tunables    0    0    0 : slabdata    240    240      0
";
    const SLAB_AFTER: &str = "slabinfo - version: 2.1
# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>
maple_node          1600   1600    256   32    2 : tunables    0    0    0 : slabdata     50     50      0
dentry              5010   5040    192   21    1 : tunables    0    0    0 : slabdata    240    240      0
";

    #[test]
    fn the_load_of_a_window_is_read_from_pressure_stat_and_schedstat() {
        let psi = "some avg10=1.50 avg60=0.20 avg300=0.05 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(parse_pressure_some(psi), Some(123456));
        assert_eq!(parse_pressure_some("full total=5\n"), None);
        let stat = "cpu  100 2 300 4000 5 6 7 89 0 0\ncpu0 50 1 150 2000 2 3 3 44 0 0\n";
        assert_eq!(cpu_ticks(stat).map(|t| t[3]), Some(4000));
        assert_eq!(parse_steal(stat), Some(89));
        assert_eq!(parse_steal("intr 1 2 3\n"), None);
        assert_eq!(parse_run_delay("1523000 4200 17\n"), Some(4200));
        assert_eq!(parse_run_delay("1523000\n"), None);
    }

    #[test]
    fn schedstat_gives_the_time_every_cpu_ran_tasks() {
        let text = "version 16\ntimestamp 4294892693\ncpu0 0 0 0 0 0 0 1424800770 1635974114 1165\ndomain0 3 0 0\ncpu1 0 0 0 0 0 0 100 5 7\n";
        assert_eq!(busy_ns(text), Some(1_424_800_870));
        assert_eq!(busy_ns("version 16\n"), None);
        assert_eq!(busy_ns("cpu0 1 2"), None);
    }

    #[test]
    fn slab_deltas_rank_by_active_objects() {
        let d = slab_delta(&parse_slabinfo(SLAB_BEFORE), &parse_slabinfo(SLAB_AFTER));
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].cache, "maple_node");
        assert_eq!(d[0].active_objs, 1500);
        assert_eq!(d[0].num_objs, 1472);
        assert_eq!(d[0].pages, (50 - 4) * 2);
        assert_eq!(d[1].cache, "dentry");
        assert_eq!(d[1].active_objs, 10);
    }

    #[test]
    fn vmstat_and_block_deltas() {
        let b = parse_vmstat("nr_free_pages 100\npgfault 5\nnr_dirty 0\n");
        let a = parse_vmstat("nr_free_pages 90\npgfault 5\nnr_dirty 3\n");
        let d = delta(&b, &a);
        assert_eq!(d.get("nr_free_pages"), Some(&-10));
        assert_eq!(d.get("nr_dirty"), Some(&3));
        assert!(!d.contains_key("pgfault"));

        let s = parse_blockstat("  10 0 80 1 20 0 160 2 0 3 3 0 0 0 0 4 1\n");
        assert_eq!(s["write_sectors"], 160);
        assert_eq!(s["flush_ios"], 4);
        assert_eq!(s.len(), 17);
    }
}
