//! `sigbench run`: the options become a plan (`plan_of`), which runs here, on other
//! kernels in guests (`--kernel`), per filesystem of a list (`--fs a,b`) or as one slice
//! (`--slice I/S`); the console prints and the store keeps the results as they come.

use super::console::{Console, stdout, stdout_result};
use anyhow::{Result, bail};
use sigbench::interrupt;
use sigbench::outputs::Outputs;
use sigbench::plan::slice::{self, Slice};
use sigbench::plan::{DEFAULT_SEED, Plan};
use sigbench::probe::ProbeSpec;
use sigbench::report::{json, text};
use sigbench::results::{EXPORT_SCHEMA, Export, RunDocument, SCHEMA_VERSION};
use sigbench::signature::{self, Signature, limits};
use sigbench::store::{Store, Storing};
use sigbench::testbed::device::DeviceSpec;
use sigbench::testbed::{DirSpec, Fs, TestbedSpec, workspace};
use sigbench::vm::kernel::{self, KernelSpec};
use sigbench::vm::qemu::Accel;
use sigbench::vm::{self, VmOptions, boots, guests};
use std::time::Duration;

#[derive(clap::Args, Clone)]
pub struct Args {
    /// Built-in signature name (see `sigbench list`) or a signature file
    #[arg(default_value = signature::DEFAULT)]
    pub(crate) signature: String,
    /// Filesystem to test; a comma-separated list runs the plan on each (a fresh
    /// filesystem of its kind per case), labelled LABEL/FS
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "btrfs",
        value_name = "FS[,FS...]"
    )]
    pub(crate) fs: Vec<Fs>,
    /// Device: a scratch block device (/dev/X), `zram`, `ram` (brd), or `loop` (the
    /// default: a loop device over a file on a private tmpfs)
    #[arg(long, default_value = "loop")]
    device: String,
    /// Format a scratch device even though it holds a filesystem sigbench did not write
    #[arg(long)]
    force: bool,
    /// Extra mkfs options, e.g. "-O no-holes -R free-space-tree"
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    mkfs_opts: String,
    /// Mount options, e.g. "noatime,compress=zstd"
    #[arg(long, default_value = "")]
    mount_opts: String,
    /// Test directory NAME[:key=value,...] (compression=zstd[:L]|lzo|zlib[:L]|none,
    /// nocow, chattr=FLAGS, user.X=V); repeatable; replaces the signature's defaults
    #[arg(long = "dir", value_name = "NAME[:PROPS]")]
    pub(crate) dirs: Vec<String>,
    /// Number of files N; a comma-separated list sweeps N
    #[arg(
        short = 'n',
        long = "files",
        value_delimiter = ',',
        value_name = "N[,N...]"
    )]
    ns: Vec<u64>,
    /// Repeat every case R times, each on a fresh filesystem
    #[arg(
        short = 'r',
        long = "repetitions",
        default_value_t = 1,
        value_name = "R"
    )]
    pub(crate) repetitions: u32,
    /// Run the phases R times, each round on the next N files (overrides the signature)
    #[arg(long, value_name = "R")]
    rounds: Option<u32>,
    /// Warm-up runs of every case before the measured ones (recorded, flagged, excluded)
    #[arg(long, default_value_t = 0)]
    warmup: u32,
    /// Shuffle the cases within each repetition (seeded) instead of a fixed rotation
    #[arg(long)]
    shuffle: bool,
    /// Before each timed window, wait until nothing else runs on the machine (at most
    /// 5 s) and start at a timer tick; guests always do
    #[arg(long)]
    settle: bool,
    /// Seed for per-file tokens and shuffling
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
    /// Count a probe: tracepoint:SUBSYS:EVENT or kprobe:FUNC, optionally NAME=...; repeatable
    #[arg(long = "probe", value_name = "PROBE")]
    probes: Vec<String>,
    /// Do not add the filesystem's default probes (inode evictions)
    #[arg(long)]
    no_default_probes: bool,
    /// Write the run document as JSON to FILE (`-` for stdout; then nothing else goes there)
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<String>,
    /// Also print the kernel counters that moved most (slabinfo, vmstat, block device)
    #[arg(short, long)]
    pub(crate) verbose: bool,
    /// Label of this run's results in the store (default: the kernel release)
    #[arg(long)]
    pub(crate) label: Option<String>,
    #[command(flatten)]
    pub(crate) store: super::options::StoreOptions,
    /// Do not store the results
    #[arg(long)]
    pub(crate) no_store: bool,
    /// Run on this kernel (repeatable): a linux-image-*.deb, IMAGE[:MODULES_DIR], a kernel
    /// build tree, or `host`. Each result set is labelled with its kernel's release
    #[arg(long = "kernel", value_name = "KERNEL")]
    pub(crate) kernels: Vec<String>,
    /// QEMU accelerator for --kernel
    #[arg(long, value_enum, default_value = "auto")]
    accel: super::options::AccelChoice,
    /// What a guest's times count: `icount` (instructions executed, 1 ns each: the exact
    /// cost of the code path, the same on a busy machine; needs TCG, and is its default)
    /// or `host` (real time: KVM's default)
    #[arg(long, value_enum, value_name = "CLOCK")]
    clock: Option<super::options::ClockChoice>,
    /// Guest memory in MiB
    #[arg(long, default_value_t = 2048, value_name = "MiB")]
    guest_mem: u32,
    /// Guest CPUs (default 1 under the icount clock, else 2)
    #[arg(long, value_name = "N")]
    guest_cpus: Option<u32>,
    /// Seconds the plan may run in a guest once it is up (default 120, ×10 under TCG)
    #[arg(long, value_name = "SECS")]
    guest_timeout: Option<u64>,
    /// With several --kernel: alternate boots (A B A B …), one repetition per boot, so
    /// drift of the machine cannot pose as a kernel change
    #[arg(long)]
    interleave: bool,
    /// Guests at once (default: one per host CPU under the icount clock, whose times the
    /// host's load does not change; 1 on the host's clock)
    #[arg(long, value_name = "J")]
    pub(crate) jobs: Option<usize>,
    #[command(flatten)]
    cache: super::options::CacheOptions,
    /// Log every timed call (phase, file, syscall, paths, result) to FILE, to check a
    /// replay against its recording; the logging costs time inside the window
    #[arg(long, value_name = "FILE")]
    op_log: Option<std::path::PathBuf>,
    /// Run only slice I of S (0-based): the plan split into independent slices, one per
    /// kernel × filesystem × directory (× repetition with --split-reps), as `submit`
    /// splits it for a Slurm job array
    #[arg(long, value_name = "I/S")]
    pub(crate) slice: Option<String>,
    /// With --slice: a slice per repetition too (by default a slice's repetitions stay
    /// together, on one machine)
    #[arg(long)]
    pub(crate) split_reps: bool,
    /// Appended to every run's label (`/ext4` when a plan has several filesystems).
    #[arg(skip)]
    label_suffix: Option<String>,
}

/// `run` options the commands that take all of them (bisect, judge, minimize, submit) may
/// have no use for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RunOption {
    Json,
    Label,
    Interleave,
    Slice,
    SplitReps,
    NoStore,
    OpLog,
}

/// Refuse the options `command` has no use for, naming the first one given: an option is
/// never silently ignored.
pub(crate) fn refuse(args: &Args, command: &str, unused: &[RunOption]) -> Result<()> {
    for o in unused {
        let (flag, given) = match o {
            RunOption::Json => ("--json", args.json.is_some()),
            RunOption::Label => ("--label", args.label.is_some()),
            RunOption::Interleave => ("--interleave", args.interleave),
            RunOption::Slice => ("--slice", args.slice.is_some()),
            RunOption::SplitReps => ("--split-reps", args.split_reps),
            RunOption::NoStore => ("--no-store", args.no_store),
            RunOption::OpLog => ("--op-log", args.op_log.is_some()),
        };
        if given {
            bail!("{command} does not take {flag}");
        }
    }
    Ok(())
}

/// The filesystems of `--fs`, each once.
fn filesystems(args: &Args) -> Result<&[Fs]> {
    for (k, f) in args.fs.iter().enumerate() {
        if args.fs[..k].contains(f) {
            bail!("--fs: {} is given twice", f.name());
        }
    }
    Ok(&args.fs)
}

/// The plan's slices (`plan::slice`): every array task of `submit` computes the same list.
pub(crate) fn slices(args: &Args) -> Result<Vec<Slice>> {
    let dirs = |fs: Fs| -> Result<Vec<String>> {
        let plan = plan_of(&Args {
            fs: vec![fs],
            ..args.clone()
        })?;
        Ok(plan.dirs.into_iter().map(|d| d.text).collect())
    };
    slice::slices(
        &args.kernels,
        filesystems(args)?,
        &dirs,
        args.repetitions,
        args.split_reps,
    )
}

/// The arguments that run slice `s` alone.
fn slice_args(args: &Args, s: &Slice, several_fs: bool) -> Args {
    Args {
        fs: vec![s.fs],
        dirs: vec![s.dir.clone()],
        kernels: s.kernel.iter().cloned().collect(),
        repetitions: if s.rep.is_some() { 1 } else { args.repetitions },
        slice: None,
        split_reps: false,
        label_suffix: several_fs.then(|| format!("/{}", s.fs.name())),
        ..args.clone()
    }
}

/// Give a finished document the plan's label suffix and where it ran (slice, Slurm job).
fn name_it(args: &Args, doc: &mut RunDocument) {
    if let Some(s) = &args.label_suffix
        && !doc.label.ends_with(s.as_str())
    {
        doc.label.push_str(s);
    }
    if let Some(sl) = &args.slice {
        doc.slice = Some(sl.clone());
    }
    doc.slurm_job = slice::slurm_job();
}

/// Directories for the run: the user's, or the signature's defaults minus those this
/// filesystem cannot have (with a note).
fn directories(args: &Args, sig: &Signature, fs: Fs) -> Result<Vec<DirSpec>> {
    if !args.dirs.is_empty() {
        let dirs: Vec<DirSpec> = args
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
        sigbench::say!(
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

fn probes(args: &Args, fs: Fs) -> Result<Vec<ProbeSpec>> {
    let mut specs: Vec<ProbeSpec> = args
        .probes
        .iter()
        .map(|p| ProbeSpec::parse(p))
        .collect::<Result<_>>()?;
    if !args.no_default_probes {
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

/// The plan the options describe (validated as far as it can be without a device).
pub(crate) fn plan_of(args: &Args) -> Result<Plan> {
    let mut sig = Signature::load(&args.signature)?;
    if let Some(r) = args.rounds {
        if r == 0 {
            bail!("--rounds: at least one round");
        }
        if r > limits::MAX_ROUNDS {
            bail!("--rounds {r}: over the limit of {}", limits::MAX_ROUNDS);
        }
        sig.rounds = r;
    }
    let fs = match args.fs[..] {
        [fs] => fs,
        _ => bail!(
            "--fs {}: this command measures one filesystem (`run` and `submit` take several)",
            args.fs
                .iter()
                .map(|f| f.name())
                .collect::<Vec<_>>()
                .join(",")
        ),
    };
    let dirs = directories(args, &sig, fs)?;
    let ns = if args.ns.is_empty() {
        vec![sig.default_n]
    } else {
        args.ns.clone()
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
    if args.repetitions == 0 {
        bail!("-r: at least one repetition");
    }
    Ok(Plan {
        signature: sig,
        testbed: TestbedSpec {
            fs,
            device: DeviceSpec::parse(&args.device),
            mkfs_opts: sigbench::testbed::options::mkfs_options(fs, &args.mkfs_opts)?,
            mount_opts: {
                sigbench::testbed::options::mount_options(&args.mount_opts)?;
                args.mount_opts.clone()
            },
            force: args.force,
        },
        dirs,
        n_values: ns,
        repetitions: args.repetitions,
        warmup: args.warmup,
        shuffle: args.shuffle,
        seed: args.seed,
        probes: probes(args, fs)?,
        settle: args.settle,
        op_log: args.op_log.clone(),
    })
}

pub fn run(args: Args) -> Result<i32> {
    interrupt::install()?;
    let several = filesystems(&args)?.len() > 1;
    if let Some(sel) = &args.slice {
        return run_slice(&args, sel, several);
    }
    if !several {
        return run_one(args);
    }
    // Several filesystems: the plan on each in turn, labelled LABEL/FS, each document in
    // a JSON file of its own.
    if args.json.as_deref() == Some("-") {
        bail!(
            "--json - holds one run: with several --fs give a file (one per filesystem: FILE-FS.json)"
        );
    }
    let mut code = 0;
    for &fs in &args.fs {
        sigbench::say!("sigbench: filesystem {}", fs.name());
        let json = args.json.as_ref().map(|j| {
            let p = std::path::Path::new(j);
            let stem = p.file_stem().unwrap_or_default().to_string_lossy();
            p.with_file_name(format!("{stem}-{}.json", fs.name()))
                .display()
                .to_string()
        });
        code = code.max(run_one(Args {
            fs: vec![fs],
            json,
            label_suffix: Some(format!("/{}", fs.name())),
            ..args.clone()
        })?);
    }
    Ok(code)
}

/// `--slice I/S`: slice I of the plan's S, alone.
fn run_slice(args: &Args, sel: &str, several_fs: bool) -> Result<i32> {
    let (i, n) = slice::parse(sel)?;
    let all = slices(args)?;
    if n != all.len() {
        bail!(
            "--slice {sel}: this plan has {} slices (kernels × filesystems × directories{}), not {n}",
            all.len(),
            if args.split_reps {
                " × repetitions"
            } else {
                ""
            }
        );
    }
    sigbench::say!("sigbench: slice {i} of {n}: {}", all[i].describe());
    let mut sub = slice_args(args, &all[i], several_fs);
    sub.slice = Some(format!("{i}/{n}"));
    run_one(sub)
}

/// `run` on one filesystem.
fn run_one(args: Args) -> Result<i32> {
    check_outputs(&args)?;
    let plan = plan_of(&args)?;
    if !args.kernels.is_empty() {
        return run_kernels(&args, &plan);
    }
    if args.interleave {
        bail!("--interleave alternates kernels: give at least two --kernel");
    }
    if args.clock.is_some() {
        bail!("--clock chooses a guest's clock: give --kernel (a run here has the host's)");
    }
    let store = if args.no_store {
        None
    } else {
        Some(Store::open(&args.store.db)?)
    };
    let (doc, outcome, store_error) = run_here(&args, &plan, args.label.clone(), store);
    keep(&args, &doc, outcome, store_error)?;
    stdout_result()?;
    Ok(0)
}

/// The end of a run here: its document is written whatever happened (docs/json.md: a
/// failed run is a document with status "failed"); when the store lost something, it is
/// where the results are, and the run is an error saying so.
fn keep(
    args: &Args,
    doc: &RunDocument,
    outcome: Result<()>,
    store_error: Option<String>,
) -> Result<()> {
    let mut written = None;
    let dest = match (&args.json, &store_error) {
        (Some(d), _) => Some(d.clone()),
        (None, Some(_)) => Some(recovery_path(&args.store.db, &doc.id)),
        (None, None) => None,
    };
    if let Some(dest) = dest {
        match json::write(doc, &dest) {
            Ok(()) => {
                if dest != "-" {
                    sigbench::say!("sigbench: wrote {dest}");
                }
                written = Some(dest);
            }
            Err(e) if outcome.is_ok() && store_error.is_none() => return Err(e),
            Err(e) => sigbench::say!("sigbench: {e:#}"),
        }
    }
    let Some(e) = store_error else {
        return outcome;
    };
    let kept = match &written {
        Some(d) if d != "-" => {
            format!("; the results are in {d}: `sigbench import {d}` adds them to a store")
        }
        Some(_) => "; the results are in the JSON on stdout".into(),
        None => "; the results could not be written anywhere else either".into(),
    };
    if let Err(e) = &outcome {
        sigbench::say!("sigbench: {e:#}");
    }
    bail!(
        "could not store the results in {}: {e}{kept}",
        args.store.db
    )
}

/// Where a run's document goes when the store failed and no --json was given: beside the
/// store, else in /var/tmp or /tmp (the store's filesystem may be the full one).
fn recovery_path(db: &sigbench::store::Location, id: &str) -> String {
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

/// Outputs must not overwrite the store, the signature or each other (`--json
/// sigbench.db` would destroy every stored run): checked before anything runs.
fn check_outputs(args: &Args) -> Result<()> {
    outputs(args).check()
}

/// What `args` read and write (`sigbench::outputs`).
pub(crate) fn outputs(args: &Args) -> Outputs {
    let mut o = Outputs::new((!args.no_store).then_some(&args.store.db));
    if std::path::Path::new(&args.signature).is_file() {
        o = o.input("the signature", &args.signature);
    }
    if let Some(j) = &args.json {
        o = o.output("--json", j);
    }
    if let Some(l) = &args.op_log {
        o = o.output("--op-log", l);
    }
    o
}

/// Run the plan on this kernel; print and store as it goes. Returns the document and how
/// the run ended (the document holds every finished case either way).
/// The first store error is returned beside the outcome: the run goes on measuring (its
/// document keeps every case), and the caller turns it into a failure.
pub(crate) fn run_here(
    args: &Args,
    plan: &Plan,
    label: Option<String>,
    store: Option<Store>,
) -> (RunDocument, Result<()>, Option<String>) {
    let json_to_stdout = args.json.as_deref() == Some("-");
    let mount_point = format!("{}/{}/mnt", workspace::ROOT, std::process::id());
    let mut doc = plan.document_here();
    doc.label = label.unwrap_or_else(|| doc.host.kernel_release.clone());
    name_it(args, &mut doc);
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
        Err(e) if e.downcast_ref::<interrupt::Interrupted>().is_some() => "interrupted",
        Err(_) => "failed",
    }
    .into();
    doc.error = outcome.as_ref().err().map(|e| format!("{e:#}"));
    if let Some(s) = &mut storing
        && let Some(id) = s.finish(&doc)
    {
        sigbench::say!(
            "sigbench: stored as `{}` in {} (run {id})",
            doc.label,
            s.store.location
        );
    }
    print_summary(args, plan, &doc, json_to_stdout);
    (doc, outcome, storing.and_then(|s| s.error))
}

/// The summary after the s3e lines, on stdout (stderr when stdout carries the JSON).
fn print_summary(args: &Args, plan: &Plan, doc: &RunDocument, to_stderr: bool) {
    let summary = text::summary(doc, args.verbose, plan.signature.slab_evidence);
    if to_stderr {
        sigbench::say_raw!("{summary}");
    } else {
        stdout(&summary);
    }
}

/// Run `plan` on the prepared kernel `k` in a guest, as `run --kernel` does, and print
/// what the library queued meanwhile (the KVM verdict, say).
pub(crate) fn guest_run(
    args: &Args,
    plan: &Plan,
    k: &kernel::Kernel,
    opts: &VmOptions,
) -> Result<vm::GuestRun> {
    let (guest, signature) = boots::guest_args(&boots::in_guest(plan), args.verbose)?;
    let run = vm::run(k, plan.testbed.fs, &guest, signature.as_deref(), opts);
    for w in sigbench::diag::take() {
        sigbench::say!("sigbench: {w}");
    }
    run
}

/// How guests are run, from the options.
pub(crate) fn vm_options(args: &Args) -> Result<VmOptions> {
    use super::options::AccelChoice;
    let accel = match args.accel {
        AccelChoice::Auto => None,
        AccelChoice::Kvm => Some(Accel::Kvm),
        AccelChoice::Tcg => Some(Accel::Tcg),
    };
    let opts = VmOptions {
        cache: args.cache.cache_dir.clone(),
        accel,
        clock: args.clock.map(Into::into),
        mem_mib: args.guest_mem,
        cpus: args.guest_cpus,
        timeout: args.guest_timeout.map(Duration::from_secs),
    };
    // A combination no guest can have (icount with KVM) is refused before anything runs.
    opts.expected_machine()?;
    Ok(opts)
}

/// `--kernel K…`: the plan on each kernel in turn (`boots::boots` says in what order),
/// each result set labelled with its kernel's release. A kernel that fails does not stop
/// the others.
fn run_kernels(args: &Args, plan: &Plan) -> Result<i32> {
    let specs: Vec<(String, KernelSpec)> = args
        .kernels
        .iter()
        .map(|k| Ok((k.clone(), KernelSpec::parse(k)?)))
        .collect::<Result<_>>()?;
    if args.label.is_some() && specs.len() > 1 {
        bail!(
            "--label names one result set; with several --kernel each is labelled with its kernel's release"
        );
    }
    if args.op_log.is_some() && specs.iter().any(|(_, s)| *s != KernelSpec::Host) {
        bail!("--op-log is not available in a guest");
    }
    // What cannot go to a guest (a --device path) is refused before any kernel runs.
    boots::guest_args(plan, args.verbose)?;
    let mut runs = KernelRuns {
        args,
        opts: vm_options(args)?,
        store: open_store(args)?,
        docs: Vec::new(),
        failures: Vec::new(),
        store_failed: false,
    };
    let schedule = boots::boots(specs.len(), plan.repetitions, args.interleave);
    let jobs = guests::how_many(&runs.opts, args.jobs)?;
    let mut broken = vec![false; specs.len()];
    // The schedule in stretches: guests side by side (`--jobs`), the host alone.
    let mut at = 0;
    while at < schedule.len() {
        interrupt::check()?;
        let (k, reps) = schedule[at];
        let plan = Plan {
            repetitions: reps,
            ..plan.clone()
        };
        if specs[k].1 == KernelSpec::Host {
            runs.on_host(&plan)?;
            at += 1;
            continue;
        }
        let stretch: Vec<(usize, guests::Boot)> = schedule[at..]
            .iter()
            .take_while(|(k, _)| specs[*k].1 != KernelSpec::Host)
            .filter(|(k, _)| !broken[*k])
            .map(|&(k, reps)| {
                let (name, spec) = specs[k].clone();
                let plan = Plan {
                    repetitions: reps,
                    ..plan.clone()
                };
                (k, guests::Boot { name, spec, plan })
            })
            .collect();
        at += schedule[at..]
            .iter()
            .take_while(|(k, _)| specs[*k].1 != KernelSpec::Host)
            .count();
        let boots: Vec<guests::Boot> = stretch.iter().map(|(_, b)| b.clone()).collect();
        let total = schedule.len();
        guests::run_boots(
            &boots,
            jobs,
            &runs.opts.clone(),
            args.verbose,
            &|i, b| sigbench::say!("sigbench: boot {} of {total}: {}", i + 1, b.name),
            &mut |i, booted| {
                let k = stretch[i].0;
                if !broken[k] {
                    broken[k] = !runs.on_guest(&boots[i].name, &boots[i].plan, booted)?;
                }
                Ok(())
            },
        )?;
    }
    runs.finish(specs.len())
}

fn open_store(args: &Args) -> Result<Option<Store>> {
    Ok(if args.no_store {
        None
    } else {
        Some(Store::open(&args.store.db)?)
    })
}

/// The result sets of `run --kernel` as they come, and what failed.
struct KernelRuns<'a> {
    args: &'a Args,
    opts: VmOptions,
    store: Option<Store>,
    docs: Vec<RunDocument>,
    failures: Vec<String>,
    store_failed: bool,
}

impl KernelRuns<'_> {
    fn failed(&mut self, what: String) {
        sigbench::say!("sigbench: {what}");
        self.failures.push(what);
    }

    /// `host` in the list: the plan here, printed and stored as a plain `run` does.
    fn on_host(&mut self, plan: &Plan) -> Result<()> {
        let args = self.args;
        sigbench::say!(
            "sigbench: kernel host ({})",
            sigbench::host::Host::current().kernel_release
        );
        let (doc, outcome, store_error) =
            run_here(args, plan, args.label.clone(), self.store.take());
        if let Some(e) = store_error {
            self.store_failed = true;
            self.failures.push(format!(
                "kernel host: could not store the results in {}: {e}",
                args.store.db
            ));
        }
        self.store = open_store(args)?;
        if let Err(e) = outcome {
            if e.downcast_ref::<interrupt::Interrupted>().is_some() {
                return Err(e);
            }
            self.failures.push(format!("kernel host: {e:#}"));
        }
        self.docs.push(doc);
        Ok(())
    }

    /// A kernel in a guest: its document printed and stored. False when the kernel could
    /// not be prepared or booted (it is not tried again).
    fn on_guest(&mut self, name: &str, plan: &Plan, booted: guests::Booted) -> Result<bool> {
        let args = self.args;
        for w in sigbench::diag::take() {
            sigbench::say!("sigbench: {w}");
        }
        let run = match booted {
            Ok((k, r)) => {
                sigbench::say!("sigbench: kernel {} ({name})", k.release);
                r
            }
            Err(e) if e.downcast_ref::<interrupt::Interrupted>().is_some() => return Err(e),
            Err(e) => {
                self.failed(format!("{e:#}"));
                return Ok(false);
            }
        };
        if let Some(mut doc) = run.doc {
            if let Some(l) = &args.label {
                doc.label = l.clone();
            }
            name_it(args, &mut doc);
            self.print(plan, &doc);
            self.store_guest(&doc);
            self.docs.push(doc);
        }
        if let Some(e) = run.error {
            self.failed(format!("{e:#}"));
        }
        Ok(true)
    }

    /// A guest's s3e lines and summary, as if it had run here.
    fn print(&self, plan: &Plan, doc: &RunDocument) {
        let layout = text::LineLayout::new(
            plan,
            doc.cases
                .first()
                .map_or(0, |c| c.path.len() - c.dir.len() - 1),
        );
        let mut out = String::new();
        for c in &doc.cases {
            out.push_str(&text::s3e_line(plan, c, &layout));
            out.push('\n');
        }
        out.push_str(&text::summary(
            doc,
            self.args.verbose,
            plan.signature.slab_evidence,
        ));
        if self.args.json.as_deref() == Some("-") {
            sigbench::say_raw!("{out}");
        } else {
            stdout(&out);
        }
    }

    fn store_guest(&mut self, doc: &RunDocument) {
        let Some(s) = &mut self.store else { return };
        match s.import(doc) {
            Ok(_) => sigbench::say!("sigbench: stored as `{}` in {}", doc.label, s.location),
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

    /// Every result set into `--json` (or, when the store failed, where `import` finds
    /// it); the exit code.
    fn finish(self, kernels: usize) -> Result<i32> {
        let args = self.args;
        let dest = match &args.json {
            Some(d) => Some(d.clone()),
            None if self.store_failed => Some(recovery_path(
                &args.store.db,
                &sigbench::results::new_run_id(),
            )),
            None => None,
        };
        if let Some(dest) = dest {
            let export = Export {
                schema: EXPORT_SCHEMA.into(),
                version: SCHEMA_VERSION,
                runs: self.docs,
            };
            json::write(&export, &dest)?;
            if self.store_failed && dest != "-" {
                sigbench::say!(
                    "sigbench: the results are in {dest}: `sigbench import {dest}` adds them to a store"
                );
            }
        }
        stdout_result()?;
        if self.failures.is_empty() {
            return Ok(0);
        }
        if self.failures.len() > 1 {
            sigbench::say!(
                "sigbench: {} of {kernels} kernels failed",
                self.failures.len()
            );
        }
        Ok(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Run {
        #[command(flatten)]
        args: Args,
    }

    fn args(argv: &[&str]) -> Args {
        Run::try_parse_from(std::iter::once("run").chain(argv.iter().copied()))
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
            .args
    }

    /// The guest's arguments are `plan_of`'s inverse: parsed again, they make the same plan.
    #[test]
    fn guest_args_round_trip_through_plan_of() {
        for argv in [
            &[][..],
            &[
                "churn",
                "--fs",
                "tmpfs",
                "-n",
                "100,200",
                "-r",
                "3",
                "--warmup",
                "1",
                "--shuffle",
                "--settle",
                "--seed",
                "7",
                "--rounds",
                "2",
                "--mount-opts",
                "size=1g,nr_inodes=0",
            ],
            &[
                "test3",
                "--fs",
                "ext4",
                "--dir",
                "a:chattr=A",
                "--dir",
                "b:user.k=v",
                "--mkfs-opts",
                "-O ^has_journal -E lazy_itable_init=0",
                "--probe",
                "sync=tracepoint:ext4:ext4_sync_file_enter",
                "--probe",
                "kprobe:ext4_evict_inode",
            ],
            &[
                "btrfs-rename-log",
                "--fs",
                "xfs",
                "--device",
                "zram",
                "-n",
                "5",
            ],
            &[
                "test4",
                "--no-default-probes",
                "--dir",
                "z:compression=zstd:3",
            ],
        ] {
            let plan = plan_of(&args(argv)).unwrap();
            let (guest, file) = boots::guest_args(&plan, false).unwrap();
            assert_eq!(file, None, "built-ins go by name");
            let back = plan_of(&args(&guest.iter().map(String::as_str).collect::<Vec<_>>()))
                .unwrap_or_else(|e| panic!("{guest:?}: {e:#}"));
            assert_eq!(
                format!("{plan:?}"),
                format!("{back:?}"),
                "{argv:?} → {guest:?}"
            );
        }
    }

    #[test]
    fn a_signature_file_travels_with_the_guest_and_a_host_device_does_not() {
        let plan = plan_of(&args(&["test3"])).unwrap();
        let file = Plan {
            signature: Signature::parse(&plan.signature.source, "/tmp/mine.toml").unwrap(),
            ..plan
        };
        let (guest, text) = boots::guest_args(&file, true).unwrap();
        assert_eq!(guest[0], vm::initramfs::SIGNATURE);
        assert_eq!(text.as_deref(), Some(file.signature.source.as_str()));
        assert_eq!(guest.last().map(String::as_str), Some("-v"));
        let plan = plan_of(&args(&["--device", "/dev/sdz9"])).unwrap();
        let e = boots::guest_args(&plan, false).unwrap_err().to_string();
        assert!(e.contains("cannot be used with --kernel"), "{e}");
    }

    #[test]
    fn options_a_command_has_no_use_for_are_refused_not_ignored() {
        use RunOption::*;
        let a = args(&["--label", "x", "--json", "out.json"]);
        assert!(refuse(&a, "minimize", &[Interleave, Slice]).is_ok());
        let e = refuse(&a, "minimize", &[Interleave, Json, Label]).unwrap_err();
        assert_eq!(e.to_string(), "minimize does not take --json");
        let e = refuse(&args(&["--no-store"]), "judge", &[NoStore]).unwrap_err();
        assert_eq!(e.to_string(), "judge does not take --no-store");
    }

    #[test]
    fn several_filesystems_are_a_list_of_choices() {
        assert_eq!(args(&["--fs", "btrfs,ext4"]).fs, [Fs::Btrfs, Fs::Ext4]);
        assert!(Run::try_parse_from(["run", "--fs", "zfs"]).is_err());
        let e = filesystems(&args(&["--fs", "ext4,ext4"])).unwrap_err();
        assert!(e.to_string().contains("ext4 is given twice"), "{e}");
        let e = plan_of(&args(&["--fs", "btrfs,ext4"])).unwrap_err();
        assert!(e.to_string().contains("measures one filesystem"), "{e}");
    }
}
