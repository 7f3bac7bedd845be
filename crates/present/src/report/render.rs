//! What a report format is: `Format` (the `--format` choices), `Renderer` (what each
//! format's file implements: a comparison, a report, stored runs) and `Rendered`. The
//! formats' files depend on this; `report::renderer` picks one.

use super::document::Document;
use analyse::stats::compare::Comparison;
use model::results::RunDocument;

/// An output format. Adding one is a file beside this one and an arm in
/// [`super::renderer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Csv,
    Json,
    Html,
    Gobench,
}

/// A rendered report: its text, and the files that go beside it (name, content).
pub struct Rendered {
    pub text: String,
    pub files: Vec<(String, String)>,
}

/// What a format can render: `None` for what it cannot (the command's `--format` choices
/// only offer what can).
pub trait Renderer {
    /// A comparison (`compare`); `all`: rows without a significant change too.
    fn comparison(&self, _c: &Comparison, _all: bool) -> Option<String> {
        None
    }
    /// The full report (`report`); `stem` names the files beside it.
    fn report(&self, _d: &Document, _stem: &str) -> Option<Rendered> {
        None
    }
    /// Stored runs (`export`).
    fn runs(&self, _runs: &[RunDocument]) -> Option<String> {
        None
    }
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Markdown => "markdown",
            Format::Csv => "csv",
            Format::Json => "json",
            Format::Html => "html",
            Format::Gobench => "gobench",
        }
    }
}
