//! `sigbench watch`: a series of kernels (release order), every `compare` metric of every
//! case watched for a change that stays (`stats::changepoint`), each change measured again
//! before it alerts, localised by bisect, and remembered in the store (`store::changes`)
//! so that no change alerts twice. The pure parts live here: the series' identity, which
//! stored runs belong to it, the metric series built from the runs, which kernels to
//! measure first (`--every`), and a change found matched with what the store remembers.
//! `cmd/watch.rs` measures and reports.

use crate::clock::TimeBase;
use crate::plan::Plan;
use crate::results::RunDocument;
use crate::stats::changepoint::{Change, Series};
use crate::stats::compare::{Kind, Samples};
use crate::store::changes::ChangeRecord;
use std::collections::BTreeMap;

/// What identifies a series in the store: the signature (name and digest), the
/// filesystem, directories and N, and the clock. Runs of another plan or clock are another
/// series.
pub fn series_key(plan: &Plan, timebase: &TimeBase) -> String {
    let dirs: Vec<&str> = plan.dirs.iter().map(|d| d.text.as_str()).collect();
    let ns: Vec<String> = plan.n_values.iter().map(u64::to_string).collect();
    format!(
        "{} ({}) on {} [{}] N={}, {timebase}",
        plan.signature.name,
        &plan.signature.hash[..plan.signature.hash.len().min(12)],
        plan.testbed.fs.name(),
        dirs.join(" | "),
        ns.join(",")
    )
}

/// A stored run that measured `plan` (signature, filesystem, directories, N) completely
/// on `timebase`: a point of the series (and a step `bisect --resume` reuses).
pub fn same_plan(d: &RunDocument, plan: &Plan, timebase: &TimeBase) -> bool {
    d.host.timebase() == *timebase
        && d.signature.sha256 == plan.signature.hash
        && d.testbed.fs == plan.testbed.fs.name()
        && d.plan.dirs.len() == plan.dirs.len()
        && d.plan
            .dirs
            .iter()
            .zip(&plan.dirs)
            .all(|(a, b)| *a == b.text)
        && d.plan.n == plan.n_values
        && d.status == "complete"
}

/// The indexes `--every K` measures first: every K-th kernel from the oldest, and the
/// newest.
pub fn every(count: usize, k: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..count).step_by(k.max(1)).collect();
    if count > 0 && v.last() != Some(&(count - 1)) {
        v.push(count - 1);
    }
    v
}

/// Every metric of every case over the kernels (`points[i]`: kernel i's runs, empty when
/// it was not measured), named `DIR/N=… METRIC` as `compare`'s rows are. Times are judged
/// against `time_floor` (their clock's), everything else against the default floor.
pub fn metric_series(points: &[Vec<RunDocument>], time_floor: f64) -> Vec<Series> {
    let mut by: BTreeMap<String, (Kind, Vec<Vec<f64>>)> = BTreeMap::new();
    // Per kernel and case, its repetitions: a kernel-wide delta is stored only when it is
    // not 0, so a kernel measured without it had 0 in every repetition.
    let mut reps: BTreeMap<(usize, String), usize> = BTreeMap::new();
    for (i, runs) in points.iter().enumerate() {
        if runs.is_empty() {
            continue;
        }
        let s = Samples::from_runs("", runs);
        for (case, metrics) in &s.cases {
            let n = metrics.get("wall_ms").map_or(0, |m| m.1.len());
            reps.insert((i, case.short()), n);
            for (metric, (kind, values)) in metrics {
                let name = format!("{} {metric}", case.short());
                let e = by
                    .entry(name)
                    .or_insert_with(|| (*kind, vec![Vec::new(); points.len()]));
                e.1[i] = values.clone();
            }
        }
    }
    by.into_iter()
        .map(|(metric, (kind, mut points))| {
            if kind == Kind::Kernel {
                let case = metric.split(' ').next().unwrap_or_default().to_string();
                for (i, p) in points.iter_mut().enumerate() {
                    if p.is_empty() {
                        *p = vec![0.0; reps.get(&(i, case.clone())).copied().unwrap_or(0)];
                    }
                }
            }
            Series {
                metric,
                exact: kind == Kind::Counter,
                floor: match kind {
                    Kind::Time | Kind::Latency => time_floor,
                    _ => crate::stats::verdict::NOISE_FLOOR,
                },
                points,
            }
        })
        .collect()
}

/// The stored change point (its place in `stored`) a change found now is, if any: the same
/// metric, and the stored kernels' interval (last good, first bad] overlapping the found
/// one's. A change found again after more kernels, or narrowed by a bisect, is the same
/// change.
pub fn known(found: &Change, names: &[String], stored: &[ChangeRecord]) -> Option<usize> {
    let at = |k: &str| names.iter().position(|n| n == k);
    stored.iter().position(|r| {
        if r.metric != found.metric {
            return false;
        }
        match (at(&r.last_good), at(&r.first_bad)) {
            (Some(g), Some(b)) => g < found.first_after && found.last_before < b,
            // A kernel no longer in the list: matched by name.
            _ => r.first_bad == names[found.first_after],
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::changepoint::{Params, changes};
    use crate::store::changes::Status;

    #[test]
    fn every_kth_and_the_newest() {
        assert_eq!(every(5, 3), [0, 3, 4]);
        assert_eq!(every(5, 2), [0, 2, 4]);
        assert_eq!(every(5, 1), [0, 1, 2, 3, 4]);
        assert_eq!(every(1, 3), [0]);
        assert!(every(0, 3).is_empty());
    }

    fn doc(kernel: &str, wall: f64, maple: i64) -> RunDocument {
        let mut d = crate::results::fixtures::doc("l", &[wall; 3], &[maple; 3]);
        d.host.kernel_release = kernel.into();
        d
    }

    fn record(metric: &str, g: &str, b: &str) -> ChangeRecord {
        ChangeRecord {
            id: 1,
            series: "s".into(),
            metric: metric.into(),
            status: Status::Confirmed,
            last_good: g.into(),
            first_bad: b.into(),
            before: 1.0,
            after: 2.0,
            p: 0.0,
            confirmed: None,
            culprit: None,
            report: None,
            found_at: String::new(),
        }
    }

    #[test]
    fn the_series_has_every_metric_and_its_change() {
        let names: Vec<String> = ["a", "b", "c", "d", "e"].map(String::from).into();
        let levels = [
            (100.0, 0),
            (100.1, 0),
            (110.0, 1400),
            (110.2, 1400),
            (110.1, 1400),
        ];
        let points: Vec<Vec<RunDocument>> = names
            .iter()
            .zip(levels)
            .map(|(k, (w, m))| vec![doc(k, w, m)])
            .collect();
        let series = metric_series(&points, 0.001);
        let wall = series
            .iter()
            .find(|s| s.metric.ends_with(" wall_ms"))
            .unwrap();
        assert_eq!(wall.points.len(), 5);
        assert_eq!(wall.floor, 0.001);
        let found = changes(&series, &Params::default());
        let metrics: Vec<&str> = found.iter().map(|c| c.metric.as_str()).collect();
        assert!(
            metrics.iter().any(|m| m.ends_with(" wall_ms")),
            "{metrics:?}"
        );
        assert!(found.iter().all(|c| c.first_after == 2), "{found:?}");
        // A second run: every change is known, none is new.
        let wall_change = found
            .iter()
            .find(|c| c.metric.ends_with(" wall_ms"))
            .unwrap();
        let stored = vec![record(&wall_change.metric, "b", "c")];
        assert_eq!(known(wall_change, &names, &stored), Some(0));
        // Narrowed by a bisect to (b, c] of a longer list, or still (a, c]: the same.
        let stored = vec![record(&wall_change.metric, "a", "c")];
        assert_eq!(known(wall_change, &names, &stored), Some(0));
        // Another metric, or an interval elsewhere: not this change.
        assert_eq!(known(wall_change, &names, &[record("x", "b", "c")]), None);
        assert_eq!(
            known(
                wall_change,
                &names,
                &[record(&wall_change.metric, "c", "e")]
            ),
            None
        );
    }
}
