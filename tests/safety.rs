//! Hostile signatures: what a signature file asks for can never reach outside the scratch
//! filesystem (the workload runs chrooted into it), never overflow a buffer, and every
//! failure is one line naming the file, the step and the errno, with nothing left behind.

mod common;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// A host directory holding a file a hostile signature aims at.
struct Victim {
    dir: PathBuf,
}

impl Victim {
    fn new(name: &str) -> Victim {
        let dir =
            std::env::temp_dir().join(format!("sigbench-victim-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("precious"), b"keep me").unwrap();
        std::fs::set_permissions(dir.join("precious"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        Victim { dir }
    }

    /// The host side is exactly as it was: one file, same bytes, same mode.
    fn assert_untouched(&self) {
        let names: Vec<String> = std::fs::read_dir(&self.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            ["precious"],
            "something appeared in {}",
            self.dir.display()
        );
        let p = self.dir.join("precious");
        assert_eq!(std::fs::read(&p).unwrap(), b"keep me");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777,
            0o600
        );
    }

    /// `../` enough times to reach / from ten directories down the test directory, then
    /// the victim (relative, so `validate` accepts it where the link is created).
    fn climb(&self) -> String {
        format!(
            "{}{}",
            "../".repeat(10),
            self.dir.display().to_string().trim_start_matches('/')
        )
    }
}

impl Drop for Victim {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const DEEP: &str = r#"mkdir = ["a", "a/b", "a/b/c", "a/b/c/d", "a/b/c/d/e", "a/b/c/d/e/f", "a/b/c/d/e/f/g", "a/b/c/d/e/f/g/h", "a/b/c/d/e/f/g/h/i", "a/b/c/d/e/f/g/h/i/j"]"#;

/// A signature that plants a symlink ten levels down (where its `..` chain stays inside),
/// moves it to the top (where the same chain would climb to the host's /), then runs
/// `attack` through it.
fn moved_symlink(v: &Victim, attack: &str) -> String {
    format!(
        r#"format = 1
name = "symmove"
n = 2
[setup]
{DEEP}
[[phase]]
name = "p"
steps = [
  {{ op = "symlink", target = "{}", path = "a/b/c/d/e/f/g/h/i/j/l{{i}}" }},
  {{ op = "rename", from = "a/b/c/d/e/f/g/h/i/j/l{{i}}", to = "l{{i}}" }},
  {attack}
]
"#,
        v.climb()
    )
}

fn write_sig(name: &str, text: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("sigbench-{name}-{}.toml", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p
}

/// Run a hostile signature on tmpfs: it must pass `validate` (the static checks cannot see
/// the attack), and the run either completes inside its filesystem or stops with one line
/// naming the file; either way nothing is left behind.
fn run_hostile(name: &str, text: &str) -> std::process::Output {
    let sig = write_sig(name, text);
    let v = run(&["validate", sig.to_str().unwrap()]);
    assert!(
        v.status.success(),
        "validate should accept it: {}",
        stderr(&v)
    );
    let child = spawn(&["run", sig.to_str().unwrap(), "--fs", "tmpfs", "--no-store"]);
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    eprintln!("{name}: {}{}", stdout(&out), stderr(&out));
    if !out.status.success() {
        let err = stderr(&out);
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| !l.contains("warning") && !l.contains("waiting for another"))
            .collect();
        assert_eq!(lines.len(), 1, "one line: {err}");
        assert!(
            lines[0].contains(sig.to_str().unwrap()),
            "names the file: {err}"
        );
    }
    assert!(leftovers_of(pid).is_empty(), "{:?}", leftovers_of(pid));
    std::fs::remove_file(&sig).unwrap();
    out
}

#[test]
fn a_moved_symlink_cannot_create_files_on_the_host() {
    let v = Victim::new("create");
    run_hostile(
        "symmove",
        &moved_symlink(
            &v,
            r#"{ op = "openat", path = "l{i}/PWNED_{i}", flags = "O_WRONLY|O_CREAT", mode = 0o644, slot = "f" },
  { op = "close", slot = "f" },"#,
        ),
    );
    v.assert_untouched();
}

#[test]
fn a_moved_symlink_cannot_unlink_rename_over_truncate_or_chmod_host_files() {
    for (what, attack) in [
        ("unlink", r#"{ op = "unlink", path = "l{i}/precious" },"#),
        (
            "rename-over",
            r#"{ op = "openat", path = "mine{i}", flags = "O_WRONLY|O_CREAT", slot = "f" },
  { op = "close", slot = "f" },
  { op = "rename", from = "mine{i}", to = "l{i}/precious" },"#,
        ),
        (
            "truncate",
            r#"{ op = "truncate", path = "l{i}/precious", size = 0 },"#,
        ),
        (
            "chmod",
            r#"{ op = "chmod", path = "l{i}/precious", mode = 0o777 },"#,
        ),
    ] {
        let v = Victim::new(what);
        run_hostile(what, &moved_symlink(&v, attack));
        v.assert_untouched();
    }
}

#[test]
fn an_absolute_symlink_target_is_refused_and_would_resolve_inside_anyway() {
    let v = Victim::new("absolute");
    let text = format!(
        r#"format = 1
name = "abs"
n = 1
[[phase]]
steps = [
  {{ op = "symlink", target = "{}", path = "l{{i}}" }},
  {{ op = "openat", path = "l{{i}}/PWNED", flags = "O_WRONLY|O_CREAT", slot = "f" }},
]
"#,
        v.dir.display()
    );
    let sig = write_sig("abs", &text);
    let out = run(&["run", sig.to_str().unwrap(), "--fs", "tmpfs", "--no-store"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("is absolute"), "{}", stderr(&out));
    std::fs::remove_file(&sig).unwrap();
    v.assert_untouched();

    // The kernel-side guarantee, without the static check: a thread confined the way the
    // workload is creates an absolute symlink and writes through it; the write lands
    // inside the confinement root.
    let root = std::env::temp_dir().join(format!("sigbench-confine-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let inside = root.join(v.dir.strip_prefix("/").unwrap());
    std::fs::create_dir_all(&inside).unwrap();
    let dir = root.join("work");
    std::fs::create_dir_all(&dir).unwrap();
    let target = v.dir.clone();
    measure::testbed::confine::run_confined(&root, &dir, move || {
        std::os::unix::fs::symlink(&target, "l").unwrap();
        std::fs::write("l/PWNED", b"x").unwrap();
    })
    .unwrap();
    assert!(
        inside.join("PWNED").exists(),
        "the write stayed in the root"
    );
    v.assert_untouched();
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn a_pread_larger_than_any_other_buffer_runs() {
    // Issue 11's reproduction: pread's size was not counted when the executor sized its
    // buffer, so a 1 MiB pread overflowed a 4 KiB heap buffer and glibc aborted.
    let sig = write_sig(
        "pread-big",
        r#"format = 1
name = "pread-big"
n = 50
file = "f_{i}"
dirs = ["d"]
verb = "reading"
unit = "files"
[setup]
populate = { size = 1048576 }
[[phase]]
name = "read"
steps = [
  { op = "openat", path = "{name}", flags = "O_RDONLY", slot = "f" },
  { op = "pread", slot = "f", size = 1048576, offset = 0 },
  { op = "close", slot = "f" },
]
"#,
    );
    let child = spawn(&["run", sig.to_str().unwrap(), "--fs", "ext4", "--no-store"]);
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_ok(&out);
    assert_eq!(s3e_lines(&out).len(), 1, "{}", stdout(&out));
    assert!(leftovers_of(pid).is_empty());
    std::fs::remove_file(&sig).unwrap();
}

#[test]
fn limits_are_one_line_errors_from_validate() {
    for (what, body, says) in [
        (
            "n",
            "n = 1000000000\n[[phase]]\nsteps = [{ op = \"sync\" }]\n",
            "over the limit",
        ),
        (
            "io",
            "[[phase]]\nsteps = [{ op = \"openat\", path = \"x\", slot = \"f\" }, { op = \"read\", slot = \"f\", size = 1073741824 }]\n",
            "over the limit",
        ),
        (
            "depth",
            &format!(
                "[[phase]]\nsteps = [{{ op = \"unlink\", path = \"{}x\" }}]\n",
                "a/".repeat(40)
            ),
            "components",
        ),
        (
            "dotdot",
            "[[phase]]\nsteps = [{ op = \"unlink\", path = \"../x\" }]\n",
            "leaves the test directory",
        ),
        (
            "absolute",
            "[[phase]]\nsteps = [{ op = \"unlink\", path = \"/etc/passwd\" }]\n",
            "is absolute",
        ),
    ] {
        let sig = write_sig(
            &format!("limit-{what}"),
            &format!("format = 1\nname = \"l\"\n{body}"),
        );
        let out = run(&["validate", sig.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{what}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(
            err.contains(says) && err.contains(sig.to_str().unwrap()),
            "{what}: {err}"
        );
        std::fs::remove_file(&sig).unwrap();
    }
    let out = run(&["run", "-n", "1000000000", "--fs", "tmpfs", "--no-store"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("over the limit"), "{}", stderr(&out));
}

mod generated {
    //! Generated signatures: every op, random sizes within the documented limits, replayed
    //! at small N on tmpfs. Each run either succeeds or stops with one line naming the
    //! file, the step and the errno; none crashes or leaves anything behind.

    use super::common::*;
    use measure::signature::limits::{MAX_FILE_BYTES, MAX_IO_BYTES};
    use measure::signature::step::{op_fields, op_names};
    use proptest::prelude::*;

    const PATHS: &[&str] = &["{name}", "{name}.new", "d", "d/{name}", "l{i}", "x"];
    const SLOTS: &[&str] = &["f", "g"];

    fn size(choice: u64, max: u64) -> u64 {
        // Mostly small, sometimes the limit itself or close to it.
        match choice % 8 {
            0 => max,
            1 => max / 2 + 1,
            _ => choice % 70_000,
        }
    }

    fn step(ops: &[&str], g: &(usize, usize, usize, usize, u64, u64, bool)) -> String {
        let op = ops[g.0 % ops.len()];
        let mut f = vec![format!("op = \"{op}\"")];
        for field in op_fields(op).unwrap() {
            let required = field.starts_with('!');
            let field = field.trim_start_matches('!');
            let v = match field {
                "path" | "from" | "target" => format!("\"{}\"", PATHS[g.1 % PATHS.len()]),
                "to" => format!("\"{}\"", PATHS[g.2 % PATHS.len()]),
                "slot" => format!("\"{}\"", SLOTS[g.3 % SLOTS.len()]),
                "new_slot" => format!("\"{}\"", SLOTS[(g.3 + 1) % SLOTS.len()]),
                "size"
                    if ["truncate", "ftruncate", "fallocate", "sync_file_range"].contains(&op) =>
                {
                    size(g.4, MAX_FILE_BYTES).to_string()
                }
                "size" => size(g.4, MAX_IO_BYTES).to_string(),
                "offset" => size(g.5, MAX_FILE_BYTES - MAX_IO_BYTES).to_string(),
                "mode" => "0o644".into(),
                "uid" | "gid" => "0".into(),
                "name" => "\"user.k\"".into(),
                "value" if required => "\"v\"".into(),
                _ => continue,
            };
            if op == "utimensat" && field == "slot" && g.3.is_multiple_of(2) {
                continue;
            }
            if op == "utimensat" && field == "path" && g.3 % 2 == 1 {
                continue;
            }
            f.push(format!("{field} = {v}"));
        }
        if g.6 {
            f.push("expect = \"any\"".into());
        }
        format!("{{ {} }}", f.join(", "))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn generated_signatures_replay_or_fail_in_one_line(
            steps in prop::collection::vec(
                (0usize..100, 0usize..6, 0usize..6, 0usize..2, any::<u64>(), any::<u64>(), any::<bool>()),
                1..6,
            )
        ) {
            let ops: Vec<&str> = op_names().collect();
            let mut text = String::from(
                "format = 1\nname = \"gen\"\nn = 3\n[setup]\nmkdir = [\"d\"]\npopulate = { size = 100 }\n[[phase]]\nname = \"p\"\nsteps = [\n  { op = \"openat\", path = \"{name}\", flags = \"O_RDWR\", slot = \"f\" },\n  { op = \"openat\", path = \".\", flags = \"O_RDONLY|O_DIRECTORY\", slot = \"g\" },\n",
            );
            for g in &steps {
                text.push_str(&format!("  {},\n", step(&ops, g)));
            }
            text.push_str("]\n");
            let sig = super::write_sig("gen", &text);
            let child = spawn(&[
                "run", sig.to_str().unwrap(), "--fs", "tmpfs", "--no-store",
                "--mount-opts", "size=512m",
            ]);
            let pid = child.id();
            let out = child.wait_with_output().unwrap();
            let err = stderr(&out);
            let code = out.status.code();
            prop_assert!(code == Some(0) || code == Some(1), "exit {:?}: {}\n{}", out.status, err, text);
            let lines: Vec<&str> = err
                .lines()
                .filter(|l| !l.contains("warning") && !l.contains("waiting for another"))
                .collect();
            if code == Some(1) {
                prop_assert_eq!(lines.len(), 1, "{}\n{}", err, text);
                prop_assert!(lines[0].contains(sig.to_str().unwrap()), "{}", err);
            } else {
                prop_assert!(lines.is_empty(), "{}", err);
            }
            prop_assert!(leftovers_of(pid).is_empty());
            std::fs::remove_file(&sig).unwrap();
        }
    }
}

/// Issue 39, 1: `--json OUT` never writes through a link planted at OUT's temporary name
/// (it was the fixed `OUT.tmp`) or at OUT itself: any local user could clobber any file.
#[test]
fn a_json_output_never_follows_a_planted_symlink() {
    let v = Victim::new("json");
    let out = v.dir.join("out.json");
    std::os::unix::fs::symlink(v.dir.join("precious"), v.dir.join("out.json.tmp")).unwrap();
    let o = run(&[
        "run",
        "--fs",
        "tmpfs",
        "-n",
        "5",
        "--dir",
        "a",
        "--no-store",
        "--json",
        out.to_str().unwrap(),
    ]);
    assert_ok(&o);
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .contains("\"sigbench.run\"")
    );
    std::fs::remove_file(&out).unwrap();
    std::os::unix::fs::symlink(v.dir.join("precious"), &out).unwrap();
    let o = run(&[
        "run",
        "--fs",
        "tmpfs",
        "-n",
        "5",
        "--dir",
        "a",
        "--no-store",
        "--json",
        out.to_str().unwrap(),
    ]);
    assert_ok(&o);
    assert!(!std::fs::symlink_metadata(&out).unwrap().is_symlink());
    std::fs::remove_file(&out).unwrap();
    std::fs::remove_file(v.dir.join("out.json.tmp")).unwrap();
    v.assert_untouched();
}

/// Issue 56, item 5: no output names an input. `--json k.deb` with `--kernel k.deb` left
/// 64 bytes of JSON where the package was; kernel packages, patches, a tree's files,
/// `--kconfig`, `--config`, loadfiles and signatures are inputs of every command that
/// takes them, refused as outputs before anything runs.
#[test]
fn no_output_can_name_an_input() {
    let d = std::env::temp_dir().join(format!("sigbench-inputs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let tree = d.join("linux");
    std::fs::create_dir_all(&tree).unwrap();
    for f in ["Makefile", "Kconfig"] {
        std::fs::write(tree.join(f), "keep").unwrap();
    }
    let file = |name: &str| {
        let p = d.join(name);
        std::fs::write(&p, "keep").unwrap();
        p.to_str().unwrap().to_string()
    };
    let (deb, deb2, fix, cfg, load) = (
        file("k.deb"),
        file("k2.deb"),
        file("fix.patch"),
        file("tiny.config"),
        file("client.txt"),
    );
    let patched = format!("{}+{fix}", tree.display());
    let makefile = tree.join("Makefile").display().to_string();
    let plan = ["run", "churn", "--fs", "tmpfs", "-n", "5", "--no-store"];
    fn with<'a>(plan: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        [plan, extra].concat()
    }
    for (args, says) in [
        (
            with(&plan, &["--kernel", &deb, "--json", &deb]),
            "is a kernel (--kernel)",
        ),
        (
            with(&plan, &["--kernel", &patched, "--json", &fix]),
            "is a kernel (--kernel)",
        ),
        (
            with(&plan, &["--kernel", &patched, "--json", &makefile]),
            "is inside",
        ),
        (
            with(
                &plan,
                &["--kernel", &patched, "--kconfig", &cfg, "--json", &cfg],
            ),
            "is --kconfig",
        ),
        (
            [
                &["run", "dbench", "--fs", "tmpfs", "--no-store"][..],
                &["--loadfile", &load, "--json", &load],
            ]
            .concat(),
            "is the loadfile",
        ),
        (
            [
                &["bisect", "churn", "--fs", "tmpfs", "--metric", "wall_ms"][..],
                &["--kernels", &deb, &deb2, "--bisect-json", &deb2],
            ]
            .concat(),
            "is a kernel (--kernel)",
        ),
        (
            [
                &["bisect", "churn", "--fs", "tmpfs", "--metric", "wall_ms"][..],
                &["--kernels", &deb, &deb2, "--mail", &deb],
            ]
            .concat(),
            "is a kernel (--kernel)",
        ),
        (
            vec!["calibrate", "--kernel", &deb, "--json", &deb],
            "is a kernel (--kernel)",
        ),
        (vec!["record", &load, "-o", &load], "is the trace"),
        (vec!["record", &load, "--kept", &load], "is the trace"),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    for f in [&deb, &deb2, &fix, &cfg, &load, &makefile] {
        assert_eq!(std::fs::read_to_string(f).unwrap(), "keep", "{f}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// Issue 56, item 14: `-r` and `--warmup` are bounded, in one line and at once (`-r
/// 4294967295` made every case up front and drove a 24 GB machine into a global OOM; the
/// cases are made one repetition at a time now).
#[test]
fn repetitions_and_warmups_have_limits() {
    for extra in [&["-r", "4294967295"][..], &["--warmup", "4294967295"]] {
        let started = std::time::Instant::now();
        let mut args = vec!["run", "churn", "--fs", "tmpfs", "--no-store", "-n", "5"];
        args.extend_from_slice(extra);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{extra:?}");
        let err = stderr(&out);
        assert!(
            err.contains("over the limit") && err.trim().lines().count() == 1,
            "{err}"
        );
        assert!(started.elapsed().as_secs() < 10);
    }
}

/// Issue 56, the low ones that are one line each: what is refused is refused in one line
/// that says why, before anything runs, and shows no raw control character.
#[test]
fn the_low_ones_are_refused_in_one_line_that_says_why() {
    let d = std::env::temp_dir().join(format!("sigbench-lows-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let deb = d.join("k.deb");
    std::fs::write(&deb, "not a package").unwrap();
    let k = deb.to_str().unwrap();
    let escape = d.join("esc.toml");
    std::fs::write(
        &escape,
        "format = 1\nname = \"x\\u001b[2Jy\"\n[[phase]]\nsteps = [ { op = \"sync\" } ]\n",
    )
    .unwrap();
    let e = escape.to_str().unwrap();
    let plan = ["run", "churn", "--fs", "tmpfs", "-n", "5", "--no-store"];
    let cases: Vec<(Vec<&str>, &str, Option<&str>)> = vec![
        (
            [&plan[..], &["--guest-cpus", "2", "--kernel", k]].concat(),
            "says no version",
            Some("false"),
        ),
        (
            [&plan[..], &["--guest-cpus", "2", "--kernel", k]].concat(),
            "not an executable file on the PATH",
            Some("no-such-qemu"),
        ),
        (
            [&plan[..], &["--interleave"]].concat(),
            "--interleave boots each repetition afresh",
            None,
        ),
        (
            vec!["validate", e],
            "must be one word of at most 64 visible",
            None,
        ),
        (
            vec!["run", e, "--fs", "tmpfs", "--no-store"],
            "must be one word",
            None,
        ),
        (
            vec!["calibrate", "--loads", "0"],
            "--loads 0: at least 1000",
            None,
        ),
    ];
    for (args, says, qemu) in cases {
        let mut c = sigbench();
        if let Some(q) = qemu {
            c.env("SIGBENCH_QEMU", q);
        }
        let out = c.args(&args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains('\u{1b}'), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}
