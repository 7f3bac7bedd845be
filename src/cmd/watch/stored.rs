//! `watch --series` / `--series-glob` (what the store holds: candidates) and
//! `watch --changes`.

use super::reporting::{Reporting, case_lines, write_report};
use super::*;

/// `--series LABEL… | --series-glob PATTERN`: the change points of what the store holds.
/// Each plan among the labels' runs is a series; a change the store does not know is
/// recorded as a candidate (nothing can be measured again: the runs may come from any
/// machine) and reported, `--exec` staying quiet until it is confirmed by measuring.
pub(super) fn over_stored(args: &WatchArgs) -> Result<i32> {
    check_report_dir(args)?;
    let store = Store::open_existing(&args.run.store.db)?;
    let labels = labels(args, &store)?;
    let mut loaded = Vec::new();
    for l in &labels {
        let runs = store.load(&analyse::store::Selector::Label(l.clone()))?;
        if runs.is_empty() {
            bail!(
                "--series {l}: no runs labelled so in {} (`sigbench runs` lists them)",
                store.location
            );
        }
        loaded.push((l.clone(), runs));
    }
    let p = changepoint::Params {
        min_effect: args.min_effect / 100.0,
        ..Default::default()
    };
    let mut out = String::new();
    let mut new = 0;
    let mut undecided = 0;
    for (key, points) in analyse::store::series::stored_series(&loaded, args.order) {
        let names: Vec<String> = points.iter().map(|(l, _)| l.clone()).collect();
        let docs: Vec<Vec<RunDocument>> = points.into_iter().map(|(_, d)| d).collect();
        let timebase = docs[0][0].host.timebase();
        model::say!(
            "sigbench: watch: {key}: {} point(s): {}",
            names.len(),
            names.join(", ")
        );
        let series = search::watch::metric_series(&docs, timebase.noise_floor(), &args.metrics);
        search::watch::check_named(&series, &args.metrics)?;
        let (found, evidence) = search::watch::changes(&series, &p);
        for line in search::watch::evidence_only(&found, &evidence, &names) {
            model::say!("sigbench: watch: {line}");
        }
        let unjudged = search::watch::undecided(&docs, &names);
        for line in &unjudged {
            model::say!("sigbench: watch: {key}: {line}");
        }
        undecided += unjudged.len();
        let stored = store.changes(Some(&key))?;
        let mut at: Vec<(usize, usize)> = found
            .iter()
            .filter(|c| {
                search::watch::known(c, &names, &stored).is_none()
                    && !search::watch::reported(c, &names, &stored)
            })
            .map(|c| (c.last_before, c.first_after))
            .collect();
        at.sort_unstable();
        at.dedup();
        let here = Stored {
            store: &store,
            names: &names,
            docs: &docs,
            timebase: &timebase,
        };
        for between in at {
            let records = found
                .iter()
                .filter(|c| {
                    (c.last_before, c.first_after) == between
                        && search::watch::known(c, &names, &stored).is_none()
                })
                .map(|c| search::watch::new_record(&key, c, &names))
                .collect();
            out.push_str(&candidate(args, &here, between, records)?);
            new += 1;
        }
    }
    if new == 0 {
        crate::cmd::outln!(
            out,
            "no new change in {} label(s){}",
            labels.len(),
            if undecided > 0 {
                "; but some could not be judged (a busy machine, or times spread widely): stderr says which"
            } else {
                ""
            }
        );
    }
    crate::cmd::out(&out)?;
    super::write_site(args, &store)?;
    Ok(0)
}

/// The labels `--series` names, or those `--series-glob` matches in the store.
fn labels(args: &WatchArgs, store: &Store) -> Result<Vec<String>> {
    let Some(p) = &args.series_glob else {
        return Ok(args.series.clone());
    };
    let pattern = glob::Pattern::new(p)
        .map_err(|e| anyhow::anyhow!("--series-glob {p}: not a pattern ({e})"))?;
    let hit: Vec<String> = store
        .labels()?
        .into_iter()
        .filter(|l| pattern.matches(l))
        .collect();
    if hit.is_empty() {
        bail!(
            "--series-glob {p}: no stored label matches in {} (`sigbench runs` lists them)",
            store.location
        );
    }
    Ok(hit)
}

/// One stored series: its points' labels and runs, in the store it came from.
struct Stored<'a> {
    store: &'a Store,
    names: &'a [String],
    docs: &'a [Vec<RunDocument>],
    timebase: &'a TimeBase,
}

/// A new candidate change between points `(g, b)` of a stored series, its `records` one
/// per metric that moved: recorded, and its report (forgotten again if the report cannot
/// be written, so the next watch reports it).
fn candidate(
    args: &WatchArgs,
    s: &Stored,
    (g, b): (usize, usize),
    mut records: Vec<ChangeRecord>,
) -> Result<String> {
    let (store, names) = (s.store, s.names);
    for r in &mut records {
        store.keep_change(r)?;
    }
    let all: Vec<usize> = (0..records.len()).collect();
    let lead = search::watch::lead(&records, &all, true);
    let d = &s.docs[b][0];
    let machine = format!(
        "{} ({}, {} CPUs)",
        d.host.hostname, d.host.cpu_model, d.host.cpus
    );
    let reporting = Reporting {
        store,
        names,
        points: s.docs,
        timebase: s.timebase,
        signature: d.signature.name.clone(),
        case: case_lines(d, s.timebase, machine),
        report_dir: args.report_dir.as_deref(),
        exec: None,
    };
    let mut run = measure::plan::spec::reproduce(d, Some(args.confirm_reps.max(3)));
    run.0.extend([
        "--kernel".to_string(),
        format!("<{}'s kernel>", names[g]),
        "--kernel".into(),
        format!("<{}'s kernel>", names[b]),
    ]);
    let commands = vec![
        crate::cmd::report::compare_command(
            &names[g],
            &names[b],
            &["--db", &store.location.to_string()],
        ),
        run,
    ];
    let mut out = match write_report(&reporting, g, b, &mut records[lead], &[], commands) {
        Ok(text) => text,
        Err(e) => {
            let ids: Vec<i64> = records.iter().map(|r| r.id).collect();
            store.forget_changes(&ids)?;
            return Err(e.context("the change is not recorded: the next watch reports it again"));
        }
    };
    let others: Vec<String> = all
        .iter()
        .filter(|&&k| k != lead)
        .map(|&k| format!("{} (id {})", records[k].metric, records[k].id))
        .collect();
    if !others.is_empty() {
        crate::cmd::outln!(out, "found with it: {}", others.join(", "));
    }
    crate::cmd::outln!(
        out,
        "\na candidate: measure both again to confirm it (`watch --kernels` does)\n"
    );
    Ok(out)
}

/// `--changes`: what the store remembers, one line per change point.
pub(super) fn list_changes(args: &WatchArgs) -> Result<i32> {
    use present::report::table::{Align, Table};
    let store = Store::open_read(&args.run.store.db)?;
    let mut t = Table::new(
        "change points",
        &[
            ("id", Align::Right),
            ("status", Align::Left),
            ("triage", Align::Left),
            ("metric", Align::Left),
            ("last good", Align::Left),
            ("first bad", Align::Left),
            ("change", Align::Right),
            ("series", Align::Left),
        ],
    );
    for c in store.changes(None)? {
        let ratio = c.ratio().unwrap_or(f64::NAN);
        t.push(vec![
            c.id.to_string(),
            c.status.name().into(),
            match c.triage.last() {
                Some(t) if t.note.is_empty() => format!("{} ({})", t.state.name(), t.user),
                Some(t) => format!(
                    "{} ({}: {})",
                    t.state.name(),
                    t.user,
                    t.note.chars().take(60).collect::<String>()
                ),
                None => c.triage_state().name().into(),
            },
            c.metric.to_string(),
            c.last_good.clone(),
            c.culprit.clone().unwrap_or(c.first_bad.clone()),
            if ratio.is_finite() {
                format!("{:+.1} %", (ratio - 1.0) * 100.0)
            } else {
                "from 0".into()
            },
            c.series.clone(),
        ]);
    }
    crate::cmd::out(&t.text())?;
    Ok(0)
}
