//! Kernel packages as distributions ship them — Debian and Ubuntu `.deb`, Fedora and
//! openSUSE `.rpm`, Arch `.pkg.tar.zst` (or `.xz`, `.gz`) — recognised by their file name;
//! their version read, their files listed and their contents unpacked with the tools made
//! for each: `dpkg-deb` for a .deb, `rpm -qp` for an rpm's header and `bsdtar` (libarchive,
//! which refuses absolute paths, `..` and writing through symlinks) for rpm and Arch
//! payloads. What the files mean — which is the image, where the modules are — is
//! `kernel.rs`'s business, the same for every format.

use crate::child::checked;
use crate::testbed::require_tool;
use anyhow::{Context, Result, bail};
use model::version::{deb, rpm};
use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A package format, and whose version rules order it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// Debian, Ubuntu (archive and mainline builds).
    Deb,
    /// Fedora, openSUSE, RHEL and its rebuilds.
    Rpm,
    /// Arch Linux and its derivatives.
    Arch,
}

impl Format {
    /// The format a file's name says it is in.
    pub fn of(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_string_lossy();
        if name.ends_with(".deb") {
            Some(Format::Deb)
        } else if name.ends_with(".rpm") {
            Some(Format::Rpm)
        } else if name.contains(".pkg.tar") {
            Some(Format::Arch)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Deb => "Debian package",
            Format::Rpm => "rpm",
            Format::Arch => "Arch package",
        }
    }

    /// Compare two versions of packages of this format.
    pub fn compare(self, a: &str, b: &str) -> Ordering {
        match self {
            Format::Deb => deb::compare(a, b),
            Format::Rpm => rpm::compare(a, b, rpm::Rules::Rpm),
            Format::Arch => rpm::compare(a, b, rpm::Rules::Pacman),
        }
    }

    /// The package that brings what a kernel of this format lacks, for error messages.
    pub fn modules_package(self, release: &str) -> String {
        match self {
            Format::Deb => format!("linux-modules-{release}_….deb"),
            Format::Rpm => "kernel-modules-core-….rpm (or kernel-core)".to_string(),
            Format::Arch => "the linux package itself".to_string(),
        }
    }

    pub fn image_package(self, release: &str) -> String {
        match self {
            Format::Deb => format!("linux-image[-unsigned]-{release}_….deb"),
            Format::Rpm => "kernel-core-….rpm (or kernel-default)".to_string(),
            Format::Arch => "the linux package itself".to_string(),
        }
    }
}

/// One package file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Package {
    pub path: PathBuf,
    pub format: Format,
}

impl Package {
    /// `path` as a package, when its name says it is one. The path is made absolute:
    /// dpkg-deb, rpm and bsdtar take it as an argument, and a relative `-evil.deb` would
    /// be read as an option.
    pub fn new(path: &Path) -> Option<Package> {
        Format::of(path).map(|format| Package {
            path: std::path::absolute(path).unwrap_or_else(|_| Path::new("./").join(path)),
            format,
        })
    }

    fn shown(&self) -> String {
        self.path.display().to_string()
    }

    /// The package's version as its format writes it (Debian `Version`, rpm
    /// `[EPOCH:]VERSION-RELEASE`, Arch `pkgver` = `[EPOCH:]PKGVER-PKGREL`).
    pub fn version(&self) -> Result<String> {
        let p = &self.path;
        let v = match self.format {
            Format::Deb => checked(
                Command::new(require_tool("dpkg-deb", "dpkg")?)
                    .args(["-f"])
                    .arg(p)
                    .arg("Version"),
                &format!("dpkg-deb -f {}", self.shown()),
            )?,
            Format::Rpm => checked(
                Command::new(require_tool("rpm", "rpm")?)
                    .args(["-qp", "--nosignature", "--nodigest", "--qf"])
                    .arg("%|EPOCH?{%{EPOCH}:}:{}|%{VERSION}-%{RELEASE}")
                    .arg(p),
                &format!("rpm -qp {}", self.shown()),
            )?,
            Format::Arch => {
                let info = checked(
                    Command::new(require_tool("bsdtar", "libarchive-tools")?)
                        .args(["-xqOf"])
                        .arg(p)
                        .arg(".PKGINFO"),
                    &format!("bsdtar (reading .PKGINFO of {})", self.shown()),
                )?;
                info.lines()
                    .find_map(|l| l.strip_prefix("pkgver = "))
                    .with_context(|| format!("{}: no pkgver in its .PKGINFO", self.shown()))?
                    .to_string()
            }
        };
        let v = v.trim();
        if v.is_empty() {
            bail!("{}: the package names no version", self.shown());
        }
        Ok(v.to_string())
    }

    /// The paths the package holds, relative to the root it installs into.
    pub fn files(&self) -> Result<Vec<String>> {
        let p = &self.path;
        let listing = match self.format {
            Format::Deb => {
                // `ls -l`-like lines: the path is the sixth field (`./boot/vmlinuz-…`).
                let text = checked(
                    Command::new(require_tool("dpkg-deb", "dpkg")?)
                        .arg("-c")
                        .arg(p),
                    &format!("dpkg-deb -c {}", self.shown()),
                )?;
                text.lines()
                    .filter_map(|l| l.split_whitespace().nth(5).map(String::from))
                    .collect::<Vec<_>>()
            }
            Format::Rpm => checked(
                Command::new(require_tool("rpm", "rpm")?)
                    .args(["-qlp", "--nosignature", "--nodigest"])
                    .arg(p),
                &format!("rpm -qlp {}", self.shown()),
            )?
            .lines()
            .map(String::from)
            .collect(),
            Format::Arch => checked(
                Command::new(require_tool("bsdtar", "libarchive-tools")?)
                    .arg("-tf")
                    .arg(p),
                &format!("bsdtar -tf {}", self.shown()),
            )?
            .lines()
            .map(String::from)
            .collect(),
        };
        Ok(listing
            .into_iter()
            .map(|f| {
                f.trim_start_matches("./")
                    .trim_start_matches('/')
                    .to_string()
            })
            .filter(|f| !f.is_empty())
            .collect())
    }

    /// Unpack the package's files into `root` (created if need be).
    pub fn unpack(&self, root: &Path) -> Result<()> {
        std::fs::create_dir_all(root)?;
        let mut cmd = match self.format {
            Format::Deb => {
                let mut c = Command::new(require_tool("dpkg-deb", "dpkg")?);
                c.arg("-x").arg(&self.path).arg(root);
                c
            }
            Format::Rpm | Format::Arch => {
                let mut c = Command::new(require_tool("bsdtar", "libarchive-tools")?);
                c.arg("-xf").arg(&self.path).arg("-C").arg(root);
                c
            }
        };
        checked(&mut cmd, &format!("unpacking {}", self.shown()))?;
        Ok(())
    }
}

/// The kernel release a package's files are for: the `RELEASE` of
/// `[usr/]lib/modules/RELEASE/…` or `boot/vmlinuz-RELEASE` — when they name exactly one.
pub fn release_in<'a>(files: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut found = BTreeSet::new();
    for f in files {
        let f = f.strip_prefix("usr/").unwrap_or(f);
        if let Some(rest) = f.strip_prefix("lib/modules/") {
            if let Some((release, _)) = rest.split_once('/') {
                found.insert(release.to_string());
            }
        } else if let Some(release) = f.strip_prefix("boot/vmlinuz-")
            && !release.contains('/')
        {
            found.insert(release.to_string());
        }
    }
    found.retain(|r| !r.is_empty());
    if found.len() == 1 {
        found.into_iter().next()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 39, 19: `--kernel=-evil.deb` reached dpkg-deb as an option.
    #[test]
    fn a_package_path_is_never_an_option() {
        let p = Package::new(Path::new("-evil.deb")).unwrap();
        assert!(p.path.is_absolute(), "{}", p.path.display());
        assert!(p.path.ends_with("-evil.deb"));
    }

    #[test]
    fn formats_are_told_by_name() {
        for (name, want) in [
            (
                "linux-image-6.1.0-56-amd64_6.1.192-2_amd64.deb",
                Some(Format::Deb),
            ),
            ("kernel-core-6.12.1-300.fc41.x86_64.rpm", Some(Format::Rpm)),
            (
                "linux-6.12.1.arch1-1-x86_64.pkg.tar.zst",
                Some(Format::Arch),
            ),
            ("linux-6.1.arch1-1-x86_64.pkg.tar.xz", Some(Format::Arch)),
            ("vmlinuz-6.1.0-56-amd64", None),
            ("bzImage", None),
        ] {
            assert_eq!(Format::of(Path::new(name)), want, "{name}");
        }
    }

    #[test]
    fn the_release_is_what_the_files_name_once() {
        let deb = [
            "boot",
            "boot/vmlinuz-6.1.0-56-amd64",
            "boot/config-6.1.0-56-amd64",
            "lib/modules/6.1.0-56-amd64/kernel/fs/btrfs/btrfs.ko",
        ];
        assert_eq!(release_in(deb).as_deref(), Some("6.1.0-56-amd64"));
        let suse = [
            "usr/lib/modules/6.12.1-1-default/vmlinuz",
            "usr/lib/modules/6.12.1-1-default/kernel/fs/btrfs/btrfs.ko.zst",
        ];
        assert_eq!(release_in(suse).as_deref(), Some("6.12.1-1-default"));
        // Two kernels in one package, or none: no answer.
        assert_eq!(release_in(["boot/vmlinuz-a", "lib/modules/b/x"]), None);
        assert_eq!(release_in(["usr/share/doc/linux/README"]), None);
        assert_eq!(release_in(["lib/modules/"]), None);
    }
}
