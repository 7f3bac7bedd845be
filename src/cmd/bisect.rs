//! `sigbench bisect [SIGNATURE] --kernels K1 … Kn --metric M [run options]`: the first bad
//! kernel of an ordered list, every step booted as `run --kernel` does and stored as a run
//! labelled by its release (`--resume` reuses what is stored).

use anyhow::{Context, Result, bail};
use sigbench::bisect::{Call, Measure, Measured, bisect, debversion};
use sigbench::plan::Plan;
use sigbench::results::RunDocument;
use sigbench::stats::Summary;
use sigbench::store::{Selector, Store};
use sigbench::vm::VmOptions;
use sigbench::vm::kernel::{self, KernelSpec};

#[derive(clap::Args)]
pub struct BisectArgs {
    /// The kernels, oldest (known good) to newest (known bad): .deb files (sorted by their
    /// Debian version when all are .deb), IMAGE[:MODULES] or build trees as --kernel takes
    #[arg(long = "kernels", id = "bisect_kernels", num_args = 2.., required = true, value_name = "KERNEL")]
    list: Vec<String>,
    /// The metric that tells good from bad (any `compare` metric)
    #[arg(long, default_value = "wall_ms")]
    metric: String,
    /// Repetitions an undecidable step may grow to before it is skipped
    #[arg(long, default_value_t = 12)]
    max_reps: u32,
    /// Reuse the steps already stored (same signature and plan), e.g. after Ctrl-C
    #[arg(long)]
    resume: bool,
    /// Write the outcome (first bad, the steps, each verdict) as JSON
    #[arg(long = "bisect-json", value_name = "FILE")]
    bisect_json: Option<String>,
    /// Everything `run` takes: the signature, --fs, -n, --dir, -r (repetitions per step)…
    #[command(flatten)]
    run: super::run::Args,
}

/// Boots kernel `i` of the list and measures the plan there, topping up repetitions.
struct Kernels<'a> {
    args: &'a super::run::Args,
    plan: &'a Plan,
    specs: Vec<(String, KernelSpec)>,
    opts: VmOptions,
    store: Store,
    resume: bool,
    metric: String,
    /// Runs per kernel index: stored earlier (with --resume) or measured now.
    docs: Vec<Option<Vec<RunDocument>>>,
    releases: Vec<Option<String>>,
    measured_now: Vec<usize>,
}

impl Kernels<'_> {
    /// The metric in the plan's first directory at its largest N, per repetition.
    fn samples(&self, docs: &[RunDocument]) -> Vec<f64> {
        let dir = &self.plan.dirs[0].name;
        let n = self.plan.ns.iter().copied().max().unwrap_or(0);
        docs.iter()
            .flat_map(|d| d.cases.iter())
            .filter(|c| !c.warmup && &c.dir == dir && c.n == n)
            .map(|c| {
                sigbench::stats::compare::metrics_of(c)
                    .into_iter()
                    .find(|(m, _, _)| *m == self.metric)
                    .map_or(0.0, |(_, _, v)| v)
            })
            .collect()
    }

    /// Stored runs of this kernel image (not only of its release) that measured the same.
    fn stored(&self, release: &str, image: &str) -> Result<Vec<RunDocument>> {
        let want = self.plan.document();
        Ok(self
            .store
            .load(&Selector::Label(release.to_string()))?
            .into_iter()
            .filter(|d| {
                d.host.kernel_image.as_deref() == Some(image)
                    && d.signature.sha256 == want.signature.sha256
                    && d.testbed.fs == want.testbed.fs
                    && d.plan.dirs == want.plan.dirs
                    && d.plan.n == want.plan.n
                    && d.status == "complete"
            })
            .collect())
    }
}

impl Measure for Kernels<'_> {
    fn name(&self, i: usize) -> String {
        match &self.releases[i] {
            Some(r) => r.clone(),
            None => self.specs[i].0.clone(),
        }
    }

    fn measure(&mut self, i: usize, reps: u32) -> Result<Measured> {
        let (name, spec) = self.specs[i].clone();
        let k = match kernel::prepare(&spec, &name, &self.opts.cache) {
            Ok(k) => k,
            Err(e) => return Ok(Measured::Failed(format!("{e:#}"))),
        };
        self.releases[i] = Some(k.release.clone());
        if self.docs[i].is_none() {
            self.docs[i] = Some(if self.resume {
                self.stored(&k.release, &k.key)?
            } else {
                Vec::new()
            });
        }
        let have = self
            .samples(self.docs[i].as_deref().unwrap_or_default())
            .len() as u32;
        if have < reps {
            let plan = Plan {
                repetitions: reps - have,
                ..self.plan.clone()
            };
            sigbench::say!(
                "sigbench: bisect: {} ({name}): {} repetition(s)",
                k.release,
                reps - have
            );
            let run = match super::run::guest_run(self.args, &plan, &k, &self.opts) {
                Ok(r) => r,
                Err(e) => {
                    if e.downcast_ref::<sigbench::interrupt::Interrupted>()
                        .is_some()
                    {
                        return Err(e);
                    }
                    return Ok(Measured::Failed(format!("{e:#}")));
                }
            };
            if let Some(e) = run.error {
                return Ok(Measured::Failed(format!("{e:#}")));
            }
            let Some(doc) = run.doc else {
                return Ok(Measured::Failed("no results".into()));
            };
            self.store
                .import(&doc)
                .with_context(|| format!("storing the step {}", k.release))?;
            self.measured_now.push(i);
            self.docs[i].get_or_insert_with(Vec::new).push(doc);
        } else {
            sigbench::say!(
                "sigbench: bisect: {} ({name}): stored, not measured again",
                k.release
            );
        }
        Ok(Measured::Samples(
            self.samples(self.docs[i].as_deref().unwrap_or_default()),
        ))
    }
}

/// The kernel arguments in order: .deb files sorted by their package's version.
fn ordered(kernels: &[String]) -> Result<Vec<String>> {
    if !kernels.iter().all(|k| k.ends_with(".deb")) {
        return Ok(kernels.to_vec());
    }
    let mut v = Vec::new();
    for k in kernels {
        let out = std::process::Command::new("dpkg-deb")
            .args(["-f", k, "Version"])
            .output()
            .with_context(|| format!("cannot run dpkg-deb on {k}"))?;
        if !out.status.success() {
            // Not readable as a package: keep it where the user put it.
            v.push((None, k.clone()));
        } else {
            v.push((
                Some(String::from_utf8_lossy(&out.stdout).trim().to_string()),
                k.clone(),
            ));
        }
    }
    if v.iter().all(|(ver, _)| ver.is_some()) {
        v.sort_by(|a, b| {
            debversion::compare(a.0.as_deref().unwrap_or(""), b.0.as_deref().unwrap_or(""))
        });
    }
    Ok(v.into_iter().map(|(_, k)| k).collect())
}

pub fn run(args: BisectArgs) -> Result<i32> {
    sigbench::interrupt::install()?;
    if !args.run.kernels.is_empty() {
        bail!("bisect takes its kernels with --kernels K1 … Kn (oldest first), not --kernel");
    }
    if args.run.no_store {
        bail!("bisect stores every step (that is what --resume reuses): drop --no-store");
    }
    let plan = super::run::plan_of(&args.run)?;
    let list = ordered(&args.list)?;
    let specs: Vec<(String, KernelSpec)> = list
        .iter()
        .map(|k| Ok((k.clone(), KernelSpec::parse(k)?)))
        .collect::<Result<_>>()?;
    if specs.iter().any(|(_, s)| *s == KernelSpec::Host) {
        bail!("bisect boots every kernel of the list: `host` has no place in it");
    }
    let mut m = Kernels {
        args: &args.run,
        plan: &plan,
        opts: super::run::vm_options(&args.run)?,
        store: Store::open(&args.run.store.db)?,
        resume: args.resume,
        metric: args.metric.clone(),
        docs: vec![None; specs.len()],
        releases: vec![None; specs.len()],
        measured_now: Vec::new(),
        specs,
    };
    let started = std::time::Instant::now();
    let outcome = bisect(
        &mut m,
        list.len(),
        &args.metric,
        args.run.repetitions.max(1),
        args.max_reps.max(args.run.repetitions),
        0.05,
        &mut |msg| {
            sigbench::say!(
                "sigbench: bisect [{:.0} s]: {msg}",
                started.elapsed().as_secs_f64()
            )
        },
    )?;

    // The table a maintainer pastes into a mail (reference 002's columns).
    let good = outcome
        .steps
        .iter()
        .find(|s| s.index == 0)
        .map(|s| s.samples.clone())
        .unwrap_or_default();
    let good_mean = Summary::of(&good).map_or(f64::NAN, |s| s.mean);
    let mut order: Vec<&sigbench::bisect::Step> = outcome.steps.iter().collect();
    order.sort_by_key(|s| s.index);
    let mut o = String::new();
    super::outln!(
        o,
        "bisect of {} on {} kernels, metric {}",
        plan.signature.name,
        list.len(),
        args.metric
    );
    super::outln!(
        o,
        "{:<28} {:>5} {:>12} {:>23} {:>9} {:>10} {:>7}  verdict",
        "kernel",
        "reps",
        "mean",
        "range",
        "diff",
        "stdev",
        "cv"
    );
    for s in &order {
        let row = match Summary::of(&s.samples) {
            Some(x) => format!(
                "{:>5} {:>12.2} {:>23} {:>9} {:>10.2} {:>6.2}%",
                x.n,
                x.mean,
                format!("{:.1} … {:.1}", x.min, x.max),
                if good_mean != 0.0 {
                    format!("{:+.1}%", (x.mean / good_mean - 1.0) * 100.0)
                } else {
                    format!("{:+.1}", x.mean - good_mean)
                },
                x.stdev,
                x.cv * 100.0
            ),
            None => format!(
                "{:>5} {:>12} {:>23} {:>9} {:>10} {:>7}",
                0, "-", "-", "-", "-", "-"
            ),
        };
        let verdict = match s.call {
            Call::Good => "good",
            Call::Bad => "bad",
            Call::Skipped => "skipped",
        };
        let mark = if outcome.first_bad == Some(s.index) {
            "  <- first bad"
        } else {
            ""
        };
        super::outln!(o, "{:<28} {row}  {verdict}{mark}", s.kernel);
    }
    for s in order.iter().filter(|s| s.call == Call::Skipped) {
        super::outln!(o, "skipped {}: {}", s.kernel, s.why);
    }
    let names = |v: &[usize]| v.iter().map(|&i| m.name(i)).collect::<Vec<_>>().join(", ");
    let code = match outcome.first_bad {
        Some(i) => {
            let step = outcome.steps.iter().find(|s| s.index == i);
            super::outln!(
                o,
                "\nfirst bad: {} ({}); evidence: {}",
                m.name(i),
                list[i],
                step.map_or("-", |s| s.why.as_str())
            );
            0
        }
        None => {
            super::outln!(
                o,
                "\nthe first bad kernel is one of: {} (skipped kernels leave it open)",
                names(&outcome.candidates)
            );
            1
        }
    };
    super::outln!(
        o,
        "{} kernels measured now, {} from the store; {:.0} s",
        m.measured_now.len(),
        outcome.steps.len().saturating_sub(m.measured_now.len()),
        started.elapsed().as_secs_f64()
    );
    if let Some(dest) = &args.bisect_json {
        #[derive(serde::Serialize)]
        struct Doc<'a> {
            schema: &'static str,
            version: u32,
            first_bad: Option<String>,
            kernels: Vec<String>,
            #[serde(flatten)]
            outcome: &'a sigbench::bisect::Outcome,
        }
        let doc = Doc {
            schema: "sigbench.bisect",
            version: 1,
            first_bad: outcome.first_bad.map(|i| m.name(i)),
            kernels: (0..list.len()).map(|i| m.name(i)).collect(),
            outcome: &outcome,
        };
        sigbench::report::json::write(&doc, dest)?;
    }
    super::out(&o)?;
    Ok(code)
}
