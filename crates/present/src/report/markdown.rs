//! Markdown: a comparison's tables, and the full report with each plot as an SVG file
//! beside it.

use super::document::Document;
use super::render::{Rendered, Renderer};
use super::table::{Align, Table};
use analyse::stats::compare::Comparison;

pub struct Markdown;

/// Text from the data (labels, kernel names, warnings: anyone's export) as Markdown that
/// renders as that text: no HTML (`<script>`), no links, images or code spans, no emphasis
/// or strikethrough (`*`, `_`, `~` escaped: a label `_a_` or `**rc**` is not markup; a
/// renderer shows `wall\_ms` as `wall_ms`).
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '[' | ']' | '|' | '*' | '_' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

impl Renderer for Markdown {
    fn comparison(&self, c: &Comparison, all: bool) -> Option<String> {
        let mut out = String::from("## sigbench comparison\n\n");
        for p in &c.pairs {
            out.push_str(&format!("**{}**\n\n", text(&super::answer::lead_line(p))));
        }
        for t in super::compare::tables(c, all) {
            out.push_str(&t.markdown());
        }
        if !c.warnings.is_empty() {
            out.push_str("**Warnings**\n\n");
            for w in &c.warnings {
                out.push_str(&format!("- {}\n", text(w)));
            }
        }
        Some(out)
    }

    /// The Markdown text and the SVG files it refers to (`{stem}-{metric}.svg`).
    fn report(&self, d: &Document, stem: &str) -> Option<Rendered> {
        let mut out = format!("# {}\n\n", text(&d.title));
        for a in &d.about {
            out.push_str(&format!("{}\n\n", text(a)));
        }
        if !d.changed.is_empty() || !d.lead.is_empty() {
            out.push_str("## What changed\n\n");
            for l in &d.lead {
                out.push_str(&format!("**{}**\n\n", text(l)));
            }
            for t in &d.changed {
                out.push_str(&t.markdown());
            }
        }
        for n in &d.notices {
            out.push_str(&format!("> **Note:** {}\n\n", text(n)));
        }
        out.push_str("## What ran where\n\n");
        out.push_str(&d.runs.markdown());
        out.push_str("## Metrics\n\n");
        let mut files = Vec::new();
        for f in &d.figures {
            let file = format!("{stem}-{}.svg", f.id);
            out.push_str(&format!(
                "![{}]({file})\n\n*{}*\n\n",
                text(&f.title),
                text(&f.caption)
            ));
            files.push((file, f.svg.clone()));
        }
        if !d.tables.is_empty() {
            out.push_str("## Tables\n\n");
        }
        for t in &d.tables {
            out.push_str(&t.markdown());
        }
        if !d.warnings.is_empty() {
            out.push_str("## Warnings\n\n");
            for w in &d.warnings {
                out.push_str(&format!("- {}\n", text(w)));
            }
        }
        Some(Rendered { text: out, files })
    }
}

impl Table {
    /// A GitHub-flavoured Markdown table under a `###` title (`|` in cells escaped).
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        if !self.title.is_empty() {
            out.push_str(&format!("### {}\n\n", text(&self.title)));
        }
        out.push_str(&format!(
            "| {} |\n",
            self.headers
                .iter()
                .map(|(h, _)| text(h))
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
                r.iter().map(|c| text(c)).collect::<Vec<_>>().join(" | ")
            ));
        }
        if let Some(n) = &self.note {
            out.push_str(&format!("\n{}\n", text(n)));
        }
        out.push('\n');
        out
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn data_renders_as_text_not_markup() {
        assert_eq!(
            super::text("<script>alert(1)</script> [x](http://e) a|b *c* _d_ ~~e~~ \\"),
            "&lt;script&gt;alert(1)&lt;/script&gt; \\[x\\](http://e) a\\|b \\*c\\* \\_d\\_ \\~\\~e\\~\\~ \\\\"
        );
        assert_eq!(super::text("6.12.117+deb12-amd64"), "6.12.117+deb12-amd64");
    }
}
