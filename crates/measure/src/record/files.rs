//! Stage 3 of recording: which file each path belongs to, and its name as a template. A
//! path that still exists at the end is a file of its own; a temporary one (renamed away,
//! unlinked, never created) belongs to the file whose name it extends (`x;6b0347b8`,
//! `x.dpkg-new`, `x-RPMDELETE` → `x`). Suffixes are literal when every file has the same
//! one, a `{token}` where they differ.

use super::strace::{Arg, Call, Ret};
use super::tree::TreeCall;
use std::collections::{HashMap, HashSet};

/// Whether the call creates a directory entry at its `k`-th path (as `Touch::paths`
/// lists them: the link path for symlinks, the target for renames and links).
pub(super) fn creates_at(call: &Call, k: usize) -> bool {
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

/// Replace runs of 6+ hex digits (a random token) with `{token}`.
pub(super) fn tokenize(suffix: &str) -> String {
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

/// The files of a recording and their names.
pub(super) struct Names {
    /// Whether each path still exists at the end of the trace.
    exists: HashMap<String, bool>,
    persistent: Vec<String>,
    /// Per tokenized suffix, the literal suffixes seen.
    suffix_values: HashMap<String, HashSet<String>>,
}

impl Names {
    pub(super) fn of(mine: &[TreeCall]) -> Names {
        let mut exists: HashMap<String, bool> = HashMap::new();
        for m in mine {
            let ok = !matches!(m.t.call.ret, Ret::Error { .. });
            let name = m.t.call.name.as_str();
            for (k, r) in m.rels.iter().enumerate() {
                let e = exists.entry(r.clone()).or_insert(false);
                if !ok {
                    continue;
                }
                match (name, k) {
                    ("rename" | "renameat" | "renameat2", 0)
                    | ("unlink" | "unlinkat" | "rmdir", 0) => *e = false,
                    _ => *e = true,
                }
            }
            if let Some(r) = &m.fd_rel {
                exists.entry(r.clone()).or_insert(true);
            }
        }
        let persistent = exists
            .iter()
            .filter(|(_, e)| **e)
            .map(|(p, _)| p.clone())
            .collect();
        let mut names = Names {
            exists,
            persistent,
            suffix_values: HashMap::new(),
        };
        for m in mine {
            for r in m.rels.iter().chain(m.fd_rel.iter()) {
                let suffix = &r[names.base_of(r).len()..];
                names
                    .suffix_values
                    .entry(tokenize(suffix))
                    .or_default()
                    .insert(suffix.to_string());
            }
        }
        names
    }

    /// The file a path belongs to.
    pub(super) fn base_of(&self, p: &str) -> String {
        if self.exists.get(p) == Some(&true) {
            return p.to_string();
        }
        self.persistent
            .iter()
            // A temporary name extends its file's name within the same path component.
            .filter(|f| {
                p.len() > f.len() && p.starts_with(f.as_str()) && !p[f.len()..].contains('/')
            })
            .max_by_key(|f| f.len())
            .cloned()
            .unwrap_or_else(|| p.to_string())
    }

    /// A path as a template of its file's name: `{name}` plus the suffix.
    pub(super) fn template_of(&self, r: &str) -> String {
        let suffix = &r[self.base_of(r).len()..];
        let shape = tokenize(suffix);
        let varies = self.suffix_values.get(&shape).is_some_and(|v| v.len() > 1);
        format!(
            "{{name}}{}",
            if varies { shape } else { suffix.to_string() }
        )
    }
}
