//! `sigbench site -o DIR [--db …]`: the store as a static site (`present::site`): every
//! series with its open changes first, a page per series and per label, the alert
//! reports beside them. Works from file:// and from any web server directory.

use analyse::store::Store;
use anyhow::Result;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The directory to write the site into (created if missing; its pages replaced)
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    output: PathBuf,
    #[command(flatten)]
    store: super::options::StoreOptions,
}

pub fn run(args: Args) -> Result<i32> {
    let store = Store::open_existing(&args.store.db)?;
    let started = std::time::Instant::now();
    let pages = present::site::write(&store, &args.output, "-o")?;
    super::out(&format!(
        "{} page(s) in {} ({:.1} s); open {}\n",
        pages,
        args.output.display(),
        started.elapsed().as_secs_f64(),
        args.output.join("index.html").display()
    ))?;
    Ok(0)
}
