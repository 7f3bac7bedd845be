//! `sigbench export` / `sigbench import`: move runs between machines.

use analyse::store::{Selector, Store};
use anyhow::{Result, bail};
use model::results::parse_documents;
use present::report::renderer;
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ExportArgs {
    /// Only runs with this label (repeatable)
    #[arg(long)]
    label: Vec<String>,
    /// Only this run (repeatable; ids as `sigbench runs` shows them)
    #[arg(long)]
    run: Vec<i64>,
    #[arg(long, value_enum, default_value = "json")]
    format: super::options::ExportFormat,
    /// Output file (default: stdout)
    #[arg(short, long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    store: super::options::StoreOptions,
}

#[derive(clap::Args)]
pub struct ImportArgs {
    /// Files written by `sigbench export` or `sigbench run --json`
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    store: super::options::StoreOptions,
}

pub fn export(args: ExportArgs) -> Result<i32> {
    if let Some(p) = &args.output {
        measure::outputs::Outputs::new(args.store.db.path())
            .output("-o", p)
            .check()?;
    }
    if !args.store.db.exists() {
        bail!("no results database at {} (pass --db)", args.store.db);
    }
    let store = Store::open_read(&args.store.db)?;
    let mut sels: Vec<Selector> = args.label.iter().cloned().map(Selector::Label).collect();
    sels.extend(args.run.iter().map(|&r| Selector::Run(r)));
    if sels.is_empty() {
        sels.push(Selector::All);
    }
    let mut runs = Vec::new();
    for s in &sels {
        let found = store.load(s)?;
        if found.is_empty() {
            bail!("no runs match {s} in {}", args.store.db);
        }
        runs.extend(found);
    }
    let text = renderer(args.format.into())
        .runs(&runs)
        .expect("every --format choice renders runs");
    match &args.output {
        Some(p) => measure::outputs::write_file(p, text.as_bytes())?,
        None => std::io::stdout().write_all(text.as_bytes())?,
    }
    Ok(0)
}

pub fn import(args: ImportArgs) -> Result<i32> {
    let mut store = Store::open(&args.store.db)?;
    let (mut added, mut present) = (0, 0);
    for f in &args.files {
        let text = model::input::read_text(f, "the document", model::input::MAX_DOCUMENT_BYTES)?;
        for doc in parse_documents(&text, &f.display().to_string())? {
            if doc.id.is_empty() {
                bail!("{}: a run without an id cannot be imported", f.display());
            }
            if store.import(&doc)? {
                added += 1;
            } else {
                present += 1;
            }
        }
    }
    println!(
        "imported {added} run(s) into {}{}",
        args.store.db,
        if present > 0 {
            format!(" ({present} already there)")
        } else {
            String::new()
        }
    );
    Ok(0)
}
