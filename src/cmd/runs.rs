//! `sigbench runs`: the runs in the results store.

use analyse::store::{RunRow, Store};
use anyhow::Result;
use present::report::table::escape_control;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    store: super::options::StoreOptions,
    /// Also each repetition's state (its seed) and the command that runs it again
    #[arg(short, long)]
    verbose: bool,
}

/// The widest a column is padded to: a label stored by an older sigbench (or imported
/// before labels were bounded) can be any length, and `format!` panics on a width over
/// 65,535.
const MAX_PAD: usize = 200;

pub fn run(args: Args) -> Result<i32> {
    if !args.store.db.exists() {
        anyhow::bail!(
            "no results database at {} (run `sigbench run` first, or pass --db)",
            args.store.db
        );
    }
    let store = Store::open_read(&args.store.db)?;
    let runs = store.runs()?;
    let mut o = String::new();
    if runs.is_empty() {
        super::outln!(o, "no runs in {}", args.store.db);
        super::out(&o)?;
        return Ok(0);
    }
    o.push_str(&listing(&runs));
    if args.verbose {
        for r in &runs {
            for d in store.load(&analyse::store::Selector::Run(r.id))? {
                o.push_str(&states(r.id, &d));
            }
        }
    }
    super::out(&o)?;
    Ok(0)
}

/// A run's repetitions and the state each started from, with the command that runs one
/// again to the digit (`--state SEED`); nothing for a run whose states were not sampled.
fn states(id: i64, d: &model::results::RunDocument) -> String {
    let mut seen: Vec<(u32, u64)> = d
        .cases
        .iter()
        .filter(|c| !c.warmup)
        .filter_map(|c| c.state.map(|s| (c.rep, s)))
        .collect();
    seen.sort();
    seen.dedup();
    let mut o = String::new();
    for (rep, seed) in seen {
        let mut cmd = measure::plan::spec::reproduce(d, Some(1));
        cmd.0.extend(["--state".to_string(), format!("{seed:#x}")]);
        if d.host.clock.is_some() {
            cmd.0.extend([
                "--kernel".to_string(),
                format!("<{}'s kernel>", d.host.kernel_release),
            ]);
        }
        super::outln!(
            o,
            "  run {id} repetition {rep}: state {seed:#x} (again: {cmd})"
        );
    }
    o
}

/// The runs as a table, one line each.
fn listing(runs: &[RunRow]) -> String {
    let mut o = String::new();
    let lw = runs
        .iter()
        .map(|r| escape_control(&r.label).chars().count())
        .max()
        .unwrap_or(5)
        .clamp(5, MAX_PAD);
    let sw = runs
        .iter()
        .map(|r| escape_control(&r.signature).chars().count())
        .max()
        .unwrap_or(9)
        .clamp(9, MAX_PAD);
    super::outln!(
        o,
        "{:>4}  {:<lw$}  {:<20}  {:<sw$}  {:<5}  {:<18}  {:>4}  {:>5}  status",
        "run",
        "label",
        "date",
        "signature",
        "fs",
        "N",
        "dirs",
        "cases"
    );
    for r in runs {
        let ns: Vec<String> = r.ns.iter().map(u64::to_string).collect();
        super::outln!(
            o,
            "{:>4}  {:<lw$}  {:<20}  {:<sw$}  {:<5}  {:<18}  {:>4}  {:>5}  {}",
            r.id,
            escape_control(&r.label),
            r.started_at,
            escape_control(&r.signature),
            r.fs,
            if ns.is_empty() {
                "-".into()
            } else {
                ns.join(",")
            },
            r.dirs,
            r.cases,
            r.status
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 39, 6: a label of 70,000 characters stored by an older sigbench listed
    /// without a panic (format! refuses widths over 65,535).
    #[test]
    fn a_huge_stored_label_is_listed() {
        let row = |label: String| RunRow {
            id: 1,
            uuid: "u".into(),
            label,
            started_at: "2026-11-25T00:00:00Z".into(),
            signature: "s3e-test3".into(),
            fs: "btrfs".into(),
            kernel_release: "6.18".into(),
            status: "complete".into(),
            ns: vec![250],
            dirs: 1,
            cases: 3,
        };
        let text = listing(&[row("x".repeat(70_000)), row("short\x1b[2J".into())]);
        assert_eq!(text.lines().count(), 3);
        assert!(
            text.contains("short\\x{1b}[2J"),
            "{}",
            &text[text.len() - 200..]
        );
    }
}
