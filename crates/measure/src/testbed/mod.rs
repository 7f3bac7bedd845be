//! The testbed: the filesystem under test and everything it stands on — a device (loop
//! ramdisk, zram, brd or a named scratch device), a filesystem made fresh for every case,
//! and test directories with properties (btrfs compression, chattr flags, xattrs).
//!
//! Everything is held by guards and torn down on every exit path; see `workspace` for how
//! the leftovers of a killed run are found. Validation (`TestbedSpec::validate`,
//! `DirSpec::parse`) happens before anything is formatted.

pub mod confine;
pub mod device;
pub mod loopdev;
pub mod mount;
pub mod options;
pub mod workspace;
pub mod zram;

use anyhow::{Context, Result, bail};
use device::{Device, DeviceSpec};
use mount::Mount;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use workspace::Workspace;

/// Filesystems sigbench can make (`--fs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fs {
    Btrfs,
    Ext4,
    Xfs,
    /// A fresh tmpfs per case: no device, no mkfs.
    Tmpfs,
}

impl model::choice::Choice for Fs {
    const ALL: &'static [Fs] = &Fs::ALL;
    fn arg(self) -> &'static str {
        self.name()
    }
    fn about(self) -> &'static str {
        match self {
            Fs::Tmpfs => "A fresh tmpfs per case: no device, no mkfs",
            _ => "",
        }
    }
}

/// chattr letters, their FS_*_FL bits (linux/fs.h), and which filesystems accept them.
const CHATTR: &[(char, u32, &str, &[Fs])] = &[
    (
        'A',
        0x0000_0080,
        "noatime",
        &[Fs::Btrfs, Fs::Ext4, Fs::Xfs, Fs::Tmpfs],
    ),
    ('S', 0x0000_0008, "sync", &[Fs::Btrfs, Fs::Ext4, Fs::Xfs]),
    ('D', 0x0001_0000, "dirsync", &[Fs::Btrfs, Fs::Ext4, Fs::Xfs]),
    (
        'd',
        0x0000_0040,
        "nodump",
        &[Fs::Btrfs, Fs::Ext4, Fs::Xfs, Fs::Tmpfs],
    ),
    ('c', 0x0000_0004, "compress", &[Fs::Btrfs]),
    ('C', 0x0080_0000, "nocow", &[Fs::Btrfs]),
    ('m', 0x0000_0400, "nocompress", &[Fs::Btrfs]),
    ('j', 0x0000_4000, "data journalling", &[Fs::Ext4]),
    ('T', 0x0002_0000, "topdir", &[Fs::Ext4]),
    ('P', 0x2000_0000, "project inherit", &[Fs::Ext4, Fs::Xfs]),
];

impl Fs {
    pub fn parse(s: &str) -> Result<Fs> {
        match s {
            "btrfs" => Ok(Fs::Btrfs),
            "ext4" => Ok(Fs::Ext4),
            "xfs" => Ok(Fs::Xfs),
            "tmpfs" => Ok(Fs::Tmpfs),
            other => bail!("unknown filesystem `{other}` (btrfs, ext4, xfs or tmpfs)"),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Fs::Btrfs => "btrfs",
            Fs::Ext4 => "ext4",
            Fs::Xfs => "xfs",
            Fs::Tmpfs => "tmpfs",
        }
    }

    /// Every filesystem, for `doctor`.
    pub const ALL: [Fs; 4] = [Fs::Btrfs, Fs::Ext4, Fs::Xfs, Fs::Tmpfs];

    /// The mkfs program; `None` for filesystems made by mounting (tmpfs).
    pub fn mkfs_tool(self) -> Option<&'static str> {
        match self {
            Fs::Btrfs => Some("mkfs.btrfs"),
            Fs::Ext4 => Some("mkfs.ext4"),
            Fs::Xfs => Some("mkfs.xfs"),
            Fs::Tmpfs => None,
        }
    }

    /// The Debian package with the mkfs program.
    pub fn mkfs_package(self) -> &'static str {
        match self {
            Fs::Btrfs => "btrfs-progs",
            Fs::Ext4 => "e2fsprogs",
            Fs::Xfs => "xfsprogs",
            Fs::Tmpfs => "",
        }
    }

    /// Arguments before the user's: overwrite (the device was checked), quiet, our label.
    /// ext4's inode tables are written by mkfs (`lazy_itable_init=0`): on a block device
    /// mke2fs leaves them to the kernel's ext4lazyinit thread, which zeroes them in the
    /// background after the first mount — during the measured windows (churn N = 2,000 on a
    /// loop device: 89–132 ms over six repetitions, the first ones slow). A user's own `-E`
    /// replaces this one.
    fn mkfs_args(self) -> &'static [&'static str] {
        match self {
            Fs::Btrfs => &["-f", "-q", "-L", device::LABEL],
            Fs::Ext4 => &["-F", "-q", "-E", "lazy_itable_init=0", "-L", device::LABEL],
            Fs::Xfs => &["-f", "-q", "-L", device::LABEL],
            Fs::Tmpfs => &[],
        }
    }

    /// The smallest device mkfs accepts (xfsprogs ≥ 5.19 wants 300 MB).
    pub fn min_size(self) -> u64 {
        match self {
            Fs::Btrfs => 256 << 20,
            Fs::Ext4 => 64 << 20,
            Fs::Xfs => 512 << 20,
            Fs::Tmpfs => 0,
        }
    }

    pub fn has_compression(self) -> bool {
        self == Fs::Btrfs
    }

    /// Probes on by default: inode evictions, the s3e counter, from each filesystem's own
    /// tracepoint.
    pub fn default_probes(self) -> &'static [&'static str] {
        match self {
            Fs::Btrfs => &["inode_evictions=tracepoint:btrfs:btrfs_inode_evict"],
            Fs::Ext4 => &["inode_evictions=tracepoint:ext4:ext4_evict_inode"],
            Fs::Xfs => &["inode_evictions=tracepoint:xfs:xfs_destroy_inode"],
            // No tmpfs eviction tracepoint: nothing rather than a counter that means
            // something else.
            Fs::Tmpfs => &[],
        }
    }

    /// Probes on by default where clients contend (several, or a loadfile), besides lock
    /// contention: btrfs's metadata space flushes. Each preemptive reclaim writes back
    /// delayed-allocation data that dbench would otherwise have deleted before writeback;
    /// in a 2-second window of 4 clients a repetition holds 8 or 10 of them, and that
    /// decides its throughput's mode (±3 %: docs/statistics.md).
    pub fn contention_probes(self) -> &'static [&'static str] {
        match self {
            Fs::Btrfs => &["space_flushes=?tracepoint:btrfs:btrfs_flush_space"],
            Fs::Ext4 | Fs::Xfs | Fs::Tmpfs => &[],
        }
    }
}

/// A property of a test directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prop {
    /// The `btrfs.compression` property (what `btrfs property set DIR compression V` sets).
    Compression(String),
    /// chattr flags to set, as FS_*_FL bits, with the letters for display.
    Chattr {
        letters: String,
        flags: u32,
    },
    Xattr {
        name: String,
        value: String,
    },
}

/// A test directory: `NAME[:key=value,...]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirSpec {
    pub name: String,
    pub props: Vec<Prop>,
    /// The text it was parsed from, for metadata.
    pub text: String,
}

impl DirSpec {
    /// Parse and validate against `fs`. Unknown keys and values the filesystem does not
    /// support are errors.
    pub fn parse(text: &str, fs: Fs) -> Result<DirSpec> {
        let (name, rest) = match text.split_once(':') {
            Some((n, r)) => (n, Some(r)),
            None => (text, None),
        };
        if name.is_empty() || name == "." || name == ".." || name.contains('/') {
            bail!("bad --dir `{text}`: the name must be one path component (NAME[:key=value,...])");
        }
        let mut props = Vec::new();
        for kv in rest.unwrap_or("").split(',').filter(|s| !s.is_empty()) {
            let (k, v) = match kv.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (kv, None),
            };
            let bad = |why: String| anyhow::anyhow!("bad --dir `{text}`: {why}");
            match (k, v) {
                ("compression", Some(v)) => {
                    validate_compression(v).map_err(bad)?;
                    let none = v == "none" || v == "no";
                    if fs.has_compression() {
                        props.push(Prop::Compression(v.to_string()));
                    } else if !none {
                        return Err(bad(format!(
                            "{} has no compression; compression={v} needs --fs btrfs",
                            fs.name()
                        )));
                    }
                    // compression=none on a filesystem without compression holds as is.
                }
                ("nocow", None) => props.push(chattr_prop("C", fs).map_err(bad)?),
                ("chattr", Some(v)) => {
                    props.push(chattr_prop(v.trim_start_matches('+'), fs).map_err(bad)?)
                }
                (k, Some(v)) if k.starts_with("user.") || k.starts_with("trusted.") => {
                    // What setxattr(2) refuses, refused before any mkfs: an empty name
                    // after the namespace, a name over XATTR_NAME_MAX (255), a value over
                    // XATTR_SIZE_MAX (64 KiB), a NUL.
                    let name = k.split_once('.').map_or("", |x| x.1);
                    if name.is_empty() || k.len() > 255 || v.len() > 65536 || kv.contains('\0') {
                        return Err(bad(format!(
                            "`{kv}`: an xattr needs a name after `{}` (at most 255 bytes in all) and a value of at most 64 KiB",
                            k.split_once('.').map_or(k, |x| x.0).to_string() + "."
                        )));
                    }
                    props.push(Prop::Xattr {
                        name: k.to_string(),
                        value: v.to_string(),
                    })
                }
                (k, _) => {
                    return Err(bad(format!(
                        "unknown property `{kv}` (known: compression=zstd[:LEVEL]|lzo|zlib[:LEVEL]|none, nocow, chattr=FLAGS, user.NAME=VALUE, trusted.NAME=VALUE){}",
                        if ["compression", "chattr"].contains(&k) {
                            "; it needs a value"
                        } else {
                            ""
                        }
                    )));
                }
            }
        }
        Ok(DirSpec {
            name: name.to_string(),
            props,
            text: text.to_string(),
        })
    }

    /// Create the directory under `root` and give it its properties.
    fn create(&self, root: &Path) -> Result<PathBuf> {
        let dir = root.join(&self.name);
        std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for p in &self.props {
            apply(&dir, p)
                .with_context(|| format!("cannot set {} on {}", p.describe(), dir.display()))?;
        }
        Ok(dir)
    }
}

fn validate_compression(v: &str) -> Result<(), String> {
    let (alg, level) = match v.split_once(':') {
        Some((a, l)) => (a, Some(l)),
        None => (v, None),
    };
    let max = match alg {
        "zstd" => 15,
        "zlib" => 9,
        "lzo" | "none" | "no" => 0,
        _ => {
            return Err(format!(
                "unknown compression `{v}` (zstd[:1-15], lzo, zlib[:1-9], none)"
            ));
        }
    };
    if let Some(l) = level {
        match l.parse::<u32>() {
            Ok(n) if max > 0 && (1..=max).contains(&n) => {}
            _ if max == 0 => return Err(format!("compression `{alg}` takes no level")),
            _ => {
                return Err(format!(
                    "compression level `{l}` for {alg} must be 1..{max}"
                ));
            }
        }
    }
    Ok(())
}

fn chattr_prop(letters: &str, fs: Fs) -> Result<Prop, String> {
    let mut flags = 0;
    for c in letters.chars() {
        let (_, bit, what, on) = CHATTR.iter().find(|(l, ..)| *l == c).ok_or_else(|| {
            let known: String = CHATTR.iter().map(|(l, ..)| *l).collect();
            format!("unknown chattr flag `{c}` (known: {known})")
        })?;
        if !on.contains(&fs) {
            return Err(format!(
                "{} does not support chattr +{c} ({what})",
                fs.name()
            ));
        }
        flags |= bit;
    }
    if flags == 0 {
        return Err("chattr needs at least one flag".into());
    }
    Ok(Prop::Chattr {
        letters: letters.to_string(),
        flags,
    })
}

fn cpath(p: &Path) -> Result<CString> {
    Ok(CString::new(p.as_os_str().as_bytes())?)
}

fn setxattr(path: &Path, name: &str, value: &str) -> Result<()> {
    let p = cpath(path)?;
    let n = CString::new(name)?;
    if let Err(e) = crate::sys::os::setxattr(&p, &n, value.as_bytes()) {
        bail!("setxattr {name}={value}: {e}");
    }
    Ok(())
}

impl Prop {
    /// As the user wrote it in `--dir`: `compression=zstd:1`, `user.k=v`, `chattr=C`.
    pub fn describe(&self) -> String {
        match self {
            Prop::Compression(v) => format!("compression={v}"),
            Prop::Xattr { name, value } => format!("{name}={value}"),
            Prop::Chattr { letters, .. } => format!("chattr={letters}"),
        }
    }
}

fn apply(dir: &Path, p: &Prop) -> Result<()> {
    match p {
        // The kernel accepts the property as an xattr: no need for btrfs-progs.
        Prop::Compression(v) => setxattr(dir, "btrfs.compression", v),
        Prop::Xattr { name, value } => setxattr(dir, name, value),
        Prop::Chattr { letters, flags } => {
            let f = std::fs::File::open(dir)?;
            use crate::sys::os::{fs_get_flags, fs_set_flags};
            use std::os::fd::AsFd;
            let cur =
                fs_get_flags(f.as_fd()).map_err(|e| anyhow::anyhow!("FS_IOC_GETFLAGS: {e}"))?;
            let new = cur | *flags as libc::c_long;
            fs_set_flags(f.as_fd(), new).map_err(|e| anyhow::anyhow!("chattr +{letters}: {e}"))?;
            Ok(())
        }
    }
}

/// What the testbed is made of, as the user asked for it.
#[derive(Clone, Debug)]
pub struct TestbedSpec {
    pub fs: Fs,
    pub device: DeviceSpec,
    pub mkfs_opts: Vec<String>,
    pub mount_opts: String,
    pub force: bool,
}

/// Find a program in PATH or the sbin directories (sudo and cron may drop them from PATH).
pub fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    path.split(':')
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"])
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// `name` on the PATH (or in the sbin directories), or an error saying which Debian
/// `package` brings it.
pub fn require_tool(name: &str, package: &str) -> Result<PathBuf> {
    find_tool(name)
        .with_context(|| format!("{name} not found: install {package} (sudo make deps does)"))
}

/// The version line of a mkfs tool, for metadata.
pub fn tool_version(fs: Fs) -> Option<String> {
    let tool = find_tool(fs.mkfs_tool()?)?;
    let flag = if fs == Fs::Btrfs { "--version" } else { "-V" };
    let out = Command::new(tool).arg(flag).output().ok()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines().next().map(|l| l.trim().to_string())
}

impl TestbedSpec {
    /// Checks that need no device: the mkfs tool exists; a scratch device is a scratch
    /// device. Runs before anything is created or formatted.
    pub fn validate(&self) -> Result<()> {
        // Checked again here, whoever built the spec.
        options::mkfs_options(self.fs, &self.mkfs_opts.join(" "))?;
        options::mount_options(&self.mount_opts)?;
        match self.fs.mkfs_tool() {
            Some(tool) => {
                require_tool(tool, self.fs.mkfs_package())?;
            }
            None => {
                if self.device != DeviceSpec::LoopRam {
                    bail!("{} has no device: drop --device", self.fs.name());
                }
                if !self.mkfs_opts.is_empty() {
                    bail!(
                        "{} is not made with mkfs: drop --mkfs-opts (use --mount-opts)",
                        self.fs.name()
                    );
                }
            }
        }
        if let DeviceSpec::Path(p) = &self.device {
            device::check_scratch(p, self.force)?;
        }
        Ok(())
    }
}

/// A live testbed: the workspace and the device, for the whole run.
pub struct Testbed {
    pub spec: TestbedSpec,
    // Field order is drop order: the device goes before the workspace directory.
    /// None for filesystems without a device (tmpfs).
    pub device: Option<Device>,
    place: Place,
}

/// Where each case's filesystem lives.
enum Place {
    /// Made fresh and mounted at `mnt` per case, in the run's workspace (held for its
    /// Drop: the run's directory goes last).
    Mounted { mnt: PathBuf, _ws: Workspace },
    /// The unit tests' seam: each case gets a fresh empty directory under a temporary
    /// directory — no device, no mount, no root, and no confinement (the workload runs
    /// with that directory as its working directory only). Never built outside tests.
    #[cfg(any(test, feature = "fixtures"))]
    Directory(PathBuf),
}

/// The device a filesystem of `spec` is made on, sized for `space` bytes of workload.
fn acquire_device(spec: &TestbedSpec, space: u64, ws: &Workspace) -> Result<Device> {
    let size = (space.saturating_mul(2) + (64 << 20))
        .max(spec.fs.min_size())
        .div_ceil(1 << 20)
        << 20;
    let device = Device::acquire(&spec.device, size, ws)?;
    if device.size < spec.fs.min_size() {
        bail!(
            "{} is {} MiB; {} needs at least {} MiB",
            device.path.display(),
            device.size >> 20,
            spec.fs.name(),
            spec.fs.min_size() >> 20
        );
    }
    if device.size < space {
        model::diag::warn(format!(
            "{} ({} MiB) may be too small for this workload (~{} MiB)",
            device.path.display(),
            device.size >> 20,
            space >> 20
        ));
    }
    Ok(device)
}

/// Whether `clients` more threads can start here: the system's thread limit
/// (/proc/sys/kernel/threads-max against the threads running, from /proc/loadavg) and, for
/// a user other than root, RLIMIT_NPROC. Checked before anything is created.
pub fn check_threads(clients: u32) -> anyhow::Result<()> {
    let max = std::fs::read_to_string("/proc/sys/kernel/threads-max")
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok());
    let running = std::fs::read_to_string("/proc/loadavg").ok().and_then(|t| {
        t.split_whitespace()
            .nth(3)?
            .split_once('/')?
            .1
            .parse::<u64>()
            .ok()
    });
    if let (Some(max), Some(running)) = (max, running)
        && running + clients as u64 + 16 > max
    {
        anyhow::bail!(
            "--clients {clients}: this machine allows {max} threads and {running} run already (/proc/sys/kernel/threads-max): run fewer clients"
        );
    }
    if crate::sys::os::geteuid() != 0
        && let Some(limit) = crate::sys::os::nproc_limit()
        && (clients as u64) + 16 > limit
    {
        anyhow::bail!(
            "--clients {clients}: your limit on processes and threads is {limit} (ulimit -u): run fewer clients or raise it"
        );
    }
    Ok(())
}

/// What a plan holds in memory while it runs, beside the filesystem: the clients'
/// buffers (a loadfile's largest ReadX per client, for instance).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Buffers(pub u64);

/// A RAM-backed filesystem (the default loop ramdisk, zram, brd, tmpfs) must fit in
/// memory together with the clients' `buffers`; on a disk the buffers alone must:
/// checked before anything is created.
pub fn check_memory(spec: &TestbedSpec, space: u64, buffers: Buffers) -> Result<(), String> {
    let ram_backed = spec.fs.mkfs_tool().is_none() || !matches!(spec.device, DeviceSpec::Path(_));
    let on_fs = if ram_backed { space } else { 0 };
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    fits_in_memory(on_fs, buffers, &meminfo)
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// (available, kept for the system) in bytes from /proc/meminfo's text: MemAvailable, and
/// max(1 GiB, 10 % of MemTotal).
fn memory_budget(meminfo: &str) -> Option<(u64, u64)> {
    let field = |name: &str| {
        meminfo.lines().find_map(|l| {
            let rest = l.strip_prefix(name)?.strip_prefix(':')?;
            rest.split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
                .map(|kib| kib << 10)
        })
    };
    let (avail, total) = (field("MemAvailable")?, field("MemTotal")?);
    Some((avail, (total / 10).max(1 << 30)))
}

/// The memory that can be spared now (MiB): what is available, less what is kept for the
/// system; very large when it cannot be told.
pub fn spare_memory_mib() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    memory_budget(&meminfo).map_or(u64::MAX >> 20, |(avail, kept)| {
        avail.saturating_sub(kept) >> 20
    })
}

/// `Err` when `space` bytes on a RAM-backed filesystem and the clients' `buffers` would
/// not fit in the memory available (MemAvailable), keeping max(1 GiB, 10 % of MemTotal)
/// for everything else.
pub fn fits_in_memory(space: u64, buffers: Buffers, meminfo: &str) -> Result<(), String> {
    let Some((avail, headroom)) = memory_budget(meminfo) else {
        return Ok(()); // cannot tell: let the kernel say ENOSPC
    };
    let usable = avail.saturating_sub(headroom);
    let need = space.saturating_add(buffers.0);
    if need <= usable {
        return Ok(());
    }
    let spare = format!(
        "only {} of memory can be spared ({} available, {} kept for the system)",
        gib(usable),
        gib(avail),
        gib(headroom)
    );
    Err(if buffers.0 > space {
        format!(
            "this plan needs about {} of memory, {} of it the clients' buffers (each client holds the loadfile's largest ReadX), but {spare}: run fewer clients or a loadfile with smaller reads",
            gib(need),
            gib(buffers.0)
        )
    } else {
        format!(
            "this plan needs about {} on a RAM-backed filesystem, but {spare}: use --device /dev/X (a scratch disk) or a smaller N",
            gib(need)
        )
    })
}

/// How often, and how far apart, mkfs is tried again on a device that is busy.
const MKFS_BUSY_RETRIES: usize = 10;
const MKFS_BUSY_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// A freshly made and mounted filesystem with the case's test directory; unmounted when
/// dropped.
pub struct CaseFs {
    /// The mount point of the case's filesystem (the workload's root).
    pub root: PathBuf,
    /// The test directory inside it.
    pub dir: PathBuf,
    /// Unmounts the case's filesystem when dropped (None: a test's directory).
    #[cfg_attr(not(test), allow(dead_code))]
    mount: Option<Mount>,
}

impl CaseFs {
    /// Run the workload confined to this filesystem, in the test directory
    /// ([`confine::run_confined`]).
    pub fn run_workload<R: Send>(&self, work: impl FnOnce() -> R + Send) -> Result<R> {
        #[cfg(any(test, feature = "fixtures"))]
        if self.mount.is_none() {
            return confine::run_in_dir(&self.dir, work);
        }
        confine::run_confined(&self.root, &self.dir, work)
    }
}

impl Testbed {
    /// Set up the workspace and the device, sized for `space` bytes of workload.
    pub fn create(spec: TestbedSpec, space: u64) -> Result<Testbed> {
        let ws = Workspace::create()?;
        let device = match spec.fs.mkfs_tool() {
            Some(_) => Some(acquire_device(&spec, space, &ws)?),
            None => None,
        };
        let mnt = ws.subdir("mnt")?;
        Ok(Testbed {
            spec,
            device,
            place: Place::Mounted { mnt, _ws: ws },
        })
    }

    /// The unit tests' testbed: cases in fresh directories under `dir` (see [`Place`]).
    #[cfg(any(test, feature = "fixtures"))]
    pub fn directory(spec: TestbedSpec, dir: &Path) -> Result<Testbed> {
        std::fs::create_dir_all(dir)?;
        Ok(Testbed {
            spec,
            device: None,
            place: Place::Directory(dir.to_path_buf()),
        })
    }

    /// mkfs, mount, and create `dir` with its properties.
    pub fn fresh(&self, dir: &DirSpec) -> Result<CaseFs> {
        let mnt = match &self.place {
            Place::Mounted { mnt, .. } => mnt,
            #[cfg(any(test, feature = "fixtures"))]
            Place::Directory(base) => {
                let root = base.join(format!("case-{}", crate::host::new_run_id()));
                std::fs::create_dir(&root)?;
                let dir = dir.create(&root)?;
                return Ok(CaseFs {
                    root,
                    dir,
                    mount: None,
                });
            }
        };
        let source = match &self.device {
            Some(d) => {
                self.mkfs(d)?;
                d.path.to_string_lossy().into_owned()
            }
            // A new tmpfs instance is a fresh filesystem; the source name marks it ours.
            None => "sigbench".to_string(),
        };
        let mount = Mount::new(&source, mnt, self.spec.fs.name(), &self.spec.mount_opts)?;
        let dir = dir.create(mnt)?;
        Ok(CaseFs {
            root: mnt.clone(),
            dir,
            mount: Some(mount),
        })
    }

    /// The workspace mkfs runs in (nothing relative in its options resolves to anything).
    fn workspace(&self) -> Option<&Path> {
        match &self.place {
            Place::Mounted { _ws, .. } => Some(&_ws.dir),
            #[cfg(any(test, feature = "fixtures"))]
            Place::Directory(_) => None,
        }
    }

    fn mkfs(&self, device: &Device) -> Result<()> {
        let fs = self.spec.fs;
        let name = fs
            .mkfs_tool()
            .context("this filesystem is not made with mkfs")?;
        let tool = find_tool(name).with_context(|| format!("{name} not found"))?;
        let mut cmd = Command::new(&tool);
        cmd.args(fs.mkfs_args())
            .args(&self.spec.mkfs_opts)
            // The device sigbench checked, last, after the end of options.
            .arg("--")
            .arg(&device.path)
            // Nothing relative in the options can resolve to anything here.
            .current_dir(
                self.workspace()
                    .context("a directory testbed has no mkfs")?,
            );
        // Its own process group, stopped at once on SIGINT/SIGTERM (crate::child). A device
        // still held for a moment after the last case's unmount (udev probing it, a mount
        // namespace made meanwhile letting go of its copy) is tried again, briefly.
        let mut out = crate::child::output(&mut cmd, &tool.display().to_string())?;
        for _ in 0..MKFS_BUSY_RETRIES {
            let busy = String::from_utf8_lossy(&out.stderr).contains("Device or resource busy");
            if out.status.success() || !busy {
                break;
            }
            std::thread::sleep(MKFS_BUSY_WAIT);
            crate::interrupt::check()?;
            out = crate::child::output(&mut cmd, &tool.display().to_string())?;
        }
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let last = err
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no message");
            bail!(
                "{name} {} {} failed: {}",
                self.spec.mkfs_opts.join(" "),
                device.path.display(),
                last.trim()
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ram_backed_plans_must_fit_in_memory() {
        let m = "MemTotal:       24000000 kB\nMemFree:  1 kB\nMemAvailable:   20000000 kB\n";
        let none = Buffers(0);
        assert!(fits_in_memory(1 << 30, none, m).is_ok());
        let e = fits_in_memory(61 << 30, none, m).unwrap_err();
        assert!(e.contains("61.0 GiB") && e.contains("--device"), "{e}");
        assert!(fits_in_memory(u64::MAX, none, m).is_err());
        assert!(
            fits_in_memory(u64::MAX, none, "").is_ok(),
            "unknown: the kernel decides"
        );
        // Issue 45, item 10: 1,024 clients of 64 MiB reads do not fit in 20 GB, on a
        // disk (no filesystem in memory) as on a ramdisk.
        let e = fits_in_memory(0, Buffers(1024 * (64 << 20)), m).unwrap_err();
        assert!(
            e.contains("the clients' buffers") && e.contains("fewer clients"),
            "{e}"
        );
        assert!(fits_in_memory(10 << 30, Buffers(9 << 30), m).is_err());
    }

    #[test]
    fn parses_dir_specs() {
        let d = DirSpec::parse("zstd:compression=zstd:1", Fs::Btrfs).unwrap();
        assert_eq!(d.name, "zstd");
        assert_eq!(d.props, [Prop::Compression("zstd:1".into())]);
        let d = DirSpec::parse("a:nocow,chattr=+AS,user.x=1", Fs::Btrfs).unwrap();
        assert_eq!(d.props.len(), 3);
        assert_eq!(
            d.props[0],
            Prop::Chattr {
                letters: "C".into(),
                flags: 0x80_0000
            }
        );
        assert_eq!(
            d.props[1],
            Prop::Chattr {
                letters: "AS".into(),
                flags: 0x88
            }
        );
        let d = DirSpec::parse("plain", Fs::Xfs).unwrap();
        assert!(d.props.is_empty());
    }

    /// Issue 39, 21: `--dir 'x:user.=bar'` failed only after mkfs.
    #[test]
    fn rejects_an_xattr_setxattr_would_refuse() {
        for bad in [
            "x:user.=bar",
            "x:trusted.=v",
            &format!("x:user.{}=v", "n".repeat(260)),
        ] {
            let e = DirSpec::parse(bad, Fs::Btrfs).unwrap_err().to_string();
            assert!(e.contains("an xattr needs a name after"), "{bad}: {e}");
        }
        assert!(DirSpec::parse("x:user.k=v", Fs::Btrfs).is_ok());
    }

    #[test]
    fn rejects_what_the_fs_cannot_do() {
        let e = DirSpec::parse("a:compression=zstd", Fs::Ext4)
            .unwrap_err()
            .to_string();
        assert!(e.contains("ext4 has no compression"), "{e}");
        assert!(
            DirSpec::parse("a:compression=none", Fs::Ext4)
                .unwrap()
                .props
                .is_empty()
        );
        let e = DirSpec::parse("a:nocow", Fs::Xfs).unwrap_err().to_string();
        assert!(e.contains("xfs does not support chattr +C"), "{e}");
        let e = DirSpec::parse("a:colour=blue", Fs::Btrfs)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown property `colour=blue`"), "{e}");
        assert!(DirSpec::parse("a:compression=zstd:99", Fs::Btrfs).is_err());
        assert!(DirSpec::parse("a:compression=lzo:3", Fs::Btrfs).is_err());
        assert!(DirSpec::parse("a:compression=brotli", Fs::Btrfs).is_err());
        assert!(DirSpec::parse("../x", Fs::Btrfs).is_err());
        assert!(DirSpec::parse("a:chattr=Z", Fs::Btrfs).is_err());
        assert!(
            DirSpec::parse("a:compression", Fs::Btrfs)
                .unwrap_err()
                .to_string()
                .contains("needs a value")
        );
    }
}
