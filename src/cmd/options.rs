//! Options several subcommands share, defined once.

use present::report::Format;
use std::path::PathBuf;

/// Where results are stored.
#[derive(clap::Args, Clone)]
pub struct StoreOptions {
    /// Results database: an SQLite file, or postgres://USER@HOST[:PORT]/DATABASE (the
    /// password from PGPASSWORD or ~/.pgpass; never shown)
    #[arg(
        long,
        env = "SIGBENCH_DB",
        default_value = "sigbench.db",
        value_name = "PATH|URL"
    )]
    pub db: analyse::store::Location,
}

/// Where `run --kernel` keeps what it prepares.
#[derive(clap::Args, Clone)]
pub struct CacheOptions {
    /// Where unpacked kernels, initramfs images and the KVM verdict are kept
    #[arg(
        long,
        env = "SIGBENCH_CACHE",
        default_value = "/var/cache/sigbench",
        value_name = "DIR"
    )]
    pub cache_dir: PathBuf,
}

/// The formats each command writes (`--format`), as clap choices: `--help` lists them and
/// a wrong one is refused before anything runs. Each maps to one renderer of the library.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum CompareFormat {
    Text,
    #[value(alias = "md")]
    Markdown,
    Csv,
    Json,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ReportFormat {
    /// One self-contained file
    Html,
    /// Plots as SVG files beside it
    #[value(alias = "md")]
    Markdown,
    /// A mail (RFC 5322, plain text, lines of at most 72 columns) with the reproducer
    /// attached: two labels, base first
    #[value(alias = "mail")]
    Email,
}

impl ReportFormat {
    /// The renderer of the full report, or None for a mail (`report::mail`).
    pub fn document_format(self) -> Option<Format> {
        match self {
            ReportFormat::Html => Some(Format::Html),
            ReportFormat::Markdown => Some(Format::Markdown),
            ReportFormat::Email => None,
        }
    }
}

/// `--states`: which states of the machine repetitions start from (`plan::states`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StatesChoice {
    /// Each repetition from a state of its own (a boot each under the icount clock)
    Sampled,
    /// Every repetition from one state, in one boot
    Fixed,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ExportFormat {
    /// sigbench's own, for import elsewhere
    Json,
    /// Go benchmark text, for benchstat
    Gobench,
}

macro_rules! to_format {
    ($t:ty: $($v:ident),*) => {
        impl From<$t> for Format {
            fn from(f: $t) -> Format {
                match f {
                    $(<$t>::$v => Format::$v,)*
                }
            }
        }
    };
}
to_format!(CompareFormat: Text, Markdown, Csv, Json);
to_format!(ExportFormat: Json, Gobench);

/// `--accel`: the QEMU accelerator for `--kernel`.
#[derive(Clone, Copy, Debug, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccelChoice {
    /// KVM if a test boot showed guests run here, else TCG
    Auto,
    Kvm,
    Tcg,
}

/// `--clock`: what a guest's times count.
#[derive(Clone, Copy, Debug, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockChoice {
    /// Instructions executed, 1 ns each (QEMU -icount; TCG only)
    Icount,
    /// The host's real time
    Host,
}

impl From<ClockChoice> for model::clock::ClockKind {
    fn from(c: ClockChoice) -> Self {
        match c {
            ClockChoice::Icount => Self::Icount,
            ClockChoice::Host => Self::Host,
        }
    }
}

/// A library's closed set of named values ([`model::choice::Choice`]: `--fs`, `--test`,
/// `--order`, a triage state) as a clap argument: `--help` lists the names with their
/// lines, an alias is taken, and a wrong name is refused naming the right ones before
/// anything runs. The libraries know no clap.
pub fn choice<T: model::choice::Choice>() -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let values = T::ALL.iter().map(|v| {
        let p = PossibleValue::new(v.arg()).aliases(v.aliases().iter().copied());
        if v.about().is_empty() {
            p
        } else {
            p.help(v.about())
        }
    });
    PossibleValuesParser::new(values)
        .try_map(|s: String| T::named(&s).ok_or_else(|| format!("`{s}` is not one of the choices")))
}

#[cfg(test)]
mod tests {
    use super::choice;
    use analyse::stats::Test;
    use measure::testbed::Fs;

    fn parse<T: model::choice::Choice>(arg: &str) -> Result<T, String> {
        clap::Command::new("t")
            .arg(clap::Arg::new("v").long("v").value_parser(choice::<T>()))
            .try_get_matches_from(["t", "--v", arg])
            .map(|m| *m.get_one::<T>("v").unwrap())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_library_choice_takes_its_names_and_aliases_and_refuses_the_rest_naming_them() {
        assert_eq!(parse::<Test>("welch"), Ok(Test::Welch));
        assert_eq!(parse::<Test>("u"), Ok(Test::MannWhitney));
        assert_eq!(parse::<Fs>("tmpfs"), Ok(Fs::Tmpfs));
        let e = parse::<Fs>("zfs").unwrap_err();
        assert!(
            e.contains("invalid value 'zfs'") && e.contains("btrfs, ext4, xfs, tmpfs"),
            "{e}"
        );
    }
}
