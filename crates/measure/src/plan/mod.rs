//! The plan: signature × directories × N values × repetitions, the order the cases run in,
//! and the driver that takes each case through testbed → executor (with probes around the
//! timed window) → results.
//!
//! The order is repetition-major (every directory and N once, then again), or shuffled
//! within each repetition with `shuffle`, so drift over the run (thermal, page cache,
//! background work) spreads over all cases instead of biasing one. Warm-ups run first,
//! are recorded, and are flagged so statistics exclude them.

pub mod slice;
pub mod spec;
pub mod states;

use crate::exec::script::ScriptClient;
use crate::exec::steps::Executor;
use crate::exec::{self, Around, Bound, Seat, Tick, Timed};
use crate::host::Host;
use crate::interrupt;
use crate::loadfile::Loadfile;
use crate::probe::procfs::{SlabDelta, add_slab};
use crate::probe::profile::{ProfileReading, Rate};
use crate::probe::{self, Measurement, ProbeSpec, Probes, Scope, Window};
use crate::signature::Signature;
use crate::testbed::{DirSpec, Testbed, TestbedSpec, tool_version};
use anyhow::{Context, Result};
use model::random::mix64;
use model::results::{
    CaseResult, LoadfileMeta, PhaseResult, PlanMeta, RunDocument, SCHEMA, SCHEMA_VERSION,
    SignatureMeta, TestbedMeta, TimeMeta, Tool,
};
use model::stamp::now_rfc3339;
use std::sync::Arc;
use std::time::Duration;

/// The seed tokens and shuffling use unless the user gives one: runs are reproducible.
pub const DEFAULT_SEED: u64 = 0x5167_6265_6e63_6801;

#[derive(Clone, Debug)]
pub struct Plan {
    pub signature: Signature,
    pub testbed: TestbedSpec,
    pub dirs: Vec<DirSpec>,
    /// The numbers of files N the plan sweeps.
    pub n_values: Vec<u64>,
    pub repetitions: u32,
    pub warmup: u32,
    pub shuffle: bool,
    pub seed: u64,
    pub probes: Vec<ProbeSpec>,
    /// Before each timed window, wait until nothing else runs and start at a timer tick
    /// (`probe::Window::settle`): what a guest does by default.
    pub settle: bool,
    /// Log every timed call to this file (verification; costs time in the window).
    pub op_log: Option<std::path::PathBuf>,
    /// Profile every case (`--profile`, `probe::profile`): in its timed window, or apart.
    pub profile: Option<Rate>,
    /// `--clients K[,K…]`: each case runs K clients at once, each in a directory of its
    /// own (`client0` …; a loadfile names its own). None: one client in the test directory.
    pub clients: Option<Vec<u32>>,
    /// `--time`: the clients loop until the time is up, after a warm-up.
    pub time: Option<TimeBound>,
    /// The loadfile a loadfile signature replays, compiled (`--loadfile`, or the
    /// signature's own).
    pub loadfile: Option<Loadfile>,
    /// Which states the repetitions start from (`states`): in guests under the icount
    /// clock, each repetition a boot of its own, from the state of its seed.
    pub states: states::States,
    /// The number of the first repetition's state: repetitions added to a stored run
    /// (watch's confirmation, bisect's extra ones) measure new states, not copies.
    pub first_state: u32,
}

/// The least space a loadfile's device is sized for (it is made twice that, plus room).
const LOADFILE_SPACE: u64 = 2 << 30;

/// A run for a time: how long the window lasts and the warm-up before it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeBound {
    pub time: Duration,
    pub warmup: Duration,
}

/// One case to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Case {
    pub dir: usize,
    pub n: u64,
    /// Clients at once (1 without `--clients`).
    pub clients: u32,
    pub rep: u32,
    pub warmup: bool,
}

/// What the driver tells whoever is watching (the CLI prints and draws progress).
pub trait Observer: Send {
    /// Everything validated and the testbed is up: the run really starts.
    fn run_started(&mut self, _doc: &RunDocument) {}
    /// A case is about to start; `work` is the number of file-iterations it will tick.
    fn case_started(&mut self, case: &Case, plan: &Plan, work: u64);
    /// Progress inside the current case.
    fn tick(&mut self, done: u64);
    /// A case finished (it is in the document already). An error stops the run: the
    /// observer could not keep the case (its store failed).
    fn case_done(&mut self, result: &CaseResult, plan: &Plan) -> Result<()>;
    fn warning(&mut self, message: &str);
    /// A second of a case for a time passed (`warmup`: still in the warm-up).
    fn second(&mut self, _tick: &Tick, _clients: usize, _warmup: bool) {}
}

/// Observers compose: both hear everything, the first first; the first error stops.
impl<A: Observer, B: Observer> Observer for (A, B) {
    fn second(&mut self, tick: &Tick, clients: usize, warmup: bool) {
        self.0.second(tick, clients, warmup);
        self.1.second(tick, clients, warmup);
    }
    fn run_started(&mut self, doc: &RunDocument) {
        self.0.run_started(doc);
        self.1.run_started(doc);
    }
    fn case_started(&mut self, case: &Case, plan: &Plan, work: u64) {
        self.0.case_started(case, plan, work);
        self.1.case_started(case, plan, work);
    }
    fn tick(&mut self, done: u64) {
        self.0.tick(done);
        self.1.tick(done);
    }
    fn case_done(&mut self, result: &CaseResult, plan: &Plan) -> Result<()> {
        self.0.case_done(result, plan)?;
        self.1.case_done(result, plan)
    }
    fn warning(&mut self, message: &str) {
        self.0.warning(message);
        self.1.warning(message);
    }
}

/// An observer that may be absent (no store: `--no-store`).
impl<T: Observer> Observer for Option<T> {
    fn second(&mut self, tick: &Tick, clients: usize, warmup: bool) {
        if let Some(o) = self {
            o.second(tick, clients, warmup);
        }
    }
    fn run_started(&mut self, doc: &RunDocument) {
        if let Some(o) = self {
            o.run_started(doc);
        }
    }
    fn case_started(&mut self, case: &Case, plan: &Plan, work: u64) {
        if let Some(o) = self {
            o.case_started(case, plan, work);
        }
    }
    fn tick(&mut self, done: u64) {
        if let Some(o) = self {
            o.tick(done);
        }
    }
    fn case_done(&mut self, result: &CaseResult, plan: &Plan) -> Result<()> {
        match self {
            Some(o) => o.case_done(result, plan),
            None => Ok(()),
        }
    }
    fn warning(&mut self, message: &str) {
        if let Some(o) = self {
            o.warning(message);
        }
    }
}

impl<T: Observer + ?Sized> Observer for &mut T {
    fn second(&mut self, tick: &Tick, clients: usize, warmup: bool) {
        (**self).second(tick, clients, warmup);
    }
    fn run_started(&mut self, doc: &RunDocument) {
        (**self).run_started(doc);
    }
    fn case_started(&mut self, case: &Case, plan: &Plan, work: u64) {
        (**self).case_started(case, plan, work);
    }
    fn tick(&mut self, done: u64) {
        (**self).tick(done);
    }
    fn case_done(&mut self, result: &CaseResult, plan: &Plan) -> Result<()> {
        (**self).case_done(result, plan)
    }
    fn warning(&mut self, message: &str) {
        (**self).warning(message);
    }
}

impl Plan {
    /// What of it makes a series of stored runs (the signature, the filesystem, the
    /// directories, N).
    pub fn series_plan(&self) -> model::results::SeriesPlan {
        model::results::SeriesPlan {
            signature: self.signature.name.clone(),
            sha256: self.signature.hash.clone(),
            fs: self.testbed.fs.name().to_string(),
            dirs: self.dirs.iter().map(|d| d.text.clone()).collect(),
            n: self.n_values.clone(),
        }
    }

    /// The K values the cases run with (`[1]` without `--clients`).
    pub fn client_counts(&self) -> Vec<u32> {
        self.clients.clone().unwrap_or_else(|| vec![1])
    }

    /// The cases in the order they run: the warm-ups, then each repetition's grid (N ×
    /// clients × directories, shuffled per repetition with `--shuffle`). Made one
    /// repetition at a time, so memory does not grow with `-r`.
    pub fn cases(&self) -> impl Iterator<Item = Case> + '_ {
        (1..=self.warmup)
            .map(|w| (w, true))
            .chain((1..=self.repetitions).map(|r| (r, false)))
            .flat_map(move |(rep, warmup)| self.grid(rep, warmup))
    }

    /// How many cases [`Plan::cases`] gives.
    pub fn case_count(&self) -> usize {
        (self.warmup as usize + self.repetitions as usize)
            * self.n_values.len()
            * self.client_counts().len()
            * self.dirs.len()
    }

    /// One repetition's cases.
    fn grid(&self, rep: u32, warmup: bool) -> Vec<Case> {
        let ks = self.client_counts();
        let mut v: Vec<Case> = self
            .n_values
            .iter()
            .flat_map(|&n| {
                ks.iter().flat_map(move |&clients| {
                    (0..self.dirs.len()).map(move |dir| Case {
                        dir,
                        n,
                        clients,
                        rep,
                        warmup,
                    })
                })
            })
            .collect();
        if self.shuffle {
            shuffle(&mut v, self.seed ^ ((rep as u64) << 32) ^ warmup as u64);
        }
        v
    }

    /// A document with the run's metadata and no cases yet, for a run on this machine:
    /// its kernel and hardware (uname, /proc), its mkfs tool's version (`mkfs -V`) and
    /// the build of sigbench measuring it (in a guest, the host's binary as /init).
    pub fn document_here(&self) -> RunDocument {
        let mut d = self.document_on(crate::host::current(), tool_version(self.testbed.fs));
        d.tool.build = crate::build::current();
        d
    }

    /// A document with the run's metadata and no cases yet, for a run on `host` with this
    /// mkfs tool. Pure: the caller gathers the machine's facts.
    pub fn document_on(&self, host: Host, mkfs_version: Option<String>) -> RunDocument {
        RunDocument {
            schema: SCHEMA.into(),
            version: SCHEMA_VERSION,
            id: crate::host::new_run_id(),
            label: String::new(),
            tool: Tool {
                name: "sigbench".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                build: None,
            },
            status: "running".into(),
            error: None,
            started_at: now_rfc3339(),
            host,
            signature: SignatureMeta {
                name: self.signature.name.clone(),
                origin: self.signature.origin.clone(),
                sha256: self.signature.hash.clone(),
                source: self.signature.source.clone(),
                loadfile: self.loadfile.as_ref().map(|l| LoadfileMeta {
                    path: l.path.clone(),
                    sha256: l.sha256.clone(),
                    lines: l.script.file_lines,
                    operations: l.script.lines.len() as u64,
                }),
            },
            testbed: TestbedMeta {
                fs: self.testbed.fs.name().into(),
                mkfs_version,
                mkfs_opts: self.testbed.mkfs_opts.clone(),
                mount_opts: self.testbed.mount_opts.clone(),
                device_kind: self.testbed.device.kind().into(),
                ..Default::default()
            },
            plan: PlanMeta {
                n: self.n_values.clone(),
                repetitions: self.repetitions,
                warmup: self.warmup,
                settle: self.settle,
                seed: self.seed,
                order: if self.shuffle {
                    "shuffled"
                } else {
                    "interleaved"
                }
                .into(),
                dirs: self.dirs.iter().map(|d| d.text.clone()).collect(),
                probes: self
                    .probes
                    .iter()
                    .map(|p| format!("{}={}", p.name, p.source()))
                    .collect(),
                clients: self.clients.clone(),
                time: self.time.map(|t| TimeMeta {
                    time_ns: t.time.as_nanos() as u64,
                    warmup_ns: t.warmup.as_nanos() as u64,
                }),
                spec: serde_json::to_value(spec::RunSpec::resolved(self)).ok(),
            },
            cases: Vec::new(),
            warnings: Vec::new(),
            peak_rss_kib: 0,
            slice: None,
            slurm_job: None,
        }
    }

    /// Run every case, appending results to `doc` as they finish, so that on an error
    /// or interruption `doc` still holds every finished case.
    pub fn execute(&self, doc: &mut RunDocument, obs: &mut dyn Observer) -> Result<()> {
        let mut warnings = Vec::new();
        // Validate everything that can be validated before anything is created.
        let mut probes = Probes::resolve(&self.probes, &mut warnings)?;
        if let Some(rate) = self.profile {
            probes.profile(rate, &mut warnings);
        }
        self.start_op_log(&mut warnings)?;
        if let Some(w) = doc.host.frequency.as_ref().and_then(|f| f.warning()) {
            warnings.push(w);
        }
        self.testbed.validate()?;
        flush(&mut warnings, doc, obs);
        self.check_fits()?;
        let bed = Testbed::create(self.testbed.clone(), self.footprint(false))?;
        self.execute_on(&bed, &probes, doc, obs)
    }

    /// A RAM-backed filesystem (the default ramdisk, zram, tmpfs) must fit in the memory
    /// available at the plan's largest N: checked before anything is created.
    pub fn check_fits(&self) -> Result<()> {
        let max_n = self.n_values.iter().copied().max().unwrap_or(1);
        let k = self.client_counts().into_iter().max().unwrap_or(1);
        let what = match (&self.loadfile, k) {
            (Some(_), 1) => String::new(),
            (Some(_), k) => format!(", {k} clients"),
            (None, 1) => format!(", N = {max_n}"),
            (None, k) => format!(", N = {max_n}, {k} clients"),
        };
        crate::testbed::check_memory(&self.testbed, self.footprint(true), self.buffers())
            .map_err(|e| anyhow::anyhow!("{}{what}: {e}", self.signature.origin))
    }

    /// The clients' buffers at the plan's most clients: per client a loadfile's largest
    /// ReadX, its directory buffers and histograms (about 1 MiB), and one shared buffer
    /// of the largest WriteX.
    fn buffers(&self) -> crate::testbed::Buffers {
        let k = self.client_counts().into_iter().max().unwrap_or(1) as u64;
        let (read, write) = self.loadfile.as_ref().map_or((0, 0), |l| {
            (l.script.max_read as u64, l.script.max_write as u64)
        });
        crate::testbed::Buffers(k.saturating_mul(read + (1 << 20)).saturating_add(write))
    }

    /// What the largest case may occupy: on the test filesystem (the device is sized from
    /// it), or with `in_memory` in the memory of a RAM-backed one — the signature's files at
    /// the largest N (a loadfile's files at their largest extents), for every client.
    fn footprint(&self, in_memory: bool) -> u64 {
        let max_n = self.n_values.iter().copied().max().unwrap_or(1);
        let k = self.client_counts().into_iter().max().unwrap_or(1) as u64;
        let per_entry: u64 = if in_memory { 2 * 1024 } else { 8 * 1024 };
        let one = match &self.loadfile {
            Some(l) => l
                .script
                .data_bytes
                .saturating_add((l.script.paths.len() as u64).saturating_mul(per_entry)),
            None if in_memory => self.signature.memory_needed(max_n),
            None => self.signature.space_needed(max_n),
        };
        let all = one.saturating_mul(k);
        if self.loadfile.is_some() && !in_memory {
            // A file server's disk is far larger than its clients' files: on a device the
            // size of the files, btrfs runs in its small-filesystem mode (mixed block groups
            // under 1 GiB) and flushes to make room, and dbench's 12 clients measured 108
            // MB/s on 668 MiB against 440 on 2 GiB. The ramdisk is sparse: its size costs
            // no memory.
            return all.max(LOADFILE_SPACE);
        }
        all
    }

    fn start_op_log(&self, warnings: &mut Vec<String>) -> Result<()> {
        if let Some(log) = &self.op_log {
            // A new file (a link planted at its name is replaced, never followed) ...
            crate::outputs::write_file(log, b"# phase\tfile\tsyscall\tpaths\tresult\n")
                .with_context(|| format!("the op log {}", log.display()))?;
            warnings.push(format!(
                "every timed call is logged to {}: timings include the logging",
                log.display()
            ));
        }
        Ok(())
    }

    /// Every case on a testbed that is up (the unit tests' seam: a directory testbed).
    fn execute_on(
        &self,
        bed: &Testbed,
        probes: &Probes,
        doc: &mut RunDocument,
        obs: &mut dyn Observer,
    ) -> Result<()> {
        let mut warnings = Vec::new();
        match &bed.device {
            Some(d) => {
                doc.testbed.device = d.path.display().to_string();
                doc.testbed.device_bytes = d.size;
            }
            None => doc.testbed.device_kind = "none".into(),
        }
        obs.run_started(doc);
        let scope = bed.device.as_ref().map(|d| Scope {
            block: d.block.clone(),
            major: d.major,
            minor: d.minor,
        });
        // A profile that is not whole is said once a run, for the first case it happens in.
        let mut shortfall_said = false;
        for case in self.cases() {
            interrupt::check()?;
            let result = self.run_case(bed, probes, scope.as_ref(), &case, &mut warnings, obs);
            if let Ok(CaseResult {
                profile: Some(ProfileReading::Sampled(p)),
                dir,
                n,
                rep,
                ..
            }) = &result
                && !shortfall_said
                && let Some(why) = p.shortfall()
            {
                shortfall_said = true;
                warnings.push(format!("{dir} N={n} repetition {rep}: {why}"));
            }
            flush(&mut warnings, doc, obs);
            let result = result?;
            doc.cases.push(result);
            doc.peak_rss_kib = probe::peak_rss_kib();
            obs.case_done(doc.cases.last().expect("just pushed"), self)?;
        }
        Ok(())
    }

    /// One case: its timed window, and with the profile taken apart a second window that
    /// only samples, on a fresh filesystem, whose profile the case keeps.
    fn run_case(
        &self,
        bed: &Testbed,
        probes: &Probes,
        scope: Option<&Scope>,
        case: &Case,
        warnings: &mut Vec<String>,
        obs: &mut dyn Observer,
    ) -> Result<CaseResult> {
        let mut result = self.measure_case(bed, probes, scope, case, warnings, obs, true)?;
        if let Some(apart) = probes.apart(result.wall_ns, case.rep) {
            interrupt::check()?;
            let mut quiet = WarningsOnly(obs);
            let second =
                self.measure_case(bed, &apart, scope, case, warnings, &mut quiet, false)?;
            result.profile = second.profile.map(|r| match r {
                ProfileReading::Sampled(mut p) => {
                    p.apart_ns = Some(second.wall_ns);
                    ProfileReading::Sampled(p)
                }
                unavailable => unavailable,
            });
        }
        Ok(result)
    }

    /// One window of a case, with `probes` around it; `log_ops`: into the op log too.
    #[allow(clippy::too_many_arguments)]
    fn measure_case(
        &self,
        bed: &Testbed,
        probes: &Probes,
        scope: Option<&Scope>,
        case: &Case,
        warnings: &mut Vec<String>,
        obs: &mut dyn Observer,
        log_ops: bool,
    ) -> Result<CaseResult> {
        let dir = &self.dirs[case.dir];
        if log_ops {
            // The cost model follows the timed case from its fresh filesystem on.
            crate::sys::os::mark(sigbench_cost::Mark::Arm);
        }
        let fs = bed.fresh(dir)?;
        let sig = &self.signature;
        let k = case.clients as usize;
        let bound = match self.time {
            Some(t) => Bound::Time {
                warmup: t.warmup,
                time: t.time,
            },
            None => Bound::Count,
        };
        // Work, in the units progress counts: files (populated, then per phase) or lines.
        let populated = sig.setup.populate.as_ref().map_or(0, |_| case.n);
        let per_client = match (&self.loadfile, bound) {
            (_, Bound::Time { .. }) => 0,
            (Some(l), Bound::Count) => case.n * l.script.lines.len() as u64,
            (None, Bound::Count) => {
                sig.rounds as u64
                    * sig
                        .phases
                        .iter()
                        .map(|p| p.select.count(case.n))
                        .sum::<u64>()
                    + populated
            }
        };
        let work = match self.time {
            Some(t) => (t.warmup + t.time).as_secs(),
            None => per_client * k as u64,
        };
        obs.case_started(case, self, work);
        // Everything the workload needs from outside its filesystem is opened here.
        let mut window = probes.window(scope, warnings);
        window.settle = self.settle;
        // A run for a time has no checkpoints between phases: one segment.
        let segments = match bound {
            Bound::Count => sig.phases.len().max(1) * sig.rounds as usize,
            Bound::Time { .. } => 1,
        };
        window.phase_names = if segments > 1 {
            sig.phases.iter().map(|p| p.name.clone()).collect()
        } else {
            vec![
                sig.phases
                    .first()
                    .map_or_else(|| sig.name.clone(), |p| p.name.clone()),
            ]
        };
        // Slab evidence per phase: checkpoints between phases, outside the phases' times.
        let per_phase = sig.slab_evidence && segments > 1;
        let mut around = CaseAround {
            window: Some(window),
            measured: None,
            obs: &mut *obs,
            opened: false,
            populated: populated * k as u64,
            per_phase,
            phase_slab: vec![Vec::new(); sig.phases.len()],
            profiled: self.profile.is_some() && segments > 1,
            warmup_s: self.time.map_or(0, |t| t.warmup.as_secs()),
            // The timed window (not a profile's second window) is what the cost model
            // counts, between its marks.
            marks: log_ops,
        };
        // The op log too (one client only: the request refuses it with clients): the
        // workload's thread cannot reach it once confined.
        let op_log = match &self.op_log {
            Some(path) if log_ops => Some(self.op_log_writer(path, dir, case)?),
            _ => None,
        };
        // The workload — setup, prelude and the timed window — runs confined to the test
        // filesystem (testbed::confine).
        let timed = fs.run_workload(|| self.run_clients(case, bound, op_log, &mut around))??;
        let measured = around.measured.take().unwrap_or_default();
        let CaseAround { mut phase_slab, .. } = around;
        if let (Some(last), Some(d)) = (phase_slab.last_mut(), &measured.last_segment_slab) {
            add_slab(last, d);
        }
        for n in &timed.notes {
            warnings.push(format!(
                "{} N={} repetition {}: {n}",
                dir.name, case.n, case.rep
            ));
        }
        Ok(self.case_result(case, &fs.dir, timed, measured, phase_slab, per_phase))
    }

    /// The case's K clients — a loadfile's, or executors of the signature (the op log with
    /// the first) — run together within `bound`, `around` the timed window.
    fn run_clients(
        &self,
        case: &Case,
        bound: Bound,
        mut op_log: Option<Box<dyn std::io::Write + Send>>,
        around: &mut CaseAround,
    ) -> Result<Timed> {
        let k = case.clients as usize;
        match &self.loadfile {
            Some(l) => {
                let zeros: Arc<[u8]> = vec![0u8; l.script.max_write as usize].into();
                let seats = (0..k)
                    .map(|id| {
                        Ok(Seat {
                            client: ScriptClient::new(
                                Arc::clone(&l.script),
                                id as u32,
                                case.n,
                                Arc::clone(&zeros),
                            )?,
                            dir: None,
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                exec::run(seats, bound, around)
            }
            None => {
                let mut seats = Vec::with_capacity(k);
                for id in 0..k {
                    let mut e = Executor::new(&self.signature, case.n, self.seed)?;
                    e.place(self.states.layout());
                    if let Some(log) = op_log.take() {
                        e.log_to(log);
                    }
                    seats.push(Seat {
                        client: e,
                        dir: self.clients.as_ref().map(|_| format!("client{id}")),
                    });
                }
                exec::run(seats, bound, around)
            }
        }
    }

    /// A case's result from what its window measured: times per phase (with slab evidence
    /// per phase), throughput and latencies of several clients or a loadfile, counters.
    fn case_result(
        &self,
        case: &Case,
        path: &std::path::Path,
        timed: Timed,
        measured: Measurement,
        phase_slab: Vec<Vec<SlabDelta>>,
        per_phase: bool,
    ) -> CaseResult {
        let (dir, sig) = (&self.dirs[case.dir], &self.signature);
        let phases = sig
            .phases
            .iter()
            .zip(&timed.phase_ns)
            .zip(phase_slab)
            .map(|((p, &ns), slab)| PhaseResult {
                name: p.name.clone(),
                wall_ns: ns,
                slabinfo: per_phase.then_some(slab),
                // A guest's model counts come back with the document (`vm::cost`).
                cost: None,
            })
            .collect();
        let many = self.clients.is_some() || self.time.is_some() || self.loadfile.is_some();
        let throughput = many.then(|| timed.throughput());
        let (latency, operations) = if self.loadfile.is_some() {
            (Vec::new(), timed.latency)
        } else {
            (timed.latency, Vec::new())
        };
        CaseResult {
            dir: dir.name.clone(),
            n: case.n,
            rep: case.rep,
            warmup: case.warmup,
            path: path.display().to_string(),
            wall_ns: timed.wall_ns,
            calls: timed.calls,
            cpu: measured.cpu,
            counters: measured.counters,
            latency,
            vmstat: measured.deltas.vmstat,
            slabinfo: measured.deltas.slabinfo,
            blockstat: measured.deltas.blockstat,
            load: measured.deltas.load,
            phases,
            profile: measured.profile,
            clients: self.clients.as_ref().map(|_| case.clients),
            time: self.time.map(|t| TimeMeta {
                time_ns: t.time.as_nanos() as u64,
                warmup_ns: t.warmup.as_nanos() as u64,
            }),
            throughput,
            operations,
            per_client: if many { timed.clients } else { Vec::new() },
            ticks: timed.ticks,
            cost: None,
            state: match self.states {
                states::States::One(s) => Some(s),
                _ => None,
            },
        }
    }

    /// The op log for one case, appended to (`--op-log`: one client only).
    fn op_log_writer(
        &self,
        path: &std::path::Path,
        dir: &DirSpec,
        case: &Case,
    ) -> Result<Box<dyn std::io::Write + Send>> {
        // ... appended to, and a link put there since is not followed either.
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .custom_flags(if path.starts_with("/dev") || path.starts_with("/proc") {
                0
            } else {
                libc::O_NOFOLLOW
            })
            .open(path)
            .with_context(|| format!("cannot open the op log {}", path.display()))?;
        use std::io::Write;
        writeln!(f, "# case dir={} n={} rep={}", dir.name, case.n, case.rep)?;
        Ok(Box::new(std::io::BufWriter::new(f)))
    }
}

/// What surrounds a case's timed window: its probes, its progress, its checkpoints.
struct CaseAround<'o> {
    window: Option<Window>,
    measured: Option<Measurement>,
    obs: &'o mut dyn Observer,
    /// The window is open: progress now counts the timed work, after the populated files.
    opened: bool,
    populated: u64,
    per_phase: bool,
    phase_slab: Vec<Vec<SlabDelta>>,
    profiled: bool,
    /// Seconds of warm-up before the window (progress counts seconds from the release).
    warmup_s: u64,
    /// Mark the window and its phases for the cost model (`sys::os::mark`).
    marks: bool,
}

impl CaseAround<'_> {
    fn mark(&self, m: sigbench_cost::Mark) {
        if self.marks {
            crate::sys::os::mark(m);
        }
    }
}

impl Around for CaseAround<'_> {
    fn before_clients(&mut self) {
        // Clients are threads of this one: a profile opened now follows them all.
        if let Some(w) = &mut self.window {
            w.prepare_profile(true);
        }
    }

    fn before_release(&mut self) {
        if let Some(w) = &mut self.window {
            w.settle_release();
        }
    }

    fn progress(&mut self, done: u64) {
        let base = if self.opened { self.populated } else { 0 };
        self.obs.tick(base + done);
    }

    fn open(&mut self, running: bool) {
        self.opened = true;
        if let Some(w) = &mut self.window {
            if running {
                w.settle = false;
            }
            w.open();
        }
        self.mark(sigbench_cost::Mark::Open);
    }

    fn phase_ended(&mut self, k: usize) {
        self.mark(sigbench_cost::Mark::Pause);
        if let Some(w) = &mut self.window {
            if self.per_phase
                && let Some(d) = w.checkpoint()
            {
                add_slab(&mut self.phase_slab[k], &d);
            }
            if self.profiled {
                w.phase_ended(k);
            }
        }
        self.mark(sigbench_cost::Mark::Resume);
    }

    fn second(&mut self, tick: &Tick, clients: usize, warmup: bool) {
        self.obs.second(tick, clients, warmup);
        let since_release = if warmup {
            tick.s as u64
        } else {
            self.warmup_s + tick.s as u64
        };
        self.obs.tick(since_release);
    }

    fn close(&mut self) {
        self.mark(sigbench_cost::Mark::Close);
        if let Some(w) = self.window.take() {
            self.measured = Some(w.close());
        }
    }
}

/// The observer of a case's second window (its profile taken apart): its progress is not
/// the run's, its warnings are.
struct WarningsOnly<'o>(&'o mut dyn Observer);

impl Observer for WarningsOnly<'_> {
    fn case_started(&mut self, _: &Case, _: &Plan, _: u64) {}
    fn tick(&mut self, _: u64) {}
    fn case_done(&mut self, _: &CaseResult, _: &Plan) -> Result<()> {
        Ok(())
    }
    fn warning(&mut self, message: &str) {
        self.0.warning(message);
    }
}

/// Warnings queued so far (the driver's and the library's) go to the observer and the
/// document.
fn flush(warnings: &mut Vec<String>, doc: &mut RunDocument, obs: &mut dyn Observer) {
    warnings.extend(model::diag::take());
    for w in warnings.drain(..) {
        obs.warning(&w);
        doc.warnings.push(w);
    }
}

/// Fisher–Yates with the crate's mixer: deterministic for a seed.
fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut state = seed;
    for i in (1..v.len()).rev() {
        state = mix64(state);
        let j = (state % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

/// Plans run on a directory testbed, for the tests here and in the layers above (the
/// `fixtures` feature).
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures {
    use super::*;
    use crate::probe::Probes;
    use crate::testbed::{Fs, device::DeviceSpec};

    /// test3 over directories `a` and `b` of a btrfs testbed, N = 10 and 20.
    pub fn plan(reps: u32, warmup: u32, shuffle: bool) -> Plan {
        Plan {
            signature: Signature::load("test3").unwrap(),
            testbed: TestbedSpec {
                fs: Fs::Btrfs,
                device: DeviceSpec::LoopRam,
                mkfs_opts: vec![],
                mount_opts: String::new(),
                force: false,
            },
            dirs: vec![
                DirSpec::parse("a", Fs::Btrfs).unwrap(),
                DirSpec::parse("b", Fs::Btrfs).unwrap(),
            ],
            n_values: vec![10, 20],
            repetitions: reps,
            warmup,
            shuffle,
            seed: 1,
            probes: vec![],
            settle: false,
            op_log: None,
            profile: None,
            clients: None,
            time: None,
            loadfile: None,
            states: states::States::Sampled,
            first_state: 0,
        }
    }

    /// A fresh path under the temporary directory, unique to this process.
    pub fn temp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("sigbench-plan-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// Run `p`, labelled `label`, on a directory testbed under `dir` (no device, no
    /// mount, no root).
    pub fn run_in(
        p: &Plan,
        dir: &std::path::Path,
        label: &str,
        obs: &mut dyn Observer,
    ) -> RunDocument {
        let bed = Testbed::directory(p.testbed.clone(), dir).unwrap();
        let probes = Probes::resolve(&[], &mut Vec::new()).unwrap();
        let mut doc = p.document_on(crate::host::current(), None);
        doc.label = label.into();
        p.execute_on(&bed, &probes, &mut doc, obs).unwrap();
        doc
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{plan, run_in, temp};
    use super::*;

    #[test]
    fn cases_are_repetition_major_with_warmups_first() {
        let c: Vec<Case> = plan(2, 1, false).cases().collect();
        assert_eq!(c.len(), 4 * 3);
        assert!(c[..4].iter().all(|c| c.warmup));
        assert!(c[4..].iter().all(|c| !c.warmup));
        // Every directory and N once per repetition, before the next repetition starts.
        assert_eq!(
            c[4..8]
                .iter()
                .map(|c| (c.n, c.dir, c.rep))
                .collect::<Vec<_>>(),
            [(10, 0, 1), (10, 1, 1), (20, 0, 1), (20, 1, 1)]
        );
        assert!(c[8..].iter().all(|c| c.rep == 2));
    }

    #[test]
    fn shuffling_keeps_each_repetition_complete() {
        let c: Vec<Case> = plan(3, 0, true).cases().collect();
        for rep in 1..=3 {
            let mut got: Vec<(u64, usize)> = c
                .iter()
                .filter(|c| c.rep == rep)
                .map(|c| (c.n, c.dir))
                .collect();
            got.sort();
            assert_eq!(got, [(10, 0), (10, 1), (20, 0), (20, 1)]);
        }
        assert_eq!(
            c,
            plan(3, 0, true).cases().collect::<Vec<_>>(),
            "same seed, same order"
        );
    }

    /// What the driver told its observer.
    #[derive(Default)]
    struct Seen {
        started: bool,
        cases: Vec<(String, u64, u32, bool)>,
        work: u64,
        ticks: u64,
    }

    impl Observer for Seen {
        fn run_started(&mut self, _: &RunDocument) {
            self.started = true;
        }
        fn case_started(&mut self, _: &Case, _: &Plan, work: u64) {
            self.work += work;
        }
        fn tick(&mut self, _: u64) {
            self.ticks += 1;
        }
        fn case_done(&mut self, r: &CaseResult, _: &Plan) -> Result<()> {
            self.cases.push((r.dir.clone(), r.n, r.rep, r.warmup));
            Ok(())
        }
        fn warning(&mut self, _: &str) {}
    }

    #[test]
    fn the_driver_takes_every_case_through_the_executor_in_order() {
        let dir = temp("driver");
        let p = plan(2, 1, false);
        let mut seen = Seen::default();
        let doc = run_in(&p, &dir, "", &mut seen);
        assert!(seen.started);
        // Warm-ups first and flagged, then the repetitions, in the plan's order.
        let order: Vec<(String, u64, u32, bool)> = p
            .cases()
            .map(|c| (p.dirs[c.dir].name.clone(), c.n, c.rep, c.warmup))
            .collect();
        assert_eq!(seen.cases, order);
        assert_eq!(doc.cases.len(), 12);
        for c in &doc.cases {
            // test3: rename, unlink, openat, close per file.
            assert_eq!(c.calls, 4 * c.n, "{}", c.dir);
            let counts: Vec<(&str, u64)> = c
                .latency
                .iter()
                .map(|l| (l.syscall.as_str(), l.count))
                .collect();
            assert_eq!(
                counts,
                [
                    ("renameat2", c.n),
                    ("unlink", c.n),
                    ("openat", c.n),
                    ("close", c.n)
                ]
            );
            assert!(c.wall_ns > 0 && c.path.ends_with(&format!("/{}", c.dir)));
        }
        // Populate and every file once per phase is the work announced; progress ticks are
        // sparse (never more than the work).
        assert_eq!(seen.work, 12 * 2 * 15);
        assert!(seen.ticks <= seen.work);
        // Each case had a directory of its own, left holding the N re-created files.
        let cases: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(cases.len(), 12);
        for c in cases {
            for d in ["a", "b"] {
                if let Ok(files) = std::fs::read_dir(c.path().join(d)) {
                    let n = files.count();
                    assert!(n == 10 || n == 20, "{n} files in {}", c.path().display());
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
