//! `bisect --kernels`: an ordered list of kernels (packages, images, build trees), each
//! unpacked, booted and measured as `run --kernel` does (`steps::Kernels`). With
//! `--profile` the two ends are measured first and the functions whose time grew are
//! named before the search — no tree, no commits to rank — and, once the first bad
//! package is known, the lines of its changelog since the last good one's that name
//! them or their subsystems.

use super::steps::{Bisected, Kernels, Remote, Steps, last_good, measure_ends_first};
use super::{Measure, Params, Progress, bisect};
use anyhow::Result;
use measure::vm::kernel;

/// Bisect `list` (oldest first; packages sorted by version) on `steps`' metric, measured
/// here or through `remote`.
pub fn over_list<'a>(
    list: &[String],
    mut steps: Steps<'a>,
    params: &Params,
    remote: Option<Box<dyn Remote + 'a>>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Bisected> {
    let specs = kernel::booted_list(list, "bisect boots every kernel of the list")?;
    let list: Vec<String> = specs.iter().map(|(k, _)| k.clone()).collect();
    steps.docs = vec![None; specs.len()];
    let mut m = Kernels {
        steps,
        releases: vec![None; specs.len()],
        changelogs: vec![None; specs.len()],
        specs,
        jobs: params.jobs,
        ahead: Default::default(),
        remote,
    };
    let mut suspect_functions = Vec::new();
    if m.steps.plan.profile.is_some() {
        // No tree, no commits to rank: the functions whose time grew between the ends.
        let last = list.len() - 1;
        measure_ends_first(&mut m, last, params.reps)?;
        if let Some(grown) = m.steps.grown(0, last) {
            progress(Progress::Note(&format!(
                "suspect functions (took more time at the newest kernel): {}",
                if grown.is_empty() {
                    "none".to_string()
                } else {
                    grown
                        .iter()
                        .take(8)
                        .map(|(f, t)| format!("{f} +{t:.3} ms"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )));
            suspect_functions = grown;
        }
    }
    let outcome = bisect(&mut m, list.len(), params, progress)?;
    let changelog = changelog_mentions(&m, &outcome, &suspect_functions, progress);
    let mut names: Vec<String> = (0..list.len()).map(|i| m.name(i)).collect();
    // Two files of one release (a rebuilt or a damaged copy): told apart by file name.
    let named = names.clone();
    for (i, n) in names.iter_mut().enumerate() {
        if named.iter().filter(|x| *x == n).count() > 1 {
            let file = std::path::Path::new(&list[i]).file_name();
            n.push_str(&format!(
                " ({})",
                file.map_or(list[i].clone(), |f| f.to_string_lossy().into_owned())
            ));
        }
    }
    Ok(Bisected {
        outcome,
        sources: list
            .iter()
            .zip(&names)
            .map(|(l, n)| (l != n).then(|| l.clone()))
            .collect(),
        what: format!("{} kernels", list.len()),
        names,
        measured_now: m.steps.measured_now,
        docs: m.steps.docs,
        suspects: Vec::new(),
        suspect_functions,
        changelog,
    })
}

/// With suspect functions and an answer: the lines of the first bad package's changelog
/// since the last good one's that name those functions or their subsystems — said as a
/// note, kept in the report. Nothing where a package carries no changelog.
fn changelog_mentions(
    m: &Kernels,
    outcome: &super::Outcome,
    grown: &[(String, f64)],
    progress: &mut dyn FnMut(Progress),
) -> Vec<super::changelog::Mention> {
    use super::changelog;
    let Some((g, b)) = outcome
        .first_bad
        .and_then(|b| Some((last_good(outcome, b)?, b)))
    else {
        return Vec::new();
    };
    if grown.is_empty() {
        return Vec::new();
    }
    let (Some(old), Some(new)) = (&m.changelogs[g], &m.changelogs[b]) else {
        return Vec::new();
    };
    let (old, new) = match (changelog::read(old), changelog::read(new)) {
        (Ok(o), Ok(n)) => (o, n),
        (Err(e), _) | (_, Err(e)) => {
            progress(Progress::Note(&format!(
                "the packages' changelogs could not be read: {e:#}"
            )));
            return Vec::new();
        }
    };
    let grown: Vec<super::suspects::Grown> = grown
        .iter()
        .map(|(f, t)| super::suspects::Grown {
            function: f.clone(),
            added_ms: *t,
        })
        .collect();
    let found = changelog::mentions(&new, &old, &grown);
    progress(Progress::Note(&format!(
        "changelog of {} since {}: {} line(s) name a suspect function or its subsystem{}",
        m.name(b),
        m.name(g),
        found.len(),
        found
            .iter()
            .take(5)
            .map(|x| format!("\n  {} — {}", x.line, x.functions.join(", ")))
            .collect::<String>()
    )));
    found
}
