//! What a user asks of a plan, as the command line gives it, and the plan it makes:
//! the signature by name or file, the filesystem, directories (the signature's defaults
//! minus those the filesystem cannot have), N values, repetitions, probes (the
//! filesystem's defaults unless left out). Everything is checked against the limits
//! before anything runs.

use super::Plan;
use crate::probe::ProbeSpec;
use crate::signature::{Signature, limits};
use crate::testbed::device::DeviceSpec;
use crate::testbed::{DirSpec, Fs, TestbedSpec, options};
use anyhow::{Result, bail};
use std::path::PathBuf;

/// The plan's options as given (`sigbench run --help` says what each means).
#[derive(Clone, Debug)]
pub struct Request {
    pub signature: String,
    pub rounds: Option<u32>,
    /// A plan measures one filesystem; more is an error here (`run` splits a list).
    pub fs: Vec<Fs>,
    pub dirs: Vec<String>,
    pub ns: Vec<u64>,
    pub repetitions: u32,
    pub device: String,
    pub mkfs_opts: String,
    pub mount_opts: String,
    pub force: bool,
    pub warmup: u32,
    pub shuffle: bool,
    pub seed: u64,
    pub probes: Vec<String>,
    pub no_default_probes: bool,
    pub settle: bool,
    pub op_log: Option<PathBuf>,
    /// `--profile=HZ`.
    pub profile: Option<u64>,
}

impl Request {
    /// The plan (validated as far as it can be without a device).
    pub fn plan(&self) -> Result<Plan> {
        let mut sig = Signature::load(&self.signature)?;
        if let Some(r) = self.rounds {
            if r == 0 {
                bail!("--rounds: at least one round");
            }
            if r > limits::MAX_ROUNDS {
                bail!("--rounds {r}: over the limit of {}", limits::MAX_ROUNDS);
            }
            sig.rounds = r;
        }
        let fs = match self.fs[..] {
            [fs] => fs,
            _ => bail!(
                "--fs {}: this command measures one filesystem (`run` and `submit` take several)",
                self.fs
                    .iter()
                    .map(|f| f.name())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        };
        let dirs = self.directories(&sig, fs)?;
        let ns = if self.ns.is_empty() {
            vec![sig.default_n]
        } else {
            self.ns.clone()
        };
        if ns.contains(&0) {
            bail!("-n: the number of files must be at least 1");
        }
        if let Some(&n) = ns.iter().find(|&&n| n > limits::MAX_N) {
            bail!(
                "-n {n}: over the limit of {} files per case (docs/signatures.md, Limits)",
                limits::MAX_N
            );
        }
        if self.repetitions == 0 {
            bail!("-r: at least one repetition");
        }
        let max_hz = crate::probe::profile::MAX_HZ;
        if let Some(hz) = self.profile.filter(|&hz| hz == 0 || hz > max_hz) {
            bail!("--profile={hz}: give a rate from 1 to {max_hz} samples a second");
        }
        Ok(Plan {
            signature: sig,
            testbed: TestbedSpec {
                fs,
                device: DeviceSpec::parse(&self.device),
                mkfs_opts: options::mkfs_options(fs, &self.mkfs_opts)?,
                mount_opts: {
                    options::mount_options(&self.mount_opts)?;
                    self.mount_opts.clone()
                },
                force: self.force,
            },
            dirs,
            n_values: ns,
            repetitions: self.repetitions,
            warmup: self.warmup,
            shuffle: self.shuffle,
            seed: self.seed,
            probes: self.probe_specs(fs)?,
            settle: self.settle,
            op_log: self.op_log.clone(),
            profile: self.profile,
        })
    }

    /// Directories for the run: the user's, or the signature's defaults minus those this
    /// filesystem cannot have (with a note).
    fn directories(&self, sig: &Signature, fs: Fs) -> Result<Vec<DirSpec>> {
        if !self.dirs.is_empty() {
            let dirs: Vec<DirSpec> = self
                .dirs
                .iter()
                .map(|d| DirSpec::parse(d, fs))
                .collect::<Result<_>>()?;
            for (k, d) in dirs.iter().enumerate() {
                if dirs[..k].iter().any(|e| e.name == d.name) {
                    bail!(
                        "--dir {} is given twice: each directory is a case of its own (use -r for repetitions)",
                        d.name
                    );
                }
            }
            return Ok(dirs);
        }
        let mut dirs = Vec::new();
        let mut skipped = Vec::new();
        for d in &sig.default_dirs {
            match DirSpec::parse(d, fs) {
                Ok(spec) => dirs.push(spec),
                Err(_) => skipped.push(d.split(':').next().unwrap_or(d).to_string()),
            }
        }
        if !skipped.is_empty() {
            crate::say!(
                "sigbench: {} cannot have the properties of {} (skipped; give --dir to choose)",
                fs.name(),
                skipped.join(", ")
            );
        }
        if dirs.is_empty() {
            bail!(
                "none of {}'s default directories works on {}: give --dir",
                sig.name,
                fs.name()
            );
        }
        Ok(dirs)
    }

    /// The probes asked for, after the filesystem's defaults unless those are left out.
    fn probe_specs(&self, fs: Fs) -> Result<Vec<ProbeSpec>> {
        let mut specs: Vec<ProbeSpec> = self
            .probes
            .iter()
            .map(|p| ProbeSpec::parse(p))
            .collect::<Result<_>>()?;
        if !self.no_default_probes {
            for d in fs.default_probes().iter().rev() {
                let d = ProbeSpec::parse(d)?;
                if !specs
                    .iter()
                    .any(|s| s.source() == d.source() || s.name == d.name)
                {
                    specs.insert(0, d);
                }
            }
        }
        Ok(specs)
    }
}
