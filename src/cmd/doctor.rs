//! `sigbench doctor`: what this machine can do, and leftovers of killed runs.

use anyhow::Result;
use measure::probe::tracefs::Tracefs;
use measure::testbed::workspace;

#[derive(clap::Args)]
pub struct Args {
    /// Remove what killed sigbench runs left behind (mounts, loop and zram devices,
    /// kprobe events, directories under /run/sigbench)
    #[arg(long)]
    cleanup: bool,
    /// List the tracepoints of a subsystem (e.g. btrfs)
    #[arg(long, value_name = "SUBSYS")]
    events: Option<String>,
    #[command(flatten)]
    cache: super::options::CacheOptions,
    #[command(flatten)]
    store: super::options::StoreOptions,
}

fn line(what: &str, ok: bool, detail: impl AsRef<str>) {
    println!(
        "{:<22} {:<4} {}",
        what,
        if ok { "ok" } else { "no" },
        detail.as_ref()
    );
}

pub fn run(args: Args) -> Result<i32> {
    if args.cleanup {
        // A leftover's unmount and loop detach are filesystem work a measuring run would
        // count (its tracepoints are system-wide): wait until no run measures.
        let lock = workspace::lock()?;
        let mut done = workspace::cleanup();
        done.extend(measure::vm::cleanup(&args.cache.cache_dir));
        if done.is_empty() {
            println!("nothing to clean up");
        }
        let failed = done.iter().filter(|d| d.starts_with("FAILED")).count();
        for d in &done {
            println!("{d}");
        }
        // Runs a SIGKILL stopped stay `running` in the store: with no sigbench measuring
        // now (the machine lock is free), every such run is dead.
        if args.store.db.exists() {
            let n = analyse::store::Store::open(&args.store.db)?.mark_running("killed")?;
            if n > 0 {
                println!(
                    "marked {n} run{} still `running` in {} as `killed`",
                    if n == 1 { "" } else { "s" },
                    args.store.db
                );
            }
        }
        drop(lock);
        return Ok(if failed > 0 { 1 } else { 0 });
    }
    let tracefs = Tracefs::find_or_mount();
    if let Some(subsys) = &args.events {
        let t = tracefs?;
        let events = t.events_of(subsys);
        if events.is_empty() {
            anyhow::bail!("no tracepoints in subsystem `{subsys}` on this kernel");
        }
        for e in events {
            println!("tracepoint:{subsys}:{e}");
        }
        return Ok(0);
    }

    for c in measure::capability::checks(&tracefs, &args.cache.cache_dir) {
        line(&c.name, c.ok, &c.detail);
    }
    let mut left = workspace::leftovers();
    left.extend(measure::vm::leftovers(&args.cache.cache_dir));
    if left.is_empty() {
        println!("\nno leftovers of killed runs");
    } else {
        println!("\nleftovers of killed runs (remove with `sigbench doctor --cleanup`):");
        for l in &left {
            println!("  pid {}: {}", l.pid, l.what);
        }
    }
    Ok(0)
}
