//! Block devices the test filesystem is made on, and the checks that prove a device
//! named by the user is a scratch device before anything writes to it.

use super::loopdev::LoopDevice;
use super::mount::{self, Mount};
use super::workspace::Workspace;
use super::zram;
use anyhow::{Context, Result, bail};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The label sigbench gives every filesystem it makes: a device carrying it may be
/// reformatted without `--force`.
pub const LABEL: &str = "sigbench";

/// What `--device` asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSpec {
    /// A loop device over a file on a private tmpfs: a ramdisk that works everywhere.
    LoopRam,
    /// brd's /dev/ram0 (`--device ram`).
    Brd,
    /// A fresh zram device (`--device zram`).
    Zram,
    /// A scratch block device named by the user.
    Path(PathBuf),
}

impl DeviceSpec {
    pub fn parse(s: &str) -> DeviceSpec {
        match s {
            "loop" | "loop-ram" => DeviceSpec::LoopRam,
            "ram" | "brd" => DeviceSpec::Brd,
            "zram" => DeviceSpec::Zram,
            p => DeviceSpec::Path(PathBuf::from(p)),
        }
    }

    /// The `--device` argument that parses back to this.
    pub fn arg(&self) -> String {
        match self {
            DeviceSpec::LoopRam => "loop".into(),
            DeviceSpec::Brd => "ram".into(),
            DeviceSpec::Zram => "zram".into(),
            DeviceSpec::Path(p) => p.display().to_string(),
        }
    }

    /// How results describe the device kind.
    pub fn kind(&self) -> &'static str {
        match self {
            DeviceSpec::LoopRam => "loop-ram",
            DeviceSpec::Brd => "brd",
            DeviceSpec::Zram => "zram",
            DeviceSpec::Path(_) => "scratch",
        }
    }
}

enum Holder {
    Loop { _dev: LoopDevice, _tmpfs: Mount },
    Zram { id: String },
    Brd { loaded: bool },
    Scratch,
}

/// A block device ready to be formatted; released when dropped.
pub struct Device {
    pub path: PathBuf,
    /// The name under /sys/block.
    pub block: String,
    pub major: u32,
    pub minor: u32,
    pub size: u64,
    pub kind: &'static str,
    holder: Holder,
}

impl Drop for Device {
    fn drop(&mut self) {
        match &self.holder {
            Holder::Zram { id } => {
                if let Err(e) = zram::remove(id) {
                    model::diag::warn(format!("{e:#}"));
                }
            }
            Holder::Brd { loaded: true } => {
                let _ = Command::new("rmmod").arg("brd").status();
            }
            _ => {}
        }
    }
}

fn dev_numbers(path: &Path) -> Result<(u32, u32)> {
    let md = std::fs::metadata(path).with_context(|| format!("cannot stat {}", path.display()))?;
    if !md.file_type().is_block_device() {
        bail!("{} is not a block device", path.display());
    }
    let rdev = md.rdev();
    Ok((libc::major(rdev), libc::minor(rdev)))
}

/// sysfs directory of a block device (`/sys/class/block/sda1`).
fn sysfs_of(major: u32, minor: u32) -> Result<PathBuf> {
    let link = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    link.canonicalize()
        .with_context(|| format!("no sysfs entry for block device {major}:{minor}"))
}

fn sysfs_size(sysfs: &Path) -> u64 {
    std::fs::read_to_string(sysfs.join("size"))
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(0)
        * 512
}

impl Device {
    fn describe(path: PathBuf, kind: &'static str, holder: Holder) -> Result<Device> {
        let (major, minor) = dev_numbers(&path)?;
        let sysfs = sysfs_of(major, minor)?;
        Ok(Device {
            block: sysfs
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
            size: sysfs_size(&sysfs),
            path,
            major,
            minor,
            kind,
            holder,
        })
    }

    /// Acquire the device `spec` names, at least `size` bytes where sigbench sizes it.
    /// Scratch devices must already have passed [`check_scratch`].
    pub fn acquire(spec: &DeviceSpec, size: u64, ws: &Workspace) -> Result<Device> {
        match spec {
            DeviceSpec::LoopRam => {
                let ram = ws.subdir("ram")?;
                let tmpfs = Mount::new(
                    "sigbench",
                    &ram,
                    "tmpfs",
                    &format!("size={},mode=0700", size + (1 << 20)),
                )?;
                let image = ram.join("ramdisk.img");
                let f = std::fs::File::create(&image)
                    .with_context(|| format!("cannot create {}", image.display()))?;
                f.set_len(size)
                    .with_context(|| format!("cannot size {} to {size} bytes", image.display()))?;
                drop(f);
                let dev = LoopDevice::attach(&image)?;
                let path = dev.path.clone();
                Device::describe(
                    path,
                    "loop-ram",
                    Holder::Loop {
                        _dev: dev,
                        _tmpfs: tmpfs,
                    },
                )
            }
            DeviceSpec::Zram => {
                let id = zram::add()?;
                let setup = || -> Result<Device> {
                    std::fs::write(ws.dir.join("zram"), &id)?;
                    let path = zram::size(&id, size)?;
                    Device::describe(path, "zram", Holder::Zram { id: id.clone() })
                };
                setup().inspect_err(|_| {
                    let _ = zram::remove(&id);
                })
            }
            DeviceSpec::Brd => {
                let path = PathBuf::from("/dev/ram0");
                let mut loaded = false;
                if !path.exists() {
                    let kib = size.div_ceil(1024);
                    let out = Command::new("modprobe")
                        .args(["brd", "rd_nr=1", "max_part=0", &format!("rd_size={kib}")])
                        .output();
                    match out {
                        Ok(o) if o.status.success() => loaded = true,
                        Ok(o) => bail!(
                            "--device ram needs the brd module, and `modprobe brd` failed: {}; use the default loop ramdisk (no --device)",
                            String::from_utf8_lossy(&o.stderr).trim()
                        ),
                        Err(e) => bail!(
                            "--device ram needs the brd module, and modprobe could not run: {e}"
                        ),
                    }
                } else {
                    check_scratch(&path, false)?;
                }
                Device::describe(path, "brd", Holder::Brd { loaded })
            }
            DeviceSpec::Path(p) => Device::describe(p.clone(), "scratch", Holder::Scratch),
        }
    }
}

/// The disk a block device belongs to (itself if it is a whole disk).
fn disk_of(sysfs: &Path) -> PathBuf {
    if sysfs.join("partition").exists() {
        sysfs
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| sysfs.to_path_buf())
    } else {
        sysfs.to_path_buf()
    }
}

/// The device and its partitions, as major:minor pairs.
fn device_and_partitions(sysfs: &Path, major: u32, minor: u32) -> Vec<(u32, u32, String)> {
    let mut v = vec![(major, minor, name_of(sysfs))];
    if let Ok(rd) = std::fs::read_dir(sysfs) {
        for e in rd.filter_map(|e| e.ok()) {
            let p = e.path();
            if p.join("partition").exists()
                && let Some((a, b)) = std::fs::read_to_string(p.join("dev")).ok().and_then(|d| {
                    let (a, b) = d.trim().split_once(':')?;
                    Some((a.parse().ok()?, b.parse().ok()?))
                })
            {
                v.push((a, b, name_of(&p)));
            }
        }
    }
    v
}

fn name_of(sysfs: &Path) -> String {
    sysfs
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// The major:minor a mount really sits on (btrfs reports an anonymous 0:N, so use the
/// source device then).
fn mount_device(m: &mount::MountInfo) -> Option<(u32, u32)> {
    if m.major != 0 {
        return Some((m.major, m.minor));
    }
    if m.source.starts_with("/dev/") {
        return dev_numbers(Path::new(&m.source)).ok();
    }
    None
}

/// What blkid finds on a device.
#[derive(Debug, Default, PartialEq)]
pub struct Probe {
    pub fs_type: Option<String>,
    pub label: Option<String>,
    pub pt_type: Option<String>,
}

/// Parse `blkid -p -o export` output.
pub fn parse_blkid(text: &str) -> Probe {
    let mut p = Probe::default();
    for line in text.lines() {
        if let Some((k, v)) = line.split_once('=') {
            match k {
                "TYPE" => p.fs_type = Some(v.to_string()),
                "LABEL" => p.label = Some(v.to_string()),
                "PTTYPE" => p.pt_type = Some(v.to_string()),
                _ => {}
            }
        }
    }
    p
}

/// Prove `path` is a scratch device: a block device that is not mounted (nor any of its
/// partitions), not held by device-mapper/md, not swap, not on the root disk, and not
/// carrying a filesystem or partition table sigbench did not write (unless `force`).
/// Every refusal is one line saying why.
pub fn check_scratch(path: &Path, force: bool) -> Result<()> {
    let shown = path.display();
    let (major, minor) =
        dev_numbers(path).map_err(|e| anyhow::anyhow!("refusing --device {shown}: {e:#}"))?;
    let sysfs = sysfs_of(major, minor)?;
    let disk = disk_of(&sysfs);
    let family = device_and_partitions(&sysfs, major, minor);

    let mounts = mount::mounts();
    if let Some(root) = mounts.iter().find(|m| m.mount_point == Path::new("/"))
        && let Some((rma, rmi)) = mount_device(root)
        && let Ok(rsys) = sysfs_of(rma, rmi)
        && disk_of(&rsys) == disk
    {
        bail!(
            "refusing --device {shown}: it is on the disk that holds the root filesystem ({})",
            root.source
        );
    }
    for m in &mounts {
        if let Some(dev) = mount_device(m)
            && let Some((_, _, name)) = family.iter().find(|(a, b, _)| (*a, *b) == dev)
        {
            bail!(
                "refusing --device {shown}: /dev/{name} is mounted at {} (unmount it first)",
                m.mount_point.display()
            );
        }
    }
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    for (_, _, name) in &family {
        if swaps
            .lines()
            .skip(1)
            .any(|l| l.split_whitespace().next() == Some(&format!("/dev/{name}")))
        {
            bail!("refusing --device {shown}: /dev/{name} is in use as swap");
        }
        let holders = std::fs::read_dir(format!("/sys/class/block/{name}/holders"))
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| name_of(&e.path()))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        if !holders.is_empty() {
            bail!(
                "refusing --device {shown}: /dev/{name} is in use by {} (device-mapper, md or similar)",
                holders.join(", ")
            );
        }
    }

    let out = Command::new("blkid")
        .args(["-p", "-o", "export"])
        .arg(path)
        .output()
        .with_context(|| format!("refusing --device {shown}: cannot run blkid to look for an existing filesystem (install util-linux)"))?;
    // blkid exits 2 when it finds nothing.
    if out.status.code() == Some(2) {
        return Ok(());
    }
    if !out.status.success() {
        bail!(
            "refusing --device {shown}: blkid could not read it: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let probe = parse_blkid(&String::from_utf8_lossy(&out.stdout));
    let ours = probe.label.as_deref() == Some(LABEL) && probe.pt_type.is_none();
    if ours || force {
        return Ok(());
    }
    let what = match (&probe.fs_type, &probe.pt_type) {
        (_, Some(pt)) => format!("a {pt} partition table"),
        (Some(t), None) => match &probe.label {
            Some(l) => format!("a filesystem of type {t} labelled \"{l}\""),
            None => format!("a filesystem of type {t}"),
        },
        (None, None) => "data blkid recognises".to_string(),
    };
    bail!(
        "refusing --device {shown}: it holds {what} that sigbench did not write; pass --force to overwrite it"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_blkid_export() {
        let p =
            parse_blkid("DEVNAME=/dev/loop3\nLABEL=data\nUUID=1234\nBLOCK_SIZE=4096\nTYPE=ext4\n");
        assert_eq!(p.fs_type.as_deref(), Some("ext4"));
        assert_eq!(p.label.as_deref(), Some("data"));
        assert_eq!(p.pt_type, None);
        let p = parse_blkid("DEVNAME=/dev/sdb\nPTUUID=ab\nPTTYPE=gpt\n");
        assert_eq!(p.pt_type.as_deref(), Some("gpt"));
    }

    #[test]
    fn device_spec_words() {
        assert_eq!(DeviceSpec::parse("zram"), DeviceSpec::Zram);
        assert_eq!(DeviceSpec::parse("ram"), DeviceSpec::Brd);
        assert_eq!(
            DeviceSpec::parse("/dev/sdz"),
            DeviceSpec::Path("/dev/sdz".into())
        );
    }

    #[test]
    fn refuses_what_is_not_a_block_device() {
        let e = check_scratch(Path::new("/dev/null"), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a block device"), "{e}");
        let e = check_scratch(Path::new("/nonexistent/sdq"), false)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("refusing --device /nonexistent/sdq"), "{e}");
    }
}
