//! dbench loadfiles, as data: reading one as dbench 4.0 does (`child.c`), the table of
//! its operations, and the compiled [`Script`] every client replays.
//!
//! A loadfile is a recorded SMB client session (`NTCreateX "\clients\client1\x" 0x0 0x2
//! 9938 NT_STATUS_OK`), one operation a line, optionally paced by a leading timestamp.
//! dbench replays it per client with its own file-I/O semantics (`exec::script` issues
//! them, syscall for syscall). Compiling happens once, before any client starts: nothing
//! is parsed inside the timed window, and the clients share one read-only script. Paths
//! are interned (the 458,344 lines of Debian's client.txt name a few thousand paths) and
//! rendered per client by replacing `client1` with the client's own name, as dbench does.
//!
//! Where dbench quietly does something surprising with a malformed line (skips it, treats
//! a missing number as 0 and closes descriptor 0, overflows a 100-byte token buffer), a
//! loadfile here is refused with its file and line instead. This module touches no
//! filesystem besides reading the loadfile.

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use std::io::{BufRead, Read};

/// Bytes dbench reads of a line (`fgets(line, sizeof(line)-1)` into 1024 bytes, the newline
/// included): a longer line would be split in two there, so it is refused here.
pub const MAX_LINE_LEN: usize = 1022;
/// Lines a loadfile may have (Debian's client.txt has 458,344; each compiled line costs
/// about 32 bytes of memory, shared by every client).
pub const MAX_LINES: u64 = 4_000_000;
/// Bytes a loadfile may have.
pub const MAX_FILE_BYTES: u64 = 512 << 20;
/// Open handles a client may hold at once (dbench's `MAX_FILES`).
pub const MAX_HANDLES: usize = 200;
/// Bytes one ReadX or WriteX may move: each is one buffer in memory.
pub const MAX_IO_BYTES: u32 = 64 << 20;
/// The latest a timestamp may pace a line, in seconds from the start of a pass: a day.
/// A loadfile's times are when a recorded client issued each call (seconds to minutes);
/// what no recording holds is refused rather than slept through.
pub const MAX_PACE_SECS: f64 = 86_400.0;

/// What dbench's `all_string_sub` replaces in every path with the client's name.
const CLIENT1: &[u8] = b"client1";

/// The operations of a dbench 4.0 loadfile. The discriminant indexes [`OPS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum LoadOp {
    NtCreateX,
    Close,
    Rename,
    Unlink,
    Deltree,
    Rmdir,
    Mkdir,
    QueryPath,
    QueryFile,
    QueryFs,
    SetFile,
    FindFirst,
    WriteX,
    ReadX,
    LockX,
    UnlockX,
    Flush,
    Sleep,
}

/// A field of a loadfile line, between the operation and the status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    /// A path (`\clients\client1\x`), always the first or second field.
    Path,
    /// A number, as `strtol(s, NULL, 0)` reads it: decimal, 0x hex or 0 octal.
    Num(&'static str),
}

/// One operation: its name in the loadfile, the row dbench's latency table gives it, and
/// the fields it takes. The parser, the executor and the latency report all index this.
pub struct OpInfo {
    pub op: LoadOp,
    /// As the loadfile spells it.
    pub name: &'static str,
    /// dbench's row in its `Operation Count AvgLat MaxLat` table (None: not timed).
    pub row: Option<&'static str>,
    fields: &'static [Field],
}

use Field::{Num, Path};

/// Every operation, in the order of dbench's latency table.
pub const OPS: &[OpInfo] = &[
    OpInfo {
        op: LoadOp::NtCreateX,
        name: "NTCreateX",
        row: Some("NTCreateX"),
        fields: &[
            Path,
            Num("create options"),
            Num("disposition"),
            Num("handle"),
        ],
    },
    OpInfo {
        op: LoadOp::Close,
        name: "Close",
        row: Some("Close"),
        fields: &[Num("handle")],
    },
    OpInfo {
        op: LoadOp::Rename,
        name: "Rename",
        row: Some("Rename"),
        fields: &[Path, Path],
    },
    OpInfo {
        op: LoadOp::Unlink,
        name: "Unlink",
        row: Some("Unlink"),
        fields: &[Path, Num("attributes")],
    },
    OpInfo {
        op: LoadOp::Deltree,
        name: "Deltree",
        row: Some("Deltree"),
        fields: &[Path],
    },
    OpInfo {
        op: LoadOp::Rmdir,
        name: "Rmdir",
        row: Some("Rmdir"),
        fields: &[Path],
    },
    OpInfo {
        op: LoadOp::Mkdir,
        name: "Mkdir",
        row: Some("Mkdir"),
        fields: &[Path],
    },
    OpInfo {
        op: LoadOp::QueryPath,
        name: "QUERY_PATH_INFORMATION",
        row: Some("Qpathinfo"),
        fields: &[Path, Num("level")],
    },
    OpInfo {
        op: LoadOp::QueryFile,
        name: "QUERY_FILE_INFORMATION",
        row: Some("Qfileinfo"),
        fields: &[Num("handle"), Num("level")],
    },
    OpInfo {
        op: LoadOp::QueryFs,
        name: "QUERY_FS_INFORMATION",
        row: Some("Qfsinfo"),
        fields: &[Num("level")],
    },
    OpInfo {
        op: LoadOp::SetFile,
        name: "SET_FILE_INFORMATION",
        row: Some("Sfileinfo"),
        fields: &[Num("handle"), Num("level")],
    },
    OpInfo {
        op: LoadOp::FindFirst,
        name: "FIND_FIRST",
        row: Some("Find"),
        fields: &[Path, Num("level"), Num("maximum count"), Num("count")],
    },
    OpInfo {
        op: LoadOp::WriteX,
        name: "WriteX",
        row: Some("WriteX"),
        fields: &[
            Num("handle"),
            Num("offset"),
            Num("size"),
            Num("returned size"),
        ],
    },
    OpInfo {
        op: LoadOp::ReadX,
        name: "ReadX",
        row: Some("ReadX"),
        fields: &[
            Num("handle"),
            Num("offset"),
            Num("size"),
            Num("returned size"),
        ],
    },
    OpInfo {
        op: LoadOp::LockX,
        name: "LockX",
        row: Some("LockX"),
        fields: &[Num("handle"), Num("offset"), Num("size")],
    },
    OpInfo {
        op: LoadOp::UnlockX,
        name: "UnlockX",
        row: Some("UnlockX"),
        fields: &[Num("handle"), Num("offset"), Num("size")],
    },
    OpInfo {
        op: LoadOp::Flush,
        name: "Flush",
        row: Some("Flush"),
        fields: &[Num("handle")],
    },
    OpInfo {
        op: LoadOp::Sleep,
        name: "Sleep",
        row: None,
        fields: &[Num("microseconds")],
    },
];

impl LoadOp {
    pub fn info(self) -> &'static OpInfo {
        &OPS[self as usize]
    }

    /// The row dbench's latency table names it under (None: not an operation it times).
    pub fn row(self) -> Option<&'static str> {
        self.info().row
    }
}

/// Index of a path in [`Script::paths`]; `NO_PATH` for none.
pub type PathId = u32;
pub const NO_PATH: PathId = u32::MAX;

/// One compiled loadfile line. The numbers mean what the op's fields in [`OPS`] say, in
/// order (`nums[0]` is the first number after the paths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line {
    pub op: LoadOp,
    /// The status the loadfile expects is success (`NT_STATUS_OK`, or `0x…` that reads as 0).
    pub ok: bool,
    /// 1-based line number in the loadfile, for messages.
    pub at: u32,
    pub path: PathId,
    pub path2: PathId,
    pub nums: [u32; 4],
}

/// A path of the loadfile relative to the test directory (`clients/client1/~dmtmp/x`),
/// with where `client1` occurs in it: each client renders it with its own name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptPath {
    bytes: Box<[u8]>,
    /// Starts of the non-overlapping `client1`s, left to right (dbench's `all_string_sub`).
    client1_at: Box<[u32]>,
}

impl ScriptPath {
    fn new(bytes: &[u8]) -> ScriptPath {
        let mut at = Vec::new();
        let mut k = 0;
        while k + CLIENT1.len() <= bytes.len() {
            if &bytes[k..k + CLIENT1.len()] == CLIENT1 {
                at.push(k as u32);
                k += CLIENT1.len();
            } else {
                k += 1;
            }
        }
        ScriptPath {
            bytes: bytes.into(),
            client1_at: at.into(),
        }
    }

    /// Append the path as client `client` (0-based, dbench's child id) names it.
    pub fn render(&self, client: u32, out: &mut crate::sys::CPath) {
        let mut from = 0;
        let name = digits(client);
        for &at in self.client1_at.iter() {
            let at = at as usize;
            out.push(&self.bytes[from..at]);
            out.push(b"client");
            out.push(name.digits());
            from = at + CLIENT1.len();
        }
        out.push(&self.bytes[from..]);
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// A number's decimal digits without allocating.
struct Digits {
    buf: [u8; 10],
    start: usize,
}

impl Digits {
    fn digits(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

fn digits(mut v: u32) -> Digits {
    let mut buf = [0u8; 10];
    let mut start = buf.len();
    loop {
        start -= 1;
        buf[start] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    Digits { buf, start }
}

/// A compiled loadfile: what every client replays, shared read-only.
#[derive(Clone, Debug, PartialEq)]
pub struct Script {
    /// Where it was read from, for messages (`client.txt:1234: …`).
    pub origin: String,
    pub lines: Vec<Line>,
    pub paths: Vec<ScriptPath>,
    /// Per line (the same index as `lines`), the timestamp that paces it in seconds from
    /// the start of the pass; None when the loadfile has none (clients run flat out).
    pub pace: Option<Vec<f64>>,
    /// Lines the file has, comments and blank lines included.
    pub file_lines: u64,
    /// The largest ReadX and WriteX sizes (the buffers every client needs).
    pub max_read: u32,
    pub max_write: u32,
    /// Operations per kind in one pass, indexed like [`OPS`].
    pub mix: [u64; OPS.len()],
    /// Bytes of ReadX and WriteX one pass requests (what dbench's throughput counts).
    pub bytes_per_pass: u64,
    /// The most a client can leave on the filesystem: every file at the largest extent
    /// the loadfile writes it to (for sizing a RAM-backed scratch filesystem).
    pub data_bytes: u64,
}

/// A loadfile read from disk: where it came from, its digest, and the script.
#[derive(Clone, Debug)]
pub struct Loadfile {
    pub path: String,
    pub sha256: String,
    pub script: std::sync::Arc<Script>,
}

impl Loadfile {
    /// Read and compile the loadfile at `path` (a regular file, within the limits).
    pub fn read(path: &std::path::Path) -> Result<Loadfile> {
        let shown = path.display().to_string();
        let meta =
            std::fs::metadata(path).with_context(|| format!("cannot read the loadfile {shown}"))?;
        if !meta.is_file() {
            bail!("the loadfile {shown} is not a regular file");
        }
        if meta.len() > MAX_FILE_BYTES {
            bail!(
                "the loadfile {shown} has {} bytes, over the limit of {MAX_FILE_BYTES}",
                meta.len()
            );
        }
        let f = std::fs::File::open(path)
            .with_context(|| format!("cannot read the loadfile {shown}"))?;
        let mut hasher = Sha256::new();
        let script = compile(
            std::io::BufReader::with_capacity(1 << 16, f).take(MAX_FILE_BYTES + 1),
            &shown,
            &mut hasher,
        )?;
        Ok(Loadfile {
            path: shown,
            sha256: model::text::hex(&hasher.finalize()),
            script: std::sync::Arc::new(script),
        })
    }
}

/// Parse loadfile text (tests and property tests).
pub fn parse(text: &str, origin: &str) -> Result<Script> {
    compile(text.as_bytes(), origin, &mut Sha256::new())
}

/// Compile a loadfile read from `input`, feeding every byte to `hasher`.
fn compile(mut input: impl BufRead, origin: &str, hasher: &mut Sha256) -> Result<Script> {
    let mut c = Compiler::default();
    let mut buf = Vec::with_capacity(256);
    let mut at: u64 = 0;
    loop {
        buf.clear();
        let got = Read::by_ref(&mut input)
            .take(MAX_LINE_LEN as u64 + 2)
            .read_until(b'\n', &mut buf)
            .with_context(|| format!("{origin}: cannot read the loadfile"))?;
        if got == 0 {
            break;
        }
        hasher.update(&buf);
        at += 1;
        if at > MAX_LINES {
            bail!("{origin}: more than {MAX_LINES} lines, over the limit");
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        if line.len() > MAX_LINE_LEN {
            bail!(
                "{origin}:{at}: a line longer than {MAX_LINE_LEN} characters (dbench reads at most {MAX_LINE_LEN} of a line)"
            );
        }
        c.line(line, at as u32)
            .map_err(|e| anyhow::anyhow!("{origin}:{at}: {e}"))?;
    }
    if c.lines.is_empty() {
        bail!("{origin}: no operation in the loadfile");
    }
    Ok(c.finish(origin, at))
}

#[derive(Default)]
struct Compiler {
    lines: Vec<Line>,
    paths: Vec<ScriptPath>,
    interned: std::collections::HashMap<Box<[u8]>, PathId>,
    pace: Vec<f64>,
    paced: bool,
    max_read: u32,
    max_write: u32,
    mix: [u64; OPS.len()],
    bytes_per_pass: u64,
    /// The path each handle was last opened by, and each path's largest written extent.
    opened: std::collections::HashMap<u32, PathId>,
    extent: std::collections::HashMap<PathId, u64>,
}

impl Compiler {
    fn finish(self, origin: &str, file_lines: u64) -> Script {
        Script {
            origin: origin.to_string(),
            lines: self.lines,
            paths: self.paths,
            pace: self.paced.then_some(self.pace),
            file_lines,
            max_read: self.max_read,
            max_write: self.max_write,
            mix: self.mix,
            bytes_per_pass: self.bytes_per_pass,
            data_bytes: self.extent.values().sum(),
        }
    }

    fn intern(&mut self, path: &[u8]) -> PathId {
        if let Some(&id) = self.interned.get(path) {
            return id;
        }
        let id = self.paths.len() as PathId;
        self.paths.push(ScriptPath::new(path));
        self.interned.insert(path.into(), id);
        id
    }

    /// One line of the file (without its newline).
    fn line(&mut self, raw: &[u8], at: u32) -> Result<(), String> {
        if let Some(&b) = raw.iter().find(|b| b.is_ascii_control() && **b != b'\t') {
            return Err(if b == b'\r' {
                "a carriage return: the loadfile has DOS line ends (convert it with dos2unix)"
                    .into()
            } else {
                format!("a control character (0x{b:02x})")
            });
        }
        let text = std::str::from_utf8(raw).map_err(|_| "not UTF-8 text".to_string())?;
        // dbench: every `\` becomes `/`, then " /" becomes " " (a path not in quotes loses
        // its leading separator and so is no path at all).
        let text = text.replace('\\', "/").replace(" /", " ");
        let tokens = tokens(&text);
        if tokens.len() < 2 || tokens[0].starts_with('#') {
            return Ok(()); // a comment or blank line: dbench skips it too
        }
        if tokens[0].starts_with("SMB") {
            return Err("a dbench 1 loadfile (SMB… operations): dbench 4 cannot read it".into());
        }
        let (pace, tokens) = pace(&tokens)?;
        if tokens.len() < 2 {
            return Err("a timestamp and nothing else".into());
        }
        let ok = status_ok(&tokens[tokens.len() - 1])?;
        let name = tokens[0].as_str();
        let info = op_info(name)?;
        let fields = &tokens[1..tokens.len() - 1];
        if fields.len() != info.fields.len() {
            let usage: Vec<String> = info
                .fields
                .iter()
                .map(|f| match f {
                    Path => "PATH".to_string(),
                    Num(n) => n.to_uppercase().replace(' ', "_"),
                })
                .collect();
            return Err(format!(
                "{name} takes {} field(s) before the status, not {}: {name} {} STATUS",
                info.fields.len(),
                fields.len(),
                usage.join(" ")
            ));
        }
        let (line, negative) = self.fields(info, ok, at, fields)?;
        self.check_sizes(&line, negative, name)?;
        match line.op {
            LoadOp::NtCreateX => {
                self.opened.insert(line.nums[2], line.path);
            }
            LoadOp::WriteX => {
                if let Some(&p) = self.opened.get(&line.nums[0]) {
                    let end = line.nums[1] as u64 + line.nums[2] as u64;
                    let e = self.extent.entry(p).or_insert(0);
                    *e = (*e).max(end);
                }
            }
            _ => {}
        }
        if let Some(t) = pace {
            self.paced = true;
            self.pace.resize(self.lines.len(), 0.0);
            self.pace.push(t);
        } else if self.paced {
            self.pace.push(0.0);
        }
        self.mix[line.op as usize] += 1;
        self.lines.push(line);
        Ok(())
    }

    /// A line of operation `info` from its fields (paths interned, numbers as dbench's C
    /// types hold them); which numbers were written negative.
    fn fields(
        &mut self,
        info: &OpInfo,
        ok: bool,
        at: u32,
        fields: &[String],
    ) -> Result<(Line, [bool; 4]), String> {
        let name = info.name;
        let mut line = Line {
            op: info.op,
            ok,
            at,
            path: NO_PATH,
            path2: NO_PATH,
            nums: [0; 4],
        };
        let mut k = 0;
        let mut negative = [false; 4];
        for (f, v) in info.fields.iter().zip(fields) {
            match f {
                Path => {
                    let id = self.path(v)?;
                    if line.path == NO_PATH {
                        line.path = id;
                    } else {
                        line.path2 = id;
                    }
                }
                Num(what) => {
                    line.nums[k] = match number(v) {
                        Ok(n) => n,
                        Err(Number::Not) => {
                            return Err(format!(
                                "{name}: `{v}` is not a number (the {what}: decimal, 0x… or 0…)"
                            ));
                        }
                        Err(Number::OutOfRange) => {
                            return Err(format!(
                                "{name}: the {what} `{v}` is out of range (dbench keeps it in 32 bits)"
                            ));
                        }
                    };
                    negative[k] = v.starts_with('-');
                    k += 1;
                }
            }
        }
        Ok((line, negative))
    }

    /// Sizes and offsets as dbench's C types hold them, and buffers within the limit.
    fn check_sizes(&mut self, line: &Line, negative: [bool; 4], name: &str) -> Result<(), String> {
        // A value over i32::MAX came from a number over it or from a negative one (read as
        // strtol reads it, wrapped to 32 bits): say which the loadfile wrote.
        let int = |i: usize, what: &str| {
            let v = line.nums[i];
            if v <= i32::MAX as u32 {
                Ok(())
            } else if negative[i] {
                Err(format!("{name}: {what} {} is negative", v as i32))
            } else {
                Err(format!(
                    "{name}: {what} {v} is over {} (dbench keeps it in an int)",
                    i32::MAX
                ))
            }
        };
        match line.op {
            LoadOp::ReadX | LoadOp::WriteX => {
                let [_, _, size, _] = line.nums;
                int(1, "offset")?;
                int(3, "returned size")?;
                int(2, "size")?;
                if size > MAX_IO_BYTES {
                    return Err(format!(
                        "{name}: size {size} is over the limit of {MAX_IO_BYTES} bytes a call"
                    ));
                }
                self.bytes_per_pass += size as u64;
                if line.op == LoadOp::ReadX {
                    self.max_read = self.max_read.max(size);
                } else {
                    self.max_write = self.max_write.max(size);
                }
            }
            LoadOp::LockX | LoadOp::UnlockX => int(2, "size")?,
            LoadOp::NtCreateX
            | LoadOp::Close
            | LoadOp::QueryFile
            | LoadOp::SetFile
            | LoadOp::Flush => int(if line.op == LoadOp::NtCreateX { 2 } else { 0 }, "handle")?,
            LoadOp::Sleep if line.nums[0] > 60_000_000 => {
                return Err(format!(
                    "Sleep {} µs is over the limit of a minute",
                    line.nums[0]
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// A path field: `/a/b` (after dbench's `\` → `/`), relative to the test directory.
    fn path(&mut self, v: &str) -> Result<PathId, String> {
        let Some(rel) = v.strip_prefix('/') else {
            return Err(format!(
                "`{v}` is not a path: loadfile paths start with \\ (dbench puts its directory before them)"
            ));
        };
        if rel.split('/').any(|c| c == "..") {
            return Err(format!(
                "`{v}`: `..` would leave the client's directory tree"
            ));
        }
        if rel.len() > crate::signature::limits::MAX_PATH_LEN {
            return Err(format!(
                "`{v}` is longer than {} characters",
                crate::signature::limits::MAX_PATH_LEN
            ));
        }
        // dbench's path is its directory and this; relative to that directory the top
        // itself is `.`.
        let rel = rel.trim_end_matches('/');
        Ok(self.intern(if rel.is_empty() { b"." } else { rel.as_bytes() }))
    }
}

/// dbench's `next_token` with the separator " ": runs of spaces separate tokens, a `"`
/// toggles quoting and is dropped.
/// A line's leading timestamp (seconds within a pass, as dbench's timed loadfiles have),
/// if any, and the tokens after it.
fn pace(tokens: &[String]) -> Result<(Option<f64>, &[String]), String> {
    Ok(if tokens[0].starts_with(|c: char| c.is_ascii_digit()) {
        let t: f64 = tokens[0]
            .parse()
            .ok()
            .filter(|t: &f64| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| format!("`{}` is not a timestamp", tokens[0]))?;
        if t > MAX_PACE_SECS {
            return Err(format!(
                "timestamp {} is over {MAX_PACE_SECS} s (a day): a loadfile's times are seconds within one pass",
                tokens[0]
            ));
        }
        (Some(t), &tokens[1..])
    } else {
        (None, tokens)
    })
}

/// Whether a line's status (NT_STATUS_… or 0x…) expects success.
fn status_ok(status: &str) -> Result<bool, String> {
    if !status.starts_with("NT_STATUS_") && !status.starts_with("0x") {
        return Err(format!(
            "badly formed status `{status}` (the last field is NT_STATUS_… or 0x…)"
        ));
    }
    Ok(status == "NT_STATUS_OK"
        || status
            .strip_prefix("0x")
            .is_some_and(|h| u64::from_str_radix(h, 16).ok() == Some(0) || h.is_empty()))
}

/// The operation named `name`, or an error suggesting the nearest one.
fn op_info(name: &str) -> Result<&'static OpInfo, String> {
    OPS.iter().find(|o| o.name == name).ok_or_else(|| {
        let best = OPS
            .iter()
            .map(|o| (strsim::jaro_winkler(name, o.name), o.name))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        match best {
            Some((s, n)) if s > 0.8 => {
                format!("unknown operation `{name}`: did you mean `{n}`?")
            }
            _ => format!(
                "unknown operation `{name}` (dbench 4 knows {})",
                OPS.iter().map(|o| o.name).collect::<Vec<_>>().join(", ")
            ),
        }
    })
}

fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_token = false;
    let mut quoted = false;
    for ch in text.chars() {
        if ch == ' ' && !quoted {
            if in_token {
                out.push(std::mem::take(&mut cur));
                in_token = false;
            }
            continue;
        }
        in_token = true;
        if ch == '"' {
            quoted = !quoted;
        } else {
            cur.push(ch);
        }
    }
    if in_token {
        out.push(cur);
    }
    out
}

/// Why a token is not a loadfile number.
#[derive(Debug, PartialEq, Eq)]
enum Number {
    /// Not digits of base 10, 16 (`0x`) or 8 (`0`).
    Not,
    /// Digits, but more than 32 bits hold.
    OutOfRange,
}

/// A whole token as `strtol(s, NULL, 0)` reads a well-formed number, truncated to 32 bits
/// as dbench's `int`/`uint32_t` parameters hold it.
fn number(s: &str) -> Result<u32, Number> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (radix, body) = if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        (16, h)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return Err(Number::Not);
    }
    let v = u64::from_str_radix(body, radix)
        .ok()
        .filter(|&v| v <= u32::MAX as u64)
        .ok_or(Number::OutOfRange)? as u32;
    Ok(if neg { v.wrapping_neg() } else { v })
}

impl Script {
    pub fn path(&self, id: PathId) -> &ScriptPath {
        &self.paths[id as usize]
    }

    /// Memory the compiled script holds, for the plan's memory check and the benchmark.
    pub fn bytes(&self) -> u64 {
        let lines = self.lines.capacity() * std::mem::size_of::<Line>();
        let paths: usize = self
            .paths
            .iter()
            .map(|p| std::mem::size_of::<ScriptPath>() + p.bytes.len() + 4 * p.client1_at.len())
            .sum();
        let pace = self.pace.as_ref().map_or(0, |p| p.capacity() * 8);
        (lines + paths + pace) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#"Deltree "\clients\client1" NT_STATUS_OK
Mkdir "\clients" NT_STATUS_OK
NTCreateX "\clients\client1" 0x1 0x2 16385 NT_STATUS_OK
Close 16385 NT_STATUS_OK
NTCreateX "\clients\client1\mixfile" 0x40 0x1 9935 NT_STATUS_OBJECT_NAME_NOT_FOUND
QUERY_PATH_INFORMATION "\clients\client1\~dmtmp" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND
FIND_FIRST "\clients\client1\FILLER.*" 260 1366 0 NT_STATUS_NO_SUCH_FILE
NTCreateX "\clients\client1\filler.000" 0x40 0x2 9938 NT_STATUS_OK
QUERY_FS_INFORMATION 1 NT_STATUS_OK
WriteX 9938 65534 1 1 NT_STATUS_OK
QUERY_FILE_INFORMATION 9938 258 NT_STATUS_OK
WriteX 9938 0 65536 65536 NT_STATUS_OK
LockX 9938 2147483538 1 NT_STATUS_OK
Close 9938 NT_STATUS_OK
"#;

    fn render(s: &Script, id: PathId, client: u32) -> String {
        let mut p = crate::sys::CPath::default();
        s.path(id).render(client, &mut p);
        p.display()
    }

    #[test]
    fn reads_dbench_lines_as_dbench_does() {
        let s = parse(HEAD, "t.txt").unwrap();
        assert_eq!(s.lines.len(), 14);
        let l = &s.lines[2];
        assert_eq!((l.op, l.ok, l.at), (LoadOp::NtCreateX, true, 3));
        assert_eq!(l.nums[..3], [1, 2, 16385]);
        assert_eq!(render(&s, l.path, 0), "clients/client0");
        assert_eq!(render(&s, l.path, 11), "clients/client11");
        // Not found is a failure status; 0x… that reads as 0 is success.
        assert!(!s.lines[4].ok && !s.lines[6].ok);
        assert_eq!(s.lines[6].nums[..3], [260, 1366, 0]);
        assert_eq!(render(&s, s.lines[6].path, 3), "clients/client3/FILLER.*");
        assert_eq!(s.lines[12].nums[..3], [9938, 2147483538, 1]);
        assert_eq!(s.max_write, 65536);
        assert_eq!(s.bytes_per_pass, 65537);
        assert_eq!(s.mix[LoadOp::NtCreateX as usize], 3);
        assert_eq!(s.pace, None);
        // The same path twice is one path.
        assert_eq!(s.lines[0].path, s.lines[2].path);
        assert!(parse("Close 1 0x0\n", "x").unwrap().lines[0].ok);
        assert!(!parse("Close 1 0x1\n", "x").unwrap().lines[0].ok);
    }

    #[test]
    fn comments_blank_lines_and_timestamps() {
        let s = parse(
            "# a comment\n\n   \nlonely\n0.5 Close 1 NT_STATUS_OK\nFlush 1 NT_STATUS_OK\n",
            "t",
        )
        .unwrap();
        assert_eq!(s.lines.len(), 2);
        assert_eq!(s.file_lines, 6);
        assert_eq!(s.pace, Some(vec![0.5, 0.0]));
        assert_eq!(s.lines[0].at, 5);
    }

    #[test]
    fn malformed_lines_are_one_clear_error_with_file_and_line() {
        for (text, want) in [
            (
                "Close 1 NT_STATUS_OK\nClsoe 1 NT_STATUS_OK\n",
                "t:2: unknown operation `Clsoe`: did you mean `Close`?",
            ),
            (
                "Frobnicate 1 NT_STATUS_OK\n",
                "t:1: unknown operation `Frobnicate` (dbench 4 knows",
            ),
            (
                "Close NT_STATUS_OK\n",
                "t:1: Close takes 1 field(s) before the status, not 0: Close HANDLE STATUS",
            ),
            ("Close 1 OK\n", "t:1: badly formed status `OK`"),
            (
                "Close x1 NT_STATUS_OK\n",
                "t:1: Close: `x1` is not a number (the handle",
            ),
            (
                "Unlink clients/x 0 NT_STATUS_OK\n",
                "t:1: `clients/x` is not a path",
            ),
            (
                "Unlink \"\\a\\..\\..\\b\" 0 NT_STATUS_OK\n",
                "t:1: `/a/../../b`: `..`",
            ),
            (
                "WriteX 1 0 99999999 99999999 NT_STATUS_OK\n",
                "t:1: WriteX: size 99999999 is over the limit",
            ),
            (
                "ReadX 1 3000000000 1 1 NT_STATUS_OK\n",
                "t:1: ReadX: offset 3000000000 is over 2147483647",
            ),
            ("Close 1 NT_STATUS_OK\r\n", "t:1: a carriage return"),
            // Issue 45, item 15: what the loadfile wrote, not its 32-bit wrap.
            (
                "WriteX 1 0 8 -5 NT_STATUS_OK\n",
                "t:1: WriteX: returned size -5 is negative",
            ),
            (
                "WriteX 1 0 -5 8 NT_STATUS_OK\n",
                "t:1: WriteX: size -5 is negative",
            ),
            (
                "Close 99999999999 NT_STATUS_OK\n",
                "t:1: Close: the handle `99999999999` is out of range",
            ),
            // Issue 45, item 1: no loadfile paces a line a lifetime into its pass.
            (
                "1e300 Mkdir \"\\clients\" NT_STATUS_OK\n",
                "t:1: timestamp 1e300 is over 86400 s",
            ),
            (
                "86400.5 Close 1 NT_STATUS_OK\n",
                "t:1: timestamp 86400.5 is over",
            ),
            ("SMBopenX x\n", "t:1: a dbench 1 loadfile"),
            ("# nothing\n", "t: no operation in the loadfile"),
        ] {
            let e = format!("{:#}", parse(text, "t").unwrap_err());
            assert!(e.starts_with(want), "{text:?}: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }

    #[test]
    fn numbers_read_as_strtol_base_0() {
        assert_eq!(number("16385"), Ok(16385));
        assert_eq!(number("0x40"), Ok(64));
        assert_eq!(number("010"), Ok(8));
        assert_eq!(number("0"), Ok(0));
        assert_eq!(number("-1"), Ok(u32::MAX));
        assert_eq!(number("12a"), Err(Number::Not));
        assert_eq!(number(""), Err(Number::Not));
        assert_eq!(number("0x"), Err(Number::Not));
        assert_eq!(number("99999999999"), Err(Number::OutOfRange));
    }

    #[test]
    fn client1_is_replaced_everywhere_as_all_string_sub_does() {
        let p = ScriptPath::new(b"clients/client1/client1client1x/client");
        let mut out = crate::sys::CPath::default();
        p.render(7, &mut out);
        assert_eq!(out.display(), "clients/client7/client7client7x/client");
        let top = parse("Deltree \"\\\" NT_STATUS_OK\n", "t").unwrap();
        assert_eq!(render(&top, top.lines[0].path, 0), ".");
    }

    #[test]
    fn the_limits_are_enforced_on_long_lines() {
        let long = format!("Unlink \"\\{}\" 0 NT_STATUS_OK\n", "a".repeat(1100));
        let e = parse(&long, "t").unwrap_err().to_string();
        assert!(e.contains("longer than 1022"), "{e}");
    }

    mod property {
        use super::*;
        use proptest::prelude::*;

        fn arb_line() -> impl Strategy<Value = String> {
            prop_oneof![
                // Well-formed lines of every op.
                (
                    0..OPS.len(),
                    "[a-zA-Z0-9~._*]{1,12}",
                    0u32..70000,
                    any::<bool>()
                )
                    .prop_map(|(k, name, v, ok)| {
                        let info = &OPS[k];
                        let fields: Vec<String> = info
                            .fields
                            .iter()
                            .map(|f| match f {
                                Path => format!("\"\\clients\\client1\\{name}\""),
                                Num(_) => v.to_string(),
                            })
                            .collect();
                        let status = if ok {
                            "NT_STATUS_OK"
                        } else {
                            "NT_STATUS_NO_SUCH_FILE"
                        };
                        format!("{} {} {status}", info.name, fields.join(" "))
                    }),
                // Anything printable, quotes and backslashes included.
                "[ -~]{0,80}",
                // Hostile bytes: control characters, very long tokens.
                proptest::collection::vec(any::<u8>(), 0..40)
                    .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
                "[a-z\"\\\\ ]{0,2000}",
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            /// Any text: a script or one line of error naming the file and a line — never
            /// a panic; a script holds only in-range references and sizes within limits.
            #[test]
            fn any_loadfile_compiles_or_is_refused_in_one_line(
                lines in proptest::collection::vec(arb_line(), 0..30)
            ) {
                let text = lines.join("\n");
                match parse(&text, "gen.txt") {
                    Ok(s) => {
                        prop_assert!(!s.lines.is_empty());
                        for l in &s.lines {
                            prop_assert!(l.path == NO_PATH || (l.path as usize) < s.paths.len());
                            prop_assert!(l.path2 == NO_PATH || (l.path2 as usize) < s.paths.len());
                            prop_assert!(l.at as u64 <= s.file_lines);
                        }
                        prop_assert!(s.max_read <= MAX_IO_BYTES && s.max_write <= MAX_IO_BYTES);
                        if let Some(p) = &s.pace {
                            prop_assert_eq!(p.len(), s.lines.len());
                        }
                    }
                    Err(e) => {
                        let e = format!("{e:#}");
                        prop_assert!(e.starts_with("gen.txt"), "{}", e);
                        prop_assert!(!e.contains('\n'), "{}", e);
                    }
                }
            }
        }
    }
}
