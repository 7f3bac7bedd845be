//! `run --kernel TREE+PATCH…` on a stand-in kernel tree: a git tree whose Makefile makes
//! its "bzImage" by concatenating its sources in milliseconds, so what sigbench's builds do
//! to the user's tree, their worktrees, their files outside the tree and the cache is
//! checked without compiling a kernel (tests/tree.rs builds real ones). The images are not
//! bootable: each command stops after its builds, at the first boot.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sigbench-variants-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn git(tree: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(tree)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The stand-in tree at `d/linux`, one commit: `src/a.c`, a Makefile whose `bzImage` is
/// the sources concatenated in name order (after `FAKE_SLEEP` seconds).
fn tree(d: &Path) -> PathBuf {
    let t = d.join("linux");
    std::fs::create_dir_all(t.join("src")).unwrap();
    std::fs::write(
        t.join("Makefile"),
        "tinyconfig:\n\techo CONFIG_TINY=y > .config\nolddefconfig:\n\t@true\n\
         bzImage:\n\tsleep $${FAKE_SLEEP:-0}\n\tmkdir -p arch/x86/boot\n\
         \tcat $$(find src -type f | sort) > arch/x86/boot/bzImage\n",
    )
    .unwrap();
    std::fs::write(t.join("Kconfig"), "").unwrap();
    std::fs::write(t.join("src/a.c"), "int a;\n").unwrap();
    git(&t, &["init", "-q"]);
    git(&t, &["add", "-A"]);
    git(&t, &["commit", "-qm", "base"]);
    t
}

/// A patch of `tree` made by `change` (run in a scratch clone), as `git diff` writes it.
fn patch(tree: &Path, path: &Path, change: &dyn Fn(&Path)) -> PathBuf {
    let scratch = path.with_extension("clone");
    let _ = std::fs::remove_dir_all(&scratch);
    git(
        tree.parent().unwrap(),
        &[
            "clone",
            "-q",
            tree.to_str().unwrap(),
            scratch.to_str().unwrap(),
        ],
    );
    change(&scratch);
    git(&scratch, &["add", "-A"]);
    std::fs::write(path, git(&scratch, &["diff", "--cached", "--binary"])).unwrap();
    std::fs::remove_dir_all(&scratch).unwrap();
    path.to_path_buf()
}

/// `sigbench run churn --fs tmpfs --kernel K…` with the cache in `d/cache`: its output.
fn run_kernels(d: &Path, kernels: &[String], extra: &[&str]) -> std::process::Output {
    let cache = d.join("cache");
    let mut args = vec![
        "run",
        "churn",
        "--fs",
        "tmpfs",
        "-n",
        "10",
        "--no-store",
        "--cache-dir",
        cache.to_str().unwrap(),
    ];
    for k in kernels {
        args.extend_from_slice(&["--kernel", k]);
    }
    args.extend_from_slice(extra);
    run(&args)
}

/// The images built, by variant key, read back.
fn images(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = glob::glob(&format!(
        "{}/cache/builds/*/variants/*/bzImage",
        d.display()
    ))
    .unwrap()
    .flatten()
    .map(|p| std::fs::read_to_string(p).unwrap())
    .collect();
    v.sort();
    v
}

fn arg(tree: &Path, patches: &[&Path]) -> String {
    let mut s = tree.display().to_string();
    for p in patches {
        s.push('+');
        s.push_str(&p.display().to_string());
    }
    s
}

/// Issue 56, item 3: a patch that replaces a committed link (to a directory outside the
/// tree) with a directory holding a file. Before the fix the next variant's cleanup put
/// the link back and then removed the "created" file through it: the user's file outside
/// the tree was gone. Now such a patch is refused, and nothing outside is touched.
#[test]
fn a_patch_that_turns_a_link_into_a_directory_is_refused_and_nothing_outside_is_touched() {
    let d = dir("link");
    let outside = d.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("victim"), "precious").unwrap();
    let t = tree(&d);
    std::os::unix::fs::symlink(&outside, t.join("lnk")).unwrap();
    git(&t, &["add", "-A"]);
    git(&t, &["commit", "-qm", "a link"]);
    let p = patch(&t, &d.join("swap.patch"), &|c| {
        std::fs::remove_file(c.join("lnk")).unwrap();
        std::fs::create_dir(c.join("lnk")).unwrap();
        std::fs::write(c.join("lnk/victim"), "x\n").unwrap();
    });
    let out = run_kernels(&d, &[arg(&t, &[&p]), arg(&t, &[])], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("swap.patch creates, removes or changes a symbolic link"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("victim")).unwrap(),
        "precious"
    );
    assert!(
        std::fs::symlink_metadata(t.join("lnk"))
            .unwrap()
            .is_symlink()
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// Issue 56, item 4: the user's own worktrees are theirs — one whose directory is absent
/// at the moment (an unmounted disk) keeps its metadata; before the fix sigbench ran `git
/// worktree prune` on the user's tree. The tree gets no worktree, ref or config of ours.
#[test]
fn the_users_worktrees_and_refs_are_never_touched() {
    let d = dir("worktrees");
    let t = tree(&d);
    let away = d.join("on-a-usb-disk");
    git(
        &t,
        &["worktree", "add", "-q", "--detach", away.to_str().unwrap()],
    );
    std::fs::write(away.join("src/a.c"), "int staged;\n").unwrap();
    git(&away, &["add", "src/a.c"]);
    let moved = d.join("unplugged");
    std::fs::rename(&away, &moved).unwrap();
    let before = (
        git(&t, &["worktree", "list", "--porcelain"]),
        git(&t, &["for-each-ref"]),
        std::fs::read_to_string(t.join(".git/config")).unwrap(),
    );
    let p = patch(&t, &d.join("fix.patch"), &|c| {
        std::fs::write(c.join("src/a.c"), "int a = 1;\n").unwrap()
    });
    let out = run_kernels(&d, &[arg(&t, &[]), arg(&t, &[&p])], &[]);
    assert!(
        stderr(&out).contains("fix.patch: built in"),
        "{}",
        stderr(&out)
    );
    let after = (
        git(&t, &["worktree", "list", "--porcelain"]),
        git(&t, &["for-each-ref"]),
        std::fs::read_to_string(t.join(".git/config")).unwrap(),
    );
    assert_eq!(before, after);
    std::fs::rename(&moved, &away).unwrap();
    assert_eq!(
        git(&away, &["diff", "--cached", "--name-only"]),
        "src/a.c\n"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// Issue 56, item 9: a plain `diff -u` patch that creates a file (no git `create mode`
/// line). Before the fix the file stayed in the build tree, so the next variant that
/// creates it failed ("already exists in working directory") and the unpatched tree was
/// built with it. Each variant's image holds its own sources only.
#[test]
fn files_a_plain_diff_creates_do_not_leak_into_the_next_variant() {
    let d = dir("created");
    let t = tree(&d);
    let new = |name: &str, text: &str| {
        let p = d.join(name);
        std::fs::write(
            &p,
            format!("--- /dev/null\n+++ b/src/new.c\n@@ -0,0 +1 @@\n+{text}\n"),
        )
        .unwrap();
        p
    };
    let (one, two) = (new("one.patch", "int one;"), new("two.patch", "int two;"));
    let kernels = [arg(&t, &[&one]), arg(&t, &[&two]), arg(&t, &[])];
    let out = run_kernels(&d, &kernels, &[]);
    let err = stderr(&out);
    assert!(err.contains("two.patch: built in"), "{err}");
    assert_eq!(
        images(&d),
        ["int a;\n", "int a;\nint one;\n", "int a;\nint two;\n"]
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// Issue 56, item 10: two sigbench runs building variants of one tree at once take turns
/// (a lock on the tree's build directory), so each variant is built from its own sources;
/// before the fix the second run reset the sources under the first one's build and an
/// image of the other sources was kept as the variant, for good.
#[test]
fn two_runs_on_one_tree_build_each_variant_from_its_own_sources() {
    let d = dir("race");
    let t = tree(&d);
    let p = |name: &str, text: &str| {
        patch(&t, &d.join(name), &|c| {
            std::fs::write(c.join("src/a.c"), format!("{text}\n")).unwrap()
        })
    };
    let (x, y) = (p("x.patch", "int x;"), p("y.patch", "int y;"));
    let spawn = |k: String| {
        let mut c = sigbench();
        c.env("FAKE_SLEEP", "1").args([
            "run",
            "churn",
            "--fs",
            "tmpfs",
            "-n",
            "10",
            "--no-store",
            "--cache-dir",
            d.join("cache").to_str().unwrap(),
            "--kernel",
            &k,
        ]);
        c.spawn().unwrap()
    };
    let a = spawn(arg(&t, &[&x]));
    std::thread::sleep(std::time::Duration::from_millis(300));
    let b = spawn(arg(&t, &[&y]));
    for mut c in [a, b] {
        c.wait().unwrap();
    }
    assert_eq!(images(&d), ["int x;\n", "int y;\n"]);
    std::fs::remove_dir_all(&d).unwrap();
}

/// Issue 56, item 11: two patches with one file name (`a/fix.patch`, `b/fix.patch`) are
/// two kernels, labelled apart: each label takes its build's digits.
#[test]
fn two_patches_of_one_name_get_two_labels() {
    let d = dir("names");
    let t = tree(&d);
    let mut patches = Vec::new();
    for (sub, text) in [("a", "int a = 1;"), ("b", "int a = 2;")] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
        patches.push(patch(&t, &d.join(sub).join("fix.patch"), &|c| {
            std::fs::write(c.join("src/a.c"), format!("{text}\n")).unwrap()
        }));
    }
    let variants: Vec<_> = patches
        .iter()
        .chain(&patches[..1])
        .map(|p| {
            measure::kbuild::Variant::parse(&arg(&t, &[p]))
                .unwrap()
                .unwrap()
        })
        .collect();
    let built = measure::kbuild::build_variants(
        &variants,
        measure::testbed::Fs::Tmpfs,
        None,
        &d.join("cache"),
        &mut |_| {},
    )
    .unwrap();
    let labels: Vec<&str> = built.iter().map(|b| b.suffix.as_str()).collect();
    assert!(labels.iter().all(|l| l.starts_with("+fix@")), "{labels:?}");
    assert_ne!(labels[0], labels[1]);
    assert_eq!(labels[0], labels[2], "one kernel, one label");
    std::fs::remove_dir_all(&d).unwrap();
}

/// Issue 56, item 15: a configured, built tree and a patch of it. Before the fix the tree
/// was booted as built (its own .config) and the variant built from tinyconfig: two
/// configs, and the comparison measured them. Now both are built by sigbench from the
/// tree's .config, and the output says so.
#[test]
fn a_built_tree_and_its_patch_are_built_from_one_config() {
    let d = dir("config");
    let t = tree(&d);
    std::fs::write(t.join(".config"), "CONFIG_SMP=y\n").unwrap();
    sh("make", &["-s", "-C", t.to_str().unwrap(), "bzImage"]);
    let p = patch(&t, &d.join("fix.patch"), &|c| {
        std::fs::write(c.join("src/a.c"), "int a = 1;\n").unwrap()
    });
    let out = run_kernels(&d, &[arg(&t, &[]), arg(&t, &[&p])], &[]);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "every variant built from the tree's own {}/.config",
            t.display()
        )),
        "{err}"
    );
    let configs: Vec<String> =
        glob::glob(&format!("{}/cache/builds/*/variants/*/config", d.display()))
            .unwrap()
            .flatten()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
    assert_eq!(configs.len(), 2, "{err}");
    assert_eq!(configs[0], configs[1]);
    assert!(configs[0].starts_with("CONFIG_SMP=y\n"), "{}", configs[0]);
    // Alone, a built tree is booted as it is.
    let out = run_kernels(&d, &[arg(&t, &[])], &[]);
    assert!(!stderr(&out).contains("building"), "{}", stderr(&out));
    std::fs::remove_dir_all(&d).unwrap();
}

/// What a run of several kernels cannot do is refused before any is built.
#[test]
fn options_a_list_of_kernels_cannot_take_are_refused_before_building() {
    let d = dir("early");
    let t = tree(&d);
    for extra in [&["--label", "x"][..], &["--op-log", "/tmp/x.tsv"][..]] {
        let out = run_kernels(&d, &[arg(&t, &[]), "host".into()], extra);
        assert_eq!(out.status.code(), Some(1), "{extra:?}");
        assert!(!stderr(&out).contains("building"), "{}", stderr(&out));
        assert_eq!(stderr(&out).trim().lines().count(), 1, "{}", stderr(&out));
    }
    std::fs::remove_dir_all(&d).unwrap();
}
