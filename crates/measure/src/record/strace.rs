//! Parsing `strace -f` output into calls.
//!
//! Accepts what strace prints with or without `-f` pid prefixes (`1234 ` with `-o`,
//! `[pid 1234] ` on stderr), timestamps (`-t`, `-tt`, `-ttt`, `-r`), durations (`-T`),
//! descriptor paths (`-y`/`-yy`: `3</etc/passwd>`), and calls split across lines by other
//! processes (`<unfinished ...>` … `<... openat resumed>`). Arguments are kept as strace
//! printed them, with strings unescaped and descriptors separated from their paths; what
//! they mean is the recorder's business.

use std::collections::HashMap;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    /// A string argument, unescaped; `truncated` when strace printed `"..."...`.
    Str {
        bytes: Vec<u8>,
        truncated: bool,
    },
    /// A number, with the path `-y` printed after it when it is a descriptor.
    Num {
        value: i64,
        path: Option<String>,
    },
    /// `AT_FDCWD`, with the working directory `-y` printed after it.
    AtFdcwd {
        path: Option<String>,
    },
    Null,
    /// Anything else (flags, structures, arrays), as printed.
    Other(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ret {
    Value {
        value: i64,
        path: Option<String>,
    },
    Error {
        errno: String,
    },
    /// `= ?` (the process exited inside the call) and the like.
    Unknown,
}

/// One completed system call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// Line of the trace where the call completed (1-based).
    pub line: usize,
    pub pid: u32,
    pub name: String,
    pub args: Vec<Arg>,
    pub ret: Ret,
}

/// A line the parser could not understand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// What one line of a trace was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    Call(Call),
    /// `+++ exited with 0 +++`, `+++ killed by SIGKILL +++`.
    Exit {
        pid: u32,
    },
    /// The first half of a call another process interrupted; completed by a later line.
    Unfinished,
    /// Signals, blank lines, strace's own messages.
    Nothing,
}

/// Parses lines in order, pairing `<unfinished ...>` with `resumed>` per pid.
#[derive(Default)]
pub struct Parser {
    pending: HashMap<u32, String>,
}

fn err(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line,
        message: message.into(),
    }
}

/// Split off `[pid 123] ` or `123 ` at the start.
fn split_pid(s: &str) -> (u32, &str) {
    if let Some(rest) = s.strip_prefix("[pid")
        && let Some((num, rest)) = rest.split_once(']')
        && let Ok(pid) = num.trim().parse()
    {
        return (pid, rest.trim_start());
    }
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0
        && s[digits..].starts_with(' ')
        && let Ok(pid) = s[..digits].parse()
    {
        return (pid, s[digits..].trim_start());
    }
    (0, s)
}

/// Split off a timestamp (`19:51:34.802653`, `1795377094.802653`, `0.000123`).
fn split_timestamp(s: &str) -> &str {
    let token_len = s.find(' ').unwrap_or(0);
    let token = &s[..token_len];
    let looks_like_time = !token.is_empty()
        && token
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b':' || b == b'.')
        && token.bytes().any(|b| b == b':' || b == b'.');
    if looks_like_time {
        s[token_len..].trim_start()
    } else {
        s
    }
}

impl Parser {
    /// Parse one line (without its newline).
    pub fn line(&mut self, line_no: usize, text: &str) -> Result<Line, ParseError> {
        let text = text.trim_end_matches(['\r', '\n']);
        if text.trim().is_empty() {
            return Ok(Line::Nothing);
        }
        let (pid, rest) = split_pid(text);
        let body = split_timestamp(rest);
        if body.starts_with("---") {
            return Ok(Line::Nothing);
        }
        if let Some(_exit) = body.strip_prefix("+++") {
            self.pending.remove(&pid);
            return Ok(Line::Exit { pid });
        }
        if body.starts_with("strace: ") || body.starts_with("System call ") {
            return Ok(Line::Nothing);
        }
        let full = if let Some(resumed) = body.strip_prefix("<... ") {
            let (name, tail) = resumed
                .split_once(" resumed>")
                .ok_or_else(|| err(line_no, "`<...` without `resumed>`"))?;
            let head = self.pending.remove(&pid).ok_or_else(|| {
                err(
                    line_no,
                    format!("`{name}` resumed but never started in pid {pid}"),
                )
            })?;
            if !head.starts_with(name.trim()) {
                return Err(err(
                    line_no,
                    format!("`{name}` resumed, but pid {pid} was in `{head}`"),
                ));
            }
            format!("{head}{}", tail.trim_start_matches(' '))
        } else {
            body.to_string()
        };
        if let Some(head) = full.strip_suffix("<unfinished ...>") {
            self.pending.insert(pid, head.trim_end().to_string());
            return Ok(Line::Unfinished);
        }
        parse_call(&full)
            .map(|(name, args, ret)| {
                Line::Call(Call {
                    line: line_no,
                    pid,
                    name,
                    args,
                    ret,
                })
            })
            .map_err(|m| err(line_no, m))
    }

    /// Calls still waiting for their `resumed>` line (the trace ended first).
    pub fn unfinished(&self) -> usize {
        self.pending.len()
    }
}

/// `name(args) = ret`.
fn parse_call(s: &str) -> Result<(String, Vec<Arg>, Ret), String> {
    let open = s
        .find('(')
        .ok_or_else(|| format!("not a system call: `{}`", clip(s)))?;
    let name = &s[..open];
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(format!("not a system call: `{}`", clip(s)));
    }
    let (args_text, after) =
        split_args(&s[open + 1..]).ok_or_else(|| format!("unbalanced arguments: `{}`", clip(s)))?;
    let after = after.trim_start();
    let ret_text = after
        .strip_prefix('=')
        .ok_or_else(|| format!("no result after `{name}(...)` (truncated line?)"))?
        .trim();
    let mut args = Vec::new();
    for a in split_top_level(args_text) {
        args.push(parse_arg(a.trim())?);
    }
    Ok((name.to_string(), args, parse_ret(ret_text)?))
}

fn clip(s: &str) -> String {
    let mut end = s.len().min(60);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    if end < s.len() {
        format!("{}…", &s[..end])
    } else {
        s.to_string()
    }
}

/// Given the text after `name(`, return the argument text and what follows the closing
/// parenthesis, honouring quotes, nesting and `-y` annotations.
fn split_args(s: &str) -> Option<(&str, &str)> {
    let b = s.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => i = skip_string(b, i)?,
            b'<' if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') => {
                // A descriptor annotation: `3</path)x>`.
                i += b[i..].iter().position(|&c| c == b'>')?;
            }
            b'(' | b'{' | b'[' => depth += 1,
            b')' if depth == 0 => return Some((&s[..i], &s[i + 1..])),
            b')' | b'}' | b']' => depth = depth.checked_sub(1)?,
            _ => {}
        }
        i += 1;
    }
    None
}

/// Index of the closing quote of the string starting at `start`.
fn skip_string(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

fn split_top_level(s: &str) -> Vec<&str> {
    if s.trim().is_empty() {
        return Vec::new();
    }
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => i = skip_string(b, i).unwrap_or(b.len()),
            b'<' if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') => {
                i += b[i..]
                    .iter()
                    .position(|&c| c == b'>')
                    .unwrap_or(b.len() - i - 1);
            }
            b'(' | b'{' | b'[' => depth += 1,
            b')' | b'}' | b']' => depth -= 1,
            b',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(&s[start..]);
    out
}

/// Decode strace's escapes: `\n \t \r \v \f \\ \"`, `\ooo` octal and `\xhh` hex.
pub fn unescape(s: &str) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = *b.get(i + 1).ok_or("string ends in a backslash")?;
        i += 2;
        match c {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'v' => out.push(0x0b),
            b'f' => out.push(0x0c),
            b'a' => out.push(0x07),
            b'b' => out.push(0x08),
            b'\\' | b'"' | b'\'' => out.push(c),
            b'x' => {
                let hex = s.get(i..i + 2).ok_or("short \\x escape")?;
                out.push(u8::from_str_radix(hex, 16).map_err(|_| format!("bad \\x{hex} escape"))?);
                i += 2;
            }
            b'0'..=b'7' => {
                let mut v: u32 = (c - b'0') as u32;
                let mut k = 0;
                while k < 2 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                    v = v * 8 + (b[i] - b'0') as u32;
                    i += 1;
                    k += 1;
                }
                out.push((v & 0xff) as u8);
            }
            other => return Err(format!("unknown escape `\\{}`", other as char)),
        }
    }
    Ok(out)
}

/// Split `3</path>` into the number text and the annotation.
fn split_annotation(s: &str) -> Result<(&str, Option<String>), String> {
    match s.find('<') {
        Some(i) if s.ends_with('>') => {
            let path = unescape(&s[i + 1..s.len() - 1])?;
            Ok((&s[..i], Some(String::from_utf8_lossy(&path).into_owned())))
        }
        _ => Ok((s, None)),
    }
}

/// Numbers as strace prints them: decimal, `0x` hex, or C-style octal (`0644`, modes).
fn parse_int(s: &str) -> Option<i64> {
    if let Some(h) = s.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok().map(|v| v as i64)
    } else if s.len() > 1 && s.starts_with('0') {
        i64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

fn parse_arg(a: &str) -> Result<Arg, String> {
    if a.starts_with('"') {
        let end = skip_string(a.as_bytes(), 0).ok_or("unterminated string")?;
        let bytes = unescape(&a[1..end])?;
        let truncated = a[end + 1..].starts_with("...");
        return Ok(Arg::Str { bytes, truncated });
    }
    if a == "NULL" {
        return Ok(Arg::Null);
    }
    if let Some(rest) = a.strip_prefix("AT_FDCWD") {
        let (_, path) = split_annotation(rest)?;
        return Ok(Arg::AtFdcwd { path });
    }
    let (num, path) = split_annotation(a)?;
    match parse_int(num) {
        Some(value) => Ok(Arg::Num { value, path }),
        None => Ok(Arg::Other(a.to_string())),
    }
}

fn parse_ret(s: &str) -> Result<Ret, String> {
    // Drop the `-T` duration.
    let s = match s.rfind(" <") {
        Some(i)
            if s.ends_with('>')
                && s[i + 2..s.len() - 1]
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b == b'.') =>
        {
            &s[..i]
        }
        _ => s,
    };
    if s.starts_with('?') {
        return Ok(Ret::Unknown);
    }
    let first = s.split(' ').next().unwrap_or("");
    let (num, path) = split_annotation(first)?;
    let value = parse_int(num).ok_or_else(|| format!("unreadable result `{s}`"))?;
    if value < 0 {
        let errno = s.split(' ').nth(1).unwrap_or("");
        if errno.starts_with('E')
            && errno
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        {
            return Ok(Ret::Error {
                errno: errno.to_string(),
            });
        }
    }
    Ok(Ret::Value { value, path })
}

/// The longest trace line read: strace's lines are a few hundred bytes (strings cut at
/// `-s`), so a longer one is not a trace, and reading it whole would take its size twice.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Read a trace a line at a time, handing each completed call to `sink`: memory stays
/// with the caller's. Malformed lines — also a line that is not UTF-8 (strace escapes
/// non-ASCII bytes, so such a line is damage) — are an error naming the line, or, with
/// `lenient`, skipped and counted (the count is returned).
pub fn read(
    mut r: impl std::io::BufRead,
    lenient: bool,
    sink: &mut dyn FnMut(Call),
) -> Result<usize, ParseError> {
    let mut p = Parser::default();
    let mut skipped = 0;
    let mut buf = Vec::new();
    let mut k = 0;
    loop {
        buf.clear();
        use std::io::{BufRead, Read};
        let n = r
            .by_ref()
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| err(k + 1, format!("cannot read the trace: {e}")))?;
        if n == 0 {
            break;
        }
        k += 1;
        if buf.len() > MAX_LINE_BYTES {
            return Err(err(
                k,
                format!(
                    "longer than {} MiB, the limit of a trace line (strace writes short lines: is this a trace?)",
                    MAX_LINE_BYTES >> 20
                ),
            ));
        }
        let ends_cleanly = buf.ends_with(b"\n");
        let bytes = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let line = match std::str::from_utf8(bytes) {
            Ok(l) => l,
            Err(e) if lenient => {
                let _ = e;
                skipped += 1;
                continue;
            }
            Err(e) => {
                let at = e.valid_up_to();
                return Err(err(
                    k,
                    format!(
                        "byte 0x{:02x} at column {} is not UTF-8 (a damaged trace? --lenient skips such lines)",
                        bytes[at],
                        at + 1
                    ),
                ));
            }
        };
        match p.line(k, line) {
            Ok(Line::Call(c)) => sink(c),
            Ok(_) => {}
            Err(_) if lenient => skipped += 1,
            Err(e) if !ends_cleanly => {
                return Err(err(
                    k,
                    format!("{} — the trace ends mid-line (truncated?)", e.message),
                ));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(skipped + p.unfinished())
}

/// Parse a whole trace. Malformed lines are an error naming the line, or, with
/// `lenient`, skipped and counted.
pub fn parse(text: &str, lenient: bool) -> Result<(Vec<Call>, usize), ParseError> {
    let mut p = Parser::default();
    let mut calls = Vec::new();
    let mut skipped = 0;
    let ends_cleanly = text.is_empty() || text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    for (k, l) in lines.iter().enumerate() {
        match p.line(k + 1, l) {
            Ok(Line::Call(c)) => calls.push(c),
            Ok(_) => {}
            Err(e) if lenient => {
                let _ = e;
                skipped += 1;
            }
            Err(e) => {
                let last = k + 1 == lines.len();
                if last && !ends_cleanly {
                    return Err(err(
                        k + 1,
                        format!("{} — the trace ends mid-line (truncated?)", e.message),
                    ));
                }
                return Err(e);
            }
        }
    }
    skipped += p.unfinished();
    Ok((calls, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_a_stream_names_a_non_utf8_line_or_skips_it() {
        let good = "1 unlink(\"/t/a\") = 0\n";
        let mut trace = good.as_bytes().to_vec();
        trace.extend_from_slice(b"1 unlink(\"/t/\xff\") = 0\n");
        trace.extend_from_slice(good.as_bytes());
        let mut calls = Vec::new();
        let e = read(&trace[..], false, &mut |c| calls.push(c)).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.message.contains("byte 0xff at column 14 is not UTF-8"),
            "{e}"
        );
        calls.clear();
        let skipped = read(&trace[..], true, &mut |c| calls.push(c)).unwrap();
        assert_eq!((skipped, calls.len()), (1, 2));
        assert_eq!(
            calls[1].line, 3,
            "lines are counted through the skipped one"
        );
        // A last line cut short is said to be.
        let e = read(
            &b"1 unlink(\"/t/a\") = 0\n1 unlink(\"/t"[..],
            false,
            &mut |_| {},
        )
        .unwrap_err();
        assert!(e.message.contains("ends mid-line"), "{e}");
    }

    fn call(line: &str) -> Call {
        match Parser::default().line(1, line).unwrap() {
            Line::Call(c) => c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn parses_a_plain_call() {
        let c = call(r#"rename("/usr/share/x.gz", "/usr/share/x.gz-RPMDELETE") = 0"#);
        assert_eq!(c.pid, 0);
        assert_eq!(c.name, "rename");
        assert_eq!(
            c.args[0],
            Arg::Str {
                bytes: b"/usr/share/x.gz".to_vec(),
                truncated: false
            }
        );
        assert_eq!(
            c.ret,
            Ret::Value {
                value: 0,
                path: None
            }
        );
    }

    #[test]
    fn parses_pid_time_duration_and_fd_paths() {
        let c = call(
            r#"22865 19:51:20.268284 openat(12</tmp/rpmx/root/usr/share/sigtest>, "data_7.bin;6b0347b8", O_WRONLY|O_CREAT|O_EXCL, 0200) = 11</tmp/rpmx/root/usr/share/sigtest/data_7.bin;6b0347b8> <0.000009>"#,
        );
        assert_eq!(c.pid, 22865);
        assert_eq!(
            c.args[0],
            Arg::Num {
                value: 12,
                path: Some("/tmp/rpmx/root/usr/share/sigtest".into())
            }
        );
        assert_eq!(c.args[2], Arg::Other("O_WRONLY|O_CREAT|O_EXCL".into()));
        assert_eq!(
            c.args[3],
            Arg::Num {
                value: 0o200,
                path: None
            }
        );
        assert_eq!(
            c.ret,
            Ret::Value {
                value: 11,
                path: Some("/tmp/rpmx/root/usr/share/sigtest/data_7.bin;6b0347b8".into())
            }
        );
        let c = call(
            r#"[pid  4242] 1795377094.802653 newfstatat(AT_FDCWD</tmp/debx>, "/a b", {st_mode=S_IFREG|0644, st_size=507, ...}, AT_SYMLINK_NOFOLLOW) = 0"#,
        );
        assert_eq!(c.pid, 4242);
        assert_eq!(
            c.args[0],
            Arg::AtFdcwd {
                path: Some("/tmp/debx".into())
            }
        );
        assert_eq!(c.args.len(), 4);
        assert!(matches!(&c.args[2], Arg::Other(s) if s.contains("st_size=507")));
    }

    #[test]
    fn parses_errors_and_unknown_results() {
        let c = call(r#"rmdir("/x.dpkg-new") = -1 ENOENT (No such file or directory) <0.000005>"#);
        assert_eq!(
            c.ret,
            Ret::Error {
                errno: "ENOENT".into()
            }
        );
        let c = call("exit_group(0)                           = ?");
        assert_eq!(c.ret, Ret::Unknown);
        let c = call(
            "mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f5e1c2d3000",
        );
        assert_eq!(c.args[0], Arg::Null);
        assert!(matches!(c.ret, Ret::Value { value, .. } if value != 0));
    }

    #[test]
    fn unescapes_strings_and_notes_truncation() {
        let c = call(r#"write(13</f>, "G\333\251\n\"q\\", 507) = 507"#);
        assert_eq!(
            c.args[1],
            Arg::Str {
                bytes: vec![b'G', 0o333, 0o251, b'\n', b'"', b'q', b'\\'],
                truncated: false
            }
        );
        let c = call(r#"write(3, "abc"..., 4096) = 4096"#);
        assert_eq!(
            c.args[1],
            Arg::Str {
                bytes: b"abc".to_vec(),
                truncated: true
            }
        );
        let c = call(r#"openat(AT_FDCWD, "a,b)c", O_RDONLY) = 3"#);
        assert_eq!(c.args.len(), 3);
        assert_eq!(
            c.args[1],
            Arg::Str {
                bytes: b"a,b)c".to_vec(),
                truncated: false
            }
        );
    }

    #[test]
    fn pairs_unfinished_and_resumed_per_pid() {
        let mut p = Parser::default();
        assert_eq!(
            p.line(
                1,
                r#"[pid 10] openat(AT_FDCWD, "/a", O_RDONLY <unfinished ...>"#
            )
            .unwrap(),
            Line::Unfinished
        );
        assert_eq!(
            p.line(2, r#"[pid 11] read(3, <unfinished ...>"#).unwrap(),
            Line::Unfinished
        );
        let Line::Call(c) = p.line(3, "[pid 10] <... openat resumed>) = 5").unwrap() else {
            panic!()
        };
        assert_eq!(
            (c.pid, c.name.as_str(), c.args.len(), c.line),
            (10, "openat", 3, 3)
        );
        let Line::Call(c) = p
            .line(4, r#"[pid 11] <... read resumed>"xy", 2) = 2"#)
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(
            c.args[1],
            Arg::Str {
                bytes: b"xy".to_vec(),
                truncated: false
            }
        );
        assert_eq!(p.unfinished(), 0);
        assert!(p.line(5, "[pid 12] <... close resumed>) = 0").is_err());
    }

    #[test]
    fn skips_signals_and_exits() {
        let mut p = Parser::default();
        assert_eq!(
            p.line(1, "--- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED} ---")
                .unwrap(),
            Line::Nothing
        );
        assert_eq!(
            p.line(2, "1234 +++ exited with 0 +++").unwrap(),
            Line::Exit { pid: 1234 }
        );
    }

    #[test]
    fn reports_malformed_and_truncated_lines() {
        let e = parse("close(3) = 0\nthis is not strace\n", false).unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse("close(3) = 0\nopenat(AT_FDCWD, \"/a\", O_RDO", false).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("truncated"), "{e}");
        let (calls, skipped) = parse("close(3) = 0\ngarbage\nclose(4) = 0\n", true).unwrap();
        assert_eq!((calls.len(), skipped), (2, 1));
    }

    /// Issue 39, 9: a 300 MB line took 591 MB, and `record /dev/zero` aborted: a line is
    /// read to 1 MiB at most.
    #[test]
    fn a_line_longer_than_the_limit_stops_the_read() {
        let zeros = std::fs::File::open("/dev/zero").unwrap();
        let e = read(std::io::BufReader::new(zeros), true, &mut |_| {}).unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.message.contains("longer than 1 MiB"), "{e}");
        let mut long = "close(3) = 0\n".to_string();
        long.push_str(&"x".repeat(MAX_LINE_BYTES + 10));
        let e = read(long.as_bytes(), false, &mut |_| {}).unwrap_err();
        assert_eq!(e.line, 2);
    }
}
