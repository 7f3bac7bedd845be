//! A table: the content every report format lays out the same way. Each format renders it
//! in its own file (`Table::text` in text.rs, `markdown`, `csv`, `html`).

/// `s` with control characters written as `\x1b`, `\n`…: safe to print on a terminal
/// and inside one table cell.
pub fn escape_control(s: &str) -> String {
    model::shell::escape_controls(s, &[]).into_owned()
}

/// A table as a bisect document keeps it (`bisect::Changed`): the cells as printed.
pub fn to_changed(t: &Table) -> search::bisect::Changed {
    search::bisect::Changed {
        title: t.title.trim().to_string(),
        headers: t.headers.iter().map(|h| h.0.clone()).collect(),
        right: t.headers.iter().map(|h| h.1 == Align::Right).collect(),
        rows: t.rows.clone(),
    }
}

/// A kept table back.
pub fn from_changed(c: &search::bisect::Changed) -> Table {
    let headers: Vec<(&str, Align)> = c
        .headers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let right = c.right.get(i).copied().unwrap_or(false);
            (h.as_str(), if right { Align::Right } else { Align::Left })
        })
        .collect();
    let mut t = Table::new(c.title.clone(), &headers);
    for r in &c.rows {
        t.push(r.clone());
    }
    t
}

/// Rows of the full comparison shown before the rest is folded away (text: after the
/// answer; HTML: inside `<details>`).
pub const VISIBLE_ROWS: usize = 20;
/// `t` with at most `max` rows, the rest counted in its note.
pub fn capped(mut t: Table, max: usize, rest: &str) -> Table {
    if t.rows.len() > max {
        let more = t.rows.len() - max;
        t.rows.truncate(max);
        t.note = Some(format!(
            "{} — {more} more row(s) {rest}",
            t.note.unwrap_or_default()
        ));
    }
    t
}

/// Column alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

#[derive(Clone, Debug)]
pub struct Table {
    pub title: String,
    pub headers: Vec<(String, Align)>,
    pub rows: Vec<Vec<String>>,
    /// Shown under the table.
    pub note: Option<String>,
}

impl Table {
    pub fn new(title: impl Into<String>, headers: &[(&str, Align)]) -> Table {
        Table {
            title: escape_control(&title.into()),
            headers: headers
                .iter()
                .map(|(h, a)| (escape_control(h), *a))
                .collect(),
            rows: Vec::new(),
            note: None,
        }
    }

    /// Add a row. Control characters (a label imported from elsewhere may hold terminal
    /// escape sequences) are shown escaped, never sent to the terminal.
    pub fn push(&mut self, row: Vec<String>) {
        self.rows
            .push(row.into_iter().map(|c| escape_control(&c)).collect());
    }

    /// Each column's width in characters: its widest cell or header.
    pub(crate) fn widths(&self) -> Vec<usize> {
        self.headers
            .iter()
            .enumerate()
            .map(|(i, (h, _))| {
                self.rows
                    .iter()
                    .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
                    .chain(std::iter::once(h.chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }
}

/// A number with about four significant digits, LKP style.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a >= 1e15 {
        // Past any count a window holds: an exponent, not a line of digits.
        format!("{v:.3e}")
    } else if a == 0.0 || a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_three_ways() {
        let mut t = Table::new("T", &[("name", Align::Left), ("value", Align::Right)]);
        t.push(vec!["a|b".into(), "1".into()]);
        t.push(vec!["long name".into(), "12345".into()]);
        assert_eq!(
            t.text(),
            "T\nname       value\na|b            1\nlong name  12345\n"
        );
        assert!(t.markdown().contains("| a\\|b | 1 |"));
        assert!(t.markdown().contains("|:---|---:|"));
        t.push(vec!["x,\"y\"".into(), "2".into()]);
        assert!(t.csv().ends_with("\"x,\"\"y\"\"\",2\n"));
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape_control("plain"), "plain");
        let e = escape_control("a\u{1b}[2Jb\n");
        assert!(!e.chars().any(char::is_control), "{e}");
        assert!(e.contains("[2J") && e.starts_with('a'), "{e}");
        let mut t = Table::new("T", &[("label", Align::Left)]);
        t.push(vec!["x\u{1b}]0;pwned\u{7}".into()]);
        assert!(!t.text().contains('\u{1b}') && !t.markdown().contains('\u{1b}'));
    }
}
