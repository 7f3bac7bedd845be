//! The judge that replays candidates: here, on this kernel, one after another; or in
//! guests of another kernel (`minimize --kernel`), up to J side by side (`vm::guests`), as
//! `run --kernel` boots them. The predicate is read from the run document either way.

use super::Judge;
use super::predicate::{Predicate, Values};
use anyhow::{Result, bail};
use measure::plan::Plan;
use measure::vm::VmOptions;
use measure::vm::guests::{self, Boot};
use measure::vm::kernel::KernelSpec;
use model::results::RunDocument;
use std::collections::BTreeMap;

/// Where candidates run when not here: a kernel in guests, `jobs` at once.
pub struct InGuest {
    /// The kernel as given, and its spec.
    pub kernel: (String, KernelSpec),
    /// Its release, as it says.
    pub release: String,
    pub opts: VmOptions,
    pub jobs: usize,
    pub verbose: bool,
}

/// Replays candidates with the plan as the user gave it (filesystem, N, device, options),
/// each candidate's signature and directories, `reps` repetitions; the predicate must hold
/// in every one.
pub struct RunJudge {
    pub plan: Plan,
    pub predicate: Predicate,
    pub reps: u32,
    /// The predicate's metrics were found in an evaluation's results (the first one
    /// checks: a typo must not read as 0 and "hold" everywhere).
    pub checked: bool,
    /// None: here, on this kernel.
    pub guest: Option<InGuest>,
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

impl measure::plan::Observer for Quiet {
    fn case_started(&mut self, _: &measure::plan::Case, _: &Plan, _: u64) {}
    fn tick(&mut self, _: u64) {}
    fn case_done(&mut self, _: &model::results::CaseResult, _: &Plan) -> anyhow::Result<()> {
        Ok(())
    }
    fn warning(&mut self, _: &str) {}
}

impl RunJudge {
    /// The plan of one candidate, or why it is not a valid one.
    fn plan_of(&self, signature: &str, dirs: &[String]) -> Result<Plan, String> {
        let sig = measure::signature::Signature::parse(signature, "candidate")
            .map_err(|e| format!("invalid: {e:#}"))?;
        let fs = self.plan.testbed.fs;
        let specs = dirs
            .iter()
            .map(|d| measure::testbed::DirSpec::parse(d, fs))
            .collect::<Result<Vec<_>>>()
            .map_err(|e| format!("invalid: {e:#}"))?;
        Ok(Plan {
            signature: sig,
            dirs: specs,
            repetitions: self.reps,
            ..self.plan.clone()
        })
    }

    /// Replay `plan` here.
    fn here(&mut self, plan: &Plan) -> Result<(bool, String)> {
        let mut doc = plan.document_here();
        if let Err(e) = plan.execute(&mut doc, &mut Quiet) {
            if measure::interrupt::Interrupted::caused(&e) {
                return Err(e);
            }
            return Ok((false, format!("replay failed: {e:#}")));
        }
        self.verdict(plan, &doc)
    }

    /// Replay `plans` in guests of the kernel, side by side; a kernel that cannot be
    /// prepared or booted ends the minimization (every candidate would fail on it).
    fn in_guests(&mut self, plans: &[Plan]) -> Result<Vec<(bool, String)>> {
        let g = self.guest.as_ref().expect("a guest judge");
        let boots: Vec<Boot> = plans
            .iter()
            .map(|p| Boot {
                name: g.kernel.0.clone(),
                spec: g.kernel.1.clone(),
                plan: p.clone(),
            })
            .collect();
        let mut runs = Vec::with_capacity(boots.len());
        guests::run_boots(
            &boots,
            g.jobs,
            &g.opts,
            g.verbose,
            &|_, _| {},
            &mut |_, booted| {
                runs.push(booted?.1);
                Ok(())
            },
        )?;
        plans
            .iter()
            .zip(runs)
            .map(|(plan, run)| match (run.doc, run.error) {
                // What the guest's run said, else how the guest ended.
                (Some(doc), Some(_)) if doc.error.is_some() => Ok((
                    false,
                    format!("replay failed: {}", doc.error.unwrap_or_default()),
                )),
                (_, Some(e)) => Ok((
                    false,
                    format!("replay failed: {}", measure::interrupt::step_failed(e)?),
                )),
                (Some(doc), None) => self.verdict(plan, &doc),
                (None, None) => Ok((false, "the guest sent no results".into())),
            })
            .collect()
    }

    /// Whether the predicate holds in every repetition of `doc` (and its value), or why not.
    fn verdict(&mut self, plan: &Plan, doc: &RunDocument) -> Result<(bool, String)> {
        let names: Vec<String> = plan.dirs.iter().map(|d| d.name.clone()).collect();
        let mut groups: BTreeMap<(u64, u32), CaseValues> = BTreeMap::new();
        for c in doc.cases.iter().filter(|c| !c.warmup) {
            let g = groups.entry((c.n, c.rep)).or_insert_with(|| CaseValues {
                n: c.n as f64,
                by_dir: BTreeMap::new(),
            });
            let m = g.by_dir.entry(c.dir.clone()).or_default();
            // The predicate names metrics in text (the user's `--until`).
            for (metric, value) in analyse::stats::compare::metrics_of(c) {
                m.insert(metric.to_string(), value);
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

impl Judge for RunJudge {
    fn judge(&mut self, signature: &str, dirs: &[String]) -> Result<(bool, String)> {
        let batch = [(signature.to_string(), dirs.to_vec())];
        Ok(self.judge_many(&batch)?.remove(0))
    }

    fn judge_many(&mut self, batch: &[(String, Vec<String>)]) -> Result<Vec<(bool, String)>> {
        let plans: Vec<Result<Plan, String>> =
            batch.iter().map(|(s, d)| self.plan_of(s, d)).collect();
        if self.guest.is_none() {
            return plans
                .iter()
                .map(|p| match p {
                    Ok(plan) => self.here(plan),
                    Err(why) => Ok((false, why.clone())),
                })
                .collect();
        }
        let valid: Vec<Plan> = plans
            .iter()
            .filter_map(|p| p.as_ref().ok())
            .cloned()
            .collect();
        let mut ran = self.in_guests(&valid)?.into_iter();
        Ok(plans
            .into_iter()
            .map(|p| match p {
                Ok(_) => ran.next().expect("a verdict per valid candidate"),
                Err(why) => (false, why),
            })
            .collect())
    }
}
