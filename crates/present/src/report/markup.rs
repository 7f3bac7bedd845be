//! Text inside HTML and SVG markup: what the HTML report and the SVG figures share.

/// `s` as element text or an attribute value: `&`, `<`, `>` and `"` escaped.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
