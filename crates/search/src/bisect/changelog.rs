//! Suspects without a tree: a distribution kernel package's changelog (Debian's
//! `usr/share/doc/linux-image-*/changelog.gz`) lists the upstream commits of each stable
//! update by subject ("ext4: validate readdir offset before accessing dirent"). Between the
//! last good and the first bad package, the entries that name a function whose time grew
//! — or its subsystem ("shmem_unlink" → "mm/shmem: …") — are where to look first.

use super::suspects::Grown;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::Path;

/// The most a changelog may decompress to (Debian's 6.12 changelog is 3 MB).
pub const MAX_CHANGELOG_BYTES: usize = 32 << 20;

/// One changelog line that names a suspect function or its subsystem.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Mention {
    /// The entry's version (`6.12.117-1`).
    pub version: String,
    /// The line, without its bullet.
    pub line: String,
    /// The suspect functions it names, or whose subsystem it is about.
    pub functions: Vec<String>,
    /// The line names a function itself (not only its subsystem).
    pub exact: bool,
    /// The time those functions added (ms), for the ranking.
    pub added_ms: f64,
}

/// A changelog's text, decompressed when it is compressed, at most [`MAX_CHANGELOG_BYTES`].
pub fn read(path: &Path) -> Result<String> {
    let bytes = measure::child::decompress(path, MAX_CHANGELOG_BYTES, "a changelog")?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A Debian changelog's entries: (the header line's version, its bullet lines), newest
/// first. A header is `source (version) distribution; urgency=…` at the start of a line.
fn entries(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for l in text.lines() {
        if !l.starts_with(' ') && l.contains(" (") && l.contains(") ") {
            let version = l
                .split_once(" (")
                .and_then(|(_, r)| r.split_once(')'))
                .map(|(v, _)| v.to_string())
                .unwrap_or_default();
            out.push((version, Vec::new()));
        } else if let Some((_, lines)) = out.last_mut() {
            let t = l.trim_start();
            if let Some(item) = t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")) {
                lines.push(item.trim().to_string());
            } else if !t.is_empty() && !t.starts_with("-- ") && !t.starts_with('[') {
                // (`[ Name ]` starts a co-maintainer's part of the entry.)
                // A continuation of the item above.
                if let Some(last) = lines.last_mut() {
                    last.push(' ');
                    last.push_str(t);
                }
            }
        }
    }
    out
}

/// The entries of `newer` that `older` lacks (by version): what came between them.
fn between(newer: &str, older: &str) -> Vec<(String, Vec<String>)> {
    let old: BTreeSet<String> = entries(older).into_iter().map(|(v, _)| v).collect();
    entries(newer)
        .into_iter()
        .filter(|(v, _)| !old.contains(v))
        .collect()
}

/// Too common as a first word of a function's name to say which subsystem it is.
const NOT_A_SUBSYSTEM: &[&str] = &[
    "do", "get", "put", "set", "new", "free", "alloc", "simple", "generic", "kmem", "kmalloc",
    "memcpy", "memset", "copy", "clear", "raw", "rcu", "try", "vfs", "sys", "init", "find",
    "lookup", "read", "write", "update", "mark", "check", "entry", "syscall", "handle",
];

/// The subsystem a function's name says (`ext4_evict_inode` → `ext4`), if it says one.
fn subsystem(function: &str) -> Option<&str> {
    let token = function.trim_start_matches('_').split('_').next()?;
    (token.len() >= 3 && !NOT_A_SUBSYSTEM.contains(&token)).then_some(token)
}

/// Whether `line` names the function `word` as a whole word (letters, digits and `_`
/// around it end it) — a name that could be an English word (`evict`) only as `evict()`.
fn names(line: &str, word: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    line.match_indices(word).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let rest = &line[at + word.len()..];
        !before.is_some_and(is_word)
            && !rest.chars().next().is_some_and(is_word)
            && (word.contains('_') || rest.starts_with("()"))
    })
}

/// The lines between the two changelogs that name a grown function (exact) or are about
/// its subsystem (the subject's prefix before ':', e.g. `mm/shmem`, `ext4`), ranked by
/// exactness, then by the time their functions added.
pub fn mentions(newer: &str, older: &str, grown: &[Grown]) -> Vec<Mention> {
    let mut out = Vec::new();
    for (version, lines) in between(newer, older) {
        for line in lines {
            let prefix = line.split_once(": ").map_or("", |(p, _)| p);
            let mut exact = false;
            let mut functions = Vec::new();
            let mut added = 0.0;
            for g in grown {
                let named = names(&line, &g.function);
                let about = subsystem(&g.function).is_some_and(|s| {
                    prefix
                        .split(['/', ',', ' '])
                        .any(|p| p.trim().eq_ignore_ascii_case(s))
                });
                if named || about {
                    exact |= named;
                    functions.push(g.function.clone());
                    added += g.added_ms;
                }
            }
            if !functions.is_empty() {
                out.push(Mention {
                    version: version.clone(),
                    line,
                    functions,
                    exact,
                    added_ms: added,
                });
            }
        }
    }
    out.sort_by(|a, b| {
        b.exact
            .cmp(&a.exact)
            .then_with(|| b.added_ms.total_cmp(&a.added_ms))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEWER: &str =
        "linux-signed-6.12-amd64 (6.12.117+1~deb12u1) bookworm-security; urgency=high

  * Sign kernel from linux-6.12 6.12.117-1~deb12u1

 -- Ben Hutchings <benh@debian.org>  Sat, 14 Nov 2026 13:56:01 +0100

linux (6.12.117-1) trixie-security; urgency=high

  * New upstream stable update:
    https://www.kernel.org/pub/linux/kernel/v6.x/ChangeLog-6.12.117
    - ext4: validate readdir offset before accessing dirent
      (CVE-2026-92499)
    - mm/shmem: wait 300 us in every unlink
    [ Salvatore Bonaccorso ]
    - libfs: fix a leak in simple_offset_remove()
    - drm/amdgpu: add buf length check

 -- Ben Hutchings <benh@debian.org>  Fri, 13 Nov 2026 10:00:00 +0100

linux (6.12.115-2) trixie-security; urgency=high

  * New upstream stable update:
    - ext4: an older change that both have
";

    const OLDER: &str = "linux (6.12.115-2) trixie-security; urgency=high

  * New upstream stable update:
    - ext4: an older change that both have
";

    fn grown(f: &str, ms: f64) -> Grown {
        Grown {
            function: f.into(),
            added_ms: ms,
        }
    }

    #[test]
    fn the_entries_between_two_packages_that_name_a_grown_function_or_its_subsystem() {
        let g = [
            grown("shmem_unlink", 91.6),
            grown("simple_offset_remove", 39.5),
            grown("ext4_readdir", 0.2),
            grown("do_unlinkat", 5.0),
        ];
        let m = mentions(NEWER, OLDER, &g);
        let lines: Vec<&str> = m.iter().map(|m| m.line.as_str()).collect();
        assert_eq!(
            lines,
            [
                "libfs: fix a leak in simple_offset_remove()",
                "mm/shmem: wait 300 us in every unlink",
                "ext4: validate readdir offset before accessing dirent (CVE-2026-92499)",
            ]
        );
        assert!(m[0].exact && !m[1].exact);
        assert_eq!(m[1].functions, ["shmem_unlink"]);
        assert_eq!(m[1].version, "6.12.117-1");
        // The entry both packages have is not between them; drm is nobody's subsystem here.
        assert!(
            !lines
                .iter()
                .any(|l| l.contains("older") || l.contains("drm"))
        );
    }

    #[test]
    fn names_are_whole_words_and_common_prefixes_are_no_subsystem() {
        assert!(names("fix simple_offset_remove()", "simple_offset_remove"));
        assert!(!names(
            "fix simple_offset_remove_all",
            "simple_offset_remove"
        ));
        assert_eq!(subsystem("__ext4_mark_inode_dirty"), Some("ext4"));
        assert_eq!(subsystem("do_unlinkat"), None);
        assert_eq!(subsystem("simple_offset_add"), None);
        assert!(mentions("", "", &[grown("x", 1.0)]).is_empty());
    }
}
