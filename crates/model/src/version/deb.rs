//! Debian version ordering (deb-version(7)), to sort `linux-image-*.deb` files oldest →
//! newest: epoch, then upstream version, then revision; each compared as alternating
//! non-digit parts (letters before non-letters, `~` before everything, even the end) and
//! numeric parts.

use std::cmp::Ordering;

fn order(c: Option<char>) -> i32 {
    match c {
        None => 0,
        Some('~') => -1,
        Some(c) if c.is_ascii_digit() => 0,
        Some(c) if c.is_ascii_alphabetic() => c as i32,
        Some(c) => c as i32 + 256,
    }
}

fn cmp_part(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a.chars().peekable(), b.chars().peekable());
    loop {
        // Non-digit prefix.
        loop {
            let (x, y) = (a.peek().copied(), b.peek().copied());
            let xd = x.is_none_or(|c| c.is_ascii_digit());
            let yd = y.is_none_or(|c| c.is_ascii_digit());
            if xd && yd {
                break;
            }
            let (ox, oy) = (
                order(x.filter(|c| !c.is_ascii_digit())),
                order(y.filter(|c| !c.is_ascii_digit())),
            );
            if ox != oy {
                return ox.cmp(&oy);
            }
            if !xd {
                a.next();
            }
            if !yd {
                b.next();
            }
        }
        // Numeric part.
        let num = |it: &mut std::iter::Peekable<std::str::Chars>| {
            let mut n: u128 = 0;
            while let Some(c) = it.peek().copied().filter(char::is_ascii_digit) {
                n = n.saturating_mul(10).saturating_add(c as u128 - '0' as u128);
                it.next();
            }
            n
        };
        let (x, y) = (num(&mut a), num(&mut b));
        if x != y {
            return x.cmp(&y);
        }
        if a.peek().is_none() && b.peek().is_none() {
            return Ordering::Equal;
        }
    }
}

fn split(v: &str) -> (u64, &str, &str) {
    let (epoch, rest) = match v.split_once(':') {
        Some((e, r)) if e.chars().all(|c| c.is_ascii_digit()) => (e.parse().unwrap_or(0), r),
        _ => (0, v),
    };
    match rest.rsplit_once('-') {
        Some((u, r)) => (epoch, u, r),
        None => (epoch, rest, ""),
    }
}

/// Compare two Debian version strings.
pub fn compare(a: &str, b: &str) -> Ordering {
    let (ea, ua, ra) = split(a);
    let (eb, ub, rb) = split(b);
    ea.cmp(&eb)
        .then_with(|| cmp_part(ua, ub))
        .then_with(|| cmp_part(ra, rb))
}

#[cfg(test)]
mod tests {
    use super::compare;
    use std::cmp::Ordering::*;

    #[test]
    fn orders_as_dpkg_does() {
        // dpkg --compare-versions gives the same answers.
        for (a, b, want) in [
            ("6.1.158-1", "6.1.158-1", Equal),
            ("6.1.153-1", "6.1.158-1", Less),
            ("6.1.99-1", "6.1.158-1", Less),
            ("6.12.117-1~deb12u1", "6.12.100-1~deb12u1", Greater),
            ("6.12.117-1~deb12u1", "6.12.117-1", Less),
            ("1.0~rc1", "1.0", Less),
            ("1:0.1", "2.0", Greater),
            ("1.0a", "1.0", Greater),
            ("1.0-2", "1.0-10", Less),
            ("6.1.158-1", "6.12.100-1~deb12u1", Less),
        ] {
            assert_eq!(compare(a, b), want, "{a} vs {b}");
        }
    }
}
