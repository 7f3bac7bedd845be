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

/// The directory with the most distinct files changed in it.
fn busiest_dir(touches: &[Touch]) -> Option<PathBuf> {
    fn count<'a>(files: &mut HashMap<PathBuf, HashSet<&'a Path>>, p: &'a Path) {
        if let Some(parent) = p.parent() {
            files.entry(parent.to_path_buf()).or_default().insert(p);
        }
    }
    let mut files: HashMap<PathBuf, HashSet<&Path>> = HashMap::new();
    for t in touches {
        let mutates = syscalls::find(&t.call.name).is_some_and(|s| s.mutates);
        if mutates || opens_for_writing(&t.call) {
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

/// The tree to record: `under` (relative to `cwd`), else the busiest directory.
pub(super) fn choose(
    touches: &[Touch],
    under: Option<&Path>,
    cwd: Option<&Path>,
) -> Result<PathBuf> {
    match under {
        Some(u) => Ok(normalize(&if u.is_absolute() {
            u.to_path_buf()
        } else {
            cwd.unwrap_or(Path::new("/")).join(u)
        })),
        None => busiest_dir(touches)
            .ok_or_else(|| anyhow::anyhow!("the trace changes no files: nothing to record")),
    }
}

/// A call on paths below the tree, with those paths relative to it.
pub(super) struct TreeCall<'a> {
    pub t: &'a Touch,
    /// The call's paths, in argument order.
    pub rels: Vec<String>,
    /// The path of the open file it works on, for descriptor calls.
    pub fd_rel: Option<String>,
}

/// The calls below `tree`; the others are dropped (counted in `log`) with their reason.
pub(super) fn below<'a>(touches: &'a [Touch], tree: &Path, log: &mut Log) -> Vec<TreeCall<'a>> {
    let rel = |p: &Path| -> Option<String> {
        let r = p.strip_prefix(tree).ok()?;
        if r.as_os_str().is_empty() {
            None
        } else {
            Some(r.to_string_lossy().into_owned())
        }
    };
    let mut mine = Vec::new();
    for t in touches {
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
            continue;
        }
        if let Some(why) = &t.unresolved {
            log.drop(why);
            continue;
        }
        if in_tree.iter().any(Option::is_none) {
            log.drop("between the tree and a path outside it");
            continue;
        }
        mine.push(TreeCall {
            t,
            rels: in_tree.into_iter().flatten().collect(),
            fd_rel,
        });
    }
    mine
}
