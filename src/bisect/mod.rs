//! `sigbench bisect`: the first bad kernel of an ordered list (oldest → newest), judged by
//! the verdict engine against *both* ends.
//!
//! The first and last kernels are measured first and must differ on the metric. Then a
//! binary search: each step is measured and compared with the good end and with the bad
//! end (two comparisons, Bonferroni over the pair). Like the good end — it differs from
//! the bad end and not from the good one — or like the bad end, the other way round. A
//! step that differs from both goes to the end its median is closer to; one that differs
//! from neither gets more repetitions, up to `max_reps`, and is skipped if it still cannot
//! be told apart (like `git bisect skip`), as is a kernel that fails to unpack, boot or
//! run. The measuring is behind [`Measure`], so the search is tested without kernels.

pub mod debversion;

use crate::stats::Test;
use crate::stats::verdict::{Evidence, evidence};
use anyhow::{Result, bail};
use serde::Serialize;
use std::collections::BTreeMap;

/// What a kernel of the list gave.
pub enum Measured {
    /// The metric's value in every repetition so far.
    Samples(Vec<f64>),
    /// It could not be measured (unpack, boot or run failed): the reason.
    Failed(String),
}

/// Measures the kernel at an index of the list: `reps` repetitions in total (a kernel
/// measured before is topped up, not measured again).
pub trait Measure {
    fn measure(&mut self, index: usize, reps: u32) -> Result<Measured>;
    fn name(&self, index: usize) -> String;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    Good,
    Bad,
    Skipped,
}

/// One measured kernel.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    pub index: usize,
    pub kernel: String,
    pub samples: Vec<f64>,
    pub call: Call,
    /// Why (the evidence against each end, or why it was skipped).
    pub why: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    pub metric: String,
    /// Steps in the order they were measured (the two ends first).
    pub steps: Vec<Step>,
    /// The first bad kernel's index, when the skips leave no doubt.
    #[serde(rename = "first_bad_index")]
    pub first_bad: Option<usize>,
    /// Kernels the first bad one may be among, when skipped ones leave doubt.
    pub candidates: Vec<usize>,
}

/// Is `x` different from `y`? (raw p below `alpha / 2`: two comparisons per step.)
fn differs(x: &[f64], y: &[f64], alpha: f64) -> (bool, String) {
    let (ev, p) = evidence(x, y, true, Test::MannWhitney, alpha / 2.0, 1);
    let differs = match ev {
        Evidence::Exact => p == 0.0,
        Evidence::Undecidable => false,
        _ => p < alpha / 2.0,
    };
    let how = match ev {
        Evidence::Exact => "exact".to_string(),
        Evidence::Undecidable => "undecidable".to_string(),
        e => format!("{} p={p:.2e}", e.name()),
    };
    (differs, how)
}

fn median(v: &[f64]) -> f64 {
    crate::stats::Summary::of(v).map_or(f64::NAN, |s| s.median)
}

/// Bisect `count` kernels with `m`, starting at `reps` repetitions per kernel.
pub fn bisect(
    m: &mut dyn Measure,
    count: usize,
    metric: &str,
    reps: u32,
    max_reps: u32,
    alpha: f64,
    progress: &mut dyn FnMut(&str),
) -> Result<Outcome> {
    if count < 2 {
        bail!("bisect needs at least two kernels, oldest (good) first, newest (bad) last");
    }
    let mut steps: Vec<Step> = Vec::new();
    let samples =
        |m: &mut dyn Measure, i: usize, r: u32| -> Result<std::result::Result<Vec<f64>, String>> {
            Ok(match m.measure(i, r)? {
                Measured::Samples(s) if !s.is_empty() => Ok(s),
                Measured::Samples(_) => Err(format!("no value of {metric} in its results")),
                Measured::Failed(why) => Err(why),
            })
        };
    let (lo, hi) = (0, count - 1);
    let mut good = match samples(m, lo, reps)? {
        Ok(s) => s,
        Err(why) => bail!("the good end {} could not be measured: {why}", m.name(lo)),
    };
    let mut bad = match samples(m, hi, reps)? {
        Ok(s) => s,
        Err(why) => bail!("the bad end {} could not be measured: {why}", m.name(hi)),
    };
    // The ends must differ; more repetitions first if they cannot be told apart yet.
    let mut r = reps;
    loop {
        let (d, how) = differs(&good, &bad, alpha);
        if d {
            steps.push(Step {
                index: lo,
                kernel: m.name(lo),
                samples: good.clone(),
                call: Call::Good,
                why: "the good end".into(),
            });
            steps.push(Step {
                index: hi,
                kernel: m.name(hi),
                samples: bad.clone(),
                call: Call::Bad,
                why: format!("the bad end ({how} against the good end)"),
            });
            break;
        }
        if r >= max_reps {
            bail!(
                "{} and {} do not differ on {metric} ({how}; medians {} and {} with {r} repetitions each): nothing to bisect (another --metric, more --max-reps, or a larger N?)",
                m.name(lo),
                m.name(hi),
                median(&good),
                median(&bad)
            );
        }
        r = (r * 2).min(max_reps);
        progress(&format!("the ends do not differ yet: {r} repetitions each"));
        good = samples(m, lo, r)?.map_err(|w| anyhow::anyhow!("{}: {w}", m.name(lo)))?;
        bad = samples(m, hi, r)?.map_err(|w| anyhow::anyhow!("{}: {w}", m.name(hi)))?;
    }
    let (mut lo, mut hi) = (lo, hi);
    let mut skipped: BTreeMap<usize, String> = BTreeMap::new();
    // Kernels that did not run at all (unpack, boot, run): they cannot be the first kernel
    // that shows the change, so they drop out of the answer; undecidable ones stay in it.
    let mut failed: Vec<usize> = Vec::new();
    while hi - lo > 1 {
        let mid_goal = (lo + hi) / 2;
        let Some(mid) = (lo + 1..hi)
            .filter(|i| !skipped.contains_key(i))
            .min_by_key(|i| i.abs_diff(mid_goal))
        else {
            break;
        };
        let left = ((hi - lo - 1) as f64).log2().ceil() as usize;
        progress(&format!(
            "step {} of ~{}: {}",
            steps.len() - 1,
            steps.len() - 2 + left.max(1),
            m.name(mid)
        ));
        let mut r = reps;
        let step = loop {
            let s = match samples(m, mid, r)? {
                Ok(s) => s,
                Err(why) => {
                    failed.push(mid);
                    break Step {
                        index: mid,
                        kernel: m.name(mid),
                        samples: vec![],
                        call: Call::Skipped,
                        why,
                    };
                }
            };
            let (dg, hg) = differs(&s, &good, alpha);
            let (db, hb) = differs(&s, &bad, alpha);
            let why = format!("vs good: {hg}; vs bad: {hb}");
            let call = match (dg, db) {
                (false, true) => Some(Call::Good),
                (true, false) => Some(Call::Bad),
                (true, true) => {
                    let x = median(&s);
                    Some(if (x - median(&good)).abs() <= (x - median(&bad)).abs() {
                        Call::Good
                    } else {
                        Call::Bad
                    })
                }
                (false, false) => None,
            };
            match call {
                Some(c) => {
                    break Step {
                        index: mid,
                        kernel: m.name(mid),
                        samples: s,
                        call: c,
                        why,
                    };
                }
                None if r >= max_reps => {
                    break Step {
                        index: mid,
                        kernel: m.name(mid),
                        samples: s,
                        call: Call::Skipped,
                        why: format!("undecidable with {r} repetitions ({why})"),
                    };
                }
                None => {
                    r = (r * 2).min(max_reps);
                    progress(&format!("{}: undecidable, {r} repetitions", m.name(mid)));
                }
            }
        };
        match step.call {
            Call::Good => lo = mid,
            Call::Bad => hi = mid,
            Call::Skipped => {
                progress(&format!("{} skipped: {}", step.kernel, step.why));
                skipped.insert(mid, step.why.clone());
            }
        }
        steps.push(step);
    }
    let candidates: Vec<usize> = (lo + 1..=hi).filter(|i| !failed.contains(i)).collect();
    let first_bad = (candidates.len() == 1).then_some(hi);
    Ok(Outcome {
        metric: metric.to_string(),
        steps,
        first_bad,
        candidates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kernels whose metric is 0 up to `first_bad` and ~1424 from there; some broken.
    struct Fake {
        first_bad: usize,
        broken: Vec<usize>,
        measured: Vec<usize>,
    }

    impl Measure for Fake {
        fn measure(&mut self, i: usize, reps: u32) -> Result<Measured> {
            self.measured.push(i);
            if self.broken.contains(&i) {
                return Ok(Measured::Failed("did not boot".into()));
            }
            let v = if i >= self.first_bad { 1424.0 } else { 0.0 };
            Ok(Measured::Samples(
                (0..reps).map(|k| v + (k % 2) as f64 * v * 0.01).collect(),
            ))
        }
        fn name(&self, i: usize) -> String {
            format!("k{i}")
        }
    }

    #[test]
    fn finds_the_first_bad_kernel_and_skips_broken_ones() {
        for n in 2..12 {
            for first_bad in 1..n {
                let mut f = Fake {
                    first_bad,
                    broken: vec![],
                    measured: vec![],
                };
                let o = bisect(&mut f, n, "m", 3, 9, 0.05, &mut |_| {}).unwrap();
                assert_eq!(o.first_bad, Some(first_bad), "n={n}");
                assert!(
                    f.measured.len() <= 2 + (n as f64).log2().ceil() as usize,
                    "{:?}",
                    f.measured
                );
            }
        }
        // A broken kernel in the middle: skipped, said so, same answer.
        let mut f = Fake {
            first_bad: 3,
            broken: vec![2],
            measured: vec![],
        };
        let o = bisect(&mut f, 5, "m", 3, 9, 0.05, &mut |_| {}).unwrap();
        assert_eq!(o.first_bad, Some(3));
        assert!(
            o.steps
                .iter()
                .any(|s| s.index == 2 && s.call == Call::Skipped)
        );
        // Right before the first bad one too: a kernel that does not run cannot be it.
        let mut f = Fake {
            first_bad: 3,
            broken: vec![2],
            measured: vec![],
        };
        let o = bisect(&mut f, 4, "m", 3, 9, 0.05, &mut |_| {}).unwrap();
        assert_eq!(o.first_bad, Some(3), "{o:?}");
    }

    #[test]
    fn ends_that_do_not_differ_stop_the_bisect() {
        let mut f = Fake {
            first_bad: 99,
            broken: vec![],
            measured: vec![],
        };
        let e = bisect(&mut f, 4, "m", 3, 6, 0.05, &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("do not differ on m"), "{e}");
    }
}
