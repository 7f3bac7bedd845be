//! A list of kernels run with one plan: the boot schedule (`vm::boots`: in turn, or
//! interleaved repetition by repetition), executed in stretches — guests side by side with
//! up to J at once (`vm::guests`), the host alone between them — and where the results go
//! (`Kept`): the store as they come, the JSON document at the end, and when the store
//! fails, a file `sigbench import` reads. `run --kernel`, `judge`, `bisect` and `watch`
//! execute their kernels through here; what is printed is theirs.

use analyse::store::{Location, Store};
use anyhow::{Result, bail};
use measure::interrupt;
use measure::plan::Plan;
use measure::vm::guests::{self, Boot, Booted};
use measure::vm::kernel::KernelSpec;
use measure::vm::{VmOptions, boots};
use model::results::{EXPORT_SCHEMA, Export, RunDocument, SCHEMA_VERSION};

/// One kernel's turn in the schedule: `kernel` indexes the list.
pub enum Turn<'a> {
    /// `host` in the list: the plan runs here, on this thread.
    Host { kernel: usize, plan: Box<Plan> },
    /// A guest's boot and how it went.
    Guest {
        kernel: usize,
        boot: &'a Boot,
        booted: Box<Booted>,
    },
}

/// How a schedule runs its guests.
pub struct Guests<'a> {
    pub opts: &'a VmOptions,
    /// At most this many at once (`guests::how_many`).
    pub jobs: usize,
    pub verbose: bool,
}

/// Run `plan` on each of `kernels` (name as given, spec) in the order `boots::boots`
/// gives (`interleave`: one repetition per boot, alternating). `each` gets every turn in
/// the schedule's order and returns false when the kernel is broken (not prepared, not
/// booted): its later turns are dropped. An error from `each` or an interruption stops
/// the schedule.
pub fn run(
    kernels: &[(String, KernelSpec)],
    plan: &Plan,
    interleave: bool,
    guests: &Guests,
    each: &mut dyn FnMut(Turn) -> Result<bool>,
) -> Result<()> {
    let schedule = boots::boots(kernels.len(), plan.repetitions, interleave);
    let total = schedule.len();
    let with_reps = |reps: u32, first: u32| Plan {
        repetitions: reps,
        first_state: plan.first_state + first,
        ..plan.clone()
    };
    let is_host = |k: usize| kernels[k].1 == KernelSpec::Host;
    let mut broken = vec![false; kernels.len()];
    let mut at = 0;
    while at < total {
        interrupt::check()?;
        let (k, reps, first) = schedule[at];
        if is_host(k) {
            at += 1;
            if !broken[k] {
                broken[k] = !each(Turn::Host {
                    kernel: k,
                    plan: Box::new(with_reps(reps, first)),
                })?;
            }
            continue;
        }
        // A stretch of guests, side by side.
        let len = schedule[at..]
            .iter()
            .take_while(|(k, _, _)| !is_host(*k))
            .count();
        // Each boot's kernel and its place in the schedule, beside the boots.
        let (who, boots): (Vec<(usize, usize)>, Vec<Boot>) = (at..at + len)
            .map(|pos| (pos, schedule[pos]))
            .filter(|(_, (k, _, _))| !broken[*k])
            .map(|(pos, (k, reps, first))| {
                let (name, spec) = kernels[k].clone();
                let plan = with_reps(reps, first);
                ((k, pos), Boot { name, spec, plan })
            })
            .unzip();
        at += len;
        guests::run_boots(
            &boots,
            guests.jobs,
            guests.opts,
            guests.verbose,
            &|i, b| model::say!("sigbench: boot {} of {total}: {}", who[i].1 + 1, b.name),
            &mut |i, booted| {
                let k = who[i].0;
                if !broken[k] {
                    broken[k] = !each(Turn::Guest {
                        kernel: k,
                        boot: &boots[i],
                        booted: Box::new(booted),
                    })?;
                }
                Ok(())
            },
        )?;
    }
    Ok(())
}

/// Where a list of runs goes: the store as each one finishes, every document into the
/// JSON at the end; what failed, to say and to turn into the exit code.
pub struct Kept {
    db: Option<Location>,
    store: Option<Store>,
    pub docs: Vec<RunDocument>,
    pub failures: Vec<String>,
    store_failed: bool,
}

impl Kept {
    /// Results kept in the store at `db` (none: not stored), opened now so that a bad
    /// store fails before anything runs.
    pub fn open(db: Option<&Location>) -> Result<Kept> {
        Ok(Kept {
            store: db.map(Store::open).transpose()?,
            db: db.cloned(),
            docs: Vec::new(),
            failures: Vec::new(),
            store_failed: false,
        })
    }

    /// The store, for a run that stores as it goes (`Storing`); `reopen` after it.
    pub fn take_store(&mut self) -> Option<Store> {
        self.store.take()
    }

    pub fn reopen(&mut self) -> Result<()> {
        self.store = self.db.as_ref().map(Store::open).transpose()?;
        Ok(())
    }

    /// Something failed: said now, counted at the end.
    pub fn failed(&mut self, what: String) {
        model::say!("sigbench: {what}");
        self.failures.push(what);
    }

    /// The store failed while `what` stored its results.
    pub fn store_failed(&mut self, what: String) {
        self.store_failed = true;
        self.failures.push(what);
    }

    /// A finished document into the store (a failure is said and counted), then kept for
    /// the JSON.
    pub fn store(&mut self, doc: RunDocument) {
        if let Some(s) = &mut self.store {
            match s.import(&doc) {
                Ok(_) => model::say!("sigbench: stored as `{}` in {}", doc.label, s.location),
                Err(e) => {
                    let what = format!(
                        "kernel {}: could not store the results in {}: {e:#}",
                        doc.host.kernel_release, s.location
                    );
                    self.store_failed = true;
                    self.failed(what);
                }
            }
        }
        self.docs.push(doc);
    }

    /// Every document into `json` (or, when the store failed, where `import` finds it);
    /// whether everything went well. `kernels` is how many were run, for the summary.
    pub fn finish(self, json: Option<&str>, kernels: usize) -> Result<bool> {
        let dest = match (json, &self.db) {
            (Some(d), _) => Some(d.to_string()),
            (None, Some(db)) if self.store_failed => {
                Some(recovery_path(db, &measure::host::new_run_id()))
            }
            (None, _) => None,
        };
        if let Some(dest) = dest {
            let export = Export {
                schema: EXPORT_SCHEMA.into(),
                version: SCHEMA_VERSION,
                runs: self.docs,
            };
            measure::outputs::write_json(&export, &dest)?;
            if self.store_failed && dest != "-" {
                model::say!(
                    "sigbench: the results are in {dest}: `sigbench import {}` adds them to a store",
                    model::shell::quote(&dest.to_string())
                );
            }
        }
        if self.failures.len() > 1 {
            model::say!(
                "sigbench: {} failures over {kernels} kernel(s), each said above",
                self.failures.len()
            );
        }
        Ok(self.failures.is_empty())
    }
}

/// The end of one run: its document is written whatever happened (docs/json.md: a failed
/// run is a document with status "failed") to `json`; when a store lost something
/// (`store_error`: the store and what it said), it is written where `import` finds it, and
/// the run is an error saying so.
pub fn keep(
    doc: &RunDocument,
    outcome: Result<()>,
    json: Option<&str>,
    store_error: Option<(&Location, String)>,
) -> Result<()> {
    let mut written = None;
    let dest = match (json, &store_error) {
        (Some(d), _) => Some(d.to_string()),
        (None, Some((db, _))) => Some(recovery_path(db, &doc.id)),
        (None, None) => None,
    };
    if let Some(dest) = dest {
        match measure::outputs::write_json(doc, &dest) {
            Ok(()) => {
                if dest != "-" {
                    model::say!("sigbench: wrote {dest}");
                }
                written = Some(dest);
            }
            Err(e) if outcome.is_ok() && store_error.is_none() => return Err(e),
            Err(e) => model::say!("sigbench: {e:#}"),
        }
    }
    let Some((db, e)) = store_error else {
        return outcome;
    };
    let kept = match &written {
        Some(d) if d != "-" => {
            format!(
                "; the results are in {d}: `sigbench import {}` adds them to a store",
                model::shell::quote(d)
            )
        }
        Some(_) => "; the results are in the JSON on stdout".into(),
        None => "; the results could not be written anywhere else either".into(),
    };
    if let Err(e) = &outcome {
        model::say!("sigbench: {e:#}");
    }
    bail!("could not store the results in {db}: {e}{kept}")
}

/// Where a run's document goes when the store failed and no --json was given: beside the
/// store, else in /var/tmp or /tmp (the store's filesystem may be the full one).
pub fn recovery_path(db: &Location, id: &str) -> String {
    let name = format!("sigbench-unstored-{id}.json");
    let dirs = [
        db.path()
            .and_then(|p| p.parent())
            .filter(|p| !p.as_os_str().is_empty())
            .map(|p| p.to_path_buf())
            .unwrap_or_else(|| ".".into()),
        "/var/tmp".into(),
        std::env::temp_dir(),
    ];
    for d in &dirs {
        let probe = d.join(format!(".{name}.probe"));
        let fits = std::fs::write(&probe, vec![0u8; 1 << 16]).is_ok();
        // Removed whether it fitted or not: a full disk leaves an empty file behind.
        let _ = std::fs::remove_file(&probe);
        if fits {
            return d.join(&name).display().to_string();
        }
    }
    dirs[0].join(name).display().to_string()
}
