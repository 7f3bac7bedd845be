//! Where a command writes. Every output path is checked before any work: it must not be
//! the results store or its journal (`report -o sigbench.db` would replace every stored run
//! with a web page), nor one of the command's inputs, nor another output of the command;
//! its directory must exist and it must not be a directory. Paths are compared after
//! resolving symlinks, so a link to the store is the store. `-` (stdout) and devices are
//! not files and pass.

use crate::store::Location;
use anyhow::{Result, bail};
use std::path::{Path, PathBuf};

/// The files a command reads and writes, to be checked together.
#[derive(Default)]
pub struct Outputs {
    store: Vec<PathBuf>,
    inputs: Vec<(String, PathBuf)>,
    outputs: Vec<(String, PathBuf)>,
}

/// `p` resolved: symlinks followed, made absolute; a file that does not exist yet is its
/// resolved directory joined with its name.
fn resolve(p: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(p).ok().or_else(|| {
        let parent = p
            .parent()
            .filter(|x| !x.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        Some(std::fs::canonicalize(parent).ok()?.join(p.file_name()?))
    })
}

fn same(a: &Path, b: &Path) -> bool {
    match (resolve(a), resolve(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

impl Outputs {
    /// The store the command opens (an SQLite file and its `-wal` and `-shm` journal; a
    /// PostgreSQL store has no files).
    pub fn new(store: Option<&Location>) -> Outputs {
        let store = store
            .and_then(|l| l.path())
            .map(|db| {
                ["", "-wal", "-shm"]
                    .iter()
                    .map(|s| PathBuf::from(format!("{}{s}", db.display())))
                    .collect()
            })
            .unwrap_or_default();
        Outputs {
            store,
            ..Default::default()
        }
    }

    /// A file the command reads (`what` names it in an error: `the signature`).
    pub fn input(mut self, what: &str, path: impl AsRef<Path>) -> Outputs {
        self.inputs
            .push((what.to_string(), path.as_ref().to_path_buf()));
        self
    }

    /// A file the command writes (`flag` names it in an error: `-o`, `--json`); `-` is
    /// stdout and is not checked.
    pub fn output(mut self, flag: &str, path: impl AsRef<Path>) -> Outputs {
        let path = path.as_ref();
        if path != Path::new("-") {
            self.outputs.push((flag.to_string(), path.to_path_buf()));
        }
        self
    }

    /// Refuse, in one line, an output that would destroy the store, an input or another
    /// output, or that cannot be written where it points.
    pub fn check(&self) -> Result<()> {
        for (k, (flag, out)) in self.outputs.iter().enumerate() {
            let shown = out.display();
            if let Ok(m) = std::fs::metadata(out) {
                if m.is_dir() {
                    bail!("{flag} {shown} is a directory: give a file name");
                }
                if !m.is_file() {
                    // A device (/dev/null, a guest's results port): nothing to destroy.
                    continue;
                }
            } else if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty())
                && !dir.is_dir()
            {
                bail!(
                    "{flag} {shown}: the directory {} does not exist",
                    dir.display()
                );
            }
            if let Some(i) = self.store.iter().position(|s| same(out, s)) {
                bail!(
                    "{flag} {shown} is the results store{}: writing there would destroy every stored run; choose another file",
                    if i == 0 { "" } else { "'s journal" }
                );
            }
            if let Some((what, _)) = self.inputs.iter().find(|(_, i)| same(out, i)) {
                bail!("{flag} {shown} is {what}, which this command reads: choose another file");
            }
            if let Some((other, _)) = self.outputs[..k].iter().find(|(_, o)| same(out, o)) {
                bail!("{flag} and {other} name the same file {shown}: choose two");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "sigbench-outputs-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn err(o: Outputs) -> String {
        o.check().unwrap_err().to_string()
    }

    #[test]
    fn the_store_its_journal_and_links_to_them_are_refused() {
        let d = dir();
        let db = d.join("e.db");
        std::fs::write(&db, "SQLite format 3").unwrap();
        let loc = Location::parse(db.to_str().unwrap());
        let e = err(Outputs::new(Some(&loc)).output("-o", &db));
        assert!(
            e.starts_with("-o ") && e.contains("is the results store"),
            "{e}"
        );
        let wal = d.join("e.db-wal");
        let e = err(Outputs::new(Some(&loc)).output("--json", &wal));
        assert!(e.contains("the results store's journal"), "{e}");
        let link = d.join("innocent.html");
        std::os::unix::fs::symlink(&db, &link).unwrap();
        let e = err(Outputs::new(Some(&loc)).output("-o", &link));
        assert!(e.contains("is the results store"), "{e}");
        // Another spelling of the same path.
        let other = d.join("x/../e.db");
        std::fs::create_dir_all(d.join("x")).unwrap();
        assert!(
            Outputs::new(Some(&loc))
                .output("-o", other)
                .check()
                .is_err()
        );
        assert!(
            Outputs::new(Some(&loc))
                .output("-o", d.join("r.html"))
                .output("--json", "-")
                .check()
                .is_ok()
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn inputs_other_outputs_directories_and_missing_directories_are_refused() {
        let d = dir();
        let sig = d.join("sig.toml");
        std::fs::write(&sig, "format = 1").unwrap();
        let e = err(Outputs::new(None)
            .input("the signature", &sig)
            .output("-o", &sig));
        assert_eq!(
            e,
            format!(
                "-o {} is the signature, which this command reads: choose another file",
                sig.display()
            )
        );
        let a = d.join("a.json");
        let e = err(Outputs::new(None)
            .output("--json", &a)
            .output("--op-log", &a));
        assert!(
            e.starts_with("--op-log and --json name the same file"),
            "{e}"
        );
        let e = err(Outputs::new(None).output("-o", &d));
        assert!(e.ends_with("is a directory: give a file name"), "{e}");
        let e = err(Outputs::new(None).output("-o", d.join("no/such/dir/min.toml")));
        assert!(e.contains("does not exist"), "{e}");
        assert!(Outputs::new(None).output("-o", "/dev/null").check().is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
