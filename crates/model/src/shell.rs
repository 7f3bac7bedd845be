//! Commands printed for a person to copy: every word quoted for any POSIX shell (`sh`,
//! dash, bash, zsh), so pasting one runs exactly the command shown — a label
//! `w-$(touch x)` stays a label — and nothing raw reaches a terminal. No bash-only
//! syntax: dash reads bash's `$'…'` as a `$` and a single-quoted string that a `\'`
//! inside closes, and runs the rest of the word as commands.

/// `s` as one shell word: bare when it is made of safe characters only, else in single
/// quotes (a `'` as `'\''`). A hidden character ([`is_hidden`]: a control character but
/// the newline, a bidirectional one) leaves the quotes for `"$(printf '\ooo…')"` of its
/// bytes, so the command shows no raw control character and every POSIX shell reads the
/// word back byte for byte. A newline stays inside the quotes as it is (a command
/// substitution would drop it). An argument cannot hold a NUL; callers never pass one.
pub fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b))
    {
        return s.to_string();
    }
    let mut q = String::new();
    let mut quoted = false;
    let mut hidden = String::new();
    let flush = |q: &mut String, hidden: &mut String| {
        if !hidden.is_empty() {
            q.push_str("\"$(printf '");
            q.push_str(hidden);
            q.push_str("')\"");
            hidden.clear();
        }
    };
    for c in s.chars() {
        if is_hidden(c) && c != '\n' {
            if quoted {
                q.push('\'');
                quoted = false;
            }
            let mut b = [0; 4];
            for byte in c.encode_utf8(&mut b).bytes() {
                hidden.push_str(&format!("\\{byte:03o}"));
            }
            continue;
        }
        flush(&mut q, &mut hidden);
        if !quoted {
            q.push('\'');
            quoted = true;
        }
        if c == '\'' {
            q.push_str("'\\''");
        } else {
            q.push(c);
        }
    }
    flush(&mut q, &mut hidden);
    if quoted {
        q.push('\'');
    }
    if q.is_empty() {
        q.push_str("''");
    }
    q
}

/// The words as one command line, each quoted.
pub fn command<S: AsRef<str>>(words: &[S]) -> String {
    words
        .iter()
        .map(|w| quote(w.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A command to print for a person to paste, carried as its words (never as the line, so
/// no one splits a line back into words): one line (`Display`), or lines of a width
/// (`wrapped`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CommandLine(pub Vec<String>);

impl CommandLine {
    pub fn new<S: Into<String>>(words: impl IntoIterator<Item = S>) -> CommandLine {
        CommandLine(words.into_iter().map(Into::into).collect())
    }

    /// The command in lines of at most `width` columns for a shell to read as one: broken
    /// between words with ` \` and the next line indented by `indent`; a word longer than
    /// a line is cut into pieces each quoted on its own and joined by a `\` at the end of
    /// a line and no indent (the shell joins them back into the word). Never inside a
    /// quoted word, where a line break would be part of the word.
    pub fn wrapped(&self, width: usize, indent: usize) -> Vec<String> {
        let width = width.max(indent + 16);
        let pad = " ".repeat(indent);
        let mut lines: Vec<String> = Vec::new();
        let mut line = String::new();
        for (k, w) in self.0.iter().enumerate() {
            let q = quote(w);
            let room = |line: &String| width.saturating_sub(line.chars().count() + 2);
            if k > 0 {
                if q.chars().count() <= room(&line) {
                    line.push(' ');
                    line.push_str(&q);
                    continue;
                }
                line.push_str(" \\");
                lines.push(std::mem::take(&mut line));
                line.push_str(&pad);
            }
            if q.chars().count() <= width.saturating_sub(line.chars().count() + 2) {
                line.push_str(&q);
                continue;
            }
            // Too long for any line: pieces of the word, each quoted, that fit.
            let chars: Vec<char> = w.chars().collect();
            let mut at = 0;
            while at < chars.len() {
                let room = width.saturating_sub(line.chars().count() + 2).max(8);
                let mut take = (chars.len() - at).min(room);
                while take > 1
                    && quote(&chars[at..at + take].iter().collect::<String>())
                        .chars()
                        .count()
                        > room
                {
                    take -= 1;
                }
                line.push_str(&quote(&chars[at..at + take].iter().collect::<String>()));
                at += take;
                if at < chars.len() {
                    line.push('\\');
                    lines.push(std::mem::take(&mut line));
                }
            }
        }
        lines.push(line);
        lines
    }
}

impl std::fmt::Display for CommandLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&command(&self.0))
    }
}

/// `s` safe to print on a terminal line: control characters other than newline and tab
/// written as `\x{1b}`, `\r`… (a label cannot move the cursor, clear the screen or
/// overwrite what was printed before it).
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    escape_controls(s, &['\n', '\t'])
}

/// Whether `c` changes how text displays without showing itself: a control character, or
/// a bidirectional formatting one (U+202E makes `6.1.0-56` display as another release).
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every hidden character ([`is_hidden`]) but those in `keep` escaped as Rust
/// writes them.
pub fn escape_controls<'a>(s: &'a str, keep: &[char]) -> std::borrow::Cow<'a, str> {
    let escaped = |c: char| is_hidden(c) && !keep.contains(&c);
    if !s.chars().any(escaped) {
        return s.into();
    }
    s.chars()
        .map(|c| {
            if escaped(c) {
                c.escape_default().to_string().replace("\\u{", "\\x{")
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `shell` makes of `line`: its words (the shell runs nothing else: the words
    /// are arguments of printf).
    fn words_in(shell: &str, line: &str) -> Vec<String> {
        let out = std::process::Command::new(shell)
            .arg("-c")
            .arg(format!("printf '%s\\0' {line}"))
            .output()
            .unwrap();
        assert!(out.status.success());
        out.stdout
            .split(|&b| b == 0)
            .filter(|w| !w.is_empty())
            .map(|w| String::from_utf8(w.to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn quotes_for_the_shell() {
        assert_eq!(quote("btrfs,ext4"), "btrfs,ext4");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a\nb"), "'a\nb'");
        assert_eq!(quote("\x1b[2J'"), r#""$(printf '\033')"'[2J'\'''"#);
        assert_eq!(quote("a\tb"), r#"'a'"$(printf '\011')"'b'"#);
    }

    /// Every POSIX shell reads the words back and runs nothing: bash, and dash (`sh` on
    /// Debian), which read bash's old `$'\x01\'; touch …'` as commands.
    #[test]
    fn every_shell_reads_back_every_word_and_runs_nothing() {
        let pwned = "/tmp/sigbench-quote-pwned";
        let words = [
            "w-$(touch /tmp/sigbench-quote-pwned)",
            "`id`",
            "a b\nc",
            "it's \\ \"x\"",
            "\x1b]0;title\x07",
            "\x01'; touch /tmp/sigbench-quote-pwned; '",
            "ünï\u{202e}",
            "*",
            "",
            "$HOME",
            "tail\n",
        ];
        let line = command(&words);
        assert!(!line.chars().any(|c| is_hidden(c) && c != '\n'), "{line}");
        for shell in ["sh", "dash", "bash"] {
            assert_eq!(
                words_in(shell, &line),
                words
                    .iter()
                    .filter(|w| !w.is_empty())
                    .cloned()
                    .collect::<Vec<_>>(),
                "{shell}: {line}"
            );
        }
        assert!(!std::path::Path::new(pwned).exists());
    }

    /// A long command in lines of 40 columns reads back as the same words in every shell:
    /// breaks between words, a word longer than a line cut into quoted pieces.
    #[test]
    fn wrapped_commands_read_back_as_one() {
        let words = [
            "sigbench",
            "run",
            "/a/very/long/path/with spaces/and 'quotes'/to/a/signature/file.toml",
            "--label",
            "x\ty",
            "-n",
            "250",
            "--mount-opts",
            "compress=zstd:1,noatime",
        ];
        let c = CommandLine::new(words);
        let lines = c.wrapped(40, 4);
        assert!(lines.len() > 3, "{lines:?}");
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{lines:?}");
        for shell in ["dash", "bash"] {
            assert_eq!(
                words_in(shell, &lines.join("\n")),
                words,
                "{shell}: {lines:?}"
            );
        }
        assert_eq!(c.to_string(), command(&words));
    }

    #[test]
    fn printable_keeps_lines_and_escapes_the_rest() {
        assert_eq!(printable("a\tb\nc"), "a\tb\nc");
        assert_eq!(printable("x\x1b[31my\rz"), "x\\x{1b}[31my\\rz");
    }
}
