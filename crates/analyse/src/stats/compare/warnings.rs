//! What a comparison warns of: unstable or few samples, mixed clocks, labels that do not
//! match, blocks of repetitions apart.

use super::*;

/// What a label's times count, in one sentence, when it is not simply the hardware's clock.
pub fn clock_note(bases: &BTreeSet<TimeBase>) -> Option<String> {
    if bases.iter().any(|b| b.deterministic()) {
        Some(model::clock::ICOUNT_NOTE.to_string())
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
        // What so few values can still decide (`verdict::evidence`): nothing from one value
        // a side; from two to four, only sides that do not overlap and lie three spreads
        // apart (the rule for small samples) — a smaller change stays undecidable.
        let can = if lo < 2 {
            "one value a side decides nothing (use -r 3 or more)".to_string()
        } else {
            format!(
                "only changes whose two sides do not overlap and lie 3 spreads apart can be called; smaller ones need -r {MIN_SAMPLES} or more"
            )
        };
        v.push(format!(
            "{label}: only {counts} sample(s) per case in {} case(s) ({}): {can}",
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The warning says what so few values can still decide, not that nothing can: three
    /// values a side are called by separation (`verdict::evidence`), one never.
    #[test]
    fn few_samples_say_what_they_can_still_decide() {
        let few = |n: usize| {
            let mut m = BTreeMap::new();
            m.insert("a".to_string(), vec![("churn/N=2000".to_string(), n)]);
            few_samples_warnings(m).remove(0)
        };
        let three = few(3);
        assert!(
            three.starts_with("a: only 3 sample(s) per case in 1 case(s) (churn/N=2000): only changes whose two sides do not overlap"),
            "{three}"
        );
        assert!(!three.contains("needed for a verdict"), "{three}");
        let one = few(1);
        assert!(
            one.ends_with("one value a side decides nothing (use -r 3 or more)"),
            "{one}"
        );
        // And the rule agrees: 3 separated values a side are called, 1 a side never.
        let (e, _) = crate::stats::verdict::evidence(
            &[10.0, 10.1, 10.05],
            &[12.0, 12.1, 12.05],
            false,
            Test::MannWhitney,
            0.05,
            1,
            0.001,
        );
        assert_eq!(e, crate::stats::verdict::Evidence::Separation);
        let (e, _) = crate::stats::verdict::evidence(
            &[10.0],
            &[12.0],
            false,
            Test::MannWhitney,
            0.05,
            1,
            0.001,
        );
        assert_eq!(e, crate::stats::verdict::Evidence::Undecidable);
    }
}
