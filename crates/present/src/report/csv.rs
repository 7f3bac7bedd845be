//! CSV: one flat row per compared metric, for spreadsheets and scripts; and the CSV
//! layout of a [`Table`] (RFC 4180 quoting).

use super::render::Renderer;
use super::table::{Align, Table};
use analyse::stats::compare::Comparison;

pub struct Csv;

impl Renderer for Csv {
    fn comparison(&self, c: &Comparison, _all: bool) -> Option<String> {
        let mut t = Table::new(
            "",
            &[
                ("base", Align::Left),
                ("other", Align::Left),
                ("signature", Align::Left),
                ("dir", Align::Left),
                ("n", Align::Right),
                ("metric", Align::Left),
                ("kind", Align::Left),
                ("base_n", Align::Right),
                ("base_median", Align::Right),
                ("base_stdev", Align::Right),
                ("other_n", Align::Right),
                ("other_median", Align::Right),
                ("other_stdev", Align::Right),
                ("change_pct", Align::Right),
                ("ratio", Align::Right),
                ("ratio_lo", Align::Right),
                ("ratio_hi", Align::Right),
                ("p_value", Align::Right),
                ("p_adjusted", Align::Right),
                ("evidence", Align::Left),
                ("effect_sd", Align::Right),
                ("exact", Align::Left),
                ("significant", Align::Left),
            ],
        );
        for p in &c.pairs {
            for r in &p.rows {
                let (ratio, lo, hi) = r
                    .ratio
                    .map_or((String::new(), String::new(), String::new()), |x| {
                        (x.ratio.to_string(), x.ci.0.to_string(), x.ci.1.to_string())
                    });
                t.push(vec![
                    p.base.clone(),
                    p.other.clone(),
                    r.case.signature.clone(),
                    r.case.dir.clone(),
                    r.case.n.to_string(),
                    r.metric.to_string(),
                    format!("{:?}", r.kind).to_lowercase(),
                    r.base.n.to_string(),
                    r.base.median.to_string(),
                    r.base.stdev.to_string(),
                    r.other.n.to_string(),
                    r.other.median.to_string(),
                    r.other.stdev.to_string(),
                    r.change_percent().to_string(),
                    ratio,
                    lo,
                    hi,
                    r.p_value.map_or(String::new(), |p| p.to_string()),
                    r.p_adjusted.map_or(String::new(), |p| p.to_string()),
                    r.evidence.name().to_string(),
                    r.effect.to_string(),
                    r.exact.to_string(),
                    r.significant.to_string(),
                ]);
            }
        }
        Some(t.csv())
    }
}

impl Table {
    /// The header line, then a line per row; fields with a comma, quote or newline quoted.
    pub fn csv(&self) -> String {
        let field = |c: &str| {
            if c.contains([',', '"', '\n']) {
                format!("\"{}\"", c.replace('"', "\"\""))
            } else {
                c.to_string()
            }
        };
        let mut out = String::new();
        out.push_str(
            &self
                .headers
                .iter()
                .map(|(h, _)| field(h))
                .collect::<Vec<_>>()
                .join(","),
        );
        out.push('\n');
        for r in &self.rows {
            out.push_str(&r.iter().map(|c| field(c)).collect::<Vec<_>>().join(","));
            out.push('\n');
        }
        out
    }
}
