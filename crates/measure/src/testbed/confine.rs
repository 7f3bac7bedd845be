//! Confinement: the workload runs in a thread of its own whose root is the test
//! filesystem, so the kernel — not a static check — keeps every path a signature resolves
//! on the scratch filesystem.
//!
//! The thread unshares its filesystem context (`unshare(CLONE_FS)`: root and working
//! directory become its own, the rest of sigbench keeps the host's), `chroot`s into the
//! mount point and changes into the test directory. From there `..` stops at the mount's
//! root, an absolute symlink target resolves inside the mount, and no descriptor reaching
//! outside exists in the workload (it opens everything by path, relative to its working
//! directory). The syscalls of the timed window are unchanged: the same calls with the same
//! relative paths, walking the same components. Whatever the thread needs from outside
//! (probe files in /proc and /sys, the op log) is opened before it is confined.
//!
//! Why not the alternatives: a private mount namespace with `pivot_root` confines as well
//! but is per process (sigbench's other threads and its teardown would see the new root)
//! and costs a namespace per case; `openat2(RESOLVE_BENEATH)` confines only calls that take
//! it, so the signature's own `rename`, `unlink`, `symlink`… would have to become different
//! syscalls — exactly what the executor must not do.

use anyhow::{Context, Result, anyhow};
use std::path::Path;

/// Run `work` in a new thread confined to `root` (a mount point) with `dir` (inside
/// `root`) as its working directory, and return what it returned.
pub fn run_confined<R: Send>(
    root: &Path,
    dir: &Path,
    work: impl FnOnce() -> R + Send,
) -> Result<R> {
    let inside = dir
        .strip_prefix(root)
        .with_context(|| format!("{} is not inside {}", dir.display(), root.display()))?;
    let inside = Path::new("/").join(inside);
    in_own_fs_context(
        || {
            std::os::unix::fs::chroot(root)
                .with_context(|| format!("cannot chroot into {}", root.display()))?;
            std::env::set_current_dir(&inside).with_context(|| {
                format!(
                    "cannot chdir to {} in the test filesystem",
                    inside.display()
                )
            })
        },
        work,
    )
}

/// Run `work` in a new thread whose working directory is `dir`, without confinement: the
/// test seam for running the executor in a plain temporary directory (no root needed).
pub fn run_in_dir<R: Send>(dir: &Path, work: impl FnOnce() -> R + Send) -> Result<R> {
    in_own_fs_context(
        || {
            std::env::set_current_dir(dir)
                .with_context(|| format!("cannot chdir to {}", dir.display()))
        },
        work,
    )
}

/// A thread with its own root and working directory: `enter` sets them, then `work` runs.
fn in_own_fs_context<R: Send>(
    enter: impl FnOnce() -> Result<()> + Send,
    work: impl FnOnce() -> R + Send,
) -> Result<R> {
    std::thread::scope(|s| {
        let worker = std::thread::Builder::new()
            .name("sigbench-workload".into())
            .spawn_scoped(s, || -> Result<R> {
                crate::sys::os::unshare_fs()
                    .context("unshare(CLONE_FS) for the workload thread")?;
                enter()?;
                Ok(work())
            })
            .context("cannot start the workload thread")?;
        worker
            .join()
            .map_err(|_| anyhow!("the workload thread panicked"))?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_outside_the_root_is_refused() {
        let e = run_confined(Path::new("/tmp/a"), Path::new("/tmp/b"), || ()).unwrap_err();
        assert!(e.to_string().contains("is not inside"), "{e}");
    }
}
