//! Commands printed for a person to copy: every word quoted for a POSIX shell (bash's
//! `$'…'` where a word holds a control character), so pasting one runs exactly the
//! command shown — a label `w-$(touch x)` stays a label — and nothing raw reaches a
//! terminal.

/// `s` as one shell word: bare when it is made of safe characters only, else in single
/// quotes, else (a control character inside) as `$'…'` with the character escaped.
pub fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b))
    {
        return s.to_string();
    }
    if !s.chars().any(char::is_control) {
        return format!("'{}'", s.replace('\'', "'\\''"));
    }
    let mut q = String::from("$'");
    for c in s.chars() {
        match c {
            '\'' => q.push_str("\\'"),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            '\r' => q.push_str("\\r"),
            c if c.is_control() => {
                let mut b = [0; 4];
                for byte in c.encode_utf8(&mut b).bytes() {
                    q.push_str(&format!("\\x{byte:02x}"));
                }
            }
            c => q.push(c),
        }
    }
    q.push('\'');
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

    /// What bash makes of `line`: its words, one per line (bash runs nothing else: the
    /// words are arguments of printf).
    fn bash_words(line: &str) -> Vec<String> {
        let out = std::process::Command::new("bash")
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
        assert_eq!(quote("a\nb"), "$'a\\nb'");
        assert_eq!(quote("\x1b[2J'"), "$'\\x1b[2J\\''");
    }

    #[test]
    fn bash_reads_back_every_word_and_runs_nothing() {
        let words = [
            "w-$(touch /tmp/sigbench-quote-pwned)",
            "`id`",
            "a b\nc",
            "it's \\ \"x\"",
            "\x1b]0;title\x07",
            "ünï",
            "*",
            "",
            "$HOME",
        ];
        let line = command(&words);
        assert!(!line.chars().any(char::is_control), "{line}");
        assert_eq!(
            bash_words(&line),
            words
                .iter()
                .filter(|w| !w.is_empty())
                .cloned()
                .collect::<Vec<_>>()
        );
        assert!(!std::path::Path::new("/tmp/sigbench-quote-pwned").exists());
    }

    #[test]
    fn printable_keeps_lines_and_escapes_the_rest() {
        assert_eq!(printable("a\tb\nc"), "a\tb\nc");
        assert_eq!(printable("x\x1b[31my\rz"), "x\\x{1b}[31my\\rz");
    }
}
