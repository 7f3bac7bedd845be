//! The run spec: what a user asks of a plan, as the command line gives it, and the plan it
//! makes: the signature by name or file, the filesystem, directories (the signature's
//! defaults minus those the filesystem cannot have), N values, repetitions, probes (the
//! filesystem's defaults unless left out). Everything is checked against the limits
//! before anything runs. A spec is data: a guest receives one as JSON in its initramfs
//! (`vm::boots`) and makes its plan from it as the host made its own.

use super::{Plan, TimeBound};
use crate::loadfile::Loadfile;
use crate::probe::ProbeSpec;
use crate::signature::{Signature, limits};
use crate::testbed::device::DeviceSpec;
use crate::testbed::{DirSpec, Fs, TestbedSpec, options};
use anyhow::{Result, bail};
use model::results::RunDocument;
use model::shell::CommandLine;
use std::path::PathBuf;
use std::time::Duration;

/// The plan's options as given (`sigbench run --help` says what each means).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    pub signature: String,
    pub rounds: Option<u32>,
    /// A plan measures one filesystem; more is an error here (`run` splits a list).
    pub fs: Vec<Fs>,
    pub dirs: Vec<String>,
    pub ns: Vec<u64>,
    pub repetitions: u32,
    pub device: String,
    pub mkfs_opts: String,
    pub mount_opts: String,
    pub force: bool,
    pub warmup: u32,
    pub shuffle: bool,
    pub seed: u64,
    pub probes: Vec<String>,
    pub no_default_probes: bool,
    pub settle: bool,
    pub op_log: Option<PathBuf>,
    /// `--profile[=HZ|apart|auto]`, as given.
    pub profile: Option<String>,
    /// `--clients K[,K…]` (empty: the signature's `clients`, else one client).
    pub clients: Vec<u32>,
    /// `--time SECONDS` and `--warmup-time SECONDS`.
    pub time: Option<f64>,
    pub warmup_time: Option<f64>,
    /// `--loadfile FILE`: another dbench loadfile for a loadfile signature.
    pub loadfile: Option<PathBuf>,
    /// `--states` / `--state SEED`: which states the repetitions start from.
    #[serde(default)]
    pub states: super::states::States,
    /// The number of the first repetition's state (repetitions added to a stored run).
    #[serde(default)]
    pub first_state: u32,
}

/// The probe every run with several clients (or of a loadfile) counts: how often a task
/// waited for a kernel lock (a tracepoint since Linux 5.19; unavailable on older kernels).
/// Besides it, the filesystem's own ([`Fs::contention_probes`]).
pub const CONTENTION_PROBE: &str = "lock_contention=?tracepoint:lock:contention_begin";

impl RunSpec {
    /// The plan (validated as far as it can be without a device).
    pub fn plan(&self) -> Result<Plan> {
        let mut sig = Signature::load(&self.signature)?;
        let loadfile = self.loadfile(&sig)?;
        if let Some(r) = self.rounds {
            sig.rounds = Self::rounds(r, loadfile.is_some())?;
        }
        let fs = match self.fs[..] {
            [fs] => fs,
            _ => bail!(
                "--fs {}: this command measures one filesystem (`run` and `submit` take several)",
                self.fs
                    .iter()
                    .map(|f| f.name())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        };
        let dirs = self.directories(&sig, fs)?;
        let time = self.time_bound(&sig, loadfile.is_some())?;
        let clients = self.clients(&sig)?;
        if self.op_log.is_some() && (loadfile.is_some() || clients.is_some() || time.is_some()) {
            bail!(
                "--op-log logs the steps of one client over N files: not with --clients, --time or a loadfile"
            );
        }
        let ns = self.n_values(&sig, loadfile.is_some(), time.is_some())?;
        if self.repetitions == 0 {
            bail!("-r: at least one repetition");
        }
        if self.repetitions > limits::MAX_REPETITIONS {
            bail!(
                "-r {}: over the limit of {} repetitions (each is a fresh filesystem; docs/signatures.md, Limits)",
                self.repetitions,
                limits::MAX_REPETITIONS
            );
        }
        if self.first_state.checked_add(self.repetitions).is_none() {
            bail!(
                "--first-state {}: the states of {} repetitions after it are past the last ({})",
                self.first_state,
                self.repetitions,
                u32::MAX
            );
        }
        if self.warmup > limits::MAX_WARMUP {
            bail!(
                "--warmup {}: over the limit of {} warm-up repetitions (docs/signatures.md, Limits)",
                self.warmup,
                limits::MAX_WARMUP
            );
        }
        let profile = self
            .profile
            .as_deref()
            .map(|v| {
                v.parse::<crate::probe::profile::Rate>()
                    .map_err(|e| anyhow::anyhow!("--profile={v}: {e}"))
            })
            .transpose()?;
        let contended =
            loadfile.is_some() || clients.as_ref().is_some_and(|k| k.iter().any(|&k| k > 1));
        Ok(Plan {
            signature: sig,
            testbed: self.testbed(fs)?,
            dirs,
            n_values: ns,
            repetitions: self.repetitions,
            warmup: self.warmup,
            shuffle: self.shuffle,
            seed: self.seed,
            probes: self.probe_specs(fs, contended)?,
            settle: self.settle,
            op_log: self.op_log.clone(),
            profile,
            clients,
            time,
            loadfile,
            states: self.states,
            first_state: self.first_state,
        })
    }

    /// `--rounds R`, checked: a signature's phases R times (a loadfile has none).
    fn rounds(r: u32, loadfile: bool) -> Result<u32> {
        if loadfile {
            bail!(
                "--rounds repeats a signature's phases: a loadfile has none (-n counts its passes)"
            );
        }
        if r == 0 {
            bail!("--rounds: at least one round");
        }
        if r > limits::MAX_ROUNDS {
            bail!("--rounds {r}: over the limit of {}", limits::MAX_ROUNDS);
        }
        Ok(r)
    }

    /// The N values: `-n`, checked, or the signature's default (0 for a loadfile run for a
    /// time, which counts no passes).
    fn n_values(&self, sig: &Signature, loadfile: bool, timed: bool) -> Result<Vec<u64>> {
        if self.ns.contains(&0) {
            bail!(
                "-n: the number of {} must be at least 1",
                if loadfile { "passes" } else { "files" }
            );
        }
        let ns = if self.ns.is_empty() {
            vec![if loadfile && timed { 0 } else { sig.default_n }]
        } else {
            self.ns.clone()
        };
        if let Some(&n) = ns.iter().find(|&&n| n > limits::MAX_N) {
            bail!(
                "-n {n}: over the limit of {} files per case (docs/signatures.md, Limits)",
                limits::MAX_N
            );
        }
        Ok(ns)
    }

    /// The testbed: the filesystem with its mkfs and mount options, checked, on the device.
    fn testbed(&self, fs: Fs) -> Result<TestbedSpec> {
        let mkfs_opts = options::mkfs_options(fs, &self.mkfs_opts)?;
        options::mount_options(&self.mount_opts)?;
        Ok(TestbedSpec {
            fs,
            device: DeviceSpec::parse(&self.device),
            mkfs_opts,
            mount_opts: self.mount_opts.clone(),
            force: self.force,
        })
    }

    /// The loadfile of a loadfile signature: `--loadfile`, else the signature's own (the
    /// distribution package's), compiled.
    fn loadfile(&self, sig: &Signature) -> Result<Option<Loadfile>> {
        let Some(own) = &sig.loadfile else {
            if let Some(f) = &self.loadfile {
                bail!(
                    "--loadfile {}: {} replays its own steps, not a dbench loadfile (run `dbench --loadfile FILE`)",
                    f.display(),
                    sig.name
                );
            }
            return Ok(None);
        };
        let path = match &self.loadfile {
            Some(f) => f.clone(),
            None => {
                let p = PathBuf::from(&own.dbench);
                if !p.exists() {
                    let install = match &own.package {
                        Some(pkg) => {
                            format!("install the `{pkg}` package (apt-get install {pkg}), or ")
                        }
                        None => String::new(),
                    };
                    bail!(
                        "{}: its loadfile {} is missing: {install}give one with --loadfile FILE",
                        sig.name,
                        own.dbench
                    );
                }
                p
            }
        };
        Ok(Some(Loadfile::read(&path)?))
    }

    /// `--time` (or the signature's `time` when neither it nor `-n` is given) and the
    /// warm-up before it (`--warmup-time`, a fifth of the time by default).
    fn time_bound(&self, sig: &Signature, loadfile: bool) -> Result<Option<TimeBound>> {
        let secs = |flag: &str, v: f64, zero_ok: bool| -> Result<Duration> {
            if !(v.is_finite() && (v > 0.0 || zero_ok && v == 0.0) && v <= limits::MAX_TIME_S) {
                bail!(
                    "{flag} {v}: give a number of seconds {} and at most {}",
                    if zero_ok { "from 0" } else { "above 0" },
                    limits::MAX_TIME_S
                );
            }
            Ok(Duration::from_secs_f64(v))
        };
        let time = match (self.time, sig.default_time) {
            (Some(t), _) => Some(secs("--time", t, false)?),
            (None, Some(t)) if self.ns.is_empty() => Some(secs("time", t, false)?),
            _ => None,
        };
        let Some(time) = time else {
            if let Some(w) = self.warmup_time {
                bail!("--warmup-time {w}: a warm-up comes before a run for a time: give --time");
            }
            return Ok(None);
        };
        if loadfile && !self.ns.is_empty() {
            bail!(
                "-n counts the passes over a loadfile and --time runs it until the time is up: give one or the other"
            );
        }
        let warmup = match self.warmup_time {
            Some(w) => secs("--warmup-time", w, true)?,
            None => time / 5,
        };
        Ok(Some(TimeBound { time, warmup }))
    }

    /// `--clients`, or the signature's `clients`.
    fn clients(&self, sig: &Signature) -> Result<Option<Vec<u32>>> {
        if self.clients.is_empty() {
            return Ok(sig.default_clients.map(|k| vec![k]));
        }
        for (i, &k) in self.clients.iter().enumerate() {
            if k == 0 {
                bail!("--clients 0: at least one client");
            }
            if k > limits::MAX_CLIENTS {
                bail!(
                    "--clients {k}: over the limit of {} clients (docs/signatures.md, Limits)",
                    limits::MAX_CLIENTS
                );
            }
            if self.clients[..i].contains(&k) {
                bail!("--clients {k} is given twice");
            }
        }
        crate::testbed::check_threads(self.clients.iter().copied().max().unwrap_or(1))?;
        Ok(Some(self.clients.clone()))
    }

    /// Directories for the run (`directories`).
    fn directories(&self, sig: &Signature, fs: Fs) -> Result<Vec<DirSpec>> {
        directories(&self.dirs, sig, fs)
    }

    /// The probes asked for, after the filesystem's defaults unless those are left out.
    fn probe_specs(&self, fs: Fs, contended: bool) -> Result<Vec<ProbeSpec>> {
        let mut specs: Vec<ProbeSpec> = self
            .probes
            .iter()
            .map(|p| ProbeSpec::parse(p))
            .collect::<Result<_>>()?;
        if !self.no_default_probes {
            for d in fs.default_probes().iter().rev() {
                let d = ProbeSpec::parse(d)?;
                if !specs
                    .iter()
                    .any(|s| s.source() == d.source() || s.name == d.name)
                {
                    specs.insert(0, d);
                }
            }
            if contended {
                for d in std::iter::once(&CONTENTION_PROBE).chain(fs.contention_probes()) {
                    let d = ProbeSpec::parse(d)?;
                    if !specs
                        .iter()
                        .any(|s| s.source() == d.source() || s.name == d.name)
                    {
                        specs.push(d);
                    }
                }
            }
        }
        Ok(specs)
    }
}

impl RunSpec {
    /// The spec of `plan` as it was resolved — its directories, N values and probes, the
    /// defaults included; the signature by its built-in name or its file — so that it makes
    /// the same plan again. What a guest receives (with its own paths for a signature file
    /// and a loadfile) and what a run document keeps (`PlanMeta::spec`). Host-only options
    /// (a device path, `--force`, `--op-log`) are not in it.
    pub fn resolved(plan: &Plan) -> RunSpec {
        let builtin = crate::signature::builtins()
            .iter()
            .any(|s| s.origin == plan.signature.origin);
        let t = &plan.testbed;
        let loadfile = plan.loadfile.as_ref();
        RunSpec {
            signature: if builtin {
                plan.signature.name.clone()
            } else {
                plan.signature.origin.clone()
            },
            rounds: loadfile.is_none().then_some(plan.signature.rounds),
            fs: vec![t.fs],
            dirs: plan.dirs.iter().map(|d| d.text.clone()).collect(),
            // A loadfile for a time counts no passes (its N is 0): no -n then.
            ns: if loadfile.is_some() && plan.time.is_some() {
                Vec::new()
            } else {
                plan.n_values.clone()
            },
            repetitions: plan.repetitions,
            device: t.device.arg(),
            mkfs_opts: t.mkfs_opts.join(" "),
            mount_opts: t.mount_opts.clone(),
            force: false,
            warmup: plan.warmup,
            shuffle: plan.shuffle,
            seed: plan.seed,
            // The plan's probes already include the defaults.
            probes: plan.probes.iter().map(|p| p.arg()).collect(),
            no_default_probes: true,
            settle: plan.settle,
            op_log: None,
            profile: plan.profile.map(|r| r.to_string()),
            clients: plan.clients.clone().unwrap_or_default(),
            time: plan.time.map(|b| b.time.as_secs_f64()),
            warmup_time: plan.time.map(|b| b.warmup.as_secs_f64()),
            loadfile: loadfile.map(|l| PathBuf::from(&l.path)),
            states: plan.states,
            first_state: plan.first_state,
        }
    }

    /// The `sigbench run` command that makes this spec's plan again, of `sig` (the
    /// signature it names, as the run document keeps it): the options whose values differ
    /// from what the signature and the filesystem give by default, so the command is as
    /// short as it can be and exact. Never a device path, `--force` or `--op-log`: a
    /// command to paste on another machine formats nothing there but a ramdisk. Every field
    /// is named here (a new one does not compile until it is said).
    pub fn command(&self, sig: &Signature) -> CommandLine {
        let mut w: Vec<String> = vec!["sigbench".into(), "run".into(), self.named()];
        w.extend(self.options(sig));
        CommandLine(w)
    }

    /// The signature as a command names it: a file whose name starts with `-` as `./-…`,
    /// which no option parser reads as an option.
    pub fn named(&self) -> String {
        if self.signature.starts_with('-') {
            format!("./{}", self.signature)
        } else {
            self.signature.clone()
        }
    }

    /// The options of [`RunSpec::command`], the words after the signature: what `bisect`
    /// and `minimize` take for the same plan.
    pub fn options(&self, sig: &Signature) -> Vec<String> {
        let RunSpec {
            signature: _,
            rounds,
            fs,
            dirs,
            ns,
            repetitions,
            device,
            mkfs_opts,
            mount_opts,
            force: _,
            warmup,
            shuffle,
            seed,
            probes,
            no_default_probes,
            settle,
            op_log: _,
            profile,
            clients,
            time,
            warmup_time,
            loadfile,
            states,
            // Which states a run sampled is not part of the plan a command makes again
            // (a bisect or a watch starts from the first); each case keeps its state's seed.
            first_state: _,
        } = self;
        let join = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
        let mut w: Vec<String> = Vec::new();
        let opt = |w: &mut Vec<String>, flag: &str, value: String| {
            w.push(flag.into());
            w.push(value);
        };
        opt(
            &mut w,
            "--fs",
            fs.iter().map(|f| f.name()).collect::<Vec<_>>().join(","),
        );
        let one_fs = fs.first().copied().unwrap_or(Fs::Btrfs);
        if rounds.is_some_and(|r| r != sig.rounds) {
            opt(&mut w, "--rounds", rounds.unwrap_or(1).to_string());
        }
        let default_dirs: Vec<String> = sig
            .default_dirs
            .iter()
            .filter(|d| DirSpec::parse(d, one_fs).is_ok())
            .cloned()
            .collect();
        if *dirs != default_dirs {
            for d in dirs {
                opt(&mut w, "--dir", d.clone());
            }
        }
        // -n when it is not the signature's, or when a run for the signature's time would
        // be made without it.
        let timed_by_default = sig.default_time.is_some() && time.is_none();
        if !ns.is_empty() && (*ns != [sig.default_n] || timed_by_default) {
            opt(&mut w, "-n", join(ns));
        }
        if *repetitions != 1 {
            opt(&mut w, "-r", repetitions.to_string());
        }
        // A RAM-backed device by name; never a path, which is a disk of this machine.
        if matches!(
            DeviceSpec::parse(device),
            DeviceSpec::Brd | DeviceSpec::Zram
        ) {
            opt(&mut w, "--device", device.clone());
        }
        if !mkfs_opts.is_empty() {
            opt(&mut w, "--mkfs-opts", mkfs_opts.clone());
        }
        if !mount_opts.is_empty() {
            opt(&mut w, "--mount-opts", mount_opts.clone());
        }
        if *warmup != 0 {
            opt(&mut w, "--warmup", warmup.to_string());
        }
        if *seed != super::DEFAULT_SEED {
            opt(&mut w, "--seed", seed.to_string());
        }
        if let Some(p) = profile {
            w.push(format!("--profile={p}"));
        }
        let default_clients: Vec<u32> = sig.default_clients.into_iter().collect();
        if *clients != default_clients {
            opt(
                &mut w,
                "--clients",
                clients
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            );
        }
        if let Some(t) = time
            && (Some(*t) != sig.default_time || !ns.is_empty())
        {
            opt(&mut w, "--time", t.to_string());
        }
        if let (Some(t), Some(wt)) = (time, warmup_time)
            && (wt - t / 5.0).abs() > 1e-9
        {
            opt(&mut w, "--warmup-time", wt.to_string());
        }
        let own_loadfile = sig.loadfile.as_ref().map(|l| PathBuf::from(&l.dbench));
        if let Some(l) = loadfile
            && Some(l) != own_loadfile.as_ref()
        {
            opt(&mut w, "--loadfile", l.display().to_string());
        }
        // The probes: none said when they are the defaults this plan takes.
        let contended = sig.loadfile.is_some() || clients.iter().any(|&k| k > 1);
        let defaults = RunSpec {
            probes: Vec::new(),
            no_default_probes: false,
            ..self.clone()
        }
        .probe_specs(one_fs, contended)
        .map(|v| v.iter().map(|p| p.arg()).collect::<Vec<_>>());
        let probes_as_given = if *no_default_probes {
            Some(probes.clone())
        } else {
            None
        };
        if probes_as_given.as_ref() != defaults.as_ref().ok() {
            if *no_default_probes {
                w.push("--no-default-probes".into());
            }
            for p in probes {
                w.push("--probe".into());
                w.push(p.clone());
            }
        }
        w.extend(states.words());
        if *shuffle {
            w.push("--shuffle".into());
        }
        if *settle {
            w.push("--settle".into());
        }
        w
    }
}

/// The `sigbench run` command that makes `doc`'s plan again: from the run spec it keeps,
/// else (a document written before specs were kept) from its plan's filesystem, N values
/// and directories.
/// `repetitions`: another number of them (a confirmation's).
pub fn reproduce(doc: &RunDocument, repetitions: Option<u32>) -> CommandLine {
    let named = match kept(doc, None) {
        Some((spec, _)) => spec.named(),
        None => doc.signature.name.clone(),
    };
    let mut w = vec!["sigbench".to_string(), "run".into(), named];
    w.extend(plan_options(doc, repetitions));
    CommandLine(w)
}

/// The options of [`reproduce`]: the words after the signature (what `bisect` takes too).
pub fn plan_options(doc: &RunDocument, repetitions: Option<u32>) -> Vec<String> {
    match kept(doc, repetitions) {
        Some((spec, sig)) => spec.options(&sig),
        None => {
            let mut w = doc.plan_words();
            if let Some(r) = repetitions {
                w.extend(["-r".to_string(), r.to_string()]);
            }
            w
        }
    }
}

/// The spec `doc` keeps, when it keeps one (documents written before sigbench kept specs
/// do not).
pub fn kept_spec(doc: &RunDocument) -> Option<RunSpec> {
    serde_json::from_value::<RunSpec>(doc.plan.spec.clone()?).ok()
}

/// The spec `doc` keeps (with `repetitions` when given) and its signature, when it keeps
/// one.
fn kept(doc: &RunDocument, repetitions: Option<u32>) -> Option<(RunSpec, Signature)> {
    let mut spec = kept_spec(doc)?;
    if let Some(r) = repetitions {
        spec.repetitions = r;
    }
    let sig = Signature::parse(&doc.signature.source, &doc.signature.origin).ok()?;
    Some((spec, sig))
}

/// Directories for a run of `sig` on `fs`: the user's (`--dir`, each once), or the
/// signature's defaults minus those this filesystem cannot have (with a note).
pub fn directories(given: &[String], sig: &Signature, fs: Fs) -> Result<Vec<DirSpec>> {
    if !given.is_empty() {
        let dirs: Vec<DirSpec> = given
            .iter()
            .map(|d| DirSpec::parse(d, fs))
            .collect::<Result<_>>()?;
        for (k, d) in dirs.iter().enumerate() {
            if dirs[..k].iter().any(|e| e.name == d.name) {
                bail!(
                    "--dir {} is given twice: each directory is a case of its own (use -r for repetitions)",
                    d.name
                );
            }
        }
        return Ok(dirs);
    }
    let mut dirs = Vec::new();
    let mut skipped = Vec::new();
    for d in &sig.default_dirs {
        match DirSpec::parse(d, fs) {
            Ok(spec) => dirs.push(spec),
            Err(_) => skipped.push(d.split(':').next().unwrap_or(d).to_string()),
        }
    }
    if !skipped.is_empty() {
        model::say!(
            "sigbench: {} cannot have the properties of {} (skipped; give --dir to choose)",
            fs.name(),
            skipped.join(", ")
        );
    }
    if dirs.is_empty() {
        bail!(
            "none of {}'s default directories works on {}: give --dir",
            sig.name,
            fs.name()
        );
    }
    Ok(dirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probes runs with clients add by default count the kernel's behaviour, not the
    /// workload's: each is named in `metric::KERNEL_WIDE_PROBES`, so it is compared as
    /// evidence and never alerts.
    #[test]
    fn default_contention_probes_are_kernel_wide_metrics() {
        for fs in Fs::ALL {
            for d in std::iter::once(&CONTENTION_PROBE).chain(fs.contention_probes()) {
                let name = ProbeSpec::parse(d).unwrap().name;
                assert!(
                    model::metric::KERNEL_WIDE_PROBES.contains(&name.as_str()),
                    "{fs:?}: {name} counts the kernel's behaviour but is not in KERNEL_WIDE_PROBES"
                );
            }
        }
    }
}
