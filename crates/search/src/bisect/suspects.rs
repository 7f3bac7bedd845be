//! Suspects before bisecting: with a kernel tree and `--profile`, the two ends' profiles
//! say which functions took more time (a function's total share — itself and its callees
//! — × the window's time, pooled over the repetitions), and the range's diffs say which
//! commits touched them (the function a hunk lies in, as git's hunk header names it, or
//! a function a hunk defines). The commits are ranked by the time their functions
//! added, commits whose added lines are still there at the bad end first (a change
//! undone later in the range — a commit that did not build, then its fix — is not the
//! cause). A bisect over a dozen commits costs a dozen builds and boots; the ranking
//! costs two profiles the bisect measures anyway and a `git show` per commit.

use analyse::stats::summary::median_of;
use anyhow::Result;
use measure::probe::profile::{ProfileReading, fold_symbol, folded_stacks};
use model::results::RunDocument;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A commit of the range that touches functions whose time grew.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Suspect {
    pub commit: String,
    pub subject: String,
    /// The grown functions it touches, most added time first.
    pub functions: Vec<String>,
    /// The time the first of them added from the good end to the bad end (ms per
    /// repetition of the window).
    pub added_ms: f64,
    /// Its changes to them are still in the bad end (not undone later in the range).
    pub kept: bool,
}

/// A function whose time grew between the ends (a list of kernels has no commits to rank).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Grown {
    pub function: String,
    pub added_ms: f64,
}

/// The profiled time of each function (folded name) in the case `dir`/`n` of `runs`,
/// in ms per repetition: its total share of the pooled samples × the median window time;
/// and the time one sample stands for. None without a profile of that case.
pub fn function_times(
    runs: &[RunDocument],
    dir: &str,
    n: u64,
) -> Option<(BTreeMap<String, f64>, f64)> {
    let mut stacks: BTreeMap<String, u64> = BTreeMap::new();
    let mut walls = Vec::new();
    for c in runs.iter().flat_map(|d| &d.cases) {
        if c.warmup || c.dir != dir || c.n != n {
            continue;
        }
        if let Some(ProfileReading::Sampled(p)) = &c.profile {
            walls.push(c.wall_ns as f64 / 1e6);
            for (s, k) in p.stacks() {
                *stacks.entry(s).or_default() += k;
            }
        }
    }
    let samples: u64 = stacks.values().sum();
    if samples == 0 || walls.is_empty() {
        return None;
    }
    let wall = median_of(&walls);
    let per_rep = samples as f64 / walls.len() as f64;
    let mut total: BTreeMap<String, u64> = BTreeMap::new();
    for (stack, k) in folded_stacks(&stacks) {
        let frames: BTreeSet<&str> = stack.split(';').collect();
        for f in frames {
            *total.entry(f.to_string()).or_default() += k;
        }
    }
    let times = total
        .into_iter()
        .map(|(f, k)| (f, k as f64 / samples as f64 * wall))
        .collect();
    Some((times, wall / per_rep))
}

/// The functions whose time grew from `good` to `bad` by more than two samples' worth,
/// most first: (function, added ms).
pub fn grown(
    good: &(BTreeMap<String, f64>, f64),
    bad: &(BTreeMap<String, f64>, f64),
) -> Vec<(String, f64)> {
    let resolution = 2.0 * good.1.max(bad.1);
    let mut v: Vec<(String, f64)> = bad
        .0
        .iter()
        .map(|(f, t)| (f.clone(), t - good.0.get(f).copied().unwrap_or(0.0)))
        .filter(|(_, added)| *added > resolution)
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// One hunk of a diff: the file, the function it lies in or defines, and its added lines.
#[derive(Clone, Debug, PartialEq)]
pub struct Hunk {
    pub path: String,
    pub functions: Vec<String>,
    pub added: Vec<String>,
}

/// The hunks of `git show --unified=0` output: each with the function its header names
/// (git's hunk header carries the enclosing function's line) and any function an added
/// line begins the definition of.
pub fn hunks(diff: &str) -> Vec<Hunk> {
    let mut out: Vec<Hunk> = Vec::new();
    let mut path = String::new();
    for line in diff.lines() {
        if let Some(p) = line.strip_prefix("+++ ") {
            path = p.strip_prefix("b/").unwrap_or(p).to_string();
        } else if let Some(rest) = line.strip_prefix("@@ ") {
            // `@@ -a,b +c,d @@ CONTEXT`
            let context = rest.split_once(" @@").map_or("", |x| x.1);
            out.push(Hunk {
                path: path.clone(),
                functions: called_before_paren(context).into_iter().collect(),
                added: Vec::new(),
            });
        } else if let (Some(h), Some(added)) = (out.last_mut(), line.strip_prefix('+')) {
            if line.starts_with("+++") {
                continue;
            }
            // A definition starts in the first column and opens its parameters.
            let starts_definition = added
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && !added.trim_end().ends_with(';');
            if starts_definition
                && let Some(f) = called_before_paren(added)
                && !h.functions.contains(&f)
            {
                h.functions.push(f);
            }
            h.added.push(added.to_string());
        }
    }
    out
}

/// The identifier right before the first `(` of `line` (a function's name in its
/// definition), folded as profiles are.
fn called_before_paren(line: &str) -> Option<String> {
    let head = &line[..line.find('(')?];
    let name: String = head
        .trim_end()
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect::<Vec<char>>()
        .into_iter()
        .rev()
        .collect();
    let keyword = ["if", "for", "while", "switch", "return", "sizeof"].contains(&name.as_str());
    (!name.is_empty() && !keyword && !name.starts_with(|c: char| c.is_ascii_digit()))
        .then(|| fold_symbol(&name).to_string())
}

/// Rank the commits of `list` (index 0 the good end, the last the bad end) by the time
/// the grown functions they touch added. `diff(commit)` is the commit's `git show
/// --unified=0`; `at_bad(path)` the file's text at the bad end.
pub fn rank(
    list: &[String],
    subjects: &[String],
    grown: &[(String, f64)],
    diff: &mut dyn FnMut(&str) -> Result<String>,
    at_bad: &mut dyn FnMut(&str) -> Option<String>,
) -> Result<Vec<Suspect>> {
    let added: HashMap<&str, f64> = grown.iter().map(|(f, t)| (f.as_str(), *t)).collect();
    let mut files: HashMap<String, Option<BTreeSet<String>>> = HashMap::new();
    let mut out = Vec::new();
    for (k, commit) in list.iter().enumerate().skip(1) {
        let mut touched: BTreeMap<String, bool> = BTreeMap::new();
        for h in hunks(&diff(commit)?) {
            let hit: Vec<&String> = h
                .functions
                .iter()
                .filter(|f| added.contains_key(f.as_str()))
                .collect();
            if hit.is_empty() {
                continue;
            }
            let lines = files.entry(h.path.clone()).or_insert_with(|| {
                at_bad(&h.path).map(|t| t.lines().map(|l| l.trim().to_string()).collect())
            });
            let meaningful: Vec<&str> = h
                .added
                .iter()
                .map(|l| l.trim())
                .filter(|l| l.len() > 3)
                .collect();
            let kept = !meaningful.is_empty()
                && lines
                    .as_ref()
                    .is_some_and(|set| meaningful.iter().all(|l| set.contains(*l)));
            for f in hit {
                let e = touched.entry(f.clone()).or_insert(false);
                *e |= kept;
            }
        }
        if touched.is_empty() {
            continue;
        }
        let kept = touched.values().any(|&k| k);
        let mut functions: Vec<(String, f64)> = touched
            .into_iter()
            .filter(|(_, k)| *k == kept)
            .map(|(f, _)| {
                let t = added[f.as_str()];
                (f, t)
            })
            .collect();
        functions.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out.push(Suspect {
            commit: commit.clone(),
            subject: subjects.get(k).cloned().unwrap_or_default(),
            added_ms: functions[0].1,
            functions: functions.into_iter().map(|f| f.0).collect(),
            kept,
        });
    }
    out.sort_by(|a, b| {
        b.kept
            .cmp(&a.kept)
            .then(b.added_ms.total_cmp(&a.added_ms))
            // The deepest function first: of two commits, the one touching the smaller
            // (more specific) function that still added the most.
            .then_with(|| a.functions.len().cmp(&b.functions.len()))
    });
    Ok(out)
}

/// The ranking in a few lines: `N. ID subject — FUNCTION +X ms (…)`.
pub fn lines(suspects: &[Suspect], max: usize) -> Vec<String> {
    suspects
        .iter()
        .take(max)
        .enumerate()
        .map(|(i, s)| {
            format!(
                "{}. {} {} — {} +{:.3} ms{}{}",
                i + 1,
                s.commit.get(..12).unwrap_or(&s.commit),
                s.subject,
                s.functions[0],
                s.added_ms,
                if s.functions.len() > 1 {
                    format!(" (also {})", s.functions[1..].join(", "))
                } else {
                    String::new()
                },
                if s.kept {
                    ""
                } else {
                    "; undone later in the range"
                }
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "\
diff --git a/mm/shmem.c b/mm/shmem.c
index 1..2 100644
--- a/mm/shmem.c
+++ b/mm/shmem.c
@@ -30,0 +31 @@
+#include <linux/delay.h>
@@ -3240,0 +3242,2 @@ static int shmem_unlink(struct inode *dir, struct dentry *dentry)
+
+\tudelay(300);\t/* the slowdown */
@@ -10,0 +13,4 @@ struct foo {
+static int __init shmem_helper(void)
+{
+\treturn 0;
+}
";

    #[test]
    fn hunks_name_their_function_and_the_functions_they_define() {
        let h = hunks(DIFF);
        assert_eq!(h.len(), 3);
        assert_eq!(h[0].functions, Vec::<String>::new());
        assert_eq!(h[1].path, "mm/shmem.c");
        assert_eq!(h[1].functions, ["shmem_unlink"]);
        assert_eq!(h[1].added[1], "\tudelay(300);\t/* the slowdown */");
        assert_eq!(h[2].functions, ["shmem_helper"]);
        assert_eq!(called_before_paren("\tif (x) {"), None);
        assert_eq!(called_before_paren("no parenthesis"), None);
    }

    fn times(v: &[(&str, f64)]) -> (BTreeMap<String, f64>, f64) {
        (v.iter().map(|(f, t)| (f.to_string(), *t)).collect(), 0.01)
    }

    #[test]
    fn the_commit_whose_change_stays_ranks_first() {
        let good = times(&[("do_unlinkat", 1.0), ("shmem_unlink", 0.2), ("iput", 0.5)]);
        let bad = times(&[
            ("do_unlinkat", 91.0),
            ("shmem_unlink", 90.2),
            ("iput", 0.5),
            ("delay_tsc", 90.0),
        ]);
        let g = grown(&good, &bad);
        assert_eq!(g.len(), 3, "{g:?}");
        assert!(g.iter().all(|(f, _)| f != "iput"), "{g:?}");
        // c1 documentation, c2 breaks shmem_unlink, c3 undoes it, c4 the slowdown, c5 touches
        // do_unlinkat in a way undone by c6.
        let list: Vec<String> = ["c0", "c1", "c2", "c3", "c4", "c5", "c6"]
            .map(String::from)
            .to_vec();
        let subjects: Vec<String> = list.iter().map(|c| format!("subject of {c}")).collect();
        let hunk = |f: &str, added: &str| {
            format!(
                "+++ b/x.c\n@@ -1 +1 @@ static int {f}(void)\n{}",
                if added.is_empty() {
                    "-\tgone();".to_string()
                } else {
                    format!("+{added}")
                }
            )
        };
        let mut diff = |c: &str| -> Result<String> {
            Ok(match c {
                "c1" => "+++ b/Documentation/x.rst\n@@ -1 +1 @@\n+text\n".to_string(),
                "c2" => hunk("shmem_unlink", "\tno_such_function();"),
                "c3" => hunk("shmem_unlink", ""),
                "c4" => hunk("shmem_unlink", "\tudelay(300);"),
                "c5" => hunk("do_unlinkat", "\ttemporary();"),
                "c6" => hunk("do_unlinkat", ""),
                _ => String::new(),
            })
        };
        let mut at_bad =
            |_: &str| Some("static int shmem_unlink(void)\n{\n\tudelay(300);\n}\n".to_string());
        let s = rank(&list, &subjects, &g, &mut diff, &mut at_bad).unwrap();
        assert_eq!(s[0].commit, "c4", "{s:?}");
        assert!(s[0].kept);
        assert_eq!(s[0].functions, ["shmem_unlink"]);
        assert!((s[0].added_ms - 90.0).abs() < 1e-9);
        // The undone ones follow; the documentation is no suspect.
        assert!(s.iter().all(|x| x.commit != "c1"));
        assert!(s[1..].iter().all(|x| !x.kept));
        assert!(lines(&s, 1)[0].starts_with("1. c4 subject of c4 — shmem_unlink +90.000 ms"));
    }
}
