//! Stage 1 of recording: every call with its paths and descriptor resolved. Each
//! process's working directory, root (chroot) and descriptor table (opens, dup, close,
//! clone) are followed, so a call's paths become absolute and a descriptor becomes the
//! "open file" it refers to. Where the arguments are comes from the syscall table.

use super::strace::{Arg, Call, Ret};
use crate::signature::syscalls;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// Lexically normalise an absolute path (`.`/`..`, duplicate slashes).
pub(super) fn normalize(p: &Path) -> PathBuf {
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
pub(super) type OpenId = usize;

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
pub(super) struct Touch {
    pub order: usize,
    pub call: Call,
    /// Paths the call names, absolute, in argument order.
    pub paths: Vec<PathBuf>,
    /// The open file a descriptor-based call works on.
    pub fd: Option<(PathBuf, Option<OpenId>)>,
    /// For opens and dups that succeeded: the new open file.
    pub opened: Option<OpenId>,
    /// Why the call cannot become a step, if it cannot.
    pub unresolved: Option<String>,
}

pub(super) fn str_arg(a: Option<&Arg>) -> Option<&[u8]> {
    match a {
        Some(Arg::Str { bytes, .. }) => Some(bytes),
        _ => None,
    }
}

pub(super) fn num_arg(a: Option<&Arg>) -> Option<i64> {
    match a {
        Some(Arg::Num { value, .. }) => Some(*value),
        _ => None,
    }
}

pub(super) fn other_arg(a: Option<&Arg>) -> Option<String> {
    match a {
        Some(Arg::Other(s)) => Some(s.clone()),
        Some(Arg::Num { value, .. }) => Some(value.to_string()),
        _ => None,
    }
}

/// Follows the processes of a trace, call after call (a trace is read as a stream): each
/// call resolved in turn. `cwd` is the program's working directory at its start (for
/// relative paths before any chdir, when the trace was taken without -y).
pub(super) struct Resolver {
    procs: HashMap<u32, Proc>,
    initial_cwd: Option<PathBuf>,
    next_open: OpenId,
    next_order: usize,
}

impl Resolver {
    pub(super) fn new(cwd: Option<PathBuf>) -> Resolver {
        Resolver {
            procs: HashMap::new(),
            initial_cwd: cwd,
            next_open: 0,
            next_order: 0,
        }
    }

    /// The next call of the trace, resolved.
    pub(super) fn next(&mut self, call: &Call) -> Touch {
        let order = self.next_order;
        self.next_order += 1;
        self.touch(order, call)
    }

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
        let facts = syscalls::find(name);
        // Paths.
        for &(dirfd, pi) in facts.map_or(&[][..], |s| s.paths) {
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
        if facts.is_some_and(|s| s.on_fd)
            && let Some(Arg::Num { value, path }) = call.args.first()
        {
            let known = self.proc(pid).fds.get(value).cloned();
            t.fd = match (known, path) {
                (Some(f), _) => Some((f.path, f.open)),
                (None, Some(p)) => Some((normalize(Path::new(p)), None)),
                (None, None) => None,
            };
        }
        self.follow(&mut t, call);
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

    /// The call's effects on its process: descriptors opened, duplicated and closed, the
    /// working directory and root changed, processes cloned.
    fn follow(&mut self, t: &mut Touch, call: &Call) {
        let (pid, name) = (call.pid, call.name.as_str());
        let ok_value = match &call.ret {
            Ret::Value { value, .. } => Some(*value),
            _ => None,
        };
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
    }
}

impl Touch {
    pub(super) fn errno(&self) -> Option<String> {
        match &self.call.ret {
            Ret::Error { errno } => Some(errno.clone()),
            _ => None,
        }
    }
}
