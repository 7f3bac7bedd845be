//! Kernel builds: for `bisect --tree`, the revision checked out in a kernel git tree is
//! configured (a base config, then the fragment below with what sigbench's guest needs,
//! then `make olddefconfig`) and built incrementally in the tree, its build log kept; for
//! `run --kernel DIR+fix.patch`, a tree's variants (`Variant`: its HEAD, with patches on
//! top) are built in a git worktree of it in the cache — one per tree, so each variant is
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
    /// `+fix` for `DIR+fix.patch` (each patch's file stem), empty for the tree itself.
    pub suffix: String,
}

/// Whether `dir` is a kernel source tree.
fn is_source_tree(dir: &Path) -> bool {
    dir.join("Makefile").is_file() && dir.join("Kconfig").is_file()
}

impl Variant {
    /// `arg` as a variant: `DIR+P[+P…]` with DIR a kernel source tree and each P a file,
    /// or DIR itself when it is a source tree with nothing built in it (a built one is
    /// booted as it is). None for anything else (a package, an image, `host`).
    pub fn parse(arg: &str) -> Result<Option<Variant>> {
        let mut parts = arg.split('+');
        let dir = PathBuf::from(parts.next().unwrap_or_default());
        let patches: Vec<PathBuf> = parts.map(PathBuf::from).collect();
        if !dir.is_dir() || !is_source_tree(&dir) {
            if !patches.is_empty() && !Path::new(arg).exists() && dir.is_dir() {
                bail!(
                    "--kernel {arg}: {} is not a kernel source tree (no Makefile and Kconfig)",
                    dir.display()
                );
            }
            return Ok(None);
        }
        if patches.is_empty() && dir.join("arch/x86/boot/bzImage").is_file() {
            return Ok(None);
        }
        for p in &patches {
            if !p.is_file() {
                bail!("--kernel {arg}: no patch file {}", p.display());
            }
        }
        Ok(Some(Variant {
            arg: arg.to_string(),
            tree: dir,
            patches,
        }))
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

/// Build each variant (one tree's variants in order, in one worktree), or find it built;
/// `say` hears the progress. The config: `kconfig`, else tinyconfig; then the fragment
/// for `fs`. A patch that does not apply or a build that fails is one line naming the
/// variant and the first error (the build log's path with it).
pub fn build_variants(
    variants: &[Variant],
    fs: Fs,
    kconfig: Option<&Path>,
    cache: &Path,
    say: &mut dyn FnMut(String),
) -> Result<Vec<Built>> {
    let kconfig_text = match kconfig {
        Some(f) => Some(
            std::fs::read_to_string(f)
                .with_context(|| format!("--kconfig {}: cannot read it", f.display()))?,
        ),
        None => None,
    };
    let mut built = Vec::new();
    for v in variants {
        built.push(build_variant(
            v,
            fs,
            kconfig,
            kconfig_text.as_deref(),
            cache,
            say,
        )?);
    }
    Ok(built)
}

fn build_variant(
    v: &Variant,
    fs: Fs,
    kconfig: Option<&Path>,
    kconfig_text: Option<&str>,
    cache: &Path,
    say: &mut dyn FnMut(String),
) -> Result<Built> {
    use sha2::{Digest, Sha256};
    let arg = &v.arg;
    let tree = v
        .tree
        .canonicalize()
        .with_context(|| format!("--kernel {arg}: cannot resolve {}", v.tree.display()))?;
    let rev = git(&tree, &["rev-parse", "--verify", "HEAD"]).map_err(|e| {
        anyhow::anyhow!(
            "--kernel {arg}: {} is not a git tree with a commit ({e}); sigbench builds a tree's variants in a worktree of it: `git init && git add -A && git commit -m base` first",
            tree.display()
        )
    })?;
    if !git(&tree, &["status", "--porcelain", "--untracked-files=no"])?.is_empty() {
        say(format!(
            "{arg}: {} has uncommitted changes: the variant builds its HEAD ({}) and the patches",
            tree.display(),
            &rev[..12.min(rev.len())]
        ));
    }
    let (key, patches) = variant_key(v, &rev, kconfig_text, fs)?;
    let tree_id = crate::text::hex(&Sha256::digest(tree.display().to_string().as_bytes())[..6]);
    let home = cache.join("builds").join(&tree_id);
    let done = home.join("variants").join(&key);
    let suffix = v.suffix();
    if done.join("ready").is_file() {
        say(format!("{arg}: built before ({key}), reused"));
        return Ok(found(&done, suffix));
    }
    let work = home.join("src");
    // The files the last variant's patches created: removed before the next one applies.
    let created = home.join("created-by-patches");
    worktree_at(&tree, &work, &home, &created, &rev, arg, say)?;
    apply_patches(&work, &created, &patches, arg, &rev)?;
    let logs = home.join("logs");
    std::fs::create_dir_all(&logs)?;
    let log = logs.join(format!("{key}.log"));
    // The base config: --kconfig, else the commit's tinyconfig, made once and kept — the
    // same .config every time, so `make` rebuilds only what the patches touched.
    let tiny = home.join(format!("tinyconfig-{rev}"));
    if kconfig.is_none() && !tiny.is_file() {
        let _ = std::fs::remove_file(work.join(".config"));
        Tree::new(&work, None, fs, &logs)?;
        std::fs::copy(work.join(".config"), &tiny)?;
    }
    let base = kconfig.unwrap_or(&tiny);
    let started = std::time::Instant::now();
    say(format!(
        "{arg}: building (make -j{}; log {})",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        log.display()
    ));
    let t = Tree::new(&work, Some(base), fs, &logs)?;
    let missing = t
        .build(&log)
        .map_err(|e| anyhow::anyhow!("--kernel {arg}: {e}"))?;
    if !missing.is_empty() {
        say(format!(
            "{arg}: the config did not take {}",
            missing.join(", ")
        ));
    }
    keep_built(&t, &work, &done, &log, &rev, arg)?;
    say(format!(
        "{arg}: built in {:.0} s",
        started.elapsed().as_secs_f64()
    ));
    Ok(found(&done, suffix))
}

/// What names a variant's build (its commit, base config, fragment and patches' texts),
/// and its patches' resolved paths.
fn variant_key(
    v: &Variant,
    rev: &str,
    kconfig_text: Option<&str>,
    fs: Fs,
) -> Result<(String, Vec<PathBuf>)> {
    use sha2::{Digest, Sha256};
    let mut key = Sha256::new();
    key.update(rev.as_bytes());
    key.update(kconfig_text.unwrap_or("tinyconfig").as_bytes());
    key.update(fragment(fs).as_bytes());
    let mut patches = Vec::new();
    for p in &v.patches {
        let text = std::fs::read(p)
            .with_context(|| format!("--kernel {}: cannot read {}", v.arg, p.display()))?;
        key.update((text.len() as u64).to_le_bytes());
        key.update(&text);
        patches.push(p.canonicalize()?);
    }
    Ok((crate::text::hex(&key.finalize()[..8]), patches))
}

/// The worktree of `tree` at `work`, made (again, when its tree is gone) and checked out
/// at `rev`, without the files listed in `created`.
fn worktree_at(
    tree: &Path,
    work: &Path,
    home: &Path,
    created: &Path,
    rev: &str,
    arg: &str,
    say: &mut dyn FnMut(String),
) -> Result<()> {
    std::fs::create_dir_all(home)?;
    // A worktree whose tree is gone (made again elsewhere) is made again.
    if work.join(".git").exists() && git(work, &["rev-parse", "--verify", rev]).is_err() {
        let _ = std::fs::remove_dir_all(work);
    }
    if !work.join(".git").exists() {
        say(format!(
            "{arg}: a worktree of {} at {}",
            tree.display(),
            work.display()
        ));
        let _ = git(tree, &["worktree", "prune"]);
        git(
            tree,
            &[
                "worktree",
                "add",
                "--detach",
                "--force",
                &work.display().to_string(),
                rev,
            ],
        )?;
    }
    // Back to the tree's HEAD: the tracked files the last variant's patches changed are
    // restored and the files they created removed — nothing else, so the build products
    // stay (a tree need not ignore them: `git clean` would remove them all) and the build
    // is incremental.
    git(work, &["checkout", "-q", "-f", "--detach", rev])?;
    for f in std::fs::read_to_string(created).unwrap_or_default().lines() {
        // Only paths inside the worktree (git apply writes no other).
        let inside = Path::new(f)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if inside {
            let _ = std::fs::remove_file(work.join(f));
        }
    }
    let _ = std::fs::remove_file(created);
    Ok(())
}

/// Apply `patches` in order in the worktree, keeping the list of files they create in
/// `created` (the next variant's checkout removes them).
fn apply_patches(
    work: &Path,
    created: &Path,
    patches: &[PathBuf],
    arg: &str,
    rev: &str,
) -> Result<()> {
    let mut new_files = String::new();
    for p in patches {
        let shown = p.display().to_string();
        let summary = git(work, &["apply", "--summary", &shown]).unwrap_or_default();
        git(work, &["apply", "--whitespace=nowarn", &shown]).map_err(|e| {
            anyhow::anyhow!(
                "--kernel {arg}: {shown} does not apply to {} ({e})",
                &rev[..12.min(rev.len())]
            )
        })?;
        // ` create mode 100644 PATH`
        for l in summary.lines() {
            if let Some((_, path)) = l
                .trim()
                .strip_prefix("create mode ")
                .and_then(|r| r.split_once(' '))
            {
                new_files.push_str(path);
                new_files.push('\n');
            }
        }
        std::fs::write(created, &new_files)?;
    }
    Ok(())
}

/// Keep what the worktree built in `done`: the image, the config, the modules (installed
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
        // Built: booted as it is.
        std::fs::create_dir_all(d.join("linux/arch/x86/boot")).unwrap();
        std::fs::write(d.join("linux/arch/x86/boot/bzImage"), "").unwrap();
        assert!(Variant::parse(&tree).unwrap().is_none());
        let e = Variant::parse(&format!("{tree}+{}/missing.patch", d.display()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no patch file"), "{e}");
        assert!(Variant::parse("host").unwrap().is_none());
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
                .all(|l| l.starts_with("CONFIG_") && l.ends_with("=y"))
        );
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
