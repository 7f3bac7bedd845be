//! The changes of a watched series the store does not know yet (`examine`): each
//! measured again (confirmed or rejected) and bisected — over the kernels between that were
//! not measured, then with `--tree` over the commits between two releases.

use super::series::Watch;
use crate::bisect::steps::{Bisected, Kernels, Remote, Steps, last_good};
use crate::bisect::tree::{TreeRange, over_tree};
use crate::bisect::{Params as BisectParams, Progress, bisect};
use analyse::stats::changepoint::Change;
use analyse::stats::compare::MetricKey;
use analyse::store::Store;
use analyse::store::changes::{ChangeRecord, Status};
use anyhow::Result;
use model::results::RunDocument;
use std::path::PathBuf;

/// A change confirmed between kernels `g` and `b`: a record per metric (`confirmed`
/// indexes those that alert), and the bisects that ran.
pub struct Alert {
    pub g: usize,
    pub b: usize,
    pub records: Vec<ChangeRecord>,
    pub confirmed: Vec<usize>,
    pub kernels: Option<crate::bisect::Report>,
    /// The bisect over the commits (`--tree`), as measured: its report, with the
    /// evidence of what changed, is drawn by the layer that presents it.
    pub commits: Option<Bisected>,
}

/// The changes of the series the store does not know yet, by where they are: each place
/// measured again once, and bisected when confirmed (with `rev_map`, `--tree`, on to the
/// commit). A place not confirmed is a line of `out`.
pub fn examine(
    w: &mut Watch,
    key: &str,
    rev_map: Option<&(PathBuf, super::RevMap)>,
    out: &mut String,
) -> Result<Vec<Alert>> {
    let (found, evidence) = w.changes()?;
    for line in super::evidence_only(&found, &evidence, &w.names) {
        w.say(&line);
    }
    let stored = w.store.changes(Some(key))?;
    let mut alerts = Vec::new();
    let mut at: Vec<(usize, usize)> = found
        .iter()
        .map(|c| (c.last_before, c.first_after))
        .collect();
    at.sort_unstable();
    at.dedup();
    for (g, b) in at {
        let here: Vec<&Change> = found
            .iter()
            .filter(|c| (c.last_before, c.first_after) == (g, b))
            .filter(|c| {
                super::known(c, &w.names, &stored)
                    .is_none_or(|k| stored[k].status == Status::New && !stored[k].silenced())
                    && !super::reported(c, &w.names, &stored)
            })
            .collect();
        if here.is_empty() {
            continue;
        }
        w.say(&format!(
            "{} metric(s) changed from {} to {}: measuring both again",
            here.len(),
            w.names[g],
            w.names[b]
        ));
        let mut records = confirm(w, key, g, b, &here, &stored)?;
        let confirmed: Vec<usize> = (0..records.len())
            .filter(|&k| records[k].status == Status::Confirmed)
            .collect();
        if confirmed.is_empty() {
            let retry = records.iter().any(|r| r.status == Status::New);
            out.push_str(&format!(
                "change from {} to {}: {}\n",
                w.names[g],
                w.names[b],
                if retry {
                    "could not be confirmed (its kernels gave no runs again); the next watch tries again"
                } else {
                    "not confirmed (rejected)"
                }
            ));
            continue;
        }
        let kernels = localise(w, g, b, &mut records, &confirmed)?;
        let commits = match rev_map {
            Some(map) => to_commit(w, map, &mut records, &confirmed)?,
            None => None,
        };
        for k in &confirmed {
            w.store.keep_change(&mut records[*k])?;
        }
        alerts.push(Alert {
            g,
            b,
            records,
            confirmed,
            kernels,
            commits,
        });
    }
    Ok(alerts)
}

/// Measure the last kernel before the change (`g`) and the first after it (`b`) again,
/// interleaved (g, b, g, b), and judge each changed metric on those runs alone: the
/// verdict engine, Holm over the metrics, and the change in the direction found. Returns
/// each change as a record (stored), confirmed or rejected.
pub fn confirm(
    w: &mut Watch,
    key: &str,
    g: usize,
    b: usize,
    here: &[&Change],
    stored: &[ChangeRecord],
) -> Result<Vec<ChangeRecord>> {
    let half = w.settings.confirm_reps.max(2).div_ceil(2);
    let docs = w.boot(&[(g, half), (b, half), (g, half), (b, half)])?;
    let side = |k: usize| -> Vec<RunDocument> {
        docs.iter().skip(k).step_by(2).flatten().cloned().collect()
    };
    let (good, bad) = (side(0), side(1));
    let judged = super::confirm(&good, &bad, here, w.timebase.noise_floor());
    let mut out = Vec::new();
    let mut unconfirmed = Vec::new();
    for (c, (confirmation, yes)) in here.iter().zip(judged) {
        let mut r = match super::known(c, &w.names, stored) {
            Some(k) => stored[k].clone(),
            None => super::new_record(key, c, &w.names),
        };
        let Some(k) = &confirmation else {
            // Nothing was measured on one side (its boots failed): no evidence either
            // way. The change stays new, so the next watch measures it again.
            unconfirmed.push(c.metric.clone());
            r.status = Status::New;
            w.store.keep_change(&mut r)?;
            out.push(r);
            continue;
        };
        let p = k.p;
        r.confirmed = confirmation;
        r.status = if yes {
            Status::Confirmed
        } else {
            Status::Rejected
        };
        w.say(&format!(
            "{}: {} (p {p:.2e})",
            c.metric,
            if yes { "confirmed" } else { "rejected" }
        ));
        w.store.keep_change(&mut r)?;
        out.push(r);
    }
    if let Some(first) = unconfirmed.first() {
        w.unconfirmed += 1;
        w.say(&format!(
            "could not confirm {} metric(s) ({first}{}): {} and {} gave no runs again (see the boots above); they stay new, and the next watch measures them again",
            unconfirmed.len(),
            if unconfirmed.len() > 1 { ", …" } else { "" },
            w.names[g],
            w.names[b]
        ));
    }
    Ok(out)
}

/// The bisect steps and parameters for `metric` (`DIR/N=… NAME`) of the watched plan:
/// stored runs are reused, so a step measured once is never measured again.
fn bisect_setup<'a>(
    w: &'a Watch,
    metric: &MetricKey,
    count: usize,
) -> Result<(Steps<'a>, BisectParams)> {
    let name = &metric.name;
    let (dir, n) = (&metric.case.dir, metric.case.n);
    let steps = Steps {
        plan: &w.plan,
        verbose: w.settings.verbose,
        opts: w.opts.clone(),
        store: Store::open(&w.settings.db)?,
        resume: true,
        metric: name.clone(),
        case: Some((dir.to_string(), n)),
        timebase: w.timebase.clone(),
        docs: vec![None; count],
        measured_now: Vec::new(),
    };
    let params = BisectParams {
        metric: name.clone(),
        reps: w.settings.repetitions.max(1),
        max_reps: w.settings.max_reps.max(w.settings.repetitions),
        alpha: 0.05,
        jobs: w.jobs,
    };
    Ok((steps, params))
}

fn progress(p: Progress) {
    match p {
        Progress::Note(msg) => model::say!("sigbench: watch: bisect: {msg}"),
        Progress::Step { name, .. } => model::say!("sigbench: watch: bisect: {name}"),
    }
}

/// A bisect that ended in an error other than an interrupt: said, and not an alert's end.
fn failed_bisect<T>(w: &Watch, e: anyhow::Error) -> Result<Option<T>> {
    if measure::interrupt::Interrupted::caused(&e) {
        return Err(e);
    }
    w.say(&format!("the bisect found nothing: {e:#}"));
    Ok(None)
}

/// Bisect the kernels between `g` and `b` that were not measured, on the confirmed metric
/// that moved most; the first bad one becomes the changes' culprit. With none between,
/// `b` is the culprit.
pub fn localise(
    w: &mut Watch,
    g: usize,
    b: usize,
    records: &mut [ChangeRecord],
    confirmed: &[usize],
) -> Result<Option<crate::bisect::Report>> {
    let between: Vec<usize> = (g + 1..b).filter(|&i| w.keys[i].is_some()).collect();
    let lead = super::lead(records, confirmed, false);
    if between.is_empty() {
        for &k in confirmed {
            records[k].culprit = Some(w.names[b].clone());
        }
        return Ok(None);
    }
    let metric = records[lead].metric.clone();
    let idx: Vec<usize> = std::iter::once(g)
        .chain(between)
        .chain(std::iter::once(b))
        .collect();
    w.say(&format!(
        "bisecting the {} kernel(s) between {} and {} on {metric}",
        idx.len() - 2,
        w.names[g],
        w.names[b]
    ));
    let (steps, params) = bisect_setup(w, &metric, idx.len())?;
    let mut m = Kernels {
        steps,
        specs: idx.iter().map(|&i| w.specs[i].clone()).collect(),
        releases: idx.iter().map(|&i| Some(w.names[i].clone())).collect(),
        changelogs: vec![None; idx.len()],
        jobs: w.jobs,
        ahead: Default::default(),
        remote: w
            .remote
            .as_deref()
            .map(|r| -> Box<dyn Remote + '_> { Box::new(r) }),
    };
    let outcome = match bisect(&mut m, idx.len(), &params, &mut progress) {
        Ok(o) => o,
        Err(e) => return failed_bisect(w, e),
    };
    let docs = std::mem::take(&mut m.steps.docs);
    drop(m);
    // What the bisect measured is part of the series from now on.
    for (j, &i) in idx.iter().enumerate() {
        if let Some(d) = &docs[j]
            && w.points[i].is_empty()
        {
            w.points[i] = d.clone();
        }
    }
    let names: Vec<String> = idx.iter().map(|&i| w.names[i].clone()).collect();
    let report = crate::bisect::Report::new(
        format!("{} kernels", idx.len()),
        w.plan.signature.name.clone(),
        names,
        outcome,
    );
    // The change now lies between the bisect's last good and first bad kernels.
    if let Some(f) = report.outcome.first_bad {
        let last_good = last_good(&report.outcome, f).unwrap_or(0);
        for &k in confirmed {
            records[k].last_good = report.kernels[last_good].clone();
            records[k].first_bad = report.kernels[f].clone();
            records[k].culprit = Some(report.kernels[f].clone());
            records[k].status = Status::Bisected;
        }
    }
    Ok(Some(report))
}

/// `--tree`: bisect the commits between the last good release and the first bad one
/// (each mapped to its revision) on the confirmed metric that moved most, as
/// `bisect --tree` does; the first bad commit becomes the changes' culprit.
pub fn to_commit(
    w: &mut Watch,
    (dir, map): &(PathBuf, super::RevMap),
    records: &mut [ChangeRecord],
    confirmed: &[usize],
) -> Result<Option<Bisected>> {
    let lead = super::lead(records, confirmed, false);
    let r = &records[lead];
    let bad_release = r.culprit.clone().unwrap_or_else(|| r.first_bad.clone());
    let repo = crate::bisect::git::Repo::open(dir)?;
    let mut revs = Vec::new();
    for release in [&r.last_good, &bad_release] {
        let found = map
            .candidates(release)
            .into_iter()
            .find(|rev| repo.commit(rev).is_ok());
        match found {
            Some(rev) => revs.push(rev),
            None => {
                w.say(&format!(
                    "--tree {}: no revision for {release} (add `{release} REVISION` to --rev-map, or tag it): not bisected over the commits",
                    dir.display()
                ));
                return Ok(None);
            }
        }
    }
    let metric = r.metric.clone();
    w.say(&format!(
        "bisecting the commits from {} ({}) to {} ({}) on {metric}",
        r.last_good, revs[0], bad_release, revs[1]
    ));
    let range = TreeRange {
        dir,
        good: &revs[0],
        bad: &revs[1],
        config: w.settings.config.as_deref(),
        jobs_asked: w.settings.jobs_asked,
    };
    let (steps, params) = bisect_setup(w, &metric, 0)?;
    let done = match over_tree(&range, steps, &params, &mut progress) {
        Ok(d) => d,
        Err(e) => return failed_bisect(w, e),
    };
    if let Some(f) = done.report(&w.plan.signature.name).first_bad {
        for &k in confirmed {
            records[k].culprit = Some(f.clone());
            records[k].status = Status::Culprit;
        }
    }
    Ok(Some(done))
}
