//! Name templates: how a signature names the file it works on for file index `i`.
//!
//! A template is parsed once, when the signature is loaded, and rendered into a reused
//! buffer inside the timed window, so rendering never allocates. Validation happens at
//! parse time: a template can only name things inside the test directory.

use crate::sys::CPath;
use model::random::mix64;
use std::fmt;

/// The variables a template may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Var {
    /// `{i}`: the file index, 1-based.
    Index,
    /// `{n}`: the number of files in the case.
    Count,
    /// `{name}`: the signature's per-file name template, rendered for this `i`.
    Name,
    /// `{token}`: 8 hex digits, random per file but reproducible from the run's seed
    /// (rpm's `;5f3a2b1c` suffixes).
    Token,
    /// `{alpha}`: `i` in bijective base 26: a, b, …, z, aa, ab, … (the LKP churn naming).
    Alpha,
}

/// One piece of a template as `Template::pieces` gives it: literal bytes or a variable,
/// rendered as `render` does (`{token}`: `token`, `{alpha}`: `alpha`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    Lit(&'a [u8]),
    /// `{i}`, decimal.
    Index,
    /// `{n}`, decimal.
    Count,
    /// `{name}`: the signature's file template.
    Name,
    Token,
    Alpha,
}

#[derive(Clone, Debug)]
enum Seg {
    Lit(Vec<u8>),
    Var(Var),
}

/// A parsed name template such as `{name}-RPMDELETE`.
#[derive(Clone, Debug)]
pub struct Template {
    text: String,
    segs: Vec<Seg>,
}

/// Values the variables take for one file.
#[derive(Clone, Copy)]
pub struct Vars<'a> {
    pub i: u64,
    pub n: u64,
    pub seed: u64,
    /// What `{name}` expands to.
    pub name: &'a Template,
}

impl Template {
    /// Parse `text`. Paths must be relative and stay inside the test directory.
    pub fn parse(text: &str) -> Result<Template, String> {
        if text.split('/').any(|c| c == "..") {
            return Err(format!(
                "`{text}` leaves the test directory (`..` is not allowed)"
            ));
        }
        Template::parse_link_target(text)
    }

    /// Parse a symlink target: relative, but `..` is allowed (the caller checks that it
    /// does not climb above the test directory).
    pub fn parse_link_target(text: &str) -> Result<Template, String> {
        if text.is_empty() {
            return Err("empty path".into());
        }
        if text.starts_with('/') {
            return Err(format!(
                "`{text}` is absolute: paths are relative to the test directory"
            ));
        }
        if text.bytes().any(|b| b == 0) {
            return Err(format!("`{text}` contains a NUL byte"));
        }
        if text.len() > super::limits::MAX_PATH_LEN {
            return Err(format!(
                "a path of {} characters is over the limit of {}",
                text.len(),
                super::limits::MAX_PATH_LEN
            ));
        }
        let depth = text
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .count();
        if depth > super::limits::MAX_PATH_DEPTH {
            return Err(format!(
                "`{text}` has {depth} components, over the limit of {}",
                super::limits::MAX_PATH_DEPTH
            ));
        }
        let mut segs = Vec::new();
        let mut lit = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            lit.extend_from_slice(&rest.as_bytes()[..open]);
            let after = &rest[open + 1..];
            let close = after
                .find('}')
                .ok_or_else(|| format!("`{text}`: `{{` without a closing `}}`"))?;
            let var = match &after[..close] {
                "i" => Var::Index,
                "n" => Var::Count,
                "name" => Var::Name,
                "token" => Var::Token,
                "alpha" => Var::Alpha,
                other => {
                    return Err(format!(
                        "`{text}`: unknown variable `{{{other}}}` (known: {{i}}, {{n}}, {{name}}, {{token}}, {{alpha}})"
                    ));
                }
            };
            if !lit.is_empty() {
                segs.push(Seg::Lit(std::mem::take(&mut lit)));
            }
            segs.push(Seg::Var(var));
            rest = &after[close + 1..];
        }
        if rest.contains('}') {
            return Err(format!("`{text}`: `}}` without an opening `{{`"));
        }
        lit.extend_from_slice(rest.as_bytes());
        if !lit.is_empty() {
            segs.push(Seg::Lit(lit));
        }
        Ok(Template {
            text: text.to_string(),
            segs,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The template's pieces in order, for whoever renders it elsewhere (a C reproducer).
    pub fn pieces(&self) -> impl Iterator<Item = Piece<'_>> {
        self.segs.iter().map(|s| match s {
            Seg::Lit(b) => Piece::Lit(b),
            Seg::Var(Var::Index) => Piece::Index,
            Seg::Var(Var::Count) => Piece::Count,
            Seg::Var(Var::Name) => Piece::Name,
            Seg::Var(Var::Token) => Piece::Token,
            Seg::Var(Var::Alpha) => Piece::Alpha,
        })
    }

    /// Whether the template depends on the file index (directly or through `{name}`).
    pub fn is_per_file(&self) -> bool {
        self.segs.iter().any(|s| {
            matches!(
                s,
                Seg::Var(Var::Index | Var::Name | Var::Token | Var::Alpha)
            )
        })
    }

    /// Whether the template refers to `{name}`.
    pub fn uses_name(&self) -> bool {
        self.segs.iter().any(|s| matches!(s, Seg::Var(Var::Name)))
    }

    /// Number of directory levels below the test directory the path's parent sits at,
    /// used to check that a symlink target does not climb out: the components before the
    /// last, `.` and empty ones (`./up`, `a//x`) not counted.
    pub fn depth(&self) -> usize {
        let parts: Vec<&str> = self.text.split('/').collect();
        parts[..parts.len().saturating_sub(1)]
            .iter()
            .filter(|c| !c.is_empty() && **c != ".")
            .count()
    }

    /// Append the rendered template to `out`. Inlined, so each copy of the executor's
    /// loop holds it (`exec::steps::LAYOUTS`).
    #[inline(always)]
    pub fn render(&self, vars: &Vars<'_>, out: &mut CPath) {
        for seg in &self.segs {
            match seg {
                // The name template itself never contains `{name}` (checked at load), so
                // it renders without recursion: inlined too.
                Seg::Var(Var::Name) => vars.name.render_name(vars, out),
                seg => push_seg(seg, vars, out),
            }
        }
    }

    /// The name template rendered (it holds no `{name}`; one there would add nothing).
    #[inline(always)]
    fn render_name(&self, vars: &Vars<'_>, out: &mut CPath) {
        for seg in &self.segs {
            push_seg(seg, vars, out);
        }
    }

    /// Render into a fresh string (for messages and tests, never in the timed window).
    pub fn render_string(&self, vars: &Vars<'_>) -> String {
        let mut p = CPath::default();
        self.render(vars, &mut p);
        p.display()
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// One segment other than `{name}` appended to `out` (`{name}` adds nothing here).
#[inline(always)]
fn push_seg(seg: &Seg, vars: &Vars<'_>, out: &mut CPath) {
    match seg {
        Seg::Lit(b) => out.push(b),
        Seg::Var(Var::Index) => push_decimal(out, vars.i),
        Seg::Var(Var::Count) => push_decimal(out, vars.n),
        Seg::Var(Var::Name) => {}
        Seg::Var(Var::Token) => push_token(out, vars.seed, vars.i),
        Seg::Var(Var::Alpha) => push_alpha(out, vars.i),
    }
}

fn push_decimal(out: &mut CPath, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.push(&digits[at..]);
}

fn push_token(out: &mut CPath, seed: u64, i: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let v = mix64(seed ^ mix64(i)) as u32;
    let mut hex = [0u8; 8];
    for (k, h) in hex.iter_mut().enumerate() {
        *h = HEX[((v >> (28 - 4 * k)) & 0xf) as usize];
    }
    out.push(&hex);
}

fn push_alpha(out: &mut CPath, i: u64) {
    // Bijective base 26 of i (i >= 1): 1 -> a, 26 -> z, 27 -> aa.
    let mut letters = [0u8; 16];
    let mut at = letters.len();
    let mut v = i.max(1);
    while v > 0 {
        v -= 1;
        at -= 1;
        letters[at] = b'a' + (v % 26) as u8;
        v /= 26;
    }
    out.push(&letters[at..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(t: &str, i: u64) -> String {
        let name = Template::parse("file_{i}").unwrap();
        let t = Template::parse(t).unwrap();
        t.render_string(&Vars {
            i,
            n: 250,
            seed: 7,
            name: &name,
        })
    }

    #[test]
    fn renders_variables() {
        assert_eq!(render("{name}-RPMDELETE", 17), "file_17-RPMDELETE");
        assert_eq!(render("d/{i}of{n}", 3), "d/3of250");
        assert_eq!(render("plain", 3), "plain");
    }

    #[test]
    fn alpha_is_bijective_base_26() {
        assert_eq!(render("{alpha}", 1), "a");
        assert_eq!(render("{alpha}", 26), "z");
        assert_eq!(render("{alpha}", 27), "aa");
        assert_eq!(render("{alpha}", 52), "az");
        assert_eq!(render("{alpha}", 702), "zz");
        assert_eq!(render("{alpha}", 703), "aaa");
    }

    #[test]
    fn tokens_are_stable_hex_and_differ_per_file() {
        let a = render("{token}", 1);
        assert_eq!(a.len(), 8);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(a, render("{token}", 1));
        assert_ne!(a, render("{token}", 2));
    }

    #[test]
    fn rejects_escapes_and_bad_syntax() {
        assert!(Template::parse("/etc/passwd").is_err());
        assert!(Template::parse("../x").is_err());
        assert!(Template::parse("a/../../x").is_err());
        assert!(Template::parse("{bogus}").is_err());
        assert!(Template::parse("{i").is_err());
        assert!(Template::parse("i}").is_err());
        assert!(Template::parse("").is_err());
        assert!(Template::parse("a/./b..c").is_ok());
    }

    #[test]
    fn knows_what_it_depends_on() {
        assert!(Template::parse("{name}.dpkg-new").unwrap().is_per_file());
        assert!(Template::parse("{name}").unwrap().uses_name());
        assert!(!Template::parse("foo-{n}").unwrap().is_per_file());
        assert_eq!(Template::parse("a/b/c").unwrap().depth(), 2);
        // Issue 56: `.` and empty components are no levels.
        assert_eq!(Template::parse("./up").unwrap().depth(), 0);
        assert_eq!(Template::parse("a//x").unwrap().depth(), 1);
    }
}
