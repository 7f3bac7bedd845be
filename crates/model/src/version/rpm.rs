//! rpm's version ordering (rpmvercmp, over `[EPOCH:]VERSION-RELEASE`), and pacman's
//! (`vercmp`, over `[EPOCH:]PKGVER-PKGREL`), which grew out of it and differs at the edges.
//!
//! Both walk the two strings as segments of digits or of letters, skipping any other
//! characters as separators; digit segments compare as numbers (leading zeros ignored),
//! letter segments as text, and a digit segment is newer than a letter one. They differ:
//! - rpm: `~` sorts before everything, even the end (`1.0~rc1 < 1.0`); `^` sorts after the
//!   end but before anything else (`1.0 < 1.0^git1 < 1.0.1`); a string with segments left
//!   is newer (`1.0 < 1.0a`).
//! - pacman: no `~` or `^`; a longer run of separators is newer (`1.0 < 1..0`); at the
//!   end, a remaining letter segment is older than nothing (`1.0a < 1.0 < 1.0.1`).

use std::cmp::Ordering;

/// Whose rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rules {
    Rpm,
    Pacman,
}

fn segment(s: &[u8], digits: bool) -> usize {
    s.iter()
        .position(|c| {
            if digits {
                !c.is_ascii_digit()
            } else {
                !c.is_ascii_alphabetic()
            }
        })
        .unwrap_or(s.len())
}

fn special(c: u8, rules: Rules) -> bool {
    rules == Rules::Rpm && (c == b'~' || c == b'^')
}

/// Compare two version (or release) strings, without epochs.
pub fn vercmp(a: &str, b: &str, rules: Rules) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    let (mut one, mut two) = (a.as_bytes(), b.as_bytes());
    loop {
        if rules == Rules::Pacman && (one.is_empty() || two.is_empty()) {
            // pacman stops before skipping what separates the last segments.
            break;
        }
        let skip = |s: &[u8]| {
            s.iter()
                .position(|&c| c.is_ascii_alphanumeric() || special(c, rules))
                .unwrap_or(s.len())
        };
        let (sa, sb) = (skip(one), skip(two));
        if rules == Rules::Pacman && sa != sb {
            return sa.cmp(&sb);
        }
        one = &one[sa..];
        two = &two[sb..];
        let (x, y) = (one.first().copied(), two.first().copied());
        // rpm's marks: `~` before anything, the end included; `^` after the end and
        // before anything else. Where one side has the mark, the ranks decide.
        let mark = [b'~', b'^']
            .into_iter()
            .find(|m| rules == Rules::Rpm && (x == Some(*m) || y == Some(*m)));
        if let Some(m) = mark {
            let rank = |c: Option<u8>| match c {
                Some(c) if c == m => u8::from(m == b'^'),
                None if m == b'^' => 0,
                _ => 2,
            };
            match rank(x).cmp(&rank(y)) {
                Ordering::Equal => {
                    one = &one[1..];
                    two = &two[1..];
                    continue;
                }
                o => return o,
            }
        }
        let (Some(x), Some(_)) = (x, y) else {
            break;
        };
        let digits = x.is_ascii_digit();
        let (la, lb) = (segment(one, digits), segment(two, digits));
        if lb == 0 {
            // A number against letters: the number is newer.
            return if digits {
                Ordering::Greater
            } else {
                Ordering::Less
            };
        }
        let (mut p, mut q) = (&one[..la], &two[..lb]);
        if digits {
            let zeros = |s: &[u8]| s.iter().take_while(|&&c| c == b'0').count();
            p = &p[zeros(p)..];
            q = &q[zeros(q)..];
            match p.len().cmp(&q.len()) {
                Ordering::Equal => {}
                o => return o,
            }
        }
        match p.cmp(q) {
            Ordering::Equal => {}
            o => return o,
        }
        one = &one[la..];
        two = &two[lb..];
    }
    match (one.first(), two.first()) {
        (None, None) => Ordering::Equal,
        _ if rules == Rules::Rpm => {
            if one.is_empty() {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (None, Some(c)) if !c.is_ascii_alphabetic() => Ordering::Less,
        (Some(c), _) if c.is_ascii_alphabetic() => Ordering::Less,
        _ => Ordering::Greater,
    }
}

/// `[EPOCH:]VERSION[-RELEASE]` split as rpm and pacman do.
fn evr(v: &str) -> (u64, &str, Option<&str>) {
    let (epoch, rest) = match v.split_once(':') {
        Some((e, r)) if !e.is_empty() && e.bytes().all(|c| c.is_ascii_digit()) => {
            (e.parse().unwrap_or(u64::MAX), r)
        }
        _ => (0, v),
    };
    match rest.rsplit_once('-') {
        Some((ver, rel)) => (epoch, ver, Some(rel)),
        None => (epoch, rest, None),
    }
}

/// Compare two `[EPOCH:]VERSION-RELEASE` strings (rpm) or `[EPOCH:]PKGVER-PKGREL` (pacman).
/// A missing release compares equal to any (both tools' rule).
pub fn compare(a: &str, b: &str, rules: Rules) -> Ordering {
    let (ea, va, ra) = evr(a);
    let (eb, vb, rb) = evr(b);
    ea.cmp(&eb)
        .then_with(|| vercmp(va, vb, rules))
        .then_with(|| match (ra, rb) {
            (Some(x), Some(y)) => vercmp(x, y, rules),
            _ => Ordering::Equal,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::*;

    #[test]
    fn orders_as_rpm_does() {
        // rpm's own test suite (rpmvercmp.at) gives the same answers.
        for (a, b, want) in [
            ("1.0", "1.0", Equal),
            ("1.0", "2.0", Less),
            ("2.0.1", "2.0", Greater),
            ("2.0.1a", "2.0.1", Greater),
            ("5.5p1", "5.5p2", Less),
            ("5.5p10", "5.5p1", Greater),
            ("10xyz", "10.1xyz", Less),
            ("xyz10", "xyz10.1", Less),
            ("xyz.4", "8", Less),
            ("5.5p1", "5.6p1", Less),
            ("6.0.rc1", "6.0", Greater),
            ("10b2", "10a1", Greater),
            ("1.0aa", "1.0a", Greater),
            ("10.0001", "10.1", Equal),
            ("10.0039", "10.0041", Less),
            ("4.999.9", "5.0", Less),
            ("20101121", "20101122", Less),
            ("2_0", "2_0", Equal),
            ("2.0", "2_0", Equal),
            ("a", "a", Equal),
            ("+a", "_a", Equal),
            ("1.0~rc1", "1.0", Less),
            ("1.0~rc1", "1.0~rc2", Less),
            ("1.0~rc1~git123", "1.0~rc1", Less),
            ("1.0^", "1.0", Greater),
            ("1.0^git1", "1.0.1", Less),
            ("1.0^git1", "1.0^git2", Less),
            ("1.0^git1~pre", "1.0^git1", Less),
        ] {
            assert_eq!(vercmp(a, b, Rules::Rpm), want, "{a} vs {b}");
            assert_eq!(vercmp(b, a, Rules::Rpm), want.reverse(), "{b} vs {a}");
        }
    }

    #[test]
    fn orders_as_pacman_does() {
        // vercmp(8)'s examples: 1.0a < 1.0b < 1.0beta < 1.0p < 1.0pre < 1.0rc < 1.0 < 1.0.a < 1.0.1,
        // and 1 < 1.0 < 1.1 < 1.1.1 < 1.2 < 2.0 < 3.0.0.
        for chain in [
            &[
                "1.0a", "1.0b", "1.0beta", "1.0p", "1.0pre", "1.0rc", "1.0", "1.0.a", "1.0.1",
            ][..],
            &["1", "1.0", "1.1", "1.1.1", "1.2", "2.0", "3.0.0"][..],
        ] {
            for w in chain.windows(2) {
                assert_eq!(vercmp(w[0], w[1], Rules::Pacman), Less, "{w:?}");
                assert_eq!(vercmp(w[1], w[0], Rules::Pacman), Greater, "{w:?}");
            }
        }
        // Arch's kernel packages.
        for (a, b, want) in [
            ("6.12.1.arch1-1", "6.12.10.arch1-1", Less),
            ("6.12.1.arch1-1", "6.12.1.arch1-2", Less),
            ("6.12.1.arch2-1", "6.12.1.arch1-3", Greater),
            ("1:6.0.arch1-1", "6.12.arch1-1", Greater),
            ("6.12.1.arch1", "6.12.1.arch1-7", Equal),
            ("1.0", "1..0", Less),
        ] {
            assert_eq!(compare(a, b, Rules::Pacman), want, "{a} vs {b}");
        }
    }

    #[test]
    fn epochs_and_releases_as_rpm_splits_them() {
        for (a, b, want) in [
            ("6.11.4-300.fc41", "6.12.1-200.fc41", Less),
            ("6.12.1-200.fc41", "6.12.1-300.fc41", Less),
            ("1:6.1.0-1", "6.12.1-1", Greater),
            ("6.12.1-1.1", "6.12.1-1.1", Equal),
            ("6.12.1", "6.12.1-9", Equal),
            ("0:6.12.1-2", "6.12.1-2", Equal),
        ] {
            assert_eq!(compare(a, b, Rules::Rpm), want, "{a} vs {b}");
        }
    }
}
