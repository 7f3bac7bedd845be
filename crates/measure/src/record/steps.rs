//! Stage 4 of recording: each file's calls as steps. A call becomes a step of its file
//! with `{name}` templates and the fields its op takes (flags the signature format does
//! not know are left out, with a note); what does not change the filesystem is dropped
//! unless asked for, and opens nothing else uses any more go with their closes. Slots are
//! then given per file in order of opening.

use super::Log;
use super::files::{Names, creates_at};
use super::resolve::{OpenId, num_arg, other_arg, str_arg};
use super::strace::{Arg, Call, Ret};
use super::toml_str;
use super::tree::TreeCall;
use crate::signature::step::{Flags, flag_table_of, parse_flags};
use crate::signature::syscalls;
use crate::signature::template::Template;
use crate::sys::Errno;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;

/// A step being built: the op and its fields in TOML order, plus numbers aggregated
/// across files (median).
#[derive(Clone, Debug)]
pub(super) struct RecStep {
    pub op: String,
    pub fields: Vec<(&'static str, String)>,
    /// Sizes and offsets, aggregated over files rather than compared.
    pub numbers: Vec<(&'static str, i64)>,
    probe: bool,
    /// Whether the call works on a descriptor (and so needs a slot to be replayed).
    needs_slot: bool,
    /// Open files this step uses, and the one it creates.
    uses: Option<OpenId>,
    creates: Option<OpenId>,
    /// Position in the trace, and its line.
    pub order: usize,
    pub line: usize,
}

impl RecStep {
    /// The op and its fields: files with equal shapes have the same calls.
    pub(super) fn shape(&self) -> String {
        let mut s = self.op.clone();
        for (k, v) in &self.fields {
            write!(s, " {k}={v}").unwrap();
        }
        s
    }
}

/// How a family of syscalls becomes a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    Open,
    /// Nothing but the descriptor (dup, close, fsync, fdatasync, syncfs, fstat).
    Bare,
    Write,
    Read,
    SyncFileRange,
    Fallocate,
    Truncate,
    Fchmod,
    Chmod,
    Chown,
    Utimensat,
    RenameOrLink,
    Symlink,
    Unlink,
    Unlinkat,
    Mkdir,
    Stat,
    StatAt,
    Getdents,
}

fn family(name: &str) -> Option<Family> {
    use Family::*;
    Some(match name {
        "open" | "openat" | "creat" => Open,
        "dup" | "close" | "fsync" | "fdatasync" | "syncfs" | "fstat" => Bare,
        "write" | "pwrite64" => Write,
        "read" | "pread64" => Read,
        "sync_file_range" => SyncFileRange,
        "fallocate" => Fallocate,
        "ftruncate" | "truncate" => Truncate,
        "fchmod" => Fchmod,
        "chmod" | "fchmodat" => Chmod,
        "fchown" | "chown" | "lchown" | "fchownat" => Chown,
        "utimensat" => Utimensat,
        "rename" | "renameat" | "renameat2" | "link" | "linkat" => RenameOrLink,
        "symlink" | "symlinkat" => Symlink,
        "unlink" | "rmdir" => Unlink,
        "unlinkat" => Unlinkat,
        "mkdir" | "mkdirat" => Mkdir,
        "stat" | "lstat" | "access" => Stat,
        "newfstatat" | "statx" | "faccessat" => StatAt,
        "getdents64" => Getdents,
        _ => return None,
    })
}

/// Whether a traced call of this syscall can become a step (the syscall table says why
/// not for the others; a unit test keeps the two in step).
pub fn recorded(name: &str) -> bool {
    family(name).is_some()
}

/// Keep only the flag words the signature format knows, so the file validates.
fn known_flags(text: &str, table_probe: &str, log: &mut Log) -> String {
    let mut kept = Vec::new();
    for w in text
        .split('|')
        .map(str::trim)
        .filter(|w| !w.is_empty() && *w != "0")
    {
        // Validate the word against the op's flag table by building a one-flag step.
        if parse_flags(&Flags::Text(w.to_string()), flag_table_of(table_probe)).is_ok() {
            kept.push(w);
        } else {
            log.note(format!(
                "flag {w} of {table_probe} is not replayable and was left out"
            ));
        }
    }
    kept.join("|")
}

fn octal(v: i64) -> String {
    format!("0o{v:o}")
}

/// What a call's step is built from.
struct Parts<'a> {
    c: &'a Call,
    /// The call's paths as TOML strings of templates.
    paths: Vec<String>,
    ret_value: i64,
}

impl Parts<'_> {
    fn arg(&self, i: usize) -> Option<&Arg> {
        self.c.args.get(i)
    }
    fn num(&self, i: usize, or: i64) -> i64 {
        num_arg(self.arg(i)).unwrap_or(or)
    }
    fn path(&self, k: usize) -> String {
        self.paths[k].clone()
    }
}

fn flags_field(s: &mut RecStep, key: &'static str, a: Option<&Arg>, table: &str, log: &mut Log) {
    if let Some(text) = other_arg(a) {
        let f = known_flags(&text, table, log);
        if !f.is_empty() {
            s.fields.push((key, toml_str(&f)));
        }
    }
}

/// The fields of a step of `family` (false: the call cannot be replayed after all).
fn fill(f: Family, s: &mut RecStep, p: &Parts, log: &mut Log) -> bool {
    use Family::*;
    let name = p.c.name.as_str();
    match f {
        Open => {
            let off = usize::from(name == "openat");
            s.fields.push(("path", p.path(0)));
            if name != "creat" {
                flags_field(s, "flags", p.arg(off + 1), "openat", log);
            }
            let mode_at = if name == "creat" { 1 } else { off + 2 };
            if let Some(m) = num_arg(p.arg(mode_at)) {
                s.fields.push(("mode", octal(m)));
            }
        }
        Bare => {}
        Write => {
            s.numbers.push(("size", p.ret_value));
            if name == "pwrite64" {
                s.numbers.push(("offset", p.num(3, 0)));
            }
            s.fields.push(("pattern", toml_str("random")));
        }
        Read => {
            s.numbers.push(("size", p.num(2, 0)));
            if name == "pread64" {
                s.numbers.push(("offset", p.num(3, 0)));
            }
        }
        SyncFileRange => {
            s.numbers.push(("offset", p.num(1, 0)));
            s.numbers.push(("size", p.num(2, 0)));
            flags_field(s, "flags", p.arg(3), "sync_file_range", log);
        }
        Fallocate => {
            flags_field(s, "flags", p.arg(1), "fallocate", log);
            s.numbers.push(("offset", p.num(2, 0)));
            s.numbers.push(("size", p.num(3, 0)));
        }
        Truncate => {
            if name == "truncate" {
                s.fields.push(("path", p.path(0)));
            }
            s.numbers.push(("size", p.num(1, 0)));
        }
        Fchmod => s.fields.push(("mode", octal(p.num(1, 0)))),
        Chmod => {
            let at = usize::from(name == "fchmodat");
            s.fields.push(("path", p.path(0)));
            s.fields.push(("mode", octal(p.num(at + 1, 0))));
        }
        Chown => fill_chown(s, p, log),
        Utimensat => {
            if let Some(path) = p.paths.first() {
                s.fields.push(("path", path.clone()));
            }
            flags_field(s, "flags", p.arg(3), "utimensat", log);
        }
        RenameOrLink => {
            s.fields.push(("from", p.path(0)));
            s.fields.push(("to", p.path(1)));
            if name == "renameat2" || name == "linkat" {
                flags_field(s, "flags", p.arg(4), name, log);
            }
        }
        Symlink => {
            let target = str_arg(p.arg(0)).map(|b| String::from_utf8_lossy(b).into_owned());
            match target {
                Some(t) if Template::parse_link_target(&t).is_ok() => {
                    s.fields.push(("target", toml_str(&t)));
                    s.fields.push(("path", p.path(0)));
                }
                _ => return false,
            }
        }
        Unlink => s.fields.push(("path", p.path(0))),
        Unlinkat => {
            s.fields.push(("path", p.path(0)));
            flags_field(s, "flags", p.arg(2), "unlinkat", log);
        }
        Mkdir => {
            s.fields.push(("path", p.path(0)));
            let at = usize::from(name == "mkdirat");
            s.fields.push(("mode", octal(p.num(at + 1, 0o755))));
        }
        Stat | StatAt => fill_stat(f, s, p, log),
        Getdents => s.numbers.push(("size", p.num(2, 32768))),
    }
    true
}

fn fill_chown(s: &mut RecStep, p: &Parts, log: &mut Log) {
    let name = p.c.name.as_str();
    let at = if name == "fchownat" { 2 } else { 1 };
    if name != "fchown" {
        s.fields.push(("path", p.path(0)));
    }
    s.fields.push(("uid", (p.num(at, 0) as u32).to_string()));
    s.fields
        .push(("gid", (p.num(at + 1, 0) as u32).to_string()));
    if name == "fchownat" {
        flags_field(s, "flags", p.arg(4), "fchownat", log);
    }
}

fn fill_stat(f: Family, s: &mut RecStep, p: &Parts, log: &mut Log) {
    let name = p.c.name.as_str();
    s.fields.push(("path", p.path(0)));
    match (f, name) {
        (Family::Stat, "access") => flags_field(s, "flags", p.arg(1), "access", log),
        (Family::Stat, _) => {}
        (_, "faccessat") => flags_field(s, "flags", p.arg(2), "access", log),
        (_, "statx") => flags_field(s, "flags", p.arg(2), "newfstatat", log),
        _ => flags_field(s, "flags", p.arg(3), "newfstatat", log),
    }
}

/// The step of one call below the tree, or None when it cannot be replayed.
fn step_of(m: &TreeCall, names: &Names, log: &mut Log) -> Option<RecStep> {
    let (t, c) = (&m.t, &m.t.call);
    let name = c.name.as_str();
    let facts = syscalls::find(name);
    let mut s = RecStep {
        op: name.to_string(),
        fields: Vec::new(),
        numbers: Vec::new(),
        probe: facts.is_some_and(|f| f.probe),
        needs_slot: facts.is_some_and(|f| f.on_fd) || (name == "utimensat" && m.rels.is_empty()),
        uses: t.fd.as_ref().and_then(|(_, o)| *o),
        creates: t.opened,
        order: t.order,
        line: c.line,
    };
    let parts = Parts {
        c,
        paths: m
            .rels
            .iter()
            .map(|r| toml_str(&names.template_of(r)))
            .collect(),
        ret_value: match &c.ret {
            Ret::Value { value, .. } => *value,
            _ => 0,
        },
    };
    if !fill(family(name)?, &mut s, &parts, log) {
        return None;
    }
    if let Some(e) = t.errno() {
        if Errno::from_name(&e).is_some() {
            s.fields.push(("expect", toml_str(&e)));
        } else {
            s.fields.push(("expect", toml_str("any")));
            log.note(format!(
                "{e} is not a known errno name; those steps accept any result"
            ));
        }
    }
    Some(s)
}

/// Every file's steps, and what the recording needs to know of the files.
#[derive(Default)]
pub(super) struct PerFile {
    pub steps: BTreeMap<String, Vec<RecStep>>,
    /// Where in the trace each file was first touched.
    pub first_seen: HashMap<String, usize>,
    /// The sizes stat saw of files the program found (for populate).
    pub initial_size: HashMap<String, Vec<i64>>,
    /// Whether each file existed before the program first touched it under its own name.
    pub existed: HashMap<String, bool>,
    /// Files whose content is the program's from some point on.
    created: HashSet<String>,
}

impl PerFile {
    /// What a call says about its file before it becomes a step: did the file exist,
    /// how big was it, is its content the program's from here on.
    fn observe(&mut self, m: &TreeCall, file: &str) {
        let c = &m.t.call;
        if let Some(k) = m.rels.iter().position(|r| r == file) {
            let ok = matches!(c.ret, Ret::Value { .. });
            self.existed
                .entry(file.to_string())
                .or_insert(ok && !creates_at(c, k));
        }
        // Remember sizes of files that existed before the program touched them.
        if !self.created.contains(file)
            && matches!(
                c.name.as_str(),
                "stat" | "lstat" | "newfstatat" | "statx" | "fstat"
            )
            && m.rels.first().is_none_or(|r| r == file)
            && let Some(size) = c.args.iter().find_map(|a| match a {
                Arg::Other(s) => s
                    .split("st_size=")
                    .nth(1)
                    .and_then(|v| v.split([',', '}']).next())
                    .and_then(|v| v.trim().parse::<i64>().ok()),
                _ => None,
            })
        {
            self.initial_size
                .entry(file.to_string())
                .or_default()
                .push(size);
        }
        if matches!(c.ret, Ret::Value { .. })
            && m.rels.iter().enumerate().any(|(k, r)| {
                r == file && (creates_at(c, k) || (k == 0 && super::tree::opens_for_writing(c)))
            })
        {
            self.created.insert(file.to_string());
        }
    }
}

/// Each file's calls as steps, in trace order.
pub(super) fn build(mine: &[TreeCall], names: &Names, log: &mut Log) -> PerFile {
    let mut pf = PerFile::default();
    for m in mine {
        let file = match (m.rels.first(), &m.fd_rel) {
            (Some(r), _) | (None, Some(r)) => names.base_of(r),
            (None, None) => continue,
        };
        if m.rels.len() == 2 && names.base_of(&m.rels[1]) != file {
            log.drop("between two different files");
            continue;
        }
        pf.observe(m, &file);
        let Some(s) = step_of(m, names, log) else {
            log.drop(&format!("not replayable: {}", m.t.call.name));
            continue;
        };
        pf.first_seen.entry(file.clone()).or_insert(m.t.order);
        pf.steps.entry(file).or_default().push(s);
    }
    pf
}

/// Drop probes (unless `keep_probes`), steps on descriptors the recording cannot replay,
/// then opens (and their dups and closes) nothing else uses any more.
pub(super) fn prune(
    per_file: &mut BTreeMap<String, Vec<RecStep>>,
    keep_probes: bool,
    log: &mut Log,
) {
    for steps in per_file.values_mut() {
        if !keep_probes {
            let before = steps.len();
            steps.retain(|s| !s.probe);
            log.drop_n(
                "probe (stat, access, read): does not change the filesystem",
                before - steps.len(),
            );
        }
        // Slot-using steps must have their slot: a descriptor opened elsewhere cannot be replayed.
        let opened: HashSet<OpenId> = steps.iter().filter_map(|s| s.creates).collect();
        let before = steps.len();
        steps.retain(|s| !s.needs_slot || s.uses.is_some_and(|u| opened.contains(&u)));
        log.drop_n(
            "on a descriptor the recording cannot replay",
            before - steps.len(),
        );
        drop_unused_opens(steps, log);
    }
    per_file.retain(|_, v| !v.is_empty());
}

/// Opens (and dups) whose descriptor nothing uses, and that create or write nothing, go
/// with their closes — until none is left.
fn drop_unused_opens(steps: &mut Vec<RecStep>, log: &mut Log) {
    loop {
        let used: HashSet<OpenId> = steps
            .iter()
            .filter(|s| s.op != "close" && s.op != "dup")
            .filter_map(|s| s.uses)
            .collect();
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
            return;
        }
        let before = steps.len();
        steps.retain(|s| {
            !s.creates.is_some_and(|c| unneeded.contains(&c))
                && !s.uses.is_some_and(|u| unneeded.contains(&u))
        });
        log.drop_n(
            "open for reading only (a probe) and its close",
            before - steps.len(),
        );
    }
}

/// Give each file's open files slots (`f1`, `f2`, … in order of opening); returns each
/// file's shape (its steps' ops and fields), by which files are compared.
pub(super) fn assign_slots(
    per_file: &mut BTreeMap<String, Vec<RecStep>>,
) -> HashMap<String, Vec<String>> {
    let mut shapes = HashMap::new();
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
    shapes
}

#[cfg(test)]
mod tests {
    /// The recorder builds steps for exactly the syscalls the signature's table calls
    /// recordable.
    #[test]
    fn the_recorder_and_the_syscall_table_agree() {
        for s in crate::signature::syscalls::SYSCALLS {
            assert_eq!(
                super::recorded(s.name),
                s.not_recorded.is_none(),
                "{}: the recorder and the table disagree",
                s.name
            );
        }
    }
}
