//! The report as one self-contained HTML file: inline CSS and SVG, no JavaScript, nothing
//! fetched from anywhere.

use super::document::Document;
use super::render::{Rendered, Renderer};
use super::table::{Align, Table};

pub struct Html;

impl Renderer for Html {
    /// One file: nothing goes beside it.
    fn report(&self, d: &Document, _stem: &str) -> Option<Rendered> {
        Some(Rendered {
            text: render(d),
            files: Vec::new(),
        })
    }
}

pub use super::markup::escape;

/// The pages' style. Plots are drawn to be read at their own size (their text 11–20 px):
/// one wider than the page scrolls sideways rather than shrinking its text to a few
/// pixels; long unbroken text in a table cell wraps rather than pushing the table off
/// the screen.
pub(crate) const STYLE: &str = "
body { font-family: sans-serif; color: #222; margin: 2em auto; max-width: 1100px; padding: 0 1em; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; }
p.about { margin: 0.3em 0; }
p.lead { margin: 0.5em 0; font-weight: 600; }
.notice { background: #fff4e0; border-left: 4px solid #e69f00; padding: 0.6em 1em; margin: 1em 0; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; max-width: 100%; }
caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; vertical-align: top; overflow-wrap: break-word; }
th { background: #f3f3f3; }
td.r { text-align: right; font-variant-numeric: tabular-nums; }
.s { white-space: nowrap; }
figure { margin: 1.5em 0; overflow-x: auto; }
figure svg { border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #555; }
ul.warnings li { margin: 0.2em 0; }
footer { margin-top: 3em; font-size: 0.8em; color: #777; }
";

/// The skeleton of every HTML page sigbench writes (a report, the site's pages): the style
/// and a kind of page's own rules (`style`), its navigation (`nav`, markup), the title, the
/// body (markup), and a footer saying what made it (`made`: "static site, generated ", or
/// nothing) and when.
pub(crate) fn page(title: &str, style: &str, nav: &str, body: &str, made: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{t}</title>\n<style>{STYLE}{style}</style>\n</head>\n<body>\n{nav}<h1>{t}</h1>\n{body}<footer>sigbench {} · {made}{}</footer>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION"),
        model::stamp::now_rfc3339(),
        t = escape(title),
    )
}

/// The widest a column's text may be (in characters) and still never wrap: its words,
/// labels and numbers keep their width, and a long column (a machine's description, a
/// triage note) takes the wrapping.
pub const SHORT_COLUMN: usize = 28;

/// Each character of `markup` with whether a reader sees it: text outside tags is seen,
/// an entity once (at its `&`), tags not at all. Only for layout (a column's width, where
/// a long word may break); what a cell means is carried by its table.
fn seen(markup: &str) -> impl Iterator<Item = (char, bool)> + '_ {
    let (mut in_tag, mut in_entity) = (false, false);
    markup.chars().map(move |ch| {
        let visible = match ch {
            '<' => {
                in_tag = true;
                false
            }
            '>' if in_tag => {
                in_tag = false;
                false
            }
            _ if in_tag => false,
            ';' if in_entity => {
                in_entity = false;
                false
            }
            _ if in_entity => false,
            c => {
                in_entity = c == '&';
                true
            }
        };
        (ch, visible)
    })
}

/// The characters of `markup` a reader sees ([`seen`]).
fn visible_chars(markup: &str) -> usize {
    seen(markup).filter(|&(_, v)| v).count()
}

/// The longest run without spaces a table cell keeps whole: a metric with its case
/// (`churn/N=20000/create.slabinfo.maple_node.active_objs`, 52) stays one word, searchable
/// in the page's text as it is written.
pub const LONG_WORD: usize = 56;

/// `markup` with a break opportunity (`<wbr>`) after every [`LONG_WORD`] characters of a
/// run without spaces, outside tags and entities: only a word longer than that (a hostile
/// note, a very long path) may break, and the column's narrowest width is at most that,
/// not its longest run.
fn break_long_words(markup: &str) -> String {
    let mut out = String::with_capacity(markup.len());
    let mut run = 0;
    for (ch, visible) in seen(markup) {
        if visible && ch.is_whitespace() {
            run = 0;
        } else if visible {
            if run == LONG_WORD {
                out.push_str("<wbr>");
                run = 0;
            }
            run += 1;
        }
        out.push(ch);
    }
    out
}

/// A table's markup: its caption, headers (the cells under a right-aligned one get class
/// `r`) and rows of cells that are markup already. A column whose header and cells are
/// all short ([`SHORT_COLUMN`]) never wraps (class `s`): a label, a kernel release or a
/// number is not broken inside to make room for a long column beside it.
pub(crate) fn table_markup<'a>(
    caption: &str,
    headers: impl IntoIterator<Item = (&'a str, Align)>,
    rows: impl IntoIterator<Item = Vec<String>>,
) -> String {
    let headers: Vec<(&str, Align)> = headers.into_iter().collect();
    let rows: Vec<Vec<String>> = rows.into_iter().collect();
    let short: Vec<bool> = (0..headers.len())
        .map(|i| {
            headers[i].0.chars().count() <= SHORT_COLUMN
                && rows
                    .iter()
                    .all(|r| r.get(i).is_none_or(|c| visible_chars(c) <= SHORT_COLUMN))
        })
        .collect();
    let class = |i: usize| match (headers.get(i).map(|h| h.1), short.get(i) == Some(&true)) {
        (Some(Align::Right), true) => " class=\"r s\"",
        (Some(Align::Right), false) => " class=\"r\"",
        (_, true) => " class=\"s\"",
        _ => "",
    };
    let mut out = String::from("<table>\n");
    if !caption.is_empty() {
        out.push_str(&format!("<caption>{}</caption>\n", escape(caption)));
    }
    out.push_str("<thead><tr>");
    for (i, (h, _)) in headers.iter().enumerate() {
        out.push_str(&format!("<th{}>{}</th>", class(i), escape(h)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for r in &rows {
        out.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            if short.get(i) == Some(&true) {
                out.push_str(&format!("<td{}>{c}</td>", class(i)));
            } else {
                out.push_str(&format!("<td{}>{}</td>", class(i), break_long_words(c)));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

impl Table {
    pub fn html(&self) -> String {
        let mut out = table_markup(
            &self.title,
            self.headers.iter().map(|(h, a)| (h.as_str(), *a)),
            self.rows
                .iter()
                .map(|r| r.iter().map(|c| escape(c)).collect()),
        );
        if let Some(n) = &self.note {
            out.push_str(&format!("<p class=\"about\">{}</p>\n", escape(n)));
        }
        out
    }
}

fn render(d: &Document) -> String {
    let mut out = String::new();
    for a in &d.about {
        out.push_str(&format!("<p class=\"about\">{}</p>\n", escape(a)));
    }
    // The answer first; what the times mean (their clock, emulation) right after it.
    if !d.changed.is_empty() || !d.lead.is_empty() {
        out.push_str("<h2 id=\"what-changed\">What changed</h2>\n");
        for l in &d.lead {
            out.push_str(&format!("<p class=\"lead\">{}</p>\n", escape(l)));
        }
        for t in &d.changed {
            out.push_str(&t.html());
        }
    }
    for n in &d.notices {
        out.push_str(&format!("<div class=\"notice\">{}</div>\n", escape(n)));
    }
    if !d.files.is_empty() {
        out.push_str("<h2 id=\"hand-over\">To hand over</h2>\n<ul class=\"files\">\n");
        for (name, what) in &d.files {
            out.push_str(&format!(
                "<li><a href=\"{}\">{}</a> — {}</li>\n",
                escape(name),
                escape(name),
                escape(what)
            ));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("<h2>What ran where</h2>\n");
    out.push_str(&d.runs.html());
    out.push_str("<h2>Metrics</h2>\n");
    for f in &d.figures {
        out.push_str(&format!(
            "<figure id=\"{}\">\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
            escape(&f.id),
            f.svg,
            escape(&f.caption)
        ));
    }
    if !d.tables.is_empty() {
        out.push_str("<h2>Tables</h2>\n");
    }
    for t in &d.tables {
        out.push_str(&t.html());
    }
    if !d.details.is_empty() {
        let rows: usize = d.details.iter().map(|t| t.rows.len()).sum();
        out.push_str(&format!(
            "<details>\n<summary>Every row ({rows})</summary>\n"
        ));
        for t in &d.details {
            out.push_str(&t.html());
        }
        out.push_str("</details>\n");
    }
    if !d.warnings.is_empty() {
        out.push_str("<h2>Warnings</h2>\n<ul class=\"warnings\">\n");
        for w in &d.warnings {
            out.push_str(&format!("<li>{}</li>\n", escape(w)));
        }
        out.push_str("</ul>\n");
    }
    page(&d.title, "", "", &out, "")
}

#[cfg(test)]
mod cell_tests {
    use super::*;

    #[test]
    fn only_runs_longer_than_a_long_word_get_break_opportunities() {
        let word = "n".repeat(LONG_WORD);
        assert_eq!(
            break_long_words(&format!("a {word} b")),
            format!("a {word} b")
        );
        let long = format!("{word}xy");
        assert_eq!(break_long_words(&long), format!("{word}<wbr>xy"));
        // Tags and entities are never cut, and count as what a reader sees.
        let linked = format!("<a href=\"{}\">x</a>", "h".repeat(200));
        assert_eq!(break_long_words(&linked), linked);
        let amp = format!("{}&amp;b", "n".repeat(LONG_WORD - 1));
        assert_eq!(
            break_long_words(&amp),
            format!("{}&amp;<wbr>b", "n".repeat(LONG_WORD - 1))
        );
        assert_eq!(visible_chars("<a href=\"x\">ab&amp;c</a>"), 4);
    }
}
