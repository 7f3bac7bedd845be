//! `sigbench run`: parse the options into a plan, execute it, print and save the results.

use anyhow::{Result, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sigbench::interrupt;
use sigbench::plan::{Case, DEFAULT_SEED, Observer, Plan};
use sigbench::probe::ProbeSpec;
use sigbench::report::{json, text};
use sigbench::results::CaseResult;
use sigbench::results::{EXPORT_SCHEMA, Export, RunDocument, SCHEMA_VERSION};
use sigbench::signature::{self, Signature, limits};
use sigbench::store::Store;
use sigbench::testbed::device::DeviceSpec;
use sigbench::testbed::{DirSpec, Fs, TestbedSpec, workspace};
use sigbench::vm::kernel::{self, KernelSpec};
use sigbench::vm::qemu::Accel;
use sigbench::vm::{self, VmOptions};
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

#[derive(clap::Args, Clone)]
pub struct Args {
    /// Built-in signature name (see `sigbench list`) or a signature file
    #[arg(default_value = signature::DEFAULT)]
    pub(crate) signature: String,
    /// Filesystem to test: btrfs, ext4, xfs or tmpfs; a comma-separated list runs the
    /// plan on each (a fresh filesystem of its kind per case), labelled LABEL/FS
    #[arg(long, default_value = "btrfs", value_name = "FS[,FS...]")]
    pub(crate) fs: String,
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
    verbose: bool,
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
    /// QEMU accelerator for --kernel: auto (KVM if a test boot works here, else TCG), kvm, tcg
    #[arg(long, default_value = "auto")]
    accel: String,
    /// Guest memory in MiB
    #[arg(long, default_value_t = 2048, value_name = "MiB")]
    guest_mem: u32,
    /// Guest CPUs
    #[arg(long, default_value_t = 2)]
    guest_cpus: u32,
    /// Seconds the plan may run in a guest once it is up (default 120, ×10 under TCG)
    #[arg(long, value_name = "SECS")]
    guest_timeout: Option<u64>,
    /// With several --kernel: alternate boots (A B A B …), one repetition per boot, so
    /// drift of the machine cannot pose as a kernel change
    #[arg(long)]
    interleave: bool,
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

/// One independent part of a plan (`--slice`): a kernel (or the host), a filesystem, a
/// directory, and a repetition when repetitions are split too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Slice {
    pub kernel: Option<String>,
    pub fs: String,
    pub dir: String,
    pub rep: Option<u32>,
}

/// The filesystems of `--fs` (a comma-separated list), each checked.
pub(crate) fn fs_names(arg: &str) -> Result<Vec<String>> {
    let mut v: Vec<String> = Vec::new();
    for f in arg.split(',').map(str::trim) {
        Fs::parse(f)?;
        if v.iter().any(|x| x == f) {
            bail!("--fs {arg}: {f} is given twice");
        }
        v.push(f.to_string());
    }
    Ok(v)
}

/// The plan's slices, in a fixed order (kernels, then filesystems, directories,
/// repetitions), so every array task computes the same list.
pub(crate) fn slices(args: &Args) -> Result<Vec<Slice>> {
    let kernels: Vec<Option<String>> = if args.kernels.is_empty() {
        vec![None]
    } else {
        args.kernels.iter().cloned().map(Some).collect()
    };
    let mut v = Vec::new();
    for k in &kernels {
        for fs in fs_names(&args.fs)? {
            let plan = plan_of(&Args {
                fs: fs.clone(),
                ..args.clone()
            })?;
            for d in &plan.dirs {
                let reps: Vec<Option<u32>> = if args.split_reps {
                    (1..=plan.repetitions).map(Some).collect()
                } else {
                    vec![None]
                };
                for rep in reps {
                    v.push(Slice {
                        kernel: k.clone(),
                        fs: fs.clone(),
                        dir: d.text.clone(),
                        rep,
                    });
                }
            }
        }
    }
    Ok(v)
}

/// `I/S` → (I, S).
pub(crate) fn parse_slice(s: &str) -> Result<(usize, usize)> {
    let parsed = s
        .split_once('/')
        .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
    match parsed {
        Some((i, n)) if i < n => Ok((i, n)),
        _ => bail!("--slice {s}: give I/S with 0 <= I < S (slice I of S, counted from 0)"),
    }
}

/// The arguments that run slice `s` alone.
fn slice_args(args: &Args, s: &Slice, several_fs: bool) -> Args {
    Args {
        fs: s.fs.clone(),
        dirs: vec![s.dir.clone()],
        kernels: s.kernel.iter().cloned().collect(),
        repetitions: if s.rep.is_some() { 1 } else { args.repetitions },
        slice: None,
        split_reps: false,
        label_suffix: several_fs.then(|| format!("/{}", s.fs)),
        ..args.clone()
    }
}

/// Give a finished document the plan's label suffix and where it ran (slice, Slurm job).
fn name_it(args: &Args, doc: &mut sigbench::results::RunDocument) {
    if let Some(s) = &args.label_suffix
        && !doc.label.ends_with(s.as_str())
    {
        doc.label.push_str(s);
    }
    if let Some(sl) = &args.slice {
        doc.slice = Some(sl.clone());
    }
    if let (Ok(job), Ok(task)) = (
        std::env::var("SLURM_ARRAY_JOB_ID"),
        std::env::var("SLURM_ARRAY_TASK_ID"),
    ) {
        doc.slurm_job = Some(format!("{job}_{task}"));
    } else if let Ok(job) = std::env::var("SLURM_JOB_ID") {
        doc.slurm_job = Some(job);
    }
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
    if args.fs.contains(',') {
        bail!(
            "--fs {}: this command measures one filesystem (`run` and `submit` take several)",
            args.fs
        );
    }
    let fs = Fs::parse(&args.fs)?;
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
        op_log: args.op_log.clone(),
    })
}

pub fn run(args: Args) -> Result<i32> {
    interrupt::install()?;
    let fss = fs_names(&args.fs)?;
    if let Some(sel) = &args.slice {
        let (i, n) = parse_slice(sel)?;
        let all = slices(&args)?;
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
        let s = &all[i];
        sigbench::say!(
            "sigbench: slice {i} of {n}: {} on {}, directory {}{}",
            s.kernel.as_deref().unwrap_or("this kernel"),
            s.fs,
            s.dir,
            s.rep.map_or(String::new(), |r| format!(", repetition {r}"))
        );
        let mut sub = slice_args(&args, s, fss.len() > 1);
        sub.slice = Some(format!("{i}/{n}"));
        return run_one(sub);
    }
    if fss.len() == 1 {
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
    for fs in &fss {
        sigbench::say!("sigbench: filesystem {fs}");
        let json = args.json.as_ref().map(|j| {
            let p = std::path::Path::new(j);
            let stem = p.file_stem().unwrap_or_default().to_string_lossy();
            p.with_file_name(format!("{stem}-{fs}.json"))
                .display()
                .to_string()
        });
        code = code.max(run_one(Args {
            fs: fs.clone(),
            json,
            label_suffix: Some(format!("/{fs}")),
            ..args.clone()
        })?);
    }
    Ok(code)
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
    let store = if args.no_store {
        None
    } else {
        Some(Store::open(&args.store.db)?)
    };
    let (doc, outcome, store_error) = run_here(&args, &plan, args.label.clone(), store);
    // The document is written whatever happened (docs/json.md: a failed run is a document
    // with status "failed"); when the store lost something, it is where the results are.
    let mut written = None;
    let dest = match (&args.json, &store_error) {
        (Some(d), _) => Some(d.clone()),
        (None, Some(_)) => Some(recovery_path(&args.store.db, &doc.id)),
        (None, None) => None,
    };
    if let Some(dest) = dest {
        match json::write(&doc, &dest) {
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
    if let Some(e) = store_error {
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
        );
    }
    outcome?;
    stdout_result()?;
    Ok(0)
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
        if std::fs::write(&probe, vec![0u8; 1 << 16]).is_ok() {
            let _ = std::fs::remove_file(&probe);
            return d.join(&name).display().to_string();
        }
    }
    dirs[0].join(name).display().to_string()
}

/// Outputs must not overwrite the store or each other (`--json sigbench.db` would
/// destroy every stored run).
fn check_outputs(args: &Args) -> Result<()> {
    fn same(a: &std::path::Path, b: &std::path::Path) -> bool {
        let canon = |p: &std::path::Path| {
            std::fs::canonicalize(p).ok().or_else(|| {
                let parent = p
                    .parent()
                    .filter(|x| !x.as_os_str().is_empty())
                    .unwrap_or(std::path::Path::new("."));
                Some(std::fs::canonicalize(parent).ok()?.join(p.file_name()?))
            })
        };
        match (canon(a), canon(b)) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        }
    }
    let json = args
        .json
        .as_deref()
        .filter(|j| *j != "-")
        .map(std::path::Path::new);
    let op_log = args.op_log.as_deref();
    let db = (!args.no_store).then_some(args.store.db.path()).flatten();
    let named = [("--json", json), ("--op-log", op_log)];
    for (flag, path) in named {
        let Some(path) = path else { continue };
        if let Some(db) = db {
            for suffix in ["", "-wal", "-shm"] {
                let store_file = std::path::PathBuf::from(format!("{}{suffix}", db.display()));
                if same(path, &store_file) {
                    bail!(
                        "{flag} {} is the results store{}: choose another file",
                        path.display(),
                        if suffix.is_empty() { "" } else { "'s journal" }
                    );
                }
            }
        }
    }
    if let (Some(j), Some(o)) = (json, op_log)
        && same(j, o)
    {
        bail!(
            "--json and --op-log name the same file {}: choose two",
            j.display()
        );
    }
    Ok(())
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
    let mut console = Console::new(plan, mount_point.len(), json_to_stdout, store);
    let outcome = plan.execute(&mut doc, &mut console);
    console.finish();
    doc.status = match &outcome {
        Ok(()) => "complete",
        Err(e) if e.downcast_ref::<interrupt::Interrupted>().is_some() => "interrupted",
        Err(_) => "failed",
    }
    .into();
    doc.error = outcome.as_ref().err().map(|e| format!("{e:#}"));
    if console.store_error.is_none()
        && let (Some(store), Some(id)) = (&mut console.store, console.run_id)
    {
        match store.finish_run(id, &doc) {
            Ok(()) => sigbench::say!(
                "sigbench: stored as `{}` in {} (run {id})",
                doc.label,
                store.location
            ),
            Err(e) => console.store_error = Some(format!("{e:#}")),
        }
    }
    let summary = text::summary(&doc, args.verbose, plan.signature.slab_evidence);
    if json_to_stdout {
        sigbench::say_raw!("{summary}");
    } else {
        stdout(&summary);
    }
    (doc, outcome, console.store_error)
}

/// The guest's `run` arguments: the same plan, as options (host-only ones left out).
pub(crate) fn guest_args(args: &Args, plan: &Plan) -> Result<(Vec<String>, Option<String>)> {
    let builtin = sigbench::signature::builtins()
        .iter()
        .any(|s| s.origin == plan.signature.origin);
    let (sig_arg, sig_text) = if builtin {
        (plan.signature.name.clone(), None)
    } else {
        (
            sigbench::vm::initramfs::SIGNATURE.to_string(),
            Some(plan.signature.source.clone()),
        )
    };
    if let DeviceSpec::Path(p) = &plan.testbed.device {
        bail!(
            "--device {} cannot be used with --kernel: a guest has its own ramdisk",
            p.display()
        );
    }
    let mut v = vec![
        sig_arg,
        "--fs".into(),
        args.fs.clone(),
        "--device".into(),
        args.device.clone(),
    ];
    for (flag, value) in [
        ("--mkfs-opts", &args.mkfs_opts),
        ("--mount-opts", &args.mount_opts),
    ] {
        if !value.is_empty() {
            v.push(format!("{flag}={value}"));
        }
    }
    for d in &plan.dirs {
        v.extend(["--dir".into(), d.text.clone()]);
    }
    let ns: Vec<String> = plan.n_values.iter().map(u64::to_string).collect();
    v.extend([
        "-n".into(),
        ns.join(","),
        "-r".into(),
        plan.repetitions.to_string(),
    ]);
    v.extend([
        "--warmup".into(),
        plan.warmup.to_string(),
        "--seed".into(),
        plan.seed.to_string(),
    ]);
    v.extend(["--rounds".into(), plan.signature.rounds.to_string()]);
    if plan.shuffle {
        v.push("--shuffle".into());
    }
    // The plan's probes already include the defaults.
    v.push("--no-default-probes".into());
    for p in &plan.probes {
        let spec = if p.name == p.source() {
            p.source()
        } else {
            format!("{}={}", p.name, p.source())
        };
        v.extend(["--probe".into(), spec]);
    }
    if args.verbose {
        v.push("-v".into());
    }
    Ok((v, sig_text))
}

/// `--kernel K…`: the plan on each kernel in turn, each result set labelled with its
/// kernel's release. A kernel that fails does not stop the others.
/// Run `plan` on the prepared kernel `k` in a guest, as `run --kernel` does, and print
/// what the library queued meanwhile (the KVM verdict, say).
pub(crate) fn guest_run(
    args: &Args,
    plan: &Plan,
    k: &kernel::Kernel,
    opts: &VmOptions,
) -> Result<vm::GuestRun> {
    let (guest, signature) = guest_args(args, plan)?;
    let run = vm::run(k, plan.testbed.fs, &guest, signature.as_deref(), opts);
    for w in sigbench::diag::take() {
        sigbench::say!("sigbench: {w}");
    }
    run
}

/// How guests are run, from the options.
pub(crate) fn vm_options(args: &Args) -> Result<VmOptions> {
    let accel = match args.accel.as_str() {
        "auto" => None,
        "kvm" => Some(Accel::Kvm),
        "tcg" => Some(Accel::Tcg),
        other => bail!("unknown --accel `{other}` (auto, kvm, tcg)"),
    };
    Ok(VmOptions {
        cache: args.cache.cache_dir.clone(),
        accel,
        mem_mib: args.guest_mem,
        cpus: args.guest_cpus,
        timeout: args.guest_timeout.map(Duration::from_secs),
    })
}

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
    // Boots: one per kernel with every repetition, or (--interleave) one repetition per
    // boot, kernels alternating.
    let boots: Vec<u32> = if args.interleave {
        vec![1; plan.repetitions as usize]
    } else {
        vec![plan.repetitions]
    };
    let opts = vm_options(args)?;
    let mut store = if args.no_store {
        None
    } else {
        Some(Store::open(&args.store.db)?)
    };
    let mut docs = Vec::new();
    let mut failures = Vec::new();
    let mut store_failed = false;
    let mut broken: Vec<&str> = Vec::new();
    let full_plan = plan;
    // What cannot go to a guest (a --device path) is refused before any kernel runs.
    guest_args(args, full_plan)?;
    for (boot, &reps) in boots.iter().enumerate() {
        let plan = &Plan {
            repetitions: reps,
            ..full_plan.clone()
        };
        for (name, spec) in &specs {
            interrupt::check()?;
            if broken.contains(&name.as_str()) {
                continue;
            }
            if boots.len() > 1 {
                sigbench::say!("sigbench: boot {} of {}", boot + 1, boots.len());
            }
            if *spec == KernelSpec::Host {
                sigbench::say!(
                    "sigbench: kernel host ({})",
                    sigbench::host::Host::current().kernel_release
                );
                let (doc, outcome, store_error) =
                    run_here(args, plan, args.label.clone(), store.take());
                if let Some(e) = store_error {
                    store_failed = true;
                    failures.push(format!(
                        "kernel host: could not store the results in {}: {e}",
                        args.store.db
                    ));
                }
                store = if args.no_store {
                    None
                } else {
                    Some(Store::open(&args.store.db)?)
                };
                if let Err(e) = outcome {
                    if e.downcast_ref::<interrupt::Interrupted>().is_some() {
                        return Err(e);
                    }
                    failures.push(format!("kernel host: {e:#}"));
                }
                docs.push(doc);
                continue;
            }
            let outcome = kernel::prepare(spec, name, &opts.cache).and_then(|k| {
                sigbench::say!("sigbench: kernel {} ({name})", k.release);
                guest_run(args, plan, &k, &opts)
            });
            let run = match outcome {
                Ok(r) => r,
                Err(e) => {
                    if e.downcast_ref::<interrupt::Interrupted>().is_some() {
                        return Err(e);
                    }
                    failures.push(format!("{e:#}"));
                    sigbench::say!("sigbench: {}", failures.last().unwrap());
                    broken.push(name);
                    continue;
                }
            };
            if let Some(mut doc) = run.doc {
                if let Some(l) = &args.label {
                    doc.label = l.clone();
                }
                name_it(args, &mut doc);
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
                    &doc,
                    args.verbose,
                    plan.signature.slab_evidence,
                ));
                if args.json.as_deref() == Some("-") {
                    sigbench::say_raw!("{out}");
                } else {
                    stdout(&out);
                }
                if let Some(s) = &mut store {
                    match s.import(&doc) {
                        Ok(_) => {
                            sigbench::say!("sigbench: stored as `{}` in {}", doc.label, s.location)
                        }
                        Err(e) => {
                            store_failed = true;
                            failures.push(format!(
                                "kernel {}: could not store the results in {}: {e:#}",
                                doc.host.kernel_release, s.location
                            ));
                            sigbench::say!("sigbench: {}", failures.last().unwrap());
                        }
                    }
                }
                docs.push(doc);
            }
            if let Some(e) = run.error {
                failures.push(format!("{e:#}"));
                sigbench::say!("sigbench: {}", failures.last().unwrap());
            }
        }
    }
    let dest = match &args.json {
        Some(d) => Some(d.clone()),
        None if store_failed => Some(recovery_path(
            &args.store.db,
            &sigbench::results::new_run_id(),
        )),
        None => None,
    };
    if let Some(dest) = dest {
        let export = Export {
            schema: EXPORT_SCHEMA.into(),
            version: SCHEMA_VERSION,
            runs: docs,
        };
        json::write(&export, &dest)?;
        if store_failed && dest != "-" {
            sigbench::say!(
                "sigbench: the results are in {dest}: `sigbench import {dest}` adds them to a store"
            );
        }
    }
    stdout_result()?;
    if failures.is_empty() {
        Ok(0)
    } else {
        if failures.len() > 1 {
            sigbench::say!(
                "sigbench: {} of {} kernels failed",
                failures.len(),
                specs.len()
            );
        }
        Ok(1)
    }
}

/// The first failed write to stdout, if any.
static STDOUT_FAILED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Write to stdout. A failure (a reader that went away, a full disk behind `>`) does not
/// stop the run — it must still tear down its testbed, store and write its JSON — but
/// makes it exit non-zero at the end (`stdout_result`).
fn stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        let _ = STDOUT_FAILED.set(e.to_string());
    }
}

fn stdout_result() -> Result<()> {
    match STDOUT_FAILED.get() {
        Some(e) => bail!("could not write the report to stdout: {e}"),
        None => Ok(()),
    }
}

/// Prints s3e lines as cases finish and draws a progress bar on a terminal's stderr once a
/// run has taken more than a second.
struct Console {
    /// Where finished cases are stored, one transaction each, and the run's row there.
    store: Option<Store>,
    run_id: Option<i64>,
    stored: usize,
    /// The first thing the store refused; nothing more is written to it after.
    store_error: Option<String>,
    layout: text::LineLayout,
    to_stderr: bool,
    bar: Option<ProgressBar>,
    started: Instant,
    shown: bool,
    cases_total: usize,
    cases_done: usize,
}

impl Console {
    fn new(plan: &Plan, mount_point_len: usize, to_stderr: bool, store: Option<Store>) -> Console {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
            if let Ok(style) = ProgressStyle::with_template("{prefix} {bar:30} {pos}/{len} {msg}") {
                b.set_style(style);
            }
            b
        });
        Console {
            store,
            run_id: None,
            stored: 0,
            store_error: None,
            layout: text::LineLayout::new(plan, mount_point_len),
            to_stderr,
            bar,
            started: Instant::now(),
            shown: false,
            cases_total: plan.cases().len(),
            cases_done: 0,
        }
    }

    fn emit(&self, line: &str) {
        let print = || {
            if self.to_stderr {
                sigbench::say!("{line}");
            } else {
                stdout(&format!("{line}\n"));
            }
        };
        match &self.bar {
            Some(b) if self.shown => b.suspend(print),
            _ => print(),
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Observer for Console {
    fn run_started(&mut self, doc: &sigbench::results::RunDocument) {
        if let Some(store) = &mut self.store {
            match store.begin_run(doc) {
                Ok(id) => self.run_id = Some(id),
                Err(e) => {
                    self.warning(&format!("could not store the run: {e:#}"));
                    self.store_error = Some(format!("{e:#}"));
                }
            }
        }
    }

    fn case_started(&mut self, case: &Case, plan: &Plan, work: u64) {
        if let Some(b) = &self.bar {
            b.set_length(work);
            b.set_position(0);
            b.set_prefix(format!("case {}/{}", self.cases_done + 1, self.cases_total));
            b.set_message(format!(
                "{} N={} rep {}",
                plan.dirs[case.dir].name, case.n, case.rep
            ));
        }
    }

    fn tick(&mut self, done: u64) {
        if let Some(b) = &self.bar {
            if !self.shown && self.started.elapsed() > Duration::from_secs(1) {
                b.set_draw_target(ProgressDrawTarget::stderr());
                self.shown = true;
            }
            b.set_position(done);
        }
    }

    fn case_done(&mut self, result: &CaseResult, plan: &Plan) -> Result<()> {
        self.cases_done += 1;
        self.emit(&text::s3e_line(plan, result, &self.layout));
        if self.store_error.is_none()
            && let (Some(store), Some(id)) = (&mut self.store, self.run_id)
        {
            match store.add_case(id, self.stored, result) {
                Ok(()) => self.stored += 1,
                Err(e) => {
                    // Measuring goes on: the document keeps every case, and the run ends
                    // with one error saying where they are (said once, at the end).
                    self.warning(&format!(
                        "the results store failed ({e:#}); measuring on, the results will be in the run's JSON document"
                    ));
                    self.store_error = Some(format!("{e:#}"));
                }
            }
        }
        Ok(())
    }

    fn warning(&mut self, message: &str) {
        let m = format!("sigbench: warning: {message}");
        match &self.bar {
            Some(b) if self.shown => b.suspend(|| sigbench::say!("{m}")),
            _ => sigbench::say!("{m}"),
        }
    }
}
