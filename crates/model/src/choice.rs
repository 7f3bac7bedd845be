//! Closed sets of named values a command line chooses from (`--fs`, `--test`, `--order`,
//! a triage state): each value's name, the other names it answers to, and a line about
//! it. The libraries know no argument parser; the binary turns a [`Choice`] into its
//! parser's choices (`cmd::options::choice`), so `--help` lists them and a wrong one is
//! refused naming the right ones.

/// A closed set of named values.
pub trait Choice: Copy + Send + Sync + 'static {
    /// Every value, in the order `--help` lists them.
    const ALL: &'static [Self];
    /// The name a command line gives.
    fn arg(self) -> &'static str;
    /// Other names it answers to.
    fn aliases(self) -> &'static [&'static str] {
        &[]
    }
    /// One line about it for `--help` ("" for none).
    fn about(self) -> &'static str {
        ""
    }
    /// The value named `s` (its name or an alias).
    fn named(s: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|v| v.arg() == s || v.aliases().contains(&s))
    }
}

#[cfg(test)]
mod tests {
    use super::Choice;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Colour {
        Red,
        Green,
    }

    impl Choice for Colour {
        const ALL: &'static [Self] = &[Colour::Red, Colour::Green];
        fn arg(self) -> &'static str {
            match self {
                Colour::Red => "red",
                Colour::Green => "green",
            }
        }
        fn aliases(self) -> &'static [&'static str] {
            match self {
                Colour::Red => &["r"],
                Colour::Green => &[],
            }
        }
    }

    #[test]
    fn a_value_is_found_by_its_name_or_an_alias_and_nothing_else() {
        assert_eq!(Colour::named("red"), Some(Colour::Red));
        assert_eq!(Colour::named("r"), Some(Colour::Red));
        assert_eq!(Colour::named("green"), Some(Colour::Green));
        assert_eq!(Colour::named("Green"), None);
        assert_eq!(Colour::named(""), None);
    }
}
