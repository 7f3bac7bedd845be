//! Flame graphs of folded stacks as static SVG: a frame per function on its caller, as
//! wide as its share of the samples, the root at the bottom; each frame's `<title>` says
//! its samples and share, so a browser shows them on hover without any script. The
//! differential graph (Brendan Gregg's) draws the second profile's shape and colours each
//! frame by how its share moved from the first: red grew, blue shrank, white unchanged.

use super::markup::escape;
use std::collections::BTreeMap;

/// As wide as the other plots: the page's column (1,068 px at most) shows it whole.
const WIDTH: f64 = 1040.0;
const FRAME: f64 = 17.0;
const TOP: f64 = 28.0;
/// The move (percentage points) drawn at full strength at the least: smaller largest
/// moves stay pale, so two profiles of one kernel do not look like a change.
const FULL_MOVE: f64 = 2.0;
/// Frames narrower than this (pixels) are not drawn: a few samples among thousands.
const MIN_WIDTH: f64 = 0.6;
/// Roughly one character of the 11 px monospace label.
const CHAR: f64 = 6.7;

#[derive(Default)]
struct Node {
    samples: u64,
    children: BTreeMap<String, Node>,
}

impl Node {
    fn from_stacks(stacks: &BTreeMap<String, u64>) -> Node {
        let mut root = Node::default();
        for (stack, &n) in stacks {
            root.samples += n;
            let mut at = &mut root;
            for f in stack.split(';') {
                at = at.children.entry(f.to_string()).or_default();
                at.samples += n;
            }
        }
        root
    }

    fn depth(&self) -> usize {
        self.children
            .values()
            .map(|c| 1 + c.depth())
            .max()
            .unwrap_or(0)
    }

    /// The samples below the path `path` (root first), 0 when there is no such path.
    fn at(&self, path: &[&str]) -> u64 {
        match path.split_first() {
            None => self.samples,
            Some((f, rest)) => self.children.get(*f).map_or(0, |c| c.at(rest)),
        }
    }
}

/// How a frame is coloured.
enum Colour<'a> {
    /// By its name: warm colours, the same function always the same.
    Name,
    /// By how its share moved from this profile (its root's samples for the shares).
    Diff(&'a Node),
}

/// The flame graph of `stacks` titled `title`.
pub fn svg(title: &str, stacks: &BTreeMap<String, u64>) -> String {
    draw(title, &Node::from_stacks(stacks), Colour::Name)
}

/// The differential flame graph from `base` to `other`: `other`'s shape, coloured by each
/// frame's share in `other` minus its share (same call path) in `base`.
pub fn diff_svg(
    title: &str,
    base: &BTreeMap<String, u64>,
    other: &BTreeMap<String, u64>,
) -> String {
    let b = Node::from_stacks(base);
    draw(title, &Node::from_stacks(other), Colour::Diff(&b))
}

fn draw(title: &str, root: &Node, colour: Colour) -> String {
    let depth = root.depth();
    let height = TOP + (depth as f64 + 1.0) * FRAME + 6.0;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" font-family=\"monospace\" font-size=\"11\">\n<rect x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{height}\" fill=\"#fdfdf8\"/>\n<text x=\"{}\" y=\"18\" text-anchor=\"middle\" font-size=\"14\" font-family=\"sans-serif\">{}</text>\n",
        WIDTH / 2.0,
        escape(title)
    );
    if root.samples == 0 {
        out.push_str("<text x=\"10\" y=\"44\">(no samples)</text>\n</svg>");
        return out;
    }
    let scale = (WIDTH - 20.0) / root.samples as f64;
    // The largest move of any frame, so the colours use their whole range.
    let mut max_move = FULL_MOVE;
    if let Colour::Diff(base) = &colour {
        walk(root, &mut Vec::new(), &mut |path, node| {
            max_move = max_move.abs().max(moved(base, root, path, node).abs());
        });
    }
    let mut path: Vec<&str> = Vec::new();
    frames(
        root,
        &mut path,
        10.0,
        height - 6.0 - FRAME,
        scale,
        root,
        &colour,
        max_move,
        &mut out,
    );
    out.push_str("</svg>");
    out
}

/// Every node below `node` with its path, depth first.
fn walk<'a>(node: &'a Node, path: &mut Vec<&'a str>, f: &mut dyn FnMut(&[&str], &Node)) {
    for (name, c) in &node.children {
        path.push(name);
        f(path, c);
        walk(c, path, f);
        path.pop();
    }
}

/// A frame's share in `root` minus the same path's share in `base`, in percentage points.
fn moved(base: &Node, root: &Node, path: &[&str], node: &Node) -> f64 {
    let share = |n: u64, of: u64| {
        if of == 0 {
            0.0
        } else {
            n as f64 * 100.0 / of as f64
        }
    };
    share(node.samples, root.samples) - share(base.at(path), base.samples)
}

#[allow(clippy::too_many_arguments)]
fn frames<'a>(
    node: &'a Node,
    path: &mut Vec<&'a str>,
    x0: f64,
    y: f64,
    scale: f64,
    root: &Node,
    colour: &Colour,
    max_move: f64,
    out: &mut String,
) {
    let mut x = x0;
    for (name, c) in &node.children {
        let w = c.samples as f64 * scale;
        if w >= MIN_WIDTH {
            path.push(name);
            let pct = c.samples as f64 * 100.0 / root.samples as f64;
            let (fill, note) = match colour {
                Colour::Name => (name_colour(name), String::new()),
                Colour::Diff(base) => {
                    let m = moved(base, root, path, c);
                    (diff_colour(m, max_move), format!(", {m:+.2} pp"))
                }
            };
            let label = fit(name, w);
            out.push_str(&format!(
                "<g><title>{} ({} samples, {pct:.2} %{note})</title><rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{}\" fill=\"{fill}\" stroke=\"#fdfdf8\" stroke-width=\"0.5\"/>",
                escape(name),
                c.samples,
                FRAME - 1.0,
            ));
            if !label.is_empty() {
                out.push_str(&format!(
                    "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                    x + 3.0,
                    y + FRAME - 5.0,
                    escape(&label)
                ));
            }
            out.push_str("</g>\n");
            frames(c, path, x, y - FRAME, scale, root, colour, max_move, out);
            path.pop();
        }
        x += w;
    }
}

/// `name` cut to what fits in `width` pixels (`..` marks a cut), or nothing.
fn fit(name: &str, width: f64) -> String {
    let fits = ((width - 6.0) / CHAR).floor().max(0.0) as usize;
    let n = name.chars().count();
    if n <= fits {
        name.to_string()
    } else if fits >= 4 {
        name.chars().take(fits - 2).chain("..".chars()).collect()
    } else {
        String::new()
    }
}

/// A warm colour from the name's hash: stable between graphs and runs.
fn name_colour(name: &str) -> String {
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let r = 205 + (h % 50) as u8;
    let g = 80 + ((h >> 8) % 130) as u8;
    let b = ((h >> 16) % 55) as u8;
    format!("rgb({r},{g},{b})")
}

/// Red for a share that grew, blue for one that shrank, white for none: as strong as the
/// move is against the largest.
fn diff_colour(moved: f64, max_move: f64) -> String {
    let t = if max_move > 0.0 {
        (moved.abs() / max_move).min(1.0)
    } else {
        0.0
    };
    let fade = (255.0 - 200.0 * t).round() as u8;
    if moved > 0.0 {
        format!("rgb(255,{fade},{fade})")
    } else if moved < 0.0 {
        format!("rgb({fade},{fade},255)")
    } else {
        "rgb(250,250,250)".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stacks(v: &[(&str, u64)]) -> BTreeMap<String, u64> {
        v.iter().map(|(s, n)| (s.to_string(), *n)).collect()
    }

    #[test]
    fn frames_are_as_wide_as_their_samples_and_say_them() {
        let s = stacks(&[("a;b", 3), ("a;c", 1)]);
        let g = svg("t", &s);
        assert!(g.starts_with("<svg") && g.ends_with("</svg>"));
        assert!(g.contains("<title>a (4 samples, 100.00 %)</title>"), "{g}");
        assert!(g.contains("<title>b (3 samples, 75.00 %)</title>"), "{g}");
        // b is three times c's width: 1020 px for 4 samples.
        assert!(
            g.contains("width=\"765.0\"") && g.contains("width=\"255.0\""),
            "{g}"
        );
        assert!(!g.contains("<script"));
    }

    #[test]
    fn names_are_escaped_and_cut_to_fit() {
        let g = svg("<x>", &stacks(&[("f<&>", 1)]));
        assert!(
            g.contains("&lt;x&gt;") && g.contains("f&lt;&amp;&gt;"),
            "{g}"
        );
        assert_eq!(fit("simple_offset_add", 60.0), "simple..");
        assert_eq!(fit("simple_offset_add", 10.0), "");
    }

    #[test]
    fn the_difference_is_red_where_a_share_grew_and_blue_where_it_shrank() {
        let base = stacks(&[("m;x", 9), ("m;y", 1)]);
        let other = stacks(&[("m;x", 5), ("m;y", 5)]);
        let g = diff_svg("d", &base, &other);
        assert!(
            g.contains("<title>y (5 samples, 50.00 %, +40.00 pp)</title><rect"),
            "{g}"
        );
        assert!(
            g.contains("<title>x (5 samples, 50.00 %, -40.00 pp)</title><rect"),
            "{g}"
        );
        assert!(g.contains("fill=\"rgb(255,55,55)\"") && g.contains("fill=\"rgb(55,55,255)\""));
        assert!(g.contains("<title>m (10 samples, 100.00 %, +0.00 pp)"));
        assert!(svg("e", &BTreeMap::new()).contains("(no samples)"));
        // A move of 1 pp at most stays pale: no change looks like one.
        let still = diff_svg(
            "s",
            &stacks(&[("m;x", 50), ("m;y", 50)]),
            &stacks(&[("m;x", 49), ("m;y", 51)]),
        );
        assert!(still.contains("fill=\"rgb(255,155,155)\""), "{still}");
    }
}
