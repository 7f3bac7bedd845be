//! `sigbench runs`: the runs in the results store.

use anyhow::Result;
use sigbench::report::table::escape_control;
use sigbench::store::Store;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    store: super::options::StoreOptions,
}

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
    let lw = runs
        .iter()
        .map(|r| escape_control(&r.label).len())
        .max()
        .unwrap_or(5)
        .max(5);
    let sw = runs
        .iter()
        .map(|r| r.signature.len())
        .max()
        .unwrap_or(9)
        .max(9);
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
    for r in &runs {
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
    super::out(&o)?;
    Ok(0)
}
