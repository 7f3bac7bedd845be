//! A run request: everything `sigbench run` is asked to do, as one typed object — the
//! plan's spec, the kernels, how guests run, where results go, how they are named, which
//! slice — made from the command line by one function of the binary
//! (`cmd::measure::request`) and shipped whole: a Slurm task receives it as JSON and runs
//! it as `run` would have. A guest receives only its part, the spec with its defaults
//! resolved (`RunSpec::resolved`, beside `RunSpec::plan`).

use analyse::store::Location;
use anyhow::{Result, bail};
use measure::outputs::Outputs;
use measure::plan::Plan;
use measure::plan::slice::{self, Slice};
use measure::plan::spec::RunSpec;
use measure::testbed::Fs;
use measure::vm::{GuestOptions, VmOptions};
use std::path::PathBuf;

/// What `run` is asked to do.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// The plan, as asked (`--fs` may list several: `run` measures each in turn).
    pub spec: RunSpec,
    /// `--kernel`s (none: this machine's kernel), and the base config a source tree is
    /// built from.
    pub kernels: Vec<String>,
    pub kconfig: Option<PathBuf>,
    /// How guests run, as asked.
    pub vm: GuestOptions,
    /// One repetition per boot, the kernels alternating.
    pub interleave: bool,
    /// The store (its password never travels: `Location` serialises without it), and
    /// whether to store at all.
    pub store: Location,
    pub no_store: bool,
    /// `--json FILE` (`-`: stdout).
    pub json: Option<String>,
    /// The store's label (default: the kernel's release), and what is appended to it
    /// (`/FS` when a plan has several filesystems).
    pub label: Option<String>,
    pub label_suffix: Option<String>,
    /// `--slice I/S`, and a slice per repetition too.
    pub slice: Option<String>,
    pub split_reps: bool,
    /// Also print the kernel counters that moved most.
    pub verbose: bool,
}

impl RunRequest {
    /// The plan it describes (validated as far as it can be without a device).
    pub fn plan(&self) -> Result<Plan> {
        self.spec.plan()
    }

    /// How its guests run: [`VmOptions::new`] over what it asks, for the most clients a
    /// case runs at once.
    pub fn vm(&self) -> Result<VmOptions> {
        VmOptions::new(
            &self.vm,
            self.spec.clients.iter().copied().max().unwrap_or(1),
        )
    }

    /// The filesystems of `--fs`, each once.
    pub fn filesystems(&self) -> Result<&[Fs]> {
        let fs = &self.spec.fs;
        for (k, f) in fs.iter().enumerate() {
            if fs[..k].contains(f) {
                bail!("--fs: {} is given twice", f.name());
            }
        }
        Ok(fs)
    }

    /// The request on filesystem `fs` alone.
    pub fn on(&self, fs: Fs) -> RunRequest {
        let mut r = self.clone();
        r.spec.fs = vec![fs];
        r
    }

    /// The plan's slices (`plan::slice`): every array task of `submit` computes the same
    /// list.
    pub fn slices(&self) -> Result<Vec<Slice>> {
        let dirs = |fs: Fs| -> Result<Vec<String>> {
            let plan = self.on(fs).plan()?;
            Ok(plan.dirs.into_iter().map(|d| d.text).collect())
        };
        slice::slices(
            &self.kernels,
            self.filesystems()?,
            &dirs,
            self.spec.repetitions,
            self.split_reps,
        )
    }

    /// The request that runs slice `s` alone (labelled `/FS` when the plan has several
    /// filesystems).
    pub fn of_slice(&self, s: &Slice, several_fs: bool) -> RunRequest {
        let mut r = self.on(s.fs);
        r.spec.dirs = vec![s.dir.clone()];
        if s.rep.is_some() {
            r.spec.repetitions = 1;
        }
        r.kernels = s.kernel.iter().cloned().collect();
        r.slice = None;
        r.split_reps = false;
        r.label_suffix = several_fs.then(|| format!("/{}", s.fs.name()));
        r
    }

    /// What it reads and writes (`outputs`), to be checked before anything runs.
    pub fn outputs(&self) -> Outputs {
        let mut o = Outputs::new(self.store.path().filter(|_| !self.no_store));
        let signature = &self.spec.signature;
        if std::path::Path::new(signature).is_file() {
            o = o.input("the signature", signature);
        }
        if let Some(j) = &self.json {
            o = o.output("--json", j);
        }
        if let Some(l) = &self.spec.op_log {
            o = o.output("--op-log", l);
        }
        if let Some(l) = &self.spec.loadfile {
            o = o.input("the loadfile", l);
        } else if let Ok(sig) = measure::signature::Signature::load(signature)
            && let Some(l) = &sig.loadfile
        {
            o = o.input("the signature's loadfile", &l.dbench);
        }
        if let Some(c) = &self.kconfig {
            o = o.input("--kconfig", c);
        }
        for k in &self.kernels {
            o = o.kernel(k);
        }
        o
    }
}
