//! `sigbench record`: from a real program's strace to a replayable signature.
//!
//! 1. [`strace`] parses the trace into calls.
//! 2. `Resolver` follows every process's working directory, root (chroot) and descriptor
//!    table (opens, dup, close, clone) so that each call's paths and descriptors become
//!    absolute paths and "open file" identities.
//! 3. The tree is chosen: `--under`, or the directory in which the most files were changed.
//! 4. Each path below it is assigned to a **file**: a path that still exists at the end is
//!    a file of its own; a temporary one (renamed away, unlinked, never created) belongs to
//!    the file whose name it extends (`x;6b0347b8`, `x.dpkg-new`, `x-RPMDELETE` → `x`).
//! 5. Each file's calls become steps with `{name}` templates; files with the most common
//!    sequence of steps make the signature, and the cross-file order makes its phases.
//!
//! What does not change the filesystem (stat probes, reads) is dropped unless asked to
//! keep it; everything dropped is counted with its reason.

pub mod strace;

use crate::signature::step::{Flags, flag_table_of, parse_flags};
use crate::signature::{Signature, template::Template};
use crate::sys::Errno;
use anyhow::{Result, bail};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;
use std::path::{Component, Path, PathBuf};
use strace::{Arg, Call, Ret};

/// How to record.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The tree to record; by default the directory in which the most files changed.
    pub under: Option<PathBuf>,
    /// Keep stat/access/read probes instead of dropping them.
    pub keep_probes: bool,
    /// Working directory of the traced program at its start (for relative paths before
    /// any chdir, when the trace was taken without -y).
    pub cwd: Option<PathBuf>,
    /// Name of the signature.
    pub name: String,
    /// Where the trace came from, for the description.
    pub source: String,
}

/// The recorded signature and what happened on the way.
#[derive(Clone, Debug)]
pub struct Recording {
    pub toml: String,
    pub tree: PathBuf,
    pub files: usize,
    pub steps_per_file: usize,
    /// Steps of each phase.
    pub phases: Vec<usize>,
    /// Calls turned into steps (files × steps).
    pub kept: usize,
    /// Calls not turned into steps, by reason.
    pub dropped: BTreeMap<String, usize>,
    pub notes: Vec<String>,
    /// For each kept call: (trace line, file index, phase number, syscall), all 1-based.
    pub kept_calls: Vec<(usize, u64, usize, String)>,
}

impl Recording {
    /// A short human summary.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "recorded {} files under {}: {} steps per file in {} phase{} ({}), {} calls kept\n",
            self.files,
            self.tree.display(),
            self.steps_per_file,
            self.phases.len(),
            if self.phases.len() == 1 { "" } else { "s" },
            self.phases
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join("+"),
            self.kept
        );
        let total: usize = self.dropped.values().sum();
        if total > 0 {
            writeln!(s, "dropped {total} calls:").unwrap();
            let mut v: Vec<_> = self.dropped.iter().collect();
            v.sort_by_key(|(k, n)| (std::cmp::Reverse(**n), (*k).clone()));
            for (reason, n) in v {
                writeln!(s, "  {n:>7}  {reason}").unwrap();
            }
        }
        for n in &self.notes {
            writeln!(s, "note: {n}").unwrap();
        }
        s
    }
}

/// Lexically normalise an absolute path (`.`/`..`, duplicate slashes).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

/// One open file description, identified by the call that opened it.
type OpenId = usize;

#[derive(Clone, Debug)]
struct Fd {
    path: PathBuf,
    /// Set when the descriptor came from an open or dup the recorder can replay.
    open: Option<OpenId>,
}

#[derive(Clone, Debug, Default)]
struct Proc {
    cwd: Option<PathBuf>,
    root: PathBuf,
    fds: HashMap<i64, Fd>,
}

/// A call with its paths and descriptor resolved.
#[derive(Clone, Debug)]
struct Touch {
    order: usize,
    call: Call,
    /// Paths the call names, absolute, in argument order.
    paths: Vec<PathBuf>,
    /// The open file a descriptor-based call works on.
    fd: Option<(PathBuf, Option<OpenId>)>,
    /// For opens and dups that succeeded: the new open file.
    opened: Option<OpenId>,
    /// Why the call cannot become a step, if it cannot.
    unresolved: Option<String>,
}

fn str_arg(a: Option<&Arg>) -> Option<&[u8]> {
    match a {
        Some(Arg::Str { bytes, .. }) => Some(bytes),
        _ => None,
    }
}

fn num_arg(a: Option<&Arg>) -> Option<i64> {
    match a {
        Some(Arg::Num { value, .. }) => Some(*value),
        _ => None,
    }
}

fn other_arg(a: Option<&Arg>) -> Option<String> {
    match a {
        Some(Arg::Other(s)) => Some(s.clone()),
        Some(Arg::Num { value, .. }) => Some(value.to_string()),
        _ => None,
    }
}

/// How a syscall's path arguments are laid out: (dirfd index or None, path index).
fn path_layout(name: &str) -> &'static [(Option<usize>, usize)] {
    match name {
        "open" | "creat" | "unlink" | "rmdir" | "mkdir" | "stat" | "lstat" | "access"
        | "truncate" | "chmod" | "chown" | "lchown" | "setxattr" | "getxattr" | "removexattr"
        | "chdir" | "chroot" => &[(None, 0)],
        "openat" | "unlinkat" | "mkdirat" | "newfstatat" | "fstatat64" | "statx" | "faccessat"
        | "fchmodat" | "fchownat" | "utimensat" => &[(Some(0), 1)],
        "rename" | "link" => &[(None, 0), (None, 1)],
        "renameat" | "renameat2" | "linkat" => &[(Some(0), 1), (Some(2), 3)],
        "symlink" => &[(None, 1)],
        "symlinkat" => &[(Some(1), 2)],
        _ => &[],
    }
}

/// Syscalls whose first argument is the descriptor they work on.
const FD_CALLS: &[&str] = &[
    "close",
    "dup",
    "dup2",
    "dup3",
    "fcntl",
    "write",
    "pwrite64",
    "read",
    "pread64",
    "fsync",
    "fdatasync",
    "syncfs",
    "sync_file_range",
    "fstat",
    "ftruncate",
    "fallocate",
    "fchmod",
    "fchown",
    "getdents64",
    "lseek",
    "fchdir",
    "fadvise64",
    "flock",
    "fgetxattr",
    "fsetxattr",
];

struct Resolver {
    procs: HashMap<u32, Proc>,
    initial_cwd: Option<PathBuf>,
    next_open: OpenId,
}

impl Resolver {
    fn proc(&mut self, pid: u32) -> &mut Proc {
        let cwd = self.initial_cwd.clone();
        self.procs.entry(pid).or_insert_with(|| Proc {
            cwd,
            root: PathBuf::from("/"),
            fds: HashMap::new(),
        })
    }

    /// Resolve `path` relative to the directory descriptor argument `dirfd` (or the cwd).
    fn resolve(&mut self, pid: u32, dirfd: Option<&Arg>, path: &[u8]) -> Result<PathBuf, String> {
        let p = Path::new(std::str::from_utf8(path).map_err(|_| "path is not UTF-8".to_string())?);
        let proc = self.proc(pid);
        if p.is_absolute() {
            return Ok(normalize(&proc.root.join(p.strip_prefix("/").unwrap_or(p))));
        }
        let base = match dirfd {
            None | Some(Arg::AtFdcwd { path: None }) => proc.cwd.clone(),
            Some(Arg::AtFdcwd { path: Some(a) }) => Some(PathBuf::from(a)),
            Some(Arg::Num { path: Some(a), .. }) => Some(PathBuf::from(a)),
            Some(Arg::Num { value, path: None }) => proc.fds.get(value).map(|f| f.path.clone()),
            _ => None,
        };
        match base {
            Some(b) => Ok(normalize(&b.join(p))),
            None => Err("relative to a directory the trace does not show".into()),
        }
    }

    fn touch(&mut self, order: usize, call: &Call) -> Touch {
        let mut t = Touch {
            order,
            call: call.clone(),
            paths: Vec::new(),
            fd: None,
            opened: None,
            unresolved: None,
        };
        let pid = call.pid;
        let name = call.name.as_str();
        // Paths.
        for &(dirfd, pi) in path_layout(name) {
            let dirarg = dirfd.and_then(|d| call.args.get(d));
            match str_arg(call.args.get(pi)) {
                Some(p) => match self.resolve(pid, dirarg, p) {
                    Ok(abs) => t.paths.push(abs),
                    Err(e) => t.unresolved = Some(e),
                },
                None if name == "utimensat" => {
                    // utimensat(fd, NULL, …): futimens on the descriptor.
                    if let Some(fd) = num_arg(call.args.first()) {
                        t.fd = self
                            .proc(pid)
                            .fds
                            .get(&fd)
                            .map(|f| (f.path.clone(), f.open));
                    }
                }
                None => t.unresolved = Some("path argument not printed".into()),
            }
        }
        // Descriptor.
        if FD_CALLS.contains(&name)
            && let Some(Arg::Num { value, path }) = call.args.first()
        {
            let known = self.proc(pid).fds.get(value).cloned();
            t.fd = match (known, path) {
                (Some(f), _) => Some((f.path, f.open)),
                (None, Some(p)) => Some((normalize(Path::new(p)), None)),
                (None, None) => None,
            };
        }
        let ok_value = match &call.ret {
            Ret::Value { value, .. } => Some(*value),
            _ => None,
        };
        // Effects on the process state.
        match name {
            "open" | "openat" | "creat" => {
                if let (Some(fd), Some(path)) = (ok_value, t.paths.first()) {
                    let id = self.next_open;
                    self.next_open += 1;
                    t.opened = Some(id);
                    self.proc(pid).fds.insert(
                        fd,
                        Fd {
                            path: path.clone(),
                            open: Some(id),
                        },
                    );
                }
            }
            "dup" | "dup2" | "dup3" | "fcntl" => {
                let dups = name != "fcntl"
                    || matches!(call.args.get(1), Some(Arg::Other(c)) if c.starts_with("F_DUPFD"));
                if dups && let (Some(newfd), Some((path, _))) = (ok_value, &t.fd) {
                    // Only dup(2) is replayed; descriptors from the others have no slot.
                    let open = if name == "dup" {
                        let id = self.next_open;
                        self.next_open += 1;
                        t.opened = Some(id);
                        Some(id)
                    } else {
                        None
                    };
                    self.proc(pid).fds.insert(
                        newfd,
                        Fd {
                            path: path.clone(),
                            open,
                        },
                    );
                }
            }
            "close" => {
                if let Some(fd) = num_arg(call.args.first()) {
                    self.proc(pid).fds.remove(&fd);
                }
            }
            "chdir" if ok_value == Some(0) => {
                if let Some(p) = t.paths.first().cloned() {
                    self.proc(pid).cwd = Some(p);
                }
            }
            "fchdir" if ok_value == Some(0) => {
                if let Some((p, _)) = t.fd.clone() {
                    self.proc(pid).cwd = Some(p);
                }
            }
            "chroot" if ok_value == Some(0) => {
                if let Some(p) = t.paths.first().cloned() {
                    self.proc(pid).root = p;
                }
            }
            "clone" | "clone3" | "fork" | "vfork" => {
                if let Some(child) = ok_value.filter(|v| *v > 0) {
                    let parent = self.proc(pid).clone();
                    self.procs.insert(child as u32, parent);
                }
            }
            _ => {}
        }
        // A -y annotation on the result is the authority on the opened path.
        if let (
            Some(id),
            Ret::Value {
                value,
                path: Some(p),
            },
        ) = (t.opened, &call.ret)
        {
            let p = normalize(Path::new(p));
            if let Some(f) = self.proc(pid).fds.get_mut(value) {
                f.path = p;
                f.open = Some(id);
            }
        }
        t
    }
}

/// Whether a call changes the filesystem (for picking the tree).
fn mutates(name: &str) -> bool {
    matches!(
        name,
        "creat"
            | "rename"
            | "renameat"
            | "renameat2"
            | "link"
            | "linkat"
            | "symlink"
            | "symlinkat"
            | "unlink"
            | "unlinkat"
            | "mkdir"
            | "mkdirat"
            | "rmdir"
            | "truncate"
            | "ftruncate"
            | "write"
            | "pwrite64"
            | "fallocate"
            | "chmod"
            | "fchmod"
            | "fchmodat"
            | "chown"
            | "fchown"
            | "lchown"
            | "fchownat"
            | "utimensat"
            | "setxattr"
            | "removexattr"
    )
}

fn opens_for_writing(call: &Call) -> bool {
    let flags = match call.name.as_str() {
        "open" => call.args.get(1),
        "openat" => call.args.get(2),
        "creat" => return true,
        _ => return false,
    };
    matches!(flags, Some(Arg::Other(f)) if f.contains("O_WRONLY") || f.contains("O_RDWR") || f.contains("O_CREAT"))
}

/// Whether the call creates a directory entry at its `k`-th path (as `Touch::paths`
/// lists them: the link path for symlinks, the target for renames and links).
fn creates_at(call: &Call, k: usize) -> bool {
    match call.name.as_str() {
        "creat" => k == 0,
        "open" | "openat" => {
            k == 0
                && call
                    .args
                    .iter()
                    .any(|a| matches!(a, Arg::Other(f) if f.contains("O_CREAT")))
        }
        "rename" | "renameat" | "renameat2" | "link" | "linkat" => k == 1,
        "symlink" | "symlinkat" | "mkdir" | "mkdirat" => k == 0,
        _ => false,
    }
}

/// The directory with the most distinct files changed in it.
fn busiest_dir(touches: &[Touch]) -> Option<PathBuf> {
    fn count<'a>(files: &mut HashMap<PathBuf, HashSet<&'a Path>>, p: &'a Path) {
        if let Some(parent) = p.parent() {
            files.entry(parent.to_path_buf()).or_default().insert(p);
        }
    }
    let mut files: HashMap<PathBuf, HashSet<&Path>> = HashMap::new();
    for t in touches {
        if mutates(&t.call.name) || opens_for_writing(&t.call) {
            for p in &t.paths {
                count(&mut files, p);
            }
            if let Some((p, _)) = &t.fd {
                count(&mut files, p);
            }
        }
    }
    files
        .into_iter()
        .max_by(|a, b| a.1.len().cmp(&b.1.len()).then_with(|| b.0.cmp(&a.0)))
        .map(|(d, _)| d)
}

/// Replace runs of 6+ hex digits (a random token) with `{token}`.
fn tokenize(suffix: &str) -> String {
    let mut out = String::new();
    let mut rest = suffix;
    while let Some(c) = rest.chars().next() {
        let run = rest.bytes().take_while(u8::is_ascii_hexdigit).count();
        if run >= 6 && rest[..run].bytes().any(|b| b.is_ascii_digit()) {
            out.push_str("{token}");
            rest = &rest[run..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// A step being built: the op and its fields in TOML order, plus numbers aggregated
/// across files (median).
#[derive(Clone, Debug)]
struct RecStep {
    op: String,
    fields: Vec<(&'static str, String)>,
    /// Sizes and offsets, aggregated over files rather than compared.
    numbers: Vec<(&'static str, i64)>,
    probe: bool,
    /// Whether the call works on a descriptor (and so needs a slot to be replayed).
    needs_slot: bool,
    /// Open files this step uses, and the one it creates.
    uses: Option<OpenId>,
    creates: Option<OpenId>,
    /// Position in the trace and line.
    order: usize,
    line: usize,
}

impl RecStep {
    fn shape(&self) -> String {
        let mut s = self.op.clone();
        for (k, v) in &self.fields {
            write!(s, " {k}={v}").unwrap();
        }
        s
    }
}

fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => write!(out, "\\u{:04x}", c as u32).unwrap(),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Keep only the flag words the signature format knows, so the file validates.
fn known_flags(text: &str, table_probe: &str, notes: &mut HashSet<String>) -> String {
    let words: Vec<&str> = text
        .split('|')
        .map(str::trim)
        .filter(|w| !w.is_empty() && *w != "0")
        .collect();
    let mut kept = Vec::new();
    for w in words {
        // Validate the word against the op's flag table by building a one-flag step.
        let ok = parse_flags(&Flags::Text(w.to_string()), flag_table_of(table_probe)).is_ok();
        if ok {
            kept.push(w);
        } else {
            notes.insert(format!(
                "flag {w} of {table_probe} is not replayable and was left out"
            ));
        }
    }
    kept.join("|")
}

fn octal(v: i64) -> String {
    format!("0o{v:o}")
}

impl Touch {
    fn errno(&self) -> Option<String> {
        match &self.call.ret {
            Ret::Error { errno } => Some(errno.clone()),
            _ => None,
        }
    }
}

/// Turn the trace into a signature.
pub fn record(calls: &[Call], opts: &Options) -> Result<Recording> {
    let name = if opts.name.is_empty() {
        "recorded"
    } else {
        opts.name.as_str()
    };
    let mut resolver = Resolver {
        procs: HashMap::new(),
        initial_cwd: opts.cwd.clone(),
        next_open: 0,
    };
    let touches: Vec<Touch> = calls
        .iter()
        .enumerate()
        .map(|(k, c)| resolver.touch(k, c))
        .collect();

    let tree = match &opts.under {
        Some(u) => normalize(&if u.is_absolute() {
            u.clone()
        } else {
            opts.cwd
                .clone()
                .unwrap_or_else(|| PathBuf::from("/"))
                .join(u)
        }),
        None => busiest_dir(&touches)
            .ok_or_else(|| anyhow::anyhow!("the trace changes no files: nothing to record"))?,
    };
    let mut dropped: BTreeMap<String, usize> = BTreeMap::new();
    let mut drop = |why: &str| *dropped.entry(why.to_string()).or_insert(0) += 1;
    let mut notes: HashSet<String> = HashSet::new();

    // Calls on paths below the tree, with paths relative to it.
    let rel = |p: &Path| -> Option<String> {
        let r = p.strip_prefix(&tree).ok()?;
        if r.as_os_str().is_empty() {
            None
        } else {
            Some(r.to_string_lossy().into_owned())
        }
    };
    struct Mine<'a> {
        t: &'a Touch,
        rels: Vec<String>,
        fd_rel: Option<String>,
    }
    let mut mine: Vec<Mine> = Vec::new();
    for t in &touches {
        let in_tree: Vec<Option<String>> = t.paths.iter().map(|p| rel(p)).collect();
        let fd_rel = t.fd.as_ref().and_then(|(p, _)| rel(p));
        let touches_tree = in_tree.iter().any(Option::is_some) || fd_rel.is_some();
        let on_tree_dir = t.paths.contains(&tree) || t.fd.as_ref().is_some_and(|(p, _)| *p == tree);
        if !touches_tree {
            if on_tree_dir {
                drop("on the tree's directory itself, not a file");
            } else {
                drop("outside the tree");
            }
            continue;
        }
        if let Some(why) = &t.unresolved {
            drop(why);
            continue;
        }
        if in_tree.iter().any(Option::is_none) {
            drop("between the tree and a path outside it");
            continue;
        }
        mine.push(Mine {
            t,
            rels: in_tree.into_iter().flatten().collect(),
            fd_rel,
        });
    }

    // Which paths still exist at the end: files of their own. The others are temporary
    // names of the file whose name they extend.
    let mut exists: HashMap<String, bool> = HashMap::new();
    for m in &mine {
        let ok = !matches!(m.t.call.ret, Ret::Error { .. });
        let name = m.t.call.name.as_str();
        for (k, r) in m.rels.iter().enumerate() {
            let e = exists.entry(r.clone()).or_insert(false);
            if !ok {
                continue;
            }
            match (name, k) {
                ("rename" | "renameat" | "renameat2", 0) | ("unlink" | "unlinkat" | "rmdir", 0) => {
                    *e = false
                }
                _ => *e = true,
            }
        }
        if let Some(r) = &m.fd_rel {
            exists.entry(r.clone()).or_insert(true);
        }
    }
    let persistent: Vec<&String> = exists.iter().filter(|(_, e)| **e).map(|(p, _)| p).collect();
    let base_of = |p: &str| -> String {
        if exists.get(p) == Some(&true) {
            return p.to_string();
        }
        persistent
            .iter()
            // A temporary name extends its file's name within the same path component.
            .filter(|f| {
                p.len() > f.len() && p.starts_with(f.as_str()) && !p[f.len()..].contains('/')
            })
            .max_by_key(|f| f.len())
            .map(|f| (*f).clone())
            .unwrap_or_else(|| p.to_string())
    };

    // Suffixes of temporary names: literal when the same for every file, a token otherwise.
    let mut suffix_values: HashMap<String, HashSet<String>> = HashMap::new();
    for m in &mine {
        for r in m.rels.iter().chain(m.fd_rel.iter()) {
            let b = base_of(r);
            let suffix = &r[b.len()..];
            suffix_values
                .entry(tokenize(suffix))
                .or_default()
                .insert(suffix.to_string());
        }
    }
    let template_of = |r: &str| -> String {
        let b = base_of(r);
        let suffix = &r[b.len()..];
        let shape = tokenize(suffix);
        let varies = suffix_values.get(&shape).is_some_and(|v| v.len() > 1);
        format!(
            "{{name}}{}",
            if varies { shape } else { suffix.to_string() }
        )
    };

    // Each file's steps.
    let mut per_file: BTreeMap<String, Vec<RecStep>> = BTreeMap::new();
    let mut first_seen: HashMap<String, usize> = HashMap::new();
    let mut initial_size: HashMap<String, Vec<i64>> = HashMap::new();
    let mut created: HashSet<String> = HashSet::new();
    // Whether each file existed before the program first touched it under its own name.
    let mut existed: HashMap<String, bool> = HashMap::new();
    for m in &mine {
        let t = m.t;
        let c = &t.call;
        let name = c.name.as_str();
        let file = match (m.rels.first(), &m.fd_rel) {
            (Some(r), _) => base_of(r),
            (None, Some(r)) => base_of(r),
            (None, None) => continue,
        };
        if m.rels.len() == 2 && base_of(&m.rels[1]) != file {
            drop("between two different files");
            continue;
        }
        if let Some(k) = m.rels.iter().position(|r| *r == file) {
            let ok = matches!(c.ret, Ret::Value { .. });
            existed
                .entry(file.clone())
                .or_insert(ok && !creates_at(c, k));
        }
        // Remember sizes of files that existed before the program touched them.
        if !created.contains(&file)
            && matches!(name, "stat" | "lstat" | "newfstatat" | "statx" | "fstat")
            && m.rels.first().is_none_or(|r| *r == file)
            && let Some(size) = c.args.iter().find_map(|a| match a {
                Arg::Other(s) => s
                    .split("st_size=")
                    .nth(1)
                    .and_then(|v| v.split([',', '}']).next())
                    .and_then(|v| v.trim().parse::<i64>().ok()),
                _ => None,
            })
        {
            initial_size.entry(file.clone()).or_default().push(size);
        }
        // From here on the file's content is the program's, not what it found.
        if matches!(c.ret, Ret::Value { .. })
            && m.rels
                .iter()
                .enumerate()
                .any(|(k, r)| *r == file && (creates_at(c, k) || (k == 0 && opens_for_writing(c))))
        {
            created.insert(file.clone());
        }

        let p = |k: usize| m.rels.get(k).map(|r| toml_str(&template_of(r)));
        let mut s = RecStep {
            op: name.to_string(),
            fields: Vec::new(),
            numbers: Vec::new(),
            probe: false,
            needs_slot: FD_CALLS.contains(&name) || (name == "utimensat" && m.rels.is_empty()),
            uses: t.fd.as_ref().and_then(|(_, o)| *o),
            creates: t.opened,
            order: t.order,
            line: c.line,
        };
        let arg = |i: usize| c.args.get(i);
        let ret_value = match &c.ret {
            Ret::Value { value, .. } => *value,
            _ => 0,
        };
        let mut flags_field = |s: &mut RecStep, key: &'static str, a: Option<&Arg>, table: &str| {
            if let Some(text) = other_arg(a) {
                let f = known_flags(&text, table, &mut notes);
                if !f.is_empty() {
                    s.fields.push((key, toml_str(&f)));
                }
            }
        };
        let ok = match name {
            "open" | "openat" | "creat" => {
                let off = if name == "openat" { 1 } else { 0 };
                s.fields.push(("path", p(0).unwrap()));
                if name != "creat" {
                    flags_field(&mut s, "flags", arg(off + 1), "openat");
                }
                let mode_at = if name == "creat" { 1 } else { off + 2 };
                if let Some(m) = num_arg(arg(mode_at)) {
                    s.fields.push(("mode", octal(m)));
                }
                true
            }
            "dup" | "close" | "fsync" | "fdatasync" | "syncfs" | "fstat" => true,
            "write" | "pwrite64" => {
                s.numbers.push(("size", ret_value));
                if name == "pwrite64" {
                    s.numbers.push(("offset", num_arg(arg(3)).unwrap_or(0)));
                }
                s.fields.push(("pattern", toml_str("random")));
                true
            }
            "read" | "pread64" => {
                s.numbers.push(("size", num_arg(arg(2)).unwrap_or(0)));
                if name == "pread64" {
                    s.numbers.push(("offset", num_arg(arg(3)).unwrap_or(0)));
                }
                true
            }
            "sync_file_range" => {
                s.numbers.push(("offset", num_arg(arg(1)).unwrap_or(0)));
                s.numbers.push(("size", num_arg(arg(2)).unwrap_or(0)));
                flags_field(&mut s, "flags", arg(3), "sync_file_range");
                true
            }
            "fallocate" => {
                flags_field(&mut s, "flags", arg(1), "fallocate");
                s.numbers.push(("offset", num_arg(arg(2)).unwrap_or(0)));
                s.numbers.push(("size", num_arg(arg(3)).unwrap_or(0)));
                true
            }
            "ftruncate" | "truncate" => {
                if name == "truncate" {
                    s.fields.push(("path", p(0).unwrap()));
                }
                s.numbers.push(("size", num_arg(arg(1)).unwrap_or(0)));
                true
            }
            "fchmod" => {
                s.fields.push(("mode", octal(num_arg(arg(1)).unwrap_or(0))));
                true
            }
            "chmod" | "fchmodat" => {
                let at = usize::from(name == "fchmodat");
                s.fields.push(("path", p(0).unwrap()));
                s.fields
                    .push(("mode", octal(num_arg(arg(at + 1)).unwrap_or(0))));
                true
            }
            "fchown" | "chown" | "lchown" | "fchownat" => {
                let at = match name {
                    "fchown" | "chown" | "lchown" => 1,
                    _ => 2,
                };
                if name != "fchown" {
                    s.fields.push(("path", p(0).unwrap()));
                }
                s.fields
                    .push(("uid", (num_arg(arg(at)).unwrap_or(0) as u32).to_string()));
                s.fields.push((
                    "gid",
                    (num_arg(arg(at + 1)).unwrap_or(0) as u32).to_string(),
                ));
                if name == "fchownat" {
                    flags_field(&mut s, "flags", arg(4), "fchownat");
                }
                true
            }
            "utimensat" => {
                if let Some(path) = p(0) {
                    s.fields.push(("path", path));
                }
                flags_field(&mut s, "flags", arg(3), "utimensat");
                true
            }
            "rename" | "renameat" | "renameat2" | "link" | "linkat" => {
                s.fields.push(("from", p(0).unwrap()));
                s.fields.push(("to", p(1).unwrap()));
                if name == "renameat2" || name == "linkat" {
                    flags_field(&mut s, "flags", arg(4), name);
                }
                true
            }
            "symlink" | "symlinkat" => {
                match str_arg(arg(0)).map(|b| String::from_utf8_lossy(b).into_owned()) {
                    Some(target) if Template::parse_link_target(&target).is_ok() => {
                        s.fields.push(("target", toml_str(&target)));
                        s.fields.push(("path", p(0).unwrap()));
                        true
                    }
                    _ => false,
                }
            }
            "unlink" | "rmdir" => {
                s.fields.push(("path", p(0).unwrap()));
                true
            }
            "unlinkat" => {
                s.fields.push(("path", p(0).unwrap()));
                flags_field(&mut s, "flags", arg(2), "unlinkat");
                true
            }
            "mkdir" | "mkdirat" => {
                s.fields.push(("path", p(0).unwrap()));
                let at = usize::from(name == "mkdirat");
                s.fields
                    .push(("mode", octal(num_arg(arg(at + 1)).unwrap_or(0o755))));
                true
            }
            "stat" | "lstat" | "access" => {
                s.fields.push(("path", p(0).unwrap()));
                if name == "access" {
                    flags_field(&mut s, "flags", arg(1), "access");
                }
                s.probe = true;
                true
            }
            "newfstatat" | "statx" | "faccessat" => {
                s.fields.push(("path", p(0).unwrap()));
                let fi = match name {
                    "newfstatat" => 3,
                    "statx" => 2,
                    _ => 2,
                };
                let table = if name == "faccessat" {
                    "access"
                } else {
                    "newfstatat"
                };
                flags_field(&mut s, "flags", arg(fi), table);
                s.probe = true;
                true
            }
            "getdents64" => {
                s.numbers.push(("size", num_arg(arg(2)).unwrap_or(32768)));
                s.probe = true;
                true
            }
            _ => false,
        };
        if !ok {
            drop(&format!("not replayable: {name}"));
            continue;
        }
        if matches!(name, "read" | "pread64" | "fstat") {
            s.probe = true;
        }
        if let Some(e) = t.errno() {
            if Errno::from_name(&e).is_some() {
                s.fields.push(("expect", toml_str(&e)));
            } else {
                s.fields.push(("expect", toml_str("any")));
                notes.insert(format!(
                    "{e} is not a known errno name; those steps accept any result"
                ));
            }
        }
        first_seen.entry(file.clone()).or_insert(t.order);
        per_file.entry(file).or_default().push(s);
    }

    // Drop probes, then opens (and their dups and closes) nothing else uses any more.
    for steps in per_file.values_mut() {
        if !opts.keep_probes {
            let before = steps.len();
            steps.retain(|s| !s.probe);
            for _ in steps.len()..before {
                drop("probe (stat, access, read): does not change the filesystem");
            }
        }
        // Slot-using steps must have their slot: a descriptor opened elsewhere cannot be replayed.
        let opened: HashSet<OpenId> = steps.iter().filter_map(|s| s.creates).collect();
        let before = steps.len();
        steps.retain(|s| !s.needs_slot || s.uses.is_some_and(|u| opened.contains(&u)));
        for _ in steps.len()..before {
            drop("on a descriptor the recording cannot replay");
        }
        loop {
            let used: HashSet<OpenId> = steps
                .iter()
                .filter(|s| s.op != "close" && s.op != "dup")
                .filter_map(|s| s.uses)
                .collect();
            // An open (or dup) is needed if it creates something or its descriptor is used.
            let needed = |s: &RecStep, steps: &[RecStep]| -> bool {
                let id = s.creates.unwrap();
                if used.contains(&id) {
                    return true;
                }
                // A dup's descriptor used further down keeps it, and it keeps its source.
                steps.iter().any(|d| {
                    d.op == "dup"
                        && d.uses == Some(id)
                        && used.contains(&d.creates.unwrap_or(usize::MAX))
                }) || (s.op != "dup"
                    && s.fields.iter().any(|(k, v)| {
                        *k == "flags"
                            && (v.contains("O_CREAT")
                                || v.contains("O_TRUNC")
                                || v.contains("O_WRONLY")
                                || v.contains("O_RDWR"))
                    }))
            };
            let unneeded: HashSet<OpenId> = steps
                .iter()
                .filter(|s| s.creates.is_some() && !needed(s, steps))
                .filter_map(|s| s.creates)
                .collect();
            if unneeded.is_empty() {
                break;
            }
            let before = steps.len();
            steps.retain(|s| {
                !s.creates.is_some_and(|c| unneeded.contains(&c))
                    && !s.uses.is_some_and(|u| unneeded.contains(&u))
            });
            for _ in steps.len()..before {
                drop("open for reading only (a probe) and its close");
            }
        }
    }
    per_file.retain(|_, v| !v.is_empty());

    // Slots, per file, in order of opening.
    let mut shapes: HashMap<String, Vec<String>> = HashMap::new();
    for (file, steps) in per_file.iter_mut() {
        let mut slot_of: HashMap<OpenId, String> = HashMap::new();
        for s in steps.iter_mut() {
            if let Some(u) = s.uses
                && let Some(name) = slot_of.get(&u)
            {
                s.fields.insert(0, ("slot", toml_str(name)));
            }
            if let Some(c) = s.creates {
                let name = format!("f{}", slot_of.len() + 1);
                let key = if s.op == "dup" { "new_slot" } else { "slot" };
                s.fields.push((key, toml_str(&name)));
                slot_of.insert(c, name);
            }
        }
        shapes.insert(file.clone(), steps.iter().map(RecStep::shape).collect());
    }

    // The most common sequence makes the signature.
    let mut freq: HashMap<&Vec<String>, usize> = HashMap::new();
    for s in shapes.values() {
        *freq.entry(s).or_insert(0) += 1;
    }
    let Some((&best, _)) = freq
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.len().cmp(&a.0.len())))
    else {
        bail!("no calls on files under {} can be replayed", tree.display());
    };
    let best = best.clone();
    let mut files: Vec<&String> = per_file.keys().filter(|f| shapes[*f] == best).collect();
    files.sort_by_key(|f| first_seen[*f]);
    let others: usize = per_file
        .iter()
        .filter(|(f, _)| shapes[*f] != best)
        .map(|(_, v)| v.len())
        .sum();
    let other_files = per_file.len() - files.len();
    if other_files > 0 {
        *dropped
            .entry(format!(
                "on {other_files} files whose calls differ from the common sequence"
            ))
            .or_insert(0) += others;
    }
    let n = files.len();
    let k = best.len();

    // Phases: step j+1 starts a new phase when every file did step j before any did j+1.
    let pos = |f: &String, j: usize| per_file[f][j].order;
    let mut phases: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for j in 0..k.saturating_sub(1) {
        let last_j = files.iter().map(|f| pos(f, j)).max().unwrap();
        let first_next = files.iter().map(|f| pos(f, j + 1)).min().unwrap();
        if n > 1 && last_j < first_next {
            phases.push((start, j + 1));
            start = j + 1;
        }
    }
    phases.push((start, k));
    for (p, &(a, _)) in phases.iter().enumerate().skip(1) {
        let mut by_order: Vec<usize> = (0..n).collect();
        by_order.sort_by_key(|&i| pos(files[i], a));
        if by_order.iter().enumerate().any(|(x, &y)| x != y) {
            notes.insert(format!(
                "phase {} visits the files in another order than phase 1 in the trace; the replay keeps one order",
                p + 1
            ));
        }
    }

    // Numbers: the median over files.
    let median = |mut v: Vec<i64>| -> i64 {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let steps: Vec<RecStep> = (0..k)
        .map(|j| {
            let mut s = per_file[files[0]][j].clone();
            for (x, number) in s.numbers.iter_mut().enumerate() {
                number.1 = median(files.iter().map(|f| per_file[*f][j].numbers[x].1).collect());
            }
            s
        })
        .collect();

    // Populate when most of the files existed before the program touched them.
    let populate = files
        .iter()
        .filter(|f| existed.get(**f) == Some(&true))
        .count()
        * 2
        > n;
    let sizes: Vec<i64> = files
        .iter()
        .filter_map(|f| initial_size.get(*f))
        .filter_map(|v| v.first().copied())
        .collect();
    let pop_size = if sizes.is_empty() { 0 } else { median(sizes) };

    let kept_calls: Vec<(usize, u64, usize, String)> = {
        let mut v = Vec::new();
        for (i, f) in files.iter().enumerate() {
            for (p, &(a, b)) in phases.iter().enumerate() {
                for s in &per_file[*f][a..b] {
                    v.push((s.line, i as u64 + 1, p + 1, s.op.clone()));
                }
            }
        }
        v.sort();
        v
    };

    // The signature file.
    let mut toml = String::new();
    writeln!(
        toml,
        "# Recorded by sigbench {} from {}.",
        env!("CARGO_PKG_VERSION"),
        opts.source
    )
    .unwrap();
    writeln!(
        toml,
        "# Tree: {} — {n} files with the same {k} calls.",
        tree.display()
    )
    .unwrap();
    writeln!(toml, "format = 1").unwrap();
    writeln!(toml, "name = {}", toml_str(name)).unwrap();
    writeln!(
        toml,
        "description = {}",
        toml_str(&format!(
            "Recorded from {}: {n} files under {}, {k} calls each in {} phase(s).",
            opts.source,
            tree.display(),
            phases.len()
        ))
    )
    .unwrap();
    writeln!(toml, "n = {n}").unwrap();
    writeln!(toml, "file = \"file_{{i}}\"").unwrap();
    writeln!(toml, "dirs = [\"recorded\"]").unwrap();
    writeln!(toml, "verb = \"replaying\"").unwrap();
    writeln!(toml, "unit = \"files\"").unwrap();
    if populate {
        writeln!(
            toml,
            "\n[setup]\npopulate = {{ size = {pop_size}, pattern = \"random\" }}"
        )
        .unwrap();
    }
    for (p, &(a, b)) in phases.iter().enumerate() {
        writeln!(toml, "\n[[phase]]\nname = \"phase{}\"\nsteps = [", p + 1).unwrap();
        for s in &steps[a..b] {
            let mut fields: Vec<String> = vec![format!("op = {}", toml_str(&s.op))];
            fields.extend(
                s.fields
                    .iter()
                    .filter(|(k, _)| *k != "expect" && *k != "pattern")
                    .map(|(k, v)| format!("{k} = {v}")),
            );
            fields.extend(
                s.numbers
                    .iter()
                    .map(|(k, v)| format!("{k} = {}", v.max(&0))),
            );
            fields.extend(
                s.fields
                    .iter()
                    .filter(|(k, _)| *k == "pattern" || *k == "expect")
                    .map(|(k, v)| format!("{k} = {v}")),
            );
            writeln!(toml, "  {{ {} }},", fields.join(", ")).unwrap();
        }
        writeln!(toml, "]").unwrap();
    }
    let origin = format!("recording of {}", opts.source);
    if let Err(e) = Signature::parse(&toml, &origin) {
        bail!("internal error: the recorded signature does not validate: {e:#}\n{toml}");
    }
    let flattened: HashSet<&str> = files
        .iter()
        .filter_map(|f| Path::new(f.as_str()).parent())
        .filter_map(|p| p.to_str())
        .collect();
    if flattened.len() > 1 {
        notes.insert(format!(
            "the files came from {} directories under the tree; the replay puts them in one",
            flattened.len()
        ));
    }
    let mut notes: Vec<String> = notes.into_iter().collect();
    notes.sort();
    Ok(Recording {
        toml,
        tree,
        files: n,
        steps_per_file: k,
        phases: phases.iter().map(|(a, b)| b - a).collect(),
        kept: n * k,
        dropped,
        notes,
        kept_calls,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recorded signature has this step line.
    fn has(r: &Recording, step: &str) {
        assert!(r.toml.contains(step), "no `{step}` in:\n{}", r.toml);
    }

    fn rec(trace: &str, keep_probes: bool) -> Recording {
        let (calls, skipped) = strace::parse(trace, false).unwrap();
        assert_eq!(skipped, 0);
        record(
            &calls,
            &Options {
                keep_probes,
                cwd: Some("/work".into()),
                name: "t".into(),
                source: "test".into(),
                ..Default::default()
            },
        )
        .unwrap()
    }

    #[test]
    fn tokens_and_literals() {
        assert_eq!(tokenize(";6b0347b8"), ";{token}");
        assert_eq!(tokenize(".dpkg-new"), ".dpkg-new");
        assert_eq!(tokenize("-RPMDELETE"), "-RPMDELETE");
        assert_eq!(tokenize(".é~1a2b3c4d"), ".é~{token}");
    }

    /// rpm 4.18's upgrade of three files: write `name;token` via a directory descriptor,
    /// then stat and rename each into place.
    #[test]
    fn records_rpm_style_two_phases() {
        let mut t =
            String::from("1 openat(AT_FDCWD, \"/r/usr/share/p\", O_RDONLY|O_DIRECTORY) = 12\n");
        for f in ["a.gz", "b.gz", "c.gz"] {
            t += &format!(
                "1 newfstatat(12, \"{f}\", {{st_mode=S_IFREG|0644, st_size=700, ...}}, AT_SYMLINK_NOFOLLOW) = 0\n"
            );
            t += &format!("1 openat(12, \"{f};6b0347b8\", O_WRONLY|O_CREAT|O_EXCL, 0200) = 11\n");
            t += "1 dup(11) = 13\n1 write(13, \"xx\"..., 507) = 507\n1 close(13) = 0\n";
            t += "1 fchown(11, 0, 0) = 0\n1 fchmod(11, 0644) = 0\n";
            t += "1 utimensat(11, NULL, [{tv_sec=1, tv_nsec=0}, {tv_sec=1, tv_nsec=0}], 0) = 0\n1 close(11) = 0\n";
        }
        for f in ["a.gz", "b.gz", "c.gz"] {
            t += &format!(
                "1 newfstatat(12, \"{f}\", {{st_mode=S_IFREG|0644, st_size=507, ...}}, AT_SYMLINK_NOFOLLOW) = 0\n"
            );
            t += &format!("1 renameat(12, \"{f};6b0347b8\", 12, \"{f}\") = 0\n");
        }
        let r = rec(&t, false);
        assert_eq!(r.tree, PathBuf::from("/r/usr/share/p"));
        assert_eq!(
            (r.files, r.steps_per_file, r.phases.clone()),
            (3, 9, vec![8, 1])
        );
        has(
            &r,
            r#"{ op = "openat", path = "{name};6b0347b8", flags = "O_WRONLY|O_CREAT|O_EXCL", mode = 0o200, slot = "f1" }"#,
        );
        has(&r, r#"{ op = "dup", slot = "f1", new_slot = "f2" }"#);
        has(
            &r,
            r#"{ op = "write", slot = "f2", size = 507, pattern = "random" }"#,
        );
        has(&r, r#"{ op = "utimensat", slot = "f1" }"#);
        has(
            &r,
            r#"{ op = "renameat", from = "{name};6b0347b8", to = "{name}" }"#,
        );
        assert!(r.toml.contains("populate = { size = 700"), "{}", r.toml);
        assert_eq!(
            r.dropped["probe (stat, access, read): does not change the filesystem"],
            6
        );
        let sig = Signature::parse(&r.toml, "t").unwrap();
        assert_eq!(sig.default_n, 3);

        let r = rec(&t, true);
        assert_eq!((r.steps_per_file, r.phases.clone()), (11, vec![9, 2]));
        has(
            &r,
            r#"op = "newfstatat", path = "{name}", flags = "AT_SYMLINK_NOFOLLOW""#,
        );
    }

    /// dpkg's three phases, with per-file differences in size and a sorted second pass.
    #[test]
    fn records_dpkg_style_three_phases() {
        let files = ["z.bin", "a.bin", "m.bin"];
        let mut t = String::new();
        for (k, f) in files.iter().enumerate() {
            t += &format!("7 rmdir(\"/d/{f}.dpkg-new\") = -1 ENOENT (No such file or directory)\n");
            t += &format!(
                "7 openat(AT_FDCWD, \"/d/{f}.dpkg-new\", O_WRONLY|O_CREAT|O_EXCL, 000) = 11\n"
            );
            t += &format!("7 write(11, \"…\", {}) = {}\n", 500 + k, 500 + k);
            t += "7 sync_file_range(11, 0, 0, SYNC_FILE_RANGE_WRITE) = 0\n7 close(11) = 0\n";
            t += &format!("7 link(\"/d/{f}\", \"/d/{f}.dpkg-tmp\") = 0\n");
        }
        let mut sorted = files;
        sorted.sort();
        for f in sorted {
            t += &format!("7 rename(\"/d/{f}.dpkg-new\", \"/d/{f}\") = 0\n");
        }
        for f in files {
            t += &format!("7 unlink(\"/d/{f}.dpkg-tmp\") = 0\n");
        }
        let r = rec(&t, false);
        assert_eq!((r.files, r.phases.clone()), (3, vec![6, 1, 1]));
        has(
            &r,
            r#"{ op = "rmdir", path = "{name}.dpkg-new", expect = "ENOENT" }"#,
        );
        has(
            &r,
            r#"{ op = "write", slot = "f1", size = 501, pattern = "random" }"#,
        );
        has(
            &r,
            r#"{ op = "link", from = "{name}", to = "{name}.dpkg-tmp" }"#,
        );
        assert!(
            r.toml.contains("populate = {"),
            "link from {{name}} needs the file to exist"
        );
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("phase 2 visits the files in another order")),
            "{:?}",
            r.notes
        );
        assert_eq!(r.kept_calls.len(), 3 * 8);
    }

    #[test]
    fn follows_chdir_clone_and_dirfds_without_y() {
        let t = "1 chdir(\"/t\") = 0\n\
                 1 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 2\n\
                 2 openat(AT_FDCWD, \"sub\", O_RDONLY|O_DIRECTORY) = 5\n\
                 2 openat(5, \"x\", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 6\n2 close(6) = 0\n\
                 2 openat(5, \"y\", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 6\n2 close(6) = 0\n\
                 1 unlink(\"sub/x\") = 0\n1 unlink(\"sub/y\") = 0\n";
        let r = rec(t, false);
        assert_eq!(r.tree, PathBuf::from("/t/sub"));
        assert_eq!((r.files, r.phases.clone()), (2, vec![2, 1]));

        // --under, relative to the working directory: the same files, one level up.
        let (calls, _) = strace::parse(t, false).unwrap();
        let opts = Options {
            under: Some("t".into()),
            cwd: Some("/".into()),
            ..Default::default()
        };
        let r = record(&calls, &opts).unwrap();
        assert_eq!((r.tree.clone(), r.files), (PathBuf::from("/t"), 2));
        has(&r, r#"path = "{name}""#);
        let opts = Options {
            under: Some("/elsewhere".into()),
            ..Default::default()
        };
        assert!(record(&calls, &opts).is_err());
    }
}
