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

pub mod judge;
pub mod predicate;

use anyhow::{Context, Result, bail};
pub use judge::{InGuest, RunJudge};
pub use predicate::{Predicate, Values};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use toml::{Table, Value};

/// Delta debugging to a 1-minimal subset of `items` for which the test holds (Zeller &
/// Hildebrandt's ddmin: subsets, then complements, then finer granularity). The test must
/// hold for `items` itself. `first` is given the candidates of one round in ddmin's order
/// and returns the first that holds: it may evaluate several at once (they are
/// independent), and since ddmin moves to the first that holds, the result is the same
/// however many it evaluates at a time.
pub fn ddmin<T: Clone>(items: &[T], first: &mut dyn FnMut(&[Vec<T>]) -> Option<usize>) -> Vec<T> {
    let mut cur = items.to_vec();
    let mut n = 2usize;
    while cur.len() >= 2 {
        let chunk = cur.len().div_ceil(n);
        let parts: Vec<Vec<T>> = cur.chunks(chunk).map(|c| c.to_vec()).collect();
        if let Some(k) = first(&parts) {
            cur = parts[k].clone();
            n = 2;
            continue;
        }
        // With two parts the complements are the parts themselves, already tried.
        if parts.len() > 2 {
            let complements: Vec<Vec<T>> = (0..parts.len())
                .map(|k| {
                    parts
                        .iter()
                        .enumerate()
                        .filter(|(j, _)| *j != k)
                        .flat_map(|(_, p)| p.iter().cloned())
                        .collect()
                })
                .collect();
            if let Some(k) = first(&complements) {
                cur = complements[k].clone();
                n = (n - 1).max(2);
                continue;
            }
        }
        if n >= cur.len() {
            break;
        }
        n = (2 * n).min(cur.len());
    }
    // One item left: maybe none is needed at all.
    if cur.len() == 1 && first(&[Vec::new()]).is_some() {
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
    /// How long it took; evaluations run side by side share one time, their batch's.
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
    /// Whether it holds, and the predicate's value (or why it does not hold).
    fn judge(&mut self, signature: &str, dirs: &[String]) -> Result<(bool, String)>;

    /// Several candidates, independent of each other (signature text, directories): one
    /// after another, unless the judge can run them side by side.
    fn judge_many(&mut self, batch: &[(String, Vec<String>)]) -> Result<Vec<(bool, String)>> {
        batch.iter().map(|(s, d)| self.judge(s, d)).collect()
    }
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
    /// Candidates evaluated at once (`Judge::judge_many`); 1: one after another.
    pub width: usize,
    started: Instant,
    /// How many candidates the current pass has, when known (the pairs pass).
    pass_len: Option<usize>,
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
            width: 1,
            started: Instant::now(),
            pass_len: None,
            best_in_stage: None,
        }
    }

    /// Whether `c` still shows the effect (cached).
    pub fn test(&mut self, stage: &str, c: &Candidate) -> Result<bool> {
        Ok(self.test_first(stage, std::slice::from_ref(c))?.is_some())
    }

    /// The first of `cands` that still shows the effect (its index), evaluating up to
    /// `width` at once: a batch that holds one ends the search.
    pub fn test_first(&mut self, stage: &str, cands: &[Candidate]) -> Result<Option<usize>> {
        Ok(self
            .evaluate(stage, cands, true)?
            .iter()
            .position(|h| *h == Some(true)))
    }

    /// Every one of `cands`, whether it shows the effect.
    fn test_all(&mut self, stage: &str, cands: &[Candidate]) -> Result<Vec<bool>> {
        Ok(self
            .evaluate(stage, cands, false)?
            .into_iter()
            .map(|h| h == Some(true))
            .collect())
    }

    /// Evaluate `cands` in order (cached by signature text and directories), up to `width`
    /// of them at once; with `first_only`, none after the batch where one holds. Each one's
    /// verdict, None where it was not evaluated.
    fn evaluate(
        &mut self,
        stage: &str,
        cands: &[Candidate],
        first_only: bool,
    ) -> Result<Vec<Option<bool>>> {
        let texts: Vec<String> = cands
            .iter()
            .map(|c| self.source.render(c, ""))
            .collect::<Result<_>>()?;
        let keys: Vec<String> = texts
            .iter()
            .zip(cands)
            .map(|(t, c)| format!("{t}\n{}", c.dirs.join("\n")))
            .collect();
        let mut out = vec![None; cands.len()];
        let mut i = 0;
        while i < cands.len() {
            measure::interrupt::check()?;
            if let Some(&h) = self.cache.get(&keys[i]) {
                out[i] = Some(h);
                if h && first_only {
                    break;
                }
                i += 1;
                continue;
            }
            // The next candidates not evaluated yet, up to the width, not past one known
            // to hold.
            let mut batch: Vec<usize> = Vec::new();
            for j in i..cands.len() {
                if batch.len() == self.width {
                    break;
                }
                match self.cache.get(&keys[j]) {
                    Some(true) if first_only => break,
                    Some(_) => {}
                    None if batch.iter().any(|&b| keys[b] == keys[j]) => {}
                    None => batch.push(j),
                }
            }
            let left = self.budget.max_evals.saturating_sub(self.log.len());
            if left == 0 {
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
            batch.truncate(left);
            let work: Vec<(String, Vec<String>)> = batch
                .iter()
                .map(|&b| (texts[b].clone(), cands[b].dirs.clone()))
                .collect();
            let start = Instant::now();
            let verdicts = self.judge.judge_many(&work)?;
            let took = start.elapsed();
            for (&b, (holds, value)) in batch.iter().zip(verdicts) {
                let e = Evaluation {
                    stage: stage.to_string(),
                    candidate: describe(&cands[b]),
                    holds,
                    value,
                    took,
                    left_in_pass: self.pass_len.map(|n| n.saturating_sub(b + 1)),
                };
                (self.on_evaluation)(&e);
                self.log.push(e);
                self.cache.insert(keys[b].clone(), holds);
            }
        }
        Ok(out)
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
        let kept = ddmin(&items, &mut |subsets: &[Vec<T>]| {
            if failure.is_some() {
                return None;
            }
            let cands: Vec<Candidate> = subsets
                .iter()
                .map(|s| {
                    let mut c = base.clone();
                    set(&mut c, s);
                    c
                })
                .collect();
            match self.test_first(stage, &cands) {
                Ok(Some(k)) => {
                    self.best_in_stage = Some(cands[k].clone());
                    Some(k)
                }
                Ok(None) => None,
                Err(e) => {
                    failure = Some(e);
                    None
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
        loop {
            let all: Vec<(usize, usize)> = cur
                .phases
                .iter()
                .enumerate()
                .flat_map(|(k, (_, s))| s.iter().map(move |&i| (k, i)))
                .collect();
            let mut pairs = Vec::new();
            for x in 0..all.len() {
                for y in x + 1..all.len() {
                    let mut c = cur.clone();
                    for (k, i) in [all[x], all[y]] {
                        c.phases[k].1.retain(|&j| j != i);
                    }
                    c.phases.retain(|(_, s)| !s.is_empty());
                    pairs.push(c);
                }
            }
            self.pass_len = Some(pairs.len());
            let found = self.test_first("pairs", &pairs);
            self.pass_len = None;
            match found? {
                Some(k) => *cur = pairs.swap_remove(k),
                None => break,
            }
        }
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
        let mut names = Vec::new();
        let mut cands = Vec::new();
        for k in 0..c.phases.len() {
            for j in 0..c.phases[k].1.len() {
                let mut d = c.clone();
                let step = d.phases[k].1.remove(j);
                names.push(format!("phase {} step {}", c.phases[k].0 + 1, step + 1));
                cands.push(d);
            }
        }
        match self.test_all("1-minimal check", &cands) {
            Ok(holds) => Ok(Some(
                names
                    .into_iter()
                    .zip(holds)
                    .filter_map(|(n, h)| h.then_some(n))
                    .collect(),
            )),
            Err(e) if e.downcast_ref::<BudgetSpent>().is_some() => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// What `min` removed from `start` (candidates of `sig`), one line each, in the order of
/// the file: phases and their steps, prelude steps, setup, directory properties.
pub fn removed(
    sig: &measure::signature::Signature,
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

    /// ddmin with a test of one candidate at a time.
    fn one_by_one<T: Clone>(items: &[T], test: &mut dyn FnMut(&[T]) -> bool) -> Vec<T> {
        ddmin(items, &mut |cands: &[Vec<T>]| {
            cands.iter().position(|c| test(c))
        })
    }

    #[test]
    fn ddmin_finds_a_one_minimal_subset() {
        // The effect needs items 3 and 7 together (like create + rename of one file).
        let items: Vec<u32> = (1..=12).collect();
        let mut tests = 0;
        let got = one_by_one(&items, &mut |s: &[u32]| {
            tests += 1;
            s.contains(&3) && s.contains(&7)
        });
        assert_eq!(got, [3, 7]);
        assert!(tests < 40, "{tests} tests");
        // One needed item; then none needed at all.
        assert_eq!(one_by_one(&items, &mut |s: &[u32]| s.contains(&12)), [12]);
        assert!(one_by_one(&items, &mut |_: &[u32]| true).is_empty());
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
        let s = measure::signature::Signature::parse(&text, "candidate").unwrap();
        assert_eq!(s.phases[0].steps.len(), 2);
        assert_eq!(s.phases[0].steps[0].syscall, "openat");
        assert!(!s.setup.sync && s.setup.populate.is_none() && s.setup.fsync_dir);
        assert!(text.starts_with("# minimized\n"));
        // A close without its open is not a valid signature: the judge says "no".
        c.phases[0].1 = vec![3];
        let text = src.render(&c, "").unwrap();
        assert!(measure::signature::Signature::parse(&text, "candidate").is_err());
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

    /// Counts the batches it is given, and their candidates.
    struct Batches {
        needs: Needs,
        batches: usize,
        widest: usize,
    }

    impl Judge for Batches {
        fn judge(&mut self, signature: &str, dirs: &[String]) -> Result<(bool, String)> {
            self.needs.judge(signature, dirs)
        }
        fn judge_many(&mut self, batch: &[(String, Vec<String>)]) -> Result<Vec<(bool, String)>> {
            self.batches += 1;
            self.widest = self.widest.max(batch.len());
            batch.iter().map(|(s, d)| self.needs.judge(s, d)).collect()
        }
    }

    #[test]
    fn candidates_side_by_side_find_what_one_at_a_time_finds_in_fewer_rounds() {
        let start = Source::parse(&twelve_steps(), "t")
            .unwrap()
            .whole(vec!["a".into()]);
        let mut rounds = Vec::new();
        for width in [1, 3, 8] {
            let mut judge = Batches {
                needs: Needs(0),
                batches: 0,
                widest: 0,
            };
            let mut m = Minimizer::new(Source::parse(&twelve_steps(), "t").unwrap(), &mut judge);
            m.width = width;
            let found = m.run(start.clone(), false).unwrap();
            assert_eq!(found.candidate.phases, [(0, vec![3, 9])], "width {width}");
            assert_eq!(m.check_one_minimal(&found.candidate).unwrap(), Some(vec![]));
            let evaluations = m.log.len();
            drop(m);
            assert!(judge.widest <= width && judge.batches <= evaluations);
            assert_eq!(judge.needs.0, evaluations, "each candidate judged once");
            rounds.push(judge.batches);
        }
        // One at a time, every evaluation is a round; side by side, fewer.
        assert!(rounds[1] < rounds[0] && rounds[2] < rounds[1], "{rounds:?}");
    }
}
