//! Kernels to boot: a Debian `linux-image-*.deb`, a kernel image with its modules, or a
//! kernel build tree — unpacked once into the cache, with a modules.dep made by depmod.

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A `--kernel` argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelSpec {
    /// The running kernel, without a VM.
    Host,
    Deb(PathBuf),
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
        let (main, modules) = match s.split_once(':') {
            Some((a, b)) if !b.is_empty() => (PathBuf::from(a), Some(PathBuf::from(b))),
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
        if !main.is_file() {
            bail!(
                "--kernel {s}: no such file (give a linux-image-*.deb, IMAGE[:MODULES_DIR], a build tree, or host)"
            );
        }
        if main.extension().is_some_and(|e| e == "deb") {
            if modules.is_some() {
                bail!("--kernel {s}: a .deb brings its own modules");
            }
            return Ok(KernelSpec::Deb(main));
        }
        Ok(KernelSpec::Image {
            image: main,
            modules,
        })
    }
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
    /// Cache key: changes when the kernel does.
    pub key: String,
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
    Sha256::digest(s.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The release string a bzImage carries (boot protocol: `kernel_version` at 0x20E points
/// to "6.1.0-18-amd64 (debian-kernel@…) #1 SMP …", 0x200 bytes into the image).
pub fn image_release(image: &Path) -> Result<String> {
    let data = std::fs::read(image).with_context(|| format!("cannot read {}", image.display()))?;
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

fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let out = crate::child::output(cmd, what)?;
    if !out.status.success() {
        bail!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Run depmod on `root/lib/modules/<release>` if it has no modules.dep yet.
fn depmod(root: &Path, release: &str) -> Result<()> {
    let dir = root.join("lib/modules").join(release);
    if dir.join("modules.dep").exists() {
        return Ok(());
    }
    let depmod = crate::testbed::find_tool("depmod")
        .context("depmod not found: install kmod (sudo make deps does)")?;
    run(
        Command::new(depmod).arg("-b").arg(root).arg(release),
        "depmod",
    )
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
    match spec {
        KernelSpec::Host => bail!("the host kernel is not booted in a VM"),
        KernelSpec::Deb(deb) => {
            let key = short_hash(&file_identity(deb)?);
            let dir = cache.join("kernels").join(&key);
            let root = dir.join("root");
            if !dir.join("ready").exists() {
                let _ = std::fs::remove_dir_all(&dir);
                std::fs::create_dir_all(&root)?;
                run(
                    Command::new("dpkg-deb").arg("-x").arg(deb).arg(&root),
                    &format!("dpkg-deb -x {}", deb.display()),
                )?;
            }
            let release = std::fs::read_dir(root.join("lib/modules"))
                .ok()
                .and_then(|mut rd| rd.find_map(|e| e.ok()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .with_context(|| {
                    format!(
                        "{}: no lib/modules/<release> inside (not a linux-image package?)",
                        deb.display()
                    )
                })?;
            let image = root.join("boot").join(format!("vmlinuz-{release}"));
            if !image.is_file() {
                bail!("{}: no boot/vmlinuz-{release} inside", deb.display());
            }
            depmod(&root, &release)?;
            std::fs::write(dir.join("ready"), &release)?;
            Ok(Kernel {
                name: name.to_string(),
                modules: Some(root.join("lib/modules").join(&release)),
                release,
                image,
                key,
            })
        }
        KernelSpec::Image { image, modules } => {
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
            Ok(Kernel {
                name: name.to_string(),
                key: short_hash(&id),
                release,
                image: image.clone(),
                modules,
            })
        }
        KernelSpec::BuildTree { tree, modules } => {
            let image = tree.join("arch/x86/boot/bzImage");
            let release = image_release(&image)?;
            if let Some(m) = modules {
                return prepare_locked(
                    &KernelSpec::Image {
                        image,
                        modules: Some(m.clone()),
                    },
                    name,
                    cache,
                );
            }
            // Modules built in-tree: stage them as `make modules_install` would. The image
            // is copied too: the tree may build the next commit while this one boots.
            let id = file_identity(&image)?;
            let key = short_hash(&id);
            let kdir = cache.join("kernels").join(&key);
            std::fs::create_dir_all(&kdir)?;
            let copy = kdir.join("bzImage");
            if !copy.is_file() {
                let part = kdir.join("bzImage.partial");
                std::fs::copy(&image, &part)
                    .with_context(|| format!("cannot copy {}", image.display()))?;
                std::fs::rename(&part, &copy)?;
            }
            let image = copy;
            let root = kdir.join("root");
            let dir = root.join("lib/modules").join(&release);
            let order = std::fs::read_to_string(tree.join("modules.order")).unwrap_or_default();
            if !dir.join("modules.dep").exists() && !order.is_empty() {
                std::fs::create_dir_all(&dir)?;
                let mut staged = String::new();
                for m in order.lines().filter(|l| !l.is_empty()) {
                    let src = tree.join(
                        m.trim_end_matches(".o").to_string()
                            + if m.ends_with(".o") { ".ko" } else { "" },
                    );
                    let rel = Path::new("kernel").join(src.strip_prefix(tree).unwrap_or(&src));
                    let dst = dir.join(&rel);
                    std::fs::create_dir_all(dst.parent().unwrap_or(&dir))?;
                    std::fs::copy(&src, &dst)
                        .with_context(|| format!("cannot copy {}", src.display()))?;
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
                key,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn reads_the_release_from_a_bzimage_header() {
        let mut img = vec![0u8; 0x400];
        img[0x202..0x206].copy_from_slice(b"HdrS");
        img[0x20e..0x210].copy_from_slice(&0x100u16.to_le_bytes());
        img[0x300..0x300 + 25].copy_from_slice(b"6.1.0-18-amd64 (debian) #");
        let p = std::env::temp_dir().join(format!("sigbench-bz-{}", std::process::id()));
        std::fs::write(&p, &img).unwrap();
        assert_eq!(image_release(&p).unwrap(), "6.1.0-18-amd64");
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
