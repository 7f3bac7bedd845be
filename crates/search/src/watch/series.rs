//! A series of kernels being watched (`sigbench watch --kernels`): each kernel unpacked and
//! its stored runs read (`prepare`), the kernels measured as boots — here, `--jobs` at once,
//! or elsewhere through a [`Remote`] — the changes found in the metric series, and each new
//! one measured again, bisected and remembered (`super::locate::examine`). The binary
//! parses the options into [`Settings`] and prints the alerts.

use crate::bisect::steps::{Remote, RemoteTask};
use analyse::stats::changepoint::{self, Change};
use analyse::store::{Location, Store};
use anyhow::Result;
use measure::plan::Plan;
use measure::vm::kernel::{self, KernelSpec};
use measure::vm::{VmOptions, guests};
use model::clock::TimeBase;
use model::metric::Metric;
use model::results::RunDocument;
use std::path::PathBuf;

/// What a watch was asked for, beyond its plan and kernels.
#[derive(Clone, Debug)]
pub struct Settings {
    /// `--metric`: metrics that alert besides the primary ones.
    pub metrics: Vec<Metric>,
    /// `--min-effect`, in per cent.
    pub min_effect: f64,
    /// `--confirm-reps`: repetitions of each side when a change is measured again.
    pub confirm_reps: u32,
    /// `-r` and `--max-reps`: a point's repetitions, and at most this many in a bisect.
    pub repetitions: u32,
    pub max_reps: u32,
    /// Guests print their console.
    pub verbose: bool,
    /// The store (a bisect opens its own connection to it).
    pub db: Location,
    /// `--tree`: the config to build commits with, and whether `--jobs` was given.
    pub config: Option<PathBuf>,
    pub jobs_asked: bool,
}

/// The series as it is being watched.
pub struct Watch<'a> {
    pub settings: Settings,
    pub plan: Plan,
    pub opts: VmOptions,
    pub timebase: TimeBase,
    pub store: Store,
    pub jobs: usize,
    pub specs: Vec<(String, KernelSpec)>,
    /// Each kernel's release once prepared (None: it could not be unpacked).
    pub names: Vec<String>,
    pub keys: Vec<Option<String>>,
    /// Each kernel's runs of this plan (stored, or measured now).
    pub points: Vec<Vec<RunDocument>>,
    pub measured: usize,
    /// Changes whose confirmation could not run (no runs of a side): exit 1.
    pub unconfirmed: usize,
    /// Measured elsewhere (`--slurm`: Slurm's tasks, storing as they go) instead of here.
    pub remote: Option<Box<dyn Remote + 'a>>,
    /// This sigbench's build (`measure::build::current`): stored points of another are
    /// measured again.
    pub build: Option<String>,
}

impl Watch<'_> {
    pub fn say(&self, msg: &str) {
        model::say!("sigbench: watch: {msg}");
    }

    /// The repetitions kernel `i`'s stored runs hold (each run's, copies included).
    fn stored_reps(&self, i: usize) -> u32 {
        self.points
            .get(i)
            .map_or(0, |runs| runs.iter().map(|d| d.plan.repetitions).sum())
    }

    /// Runs of `plan` on kernel `i` as boots (`reps` repetitions each), `jobs` at once;
    /// each stored under the kernel's release as it comes. Returns the documents, per boot.
    pub fn boot(&mut self, wanted: &[(usize, u32)]) -> Result<Vec<Option<RunDocument>>> {
        if self.remote.is_some() {
            return self.remotely(wanted);
        }
        // Each boot's states are new ones: after those the kernel's stored runs measured,
        // and those of the boots of it before in this list (a confirmation measures
        // states, not copies of them).
        let mut first: Vec<u32> = (0..self.points.len())
            .map(|i| self.stored_reps(i))
            .collect();
        let boots: Vec<guests::Boot> = wanted
            .iter()
            .map(|&(i, reps)| {
                let from = first[i];
                first[i] += reps;
                guests::Boot {
                    name: self.specs[i].0.clone(),
                    spec: self.specs[i].1.clone(),
                    plan: Plan {
                        repetitions: reps,
                        first_state: self.plan.first_state + from,
                        ..self.plan.clone()
                    },
                }
            })
            .collect();
        let mut out = vec![None; boots.len()];
        let names = self.names.clone();
        let started = |k: usize, _: &guests::Boot| {
            model::say!(
                "sigbench: watch: {} ({} repetition(s))",
                names[wanted[k].0],
                wanted[k].1
            )
        };
        let (opts, verbose) = (self.opts.clone(), self.settings.verbose);
        let store = &mut self.store;
        guests::run_boots(
            &boots,
            self.jobs,
            &opts,
            verbose,
            &started,
            &mut |k, booted| {
                let i = wanted[k].0;
                match crate::bisect::steps::store_run(store, &names[i], booted.map(|(_, run)| run))?
                {
                    Ok(doc) => out[k] = Some(doc),
                    Err(why) => model::say!("sigbench: watch: {}: {why}", names[i]),
                }
                Ok(())
            },
        )?;
        for (k, doc) in out.iter().enumerate() {
            if let Some(d) = doc {
                self.points[wanted[k].0].push(d.clone());
                self.measured += 1;
            }
        }
        Ok(out)
    }

    /// As [`Watch::boot`], the boots measured elsewhere in one round ([`Remote`]: a Slurm
    /// job array, each task `sigbench run --kernel` storing as it goes), read back when it
    /// has ended.
    fn remotely(&mut self, wanted: &[(usize, u32)]) -> Result<Vec<Option<RunDocument>>> {
        let tasks: Vec<RemoteTask> = wanted
            .iter()
            .map(|&(i, reps)| RemoteTask {
                kernel: self.specs[i].0.clone(),
                repetitions: reps,
            })
            .collect();
        let Some(remote) = &self.remote else {
            return Ok(Vec::new());
        };
        let runs = remote.round(&self.plan.signature.name, &tasks)?;
        let mut out = Vec::new();
        for (&(i, _), docs) in wanted.iter().zip(runs) {
            out.push(docs.first().cloned());
            self.measured += docs.len();
            self.points[i].extend(docs);
        }
        Ok(out)
    }

    /// How many repetitions of kernel `i` are stored or measured.
    pub fn reps(&self, i: usize) -> u32 {
        self.points[i]
            .iter()
            .map(|d| d.cases.iter().filter(|c| !c.warmup).count() as u32)
            .sum::<u32>()
            / (self.plan.dirs.len() * self.plan.n_values.len()).max(1) as u32
    }

    /// The changes that alert, and the evidence that moved.
    pub fn changes(&self) -> Result<(Vec<Change>, Vec<Change>)> {
        let series = super::metric_series(
            &self.points,
            self.timebase.noise_floor(),
            &self.settings.metrics,
        );
        super::check_named(&series, &self.settings.metrics)?;
        let p = changepoint::Params {
            min_effect: self.settings.min_effect / 100.0,
            ..Default::default()
        };
        Ok(super::changes(&series, &p))
    }
}

/// Unpack every kernel (in the cache) for its release, and read what the store has of it.
pub fn prepare(w: &mut Watch) -> Result<()> {
    for (name, spec) in w.specs.clone() {
        match kernel::prepare(&spec, &name, &w.opts.cache) {
            Ok(k) => {
                let (image, plan) = (Some(k.key.as_str()), &w.plan.series_plan());
                let stored = analyse::store::series::stored_runs(
                    &w.store,
                    &k.release,
                    image,
                    plan,
                    &w.timebase,
                    w.build.as_deref(),
                )?;
                if let Some(said) = stored.left_out(&k.release) {
                    w.say(&said);
                }
                w.points[w.names.len()] = stored.runs;
                w.names.push(k.release);
                w.keys.push(Some(k.key));
            }
            Err(e) => {
                let why = measure::interrupt::step_failed(e)?;
                w.say(&format!("{name}: left out: {why}"));
                w.names.push(name);
                w.keys.push(None);
            }
        }
    }
    Ok(())
}
