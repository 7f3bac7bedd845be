//! `sigbench record`: from a real program's strace to a replayable signature, as a
//! pipeline of stages, each a module:
//!
//! 1. [`strace`] parses the trace into calls;
//! 2. `resolve` follows every process's working directory, root and descriptors, so each
//!    call's paths become absolute and its descriptor an "open file";
//! 3. `tree` chooses the tree (`--under`, or where the most files changed) and keeps the
//!    calls below it;
//! 4. `files` assigns each path to a file and names it as a template;
//! 5. `steps` turns each file's calls into steps, prunes what does not change the
//!    filesystem (unless asked to keep it) and gives slots;
//! 6. `phases` picks the common sequence and cuts it into phases;
//! 7. `emit` writes the signature file, which must validate.
//!
//! Everything dropped on the way is counted with its reason.

mod emit;
mod files;
mod phases;
mod resolve;
pub mod steps;
pub mod strace;
mod tree;

use crate::signature::Signature;
use anyhow::{Result, bail};
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use strace::Call;

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
    /// Every call turned into a step, in trace order.
    pub kept_calls: Vec<KeptCall>,
}

/// A call of the trace that became a step.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct KeptCall {
    /// Its line in the trace (1-based).
    pub line: usize,
    /// Which of the signature's files it was made for (1-based, in order of first use).
    pub file: u64,
    /// The phase its step is in (1-based).
    pub phase: usize,
    pub syscall: String,
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

/// What was dropped on the way, by reason, and notes for the user.
#[derive(Default)]
struct Log {
    dropped: BTreeMap<String, usize>,
    notes: HashSet<String>,
}

impl Log {
    fn drop(&mut self, why: &str) {
        self.drop_n(why, 1);
    }

    fn drop_n(&mut self, why: &str, n: usize) {
        if n > 0 {
            *self.dropped.entry(why.to_string()).or_insert(0) += n;
        }
    }

    fn note(&mut self, note: String) {
        self.notes.insert(note);
    }
}

/// A trace's calls, replayed to a sink as many times as recording needs: once with
/// `--under`, twice without (the first pass only counts where files changed, to choose
/// the tree). Memory then grows with the calls kept, not with the trace.
pub trait Trace {
    fn each(&mut self, sink: &mut dyn FnMut(&Call)) -> Result<()>;
}

/// Calls already in memory.
impl Trace for &[Call] {
    fn each(&mut self, sink: &mut dyn FnMut(&Call)) -> Result<()> {
        self.iter().for_each(sink);
        Ok(())
    }
}

/// A trace file, read a line at a time on every pass (`strace::read`).
pub struct TraceFile {
    pub path: PathBuf,
    /// What the trace is called in errors (`upgrade.trace`, "`dpkg -i …`").
    pub source: String,
    pub lenient: bool,
    /// Lines skipped as not understood (with `lenient`), on the last pass.
    pub skipped: usize,
}

impl Trace for TraceFile {
    fn each(&mut self, sink: &mut dyn FnMut(&Call)) -> Result<()> {
        let f = std::fs::File::open(&self.path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", self.source))?;
        let r = std::io::BufReader::with_capacity(1 << 20, f);
        self.skipped = strace::read(r, self.lenient, &mut |c| sink(&c))
            .map_err(|e| anyhow::anyhow!("{}: {e}", self.source))?;
        Ok(())
    }
}

/// Turn the calls into a signature.
pub fn record(calls: &[Call], opts: &Options) -> Result<Recording> {
    record_trace(&mut { calls }, opts)
}

/// Turn the trace into a signature, reading it as a stream.
pub fn record_trace(trace: &mut dyn Trace, opts: &Options) -> Result<Recording> {
    let name = if opts.name.is_empty() {
        "recorded"
    } else {
        opts.name.as_str()
    };
    let mut log = Log::default();
    let busiest = if opts.under.is_none() {
        let mut r = resolve::Resolver::new(opts.cwd.clone());
        let mut b = tree::Busiest::default();
        trace.each(&mut |c| b.see(&r.next(c)))?;
        b.busiest()
    } else {
        None
    };
    let tree = tree::choose(busiest, opts.under.as_deref(), opts.cwd.as_deref())?;
    let mut r = resolve::Resolver::new(opts.cwd.clone());
    let mut mine = Vec::new();
    trace.each(&mut |c| {
        if let Some(m) = tree::below(r.next(c), &tree, &mut log) {
            mine.push(m);
        }
    })?;
    let names = files::Names::of(&mine);
    let mut per_file = steps::build(&mine, &names, &mut log);
    steps::prune(&mut per_file.steps, opts.keep_probes, &mut log);
    let shapes = steps::assign_slots(&mut per_file.steps);
    let common = phases::common(&per_file, &shapes, &tree, &mut log)?;
    let toml = emit::signature(opts, name, &tree, &common);
    let origin = format!("recording of {}", opts.source);
    if let Err(e) = Signature::parse(&toml, &origin) {
        bail!("internal error: the recorded signature does not validate: {e:#}\n{toml}");
    }
    note_flattened(&common.files, &mut log);
    let mut notes: Vec<String> = log.notes.into_iter().collect();
    notes.sort();
    let (n, k) = (common.files.len(), common.steps.len());
    Ok(Recording {
        toml,
        tree,
        files: n,
        steps_per_file: k,
        phases: common.phases.iter().map(|(a, b)| b - a).collect(),
        kept: n * k,
        dropped: log.dropped,
        notes,
        kept_calls: common.kept,
    })
}

/// Files from several directories under the tree end up in one.
fn note_flattened(files: &[String], log: &mut Log) {
    let dirs: HashSet<&str> = files
        .iter()
        .filter_map(|f| Path::new(f.as_str()).parent())
        .filter_map(|p| p.to_str())
        .collect();
    if dirs.len() > 1 {
        log.note(format!(
            "the files came from {} directories under the tree; the replay puts them in one",
            dirs.len()
        ));
    }
}

/// `s` as a TOML basic string.
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

#[cfg(test)]
mod tests {
    use super::files::tokenize;
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
