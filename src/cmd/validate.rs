//! `sigbench validate FILE...`: check signature files without running anything.

use anyhow::Result;
use measure::signature::Signature;

#[derive(clap::Args)]
pub struct Args {
    /// Signature files (or built-in names)
    #[arg(required = true)]
    files: Vec<String>,
}

pub fn run(args: Args) -> Result<i32> {
    let mut bad = 0;
    let mut o = String::new();
    for f in &args.files {
        match Signature::load(f) {
            Ok(s) => {
                let steps: usize = s.phases.iter().map(|p| p.steps.len()).sum();
                super::outln!(
                    o,
                    "{f}: ok — {}, N = {}, {} phase{}, {steps} step{} per file",
                    s.name,
                    s.default_n,
                    s.phases.len(),
                    if s.phases.len() == 1 { "" } else { "s" },
                    if steps == 1 { "" } else { "s" },
                );
            }
            Err(e) => {
                model::say!("{e:#}");
                bad += 1;
            }
        }
    }
    super::out(&o)?;
    Ok(if bad > 0 { 1 } else { 0 })
}
