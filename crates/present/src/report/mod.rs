//! Reports: turning results into what people and scripts read. The models are the run
//! summary (`stats::run`), the comparison (`compare.rs` lays it out as tables), the full
//! report (`document.rs`) and the bisect (`bisect.rs`); each output format is one file
//! with one [`Renderer`] that walks them (text, markdown, csv, json, html, gobench), as
//! hyperfine's exporters do. None of them measures or stores anything.

pub mod answer;
pub mod bisect;
pub mod compare;
pub mod csv;
pub mod document;
pub mod flame;
pub mod gobench;
pub mod html;
pub mod json;
pub mod mail;
pub mod markdown;
pub mod markup;
pub mod plot;
pub mod render;
pub mod table;
pub mod text;
pub mod watch;

pub use render::{Format, Rendered, Renderer};

pub fn renderer(f: Format) -> &'static dyn Renderer {
    match f {
        Format::Text => &text::Text,
        Format::Markdown => &markdown::Markdown,
        Format::Csv => &csv::Csv,
        Format::Json => &json::Json,
        Format::Html => &html::Html,
        Format::Gobench => &gobench::Gobench,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use analyse::stats::Test;
    use analyse::stats::compare::{Comparison, Samples, compare};
    use model::results::fixtures;

    fn comparison() -> Comparison {
        let a = fixtures::doc("a", &[10.0, 10.5, 10.2, 10.1, 10.3], &[0; 5]);
        let b = fixtures::doc("b", &[20.0, 20.5, 20.2, 20.1, 20.3], &[1400; 5]);
        compare(
            &[Samples::from_runs("a", &[a]), Samples::from_runs("b", &[b])],
            Test::MannWhitney,
            0.05,
        )
    }

    /// Every format renders what it can, and the same comparison says the same thing in
    /// each: the doubled wall time and the slab cache that appeared.
    #[test]
    fn every_format_renders_the_same_comparison() {
        let c = comparison();
        for f in [Format::Text, Format::Markdown, Format::Csv, Format::Json] {
            // Markdown escapes the underscores it shows as they are.
            let out = renderer(f)
                .comparison(&c, false)
                .unwrap()
                .replace("\\_", "_");
            assert!(out.contains("wall_ms"), "{}: {out}", f.name());
            assert!(
                out.contains("create.slabinfo.maple_node.active_objs"),
                "{}: {out}",
                f.name()
            );
        }
        let text = renderer(Format::Text).comparison(&c, false).unwrap();
        assert!(text.contains("+98.0%"), "{text}");
        let md = renderer(Format::Markdown).comparison(&c, false).unwrap();
        assert!(md.starts_with("## sigbench comparison\n") && md.contains("|---:|"));
        let csv = renderer(Format::Csv).comparison(&c, false).unwrap();
        let header = csv.lines().next().unwrap();
        assert!(header.starts_with("base,other,signature,dir,n,metric,kind"));
        let wall = csv.lines().find(|l| l.contains(",wall_ms,")).unwrap();
        assert!(wall.ends_with(",true"), "significant: {wall}");
        let json: serde_json::Value =
            serde_json::from_str(&renderer(Format::Json).comparison(&c, false).unwrap()).unwrap();
        assert_eq!(json["schema"], "sigbench.comparison");
        assert_eq!(json["pairs"][0]["base"], "a");
        for f in [Format::Html, Format::Gobench] {
            assert!(renderer(f).comparison(&c, false).is_none());
        }
    }

    #[test]
    fn runs_render_as_an_export_or_for_benchstat() {
        let runs = vec![fixtures::doc("a", &[10.0, 12.0], &[0, 0])];
        let json = renderer(Format::Json).runs(&runs).unwrap();
        let back = model::results::parse_documents(&json, "export").unwrap();
        assert_eq!(back, runs);
        let go = renderer(Format::Gobench).runs(&runs).unwrap();
        assert!(
            go.contains("\nBenchmarkLkp-churn/dir=churn/n=20000-2 1 10000000 ns/op"),
            "{go}"
        );
        assert_eq!(go.lines().filter(|l| l.starts_with("Benchmark")).count(), 2);
        assert!(renderer(Format::Text).runs(&runs).is_none());
    }

    #[test]
    fn reports_render_as_one_html_file_or_markdown_with_its_plots() {
        let a = fixtures::doc("a", &[10.0, 10.5, 10.2], &[0; 3]);
        let b = fixtures::doc("b", &[20.0, 20.5, 20.2], &[1400; 3]);
        let d = document::build(
            &[("a".into(), vec![a]), ("b".into(), vec![b])],
            Test::MannWhitney,
            0.05,
            false,
        )
        .unwrap();
        let html = renderer(Format::Html).report(&d, "r").unwrap();
        assert!(html.files.is_empty());
        assert!(html.text.starts_with("<!DOCTYPE html>") && html.text.contains("<svg"));
        assert!(!html.text.contains("<script"), "no JavaScript");
        let md = renderer(Format::Markdown).report(&d, "r").unwrap();
        assert!(!md.files.is_empty());
        for (name, svg) in &md.files {
            assert!(name.starts_with("r-") && name.ends_with(".svg"));
            assert!(md.text.contains(&format!("]({name})")), "{name}");
            assert!(svg.contains("<svg"));
        }
        assert!(md.text.contains("## What changed"));
    }
}
