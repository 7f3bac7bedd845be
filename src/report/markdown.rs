//! Markdown: a comparison's tables, and the full report with each plot as an SVG file
//! beside it.

use super::document::Document;
use super::table::{Align, Table};
use super::{Rendered, Renderer};
use crate::stats::compare::Comparison;

pub struct Markdown;

impl Renderer for Markdown {
    fn comparison(&self, c: &Comparison, all: bool) -> Option<String> {
        let mut out = String::from("## sigbench comparison\n\n");
        for t in super::compare::tables(c, all) {
            out.push_str(&t.markdown());
        }
        if !c.warnings.is_empty() {
            out.push_str("**Warnings**\n\n");
            for w in &c.warnings {
                out.push_str(&format!("- {w}\n"));
            }
        }
        Some(out)
    }

    /// The Markdown text and the SVG files it refers to (`{stem}-{metric}.svg`).
    fn report(&self, d: &Document, stem: &str) -> Option<Rendered> {
        let mut out = format!("# {}\n\n", d.title);
        for a in &d.about {
            out.push_str(&format!("{a}\n\n"));
        }
        for n in &d.notices {
            out.push_str(&format!("> **Note:** {n}\n\n"));
        }
        if !d.changed.is_empty() {
            out.push_str("## What changed\n\n");
            for t in &d.changed {
                out.push_str(&t.markdown());
            }
        }
        out.push_str("## What ran where\n\n");
        out.push_str(&d.runs.markdown());
        out.push_str("## Metrics\n\n");
        let mut files = Vec::new();
        for f in &d.figures {
            let file = format!("{stem}-{}.svg", f.id);
            out.push_str(&format!("![{}]({file})\n\n*{}*\n\n", f.title, f.caption));
            files.push((file, f.svg.clone()));
        }
        out.push_str("## Comparisons, latency and scaling\n\n");
        for t in &d.tables {
            out.push_str(&t.markdown());
        }
        if !d.warnings.is_empty() {
            out.push_str("## Warnings\n\n");
            for w in &d.warnings {
                out.push_str(&format!("- {w}\n"));
            }
        }
        Some(Rendered { text: out, files })
    }
}

impl Table {
    /// A GitHub-flavoured Markdown table under a `###` title (`|` in cells escaped).
    pub fn markdown(&self) -> String {
        let esc = |c: &str| c.replace('|', "\\|");
        let mut out = String::new();
        if !self.title.is_empty() {
            out.push_str(&format!("### {}\n\n", self.title));
        }
        out.push_str(&format!(
            "| {} |\n",
            self.headers
                .iter()
                .map(|(h, _)| esc(h))
                .collect::<Vec<_>>()
                .join(" | ")
        ));
        out.push_str(&format!(
            "|{}|\n",
            self.headers
                .iter()
                .map(|(_, a)| if *a == Align::Right { "---:" } else { ":---" })
                .collect::<Vec<_>>()
                .join("|")
        ));
        for r in &self.rows {
            out.push_str(&format!(
                "| {} |\n",
                r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
            ));
        }
        if let Some(n) = &self.note {
            out.push_str(&format!("\n{n}\n"));
        }
        out.push('\n');
        out
    }
}
