//! Signatures: the workload, as data.
//!
//! A signature says what a program does to the files it touches: an untimed setup (make
//! sub-directories, populate N files, sync), an untimed prelude run once, and timed
//! **phases**. Each phase applies its steps to every selected file in turn before the next
//! phase starts: one phase is s3e's interleaved loop, several phases are what rpm and dpkg
//! do (write every new file, then rename every one into place, …).
//!
//! Signatures are TOML files (format described in docs/signatures.md); the built-in library
//! is the same files embedded in the binary. This module parses and validates them — every
//! error names the file and line — and owns nothing that touches a filesystem.

pub mod limits;
pub mod step;
pub mod syscalls;
pub mod template;

pub use step::{Expect, Op, Step};
pub use template::{Template, Vars};

use anyhow::{Result, bail};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::path::Path;
use step::{Pattern, RawStep, Slots};
use toml::Spanned;

/// The signature file format this build reads and writes.
pub const FORMAT: u32 = 1;

/// Which files of `1..=N` a phase applies its steps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Select {
    All,
    /// Files whose index is a multiple of k.
    Every(u64),
    /// All files except those whose index is a multiple of k.
    AllButEvery(u64),
}

impl Select {
    pub fn parse(s: &str) -> Result<Select, String> {
        let k = |v: &str| {
            v.parse::<u64>()
                .ok()
                .filter(|k| *k > 0)
                .ok_or_else(|| format!("`{s}`: k must be a positive integer"))
        };
        match s.split_once(':') {
            None if s == "all" => Ok(Select::All),
            Some(("every", v)) => Ok(Select::Every(k(v)?)),
            Some(("all-but-every", v)) => Ok(Select::AllButEvery(k(v)?)),
            _ => Err(format!(
                "unknown file selection `{s}` (all, every:K, all-but-every:K)"
            )),
        }
    }

    #[inline]
    pub fn includes(self, i: u64) -> bool {
        match self {
            Select::All => true,
            Select::Every(k) => i.is_multiple_of(k),
            Select::AllButEvery(k) => !i.is_multiple_of(k),
        }
    }

    /// How many of `1..=n` are selected.
    pub fn count(self, n: u64) -> u64 {
        match self {
            Select::All => n,
            Select::Every(k) => n / k,
            Select::AllButEvery(k) => n - n / k,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Phase {
    pub name: String,
    pub select: Select,
    /// How many times the steps run per file before moving to the next file.
    pub repeat: u32,
    pub steps: Vec<Step>,
}

/// Files created before the timed window.
#[derive(Clone, Debug)]
pub struct Populate {
    /// Content of each populated file.
    pub data: Vec<u8>,
    /// What `data` was made from.
    pub pattern: Pattern,
}

#[derive(Clone, Debug, Default)]
pub struct Setup {
    pub mkdir: Vec<Template>,
    pub populate: Option<Populate>,
    /// Call sync(2) after populating, so the timed window starts from a clean transaction.
    pub sync: bool,
    /// fsync the test directory after populating (s3e does `xfs_io -c fsync $DIR`).
    pub fsync_dir: bool,
}

#[derive(Clone, Debug)]
pub struct Signature {
    pub name: String,
    pub description: String,
    pub aliases: Vec<String>,
    /// N when the user gives no `-n`.
    pub default_n: u64,
    /// What `{name}` expands to.
    pub file: Template,
    /// Directory specs (as `--dir` takes them) used when the user gives none.
    pub default_dirs: Vec<String>,
    /// Words of the report line: `...{verb} {N} {unit} on {dir}: Job took …`.
    pub verb: String,
    pub unit: String,
    pub setup: Setup,
    pub prelude: Vec<Step>,
    pub phases: Vec<Phase>,
    /// How many times the phases run, each round on the next N file indices.
    pub rounds: u32,
    /// The slab caches are the evidence for this workload: show their changes by default,
    /// and snapshot them between phases.
    pub slab_evidence: bool,
    /// Names of the descriptor slots steps open, indexed by `Op` slot numbers.
    pub slots: Vec<String>,
    /// Where the signature came from: `builtin:NAME` or a file path.
    pub origin: String,
    /// The TOML text, verbatim.
    pub source: String,
    /// sha256 of `source`, so results can be matched to the exact workload.
    pub hash: String,
    /// A dbench loadfile this signature replays instead of phases (`loadfile = {…}`).
    pub loadfile: Option<LoadfileRef>,
    /// Clients when the user gives no `--clients` (`clients = K`).
    pub default_clients: Option<u32>,
    /// Seconds a run lasts when the user gives neither `--time` nor `-n` (`time = T`).
    pub default_time: Option<f64>,
}

/// Where a loadfile signature's loadfile is, and which package installs it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadfileRef {
    /// The file (`/usr/share/dbench/client.txt`).
    pub dbench: String,
    /// The distribution package that installs it, named when it is missing.
    pub package: Option<String>,
}

impl Signature {
    /// Whether this signature replays a dbench loadfile rather than phases of steps.
    pub fn is_loadfile(&self) -> bool {
        self.loadfile.is_some()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSignature {
    format: u32,
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    aliases: Vec<String>,
    n: Option<u64>,
    file: Option<Spanned<String>>,
    #[serde(default)]
    dirs: Vec<String>,
    verb: Option<String>,
    unit: Option<String>,
    rounds: Option<u32>,
    #[serde(default)]
    slab_evidence: bool,
    #[serde(default)]
    setup: RawSetup,
    #[serde(default)]
    prelude: Vec<Spanned<RawStep>>,
    #[serde(default)]
    phase: Vec<Spanned<RawPhase>>,
    loadfile: Option<LoadfileRef>,
    clients: Option<u32>,
    time: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSetup {
    #[serde(default)]
    mkdir: Vec<String>,
    populate: Option<RawPopulate>,
    #[serde(default)]
    sync: bool,
    #[serde(default)]
    fsync_dir: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPopulate {
    #[serde(default)]
    size: u64,
    pattern: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPhase {
    name: Option<String>,
    select: Option<String>,
    repeat: Option<u32>,
    steps: Vec<Spanned<RawStep>>,
}

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Where a signature being parsed came from, for its `FILE:LINE: …` errors.
struct Source<'a> {
    text: &'a str,
    origin: &'a str,
}

impl Source<'_> {
    fn at(&self, offset: usize, msg: impl std::fmt::Display) -> anyhow::Error {
        anyhow::anyhow!("{}:{}: {msg}", self.origin, line_of(self.text, offset))
    }

    fn limit(&self, what: &str, v: u64, max: u64) -> Result<u64> {
        limits::check(what, v, max).map_err(|e| anyhow::anyhow!("{}: {e}", self.origin))
    }

    /// `file`: a template that names each file by its index.
    fn file(&self, raw: &RawSignature) -> Result<Template> {
        let (file, file_at) = match &raw.file {
            Some(f) => (f.get_ref().as_str(), f.span().start),
            None => ("file_{i}", 0),
        };
        let file = Template::parse(file).map_err(|e| self.at(file_at, format!("`file`: {e}")))?;
        if file.uses_name() || !file.is_per_file() {
            return Err(self.at(
                file_at,
                "`file` must depend on the file index ({i}, {alpha} or {token}) and cannot use {name}",
            ));
        }
        Ok(file)
    }

    fn setup(&self, raw: &RawSignature) -> Result<Setup> {
        let origin = self.origin;
        self.limit(
            "setup.mkdir: the number of directories",
            raw.setup.mkdir.len() as u64,
            limits::MAX_MKDIR as u64,
        )?;
        let mut mkdir = Vec::new();
        for d in &raw.setup.mkdir {
            let t =
                Template::parse(d).map_err(|e| anyhow::anyhow!("{origin}: setup.mkdir: {e}"))?;
            if t.is_per_file() {
                bail!("{origin}: setup.mkdir `{d}` cannot depend on the file index");
            }
            mkdir.push(t);
        }
        let populate = match &raw.setup.populate {
            None => None,
            Some(p) => {
                let pattern = match &p.pattern {
                    Some(s) => Pattern::parse(s)
                        .map_err(|e| anyhow::anyhow!("{origin}: setup.populate: {e}"))?,
                    None => Pattern::Zero,
                };
                let size = self.limit("setup.populate: size", p.size, limits::MAX_IO_BYTES)?;
                Some(Populate {
                    data: pattern.fill(size as usize),
                    pattern,
                })
            }
        };
        Ok(Setup {
            mkdir,
            populate,
            sync: raw.setup.sync,
            fsync_dir: raw.setup.fsync_dir,
        })
    }

    fn step(&self, s: &Spanned<RawStep>, slots: &mut Slots) -> Result<Step> {
        let offset = s.span().start;
        Step::build(s.get_ref(), slots, line_of(self.text, offset)).map_err(|e| self.at(offset, e))
    }

    /// The prelude: steps that run once, before any file.
    fn prelude(&self, raw: &RawSignature, slots: &mut Slots) -> Result<Vec<Step>> {
        self.limit(
            "the number of prelude steps",
            raw.prelude.len() as u64,
            limits::MAX_STEPS as u64,
        )?;
        let mut prelude = Vec::new();
        for s in &raw.prelude {
            let step = self.step(s, slots)?;
            if let Some(t) = step.paths().into_iter().find(|t| t.is_per_file()) {
                return Err(self.at(
                    s.span().start,
                    format!(
                        "the prelude runs once, before any file: `{t}` cannot use the file index"
                    ),
                ));
            }
            prelude.push(step);
        }
        Ok(prelude)
    }

    fn phases(&self, raw: &RawSignature, slots: &mut Slots) -> Result<Vec<Phase>> {
        self.limit(
            "the number of [[phase]]s",
            raw.phase.len() as u64,
            limits::MAX_PHASES as u64,
        )?;
        if raw.phase.is_empty() {
            if raw.loadfile.is_some() {
                return Ok(Vec::new());
            }
            bail!(
                "{}: no [[phase]]: a signature needs at least one timed phase (or a `loadfile`)",
                self.origin
            );
        }
        if raw.loadfile.is_some() {
            bail!(
                "{}: a signature replays a `loadfile` or has [[phase]]s, not both",
                self.origin
            );
        }
        let mut phases = Vec::new();
        for (k, p) in raw.phase.iter().enumerate() {
            let offset = p.span().start;
            let rp = p.get_ref();
            let select = match &rp.select {
                Some(s) => Select::parse(s).map_err(|e| self.at(offset, e))?,
                None => Select::All,
            };
            let repeat = rp.repeat.unwrap_or(1);
            if repeat == 0 {
                return Err(self.at(offset, "`repeat` must be at least 1"));
            }
            limits::check("`repeat`", repeat as u64, limits::MAX_REPEAT as u64)
                .map_err(|e| self.at(offset, e))?;
            limits::check(
                "the number of steps",
                rp.steps.len() as u64,
                limits::MAX_STEPS as u64,
            )
            .map_err(|e| self.at(offset, e))?;
            if rp.steps.is_empty() {
                return Err(self.at(offset, "a phase needs at least one step"));
            }
            let steps = rp
                .steps
                .iter()
                .map(|s| self.step(s, slots))
                .collect::<Result<Vec<_>>>()?;
            phases.push(Phase {
                name: rp.name.clone().unwrap_or_else(|| format!("phase{}", k + 1)),
                select,
                repeat,
                steps,
            });
        }
        Ok(phases)
    }

    /// `clients` and `time`, the defaults a signature may give `--clients` and `--time`.
    fn clients_and_time(&self, raw: &RawSignature) -> Result<(Option<u32>, Option<f64>)> {
        let origin = self.origin;
        if let Some(k) = raw.clients {
            if k == 0 {
                bail!("{origin}: `clients` must be at least 1");
            }
            self.limit("`clients`", k as u64, limits::MAX_CLIENTS as u64)?;
        }
        if let Some(t) = raw.time
            && !(t > 0.0 && t <= limits::MAX_TIME_S)
        {
            bail!(
                "{origin}: `time` must be a number of seconds above 0 and at most {}",
                limits::MAX_TIME_S
            );
        }
        if raw.loadfile.is_some() && raw.rounds.is_some() {
            bail!("{origin}: a `loadfile` signature has no `rounds` (its N counts passes)");
        }
        Ok((raw.clients, raw.time))
    }

    /// `n` and `rounds`.
    fn counts(&self, raw: &RawSignature) -> Result<(u64, u32)> {
        let origin = self.origin;
        let n = raw.n.unwrap_or(100);
        if n == 0 {
            bail!("{origin}: `n` must be at least 1");
        }
        self.limit("`n`", n, limits::MAX_N)?;
        let rounds = raw.rounds.unwrap_or(1);
        if rounds == 0 {
            bail!("{origin}: `rounds` must be at least 1");
        }
        self.limit("`rounds`", rounds as u64, limits::MAX_ROUNDS as u64)?;
        Ok((n, rounds))
    }
}

impl Signature {
    /// Parse and validate signature text. `origin` names it in errors (`FILE:LINE: …`).
    pub fn parse(text: &str, origin: &str) -> Result<Signature> {
        let raw: RawSignature = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(1);
            anyhow::anyhow!("{origin}:{line}: {}", e.message().trim())
        })?;
        if raw.format != FORMAT {
            bail!(
                "{origin}:1: signature format {} is not supported (this sigbench reads format {FORMAT})",
                raw.format
            );
        }
        // A name is printed everywhere (run lines, reports, labels): one word of visible
        // characters, nothing a terminal would read as a command.
        if raw.name.is_empty()
            || raw.name.chars().count() > 64
            || raw
                .name
                .chars()
                .any(|c| c.is_whitespace() || model::shell::is_hidden(c))
        {
            bail!(
                "{origin}: `name` must be one word of at most 64 visible characters (`{}`)",
                model::shell::escape_controls(&raw.name.chars().take(64).collect::<String>(), &[])
            );
        }
        let src = Source { text, origin };
        let file = src.file(&raw)?;
        let setup = src.setup(&raw)?;
        let mut slots = Slots::default();
        let prelude = src.prelude(&raw, &mut slots)?;
        let phases = src.phases(&raw, &mut slots)?;
        let (n, rounds) = src.counts(&raw)?;
        let (clients, time) = src.clients_and_time(&raw)?;
        src.limit(
            "the number of descriptor slots",
            slots.names.len() as u64,
            limits::MAX_SLOTS as u64,
        )?;
        // The default directories as `--dir` reads them (a name of one component, known
        // properties): checked here so `validate` says what `run` would refuse. Checked for
        // btrfs, which can have every property; a filesystem without one skips it at run
        // time, with a note.
        for d in &raw.dirs {
            crate::testbed::DirSpec::parse(d, crate::testbed::Fs::Btrfs)
                .map_err(|e| anyhow::anyhow!("{origin}: dirs: {e}"))?;
        }
        Ok(Signature {
            name: raw.name,
            description: raw.description.trim().to_string(),
            aliases: raw.aliases,
            default_n: n,
            file,
            default_dirs: if raw.dirs.is_empty() {
                vec!["test".into()]
            } else {
                raw.dirs
            },
            verb: raw.verb.unwrap_or_else(|| "updating".into()),
            unit: raw.unit.unwrap_or_else(|| "files".into()),
            setup,
            prelude,
            phases,
            rounds,
            slab_evidence: raw.slab_evidence,
            slots: slots.names,
            origin: origin.to_string(),
            source: text.to_string(),
            hash: model::text::hex(&Sha256::digest(text.as_bytes())),
            loadfile: raw.loadfile,
            default_clients: clients,
            default_time: time,
        })
    }

    /// Load a signature file from disk.
    pub fn from_file(path: &Path) -> Result<Signature> {
        let text = model::input::read_text(
            path,
            "the signature file",
            model::input::MAX_SIGNATURE_BYTES,
        )?;
        Signature::parse(&text, &path.display().to_string())
    }

    /// A built-in signature by name or alias, or a signature file by path.
    pub fn load(name_or_path: &str) -> Result<Signature> {
        let looks_like_path = name_or_path.contains('/') || name_or_path.ends_with(".toml");
        if looks_like_path
            || Path::new(name_or_path).is_file() && find_builtin(name_or_path).is_none()
        {
            return Signature::from_file(Path::new(name_or_path));
        }
        match find_builtin(name_or_path) {
            Some(s) => s,
            None => bail!(
                "unknown signature `{name_or_path}`: not a built-in (see `sigbench list`) and not a file"
            ),
        }
    }

    /// A rough upper bound of the space a case of N files needs on the test filesystem.
    pub fn space_needed(&self, n: u64) -> u64 {
        self.space_with(n, 8 * 1024) // inode + dirent + metadata copies, generous
    }

    /// What a case of N files is expected to occupy in memory on a RAM-backed filesystem:
    /// the data, plus ~2 KiB per directory entry (inode, dentry, metadata).
    pub fn memory_needed(&self, n: u64) -> u64 {
        self.space_with(n, 2 * 1024)
    }

    fn space_with(&self, n: u64, per_entry: u64) -> u64 {
        // Saturating: a hostile signature's sizes must not wrap around to a small number.
        let populate = self
            .setup
            .populate
            .as_ref()
            .map(|p| n.saturating_mul(round_up(p.data.len() as u64, 4096) + per_entry))
            .unwrap_or(0);
        let prelude = self.prelude.iter().fold(0u64, |a, s| {
            a.saturating_add(round_up(s.bytes_written(), 4096))
        });
        let phases = self.phases.iter().fold(0u64, |acc, p| {
            let per_file = p.steps.iter().fold(0u64, |a, s| {
                a.saturating_add(round_up(s.bytes_written(), 4096))
                    .saturating_add(if s.creates_entry() { per_entry } else { 0 })
            });
            acc.saturating_add(
                per_file
                    .saturating_mul(p.select.count(n))
                    .saturating_mul(p.repeat as u64),
            )
        });
        populate
            .saturating_add(prelude)
            .saturating_add(phases.saturating_mul(self.rounds as u64))
    }

    /// The steps of every phase, in order (for summaries).
    pub fn timed_steps(&self) -> impl Iterator<Item = &Step> {
        self.phases.iter().flat_map(|p| p.steps.iter())
    }
}

fn round_up(v: u64, to: u64) -> u64 {
    v.div_ceil(to) * to
}

/// The built-in library: the files under `signatures/`, embedded.
const BUILTIN: &[(&str, &str)] = &[
    (
        "s3e-test3",
        include_str!("../../../../signatures/s3e-test3.toml"),
    ),
    (
        "s3e-test1",
        include_str!("../../../../signatures/s3e-test1.toml"),
    ),
    (
        "s3e-test2",
        include_str!("../../../../signatures/s3e-test2.toml"),
    ),
    (
        "s3e-test4",
        include_str!("../../../../signatures/s3e-test4.toml"),
    ),
    (
        "s3e-test5",
        include_str!("../../../../signatures/s3e-test5.toml"),
    ),
    (
        "btrfs-rename-log",
        include_str!("../../../../signatures/btrfs-rename-log.toml"),
    ),
    (
        "lkp-churn",
        include_str!("../../../../signatures/lkp-churn.toml"),
    ),
    (
        "lkp-churn-every",
        include_str!("../../../../signatures/lkp-churn-every.toml"),
    ),
    (
        "lkp-churn-recreate",
        include_str!("../../../../signatures/lkp-churn-recreate.toml"),
    ),
    ("seqwr", include_str!("../../../../signatures/seqwr.toml")),
    ("dbench", include_str!("../../../../signatures/dbench.toml")),
];

/// The signature `sigbench run` uses with no argument.
pub const DEFAULT: &str = "s3e-test3";

/// Every built-in signature, parsed.
pub fn builtins() -> Vec<Signature> {
    BUILTIN
        .iter()
        .map(|(name, text)| {
            Signature::parse(text, &format!("builtin:{name}"))
                .expect("built-in signatures are validated by the test suite")
        })
        .collect()
}

fn find_builtin(name: &str) -> Option<Result<Signature>> {
    BUILTIN.iter().find_map(|(file, text)| {
        let sig = Signature::parse(text, &format!("builtin:{file}"));
        match sig {
            Ok(s) if s.name == name || s.aliases.iter().any(|a| a == name) => Some(Ok(s)),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses_and_has_a_unique_name() {
        let all = builtins();
        assert_eq!(all.len(), BUILTIN.len());
        let mut names: Vec<&str> = all
            .iter()
            .flat_map(|s| {
                std::iter::once(s.name.as_str()).chain(s.aliases.iter().map(|a| a.as_str()))
            })
            .collect();
        let before = names.len();
        names.sort();
        names.dedup();
        assert_eq!(before, names.len(), "duplicate signature name or alias");
        for (file, _) in BUILTIN {
            assert!(
                all.iter().any(|s| s.name == *file),
                "{file} is named differently inside"
            );
        }
    }

    #[test]
    fn test3_is_the_s3e_minimal_signature() {
        let s = Signature::load("test3").unwrap();
        assert_eq!(s.name, "s3e-test3");
        assert_eq!(s.default_n, 250);
        let calls: Vec<&str> = s.timed_steps().map(|s| s.syscall).collect();
        assert_eq!(calls, ["renameat2", "unlink", "openat", "close"]);
        assert!(s.setup.sync && s.setup.fsync_dir);
        assert_eq!(s.setup.populate.as_ref().unwrap().data.len(), 0);
    }

    #[test]
    fn errors_name_file_and_line() {
        let text = "format = 1\nname = \"x\"\n[[phase]]\nsteps = [\n  { op = \"unlink\" },\n]\n";
        let e = Signature::parse(text, "x.toml").unwrap_err().to_string();
        assert!(e.starts_with("x.toml:5: "), "{e}");
        assert!(e.contains("needs `path`"), "{e}");

        let e = Signature::parse("format = 1\nname = \"x\"\nbogus = 3\n", "y.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("y.toml:3: "), "{e}");

        let e = Signature::parse("format = 2\nname = \"x\"\n", "z.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("format 2 is not supported"), "{e}");
    }

    /// Issue 56: a default directory `run` would refuse is refused by `validate` too.
    #[test]
    fn default_directories_are_checked() {
        for dirs in ["[\"../x\"]", "[\"a/b\"]", "[\"x:bogus=1\"]", "[\"\"]"] {
            let text = format!(
                "format = 1\nname = \"x\"\ndirs = {dirs}\n[[phase]]\nsteps = [ {{ op = \"sync\" }} ]\n"
            );
            let e = Signature::parse(&text, "d.toml").unwrap_err().to_string();
            assert!(e.starts_with("d.toml: dirs: bad --dir"), "{dirs}: {e}");
        }
    }

    #[test]
    fn prelude_cannot_use_the_file_index() {
        let text = "format = 1\nname = \"x\"\nprelude = [ { op = \"unlink\", path = \"{name}\" } ]\n[[phase]]\nsteps = [ { op = \"sync\" } ]\n";
        let e = Signature::parse(text, "p.toml").unwrap_err().to_string();
        assert!(e.contains("p.toml:3:") && e.contains("prelude"), "{e}");
    }

    #[test]
    fn the_documented_example_is_valid() {
        let doc = include_str!("../../../../docs/signatures.md");
        let start = doc
            .find("```toml\n")
            .expect("docs/signatures.md has a toml example")
            + 8;
        let end = start + doc[start..].find("```").unwrap();
        let s = Signature::parse(&doc[start..end], "docs/signatures.md").unwrap();
        assert_eq!(s.name, "rpm-replace");
        assert_eq!(s.phases.len(), 3);
        assert_eq!(s.phases[2].select, Select::Every(10));
        assert_eq!(s.slots, ["log", "f"]);
    }

    #[test]
    fn select_counts() {
        assert_eq!(Select::parse("every:3").unwrap().count(10), 3);
        assert_eq!(Select::parse("all-but-every:3").unwrap().count(10), 7);
        assert!(Select::parse("every:0").is_err());
        assert!(Select::parse("some").is_err());
        assert!(Select::AllButEvery(3).includes(4));
        assert!(!Select::AllButEvery(3).includes(6));
    }
}
