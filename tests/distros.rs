//! Kernels as other distributions ship them, made from the Debian packages the other tests
//! use: the real image and modules, repackaged the way each distribution lays them out —
//! an Ubuntu image + modules pair of .debs (`dpkg-deb -b`, modules as .ko.zst, no
//! modules.dep), a Fedora kernel-core + kernel-modules-core pair of rpms (`rpmbuild`,
//! everything under /lib/modules/RELEASE, .ko.xz, no modules.dep: Fedora's are %ghost), an
//! openSUSE kernel-default rpm (/usr/lib/modules/RELEASE, .ko.zst, /boot a link) and an
//! Arch package (`tar --zstd`, .PKGINFO, /usr/lib/modules/RELEASE, .ko.zst, no
//! modules.dep). Each boots and runs test3; a bisect over a list mixing them orders them
//! by release; an image package without its modules is refused before it boots.
//!
//! The packages are built once into /var/cache/sigbench/test-distros (a cold build takes
//! about a minute).

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// A Debian package unpacked: its root, kernel release and version.
struct Debian {
    root: PathBuf,
    release: String,
    version: String,
}

fn cache() -> PathBuf {
    PathBuf::from("/var/cache/sigbench/test-distros")
}

fn unpack(deb: &Path, work: &Path) -> Debian {
    let root = work.join("debian");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    sh(
        "dpkg-deb",
        &["-x", deb.to_str().unwrap(), root.to_str().unwrap()],
    );
    let release = std::fs::read_dir(root.join("lib/modules"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .file_name()
        .to_string_lossy()
        .into_owned();
    let version = sh("dpkg-deb", &["-f", deb.to_str().unwrap(), "Version"]);
    Debian {
        root,
        release,
        version,
    }
}

/// Move `from` to `to` (parents created).
fn mv(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::rename(from, to)
        .unwrap_or_else(|e| panic!("{} → {}: {e}", from.display(), to.display()));
}

/// The modules under `dir` as the four distributions ship them: compressed as `ext`
/// ("zst" or "xz") from whatever they were, and without what depmod makes (their packages
/// have no modules.dep).
fn as_shipped(dir: &Path, ext: &str) {
    let d = dir.to_str().unwrap();
    // xz removes what it compressed or decompressed by itself; zstd is told to.
    let xz: &[&str] = &["xz", "-q", "-T0", "--check=crc32"];
    let zstd: &[&str] = &["zstd", "-q", "-T0", "--rm"];
    for (from, tool) in [("*.ko.xz", xz), ("*.ko.zst", zstd)] {
        if !from.ends_with(ext) {
            let mut args = vec![d, "-name", from, "-exec"];
            args.extend_from_slice(tool);
            args.extend_from_slice(&["-d", "{}", "+"]);
            sh("find", &args);
        }
    }
    let mut args = vec![d, "-name", "*.ko", "-exec"];
    args.extend_from_slice(if ext == "xz" { xz } else { zstd });
    args.extend_from_slice(&["{}", "+"]);
    sh("find", &args);
    let keep = [
        "modules.order",
        "modules.builtin",
        "modules.builtin.modinfo",
    ];
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("modules.") && !keep.contains(&name.as_str()) {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
}

/// A .deb of `package` at `version` holding everything under `stage`, built into `out`
/// as `package_version_amd64.deb` (zstd, as Ubuntu's).
fn deb_build(stage: &Path, package: &str, version: &str, out: &Path) {
    let dir = stage.join("DEBIAN");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("control"),
        format!(
            "Package: {package}\nVersion: {version}\nArchitecture: amd64\nMaintainer: sigbench tests <root@localhost>\nDescription: {package}, repackaged from Debian's for sigbench's tests\n"
        ),
    )
    .unwrap();
    let file = out.join(format!("{package}_{version}_amd64.deb"));
    sh(
        "dpkg-deb",
        &[
            "--root-owner-group",
            "-Zzstd",
            "-z1",
            "-b",
            stage.to_str().unwrap(),
            file.to_str().unwrap(),
        ],
    );
}

/// An rpm of everything under `stage`, built with rpmbuild as it is (no stripping, no
/// debuginfo, no dependencies), with a zstd payload as Fedora's and openSUSE's.
fn rpm_build(stage: &Path, name: &str, version: &str, release: &str, work: &Path) -> PathBuf {
    let top = work.join(format!("rpmbuild-{name}"));
    let _ = std::fs::remove_dir_all(&top);
    std::fs::create_dir_all(top.join("SPECS")).unwrap();
    let mut files = String::new();
    for e in std::fs::read_dir(stage).unwrap().flatten() {
        files.push_str(&format!("/{}\n", e.file_name().to_string_lossy()));
    }
    let spec = top.join("SPECS").join(format!("{name}.spec"));
    std::fs::write(
        &spec,
        format!(
            "Name: {name}\nVersion: {version}\nRelease: {release}\nSummary: {name}, repackaged from Debian's\nLicense: GPL-2.0-only\nAutoReqProv: no\n\
             %define __os_install_post %{{nil}}\n%define debug_package %{{nil}}\n%define _build_id_links none\n\
             %define _binary_payload w3.zstdio\n\
             %description\n{name} for sigbench's tests.\n\
             %install\ncp -a {}/. %{{buildroot}}/\n\
             %files\n{files}",
            stage.display()
        ),
    )
    .unwrap();
    sh(
        "rpmbuild",
        &[
            "-bb",
            "--quiet",
            "--target",
            "x86_64",
            "--define",
            &format!("_topdir {}", top.display()),
            spec.to_str().unwrap(),
        ],
    );
    let dir = top.join("RPMS/x86_64");
    std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .next()
        .unwrap_or_else(|| panic!("rpmbuild left no rpm in {}", dir.display()))
        .path()
}

/// openSUSE's and Arch's layout in `stage`: the image and the modules (.ko.zst, no
/// modules.dep) in `usr/lib/modules/RELEASE`, which is returned beside the stage.
fn usr_lib_modules(d: &Debian, stage: &Path) -> (PathBuf, PathBuf) {
    let r = &d.release;
    let modules = d.root.join("lib/modules").join(r);
    let dir = stage.join("usr/lib/modules").join(r);
    as_shipped(&modules, "zst");
    mv(&modules, &dir);
    mv(
        &d.root.join(format!("boot/vmlinuz-{r}")),
        &dir.join("vmlinuz"),
    );
    (stage.to_path_buf(), dir)
}

/// `deb`'s kernel as `layout` ships it: the package files, built once into the cache.
fn repackaged(deb: &Path, layout: &str) -> Vec<PathBuf> {
    let stem = deb.file_stem().unwrap().to_string_lossy().into_owned();
    let out = cache().join(&stem).join(layout);
    // The tests of this file run side by side: one builds, the others wait for it.
    std::fs::create_dir_all(cache()).unwrap();
    let lock = std::fs::File::create(cache().join(".lock")).unwrap();
    use std::os::fd::AsFd;
    measure::sys::os::flock(lock.as_fd(), libc::LOCK_EX).unwrap();
    let listed = |out: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(out)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e != "done"))
            .collect();
        // The image's package first (it sorts first: "kernel-core" < "kernel-modules-core",
        // "linux-image" < "linux-modules").
        v.sort();
        v
    };
    if out.join(".done").exists() {
        return listed(&out);
    }
    let started = std::time::Instant::now();
    let work = cache().join(&stem).join(format!("{layout}.work"));
    let _ = std::fs::remove_dir_all(&work);
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let d = unpack(deb, &work);
    let r = &d.release;
    let (upstream, revision) = d.version.split_once('-').unwrap();
    let revision = revision.replace('~', "_");
    let modules = d.root.join("lib/modules").join(r);
    let boot = d.root.join("boot");
    // Links to the headers a distribution's modules directory points at: not shipped.
    for l in ["build", "source"] {
        let _ = std::fs::remove_file(modules.join(l));
    }
    match layout {
        "ubuntu" => {
            let img = work.join("image");
            mv(
                &boot.join(format!("vmlinuz-{r}")),
                &img.join(format!("boot/vmlinuz-{r}")),
            );
            deb_build(&img, &format!("linux-image-unsigned-{r}"), &d.version, &out);
            let m = work.join("modules");
            as_shipped(&modules, "zst");
            mv(&modules, &m.join("lib/modules").join(r));
            for f in ["config", "System.map"] {
                mv(
                    &boot.join(format!("{f}-{r}")),
                    &m.join(format!("boot/{f}-{r}")),
                );
            }
            deb_build(&m, &format!("linux-modules-{r}"), &d.version, &out);
        }
        "fedora" => {
            // kernel-core: the image, config and module lists; kernel-modules-core: the
            // modules (btrfs among them).
            let core = work.join("core").join("lib/modules").join(r);
            std::fs::create_dir_all(&core).unwrap();
            mv(&boot.join(format!("vmlinuz-{r}")), &core.join("vmlinuz"));
            mv(&boot.join(format!("config-{r}")), &core.join("config"));
            mv(
                &boot.join(format!("System.map-{r}")),
                &core.join("System.map"),
            );
            as_shipped(&modules, "xz");
            for f in [
                "modules.order",
                "modules.builtin",
                "modules.builtin.modinfo",
            ] {
                mv(&modules.join(f), &core.join(f));
            }
            let release = format!("{revision}.fc41");
            let a = rpm_build(&work.join("core"), "kernel-core", upstream, &release, &work);
            mv(&a, &out.join(a.file_name().unwrap()));
            let mc = work.join("modules-core");
            mv(&modules, &mc.join("lib/modules").join(r));
            let b = rpm_build(&mc, "kernel-modules-core", upstream, &release, &work);
            mv(&b, &out.join(b.file_name().unwrap()));
        }
        "opensuse" => {
            let (s, dir) = usr_lib_modules(&d, &work.join("suse"));
            mv(&boot.join(format!("config-{r}")), &dir.join("config"));
            mv(
                &boot.join(format!("System.map-{r}")),
                &dir.join("System.map"),
            );
            std::fs::create_dir_all(s.join("boot")).unwrap();
            std::os::unix::fs::symlink(
                format!("../usr/lib/modules/{r}/vmlinuz"),
                s.join(format!("boot/vmlinuz-{r}")),
            )
            .unwrap();
            let a = rpm_build(
                &s,
                "kernel-default",
                upstream,
                &format!("{revision}.1"),
                &work,
            );
            mv(&a, &out.join(a.file_name().unwrap()));
        }
        "arch" => {
            let (s, dir) = usr_lib_modules(&d, &work.join("arch"));
            std::fs::write(dir.join("pkgbase"), "linux\n").unwrap();
            let pkgver = format!("{upstream}.arch1-{}", revision.split('_').next().unwrap());
            std::fs::write(
                s.join(".PKGINFO"),
                format!(
                    "# Generated by sigbench's tests\npkgname = linux\npkgbase = linux\npkgver = {pkgver}\npkgdesc = The Linux kernel and modules\narch = x86_64\n"
                ),
            )
            .unwrap();
            let file = out.join(format!("linux-{pkgver}-x86_64.pkg.tar.zst"));
            sh(
                "tar",
                &[
                    "--zstd",
                    "-cf",
                    file.to_str().unwrap(),
                    "-C",
                    s.to_str().unwrap(),
                    ".PKGINFO",
                    "usr",
                ],
            );
        }
        other => panic!("no layout {other}"),
    }
    std::fs::remove_dir_all(&work).unwrap();
    std::fs::write(out.join(".done"), "").unwrap();
    eprintln!(
        "{layout} packages of {stem}: built in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    listed(&out)
}

/// One `--kernel` argument: a kernel's package files joined by commas.
fn joined(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// The four layouts, and the release each boots: Ubuntu's from the newest 6.1, openSUSE's
/// from the one before, Fedora's from the newest 6.12 (Debian's 6.12 modules are .ko.xz
/// already), Arch's from the 6.12 before.
fn four_layouts() -> Vec<(&'static str, Vec<PathBuf>, String)> {
    let from = [
        ("ubuntu", debian_kernel_nth(DEB_61, 0)),
        ("opensuse", debian_kernel_nth(DEB_61, 1)),
        ("fedora", debian_kernel_nth(DEB_612, 0)),
        ("arch", debian_kernel_nth(DEB_612, 1)),
    ];
    from.into_iter()
        .map(|(layout, deb)| (layout, repackaged(&deb, layout), release_of(&deb)))
        .collect()
}

#[test]
fn each_distributions_packages_boot_and_run_test3_with_exact_evictions() {
    let layouts = four_layouts();
    let mut args = vec!["run".to_string()];
    for (_, files, _) in &layouts {
        args.extend(["--kernel".to_string(), joined(files)]);
    }
    args.extend(["--jobs", "2", "--no-store", "--json", "-"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&args);
    assert_ok(&out);
    let runs = export_runs(&out);
    assert_eq!(runs.len(), 4);
    for (run, (layout, _, release)) in runs.iter().zip(&layouts) {
        assert_eq!(run["host"]["kernel_release"], release.as_str(), "{layout}");
        let cases = run["cases"].as_array().unwrap();
        assert_eq!(cases.len(), 3, "{layout}");
        for c in cases {
            let evictions = c["counters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["name"] == "inode_evictions")
                .unwrap();
            assert_eq!(evictions["value"], 250, "{layout} {}", c["dir"]);
        }
    }
}

#[test]
fn a_list_mixing_layouts_is_bisected_in_release_order() {
    let layouts = four_layouts();
    // Given newest first and shuffled; ordered by release: openSUSE's 6.1, Ubuntu's 6.1,
    // Arch's 6.12 (the first with stable directory offsets), Fedora's 6.12.
    let pick = |l: &str| layouts.iter().find(|x| x.0 == l).unwrap();
    let given = ["fedora", "ubuntu", "arch", "opensuse"].map(pick);
    let in_order = ["opensuse", "ubuntu", "arch", "fedora"].map(|l| pick(l).2.clone());
    let names: Vec<String> = given.iter().map(|x| joined(&x.1)).collect();
    let dir = std::env::temp_dir().join(format!("sigbench-distros-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("b.db");
    let json = dir.join("b.json");
    let out = run(&bisect_args(
        &names,
        db.to_str().unwrap(),
        &["--bisect-json", json.to_str().unwrap()],
    ));
    assert_ok(&out);
    let text = stdout(&out);
    assert!(
        text.contains(&format!("first bad: {}", in_order[2])),
        "{text}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for step in doc["steps"].as_array().unwrap() {
        let i = step["index"].as_u64().unwrap() as usize;
        assert_eq!(step["kernel"], in_order[i].as_str(), "{doc}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The error a refused `run` printed, checked to be one line. A note that
/// this run waited for a parallel test preparing the same kernel is progress,
/// not part of the error, and is left out.
fn one_error_line(out: &std::process::Output) -> String {
    let err = stderr(out);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("waiting for another sigbench"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    lines[0].to_string()
}

#[test]
fn a_package_without_what_the_plan_needs_is_one_line_before_it_boots() {
    let layouts = four_layouts();
    let files = |l: &str| layouts.iter().find(|x| x.0 == l).unwrap().1.clone();
    let (ubuntu, fedora) = (files("ubuntu"), files("fedora"));
    // Ubuntu's image package alone: its modules package is named.
    let out = run(&["run", "--kernel", ubuntu[0].to_str().unwrap(), "--no-store"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = one_error_line(&out);
    assert!(
        err.contains("comes without its modules") && err.contains("linux-modules-"),
        "{err}"
    );
    // Fedora's kernel-core alone: no btrfs among its modules, named before it boots.
    let out = run(&["run", "--kernel", fedora[0].to_str().unwrap(), "--no-store"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = one_error_line(&out);
    assert!(err.contains("no btrfs module"), "{err}");
    assert!(!err.contains("boot"), "refused before booting: {err}");
    // Two kernels' packages together, or two formats: refused by name.
    let two = format!("{},{}", fedora[0].display(), files("opensuse")[0].display());
    let out = run(&["run", "--kernel", &two, "--no-store"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("more than one kernel"),
        "{}",
        stderr(&out)
    );
    // doctor says which formats this machine unpacks.
    let doctor = stdout(&run(&["doctor"]));
    assert!(
        doctor.lines().any(|l| l.starts_with("kernel packages")
            && l.contains("ok")
            && l.contains("`--kernel` unpacks .deb, .rpm, .pkg.tar.zst")),
        "{doctor}"
    );
    let mixed = format!("{},{}", ubuntu[1].display(), fedora[1].display());
    let out = run(&["run", "--kernel", &mixed, "--no-store"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("of one format"), "{}", stderr(&out));
}
