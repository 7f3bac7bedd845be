//! `sigbench minimize`: shrink a signature to the calls that still show an effect — what
//! the s3e author did by hand when rpm's 13 calls per file became rename → unlink → create.
//!
//! Delta debugging (Zeller's ddmin) over, in turn: the steps of each phase, whole phases,
//! the prelude's steps, then the setup options (populate, sync, directory fsync) and the
//! directories' properties. A candidate is a signature file: it is parsed (a step whose
//! slot is no longer opened is invalid), replayed, and the predicate is read from what it
//! measured. It counts as "still shows the effect" only when the predicate holds in every
//! repetition; a replay that fails (a rename of a file no step creates any more) counts as
//! "no". ddmin's last round tries every single removal, so its result is 1-minimal; the
//! final check repeats that claim from the cache of evaluations.

pub mod predicate;

use anyhow::{Context, Result, bail};
pub use predicate::{Predicate, Values};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use toml::{Table, Value};

/// Delta debugging to a 1-minimal subset of `items` for which `test` holds (Zeller &
/// Hildebrandt's ddmin: subsets, then complements, then finer granularity). `test` must
/// hold for `items` itself.
pub fn ddmin<T: Clone>(items: &[T], test: &mut dyn FnMut(&[T]) -> bool) -> Vec<T> {
    let mut cur = items.to_vec();
    let mut n = 2usize;
    while cur.len() >= 2 {
        let chunk = cur.len().div_ceil(n);
        let parts: Vec<Vec<T>> = cur.chunks(chunk).map(|c| c.to_vec()).collect();
        let mut reduced = false;
        for p in &parts {
            if test(p) {
                cur = p.clone();
                n = 2;
                reduced = true;
                break;
            }
        }
        // With two parts the complements are the parts themselves, already tried.
        if !reduced && parts.len() > 2 {
            for k in 0..parts.len() {
                let complement: Vec<T> = parts
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != k)
                    .flat_map(|(_, p)| p.iter().cloned())
                    .collect();
                if test(&complement) {
                    cur = complement;
                    n = (n - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if n >= cur.len() {
                break;
            }
            n = (2 * n).min(cur.len());
        }
    }
    // One item left: maybe none is needed at all.
    if cur.len() == 1 && test(&[]) {
        cur.clear();
    }
    cur
}

/// What a candidate keeps of the original signature.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Candidate {
    /// Kept phases (original indices) with their kept steps (original indices).
    pub phases: Vec<(usize, Vec<usize>)>,
    pub prelude: Vec<usize>,
    pub populate: bool,
    pub sync: bool,
    pub fsync_dir: bool,
    /// Directory specs (`name[:props]`) to run with.
    pub dirs: Vec<String>,
}

/// The original signature as TOML, and how to write a candidate of it.
pub struct Source {
    table: Table,
}

fn array_len(t: &Table, key: &str) -> usize {
    t.get(key).and_then(Value::as_array).map_or(0, Vec::len)
}

impl Source {
    pub fn parse(text: &str, origin: &str) -> Result<Source> {
        let table: Table =
            toml::from_str(text).with_context(|| format!("{origin}: not a signature file"))?;
        Ok(Source { table })
    }

    /// The candidate that keeps everything, with `dirs`.
    pub fn whole(&self, dirs: Vec<String>) -> Candidate {
        let phases = self
            .table
            .get("phase")
            .and_then(Value::as_array)
            .map(|ps| {
                ps.iter()
                    .enumerate()
                    .map(|(k, p)| {
                        let n = p.as_table().map_or(0, |t| array_len(t, "steps"));
                        (k, (0..n).collect())
                    })
                    .collect()
            })
            .unwrap_or_default();
        let setup = self.table.get("setup").and_then(Value::as_table);
        let flag = |k: &str| {
            setup
                .and_then(|s| s.get(k))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        Candidate {
            phases,
            prelude: (0..array_len(&self.table, "prelude")).collect(),
            populate: setup.is_some_and(|s| s.contains_key("populate")),
            sync: flag("sync"),
            fsync_dir: flag("fsync_dir"),
            dirs,
        }
    }

    /// The signature file of a candidate (TOML; `header` becomes its leading comments).
    pub fn render(&self, c: &Candidate, header: &str) -> Result<String> {
        let mut t = self.table.clone();
        let phases = t
            .get("phase")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut kept = Vec::new();
        for (k, steps) in &c.phases {
            let Some(mut p) = phases.get(*k).and_then(Value::as_table).cloned() else {
                continue;
            };
            let all = p
                .get("steps")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            p.insert(
                "steps".into(),
                Value::Array(steps.iter().filter_map(|i| all.get(*i).cloned()).collect()),
            );
            kept.push(Value::Table(p));
        }
        t.insert("phase".into(), Value::Array(kept));
        if let Some(pre) = t.get("prelude").and_then(Value::as_array).cloned() {
            let p: Vec<Value> = c
                .prelude
                .iter()
                .filter_map(|i| pre.get(*i).cloned())
                .collect();
            if p.is_empty() {
                t.remove("prelude");
            } else {
                t.insert("prelude".into(), Value::Array(p));
            }
        }
        if let Some(Value::Table(setup)) = t.get_mut("setup") {
            if !c.populate {
                setup.remove("populate");
            }
            setup.insert("sync".into(), Value::Boolean(c.sync));
            setup.insert("fsync_dir".into(), Value::Boolean(c.fsync_dir));
        }
        t.insert(
            "dirs".into(),
            Value::Array(c.dirs.iter().map(|d| Value::String(d.clone())).collect()),
        );
        let body = toml::to_string(&t).context("writing the minimized signature")?;
        Ok(format!("{header}{body}"))
    }
}

/// One evaluation, for the table of evaluations.
#[derive(Clone, Debug)]
pub struct Evaluation {
    pub stage: String,
    pub candidate: String,
    pub holds: bool,
    /// The predicate's left-hand side (first directory, last repetition), or why not.
    pub value: String,
    pub took: Duration,
    /// Evaluations left in this pass at most, where that is known (the pairs pass).
    pub left_in_pass: Option<usize>,
}

/// How much a minimization may spend: a search over pairs of steps grows with the square
/// of the steps (40 needed steps: ~800 evaluations per sweep, sweeps repeat), so every
/// search is bounded. When the budget ends the best candidate found so far is the result.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub max_evals: usize,
    pub max_time: Duration,
}

impl Budget {
    /// `sigbench minimize`'s defaults: 300 evaluations, one hour.
    pub const DEFAULT: Budget = Budget {
        max_evals: 300,
        max_time: Duration::from_secs(3600),
    };
}

/// The budget ran out (carried as an error through the stages, caught by `run`).
#[derive(Debug)]
struct BudgetSpent(String);

impl std::fmt::Display for BudgetSpent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BudgetSpent {}

/// What a minimization found: the smallest candidate that keeps the effect, and why the
/// search stopped early (the budget) if it did — then the result is smaller than the
/// start but not known to be 1-minimal.
#[derive(Clone, Debug)]
pub struct Found {
    pub candidate: Candidate,
    pub stopped: Option<String>,
}

/// Runs a candidate signature and says whether the predicate holds (or why not).
pub trait Judge {
    /// `Ok(Some(value))` when it holds, `Ok(None)` with the reason in `why` when not.
    fn judge(&mut self, signature: &str, dirs: &[String]) -> Result<(bool, String)>;
}

/// The minimization: stages of ddmin over the candidate, every evaluation cached by the
/// candidate's signature text.
pub struct Minimizer<'a> {
    pub source: Source,
    pub judge: &'a mut dyn Judge,
    pub log: Vec<Evaluation>,
    cache: BTreeMap<String, bool>,
    pub on_evaluation: Box<dyn FnMut(&Evaluation) + 'a>,
    pub budget: Budget,
    started: Instant,
    /// Evaluations left in the current pass, when known.
    left_in_pass: Option<usize>,
    /// The last candidate of the current stage that kept the effect (ddmin moves to it).
    best_in_stage: Option<Candidate>,
}

fn describe(c: &Candidate) -> String {
    let phases: Vec<String> = c
        .phases
        .iter()
        .map(|(k, s)| {
            format!(
                "p{}[{}]",
                k + 1,
                s.iter()
                    .map(|i| (i + 1).to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            )
        })
        .collect();
    let mut v = vec![phases.join(" ")];
    if !c.prelude.is_empty() {
        v.push(format!("prelude{:?}", c.prelude));
    }
    for (on, name) in [
        (c.populate, "populate"),
        (c.sync, "sync"),
        (c.fsync_dir, "fsync_dir"),
    ] {
        if on {
            v.push(name.into());
        }
    }
    v.push(c.dirs.join(","));
    v.join(" ")
}

impl<'a> Minimizer<'a> {
    pub fn new(source: Source, judge: &'a mut dyn Judge) -> Minimizer<'a> {
        Minimizer {
            source,
            judge,
            log: Vec::new(),
            cache: BTreeMap::new(),
            on_evaluation: Box::new(|_| {}),
            budget: Budget::DEFAULT,
            started: Instant::now(),
            left_in_pass: None,
            best_in_stage: None,
        }
    }

    /// Whether `c` still shows the effect (cached).
    pub fn test(&mut self, stage: &str, c: &Candidate) -> Result<bool> {
        crate::interrupt::check()?;
        let text = self.source.render(c, "")?;
        let key = format!("{text}\n{}", c.dirs.join("\n"));
        if let Some(&h) = self.cache.get(&key) {
            return Ok(h);
        }
        if self.log.len() >= self.budget.max_evals {
            return Err(BudgetSpent(format!(
                "the budget of {} evaluations (--max-evals) is spent",
                self.budget.max_evals
            ))
            .into());
        }
        if self.started.elapsed() >= self.budget.max_time {
            return Err(BudgetSpent(format!(
                "the budget of {} s (--max-time) is spent",
                self.budget.max_time.as_secs()
            ))
            .into());
        }
        let start = Instant::now();
        let (holds, value) = self.judge.judge(&text, &c.dirs)?;
        let e = Evaluation {
            stage: stage.to_string(),
            candidate: describe(c),
            holds,
            value,
            took: start.elapsed(),
            left_in_pass: self.left_in_pass,
        };
        (self.on_evaluation)(&e);
        self.log.push(e);
        self.cache.insert(key, holds);
        Ok(holds)
    }

    /// ddmin over one dimension of the candidate; an error inside a test stops the run.
    fn shrink<T: Clone>(
        &mut self,
        stage: &str,
        cur: &mut Candidate,
        items: Vec<T>,
        set: impl Fn(&mut Candidate, &[T]),
    ) -> Result<()> {
        let mut failure = None;
        let base = cur.clone();
        self.best_in_stage = None;
        let kept = ddmin(&items, &mut |subset: &[T]| {
            if failure.is_some() {
                return false;
            }
            let mut c = base.clone();
            set(&mut c, subset);
            match self.test(stage, &c) {
                Ok(h) => {
                    if h {
                        self.best_in_stage = Some(c);
                    }
                    h
                }
                Err(e) => {
                    failure = Some(e);
                    false
                }
            }
        });
        if let Some(e) = failure {
            // Out of budget inside the stage: its progress so far is kept.
            if let Some(b) = self.best_in_stage.take() {
                *cur = b;
            }
            return Err(e);
        }
        set(cur, &kept);
        Ok(())
    }

    /// Minimize `start` (which must show the effect): the 1-minimal candidate, or when the
    /// budget runs out the smallest one found so far.
    pub fn run(&mut self, start: Candidate, dir_props: bool) -> Result<Found> {
        self.started = Instant::now();
        let mut cur = start.clone();
        match self.stages(start, &mut cur, dir_props) {
            Ok(()) => Ok(Found {
                candidate: cur,
                stopped: None,
            }),
            Err(e) => match e.downcast::<BudgetSpent>() {
                Ok(spent) => Ok(Found {
                    candidate: cur,
                    stopped: Some(spent.0),
                }),
                Err(e) => Err(e),
            },
        }
    }

    /// The stages, shrinking `cur` in place (so an early stop leaves the best so far).
    fn stages(&mut self, start: Candidate, cur: &mut Candidate, dir_props: bool) -> Result<()> {
        if !self.test("start", &start)? {
            let why = self.log.last().map(|e| e.value.clone()).unwrap_or_default();
            bail!(
                "the predicate does not hold for the signature as it is ({why}): nothing to minimize (check --until, -n and the directories)"
            );
        }
        // Steps, phase by phase.
        for k in 0..cur.phases.len() {
            let steps = cur.phases[k].1.clone();
            self.shrink(
                &format!("phase {} steps", cur.phases[k].0 + 1),
                cur,
                steps,
                move |c, s| c.phases[k].1 = s.to_vec(),
            )?;
        }
        // Whole phases.
        let phases = cur.phases.clone();
        self.shrink("phases", cur, phases, |c, s| c.phases = s.to_vec())?;
        // Pairs of steps, across phases: steps that only make sense together (an open and
        // its close, a dup and the close of the copy, a link and the unlink of the link)
        // survive every single removal. Repeat until no pair can go.
        'pairs: loop {
            let all: Vec<(usize, usize)> = cur
                .phases
                .iter()
                .enumerate()
                .flat_map(|(k, (_, s))| s.iter().map(move |&i| (k, i)))
                .collect();
            let pairs = all.len() * all.len().saturating_sub(1) / 2;
            let mut tried = 0;
            for x in 0..all.len() {
                for y in x + 1..all.len() {
                    tried += 1;
                    self.left_in_pass = Some(pairs - tried);
                    let mut c = cur.clone();
                    for (k, i) in [all[x], all[y]] {
                        c.phases[k].1.retain(|&j| j != i);
                    }
                    c.phases.retain(|(_, s)| !s.is_empty());
                    if self.test("pairs", &c)? {
                        *cur = c;
                        continue 'pairs;
                    }
                }
            }
            break;
        }
        self.left_in_pass = None;
        // The prelude's steps.
        let prelude = cur.prelude.clone();
        self.shrink("prelude", cur, prelude, |c, s| c.prelude = s.to_vec())?;
        // Setup options, one at a time.
        for (name, get, set) in [
            (
                "populate",
                (|c: &Candidate| c.populate) as fn(&Candidate) -> bool,
                (|c: &mut Candidate, v| c.populate = v) as fn(&mut Candidate, bool),
            ),
            (
                "sync",
                |c: &Candidate| c.sync,
                |c: &mut Candidate, v| c.sync = v,
            ),
            (
                "fsync_dir",
                |c: &Candidate| c.fsync_dir,
                |c: &mut Candidate, v| c.fsync_dir = v,
            ),
        ] {
            if get(cur) {
                let mut c = cur.clone();
                set(&mut c, false);
                if self.test(&format!("setup {name}"), &c)? {
                    *cur = c;
                }
            }
        }
        // Directory properties, one at a time (`zstd:compression=zstd:1` → `zstd`).
        if dir_props {
            for k in 0..cur.dirs.len() {
                let d = cur.dirs[k].clone();
                if let Some((name, props)) = d.split_once(':') {
                    let props: Vec<String> = props.split(',').map(String::from).collect();
                    let name = name.to_string();
                    self.shrink(&format!("dir {name}"), cur, props, move |c, s| {
                        c.dirs[k] = if s.is_empty() {
                            name.clone()
                        } else {
                            format!("{name}:{}", s.join(","))
                        }
                    })?;
                }
            }
        }
        Ok(())
    }

    /// The 1-minimality check: removing any single remaining step breaks the predicate.
    /// Returns the steps whose removal still holds (empty: 1-minimal), or None when the
    /// budget ran out before the check could finish.
    pub fn check_one_minimal(&mut self, c: &Candidate) -> Result<Option<Vec<String>>> {
        let mut removable = Vec::new();
        for k in 0..c.phases.len() {
            for j in 0..c.phases[k].1.len() {
                let mut d = c.clone();
                let step = d.phases[k].1.remove(j);
                match self.test("1-minimal check", &d) {
                    Ok(true) => {
                        removable.push(format!("phase {} step {}", c.phases[k].0 + 1, step + 1))
                    }
                    Ok(false) => {}
                    Err(e) if e.downcast_ref::<BudgetSpent>().is_some() => return Ok(None),
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(Some(removable))
    }
}

/// The judge that replays candidates here: the plan as the user gave it (filesystem, N,
/// device, options), each candidate's signature and directories, `reps` repetitions; the
/// predicate must hold in every one.
pub struct RunJudge {
    pub plan: crate::plan::Plan,
    pub predicate: Predicate,
    pub reps: u32,
    /// The predicate's metrics were found in an evaluation's results (the first one
    /// checks: a typo must not read as 0 and "hold" everywhere).
    pub checked: bool,
}

/// A case's metrics per directory, for the predicate.
struct CaseValues {
    n: f64,
    by_dir: BTreeMap<String, BTreeMap<String, f64>>,
}

impl Values for CaseValues {
    fn get(&self, dir: &str, metric: &str) -> Option<f64> {
        self.by_dir
            .get(dir)
            .map(|m| m.get(metric).copied().unwrap_or(0.0))
    }
    fn n(&self) -> f64 {
        self.n
    }
}

/// An observer that shows nothing: the minimizer logs evaluations, not cases.
struct Quiet;

impl crate::plan::Observer for Quiet {
    fn case_started(&mut self, _: &crate::plan::Case, _: &crate::plan::Plan, _: u64) {}
    fn tick(&mut self, _: u64) {}
    fn case_done(
        &mut self,
        _: &crate::results::CaseResult,
        _: &crate::plan::Plan,
    ) -> anyhow::Result<()> {
        Ok(())
    }
    fn warning(&mut self, _: &str) {}
}

impl Judge for RunJudge {
    fn judge(&mut self, signature: &str, dirs: &[String]) -> Result<(bool, String)> {
        let sig = match crate::signature::Signature::parse(signature, "candidate") {
            Ok(s) => s,
            Err(e) => return Ok((false, format!("invalid: {e:#}"))),
        };
        let fs = self.plan.testbed.fs;
        let specs: Result<Vec<_>> = dirs
            .iter()
            .map(|d| crate::testbed::DirSpec::parse(d, fs))
            .collect();
        let specs = match specs {
            Ok(s) => s,
            Err(e) => return Ok((false, format!("invalid: {e:#}"))),
        };
        let plan = crate::plan::Plan {
            signature: sig,
            dirs: specs,
            repetitions: self.reps,
            ..self.plan.clone()
        };
        let mut doc = plan.document_here();
        if let Err(e) = plan.execute(&mut doc, &mut Quiet) {
            if e.downcast_ref::<crate::interrupt::Interrupted>().is_some() {
                return Err(e);
            }
            return Ok((false, format!("replay failed: {e:#}")));
        }
        let names: Vec<String> = plan.dirs.iter().map(|d| d.name.clone()).collect();
        let mut groups: BTreeMap<(u64, u32), CaseValues> = BTreeMap::new();
        for c in doc.cases.iter().filter(|c| !c.warmup) {
            let g = groups.entry((c.n, c.rep)).or_insert_with(|| CaseValues {
                n: c.n as f64,
                by_dir: BTreeMap::new(),
            });
            let m = g.by_dir.entry(c.dir.clone()).or_default();
            for (name, _, value) in crate::stats::compare::metrics_of(c) {
                m.insert(name, value);
            }
        }
        if !self.checked && !groups.is_empty() {
            let seen: std::collections::BTreeSet<&String> = groups
                .values()
                .flat_map(|g| g.by_dir.values().flat_map(|m| m.keys()))
                .collect();
            let unknown = self.predicate.unknown_metrics(&seen);
            if !unknown.is_empty() {
                bail!(
                    "--until: no metric {} in the results (metrics: {})",
                    unknown.join(", "),
                    seen.iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            self.checked = true;
        }
        let mut shown = String::from("-");
        for g in groups.values() {
            match self.predicate.holds(g, &names) {
                Ok(true) => shown = self.predicate.show(g, &names),
                Ok(false) => {
                    let v = self.predicate.show(g, &names);
                    return Ok((false, format!("{v} (N={}: not in every repetition)", g.n)));
                }
                Err(e) => bail!("{e:#}"),
            }
        }
        Ok((!groups.is_empty(), shown))
    }
}

/// What `min` removed from `start` (candidates of `sig`), one line each, in the order of
/// the file: phases and their steps, prelude steps, setup, directory properties.
pub fn removed(
    sig: &crate::signature::Signature,
    start: &Candidate,
    min: &Candidate,
) -> Vec<String> {
    let mut removed = Vec::new();
    for (k, steps) in &start.phases {
        let name = &sig.phases[*k].name;
        match min.phases.iter().find(|(j, _)| j == k) {
            None => removed.push(format!("phase `{name}` (all its steps)")),
            Some((_, kept)) => {
                for i in steps.iter().filter(|i| !kept.contains(i)) {
                    removed.push(format!(
                        "phase `{name}` step {}: {}",
                        i + 1,
                        sig.phases[*k].steps[*i].describe()
                    ));
                }
            }
        }
    }
    for i in start.prelude.iter().filter(|i| !min.prelude.contains(i)) {
        removed.push(format!(
            "prelude step {}: {}",
            i + 1,
            sig.prelude[*i].describe()
        ));
    }
    for (was, now, name) in [
        (start.populate, min.populate, "setup.populate"),
        (start.sync, min.sync, "setup.sync"),
        (start.fsync_dir, min.fsync_dir, "setup.fsync_dir"),
    ] {
        if was && !now {
            removed.push(name.to_string());
        }
    }
    for (a, b) in start.dirs.iter().zip(&min.dirs) {
        if a != b {
            removed.push(format!("directory `{a}` → `{b}`"));
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddmin_finds_a_one_minimal_subset() {
        // The effect needs items 3 and 7 together (like create + rename of one file).
        let items: Vec<u32> = (1..=12).collect();
        let mut tests = 0;
        let got = ddmin(&items, &mut |s: &[u32]| {
            tests += 1;
            s.contains(&3) && s.contains(&7)
        });
        assert_eq!(got, [3, 7]);
        assert!(tests < 40, "{tests} tests");
        // One needed item; then none needed at all.
        assert_eq!(ddmin(&items, &mut |s: &[u32]| s.contains(&12)), [12]);
        assert!(ddmin(&items, &mut |_: &[u32]| true).is_empty());
    }

    const SIG: &str = r#"
format = 1
name = "t"
dirs = ["a:compression=zstd"]
[setup]
populate = { size = 0 }
sync = true
fsync_dir = true
[[phase]]
name = "p"
steps = [
  { op = "renameat2", from = "{name}", to = "{name}-X" },
  { op = "unlink", path = "{name}-X" },
  { op = "openat", path = "{name}", flags = "O_WRONLY|O_CREAT", slot = "f" },
  { op = "close", slot = "f" },
]
"#;

    #[test]
    fn candidates_render_as_valid_signatures() {
        let src = Source::parse(SIG, "t").unwrap();
        let whole = src.whole(vec!["a".into()]);
        assert_eq!(whole.phases, [(0, vec![0, 1, 2, 3])]);
        assert!(whole.populate && whole.sync && whole.fsync_dir);
        let mut c = whole.clone();
        c.phases[0].1 = vec![2, 3];
        c.sync = false;
        c.populate = false;
        let text = src.render(&c, "# minimized\n").unwrap();
        let s = crate::signature::Signature::parse(&text, "candidate").unwrap();
        assert_eq!(s.phases[0].steps.len(), 2);
        assert_eq!(s.phases[0].steps[0].syscall, "openat");
        assert!(!s.setup.sync && s.setup.populate.is_none() && s.setup.fsync_dir);
        assert!(text.starts_with("# minimized\n"));
        // A close without its open is not a valid signature: the judge says "no".
        c.phases[0].1 = vec![3];
        let text = src.render(&c, "").unwrap();
        assert!(crate::signature::Signature::parse(&text, "candidate").is_err());
    }

    /// Holds when the candidate still has the steps that unlink `{name}-k3` and `-k9`.
    struct Needs(usize);

    impl Judge for Needs {
        fn judge(&mut self, signature: &str, _: &[String]) -> Result<(bool, String)> {
            self.0 += 1;
            let h = signature.contains("{name}-k3\"") && signature.contains("{name}-k9\"");
            Ok((h, String::new()))
        }
    }

    fn twelve_steps() -> String {
        let steps: Vec<String> = (0..12)
            .map(|k| format!("  {{ op = \"unlink\", path = \"{{name}}-k{k}\" }},"))
            .collect();
        format!(
            "format = 1\nname = \"t\"\ndirs = [\"a\"]\n[[phase]]\nname = \"p\"\nsteps = [\n{}\n]\n",
            steps.join("\n")
        )
    }

    #[test]
    fn a_budget_stops_the_search_with_the_best_candidate_so_far() {
        let src = Source::parse(&twelve_steps(), "t").unwrap();
        let start = src.whole(vec!["a".into()]);
        let mut judge = Needs(0);
        let mut m = Minimizer::new(Source::parse(&twelve_steps(), "t").unwrap(), &mut judge);
        let found = m.run(start.clone(), false).unwrap();
        assert_eq!(found.stopped, None);
        assert_eq!(found.candidate.phases, [(0, vec![3, 9])]);
        assert_eq!(m.check_one_minimal(&found.candidate).unwrap(), Some(vec![]));
        let all = m.log.len();
        // Half the evaluations: smaller than the start, still holding, said to be early.
        let mut judge = Needs(0);
        let mut m = Minimizer::new(src, &mut judge);
        m.budget.max_evals = all / 2;
        let found = m.run(start.clone(), false).unwrap();
        let why = found.stopped.expect("stopped by the budget");
        assert!(why.contains("--max-evals"), "{why}");
        assert_eq!(m.log.len(), all / 2);
        let kept = &found.candidate.phases[0].1;
        assert!(
            kept.len() < 12 && kept.contains(&3) && kept.contains(&9),
            "{kept:?}"
        );
        assert_eq!(m.check_one_minimal(&found.candidate).unwrap(), None);
        drop(m);
        assert_eq!(judge.0, all / 2);
    }
}
