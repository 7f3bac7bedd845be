//! The plan: signature × directories × N values × repetitions, the order the cases run in,
//! and the driver that takes each case through testbed → executor (with probes around the
//! timed window) → results.
//!
//! The order is repetition-major (every directory and N once, then again), or shuffled
//! within each repetition with `shuffle`, so drift over the run (thermal, page cache,
//! background work) spreads over all cases instead of biasing one. Warm-ups run first,
//! are recorded, and are flagged so statistics exclude them.

use crate::exec::Executor;
use crate::host::{Host, now_rfc3339};
use crate::interrupt;
use crate::probe::procfs::{SlabDelta, add_slab};
use crate::probe::{self, ProbeSpec, Probes, Scope};
use crate::results::{
    CaseResult, PhaseResult, PlanMeta, RunDocument, SCHEMA, SCHEMA_VERSION, SignatureMeta,
    TestbedMeta, Tool,
};
use crate::signature::Signature;
use crate::signature::template::mix64;
use crate::testbed::{DirSpec, Testbed, TestbedSpec, confine, tool_version};
use anyhow::{Context, Result};

/// The seed tokens and shuffling use unless the user gives one: runs are reproducible.
pub const DEFAULT_SEED: u64 = 0x5167_6265_6e63_6801;

#[derive(Clone, Debug)]
pub struct Plan {
    pub signature: Signature,
    pub testbed: TestbedSpec,
    pub dirs: Vec<DirSpec>,
    pub ns: Vec<u64>,
    pub repetitions: u32,
    pub warmup: u32,
    pub shuffle: bool,
    pub seed: u64,
    pub probes: Vec<ProbeSpec>,
    /// Log every timed call to this file (verification; costs time in the window).
    pub op_log: Option<std::path::PathBuf>,
}

/// One case to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Case {
    pub dir: usize,
    pub n: u64,
    pub rep: u32,
    pub warmup: bool,
}

/// What the driver tells whoever is watching (the CLI prints and draws progress).
pub trait Observer: Send {
    /// Everything validated and the testbed is up: the run really starts.
    fn run_started(&mut self, _doc: &RunDocument) {}
    /// A case is about to start; `work` is the number of file-iterations it will tick.
    fn case_started(&mut self, case: &Case, plan: &Plan, work: u64);
    /// Progress inside the current case.
    fn tick(&mut self, done: u64);
    /// A case finished (it is in the document already). An error stops the run: the
    /// observer could not keep the case (its store failed).
    fn case_done(&mut self, result: &CaseResult, plan: &Plan) -> Result<()>;
    fn warning(&mut self, message: &str);
}

impl Plan {
    pub fn cases(&self) -> Vec<Case> {
        let grid = |rep: u32, warmup: bool| -> Vec<Case> {
            let mut v: Vec<Case> = self
                .ns
                .iter()
                .flat_map(|&n| {
                    (0..self.dirs.len()).map(move |dir| Case {
                        dir,
                        n,
                        rep,
                        warmup,
                    })
                })
                .collect();
            if self.shuffle {
                shuffle(&mut v, self.seed ^ ((rep as u64) << 32) ^ warmup as u64);
            }
            v
        };
        let mut cases = Vec::new();
        for w in 1..=self.warmup {
            cases.extend(grid(w, true));
        }
        for r in 1..=self.repetitions {
            cases.extend(grid(r, false));
        }
        cases
    }

    /// A document with the run's metadata and no cases yet.
    pub fn document(&self) -> RunDocument {
        RunDocument {
            schema: SCHEMA.into(),
            version: SCHEMA_VERSION,
            id: crate::results::new_run_id(),
            label: String::new(),
            tool: Tool {
                name: "sigbench".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            status: "running".into(),
            error: None,
            started_at: now_rfc3339(),
            host: Host::current(),
            signature: SignatureMeta {
                name: self.signature.name.clone(),
                origin: self.signature.origin.clone(),
                sha256: self.signature.hash.clone(),
                source: self.signature.source.clone(),
            },
            testbed: TestbedMeta {
                fs: self.testbed.fs.name().into(),
                mkfs_version: tool_version(self.testbed.fs),
                mkfs_opts: self.testbed.mkfs_opts.clone(),
                mount_opts: self.testbed.mount_opts.clone(),
                device_kind: self.testbed.device.kind().into(),
                ..Default::default()
            },
            plan: PlanMeta {
                n: self.ns.clone(),
                repetitions: self.repetitions,
                warmup: self.warmup,
                seed: self.seed,
                order: if self.shuffle {
                    "shuffled"
                } else {
                    "interleaved"
                }
                .into(),
                dirs: self.dirs.iter().map(|d| d.text.clone()).collect(),
                probes: self
                    .probes
                    .iter()
                    .map(|p| format!("{}={}", p.name, p.source()))
                    .collect(),
            },
            cases: Vec::new(),
            warnings: Vec::new(),
            peak_rss_kib: 0,
            slice: None,
            slurm_job: None,
        }
    }

    /// Run every case, appending results to `doc` as they finish, so that on an error
    /// or interruption `doc` still holds every finished case.
    pub fn execute(&self, doc: &mut RunDocument, obs: &mut dyn Observer) -> Result<()> {
        let mut warnings = Vec::new();
        // Validate everything that can be validated before anything is created.
        let probes = Probes::resolve(&self.probes, &mut warnings)?;
        if let Some(log) = &self.op_log {
            std::fs::write(log, "# phase\tfile\tsyscall\tpaths\tresult\n")
                .with_context(|| format!("cannot write the op log {}", log.display()))?;
            warnings.push(format!(
                "every timed call is logged to {}: timings include the logging",
                log.display()
            ));
        }
        self.testbed.validate()?;
        let flush = |warnings: &mut Vec<String>, doc: &mut RunDocument, obs: &mut dyn Observer| {
            warnings.extend(crate::diag::take());
            for w in warnings.drain(..) {
                obs.warning(&w);
                doc.warnings.push(w);
            }
        };
        flush(&mut warnings, doc, obs);

        let max_n = self.ns.iter().copied().max().unwrap_or(1);
        crate::testbed::check_memory(&self.testbed, self.signature.memory_needed(max_n))
            .map_err(|e| anyhow::anyhow!("{}, N = {max_n}: {e}", self.signature.origin))?;
        let bed = Testbed::create(self.testbed.clone(), self.signature.space_needed(max_n))?;
        match &bed.device {
            Some(d) => {
                doc.testbed.device = d.path.display().to_string();
                doc.testbed.device_bytes = d.size;
            }
            None => doc.testbed.device_kind = "none".into(),
        }
        obs.run_started(doc);
        let scope = bed.device.as_ref().map(|d| Scope {
            block: d.block.clone(),
            major: d.major,
            minor: d.minor,
        });

        for case in self.cases() {
            interrupt::check()?;
            let result = self.run_case(&bed, &probes, scope.as_ref(), &case, &mut warnings, obs);
            flush(&mut warnings, doc, obs);
            let result = result?;
            doc.cases.push(result);
            doc.peak_rss_kib = probe::peak_rss_kib();
            obs.case_done(doc.cases.last().expect("just pushed"), self)?;
        }
        Ok(())
    }

    fn run_case(
        &self,
        bed: &Testbed,
        probes: &Probes,
        scope: Option<&Scope>,
        case: &Case,
        warnings: &mut Vec<String>,
        obs: &mut dyn Observer,
    ) -> Result<CaseResult> {
        let dir = &self.dirs[case.dir];
        let fs = bed.fresh(dir)?;
        let sig = &self.signature;
        let mut exec = Executor::new(sig, case.n, self.seed)?;
        if let Some(path) = &self.op_log {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open the op log {}", path.display()))?;
            use std::io::Write;
            writeln!(f, "# case dir={} n={} rep={}", dir.name, case.n, case.rep)?;
            exec.log_to(Box::new(std::io::BufWriter::new(f)));
        }
        let populated = sig.setup.populate.as_ref().map_or(0, |_| case.n);
        let work = sig.rounds as u64
            * sig
                .phases
                .iter()
                .map(|p| p.select.count(case.n))
                .sum::<u64>()
            + populated;
        obs.case_started(case, self, work);
        // Everything the workload needs from outside its filesystem is opened here.
        let mut window = probes.window(scope, warnings);
        // Slab evidence per phase: checkpoints between phases, outside the phases' times.
        let per_phase = sig.slab_evidence && sig.phases.len() * sig.rounds as usize > 1;
        let mut phase_slab: Vec<Vec<SlabDelta>> = vec![Vec::new(); sig.phases.len()];
        // The workload — setup, prelude and the timed window — runs confined to the test
        // filesystem (testbed::confine).
        let (timed, measured) = confine::run_confined(&fs.root, &fs.dir, || -> Result<_> {
            exec.prepare(&mut |done| obs.tick(done))?;
            window.open();
            let timed = {
                let mut cp = |k: usize| {
                    if let Some(d) = window.checkpoint() {
                        add_slab(&mut phase_slab[k], &d);
                    }
                };
                let checkpoint: Option<&mut dyn FnMut(usize)> =
                    if per_phase { Some(&mut cp) } else { None };
                exec.run_timed(&mut |done| obs.tick(populated + done), checkpoint)
            };
            let measured = window.close();
            exec.finish();
            Ok((timed?, measured))
        })??;
        if let (Some(last), Some(d)) = (phase_slab.last_mut(), &measured.last_segment_slab) {
            add_slab(last, d);
        }
        let phases = sig
            .phases
            .iter()
            .zip(&timed.phase_ns)
            .zip(phase_slab)
            .map(|((p, &ns), slab)| PhaseResult {
                name: p.name.clone(),
                wall_ns: ns,
                slabinfo: per_phase.then_some(slab),
            })
            .collect();
        Ok(CaseResult {
            dir: dir.name.clone(),
            n: case.n,
            rep: case.rep,
            warmup: case.warmup,
            path: fs.dir.display().to_string(),
            wall_ns: timed.wall_ns,
            calls: timed.calls,
            cpu: measured.cpu,
            counters: measured.counters,
            latency: timed.latency,
            vmstat: measured.deltas.vmstat,
            slabinfo: measured.deltas.slabinfo,
            blockstat: measured.deltas.blockstat,
            phases,
        })
    }
}

/// Fisher–Yates with the crate's mixer: deterministic for a seed.
fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut state = seed;
    for i in (1..v.len()).rev() {
        state = mix64(state);
        let j = (state % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testbed::{Fs, device::DeviceSpec};

    fn plan(reps: u32, warmup: u32, shuffle: bool) -> Plan {
        Plan {
            signature: Signature::load("test3").unwrap(),
            testbed: TestbedSpec {
                fs: Fs::Btrfs,
                device: DeviceSpec::LoopRam,
                mkfs_opts: vec![],
                mount_opts: String::new(),
                force: false,
            },
            dirs: vec![
                DirSpec::parse("a", Fs::Btrfs).unwrap(),
                DirSpec::parse("b", Fs::Btrfs).unwrap(),
            ],
            ns: vec![10, 20],
            repetitions: reps,
            warmup,
            shuffle,
            seed: 1,
            probes: vec![],
            op_log: None,
        }
    }

    #[test]
    fn cases_are_repetition_major_with_warmups_first() {
        let c = plan(2, 1, false).cases();
        assert_eq!(c.len(), 4 * 3);
        assert!(c[..4].iter().all(|c| c.warmup));
        assert!(c[4..].iter().all(|c| !c.warmup));
        // Every directory and N once per repetition, before the next repetition starts.
        assert_eq!(
            c[4..8]
                .iter()
                .map(|c| (c.n, c.dir, c.rep))
                .collect::<Vec<_>>(),
            [(10, 0, 1), (10, 1, 1), (20, 0, 1), (20, 1, 1)]
        );
        assert!(c[8..].iter().all(|c| c.rep == 2));
    }

    #[test]
    fn shuffling_keeps_each_repetition_complete() {
        let c = plan(3, 0, true).cases();
        for rep in 1..=3 {
            let mut got: Vec<(u64, usize)> = c
                .iter()
                .filter(|c| c.rep == rep)
                .map(|c| (c.n, c.dir))
                .collect();
            got.sort();
            assert_eq!(got, [(10, 0), (10, 1), (20, 0), (20, 1)]);
        }
        assert_eq!(c, plan(3, 0, true).cases(), "same seed, same order");
    }
}
