//! `sigbench show NAME`: print a signature file, verbatim.

use anyhow::Result;
use measure::signature::Signature;

#[derive(clap::Args)]
pub struct Args {
    /// Built-in signature name or a signature file
    signature: String,
}

pub fn run(args: Args) -> Result<i32> {
    let sig = Signature::load(&args.signature)?;
    super::out(&sig.source)?;
    Ok(0)
}
