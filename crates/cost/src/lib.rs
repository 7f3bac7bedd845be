//! sigbench's cost model of a guest window: what the hardware would pay for the work
//! QEMU's instruction counter counts.
//!
//! Under the icount clock one guest instruction is one nanosecond, however much memory it
//! touches: a load that misses every cache costs what a register move costs. This crate
//! is the model that prices memory, in two parts:
//!
//! - the pure parts, which the sigbench binary links: the cache model ([`Cache`],
//!   [`Machine`]: per guest CPU a 32 KiB 8-way L1 for instructions and one for data and a
//!   1 MiB 16-way second level, one shared 8 MiB 16-way last level indexed by a hash of
//!   the address, 64-byte lines, LRU, on physical addresses), the
//!   [`Counters`] a window accumulates, the guest's [`Mark`]s around its windows, the
//!   record the plugin writes at each mark ([`Record`]), and the [`Weights`] that turn
//!   counters into cycles;
//! - the QEMU TCG plugin (`qemu.rs`, compiled only with `--cfg sigbench_plugin` as the
//!   shared library QEMU loads: sigbench's build script does that, and the binary carries
//!   the library and writes it to its cache when a guest starts).
//!
//! The model is deterministic: the same guest (under the icount clock, one host thread
//! running every guest CPU in turn) makes the same accesses in the same order every boot,
//! so two boots give the same counters. With several CPUs their private caches are kept
//! coherent by write-invalidate, and a line taken from another CPU's caches is a
//! coherence miss. What it does not model — TLBs, prefetchers, branch prediction,
//! out-of-order overlap of misses, write-backs — is said wherever a cost is shown
//! (docs/statistics.md, "What the cost model counts").

#[cfg(sigbench_plugin)]
mod qemu;

/// log2 of the line size: 64-byte lines.
pub const LINE_SHIFT: u32 = 6;

/// A cache's size and associativity (64-byte lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub bytes: u64,
    pub ways: usize,
}

impl Geometry {
    pub const fn sets(&self) -> usize {
        (self.bytes >> LINE_SHIFT) as usize / self.ways
    }
}

/// Each guest CPU's first-level instruction cache.
pub const L1I: Geometry = Geometry {
    bytes: 32 << 10,
    ways: 8,
};
/// Each guest CPU's first-level data cache.
pub const L1D: Geometry = Geometry {
    bytes: 32 << 10,
    ways: 8,
};
/// Each guest CPU's second level (instructions and data).
pub const L2: Geometry = Geometry {
    bytes: 1 << 20,
    ways: 16,
};
/// The last level, shared by every guest CPU (instructions and data).
pub const LL: Geometry = Geometry {
    bytes: 8 << 20,
    ways: 16,
};

/// A set-associative cache of lines (addresses >> [`LINE_SHIFT`]) with LRU replacement.
#[derive(Clone, Debug)]
pub struct Cache {
    ways: usize,
    set_mask: u64,
    /// The set of a line is its low bits (first and second levels, as hardware indexes
    /// them), or those folded with the bits above (the last level: current last-level
    /// caches spread lines over slices by a hash of the address, so lines a power of two
    /// apart do not all fall in a few sets).
    hashed: bool,
    /// Per set its `ways` entries, most recently used first; 0 is empty (a line is kept
    /// as line + 1).
    tags: Vec<u64>,
}

impl Cache {
    pub fn new(g: Geometry) -> Cache {
        let sets = g.sets();
        assert!(sets.is_power_of_two() && g.ways > 0, "{g:?}");
        Cache {
            ways: g.ways,
            set_mask: sets as u64 - 1,
            hashed: false,
            tags: vec![0; sets * g.ways],
        }
    }

    /// A cache whose set index is a hash of the whole line address ([`Cache::hashed`]).
    pub fn hashed(g: Geometry) -> Cache {
        Cache {
            hashed: true,
            ..Cache::new(g)
        }
    }

    #[inline]
    fn set_of(&self, line: u64) -> usize {
        let bits = self.set_mask.count_ones();
        let index = if self.hashed {
            line ^ (line >> bits) ^ (line >> (2 * bits)) ^ (line >> (3 * bits))
        } else {
            line
        };
        (index & self.set_mask) as usize
    }

    /// Touch `line`: true when it was there. The line becomes its set's most recent; a
    /// miss evicts the set's least recent.
    #[inline]
    pub fn access(&mut self, line: u64) -> bool {
        let base = self.set_of(line) * self.ways;
        let set = &mut self.tags[base..base + self.ways];
        let key = line.wrapping_add(1);
        if set[0] == key {
            return true;
        }
        match set[1..].iter().position(|&t| t == key) {
            Some(i) => {
                set.copy_within(0..i + 1, 1);
                set[0] = key;
                true
            }
            None => {
                set.copy_within(0..set.len() - 1, 1);
                set[0] = key;
                false
            }
        }
    }

    /// Whether `line` is here (its place in the set unchanged).
    #[inline]
    pub fn contains(&self, line: u64) -> bool {
        let base = self.set_of(line) * self.ways;
        let key = line.wrapping_add(1);
        self.tags[base..base + self.ways].contains(&key)
    }

    /// Drop `line` if it is here (another CPU wrote it): the entries after it move up,
    /// the set's last way becomes empty.
    #[inline]
    pub fn invalidate(&mut self, line: u64) {
        let base = self.set_of(line) * self.ways;
        let set = &mut self.tags[base..base + self.ways];
        let key = line.wrapping_add(1);
        if let Some(i) = set.iter().position(|&t| t == key) {
            set.copy_within(i + 1.., i);
            set[set.len() - 1] = 0;
        }
    }
}

/// What a guest did, cumulative from its boot (a window is the difference of two).
/// `Counters::default()` is nothing counted by this model (coherence included); a stored
/// run without `coherence_counted` reads as false (the field's own default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(sigbench_plugin), derive(serde::Serialize, serde::Deserialize))]
pub struct Counters {
    /// Instructions as the icount clock counts them (a `rep` string instruction once per
    /// iteration).
    pub insns: u64,
    pub loads: u64,
    pub stores: u64,
    pub l1i_misses: u64,
    pub l1d_misses: u64,
    /// First-level misses that missed the second level too.
    pub l2_misses: u64,
    /// Accesses that missed the last level too: memory.
    pub ll_misses: u64,
    /// Iterations of `rep` string instructions (in `insns`), and the distinct lines they
    /// touched in turn: what they are priced by.
    pub string_iterations: u64,
    pub string_lines: u64,
    /// Locked (atomic) instructions: a `lock` prefix, or `xchg` with memory.
    pub locked: u64,
    /// Data accesses to a line another guest CPU held modified: the line comes from that
    /// CPU's caches (a cross-core transfer). Counted in the first- and second-level
    /// misses too, never as a last-level miss. 0 with one CPU (and in runs from before).
    #[cfg_attr(not(sigbench_plugin), serde(default))]
    pub coherence_misses: u64,
    /// Of those, the accesses of locked instructions: a contended lock's line moving to
    /// the CPU that takes it.
    #[cfg_attr(not(sigbench_plugin), serde(default))]
    pub locked_transfers: u64,
    /// Whether the model that counted these kept caches coherent (the two counters above
    /// mean something): false in runs stored before it did, whose coherence was not
    /// measured — never 0.
    #[cfg_attr(not(sigbench_plugin), serde(default))]
    pub coherence_counted: bool,
}

impl Default for Counters {
    fn default() -> Counters {
        Counters {
            insns: 0,
            loads: 0,
            stores: 0,
            l1i_misses: 0,
            l1d_misses: 0,
            l2_misses: 0,
            ll_misses: 0,
            string_iterations: 0,
            string_lines: 0,
            locked: 0,
            coherence_misses: 0,
            locked_transfers: 0,
            coherence_counted: true,
        }
    }
}

impl Counters {
    /// `self − earlier`, field by field (0 where a counter went back, which a guest's
    /// cumulative counters never do).
    pub fn since(&self, earlier: &Counters) -> Counters {
        Counters {
            insns: self.insns.saturating_sub(earlier.insns),
            loads: self.loads.saturating_sub(earlier.loads),
            stores: self.stores.saturating_sub(earlier.stores),
            l1i_misses: self.l1i_misses.saturating_sub(earlier.l1i_misses),
            l1d_misses: self.l1d_misses.saturating_sub(earlier.l1d_misses),
            l2_misses: self.l2_misses.saturating_sub(earlier.l2_misses),
            ll_misses: self.ll_misses.saturating_sub(earlier.ll_misses),
            string_iterations: self
                .string_iterations
                .saturating_sub(earlier.string_iterations),
            string_lines: self.string_lines.saturating_sub(earlier.string_lines),
            locked: self.locked.saturating_sub(earlier.locked),
            coherence_misses: self
                .coherence_misses
                .saturating_sub(earlier.coherence_misses),
            locked_transfers: self
                .locked_transfers
                .saturating_sub(earlier.locked_transfers),
            coherence_counted: self.coherence_counted && earlier.coherence_counted,
        }
    }

    /// `self + other`, field by field.
    pub fn plus(&self, other: &Counters) -> Counters {
        Counters {
            insns: self.insns + other.insns,
            loads: self.loads + other.loads,
            stores: self.stores + other.stores,
            l1i_misses: self.l1i_misses + other.l1i_misses,
            l1d_misses: self.l1d_misses + other.l1d_misses,
            l2_misses: self.l2_misses + other.l2_misses,
            ll_misses: self.ll_misses + other.ll_misses,
            string_iterations: self.string_iterations + other.string_iterations,
            string_lines: self.string_lines + other.string_lines,
            locked: self.locked + other.locked,
            coherence_misses: self.coherence_misses + other.coherence_misses,
            locked_transfers: self.locked_transfers + other.locked_transfers,
            coherence_counted: self.coherence_counted && other.coherence_counted,
        }
    }

    /// The counters this model measured, by name: all of them, but the coherence
    /// counters of a run from before the model kept caches coherent.
    pub fn measured(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        Counters::NAMES
            .into_iter()
            .zip(self.values())
            .filter(|(name, _)| {
                self.coherence_counted || !matches!(*name, "coherence_misses" | "locked_transfers")
            })
    }

    /// The counters' names, in the order a record writes them.
    pub const NAMES: [&'static str; 12] = [
        "insns",
        "loads",
        "stores",
        "l1i_misses",
        "l1d_misses",
        "l2_misses",
        "ll_misses",
        "string_iterations",
        "string_lines",
        "locked",
        "coherence_misses",
        "locked_transfers",
    ];

    pub fn values(&self) -> [u64; 12] {
        [
            self.insns,
            self.loads,
            self.stores,
            self.l1i_misses,
            self.l1d_misses,
            self.l2_misses,
            self.ll_misses,
            self.string_iterations,
            self.string_lines,
            self.locked,
            self.coherence_misses,
            self.locked_transfers,
        ]
    }

    fn from_values(v: [u64; 12]) -> Counters {
        Counters {
            insns: v[0],
            loads: v[1],
            stores: v[2],
            l1i_misses: v[3],
            l1d_misses: v[4],
            l2_misses: v[5],
            ll_misses: v[6],
            string_iterations: v[7],
            string_lines: v[8],
            locked: v[9],
            coherence_misses: v[10],
            locked_transfers: v[11],
            coherence_counted: true,
        }
    }
}

/// What each event costs, in cycles of a nominal clock. The defaults are a current x86
/// server's published load-to-use latencies, charged in full (an in-order model: misses
/// do not overlap), and its clock; docs/statistics.md gives the sources and the dependent-
/// load chase on this project's machines they were checked against.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(not(sigbench_plugin), derive(serde::Serialize, serde::Deserialize))]
pub struct Weights {
    /// The nominal clock, cycles per nanosecond.
    pub ghz: f64,
    /// An instruction (and a line a string instruction touches).
    pub insn: f64,
    /// A first-level miss served by the second level.
    pub l2_hit: f64,
    /// A second-level miss served by the last level (on top of `l2_hit`).
    pub ll_hit: f64,
    /// A last-level miss served by memory (on top of `ll_hit`).
    pub memory: f64,
    /// A locked instruction (on top of its instruction).
    pub locked: f64,
    /// A line taken from another CPU's caches, on top of the first- and second-level
    /// misses it also is (in place of the last level and memory).
    #[cfg_attr(not(sigbench_plugin), serde(default = "Weights::default_coherence"))]
    pub coherence: f64,
}

impl Default for Weights {
    fn default() -> Weights {
        Weights::DEFAULT
    }
}

impl Weights {
    pub const DEFAULT: Weights = Weights {
        ghz: 3.0,
        insn: 1.0,
        l2_hit: 12.0,
        ll_hit: 40.0,
        memory: 240.0,
        locked: 20.0,
        coherence: 68.0,
    };

    #[cfg(not(sigbench_plugin))]
    fn default_coherence() -> f64 {
        Weights::DEFAULT.coherence
    }

    /// The cycles of `c`: instructions (a string instruction by the lines it touched, not
    /// its iterations), then each miss at the latency of the level that served it,
    /// locked instructions.
    pub fn cycles(&self, c: &Counters) -> f64 {
        let insns = c.insns.saturating_sub(c.string_iterations) + c.string_lines;
        insns as f64 * self.insn
            + (c.l1i_misses + c.l1d_misses) as f64 * self.l2_hit
            + c.l2_misses as f64 * self.ll_hit
            + c.ll_misses as f64 * self.memory
            + c.locked as f64 * self.locked
            + c.coherence_misses as f64 * self.coherence
    }

    /// The cost of `c` in milliseconds at the nominal clock.
    pub fn ms(&self, c: &Counters) -> f64 {
        self.cycles(c) / self.ghz / 1e6
    }
}

/// The guest's marks: sigbench in the guest executes a no-op whose encoding names one
/// (`nopl 0x5167000K(%rax)`: `0F 1F 80` and the 32-bit displacement), and the plugin,
/// seeing that instruction translated, writes a [`Record`] each time it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// A timed window opens.
    Open = 1,
    /// Between phases: the checkpoint (slab snapshots) starts; not part of a phase.
    Pause = 2,
    /// The next phase starts.
    Resume = 3,
    /// The window closes; the model stops following the guest until the next `Arm`.
    Close = 4,
    /// A case starts (before its filesystem is made and populated): the model follows the
    /// guest's accesses from here, so its caches hold what the case's own preparation
    /// left in them when the window opens, as a machine's would. Records nothing.
    Arm = 5,
}

/// The displacement of a mark's no-op, less its kind.
pub const MARK_BASE: u32 = 0x5167_0000;
/// The opcode bytes of a mark's no-op (`nopl disp32(%rax)`), before the displacement.
pub const MARK_OPCODE: [u8; 3] = [0x0f, 0x1f, 0x80];

impl Mark {
    pub fn name(self) -> &'static str {
        match self {
            Mark::Open => "open",
            Mark::Pause => "pause",
            Mark::Resume => "resume",
            Mark::Close => "close",
            Mark::Arm => "arm",
        }
    }

    fn from_name(s: &str) -> Option<Mark> {
        [
            Mark::Open,
            Mark::Pause,
            Mark::Resume,
            Mark::Close,
            Mark::Arm,
        ]
        .into_iter()
        .find(|m| m.name() == s)
    }

    /// The mark an instruction's bytes are, if any.
    pub fn of_insn(bytes: &[u8]) -> Option<Mark> {
        if bytes.len() != 7 || bytes[..3] != MARK_OPCODE {
            return None;
        }
        let disp = u32::from_le_bytes([bytes[3], bytes[4], bytes[5], bytes[6]]);
        match disp.checked_sub(MARK_BASE)? {
            1 => Some(Mark::Open),
            2 => Some(Mark::Pause),
            3 => Some(Mark::Resume),
            4 => Some(Mark::Close),
            5 => Some(Mark::Arm),
            _ => None,
        }
    }
}

/// One line the plugin writes at a mark: the mark and the guest's cumulative counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub mark: Mark,
    pub counters: Counters,
}

/// The first word of every record line, with the format's version.
pub const RECORD_TAG: &str = "sigbench-cost/2";

impl Record {
    pub fn line(&self) -> String {
        let v = self.counters.values().map(|x| x.to_string());
        format!("{RECORD_TAG} {} {}\n", self.mark.name(), v.join(" "))
    }

    /// A line [`Record::line`] wrote, or None.
    pub fn parse(line: &str) -> Option<Record> {
        let mut w = line.split_whitespace();
        if w.next()? != RECORD_TAG {
            return None;
        }
        let mark = Mark::from_name(w.next()?)?;
        let mut v = [0u64; Counters::NAMES.len()];
        for x in &mut v {
            *x = w.next()?.parse().ok()?;
        }
        w.next().is_none().then_some(Record {
            mark,
            counters: Counters::from_values(v),
        })
    }
}

/// A window's counters: its total and each phase's (the segments between the marks
/// opening or resuming it and those pausing or closing it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    pub total: Counters,
    pub phases: Vec<Counters>,
}

/// The windows of a record file's text (lines that are not records are skipped: QEMU may
/// say things there too).
pub fn windows_in(text: &str) -> Vec<Option<Window>> {
    let records: Vec<Record> = text.lines().filter_map(Record::parse).collect();
    windows(&records)
}

/// The windows in `records`, in order: each from an `Open` to its `Close`. A window
/// whose marks are out of order (a guest that failed inside one) is None in its place.
pub fn windows(records: &[Record]) -> Vec<Option<Window>> {
    let mut out = Vec::new();
    let mut open: Option<(Counters, Window, bool)> = None;
    for r in records.iter().filter(|r| r.mark != Mark::Arm) {
        match (r.mark, &mut open) {
            (Mark::Open, cur) => {
                if cur.is_some() {
                    out.push(None);
                }
                *cur = Some((r.counters, Window::default(), true));
            }
            (Mark::Pause, Some((start, w, running @ true))) => {
                let seg = r.counters.since(start);
                w.total = w.total.plus(&seg);
                w.phases.push(seg);
                *running = false;
            }
            (Mark::Resume, Some((start, _, running @ false))) => {
                *start = r.counters;
                *running = true;
            }
            (Mark::Close, Some((start, w, true))) => {
                let seg = r.counters.since(start);
                let mut w = std::mem::take(w);
                w.total = w.total.plus(&seg);
                w.phases.push(seg);
                out.push(Some(w));
                open = None;
            }
            (_, cur) => {
                if cur.is_some() {
                    out.push(None);
                }
                *cur = None;
            }
        }
    }
    if open.is_some() {
        out.push(None);
    }
    out
}

/// The model's state: every guest CPU's first-level caches and the shared last level,
/// and what was counted in them.
pub struct Machine {
    l1i: Vec<Cache>,
    l1d: Vec<Cache>,
    l2: Vec<Cache>,
    ll: Cache,
    pub counts: Counters,
    /// Per CPU the line a string instruction last touched, reading and writing: the next
    /// access to the same line is the same line, not another access.
    string_last: Vec<[u64; 2]>,
    /// With several CPUs, per guest-physical line the CPU that holds it modified (its
    /// index + 1; 0: none — never written, or read by another since): the directory of a
    /// write-invalidate protocol (MESI's M against the rest).
    owner: Vec<u8>,
    /// Where code lies within its pages ([`Machine::placed`]): 0 as it is, else the seed of
    /// a placement.
    placement: u64,
}

/// The lines the directory follows: guest-physical memory below 16 GiB (a guest's RAM;
/// beyond, lines are taken as held by no CPU).
const OWNED_LINES: u64 = 1 << 28;

/// Instruction lines are kept apart from data lines in the last level (an instruction's
/// address is its host address, a data access's its guest-physical one).
const INSN_SPACE: u64 = 1 << 58;

impl Machine {
    pub fn new(cpus: usize) -> Machine {
        let cpus = cpus.max(1);
        Machine {
            l1i: (0..cpus).map(|_| Cache::new(L1I)).collect(),
            l1d: (0..cpus).map(|_| Cache::new(L1D)).collect(),
            l2: (0..cpus).map(|_| Cache::new(L2)).collect(),
            ll: Cache::hashed(LL),
            counts: Counters::default(),
            string_last: vec![[u64::MAX; 2]; cpus],
            owner: Vec::new(),
            placement: 0,
        }
    }

    /// A machine whose code lies within its pages as placement `seed` puts it (0: as it is;
    /// [`Machine::placed`]).
    pub fn with_placement(cpus: usize, seed: u64) -> Machine {
        Machine {
            placement: seed,
            ..Machine::new(cpus)
        }
    }

    /// Where the instruction line `line` lies under this machine's placement: the 64 lines
    /// of each page of code permuted by a bijection its page number and the seed choose
    /// (`((k ^ x) · a + b) mod 64`, `a` odd), so a page's lines stay 64 distinct lines of
    /// that page (no conflict among them that the code does not have) while which of them
    /// meet which lines of other pages in a set is drawn afresh. That is what relinking a
    /// kernel does to the first-level instruction cache, which is indexed within a page:
    /// every build places its functions afresh — their order within a page as well as the
    /// page's offset — and the conflicts between its hot paths come and go with that, not
    /// with what the code does (docs/statistics.md; a rotation of each page, the first
    /// placement, kept the order within a page and left a build's in-page layout as a
    /// cost-only change). A state of the machine samples one placement, so a comparison
    /// judges a kernel's code across placements instead of one build's luck (STABILIZER's
    /// argument, Curtsinger & Berger 2013).
    #[inline]
    fn placed(&self, line: u64) -> u64 {
        if self.placement == 0 {
            return line;
        }
        const PAGE_LINES: u64 = 1 << (12 - LINE_SHIFT);
        let page = line / PAGE_LINES;
        // splitmix64's finaliser over the page moved by the seed (spread by an odd
        // constant, so that near seeds are far apart): three fields of it are the map.
        let mut z = page ^ self.placement.wrapping_mul(0xd6e8_feb8_6659_fd93);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let mask = PAGE_LINES - 1;
        let (a, b, x) = (z & mask | 1, (z >> 8) & mask, (z >> 16) & mask);
        page * PAGE_LINES + ((((line & mask) ^ x).wrapping_mul(a)).wrapping_add(b) & mask)
    }

    /// CPU `cpu` fetches the `lines` consecutive instruction lines from `first`.
    #[inline]
    pub fn fetch(&mut self, cpu: usize, first: u64, lines: u64) {
        let cpu = self.cpu(cpu);
        for line in first..first + lines {
            let line = self.placed(line);
            if !self.l1i[cpu].access(line) {
                self.counts.l1i_misses += 1;
                self.beyond_l1(cpu, line | INSN_SPACE);
            }
        }
    }

    /// The caches CPU `cpu` uses: its own, or (beyond the CPUs made) a share of another's.
    #[inline]
    fn cpu(&self, cpu: usize) -> usize {
        if cpu < self.l1d.len() {
            cpu
        } else {
            cpu % self.l1d.len()
        }
    }

    /// A first-level miss: the second level, then the last.
    #[inline]
    fn beyond_l1(&mut self, cpu: usize, line: u64) {
        if !self.l2[cpu].access(line) {
            self.counts.l2_misses += 1;
            if !self.ll.access(line) {
                self.counts.ll_misses += 1;
            }
        }
    }

    /// CPU `cpu` reads or writes the byte at guest-physical `addr` with an instruction of
    /// kind `access`.
    ///
    /// With several CPUs the private caches are kept coherent by write-invalidate: a store
    /// takes the line from every other CPU's first and second level (it is then held
    /// modified by the writer), and an access to a line another CPU holds modified is a
    /// coherence miss — it misses both private levels and is served by that CPU's caches
    /// (which keep a clean copy after a read, none after a write), not by the last level
    /// or memory.
    #[inline]
    pub fn data(&mut self, cpu: usize, addr: u64, store: bool, access: Kind) {
        let cpu = self.cpu(cpu);
        if store {
            self.counts.stores += 1;
        } else {
            self.counts.loads += 1;
        }
        let line = addr >> LINE_SHIFT;
        if access == Kind::RepString {
            let last = &mut self.string_last[cpu][store as usize];
            if *last == line {
                return;
            }
            *last = line;
            self.counts.string_lines += 1;
        }
        // One CPU: nothing to keep coherent, and no directory to pay for.
        if self.l1d.len() > 1 && self.coherent(cpu, line, store, access) {
            return;
        }
        if !self.l1d[cpu].access(line) {
            self.counts.l1d_misses += 1;
            self.beyond_l1(cpu, line);
        }
    }

    /// The directory's part of an access by `cpu` to `line`: true when the line came from
    /// another CPU's caches (the access is done), false when the caches below serve it.
    #[inline]
    fn coherent(&mut self, cpu: usize, line: u64, store: bool, access: Kind) -> bool {
        let mut held = self.owner_of(line);
        // A modified line its CPU has since evicted from both its levels was written back:
        // it comes from the last level or memory like any other.
        if let Some(o) = held.filter(|&o| o != cpu)
            && !self.l1d[o].contains(line)
            && !self.l2[o].contains(line)
        {
            self.set_owner(line, None);
            held = None;
        }
        if held.is_some_and(|o| o != cpu) {
            self.counts.l1d_misses += 1;
            self.counts.l2_misses += 1;
            self.counts.coherence_misses += 1;
            if access == Kind::Locked {
                self.counts.locked_transfers += 1;
            }
            if store {
                self.take(cpu, line);
            } else {
                self.set_owner(line, None);
            }
            self.l1d[cpu].access(line);
            self.l2[cpu].access(line);
            self.ll.access(line);
            return true;
        }
        if store && held != Some(cpu) {
            self.take(cpu, line);
        }
        false
    }

    /// The CPU holding `line` modified, if one does.
    #[inline]
    fn owner_of(&self, line: u64) -> Option<usize> {
        match self.owner.get(line as usize) {
            Some(&k) if k > 0 => Some(k as usize - 1),
            _ => None,
        }
    }

    #[inline]
    fn set_owner(&mut self, line: u64, cpu: Option<usize>) {
        if line >= OWNED_LINES {
            return;
        }
        let i = line as usize;
        if i >= self.owner.len() {
            if cpu.is_none() {
                return;
            }
            // Grown a MiB of lines (64 MiB of memory) at a time, up to the line.
            self.owner.resize((i | 0xf_ffff) + 1, 0);
        }
        // At most 64 CPUs have caches of their own (`cpu` folds the others onto them).
        self.owner[i] = cpu.map_or(0, |c| c as u8 + 1);
    }

    /// CPU `cpu` writes `line`: every other CPU's copy is dropped, and `cpu` holds it
    /// modified.
    #[inline]
    fn take(&mut self, cpu: usize, line: u64) {
        for other in (0..self.l1d.len()).filter(|&o| o != cpu) {
            self.l1d[other].invalidate(line);
            self.l2[other].invalidate(line);
            for last in &mut self.string_last[other] {
                if *last == line {
                    *last = u64::MAX;
                }
            }
        }
        self.set_owner(line, Some(cpu));
    }
}

/// What an x86 instruction is to the model, from its bytes: a `rep` string instruction
/// (its accesses to the line it touched last are one), a locked one, or neither. Its
/// number is what the plugin hands a memory callback (`Kind::of_number`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Plain = 0,
    RepString = 1,
    Locked = 2,
}

impl Kind {
    /// The kind numbered `n` (`kind as usize`); Plain for any other number.
    pub fn of_number(n: usize) -> Kind {
        match n {
            1 => Kind::RepString,
            2 => Kind::Locked,
            _ => Kind::Plain,
        }
    }
}

/// The kind of the x86-64 instruction `bytes`: its legacy prefixes and REX read, then the
/// opcode — `movs`, `cmps`, `stos`, `lods`, `scas` under `rep`/`repne`, or a `lock`
/// prefix, or `xchg` with a memory operand (implicitly locked).
pub fn kind_of(bytes: &[u8]) -> Kind {
    let mut rep = false;
    let mut lock = false;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            0xf2 | 0xf3 => rep = true,
            0xf0 => lock = true,
            0x26 | 0x2e | 0x36 | 0x3e | 0x64 | 0x65 | 0x66 | 0x67 => {}
            _ => break,
        }
        i += 1;
    }
    if let Some(&b) = bytes.get(i)
        && (0x40..=0x4f).contains(&b)
    {
        i += 1;
    }
    let op = bytes.get(i).copied();
    let modrm_memory = bytes.get(i + 1).is_some_and(|m| m >> 6 != 3);
    match op {
        _ if lock => Kind::Locked,
        Some(0xa4..=0xa7 | 0xaa..=0xaf) if rep => Kind::RepString,
        Some(0x86 | 0x87) if modrm_memory => Kind::Locked,
        _ => Kind::Plain,
    }
}

/// Where guest code lies in the host's memory, told apart from where the host put it.
///
/// QEMU names an instruction by the host address of its bytes (`qemu_plugin_insn_haddr`,
/// the one address API version 1 gives for it), and the host places guest memory wherever
/// address-space randomisation puts it, differently every boot. The last level's set
/// index hashes every bit of a line's address, so host addresses made two boots of one
/// guest miss differently there (reference 46: 4,598,869 and 4,595,530 last-level misses
/// of one dbench window). A code address is therefore named by its host mapping — the
/// mappings numbered in the order guest code was first found in them, the same every boot
/// — and its offset in that mapping: what was random is gone, and what sets two lines
/// apart stays.
#[derive(Debug, Default)]
pub struct CodeRegions {
    /// (start, end) of each host mapping guest code was found in, in that order.
    seen: Vec<(u64, u64)>,
}

impl CodeRegions {
    /// How many bits of a name the offset takes: mappings up to 1 TiB.
    const OFFSET_BITS: u32 = 40;

    /// The deterministic name of host address `host`: its mapping's number above the
    /// offset in it. `maps` lists the host's mappings (`/proc/self/maps`), read only when
    /// `host` lies in none seen yet; None when it lists no mapping holding `host` either.
    pub fn name(&mut self, host: u64, maps: impl FnOnce() -> String) -> Option<u64> {
        let found = |seen: &[(u64, u64)]| {
            seen.iter()
                .position(|&(start, end)| (start..end).contains(&host))
        };
        let k = match found(&self.seen) {
            Some(k) => k,
            None => {
                let region = maps().lines().find_map(|l| {
                    let (start, end) = l.split(' ').next()?.split_once('-')?;
                    let start = u64::from_str_radix(start, 16).ok()?;
                    let end = u64::from_str_radix(end, 16).ok()?;
                    (start..end).contains(&host).then_some((start, end))
                })?;
                self.seen.push(region);
                self.seen.len() - 1
            }
        };
        let (start, _) = self.seen[k];
        let offset = host - start;
        (offset >> Self::OFFSET_BITS == 0).then_some(((k as u64) << Self::OFFSET_BITS) | offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_is_named_by_its_mapping_not_where_the_host_put_it() {
        let maps = |base: u64| {
            move || {
                format!(
                    "{:x}-{:x} rw-p 00000000 00:00 0\n{:x}-{:x} r-xp 00000000 00:00 0 [rom]\n",
                    base,
                    base + (1 << 30),
                    base + (2 << 30),
                    base + (2 << 30) + 0x40000
                )
            }
        };
        // Two boots, two random placements, the same guest code: the same names.
        let names = |base: u64| {
            let mut r = CodeRegions::default();
            [
                base + (2 << 30) + 0x100,
                base + 0x1234,
                base + 0x3fff_ffff,
                base + (2 << 30),
            ]
            .map(|h| r.name(h, maps(base)))
        };
        let a = names(0x7f12_3400_0000);
        assert_eq!(a, names(0x7fe0_0a20_0000));
        // Numbered in the order found, offsets kept.
        assert_eq!(a[0], Some(0x100));
        assert_eq!(a[1], Some((1 << 40) | 0x1234));
        assert_eq!(a[2], Some((1 << 40) | 0x3fff_ffff));
        assert_eq!(a[3], Some(0));
        // An address in no mapping has no name; maps are read only for new regions.
        let mut r = CodeRegions::default();
        assert_eq!(r.name(0x10, maps(0x7f00_0000_0000)), None);
        assert!(r.name(0x7f00_0000_0040, maps(0x7f00_0000_0000)).is_some());
        assert_eq!(
            r.name(0x7f00_0000_0080, || panic!("read again")),
            Some(0x80)
        );
    }

    #[test]
    fn a_set_keeps_its_most_recent_lines() {
        // 2 sets of 2 ways.
        let mut c = Cache::new(Geometry {
            bytes: 4 << LINE_SHIFT,
            ways: 2,
        });
        assert!(!c.access(0) && !c.access(2) && c.access(0));
        // 4 maps to set 0 too: evicts 2, the least recent.
        assert!(!c.access(4) && c.access(0) && !c.access(2));
        // Set 1 is untouched by all of that.
        assert!(!c.access(1) && c.access(1));
        assert_eq!(L1D.sets(), 64);
        assert_eq!(LL.sets(), 8192);
    }

    #[test]
    fn the_last_level_spreads_lines_a_power_of_two_apart() {
        // 4,096 lines 4 KiB apart (a 16 MiB buffer read at a page stride): a modulo index
        // puts them in 128 of 8,192 sets (2,048 ways for 4,096 lines: every access
        // misses); hashed, they fit.
        let mut plain = Cache::new(LL);
        let mut hashed = Cache::hashed(LL);
        let (mut p, mut h) = (0, 0);
        for round in 0..3 {
            for k in 0..4096u64 {
                let line = (0x100_0000 + k * 4096) >> LINE_SHIFT;
                if !plain.access(line) && round > 0 {
                    p += 1;
                }
                if !hashed.access(line) && round > 0 {
                    h += 1;
                }
            }
        }
        assert_eq!(p, 2 * 4096);
        assert!(h < 100, "{h}");
    }

    #[test]
    fn strides_cost_what_their_lines_cost() {
        // 1,024 reads, 200 times, at strides of 4 B and 4 KiB: the first stays in one L1,
        // the second misses it every time (every line in one of its 64 sets).
        let mut cost = Vec::new();
        for stride in [4u64, 4096] {
            let mut m = Machine::new(1);
            for _ in 0..200 {
                for k in 0..1024 {
                    m.data(0, 0x10_0000 + k * stride, false, Kind::Plain);
                }
            }
            cost.push(m.counts);
        }
        assert_eq!(cost[0].l1d_misses, 1024 * 4 / 64);
        assert_eq!(cost[1].l1d_misses, 200 * 1024);
        // They fall in 16 of the second level's sets (64 lines a set for 16 ways: missed
        // every time); the last level spreads them (missed once each).
        assert_eq!((cost[1].l2_misses, cost[1].ll_misses), (200 * 1024, 1024));
    }

    /// Code of 60 pages each running its first 8 lines, in a loop: as linked, their lines
    /// meet in the same 8 sets of the first level (60 lines for 8 ways: missed every time).
    /// A placement permutes each page's lines: the same code, other conflicts, fewer or
    /// more by the placement — 480 lines drawn into 64 sets of 8 ways, a set's load
    /// binomial (mean 7.5), so about 45 % of the fetches fall in a set that holds more
    /// than 8 and miss — and each placement is the same every time it is used, lines of one
    /// page never meet, and where two pages' lines meet is drawn afresh by every seed.
    #[test]
    fn a_placement_moves_code_conflicts_and_keeps_each_page_whole() {
        let misses = |seed: u64| {
            let mut m = Machine::with_placement(1, seed);
            for _ in 0..100 {
                for page in 0..60u64 {
                    m.fetch(0, 0x1000 + page * 64, 8);
                }
            }
            m.counts.l1i_misses
        };
        assert_eq!(misses(0), 100 * 60 * 8, "as linked: every fetch a miss");
        let placed: Vec<u64> = (1..=20).map(misses).collect();
        eprintln!("misses of 20 placements: {placed:?}");
        assert!(
            placed.iter().all(|&m| m < 100 * 60 * 8 * 2 / 3),
            "{placed:?}"
        );
        let (lo, hi) = (placed.iter().min().unwrap(), placed.iter().max().unwrap());
        assert!(*lo >= 60 * 8 && hi > lo, "placements differ: {placed:?}");
        assert_eq!(misses(7), misses(7));
        // Where page 3's first line lies against page 4's: a new draw for every seed (the
        // first placement, a golden-ratio turn of page + seed, kept it within ±1 line
        // across seeds, so states sampled almost one layout).
        let apart: std::collections::BTreeSet<u64> = (1..=20)
            .map(|seed| {
                let m = Machine::with_placement(1, seed);
                (m.placed(3 * 64) + 64 - m.placed(4 * 64) % 64) % 64
            })
            .collect();
        assert!(apart.len() >= 12, "{apart:?}");
        // Within a page the map is a permutation: 64 lines stay 64 distinct lines of that
        // page, and not always in their order (a rotation kept it).
        let m = Machine::with_placement(1, 0x5eed);
        for page in [0u64, 1, 77, 1 << 30] {
            let mut lines: Vec<u64> = (0..64).map(|k| m.placed(page * 64 + k)).collect();
            assert!(lines.iter().all(|l| l / 64 == page));
            let turned = (0..64).all(|k| (lines[k] + 64 - lines[0]) % 64 == k as u64);
            assert!(page == 0 || !turned, "page {page}: {lines:?}");
            lines.sort();
            lines.dedup();
            assert_eq!(lines.len(), 64);
        }
    }

    /// Issue 58: two CPUs writing one line in turn move it every time but the first —
    /// coherence misses = writes − 1 — and a machine of one CPU keeps no directory.
    #[test]
    fn a_line_written_by_two_cpus_in_turn_moves_at_every_write_but_the_first() {
        let mut m = Machine::new(64);
        let writes = 1000;
        for k in 0..writes {
            m.data(k % 2, 0x4_0000, true, Kind::Plain);
        }
        assert_eq!(m.counts.coherence_misses, writes as u64 - 1);
        // Each is a miss of both private levels, never of the last level (one memory
        // access: the first write).
        assert_eq!(m.counts.l1d_misses, writes as u64);
        assert_eq!(m.counts.l2_misses, writes as u64);
        assert_eq!(m.counts.ll_misses, 1);
        assert_eq!(m.counts.locked_transfers, 0);
        // A lock taken in turn: every transfer a locked one.
        let mut m = Machine::new(64);
        for k in 0..writes {
            m.data(k % 2, 0x4_0000, false, Kind::Locked);
            m.data(k % 2, 0x4_0000, true, Kind::Locked);
        }
        assert_eq!(m.counts.coherence_misses, writes as u64 - 1);
        assert_eq!(m.counts.locked_transfers, writes as u64 - 1);
        // One CPU of a machine of two, the same accesses: no coherence; a machine of one
        // keeps no directory at all.
        for cpus in [2, 1] {
            let mut m = Machine::new(cpus);
            for _ in 0..writes {
                m.data(0, 0x4_0000, true, Kind::Plain);
            }
            assert_eq!((m.counts.coherence_misses, m.counts.l1d_misses), (0, 1));
            assert_eq!(m.owner.is_empty(), cpus == 1);
        }
    }

    /// A line another CPU wrote and then evicted from both its levels was written back:
    /// no transfer, a last-level hit.
    #[test]
    fn a_line_written_back_comes_from_the_last_level() {
        let mut m = Machine::new(2);
        m.data(0, 0x10_0000, true, Kind::Plain);
        // Evict it from CPU 0's L1D and L2: 16 more lines in its L2 set (and L1D set).
        for k in 1..=16u64 {
            m.data(0, 0x10_0000 + k * (1 << 20), false, Kind::Plain);
        }
        let before = m.counts;
        m.data(1, 0x10_0000, false, Kind::Plain);
        let c = m.counts.since(&before);
        assert_eq!((c.coherence_misses, c.l2_misses, c.ll_misses), (0, 1, 0));
    }

    /// Readers share a line (no transfer among them once it is clean); a write takes it
    /// from all of them, and each reader's next read is a transfer again.
    #[test]
    fn readers_share_a_line_until_one_writes_it() {
        let mut m = Machine::new(4);
        let line = 0x8_0000;
        m.data(0, line, true, Kind::Plain); // CPU 0 holds it modified
        for cpu in 1..4 {
            m.data(cpu, line, false, Kind::Plain);
        }
        // CPU 1's read took it from CPU 0 (now clean); 2 and 3 read a clean line.
        assert_eq!(m.counts.coherence_misses, 1);
        for cpu in 0..4 {
            m.data(cpu, line, false, Kind::Plain);
        }
        assert_eq!(m.counts.coherence_misses, 1, "reads of a shared line hit");
        m.data(3, line, true, Kind::Plain);
        let before = m.counts.l1d_misses;
        for cpu in 0..3 {
            m.data(cpu, line, false, Kind::Plain);
        }
        // The first reader takes it from CPU 3; the line is clean then, so the other two
        // miss (their copies were dropped) and are served by the last level.
        assert_eq!(m.counts.coherence_misses, 2);
        assert_eq!(m.counts.l1d_misses - before, 3);
        // The price: a transfer is dearer than a last-level hit, cheaper than memory.
        let w = Weights::default();
        let transfer = w.l2_hit + w.ll_hit + w.coherence;
        assert!(transfer > w.l2_hit + w.ll_hit && transfer < w.l2_hit + w.ll_hit + w.memory);
        assert_eq!(transfer / w.ghz, 40.0, "ns at the nominal clock");
    }

    #[test]
    fn records_of_two_more_counters_read_back_and_a_run_from_before_them_still_loads() {
        let c = Counters {
            insns: 5,
            coherence_misses: 7,
            locked_transfers: 2,
            ..Default::default()
        };
        let line = Record {
            mark: Mark::Open,
            counters: c,
        }
        .line();
        assert_eq!(Record::parse(&line).unwrap().counters, c);
        // A stored run's counters written before the two existed.
        let old: Counters = serde_json::from_str(
            r#"{"insns":1,"loads":2,"stores":3,"l1i_misses":4,"l1d_misses":5,"l2_misses":6,"ll_misses":7,"string_iterations":8,"string_lines":9,"locked":10}"#,
        )
        .unwrap();
        assert_eq!((old.locked, old.coherence_misses), (10, 0));
        // … and says it did not measure them, rather than 0.
        assert!(!old.coherence_counted);
        assert_eq!(old.measured().count(), Counters::NAMES.len() - 2);
        // A window's total, summed from its segments, keeps saying so (it began as
        // `Window::default()`, whose zero once said "not counted" and hid the rows).
        let w = windows(&[
            Record {
                mark: Mark::Open,
                counters: Counters::default(),
            },
            Record {
                mark: Mark::Close,
                counters: c,
            },
        ]);
        assert!(w[0].as_ref().unwrap().total.coherence_counted);
        let new = Record::parse(&line).unwrap().counters;
        assert!(
            new.measured()
                .any(|(n, v)| n == "coherence_misses" && v == 7)
        );
    }

    #[test]
    fn a_string_instruction_is_priced_by_its_lines() {
        let mut m = Machine::new(1);
        for b in 0..4096 {
            m.data(0, 0x2000 + b, true, Kind::RepString);
        }
        assert_eq!(m.counts.stores, 4096);
        assert_eq!(m.counts.string_lines, 64);
        assert_eq!(m.counts.l1d_misses, 64);
        let w = Weights::default();
        let c = Counters {
            insns: 4096 + 10,
            string_iterations: 4096,
            string_lines: 64,
            ..Default::default()
        };
        assert_eq!(w.cycles(&c), 74.0);
    }

    #[test]
    fn instructions_are_told_apart_by_their_bytes() {
        assert_eq!(kind_of(&[0xf3, 0xaa]), Kind::RepString); // rep stosb
        assert_eq!(kind_of(&[0xf3, 0x48, 0xab]), Kind::RepString); // rep stosq
        assert_eq!(kind_of(&[0xf3, 0xa4]), Kind::RepString); // rep movsb
        assert_eq!(kind_of(&[0xaa]), Kind::Plain); // stosb alone
        assert_eq!(kind_of(&[0xf0, 0x48, 0x0f, 0xb1, 0x17]), Kind::Locked); // lock cmpxchg
        assert_eq!(kind_of(&[0x48, 0x87, 0x07]), Kind::Locked); // xchg %rax,(%rdi)
        assert_eq!(kind_of(&[0x48, 0x87, 0xc7]), Kind::Plain); // xchg %rax,%rdi
        assert_eq!(kind_of(&[0xf3, 0x0f, 0x1e, 0xfa]), Kind::Plain); // endbr64
        assert_eq!(
            Mark::of_insn(&[0x0f, 0x1f, 0x80, 0x04, 0x00, 0x67, 0x51]),
            Some(Mark::Close)
        );
        assert_eq!(Mark::of_insn(&[0x0f, 0x1f, 0x80, 0, 0, 0, 0]), None);
    }

    #[test]
    fn records_read_back_and_make_windows() {
        let at = |mark, insns| Record {
            mark,
            counters: Counters {
                insns,
                ..Default::default()
            },
        };
        let r = at(Mark::Pause, 42);
        assert_eq!(Record::parse(&r.line()), Some(r));
        assert_eq!(Record::parse("sigbench-cost/1 open 1 2"), None);
        let w = windows(&[
            at(Mark::Open, 100),
            at(Mark::Pause, 150),
            at(Mark::Resume, 170),
            at(Mark::Close, 200),
            at(Mark::Open, 300),
            at(Mark::Open, 400),
            at(Mark::Close, 410),
        ]);
        assert_eq!(w.len(), 3);
        let first = w[0].as_ref().unwrap();
        assert_eq!(first.total.insns, 80);
        assert_eq!(
            first.phases.iter().map(|p| p.insns).collect::<Vec<_>>(),
            [50, 30]
        );
        assert!(w[1].is_none());
        assert_eq!(w[2].as_ref().unwrap().total.insns, 10);
    }
}
