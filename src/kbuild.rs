//! Kernel builds for `bisect --tree`: the revision checked out in a kernel git tree is
//! configured (a base config, then the fragment below with what sigbench's guest needs,
//! then `make olddefconfig`) and built incrementally in the tree, its build log kept.
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

/// The filesystem under test, built in (a block filesystem also needs the block layer and
/// the RAM-backed devices the guest's testbed formats).
fn fs_options(fs: Fs) -> &'static [&'static str] {
    match fs {
        Fs::Tmpfs => &[],
        Fs::Btrfs => &[
            "BLOCK",
            "BLK_DEV",
            "BLK_DEV_LOOP",
            "BLK_DEV_RAM",
            "BTRFS_FS",
        ],
        Fs::Ext4 => &["BLOCK", "BLK_DEV", "BLK_DEV_LOOP", "BLK_DEV_RAM", "EXT4_FS"],
        Fs::Xfs => &["BLOCK", "BLK_DEV", "BLK_DEV_LOOP", "BLK_DEV_RAM", "XFS_FS"],
    }
}

/// The config fragment sigbench adds to the base config, for guests testing `fs`.
pub fn fragment(fs: Fs) -> String {
    let mut s = format!(
        "# added by sigbench: what its guest needs to test {}\n",
        fs.name()
    );
    for o in GUEST.iter().chain(fs_options(fs)) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
