//! Runs flattened into metrics: a case's key, each metric's samples per label
//! (`Samples`), what a signature's runs must share to be compared.

use super::*;

/// One metric of one case, as watch follows it over kernels: the case and the metric's
/// name (`wall_ms`, `phase.delete.wall_ms`, `profile.self.vfs_unlink_ms`). Shown as
/// `CASE NAME` (`zstd/N=250 wall_ms`; a directory name may hold spaces); the parts travel
/// as they are, never parsed back out of that text.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MetricKey {
    /// The case within its series: the series names the signature, so `case.signature`
    /// is empty.
    pub case: CaseKey,
    pub name: Metric,
}

impl MetricKey {
    pub fn new(case: CaseKey, name: Metric) -> MetricKey {
        MetricKey {
            case: CaseKey {
                signature: String::new(),
                ..case
            },
            name,
        }
    }
}

impl MetricKey {
    /// The metric a text `DIR/N=… NAME` shows — for change points stored before the
    /// store kept the parts, and for tests: a metric's name has no space, a directory's
    /// may. Nothing else reads a metric out of its text. An error when the text names no
    /// metric.
    pub fn from_legacy_text(text: &str) -> Result<MetricKey, String> {
        let (mut case, name) = text.rsplit_once(' ').unwrap_or(("", text));
        let name: Metric = name.parse()?;
        let mut key = CaseKey::default();
        if let Some((rest, t)) = case.rsplit_once("/T=")
            && let Some(secs) = t.strip_suffix('s').and_then(|t| t.parse::<f64>().ok())
        {
            key.time_ms = Some((secs * 1000.0).round() as u64);
            case = rest;
        }
        if let Some((rest, k)) = case.rsplit_once("/K=")
            && let Ok(k) = k.parse()
        {
            key.clients = Some(k);
            case = rest;
        }
        if let Some((rest, n)) = case.rsplit_once("/N=")
            && let Ok(n) = n.parse()
        {
            key.n = n;
            case = rest;
        }
        key.dir = case.to_string();
        Ok(MetricKey::new(key, name))
    }
}

#[cfg(test)]
mod metric_key_tests {
    use super::*;

    #[test]
    fn a_metric_shows_as_case_and_name_and_old_texts_read_back() {
        for (dir, n, clients, time_ms) in [
            ("a b", 100, None, None),
            ("dbench", 0, Some(12), Some(10_000)),
            ("x/N=3", 7, Some(2), None),
        ] {
            let case = CaseKey {
                signature: "s".into(),
                dir: dir.into(),
                n,
                clients,
                time_ms,
            };
            let k = MetricKey::new(case, "delete.wall_ms".parse().unwrap());
            assert!(k.case.signature.is_empty());
            let text = k.to_string();
            assert_eq!(MetricKey::from_legacy_text(&text), Ok(k), "{text}");
        }
        assert_eq!(
            MetricKey::new(CaseKey::default(), Metric::wall()).to_string(),
            "/N=0 wall_ms"
        );
        // A text that names no metric is not read as some other one.
        assert!(MetricKey::from_legacy_text("a/N=1 ").is_err());
    }
}

#[cfg(any(test, feature = "fixtures"))]
impl From<&str> for MetricKey {
    fn from(text: &str) -> MetricKey {
        MetricKey::from_legacy_text(text).expect("a metric's text")
    }
}

impl std::fmt::Display for MetricKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.case.short(), self.name)
    }
}

/// A case as results are matched across labels.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CaseKey {
    pub signature: String,
    pub dir: String,
    pub n: u64,
    /// K clients at once (`--clients`; None: one, in the test directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<u32>,
    /// A run for a time: its milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_ms: Option<u64>,
}

impl CaseKey {
    /// The case in a few characters: `zstd/N=250`, `dbench/K=12/T=10s`.
    pub fn short(&self) -> String {
        let mut s = self.dir.clone();
        // A loadfile for a time counts no N.
        if !(self.n == 0 && self.time_ms.is_some()) {
            s.push_str(&format!("/N={}", self.n));
        }
        if let Some(k) = self.clients {
            s.push_str(&format!("/K={k}"));
        }
        if let Some(t) = self.time_ms {
            s.push_str(&format!("/T={}s", t as f64 / 1000.0));
        }
        s
    }

    /// The key of a measured case of a run of `signature`.
    pub fn of(signature: &str, c: &CaseResult) -> CaseKey {
        CaseKey {
            signature: signature.to_string(),
            dir: c.dir.clone(),
            n: c.n,
            clients: c.clients,
            time_ms: c.time.map(|t| t.time_ns / 1_000_000),
        }
    }
}

/// Labels whose runs share a signature's name but not its content (its file's sha256): a
/// minimized or edited signature keeps the name, and its times are another workload's.
/// One line per name, naming the labels and the hashes; empty when every name means one
/// file.
pub fn signature_mismatches(sets: &[(String, Vec<RunDocument>)]) -> Vec<String> {
    let mut by_name: BTreeMap<&str, BTreeMap<&str, BTreeSet<&str>>> = BTreeMap::new();
    for (label, runs) in sets {
        for r in runs {
            by_name
                .entry(&r.signature.name)
                .or_default()
                .entry(&r.signature.sha256)
                .or_default()
                .insert(label);
        }
    }
    by_name
        .into_iter()
        .filter(|(_, hashes)| hashes.len() > 1)
        .map(|(name, hashes)| {
            let which: Vec<String> = hashes
                .iter()
                .map(|(h, labels)| {
                    let labels: Vec<&str> = labels.iter().copied().collect();
                    format!("{} ({})", labels.join(", "), h.get(..12).unwrap_or(h))
                })
                .collect();
            format!(
                "the signature `{name}` differs between labels: {} — same name, different content (a minimized or edited signature?)",
                which.join(" vs ")
            )
        })
        .collect()
}

/// Whether the first case of one of these runs has `metric`.
pub fn measured_in<'a>(runs: impl IntoIterator<Item = &'a RunDocument>, metric: &Metric) -> bool {
    runs.into_iter()
        .flat_map(|d| d.cases.first())
        .any(|c| metrics_of(c).iter().any(|(m, _)| m == metric))
}

/// The metrics of one measured case.
pub fn metrics_of(c: &CaseResult) -> Vec<(Metric, f64)> {
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut v = vec![
        (Metric::wall(), ms(c.wall_ns)),
        (Metric::window(Source::User), ms(c.cpu.user_ns)),
        (Metric::window(Source::Sys), ms(c.cpu.sys_ns)),
        (
            Metric::window(Source::Cpu),
            ms(c.cpu.user_ns + c.cpu.sys_ns),
        ),
        (Metric::window(Source::Calls), c.calls as f64),
    ];
    // The cost model's price of the window (a guest under the icount clock), and what it
    // counted: the price is what users feel, the counts are its evidence.
    if let Some(k) = &c.cost {
        v.push((Metric::window(Source::Cost), COST_WEIGHTS.ms(k)));
        for (name, value) in k.measured() {
            let count = Source::CostCount(name.to_string());
            v.push((Metric::window(count), value as f64));
        }
    }
    for k in &c.counters {
        if let Reading::Counted { value, .. } = k.reading {
            v.push((Metric::window(Source::probe(&k.name)), value as f64));
        }
    }
    for l in &c.latency {
        for (stat, ns) in [(Stat::P50, l.p50_ns), (Stat::P99, l.p99_ns)] {
            let call = l.syscall.clone();
            v.push((
                Metric::window(Source::Latency { call, stat }),
                ns as f64 / 1e3,
            ));
        }
    }
    for s in c.slabinfo.iter().flatten() {
        let slab = Source::Slab(s.cache.clone());
        v.push((Metric::window(slab), s.active_objs as f64));
    }
    for (k, d) in c.vmstat.iter().flatten() {
        v.push((Metric::window(Source::Vmstat(k.clone())), *d as f64));
    }
    for (k, d) in c.blockstat.iter().flatten() {
        v.push((Metric::window(Source::Block(k.clone())), *d as f64));
    }
    if let Some(t) = &c.throughput {
        v.push((Metric::window(Source::Throughput), t.mb_per_s));
        v.push((Metric::window(Source::OpsPerSecond), t.ops_per_s));
        v.push((Metric::window(Source::MaxLatency), ms(t.max_latency_ns)));
    }
    // A loadfile's operations, as dbench's table has them (µs).
    for o in &c.operations {
        for (stat, ns) in [
            (Stat::Avg, o.mean_ns),
            (Stat::P50, o.p50_ns as f64),
            (Stat::P99, o.p99_ns as f64),
            (Stat::Max, o.max_ns as f64),
        ] {
            let call = o.syscall.clone();
            v.push((Metric::window(Source::Latency { call, stat }), ns / 1e3));
        }
        let count = Source::Operations(o.syscall.clone());
        v.push((Metric::window(count), o.count as f64));
    }
    // Contention: the clients' time off the CPU and how often they blocked.
    if !c.per_client.is_empty() {
        let off: u64 = c.per_client.iter().map(|p| p.off_cpu_ns).sum();
        let blocked: u64 = c.per_client.iter().map(|p| p.voluntary_switches).sum();
        v.push((Metric::window(Source::OffCpu), ms(off)));
        v.push((Metric::window(Source::ContextSwitches), blocked as f64));
    }
    if let Some(ProfileReading::Sampled(p)) = &c.profile {
        profile_metrics(&mut v, None, &p.stacks(), ms(c.wall_ns));
        if p.phases.len() > 1 {
            for ph in &p.phases {
                let wall = phase_wall_ms(c, &ph.name);
                profile_metrics(&mut v, Some(&ph.name), &ph.stacks, wall);
            }
        }
    }
    // Per phase, where the story usually is (reference 004: creates grow maple_node, deletes
    // free it, and the whole window nets out to noise). One phase is the window itself.
    if c.phases.len() > 1 {
        for p in &c.phases {
            v.push((Metric::in_phase(&p.name, Source::Wall), ms(p.wall_ns)));
            if let Some(k) = &p.cost {
                v.push((Metric::in_phase(&p.name, Source::Cost), COST_WEIGHTS.ms(k)));
            }
            for s in p.slabinfo.iter().flatten() {
                let slab = Source::Slab(s.cache.clone());
                v.push((Metric::in_phase(&p.name, slab), s.active_objs as f64));
            }
        }
    }
    v
}

/// The rows of one profile (the window's, or a phase's): each function's self time where
/// it ran at all, its total time (with its callees) where it was listed — in ms, its share
/// of the samples × `wall_ms`, the window's or the phase's time, so two kernels compare in
/// one unit and the functions' changes add up to the phase's. A function a repetition
/// lacks had 0 there (`Samples::from_runs`). Names are folded
/// (`probe::profile::fold_symbol`): `kmem_cache_alloc` gone beside
/// `kmem_cache_alloc_noprof` new is a rename, not a change.
pub(super) fn profile_metrics(
    v: &mut Vec<(Metric, f64)>,
    phase: Option<&str>,
    stacks: &BTreeMap<String, u64>,
    wall_ms: f64,
) {
    let ms = |pct: f64| pct / 100.0 * wall_ms;
    let profile = |share, function: &str| {
        let function = function.to_string();
        Metric::of(phase, Source::Profile { share, function })
    };
    for s in shares(&folded_stacks(stacks), LISTED_PCT) {
        if s.self_pct > 0.0 {
            v.push((profile(Share::Own, &s.function), ms(s.self_pct)));
        }
        v.push((profile(Share::Total, &s.function), ms(s.total_pct)));
    }
}

/// A phase's time in a case (summed over its rounds), in ms; 0 for a name the case has no
/// phase of.
pub(super) fn phase_wall_ms(c: &CaseResult, name: &str) -> f64 {
    c.phases
        .iter()
        .filter(|p| p.name == name)
        .map(|p| p.wall_ns as f64 / 1e6)
        .sum()
}

/// Whether a case's metrics hold a profile: without one on a side, its profile rows are
/// not 0 there but unknown.
pub(super) fn profiled(m: &Metrics) -> bool {
    m.keys().any(|k| k.profiled() && k.phase().is_none())
}

/// Metric → one value per measured repetition.
pub type Metrics = BTreeMap<Metric, Vec<f64>>;

/// One label's samples: case → metric → values.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    pub label: String,
    pub cases: BTreeMap<CaseKey, Metrics>,
    /// The first repetition's wall time per case (to spot a slow first run).
    pub(super) first_wall: BTreeMap<CaseKey, f64>,
    pub runs: usize,
    pub kernels: BTreeSet<String>,
    pub filesystems: BTreeSet<String>,
    /// Labels run under emulation (TCG): their times are not the hardware's.
    pub emulated: bool,
    /// The clocks its times were measured on (`model::clock`).
    pub timebases: BTreeSet<TimeBase>,
    /// When each run started (RFC 3339), to tell interleaved labels from separate blocks.
    pub started: Vec<String>,
    /// Per case and profile (None: the window's, else a phase's), each repetition's
    /// samples and the time they cover (ms): a function's time moves in steps of one
    /// sample's worth.
    pub(super) profile_steps: BTreeMap<CaseKey, BTreeMap<Option<String>, Vec<ProfileSpan>>>,
    /// Per case, how many of its windows the machine was busy in ([`busy_share`]).
    pub busy: BTreeMap<CaseKey, Busy>,
    /// What the repetitions sampled of the machine's states ([`States`]).
    pub states: States,
    /// Per case, the median wall time of each run: a run is a block of time, and on the
    /// host's clock blocks drift apart (`drift_cv`).
    pub(super) blocks: BTreeMap<CaseKey, Vec<f64>>,
}

/// What a label's repetitions sampled of the machine's states (docs/statistics.md,
/// "States"). Under a deterministic clock a repetition is one state, exactly: one that
/// repeats another's state (the same seed, or in the fixed state the same place in a
/// boot) and its value is a copy, counted once — six repetitions that are three values
/// stored twice are three samples, not six.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct States {
    /// Repetitions from sampled states (a seed each), as counted.
    pub sampled: usize,
    /// Repetitions from the fixed state (or before states were kept), as counted.
    pub fixed: usize,
    /// Repetitions not counted: copies of a state already counted.
    pub copies: usize,
}

impl States {
    /// How a report says it: `3 sampled states`, `3 repetitions from one state (fixed) (6
    /// copies of a state counted once)`; nothing for repetitions of one state without
    /// copies (what a run was before states were sampled).
    pub fn describe(&self) -> Option<String> {
        let copies = if self.copies > 0 {
            format!(
                " ({} cop{} of a state counted once)",
                self.copies,
                if self.copies == 1 { "y" } else { "ies" }
            )
        } else {
            String::new()
        };
        match (self.sampled, self.fixed) {
            (0, 0) => None,
            // One state, no copies: what a run always was; nothing to say.
            (0, _) if self.copies == 0 => None,
            (s, 0) => Some(format!("{s} sampled state{}{copies}", plural(s))),
            (0, f) => Some(format!(
                "{f} repetition{} from one state (fixed){copies}",
                plural(f)
            )),
            (s, f) => Some(format!(
                "{s} sampled state{} and {f} repetition{} from one state{copies}",
                plural(s),
                plural(f)
            )),
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

impl Samples {
    pub fn from_runs(label: &str, runs: &[RunDocument]) -> Samples {
        let mut s = Samples {
            label: label.to_string(),
            runs: runs.len(),
            ..Default::default()
        };
        let mut seen = BTreeSet::new();
        // The states counted and those seen again (by seed, or a fixed boot's place).
        let (mut counted, mut copied) = (BTreeSet::new(), BTreeSet::new());
        for r in runs {
            s.started.push(r.started_at.clone());
            s.kernels.insert(r.host.kernel_release.clone());
            s.filesystems.insert(r.testbed.fs.clone());
            s.emulated |= r.host.emulated;
            let timebase = r.host.timebase();
            s.timebases.insert(timebase.clone());
            let mut block: BTreeMap<CaseKey, Vec<f64>> = BTreeMap::new();
            for c in r.cases.iter().filter(|c| !c.warmup) {
                block
                    .entry(CaseKey::of(&r.signature.name, c))
                    .or_default()
                    .push(c.wall_ns as f64 / 1e6);
            }
            for (key, walls) in block {
                s.blocks
                    .entry(key)
                    .or_default()
                    .push(crate::stats::summary::median_of(&walls));
            }
            for c in r.cases.iter().filter(|c| !c.warmup) {
                let key = CaseKey::of(&r.signature.name, c);
                if timebase.deterministic() {
                    // A state is counted once: its seed (or, fixed, its place in a boot)
                    // and what it measured, seen before for this case, is a copy.
                    let id = (c.state, c.state.is_none().then_some((r.id.clone(), c.rep)));
                    let state = (c.state, c.state.is_none().then_some(c.rep), c.wall_ns);
                    if !seen.insert((key.clone(), state)) {
                        copied.insert((r.id.clone(), c.rep));
                        continue;
                    }
                    counted.insert(id);
                }
                if let Some(share) = busy_share(c, &timebase) {
                    let b = s.busy.entry(key.clone()).or_default();
                    b.windows += 1;
                    b.busy += usize::from(share >= BUSY_WINDOW_SHARE);
                    b.worst = b.worst.max(share);
                }
                let metrics = s.cases.entry(key.clone()).or_default();
                let already = metrics.get(&Metric::wall()).map_or(0, Vec::len);
                // Kernel deltas are stored only when non-zero: earlier samples missing a
                // metric had 0.
                for (name, value) in metrics_of(c) {
                    let e = metrics.entry(name).or_insert_with(|| vec![0.0; already]);
                    e.push(value);
                }
                for (metric, values) in metrics.iter_mut() {
                    let kind = metric.kind();
                    if values.len() == already && matches!(kind, Kind::Kernel | Kind::Profile) {
                        values.push(0.0);
                    }
                }
                if let Some(ProfileReading::Sampled(p)) = &c.profile {
                    let per = s.profile_steps.entry(key.clone()).or_default();
                    let span = |st: &BTreeMap<String, u64>, wall_ms: f64| ProfileSpan {
                        samples: st.values().sum::<u64>() as f64,
                        wall_ms,
                    };
                    per.entry(None)
                        .or_default()
                        .push(span(&p.stacks(), c.wall_ns as f64 / 1e6));
                    if p.phases.len() > 1 {
                        for ph in &p.phases {
                            per.entry(Some(ph.name.clone()))
                                .or_default()
                                .push(span(&ph.stacks, phase_wall_ms(c, &ph.name)));
                        }
                    }
                }
                s.first_wall.entry(key).or_insert(c.wall_ns as f64 / 1e6);
            }
        }
        s.states = States {
            sampled: counted.iter().filter(|(seed, _)| seed.is_some()).count(),
            fixed: counted.iter().filter(|(seed, _)| seed.is_none()).count(),
            copies: copied.len(),
        };
        s
    }
}

#[cfg(test)]
mod signature_tests {
    use super::*;
    use model::results::fixtures;

    /// Issue 39, 11: runs of a minimized signature (same name, other content) compared
    /// with the original's reported "0.31× time" without a word.
    #[test]
    fn same_name_different_content_is_found() {
        let a = fixtures::doc("a", &[1.0], &[0]);
        let mut b = fixtures::doc("b", &[1.0], &[0]);
        assert!(
            signature_mismatches(&[("a".into(), vec![a.clone()]), ("b".into(), vec![b.clone()])])
                .is_empty()
        );
        b.signature.sha256 = "f".repeat(64);
        let found = signature_mismatches(&[("a".into(), vec![a]), ("b".into(), vec![b])]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("differs between labels") && found[0].contains("ffffffffffff"),
            "{}",
            found[0]
        );
    }
}

#[cfg(test)]
mod state_tests {
    use super::*;
    use model::results::fixtures;

    fn icount(walls: &[f64], states: Option<&[u64]>, id: &str) -> RunDocument {
        let mut d = fixtures::doc("l", walls, &vec![0; walls.len()]);
        d.id = id.into();
        d.host.clock = Some(model::clock::Clock {
            kind: model::clock::ClockKind::Icount,
            shift: Some(0),
            qemu: Some("7.2.22".into()),
            cpu: Some("max".into()),
            cost_model: None,
            boot: None,
        });
        if let Some(s) = states {
            for (c, &seed) in d.cases.iter_mut().zip(s) {
                c.state = Some(seed);
            }
        }
        d
    }

    /// Issue 57: under the icount clock, a repetition that repeats a state already
    /// counted is a copy: three boots of the fixed state, each with the same three values,
    /// are three samples, not nine; sampled states with the same seed likewise; distinct
    /// seeds are distinct states even where their values happen to agree. On the host's
    /// clock nothing is a copy.
    #[test]
    fn copies_of_a_state_count_once() {
        let w = [62.1, 62.2, 62.3];
        let fixed: Vec<RunDocument> = (0..3).map(|k| icount(&w, None, &format!("f{k}"))).collect();
        let s = Samples::from_runs("l", &fixed);
        let key = s.cases.keys().next().unwrap().clone();
        assert_eq!(s.cases[&key][&Metric::wall()].len(), 3);
        assert_eq!((s.states.fixed, s.states.copies), (3, 6));
        assert!(
            s.states.describe().unwrap().contains("6 copies"),
            "{:?}",
            s.states
        );
        let seeds = [1, 2, 3];
        let sampled = [
            icount(&w, Some(&seeds), "s0"),
            icount(&w, Some(&seeds), "s1"),
        ];
        let s = Samples::from_runs("l", &sampled);
        assert_eq!(s.cases[&key][&Metric::wall()].len(), 3);
        assert_eq!((s.states.sampled, s.states.copies), (3, 3));
        let same = [62.1; 3];
        let s = Samples::from_runs("l", &[icount(&same, Some(&seeds), "d")]);
        assert_eq!(s.cases[&key][&Metric::wall()].len(), 3);
        let host: Vec<RunDocument> = (0..3).map(|_| fixtures::doc("l", &w, &[0; 3])).collect();
        let s = Samples::from_runs("l", &host);
        assert_eq!(s.cases[&key][&Metric::wall()].len(), 9);
        assert_eq!(s.states, States::default());
    }
}
