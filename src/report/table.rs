//! A table, rendered as aligned text, Markdown or CSV — so every report format lays out
//! the same content the same way.

/// `s` with control characters written as `\x1b`, `\n`…: safe to print on a terminal
/// and inside one table cell.
pub fn escape_control(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string().replace("\\u{", "\\x{")
            } else {
                c.to_string()
            }
        })
        .collect()
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

    fn widths(&self) -> Vec<usize> {
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

    fn pad(cell: &str, width: usize, align: Align) -> String {
        let fill = " ".repeat(width.saturating_sub(cell.chars().count()));
        match align {
            Align::Left => format!("{cell}{fill}"),
            Align::Right => format!("{fill}{cell}"),
        }
    }

    pub fn text(&self) -> String {
        let w = self.widths();
        let line = |cells: Vec<&str>| -> String {
            let parts: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| Self::pad(c, w[i], self.headers[i].1))
                .collect();
            parts.join("  ").trim_end().to_string() + "\n"
        };
        let mut out = String::new();
        if !self.title.is_empty() {
            out.push_str(&self.title);
            out.push('\n');
        }
        out.push_str(&line(
            self.headers.iter().map(|(h, _)| h.as_str()).collect(),
        ));
        for r in &self.rows {
            out.push_str(&line(r.iter().map(String::as_str).collect()));
        }
        if let Some(n) = &self.note {
            out.push_str(n);
            out.push('\n');
        }
        out
    }

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
