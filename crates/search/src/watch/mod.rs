//! `sigbench watch`: a series of kernels (release order), every `compare` metric of every
//! case watched for a change that stays (`stats::changepoint`), each change measured again
//! before it alerts, localised by bisect, and remembered in the store (`store::changes`)
//! so that no change alerts twice. The pure parts live here: the series' identity, which
//! stored runs belong to it, the metric series built from the runs, which kernels to
//! measure first (`--every`), and a change found matched with what the store remembers.
//! `series` measures a series of kernels and examines its changes, `locate` confirms and
//! bisects one; `cmd/watch/` parses, reports and prints.

pub mod locate;
pub mod series;

use analyse::stats::changepoint::{Change, Series};
use analyse::stats::compare::{CaseKey, MetricKey, Samples};
use analyse::stats::summary::median_of;
use analyse::stats::verdict::{holm, judge};
use analyse::store::changes::{ChangeRecord, Confirmation};
use model::metric::{Kind, Metric, Source};
use model::results::RunDocument;
use std::collections::BTreeMap;

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
/// against `time_floor` (their clock's), everything else against the default floor;
/// `named` are the metrics that alert besides the primary ones ([`Metric::primary`]).
pub fn metric_series(
    points: &[Vec<RunDocument>],
    time_floor: f64,
    named: &[Metric],
) -> Vec<Series> {
    let mut by: BTreeMap<MetricKey, Vec<Vec<f64>>> = BTreeMap::new();
    // Per kernel and case, its repetitions: a kernel-wide delta is stored only when it is
    // not 0, so a kernel measured without it had 0 in every repetition.
    let mut reps: BTreeMap<(usize, CaseKey), usize> = BTreeMap::new();
    for (i, runs) in points.iter().enumerate() {
        if runs.is_empty() {
            continue;
        }
        let s = Samples::from_runs("", runs);
        for (case, metrics) in &s.cases {
            let n = metrics.get(&Metric::wall()).map_or(0, Vec::len);
            // Keyed as the metrics' cases are (within the series: no signature).
            reps.insert((i, MetricKey::new(case.clone(), Metric::wall()).case), n);
            for (metric, values) in metrics {
                let name = MetricKey::new(case.clone(), metric.clone());
                let e = by
                    .entry(name)
                    .or_insert_with(|| vec![Vec::new(); points.len()]);
                e[i] = values.clone();
            }
        }
    }
    by.into_iter()
        .map(|(metric, mut points)| {
            let kind = metric.name.kind();
            if matches!(kind, Kind::Kernel | Kind::Profile) {
                for (i, p) in points.iter_mut().enumerate() {
                    if p.is_empty() {
                        let r = reps.get(&(i, metric.case.clone())).copied();
                        *p = vec![0.0; r.unwrap_or(0)];
                    }
                }
            }
            Series {
                primary: metric.name.primary_or_in(named),
                exact: kind == Kind::Counter,
                floor: match kind {
                    Kind::Time | Kind::Latency | Kind::Throughput => time_floor,
                    _ => analyse::stats::verdict::NOISE_FLOOR,
                },
                min_step: match kind {
                    Kind::Kernel => KERNEL_WIDE_MIN_STEP,
                    Kind::Profile => PROFILE_MIN_STEP,
                    _ => 0.0,
                },
                metric,
                points,
            }
        })
        .collect()
}

/// The changes of `series` (`changepoint::changes`), split into those that alert (of a
/// primary series) and the evidence (profile, kernel-wide and latency rows).
pub fn changes(
    series: &[Series],
    p: &analyse::stats::changepoint::Params,
) -> (Vec<Change>, Vec<Change>) {
    let primary: std::collections::BTreeSet<&MetricKey> = series
        .iter()
        .filter(|s| s.primary)
        .map(|s| &s.metric)
        .collect();
    analyse::stats::changepoint::changes(series, p)
        .into_iter()
        .partition(|c| primary.contains(&c.metric))
}

/// A number in a few digits, for a line on stderr.
fn short(v: f64) -> String {
    if v != 0.0 && v.abs() < 10.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.1}")
    }
}

/// `--metric` names that none of `series` has (typos): one line naming them and what the
/// series does have.
pub fn check_named(series: &[Series], named: &[Metric]) -> anyhow::Result<()> {
    let have: std::collections::BTreeSet<&Metric> = series.iter().map(|s| &s.metric.name).collect();
    let missing: Vec<&Metric> = named.iter().filter(|n| !have.contains(n)).collect();
    if let Some(first) = missing.first() {
        let some: Vec<&str> = have
            .iter()
            .filter(|m| !m.profiled() && !matches!(m.source(), Source::Vmstat(_)))
            .take(12)
            .map(|m| m.name())
            .collect();
        anyhow::bail!(
            "--metric {first}: no such metric in this series (it has {} metrics, among them {}; the runs are stored, so running again measures nothing)",
            have.len(),
            some.join(", ")
        );
    }
    Ok(())
}

/// One line on the evidence that moved where no primary metric did: `(last good, first
/// bad)` index pairs of `evidence` not among `alerting`'s, with how many rows moved there
/// and the one that moved most — said, not alerted.
pub fn evidence_only(alerting: &[Change], evidence: &[Change], names: &[String]) -> Vec<String> {
    let at: std::collections::BTreeSet<(usize, usize)> = alerting
        .iter()
        .map(|c| (c.last_before, c.first_after))
        .collect();
    let mut by: BTreeMap<(usize, usize), Vec<&Change>> = BTreeMap::new();
    for c in evidence {
        if !at.contains(&(c.last_before, c.first_after)) {
            by.entry((c.last_before, c.first_after))
                .or_default()
                .push(c);
        }
    }
    by.into_iter()
        .map(|((g, b), cs)| {
            let most = cs
                .iter()
                .max_by(|x, y| x.effect().abs().total_cmp(&y.effect().abs()))
                .map(|c| format!("{} {} → {}", c.metric, short(c.before), short(c.after)))
                .unwrap_or_default();
            let mut kinds: BTreeMap<model::metric::Family, usize> = BTreeMap::new();
            for c in &cs {
                *kinds.entry(c.metric.name.family()).or_default() += 1;
            }
            let kinds: Vec<String> = kinds
                .iter()
                .map(|(k, n)| format!("{n} {}", k.word()))
                .collect();
            format!(
                "{} to {}: {} evidence row(s) moved ({}; most: {most}) while no time, throughput or count did: no alert",
                names[g],
                names[b],
                cs.len(),
                kinds.join(", ")
            )
        })
        .collect()
}

/// The spread of a label's wall times (CV) past which a change of a few per cent cannot
/// be told at that label: the series' changes are judged against it.
pub const SPREAD_CV: f64 = 0.10;

/// The points of a series where silence would not mean "nothing moved": labels whose
/// windows the machine was busy in (the busy rule of `compare`: the workload waited for
/// a CPU ≥ 5 % of at least two windows and a fifth of them), and labels whose wall times
/// spread more than [`SPREAD_CV`]. One line each kind, naming the labels and how busy or
/// spread; empty when every point could be judged.
pub fn undecided(points: &[Vec<RunDocument>], names: &[String]) -> Vec<String> {
    let mut busy = Vec::new();
    let mut spread = Vec::new();
    for (runs, name) in points.iter().zip(names) {
        if runs.is_empty() {
            continue;
        }
        let s = Samples::from_runs(name, runs);
        for (case, b) in &s.busy {
            if b.inconclusive() {
                busy.push(format!(
                    "{name} {} ({} of {} windows, waited up to {:.0} %)",
                    case.short(),
                    b.busy,
                    b.windows,
                    b.worst * 100.0
                ));
            }
        }
        for (case, metrics) in &s.cases {
            if let Some(v) = metrics.get(&Metric::wall())
                && let Some(sum) = analyse::stats::Summary::of(v)
                && v.len() > 1
                && sum.cv > SPREAD_CV
            {
                spread.push(format!(
                    "{name} {} (CV {:.0} % over {} repetitions)",
                    case.short(),
                    sum.cv * 100.0,
                    v.len()
                ));
            }
        }
    }
    let mut out = Vec::new();
    if !busy.is_empty() {
        out.push(format!(
            "the machine was busy at {}: a change there cannot be told from the load; measure those labels again when nothing else runs",
            busy.join(", ")
        ));
    }
    if !spread.is_empty() {
        out.push(format!(
            "times spread widely at {}: a change smaller than about twice that cannot be told there",
            spread.join(", ")
        ));
    }
    out
}

/// The smallest change of a kernel-wide count (slab objects, vmstat pages) `watch`
/// reports. Such a row counts what the rest of the guest did too: over the seventeen
/// bookworm kernels, 6.1.0-55 kept 24 → 7 btrfs_inode objects and 6.1.0-48 raised
/// nr_dirty_background_threshold from 4 to 5 — certain (the counts repeat exactly), large
/// relatively, and nothing a maintainer is mailed about; maple_node's +1414 (reference 004)
/// is.
pub const KERNEL_WIDE_MIN_STEP: f64 = 100.0;

/// The smallest change of a function's profiled time `watch` finds, in ms: none of its
/// own — profile rows are times (share × the window's time) and only ever evidence, which
/// the 2 % floor and the verdict engine judge like any other row.
pub const PROFILE_MIN_STEP: f64 = 0.0;

/// Whether the stored kernels' interval (last good, first bad] of `r` overlaps the found
/// change's (a change found again after more kernels, or narrowed by a bisect, is the same
/// change).
fn overlaps(r: &ChangeRecord, found: &Change, names: &[String]) -> bool {
    let at = |k: &str| names.iter().position(|n| n == k);
    match (at(&r.last_good), at(&r.first_bad)) {
        (Some(g), Some(b)) => g < found.first_after && found.last_before < b,
        // A kernel no longer in the list: matched by name.
        _ => r.first_bad == names[found.first_after],
    }
}

/// The stored change point (its place in `stored`) a change found now is, if any: the same
/// metric, where the stored one was.
pub fn known(found: &Change, names: &[String], stored: &[ChangeRecord]) -> Option<usize> {
    stored
        .iter()
        .position(|r| r.metric == found.metric && overlaps(r, found, names))
}

/// Whether a change was already reported where this one is (another metric confirmed or
/// acknowledged there): an alert is per change of the kernel, not per metric, so a metric
/// that shows the change only once more kernels are measured does not alert again.
pub fn reported(found: &Change, names: &[String], stored: &[ChangeRecord]) -> bool {
    stored
        .iter()
        .any(|r| (r.status.alerted() || r.silenced()) && overlaps(r, found, names))
}

/// A change found, as the store keeps it: new, in series `key`, between the kernels (or
/// labels) `names` gives its indexes.
pub fn new_record(key: &str, c: &Change, names: &[String]) -> ChangeRecord {
    ChangeRecord {
        id: 0,
        series: key.to_string(),
        metric: c.metric.clone(),
        status: analyse::store::changes::Status::New,
        last_good: names[c.last_before].clone(),
        first_bad: names[c.first_after].clone(),
        before: c.before,
        after: c.after,
        p: c.p,
        confirmed: None,
        culprit: None,
        report: None,
        found_at: model::stamp::now_rfc3339(),
        triage: Vec::new(),
    }
}

/// The value of `metric` (`DIR/N=… NAME`) per repetition, per kernel of `points` (a
/// kernel-wide delta a kernel's runs lack is 0 in each of them).
pub fn values(points: &[Vec<RunDocument>], metric: &MetricKey, time_floor: f64) -> Vec<Vec<f64>> {
    metric_series(points, time_floor, &[])
        .into_iter()
        .find(|s| s.metric == *metric)
        .map_or_else(|| vec![Vec::new(); points.len()], |s| s.points)
}

/// Judge the changes found between two kernels on the runs measured again (`good`: the
/// last kernel before, `bad`: the first after): per change, what the runs say (none when a
/// side lacks the metric) and whether it is confirmed — the verdict engine calls the two
/// different (Holm over the changes judged together, α = 0.05) in the direction found.
pub fn confirm(
    good: &[RunDocument],
    bad: &[RunDocument],
    changes: &[&Change],
    time_floor: f64,
) -> Vec<(Option<Confirmation>, bool)> {
    let series = metric_series(&[good.to_vec(), bad.to_vec()], time_floor, &[]);
    let sides: Vec<(Vec<f64>, Vec<f64>, f64)> = changes
        .iter()
        .map(|c| match series.iter().find(|s| s.metric == c.metric) {
            Some(s) if !s.points[0].is_empty() && !s.points[1].is_empty() => {
                let (a, x) = (s.points[0].clone(), s.points[1].clone());
                let test = analyse::stats::Test::MannWhitney;
                let p = judge(&a, &x, s.exact, test, 0.05, changes.len(), s.floor).p;
                (a, x, p)
            }
            _ => (Vec::new(), Vec::new(), 1.0),
        })
        .collect();
    let adjusted = holm(&sides.iter().map(|j| j.2).collect::<Vec<_>>());
    changes
        .iter()
        .zip(sides)
        .zip(adjusted)
        .map(|((c, (a, x, _)), p)| {
            if a.is_empty() {
                return (None, false);
            }
            let (good, bad) = (median_of(&a), median_of(&x));
            let k = Confirmation {
                good,
                bad,
                ci: analyse::stats::ratio_of_medians(&a, &x).map(|q| q.ci),
                p,
                repetitions: a.len().min(x.len()),
            };
            (Some(k), p <= 0.05 && (bad > good) == (c.after > c.before))
        })
        .collect()
}

/// How far a confirmed change moved (|ratio − 1|; from 0: infinitely far).
pub fn effect(c: &ChangeRecord) -> f64 {
    c.ratio().map_or(f64::INFINITY, |r| (r - 1.0).abs())
}

/// The change that leads among `records[confirmed]`: the one that moved most, latency
/// percentiles (`…_us`, the noisiest rows) only when nothing else moved. With
/// `wall_first` (a report's first line: what users feel), a time that grew or a
/// throughput that fell comes first — a delete phase 3 % slower is the news, not the
/// window 3.5 % faster because create got 8 % faster (issue 37) — and of those, or else,
/// the case's wall time.
pub fn lead(records: &[ChangeRecord], confirmed: &[usize], wall_first: bool) -> usize {
    let felt = |c: &ChangeRecord| c.metric.name.felt_time() || c.metric.name.higher_is_better();
    let key = |k: usize| {
        let c = &records[k];
        (
            wall_first && felt(c) && c.regressed(),
            wall_first && c.metric.name == Metric::wall(),
            c.metric.name.latency_stat().is_none(),
        )
    };
    confirmed
        .iter()
        .copied()
        .max_by(|&x, &y| {
            key(x)
                .cmp(&key(y))
                .then(effect(&records[x]).total_cmp(&effect(&records[y])))
        })
        .unwrap_or(0)
}

/// `--rev-map FILE`: the revision of a kernel tree each release was built from, one
/// `RELEASE REVISION` per line (`#` starts a comment).
#[derive(Clone, Debug, Default)]
pub struct RevMap {
    map: BTreeMap<String, String>,
}

impl RevMap {
    /// The map in `text`, read from `file` (named in errors with the line).
    pub fn parse(file: &str, text: &str) -> anyhow::Result<RevMap> {
        let mut map = BTreeMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [release, rev] = fields[..] else {
                anyhow::bail!(
                    "{file}:{}: expected `RELEASE REVISION` (e.g. `6.12.100+deb12-amd64 v6.12.100`), found {} field(s)",
                    n + 1,
                    fields.len()
                );
            };
            if rev.starts_with('-') {
                anyhow::bail!("{file}:{}: {rev} is not a revision", n + 1);
            }
            if let Some(old) = map.insert(release.to_string(), rev.to_string())
                && old != rev
            {
                anyhow::bail!(
                    "{file}:{}: {release} maps to {old} already (one revision per release)",
                    n + 1
                );
            }
        }
        Ok(RevMap { map })
    }

    /// The revisions to try for `release`, in order: the map's, else tags named after it
    /// (`RELEASE`, `vRELEASE`).
    pub fn candidates(&self, release: &str) -> Vec<String> {
        match self.map.get(release) {
            Some(rev) => vec![rev.clone()],
            None => vec![
                format!("refs/tags/{release}"),
                format!("refs/tags/v{release}"),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use analyse::stats::changepoint::{Params, changes};
    use analyse::store::changes::Status;

    /// Where only evidence moved, one line says how much of each kind; where a time
    /// moved too, nothing is said (the alert carries the evidence).
    #[test]
    fn evidence_alone_is_one_line_by_kind() {
        let at = |metric: &str, g: usize, before, after| Change {
            metric: metric.into(),
            last_before: g,
            first_after: g + 1,
            before,
            after,
            p: 0.0,
            evidence: analyse::stats::verdict::Evidence::Separation,
        };
        let alerting = [at("c/N=1 wall_ms", 2, 10.0, 11.0)];
        let evidence = [
            at("c/N=1 delete.profile.self.mas_erase", 0, 0.0, 10.0),
            at("c/N=1 profile.total.evict", 0, 4.0, 3.0),
            at(
                "c/N=1 create.slabinfo.maple_node.active_objs",
                0,
                0.0,
                1413.0,
            ),
            at("c/N=1 unlink.p99_us", 0, 9.0, 20.0),
            at("c/N=1 profile.total.evict", 2, 4.0, 3.0),
        ];
        let names: Vec<String> = ["k0", "k1", "k2", "k3"].map(String::from).to_vec();
        let said = evidence_only(&alerting, &evidence, &names);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with(
                "k0 to k1: 4 evidence row(s) moved (2 profile, 1 kernel-wide, 1 latency; most: "
            ) && said[0].ends_with("no alert"),
            "{said:?}"
        );
        let key: MetricKey = "c/N=1 sys_ms".into();
        assert_eq!(key.name.evidence_kind(), "user/system");
    }

    #[test]
    fn a_change_measured_again_is_confirmed_or_rejected() {
        let change = |metric: &str, before, after| Change {
            metric: metric.into(),
            last_before: 0,
            first_after: 1,
            before,
            after,
            p: 0.0,
            evidence: analyse::stats::verdict::Evidence::Separation,
        };
        let good = vec![doc("a", 100.0, 0), doc("a", 100.01, 0)];
        let bad = vec![doc("b", 110.0, 1400), doc("b", 110.02, 1400)];
        let wall = change("churn/N=20000 wall_ms", 100.0, 110.0);
        let maple = change(
            "churn/N=20000 create.slabinfo.maple_node.active_objs",
            0.0,
            1400.0,
        );
        let gone = change("churn/N=20000 nothing", 1.0, 2.0);
        let j = confirm(&good, &bad, &[&wall, &maple, &gone], 0.001);
        assert!(j[0].1 && j[1].1, "{:?}", j);
        assert_eq!(
            j[1].0.as_ref().unwrap().good,
            0.0,
            "a missing slab row is 0"
        );
        assert!(j[2].0.is_none() && !j[2].1);
        // Measured again, the kernels do not differ: rejected.
        let j = confirm(&good, &good, &[&wall], 0.001);
        assert!(!j[0].1);
        // Different, but the other way round: rejected.
        let j = confirm(&bad, &good, &[&wall], 0.001);
        assert!(!j[0].1);
        let mut records = vec![
            record("d/N=1 unlink.p99_us", "a", "b"),
            record("d/N=1 wall_ms", "a", "b"),
            record("d/N=1 create.slabinfo.maple_node.active_objs", "a", "b"),
        ];
        for (r, (bad, ratio)) in records
            .iter_mut()
            .zip([(3.0, 3.0), (1.03, 1.03), (5.0, 0.0)])
        {
            r.confirmed = Some(Confirmation {
                good: if ratio == 0.0 { 0.0 } else { 1.0 },
                bad,
                ci: None,
                p: 0.0,
                repetitions: 3,
            });
        }
        assert_eq!(
            lead(&records, &[0, 1, 2], true),
            1,
            "the wall time leads a report"
        );
        assert_eq!(lead(&records, &[0, 1, 2], false), 2, "from 0 moved most");
        assert_eq!(lead(&records, &[0, 1], false), 1, "latency last");
        // The 6.12.100 churn alert: the window and create faster, delete slower. The
        // report leads with what got worse; a bisect still takes the largest move.
        let mut churn = vec![
            record("churn/N=20000 wall_ms", "a", "b"),
            record("churn/N=20000 create.wall_ms", "a", "b"),
            record("churn/N=20000 delete.wall_ms", "a", "b"),
            record("dbench/N=12 throughput_mb_s", "a", "b"),
        ];
        for (r, (good, bad)) in churn.iter_mut().zip([
            (552.6, 533.4),
            (325.3, 298.8),
            (227.5, 234.6),
            (500.0, 510.0),
        ]) {
            r.confirmed = Some(Confirmation {
                good,
                bad,
                ci: None,
                p: 0.0,
                repetitions: 6,
            });
        }
        assert_eq!(
            lead(&churn, &[0, 1, 2, 3], true),
            2,
            "the slower phase leads"
        );
        assert_eq!(lead(&churn, &[0, 1, 3], true), 0, "none slower: the window");
        assert_eq!(lead(&churn, &[0, 1, 2, 3], false), 1, "moved most");
        // A throughput that fell is felt, and is a regression.
        churn[3].confirmed.as_mut().unwrap().bad = 450.0;
        assert!(churn[3].regressed() && !churn[0].regressed());
        assert_eq!(lead(&churn, &[0, 1, 3], true), 3, "throughput fell");
    }

    #[test]
    fn every_kth_and_the_newest() {
        assert_eq!(every(5, 3), [0, 3, 4]);
        assert_eq!(every(5, 2), [0, 2, 4]);
        assert_eq!(every(5, 1), [0, 1, 2, 3, 4]);
        assert_eq!(every(1, 3), [0]);
        assert!(every(0, 3).is_empty());
    }

    use model::results::fixtures::on_kernel as doc;

    fn record(metric: impl Into<MetricKey>, g: &str, b: &str) -> ChangeRecord {
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
            triage: Vec::new(),
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
        let series = metric_series(&points, 0.001, &[]);
        let wall = series.iter().find(|s| s.metric.name == "wall_ms").unwrap();
        assert_eq!(wall.points.len(), 5);
        assert_eq!(wall.floor, 0.001);
        let maple = series
            .iter()
            .find(|s| s.metric.name == "create.slabinfo.maple_node.active_objs")
            .unwrap();
        assert_eq!((maple.min_step, wall.min_step), (KERNEL_WIDE_MIN_STEP, 0.0));
        let found = changes(&series, &Params::default());
        let metrics: Vec<&str> = found.iter().map(|c| c.metric.name.name()).collect();
        assert!(metrics.contains(&"wall_ms"), "{metrics:?}");
        assert!(found.iter().all(|c| c.first_after == 2), "{found:?}");
        // A second run: every change is known, none is new.
        let wall_change = found.iter().find(|c| c.metric.name == "wall_ms").unwrap();
        let stored = vec![record(wall_change.metric.clone(), "b", "c")];
        assert_eq!(known(wall_change, &names, &stored), Some(0));
        // Narrowed by a bisect to (b, c] of a longer list, or still (a, c]: the same.
        let stored = vec![record(wall_change.metric.clone(), "a", "c")];
        assert_eq!(known(wall_change, &names, &stored), Some(0));
        // Another metric, or an interval elsewhere: not this change…
        assert_eq!(known(wall_change, &names, &[record("x", "b", "c")]), None);
        // … but another metric confirmed there reported it already.
        assert!(reported(wall_change, &names, &[record("x", "b", "c")]));
        let mut rejected = record("x", "b", "c");
        rejected.status = Status::Rejected;
        assert!(!reported(wall_change, &names, &[rejected]));
        assert!(!reported(wall_change, &names, &[record("x", "c", "e")]));
        assert_eq!(
            known(
                wall_change,
                &names,
                &[record(wall_change.metric.clone(), "c", "e")]
            ),
            None
        );
    }

    #[test]
    fn a_rev_map_maps_releases_and_names_the_line_of_a_bad_one() {
        let m = RevMap::parse(
            "map",
            "# release revision\n6.1.0-55-amd64 v6.1.158  # Debian's 6.1.158-1\n\n6.12.100+deb12-amd64\tabc123\n6.1.0-55-amd64 v6.1.158\n",
        )
        .unwrap();
        assert_eq!(m.candidates("6.1.0-55-amd64"), ["v6.1.158"]);
        assert_eq!(m.candidates("6.12.100+deb12-amd64"), ["abc123"]);
        // A release the map lacks: tags named after it.
        assert_eq!(
            m.candidates("6.1.0-56-amd64"),
            ["refs/tags/6.1.0-56-amd64", "refs/tags/v6.1.0-56-amd64"]
        );
        for (text, says) in [
            ("a b c\n", "map:1: expected `RELEASE REVISION`"),
            ("\n6.1\n", "map:2: expected"),
            ("a x\na y\n", "map:2: a maps to x already"),
            ("a --output=x\n", "map:1: --output=x is not a revision"),
        ] {
            let e = RevMap::parse("map", text).unwrap_err().to_string();
            assert!(e.starts_with(says), "{text:?}: {e}");
        }
    }
}
