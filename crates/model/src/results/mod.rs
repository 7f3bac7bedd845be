//! The results of a run: the versioned JSON document (docs/json.md) with raw samples,
//! counters and the metadata needed to compare runs from different machines.

mod machine;
mod profile;
mod readings;
mod window;

pub use machine::{Frequency, Host};
pub use profile::{
    FunctionShare, LISTED_PCT, PhaseProfile, Profile, ProfileReading, fold_symbol, folded_stacks,
    shares,
};
pub use readings::{Counter, Cpu, Load, Reading, SlabDelta};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
pub use window::{ClientResult, OpLatency, Tick};

/// `schema` of every run document.
pub const SCHEMA: &str = "sigbench.run";
/// Bumped on any incompatible change of the document; docs/json.md lists the versions.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RunDocument {
    pub schema: String,
    pub version: u32,
    /// Unique id of the run (a UUID), so runs merged from several machines stay distinct.
    #[serde(default)]
    pub id: String,
    /// What `compare` calls the run's results: `--label`, by default the kernel release.
    #[serde(default)]
    pub label: String,
    pub tool: Tool,
    /// `complete`, `interrupted` or `failed`; `error` says why when not complete.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
    pub started_at: String,
    pub host: Host,
    pub signature: SignatureMeta,
    pub testbed: TestbedMeta,
    pub plan: PlanMeta,
    pub cases: Vec<CaseResult>,
    pub warnings: Vec<String>,
    /// Peak resident memory of sigbench over the run.
    pub peak_rss_kib: u64,
    /// `I/S` when the run is slice I of a plan split into S (`run --slice`, `submit`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub slice: Option<String>,
    /// The Slurm job that ran it (`JOBID_TASK` of a job array).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub slurm_job: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Tool {
    pub name: String,
    pub version: String,
    /// The binary's GNU build ID (hexadecimal): two builds of one version are two
    /// executors. Absent in documents before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
}

/// What of a plan makes a series of stored runs (`watch`, `bisect --resume`, the site):
/// the signature (its name and digest), the filesystem, the directories and N. A run
/// document has one ([`RunDocument::series_plan`]), and so has a plan about to run
/// (measure's `Plan::series_plan`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeriesPlan {
    pub signature: String,
    pub sha256: String,
    pub fs: String,
    pub dirs: Vec<String>,
    pub n: Vec<u64>,
}

impl SeriesPlan {
    /// The same plan, whatever the signature is called: its digest decides.
    pub fn same_as(&self, other: &SeriesPlan) -> bool {
        self.sha256 == other.sha256
            && self.fs == other.fs
            && self.dirs == other.dirs
            && self.n == other.n
    }
}

impl RunDocument {
    /// What of its plan makes its series.
    pub fn series_plan(&self) -> SeriesPlan {
        SeriesPlan {
            signature: self.signature.name.clone(),
            sha256: self.signature.sha256.clone(),
            fs: self.testbed.fs.clone(),
            dirs: self.plan.dirs.clone(),
            n: self.plan.n.clone(),
        }
    }

    /// The options that give this run's plan: `--fs FS -n N… [--dir DIR]…`.
    pub fn plan_words(&self) -> Vec<String> {
        let n: Vec<String> = self.plan.n.iter().map(u64::to_string).collect();
        let mut c: Vec<String> = vec![
            "--fs".into(),
            self.testbed.fs.clone(),
            "-n".into(),
            n.join(","),
        ];
        for dir in &self.plan.dirs {
            c.extend(["--dir".to_string(), dir.clone()]);
        }
        c
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SignatureMeta {
    pub name: String,
    pub origin: String,
    pub sha256: String,
    /// The signature file, verbatim, so the run can be replayed from the document alone.
    pub source: String,
    /// The dbench loadfile a loadfile signature replayed (too large to keep verbatim).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub loadfile: Option<LoadfileMeta>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LoadfileMeta {
    pub path: String,
    pub sha256: String,
    /// Lines of the file, and the operations among them.
    pub lines: u64,
    pub operations: u64,
}

/// A run for a time: the time asked for and the warm-up before it.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct TimeMeta {
    pub time_ns: u64,
    pub warmup_ns: u64,
}

/// What a case with clients, for a time or of a loadfile got done over its window.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct Throughput {
    /// Operations: syscalls of a signature, operations of a loadfile.
    pub ops: u64,
    /// Bytes the reads and writes asked for (ReadX + WriteX sizes for a loadfile).
    pub bytes: u64,
    pub ops_per_s: f64,
    /// `bytes` / 1e6 / the window's seconds: dbench's "Throughput … MB/sec".
    pub mb_per_s: f64,
    /// The longest single operation.
    pub max_latency_ns: u64,
    /// Passes over the work completed, summed over the clients.
    pub passes: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct TestbedMeta {
    pub fs: String,
    pub mkfs_version: Option<String>,
    pub mkfs_opts: Vec<String>,
    pub mount_opts: String,
    pub device_kind: String,
    pub device: String,
    pub device_bytes: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PlanMeta {
    pub n: Vec<u64>,
    pub repetitions: u32,
    pub warmup: u32,
    /// Each window waited for a quiet machine and a timer tick (`run --settle`).
    #[serde(default)]
    pub settle: bool,
    pub seed: u64,
    /// `interleaved` (repetition-major) or `shuffled`.
    pub order: String,
    pub dirs: Vec<String>,
    /// Probes as requested (`name=source`).
    pub probes: Vec<String>,
    /// `--clients`: the K values of the cases (absent: one client in the test directory).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub clients: Option<Vec<u32>>,
    /// `--time`: a run for a time.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub time: Option<TimeMeta>,
    /// The run spec the plan was made from, resolved (`plan::spec::RunSpec::resolved` of
    /// the measuring layer: what `sigbench run` needs to make the same plan again; absent
    /// in documents written before sigbench 0.1 kept it).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub spec: Option<serde_json::Value>,
}

/// One measured case: a directory at one N, one repetition, on a fresh filesystem.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CaseResult {
    pub dir: String,
    pub n: u64,
    /// 1-based; warm-ups are numbered separately and flagged.
    pub rep: u32,
    pub warmup: bool,
    pub path: String,
    pub wall_ns: u64,
    pub calls: u64,
    pub cpu: Cpu,
    pub counters: Vec<Counter>,
    pub latency: Vec<OpLatency>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub vmstat: Option<BTreeMap<String, i64>>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub slabinfo: Option<Vec<SlabDelta>>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub blockstat: Option<BTreeMap<String, i64>>,
    /// Each phase's time (summed over rounds) and, for signatures whose evidence is the
    /// slab caches, its slab changes.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub phases: Vec<PhaseResult>,
    /// Where the window's time went, function by function (`--profile`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub profile: Option<ProfileReading>,
    /// K clients ran at once (`--clients`; absent: one, in the test directory).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub clients: Option<u32>,
    /// The case ran for a time.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub time: Option<TimeMeta>,
    /// Operations, bytes and their rates (with clients, for a time, or of a loadfile).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub throughput: Option<Throughput>,
    /// A loadfile's latency table: per operation as dbench names its rows (`NTCreateX`,
    /// `Qpathinfo` …), each timed with the lookups dbench does for it.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub operations: Vec<OpLatency>,
    /// Each client's share, CPU and time off the CPU (with clients, for a time, or of a
    /// loadfile).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub per_client: Vec<ClientResult>,
    /// A run for a time: one entry a second, cumulative since the window opened.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub ticks: Vec<Tick>,
    /// What else the machine did during the window (CPU pressure, steal).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub load: Option<Load>,
    /// What the cost model counted in the window (a guest with the model): instructions,
    /// memory accesses and cache misses, from which `cost_ms` is priced.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cost: Option<sigbench_cost::Counters>,
    /// The seed of the state of the machine the case started from (a guest booted in it:
    /// `run --state SEED` runs it again, to the digit); absent where the states were not
    /// sampled (`--states fixed`, the host's clock).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub state: Option<u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PhaseResult {
    pub name: String,
    pub wall_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub slabinfo: Option<Vec<SlabDelta>>,
    /// What the cost model counted in the phase (its rounds summed).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cost: Option<sigbench_cost::Counters>,
}

/// Several runs in one file: what `sigbench export` writes and `import` reads.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Export {
    pub schema: String,
    pub version: u32,
    pub runs: Vec<RunDocument>,
}

/// `schema` of an export.
pub const EXPORT_SCHEMA: &str = "sigbench.export";

/// The longest label a run may have, in characters: a label is a name (a kernel
/// release, `nightly-2026-11-25`, a commit), shown in tables, reports and commands.
pub const MAX_LABEL: usize = 200;

/// Refuse a label sigbench cannot show or keep: longer than [`MAX_LABEL`], or holding a
/// control character (a newline would forge a line in every report, an escape sequence
/// would drive the reader's terminal).
pub fn check_label(label: &str) -> anyhow::Result<()> {
    let n = label.chars().count();
    if n > MAX_LABEL {
        anyhow::bail!("a label of {n} characters: at most {MAX_LABEL}");
    }
    check_text(label).map_err(|e| {
        anyhow::anyhow!(
            "the label `{}` holds {e}: use printable characters",
            crate::shell::escape_controls(label, &[])
        )
    })
}

/// Text that displays as it reads: no control character but those in `keep`, no
/// bidirectional formatting character. The error names the character.
pub fn check_text_keeping(text: &str, keep: &[char]) -> Result<(), String> {
    match text
        .chars()
        .find(|&c| crate::shell::is_hidden(c) && !keep.contains(&c))
    {
        Some(c) => Err(format!(
            "the {} character {}",
            if c.is_control() {
                "control"
            } else {
                "bidirectional formatting"
            },
            c.escape_default().to_string().replace("\\u{", "\\x{")
        )),
        None => Ok(()),
    }
}

fn check_text(text: &str) -> Result<(), String> {
    check_text_keeping(text, &[])
}

/// The largest magnitude a fractional number in an imported document may have: beyond
/// any time, rate or size a run measures, and far below what prints as a 300-digit
/// number.
pub const MAX_IMPORTED_NUMBER: f64 = 1e18;

/// Every field of an imported run (its JSON, at `path`): text that displays as it reads
/// (the signature's source may have line breaks and tabs), numbers a measurement can have.
fn check_fields(v: &serde_json::Value, path: &mut String) -> Result<(), String> {
    use serde_json::Value;
    match v {
        Value::String(s) => {
            let keep: &[char] = if path == "signature.source" {
                &['\n', '\t']
            } else {
                &[]
            };
            check_text_keeping(s, keep).map_err(|e| format!("field `{path}` holds {e}"))
        }
        // Integers (counts, ids, seeds) are exact; a fraction as large as no measurement
        // is (a 1e308 MB/s) would print as 300 digits.
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(()),
        Value::Number(n) => match n.as_f64() {
            Some(x) if x.abs() <= MAX_IMPORTED_NUMBER => Ok(()),
            _ => Err(format!(
                "field `{path}`: {n} is beyond any measurement (at most {MAX_IMPORTED_NUMBER:e})"
            )),
        },
        Value::Array(a) => {
            for (k, x) in a.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{k}]"));
                check_fields(x, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Object(o) => {
            for (key, x) in o {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&crate::shell::escape_controls(key, &[]));
                check_fields(x, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Null | Value::Bool(_) => Ok(()),
    }
}

/// Read a run document or an export from JSON text.
pub fn parse_documents(text: &str, origin: &str) -> anyhow::Result<Vec<RunDocument>> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| anyhow::anyhow!("{origin}: not JSON: {e}"))?;
    let schema = v
        .get("schema")
        .and_then(|s| s.as_str())
        .unwrap_or_default()
        .to_string();
    let version = v.get("version").and_then(|s| s.as_u64()).unwrap_or(0);
    if version > SCHEMA_VERSION as u64 {
        anyhow::bail!(
            "{origin}: {schema} version {version} is newer than this sigbench reads ({SCHEMA_VERSION}); upgrade sigbench"
        );
    }
    // Every field of every run, as one run or an export's list: text that displays as it
    // reads, numbers a measurement can have.
    let each: Vec<&serde_json::Value> = match schema.as_str() {
        SCHEMA => vec![&v],
        _ => v
            .get("runs")
            .and_then(|r| r.as_array())
            .map(|r| r.iter().collect())
            .unwrap_or_default(),
    };
    for (k, r) in each.iter().enumerate() {
        check_fields(r, &mut String::new())
            .map_err(|e| anyhow::anyhow!("{origin}: run {}: {e}", k + 1))?;
    }
    let runs = match schema.as_str() {
        SCHEMA => vec![serde_json::from_value(v).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?],
        EXPORT_SCHEMA => {
            // Each run inside carries its own version: a newer run inside an older export
            // is as unreadable as a newer export.
            if let Some(runs) = v.get("runs").and_then(|r| r.as_array()) {
                for (k, r) in runs.iter().enumerate() {
                    let rv = r.get("version").and_then(|s| s.as_u64()).unwrap_or(0);
                    if rv > SCHEMA_VERSION as u64 {
                        anyhow::bail!(
                            "{origin}: run {} has document version {rv}, newer than this sigbench reads ({SCHEMA_VERSION}); upgrade sigbench",
                            k + 1
                        );
                    }
                }
            }
            // Run by run, so an error names the run as well as the field.
            let Some(runs) = v.get("runs").and_then(|r| r.as_array()) else {
                anyhow::bail!("{origin}: an export without its `runs` list");
            };
            runs.iter()
                .enumerate()
                .map(|(k, r)| {
                    serde_json::from_value::<RunDocument>(r.clone())
                        .map_err(|e| anyhow::anyhow!("{origin}: run {}: {e}", k + 1))
                })
                .collect::<anyhow::Result<Vec<_>>>()?
        }
        other => anyhow::bail!("{origin}: not a sigbench document (schema `{other}`)"),
    };
    for (k, r) in runs.iter().enumerate() {
        check_label(&r.label)
            .map_err(|e| anyhow::anyhow!("{origin}: run {}: field `label`: {e}", k + 1))?;
    }
    Ok(runs)
}

impl CaseResult {
    pub fn counter(&self, name: &str) -> Option<&Counter> {
        self.counters.iter().find(|c| c.name == name)
    }
}

/// The machine a run was measured on (for a guest: the host it ran on).
pub fn machine(doc: &RunDocument) -> &str {
    &doc.host.hostname
}

/// Keep the runs measured on one of `machines` (all of them when empty).
pub fn on_machines(runs: Vec<RunDocument>, machines: &[String]) -> Vec<RunDocument> {
    if machines.is_empty() {
        return runs;
    }
    runs.into_iter()
        .filter(|d| machines.iter().any(|m| m == machine(d)))
        .collect()
}

/// A label's runs split by machine, as `LABEL@HOST` (one set when all ran on one machine).
pub fn split_by_machine(label: &str, runs: Vec<RunDocument>) -> Vec<(String, Vec<RunDocument>)> {
    let mut sets: Vec<(String, Vec<RunDocument>)> = Vec::new();
    for d in runs {
        let name = format!("{label}@{}", machine(&d));
        match sets.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => v.push(d),
            None => sets.push((name, vec![d])),
        }
    }
    sets
}

/// What `of` names in each label's runs (its machine, its build), said per label as
/// `show` shortens it — "`a` on n1, `b` on n2" with `word` between — when the labels
/// together name more than one (or one label several). Runs that name none are not judged.
fn labels_apart(
    sets: &[(String, Vec<RunDocument>)],
    of: fn(&RunDocument) -> Option<&str>,
    show: fn(&str) -> &str,
    word: &str,
) -> Option<String> {
    let per: Vec<(&str, std::collections::BTreeSet<&str>)> = sets
        .iter()
        .map(|(l, runs)| (l.as_str(), runs.iter().filter_map(&of).collect()))
        .collect();
    let all: std::collections::BTreeSet<&str> =
        per.iter().flat_map(|(_, b)| b.iter().copied()).collect();
    if all.len() <= 1 {
        return None;
    }
    let said: Vec<String> = per
        .iter()
        .filter(|(_, b)| !b.is_empty())
        .map(|(l, b)| {
            let names: Vec<&str> = b.iter().map(|n| show(n)).collect();
            format!("`{l}` {word} {}", names.join(" and "))
        })
        .collect();
    Some(said.join(", "))
}

/// A warning when labels were measured on different machines (or one label on several):
/// part of a difference may then be the machines'.
pub fn machines_warning(sets: &[(String, Vec<RunDocument>)]) -> Option<String> {
    let said = labels_apart(sets, |d| Some(machine(d)), |m| m, "on")?;
    Some(format!(
        "the labels were not all measured on one machine ({said}): part of a difference may be the machines' (--machine HOST keeps one, --by-machine compares them apart)"
    ))
}

/// A warning when labels were measured by different builds of sigbench (or one label by
/// several): the executor's code and where it lies differ, which under the icount clock
/// and the cost model alone moves instructions and cache misses — a comparison should
/// differ by the kernel only. Documents that name no build are not judged.
pub fn builds_warning(sets: &[(String, Vec<RunDocument>)]) -> Option<String> {
    let said = labels_apart(
        sets,
        |d| d.tool.build.as_deref(),
        |b| crate::text::head(b, 12),
        "by",
    )?;
    Some(format!(
        "the labels were not all measured by one build of sigbench ({said}): another build is another executor, which alone moves instructions and the cost model's misses; measure every label with one binary"
    ))
}

/// Synthetic documents for the unit tests of everything that reads results.
/// The sampled kernel call stacks of one case across labels (`--profile`): the first
/// directory at the largest N the first label profiled, each label's folded stacks summed
/// over its repetitions — what flame graphs are drawn from.
#[derive(Clone, Debug, PartialEq)]
pub struct Profiles {
    pub dir: String,
    pub n: u64,
    /// The sampling rate (of the last repetition read).
    pub hz: u64,
    /// Per label that has samples: its name, folded stacks (`a;b;c` → samples) and the
    /// repetitions summed.
    pub labels: Vec<(String, BTreeMap<String, u64>, usize)>,
}

/// The profiles of `sets` (label, its runs), or None when the first label profiled no
/// case.
pub fn profiles(sets: &[(String, Vec<RunDocument>)]) -> Option<Profiles> {
    let profiled = |d: &RunDocument| -> Vec<(String, u64)> {
        d.cases
            .iter()
            .filter(|c| !c.warmup && matches!(c.profile, Some(ProfileReading::Sampled(_))))
            .map(|c| (c.dir.clone(), c.n))
            .collect()
    };
    let (_, first) = sets.first()?;
    let cases: Vec<(String, u64)> = first.iter().flat_map(profiled).collect();
    let max_n = cases.iter().map(|c| c.1).max()?;
    let (dir, n) = cases.into_iter().find(|c| c.1 == max_n)?;
    let mut hz = 0;
    let labels = sets
        .iter()
        .map(|(label, runs)| {
            let mut stacks: BTreeMap<String, u64> = BTreeMap::new();
            let mut reps = 0;
            for c in runs.iter().flat_map(|d| &d.cases) {
                if let (false, true, Some(ProfileReading::Sampled(p))) =
                    (c.warmup, c.dir == dir && c.n == n, &c.profile)
                {
                    reps += 1;
                    hz = p.hz;
                    for (s, k) in p.stacks() {
                        *stacks.entry(s).or_default() += k;
                    }
                }
            }
            (label.clone(), stacks, reps)
        })
        .filter(|(_, s, _)| !s.is_empty())
        .collect();
    Some(Profiles { dir, n, hz, labels })
}

#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures {
    use super::*;

    /// A synthetic machine whose kernel release is `release`.
    pub fn host(release: &str) -> Host {
        Host {
            hostname: "h".into(),
            kernel_release: release.into(),
            kernel_version: String::new(),
            kernel_cmdline: String::new(),
            arch: "x86_64".into(),
            cpu_model: String::new(),
            cpus: 2,
            mem_total_kib: 0,
            emulated: false,
            accelerator: None,
            clock: None,
            kernel_image: None,
            frequency: None,
        }
    }

    /// A run labelled `l` on kernel `kernel`: three repetitions of `wall` ms with
    /// `maple` maple_node objects each (a point of a series over kernels).
    pub fn on_kernel(kernel: &str, wall: f64, maple: i64) -> RunDocument {
        let mut d = doc("l", &[wall; 3], &[maple; 3]);
        d.host.kernel_release = kernel.into();
        d
    }

    /// Repetition `k` (from 0) of [`doc`]'s case: `w` ms, `m` maple_node objects made in
    /// its create phase.
    fn case(k: usize, w: f64, m: i64) -> CaseResult {
        CaseResult {
            profile: None,
            clients: None,
            time: None,
            throughput: None,
            operations: vec![],
            per_client: vec![],
            ticks: vec![],
            load: None,
            cost: None,
            state: None,
            dir: "churn".into(),
            n: 20000,
            rep: k as u32 + 1,
            warmup: false,
            path: "/mnt/churn".into(),
            wall_ns: (w * 1e6) as u64,
            calls: 40000,
            cpu: Cpu::default(),
            counters: vec![],
            latency: vec![],
            vmstat: None,
            slabinfo: Some(vec![SlabDelta {
                cache: "dentry".into(),
                active_objs: 3 + k as i64,
                num_objs: 0,
                pages: 0,
            }]),
            blockstat: None,
            phases: vec![
                PhaseResult {
                    name: "create".into(),
                    wall_ns: (w * 0.6e6) as u64,
                    slabinfo: Some(
                        [("maple_node", m), ("kmalloc-64", 5 - k as i64)]
                            .iter()
                            .filter(|(_, v)| *v != 0)
                            .map(|(c, v)| SlabDelta {
                                cache: c.to_string(),
                                active_objs: *v,
                                num_objs: 0,
                                pages: 0,
                            })
                            .collect(),
                    ),
                    cost: None,
                },
                PhaseResult {
                    name: "delete".into(),
                    wall_ns: (w * 0.4e6) as u64,
                    slabinfo: Some(vec![]),
                    cost: None,
                },
            ],
        }
    }

    /// A synthetic run: one case per repetition with the given wall times, a `create` and a
    /// `delete` phase, and maple_node's create-phase change per repetition.
    pub fn doc(label: &str, walls: &[f64], maple: &[i64]) -> RunDocument {
        let cases = walls
            .iter()
            .zip(maple)
            .enumerate()
            .map(|(k, (&w, &m))| case(k, w, m))
            .collect();
        RunDocument {
            schema: crate::results::SCHEMA.into(),
            version: 1,
            id: label.into(),
            label: label.into(),
            tool: Tool {
                name: "sigbench".into(),
                version: "test".into(),
                build: None,
            },
            status: "complete".into(),
            error: None,
            started_at: "2026-11-23T00:00:00Z".into(),
            host: host(label),
            signature: SignatureMeta {
                name: "lkp-churn".into(),
                origin: "builtin".into(),
                sha256: String::new(),
                source: String::new(),
                loadfile: None,
            },
            testbed: TestbedMeta {
                fs: "tmpfs".into(),
                ..Default::default()
            },
            plan: PlanMeta {
                n: vec![20000],
                repetitions: walls.len() as u32,
                warmup: 0,
                settle: false,
                seed: 1,
                order: "interleaved".into(),
                dirs: vec!["churn".into()],
                probes: vec![],
                clients: None,
                time: None,
                spec: None,
            },
            cases,
            warnings: vec![],
            peak_rss_kib: 0,
            slice: None,
            slurm_job: None,
        }
    }

    /// A counter as a probe reports it (None: unavailable).
    pub fn counter(name: &str, value: Option<u64>) -> Counter {
        Counter {
            name: name.into(),
            probe: format!("tracepoint:test:{name}"),
            reading: match value {
                Some(value) => Reading::Counted {
                    value,
                    scope: "system-wide".into(),
                },
                None => Reading::Unavailable {
                    reason: "not here".into(),
                },
            },
        }
    }
}

#[cfg(test)]
mod machine_tests {
    use super::*;

    fn on(host: &str) -> RunDocument {
        let mut d = fixtures::doc("l", &[1.0], &[0]);
        d.host.hostname = host.into();
        d
    }

    #[test]
    fn tells_builds_apart() {
        let by = |build: Option<&str>| {
            let mut d = fixtures::doc("l", &[1.0], &[0]);
            d.tool.build = build.map(str::to_string);
            d
        };
        let (x, y) = ("d66f1794483ccb5ad1f0", "0123456789abcdef0123");
        let one = vec![
            ("a".to_string(), vec![by(Some(x)), by(None)]),
            ("b".to_string(), vec![by(Some(x))]),
        ];
        assert_eq!(builds_warning(&one), None, "one build, or none named");
        let two = vec![
            ("a".to_string(), vec![by(Some(x))]),
            ("b".to_string(), vec![by(Some(y)), by(None)]),
        ];
        let w = builds_warning(&two).unwrap();
        assert!(
            w.contains("(`a` by d66f1794483c, `b` by 0123456789ab)"),
            "{w}"
        );
        // A build read from an imported document may be any text: no panic inside a
        // character.
        let odd = vec![
            ("a".to_string(), vec![by(Some(x))]),
            ("b".to_string(), vec![by(Some("aaaaaaaaaaaéé"))]),
        ];
        assert!(
            builds_warning(&odd)
                .unwrap()
                .contains("`b` by aaaaaaaaaaaé)")
        );
        let mixed = vec![("a".to_string(), vec![by(Some(x)), by(Some(y))])];
        assert!(
            builds_warning(&mixed)
                .unwrap()
                .contains("`a` by 0123456789ab and d66f1794483c")
        );
    }

    #[test]
    fn tells_machines_apart() {
        let sets = vec![
            ("a".to_string(), vec![on("n1"), on("n1")]),
            ("b".to_string(), vec![on("n1")]),
        ];
        assert_eq!(machines_warning(&sets), None);
        let sets = vec![
            ("a".to_string(), vec![on("n1")]),
            ("b".to_string(), vec![on("n2")]),
        ];
        let w = machines_warning(&sets).unwrap();
        assert!(w.contains("`a` on n1, `b` on n2"), "{w}");
        let mixed = vec![("a".to_string(), vec![on("n1"), on("n2")])];
        assert!(machines_warning(&mixed).unwrap().contains("n1 and n2"));
        let split = split_by_machine("a", vec![on("n1"), on("n2"), on("n1")]);
        assert_eq!(
            split
                .iter()
                .map(|(l, r)| (l.as_str(), r.len()))
                .collect::<Vec<_>>(),
            [("a@n1", 2), ("a@n2", 1)]
        );
        assert_eq!(
            on_machines(vec![on("n1"), on("n2")], &["n2".into()]).len(),
            1
        );
    }
}

#[cfg(test)]
mod label_tests {
    use super::*;

    #[test]
    fn labels_are_bounded_and_printable() {
        assert!(check_label("6.1.0-56-amd64/ext4 w-$(x) ünï").is_ok());
        assert!(check_label(&"x".repeat(MAX_LABEL)).is_ok());
        let e = check_label(&"x".repeat(70_000)).unwrap_err().to_string();
        assert_eq!(e, "a label of 70000 characters: at most 200");
        let e = check_label("a\nBenchmarkX 1 1 ns/op")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`a\\nBenchmarkX 1 1 ns/op` holds the control character \\n"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    /// Issue 39, 20: import errors name the run and the field.
    #[test]
    fn an_import_error_names_the_run_and_the_field() {
        let mut v = serde_json::to_value(Export {
            schema: EXPORT_SCHEMA.into(),
            version: SCHEMA_VERSION,
            runs: vec![
                fixtures::doc("a", &[1.0], &[0]),
                fixtures::doc("b", &[1.0], &[0]),
            ],
        })
        .unwrap();
        v["runs"][1]["cases"][0]
            .as_object_mut()
            .unwrap()
            .remove("latency");
        let e = parse_documents(&v.to_string(), "x.json")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "x.json: run 2: missing field `latency`");
    }

    #[test]
    fn an_import_names_the_run_and_field_of_a_bad_label() {
        let mut d = fixtures::doc("l", &[1.0], &[0]);
        d.label = "y".repeat(300);
        let text = serde_json::to_string(&Export {
            schema: EXPORT_SCHEMA.into(),
            version: SCHEMA_VERSION,
            runs: vec![fixtures::doc("ok", &[1.0], &[0]), d],
        })
        .unwrap();
        let e = parse_documents(&text, "x.json").unwrap_err().to_string();
        assert_eq!(
            e,
            "x.json: run 2: field `label`: a label of 300 characters: at most 200"
        );
    }
}
