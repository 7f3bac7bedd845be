//! Steps: one system call each, with the result it is expected to return.
//!
//! `OPS` is the table of every operation a signature can use: the fields it takes, which of
//! them are required, and how the raw TOML fields become a typed [`Op`]. What is known of
//! the syscall each op issues is in `syscalls.rs`, which says what else adding one takes.

use super::limits;
use super::template::Template;
use crate::sys::Errno;
use serde::Deserialize;

/// A step as written in a signature file, before validation.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(deny_unknown_fields)]
pub struct RawStep {
    pub op: String,
    pub path: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub target: Option<String>,
    pub flags: Option<Flags>,
    pub mode: Option<IntOrString>,
    pub slot: Option<String>,
    pub new_slot: Option<String>,
    pub size: Option<u64>,
    pub offset: Option<u64>,
    pub pattern: Option<String>,
    pub name: Option<String>,
    pub value: Option<String>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub mask: Option<Flags>,
    pub expect: Option<String>,
}

/// Flags written as `"O_WRONLY|O_CREAT"`, as a list, or as a number.
#[derive(Deserialize, Debug, Clone)]
#[serde(untagged)]
pub enum Flags {
    Text(String),
    List(Vec<String>),
    Number(i64),
}

#[derive(Deserialize, Debug, Clone)]
#[serde(untagged)]
pub enum IntOrString {
    Int(i64),
    Text(String),
}

/// What a step must return for the run to go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    Ok,
    Errno(Errno),
    Any,
}

impl Expect {
    pub fn parse(s: &str) -> Result<Expect, String> {
        match s {
            "ok" => Ok(Expect::Ok),
            "any" => Ok(Expect::Any),
            name => Errno::from_name(name).map(Expect::Errno).ok_or_else(|| {
                format!(
                    "unknown expected result `{name}` (use ok, any or an errno name such as ENOENT)"
                )
            }),
        }
    }

    pub fn matches(self, result: Result<i64, Errno>) -> bool {
        match (self, result) {
            (Expect::Any, _) => true,
            (Expect::Ok, Ok(_)) => true,
            (Expect::Errno(want), Err(got)) => want == got,
            _ => false,
        }
    }

    pub fn describe(self) -> String {
        match self {
            Expect::Ok => "ok".into(),
            Expect::Any => "any".into(),
            Expect::Errno(e) => e.name(),
        }
    }
}

/// What `Pattern::Text` repeats.
pub const TEXT: &[u8] = b"sigbench writes compressible text here. ";

/// `Pattern::Random`'s bytes are splitmix64 from this state, 8 little-endian bytes a step.
pub const RANDOM_SEED: u64 = 0x5eed;

/// Bytes a write puts into the file. Compressibility matters on btrfs with compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    Zero,
    /// Incompressible pseudo-random bytes, the same every run.
    Random,
    /// Compressible ASCII text.
    Text,
    Byte(u8),
}

impl Pattern {
    pub fn parse(s: &str) -> Result<Pattern, String> {
        match s {
            "zero" => Ok(Pattern::Zero),
            "random" => Ok(Pattern::Random),
            "text" => Ok(Pattern::Text),
            _ => {
                let b = s
                    .strip_prefix("byte:")
                    .and_then(|v| parse_int(v).ok())
                    .filter(|v| (0..=255).contains(v))
                    .ok_or_else(|| {
                        format!("unknown pattern `{s}` (zero, random, text or byte:0xNN)")
                    })?;
                Ok(Pattern::Byte(b as u8))
            }
        }
    }

    pub fn fill(self, size: usize) -> Vec<u8> {
        match self {
            Pattern::Zero => vec![0; size],
            Pattern::Byte(b) => vec![b; size],
            Pattern::Text => TEXT.iter().copied().cycle().take(size).collect(),
            Pattern::Random => {
                let mut state = RANDOM_SEED;
                let mut out = Vec::with_capacity(size + 8);
                while out.len() < size {
                    state = model::random::mix64(state);
                    out.extend_from_slice(&state.to_le_bytes());
                }
                out.truncate(size);
                out
            }
        }
    }
}

/// Which call of a family the step issues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenCall {
    Open,
    Openat,
    Creat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RenameCall {
    Rename,
    Renameat,
    Renameat2,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatCall {
    Stat,
    Lstat,
    Fstatat,
    Statx,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChownCall {
    Chown,
    Lchown,
    Fchownat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncCall {
    Fsync,
    Fdatasync,
    Syncfs,
}

/// A validated operation. Paths are templates relative to the test directory; `slot` is an
/// index into the executor's table of open descriptors.
#[derive(Clone, Debug)]
pub enum Op {
    Open {
        call: OpenCall,
        path: Template,
        flags: i32,
        mode: u32,
        slot: usize,
    },
    Close {
        slot: usize,
    },
    Write {
        slot: usize,
        data: Vec<u8>,
        /// What `data` was made from (`Pattern::fill`), for whoever writes the step out.
        pattern: Pattern,
    },
    Pwrite {
        slot: usize,
        data: Vec<u8>,
        pattern: Pattern,
        offset: u64,
    },
    Read {
        slot: usize,
        size: usize,
    },
    Pread {
        slot: usize,
        size: usize,
        offset: u64,
    },
    /// dup(2): a second descriptor for the same open file, into `new_slot`.
    Dup {
        slot: usize,
        new_slot: usize,
    },
    SyncFileRange {
        slot: usize,
        offset: u64,
        size: u64,
        flags: u32,
    },
    FdSync {
        call: SyncCall,
        slot: usize,
    },
    Sync,
    Rename {
        call: RenameCall,
        from: Template,
        to: Template,
        flags: u32,
    },
    Link {
        at: bool,
        from: Template,
        to: Template,
        flags: i32,
    },
    Symlink {
        at: bool,
        target: Template,
        path: Template,
    },
    Unlink {
        path: Template,
    },
    Unlinkat {
        path: Template,
        flags: i32,
    },
    Mkdir {
        at: bool,
        path: Template,
        mode: u32,
    },
    Rmdir {
        path: Template,
    },
    Stat {
        call: StatCall,
        path: Template,
        flags: i32,
        mask: u32,
    },
    Fstat {
        slot: usize,
    },
    Truncate {
        path: Template,
        size: u64,
    },
    Ftruncate {
        slot: usize,
        size: u64,
    },
    Fallocate {
        slot: usize,
        flags: i32,
        offset: u64,
        size: u64,
    },
    Chmod {
        at: bool,
        path: Template,
        mode: u32,
    },
    Fchmod {
        slot: usize,
        mode: u32,
    },
    Chown {
        call: ChownCall,
        path: Template,
        uid: u32,
        gid: u32,
        flags: i32,
    },
    Fchown {
        slot: usize,
        uid: u32,
        gid: u32,
    },
    /// utimensat(2) on a path, or on a descriptor with a NULL path (futimens); times "now".
    Utimensat {
        path: Option<Template>,
        slot: Option<usize>,
        flags: i32,
    },
    /// access(2) / faccessat(2); `mode` is F_OK or R_OK|W_OK|X_OK.
    Access {
        at: bool,
        path: Template,
        mode: i32,
    },
    Setxattr {
        path: Template,
        name: std::ffi::CString,
        value: Vec<u8>,
        flags: i32,
    },
    Getxattr {
        path: Template,
        name: std::ffi::CString,
    },
    Removexattr {
        path: Template,
        name: std::ffi::CString,
    },
    Getdents64 {
        slot: usize,
        size: usize,
    },
}

/// The buffer `getxattr` reads a value into (the kernel's limit is 64 KiB; values a
/// workload sets here are small).
pub const GETXATTR_LEN: usize = 4096;

impl Op {
    /// Bytes the call asks to move through memory: read and write sizes (what a
    /// throughput in MB/s counts, as dbench counts its ReadX and WriteX).
    pub fn requested_bytes(&self) -> u64 {
        match self {
            Op::Write { data, .. } | Op::Pwrite { data, .. } => data.len() as u64,
            Op::Read { size, .. } | Op::Pread { size, .. } => *size as u64,
            _ => 0,
        }
    }

    /// How many bytes the kernel may write into the buffer this op passes to its call
    /// (read, pread, getdents64: the step's `size`; stat family: the structure). The
    /// executor sizes its buffer from this, over every step it will issue.
    pub fn out_len(&self) -> usize {
        match self {
            Op::Read { size, .. } | Op::Pread { size, .. } | Op::Getdents64 { size, .. } => *size,
            Op::Stat {
                call: StatCall::Statx,
                ..
            } => std::mem::size_of::<libc::statx>(),
            Op::Stat { .. } | Op::Fstat { .. } => std::mem::size_of::<libc::stat>(),
            Op::Getxattr { .. } => GETXATTR_LEN,
            _ => 0,
        }
    }

    /// The path arguments of the call, in order: `(path, None)`, `(from, to)` for renames
    /// and links, `(target, linkpath)` for symlink.
    pub fn paths(&self) -> [Option<&Template>; 2] {
        match self {
            Op::Open { path, .. }
            | Op::Unlink { path }
            | Op::Unlinkat { path, .. }
            | Op::Mkdir { path, .. }
            | Op::Rmdir { path }
            | Op::Stat { path, .. }
            | Op::Truncate { path, .. }
            | Op::Chmod { path, .. }
            | Op::Chown { path, .. }
            | Op::Access { path, .. }
            | Op::Setxattr { path, .. }
            | Op::Getxattr { path, .. }
            | Op::Removexattr { path, .. } => [Some(path), None],
            Op::Utimensat { path, .. } => [path.as_ref(), None],
            Op::Rename { from, to, .. } | Op::Link { from, to, .. } => [Some(from), Some(to)],
            Op::Symlink { target, path, .. } => [Some(target), Some(path)],
            _ => [None, None],
        }
    }

    /// The descriptor slot the call works on, if any (open writes its slot instead).
    pub fn slot(&self) -> Option<usize> {
        match self {
            Op::Close { slot }
            | Op::Write { slot, .. }
            | Op::Pwrite { slot, .. }
            | Op::Read { slot, .. }
            | Op::Pread { slot, .. }
            | Op::Dup { slot, .. }
            | Op::SyncFileRange { slot, .. }
            | Op::Fchown { slot, .. }
            | Op::FdSync { slot, .. }
            | Op::Fstat { slot }
            | Op::Ftruncate { slot, .. }
            | Op::Fallocate { slot, .. }
            | Op::Fchmod { slot, .. }
            | Op::Getdents64 { slot, .. } => Some(*slot),
            Op::Utimensat { slot, .. } => *slot,
            _ => None,
        }
    }
}

/// A validated step: the operation, what it must return, and where it was written.
#[derive(Clone, Debug)]
pub struct Step {
    /// The syscall it issues (`renameat2`; `pwrite64` for the op `pwrite`).
    pub syscall: &'static str,
    pub op: Op,
    pub expect: Expect,
    /// 1-based line in the signature file, for messages.
    pub line: usize,
}

/// Slot names seen so far while a signature is parsed, in order of first use.
#[derive(Default, Debug, Clone)]
pub struct Slots {
    pub names: Vec<String>,
}

impl Slots {
    /// The slot an open-type step writes its descriptor into (creating it).
    pub(crate) fn define(&mut self, name: &str) -> usize {
        match self.names.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                self.names.push(name.to_string());
                self.names.len() - 1
            }
        }
    }

    /// A slot a step reads; it must have been opened by an earlier step.
    fn get(&self, name: &str) -> Result<usize, String> {
        self.names
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| format!("slot `{name}` is used before any step opens it"))
    }
}

type Build = fn(&RawStep, &mut Slots) -> Result<Op, String>;

/// One row of the op table.
struct OpDef {
    name: &'static str,
    /// Fields the op accepts besides `op` and `expect`; `!` marks required ones.
    fields: &'static [&'static str],
    build: Build,
}

#[rustfmt::skip]
const OPS: &[OpDef] = &[
    OpDef { name: "open", fields: &["!path", "flags", "mode", "!slot"], build: |r, s| build_open(r, s, OpenCall::Open) },
    OpDef { name: "openat", fields: &["!path", "flags", "mode", "!slot"], build: |r, s| build_open(r, s, OpenCall::Openat) },
    OpDef { name: "creat", fields: &["!path", "mode", "!slot"], build: |r, s| build_open(r, s, OpenCall::Creat) },
    OpDef { name: "close", fields: &["!slot"], build: |r, s| Ok(Op::Close { slot: slot(r, s)? }) },
    OpDef { name: "write", fields: &["!slot", "!size", "pattern"], build: |r, s| { let (data, pattern) = data(r)?; Ok(Op::Write { slot: slot(r, s)?, data, pattern }) } },
    OpDef { name: "pwrite", fields: &["!slot", "!size", "offset", "pattern"], build: build_pwrite },
    OpDef { name: "pwrite64", fields: &["!slot", "!size", "offset", "pattern"], build: build_pwrite },
    OpDef { name: "read", fields: &["!slot", "!size"], build: |r, s| Ok(Op::Read { slot: slot(r, s)?, size: size(r)? }) },
    OpDef { name: "pread", fields: &["!slot", "!size", "offset"], build: build_pread },
    OpDef { name: "pread64", fields: &["!slot", "!size", "offset"], build: build_pread },
    OpDef { name: "dup", fields: &["!slot", "!new_slot"], build: build_dup },
    OpDef { name: "sync_file_range", fields: &["!slot", "offset", "size", "flags"], build: |r, s| Ok(Op::SyncFileRange { slot: slot(r, s)?, offset: file_bytes(r.offset, "offset")?, size: file_bytes(r.size, "size")?, flags: flags(r, SYNC_FILE_RANGE_FLAGS)? as u32 }) },
    OpDef { name: "fsync", fields: &["!slot"], build: |r, s| Ok(Op::FdSync { call: SyncCall::Fsync, slot: slot(r, s)? }) },
    OpDef { name: "fdatasync", fields: &["!slot"], build: |r, s| Ok(Op::FdSync { call: SyncCall::Fdatasync, slot: slot(r, s)? }) },
    OpDef { name: "syncfs", fields: &["!slot"], build: |r, s| Ok(Op::FdSync { call: SyncCall::Syncfs, slot: slot(r, s)? }) },
    OpDef { name: "sync", fields: &[], build: |_, _| Ok(Op::Sync) },
    OpDef { name: "rename", fields: &["!from", "!to"], build: |r, _| build_rename(r, RenameCall::Rename) },
    OpDef { name: "renameat", fields: &["!from", "!to"], build: |r, _| build_rename(r, RenameCall::Renameat) },
    OpDef { name: "renameat2", fields: &["!from", "!to", "flags"], build: |r, _| build_rename(r, RenameCall::Renameat2) },
    OpDef { name: "link", fields: &["!from", "!to"], build: |r, _| Ok(Op::Link { at: false, from: tpl(&r.from, "from")?, to: tpl(&r.to, "to")?, flags: 0 }) },
    OpDef { name: "linkat", fields: &["!from", "!to", "flags"], build: |r, _| Ok(Op::Link { at: true, from: tpl(&r.from, "from")?, to: tpl(&r.to, "to")?, flags: flags(r, AT_FLAGS)? as i32 }) },
    OpDef { name: "symlink", fields: &["!target", "!path"], build: |r, _| build_symlink(r, false) },
    OpDef { name: "symlinkat", fields: &["!target", "!path"], build: |r, _| build_symlink(r, true) },
    OpDef { name: "unlink", fields: &["!path"], build: |r, _| Ok(Op::Unlink { path: path(r)? }) },
    OpDef { name: "unlinkat", fields: &["!path", "flags"], build: |r, _| Ok(Op::Unlinkat { path: path(r)?, flags: flags(r, AT_FLAGS)? as i32 }) },
    OpDef { name: "mkdir", fields: &["!path", "mode"], build: |r, _| Ok(Op::Mkdir { at: false, path: path(r)?, mode: mode(r, 0o755)? }) },
    OpDef { name: "mkdirat", fields: &["!path", "mode"], build: |r, _| Ok(Op::Mkdir { at: true, path: path(r)?, mode: mode(r, 0o755)? }) },
    OpDef { name: "rmdir", fields: &["!path"], build: |r, _| Ok(Op::Rmdir { path: path(r)? }) },
    OpDef { name: "stat", fields: &["!path"], build: |r, _| build_stat(r, StatCall::Stat) },
    OpDef { name: "lstat", fields: &["!path"], build: |r, _| build_stat(r, StatCall::Lstat) },
    OpDef { name: "fstatat", fields: &["!path", "flags"], build: |r, _| build_stat(r, StatCall::Fstatat) },
    OpDef { name: "newfstatat", fields: &["!path", "flags"], build: |r, _| build_stat(r, StatCall::Fstatat) },
    OpDef { name: "statx", fields: &["!path", "flags", "mask"], build: |r, _| build_stat(r, StatCall::Statx) },
    OpDef { name: "fstat", fields: &["!slot"], build: |r, s| Ok(Op::Fstat { slot: slot(r, s)? }) },
    OpDef { name: "truncate", fields: &["!path", "!size"], build: |r, _| Ok(Op::Truncate { path: path(r)?, size: file_bytes(r.size, "size")? }) },
    OpDef { name: "ftruncate", fields: &["!slot", "!size"], build: |r, s| Ok(Op::Ftruncate { slot: slot(r, s)?, size: file_bytes(r.size, "size")? }) },
    OpDef { name: "fallocate", fields: &["!slot", "!size", "offset", "flags"], build: |r, s| Ok(Op::Fallocate { slot: slot(r, s)?, flags: flags(r, FALLOC_FLAGS)? as i32, offset: file_bytes(r.offset, "offset")?, size: file_bytes(r.size, "size")? }) },
    OpDef { name: "chmod", fields: &["!path", "!mode"], build: |r, _| Ok(Op::Chmod { at: false, path: path(r)?, mode: mode(r, 0)? }) },
    OpDef { name: "fchmodat", fields: &["!path", "!mode"], build: |r, _| Ok(Op::Chmod { at: true, path: path(r)?, mode: mode(r, 0)? }) },
    OpDef { name: "fchmod", fields: &["!slot", "!mode"], build: |r, s| Ok(Op::Fchmod { slot: slot(r, s)?, mode: mode(r, 0)? }) },
    OpDef { name: "chown", fields: &["!path", "!uid", "!gid"], build: |r, _| build_chown(r, ChownCall::Chown) },
    OpDef { name: "lchown", fields: &["!path", "!uid", "!gid"], build: |r, _| build_chown(r, ChownCall::Lchown) },
    OpDef { name: "fchownat", fields: &["!path", "!uid", "!gid", "flags"], build: |r, _| build_chown(r, ChownCall::Fchownat) },
    OpDef { name: "fchown", fields: &["!slot", "!uid", "!gid"], build: |r, s| Ok(Op::Fchown { slot: slot(r, s)?, uid: r.uid.unwrap_or(0), gid: r.gid.unwrap_or(0) }) },
    OpDef { name: "utimensat", fields: &["path", "slot", "flags"], build: build_utimensat },
    OpDef { name: "access", fields: &["!path", "flags"], build: |r, _| Ok(Op::Access { at: false, path: path(r)?, mode: flags(r, ACCESS_MODES)? as i32 }) },
    OpDef { name: "faccessat", fields: &["!path", "flags"], build: |r, _| Ok(Op::Access { at: true, path: path(r)?, mode: flags(r, ACCESS_MODES)? as i32 }) },
    OpDef { name: "setxattr", fields: &["!path", "!name", "value", "flags"], build: |r, _| Ok(Op::Setxattr { path: path(r)?, name: xattr_name(r)?, value: r.value.clone().unwrap_or_default().into_bytes(), flags: flags(r, XATTR_FLAGS)? as i32 }) },
    OpDef { name: "getxattr", fields: &["!path", "!name"], build: |r, _| Ok(Op::Getxattr { path: path(r)?, name: xattr_name(r)? }) },
    OpDef { name: "removexattr", fields: &["!path", "!name"], build: |r, _| Ok(Op::Removexattr { path: path(r)?, name: xattr_name(r)? }) },
    OpDef { name: "getdents64", fields: &["!slot", "size"], build: |r, s| Ok(Op::Getdents64 { slot: slot(r, s)?, size: io_bytes(r.size.unwrap_or(32768), "size")? }) },
];

/// Every op name, for `sigbench list --ops` and error messages.
pub fn op_names() -> impl Iterator<Item = &'static str> {
    OPS.iter().map(|d| d.name)
}

/// The fields op `name` accepts besides `op` and `expect` (`!` marks required ones).
pub fn op_fields(name: &str) -> Option<&'static [&'static str]> {
    OPS.iter().find(|d| d.name == name).map(|d| d.fields)
}

impl Step {
    /// Validate a raw step: known op, the fields it needs and no others, sane values.
    pub fn build(raw: &RawStep, slots: &mut Slots, line: usize) -> Result<Step, String> {
        let def = OPS.iter().find(|d| d.name == raw.op).ok_or_else(|| {
            match closest(&raw.op, op_names()) {
                Some(near) => format!("unknown op `{}`: did you mean `{near}`?", raw.op),
                None => format!(
                    "unknown op `{}` (known: {})",
                    raw.op,
                    op_names().collect::<Vec<_>>().join(", ")
                ),
            }
        })?;
        let present = present_fields(raw);
        for field in &present {
            if !def
                .fields
                .iter()
                .any(|f| f.trim_start_matches('!') == *field)
            {
                return Err(format!("op `{}` does not take `{field}`", def.name));
            }
        }
        for field in def.fields.iter().filter_map(|f| f.strip_prefix('!')) {
            if !present.contains(&field) {
                return Err(format!("op `{}` needs `{field}`", def.name));
            }
        }
        let op = (def.build)(raw, slots).map_err(|e| format!("op `{}`: {e}", def.name))?;
        let expect = match &raw.expect {
            Some(e) => Expect::parse(e)?,
            None => Expect::Ok,
        };
        Ok(Step {
            // The syscall it issues (`pwrite` issues `pwrite64`), as it is timed and logged.
            syscall: super::syscalls::of_op(def.name).map_or(def.name, |s| s.name),
            op,
            expect,
            line,
        })
    }

    /// Templates the step names paths with, in argument order (for validation and display).
    pub fn paths(&self) -> Vec<&Template> {
        self.op.paths().into_iter().flatten().collect()
    }

    /// Bytes this step writes, for sizing the scratch device.
    pub fn bytes_written(&self) -> u64 {
        match &self.op {
            Op::Write { data, .. } | Op::Pwrite { data, .. } => data.len() as u64,
            Op::Fallocate { size, .. } => *size,
            Op::Truncate { size, .. } | Op::Ftruncate { size, .. } => *size,
            _ => 0,
        }
    }

    /// Whether the step creates a directory entry (each costs metadata space).
    pub fn creates_entry(&self) -> bool {
        matches!(
            self.op,
            Op::Open { .. } | Op::Link { .. } | Op::Symlink { .. } | Op::Mkdir { .. }
        )
    }

    /// A one-line description such as `renameat2(file_i, file_i-RPMDELETE)`.
    pub fn describe(&self) -> String {
        let args: Vec<String> = self.paths().iter().map(|t| t.to_string()).collect();
        format!("{}({})", self.syscall, args.join(", "))
    }
}

fn present_fields(r: &RawStep) -> Vec<&'static str> {
    let mut v = Vec::new();
    let mut add = |set: bool, name: &'static str| {
        if set {
            v.push(name)
        }
    };
    add(r.path.is_some(), "path");
    add(r.from.is_some(), "from");
    add(r.to.is_some(), "to");
    add(r.target.is_some(), "target");
    add(r.flags.is_some(), "flags");
    add(r.mode.is_some(), "mode");
    add(r.slot.is_some(), "slot");
    add(r.new_slot.is_some(), "new_slot");
    add(r.size.is_some(), "size");
    add(r.offset.is_some(), "offset");
    add(r.pattern.is_some(), "pattern");
    add(r.name.is_some(), "name");
    add(r.value.is_some(), "value");
    add(r.uid.is_some(), "uid");
    add(r.gid.is_some(), "gid");
    add(r.mask.is_some(), "mask");
    v
}

fn tpl(field: &Option<String>, what: &str) -> Result<Template, String> {
    let text = field.as_deref().ok_or_else(|| format!("needs `{what}`"))?;
    Template::parse(text).map_err(|e| format!("`{what}`: {e}"))
}

fn path(r: &RawStep) -> Result<Template, String> {
    tpl(&r.path, "path")
}

fn slot(r: &RawStep, slots: &Slots) -> Result<usize, String> {
    slots.get(r.slot.as_deref().unwrap_or_default())
}

fn size(r: &RawStep) -> Result<usize, String> {
    io_bytes(r.size.unwrap_or(0), "size")
}

/// Bytes one call moves through a buffer in memory (limits::MAX_IO_BYTES).
fn io_bytes(v: u64, what: &str) -> Result<usize, String> {
    limits::check(what, v, limits::MAX_IO_BYTES).map(|v| v as usize)
}

/// A file size or offset (limits::MAX_FILE_BYTES).
fn file_bytes(v: Option<u64>, what: &str) -> Result<u64, String> {
    limits::check(what, v.unwrap_or(0), limits::MAX_FILE_BYTES)
}

/// The bytes a write step writes, and the pattern they are made from.
fn data(r: &RawStep) -> Result<(Vec<u8>, Pattern), String> {
    let pattern = match &r.pattern {
        Some(p) => Pattern::parse(p)?,
        None => Pattern::Zero,
    };
    Ok((pattern.fill(size(r)?), pattern))
}

fn mode(r: &RawStep, default: u32) -> Result<u32, String> {
    let m = match &r.mode {
        None => return Ok(default),
        Some(IntOrString::Int(v)) => *v,
        // A string mode is octal, as people write it: "0666" or "644".
        Some(IntOrString::Text(s)) => {
            let digits = s.trim_start_matches("0o");
            i64::from_str_radix(digits, 8).map_err(|_| format!("mode `{s}` is not octal"))?
        }
    };
    if !(0..=0o7777).contains(&m) {
        return Err(format!("mode {m:#o} is out of range"));
    }
    Ok(m as u32)
}

fn build_open(r: &RawStep, slots: &mut Slots, call: OpenCall) -> Result<Op, String> {
    let flags = if call == OpenCall::Creat {
        0
    } else {
        flags(r, OPEN_FLAGS)? as i32
    };
    let creates = call == OpenCall::Creat || flags & (libc::O_CREAT | libc::O_TMPFILE) != 0;
    let mode = mode(r, if creates { 0o644 } else { 0 })?;
    let name = r.slot.as_deref().unwrap_or_default();
    Ok(Op::Open {
        call,
        path: path(r)?,
        flags,
        mode,
        slot: slots.define(name),
    })
}

fn build_pwrite(r: &RawStep, s: &mut Slots) -> Result<Op, String> {
    let (data, pattern) = data(r)?;
    Ok(Op::Pwrite {
        slot: slot(r, s)?,
        data,
        pattern,
        offset: file_bytes(r.offset, "offset")?,
    })
}

fn build_pread(r: &RawStep, s: &mut Slots) -> Result<Op, String> {
    Ok(Op::Pread {
        slot: slot(r, s)?,
        size: size(r)?,
        offset: file_bytes(r.offset, "offset")?,
    })
}

fn build_dup(r: &RawStep, s: &mut Slots) -> Result<Op, String> {
    let from = slot(r, s)?;
    Ok(Op::Dup {
        slot: from,
        new_slot: s.define(r.new_slot.as_deref().unwrap_or_default()),
    })
}

fn build_chown(r: &RawStep, call: ChownCall) -> Result<Op, String> {
    Ok(Op::Chown {
        call,
        path: path(r)?,
        uid: r.uid.unwrap_or(0),
        gid: r.gid.unwrap_or(0),
        flags: flags(r, AT_FLAGS)? as i32,
    })
}

fn build_utimensat(r: &RawStep, s: &mut Slots) -> Result<Op, String> {
    let (path, slot) = match (&r.path, &r.slot) {
        (Some(_), None) => (Some(path(r)?), None),
        (None, Some(_)) => (None, Some(slot(r, s)?)),
        _ => return Err("needs either `path` or `slot` (futimens)".into()),
    };
    Ok(Op::Utimensat {
        path,
        slot,
        flags: flags(r, AT_FLAGS)? as i32,
    })
}

fn build_rename(r: &RawStep, call: RenameCall) -> Result<Op, String> {
    Ok(Op::Rename {
        call,
        from: tpl(&r.from, "from")?,
        to: tpl(&r.to, "to")?,
        flags: flags(r, RENAME_FLAGS)? as u32,
    })
}

fn build_stat(r: &RawStep, call: StatCall) -> Result<Op, String> {
    let mask = match &r.mask {
        None => libc::STATX_BASIC_STATS,
        Some(m) => parse_flags(m, STATX_MASK)? as u32,
    };
    Ok(Op::Stat {
        call,
        path: path(r)?,
        flags: flags(r, AT_FLAGS)? as i32,
        mask,
    })
}

fn build_symlink(r: &RawStep, at: bool) -> Result<Op, String> {
    let text = r.target.as_deref().unwrap_or_default();
    let target = Template::parse_link_target(text).map_err(|e| format!("`target`: {e}"))?;
    let link = path(r)?;
    // The target is resolved from the link's directory: count how far `..` climbs.
    let mut depth = link.depth() as i64;
    for component in target.as_str().split('/') {
        match component {
            ".." => depth -= 1,
            "" | "." => {}
            _ => depth += 1,
        }
        if depth < 0 {
            return Err(format!(
                "target `{target}` of `{link}` points outside the test directory"
            ));
        }
    }
    Ok(Op::Symlink {
        at,
        target,
        path: link,
    })
}

fn xattr_name(r: &RawStep) -> Result<std::ffi::CString, String> {
    let name = r.name.as_deref().unwrap_or_default();
    if !["user.", "trusted.", "security.", "system.", "btrfs."]
        .iter()
        .any(|ns| name.starts_with(ns))
    {
        return Err(format!(
            "xattr name `{name}` needs a namespace (user., trusted., security., system., btrfs.)"
        ));
    }
    std::ffi::CString::new(name).map_err(|_| format!("xattr name `{name}` contains NUL"))
}

pub type FlagTable = &'static [(&'static str, i64)];

/// `v` spelled with `table`'s names (`O_WRONLY|O_CREAT`), the first name of each bit set;
/// bits no name covers as hex. The access mode of open flags (0: `O_RDONLY`) comes first.
pub fn flag_names(table: FlagTable, v: i64) -> String {
    let mut names = Vec::new();
    let mut covered = 0i64;
    if std::ptr::eq(table, OPEN_FLAGS) {
        let mode = v & libc::O_ACCMODE as i64;
        if let Some((name, _)) = table.iter().find(|(_, f)| *f == mode) {
            names.push(name.to_string());
        }
        covered |= libc::O_ACCMODE as i64;
    }
    for (name, f) in table {
        if *f != 0 && v & f == *f && covered & f != *f {
            names.push(name.to_string());
            covered |= f;
        }
    }
    if v & !covered != 0 {
        names.push(format!("{:#x}", v & !covered));
    }
    if names.is_empty() {
        names.push("0".into());
    }
    names.join("|")
}

impl Op {
    /// The op's flags argument and the table its names come from, if it has one.
    pub fn flags(&self) -> Option<(FlagTable, i64)> {
        Some(match self {
            Op::Open { flags, .. } => (OPEN_FLAGS, *flags as i64),
            Op::Rename { flags, .. } => (RENAME_FLAGS, *flags as i64),
            Op::Link { flags, .. }
            | Op::Unlinkat { flags, .. }
            | Op::Stat { flags, .. }
            | Op::Chown { flags, .. }
            | Op::Utimensat { flags, .. } => (AT_FLAGS, *flags as i64),
            Op::Fallocate { flags, .. } => (FALLOC_FLAGS, *flags as i64),
            Op::SyncFileRange { flags, .. } => (SYNC_FILE_RANGE_FLAGS, *flags as i64),
            Op::Access { mode, .. } => (ACCESS_MODES, *mode as i64),
            Op::Setxattr { flags, .. } => (XATTR_FLAGS, *flags as i64),
            _ => return None,
        })
    }
}

pub static OPEN_FLAGS: FlagTable = &[
    ("O_RDONLY", libc::O_RDONLY as i64),
    ("O_WRONLY", libc::O_WRONLY as i64),
    ("O_RDWR", libc::O_RDWR as i64),
    ("O_CREAT", libc::O_CREAT as i64),
    ("O_EXCL", libc::O_EXCL as i64),
    ("O_NOCTTY", libc::O_NOCTTY as i64),
    ("O_TRUNC", libc::O_TRUNC as i64),
    ("O_APPEND", libc::O_APPEND as i64),
    ("O_NONBLOCK", libc::O_NONBLOCK as i64),
    ("O_DSYNC", libc::O_DSYNC as i64),
    ("O_SYNC", libc::O_SYNC as i64),
    ("O_DIRECT", libc::O_DIRECT as i64),
    ("O_LARGEFILE", libc::O_LARGEFILE as i64),
    ("O_DIRECTORY", libc::O_DIRECTORY as i64),
    ("O_NOFOLLOW", libc::O_NOFOLLOW as i64),
    ("O_NOATIME", libc::O_NOATIME as i64),
    ("O_CLOEXEC", libc::O_CLOEXEC as i64),
    ("O_PATH", libc::O_PATH as i64),
    ("O_TMPFILE", libc::O_TMPFILE as i64),
];

pub const RENAME_FLAGS: FlagTable = &[
    ("RENAME_NOREPLACE", libc::RENAME_NOREPLACE as i64),
    ("RENAME_EXCHANGE", libc::RENAME_EXCHANGE as i64),
    ("RENAME_WHITEOUT", libc::RENAME_WHITEOUT as i64),
    ("NOREPLACE", libc::RENAME_NOREPLACE as i64),
    ("EXCHANGE", libc::RENAME_EXCHANGE as i64),
    ("WHITEOUT", libc::RENAME_WHITEOUT as i64),
];

pub const AT_FLAGS: FlagTable = &[
    ("AT_SYMLINK_NOFOLLOW", libc::AT_SYMLINK_NOFOLLOW as i64),
    ("AT_SYMLINK_FOLLOW", libc::AT_SYMLINK_FOLLOW as i64),
    ("AT_REMOVEDIR", libc::AT_REMOVEDIR as i64),
    ("AT_EMPTY_PATH", libc::AT_EMPTY_PATH as i64),
    ("AT_NO_AUTOMOUNT", libc::AT_NO_AUTOMOUNT as i64),
    ("AT_STATX_SYNC_AS_STAT", libc::AT_STATX_SYNC_AS_STAT as i64),
    ("AT_STATX_FORCE_SYNC", libc::AT_STATX_FORCE_SYNC as i64),
    ("AT_STATX_DONT_SYNC", libc::AT_STATX_DONT_SYNC as i64),
];

pub const FALLOC_FLAGS: FlagTable = &[
    ("FALLOC_FL_KEEP_SIZE", libc::FALLOC_FL_KEEP_SIZE as i64),
    ("FALLOC_FL_PUNCH_HOLE", libc::FALLOC_FL_PUNCH_HOLE as i64),
    ("FALLOC_FL_ZERO_RANGE", libc::FALLOC_FL_ZERO_RANGE as i64),
    (
        "FALLOC_FL_COLLAPSE_RANGE",
        libc::FALLOC_FL_COLLAPSE_RANGE as i64,
    ),
    (
        "FALLOC_FL_INSERT_RANGE",
        libc::FALLOC_FL_INSERT_RANGE as i64,
    ),
];

pub const SYNC_FILE_RANGE_FLAGS: FlagTable = &[
    (
        "SYNC_FILE_RANGE_WAIT_BEFORE",
        libc::SYNC_FILE_RANGE_WAIT_BEFORE as i64,
    ),
    ("SYNC_FILE_RANGE_WRITE", libc::SYNC_FILE_RANGE_WRITE as i64),
    (
        "SYNC_FILE_RANGE_WAIT_AFTER",
        libc::SYNC_FILE_RANGE_WAIT_AFTER as i64,
    ),
];

pub const ACCESS_MODES: FlagTable = &[
    ("F_OK", libc::F_OK as i64),
    ("R_OK", libc::R_OK as i64),
    ("W_OK", libc::W_OK as i64),
    ("X_OK", libc::X_OK as i64),
];

pub const XATTR_FLAGS: FlagTable = &[
    ("XATTR_CREATE", libc::XATTR_CREATE as i64),
    ("XATTR_REPLACE", libc::XATTR_REPLACE as i64),
];

const STATX_MASK: FlagTable = &[
    ("STATX_TYPE", libc::STATX_TYPE as i64),
    ("STATX_MODE", libc::STATX_MODE as i64),
    ("STATX_NLINK", libc::STATX_NLINK as i64),
    ("STATX_UID", libc::STATX_UID as i64),
    ("STATX_GID", libc::STATX_GID as i64),
    ("STATX_ATIME", libc::STATX_ATIME as i64),
    ("STATX_MTIME", libc::STATX_MTIME as i64),
    ("STATX_CTIME", libc::STATX_CTIME as i64),
    ("STATX_INO", libc::STATX_INO as i64),
    ("STATX_SIZE", libc::STATX_SIZE as i64),
    ("STATX_BLOCKS", libc::STATX_BLOCKS as i64),
    ("STATX_BASIC_STATS", libc::STATX_BASIC_STATS as i64),
    ("STATX_BTIME", libc::STATX_BTIME as i64),
    ("STATX_ALL", libc::STATX_ALL as i64),
];

/// The flag names an op's `flags` field takes (for the recorder, which must only write
/// flags a signature can hold).
pub fn flag_table_of(op: &str) -> FlagTable {
    match op {
        "open" | "openat" => OPEN_FLAGS,
        "renameat2" => RENAME_FLAGS,
        "fallocate" => FALLOC_FLAGS,
        "sync_file_range" => SYNC_FILE_RANGE_FLAGS,
        "access" | "faccessat" => ACCESS_MODES,
        "setxattr" => XATTR_FLAGS,
        _ => AT_FLAGS,
    }
}

fn flags(r: &RawStep, table: FlagTable) -> Result<i64, String> {
    match &r.flags {
        None => Ok(0),
        Some(f) => parse_flags(f, table),
    }
}

/// Parse `A|B`, `["A", "B"]`, a number, or `0`, against one flag table.
pub fn parse_flags(f: &Flags, table: FlagTable) -> Result<i64, String> {
    let words: Vec<&str> = match f {
        Flags::Number(n) => return Ok(*n),
        Flags::Text(s) => s.split('|').map(str::trim).collect(),
        Flags::List(v) => v.iter().map(|s| s.trim()).collect(),
    };
    let mut value = 0;
    for w in words {
        if w.is_empty() {
            continue;
        }
        if let Ok(n) = parse_int(w) {
            value |= n;
            continue;
        }
        let (_, v) = table.iter().find(|(name, _)| *name == w).ok_or_else(|| {
            let known: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
            match closest(w, known.iter().copied()) {
                Some(near) => format!("unknown flag `{w}`: did you mean `{near}`?"),
                None => format!("unknown flag `{w}` (known here: {})", known.join(", ")),
            }
        })?;
        value |= v;
    }
    Ok(value)
}

/// The candidate closest to a misspelt `word`, if one is close enough to be a typo.
pub fn closest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|c| (strsim::jaro_winkler(word, c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

fn parse_int(s: &str) -> Result<i64, std::num::ParseIntError> {
    if let Some(hex) = s.strip_prefix("0x") {
        i64::from_str_radix(hex, 16)
    } else {
        s.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(op: &str) -> RawStep {
        RawStep {
            op: op.into(),
            ..Default::default()
        }
    }

    #[test]
    fn flags_are_named_from_their_table() {
        let open = (libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL) as i64;
        assert_eq!(flag_names(OPEN_FLAGS, open), "O_WRONLY|O_CREAT|O_EXCL");
        assert_eq!(flag_names(OPEN_FLAGS, 0), "O_RDONLY");
        assert_eq!(flag_names(RENAME_FLAGS, 1), "RENAME_NOREPLACE");
        assert_eq!(flag_names(AT_FLAGS, 0), "0");
        assert_eq!(flag_names(XATTR_FLAGS, 0x100), "0x100");
    }

    #[test]
    fn builds_openat_with_flags_and_slot() {
        let mut slots = Slots::default();
        let mut r = raw("openat");
        r.path = Some("{name}".into());
        r.flags = Some(Flags::Text("O_WRONLY|O_CREAT|O_EXCL|O_TRUNC".into()));
        r.mode = Some(IntOrString::Int(0o666));
        r.slot = Some("f".into());
        let s = Step::build(&r, &mut slots, 3).unwrap();
        match s.op {
            Op::Open {
                flags, mode, slot, ..
            } => {
                assert_eq!(
                    flags,
                    libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_TRUNC
                );
                assert_eq!(mode, 0o666);
                assert_eq!(slot, 0);
            }
            _ => panic!("not an open"),
        }
        let mut c = raw("close");
        c.slot = Some("f".into());
        assert!(Step::build(&c, &mut slots, 4).is_ok());
    }

    #[test]
    fn rejects_missing_extra_and_unknown() {
        let mut slots = Slots::default();
        let e = Step::build(&raw("unlink"), &mut slots, 1).unwrap_err();
        assert!(e.contains("needs `path`"), "{e}");
        let mut r = raw("sync");
        r.path = Some("x".into());
        let e = Step::build(&r, &mut slots, 1).unwrap_err();
        assert!(e.contains("does not take `path`"), "{e}");
        let e = Step::build(&raw("frobnicate"), &mut slots, 1).unwrap_err();
        assert!(e.contains("unknown op"), "{e}");
        let e = Step::build(&raw("renmae"), &mut slots, 1).unwrap_err();
        assert!(e.contains("did you mean `rename`?"), "{e}");
        let mut c = raw("close");
        c.slot = Some("never".into());
        let e = Step::build(&c, &mut slots, 1).unwrap_err();
        assert!(e.contains("before any step opens it"), "{e}");
        let mut r = raw("renameat2");
        r.from = Some("a".into());
        r.to = Some("b".into());
        r.flags = Some(Flags::Text("RENAME_SOMETIMES".into()));
        assert!(
            Step::build(&r, &mut slots, 1)
                .unwrap_err()
                .contains("unknown flag")
        );
    }

    #[test]
    fn symlink_targets_cannot_escape() {
        let mut slots = Slots::default();
        let mut r = raw("symlink");
        r.path = Some("d/link".into());
        r.target = Some("../x".into());
        assert!(Step::build(&r, &mut slots, 1).is_ok());
        r.target = Some("../../x".into());
        assert!(Step::build(&r, &mut slots, 1).is_err());
        r.target = Some("/etc/passwd".into());
        assert!(Step::build(&r, &mut slots, 1).is_err());
    }

    #[test]
    fn expect_matches_results() {
        let enoent = Expect::parse("ENOENT").unwrap();
        assert!(enoent.matches(Err(Errno(libc::ENOENT))));
        assert!(!enoent.matches(Ok(0)));
        assert!(Expect::Ok.matches(Ok(3)));
        assert!(!Expect::Ok.matches(Err(Errno(libc::EEXIST))));
        assert!(Expect::parse("EWHATEVER").is_err());
    }

    #[test]
    fn modes_and_patterns() {
        let mut r = raw("chmod");
        r.mode = Some(IntOrString::Text("0644".into()));
        assert_eq!(mode(&r, 0).unwrap(), 0o644);
        r.mode = Some(IntOrString::Text("999".into()));
        assert!(mode(&r, 0).is_err());
        assert_eq!(Pattern::parse("byte:0xab").unwrap(), Pattern::Byte(0xab));
        assert!(Pattern::parse("byte:300").is_err());
        let rnd = Pattern::Random.fill(4096);
        assert_eq!(rnd.len(), 4096);
        assert_ne!(rnd[..8], rnd[8..16]);
    }
}
