//! The `--until` predicate of `sigbench minimize`: a small expression language over what a
//! run measures.
//!
//! ```text
//! predicate  := comparison { ("and" | "&&") comparison }
//! comparison := expr ( ">=" | ">" | "<=" | "<" | "==" | "!=" ) expr
//! expr       := term { ("+" | "-") term }
//! term       := factor { ("*" | "/") factor }
//! factor     := NUMBER | "N" | METRIC | "ratio(" METRIC "," DIR "/" DIR ")" | "(" expr ")"
//! ```
//!
//! METRIC is any metric `compare` shows (`wall_ms`, `inode_evictions`, `calls`,
//! `create.slabinfo.maple_node.active_objs`, `unlink.p99_us`, …); N is the case's number of
//! files. A plain metric is read in every test directory and the predicate must hold in
//! each; `ratio(wall_ms, zstd/uncompressed)` divides one directory's value by another's.
//! A kernel-wide delta a case does not have (a slab cache that did not move) is 0; any other
//! metric the first evaluation's results lack is an error naming the metrics there are.

use anyhow::{Result, bail};

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Num(f64),
    N,
    Metric(String),
    Ratio(String, String, String),
    Bin(Box<Expr>, char, Box<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cmp {
    Ge,
    Gt,
    Le,
    Lt,
    Eq,
    Ne,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Predicate {
    pub text: String,
    pub clauses: Vec<(Expr, Cmp, Expr)>,
}

/// Where a predicate reads its values: one case (a repetition at one N).
pub trait Values {
    /// The value of `metric` in directory `dir` (None: no such directory).
    fn get(&self, dir: &str, metric: &str) -> Option<f64>;
    fn n(&self) -> f64;
}

struct Lexer<'a> {
    s: &'a str,
    pos: usize,
    /// Parentheses open now, and terms read so far: both bounded, as parsing and
    /// evaluating recurse (a predicate nested 50 000 deep overflowed the stack).
    depth: usize,
    terms: usize,
}

/// How deep parentheses may nest, and how many terms a predicate may have.
const MAX_DEPTH: usize = 32;
const MAX_TERMS: usize = 256;

impl<'a> Lexer<'a> {
    fn skip(&mut self) {
        while self.s[self.pos..].starts_with(char::is_whitespace) {
            self.pos += self.s[self.pos..].chars().next().map_or(1, char::len_utf8);
        }
    }
    fn peek(&mut self) -> &'a str {
        self.skip();
        &self.s[self.pos..]
    }
    fn eat(&mut self, tok: &str) -> bool {
        if self.peek().starts_with(tok) {
            self.pos += tok.len();
            true
        } else {
            false
        }
    }
    fn word(&mut self) -> Option<&'a str> {
        let rest = self.peek();
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || "._-:".contains(c)))
            .unwrap_or(rest.len());
        if len == 0 {
            return None;
        }
        self.pos += len;
        Some(&rest[..len])
    }
    fn err(&self, what: &str) -> anyhow::Error {
        let shown: String = self.s.chars().take(60).collect();
        let more = if self.s.chars().count() > 60 {
            "…"
        } else {
            ""
        };
        anyhow::anyhow!(
            "--until `{shown}{more}`: {what} at position {} (grammar: docs/minimize.md)",
            self.pos + 1
        )
    }
}

impl Predicate {
    pub fn parse(text: &str) -> Result<Predicate> {
        let mut lx = Lexer {
            s: text,
            pos: 0,
            depth: 0,
            terms: 0,
        };
        let mut clauses = Vec::new();
        loop {
            let lhs = expr(&mut lx)?;
            let op = [
                (">=", Cmp::Ge),
                ("<=", Cmp::Le),
                ("==", Cmp::Eq),
                ("!=", Cmp::Ne),
                (">", Cmp::Gt),
                ("<", Cmp::Lt),
            ]
            .into_iter()
            .find(|(t, _)| lx.eat(t))
            .map(|(_, c)| c)
            .ok_or_else(|| lx.err("expected a comparison (>=, >, <=, <, ==, !=)"))?;
            let rhs = expr(&mut lx)?;
            clauses.push((lhs, op, rhs));
            if lx.eat("&&") || lx.eat("and ") {
                continue;
            }
            if !lx.peek().is_empty() {
                return Err(lx.err("unexpected text"));
            }
            break;
        }
        Ok(Predicate {
            text: text.to_string(),
            clauses,
        })
    }

    /// The metrics the predicate reads.
    pub fn metrics(&self) -> Vec<String> {
        fn walk(e: &Expr, out: &mut Vec<String>) {
            match e {
                Expr::Metric(m) | Expr::Ratio(m, _, _) => out.push(m.clone()),
                Expr::Bin(a, _, b) => {
                    walk(a, out);
                    walk(b, out);
                }
                _ => {}
            }
        }
        let mut v = Vec::new();
        for (a, _, b) in &self.clauses {
            walk(a, &mut v);
            walk(b, &mut v);
        }
        v.sort();
        v.dedup();
        v
    }

    /// The metrics the predicate reads that are not among `seen` (the names a run's
    /// results have) and cannot be absent there by design (`Metric::absent_is_zero`: a
    /// kernel-wide delta is recorded only when it moved, a function the profile never
    /// sampled has no row); anything else absent is a typo or a metric this run cannot
    /// measure.
    pub fn unknown_metrics(&self, seen: &std::collections::BTreeSet<&String>) -> Vec<String> {
        // A profile's absent function is 0 only in a run that was profiled.
        let profiled = seen.iter().any(|m| {
            m.parse::<model::metric::Metric>()
                .is_ok_and(|m| m.profiled())
        });
        let delta = |m: &str| {
            m.parse::<model::metric::Metric>()
                .is_ok_and(|m| m.absent_is_zero() && (profiled || !m.profiled()))
        };
        self.metrics()
            .into_iter()
            .filter(|m| !seen.contains(m) && !delta(m))
            .collect()
    }

    /// Whether the predicate holds for one case, read in every directory of `dirs`.
    pub fn holds(&self, v: &dyn Values, dirs: &[String]) -> Result<bool> {
        for dir in dirs {
            for (a, op, b) in &self.clauses {
                let (x, y) = (eval(a, v, dir)?, eval(b, v, dir)?);
                let ok = match op {
                    Cmp::Ge => x >= y,
                    Cmp::Gt => x > y,
                    Cmp::Le => x <= y,
                    Cmp::Lt => x < y,
                    Cmp::Eq => x == y,
                    Cmp::Ne => x != y,
                };
                if !ok {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// The left-hand side of the first clause in the first directory (for the log).
    pub fn show(&self, v: &dyn Values, dirs: &[String]) -> String {
        match (self.clauses.first(), dirs.first()) {
            (Some((a, _, _)), Some(d)) => eval(a, v, d).map_or("-".into(), |x| format!("{x:.4}")),
            _ => "-".into(),
        }
    }
}

fn eval(e: &Expr, v: &dyn Values, dir: &str) -> Result<f64> {
    Ok(match e {
        Expr::Num(x) => *x,
        Expr::N => v.n(),
        Expr::Metric(m) => match v.get(dir, m) {
            Some(x) => x,
            None => bail!("no directory `{dir}` in this run"),
        },
        Expr::Ratio(m, a, b) => {
            let (x, y) = (v.get(a, m), v.get(b, m));
            match (x, y) {
                (Some(x), Some(y)) => x / y,
                _ => bail!("ratio({m}, {a}/{b}): the run has no directory `{a}` or `{b}`"),
            }
        }
        Expr::Bin(a, op, b) => {
            let (x, y) = (eval(a, v, dir)?, eval(b, v, dir)?);
            match op {
                '+' => x + y,
                '-' => x - y,
                '*' => x * y,
                _ => x / y,
            }
        }
    })
}

fn expr(lx: &mut Lexer) -> Result<Expr> {
    let mut e = term(lx)?;
    loop {
        let op = if lx.eat("+") {
            '+'
        } else if lx.peek().starts_with('-') && !lx.peek().starts_with("->") {
            lx.eat("-");
            '-'
        } else {
            return Ok(e);
        };
        e = Expr::Bin(Box::new(e), op, Box::new(term(lx)?));
    }
}

fn term(lx: &mut Lexer) -> Result<Expr> {
    let mut e = factor(lx)?;
    loop {
        let op = if lx.eat("*") {
            '*'
        } else if lx.eat("/") {
            '/'
        } else {
            return Ok(e);
        };
        e = Expr::Bin(Box::new(e), op, Box::new(factor(lx)?));
    }
}

fn factor(lx: &mut Lexer) -> Result<Expr> {
    lx.terms += 1;
    if lx.terms > MAX_TERMS {
        return Err(lx.err(&format!("more than {MAX_TERMS} terms")));
    }
    if lx.eat("(") {
        lx.depth += 1;
        if lx.depth > MAX_DEPTH {
            return Err(lx.err(&format!("parentheses nested more than {MAX_DEPTH} deep")));
        }
        let e = expr(lx)?;
        if !lx.eat(")") {
            return Err(lx.err("expected `)`"));
        }
        lx.depth -= 1;
        return Ok(e);
    }
    if lx.peek().starts_with("ratio(") {
        lx.eat("ratio(");
        let m = lx
            .word()
            .ok_or_else(|| lx.err("expected a metric"))?
            .to_string();
        if !lx.eat(",") {
            return Err(lx.err("expected `,` in ratio(METRIC, A/B)"));
        }
        let a = lx
            .word()
            .ok_or_else(|| lx.err("expected a directory"))?
            .to_string();
        if !lx.eat("/") {
            return Err(lx.err("expected `/` in ratio(METRIC, A/B)"));
        }
        let b = lx
            .word()
            .ok_or_else(|| lx.err("expected a directory"))?
            .to_string();
        if !lx.eat(")") {
            return Err(lx.err("expected `)`"));
        }
        return Ok(Expr::Ratio(m, a, b));
    }
    let w = lx
        .word()
        .ok_or_else(|| lx.err("expected a number, N, a metric or ratio(…)"))?;
    if w == "N" || w == "n" {
        return Ok(Expr::N);
    }
    if w.starts_with(|c: char| c.is_ascii_digit()) {
        return w
            .parse::<f64>()
            .map(Expr::Num)
            .map_err(|_| lx.err(&format!("`{w}` is not a number")));
    }
    Ok(Expr::Metric(w.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    struct V(BTreeMap<(String, String), f64>, f64);
    impl Values for V {
        fn get(&self, dir: &str, metric: &str) -> Option<f64> {
            if !["zstd", "plain"].contains(&dir) {
                return None;
            }
            Some(*self.0.get(&(dir.into(), metric.into())).unwrap_or(&0.0))
        }
        fn n(&self) -> f64 {
            self.1
        }
    }

    #[test]
    fn parses_and_evaluates_the_documented_forms() {
        let mut m = BTreeMap::new();
        m.insert(("zstd".into(), "wall_ms".into()), 40.0);
        m.insert(("plain".into(), "wall_ms".into()), 10.0);
        m.insert(("zstd".into(), "inode_evictions".into()), 250.0);
        m.insert(("plain".into(), "inode_evictions".into()), 250.0);
        let v = V(m, 250.0);
        let dirs = ["zstd".to_string(), "plain".to_string()];
        for (text, want) in [
            ("inode_evictions >= N", true),
            ("inode_evictions > N", false),
            ("ratio(wall_ms, zstd/plain) > 3", true),
            ("ratio(wall_ms, plain/zstd) > 3", false),
            ("create.slabinfo.maple_node.active_objs > 1000", false),
            ("wall_ms > 5 && inode_evictions == N", true),
            ("inode_evictions >= 0.5 * N + 100", true),
            ("(inode_evictions - N) / N < 0.01", true),
        ] {
            let p = Predicate::parse(text).unwrap();
            assert_eq!(p.holds(&v, &dirs).unwrap(), want, "{text}");
        }
        assert_eq!(
            Predicate::parse("create.slabinfo.maple_node.active_objs > 1000")
                .unwrap()
                .metrics(),
            ["create.slabinfo.maple_node.active_objs"]
        );
        assert!(
            Predicate::parse("ratio(wall_ms, a/b) > 1")
                .unwrap()
                .holds(&v, &dirs)
                .is_err()
        );
    }

    #[test]
    fn a_bad_predicate_is_one_line_naming_where() {
        for bad in [
            "",
            "inode_evictions",
            "wall_ms >",
            "x >= 1 junk",
            "ratio(wall_ms zstd) > 1",
            "(1 > 0",
        ] {
            let e = Predicate::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with("--until") && !e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn metrics_a_run_does_not_have_are_unknown_unless_kernel_deltas() {
        let p = Predicate::parse(
            "unlnk.p99_us < 1000 and wall_ms > 0 and create.slabinfo.maple_node.active_objs >= 0 and vmstat.pgfault >= 0 and ratio(nosuch, a/b) > 1",
        )
        .unwrap();
        let names = ["wall_ms".to_string(), "unlink.p99_us".to_string()];
        let seen = names.iter().collect();
        assert_eq!(p.unknown_metrics(&seen), ["nosuch", "unlnk.p99_us"]);
        // A function the profile never sampled is 0 in a profiled run, unknown in another.
        let p = Predicate::parse("profile.self.vfs_unlink > 1").unwrap();
        assert_eq!(p.unknown_metrics(&seen), ["profile.self.vfs_unlink"]);
        let names = ["wall_ms".to_string(), "profile.self.memset".to_string()];
        assert!(p.unknown_metrics(&names.iter().collect()).is_empty());
    }

    #[test]
    fn deep_or_long_predicates_are_one_line_errors_not_a_stack_overflow() {
        let deep = format!("{}1{} > 0", "(".repeat(50_000), ")".repeat(50_000));
        let e = Predicate::parse(&deep).unwrap_err().to_string();
        assert!(
            e.contains("nested more than 32 deep") && e.len() < 300,
            "{e}"
        );
        let long = format!("{} > 0", vec!["1"; 50_000].join(" + "));
        let e = Predicate::parse(&long).unwrap_err().to_string();
        assert!(e.contains("more than 256 terms"), "{e}");
        assert!(Predicate::parse(&format!("{}1{} > 0", "(".repeat(30), ")".repeat(30))).is_ok());
    }
}
