//! The report as Markdown, with each plot as an SVG file beside it.

use super::document::Document;

/// The Markdown text and the SVG files it refers to (`{stem}-{metric}.svg`).
pub fn render(d: &Document, stem: &str) -> (String, Vec<(String, String)>) {
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
    (out, files)
}
