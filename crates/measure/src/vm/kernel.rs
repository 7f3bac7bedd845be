//! Kernels to boot: a distribution's kernel packages (one or several files of one kernel,
//! `package.rs`), a kernel image with its modules, or a kernel build tree — each reduced to
//! one model (image, modules, release, config), unpacked once into the cache, with a
//! modules.dep made by depmod where the distribution ships none.

use super::package::{Format, Package};
use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A `--kernel` argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelSpec {
    /// The running kernel, without a VM.
    Host,
    /// A distribution's packages of one kernel (`A.deb,B.deb`): Debian's one
    /// `linux-image`, Ubuntu's image + modules pair, Fedora's `kernel-core` +
    /// `kernel-modules-core`, openSUSE's `kernel-default`, Arch's `linux` package.
    Packages(Vec<Package>),
    /// `IMAGE[:MODULES]`: a bzImage/vmlinuz, and a `lib/modules/<release>` directory (or
    /// an `INSTALL_MOD_PATH` root holding one).
    Image {
        image: PathBuf,
        modules: Option<PathBuf>,
    },
    /// A build tree (`arch/x86/boot/bzImage`, modules built in-tree), optionally
    /// `TREE:MODULES` when they were installed elsewhere with `make modules_install`.
    BuildTree {
        tree: PathBuf,
        modules: Option<PathBuf>,
    },
}

impl KernelSpec {
    pub fn parse(s: &str) -> Result<KernelSpec> {
        if s == "host" {
            return Ok(KernelSpec::Host);
        }
        // A file whose very name has a comma or a colon is that file.
        let whole = Path::new(s).exists();
        if s.contains(',') && !whole {
            return packages(s);
        }
        let (main, modules) = match s.split_once(':') {
            Some((a, b)) if !b.is_empty() && !whole => (PathBuf::from(a), Some(PathBuf::from(b))),
            _ => (PathBuf::from(s), None),
        };
        if main.is_dir() {
            if main.join("arch/x86/boot/bzImage").is_file() {
                return Ok(KernelSpec::BuildTree {
                    tree: main,
                    modules,
                });
            }
            bail!(
                "--kernel {s}: a directory must be a kernel build tree with arch/x86/boot/bzImage"
            );
        }
        if main.exists() && !main.is_file() {
            bail!(
                "--kernel {s}: not a regular file (give a kernel package, an image, a build tree or host)"
            );
        }
        if !main.is_file() {
            bail!(
                "--kernel {s}: no such file (give a kernel package — .deb, .rpm, .pkg.tar.zst, several of one kernel joined by commas —, IMAGE[:MODULES_DIR], a build tree, or host)"
            );
        }
        if let Some(p) = Package::new(&main) {
            if modules.is_some() {
                bail!(
                    "--kernel {s}: a package brings its own modules (a kernel packaged in several files: --kernel 'IMAGE-PACKAGE,MODULES-PACKAGE')"
                );
            }
            return Ok(KernelSpec::Packages(vec![p]));
        }
        Ok(KernelSpec::Image {
            image: main,
            modules,
        })
    }
}

/// `A,B,…`: the packages of one kernel, all of one format.
fn packages(s: &str) -> Result<KernelSpec> {
    let mut v = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let path = Path::new(part);
        let Some(p) = Package::new(path) else {
            bail!(
                "--kernel {s}: {part} is not a kernel package (.deb, .rpm, .pkg.tar.zst): only packages of one kernel are given together"
            );
        };
        if path.exists() && !path.is_file() {
            bail!("--kernel {s}: {part}: not a regular file");
        }
        if !path.is_file() {
            bail!("--kernel {s}: {part}: no such file");
        }
        if let Some(first) = v.first().map(|f: &Package| f.format)
            && first != p.format
        {
            bail!(
                "--kernel {s}: one kernel's packages are of one format ({part} is an {}, not a {})",
                p.format.name(),
                first.name()
            );
        }
        v.push(p);
    }
    if v.is_empty() {
        bail!("--kernel {s}: no package named");
    }
    Ok(KernelSpec::Packages(v))
}

/// A list's kernels (`bisect --kernels`, `watch --kernels`) in their order ([`ordered`]),
/// each parsed; `host` is refused, in words `boots` begins ("bisect boots every kernel of
/// the list").
pub fn booted_list(kernels: &[String], boots: &str) -> Result<Vec<(String, KernelSpec)>> {
    let specs = ordered(kernels)?
        .into_iter()
        .map(|k| {
            let spec = KernelSpec::parse(&k)?;
            Ok((k, spec))
        })
        .collect::<Result<Vec<_>>>()?;
    if specs.iter().any(|(_, s)| *s == KernelSpec::Host) {
        bail!("{boots}: `host` has no place in it");
    }
    Ok(specs)
}

/// The kernel arguments of a list (`bisect`, `watch`) in their order: packages by the
/// version their format gives them when all are packages of one format (the first file of
/// each kernel), packages of several formats by the kernel release they hold; images and
/// build trees, or packages whose version or release cannot be read (said once), stay in
/// the order given.
pub fn ordered(kernels: &[String]) -> Result<Vec<String>> {
    let specs = kernels
        .iter()
        .map(|k| KernelSpec::parse(k))
        .collect::<Result<Vec<_>>>()?;
    let firsts: Vec<&Package> = specs
        .iter()
        .filter_map(|s| match s {
            KernelSpec::Packages(p) => p.first(),
            _ => None,
        })
        .collect();
    if firsts.len() != kernels.len() {
        return Ok(kernels.to_vec());
    }
    let formats: BTreeSet<Format> = firsts.iter().map(|p| p.format).collect();
    let one = formats.first().copied().filter(|_| formats.len() == 1);
    let mut keyed = Vec::new();
    for (k, p) in kernels.iter().zip(&firsts) {
        let key = match one {
            Some(_) => p.version(),
            None => p.files().and_then(|f| {
                super::package::release_in(f.iter().map(String::as_str)).with_context(|| {
                    format!(
                        "{}: names no one kernel release (lib/modules/RELEASE)",
                        p.path.display()
                    )
                })
            }),
        };
        match key {
            Ok(key) => keyed.push((key, k.clone())),
            Err(e) => {
                model::diag::warn(format!("the kernels stay in the order given: {e:#}"));
                return Ok(kernels.to_vec());
            }
        }
    }
    // A stable sort: equal versions keep the order given.
    keyed.sort_by(|a, b| match one {
        Some(f) => f.compare(&a.0, &b.0),
        None => model::version::release(&a.0, &b.0),
    });
    Ok(keyed.into_iter().map(|(_, k)| k).collect())
}

/// A kernel ready to boot.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// As the user named it.
    pub name: String,
    pub release: String,
    pub image: PathBuf,
    /// `lib/modules/<release>` with a modules.dep, when the kernel has modules.
    pub modules: Option<PathBuf>,
    /// The kernel's build configuration, when it came with it (`boot/config-<release>`,
    /// `lib/modules/<release>/config`, a build tree's `.config`).
    pub config: Option<PathBuf>,
    /// Cache key: changes when the kernel does.
    pub key: String,
    /// The package's changelog (`usr/share/doc/linux-image-*/changelog{.Debian,}.gz`), a
    /// regular file inside the unpacked package, when it carries one.
    pub changelog: Option<PathBuf>,
    /// The image's kernel unpacked, when it boots through PVH (`unpacked.rs`): the fixed
    /// state boots it, a sampled state the image.
    pub unpacked: Option<PathBuf>,
}

/// The changelog an unpacked kernel package carries, if any: in a `linux-image*`
/// documentation directory, a regular file (never through a link).
fn package_changelog(root: &Path) -> Option<PathBuf> {
    let doc = root.join("usr/share/doc");
    let mut dirs: Vec<_> = std::fs::read_dir(&doc)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("linux-image"))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .collect();
    dirs.sort_by_key(|e| e.file_name());
    dirs.iter()
        .flat_map(|d| ["changelog.Debian.gz", "changelog.gz"].map(|f| d.path().join(f)))
        .find(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()))
}

/// Identity of a file for cache keys: path, size, modification time.
pub fn file_identity(p: &Path) -> Result<String> {
    let md = std::fs::metadata(p).with_context(|| format!("cannot stat {}", p.display()))?;
    Ok(format!(
        "{}:{}:{}",
        p.canonicalize()?.display(),
        md.size(),
        md.mtime()
    ))
}

pub fn short_hash(s: &str) -> String {
    model::text::hex(&Sha256::digest(s.as_bytes())[..8])
}

/// The release string a bzImage carries (boot protocol: `kernel_version` at 0x20E points
/// to "6.1.0-18-amd64 (debian-kernel@…) #1 SMP …", 0x200 bytes into the image).
pub fn image_release(image: &Path) -> Result<String> {
    use std::io::Read;
    let f = std::fs::File::open(image)
        .with_context(|| format!("cannot read the kernel image {}", image.display()))?;
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        bail!(
            "{} is not a regular file: give a kernel image (bzImage)",
            image.display()
        );
    }
    // The header and the version string it points to lie within the first 64 KiB + 1 KiB
    // (a 16-bit pointer from 0x200): the rest of the image is never read here.
    let mut data = Vec::new();
    f.take(0x200 + 0x1_0000 + 0x200)
        .read_to_end(&mut data)
        .with_context(|| format!("cannot read {}", image.display()))?;
    if data.len() < 0x210 || &data[0x202..0x206] != b"HdrS" {
        bail!(
            "{} is not a bootable x86 kernel image (no HdrS header)",
            image.display()
        );
    }
    let ptr = u16::from_le_bytes([data[0x20e], data[0x20f]]) as usize + 0x200;
    let end = data
        .get(ptr..)
        .and_then(|s| s.iter().position(|&b| b == 0 || b == b' '))
        .map(|e| ptr + e);
    match end {
        Some(e) if e > ptr => Ok(String::from_utf8_lossy(&data[ptr..e]).into_owned()),
        _ => bail!(
            "{}: no kernel version string in the header",
            image.display()
        ),
    }
}

/// Run depmod on `root/lib/modules/<release>` if it has no modules.dep yet.
pub(super) fn depmod(root: &Path, release: &str) -> Result<()> {
    let dir = root.join("lib/modules").join(release);
    if dir.join("modules.dep").exists() {
        return Ok(());
    }
    let depmod = crate::testbed::require_tool("depmod", "kmod")?;
    crate::child::checked(
        Command::new(depmod).arg("-b").arg(root).arg(release),
        "depmod",
    )?;
    Ok(())
}

/// Run depmod on a package's modules directory `dir` (wherever its distribution put it:
/// `lib/modules/<release>` or `usr/lib/modules/<release>`) if it has no modules.dep yet,
/// through a base of our own in `scratch` (depmod reads `BASE/lib/modules/<release>`), so
/// that nothing the package holds decides where depmod reads or writes.
fn depmod_at(dir: &Path, release: &str, scratch: &Path) -> Result<()> {
    if dir.join("modules.dep").exists() {
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(scratch);
    let at = scratch.join("lib/modules");
    std::fs::create_dir_all(&at)?;
    std::os::unix::fs::symlink(dir.canonicalize()?, at.join(release))?;
    let done = depmod(scratch, release);
    let _ = std::fs::remove_dir_all(scratch);
    done
}

/// `root/rel` when no component below `root` is a symbolic link: what a package unpacked
/// in `root` holds, and never a place outside it that a link in the package points to.
fn inside(root: &Path, rel: &str) -> Option<PathBuf> {
    let mut at = root.to_path_buf();
    for c in rel.split('/').filter(|c| !c.is_empty()) {
        if c == ".." || c == "." {
            return None;
        }
        at.push(c);
        if std::fs::symlink_metadata(&at)
            .ok()?
            .file_type()
            .is_symlink()
        {
            return None;
        }
    }
    Some(at)
}

/// Where distributions put a release's modules (and, on Fedora, openSUSE and Arch, its
/// image and config): Debian, Ubuntu and Fedora's packages under `lib/`, openSUSE's and
/// Arch's under `usr/lib/`.
const MODULE_BASES: [&str; 2] = ["lib/modules", "usr/lib/modules"];

/// A modules directory that holds modules (Ubuntu's image package may bring an empty
/// `lib/modules/<release>`; its modules come in another package).
fn has_modules(dir: &Path) -> bool {
    dir.join("kernel").is_dir()
        || dir.join("modules.order").is_file()
        || dir.join("modules.dep").is_file()
}

/// What a kernel's configuration says of one option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Config {
    /// No configuration came with the kernel.
    Unknown,
    Unset,
    BuiltIn,
    Module,
}

/// `CONFIG_<option>` in the configuration file `config`.
pub fn config_option(config: Option<&Path>, option: &str) -> Config {
    let Some(text) = config.and_then(|c| std::fs::read_to_string(c).ok()) else {
        return Config::Unknown;
    };
    let key = format!("CONFIG_{option}=");
    for l in text.lines() {
        match l.strip_prefix(&key) {
            Some("y") => return Config::BuiltIn,
            Some("m") => return Config::Module,
            _ => {}
        }
    }
    Config::Unset
}

impl Kernel {
    pub fn config_option(&self, option: &str) -> Config {
        config_option(self.config.as_deref(), option)
    }
}

/// What a kernel's unpacked packages hold, found where its distribution puts each part.
struct Unpacked {
    release: String,
    image: PathBuf,
    modules: Option<PathBuf>,
    config: Option<PathBuf>,
}

impl Unpacked {
    /// Find the one kernel under `root` (`given`: the packages as the user named them).
    fn find(root: &Path, given: &str, format: Format) -> Result<Unpacked> {
        let names = |rel: &str| -> Vec<String> {
            inside(root, rel)
                .and_then(|d| std::fs::read_dir(d).ok())
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| !t.is_symlink()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        };
        let mut releases = BTreeSet::new();
        for base in MODULE_BASES {
            releases.extend(names(base));
        }
        releases.extend(
            names("boot")
                .iter()
                .filter_map(|n| n.strip_prefix("vmlinuz-"))
                .map(String::from),
        );
        let release = match releases.len() {
            0 => bail!(
                "--kernel {given}: no kernel inside (neither boot/vmlinuz-RELEASE nor lib/modules/RELEASE): not a kernel package?"
            ),
            1 => releases.pop_first().unwrap_or_default(),
            _ => bail!(
                "--kernel {given}: holds more than one kernel ({}): give the packages of one kernel",
                releases.into_iter().collect::<Vec<_>>().join(", ")
            ),
        };
        let dirs: Vec<PathBuf> = MODULE_BASES
            .iter()
            .filter_map(|b| inside(root, &format!("{b}/{release}")))
            .filter(|d| d.is_dir())
            .collect();
        let file = |rel: String| inside(root, &rel).filter(|f| f.is_file());
        let image = MODULE_BASES
            .iter()
            .map(|b| format!("{b}/{release}/vmlinuz"))
            .chain([format!("boot/vmlinuz-{release}")])
            .find_map(file)
            .with_context(|| {
                format!(
                    "--kernel {given}: no kernel image for {release} (boot/vmlinuz-{release} or lib/modules/{release}/vmlinuz): give the image's package with it, e.g. {}",
                    format.image_package(&release)
                )
            })?;
        let config = [format!("boot/config-{release}")]
            .into_iter()
            .chain(MODULE_BASES.iter().map(|b| format!("{b}/{release}/config")))
            .find_map(file);
        let with_modules: Vec<&PathBuf> = dirs.iter().filter(|d| has_modules(d)).collect();
        let modules = match with_modules[..] {
            [] if config_option(config.as_deref(), "MODULES") == Config::Unset => None,
            [] => bail!(
                "--kernel {given}: kernel {release} comes without its modules (no lib/modules/{release} holding any): give its modules package with it, e.g. {}, as --kernel 'IMAGE-PACKAGE,MODULES-PACKAGE'",
                format.modules_package(&release)
            ),
            [m] => Some(m.clone()),
            _ => bail!(
                "--kernel {given}: modules of {release} in both lib/modules and usr/lib/modules: give the packages of one kernel build"
            ),
        };
        Ok(Unpacked {
            release,
            image,
            modules,
            config,
        })
    }
}

/// The `lib/modules/<release>` under a directory given as modules: the directory itself,
/// or an INSTALL_MOD_PATH root.
fn modules_dir(given: &Path, release: &str) -> Result<(PathBuf, PathBuf)> {
    if given.join("modules.order").exists() || given.join("modules.dep").exists() {
        // …/lib/modules/<release>: the depmod base is three levels up.
        let base = given
            .parent()
            .and_then(Path::parent)
            .and_then(Path::parent)
            .map(Path::to_path_buf);
        let named = given.file_name().map(|f| f.to_string_lossy().into_owned());
        match (base, named) {
            (Some(b), Some(n)) if n == release => return Ok((given.to_path_buf(), b)),
            (_, Some(n)) => bail!(
                "modules in {} are for {n}, the image is {release}",
                given.display()
            ),
            _ => {}
        }
    }
    let inner = given.join("lib/modules").join(release);
    if inner.is_dir() {
        return Ok((inner, given.to_path_buf()));
    }
    bail!(
        "{} holds no modules for {release} (give lib/modules/{release} or an INSTALL_MOD_PATH root)",
        given.display()
    )
}

/// Unpack or locate the kernel, in `cache/kernels/<key>/`.
pub fn prepare(spec: &KernelSpec, name: &str, cache: &Path) -> Result<Kernel> {
    let _lock = super::cache_lock(cache)?;
    prepare_locked(spec, name, cache)
}

fn prepare_locked(spec: &KernelSpec, name: &str, cache: &Path) -> Result<Kernel> {
    let k = match spec {
        KernelSpec::Host => bail!("the host kernel is not booted in a VM"),
        KernelSpec::Packages(packages) => from_packages(packages, name, cache)?,
        KernelSpec::Image { image, modules } => from_image(image, modules.as_deref(), name)?,
        KernelSpec::BuildTree { tree, modules } => {
            from_tree(tree, modules.as_deref(), name, cache)?
        }
    };
    let unpacked = super::unpacked::pvh_kernel(&k.image, &cache.join("kernels").join(&k.key))?;
    Ok(Kernel { unpacked, ..k })
}

/// A kernel from its packages, unpacked once into the cache (keyed by the files).
fn from_packages(packages: &[Package], name: &str, cache: &Path) -> Result<Kernel> {
    let ids = packages
        .iter()
        .map(|p| file_identity(&p.path))
        .collect::<Result<Vec<_>>>()?;
    let key = short_hash(&ids.join("|"));
    let dir = cache.join("kernels").join(&key);
    let root = dir.join("root");
    if !dir.join("ready").exists() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&root)?;
        for p in packages {
            p.unpack(&root)?;
        }
    }
    let found = Unpacked::find(&root, name, packages[0].format)?;
    // Checked here, not by QEMU at boot: a package's "image" may be anything.
    image_release(&found.image)?;
    if let Some(m) = &found.modules {
        depmod_at(m, &found.release, &dir.join("depmod"))?;
    }
    std::fs::write(dir.join("ready"), &found.release)?;
    Ok(Kernel {
        name: name.to_string(),
        release: found.release,
        image: found.image,
        modules: found.modules,
        config: found.config,
        key,
        changelog: package_changelog(&root),
        unpacked: None,
    })
}

/// A kernel image, with its modules directory if given.
fn from_image(image: &Path, modules: Option<&Path>, name: &str) -> Result<Kernel> {
    let release = image_release(image)?;
    let mut id = file_identity(image)?;
    let modules = match modules {
        None => None,
        Some(m) => {
            let (dir, base) = modules_dir(m, &release)?;
            depmod(&base, &release)?;
            id.push_str(&file_identity(&dir)?);
            Some(dir)
        }
    };
    // /boot/config-<release> beside /boot/vmlinuz-<release>, or in the modules.
    let config = image
        .parent()
        .map(|d| d.join(format!("config-{release}")))
        .into_iter()
        .chain(modules.as_ref().map(|m| m.join("config")))
        .find(|c| c.is_file());
    Ok(Kernel {
        name: name.to_string(),
        key: short_hash(&id),
        release,
        image: image.to_path_buf(),
        modules,
        config,
        changelog: None,
        unpacked: None,
    })
}

/// A kernel build tree's bzImage (copied: the tree may build the next commit while this
/// one boots), its modules staged as `make modules_install` would.
fn from_tree(tree: &Path, modules: Option<&Path>, name: &str, cache: &Path) -> Result<Kernel> {
    let image = tree.join("arch/x86/boot/bzImage");
    let release = image_release(&image)?;
    let config = Some(tree.join(".config")).filter(|c| c.is_file());
    if let Some(m) = modules {
        let k = prepare_locked(
            &KernelSpec::Image {
                image,
                modules: Some(m.to_path_buf()),
            },
            name,
            cache,
        )?;
        return Ok(Kernel { config, ..k });
    }
    // Modules built in-tree: stage them as `make modules_install` would. The image
    // is copied too: the tree may build the next commit while this one boots.
    let id = file_identity(&image)?;
    let key = short_hash(&id);
    let kdir = cache.join("kernels").join(&key);
    std::fs::create_dir_all(&kdir)?;
    let image = copy_once(&image, &kdir.join("bzImage"))?;
    // The config too, beside the image: a bisect boots a commit's kernel again after the
    // tree has built others, and asks it which options it has.
    let config = match config {
        Some(c) => Some(copy_once(&c, &kdir.join("config"))?),
        None => None,
    };
    let root = kdir.join("root");
    let dir = root.join("lib/modules").join(&release);
    let order = std::fs::read_to_string(tree.join("modules.order")).unwrap_or_default();
    if !dir.join("modules.dep").exists() && !order.is_empty() {
        std::fs::create_dir_all(&dir)?;
        let mut staged = String::new();
        for m in order.lines().filter(|l| !l.is_empty()) {
            let src = tree.join(
                m.trim_end_matches(".o").to_string() + if m.ends_with(".o") { ".ko" } else { "" },
            );
            let rel = Path::new("kernel").join(src.strip_prefix(tree).unwrap_or(&src));
            let dst = dir.join(&rel);
            std::fs::create_dir_all(dst.parent().unwrap_or(&dir))?;
            std::fs::copy(&src, &dst).with_context(|| format!("cannot copy {}", src.display()))?;
            staged.push_str(&format!("{}\n", rel.display()));
        }
        std::fs::write(dir.join("modules.order"), staged)?;
        for f in ["modules.builtin", "modules.builtin.modinfo"] {
            let _ = std::fs::copy(tree.join(f), dir.join(f));
        }
        depmod(&root, &release)?;
    }
    Ok(Kernel {
        name: name.to_string(),
        modules: dir.join("modules.dep").exists().then_some(dir),
        release,
        image,
        config,
        key,
        changelog: None,
        unpacked: None,
    })
}

/// `src` copied to `dst` unless `dst` is there (written whole, then renamed into place);
/// `dst`.
fn copy_once(src: &Path, dst: &Path) -> Result<PathBuf> {
    if !dst.is_file() {
        let part = dst.with_extension("partial");
        std::fs::copy(src, &part).with_context(|| format!("cannot copy {}", src.display()))?;
        std::fs::rename(&part, dst)?;
    }
    Ok(dst.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_booted_list_refuses_the_host_in_its_commands_words() {
        let list = ["host".to_string()];
        let e = booted_list(&list, "watch boots every kernel of the series").unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "watch boots every kernel of the series: `host` has no place in it"
        );
    }

    #[test]
    fn parses_kernel_arguments() {
        assert_eq!(KernelSpec::parse("host").unwrap(), KernelSpec::Host);
        let e = KernelSpec::parse("/nonexistent/linux-image-6.1.deb")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no such file"), "{e}");
        let e = KernelSpec::parse("/").unwrap_err().to_string();
        assert!(e.contains("build tree"), "{e}");
    }

    /// A directory tree of `files` (`path` or `path -> target` for a link) under a fresh root.
    fn tree(name: &str, files: &[&str]) -> PathBuf {
        let root = std::env::temp_dir().join(format!("sigbench-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for f in files {
            let (path, link) = match f.split_once(" -> ") {
                Some((p, t)) => (p, Some(t)),
                None => (*f, None),
            };
            let at = root.join(path);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            match link {
                Some(t) => std::os::unix::fs::symlink(t, &at).unwrap(),
                None if path.ends_with('/') => std::fs::create_dir_all(&at).unwrap(),
                None => std::fs::write(&at, "x").unwrap(),
            }
        }
        root
    }

    #[test]
    fn every_distributions_layout_is_one_kernel() {
        let r = "6.1.0-56-amd64";
        // (layout, files, image, modules, config) — paths relative to the root.
        type Case<'a> = (
            &'a str,
            Vec<String>,
            &'a str,
            Option<&'a str>,
            Option<&'a str>,
        );
        let cases: &[Case] = &[
            (
                "debian",
                vec![
                    format!("boot/vmlinuz-{r}"),
                    format!("boot/config-{r}"),
                    format!("lib/modules/{r}/kernel/fs/btrfs/btrfs.ko"),
                    format!("lib/modules/{r}/build -> /usr/src/linux-headers-{r}"),
                ],
                "boot/vmlinuz-R",
                Some("lib/modules/R"),
                Some("boot/config-R"),
            ),
            (
                "ubuntu",
                vec![
                    format!("boot/vmlinuz-{r}"),
                    format!("lib/modules/{r}/"),
                    format!("boot/config-{r}"),
                    format!("lib/modules/{r}/kernel/fs/btrfs/btrfs.ko.zst"),
                    format!("lib/modules/{r}/modules.order"),
                ],
                "boot/vmlinuz-R",
                Some("lib/modules/R"),
                Some("boot/config-R"),
            ),
            (
                "fedora",
                vec![
                    format!("lib/modules/{r}/vmlinuz"),
                    format!("lib/modules/{r}/config"),
                    format!("lib/modules/{r}/kernel/fs/btrfs/btrfs.ko.xz"),
                ],
                "lib/modules/R/vmlinuz",
                Some("lib/modules/R"),
                Some("lib/modules/R/config"),
            ),
            (
                "suse",
                vec![
                    format!("usr/lib/modules/{r}/vmlinuz"),
                    format!("usr/lib/modules/{r}/config"),
                    format!("usr/lib/modules/{r}/kernel/fs/btrfs/btrfs.ko.zst"),
                    format!("boot/vmlinuz-{r} -> ../usr/lib/modules/{r}/vmlinuz"),
                ],
                "usr/lib/modules/R/vmlinuz",
                Some("usr/lib/modules/R"),
                Some("usr/lib/modules/R/config"),
            ),
            (
                "arch",
                vec![
                    format!("usr/lib/modules/{r}/vmlinuz"),
                    format!("usr/lib/modules/{r}/pkgbase"),
                    format!("usr/lib/modules/{r}/kernel/fs/btrfs/btrfs.ko.zst"),
                    ".PKGINFO".to_string(),
                ],
                "usr/lib/modules/R/vmlinuz",
                Some("usr/lib/modules/R"),
                None,
            ),
            (
                "tiny",
                vec![format!("boot/vmlinuz-{r}"), format!("boot/config-{r}")],
                "boot/vmlinuz-R",
                None,
                Some("boot/config-R"),
            ),
        ];
        for (name, files, image, modules, config) in cases {
            let files: Vec<&str> = files.iter().map(String::as_str).collect();
            let root = tree(name, &files);
            if *name == "tiny" {
                std::fs::write(
                    root.join(format!("boot/config-{r}")),
                    "# CONFIG_MODULES is not set\n",
                )
                .unwrap();
            }
            let u = Unpacked::find(&root, name, Format::Deb).unwrap();
            let at = |p: &str| root.join(p.replace('R', r));
            assert_eq!(u.release, r, "{name}");
            assert_eq!(u.image, at(image), "{name}");
            assert_eq!(u.modules, modules.map(at), "{name}");
            assert_eq!(u.config, config.map(at), "{name}");
            std::fs::remove_dir_all(&root).unwrap();
        }
    }

    #[test]
    fn a_package_missing_its_other_half_or_holding_links_out_is_refused() {
        let r = "6.1.0-56-amd64";
        let err = |name: &str, files: &[String], format: Format| {
            let files: Vec<&str> = files.iter().map(String::as_str).collect();
            let root = tree(name, &files);
            let e = Unpacked::find(&root, name, format)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            std::fs::remove_dir_all(&root).unwrap();
            e
        };
        // Ubuntu's image package alone: its modules package is named.
        let e = err("img", &[format!("boot/vmlinuz-{r}")], Format::Deb);
        assert!(
            e.contains("comes without its modules") && e.contains(&format!("linux-modules-{r}")),
            "{e}"
        );
        // Fedora's modules alone: the image's package is named.
        let e = err(
            "mods",
            &[format!("lib/modules/{r}/kernel/fs/btrfs/btrfs.ko.xz")],
            Format::Rpm,
        );
        assert!(
            e.contains("no kernel image") && e.contains("kernel-core"),
            "{e}"
        );
        // An image that is a link out of the package is no image; a `lib` that is a link
        // is not looked into.
        let e = err(
            "link",
            &[
                format!("boot/vmlinuz-{r} -> /boot/vmlinuz-{r}"),
                format!("lib/modules/{r}/kernel/a.ko"),
            ],
            Format::Deb,
        );
        assert!(e.contains("no kernel image"), "{e}");
        let e = err("lib", &["lib -> /usr/lib".to_string()], Format::Deb);
        assert!(e.contains("no kernel inside"), "{e}");
        let e = err(
            "two",
            &["boot/vmlinuz-a".to_string(), "boot/vmlinuz-b".to_string()],
            Format::Deb,
        );
        assert!(e.contains("more than one kernel (a, b)"), "{e}");
    }

    #[test]
    fn several_files_are_one_kernels_packages_of_one_format() {
        let dir = tree(
            "specs",
            &[
                "a.deb",
                "b.deb",
                "c.rpm",
                "d.rpm",
                "e.pkg.tar.zst",
                "bzImage",
            ],
        );
        let p = |f: &str| dir.join(f).display().to_string();
        match KernelSpec::parse(&format!("{},{}", p("a.deb"), p("b.deb"))).unwrap() {
            KernelSpec::Packages(v) => assert_eq!(v.len(), 2),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            KernelSpec::parse(&p("e.pkg.tar.zst")).unwrap(),
            KernelSpec::Packages(v) if v[0].format == Format::Arch
        ));
        for (spec, want) in [
            (format!("{},{}", p("a.deb"), p("c.rpm")), "of one format"),
            (
                format!("{},{}", p("c.rpm"), p("bzImage")),
                "is not a kernel package",
            ),
            (
                format!("{},{}", p("c.rpm"), p("x.rpm")),
                "x.rpm: no such file",
            ),
            // Issue 39, 21: a device is not "no such file".
            ("/dev/zero".to_string(), "/dev/zero: not a regular file"),
            (
                format!("{}:{}", p("c.rpm"), dir.display()),
                "brings its own modules",
            ),
        ] {
            let e = KernelSpec::parse(&spec).unwrap_err().to_string();
            assert!(e.contains(want), "{spec}: {e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn reads_the_release_from_a_bzimage_header() {
        let mut img = vec![0u8; 0x400];
        img[0x202..0x206].copy_from_slice(b"HdrS");
        img[0x20e..0x210].copy_from_slice(&0x100u16.to_le_bytes());
        img[0x300..0x300 + 25].copy_from_slice(b"6.1.0-18-amd64 (debian) #");
        let p = std::env::temp_dir().join(format!("sigbench-bz-{}", std::process::id()));
        std::fs::write(&p, &img).unwrap();
        assert_eq!(image_release(&p).unwrap(), "6.1.0-18-amd64");
        // Issue 39, 8: a 2 GiB image is not read whole to check its header.
        // (Peak RSS is the process's: other tests run beside this one, hence the margin.)
        let before = crate::probe::peak_rss_kib();
        let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        f.set_len(2 << 30).unwrap();
        drop(f);
        assert_eq!(image_release(&p).unwrap(), "6.1.0-18-amd64");
        let grew = crate::probe::peak_rss_kib().saturating_sub(before);
        assert!(grew < 512 * 1024, "checking a header took {grew} KiB");
        let e = image_release(Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/dev/zero is not a regular file"), "{e}");
        std::fs::write(&p, &img[..0x100]).unwrap();
        assert!(
            image_release(&p)
                .unwrap_err()
                .to_string()
                .contains("not a bootable")
        );
        std::fs::remove_file(&p).unwrap();
    }
}
