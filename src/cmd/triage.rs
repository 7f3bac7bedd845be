//! `sigbench triage ID STATE [--note TEXT]`: what a person decided about a change point
//! `watch` found — new, acknowledged, invalid, fixed — kept with its note, user and time in
//! the store (SQLite or PostgreSQL), its history kept. Acknowledged and invalid changes
//! never alert again; the state shows in `watch --changes`.

use analyse::store::Store;
use analyse::store::changes::TriageState;
use anyhow::Result;

#[derive(clap::Args)]
pub struct Args {
    /// The change point (`sigbench watch --changes` lists them)
    id: i64,
    /// new, acknowledged, invalid (noise: never alerts again) or fixed
    #[arg(value_parser = super::options::choice::<TriageState>())]
    state: TriageState,
    /// Why (at most 2000 printable characters)
    #[arg(long, default_value = "")]
    note: String,
    #[command(flatten)]
    store: super::options::StoreOptions,
}

pub fn run(args: Args) -> Result<i32> {
    let store = Store::open_existing(&args.store.db)?;
    let login = measure::host::login();
    let c = store.triage(args.id, args.state, &args.note, &login)?;
    super::out(&format!(
        "change point {} triaged {} by {login} (decision {} of its history): {} {} from {} to {}{}\n",
        c.id,
        args.state.name(),
        c.triage.len(),
        c.series,
        c.metric,
        c.last_good,
        c.first_bad,
        if c.silenced() {
            " (it never alerts again)"
        } else {
            ""
        }
    ))?;
    Ok(0)
}
