//! `sigbench list`: the built-in signatures.

use anyhow::Result;
use measure::signature;

#[derive(clap::Args)]
pub struct Args {
    /// Also print each signature's steps
    #[arg(short, long)]
    long: bool,
}

pub fn run(args: Args) -> Result<i32> {
    let all = signature::builtins();
    let mut o = String::new();
    let w = all.iter().map(|s| s.name.len()).max().unwrap_or(4);
    let aw = all
        .iter()
        .map(|s| s.aliases.join(",").len())
        .max()
        .unwrap_or(7)
        .max(7);
    super::outln!(
        o,
        "{:<w$}  {:<aw$}  {:>6}  description",
        "name",
        "aliases",
        "N"
    );
    for s in &all {
        let first_sentence = s
            .description
            .split(". ")
            .next()
            .unwrap_or("")
            .trim_end_matches('.');
        super::outln!(
            o,
            "{:<w$}  {:<aw$}  {:>6}  {first_sentence}",
            s.name,
            s.aliases.join(","),
            s.default_n
        );
        if args.long {
            for p in &s.phases {
                let steps: Vec<String> = p.steps.iter().map(|st| st.describe()).collect();
                super::outln!(o, "{:w$}    phase {}: {}", "", p.name, steps.join(" → "));
            }
        }
    }
    super::outln!(
        o,
        "\n`sigbench show NAME` prints one as a signature file; `sigbench run NAME` runs it."
    );
    super::out(&o)?;
    Ok(0)
}
