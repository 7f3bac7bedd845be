//! `bisect --tree`: `git bisect` driven by the verdict engine. git picks the revisions (it
//! knows merges); each one is measured and judged against both ends like a kernel of a
//! list ([`classify`]), and marked `good`, `bad` or `skip` (a revision that does not build,
//! boot or run, or stays undecidable). The tree is always handed back as it was found
//! (`git bisect reset`), also after an error or Ctrl-C.

use super::{
    Call, Ends, Measure, Outcome, Params, Progress, Step, classify, conclude, measure_ends,
};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A git work tree.
#[derive(Clone)]
pub struct Repo {
    pub dir: PathBuf,
}

/// What `git bisect` says after a mark.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// Test this commit next.
    Test(String),
    /// The first bad commit.
    FirstBad(String),
    /// Only skipped commits are left: the first bad one is among these.
    Candidates(Vec<String>),
}

impl Repo {
    pub fn open(dir: &Path) -> Result<Repo> {
        let r = Repo {
            dir: dir.to_path_buf(),
        };
        r.git(&["rev-parse", "--git-dir"])
            .with_context(|| format!("--tree {}: not a git work tree", dir.display()))?;
        Ok(r)
    }

    /// Run git in the tree; its stdout, or an error with its first stderr line. (Not
    /// stopped by a pending interrupt: the tree must be handed back even then.)
    fn git(&self, args: &[&str]) -> Result<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(&self.dir)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .context("cannot run git")?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let line = err
                .lines()
                .chain(stdout.lines())
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no output");
            bail!("git {}: {}", args.join(" "), line.trim());
        }
        Ok(stdout)
    }

    /// The full commit id of `rev`.
    pub fn commit(&self, rev: &str) -> Result<String> {
        let spec = format!("{rev}^{{commit}}");
        self.git(&["rev-parse", "--verify", "--quiet", &spec])
            .map(|s| s.trim().to_string())
            .map_err(|_| anyhow::anyhow!("{}: no commit {rev} in this tree", self.dir.display()))
    }

    pub fn subject(&self, commit: &str) -> String {
        self.git(&["log", "-1", "--format=%s", commit])
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    }

    /// The changes `commit` made to C sources and headers, with no context lines: each
    /// hunk's header names the function it lies in (`suspects`).
    pub fn diff_of(&self, commit: &str) -> Result<String> {
        self.git(&[
            "show",
            "--format=",
            "--unified=0",
            "--no-color",
            "--no-ext-diff",
            "--no-renames",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            commit,
            "--",
            "*.c",
            "*.h",
        ])
    }

    /// The text of `path` at `rev` (None: no such file there).
    pub fn file_at(&self, rev: &str, path: &str) -> Option<String> {
        self.git(&["show", &format!("{rev}:{path}")]).ok()
    }

    /// The commits `git bisect` may test between `good` and `bad`, oldest first, with
    /// `good` in front: index 0 is the good end, the last one the bad end.
    pub fn range(&self, good: &str, bad: &str) -> Result<Vec<String>> {
        if self
            .git(&["merge-base", "--is-ancestor", good, bad])
            .is_err()
        {
            bail!(
                "--good {} is not an ancestor of --bad {}: nothing to bisect between them",
                &good[..12],
                &bad[..12]
            );
        }
        let list = self.git(&[
            "rev-list",
            "--reverse",
            "--topo-order",
            &format!("{good}..{bad}"),
        ])?;
        let mut v = vec![good.to_string()];
        v.extend(list.lines().map(str::to_string));
        Ok(v)
    }

    /// Refuse a tree with changes to tracked files (a checkout would carry them along or
    /// fail) or a bisect already under way.
    pub fn check_clean(&self) -> Result<()> {
        let changed = self.git(&["status", "--porcelain", "--untracked-files=no"])?;
        if let Some(l) = changed.lines().next() {
            bail!(
                "--tree {}: uncommitted changes ({}): commit or stash them first (bisect checks out other revisions)",
                self.dir.display(),
                l.trim()
            );
        }
        let start = self.git(&["rev-parse", "--git-path", "BISECT_START"])?;
        let start = self.dir.join(start.trim());
        if start.exists() {
            bail!(
                "--tree {}: a git bisect is under way: end it with `git bisect reset`",
                self.dir.display()
            );
        }
        Ok(())
    }

    /// How many merge commits lie between `good` and `bad` (0: the range is a line, and
    /// the list [`Repo::range`] gives is its history).
    pub fn merges(&self, good: &str, bad: &str) -> Result<usize> {
        let n = self.git(&["rev-list", "--merges", "--count", &format!("{good}..{bad}")])?;
        n.trim()
            .parse()
            .with_context(|| format!("git rev-list --count said {n:?}"))
    }

    /// Where the tree is now (its branch, else its commit); it goes back there when the
    /// guard is dropped, also after an error or Ctrl-C.
    pub fn keep_place(&self) -> Result<Back<'_>> {
        let to = match self.git(&["symbolic-ref", "--quiet", "--short", "HEAD"]) {
            Ok(b) => b.trim().to_string(),
            Err(_) => self.commit("HEAD")?,
        };
        Ok(Back { repo: self, to })
    }

    pub fn checkout(&self, commit: &str) -> Result<()> {
        self.git(&["checkout", "-q", "--detach", commit])
            .map(|_| ())
    }

    /// `git bisect start BAD GOOD`: the first commit to test.
    pub fn start(&self, bad: &str, good: &str) -> Result<Next> {
        let out = self.git(&["bisect", "start", bad, good])?;
        self.next(&out)
    }

    pub fn mark(&self, commit: &str, call: Call) -> Result<Next> {
        let term = match call {
            Call::Good => "good",
            Call::Bad => "bad",
            Call::Skipped => "skip",
        };
        // With only skipped commits left, git says so and exits 2: that is an answer.
        let out = Command::new("git")
            .arg("-C")
            .arg(&self.dir)
            .args(["bisect", term, commit])
            .stdin(std::process::Stdio::null())
            .output()
            .context("cannot run git")?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() && !text.contains("could be any of") {
            bail!(
                "git bisect {term} {commit}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        self.next(&text)
    }

    fn next(&self, out: &str) -> Result<Next> {
        Ok(parse_next(out).unwrap_or(Next::Test(
            self.git(&["rev-parse", "HEAD"])?.trim().to_string(),
        )))
    }

    /// `git bisect reset`: back to where the bisect started.
    pub fn reset(&self) -> Result<()> {
        self.git(&["bisect", "reset"]).map(|_| ())
    }

    pub fn log(&self) -> String {
        self.git(&["bisect", "log"]).unwrap_or_default()
    }
}

/// The answer in `git bisect`'s output, if it gave one (else: test what is checked out).
fn parse_next(out: &str) -> Option<Next> {
    let hex = |w: &str| w.len() == 40 && w.bytes().all(|b| b.is_ascii_hexdigit());
    if let Some(l) = out
        .lines()
        .find(|l| l.ends_with(" is the first bad commit"))
    {
        let c = l.split_whitespace().next().unwrap_or_default();
        if hex(c) {
            return Some(Next::FirstBad(c.to_string()));
        }
    }
    if out.contains("could be any of") {
        return Some(Next::Candidates(
            out.lines()
                .map(str::trim)
                .filter(|l| hex(l))
                .map(str::to_string)
                .collect(),
        ));
    }
    None
}

/// Ends the bisect in git when dropped, whatever happened.
/// Puts the tree back where [`Repo::keep_place`] found it.
pub struct Back<'a> {
    repo: &'a Repo,
    to: String,
}

impl Drop for Back<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.repo.git(&["checkout", "-q", &self.to]) {
            model::diag::warn(format!("{}: {e:#}", self.repo.dir.display()));
        }
    }
}

struct Reset<'a>(&'a Repo);

impl Drop for Reset<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.0.reset() {
            model::diag::warn(format!("{}: {e:#}", self.0.dir.display()));
        }
    }
}

/// Bisect `list` (from [`Repo::range`]: the good end first, the bad end last) with git
/// choosing the commits; `m` measures the commit at an index of the list.
pub fn bisect(
    repo: &Repo,
    list: &[String],
    m: &mut dyn Measure,
    p: &Params,
    progress: &mut dyn FnMut(Progress),
) -> Result<Outcome> {
    let last = list.len() - 1;
    let index = |c: &str| {
        list.iter()
            .position(|x| x == c)
            .with_context(|| format!("git bisect chose {c}, which is not between the ends"))
    };
    // Started first, so that the reset goes back to where the user was.
    let mut next = repo.start(&list[last], &list[0])?;
    let _reset = Reset(repo);
    let (ends, mut steps): (Ends, Vec<Step>) = measure_ends(m, 0, last, p, progress)?;
    let mut tested = 0;
    let (first_bad, candidates) = loop {
        match next {
            Next::Test(c) => {
                let i = index(&c)?;
                tested += 1;
                let left = list.len().saturating_sub(2) >> (tested - 1);
                progress(Progress::Step {
                    k: tested,
                    of: tested - 1 + (left.max(1) as f64).log2().ceil().max(1.0) as usize,
                    name: &format!("{} {}", &c[..12], repo.subject(&c)),
                });
                let step = classify(m, i, &ends, p, progress)?;
                if step.call == Call::Skipped {
                    progress(Progress::Note(&format!(
                        "{} skipped: {}",
                        &c[..12],
                        step.why
                    )));
                }
                next = repo.mark(&c, step.call)?;
                steps.push(step);
            }
            Next::FirstBad(c) => break (Some(index(&c)?), vec![index(&c)?]),
            Next::Candidates(v) => {
                let mut idx = v.iter().map(|c| index(c)).collect::<Result<Vec<_>>>()?;
                idx.sort_unstable();
                break (None, idx);
            }
        }
    };
    // A single candidate is the answer (git prints it as "the first bad commit"), once
    // it differs from the last good commit measured below it.
    let answer = first_bad.map(|bad| {
        let good = steps
            .iter()
            .filter(|s| s.call == Call::Good && s.index < bad)
            .map(|s| s.index)
            .max()
            .unwrap_or(0);
        (good, bad)
    });
    conclude(m, steps, candidates, answer, p, progress)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bisect::tests::{Fake, params};

    fn toy_repo(commits: usize) -> (PathBuf, Repo) {
        let d = std::env::temp_dir().join(format!("sigbench-git-{}-{commits}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let sh = |script: &str| {
            let ok = Command::new("sh")
                .arg("-c")
                .arg(script)
                .current_dir(&d)
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@t")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@t")
                .output()
                .unwrap();
            assert!(ok.status.success(), "{script}: {ok:?}");
        };
        sh("git init -q -b main && echo 0 > f && git add f && git commit -qm c0 && git tag good");
        for i in 1..=commits {
            sh(&format!("echo {i} >> f && git commit -qam c{i}"));
        }
        (d.clone(), Repo::open(&d).unwrap())
    }

    #[test]
    fn drives_git_bisect_skips_what_does_not_build_and_hands_the_tree_back() {
        let (d, repo) = toy_repo(8);
        repo.check_clean().unwrap();
        let good = repo.commit("good").unwrap();
        let bad = repo.commit("main").unwrap();
        let list = repo.range(&good, &bad).unwrap();
        assert_eq!(list.len(), 9);
        assert_eq!(repo.subject(&list[6]), "c6");
        let p = params(3, 6);
        // git tests c4 first (8 candidates): broken, skipped; the answer stays exact.
        let mut f = Fake {
            first_bad: 6,
            broken: vec![4],
            measured: vec![],
        };
        let o = bisect(&repo, &list, &mut f, &p, &mut |_| {}).unwrap();
        assert_eq!(o.first_bad, Some(6), "{o:?}");
        assert_eq!(f.measured[..3], [0, 8, 4], "{:?}", f.measured);
        assert!(
            o.steps
                .iter()
                .any(|s| s.index == 4 && s.call == Call::Skipped)
        );
        assert!(f.measured.len() <= 2 + 5, "{:?}", f.measured);
        let head = repo.git(&["symbolic-ref", "HEAD"]).unwrap();
        assert_eq!(head.trim(), "refs/heads/main", "the tree is handed back");
        repo.check_clean().unwrap();
        // The broken commit right before the first bad one: the answer is left open,
        // between the two, and said so.
        let mut f = Fake {
            first_bad: 5,
            broken: vec![4],
            measured: vec![],
        };
        let o = bisect(&repo, &list, &mut f, &p, &mut |_| {}).unwrap();
        assert_eq!(o.first_bad, None, "{o:?}");
        assert_eq!(o.candidates, vec![4, 5]);
        // Ends that do not differ: an error, and the tree is handed back all the same.
        let mut f = Fake {
            first_bad: 99,
            broken: vec![],
            measured: vec![],
        };
        let e = bisect(&repo, &list, &mut f, &p, &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("do not differ"), "{e}");
        repo.check_clean().unwrap();
        // A good end that is not an ancestor of the bad one.
        let e = repo.range(&bad, &good).unwrap_err().to_string();
        assert!(e.contains("is not an ancestor"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn reads_git_bisects_answers() {
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        assert_eq!(
            parse_next(&format!(
                "{a} is the first bad commit\ncommit {a}\nAuthor: x\n"
            )),
            Some(Next::FirstBad(a.clone()))
        );
        assert_eq!(
            parse_next(&format!(
                "There are only 'skip'ped commits left to test.\nThe first bad commit could be any of:\n{a}\n{b}\nWe cannot bisect more!\n"
            )),
            Some(Next::Candidates(vec![a.clone(), b]))
        );
        assert_eq!(
            parse_next(
                "Bisecting: 3 revisions left to test after this (roughly 2 steps)\n[0355ace] c4\n"
            ),
            None
        );
    }
}
