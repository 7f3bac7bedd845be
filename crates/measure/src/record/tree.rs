//! Stage 2 of recording: the tree the program worked on (`--under`, else the directory in
//! which the most files were changed), and the calls below it with their paths relative
//! to it. Everything else is counted as dropped, with its reason.

use super::Log;
use super::resolve::{Touch, normalize};
use super::strace::{Arg, Call};
use crate::signature::syscalls;
use anyhow::Result;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

pub(super) fn opens_for_writing(call: &Call) -> bool {
    let flags = match call.name.as_str() {
        "open" => call.args.get(1),
        "openat" => call.args.get(2),
        "creat" => return true,
        _ => return false,
    };
    matches!(flags, Some(Arg::Other(f)) if f.contains("O_WRONLY") || f.contains("O_RDWR") || f.contains("O_CREAT"))
}

/// Counts, per directory, the distinct files changed in it — the first pass over a trace
/// when no `--under` names the tree. Holds the changed paths only, not the calls.
#[derive(Default)]
pub(super) struct Busiest {
    files: HashMap<PathBuf, HashSet<PathBuf>>,
}

impl Busiest {
    pub(super) fn see(&mut self, t: &Touch) {
        let mutates = syscalls::find(&t.call.name).is_some_and(|s| s.mutates);
        if !(mutates || opens_for_writing(&t.call)) {
            return;
        }
        let fd = t.fd.as_ref().map(|(p, _)| p);
        for p in t.paths.iter().chain(fd) {
            if let Some(parent) = p.parent() {
                let set = self.files.entry(parent.to_path_buf()).or_default();
                if !set.contains(p) {
                    set.insert(p.clone());
                }
            }
        }
    }

    /// The directory with the most distinct files changed in it.
    pub(super) fn busiest(self) -> Option<PathBuf> {
        self.files
            .into_iter()
            .max_by(|a, b| a.1.len().cmp(&b.1.len()).then_with(|| b.0.cmp(&a.0)))
            .map(|(d, _)| d)
    }
}

/// The tree to record: `under` (relative to `cwd`), else the busiest directory.
pub(super) fn choose(
    busiest: Option<PathBuf>,
    under: Option<&Path>,
    cwd: Option<&Path>,
) -> Result<PathBuf> {
    match under {
        Some(u) => Ok(normalize(&if u.is_absolute() {
            u.to_path_buf()
        } else {
            cwd.unwrap_or(Path::new("/")).join(u)
        })),
        None => {
            busiest.ok_or_else(|| anyhow::anyhow!("the trace changes no files: nothing to record"))
        }
    }
}

/// A call on paths below the tree, with those paths relative to it.
pub(super) struct TreeCall {
    pub t: Touch,
    /// The call's paths, in argument order.
    pub rels: Vec<String>,
    /// The path of the open file it works on, for descriptor calls.
    pub fd_rel: Option<String>,
}

/// The call if it is below `tree`; else it is dropped (counted in `log`) with its reason.
pub(super) fn below(t: Touch, tree: &Path, log: &mut Log) -> Option<TreeCall> {
    let rel = |p: &Path| -> Option<String> {
        let r = p.strip_prefix(tree).ok()?;
        if r.as_os_str().is_empty() {
            None
        } else {
            Some(r.to_string_lossy().into_owned())
        }
    };
    let in_tree: Vec<Option<String>> = t.paths.iter().map(|p| rel(p)).collect();
    let fd_rel = t.fd.as_ref().and_then(|(p, _)| rel(p));
    let touches_tree = in_tree.iter().any(Option::is_some) || fd_rel.is_some();
    let on_tree_dir =
        t.paths.iter().any(|p| p == tree) || t.fd.as_ref().is_some_and(|(p, _)| p == tree);
    if !touches_tree {
        if on_tree_dir {
            log.drop("on the tree's directory itself, not a file");
        } else {
            log.drop("outside the tree");
        }
        return None;
    }
    if let Some(why) = &t.unresolved {
        log.drop(why);
        return None;
    }
    if in_tree.iter().any(Option::is_none) {
        log.drop("between the tree and a path outside it");
        return None;
    }
    Some(TreeCall {
        t,
        rels: in_tree.into_iter().flatten().collect(),
        fd_rel,
    })
}
