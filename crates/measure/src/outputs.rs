//! Where a command writes. Every output path is checked before any work: it must not be
//! the results store or its journal (`report -o sigbench.db` would replace every stored run
//! with a web page), nor one of the command's inputs, nor another output of the command;
//! its directory must exist and it must not be a directory. Paths are compared after
//! resolving symlinks, so a link to the store is the store. `-` (stdout) and devices are
//! not files and pass.

use anyhow::{Context, Result, bail};
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

/// Whether `p` lies below the directory `dir`.
fn inside(p: &Path, dir: &Path) -> bool {
    dir.is_dir()
        && match (resolve(p), resolve(dir)) {
            (Some(x), Some(d)) => x != d && x.starts_with(d),
            _ => false,
        }
}

impl Outputs {
    /// The store the command opens: its SQLite file (`store::Location::path`), and with it
    /// the `-wal` and `-shm` journal; None for a PostgreSQL store, which has no files.
    pub fn new(store: Option<&Path>) -> Outputs {
        let store = store
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

    /// A `--kernel` argument's files, as inputs: the argument itself and each piece of it
    /// split at `+`, `:` and `,` (a patched tree, IMAGE:MODULES, a list) that exists — a
    /// package, an image, a patch, a modules directory or a source tree, under which
    /// nothing is written.
    pub fn kernel(mut self, arg: &str) -> Outputs {
        let pieces = std::iter::once(arg).chain(arg.split(['+', ':', ',']));
        for p in pieces.filter(|p| !p.is_empty() && Path::new(p).exists()) {
            self = self.input("a kernel (--kernel)", p);
        }
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
            if let Some((what, dir)) = self.inputs.iter().find(|(_, i)| inside(out, i)) {
                bail!(
                    "{flag} {shown} is inside {} ({what}), which this command reads and never changes: choose a file elsewhere",
                    dir.display()
                );
            }
            if let Some((other, _)) = self.outputs[..k].iter().find(|(_, o)| same(out, o)) {
                bail!("{flag} and {other} name the same file {shown}: choose two");
            }
        }
        Ok(())
    }
}

/// Write `bytes` to the file `dest` whole: into a temporary file created exclusively
/// (`O_CREAT|O_EXCL|O_NOFOLLOW`, a name no one can predict) in `dest`'s directory, then
/// renamed over `dest` — a reader never sees half a file, and a planted symlink (at the
/// temporary name or at `dest`) is never followed: the link itself is replaced. A device
/// (`/dev/null`, a guest's results port) is written straight through.
pub fn write_file(dest: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let shown = dest.display();
    // A stream: a character device, a pipe or socket — itself, or through one of the
    // system's own links (`/dev/stdout`, `/proc/self/fd/1`); a link elsewhere is replaced.
    let through_link = dest.starts_with("/dev") || dest.starts_with("/proc");
    let stream = |m: std::fs::Metadata| {
        let t = m.file_type();
        t.is_char_device() || t.is_fifo() || t.is_socket()
    };
    if std::fs::symlink_metadata(dest).is_ok_and(stream)
        || through_link && std::fs::metadata(dest).is_ok_and(stream)
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(dest)
            .with_context(|| format!("cannot open {shown}"))?;
        f.write_all(bytes)
            .and_then(|()| f.flush())
            .with_context(|| format!("cannot write {shown}"))?;
        return Ok(());
    }
    let Some(name) = dest.file_name() else {
        bail!("{shown}: give a file name");
    };
    let dir = dest
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut attempt = 0u32;
    let (tmp, mut f) = loop {
        let tmp = dir.join(format!(
            ".{}.{:016x}.tmp",
            name.to_string_lossy(),
            unpredictable()
        ));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 16 => attempt += 1,
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("cannot create a file in {} for {shown}", dir.display())
                });
            }
        }
    };
    // A file replaced keeps its permissions (a mail written over a 0600 file stays 0600);
    // a new one takes the umask's.
    let kept_mode = std::fs::symlink_metadata(dest)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.permissions());
    let written = f
        .write_all(bytes)
        .and_then(|()| match kept_mode {
            Some(p) => f.set_permissions(p),
            None => Ok(()),
        })
        .and_then(|()| f.sync_all())
        .with_context(|| format!("cannot write {shown}"))
        .and_then(|()| {
            std::fs::rename(&tmp, dest).with_context(|| format!("cannot write {shown}"))
        });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A directory a command fills with files of its own (`site -o`, `--site`,
/// `--report-dir`), held open: the directory and each one under it are opened without
/// following a link (a link there is refused, so a planted `reports` → /etc writes
/// nothing), files are written as [`write_file`] writes them but relative to the open
/// directory, only over regular files (a FIFO planted as `index.html` is refused, not
/// opened and waited on), and never over the results store.
pub struct OutDir {
    fd: std::os::fd::OwnedFd,
    /// How it was named, for messages.
    path: PathBuf,
    /// The store's files (device, inode): no page may replace them.
    store: Vec<(u64, u64)>,
}

/// A file name within an [`OutDir`]: one component, no NUL.
fn component(name: &str) -> Result<std::ffi::CString> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        bail!("`{name}` is not a file name");
    }
    std::ffi::CString::new(name).map_err(|_| anyhow::anyhow!("`{name}` holds a NUL"))
}

impl OutDir {
    /// Open `path` (created with its parents when missing) as `flag` names it
    /// (`-o`, `--site`). `path` itself must be a directory, not a link to one.
    /// `store` is the store's SQLite file, if it has one.
    pub fn open(flag: &str, path: &Path, store: Option<&Path>) -> Result<OutDir> {
        let shown = path.display();
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => bail!(
                "{flag} {shown} is a symbolic link (to {}): name the directory itself",
                std::fs::read_link(path).map_or("?".into(), |t| t.display().to_string())
            ),
            Ok(m) if !m.is_dir() => {
                bail!("{flag} {shown}: not a directory (name a directory, or one to create)")
            }
            Ok(_) => {}
            Err(_) => std::fs::create_dir_all(path)
                .with_context(|| format!("{flag} {shown}: cannot create it"))?,
        }
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| anyhow::anyhow!("{flag} {shown}: a name with a NUL"))?;
        let fd = crate::sys::os::open_dir_at(None, &c)
            .with_context(|| format!("{flag} {shown}: cannot open it as a directory"))?;
        use std::os::unix::fs::MetadataExt;
        let store = Outputs::new(store)
            .store
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| (m.dev(), m.ino()))
            .collect();
        Ok(OutDir {
            fd,
            path: path.to_path_buf(),
            store,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory `name` in this one, created when missing; a link there is refused.
    pub fn sub(&self, name: &str) -> Result<OutDir> {
        use std::os::fd::AsFd;
        let c = component(name)?;
        let shown = self.path.join(name);
        match crate::sys::os::mkdir_at(self.fd.as_fd(), &c, 0o777) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                return Err(e).with_context(|| format!("{}: cannot create it", shown.display()));
            }
            _ => {}
        }
        let fd = crate::sys::os::open_dir_at(Some(self.fd.as_fd()), &c).map_err(|e| {
            if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR)) {
                anyhow::anyhow!(
                    "{} is not a directory of its own (a link, or a file): remove it, or write elsewhere",
                    shown.display()
                )
            } else {
                anyhow::anyhow!("{}: cannot open it: {e}", shown.display())
            }
        })?;
        Ok(OutDir {
            fd,
            path: shown,
            store: self.store.clone(),
        })
    }

    /// Whether this process can create files here (root passes mode bits, not a
    /// read-only mount): a temporary file created exclusively and removed.
    pub fn writable(&self) -> std::io::Result<()> {
        use std::os::fd::AsFd;
        let probe =
            std::ffi::CString::new(format!(".sigbench-write-test-{:016x}", unpredictable()))
                .expect("no NUL in a formatted name");
        crate::sys::os::create_new_at(self.fd.as_fd(), &probe, 0o600)?;
        crate::sys::os::unlink_at(self.fd.as_fd(), &probe)
    }

    /// Whether `name` may be written: nothing there, a regular file or a link (replaced,
    /// not followed) — never a directory, FIFO, socket or device, never the store.
    pub fn check(&self, name: &str) -> Result<()> {
        use std::os::fd::AsFd;
        let c = component(name)?;
        let shown = self.path.join(name);
        let st = match crate::sys::os::lstat_at(self.fd.as_fd(), &c) {
            Ok(st) => st,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e).with_context(|| format!("{}", shown.display())),
        };
        match st.st_mode & libc::S_IFMT {
            libc::S_IFLNK => Ok(()),
            libc::S_IFREG if self.store.contains(&(st.st_dev, st.st_ino)) => bail!(
                "{} is the results store: writing there would destroy every stored run; write elsewhere",
                shown.display()
            ),
            libc::S_IFREG => Ok(()),
            _ => bail!(
                "{} is not a regular file: remove it (only files sigbench writes belong there)",
                shown.display()
            ),
        }
    }

    /// Write `bytes` to `name` whole: a temporary created exclusively beside it, then
    /// renamed over it (after [`OutDir::check`]).
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<()> {
        use std::io::Write;
        use std::os::fd::AsFd;
        self.check(name)?;
        let c = component(name)?;
        let shown = self.path.join(name);
        let mut attempt = 0u32;
        let (tmp, mut f) = loop {
            let tmp = std::ffi::CString::new(format!(".{name}.{:016x}.tmp", unpredictable()))?;
            match crate::sys::os::create_new_at(self.fd.as_fd(), &tmp, 0o666) {
                Ok(f) => break (tmp, f),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 16 => {
                    attempt += 1
                }
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!(
                            "cannot create a file in {} for {}",
                            self.path.display(),
                            shown.display()
                        )
                    });
                }
            }
        };
        let written = f
            .write_all(bytes)
            .and_then(|()| f.sync_all())
            .and_then(|()| crate::sys::os::rename_at(self.fd.as_fd(), &tmp, &c))
            .with_context(|| format!("cannot write {}", shown.display()));
        if written.is_err() {
            let _ = crate::sys::os::unlink_at(self.fd.as_fd(), &tmp);
        }
        written
    }
}

/// 64 bits no other process can predict: std's per-process random hash keys (seeded from
/// the kernel's random source) over the time and a counter.
/// A new directory of this process's own in the temporary directory (mode 0700, a name no
/// one can predict, created exclusively): where a child writes a file by name (strace's
/// log) without a planted link at a guessable name in /tmp redirecting it.
pub fn private_temp_dir(prefix: &str) -> Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    let mut attempt = 0;
    loop {
        let d = base.join(format!("{prefix}-{:016x}", unpredictable()));
        match std::fs::DirBuilder::new().mode(0o700).create(&d) {
            Ok(()) => return Ok(d),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 16 => attempt += 1,
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot create a directory in {}", base.display()));
            }
        }
    }
}

fn unpredictable() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

/// `doc` as the JSON sigbench writes: pretty, one final newline.
pub fn json_text<T: serde::Serialize>(doc: &T) -> serde_json::Result<String> {
    let mut text = serde_json::to_string_pretty(doc)?;
    text.push('\n');
    Ok(text)
}

/// Write `doc` as pretty JSON to `dest`: a path (checked and replaced whole, as
/// [`write_file`] does), or `-` for stdout, where nothing else may go when it does.
pub fn write_json<T: serde::Serialize>(doc: &T, dest: &str) -> Result<()> {
    use std::io::Write;
    let text = json_text(doc)?;
    if dest == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())
            .context("writing JSON to stdout")?;
        out.flush()?;
    } else {
        write_file(Path::new(dest), text.as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_file_never_follows_a_planted_symlink() {
        let d = dir();
        let victim = d.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let out = d.join("out.json");
        // The old fixed temporary name, and a link at the destination itself.
        std::os::unix::fs::symlink(&victim, d.join("out.json.tmp")).unwrap();
        write_file(&out, b"{}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "{}\n");
        std::fs::remove_file(&out).unwrap();
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        write_file(&out, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!std::fs::symlink_metadata(&out).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "new");
        // Nothing else is left in the directory; a device is written through.
        let mut left: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["out.json", "out.json.tmp", "victim"]);
        write_file(Path::new("/dev/null"), b"x").unwrap();
        // A link to a device outside /dev is replaced, not written through.
        std::os::unix::fs::symlink("/dev/null", &out).unwrap_or_else(|_| {
            std::fs::remove_file(&out).unwrap();
            std::os::unix::fs::symlink("/dev/null", &out).unwrap()
        });
        write_file(&out, b"file").unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "file");
        let e = write_file(&d.join("no/such/dir/x"), b"x").unwrap_err();
        assert!(e.to_string().contains("cannot create a file in"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn temporary_names_differ() {
        let a: std::collections::HashSet<u64> = (0..1000).map(|_| unpredictable()).collect();
        assert_eq!(a.len(), 1000);
    }

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
        let e = err(Outputs::new(Some(&db)).output("-o", &db));
        assert!(
            e.starts_with("-o ") && e.contains("is the results store"),
            "{e}"
        );
        let wal = d.join("e.db-wal");
        let e = err(Outputs::new(Some(&db)).output("--json", &wal));
        assert!(e.contains("the results store's journal"), "{e}");
        let link = d.join("innocent.html");
        std::os::unix::fs::symlink(&db, &link).unwrap();
        let e = err(Outputs::new(Some(&db)).output("-o", &link));
        assert!(e.contains("is the results store"), "{e}");
        // Another spelling of the same path.
        let other = d.join("x/../e.db");
        std::fs::create_dir_all(d.join("x")).unwrap();
        assert!(Outputs::new(Some(&db)).output("-o", other).check().is_err());
        assert!(
            Outputs::new(Some(&db))
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
