//! Kernel builds: for `bisect --tree`, the revision checked out in a kernel git tree is
//! configured (a base config, then the fragment below with what sigbench's guest needs,
//! then `make olddefconfig`) and built incrementally in the tree, its build log kept; for
//! `run --kernel DIR+fix.patch`, a tree's variants (`Variant`: its HEAD, with patches on
//! top) are built in a clone of it in the cache that shares its objects — one per tree,
//! started from the tree's own build when it has one (`seed`), so each variant is
//! an incremental build of the last — and kept by content (the commit, the config, the
//! patches), so a variant built once is never built again.
//!
//! The base config is read once, before the first build: `--config FILE`, else the tree's
//! own `.config`, else `make tinyconfig` (the smallest kernel that boots: with the
//! fragment, about three minutes for a first build on two cores, seconds for the
//! incremental steps of a bisect).

use crate::child;
use crate::testbed::Fs;
use anyhow::{Context, Result, bail};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What every guest needs: the serial ports (the guest's messages on the first, the results
/// on the second), the initramfs and its static ELF init, the virtual filesystems it
/// mounts, the syscalls Rust's standard library and the executor use, the
/// probes (perf events, tracepoints, /proc/slabinfo, /proc/vmstat; kallsyms names a
/// profile's functions), and clocks to time
/// with: ACPI finds the HPET, so a TSC that cannot be calibrated under emulation (a
/// loaded host) falls back to the HPET, not to 4 ms jiffies.
const GUEST: &[&str] = &[
    "64BIT",
    "ACPI",
    "HPET_TIMER",
    "HIGH_RES_TIMERS",
    "PRINTK",
    "TTY",
    "SERIAL_8250",
    "SERIAL_8250_CONSOLE",
    "BLK_DEV_INITRD",
    "BINFMT_ELF",
    "PROC_FS",
    "SYSFS",
    "DEVTMPFS",
    "SHMEM",
    "TMPFS",
    "FUTEX",
    "EPOLL",
    "FILE_LOCKING",
    "MULTIUSER",
    "POSIX_TIMERS",
    "MEMBARRIER",
    "PCI",
    "PERF_EVENTS",
    "KALLSYMS",
    "FTRACE",
    "ENABLE_DEFAULT_TRACERS",
    "SLUB",
    "SLUB_DEBUG",
    "VM_EVENT_COUNTERS",
    // Several CPUs (`--guest-cpus`, a CPU a client by default): tinyconfig is
    // uniprocessor, and a kernel without SMP boots every CPU QEMU gives it as one — no
    // contention between CPUs, which is where reference 001's dbench regression lives.
    "SMP",
];

/// The filesystem under test, built in. A block filesystem also needs the block layer, the
/// RAM-backed devices the guest's testbed formats, and Unix sockets: the guest starts mkfs,
/// and Rust's standard library starts a process through socketpair(AF_UNIX) when
/// posix_spawn cannot serve — without them (tinyconfig has no CONFIG_NET) every mkfs
/// failed with ENOSYS.
fn fs_options(fs: Fs) -> Vec<&'static str> {
    const BLOCK: &[&str] = &[
        "BLOCK",
        "BLK_DEV",
        "BLK_DEV_LOOP",
        "BLK_DEV_RAM",
        "NET",
        "UNIX",
    ];
    let own = match fs {
        Fs::Tmpfs => return Vec::new(),
        Fs::Btrfs => "BTRFS_FS",
        Fs::Ext4 => "EXT4_FS",
        Fs::Xfs => "XFS_FS",
    };
    BLOCK.iter().copied().chain([own]).collect()
}

/// The config fragment sigbench adds to the base config, for guests testing `fs`.
pub fn fragment(fs: Fs) -> String {
    let mut s = format!(
        "# added by sigbench: what its guest needs to test {}\n",
        fs.name()
    );
    for o in GUEST.iter().copied().chain(fs_options(fs)) {
        s.push_str(&format!("CONFIG_{o}=y\n"));
    }
    // Room for every CPU a guest may be given.
    s.push_str(&format!(
        "CONFIG_NR_CPUS={}\n",
        crate::vm::qemu::MAX_GUEST_CPUS
    ));
    s
}

/// A kernel git tree to build in.
pub struct Tree {
    pub dir: PathBuf,
    /// The base config (a copy taken before the first build).
    base: String,
    fragment: String,
    jobs: usize,
}

/// A build that did not produce a kernel: where its log is, and its last lines.
#[derive(Debug)]
pub struct BuildFailed {
    pub log: PathBuf,
    pub tail: String,
}

impl std::fmt::Display for BuildFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "does not build ({}; log: {})",
            self.tail,
            self.log.display()
        )
    }
}

impl std::error::Error for BuildFailed {}

impl Tree {
    /// The tree at `dir` with its base config (see the module's header) and the fragment
    /// for `fs`.
    pub fn new(dir: &Path, config: Option<&Path>, fs: Fs, log_dir: &Path) -> Result<Tree> {
        if !dir.join("Makefile").is_file() || !dir.join("Kconfig").is_file() {
            bail!(
                "--tree {}: not a kernel source tree (no Makefile and Kconfig)",
                dir.display()
            );
        }
        let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
        let base = match config {
            Some(f) => std::fs::read_to_string(f)
                .with_context(|| format!("--config {}: cannot read it", f.display()))?,
            None if dir.join(".config").is_file() => std::fs::read_to_string(dir.join(".config"))?,
            None => {
                let log = log_dir.join("tinyconfig.log");
                make(dir, &["tinyconfig"], jobs, &log)?;
                std::fs::read_to_string(dir.join(".config"))?
            }
        };
        Ok(Tree {
            dir: dir.to_path_buf(),
            base,
            fragment: fragment(fs),
            jobs,
        })
    }

    /// Configure and build what is checked out; the log goes to `log`. Returns the
    /// fragment's options the kernel's Kconfig did not take (their dependencies missing, or
    /// not in this version), for a warning. A failed build is a [`BuildFailed`] error.
    pub fn build(&self, log: &Path) -> Result<Vec<String>> {
        let _ = std::fs::remove_file(log);
        std::fs::write(
            self.dir.join(".config"),
            format!("{}\n{}", self.base, self.fragment),
        )
        .with_context(|| format!("cannot write {}/.config", self.dir.display()))?;
        make(&self.dir, &["olddefconfig"], self.jobs, log)?;
        let config = std::fs::read_to_string(self.dir.join(".config"))?;
        let missing = self
            .fragment
            .lines()
            .filter(|l| l.starts_with("CONFIG_"))
            .filter(|l| !config.lines().any(|c| c == *l))
            .map(|l| l.trim_end_matches("=y").to_string())
            .collect();
        let modules = config.lines().any(|l| l == "CONFIG_MODULES=y");
        let mut targets = vec!["bzImage"];
        if modules {
            targets.push("modules");
        }
        make(&self.dir, &targets, self.jobs, log)?;
        Ok(missing)
    }
}

/// `make -C dir -jN targets`, its output appended to `log`.
fn make(dir: &Path, targets: &[&str], jobs: usize, log: &Path) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("cannot write the build log {}", log.display()))?;
    writeln!(f, "$ make -j{jobs} {}", targets.join(" "))?;
    let status = child::logged(
        Command::new("make")
            .arg("-C")
            .arg(dir)
            .arg(format!("-j{jobs}"))
            .args(targets),
        "make",
        &f,
    )?;
    if !status.success() {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        // The compiler's first error says more than make's last line.
        let tail = text
            .lines()
            .find(|l| l.contains("error:") || l.contains("Error "))
            .or_else(|| text.lines().rev().find(|l| !l.trim().is_empty()))
            .unwrap_or("no output")
            .trim()
            .to_string();
        return Err(BuildFailed {
            log: log.to_path_buf(),
            tail: format!("make {}: {tail}", targets.join(" ")),
        }
        .into());
    }
    Ok(())
}

/// `--kernel DIR[+PATCH…]`: a kernel source tree's HEAD with patches applied on top, built
/// by sigbench.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variant {
    /// The argument as given.
    pub arg: String,
    pub tree: PathBuf,
    pub patches: Vec<PathBuf>,
}

/// A built variant: its image, its installed modules (an `INSTALL_MOD_PATH` root) when the
/// config has modules, and the label its results take.
#[derive(Clone, Debug)]
pub struct Built {
    pub image: PathBuf,
    pub modules: Option<PathBuf>,
    /// `+fix` for `DIR+fix.patch` (each patch's file stem), empty for the tree itself;
    /// `+fix@1a2b3c` when another variant of the list has the same names but other
    /// patches (`a/fix.patch`, `b/fix.patch`): a label names one kernel.
    pub suffix: String,
}

/// Whether `dir` is a kernel source tree.
fn is_source_tree(dir: &Path) -> bool {
    dir.join("Makefile").is_file() && dir.join("Kconfig").is_file()
}

/// The ways to read `text` as paths joined by `+` that exist (`exists` says which do),
/// longest first piece first: a `+` is part of a path when the path so read exists.
fn split_existing(text: &str, exists: &dyn Fn(&str) -> bool) -> Option<Vec<String>> {
    if text.is_empty() {
        return Some(Vec::new());
    }
    let ends = text
        .char_indices()
        .filter(|&(_, c)| c == '+')
        .map(|(k, _)| k)
        .chain([text.len()])
        .collect::<Vec<_>>();
    for &end in ends.iter().rev() {
        let piece = &text[..end];
        if piece.is_empty() || !exists(piece) {
            continue;
        }
        let rest = text.get(end + 1..).unwrap_or("");
        if let Some(mut more) = split_existing(rest, exists) {
            more.insert(0, piece.to_string());
            return Some(more);
        }
    }
    None
}

impl Variant {
    /// `arg` as a variant: `DIR[+P…]` with DIR a kernel source tree and each P a patch file
    /// (a `+` inside a path is read as part of it when the path so read exists). None for
    /// anything else (a package, an image, `host`). A tree with something built in it is
    /// a variant too: [`Variant::boots_as_built`] says whether it is booted as it is.
    pub fn parse(arg: &str) -> Result<Option<Variant>> {
        let tree_end = arg
            .char_indices()
            .filter(|&(_, c)| c == '+')
            .map(|(k, _)| k)
            .chain([arg.len()])
            .filter(|&k| {
                let d = Path::new(&arg[..k]);
                d.is_dir() && is_source_tree(d)
            })
            .collect::<Vec<_>>();
        let Some(&first) = tree_end.first() else {
            if let Some((dir, _)) = arg.split_once('+')
                && Path::new(dir).is_dir()
                && !Path::new(arg).exists()
            {
                bail!(
                    "--kernel {arg}: {dir} is not a kernel source tree (no Makefile and Kconfig)"
                );
            }
            return Ok(None);
        };
        // The tree: the longest prefix that is one and leaves patches that exist.
        for &end in tree_end.iter().rev() {
            let rest = arg.get(end + 1..).unwrap_or("");
            if let Some(patches) = split_existing(rest, &|p| Path::new(p).is_file()) {
                return Variant::checked(arg, &arg[..end], patches).map(Some);
            }
        }
        let missing = arg[first + 1..]
            .split('+')
            .find(|p| !Path::new(p).is_file())
            .unwrap_or_default();
        bail!("--kernel {arg}: no patch file {missing}")
    }

    fn checked(arg: &str, tree: &str, patches: Vec<String>) -> Result<Variant> {
        for p in &patches {
            let name = Path::new(p)
                .file_name()
                .unwrap_or_default()
                .to_string_lossy();
            if name.chars().any(model::shell::is_hidden) {
                bail!(
                    "--kernel {}: the patch file name `{}` holds a control or bidirectional character (it would become the label): rename it",
                    model::shell::printable(arg),
                    model::shell::escape_controls(&name, &[])
                );
            }
        }
        Ok(Variant {
            arg: arg.to_string(),
            tree: PathBuf::from(tree),
            patches: patches.into_iter().map(PathBuf::from).collect(),
        })
    }

    /// Whether the variant is a tree with a kernel built in it and no patches: booted as
    /// it is, unless the list also holds a patched variant of the tree (then every variant
    /// of the tree is built by sigbench from one config: a comparison differs by the patch
    /// alone).
    pub fn boots_as_built(&self) -> bool {
        self.patches.is_empty() && self.tree.join("arch/x86/boot/bzImage").is_file()
    }

    /// Whether `other` is a variant of the same tree.
    pub fn same_tree(&self, other: &Variant) -> bool {
        match (self.tree.canonicalize(), other.tree.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => self.tree == other.tree,
        }
    }

    /// `+fix+more` for `DIR+fix.patch+more.patch`.
    pub fn suffix(&self) -> String {
        self.patches
            .iter()
            .map(|p| {
                let stem = p.file_stem().unwrap_or_default().to_string_lossy();
                format!("+{}", stem.trim_end_matches(".diff"))
            })
            .collect()
    }
}

/// `git -C dir ARGS`, its stdout; an error with git's first line of complaint.
fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        // `git status` would refresh the user's index otherwise: their tree is only read.
        .env("GIT_OPTIONAL_LOCKS", "0")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .context("cannot run git (install git)")?;
    if !out.status.success() {
        bail!(
            "git {}: {}",
            args.join(" "),
            child::first_line(&String::from_utf8_lossy(&out.stderr))
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The config every variant of one tree is built from, and how to say it.
struct BaseConfig {
    /// The text (none: the commit's tinyconfig, made in the build tree).
    text: Option<String>,
    said: String,
}

impl BaseConfig {
    /// `--kconfig`, else the tree's own `.config`, else tinyconfig; sigbench's fragment
    /// goes on top of each.
    fn of(tree: &Path, kconfig: Option<&Path>) -> Result<BaseConfig> {
        if let Some(f) = kconfig {
            let text = std::fs::read_to_string(f)
                .with_context(|| format!("--kconfig {}: cannot read it", f.display()))?;
            return Ok(BaseConfig {
                text: Some(text),
                said: format!("--kconfig {}", f.display()),
            });
        }
        let own = tree.join(".config");
        if own.is_file() {
            let text = std::fs::read_to_string(&own)
                .with_context(|| format!("cannot read {}", own.display()))?;
            return Ok(BaseConfig {
                text: Some(text),
                said: format!("the tree's own {}", own.display()),
            });
        }
        Ok(BaseConfig {
            text: None,
            said: "tinyconfig".into(),
        })
    }
}

/// Build each variant (one tree's variants in order, in one build tree), or find it built;
/// `say` hears the progress. Every variant of one tree is built from one config (see
/// [`BaseConfig::of`]) with the fragment for `fs`, said once per tree. A patch that does
/// not apply or a build that fails is one line naming the variant and the first error (the
/// build log's path with it).
pub fn build_variants(
    variants: &[Variant],
    fs: Fs,
    kconfig: Option<&Path>,
    cache: &Path,
    say: &mut dyn FnMut(String),
) -> Result<Vec<Built>> {
    crate::host::private_dir(cache, "the cache")?;
    let mut configs: Vec<(PathBuf, BaseConfig)> = Vec::new();
    let mut built = Vec::new();
    let mut keys = Vec::new();
    for v in variants {
        let tree = v
            .tree
            .canonicalize()
            .with_context(|| format!("--kernel {}: cannot resolve {}", v.arg, v.tree.display()))?;
        if !configs.iter().any(|(t, _)| *t == tree) {
            let c = BaseConfig::of(&tree, kconfig)?;
            say(format!(
                "{}: every variant built from {} with sigbench's guest fragment",
                tree.display(),
                c.said
            ));
            configs.push((tree.clone(), c));
        }
        let base = &configs.iter().find(|(t, _)| *t == tree).expect("added").1;
        let (b, key) = build_variant(v, &tree, fs, base, cache, say)?;
        built.push(b);
        keys.push(key);
    }
    // A label names one kernel: variants whose patches share names get their key's digits.
    let clash: Vec<bool> = (0..built.len())
        .map(|k| (0..built.len()).any(|j| built[j].suffix == built[k].suffix && keys[j] != keys[k]))
        .collect();
    for (b, (clash, key)) in built.iter_mut().zip(clash.iter().zip(&keys)) {
        if *clash {
            b.suffix.push_str(&format!("@{}", &key[..6]));
        }
    }
    Ok(built)
}

fn build_variant(
    v: &Variant,
    tree: &Path,
    fs: Fs,
    config: &BaseConfig,
    cache: &Path,
    say: &mut dyn FnMut(String),
) -> Result<(Built, String)> {
    use sha2::{Digest, Sha256};
    let arg = &v.arg;
    let rev = git(tree, &["rev-parse", "--verify", "HEAD"]).map_err(|e| {
        anyhow::anyhow!(
            "--kernel {arg}: {} is not a git tree with a commit ({e}); sigbench builds a tree's variants in a clone of it: `git init && git add -A && git commit -m base` first",
            tree.display()
        )
    })?;
    if !git(tree, &["status", "--porcelain", "--untracked-files=no"])?.is_empty() {
        say(format!(
            "{arg}: {} has uncommitted changes: the variant builds its HEAD ({}) and the patches",
            tree.display(),
            &rev[..12.min(rev.len())]
        ));
    }
    let (key, patches) = variant_key(v, &rev, config.text.as_deref(), fs)?;
    let tree_id = model::text::hex(&Sha256::digest(tree.display().to_string().as_bytes())[..6]);
    let home = cache.join("builds").join(&tree_id);
    std::fs::create_dir_all(&home).with_context(|| format!("cannot create {}", home.display()))?;
    // One build at a time in a tree's build directory: another sigbench building a
    // variant of the same tree would reset the sources under this one's build.
    let _lock = crate::testbed::workspace::lock_file(
        &home.join("lock"),
        &format!("build of {}", tree.display()),
    )?;
    let done = home.join("variants").join(&key);
    let suffix = v.suffix();
    if done.join("ready").is_file() {
        say(format!("{arg}: built before ({key}), reused"));
        return Ok((found(&done, suffix), key));
    }
    let work = home.join("repo");
    checkout(tree, &work, &home, &rev, arg, say)?;
    let applied = apply_patches(&work, &patches, arg, &rev)?;
    let logs = home.join("logs");
    std::fs::create_dir_all(&logs)?;
    let log = logs.join(format!("{key}.log"));
    // The base config: the text chosen, else the commit's tinyconfig, made once and kept —
    // the same .config every time, so `make` rebuilds only what the patches touched.
    let base = match &config.text {
        Some(text) => {
            let f = home.join(format!("config-{key}"));
            std::fs::write(&f, text)?;
            f
        }
        None => {
            let tiny = home.join(format!("tinyconfig-{rev}"));
            if !tiny.is_file() {
                let _ = std::fs::remove_file(work.join(".config"));
                Tree::new(&work, None, fs, &logs)?;
                std::fs::copy(work.join(".config"), &tiny)?;
            }
            tiny
        }
    };
    let started = std::time::Instant::now();
    say(format!(
        "{arg}: building (make -j{}; log {})",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        log.display()
    ));
    let t = Tree::new(&work, Some(&base), fs, &logs)?;
    let missing = t
        .build(&log)
        .map_err(|e| anyhow::anyhow!("--kernel {arg}: {e}"))?;
    if config.text.is_some() {
        let _ = std::fs::remove_file(&base);
    }
    if !missing.is_empty() {
        say(format!(
            "{arg}: the config did not take {}",
            missing.join(", ")
        ));
    }
    // What was built is what was asked for: the commit, the patches applied (the index),
    // and the files they changed as they made them.
    let mut diff = vec!["--literal-pathspecs", "diff", "--name-only", "--"];
    diff.extend(applied.files.iter().map(String::as_str));
    let now = (
        git(&work, &["rev-parse", "HEAD"])?,
        git(&work, &["write-tree"])?,
        if applied.files.is_empty() {
            String::new()
        } else {
            git(&work, &diff)?
        },
    );
    if now != (rev.clone(), applied.tree.clone(), String::new()) {
        bail!(
            "--kernel {arg}: the sources in {} changed during the build: not kept; run it again",
            work.display()
        );
    }
    keep_built(&t, &work, &done, &log, &rev, arg)?;
    say(format!(
        "{arg}: built in {:.0} s",
        started.elapsed().as_secs_f64()
    ));
    Ok((found(&done, suffix), key))
}

/// What names a variant's build (its commit, base config, fragment and patches' texts),
/// and its patches' resolved paths.
fn variant_key(
    v: &Variant,
    rev: &str,
    config_text: Option<&str>,
    fs: Fs,
) -> Result<(String, Vec<PathBuf>)> {
    use sha2::{Digest, Sha256};
    let mut key = Sha256::new();
    key.update(rev.as_bytes());
    key.update(config_text.unwrap_or("tinyconfig").as_bytes());
    key.update(fragment(fs).as_bytes());
    let mut patches = Vec::new();
    for p in &v.patches {
        let text = std::fs::read(p)
            .with_context(|| format!("--kernel {}: cannot read {}", v.arg, p.display()))?;
        key.update((text.len() as u64).to_le_bytes());
        key.update(&text);
        patches.push(p.canonicalize()?);
    }
    Ok((model::text::hex(&key.finalize()[..8]), patches))
}

/// The build tree `work`: a clone of `tree` of sigbench's own that borrows its objects
/// (`git clone --shared`), checked out at `rev` with every tracked file as committed —
/// what the last variant's patches changed, created or removed is put back by git itself
/// (they were applied to the index), which never follows a link — and the untracked build
/// products left, so the build is incremental. The user's tree is only read: no worktree
/// of it, no prune, no ref written.
fn checkout(
    tree: &Path,
    work: &Path,
    home: &Path,
    rev: &str,
    arg: &str,
    say: &mut dyn FnMut(String),
) -> Result<()> {
    // Earlier versions kept a worktree of the user's tree at `src`: that one entry is
    // removed (by its path, nothing else of the tree's worktrees touched).
    let old = home.join("src");
    if old.join(".git").is_file() {
        let _ = git(
            tree,
            &["worktree", "remove", "--force", &old.display().to_string()],
        );
        let _ = std::fs::remove_dir_all(&old);
    }
    let ours = work.join(".git").is_dir()
        && git(
            work,
            &["rev-parse", "--verify", &format!("{rev}^{{commit}}")],
        )
        .is_ok();
    if !ours {
        let _ = std::fs::remove_dir_all(work);
        say(format!(
            "{arg}: a clone of {} at {} (it shares the tree's objects)",
            tree.display(),
            work.display()
        ));
        // Made beside and renamed into place when whole: a copy cut short (Ctrl-C) leaves
        // files newer than their sources that `make` would take as built.
        let fresh = home.join("repo.new");
        let clone = || {
            let _ = std::fs::remove_dir_all(&fresh);
            git(
                home,
                &[
                    "clone",
                    "-q",
                    "--shared",
                    "--no-checkout",
                    &tree.display().to_string(),
                    &fresh.display().to_string(),
                ],
            )
        };
        clone()?;
        match seed(tree, &fresh, work) {
            Ok(Some(s)) => {
                // Its index as the copied files stand (their stat data), so the reset
                // below rewrites only the files that differ from the commit.
                git(&fresh, &["read-tree", rev])?;
                let _ = git(&fresh, &["update-index", "-q", "--refresh"]);
                say(format!(
                    "{arg}: started from the tree's own build ({} files, {} MiB copied in {:.0} s): make rebuilds what differs",
                    s.files,
                    s.bytes >> 20,
                    s.took.as_secs_f64()
                ));
            }
            Ok(None) => {}
            Err(e) => {
                say(format!(
                    "{arg}: not started from the tree's own build ({e:#}): a whole build"
                ));
                clone()?;
            }
        }
        std::fs::rename(&fresh, work)
            .with_context(|| format!("cannot rename {} to {}", fresh.display(), work.display()))?;
    }
    git(work, &["reset", "-q", "--hard", rev])?;
    Ok(())
}

/// What [`seed`] copied.
struct Seeded {
    files: u64,
    bytes: u64,
    took: std::time::Duration,
}

/// A new build tree starts from the tree's own build when it has one (`vmlinux`): the
/// tree's work tree is copied into `into` as it stands, each file's modification time
/// kept, so that after the reset to the commit `make` rebuilds what differs rather than the
/// whole kernel (about ten CPU-minutes for a tinyconfig). The build records that name the
/// tree by its absolute path — the tools' (objtool's) command and dependency files — are
/// made to name `work`, where the copy will be built: a recorded command that differs
/// rebuilds objtool, and every object depends on objtool. Only directories and regular
/// files are copied, without set-id bits or write access for others: a link the tree holds
/// untracked could point a build run as root anywhere (git puts back the links the commit
/// has). What is copied is the tree's, as its Makefiles and scripts that every build runs
/// are: it is trusted no more than building it already trusts it. A file written or
/// removed while it was copied (a build or an edit in the tree meanwhile) makes the copy
/// worthless: an error, and the caller builds from scratch.
fn seed(tree: &Path, into: &Path, work: &Path) -> Result<Option<Seeded>> {
    if !tree.join("vmlinux").is_file() {
        return Ok(None);
    }
    let started = std::time::Instant::now();
    // As `make -C` will see it (its working directory, links resolved).
    let work = match (work.parent(), work.file_name()) {
        (Some(home), Some(name)) => home.canonicalize()?.join(name),
        _ => work.to_path_buf(),
    };
    let mut copy = Copy {
        // A write stamps a file with the kernel's coarse clock, up to a tick behind: a
        // file written since the copy began is at most that much older than its start.
        // (A margin of a second took the build that had just ended for one in progress.)
        since: std::time::SystemTime::now() - std::time::Duration::from_millis(50),
        from: format!("{}/", tree.display()).into_bytes(),
        to: format!("{}/", work.display()).into_bytes(),
        done: Seeded {
            files: 0,
            bytes: 0,
            took: Default::default(),
        },
    };
    copy.dir(tree, into, true)?;
    copy.done.took = started.elapsed();
    Ok(Some(copy.done))
}

/// A tree being copied: from when a file must be older, the paths its build records
/// name, and what was copied.
struct Copy {
    since: std::time::SystemTime,
    from: Vec<u8>,
    to: Vec<u8>,
    done: Seeded,
}

impl Copy {
    fn dir(&mut self, from: &Path, to: &Path, top: bool) -> Result<()> {
        let entries =
            std::fs::read_dir(from).with_context(|| format!("cannot read {}", from.display()))?;
        for e in entries {
            let name = e?.file_name();
            if top && name == ".git" {
                continue;
            }
            let (src, dst) = (from.join(&name), to.join(&name));
            let meta = self.unchanged(&src)?;
            if meta.is_dir() {
                std::fs::create_dir_all(&dst)
                    .with_context(|| format!("cannot create {}", dst.display()))?;
                self.dir(&src, &dst, false)?;
            } else if meta.is_file() {
                self.file(&src, &dst, &meta)?;
                // Copied whole: written since the walk began, it may not have been.
                self.unchanged(&src)?;
            }
        }
        Ok(())
    }

    /// `p`'s metadata, if it is there and was not written since the copy began.
    fn unchanged(&self, p: &Path) -> Result<std::fs::Metadata> {
        let changed = || anyhow::anyhow!("{} changed while it was copied", p.display());
        let meta = std::fs::symlink_metadata(p).map_err(|_| changed())?;
        if meta.is_file() && meta.modified()? >= self.since {
            return Err(changed());
        }
        Ok(meta)
    }

    fn file(&mut self, src: &Path, dst: &Path, meta: &std::fs::Metadata) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let name = src.file_name().unwrap_or_default().to_string_lossy();
        let record = name.starts_with('.') && (name.ends_with(".cmd") || name.ends_with(".d"));
        if record && meta.len() < 1 << 20 {
            let text = std::fs::read(src)?;
            let moved = replace(&text, &self.from, &self.to);
            std::fs::write(dst, &moved)
                .with_context(|| format!("cannot write {}", dst.display()))?;
            self.done.bytes += moved.len() as u64;
        } else {
            self.done.bytes += std::fs::copy(src, dst)
                .with_context(|| format!("cannot copy {}", src.display()))?;
        }
        self.done.files += 1;
        let f = std::fs::File::options()
            .write(true)
            .open(dst)
            .with_context(|| format!("cannot open {}", dst.display()))?;
        f.set_permissions(std::fs::Permissions::from_mode(
            meta.permissions().mode() & 0o755,
        ))?;
        f.set_modified(meta.modified()?)?;
        Ok(())
    }
}

/// `text` with every `from` replaced by `to`.
fn replace(text: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.windows(from.len()).position(|w| w == from) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(to);
        rest = &rest[at + from.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// The sources as patched: their tree id and the files the patches changed.
struct Applied {
    tree: String,
    files: Vec<String>,
}

/// Apply `patches` in order to the build tree and its index (so the next checkout puts
/// back whatever they did), after refusing any that creates, removes or changes a
/// symbolic link: a link in the build tree may point anywhere.
fn apply_patches(work: &Path, patches: &[PathBuf], arg: &str, rev: &str) -> Result<Applied> {
    for p in patches {
        let shown = p.display().to_string();
        let summary = git(work, &["apply", "--summary", &shown]).unwrap_or_default();
        if let Some(l) = summary.lines().find(|l| l.contains("120000")) {
            bail!(
                "--kernel {arg}: {shown} creates, removes or changes a symbolic link ({}): sigbench does not apply such patches",
                l.trim()
            );
        }
        git(work, &["apply", "--index", "--whitespace=nowarn", &shown]).map_err(|e| {
            anyhow::anyhow!(
                "--kernel {arg}: {shown} does not apply to {} ({e})",
                &rev[..12.min(rev.len())]
            )
        })?;
    }
    Ok(Applied {
        tree: git(work, &["write-tree"])?,
        files: git(work, &["diff", "--cached", "--name-only", "-z", rev])?
            .split('\0')
            .filter(|f| !f.is_empty())
            .map(String::from)
            .collect(),
    })
}

/// Keep what the build tree built in `done`: the image, the config, the modules (installed
/// there when the config has them), and last the `ready` mark naming the commit.
fn keep_built(t: &Tree, work: &Path, done: &Path, log: &Path, rev: &str, arg: &str) -> Result<()> {
    let _ = std::fs::remove_dir_all(done);
    std::fs::create_dir_all(done)?;
    std::fs::copy(work.join("arch/x86/boot/bzImage"), done.join("bzImage"))?;
    std::fs::copy(work.join(".config"), done.join("config"))?;
    let config = std::fs::read_to_string(work.join(".config"))?;
    if config.lines().any(|l| l == "CONFIG_MODULES=y") {
        let root = done.join("root");
        make(
            work,
            &[
                &format!("INSTALL_MOD_PATH={}", root.display()),
                "modules_install",
            ],
            t.jobs,
            log,
        )
        .map_err(|e| anyhow::anyhow!("--kernel {arg}: {e}"))?;
    }
    std::fs::write(done.join("ready"), rev)?;
    Ok(())
}

/// A built variant's files.
fn found(done: &Path, suffix: String) -> Built {
    let root = done.join("root");
    Built {
        image: done.join("bzImage"),
        modules: root.is_dir().then_some(root),
        suffix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_are_source_trees_with_patches() {
        let d = std::env::temp_dir().join(format!("sigbench-variant-{}", std::process::id()));
        std::fs::create_dir_all(d.join("linux")).unwrap();
        std::fs::write(d.join("linux/Makefile"), "").unwrap();
        std::fs::write(d.join("linux/Kconfig"), "").unwrap();
        std::fs::write(d.join("fix.patch"), "").unwrap();
        let tree = d.join("linux").display().to_string();
        let fix = d.join("fix.patch").display().to_string();
        let v = Variant::parse(&format!("{tree}+{fix}")).unwrap().unwrap();
        assert_eq!(v.patches, [d.join("fix.patch")]);
        assert_eq!(v.suffix(), "+fix");
        // The tree itself, not built yet: a variant without patches.
        assert_eq!(Variant::parse(&tree).unwrap().unwrap().suffix(), "");
        // Built: booted as it is (unless a patched variant of it is beside it).
        std::fs::create_dir_all(d.join("linux/arch/x86/boot")).unwrap();
        std::fs::write(d.join("linux/arch/x86/boot/bzImage"), "").unwrap();
        let built = Variant::parse(&tree).unwrap().unwrap();
        assert!(built.boots_as_built() && built.same_tree(&v));
        assert!(!v.boots_as_built());
        let e = Variant::parse(&format!("{tree}+{}/missing.patch", d.display()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no patch file"), "{e}");
        assert!(Variant::parse("host").unwrap().is_none());
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A `+` inside a tree's or a patch's path is read as part of it when the path so
    /// read exists (bench/reference-001.sh's paths may hold one).
    #[test]
    fn a_plus_inside_a_path_is_part_of_it() {
        let d = std::env::temp_dir().join(format!("sigbench-plus-{}", std::process::id()));
        let tree = d.join("linux+rc1");
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::write(tree.join("Makefile"), "").unwrap();
        std::fs::write(tree.join("Kconfig"), "").unwrap();
        std::fs::write(d.join("a+b.patch"), "").unwrap();
        std::fs::write(d.join("c.patch"), "").unwrap();
        let arg = format!(
            "{}+{}+{}",
            tree.display(),
            d.join("a+b.patch").display(),
            d.join("c.patch").display()
        );
        let v = Variant::parse(&arg).unwrap().unwrap();
        assert_eq!(v.tree, tree);
        assert_eq!(v.patches, [d.join("a+b.patch"), d.join("c.patch")]);
        assert_eq!(v.suffix(), "+a+b+c");
        // A patch's file name is a label's: no control character.
        std::fs::write(d.join("x\x1b[2J.patch"), "").unwrap();
        let e = Variant::parse(&format!(
            "{}+{}",
            tree.display(),
            d.join("x\x1b[2J.patch").display()
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("control") && !e.contains('\x1b'), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_fragment_has_the_guest_and_the_filesystem() {
        let t = fragment(Fs::Tmpfs);
        assert!(t.contains("CONFIG_SERIAL_8250=y\n") && t.contains("CONFIG_TMPFS=y\n"));
        assert!(
            !t.contains("VIRTIO"),
            "results come back over a serial port"
        );
        assert!(!t.contains("BTRFS"));
        let b = fragment(Fs::Btrfs);
        assert!(b.contains("CONFIG_BTRFS_FS=y\n") && b.contains("CONFIG_BLK_DEV_LOOP=y\n"));
        // The guest starts mkfs: Unix sockets, which std's spawn needs; tmpfs starts nothing.
        assert!(b.contains("CONFIG_NET=y\n") && b.contains("CONFIG_UNIX=y\n"));
        assert!(!t.contains("CONFIG_UNIX"));
        assert!(
            b.lines()
                .skip(1)
                .all(|l| l.starts_with("CONFIG_") && (l.ends_with("=y") || l.contains("NR_CPUS")))
        );
        // Several CPUs, as many as a guest may be given.
        assert!(b.contains("CONFIG_SMP=y\n") && b.contains("CONFIG_NR_CPUS=64\n"));
    }

    #[test]
    fn a_build_record_names_the_copy_where_it_named_the_tree() {
        let text = b"cmd := gcc -o /src/linux/tools/a.o /src/linux/tools/a.c /src/linuxy/b";
        let moved = replace(text, b"/src/linux/", b"/cache/repo/");
        assert_eq!(
            moved,
            b"cmd := gcc -o /cache/repo/tools/a.o /cache/repo/tools/a.c /src/linuxy/b"
        );
        assert_eq!(replace(b"", b"/a/", b"/b/"), b"");
    }

    #[test]
    fn a_directory_that_is_no_kernel_tree_is_refused() {
        let d = std::env::temp_dir().join(format!("sigbench-kbuild-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let e = Tree::new(&d, None, Fs::Tmpfs, &d)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("not a kernel source tree"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
