//! `sigbench run`: the options become a plan (`plan_of`), which runs here, on other
//! kernels in guests (`--kernel`), per filesystem of a list (`--fs a,b`) or as one slice
//! (`--slice I/S`); the console prints and the store keeps the results as they come.

use super::console::{Console, stdout, stdout_result};
use super::measure::{Args, request};
use analyse::store::Store;
use anyhow::{Context, Result, bail};
use measure::interrupt;
use measure::plan::Plan;
use measure::plan::slice;
use measure::plan::spec::RunSpec;
use measure::testbed::workspace;
use measure::vm::kernel::{self, KernelSpec};
use measure::vm::{self, VmOptions, boots, guests};
use model::results::RunDocument;
use present::report::text;
use search::request::RunRequest;
use search::schedule::{self, Kept, Turn};
use search::storing::Storing;

/// Give a finished document the plan's label suffix and where it ran (slice, Slurm job).
/// What a run here takes of its options: how its document is named, where it goes, what
/// is printed.
#[derive(Default)]
pub(crate) struct Here {
    /// The store's label (default: the kernel release), and what `run` adds to it (`/FS`).
    pub label: Option<String>,
    pub label_suffix: Option<String>,
    /// `--slice I/S`.
    pub slice: Option<String>,
    /// `--json -`: stdout carries the document, the summary goes to stderr.
    pub json_to_stdout: bool,
    pub verbose: bool,
}

impl Here {
    pub(crate) fn of(req: &RunRequest) -> Here {
        Here {
            label: req.label.clone(),
            label_suffix: req.label_suffix.clone(),
            slice: req.slice.clone(),
            json_to_stdout: req.json.as_deref() == Some("-"),
            verbose: req.verbose,
        }
    }

    /// The document's label (`--label`, else the one it has: its kernel's release), its
    /// suffix, slice and Slurm job.
    fn name(&self, doc: &mut RunDocument) {
        if let Some(l) = &self.label {
            doc.label = l.clone();
        }
        if let Some(s) = &self.label_suffix
            && !doc.label.ends_with(s.as_str())
        {
            doc.label.push_str(s);
        }
        if let Some(sl) = &self.slice {
            doc.slice = Some(sl.clone());
        }
        doc.slurm_job = slice::slurm_job();
    }
}

pub fn run(args: Args) -> Result<i32> {
    super::measure::refuse(&args, "run", &[])?;
    run_request(request(&args)?)
}

/// Run what `req` asks: on each of its filesystems in turn, or its one slice.
pub(crate) fn run_request(req: RunRequest) -> Result<i32> {
    interrupt::install()?;
    let several = req.filesystems()?.len() > 1;
    if let Some(sel) = &req.slice {
        return run_slice(&req, sel, several);
    }
    if !several {
        return run_one(req);
    }
    // Several filesystems: the plan on each in turn, labelled LABEL/FS, each document in
    // a JSON file of its own.
    if req.json.as_deref() == Some("-") {
        bail!(
            "--json - holds one run: with several --fs give a file (one per filesystem: FILE-FS.json)"
        );
    }
    let mut code = 0;
    for &fs in &req.spec.fs {
        model::say!("sigbench: filesystem {}", fs.name());
        let mut one = req.on(fs);
        one.json = req.json.as_ref().map(|j| {
            let p = std::path::Path::new(j);
            let stem = p.file_stem().unwrap_or_default().to_string_lossy();
            p.with_file_name(format!("{stem}-{}.json", fs.name()))
                .display()
                .to_string()
        });
        one.label_suffix = Some(format!("/{}", fs.name()));
        code = code.max(run_one(one)?);
    }
    Ok(code)
}

/// `--slice I/S`: slice I of the plan's S, alone.
fn run_slice(req: &RunRequest, sel: &str, several_fs: bool) -> Result<i32> {
    let (i, n) = slice::parse(sel)?;
    let all = req.slices()?;
    if n != all.len() {
        bail!(
            "--slice {sel}: this plan has {} slices (kernels × filesystems × directories{}), not {n}",
            all.len(),
            if req.split_reps {
                " × repetitions"
            } else {
                ""
            }
        );
    }
    model::say!("sigbench: slice {i} of {n}: {}", all[i].describe());
    let mut sub = req.of_slice(&all[i], several_fs);
    sub.slice = Some(format!("{i}/{n}"));
    run_one(sub)
}

/// `run` on one filesystem.
fn run_one(req: RunRequest) -> Result<i32> {
    req.outputs().check()?;
    let plan = req.plan()?;
    if req.interleave && req.kernels.is_empty() {
        bail!(
            "--interleave boots each repetition afresh, alternating the kernels: give --kernel (one, or several to alternate)"
        );
    }
    if !req.kernels.is_empty() {
        return run_kernels(&req, &plan);
    }
    super::measure::refuse_guest_options(&req)?;
    let store = if req.no_store {
        None
    } else {
        Some(Store::open(&req.store)?)
    };
    let (doc, outcome, store_error) = run_here(&Here::of(&req), &plan, store);
    schedule::keep(
        &doc,
        outcome,
        req.json.as_deref(),
        store_error.map(|e| (&req.store, e)),
    )?;
    stdout_result()?;
    Ok(0)
}

/// `sigbench task`: what a Slurm task runs (`slurm::task_command`).
#[derive(clap::Args)]
pub struct TaskArgs {
    /// Run only slice I of S (the job array's task)
    #[arg(long, value_name = "I/S")]
    slice: Option<String>,
}

/// The most a task's request may take (it is a few hundred bytes).
const MAX_TASK_BYTES: u64 = 1 << 20;

/// A Slurm task: the run request read as JSON from stdin (the job script's
/// here-document), run as `run` would have; its slice from the command line.
pub fn task(t: TaskArgs) -> Result<i32> {
    use std::io::Read;
    let mut text = String::new();
    std::io::stdin()
        .take(MAX_TASK_BYTES + 1)
        .read_to_string(&mut text)
        .context("cannot read the task's run request (JSON on stdin)")?;
    if text.len() as u64 > MAX_TASK_BYTES {
        bail!("the task's run request (JSON on stdin) is over {MAX_TASK_BYTES} bytes");
    }
    let mut req: RunRequest = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("the task's run request (JSON on stdin): {e}"))?;
    if t.slice.is_some() {
        req.slice = t.slice;
    }
    run_request(req)
}

/// `run` in a guest (`vm::guest`): the plan its spec makes, the document to the results
/// port, nothing stored.
pub fn in_guest(spec: RunSpec, verbose: bool, port: String) -> Result<i32> {
    interrupt::install()?;
    let plan = spec.plan()?;
    let here = Here {
        verbose,
        ..Here::default()
    };
    let (doc, outcome, _) = run_here(&here, &plan, None);
    schedule::keep(&doc, outcome, Some(&port), None)?;
    stdout_result()?;
    Ok(0)
}

/// Run the plan on this kernel; print and store as it goes. Returns the document and how
/// the run ended (the document holds every finished case either way).
/// The first store error is returned beside the outcome: the run goes on measuring (its
/// document keeps every case), and the caller turns it into a failure.
pub(crate) fn run_here(
    here: &Here,
    plan: &Plan,
    store: Option<Store>,
) -> (RunDocument, Result<()>, Option<String>) {
    let json_to_stdout = here.json_to_stdout;
    let mount_point = format!("{}/{}/mnt", workspace::ROOT, std::process::id());
    let mut doc = plan.document_here();
    doc.label = doc.host.kernel_release.clone();
    here.name(&mut doc);
    // The store is opened by the caller, so a bad --db fails before anything is
    // formatted; the run is recorded only once it has really started.
    let mut console = Console::new(plan, mount_point.len(), json_to_stdout);
    let mut storing = store.map(Storing::new);
    let mut outcome = plan.execute(&mut doc, &mut (&mut console, &mut storing));
    console.finish();
    // Whatever failed while a signal asked the run to stop failed because of it.
    if outcome.is_err()
        && let Err(stop) = interrupt::check()
    {
        outcome = Err(stop.into());
    }
    doc.status = match &outcome {
        Ok(()) => "complete",
        Err(e) if interrupt::Interrupted::caused(e) => "interrupted",
        Err(_) => "failed",
    }
    .into();
    doc.error = outcome.as_ref().err().map(|e| format!("{e:#}"));
    if let Some(s) = &mut storing
        && let Some(id) = s.finish(&doc)
    {
        model::say!(
            "sigbench: stored as `{}` in {} (run {id})",
            doc.label,
            s.store.location
        );
    }
    print_summary(here.verbose, plan, &doc, json_to_stdout);
    (doc, outcome, storing.and_then(|s| s.error))
}

/// The summary after the s3e lines, on stdout (stderr when stdout carries the JSON).
fn print_summary(verbose: bool, plan: &Plan, doc: &RunDocument, to_stderr: bool) {
    let summary = text::summary(doc, verbose, plan.signature.slab_evidence);
    if to_stderr {
        model::say_raw!("{summary}");
    } else {
        stdout(&summary);
    }
}

/// Run `plan` on the prepared kernel `k` in a guest, as `run --kernel` does, and print
/// what the library queued meanwhile (the KVM verdict, say).
pub(crate) fn guest_run(
    req: &RunRequest,
    plan: &Plan,
    k: &kernel::Kernel,
    opts: &VmOptions,
) -> Result<vm::GuestRun> {
    let run = guests::run_on(k, plan, opts, req.verbose);
    for w in model::diag::take() {
        model::say!("sigbench: {w}");
    }
    run
}

/// `--kernel K…`: the plan on each kernel in turn (`boots::boots` says in what order),
/// each result set labelled with its kernel's release. A kernel that fails does not stop
/// the others.
fn run_kernels(req: &RunRequest, plan: &Plan) -> Result<i32> {
    // What is refused is refused before any kernel is built.
    if req.label.is_some() && req.kernels.len() > 1 {
        bail!(
            "--label names one result set; with several --kernel each is labelled with its kernel's release"
        );
    }
    if req.spec.op_log.is_some() && req.kernels.iter().any(|k| k != "host") {
        bail!("--op-log is not available in a guest");
    }
    // Guest options are checked once, before any kernel is built.
    let opts = req.vm()?;
    let (specs, suffixes) = kernel_specs(req, plan, &opts)?;
    // What cannot go to a guest (a --device path) is refused before any kernel runs.
    boots::guest_plan(plan, req.verbose)?;
    measure::vm::preflight(&specs, plan.testbed.fs, &opts)?;
    let mut kept = Kept::open((!req.no_store).then_some(&req.store))?;
    let guests = schedule::Guests {
        opts: &opts,
        jobs: guests::how_many(&opts, req.vm.jobs)?,
        verbose: req.verbose,
    };
    schedule::run(
        &specs,
        plan,
        req.interleave,
        &guests,
        &mut |turn| match turn {
            Turn::Host { plan, .. } => {
                on_host(req, &plan, &mut kept)?;
                Ok(true)
            }
            Turn::Guest {
                kernel,
                boot,
                booted,
            } => on_guest(req, boot, *booted, &suffixes[kernel], &mut kept),
        },
    )?;
    let ok = kept.finish(req.json.as_deref(), specs.len())?;
    stdout_result()?;
    Ok(if ok { 0 } else { 1 })
}

/// Kernels as given (the argument) and as booted.
type Kernels = Vec<(String, KernelSpec)>;

/// The `--kernel` arguments as kernels to boot, and the suffix each one's label takes: a
/// kernel source tree with patches (`DIR+fix.patch`, `kbuild::Variant`) is built first —
/// every variant before anything boots, a failed patch or build one line — and booted as
/// its image, labelled `RELEASE+fix`. A tree built already is booted as it is, unless a
/// patched variant of it is in the list: then it is built beside that one, from the same
/// config, so that the two differ by the patch alone.
fn kernel_specs(req: &RunRequest, plan: &Plan, opts: &VmOptions) -> Result<(Kernels, Vec<String>)> {
    use measure::kbuild::Variant;
    let parsed: Vec<Option<Variant>> = req
        .kernels
        .iter()
        .map(|k| Variant::parse(k))
        .collect::<Result<_>>()?;
    let variants: Vec<Option<Variant>> = parsed
        .iter()
        .map(|v| {
            v.clone().filter(|v| {
                !v.boots_as_built()
                    || parsed
                        .iter()
                        .flatten()
                        .any(|o| !o.patches.is_empty() && o.same_tree(v))
            })
        })
        .collect();
    if req.kconfig.is_some() && variants.iter().all(Option::is_none) {
        bail!(
            "--kconfig is the config of a kernel source tree --kernel DIR[+PATCH…] builds: give one"
        );
    }
    let wanted: Vec<Variant> = variants.iter().flatten().cloned().collect();
    let built = measure::kbuild::build_variants(
        &wanted,
        plan.testbed.fs,
        req.kconfig.as_deref(),
        &opts.cache,
        &mut |m| model::say!("sigbench: {m}"),
    )?;
    let mut built = built.into_iter();
    let mut specs = Vec::new();
    let mut suffixes = Vec::new();
    for (k, v) in req.kernels.iter().zip(&variants) {
        match v {
            Some(_) => {
                let b = built.next().expect("one build per variant");
                specs.push((
                    k.clone(),
                    KernelSpec::Image {
                        image: b.image,
                        modules: b.modules,
                    },
                ));
                suffixes.push(b.suffix);
            }
            None => {
                specs.push((k.clone(), KernelSpec::parse(k)?));
                suffixes.push(String::new());
            }
        }
    }
    Ok((specs, suffixes))
}

/// `host` in the list: the plan here, printed and stored as a plain `run` does.
fn on_host(req: &RunRequest, plan: &Plan, kept: &mut Kept) -> Result<()> {
    model::say!(
        "sigbench: kernel host ({})",
        measure::host::current().kernel_release
    );
    let (doc, outcome, store_error) = run_here(&Here::of(req), plan, kept.take_store());
    if let Some(e) = store_error {
        kept.store_failed(format!(
            "kernel host: could not store the results in {}: {e}",
            req.store
        ));
    }
    kept.reopen()?;
    if let Err(e) = outcome {
        if interrupt::Interrupted::caused(&e) {
            return Err(e);
        }
        kept.failures.push(format!("kernel host: {e:#}"));
    }
    kept.docs.push(doc);
    Ok(())
}

/// A kernel in a guest: its document printed and stored. False when the kernel could not
/// be prepared or booted (it is not tried again).
fn on_guest(
    req: &RunRequest,
    boot: &guests::Boot,
    booted: guests::Booted,
    suffix: &str,
    kept: &mut Kept,
) -> Result<bool> {
    for w in model::diag::take() {
        model::say!("sigbench: {w}");
    }
    let run = match booted {
        Ok((k, r)) => {
            model::say!("sigbench: kernel {} ({})", k.release, boot.name);
            r
        }
        Err(e) if interrupt::Interrupted::caused(&e) => return Err(e),
        Err(e) => {
            kept.failed(format!("{e:#}"));
            return Ok(false);
        }
    };
    if let Some(mut doc) = run.doc {
        // A patched tree's results are told from the tree's: same release, +PATCH.
        doc.label.push_str(suffix);
        Here::of(req).name(&mut doc);
        print_guest(req, &boot.plan, &doc);
        kept.store(doc);
    }
    if let Some(e) = run.error {
        kept.failed(format!("{e:#}"));
    }
    Ok(true)
}

/// A guest's s3e lines and summary, as if it had run here.
fn print_guest(req: &RunRequest, plan: &Plan, doc: &RunDocument) {
    let layout = text::LineLayout::new(
        plan,
        doc.cases
            .first()
            .map_or(0, |c| c.path.len() - c.dir.len() - 1),
    );
    let mut out = String::new();
    for c in &doc.cases {
        out.push_str(&text::case_lines(plan, c, &layout));
        out.push('\n');
    }
    out.push_str(&text::summary(
        doc,
        req.verbose,
        plan.signature.slab_evidence,
    ));
    if req.json.as_deref() == Some("-") {
        model::say_raw!("{out}");
    } else {
        stdout(&out);
    }
}
