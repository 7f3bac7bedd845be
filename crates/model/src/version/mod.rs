//! How kernels order: by the version their package format gives them (`deb.rs`: Debian's
//! deb-version(7); `rpm.rs`: rpm's rpmvercmp and pacman's vercmp, its descendant), and by
//! kernel release when nothing else is common to them.

use std::cmp::Ordering;

pub mod deb;
pub mod rpm;

/// Compare two kernel releases (`6.1.0-56-amd64`, `6.12.117+deb12-amd64`,
/// `6.12.1-300.fc41.x86_64`, `6.12.1-arch1-1`): numbers as numbers, the rest as text —
/// Debian's rule, which is what `uname -r` strings of one line of kernels need.
pub fn release(a: &str, b: &str) -> Ordering {
    deb::compare(a, b)
}

#[cfg(test)]
mod tests {
    use super::release;
    use std::cmp::Ordering::*;

    #[test]
    fn releases_of_different_distributions_order_by_their_numbers() {
        for (a, b, want) in [
            ("6.1.0-56-amd64", "6.12.117+deb12-amd64", Less),
            ("6.1.0-9-amd64", "6.1.0-56-amd64", Less),
            ("6.12.113+deb12-amd64", "6.12.117-arch1-1", Less),
            ("6.12.1-300.fc41.x86_64", "6.12.1-arch1-1", Less),
            ("5.15.27-051527-generic", "5.15.32-051532-generic", Less),
            ("6.6.0-rc1", "6.6.0-rc1", Equal),
        ] {
            assert_eq!(release(a, b), want, "{a} vs {b}");
        }
    }
}
