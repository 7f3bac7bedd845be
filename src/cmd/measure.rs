//! The options every measuring command shares (`run`, `judge`, `bisect`, `minimize`,
//! `submit`): the arguments, the ones a command refuses, the plan they describe, what they
//! read and write, and how guests are run.

use anyhow::{Result, bail};
use measure::plan::DEFAULT_SEED;
use measure::plan::spec::RunSpec;
use measure::plan::states::States;
use measure::signature;
use measure::testbed::Fs;
use measure::vm::GuestOptions;
use measure::vm::qemu::Accel;
use search::request::RunRequest;

/// The options of every command that measures; [`request`] turns them into the library's
/// run request.
#[derive(clap::Args, Clone)]
pub struct Args {
    /// Built-in signature name (see `sigbench list`) or a signature file
    #[arg(default_value = signature::DEFAULT)]
    pub(crate) signature: String,
    /// Filesystem to test; a comma-separated list runs the plan on each (a fresh
    /// filesystem of its kind per case), labelled LABEL/FS
    #[arg(
        long,
        value_parser = super::options::choice::<Fs>(),
        value_delimiter = ',',
        default_value = "btrfs",
        value_name = "FS[,FS...]"
    )]
    pub(crate) fs: Vec<Fs>,
    /// Device: a scratch block device (/dev/X), `zram`, `ram` (brd), or `loop` (the
    /// default: a loop device over a file on a private tmpfs)
    #[arg(long, default_value = "loop")]
    pub(crate) device: String,
    /// Format a scratch device even though it holds a filesystem sigbench did not write
    #[arg(long)]
    pub(crate) force: bool,
    /// Extra mkfs options, e.g. "-O no-holes -R free-space-tree"
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    pub(crate) mkfs_opts: String,
    /// Mount options, e.g. "noatime,compress=zstd"
    #[arg(long, default_value = "")]
    pub(crate) mount_opts: String,
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
    pub(crate) ns: Vec<u64>,
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
    pub(crate) rounds: Option<u32>,
    /// Run K clients at once, each a thread with its own descriptors and working
    /// directory (client0, client1, …; a loadfile names its own), released together; a
    /// comma-separated list sweeps K and prints a scaling table
    #[arg(long, value_delimiter = ',', value_name = "K[,K...]")]
    pub(crate) clients: Vec<u32>,
    /// Run each case for SECONDS, the clients looping over their work, after a warm-up
    /// (--warmup-time); prints throughput and a tick a second
    #[arg(long, value_name = "SECONDS")]
    pub(crate) time: Option<f64>,
    /// Warm-up before a run for a time (default: a fifth of --time), after which every
    /// count starts afresh
    #[arg(long, value_name = "SECONDS")]
    pub(crate) warmup_time: Option<f64>,
    /// The dbench loadfile a loadfile signature (`dbench`) replays, instead of the
    /// distribution package's
    #[arg(long, value_name = "FILE")]
    pub(crate) loadfile: Option<std::path::PathBuf>,
    /// Warm-up runs of every case before the measured ones (recorded, flagged, excluded)
    #[arg(long, default_value_t = 0)]
    pub(crate) warmup: u32,
    /// Shuffle the cases within each repetition (seeded) instead of a fixed rotation
    #[arg(long)]
    pub(crate) shuffle: bool,
    /// Before each timed window, wait until nothing else runs on the machine (at most
    /// 5 s) and start at a timer tick; guests always do
    #[arg(long)]
    pub(crate) settle: bool,
    /// Profile each case, function by function (kernel call chains sampled on the
    /// cpu-clock software timer; no hardware PMU needed): stored with the run, compared as
    /// profile.self.FUNCTION and profile.total.FUNCTION rows (ms), drawn as flame graphs
    /// in the HTML report. `--profile=HZ` samples the timed window HZ times a second of its
    /// CPU time (at most 20000); `--profile=apart` samples a second window of each case,
    /// run right after the timed one, at up to 100000 Hz (as many samples as its length
    /// allows), so no sampling is in the times. Bare `--profile`: apart in an icount guest
    /// (the default for --kernel), 4000 Hz in the window otherwise
    #[arg(long, value_name = "HZ|apart", num_args = 0..=1, require_equals = true, default_missing_value = "auto")]
    pub(crate) profile: Option<String>,
    /// Seed for per-file tokens and shuffling, and of the states the repetitions start
    /// from (--states)
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub(crate) seed: u64,
    /// Which states of the machine the repetitions start from, in guests under the icount
    /// clock: `sampled`, each repetition a boot of its own from the state of a seed made
    /// from --seed and its number (where pages and buffers land differs; stored with the
    /// repetition, and `--state SEED` runs it again to the digit); `fixed`, every
    /// repetition in one boot from one state, which repeats itself exactly (an A/B of a
    /// tiny code path on the same state). SIGBENCH_STATES sets it for a whole session (the
    /// test suite runs `fixed` unless a test is about states)
    #[arg(long, value_enum, default_value = "sampled", env = "SIGBENCH_STATES")]
    pub(crate) states: super::options::StatesChoice,
    /// Run the repetitions in one boot from the state of this seed (a stored repetition's:
    /// `sigbench runs -v` lists them), to the digit; it takes the place of --states
    #[arg(long, value_name = "SEED", value_parser = measure::plan::states::parse_seed)]
    pub(crate) state: Option<u64>,
    /// The number of the first repetition's state (default 0): `-r R --first-state N`
    /// samples states N … N+R−1 of --seed, so repetitions added to a stored run by hand
    /// measure new states instead of copies of the ones it has (`sigbench runs -v` lists
    /// them; watch and bisect do this themselves)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) first_state: u32,
    /// Count a probe: tracepoint:SUBSYS:EVENT or kprobe:FUNC, optionally NAME=...; repeatable
    #[arg(long = "probe", value_name = "PROBE")]
    pub(crate) probes: Vec<String>,
    /// Do not add the filesystem's default probes (inode evictions)
    #[arg(long)]
    pub(crate) no_default_probes: bool,
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
    /// Run on this kernel (repeatable): a distribution's kernel package (.deb, .rpm,
    /// .pkg.tar.zst; a kernel in several packages as one argument, 'IMAGE.deb,MODULES.deb'),
    /// IMAGE[:MODULES_DIR], a kernel build tree, `host`, or a kernel source tree (a git
    /// tree's HEAD) with patches on top, DIR[+PATCH…], which sigbench builds. Each result
    /// set is labelled with its kernel's release (+PATCH's name for a patched tree)
    #[arg(long = "kernel", value_name = "KERNEL")]
    pub(crate) kernels: Vec<String>,
    /// The base config of a kernel source tree `--kernel DIR[+PATCH…]` builds (default:
    /// tinyconfig), to which sigbench adds what its guest and the filesystem need
    #[arg(long, value_name = "FILE")]
    pub(crate) kconfig: Option<std::path::PathBuf>,
    /// QEMU accelerator for --kernel
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) accel: super::options::AccelChoice,
    /// What a guest's times count: `icount` (instructions executed, 1 ns each: the exact
    /// cost of the code path, the same on a busy machine; needs TCG, and is its default)
    /// or `host` (real time: KVM's default)
    #[arg(long, value_enum, value_name = "CLOCK")]
    pub(crate) clock: Option<super::options::ClockChoice>,
    /// Guest memory in MiB (default 2048)
    #[arg(long, value_name = "MiB")]
    pub(crate) guest_mem: Option<u32>,
    /// Guest CPUs (default: one a client up to 4 with --clients, where a QEMU here runs
    /// them; else 1 under the icount clock, 2 on the host's)
    #[arg(long, value_name = "N")]
    pub(crate) guest_cpus: Option<u32>,
    /// Seconds the plan may run in a guest once it is up (default 120, ×10 under TCG)
    #[arg(long, value_name = "SECS")]
    pub(crate) guest_timeout: Option<u64>,
    /// Under the icount clock, leave out the cost model (no `cost_ms`; guests run up to
    /// 5× faster): times are then instructions only. SIGBENCH_COST_MODEL=off: every run
    /// does
    #[arg(long)]
    pub(crate) no_cost_model: bool,
    /// One repetition per boot: with several --kernel alternate boots (A B A B …), so drift
    /// of the machine cannot pose as a kernel change; with one, every repetition starts
    /// from a fresh boot's state (under icount, repetitions then agree to the digit)
    #[arg(long)]
    pub(crate) interleave: bool,
    /// Guests at once (default: one per host CPU under the icount clock, whose times the
    /// host's load does not change; 1 on the host's clock)
    #[arg(long, value_name = "J")]
    pub(crate) jobs: Option<usize>,
    #[command(flatten)]
    pub(crate) cache: super::options::CacheOptions,
    /// Log every timed call (phase, file, syscall, paths, result) to FILE, to check a
    /// replay against its recording; the logging costs time inside the window
    #[arg(long, value_name = "FILE")]
    pub(crate) op_log: Option<std::path::PathBuf>,
    /// Run only slice I of S (0-based): the plan split into independent slices, one per
    /// kernel × filesystem × directory (× repetition with --split-reps), as `submit`
    /// splits it for a Slurm job array
    #[arg(long, value_name = "I/S")]
    pub(crate) slice: Option<String>,
    /// With --slice: a slice per repetition too (by default a slice's repetitions stay
    /// together, on one machine)
    #[arg(long)]
    pub(crate) split_reps: bool,
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
    Kconfig,
}

/// Refuse the options `command` has no use for, naming the first one given — an option is
/// never silently ignored — and a label no report could show.
pub(crate) fn refuse(args: &Args, command: &str, unused: &[RunOption]) -> Result<()> {
    if let Some(l) = &args.label {
        model::results::check_label(l).map_err(|e| anyhow::anyhow!("--label: {e}"))?;
    }
    for o in unused {
        let (flag, given) = match o {
            RunOption::Json => ("--json", args.json.is_some()),
            RunOption::Label => ("--label", args.label.is_some()),
            RunOption::Interleave => ("--interleave", args.interleave),
            RunOption::Slice => ("--slice", args.slice.is_some()),
            RunOption::SplitReps => ("--split-reps", args.split_reps),
            RunOption::NoStore => ("--no-store", args.no_store),
            RunOption::OpLog => ("--op-log", args.op_log.is_some()),
            RunOption::Kconfig => ("--kconfig", args.kconfig.is_some()),
        };
        if given {
            bail!("{command} does not take {flag}");
        }
    }
    Ok(())
}

/// What the options ask: the run request (`request::RunRequest`) — the one place the
/// command line becomes the library's object. Defaults the environment sets
/// (`SIGBENCH_COST_MODEL`) are resolved here, so a Slurm task runs what was asked where it
/// was asked.
pub(crate) fn request(args: &Args) -> Result<RunRequest> {
    use super::options::{AccelChoice, StatesChoice};
    if args.first_state > 0 && (args.state.is_some() || args.states != StatesChoice::Sampled) {
        bail!(
            "--first-state {} numbers the states --states sampled gives each repetition: with --states fixed or --state SEED the repetitions share one state",
            args.first_state
        );
    }
    Ok(RunRequest {
        spec: RunSpec {
            signature: args.signature.clone(),
            rounds: args.rounds,
            fs: args.fs.clone(),
            dirs: args.dirs.clone(),
            ns: args.ns.clone(),
            repetitions: args.repetitions,
            device: args.device.clone(),
            mkfs_opts: args.mkfs_opts.clone(),
            mount_opts: args.mount_opts.clone(),
            force: args.force,
            warmup: args.warmup,
            shuffle: args.shuffle,
            seed: args.seed,
            probes: args.probes.clone(),
            no_default_probes: args.no_default_probes,
            settle: args.settle,
            op_log: args.op_log.clone(),
            profile: args.profile.clone(),
            clients: args.clients.clone(),
            time: args.time,
            warmup_time: args.warmup_time,
            loadfile: args.loadfile.clone(),
            states: match (args.state, args.states) {
                (Some(s), _) => States::One(s),
                (None, StatesChoice::Sampled) => States::Sampled,
                (None, StatesChoice::Fixed) => States::Fixed,
            },
            first_state: args.first_state,
        },
        kernels: args.kernels.clone(),
        kconfig: args.kconfig.clone(),
        vm: GuestOptions {
            cache: args.cache.cache_dir.clone(),
            accel: match args.accel {
                AccelChoice::Auto => None,
                AccelChoice::Kvm => Some(Accel::Kvm),
                AccelChoice::Tcg => Some(Accel::Tcg),
            },
            clock: args.clock.map(Into::into),
            mem_mib: args.guest_mem,
            cpus: args.guest_cpus,
            timeout_s: args.guest_timeout,
            no_cost_model: args.no_cost_model,
            cost_model_off: !cost_model_by_env()?,
            jobs: args.jobs,
        },
        interleave: args.interleave,
        store: args.store.db.clone(),
        no_store: args.no_store,
        json: args.json.clone(),
        label: args.label.clone(),
        label_suffix: None,
        slice: args.slice.clone(),
        split_reps: args.split_reps,
        verbose: args.verbose,
    })
}

/// The guest options given on a command line that boots no guest: an option is never
/// silently ignored.
pub(crate) fn refuse_guest_options(req: &RunRequest) -> Result<()> {
    if let Some(flag) = req.vm.first_given() {
        bail!("{flag} is for guests: give --kernel (a run here uses this machine's kernel)");
    }
    Ok(())
}

/// `SIGBENCH_COST_MODEL=off` leaves the model out of every run, as `--no-cost-model` does
/// one (the test suite sets it for the guests of tests not about the model: they run up to
/// 5× faster); unset or `on`, the model counts.
fn cost_model_by_env() -> Result<bool> {
    match std::env::var("SIGBENCH_COST_MODEL").as_deref() {
        Err(_) | Ok("on") => Ok(true),
        Ok("off") => Ok(false),
        Ok(other) => bail!("SIGBENCH_COST_MODEL={other}: give on or off (or unset it)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use measure::plan::Plan;
    use measure::signature::Signature;
    use measure::vm::{self, boots};

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

    fn plan_of(args: &Args) -> Result<Plan> {
        request(args)?.plan()
    }

    fn vm_options(args: &Args) -> Result<measure::vm::VmOptions> {
        request(args)?.vm()
    }

    /// Issue 39, 21: guest options are checked before QEMU sees them, and refused on a
    /// run that boots no guest.
    #[test]
    fn guest_options_are_checked_and_never_ignored() {
        for (argv, want) in [
            (
                &["--guest-mem", "0"][..],
                "--guest-mem 0: give MiB from 512",
            ),
            (
                &["--guest-mem", "4294967295"],
                "--guest-mem 4294967295: give MiB",
            ),
            (&["--guest-cpus", "0"], "--guest-cpus 0: give 1 to 64"),
            (
                &["--guest-cpus", "4294967295"],
                "--guest-cpus 4294967295: give 1 to 64",
            ),
            (
                &["--guest-timeout", "1"],
                "--guest-timeout 1: give seconds from 10",
            ),
            (
                &["--guest-timeout", "4294967295"],
                "--guest-timeout 4294967295",
            ),
        ] {
            let e = vm_options(&args(argv)).err().map(|e| e.to_string());
            assert!(
                e.as_deref().is_some_and(|e| e.starts_with(want)),
                "{argv:?}: {e:?}"
            );
        }
        assert!(vm_options(&args(&["--guest-mem", "1024", "--guest-cpus", "1"])).is_ok());
        for (argv, flag) in [
            (&["--jobs", "2"][..], "--jobs"),
            (&["--accel", "tcg"], "--accel"),
            (&["--guest-mem", "1024"], "--guest-mem"),
            (&["--guest-timeout", "60"], "--guest-timeout"),
        ] {
            let e = refuse_guest_options(&request(&args(argv)).unwrap())
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&format!("{flag} is for guests")), "{e}");
        }
        assert!(refuse_guest_options(&request(&args(&["-n", "5"])).unwrap()).is_ok());
    }

    /// `--profile` without a rate is `auto` (resolved by the clock); a rate is one in the
    /// window; `apart` is a second window; anything else is one line from the plan.
    #[test]
    fn profile_rates_parse() {
        use measure::probe::profile::Rate;
        let rate = |argv: &[&str]| plan_of(&args(argv)).map(|p| p.profile);
        assert_eq!(rate(&["--profile"]).unwrap(), Some(Rate::Auto));
        assert_eq!(rate(&["--profile=250"]).unwrap(), Some(Rate::Window(250)));
        assert_eq!(rate(&["--profile=apart"]).unwrap(), Some(Rate::Apart));
        assert_eq!(rate(&[]).unwrap(), None);
        for bad in ["0", "20001", "fast"] {
            let e = rate(&[&format!("--profile={bad}")])
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with(&format!("--profile={bad}: "))
                    && e.contains("apart")
                    && !e.contains('\n'),
                "{e}"
            );
        }
        assert_eq!(Rate::Auto.resolve(true), Rate::Apart);
        assert_eq!(Rate::Auto.resolve(false), Rate::Window(4000));
        assert_eq!(Rate::Window(250).resolve(true), Rate::Window(250));
    }

    /// One request reaches a Slurm task and a guest: the task gets it whole (the job
    /// script's JSON: the same request, the same plan), a guest its spec resolved (its JSON
    /// makes the same plan: `RunSpec::resolved` is the inverse of `plan`).
    #[test]
    fn one_request_reaches_a_slurm_task_and_a_guest_as_the_same_plan() {
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
                "--profile=1000",
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
            &[
                "test3",
                "--clients",
                "1,4",
                "--time",
                "2.5",
                "--warmup-time",
                "0",
            ],
            &["churn", "--fs", "tmpfs", "--clients", "3", "-n", "100"],
        ] {
            let req = request(&args(argv)).unwrap();
            let plan = req.plan().unwrap();
            // To a Slurm task: the here-document's one line is the request.
            let script = super::super::slurm::task_command(&req, None).unwrap();
            let line = script.lines().nth(1).unwrap();
            let task: RunRequest = serde_json::from_str(line).unwrap();
            assert_eq!(
                serde_json::to_value(&task).unwrap(),
                serde_json::to_value(&req).unwrap()
            );
            assert_eq!(
                format!("{:?}", task.plan().unwrap()),
                format!("{plan:?}"),
                "{argv:?} → {line}"
            );
            // To a guest: the spec resolved.
            let g = boots::guest_plan(&plan, false).unwrap();
            assert_eq!(g.signature, None, "built-ins go by name");
            let json = serde_json::to_string(&g.work).unwrap();
            let spec = match serde_json::from_str(&json).unwrap() {
                boots::GuestWork::Run { spec, verbose } => {
                    assert!(!verbose);
                    spec
                }
                w => panic!("{w:?}"),
            };
            let back = spec.plan().unwrap_or_else(|e| panic!("{json}: {e:#}"));
            assert_eq!(
                format!("{plan:?}"),
                format!("{back:?}"),
                "{argv:?} → {json}"
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
        let g = boots::guest_plan(&file, true).unwrap();
        let boots::GuestWork::Run { spec, verbose } = g.work else {
            panic!("{:?}", g.work)
        };
        assert_eq!(spec.signature, vm::initramfs::SIGNATURE);
        assert_eq!(g.signature.as_deref(), Some(file.signature.source.as_str()));
        assert!(verbose);
        let plan = plan_of(&args(&["--device", "/dev/sdz9"])).unwrap();
        let e = boots::guest_plan(&plan, false).unwrap_err().to_string();
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
        let e = refuse(&args(&["--kconfig", "c"]), "bisect", &[Kconfig]).unwrap_err();
        assert_eq!(e.to_string(), "bisect does not take --kconfig");
    }

    /// `--first-state N`: repetitions added by hand sample new states (N on), never copies
    /// of the states a run has; refused where the repetitions share one state.
    #[test]
    fn first_state_samples_the_states_after_a_runs_own() {
        use measure::plan::states::{States, seed_of};
        let seeds = |argv: &[&str]| -> Vec<States> {
            let plan = plan_of(&args(argv)).unwrap();
            boots::per_state(&plan, true)
                .into_iter()
                .map(|p| p.states)
                .collect()
        };
        let (first, more) = (
            seeds(&["-r", "3", "--states", "sampled"]),
            seeds(&["-r", "2", "--states", "sampled", "--first-state", "3"]),
        );
        let want: Vec<States> = (0..5)
            .map(|r| States::One(seed_of(DEFAULT_SEED, r)))
            .collect();
        assert_eq!([first, more].concat(), want);
        for argv in [
            &["--states", "fixed", "--first-state", "3"][..],
            &["--state", "0x1f", "--first-state", "3"],
        ] {
            let e = request(&args(argv)).unwrap_err().to_string();
            assert!(e.starts_with("--first-state 3 numbers the states"), "{e}");
        }
        let e = plan_of(&args(&[
            "--states",
            "sampled",
            "-r",
            "2",
            "--first-state",
            "4294967295",
        ]))
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("--first-state 4294967295: "), "{e}");
    }

    #[test]
    fn several_filesystems_are_a_list_of_choices() {
        assert_eq!(args(&["--fs", "btrfs,ext4"]).fs, [Fs::Btrfs, Fs::Ext4]);
        assert!(Run::try_parse_from(["run", "--fs", "zfs"]).is_err());
        let req = request(&args(&["--fs", "ext4,ext4"])).unwrap();
        let e = req.filesystems().unwrap_err();
        assert!(e.to_string().contains("ext4 is given twice"), "{e}");
        let e = plan_of(&args(&["--fs", "btrfs,ext4"])).unwrap_err();
        assert!(e.to_string().contains("measures one filesystem"), "{e}");
    }
}
