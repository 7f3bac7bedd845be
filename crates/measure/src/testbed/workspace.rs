//! The run's workspace, `/run/sigbench/<pid>/`: every mount point, ramdisk image and
//! marker of a run lives below it, so whatever a killed run left behind is recognisable as
//! sigbench's — and whose — and `sigbench doctor --cleanup` can remove it.
//!
//! Runs also take `/run/sigbench/lock`: two runs at once would disturb each other's
//! timings and system-wide counters, so the second waits.

use super::{loopdev, mount};
use crate::probe::KPROBE_GROUP_PREFIX;
use crate::probe::tracefs::Tracefs;
use anyhow::{Context, Result};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

pub const ROOT: &str = "/run/sigbench";

/// The directory of one run; removed when dropped (after everything inside is torn down).
#[derive(Debug)]
pub struct Workspace {
    pub dir: PathBuf,
    _lock: File,
}

impl Workspace {
    /// Take the machine-wide lock (waiting for another run if needed) and create the
    /// run's directory.
    pub fn create() -> Result<Workspace> {
        std::fs::create_dir_all(ROOT)
            .with_context(|| format!("cannot create {ROOT} (are you root?)"))?;
        let lock = lock()?;
        let dir = Path::new(ROOT).join(std::process::id().to_string());
        if dir.exists() {
            // Our pid was reused after a killed run: that run is dead, its leftovers are not ours.
            clean_run(&dir, &mut Vec::new());
        }
        std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(Workspace { dir, _lock: lock })
    }

    /// A sub-directory of the workspace (created).
    pub fn subdir(&self, name: &str) -> Result<PathBuf> {
        let p = self.dir.join(name);
        std::fs::create_dir_all(&p).with_context(|| format!("cannot create {}", p.display()))?;
        Ok(p)
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            model::diag::warn(format!("cannot remove {}: {e}", self.dir.display()));
        }
    }
}

/// Take the machine-wide lock every measuring sigbench holds (waiting if another has it).
pub fn lock() -> Result<File> {
    machine_lock(libc::LOCK_EX)
}

/// The machine-wide lock shared with other holders of it shared: for guests timed by the
/// icount clock, which the host's load cannot disturb (and which disturb nothing measured
/// on the host's clock, as that needs the lock whole).
pub fn lock_shared() -> Result<File> {
    machine_lock(libc::LOCK_SH)
}

/// The machine-wide lock, in `mode` (LOCK_EX or LOCK_SH).
fn machine_lock(mode: libc::c_int) -> Result<File> {
    std::fs::create_dir_all(ROOT)
        .with_context(|| format!("cannot create {ROOT} (are you root?)"))?;
    lock_file_as(&Path::new(ROOT).join("lock"), "sigbench run", mode)
}

/// Take an exclusive lock on `path` (created if missing), waiting for its holder — whose
/// pid is in the file — and saying so on stderr. Released when the file is dropped. The
/// wait polls (every 50 ms) so that SIGINT/SIGTERM end it at once: a blocking flock is
/// restarted after the signal and would wait for the other run to finish.
pub fn lock_file(path: &Path, holder_is: &str) -> Result<File> {
    lock_file_as(path, holder_is, libc::LOCK_EX)
}

/// `lock_file` with `mode` LOCK_EX or LOCK_SH.
fn lock_file_as(path: &Path, holder_is: &str, mode: libc::c_int) -> Result<File> {
    use crate::sys::os::flock;
    use std::os::fd::AsFd;
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    if flock(f.as_fd(), mode | libc::LOCK_NB).is_err() {
        // The holder may be this process (guests side by side prepare their kernels on
        // threads: a short wait, not news), or not have written its pid yet. Another
        // process is said at once, an unknown holder after a second of waiting.
        let holder = |f: &mut File| {
            let mut h = String::new();
            let _ = f.rewind();
            let _ = f.read_to_string(&mut h);
            h.trim().to_string()
        };
        let me = std::process::id();
        let mut said = false;
        let mut say = |h: &str| {
            if !said && h.parse() != Ok(me) {
                said = true;
                let who = named_holder(h, me).map_or(String::new(), |p| format!(" (pid {p})"));
                model::say!("sigbench: waiting for another {holder_is}{who} to finish");
            }
        };
        let first = holder(&mut f);
        if !first.is_empty() {
            say(&first);
        }
        let mut polls = 0u32;
        loop {
            crate::interrupt::check()?;
            match flock(f.as_fd(), mode | libc::LOCK_NB) {
                Ok(()) => break,
                Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => {
                    polls += 1;
                    if polls == 20 {
                        let h = holder(&mut f);
                        say(&h);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(e) => {
                    return Err(e)
                        .with_context(|| format!("waiting for the lock {}", path.display()));
                }
            }
        }
    }
    // The holder's pid, for the next one's "waiting for" (shared holders take turns).
    if mode == libc::LOCK_EX {
        f.set_len(0)?;
        f.rewind()?;
        write!(f, "{}", std::process::id())?;
    }
    Ok(f)
}

/// The pid a lock file names, when it is another live sigbench: the file keeps the last
/// exclusive holder's pid, and shared holders (a watch, icount guests) write none, so a
/// dead pid there is not who is waited for.
fn named_holder(text: &str, me: u32) -> Option<u32> {
    text.trim().parse().ok().filter(|&p| p != me && alive(p))
}

/// Whether `pid` is a live sigbench process.
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim() == "sigbench")
        .unwrap_or(false)
}

/// Something a dead run left behind.
#[derive(Clone, Debug)]
pub struct Leftover {
    pub pid: u32,
    pub what: String,
}

/// Run directories of sigbench processes that are no longer running.
fn dead_runs() -> Vec<(u32, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(ROOT) else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            (!alive(pid)).then(|| (pid, e.path()))
        })
        .collect()
}

fn pid_of(path: &Path) -> Option<u32> {
    path.strip_prefix(ROOT)
        .ok()?
        .components()
        .next()?
        .as_os_str()
        .to_str()?
        .parse()
        .ok()
}

/// Everything dead runs left behind: mounts, loop devices, zram devices, kprobe events
/// and directories.
pub fn leftovers() -> Vec<Leftover> {
    let mut out = Vec::new();
    let dead: Vec<u32> = dead_runs().iter().map(|(p, _)| *p).collect();
    let is_dead = |p: Option<u32>| p.is_some_and(|p| dead.contains(&p));
    for m in mount::mounts() {
        if is_dead(pid_of(&m.mount_point)) {
            out.push(Leftover {
                pid: pid_of(&m.mount_point).unwrap_or(0),
                what: format!(
                    "mount: {} {} on {}",
                    m.fstype,
                    m.source,
                    m.mount_point.display()
                ),
            });
        }
    }
    for (n, backing) in loopdev::attached() {
        if is_dead(pid_of(&backing)) {
            out.push(Leftover {
                pid: pid_of(&backing).unwrap_or(0),
                what: format!("loop device: /dev/loop{n} backed by {}", backing.display()),
            });
        }
    }
    for (pid, dir) in dead_runs() {
        if let Ok(id) = std::fs::read_to_string(dir.join("zram")) {
            out.push(Leftover {
                pid,
                what: format!("zram device: /dev/zram{}", id.trim()),
            });
        }
        out.push(Leftover {
            pid,
            what: format!("directory: {}", dir.display()),
        });
    }
    if let Some(t) = Tracefs::find() {
        for (group, name) in t.kprobe_groups(KPROBE_GROUP_PREFIX) {
            let pid = group[KPROBE_GROUP_PREFIX.len()..].parse().unwrap_or(0);
            if !alive(pid) {
                out.push(Leftover {
                    pid,
                    what: format!("kprobe event: {group}/{name}"),
                });
            }
        }
    }
    out
}

/// Remove everything dead runs left behind. Returns what was done; errors are collected
/// into the same list so one stuck item does not stop the rest.
pub fn cleanup() -> Vec<String> {
    let mut done = Vec::new();
    for (_, dir) in dead_runs() {
        clean_run(&dir, &mut done);
    }
    if let Some(t) = Tracefs::find() {
        for (group, name) in t.kprobe_groups(KPROBE_GROUP_PREFIX) {
            let pid = group[KPROBE_GROUP_PREFIX.len()..].parse().unwrap_or(0);
            if !alive(pid) {
                match t.remove_kprobe(&group, &name) {
                    Ok(()) => done.push(format!("removed kprobe event {group}/{name}")),
                    Err(e) => done.push(format!(
                        "FAILED to remove kprobe event {group}/{name}: {e:#}"
                    )),
                }
            }
        }
    }
    done
}

/// Tear down one dead run's directory: filesystem mounts first (they hold the loop
/// device), then loop and zram devices, then the tmpfs holding the image, then the files.
fn clean_run(dir: &Path, done: &mut Vec<String>) {
    let mut mounts: Vec<_> = mount::mounts()
        .into_iter()
        .filter(|m| m.mount_point.starts_with(dir))
        .collect();
    // Deepest first, and the tmpfs that backs loop devices after the filesystems on them.
    mounts.sort_by_key(|m| {
        (
            m.fstype == "tmpfs",
            std::cmp::Reverse(m.mount_point.components().count()),
        )
    });
    let (tmpfs, others): (Vec<_>, Vec<_>) = mounts.into_iter().partition(|m| m.fstype == "tmpfs");
    let umount = |m: &mount::MountInfo, done: &mut Vec<String>| match mount::unmount(&m.mount_point)
    {
        Ok(()) => done.push(format!("unmounted {}", m.mount_point.display())),
        Err(e) => done.push(format!(
            "FAILED to unmount {}: {e:#}",
            m.mount_point.display()
        )),
    };
    for m in &others {
        umount(m, done);
    }
    for (n, backing) in loopdev::attached() {
        if backing.starts_with(dir) {
            match loopdev::detach(n) {
                Ok(()) => done.push(format!("detached /dev/loop{n}")),
                Err(e) => done.push(format!("FAILED to detach /dev/loop{n}: {e:#}")),
            }
        }
    }
    if let Ok(id) = std::fs::read_to_string(dir.join("zram")) {
        match super::zram::remove(id.trim()) {
            Ok(()) => done.push(format!("removed /dev/zram{}", id.trim())),
            Err(e) => done.push(format!("FAILED to remove /dev/zram{}: {e:#}", id.trim())),
        }
    }
    for m in &tmpfs {
        umount(m, done);
    }
    match std::fs::remove_dir_all(dir) {
        Ok(()) => done.push(format!("removed {}", dir.display())),
        Err(e) => done.push(format!("FAILED to remove {}: {e}", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_lock_names_only_a_live_holder() {
        // Issue 45, item 16: the pid a dead exclusive holder left while a watch holds the
        // lock shared is not named.
        let mut dead = 4_000_000;
        while std::path::Path::new(&format!("/proc/{dead}")).exists() {
            dead += 1;
        }
        assert_eq!(super::named_holder(&dead.to_string(), 1), None);
        assert_eq!(super::named_holder("", 1), None);
        assert_eq!(super::named_holder("garbage", 1), None);
        let me = std::process::id();
        assert_eq!(super::named_holder(&me.to_string(), me), None);
    }
}
