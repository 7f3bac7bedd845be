//! What a comparison warns of: unstable or few samples, mixed clocks, labels that do not
//! match, blocks of repetitions apart.

use super::*;

/// What a label's times count, in one sentence, when it is not simply the hardware's clock.
pub fn clock_note(bases: &BTreeSet<TimeBase>) -> Option<String> {
    if bases.iter().any(|b| b.deterministic()) {
        Some(crate::clock::ICOUNT_NOTE.to_string())
    } else if bases.contains(&TimeBase::Emulated) {
        Some("timings emulated (TCG): compare counts, not times".to_string())
    } else {
        None
    }
}

/// A label's wall times in one case that vary too much, or a slow first repetition.
pub(super) fn stability_warnings(s: &Samples, case: &CaseKey, wall: &[f64]) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(sum) = Summary::of(wall)
        && sum.cv > MAX_CV
    {
        v.push(format!(
            "{} {}: wall time varies a lot between repetitions (CV {:.1}% > {:.0}%)",
            s.label,
            case.short(),
            sum.cv * 100.0,
            MAX_CV * 100.0
        ));
    }
    if wall.len() >= 3
        && let (Some(&first), Some(rest)) = (s.first_wall.get(case), Summary::of(&wall[1..]))
        && first > rest.median * 1.2
    {
        v.push(format!(
            "{} {}: the first repetition took {:.0}% longer than the median of the others (a cold start? try --warmup 1)",
            s.label,
            case.short(),
            (first / rest.median - 1.0) * 100.0
        ));
    }
    v
}

/// What a pair of labels should be told: measured in separate blocks of time, cases only
/// one side has, nothing in common.
pub(super) fn pair_warnings(base: &Samples, other: &Samples, no_rows: bool) -> Vec<String> {
    // Separate blocks on the host's clock: said with the drift allowed (`Drift`); a
    // deterministic clock does not drift (its states are said with the labels).
    let mut v = Vec::new();
    let unmatched: Vec<String> = base
        .cases
        .keys()
        .filter(|k| !other.cases.contains_key(*k))
        .chain(other.cases.keys().filter(|k| !base.cases.contains_key(*k)))
        .map(|k| format!("{} {}", k.signature, k.short()))
        .collect();
    if !unmatched.is_empty() {
        v.push(format!(
            "{} vs {}: {} case(s) only on one side, not compared: {}",
            base.label,
            other.label,
            unmatched.len(),
            unmatched.join(", ")
        ));
    }
    if no_rows {
        v.push(format!(
            "{} and {} have no case in common (same signature, directory and N)",
            base.label, other.label
        ));
    }
    v
}

/// One warning per label with cases of too few samples for a verdict.
pub(super) fn few_samples_warnings(few: BTreeMap<String, Vec<(String, usize)>>) -> Vec<String> {
    let mut v = Vec::new();
    for (label, mut cases) in few {
        cases.sort();
        cases.dedup();
        let lo = cases.iter().map(|c| c.1).min().unwrap_or(0);
        let hi = cases.iter().map(|c| c.1).max().unwrap_or(0);
        let counts = if lo == hi {
            format!("{lo}")
        } else {
            format!("{lo}–{hi}")
        };
        let mut names: Vec<String> = cases.iter().take(4).map(|c| c.0.clone()).collect();
        if cases.len() > 4 {
            names.push(format!("… {} more", cases.len() - 4));
        }
        v.push(format!(
            "{label}: only {counts} sample(s) per case in {} case(s) ({}); at least {MIN_SAMPLES} per side are needed for a verdict (use -r)",
            cases.len(),
            names.join(", ")
        ));
    }
    v
}

/// "A before B" when every run of one label started before every run of the other.
pub(super) fn separate_blocks(a: &Samples, b: &Samples) -> Option<String> {
    let (amin, amax) = (a.started.iter().min()?, a.started.iter().max()?);
    let (bmin, bmax) = (b.started.iter().min()?, b.started.iter().max()?);
    if amax < bmin {
        Some(format!("{} (first) and {}", a.label, b.label))
    } else if bmax < amin {
        Some(format!("{} (first) and {}", b.label, a.label))
    } else {
        None
    }
}
