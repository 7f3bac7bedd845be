//! Mounting and unmounting with guards, mount-option parsing and /proc/self/mountinfo.

use anyhow::{Result, bail};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A mount this process made; unmounted when dropped.
#[derive(Debug)]
pub struct Mount {
    target: PathBuf,
}

/// Generic options that mount(8) turns into MS_* flags; everything else is passed to the
/// filesystem as data.
const FLAG_OPTIONS: &[(&str, libc::c_ulong, bool)] = &[
    ("ro", libc::MS_RDONLY, true),
    ("rw", libc::MS_RDONLY, false),
    ("nosuid", libc::MS_NOSUID, true),
    ("suid", libc::MS_NOSUID, false),
    ("nodev", libc::MS_NODEV, true),
    ("dev", libc::MS_NODEV, false),
    ("noexec", libc::MS_NOEXEC, true),
    ("exec", libc::MS_NOEXEC, false),
    ("sync", libc::MS_SYNCHRONOUS, true),
    ("async", libc::MS_SYNCHRONOUS, false),
    ("dirsync", libc::MS_DIRSYNC, true),
    ("noatime", libc::MS_NOATIME, true),
    ("atime", libc::MS_NOATIME, false),
    ("nodiratime", libc::MS_NODIRATIME, true),
    ("diratime", libc::MS_NODIRATIME, false),
    ("relatime", libc::MS_RELATIME, true),
    ("norelatime", libc::MS_RELATIME, false),
    ("strictatime", libc::MS_STRICTATIME, true),
    ("lazytime", libc::MS_LAZYTIME, true),
    ("nolazytime", libc::MS_LAZYTIME, false),
    ("silent", libc::MS_SILENT, true),
    ("loud", libc::MS_SILENT, false),
];

/// Split `noatime,compress=zstd` into MS_* flags and the filesystem's data string.
pub fn split_options(opts: &str) -> (libc::c_ulong, String) {
    let mut flags = 0;
    let mut data = Vec::new();
    for o in opts.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        match FLAG_OPTIONS.iter().find(|(name, _, _)| *name == o) {
            Some((_, f, true)) => flags |= f,
            Some((_, f, false)) => flags &= !f,
            None => data.push(o),
        }
    }
    (flags, data.join(","))
}

fn cstr(p: &Path) -> Result<CString> {
    Ok(CString::new(p.as_os_str().as_bytes())?)
}

impl Mount {
    pub fn new(source: &str, target: &Path, fstype: &str, opts: &str) -> Result<Mount> {
        let (flags, data) = split_options(opts);
        let src = CString::new(source)?;
        let tgt = cstr(target)?;
        let fst = CString::new(fstype)?;
        let dat = CString::new(data.clone())?;
        let r = crate::sys::os::mount(
            &src,
            &tgt,
            &fst,
            flags,
            (!data.is_empty()).then_some(dat.as_c_str()),
        );
        if let Err(err) = r {
            let hint = if err.raw_os_error() == Some(libc::EINVAL) && !opts.is_empty() {
                format!(" (check the mount options `{opts}`; dmesg has the filesystem's reason)")
            } else {
                String::new()
            };
            bail!(
                "mounting {fstype} {source} on {} failed: {err}{hint}",
                target.display()
            );
        }
        Ok(Mount {
            target: target.to_path_buf(),
        })
    }

    pub fn target(&self) -> &Path {
        &self.target
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Err(e) = unmount(&self.target) {
            model::diag::warn(format!("{e:#}"));
        }
    }
}

/// Unmount `target`, retrying briefly while it is busy; as a last resort detach it lazily
/// so the run never leaves it mounted.
pub fn unmount(target: &Path) -> Result<()> {
    let tgt = cstr(target)?;
    for attempt in 0..50 {
        let Err(err) = crate::sys::os::umount2(&tgt, 0) else {
            return Ok(());
        };
        match err.raw_os_error() {
            Some(libc::EBUSY) if attempt < 49 => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            Some(libc::EINVAL) | Some(libc::ENOENT) => return Ok(()), // not mounted any more
            _ => {
                if crate::sys::os::umount2(&tgt, libc::MNT_DETACH).is_ok() {
                    bail!("{} was busy ({err}); detached it lazily", target.display());
                }
                bail!("cannot unmount {}: {err}", target.display());
            }
        }
    }
    unreachable!("the loop returns on its last attempt")
}

/// One line of /proc/self/mountinfo.
#[derive(Clone, Debug)]
pub struct MountInfo {
    pub major: u32,
    pub minor: u32,
    pub mount_point: PathBuf,
    pub fstype: String,
    pub source: String,
}

/// Unescape the octal escapes mountinfo uses for spaces and the like (`\040`).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn parse_mountinfo(text: &str) -> Vec<MountInfo> {
    text.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let f: Vec<&str> = left.split_whitespace().collect();
            let r: Vec<&str> = right.split_whitespace().collect();
            let (ma, mi) = f.get(2)?.split_once(':')?;
            Some(MountInfo {
                major: ma.parse().ok()?,
                minor: mi.parse().ok()?,
                mount_point: PathBuf::from(unescape(f.get(4)?)),
                fstype: r.first()?.to_string(),
                source: unescape(r.get(1).unwrap_or(&"")),
            })
        })
        .collect()
}

pub fn mounts() -> Vec<MountInfo> {
    parse_mountinfo(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_flags_from_data() {
        let (f, d) = split_options("noatime,compress=zstd:3,ssd,ro");
        assert_eq!(f, libc::MS_NOATIME | libc::MS_RDONLY);
        assert_eq!(d, "compress=zstd:3,ssd");
        let (f, d) = split_options("");
        assert_eq!((f, d.as_str()), (0, ""));
        let (f, _) = split_options("ro,rw");
        assert_eq!(f, 0);
    }

    #[test]
    fn parses_mountinfo_lines() {
        let text = "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n\
                    98 22 7:0 / /run/sigbench/12/mnt\\040x rw - btrfs /dev/loop0 rw,space_cache=v2\n";
        let m = parse_mountinfo(text);
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].major, m[0].minor), (254, 0));
        assert_eq!(m[1].mount_point, PathBuf::from("/run/sigbench/12/mnt x"));
        assert_eq!(m[1].fstype, "btrfs");
        assert_eq!(m[1].source, "/dev/loop0");
    }
}
