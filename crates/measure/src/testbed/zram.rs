//! zram devices through sysfs (`/sys/class/zram-control`): added, sized and removed
//! without zramctl.

use anyhow::{Context, Result};
use std::path::PathBuf;

/// A new zram device's id.
pub fn add() -> Result<String> {
    Ok(std::fs::read_to_string("/sys/class/zram-control/hot_add")
        .context("--device zram: this kernel has no zram (no /sys/class/zram-control); use the default loop ramdisk")?
        .trim()
        .to_string())
}

/// Give device `id` its size in bytes; its path once udev (or devtmpfs) shows it.
pub fn size(id: &str, bytes: u64) -> Result<PathBuf> {
    let disksize = format!("/sys/block/zram{id}/disksize");
    std::fs::write(&disksize, bytes.to_string())
        .with_context(|| format!("cannot set {disksize}"))?;
    let path = PathBuf::from(format!("/dev/zram{id}"));
    for _ in 0..100 {
        if path.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Ok(path)
}

/// Reset and remove zram device `id`.
pub fn remove(id: &str) -> Result<()> {
    let _ = std::fs::write(format!("/sys/block/zram{id}/reset"), "1");
    std::fs::write("/sys/class/zram-control/hot_remove", id)
        .with_context(|| format!("cannot remove /dev/zram{id}"))
}
