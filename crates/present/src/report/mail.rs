//! A report to mail: what a maintainer reads in their inbox, in the kernel test robot's
//! manner — a subject that says what moved and between what ("[REGRESSION] btrfs:
//! s3e-test3 update +48.5 % between A and B"), the answer first (the change per phase,
//! where the time went), the LKP table capped to what matters, the bisect with its
//! suspects and changelog lines, the environment stated plainly, how to reproduce it, and
//! the reproducer attached (`repro.c`). Plain text; every line of the message at most 72
//! columns (the attachment quoted-printable, the subject folded).

use super::answer::{answer_pair, lead, percent, regressed, what};
use super::compare::lkp_table;
use super::table::{VISIBLE_ROWS, capped};
use crate::repro::Reproducer;
use analyse::stats::compare::Comparison;
use model::clock::TimeBase;
use model::results::RunDocument;
use std::fmt::Write;

/// The width of every line of a mail.
pub const WIDTH: usize = 72;

/// What a mail tells: a comparison of a base and a new label (its first pair), a run of
/// the new side (the environment), the bisect that found it, how to reproduce it.
pub struct Telling<'a> {
    pub comparison: &'a Comparison,
    pub run: &'a RunDocument,
    pub bisect: Option<&'a search::bisect::Report>,
    pub reproducer: Option<&'a Reproducer>,
    /// sigbench commands that measure it again.
    pub commands: &'a [model::shell::CommandLine],
}

/// A mail: its subject, its body, and the files attached to it (name, text).
pub struct Mail {
    pub subject: String,
    pub body: String,
    pub attachments: Vec<(String, String)>,
}

/// The reproducer's file name in a mail and beside a report.
pub const REPRO_FILE: &str = "repro.c";

/// What a report says of the reproducer it links.
pub const REPRO_ABOUT: &str = "the reproducer: one C file, built with `cc -O2 -pthread`, run on an empty directory of the filesystem under test; no sigbench needed";

/// The longest label a subject names whole; a longer one is cut with `…` (the body names
/// it whole).
const SUBJECT_LABEL: usize = 32;

/// `s` at most `max` characters: cut with `…` at the end.
fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        s.chars().take(max - 1).chain(['…']).collect()
    }
}

/// The subject: "[REGRESSION] FS: SIGNATURE WHAT +X % between BASE and NEW" — labels cut
/// at [`SUBJECT_LABEL`] characters, so it stays under 130 whatever they are.
pub fn subject(t: &Telling) -> String {
    let c = t.comparison;
    let (base, new) = match c.pairs.first() {
        Some(p) => (cut(&p.base, SUBJECT_LABEL), cut(&p.other, SUBJECT_LABEL)),
        None => ("?".into(), "?".into()),
    };
    let (fs, sig) = (&t.run.testbed.fs, &t.run.signature.name);
    match c.pairs.first().and_then(lead) {
        Some(r) => format!(
            "[{}] {fs}: {sig} {} {} between {base} and {new}",
            if regressed(r) {
                "REGRESSION"
            } else {
                "IMPROVEMENT"
            },
            what(r),
            percent(r)
        ),
        None => format!("[NO CHANGE] {fs}: {sig} between {base} and {new}"),
    }
}

/// The environment, plainly: the clock, the machine, the filesystem and its options, the
/// plan.
fn environment(d: &RunDocument) -> Vec<(String, String)> {
    let clock = TimeBase::of(d.host.clock.as_ref(), d.host.emulated);
    let clock = match &clock {
        TimeBase::Icount { .. } => format!(
            "{clock}: instructions at 1 ns each in a QEMU TCG guest{}",
            if d.cases.iter().any(|c| c.cost.is_some()) {
                "; cost_ms prices them with the cost model"
            } else {
                ""
            }
        ),
        TimeBase::Emulated => format!("{clock}: times are not the hardware's"),
        TimeBase::Hardware => match &d.host.accelerator {
            Some(a) => format!("{clock} ({a} guest)"),
            None => clock.to_string(),
        },
    };
    let machine = format!("{} ({} CPUs)", d.host.cpu_model, d.host.cpus);
    super::watch::test_case(d, clock, machine)
}

/// The mail of `t`.
pub fn mail(t: &Telling) -> Mail {
    let c = t.comparison;
    let mut b = String::new();
    let p = c.pairs.first();
    match (p.and_then(lead), p) {
        (Some(r), Some(p)) => {
            let kind = if regressed(r) {
                "regression"
            } else {
                "improvement"
            };
            para(
                &mut b,
                &format!(
                    "sigbench measured a {} {kind} of {}'s {} ({}, {}) between {} and {} on {}.",
                    percent(r),
                    t.run.signature.name,
                    what(r),
                    r.metric,
                    r.case.short(),
                    p.base,
                    p.other,
                    t.run.testbed.fs
                ),
            );
        }
        (None, Some(p)) => para(
            &mut b,
            &format!(
                "sigbench measured no significant change of {}'s times between {} and {} on {}.",
                t.run.signature.name, p.base, p.other, t.run.testbed.fs
            ),
        ),
        _ => {}
    }
    if let Some(bi) = t.bisect {
        bisected(&mut b, bi);
    }
    if let Some(p) = p {
        for table in answer_pair(p) {
            b.push_str(&table.text_within(WIDTH));
            b.push('\n');
        }
        let rest = "(sigbench compare BASE NEW --all shows every row)";
        let mut lkp = capped(lkp_table(c, 0, false), VISIBLE_ROWS, rest);
        // The labels are said above: the columns stay narrow.
        lkp.headers[0].0 = "base ± %stddev".into();
        lkp.headers[3].0 = "new ± %stddev".into();
        b.push_str(&lkp.text_within(WIDTH));
        b.push('\n');
    }
    b.push_str("environment\n");
    for (k, v) in environment(t.run) {
        b.push_str(&hang(&format!("  {k}: {v}"), 6));
    }
    b.push('\n');
    let mut attachments = Vec::new();
    b.push_str("to reproduce\n");
    if let Some(r) = t.reproducer {
        if let Some(c) = r.file() {
            attachments.push((REPRO_FILE.to_string(), c));
        }
        let how = match r {
            Reproducer::C(_) => format!(
                "  the attached {REPRO_FILE}, without sigbench: {}",
                r.how(REPRO_FILE)
            ),
            Reproducer::Dbench(_) => format!("  {}", r.how("")),
        };
        b.push_str(&hang(&how, 4));
    }
    for cmd in t.commands {
        // Lines a shell reads as one command: never broken inside a quoted word.
        for l in cmd.wrapped(WIDTH - 2, 4) {
            b.push_str("  ");
            b.push_str(&l);
            b.push('\n');
        }
    }
    b.push_str("\n-- \nsigbench ");
    b.push_str(env!("CARGO_PKG_VERSION"));
    b.push('\n');
    Mail {
        subject: subject(t),
        body: fit(&b, WIDTH),
        attachments,
    }
}

/// The bisect's answer: the first bad step (or why there is none), its suspects and the
/// changelog lines, the steps.
fn bisected(b: &mut String, r: &search::bisect::Report) {
    match &r.first_bad {
        Some(f) => para(
            b,
            &format!(
                "Bisected over {} ({}): the first {} step is {f}.",
                r.what,
                r.outcome.metric,
                if r.outcome.improvement {
                    "improved"
                } else {
                    "bad"
                }
            ),
        ),
        None => para(
            b,
            &format!(
                "Bisected over {} ({}): no single first bad step{}.",
                r.what,
                r.outcome.metric,
                r.outcome
                    .doubt
                    .as_deref()
                    .map(|d| format!(" — {d}"))
                    .unwrap_or_default()
            ),
        ),
    }
    if !r.suspects.is_empty() {
        b.push_str("suspects, ranked before the bisect\n");
        for s in r.suspects.iter().take(5) {
            b.push_str(&hang(
                &format!(
                    "  {} {} ({}: +{:.2} ms)",
                    s.commit,
                    s.subject,
                    s.functions.join(", "),
                    s.added_ms
                ),
                4,
            ));
        }
        b.push('\n');
    }
    if !r.changelog.is_empty() {
        b.push_str("changelog lines that name them\n");
        for m in r.changelog.iter().take(5) {
            b.push_str(&hang(&format!("  {}: {}", m.version, m.line), 4));
        }
        b.push('\n');
    }
    b.push_str(&super::bisect::steps_table(r).text_within(WIDTH));
    b.push('\n');
}

/// `text` as a paragraph wrapped at the mail's width, and a blank line.
fn para(b: &mut String, text: &str) {
    for l in model::text::wrap(text, WIDTH) {
        b.push_str(&l);
        b.push('\n');
    }
    b.push('\n');
}

/// `line` wrapped at the mail's width, the lines after the first indented by `indent`.
fn hang(line: &str, indent: usize) -> String {
    let lead = line.len() - line.trim_start().len();
    let mut out = String::new();
    let words = model::text::wrap(line.trim_start(), WIDTH - indent.max(lead));
    for (k, l) in words.iter().enumerate() {
        let pad = if k == 0 { lead } else { indent };
        let _ = writeln!(out, "{}{l}", " ".repeat(pad));
    }
    out
}

/// Every line at most `width` columns: a longer one is wrapped at its spaces (its
/// continuation indented as it was, plus two), a word longer than the line cut.
pub fn fit(text: &str, width: usize) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if line.chars().count() <= width {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let indent = line.len() - line.trim_start().len() + 2;
        let mut first = true;
        let mut rest: Vec<char> = line.chars().collect();
        while !rest.is_empty() {
            let pad = if first { 0 } else { indent.min(width / 2) };
            let room = width - pad;
            let take = if rest.len() <= room {
                rest.len()
            } else {
                // At the last space that leaves something on this line, else cut.
                match rest[..room].iter().rposition(|c| *c == ' ') {
                    Some(k) if k > pad => k,
                    _ => room,
                }
            };
            let piece: String = rest[..take].iter().collect();
            out.push_str(&" ".repeat(pad));
            out.push_str(piece.trim_end());
            out.push('\n');
            rest.drain(..take);
            while rest.first() == Some(&' ') {
                rest.remove(0);
            }
            first = false;
        }
    }
    out
}

/// Quoted-printable (RFC 2045) with lines of at most `width` columns: text stays
/// readable, long lines get soft breaks (`=` at their end).
fn quoted_printable(text: &str, width: usize) -> String {
    let mut lines = Vec::new();
    for line in text.split('\n') {
        let mut out = String::new();
        let mut cur = String::new();
        let bytes = line.as_bytes();
        for (k, &byte) in bytes.iter().enumerate() {
            let last = k + 1 == bytes.len();
            let enc = match byte {
                b'=' => "=3D".to_string(),
                b' ' | b'\t' if last => format!("={byte:02X}"),
                0x20..=0x7e | b'\t' => (byte as char).to_string(),
                _ => format!("={byte:02X}"),
            };
            if cur.len() + enc.len() > width - 1 {
                out.push_str(&cur);
                out.push_str("=\n");
                cur.clear();
            }
            cur.push_str(&enc);
        }
        out.push_str(&cur);
        lines.push(out);
    }
    // The line break before the next boundary is the boundary's: a text ending in a
    // newline ends in one here too, and no more.
    lines.join("\n")
}

/// A header line folded at the mail's width (continuation lines start with a space); a
/// value with anything but printable ASCII is written as RFC 2047 encoded words
/// (`=?UTF-8?Q?…?=`, each at most 62 characters and never splitting a character).
fn header(name: &str, value: &str) -> String {
    let value = if value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        value.to_string()
    } else {
        encoded_words(value)
    };
    let mut out = String::new();
    let mut line = format!("{name}:");
    for word in value.split(' ') {
        if line.len() + 1 + word.len() > WIDTH && line.len() > name.len() + 1 {
            out.push_str(&line);
            out.push('\n');
            line = String::new();
        }
        line.push(' ');
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// `value` as RFC 2047 encoded words separated by spaces (Q encoding, UTF-8).
fn encoded_words(value: &str) -> String {
    const OPEN: &str = "=?UTF-8?Q?";
    // RFC 2047 allows 75; 62 keeps `Subject: WORD` within the mail's 72 columns.
    const MAX: usize = 62;
    let mut words = Vec::new();
    let mut w = String::from(OPEN);
    for c in value.chars() {
        let mut enc = String::new();
        let mut b = [0; 4];
        for &byte in c.encode_utf8(&mut b).as_bytes() {
            match byte {
                b' ' => enc.push('_'),
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'!' | b'*' | b'+' | b'-' | b'/' => {
                    enc.push(byte as char)
                }
                _ => enc.push_str(&format!("={byte:02X}")),
            }
        }
        if w.len() + enc.len() + 2 > MAX {
            w.push_str("?=");
            words.push(std::mem::replace(&mut w, String::from(OPEN)));
        }
        w.push_str(&enc);
    }
    w.push_str("?=");
    words.push(w);
    words.join(" ")
}

/// A MIME boundary found in none of `parts` (RFC 2046: a boundary must not occur in
/// what it encloses): a label or a signature line holding a fixed one closed the
/// multipart early and cut the attachment.
fn boundary(parts: &[&str]) -> String {
    (0u32..)
        .map(|k| format!("sigbench-part-{k:04}"))
        .find(|b| !parts.iter().any(|p| p.contains(b.as_str())))
        .expect("some boundary is absent")
}

impl Mail {
    /// The whole message (RFC 5322 with MIME): From, Date, the subject, the body as
    /// text/plain and each attachment as a text part with its file name,
    /// quoted-printable — ready for `sendmail -t` after a To: line, or to import into a
    /// mail client. `from`: the sender (`sigbench <root@host>`); `date`: RFC 5322's date
    /// of now.
    pub fn message(&self, from: &str, date: &str) -> String {
        let encoded: Vec<String> = self
            .attachments
            .iter()
            .map(|(_, text)| quoted_printable(text, WIDTH))
            .collect();
        let mut parts = vec![self.body.as_str()];
        parts.extend(encoded.iter().map(String::as_str));
        let boundary = boundary(&parts);
        let mut m = header("From", from);
        m.push_str(&header("Date", date));
        m.push_str(&header("Subject", &self.subject));
        m.push_str("MIME-Version: 1.0\n");
        if self.attachments.is_empty() {
            m.push_str("Content-Type: text/plain; charset=utf-8\n");
            m.push_str("Content-Transfer-Encoding: 8bit\n\n");
            m.push_str(&self.body);
            return m;
        }
        let _ = writeln!(
            m,
            "Content-Type: multipart/mixed; boundary=\"{boundary}\"\n"
        );
        let _ = writeln!(m, "--{boundary}");
        m.push_str("Content-Type: text/plain; charset=utf-8\n");
        m.push_str("Content-Transfer-Encoding: 8bit\n\n");
        m.push_str(&self.body);
        for ((name, _), text) in self.attachments.iter().zip(&encoded) {
            let _ = writeln!(m, "\n--{boundary}");
            let _ = writeln!(
                m,
                "Content-Type: text/plain; charset=utf-8; name=\"{name}\""
            );
            let _ = writeln!(m, "Content-Disposition: attachment; filename=\"{name}\"");
            m.push_str("Content-Transfer-Encoding: quoted-printable\n\n");
            m.push_str(text);
        }
        let _ = writeln!(m, "\n--{boundary}--");
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_wrapped_and_long_words_cut() {
        let text = format!("  {}\nshort\n{}\n", "word ".repeat(30), "x".repeat(100));
        let out = fit(&text, 72);
        assert!(out.lines().all(|l| l.chars().count() <= 72), "{out}");
        assert!(out.contains("\nshort\n"));
        assert_eq!(out.matches('x').count(), 100);
        assert_eq!(out.matches("word").count(), 30);
    }

    #[test]
    fn quoted_printable_keeps_text_readable_and_lines_short() {
        let text = format!("int a = 1;  \n{}\n", "y".repeat(200));
        let qp = quoted_printable(&text, 72);
        assert!(qp.lines().all(|l| l.len() <= 72), "{qp}");
        assert!(qp.starts_with("int a =3D 1; =20\n"), "{qp}");
        // Decoding gives the text back.
        let back = qp
            .replace("=\n", "")
            .replace("=3D", "=")
            .replace("=20", " ");
        assert_eq!(back, text);
    }

    /// Issue 56: a part holding the boundary a mail would use gets another one.
    #[test]
    fn the_boundary_is_in_no_part() {
        let m = Mail {
            subject: "s".into(),
            body: "a label sigbench-part-0000 here\n".into(),
            attachments: vec![("repro.c".into(), "/* sigbench-part-0001 */\n".into())],
        };
        let msg = m.message("sigbench <root@h>", "Fri, 27 Nov 2026 20:00:00 +0000");
        assert!(msg.contains("boundary=\"sigbench-part-0002\""), "{msg}");
        assert_eq!(msg.matches("\n--sigbench-part-0002").count(), 3, "{msg}");
        assert!(
            msg.starts_with("From: sigbench <root@h>\nDate: Fri, 27"),
            "{msg}"
        );
    }

    /// Non-ASCII in a header: RFC 2047 encoded words, folded, every line ≤ 72.
    #[test]
    fn a_subject_with_other_characters_is_encoded() {
        let h = header(
            "Subject",
            &format!("[REGRESSION] ext4 between ünï-{} and 6.1", "é".repeat(40)),
        );
        assert!(h.is_ascii() && h.contains("=?UTF-8?Q?"), "{h}");
        assert!(h.lines().all(|l| l.len() <= 72), "{h}");
        let words: Vec<&str> = h
            .split_whitespace()
            .filter(|w| w.starts_with("=?"))
            .collect();
        assert!(
            words.iter().all(|w| w.len() <= 75 && w.ends_with("?=")),
            "{h}"
        );
    }

    #[test]
    fn a_long_subject_is_folded() {
        let h = header("Subject", &"word ".repeat(30));
        assert!(h.lines().all(|l| l.len() <= 72), "{h}");
        assert!(h.lines().skip(1).all(|l| l.starts_with(' ')), "{h}");
    }
}
