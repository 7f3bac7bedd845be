//! The stored series `watch`, `bisect --resume` and `site` read: what identifies a series
//! (signature, plan, clock), which stored runs are its points, stored labels grouped into
//! series and ordered.

use model::clock::TimeBase;
use model::results::{RunDocument, SeriesPlan};

/// What identifies a series in the store: the signature (name and digest), the
/// filesystem, directories and N, and the clock. Runs of another plan or clock are another
/// series.
pub fn series_key(plan: &SeriesPlan, tb: &TimeBase) -> String {
    let ns: Vec<String> = plan.n.iter().map(u64::to_string).collect();
    format!(
        "{} ({}) on {} [{}] N={}, {tb}",
        plan.signature,
        model::text::head(&plan.sha256, 12),
        plan.fs,
        plan.dirs.join(" | "),
        ns.join(",")
    )
}

/// The series a stored run is a point of (the key [`series_key`] gives its plan).
pub fn series_key_of(d: &RunDocument) -> String {
    series_key(&d.series_plan(), &d.host.timebase())
}

/// How `watch --series` orders its points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// By the kernel release the runs measured (Debian's version order: 6.1.0-47 before
    /// 6.1.0-48 before 6.12.100); equal releases in the order given, else by time.
    Release,
    /// By when the label's first run started.
    Time,
}

impl model::choice::Choice for Order {
    const ALL: &'static [Order] = &[Order::Release, Order::Time];
    fn arg(self) -> &'static str {
        match self {
            Order::Release => "release",
            Order::Time => "time",
        }
    }
    fn about(self) -> &'static str {
        match self {
            Order::Release => {
                "By the kernel release the runs measured (Debian's version order: 6.1.0-47 before 6.1.0-48 before 6.12.100); equal releases in the order given, else by time"
            }
            Order::Time => "By when the label's first run started",
        }
    }
}

/// A label and its runs: a point of a stored series.
pub type Point = (String, Vec<RunDocument>);

/// Stored labels as points of series: the complete runs of each label grouped by the
/// series they belong to ([`series_key_of`]), each series' points in `order` (the labels'
/// order as given breaks ties). Returns (series key, [(label, its runs)]) per series, in
/// the order the series were first met.
pub fn stored_series(labels: &[Point], order: Order) -> Vec<(String, Vec<Point>)> {
    let mut out: Vec<(String, Vec<Point>)> = Vec::new();
    for (label, runs) in labels {
        for d in runs.iter().filter(|d| d.status == "complete") {
            let key = series_key_of(d);
            let at = match out.iter().position(|(k, _)| *k == key) {
                Some(at) => at,
                None => {
                    out.push((key, Vec::new()));
                    out.len() - 1
                }
            };
            let points = &mut out[at].1;
            match points.iter_mut().find(|(l, _)| l == label) {
                Some((_, v)) => v.push(d.clone()),
                None => points.push((label.clone(), vec![d.clone()])),
            }
        }
    }
    let first = |runs: &[RunDocument]| -> (String, String) {
        let d = runs.iter().min_by(|a, b| a.started_at.cmp(&b.started_at));
        d.map(|d| (d.host.kernel_release.clone(), d.started_at.clone()))
            .unwrap_or_default()
    };
    for (_, points) in &mut out {
        // A stable sort: equal keys keep the order given.
        points.sort_by(|a, b| {
            let ((ra, ta), (rb, tb)) = (first(&a.1), first(&b.1));
            match order {
                Order::Release => model::version::release(&ra, &rb),
                Order::Time => ta.cmp(&tb),
            }
        });
    }
    out
}

/// A stored run that measured `plan` (signature, filesystem, directories, N) completely
/// on `timebase`: a point of the series (and a step `bisect --resume` reuses).
pub fn same_plan(d: &RunDocument, plan: &SeriesPlan, timebase: &TimeBase) -> bool {
    d.host.timebase() == *timebase && d.series_plan().same_as(plan) && d.status == "complete"
}

/// The stored runs labelled `label` that are points of the series of `plan` on `timebase`
/// (and, given `image`, measured on that very kernel image) and that the build `build` of
/// sigbench measured (None: whichever): what `watch` and `bisect --resume` reuse.
pub fn stored_runs(
    store: &super::Store,
    label: &str,
    image: Option<&str>,
    plan: &SeriesPlan,
    timebase: &TimeBase,
    build: Option<&str>,
) -> anyhow::Result<Stored> {
    let runs = store
        .load(&super::Selector::Label(label.to_string()))?
        .into_iter()
        .filter(|d| {
            image.is_none_or(|im| d.host.kernel_image.as_deref() == Some(im))
                && same_plan(d, plan, timebase)
        })
        .collect();
    Ok(Stored::of_build(runs, build))
}

/// The stored points of one kernel a series may use, and how many it may not because
/// another build of sigbench measured them. Two builds are two executors — their code and
/// where it lies differ, which moves instructions and cache misses (`tool.build`) — so a
/// series that mixed them would compare builds beside kernels: those points are measured
/// again.
#[derive(Debug, Default)]
pub struct Stored {
    pub runs: Vec<RunDocument>,
    /// Runs of this plan measured by another build, or one that did not say (stored
    /// before runs named their build).
    pub other_builds: usize,
}

impl Stored {
    /// `runs` split by the build that measured them: those of `build` kept (all of them
    /// when `build` is None: this binary cannot tell its own).
    pub fn of_build(runs: Vec<RunDocument>, build: Option<&str>) -> Stored {
        let Some(b) = build else {
            return Stored {
                runs,
                other_builds: 0,
            };
        };
        let (runs, other): (Vec<_>, Vec<_>) = runs
            .into_iter()
            .partition(|d| d.tool.build.as_deref() == Some(b));
        Stored {
            runs,
            other_builds: other.len(),
        }
    }

    /// What to say of the points left out, for kernel or step `label` (None: nothing left out).
    pub fn left_out(&self, label: &str) -> Option<String> {
        (self.other_builds > 0).then(|| {
            format!(
                "{label}: {} stored run(s) of this plan were measured by another build of sigbench (or one that did not name itself): left out and measured again, so that the series compares kernels, not builds",
                self.other_builds
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use model::results::fixtures::on_kernel as doc;

    /// A series reuses the points its own build measured: another build's (or one that
    /// did not name itself) are left out and said; a binary that cannot tell its build
    /// keeps them all.
    #[test]
    fn stored_points_of_another_build_are_left_out() {
        let built = |b: Option<&str>| {
            let mut d = doc("6.1.0-54", 100.0, 0);
            d.tool.build = b.map(String::from);
            d
        };
        let runs = || {
            vec![
                built(Some("aa")),
                built(Some("bb")),
                built(None),
                built(Some("aa")),
            ]
        };
        let s = Stored::of_build(runs(), Some("aa"));
        assert_eq!(s.runs.len(), 2);
        assert_eq!(s.other_builds, 2);
        let said = s.left_out("6.1.0-54-amd64").unwrap();
        assert!(
            said.starts_with("6.1.0-54-amd64: 2 stored run(s)"),
            "{said}"
        );
        let all = Stored::of_build(runs(), None);
        assert_eq!((all.runs.len(), all.other_builds), (4, 0));
        assert_eq!(all.left_out("x"), None);
    }

    /// A digest read from an imported document may be any text (hostile inputs): the key
    /// shortens it at a character, never inside one.
    #[test]
    fn a_series_key_takes_any_digest() {
        let mut d = doc("6.1.0-54", 100.0, 0);
        d.signature.sha256 = "aaaaaaaaaaaéé".into();
        assert!(
            series_key_of(&d).contains("(aaaaaaaaaaaé)"),
            "{}",
            series_key_of(&d)
        );
    }

    #[test]
    fn stored_labels_are_series_in_release_or_time_order() {
        let at = |label: &str, release: &str, time: &str| {
            let mut d = doc(release, 100.0, 0);
            d.label = label.into();
            d.started_at = time.into();
            (label.to_string(), vec![d])
        };
        let labels = vec![
            at("c", "6.12.100+deb12-amd64", "2026-01-01T00:00:00Z"),
            at("a", "6.1.0-48-amd64", "2026-03-01T00:00:00Z"),
            at("b", "6.1.0-9-amd64", "2026-02-01T00:00:00Z"),
        ];
        let names = |s: &[(String, Vec<Point>)]| -> Vec<String> {
            s[0].1.iter().map(|p| p.0.clone()).collect()
        };
        let by_release = stored_series(&labels, Order::Release);
        assert_eq!(by_release.len(), 1);
        assert_eq!(names(&by_release), ["b", "a", "c"]);
        assert_eq!(names(&stored_series(&labels, Order::Time)), ["c", "b", "a"]);
        // Another plan (another N) is another series; an interrupted run is no point.
        let mut other = labels.clone();
        other[1].1[0].plan.n = vec![5];
        other[2].1[0].status = "interrupted".into();
        let s = stored_series(&other, Order::Release);
        assert_eq!(s.len(), 2);
        assert_eq!((names(&s), s[1].1.len()), (vec!["c".to_string()], 1));
        assert!(s[1].0.contains("N=5") && s[0].0 == series_key_of(&labels[0].1[0]));
    }
}
