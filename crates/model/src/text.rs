//! Plain text laid out for people: paragraphs wrapped at a width (a C file's comments, a
//! mail's lines), bytes (a digest) as hexadecimal digits and a digest's head.

/// `bytes` as lower-case hexadecimal, two digits a byte (a digest in a name or a document).
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(2 * bytes.len());
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The first `chars` characters of `s` (a digest shortened for people): cut at a
/// character, never inside one — a digest read from a document may be any text.
pub fn head(s: &str, chars: usize) -> &str {
    s.char_indices().nth(chars).map_or(s, |(i, _)| &s[..i])
}

/// `text` in lines of at most `width` columns where its words allow (a longer word is a
/// line of its own); an empty text is one empty line.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let last = lines.last_mut().expect("one line at least");
        if !last.is_empty() && last.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_is_cut_at_a_character() {
        assert_eq!(head("d66f1794483ccb5a", 12), "d66f1794483c");
        assert_eq!(head("abc", 12), "abc");
        assert_eq!(head("aaaaaaaaaaaéé", 12), "aaaaaaaaaaaé");
    }

    #[test]
    fn bytes_are_two_hex_digits_each() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn prose_wraps_at_its_width() {
        let lines = wrap("one two three four five six", 9);
        assert_eq!(lines, ["one two", "three", "four five", "six"]);
        assert_eq!(wrap("", 10), [""]);
        assert_eq!(
            wrap("averyveryverylongword x", 5),
            ["averyveryverylongword", "x"]
        );
    }
}
