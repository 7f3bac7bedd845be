//! Child processes (mkfs, depmod, dpkg-deb, decompressors, strace): each runs in a process
//! group of its own, and SIGINT/SIGTERM on sigbench stop the whole group within
//! milliseconds — a Ctrl-C never waits for a long mkfs, and never leaves a child running
//! after sigbench has gone. (A group of its own also keeps a terminal's Ctrl-C from killing
//! mkfs half-way before sigbench can tear down in order.)
//! A compressed input (a guest's module, a package's changelog) is decompressed by one
//! such child, up to a cap said in the error ([`decompress`]).

use crate::interrupt;
use anyhow::{Context, Result, bail};
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::Duration;

/// How often a waiting sigbench looks at its children and at the interrupt flag.
const POLL: Duration = Duration::from_millis(10);
/// How many polls a child killed by a signal waits for sigbench's own (200 ms).
const SIGNAL_GRACE: usize = 20;
/// How many polls a stopped group gets to be gone (2 s): a member in uninterruptible I/O
/// (badblocks reading a loop device) dies only when its read returns.
const GROUP_GRACE: usize = 200;

/// Run `cmd` to completion with its output captured, like `Command::output`, but stop it
/// (and everything it started) when a signal asks sigbench to stop. `what` names it in
/// errors.
pub fn output(cmd: &mut Command, what: &str) -> Result<Output> {
    output_capped(cmd, what, usize::MAX)
}

/// [`output`] keeping at most `cap` bytes of stdout: past that the pipe is closed (the
/// child dies of SIGPIPE) and the result is an error saying so — a decompressor given a
/// bomb stops at the cap instead of filling memory.
pub fn output_capped(cmd: &mut Command, what: &str, cap: usize) -> Result<Output> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = spawn(cmd, what)?;
    let out = drain(child.stdout.take(), cap);
    let err = drain(child.stderr.take(), usize::MAX);
    let status = wait(&mut child, what, true)?;
    let stdout = out.join().unwrap_or_default();
    if stdout.len() > cap {
        anyhow::bail!("{what}: its output passed the limit of {cap} bytes");
    }
    Ok(Output {
        status,
        stdout,
        stderr: err.join().unwrap_or_default(),
    })
}

/// Run `cmd` as [`output`] does and return its stdout; a failure is an error with what
/// it said on stderr ("`what` failed: …").
pub fn checked(cmd: &mut Command, what: &str) -> Result<String> {
    let out = output(cmd, what)?;
    if !out.status.success() {
        anyhow::bail!(
            "{what} failed: {}",
            first_line(&String::from_utf8_lossy(&out.stderr))
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// What a tool said on stderr as one line: its first line with something in it (a tool's
/// later lines mostly follow from the first: bsdtar's "Error exit delayed from previous
/// errors"), without a misleading ": Success" errno (libarchive prints one for errors
/// that are not system calls'), and how many lines more there were.
pub fn first_line(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let Some(first) = lines.first() else {
        return "(it said nothing)".to_string();
    };
    let first = first
        .strip_suffix(": Success")
        .or_else(|| first.strip_suffix(": Unknown error -1"))
        .unwrap_or(first);
    match lines.len() - 1 {
        0 => first.to_string(),
        1 => format!("{first} (and 1 more line)"),
        n => format!("{first} (and {n} more lines)"),
    }
}

/// Read a child's pipe to the end, or to one byte past `cap` (then the pipe is closed), on
/// a thread of its own (so neither pipe can fill up and stall the child while the other is
/// read).
fn drain<R: Read + Send + 'static>(
    pipe: Option<R>,
    cap: usize,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(r) = pipe {
            let _ = r.take(cap.saturating_add(1) as u64).read_to_end(&mut buf);
        }
        buf
    })
}

/// Run `cmd` with the terminal's stdin/stdout/stderr (strace recording a program that may
/// ask the user something), stopping it on SIGINT/SIGTERM. It stays in the terminal's
/// process group, so a Ctrl-C at the terminal reaches it directly too.
pub fn status(cmd: &mut Command, what: &str) -> Result<ExitStatus> {
    let mut child = spawn(cmd, what)?;
    wait(&mut child, what, false)
}

/// Run `cmd` with its stdout and stderr going to `log` (a kernel build), in a process group
/// of its own that a signal to sigbench stops as a whole.
pub fn logged(cmd: &mut Command, what: &str, log: &std::fs::File) -> Result<ExitStatus> {
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log.try_clone()?)
        .process_group(0);
    let mut child = spawn(cmd, what)?;
    wait(&mut child, what, true)
}

/// `cmd` started, or an error naming `what`. ENOSYS names its cause: Rust's standard
/// library starts a process through socketpair(AF_UNIX) when posix_spawn cannot serve, and
/// a kernel without Unix sockets (tinyconfig's) has no such call.
fn spawn(cmd: &mut Command, what: &str) -> Result<Child> {
    cmd.spawn().map_err(|e| {
        let why = if e.raw_os_error() == Some(libc::ENOSYS) {
            " (this kernel has no Unix sockets, CONFIG_UNIX, which starting a process needs)"
        } else {
            ""
        };
        anyhow::Error::new(e).context(format!("cannot run {what}{why}"))
    })
}

fn wait(child: &mut Child, what: &str, group: bool) -> Result<ExitStatus> {
    loop {
        if let Some(s) = child
            .try_wait()
            .with_context(|| format!("waiting for {what}"))?
        {
            // Killed by a signal that was meant for sigbench too (`scancel` signals a Slurm
            // job's every process, a terminal its foreground group): once sigbench's own
            // signal is seen, that is an interruption, not the child's failure.
            if s.signal().is_some() {
                for _ in 0..SIGNAL_GRACE {
                    interrupt::check()?;
                    std::thread::sleep(POLL);
                }
            }
            return Ok(s);
        }
        if let Err(stop) = interrupt::check() {
            // A child that leads its own group: stop the whole group; then reap the child.
            let pid = child.id() as i32;
            let _ = crate::sys::os::kill(if group { -pid } else { pid }, libc::SIGKILL);
            let _ = child.wait();
            // The leader is reaped; its children (reparented, perhaps still in the kernel
            // with the SIGKILL pending) are waited for, so none outlives sigbench.
            if group {
                for _ in 0..GROUP_GRACE {
                    if crate::sys::os::kill(-pid, 0).is_err() {
                        break;
                    }
                    std::thread::sleep(POLL);
                }
            }
            return Err(stop.into());
        }
        std::thread::sleep(POLL);
    }
}

/// The file at `path`, decompressed by its extension (`.xz`, `.zst`, `.gz`; anything else
/// read as it is), at most `cap` bytes — else an error naming the limit, `what` it is the
/// limit for ("one module", "a changelog"). A 66 KB `btrfs.ko.zst` that unpacks to 2 GiB
/// is a bomb.
pub fn decompress(path: &Path, cap: usize, what: &str) -> Result<Vec<u8>> {
    let too_big = || {
        anyhow::anyhow!(
            "{} decompresses to more than {} MiB, the limit for {what}",
            path.display(),
            cap >> 20
        )
    };
    let name = path.to_string_lossy();
    let tool = if name.ends_with(".xz") {
        "xz"
    } else if name.ends_with(".zst") {
        "zstd"
    } else if name.ends_with(".gz") {
        "gzip"
    } else {
        let f =
            std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        let mut data = Vec::new();
        f.take(cap as u64 + 1)
            .read_to_end(&mut data)
            .with_context(|| format!("cannot read {}", path.display()))?;
        return if data.len() > cap {
            Err(too_big())
        } else {
            Ok(data)
        };
    };
    let out = output_capped(
        std::process::Command::new(tool)
            .args(["-dc", "--"])
            .arg(path),
        &format!("{tool} (sudo make deps installs it)"),
        cap,
    )
    .map_err(|e| {
        if e.to_string().contains("passed the limit") {
            too_big()
        } else {
            e
        }
    })?;
    if !out.status.success() {
        bail!("{tool} -dc {} failed", path.display());
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 39, 20: a rejected package printed bsdtar's lines whole, "…: Success" and all.
    #[test]
    fn a_tools_complaint_is_one_line() {
        let said = "bsdtar: Cannot extract through symlink boot/x: Success\n\
                    bsdtar: Error exit delayed from previous errors.\n";
        assert_eq!(
            first_line(said),
            "bsdtar: Cannot extract through symlink boot/x (and 1 more line)"
        );
        assert_eq!(first_line("\n  tar: bad\n"), "tar: bad");
        assert_eq!(first_line(""), "(it said nothing)");
        let e = checked(
            Command::new("sh").args(["-c", "echo one >&2; echo two >&2; echo three >&2; exit 3"]),
            "sh",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(e, "sh failed: one (and 2 more lines)");
    }
}
