//! `bisect --tree`: the commits of a kernel git tree, each checked out, built in the tree
//! (`kbuild`), booted and measured. By default `git bisect` picks the commits, one at a
//! time. With `--jobs J` (J > 1, asked for) over a linear range, the list engine multisects
//! it: a round's J commits are built one after another (one build already uses every CPU)
//! and each built commit boots as soon as it is built, beside the next build and the
//! round's other guests — under the icount clock neither changes a guest's times. A round
//! costs about J builds and one measurement and shrinks the range (J + 1)-fold, so it pays
//! when measuring a commit takes longer than building it (docs/statistics.md); J is not
//! the host's CPU count by default here, as it is for lists of kernels.

use super::steps::{Bisected, Steps, boot, measure_ends_first};
use super::suspects::{self, Suspect};
use super::{Measure, Measured, Params, Progress, bisect, git};
use anyhow::{Context, Result};
use measure::kbuild;
use measure::vm::kernel::{self, Kernel, KernelSpec};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A git tree's range to bisect: `--tree DIR --good REV --bad REV [--config FILE]`, or
/// what `watch --tree` maps two releases to.
pub struct TreeRange<'a> {
    pub dir: &'a Path,
    pub good: &'a str,
    pub bad: &'a str,
    pub config: Option<&'a Path>,
    /// `--jobs` was given: then a round measures `Params::jobs` commits; otherwise one
    /// (git bisect).
    pub jobs_asked: bool,
}

/// What builds the commits: the tree, its build, and where the logs go.
struct Builder {
    repo: git::Repo,
    tree: kbuild::Tree,
    logs: PathBuf,
    cache: PathBuf,
    /// The config's missing options were said (once).
    warned: bool,
    /// What each commit built to (its kernel, copied out of the tree) or why it did not:
    /// a commit measured again (more repetitions, a confirmation) boots the same build —
    /// a rebuild is another image (its build number and time differ), so another state,
    /// and a build's time for nothing.
    built: BTreeMap<String, Result<Kernel, String>>,
}

impl Builder {
    /// Check out `commit`, build it and copy the kernel out of the tree (so the next
    /// commit can build while this one boots). `Ok(Err(why))`: it does not build or
    /// unpack, a skipped step; `Err`: an interruption.
    fn build(&mut self, commit: &str) -> Result<Result<Kernel, String>> {
        let label = &commit[..12];
        if let Some(kept) = self.built.get(commit) {
            model::say!("sigbench: bisect: {label}: built before, its kernel booted again");
            return Ok(kept.clone());
        }
        let built = self.build_now(commit)?;
        self.built.insert(commit.to_string(), built.clone());
        Ok(built)
    }

    fn build_now(&mut self, commit: &str) -> Result<Result<Kernel, String>> {
        let label = &commit[..12];
        self.repo.checkout(commit)?;
        let log = self.logs.join(format!("{commit}.log"));
        let started = std::time::Instant::now();
        model::say!(
            "sigbench: bisect: building {label} (log: {})",
            log.display()
        );
        match self.tree.build(&log) {
            Ok(missing) => {
                model::say!(
                    "sigbench: bisect: {label} built in {:.0} s",
                    started.elapsed().as_secs_f64()
                );
                if !missing.is_empty() && !self.warned {
                    self.warned = true;
                    model::say!(
                        "sigbench: warning: the kernel config did not take {} (missing dependencies, or not in this version): the guest may lack them",
                        missing.join(", ")
                    );
                }
            }
            Err(e) => return Ok(Err(measure::interrupt::step_failed(e)?)),
        }
        let spec = KernelSpec::BuildTree {
            tree: self.repo.dir.clone(),
            modules: None,
        };
        match kernel::prepare(&spec, label, &self.cache) {
            Ok(k) => Ok(Ok(k)),
            Err(e) => Ok(Err(measure::interrupt::step_failed(e)?)),
        }
    }
}

/// The commits of a tree: commit `i` is built and booted.
struct Commits<'a> {
    steps: Steps<'a>,
    builder: Builder,
    list: Vec<String>,
    subjects: Vec<String>,
    /// What a round measured ahead (`prefetch`) and `measure` has not asked for yet.
    ahead: BTreeMap<usize, Measured>,
}

fn label(commit: &str) -> String {
    commit[..12].to_string()
}

impl Measure for Commits<'_> {
    fn noise_floor(&self) -> f64 {
        self.steps.noise_floor()
    }

    fn name(&self, i: usize) -> String {
        format!("{} {}", label(&self.list[i]), self.subjects[i])
    }

    /// The round's commits that lack repetitions: built one after another on a thread of
    /// their own, each booted as soon as it is built (on a thread of its own, beside the
    /// next build), the runs stored here in the round's order.
    fn prefetch(&mut self, wanted: &[(usize, u32)]) -> Result<()> {
        let mut todo = Vec::new();
        for &(i, reps) in wanted {
            let have = self.steps.load(i, &label(&self.list[i]), None)?;
            if have < reps && !self.ahead.contains_key(&i) {
                todo.push((i, reps - have, self.steps.stored_reps(i)));
            }
        }
        if todo.len() < 2 {
            return Ok(()); // nothing to overlap: `measure` does it
        }
        let Commits {
            steps,
            builder,
            list,
            ahead,
            ..
        } = self;
        let list = &*list;
        let (tx, rx) = std::sync::mpsc::channel::<(usize, (u32, u32), Result<Kernel, String>)>();
        let (verbose, plan, opts) = (steps.verbose, steps.plan, &steps.opts);
        let runs = std::thread::scope(|scope| -> Result<Vec<_>> {
            let todo = &todo;
            let building = scope.spawn(move || -> Result<()> {
                for &(i, more, stored) in todo {
                    let built = builder.build(&list[i])?;
                    if tx.send((i, (more, stored), built)).is_err() {
                        break;
                    }
                }
                Ok(())
            });
            // Each built commit boots at once; one that did not build is a skip.
            let guests: Vec<_> = rx
                .into_iter()
                .map(|(i, (more, stored), built)| {
                    let guest = built.map(|k| {
                        scope.spawn(move || {
                            boot(plan, opts, &k, &label(&list[i]), more, stored, verbose)
                        })
                    });
                    (i, guest)
                })
                .collect();
            let built = building.join().expect("the build thread");
            let runs: Vec<_> = guests
                .into_iter()
                .map(|(i, g)| (i, g.map(|g| g.join().expect("a guest thread"))))
                .collect();
            built.map(|()| runs)
        })?;
        for (i, run) in runs {
            let m = match run {
                Ok(booted) => steps.kept(i, &label(&list[i]), booted)?,
                Err(why) => Measured::Failed(why),
            };
            ahead.insert(i, m);
        }
        Ok(())
    }

    fn measure(&mut self, i: usize, reps: u32) -> Result<Measured> {
        let label = label(&self.list[i]);
        // What the round measured, unless more repetitions are wanted now.
        if let Some(m) = self.ahead.remove(&i)
            && !matches!(&m, Measured::Samples(s) if (s.len() as u32) < reps)
        {
            return Ok(m);
        }
        let have = self.steps.load(i, &label, None)?;
        if have >= reps {
            return Ok(self.steps.reuse_stored(i, &label));
        }
        match self.builder.build(&self.list[i])? {
            Ok(k) => self.steps.top_up(i, &k, &label, reps - have),
            Err(why) => Ok(Measured::Failed(why)),
        }
    }
}

/// The directory of a tree's build logs under the cache's `build-logs`: its name and a
/// digest of where it is, so bisects of two trees (or two worktrees) never write into
/// each other's logs.
fn logs_of(dir: &std::path::Path) -> String {
    use sha2::Digest;
    let at = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let digest = sha2::Sha256::digest(at.as_os_str().as_encoded_bytes());
    let name: String = at
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    format!("{name}-{}", model::text::hex(&digest[..6]))
}

pub fn over_tree(
    range: &TreeRange,
    mut steps: Steps,
    params: &Params,
    progress: &mut dyn FnMut(Progress),
) -> Result<Bisected> {
    let dir = range.dir;
    let repo = git::Repo::open(dir)?;
    repo.check_clean()?;
    // Every checkout from here on — the ends built for the suspects, the list engine's
    // rounds — is undone when this returns, as git bisect undoes its own: the tree goes
    // back to where it was found, also after an error or Ctrl-C.
    let _back = repo.keep_place()?;
    let (good, bad) = (repo.commit(range.good)?, repo.commit(range.bad)?);
    let list = repo.range(&good, &bad)?;
    let logs = steps.opts.cache.join("build-logs").join(logs_of(dir));
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    let tree = kbuild::Tree::new(dir, range.config, steps.plan.testbed.fs, &logs)?;
    steps.docs = vec![None; list.len()];
    // Several commits a round only where the list is the history: with merges, git
    // bisect knows which commits to test, and tests them one at a time.
    let jobs = if range.jobs_asked { params.jobs } else { 1 };
    let linear = repo.merges(&good, &bad)? == 0;
    if jobs > 1 && !linear {
        progress(Progress::Note(&format!(
            "the range has merges: git bisect picks the commits, one at a time (--jobs {jobs} applies to a linear range)"
        )));
    }
    let mut m = Commits {
        builder: Builder {
            repo: repo.clone(),
            tree,
            logs,
            cache: steps.opts.cache.clone(),
            warned: false,
            built: BTreeMap::new(),
        },
        steps,
        subjects: list.iter().map(|c| repo.subject(c)).collect(),
        list: list.clone(),
        ahead: BTreeMap::new(),
    };
    progress(Progress::Note(&format!(
        "{} commits from {} to {}",
        list.len() - 1,
        label(&list[0]),
        label(&list[list.len() - 1])
    )));
    let suspects = suspects(&mut m, &repo, params, progress)?;
    let outcome = if jobs > 1 && linear {
        let params = Params {
            jobs,
            ..params.clone()
        };
        bisect(&mut m, list.len(), &params, progress)?
    } else {
        git::bisect(&repo, &list, &mut m, params, progress)?
    };
    let names: Vec<String> = (0..list.len()).map(|i| m.name(i)).collect();
    Ok(Bisected {
        outcome,
        sources: vec![None; names.len()],
        what: format!("{} commits of {}", names.len(), dir.display()),
        names,
        measured_now: m.steps.measured_now,
        docs: m.steps.docs,
        suspects,
        suspect_functions: Vec::new(),
        changelog: Vec::new(),
    })
}

/// With `--profile`: both ends measured first, and the range's commits ranked by the time
/// the functions they touch added between them (`bisect::suspects`), said before the
/// bisect starts.
fn suspects(
    m: &mut Commits,
    repo: &git::Repo,
    params: &Params,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<Suspect>> {
    if m.steps.plan.profile.is_none() {
        progress(Progress::Note(
            "with --profile the ends' profiles rank the range's commits before bisecting (suspects)",
        ));
        return Ok(Vec::new());
    }
    let last = m.list.len() - 1;
    measure_ends_first(m, last, params.reps)?;
    let Some(grown) = m.steps.grown(0, last) else {
        progress(Progress::Note(
            "no suspects: an end has no profile of the bisected case",
        ));
        return Ok(Vec::new());
    };
    // Ranked over the range's diffs, with the bad end's files.
    let bad = m.list[last].clone();
    let ranked = suspects::rank(
        &m.list,
        &m.subjects,
        &grown,
        &mut |c| repo.diff_of(c),
        &mut |path| repo.file_at(&bad, path),
    )?;
    progress(Progress::Note(&format!(
        "suspects before bisecting: {} function(s) took more time at the bad end ({}), {} of {} commits touch them{}",
        grown.len(),
        grown
            .iter()
            .take(3)
            .map(|(f, t)| format!("{f} +{t:.3} ms"))
            .collect::<Vec<_>>()
            .join(", "),
        ranked.len(),
        m.list.len() - 1,
        if ranked.is_empty() { "" } else { ":" }
    )));
    for line in suspects::lines(&ranked, 5) {
        progress(Progress::Note(&format!("  {line}")));
    }
    Ok(ranked)
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_tree_keeps_its_build_logs_apart() {
        let base = std::env::temp_dir().join(format!("sigbench-logs-of-{}", std::process::id()));
        let (a, b) = (base.join("linux"), base.join("other/linux"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::os::unix::fs::symlink(&a, base.join("link")).unwrap();
        // Issue 45, item 16: two trees of one name had one tinyconfig.log.
        assert_ne!(super::logs_of(&a), super::logs_of(&b));
        assert_eq!(super::logs_of(&a), super::logs_of(&base.join("link")));
        assert!(super::logs_of(&a).starts_with("linux-"));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
