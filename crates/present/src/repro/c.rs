//! The C text of a reproducer: C99 with the GNU extensions glibc declares (`_GNU_SOURCE`),
//! libc and pthreads only, one function per phase, every step one `syscall(2)` with its
//! flags as numbers and their names beside them. Helpers are written only when a step uses
//! them, so the file compiles clean under `-Wall -Wextra -Werror`.

use super::Repro;
use measure::signature::step::{Op, Pattern, RANDOM_SEED, TEXT, flag_names};
use measure::signature::template::Piece;
use measure::signature::{Expect, Phase, Select, Step, Template};
use measure::testbed::Prop;
use model::text::wrap;
use std::fmt::Write;

/// What the program needs, gathered from the signature before any of it is written.
struct Parts<'s> {
    /// Every template a path is rendered from; the first is the file name (`{name}`).
    templates: Vec<&'s Template>,
    /// Every distinct (pattern, length) a write or the populate writes.
    data: Vec<(Pattern, usize)>,
    /// The largest buffer a call may write into (`Op::out_len`), at least 1.
    buf_len: usize,
    token: bool,
    alpha: bool,
    decimal: bool,
    slots: bool,
    chattr: bool,
    /// Whether the file name itself is rendered (populate, `{name}`, a step's path).
    file_name_used: bool,
}

impl<'s> Parts<'s> {
    fn of(r: &'s Repro) -> Parts<'s> {
        let sig = &r.signature;
        let mut p = Parts {
            templates: vec![&sig.file],
            data: Vec::new(),
            buf_len: 1,
            token: false,
            alpha: false,
            decimal: false,
            slots: !sig.slots.is_empty(),
            file_name_used: sig.setup.populate.is_some(),
            chattr: r
                .dirs
                .iter()
                .any(|d| d.props.iter().any(|p| matches!(p, Prop::Chattr { .. }))),
        };
        for t in &sig.setup.mkdir {
            p.template(t);
        }
        if let Some(pop) = &sig.setup.populate
            && !pop.data.is_empty()
        {
            p.datum(pop.pattern, pop.data.len());
        }
        for step in sig
            .prelude
            .iter()
            .chain(sig.phases.iter().flat_map(|p| &p.steps))
        {
            for t in step.op.paths().into_iter().flatten() {
                p.template(t);
            }
            match &step.op {
                Op::Write { data, pattern, .. } | Op::Pwrite { data, pattern, .. } => {
                    p.datum(*pattern, data.len())
                }
                _ => {}
            }
            p.buf_len = p.buf_len.max(step.op.out_len());
        }
        let file_steps = sig
            .prelude
            .iter()
            .chain(sig.phases.iter().flat_map(|p| &p.steps))
            .flat_map(|s| s.op.paths())
            .flatten()
            .any(|t| t.as_str() == sig.file.as_str());
        p.file_name_used |= file_steps || p.templates[1..].iter().any(|t| t.uses_name());
        let emitted = p.templates.iter().skip(usize::from(!p.file_name_used));
        for t in emitted {
            for piece in t.pieces() {
                match piece {
                    Piece::Token => p.token = true,
                    Piece::Alpha => p.alpha = true,
                    Piece::Index | Piece::Count => p.decimal = true,
                    Piece::Lit(_) | Piece::Name => {}
                }
            }
        }
        p
    }

    fn template(&mut self, t: &'s Template) {
        if !self.templates.iter().any(|u| u.as_str() == t.as_str()) {
            self.templates.push(t);
        }
    }

    fn template_index(&self, t: &Template) -> usize {
        self.templates
            .iter()
            .position(|u| u.as_str() == t.as_str())
            .unwrap_or(0)
    }

    fn datum(&mut self, pattern: Pattern, len: usize) {
        if !self.data.contains(&(pattern, len)) {
            self.data.push((pattern, len));
        }
    }

    fn data_index(&self, pattern: Pattern, len: usize) -> usize {
        self.data
            .iter()
            .position(|d| *d == (pattern, len))
            .unwrap_or(0)
    }

    fn mix64(&self) -> bool {
        self.token || self.data.iter().any(|(p, _)| *p == Pattern::Random)
    }
}

/// The whole program.
pub(super) fn program(r: &Repro) -> String {
    let parts = Parts::of(r);
    let mut out = String::new();
    header(&mut out, r);
    prologue(&mut out, r, &parts);
    helpers(&mut out, &parts);
    templates(&mut out, &parts);
    data(&mut out, &parts);
    setup(&mut out, r, &parts);
    for (k, phase) in r.signature.phases.iter().enumerate() {
        phase_fn(&mut out, k, phase, &parts, &r.signature.slots);
    }
    directories(&mut out, r);
    out.push_str(DRIVER);
    out
}

/// Text safe inside a C block comment: no comment delimiters, no control characters.
fn comment(s: &str) -> String {
    model::shell::escape_controls(s, &['\n', '\t'])
        .replace("*/", "* /")
        .replace("/*", "/ *")
        // No trigraph (`??/` ends a line as a backslash would: -Wtrigraphs): a space
        // between any two question marks.
        .chars()
        .fold(String::new(), |mut s, c| {
            if c == '?' && s.ends_with('?') {
                s.push(' ');
            }
            s.push(c);
            s
        })
}

/// A C string literal of `bytes` (octal escapes for anything but printable ASCII; `?`
/// escaped, so no trigraph forms).
fn lit(bytes: &[u8]) -> String {
    let mut s = String::from("\"");
    for &b in bytes {
        match b {
            b'"' | b'\\' | b'?' => {
                s.push('\\');
                s.push(b as char);
            }
            0x20..=0x7e => s.push(b as char),
            _ => write!(s, "\\{b:03o}").unwrap(),
        }
    }
    s.push('"');
    s
}

fn header(out: &mut String, r: &Repro) {
    let sig = &r.signature;
    let ns: Vec<String> = r.ns.iter().map(u64::to_string).collect();
    let clients = match r.clients {
        Some(k) => format!("{k} client(s), each a thread in DIR/client<i>"),
        None => "1 client, in the test directory".into(),
    };
    let dirs: Vec<String> = r.dirs.iter().map(|d| d.text.clone()).collect();
    let mut h = String::new();
    writeln!(h, "sigbench reproducer: {} ({})", sig.name, sig.origin).unwrap();
    writeln!(h, "signature sha256 {}", sig.hash).unwrap();
    if !r.command.is_empty() {
        writeln!(
            h,
            "written by sigbench {}: {}",
            env!("CARGO_PKG_VERSION"),
            r.command
        )
        .unwrap();
    }
    writeln!(h).unwrap();
    for line in sig.description.lines() {
        writeln!(h, "{line}").unwrap();
    }
    writeln!(h).unwrap();
    writeln!(h, "Cases: N = {}; directories {} (their properties checked for {}); {clients}; {} repetition(s); seed {:#x}.",
        ns.join(", "), dirs.join(", "), r.fs.name(), r.repetitions, r.seed).unwrap();
    if let Some((t, w)) = r.time {
        writeln!(
            h,
            "A run for a time: the clients pass over their work again and again for {:.1} s after a warm-up of {:.1} s; each case prints the calls per second over that time.",
            t.as_secs_f64(),
            w.as_secs_f64()
        )
        .unwrap();
    }
    writeln!(h).unwrap();
    h.push_str(
        "Build: cc -O2 -pthread -o repro repro.c\n\
         Run: ./repro MOUNTED_DIR (an empty directory on the filesystem under test)\n\
         \n\
         For every repetition, N and directory it creates MOUNTED_DIR/NAME with the \
         directory's properties, runs the untimed setup (sub-directories, N files populated, \
         sync, the directory's fsync, the prelude), then times the phases with \
         CLOCK_MONOTONIC and prints s3e's line; then it removes what it created and syncs. \
         The median over the repetitions comes last. Each step is the system call the \
         signature names, issued with syscall(2) so that no C library wrapper picks \
         another: under strace its calls are sigbench's for the same signature and N. \
         One difference: sigbench makes a fresh filesystem for every case, this program \
         reuses the one it is given. Like sigbench's workload, its clients are confined \
         to MOUNTED_DIR (each thread's root, by chroot; without root, inside a user \
         namespace of the user's own): no path a step resolves reaches outside it.\n\
         \n\
         The signature (in a comment, where `*/` cannot stand; `./repro --signature` \
         prints the file itself):\n\n",
    );
    for line in sig.source.lines() {
        writeln!(h, "    {line}").unwrap();
    }
    out.push_str("/*\n");
    for line in comment(&h).lines() {
        // The signature's own lines stay as they are; prose is wrapped.
        let lines = if line.starts_with("    ") {
            vec![line.to_string()]
        } else {
            wrap(line, 68)
        };
        for l in lines {
            writeln!(out, " * {l}").unwrap();
            if out.ends_with(" \n") {
                let trimmed = out.trim_end().len();
                out.truncate(trimmed);
                out.push('\n');
            }
        }
    }
    out.push_str(" */\n");
}

fn prologue(out: &mut String, r: &Repro, p: &Parts<'_>) {
    let sig = &r.signature;
    out.push_str(
        "#define _GNU_SOURCE\n\
         #include <dirent.h>\n\
         #include <errno.h>\n\
         #include <fcntl.h>\n\
         #include <ftw.h>\n\
         #include <inttypes.h>\n\
         #include <limits.h>\n\
         #include <pthread.h>\n\
         #include <sched.h>\n\
         #include <signal.h>\n\
         #include <stdarg.h>\n\
         #include <stdint.h>\n\
         #include <stdio.h>\n\
         #include <stdlib.h>\n\
         #include <string.h>\n\
         #include <sys/stat.h>\n\
         #include <sys/syscall.h>\n\
         #include <sys/xattr.h>\n\
         #include <time.h>\n\
         #include <unistd.h>\n",
    );
    if p.chattr {
        out.push_str("#include <sys/ioctl.h>\n#include <linux/fs.h>\n");
    }
    let ns: Vec<String> = r.ns.iter().map(|n| format!("{n}ULL")).collect();
    writeln!(out).unwrap();
    writeln!(out, "#define VERB {}", lit(sig.verb.as_bytes())).unwrap();
    writeln!(out, "#define UNIT {}", lit(sig.unit.as_bytes())).unwrap();
    writeln!(out, "#define SEED {:#x}ULL", r.seed).unwrap();
    writeln!(out, "#define REPETITIONS {}", r.repetitions).unwrap();
    writeln!(out, "#define CLIENTS {}", r.clients.unwrap_or(1)).unwrap();
    writeln!(out, "#define CLIENTS_TEXT \"{}\"", r.clients.unwrap_or(1)).unwrap();
    writeln!(out, "#define CLIENT_DIRS {}", u8::from(r.clients.is_some())).unwrap();
    writeln!(out, "#define ROUNDS {}", sig.rounds).unwrap();
    // A run for a time: the clients loop over their work until it is up, after a warm-up.
    let (time_ns, warmup_ns) = r.time.map_or((0, 0), |(t, w)| (t.as_nanos(), w.as_nanos()));
    writeln!(out, "#define TIME_NS {time_ns}ULL").unwrap();
    writeln!(out, "#define WARMUP_NS {warmup_ns}ULL").unwrap();
    writeln!(out, "#define PHASES {}", sig.phases.len()).unwrap();
    writeln!(out, "#define SLOTS {}", sig.slots.len().max(1)).unwrap();
    writeln!(out, "#define BUF_LEN {}", p.buf_len).unwrap();
    writeln!(out, "#define PATH_LEN 8192").unwrap();
    writeln!(out, "static const uint64_t NS[] = {{ {} }};", ns.join(", ")).unwrap();
    writeln!(out, "#define N_NS {}", r.ns.len()).unwrap();
    // The signature file verbatim (`./repro --signature`): the header's copy is a comment,
    // where `*/` cannot stand.
    out.push_str("static const char SIGNATURE_TEXT[] =");
    let bytes = sig.source.as_bytes();
    if bytes.is_empty() {
        out.push_str(" \"\"");
    }
    for piece in bytes.split_inclusive(|&b| b == b'\n') {
        for chunk in piece.chunks(64) {
            write!(out, "\n\t{}", lit(chunk)).unwrap();
        }
    }
    out.push_str(";\n");
    out.push_str(STRUCTS);
}

/// Shared declarations: a client, the run's failure state.
const STRUCTS: &str = r#"
/* One client: its files, its descriptors (one per slot of the signature), the paths
 * of the step under way, the buffer calls write results into. */
struct client {
	int id;
	uint64_t n;
	const char *dir;
	int fd[SLOTS];
	char a[PATH_LEN], b[PATH_LEN];
	unsigned char buf[BUF_LEN];
	pthread_barrier_t *gate;
	struct timespec start, end; /* of the segment under way */
	uint64_t ops, passes; /* a run for a time: calls and whole passes done */
};

static volatile sig_atomic_t interrupted;
static int failed;
static int time_up; /* a run for a time: its time is up */

/* A run for a time counts each call (the main thread reads the counts as they go). */
#if TIME_NS
#define COUNT_OP(c) __atomic_store_n(&(c)->ops, (c)->ops + 1, __ATOMIC_RELAXED)
#else
#define COUNT_OP(c) ((void)(c))
#endif
static pthread_mutex_t failure_lock = PTHREAD_MUTEX_INITIALIZER;
static char failure[2 * PATH_LEN + 512];

static int stopping(void)
{
	return interrupted || __atomic_load_n(&failed, __ATOMIC_RELAXED);
}

/* Whether a phase stops: the run stops, or its time is up. */
static int halted(void)
{
	return stopping() || __atomic_load_n(&time_up, __ATOMIC_RELAXED);
}

/* The first failure of any client is the one reported; the others stop. */
static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&failure_lock);
	if (!failed) {
		va_start(ap, fmt);
		vsnprintf(failure, sizeof(failure), fmt, ap);
		va_end(ap);
		__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&failure_lock);
	return 0;
}

/* Whether a step's result is the one the signature expects: want 0 success, -1 any
 * result, else that errno. */
static int expect(struct client *c, long r, int e, int want, const char *want_name,
		  int line, const char *where, uint64_t i, const char *call, int paths)
{
	char at[128];

	if (want < 0 || (want == 0 && r >= 0) || (want > 0 && r < 0 && e == want))
		return 1;
	if (i)
		snprintf(at, sizeof(at), "phase `%s`, file %" PRIu64 " of %" PRIu64, where, i, c->n);
	else
		snprintf(at, sizeof(at), "%s", where);
	if (r >= 0)
		return fail("signature line %d: %s: %s(%s%s%s%s%s%s) returned %ld, expected %s",
			    line, at, call, paths ? "\"" : "", paths ? c->a : "", paths ? "\"" : "",
			    paths > 1 ? ", \"" : "", paths > 1 ? c->b : "", paths > 1 ? "\"" : "",
			    r, want_name);
	return fail("signature line %d: %s: %s(%s%s%s%s%s%s) failed: %s (errno %d), expected %s",
		    line, at, call, paths ? "\"" : "", paths ? c->a : "", paths ? "\"" : "",
		    paths > 1 ? ", \"" : "", paths > 1 ? c->b : "", paths > 1 ? "\"" : "",
		    strerror(e), e, want_name);
}
"#;

fn helpers(out: &mut String, p: &Parts<'_>) {
    if p.slots {
        out.push_str(
            r#"
/* A new descriptor in a slot. One still open there would need a close the signature
 * does not have: close it and stop, as sigbench does. Returns 0 when it did. */
static int keep(struct client *c, int slot, long r, const char *name)
{
	int old;

	if (r < 0)
		return 1;
	old = c->fd[slot];
	c->fd[slot] = (int)r;
	if (old < 0)
		return 1;
	close(old);
	return fail("slot `%s` is opened while it is still open: the signature needs a close before it", name);
}
"#,
        );
    }
    if p.mix64() {
        out.push_str(
            r#"
/* splitmix64: sigbench's {token} names and random data. */
static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}
"#,
        );
    }
    out.push_str(
        r#"
/* Path rendering: append to out, never past PATH_LEN. */
static void put(char *out, const char *s)
{
	size_t have = strlen(out);

	snprintf(out + have, PATH_LEN - have, "%s", s);
}
"#,
    );
    if p.decimal {
        out.push_str(
            r#"
static void put_u64(char *out, uint64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRIu64, v);
	put(out, s);
}
"#,
        );
    }
    if p.token {
        out.push_str(
            r#"
/* {token}: 8 hex digits per file, from the seed. */
static void put_token(char *out, uint64_t i)
{
	char s[12];

	snprintf(s, sizeof(s), "%08" PRIx32, (uint32_t)mix64(SEED ^ mix64(i)));
	put(out, s);
}
"#,
        );
    }
    if p.alpha {
        out.push_str(
            r#"
/* {alpha}: i in bijective base 26 (1 a, 26 z, 27 aa). */
static void put_alpha(char *out, uint64_t i)
{
	char s[16];
	int at = 15;

	s[at] = 0;
	if (i == 0)
		i = 1;
	while (i > 0) {
		i--;
		s[--at] = (char)('a' + i % 26);
		i /= 26;
	}
	put(out, s + at);
}
"#,
        );
    }
}

fn templates(out: &mut String, p: &Parts<'_>) {
    for (k, t) in p.templates.iter().enumerate() {
        if k == 0 && !p.file_name_used {
            continue;
        }
        writeln!(out, "\n/* `{}` */", comment(t.as_str())).unwrap();
        writeln!(
            out,
            "static void path_{k}(const struct client *c, uint64_t i, char *out)\n{{\n\t(void)c;\n\t(void)i;"
        )
        .unwrap();
        writeln!(out, "\tout[0] = 0;").unwrap();
        render_pieces(out, t);
        out.push_str("}\n");
    }
}

fn render_pieces(out: &mut String, t: &Template) {
    for piece in t.pieces() {
        match piece {
            Piece::Lit(b) => writeln!(out, "\tput(out, {});", lit(b)).unwrap(),
            Piece::Index => writeln!(out, "\tput_u64(out, i);").unwrap(),
            Piece::Count => writeln!(out, "\tput_u64(out, c->n);").unwrap(),
            Piece::Token => writeln!(out, "\tput_token(out, i);").unwrap(),
            Piece::Alpha => writeln!(out, "\tput_alpha(out, i);").unwrap(),
            Piece::Name => {
                // `{name}` is the file template, which never names itself.
                writeln!(out, "\t{{\n\t\tchar name[PATH_LEN];\n\n\t\tpath_0(c, i, name);\n\t\tput(out, name);\n\t}}").unwrap()
            }
        }
    }
}

fn data(out: &mut String, p: &Parts<'_>) {
    writeln!(out, "\n#define HAVE_DATA {}", u8::from(!p.data.is_empty())).unwrap();
    if p.data.is_empty() {
        return;
    }
    writeln!(
        out,
        "\n/* What the writes write, made once at start. */\nstatic unsigned char *data[{}];",
        p.data.len()
    )
    .unwrap();
    out.push_str("\nstatic int make_data(void)\n{\n\tsize_t k;\n\n");
    for (k, (pattern, len)) in p.data.iter().enumerate() {
        writeln!(
            out,
            "\tdata[{k}] = malloc({len} + 8);\n\tif (!data[{k}])\n\t\treturn -1;"
        )
        .unwrap();
        match pattern {
            Pattern::Zero => writeln!(out, "\tmemset(data[{k}], 0, {len});").unwrap(),
            Pattern::Byte(b) => writeln!(out, "\tmemset(data[{k}], {b:#04x}, {len});").unwrap(),
            Pattern::Text => writeln!(
                out,
                "\tfor (k = 0; k < {len}; k++) /* text */\n\t\tdata[{k}][k] = (unsigned char){}[k % {}];",
                lit(TEXT),
                TEXT.len()
            )
            .unwrap(),
            Pattern::Random => writeln!(
                out,
                "\t{{ /* random: splitmix64 from {RANDOM_SEED:#x}, 8 little-endian bytes a step */\n\t\tuint64_t s = {RANDOM_SEED:#x}ULL, v;\n\t\tint b;\n\n\t\tfor (k = 0; k < {len}; k += 8) {{\n\t\t\ts = mix64(s);\n\t\t\tfor (v = s, b = 0; b < 8; b++, v >>= 8)\n\t\t\t\tdata[{k}][k + b] = (unsigned char)v;\n\t\t}}\n\t}}"
            )
            .unwrap(),
        }
    }
    out.push_str("\t(void)k;\n\treturn 0;\n}\n");
}

/// The C call a step issues, its argument list after `syscall(`.
fn call_args(op: &Op, p: &Parts<'_>) -> String {
    let fd = |s: &usize| format!("c->fd[{s}]");
    let flags = || match op.flags() {
        Some((table, v)) => format!("{v:#x} /* {} */", flag_names(table, v)),
        None => "0".into(),
    };
    match op {
        Op::Open { call, mode, .. } => match call {
            measure::signature::step::OpenCall::Open => format!("c->a, {}, 0{mode:o}", flags()),
            measure::signature::step::OpenCall::Openat => {
                format!("AT_FDCWD, c->a, {}, 0{mode:o}", flags())
            }
            measure::signature::step::OpenCall::Creat => format!("c->a, 0{mode:o}"),
        },
        Op::Close { slot } | Op::Dup { slot, .. } | Op::FdSync { slot, .. } => fd(slot),
        Op::Fstat { slot } => format!("{}, c->buf", fd(slot)),
        Op::Write {
            slot,
            data,
            pattern,
        } => format!(
            "{}, data[{}], (size_t){}",
            fd(slot),
            p.data_index(*pattern, data.len()),
            data.len()
        ),
        Op::Pwrite {
            slot,
            data,
            pattern,
            offset,
        } => format!(
            "{}, data[{}], (size_t){}, (off_t){offset}",
            fd(slot),
            p.data_index(*pattern, data.len()),
            data.len()
        ),
        Op::Read { slot, size } => format!("{}, c->buf, (size_t){size}", fd(slot)),
        Op::Pread { slot, size, offset } => {
            format!("{}, c->buf, (size_t){size}, (off_t){offset}", fd(slot))
        }
        Op::Getdents64 { slot, size } => format!("{}, c->buf, (size_t){size}", fd(slot)),
        Op::SyncFileRange {
            slot, offset, size, ..
        } => format!("{}, (off_t){offset}, (off_t){size}, {}", fd(slot), flags()),
        Op::Sync => String::new(),
        Op::Rename { call, .. } => match call {
            measure::signature::step::RenameCall::Rename => "c->a, c->b".into(),
            measure::signature::step::RenameCall::Renameat => {
                "AT_FDCWD, c->a, AT_FDCWD, c->b".into()
            }
            measure::signature::step::RenameCall::Renameat2 => {
                format!("AT_FDCWD, c->a, AT_FDCWD, c->b, {}", flags())
            }
        },
        Op::Link { at: false, .. } | Op::Symlink { at: false, .. } => "c->a, c->b".into(),
        Op::Link { at: true, .. } => format!("AT_FDCWD, c->a, AT_FDCWD, c->b, {}", flags()),
        Op::Symlink { at: true, .. } => "c->a, AT_FDCWD, c->b".into(),
        Op::Unlink { .. } | Op::Rmdir { .. } => "c->a".into(),
        Op::Unlinkat { .. } => format!("AT_FDCWD, c->a, {}", flags()),
        Op::Mkdir {
            at: false, mode, ..
        } => format!("c->a, 0{mode:o}"),
        Op::Mkdir { at: true, mode, .. } => format!("AT_FDCWD, c->a, 0{mode:o}"),
        Op::Stat { call, mask, .. } => match call {
            measure::signature::step::StatCall::Stat
            | measure::signature::step::StatCall::Lstat => "c->a, c->buf".into(),
            measure::signature::step::StatCall::Fstatat => {
                format!("AT_FDCWD, c->a, c->buf, {}", flags())
            }
            measure::signature::step::StatCall::Statx => {
                format!("AT_FDCWD, c->a, {}, {mask:#x}, c->buf", flags())
            }
        },
        Op::Truncate { size, .. } => format!("c->a, (off_t){size}"),
        Op::Ftruncate { slot, size } => format!("{}, (off_t){size}", fd(slot)),
        Op::Fallocate {
            slot, offset, size, ..
        } => format!("{}, {}, (off_t){offset}, (off_t){size}", fd(slot), flags()),
        Op::Chmod {
            at: false, mode, ..
        } => format!("c->a, 0{mode:o}"),
        Op::Chmod { at: true, mode, .. } => format!("AT_FDCWD, c->a, 0{mode:o}"),
        Op::Fchmod { slot, mode } => format!("{}, 0{mode:o}", fd(slot)),
        Op::Chown { call, uid, gid, .. } => match call {
            measure::signature::step::ChownCall::Fchownat => {
                format!("AT_FDCWD, c->a, {uid}, {gid}, {}", flags())
            }
            _ => format!("c->a, {uid}, {gid}"),
        },
        Op::Fchown { slot, uid, gid } => format!("{}, {uid}, {gid}", fd(slot)),
        Op::Utimensat { slot: Some(s), .. } => format!("{}, NULL, NULL, {}", fd(s), flags()),
        Op::Utimensat { .. } => format!("AT_FDCWD, c->a, NULL, {}", flags()),
        Op::Access { at: false, .. } => format!("c->a, {}", flags()),
        Op::Access { at: true, .. } => format!("AT_FDCWD, c->a, {}", flags()),
        Op::Setxattr { name, value, .. } => format!(
            "c->a, {}, {}, (size_t){}, {}",
            lit(name.as_bytes()),
            lit(value),
            value.len(),
            flags()
        ),
        Op::Getxattr { name, .. } => format!(
            "c->a, {}, c->buf, (size_t){}",
            lit(name.as_bytes()),
            measure::signature::step::GETXATTR_LEN
        ),
        Op::Removexattr { name, .. } => format!("c->a, {}", lit(name.as_bytes())),
    }
}

/// One step: its paths rendered, its call, its result checked (and a descriptor kept).
fn step_c(out: &mut String, step: &Step, where_: &str, p: &Parts<'_>, sig_slots: &[String]) {
    let paths: Vec<&Template> = step.op.paths().into_iter().flatten().collect();
    let shown: Vec<String> = paths.iter().map(|t| comment(t.as_str())).collect();
    writeln!(
        out,
        "\t\t/* line {}: {}{}{} */",
        step.line,
        step.syscall,
        if shown.is_empty() { "" } else { " " },
        shown.join(" -> ")
    )
    .unwrap();
    for (t, buf) in paths.iter().zip(["c->a", "c->b"]) {
        writeln!(out, "\t\tpath_{}(c, i, {buf});", p.template_index(t)).unwrap();
    }
    let args = call_args(&step.op, p);
    let comma = if args.is_empty() { "" } else { ", " };
    writeln!(out, "\t\tr = syscall(SYS_{}{comma}{args});", step.syscall).unwrap();
    writeln!(out, "\t\te = errno;\n\t\tCOUNT_OP(c);").unwrap();
    let (want, want_name) = match step.expect {
        Expect::Ok => (0, "success".to_string()),
        Expect::Any => (-1, "any".to_string()),
        Expect::Errno(e) => (e.0, e.name()),
    };
    let check = format!(
        "expect(c, r, e, {want}, {}, {}, {}, i, {}, {})",
        lit(want_name.as_bytes()),
        step.line,
        lit(where_.as_bytes()),
        lit(step.syscall.as_bytes()),
        paths.len()
    );
    match &step.op {
        Op::Open { slot, .. } | Op::Dup { new_slot: slot, .. } => {
            writeln!(
                out,
                "\t\tkept = keep(c, {slot}, r, {});\n\t\tif (!{check} || !kept)\n\t\t\treturn -1;",
                lit(sig_slots[*slot].as_bytes())
            )
            .unwrap();
        }
        Op::Close { slot } => writeln!(
            out,
            "\t\tc->fd[{slot}] = -1;\n\t\tif (!{check})\n\t\t\treturn -1;"
        )
        .unwrap(),
        _ => writeln!(out, "\t\tif (!{check})\n\t\t\treturn -1;").unwrap(),
    }
}

fn opens(steps: &[Step]) -> bool {
    steps
        .iter()
        .any(|s| matches!(s.op, Op::Open { .. } | Op::Dup { .. }))
}

fn setup(out: &mut String, r: &Repro, p: &Parts<'_>) {
    let sig = &r.signature;
    out.push_str(
        "\n/* The untimed setup, in the client's directory: sub-directories, the files\n * populated, sync, the directory's fsync, the prelude. */\nstatic int setup(struct client *c)\n{\n\tlong r;\n\tint e;\n\tconst uint64_t i = 0;\n\n\t(void)c;\n",
    );
    if opens(&sig.prelude) {
        out.push_str("\tint kept;\n");
    }
    if sig.setup.populate.is_some() {
        out.push_str("\tuint64_t f;\n");
    }
    out.push('\n');
    for d in &sig.setup.mkdir {
        writeln!(
            out,
            "\tpath_{}(c, i, c->a);\n\tif (syscall(SYS_mkdir, c->a, 0755) < 0)\n\t\treturn fail(\"setup: mkdir %s: %s\", c->a, strerror(errno));",
            p.template_index(d)
        )
        .unwrap();
    }
    if let Some(pop) = &sig.setup.populate {
        out.push_str("\tfor (f = 1; f <= c->n; f++) {\n\t\tif (stopping())\n\t\t\treturn 0;\n\t\tpath_0(c, f, c->a);\n\t\tr = syscall(SYS_openat, AT_FDCWD, c->a, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);\n\t\tif (r < 0)\n\t\t\treturn fail(\"setup: creating %s: %s\", c->a, strerror(errno));\n");
        if !pop.data.is_empty() {
            let k = p.data_index(pop.pattern, pop.data.len());
            let len = pop.data.len();
            writeln!(out, "\t\tif (syscall(SYS_write, (int)r, data[{k}], (size_t){len}) != {len}) {{\n\t\t\te = errno;\n\t\t\tsyscall(SYS_close, (int)r);\n\t\t\treturn fail(\"setup: writing %s: %s\", c->a, strerror(e));\n\t\t}}").unwrap();
        }
        out.push_str("\t\tsyscall(SYS_close, (int)r);\n\t}\n");
    }
    if sig.setup.sync {
        out.push_str("\tsyscall(SYS_sync);\n");
    }
    if sig.setup.fsync_dir {
        out.push_str("\tr = syscall(SYS_openat, AT_FDCWD, \".\", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);\n\tif (r < 0)\n\t\treturn fail(\"setup: opening the test directory: %s\", strerror(errno));\n\te = syscall(SYS_fsync, (int)r) < 0 ? errno : 0;\n\tsyscall(SYS_close, (int)r);\n\tif (e)\n\t\treturn fail(\"setup: fsync of the test directory: %s\", strerror(e));\n");
    }
    if !sig.prelude.is_empty() {
        out.push_str("\t/* the prelude, once */\n\tdo {\n");
        for step in &sig.prelude {
            step_c(out, step, "prelude", p, &sig.slots);
        }
        out.push_str("\t} while (0);\n");
    }
    out.push_str("\t(void)r;\n\t(void)e;\n\t(void)i;\n\treturn 0;\n}\n");
}

fn phase_fn(out: &mut String, k: usize, phase: &Phase, p: &Parts<'_>, slots: &[String]) {
    let which = match phase.select {
        Select::All => "every file".to_string(),
        Select::Every(m) => format!("every {m}th file"),
        Select::AllButEvery(m) => format!("all files but every {m}th"),
    };
    let repeat = if phase.repeat > 1 {
        format!(", {} times each", phase.repeat)
    } else {
        String::new()
    };
    writeln!(
        out,
        "\n/* Phase {} `{}`: {which}{repeat}. Timed. */\nstatic int phase_{k}(struct client *c, uint64_t first, uint64_t last)\n{{\n\tuint64_t i;\n\tlong r;\n\tint e;",
        k + 1,
        comment(&phase.name)
    )
    .unwrap();
    if opens(&phase.steps) {
        out.push_str("\tint kept;\n");
    }
    if phase.repeat > 1 {
        out.push_str("\tunsigned rep;\n");
    }
    out.push_str("\n\tfor (i = first; i <= last; i++) {\n");
    match phase.select {
        Select::All => {}
        Select::Every(m) => writeln!(out, "\t\tif (i % {m} != 0)\n\t\t\tcontinue;").unwrap(),
        Select::AllButEvery(m) => writeln!(out, "\t\tif (i % {m} == 0)\n\t\t\tcontinue;").unwrap(),
    }
    out.push_str("\t\tif (halted())\n\t\t\treturn -1;\n");
    let mut body = String::new();
    for step in &phase.steps {
        step_c(&mut body, step, &phase.name, p, slots);
    }
    if phase.repeat > 1 {
        writeln!(out, "\t\tfor (rep = 0; rep < {}; rep++) {{", phase.repeat).unwrap();
        for line in body.lines() {
            writeln!(out, "\t{line}").unwrap();
        }
        out.push_str("\t\t}\n");
    } else {
        out.push_str(&body);
    }
    out.push_str("\t}\n\treturn 0;\n}\n");
}

fn directories(out: &mut String, r: &Repro) {
    let sig = &r.signature;
    writeln!(
        out,
        "\nstatic int (*const phase[PHASES])(struct client *, uint64_t, uint64_t) = {{ {} }};",
        (0..sig.phases.len())
            .map(|k| format!("phase_{k}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
    .unwrap();
    for (k, d) in r.dirs.iter().enumerate() {
        writeln!(
            out,
            "\n/* Directory `{}`: its properties, as sigbench sets them. */\nstatic int props_{k}(const char *path)\n{{\n\t(void)path;",
            comment(&d.text)
        )
        .unwrap();
        for prop in &d.props {
            match prop {
                Prop::Compression(v) => writeln!(
                    out,
                    "\tif (setxattr(path, \"btrfs.compression\", {}, {}, 0) < 0)\n\t\treturn fail(\"%s: btrfs.compression={}: %s\", path, strerror(errno));",
                    lit(v.as_bytes()),
                    v.len(),
                    comment(v).replace('%', "%%").replace('"', "'")
                )
                .unwrap(),
                Prop::Xattr { name, value } => writeln!(
                    out,
                    "\tif (setxattr(path, {}, {}, {}, 0) < 0)\n\t\treturn fail(\"%s: setxattr %s: %s\", path, {}, strerror(errno));",
                    lit(name.as_bytes()),
                    lit(value.as_bytes()),
                    value.len(),
                    lit(name.as_bytes())
                )
                .unwrap(),
                Prop::Chattr { letters, flags } => writeln!(
                    out,
                    "\t{{ /* chattr +{} */\n\t\tint f, fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ok;\n\n\t\tok = fd >= 0 && ioctl(fd, FS_IOC_GETFLAGS, &f) == 0;\n\t\tf |= {flags:#x};\n\t\tok = ok && ioctl(fd, FS_IOC_SETFLAGS, &f) == 0;\n\t\tif (fd >= 0)\n\t\t\tclose(fd);\n\t\tif (!ok)\n\t\t\treturn fail(\"%s: chattr: %s\", path, strerror(errno));\n\t}}",
                    comment(letters)
                )
                .unwrap(),
            }
        }
        out.push_str("\treturn 1;\n}\n");
    }
    out.push_str("\nstatic const struct dir {\n\tconst char *name;\n\tconst char *spec;\n\tint (*props)(const char *path);\n} dirs[] = {\n");
    for (k, d) in r.dirs.iter().enumerate() {
        writeln!(
            out,
            "\t{{ {}, {}, props_{k} }},",
            lit(d.name.as_bytes()),
            lit(d.text.as_bytes())
        )
        .unwrap();
    }
    out.push_str("};\n#define N_DIRS (sizeof(dirs) / sizeof(dirs[0]))\n");
}

/// The driver: argument checks, the cases, the clients, the times, the cleanup.
const DRIVER: &str = include_str!("driver.c");

#[cfg(test)]
mod tests {
    use super::*;
    use measure::signature::Signature;
    use measure::testbed::{DirSpec, Fs};

    #[test]
    fn literals_escape_what_c_would_read_otherwise() {
        assert_eq!(lit(b"file_1"), "\"file_1\"");
        assert_eq!(lit(b"a\"b\\c??=d"), "\"a\\\"b\\\\c\\?\\?=d\"");
        assert_eq!(lit(b"\n\xff7"), "\"\\012\\3777\"");
    }

    #[test]
    fn comments_cannot_be_closed_or_nested_by_their_text() {
        assert_eq!(comment("a */ b /* c"), "a * / b / * c");
        assert_eq!(comment("x???/"), "x? ? ?/");
        assert!(!comment("x\u{1b}[2J").contains('\u{1b}'));
    }

    fn program_of(text: &str) -> String {
        let sig = Signature::parse(text, "t.toml").unwrap();
        let dirs = vec![DirSpec::parse("d", Fs::Ext4).unwrap()];
        super::super::Repro::new(sig, Fs::Ext4, dirs)
            .unwrap()
            .c_source()
    }

    #[test]
    fn steps_become_their_syscalls_with_flags_named() {
        let c = program_of(
            r#"format = 1
name = "t"
file = "f{i}"
[[phase]]
name = "w"
steps = [
  { op = "openat", path = "{name}", flags = "O_WRONLY|O_CREAT", mode = 0o600, slot = "s" },
  { op = "pwrite", slot = "s", size = 10, offset = 4096, pattern = "text" },
  { op = "fsync", slot = "s" },
  { op = "close", slot = "s" },
  { op = "renameat2", from = "{name}", to = "x/{name}", flags = "RENAME_NOREPLACE", expect = "ENOENT" },
]"#,
        );
        assert!(
            c.contains("syscall(SYS_openat, AT_FDCWD, c->a, 0x41 /* O_WRONLY|O_CREAT */, 0600)"),
            "{c}"
        );
        assert!(c.contains("syscall(SYS_pwrite64, c->fd[0], data[0], (size_t)10, (off_t)4096)"));
        assert!(c.contains("syscall(SYS_fsync, c->fd[0])"));
        assert!(c.contains("0x1 /* RENAME_NOREPLACE */"));
        assert!(c.contains("expect(c, r, e, 2, \"ENOENT\""));
        // Only what is used: no token, alpha or random helpers.
        assert!(!c.contains("put_token") && !c.contains("put_alpha") && !c.contains("mix64"));
        assert!(c.contains("put_u64"));
    }

    #[test]
    fn selections_repeats_and_rounds_are_in_the_loops() {
        let c = program_of(
            r#"format = 1
name = "t"
file = "{alpha}-{token}"
rounds = 3
[[phase]]
name = "a"
select = "every:4"
repeat = 2
steps = [{ op = "stat", path = "{name}" }]
[[phase]]
name = "b"
select = "all-but-every:1000"
steps = [{ op = "unlink", path = "{name}" }]"#,
        );
        assert!(c.contains("if (i % 4 != 0)\n\t\t\tcontinue;"), "{c}");
        assert!(c.contains("for (rep = 0; rep < 2; rep++)"));
        assert!(c.contains("if (i % 1000 == 0)\n\t\t\tcontinue;"));
        assert!(c.contains("#define ROUNDS 3") && c.contains("#define PHASES 2"));
        assert!(c.contains("put_alpha(out, i)") && c.contains("put_token(out, i)"));
    }
}
