//! The guest's initramfs, built once per kernel and filesystem and cached:
//!
//! - `/init`: this very sigbench binary (statically linked), which runs as PID 1;
//! - the mkfs tool of the filesystem under test with the shared libraries `ldd` names —
//!   each case gets a fresh mkfs inside the guest, on the guest's own ramdisk, exactly as
//!   on the host (images formatted on the host and attached as virtio disks would put
//!   emulated disk I/O in the measured path and need one image per case);
//! - busybox, as `/sbin/modprobe` for the modules the kernel requests by itself (crypto
//!   algorithms) and as a shell for debugging;
//! - the modules the plan needs with their dependencies, resolved from that kernel's
//!   modules.dep/softdep/alias, decompressed, re-indexed with depmod, and their load order.
//!
//! The plan itself goes in a second, tiny archive appended per run (the kernel unpacks
//! concatenated archives), so the cached one never changes with the options.

use super::cpio::Cpio;
use super::kernel::{Config, Kernel, short_hash};
use crate::testbed::Fs;
use anyhow::{Context, Result, bail};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the guest reads its plan and the module load order.
pub const PLAN: &str = "/etc/sigbench/plan.json";
pub const MODULE_ORDER: &str = "/etc/sigbench/modules";
pub use super::boots::{LOADFILE, SIGNATURE};

/// Modules every guest needs: the loop driver (the ramdisk), the checksum algorithms
/// filesystems ask for by name. (The results come back over the second serial port, which
/// every kernel that has a serial console has.)
const BASE_MODULES: &[&str] = &[
    "loop",
    "crc32c_generic",
    "crc32c_intel",
    "libcrc32c",
    "crc32_generic",
    "brd",
    "zram",
];

fn fs_modules(fs: Fs) -> &'static [&'static str] {
    match fs {
        Fs::Btrfs => &[
            "btrfs",
            "xxhash_generic",
            "sha256_generic",
            "blake2b_generic",
            "zstd",
            "lzo",
        ],
        Fs::Ext4 => &["ext4"],
        Fs::Xfs => &["xfs"],
        Fs::Tmpfs => &[],
    }
}

fn norm(name: &str) -> String {
    name.replace('-', "_")
}

fn module_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    norm(file.split(".ko").next().unwrap_or(file))
}

/// A kernel's module index: name → (path relative to lib/modules/<release>, dependencies).
struct Index {
    modules: BTreeMap<String, (String, Vec<String>)>,
    builtin: BTreeSet<String>,
    /// Whether the kernel said which modules it has built in (modules.builtin).
    knows_builtins: bool,
    aliases: HashMap<String, Vec<String>>,
    softdeps: HashMap<String, Vec<String>>,
}

impl Index {
    fn load(dir: &Path) -> Result<Index> {
        let dep = std::fs::read_to_string(dir.join("modules.dep"))
            .with_context(|| format!("no modules.dep in {}", dir.display()))?;
        let mut modules = BTreeMap::new();
        for (n, line) in dep.lines().enumerate() {
            let Some((m, deps)) = line.split_once(':') else {
                continue;
            };
            // A package's own modules.dep is input like any other: it names files below
            // the modules directory, never elsewhere.
            if let Some(bad) = std::iter::once(m)
                .chain(deps.split_whitespace())
                .find(|p| p.starts_with('/') || p.split('/').any(|c| c == ".."))
            {
                bail!(
                    "{}:{}: {bad} is outside the modules directory",
                    dir.join("modules.dep").display(),
                    n + 1
                );
            }
            modules.insert(
                module_name(m),
                (
                    m.to_string(),
                    deps.split_whitespace().map(module_name).collect(),
                ),
            );
        }
        let builtins = std::fs::read_to_string(dir.join("modules.builtin"));
        let knows_builtins = builtins.is_ok();
        let builtin = builtins
            .unwrap_or_default()
            .lines()
            .map(module_name)
            .collect();
        let mut aliases: HashMap<String, Vec<String>> = HashMap::new();
        for l in std::fs::read_to_string(dir.join("modules.alias"))
            .unwrap_or_default()
            .lines()
        {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() == 3 && f[0] == "alias" && !f[1].contains(['*', '?', '[']) {
                aliases.entry(norm(f[1])).or_default().push(norm(f[2]));
            }
        }
        let mut softdeps: HashMap<String, Vec<String>> = HashMap::new();
        for l in std::fs::read_to_string(dir.join("modules.softdep"))
            .unwrap_or_default()
            .lines()
        {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() > 2 && f[0] == "softdep" {
                softdeps
                    .entry(norm(f[1]))
                    .or_default()
                    .extend(f[2..].iter().filter(|w| !w.ends_with(':')).map(|w| norm(w)));
            }
        }
        Ok(Index {
            modules,
            builtin,
            knows_builtins,
            aliases,
            softdeps,
        })
    }

    /// Names a wanted name stands for: a module, or the modules of an alias.
    fn resolve(&self, name: &str) -> Vec<String> {
        let n = norm(name);
        if self.modules.contains_key(&n) {
            return vec![n];
        }
        self.aliases.get(&n).cloned().unwrap_or_default()
    }

    /// `wanted` and everything it needs, dependencies first; built-ins and names this
    /// kernel does not have are skipped (the kernel has them built in, or never needs them).
    fn closure(&self, wanted: &[&str]) -> Vec<String> {
        // Depth first, dependencies before their module, on a stack of our own: a
        // package's modules.dep may chain modules any depth (50,000 overflowed the
        // thread's stack when this recursed).
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for w in wanted {
            for m in self.resolve(w) {
                if self.builtin.contains(&m) || !seen.insert(m.clone()) {
                    continue;
                }
                let mut stack = vec![(m.clone(), self.needs(&m), 0usize)];
                while let Some((name, needs, next)) = stack.last_mut() {
                    let Some(d) = needs.get(*next).cloned() else {
                        if self.modules.contains_key(name.as_str()) {
                            out.push(std::mem::take(name));
                        }
                        stack.pop();
                        continue;
                    };
                    *next += 1;
                    if seen.insert(d.clone()) {
                        let needs = self.needs(&d);
                        stack.push((d, needs, 0));
                    }
                }
            }
        }
        out
    }

    /// What module `m` needs loaded first: its dependencies, then its soft
    /// dependencies (none for a name this kernel does not have).
    fn needs(&self, m: &str) -> Vec<String> {
        let Some((_, deps)) = self.modules.get(m) else {
            return Vec::new();
        };
        let soft = self
            .softdeps
            .get(m)
            .into_iter()
            .flatten()
            .flat_map(|s| self.resolve(s));
        deps.iter().cloned().chain(soft).collect()
    }
}

/// The filesystem's own module and the config option that builds it (tmpfs is part of
/// every kernel).
fn fs_module(fs: Fs) -> Option<(&'static str, &'static str)> {
    match fs {
        Fs::Btrfs => Some(("btrfs", "BTRFS_FS")),
        Fs::Ext4 => Some(("ext4", "EXT4_FS")),
        Fs::Xfs => Some(("xfs", "XFS_FS")),
        Fs::Tmpfs => None,
    }
}

/// Whether `kernel` can mount `fs`, decided before it boots from what came with it: its
/// modules (modules.dep, modules.builtin) and its config. When neither can tell, the guest
/// says what is missing.
fn check_fs(kernel: &Kernel, ix: Option<&Index>, fs: Fs) -> Result<()> {
    let Some((module, option)) = fs_module(fs) else {
        return Ok(());
    };
    let config = kernel.config_option(option);
    let shown = |k: &Kernel| format!("--kernel {} ({})", k.name, k.release);
    // The guest starts mkfs as a child process, and Rust's standard library starts one
    // through socketpair(AF_UNIX) when posix_spawn cannot serve (a working directory, in
    // a static binary): without Unix sockets every mkfs fails with ENOSYS in the guest.
    if let Some(tool) = fs.mkfs_tool()
        && kernel.config_option("UNIX") == Config::Unset
    {
        bail!(
            "{}: built without Unix sockets (CONFIG_UNIX is not set): the guest starts {tool} through socketpair(AF_UNIX), so a {} plan cannot run on it; build it with CONFIG_NET=y and CONFIG_UNIX=y",
            shown(kernel),
            fs.name()
        );
    }
    match (ix, config) {
        (_, Config::BuiltIn) => Ok(()),
        (Some(ix), _) if ix.modules.contains_key(module) || ix.builtin.contains(module) => Ok(()),
        (Some(ix), Config::Unknown) if !ix.knows_builtins => Ok(()),
        (Some(_), Config::Module) => bail!(
            "{}: no {module} module among its modules (its config builds it as one): give the package that holds it too, e.g. Ubuntu's linux-modules, Fedora's kernel-modules-core",
            shown(kernel)
        ),
        (Some(_), _) => bail!(
            "{}: has no {module}, neither built in nor a module: a {} plan cannot run on it",
            shown(kernel),
            fs.name()
        ),
        (None, Config::Module) => bail!(
            "{}: {module} is a module and the kernel came without modules: give them too (its modules package, or IMAGE:MODULES_DIR)",
            shown(kernel)
        ),
        (None, Config::Unset) => bail!(
            "{}: built without {module} (CONFIG_{option} is not set): a {} plan cannot run on it",
            shown(kernel),
            fs.name()
        ),
        (None, _) => Ok(()),
    }
}

/// The shared libraries and loader a dynamic executable needs, from `ldd`.
fn shared_libraries(exe: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd")
        .arg(exe)
        .output()
        .context("cannot run ldd")?;
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("not a dynamic executable") || text.contains("statically linked") {
        return Ok(Vec::new());
    }
    let mut libs = Vec::new();
    for l in text.lines() {
        let path = match l.split_once("=>") {
            Some((_, rest)) => rest.split_whitespace().next(),
            None => l.split_whitespace().next(),
        };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            libs.push(PathBuf::from(p));
        }
    }
    Ok(libs)
}

/// The most one module may decompress to: the largest in Debian's 6.12 kernels is
/// under 20 MB; a 66 KB `btrfs.ko.zst` that unpacks to 2 GiB is a bomb.
pub const MAX_MODULE_BYTES: usize = 256 << 20;
/// The most a guest's modules may decompress to in all.
pub const MAX_MODULES_BYTES: usize = 1 << 30;

/// Every directory above `path`, outermost first.
fn parents(path: &str) -> Vec<String> {
    let mut v = Vec::new();
    let mut p = Path::new(path).parent();
    while let Some(d) = p {
        let s = d.to_string_lossy().into_owned();
        if s == "/" || s.is_empty() {
            break;
        }
        v.push(s);
        p = d.parent();
    }
    v.reverse();
    v
}

struct Builder {
    cpio: Cpio<std::io::BufWriter<std::fs::File>>,
    dirs: BTreeSet<String>,
}

impl Builder {
    /// busybox (a shell and modprobe for a look inside), the filesystem's mkfs and the
    /// libraries it and this binary need.
    fn tools(&mut self, fs: Fs, exe: &Path) -> Result<()> {
        if let Some(bb) = ["/bin/busybox", "/usr/bin/busybox"]
            .iter()
            .map(Path::new)
            .find(|p| p.is_file())
        {
            self.copy(bb, "/bin/busybox", 0o755)?;
            for applet in ["sh", "ls", "cat", "mount", "umount", "dmesg", "ps"] {
                self.symlink(&format!("/bin/{applet}"), "busybox")?;
            }
            for applet in ["modprobe", "insmod", "lsmod"] {
                self.symlink(&format!("/sbin/{applet}"), "/bin/busybox")?;
            }
        }

        if let Some(tool) = fs.mkfs_tool() {
            let host = crate::testbed::require_tool(tool, fs.mkfs_package())?;
            self.copy(&host, &format!("/sbin/{tool}"), 0o755)?;
            let mut libs: BTreeSet<PathBuf> = shared_libraries(&host)?.into_iter().collect();
            libs.extend(shared_libraries(exe)?);
            for lib in libs {
                self.copy(&lib, &lib.to_string_lossy(), 0o755)?;
            }
        }
        Ok(())
    }

    /// The modules `fs` needs of `kernel` and their dependencies, decompressed (within the
    /// limits) and indexed by depmod in `stage`; the order the guest loads them in.
    fn modules(
        &mut self,
        kernel: &Kernel,
        mdir: &Path,
        ix: &Index,
        fs: Fs,
        stage: &Path,
    ) -> Result<String> {
        let mut order = String::new();
        let real = mdir.canonicalize()?;
        let wanted: Vec<&str> = BASE_MODULES.iter().chain(fs_modules(fs)).copied().collect();
        let load = ix.closure(&wanted);
        let guest_dir = format!("/lib/modules/{}", kernel.release);
        // Stage decompressed copies, then let depmod index them for busybox modprobe.
        let _ = std::fs::remove_dir_all(stage);
        let sdir = stage.join("lib/modules").join(&kernel.release);
        let mut staged = 0usize;
        for m in &load {
            let (rel, _) = &ix.modules[m];
            let plain = rel
                .trim_end_matches(".xz")
                .trim_end_matches(".zst")
                .trim_end_matches(".gz")
                .to_string();
            // A module file that is a link must stay below the modules directory.
            let src = mdir.join(rel);
            if !src.canonicalize().is_ok_and(|c| c.starts_with(&real)) {
                bail!(
                    "{}: {rel} (from its modules.dep) is missing or leads outside {}",
                    kernel.name,
                    mdir.display()
                );
            }
            let data = crate::child::decompress(&src, MAX_MODULE_BYTES, "one module")?;
            staged += data.len();
            if staged > MAX_MODULES_BYTES {
                bail!(
                    "{}: its modules decompress to more than {} MiB in all, the limit",
                    kernel.name,
                    MAX_MODULES_BYTES >> 20
                );
            }
            let dst = sdir.join(&plain);
            std::fs::create_dir_all(dst.parent().unwrap_or(&sdir))?;
            std::fs::write(&dst, &data)?;
            order.push_str(&format!("{guest_dir}/{plain}\n"));
        }
        for f in [
            "modules.builtin",
            "modules.builtin.modinfo",
            "modules.order",
        ] {
            if mdir.join(f).exists() {
                std::fs::create_dir_all(&sdir)?;
                std::fs::copy(mdir.join(f), sdir.join(f))?;
            }
        }
        if sdir.exists() {
            super::kernel::depmod(stage, &kernel.release)?;
            for e in walk(&sdir)? {
                let rel = e
                    .strip_prefix(&sdir)
                    .unwrap_or(&e)
                    .to_string_lossy()
                    .into_owned();
                self.copy(&e, &format!("{guest_dir}/{rel}"), 0o644)?;
            }
        }
        let _ = std::fs::remove_dir_all(stage);
        Ok(order)
    }

    fn ensure_dirs(&mut self, path: &str) -> Result<()> {
        for d in parents(path) {
            if self.dirs.insert(d.clone()) {
                self.cpio.dir(&d)?;
            }
        }
        Ok(())
    }

    fn file(&mut self, path: &str, perm: u32, data: &[u8]) -> Result<()> {
        self.ensure_dirs(path)?;
        Ok(self.cpio.file(path, perm, data)?)
    }

    fn copy(&mut self, host: &Path, guest: &str, perm: u32) -> Result<()> {
        let data =
            std::fs::read(host).with_context(|| format!("cannot read {}", host.display()))?;
        self.file(guest, perm, &data)
    }

    fn symlink(&mut self, path: &str, target: &str) -> Result<()> {
        self.ensure_dirs(path)?;
        Ok(self.cpio.symlink(path, target)?)
    }
}

/// The cached initramfs for `kernel` running plans on `fs`; built when missing, after
/// `check_fs` (an image in the cache was built by this very binary, so it passed).
pub fn base(kernel: &Kernel, fs: Fs, cache: &Path) -> Result<PathBuf> {
    // This very binary, readable through /proc even when the file was replaced on disk
    // since it started (a rebuild or an upgrade during a long bisect).
    let named = std::env::current_exe().context("cannot find the sigbench binary")?;
    let exe = PathBuf::from(format!("/proc/{}/exe", std::process::id()));
    if !shared_libraries(&exe)?.is_empty() {
        bail!(
            "this sigbench binary is dynamically linked; `run --kernel` needs the static build (see .cargo/config.toml)"
        );
    }
    let key = short_hash(&format!("{}|{}|{}|v1", kernel.key, fs.name(), {
        // Not file_identity: the path may name a file that is gone (see above).
        use std::os::unix::fs::MetadataExt;
        let md = std::fs::metadata(&exe).context("cannot stat this sigbench binary")?;
        format!(
            "{}:{}:{}:{}",
            named.display(),
            md.size(),
            md.mtime(),
            md.ino()
        )
    }));
    let dir = cache.join("initramfs");
    std::fs::create_dir_all(&dir)?;
    // One image per kernel and filesystem: those an earlier sigbench binary built for them
    // are removed when this one is (a boot holds a link of its own, `vm::run`).
    let kin = format!("{}-{}-{}-", kernel.release, fs.name(), kernel.key);
    let path = dir.join(format!("{kin}{key}.cpio"));
    if path.exists() {
        return Ok(path);
    }
    let ix = kernel.modules.as_deref().map(Index::load).transpose()?;
    check_fs(kernel, ix.as_ref(), fs)?;
    let tmp = path.with_extension("tmp");
    // Removed on every way out but the rename: an error (a module too large), a panic,
    // SIGINT — a failed build left 17 MB behind each time.
    let partial = Partial(Some(tmp.clone()));
    let mut b = Builder {
        cpio: Cpio::new(std::io::BufWriter::new(std::fs::File::create(&tmp)?)),
        dirs: BTreeSet::new(),
    };
    for d in [
        "/bin",
        "/sbin",
        "/dev",
        "/proc",
        "/sys",
        "/run",
        "/tmp",
        "/mnt",
        "/etc/sigbench",
    ] {
        b.ensure_dirs(&format!("{d}/x"))?;
    }
    b.cpio.char_device("/dev/console", 0o600, 5, 1)?;
    b.cpio.char_device("/dev/null", 0o666, 1, 3)?;
    b.copy(&exe, "/init", 0o755)?;
    b.symlink("/bin/sigbench", "/init")?;

    b.tools(fs, &exe)?;
    let order = match (&kernel.modules, &ix) {
        (Some(mdir), Some(ix)) => {
            b.modules(kernel, mdir, ix, fs, &cache.join("stage").join(&key))?
        }
        // Everything must be built in; check_fs said what it could.
        _ => String::new(),
    };
    b.file(MODULE_ORDER, 0o644, order.as_bytes())?;
    let out = b.cpio.finish()?;
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    partial.keep();
    prune(&dir, &kin, &path);
    Ok(path)
}

/// A file being written, removed when dropped unless kept.
struct Partial(Option<PathBuf>);

impl Partial {
    fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Remove the images in `dir` named `{kin}…` (one kernel and filesystem, an earlier
/// binary) other than `keep`: without this the cache grows by an image per kernel at every
/// rebuild of sigbench (369 images, 35 GB, in this project's development cache).
/// Images named before the kernel's key was part of the name (`{release}-{fs}-{hash}.cpio`)
/// go too: one of them may have been another build of the same release, which is rebuilt
/// when it is booted again.
fn prune(dir: &Path, kin: &str, keep: &Path) {
    // `{release}-{fs}-` of `{release}-{fs}-{kernel key}-`.
    let legacy = kin
        .trim_end_matches('-')
        .rsplit_once('-')
        .map_or(kin, |(a, _)| a);
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let old = name
            .strip_prefix(legacy)
            .and_then(|r| r.strip_prefix('-'))
            .and_then(|r| r.strip_suffix(".cpio"))
            .is_some_and(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()));
        if (old || name.starts_with(kin) && name.ends_with(".cpio")) && e.path() != keep {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

fn walk(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            out.extend(walk(&p)?);
        } else {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// The per-run archive: the guest's work (`boots::GuestWork`, JSON), the signature file
/// and the loadfile it names.
pub fn plan_archive(guest: &super::boots::GuestPlan) -> Result<Vec<u8>> {
    let mut c = Cpio::new(Vec::new());
    c.dir("/etc")?;
    c.dir("/etc/sigbench")?;
    c.file(PLAN, 0o644, serde_json::to_string(&guest.work)?.as_bytes())?;
    if let Some(s) = &guest.signature {
        c.file(SIGNATURE, 0o644, s.as_bytes())?;
    }
    if let Some(l) = &guest.loadfile {
        let bytes = std::fs::read(l)
            .with_context(|| format!("cannot read the loadfile {}", l.display()))?;
        c.file(LOADFILE, 0o644, &bytes)?;
    }
    Ok(c.finish()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_closure_puts_dependencies_first_and_skips_builtins() {
        let dir = std::env::temp_dir().join(format!("sigbench-ix-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("modules.dep"),
            "kernel/fs/btrfs/btrfs.ko.xz: kernel/lib/libcrc32c.ko.xz kernel/lib/raid6/raid6_pq.ko.xz\n\
             kernel/lib/libcrc32c.ko.xz:\nkernel/lib/raid6/raid6_pq.ko.xz:\n\
             kernel/crypto/crc32c_generic.ko.xz:\nkernel/drivers/block/loop.ko.xz:\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("modules.builtin"),
            "kernel/drivers/virtio/virtio_pci.ko\n",
        )
        .unwrap();
        std::fs::write(dir.join("modules.softdep"), "softdep btrfs pre: crc32c\n").unwrap();
        std::fs::write(
            dir.join("modules.alias"),
            "alias crc32c crc32c_generic\nalias crypto-crc32c crc32c_generic\n",
        )
        .unwrap();
        let ix = Index::load(&dir).unwrap();
        let c = ix.closure(&["virtio_pci", "loop", "btrfs", "no_such_module"]);
        assert_eq!(
            c,
            ["loop", "libcrc32c", "raid6_pq", "crc32c_generic", "btrfs"]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 39, 7: decompression stops at the cap (a 66 KB module unpacked to 2 GiB in
    /// memory, then into the initramfs), and says the limit.
    #[test]
    fn decompressing_stops_at_the_cap() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("sigbench-bomb-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let gz = dir.join("btrfs.ko.gz");
        let mut c = std::process::Command::new("gzip")
            .arg("-c")
            .stdin(std::process::Stdio::piped())
            .stdout(std::fs::File::create(&gz).unwrap())
            .spawn()
            .unwrap();
        c.stdin
            .take()
            .unwrap()
            .write_all(&vec![0u8; 8 << 20])
            .unwrap();
        assert!(c.wait().unwrap().success());
        assert_eq!(
            crate::child::decompress(&gz, 8 << 20, "one module")
                .unwrap()
                .len(),
            8 << 20
        );
        let e = crate::child::decompress(&gz, 1 << 20, "one module")
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("btrfs.ko.gz decompresses to more than 1 MiB, the limit for one module"),
            "{e}"
        );
        let plain = dir.join("plain.ko");
        std::fs::write(&plain, vec![0u8; (1 << 20) + 1]).unwrap();
        assert!(crate::child::decompress(&plain, 1 << 20, "one module").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 39, 16: a build that fails half-way (here: a module its modules.dep names
    /// is missing) leaves no `.tmp` image in the cache.
    #[test]
    fn a_failed_build_leaves_no_partial_image() {
        let dir = std::env::temp_dir().join(format!("sigbench-partial-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mdir = dir.join("lib/modules/6.1.0-1-amd64");
        std::fs::create_dir_all(&mdir).unwrap();
        std::fs::write(mdir.join("modules.dep"), "kernel/fs/xfs/xfs.ko.zst:\n").unwrap();
        let k = Kernel {
            name: "k.deb".into(),
            release: "6.1.0-1-amd64".into(),
            image: dir.join("vmlinuz"),
            modules: Some(mdir.clone()),
            config: None,
            key: "k".into(),
            changelog: None,
            unpacked: None,
        };
        let cache = dir.join("cache");
        let e = base(&k, Fs::Xfs, &cache).unwrap_err().to_string();
        assert!(
            e.contains("xfs.ko.zst (from its modules.dep) is missing"),
            "{e}"
        );
        let left: Vec<_> = std::fs::read_dir(cache.join("initramfs"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "{left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 39, 5: a modules.dep chaining 50,000 modules deep (and a cycle) resolves
    /// without overflowing the stack (it aborted the process, exit 134).
    #[test]
    fn a_deep_module_chain_resolves_without_recursion() {
        let dir = std::env::temp_dir().join(format!("sigbench-deep-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let n = 50_000;
        let mut dep = String::new();
        for i in 0..n {
            // m0 needs m1, …, the last needs m0 again: a cycle at the end.
            dep.push_str(&format!("kernel/m{i}.ko: kernel/m{}.ko\n", (i + 1) % n));
        }
        std::fs::write(dir.join("modules.dep"), dep).unwrap();
        let ix = Index::load(&dir).unwrap();
        // A small stack, as a guest-building thread might have.
        let c = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || ix.closure(&["m0"]))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(c.len(), n);
        assert_eq!(c.first().map(String::as_str), Some("m49999"));
        assert_eq!(c.last().map(String::as_str), Some("m0"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_kernel_without_the_plans_filesystem_is_refused_before_it_boots() {
        let dir = std::env::temp_dir().join(format!("sigbench-fs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mdir = dir.join("lib/modules/6.1.0-1-amd64");
        std::fs::create_dir_all(&mdir).unwrap();
        std::fs::write(mdir.join("modules.dep"), "kernel/fs/xfs/xfs.ko.zst:\n").unwrap();
        std::fs::write(mdir.join("modules.builtin"), "kernel/fs/ext4/ext4.ko\n").unwrap();
        let config = dir.join("config");
        let kernel = |modules: bool, config_text: Option<&str>| {
            if let Some(t) = config_text {
                std::fs::write(&config, t).unwrap();
            }
            Kernel {
                name: "k.deb".into(),
                release: "6.1.0-1-amd64".into(),
                image: dir.join("vmlinuz"),
                modules: modules.then(|| mdir.clone()),
                config: config_text.map(|_| config.clone()),
                key: "k".into(),
                changelog: None,
                unpacked: None,
            }
        };
        let check = |k: &Kernel, fs: Fs| {
            let ix = k.modules.as_deref().map(|d| Index::load(d).unwrap());
            check_fs(k, ix.as_ref(), fs).map_err(|e| e.to_string())
        };
        // A module, a built-in, tmpfs: fine. No btrfs anywhere: said, naming it.
        let k = kernel(true, None);
        assert!(check(&k, Fs::Xfs).is_ok());
        assert!(check(&k, Fs::Ext4).is_ok());
        assert!(check(&k, Fs::Tmpfs).is_ok());
        let e = check(&k, Fs::Btrfs).unwrap_err();
        assert!(
            e.contains("has no btrfs, neither built in nor a module"),
            "{e}"
        );
        // Its config builds btrfs as a module the modules given lack: another package.
        let k = kernel(true, Some("CONFIG_BTRFS_FS=m\nCONFIG_UNIX=y\n"));
        let e = check(&k, Fs::Btrfs).unwrap_err();
        assert!(e.contains("give the package that holds it"), "{e}");
        // Built in by the config (modules.builtin incomplete): fine.
        let k = kernel(true, Some("CONFIG_BTRFS_FS=y\nCONFIG_UNIX=y\n"));
        assert!(check(&k, Fs::Btrfs).is_ok());
        // Without Unix sockets (tinyconfig has no CONFIG_NET) mkfs cannot be started in
        // the guest: refused before it boots — a tmpfs plan starts nothing and is fine.
        let k = kernel(false, Some("CONFIG_BTRFS_FS=y\n# CONFIG_NET is not set\n"));
        let e = check(&k, Fs::Btrfs).unwrap_err();
        assert!(
            e.contains("CONFIG_UNIX is not set") && e.contains("mkfs.btrfs"),
            "{e}"
        );
        assert!(check(&k, Fs::Tmpfs).is_ok());
        // No modules at all: the config decides, and with no config the guest will say.
        let e = check(
            &kernel(false, Some("CONFIG_BTRFS_FS=m\nCONFIG_UNIX=y\n")),
            Fs::Btrfs,
        )
        .unwrap_err();
        assert!(e.contains("came without modules"), "{e}");
        let e = check(
            &kernel(false, Some("# CONFIG_BTRFS_FS is not set\nCONFIG_UNIX=y\n")),
            Fs::Btrfs,
        )
        .unwrap_err();
        assert!(e.contains("CONFIG_BTRFS_FS is not set"), "{e}");
        assert!(check(&kernel(false, None), Fs::Btrfs).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_modules_dep_naming_paths_outside_its_directory_is_refused() {
        let dir = std::env::temp_dir().join(format!("sigbench-dep-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for bad in [
            "kernel/fs/btrfs/btrfs.ko: ../../../../etc/shadow\n",
            "/etc/shadow:\n",
        ] {
            std::fs::write(dir.join("modules.dep"), format!("kernel/lib/a.ko:\n{bad}")).unwrap();
            let e = Index::load(&dir).err().unwrap().to_string();
            assert!(
                e.ends_with(
                    "modules.dep:2: ../../../../etc/shadow is outside the modules directory"
                ) || e.ends_with("modules.dep:2: /etc/shadow is outside the modules directory"),
                "{e}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_new_image_replaces_the_ones_of_earlier_binaries_for_its_kernel_only() {
        let dir = std::env::temp_dir().join(format!("sigbench-prune-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let names = [
            "6.1.0-56-amd64-btrfs-k1-old.cpio",
            "6.1.0-56-amd64-btrfs-k1-new.cpio",
            "6.1.0-56-amd64-tmpfs-k1-old.cpio",
            "6.1.0-56-amd64-btrfs-k2-old.cpio",
            "6.1.0-56-amd64-btrfs-k1-new.tmp",
            "6.1.0-56-amd64-btrfs-0123456789abcdef.cpio",
            "6.1.0-56-amd64-tmpfs-0123456789abcdef.cpio",
            "6.1.0-55-amd64-btrfs-0123456789abcdef.cpio",
        ];
        for n in names {
            std::fs::write(dir.join(n), "").unwrap();
        }
        prune(
            &dir,
            "6.1.0-56-amd64-btrfs-k1-",
            &dir.join("6.1.0-56-amd64-btrfs-k1-new.cpio"),
        );
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "6.1.0-55-amd64-btrfs-0123456789abcdef.cpio",
                "6.1.0-56-amd64-btrfs-k1-new.cpio",
                "6.1.0-56-amd64-btrfs-k1-new.tmp",
                "6.1.0-56-amd64-btrfs-k2-old.cpio",
                "6.1.0-56-amd64-tmpfs-0123456789abcdef.cpio",
                "6.1.0-56-amd64-tmpfs-k1-old.cpio",
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn parents_are_listed_outermost_first() {
        assert_eq!(
            parents("/lib/modules/6.1/kernel/x.ko"),
            [
                "/lib",
                "/lib/modules",
                "/lib/modules/6.1",
                "/lib/modules/6.1/kernel"
            ]
        );
        assert!(parents("/init").is_empty());
    }
}
