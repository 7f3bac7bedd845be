//! Loop devices through their ioctls (linux/loop.h), so attaching one needs no losetup.

use crate::sys::os::{
    LO_NAME_SIZE, LoopConfig, LoopInfo64, loop_clr_fd, loop_configure, loop_ctl_get_free,
};
use anyhow::{Context, Result, bail};
use std::fs::{File, OpenOptions};
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};

/// Detach automatically when the last user closes the device: a killed run's loop device
/// goes away as soon as its filesystem is unmounted.
const LO_FLAGS_AUTOCLEAR: u32 = 4;

/// An attached loop device; detached when dropped.
#[derive(Debug)]
pub struct LoopDevice {
    file: File,
    pub path: PathBuf,
    pub number: u32,
}

impl LoopDevice {
    /// Attach `backing` to a free loop device.
    pub fn attach(backing: &Path) -> Result<LoopDevice> {
        let ctl = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/loop-control")
            .context("cannot open /dev/loop-control (is the loop driver available? `sigbench doctor` checks)")?;
        let back = OpenOptions::new()
            .read(true)
            .write(true)
            .open(backing)
            .with_context(|| format!("cannot open {}", backing.display()))?;
        // Another process may grab the free device between GET_FREE and CONFIGURE: retry.
        for _ in 0..20 {
            let n = loop_ctl_get_free(ctl.as_fd())
                .map_err(|e| anyhow::anyhow!("no free loop device: {e}"))?;
            let path = PathBuf::from(format!("/dev/loop{n}"));
            let file = match OpenOptions::new().read(true).write(true).open(&path) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    continue;
                }
                Err(e) => return Err(e).with_context(|| format!("cannot open {}", path.display())),
            };
            let mut cfg = LoopConfig {
                fd: back.as_raw_fd() as u32,
                block_size: 0,
                info: LoopInfo64 {
                    lo_device: 0,
                    lo_inode: 0,
                    lo_rdevice: 0,
                    lo_offset: 0,
                    lo_sizelimit: 0,
                    lo_number: 0,
                    lo_encrypt_type: 0,
                    lo_encrypt_key_size: 0,
                    lo_flags: LO_FLAGS_AUTOCLEAR,
                    lo_file_name: [0; LO_NAME_SIZE],
                    lo_crypt_name: [0; LO_NAME_SIZE],
                    lo_encrypt_key: [0; 32],
                    lo_init: [0; 2],
                },
                reserved: [0; 8],
            };
            let name = backing.as_os_str().as_encoded_bytes();
            let len = name.len().min(LO_NAME_SIZE - 1);
            cfg.info.lo_file_name[..len].copy_from_slice(&name[..len]);
            let Err(err) = loop_configure(file.as_fd(), &cfg) else {
                return Ok(LoopDevice {
                    file,
                    path,
                    number: n as u32,
                });
            };
            if err.raw_os_error() != Some(libc::EBUSY) {
                bail!(
                    "cannot attach {} to {}: {err}",
                    backing.display(),
                    path.display()
                );
            }
        }
        bail!("no free loop device after 20 attempts (another program is allocating them)")
    }

    /// The sysfs name (`loop0`).
    pub fn block_name(&self) -> String {
        format!("loop{}", self.number)
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        // With AUTOCLEAR the kernel detaches on last close; CLR_FD makes it immediate.
        let _ = loop_clr_fd(self.file.as_fd());
    }
}

/// Detach loop device `/dev/loopN` by number (cleanup of leftovers).
pub fn detach(number: u32) -> Result<()> {
    let path = format!("/dev/loop{number}");
    let f = OpenOptions::new()
        .read(true)
        .open(&path)
        .with_context(|| format!("cannot open {path}"))?;
    if let Err(err) = loop_clr_fd(f.as_fd())
        && err.raw_os_error() != Some(libc::ENXIO)
    {
        bail!("cannot detach {path}: {err}");
    }
    Ok(())
}

/// Attached loop devices and their backing files, from sysfs.
pub fn attached() -> Vec<(u32, PathBuf)> {
    let Ok(rd) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let number = name.strip_prefix("loop")?.parse().ok()?;
            let backing = std::fs::read_to_string(e.path().join("loop/backing_file")).ok()?;
            Some((number, PathBuf::from(backing.trim_end())))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn struct_layout_matches_the_kernel() {
        // sizeof(struct loop_info64) == 232 and sizeof(struct loop_config) == 304 on Linux.
        assert_eq!(std::mem::size_of::<super::LoopInfo64>(), 232);
        assert_eq!(std::mem::size_of::<super::LoopConfig>(), 304);
    }
}
