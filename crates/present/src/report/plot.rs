//! Plots of a metric against N, as self-contained SVG (plotters' SVG backend): a linear
//! and a log-log view side by side, one series per label (and directory), the median as
//! a line, the spread of the repetitions as min–max error bars. Colours come from a
//! colour-blind-safe palette and every series also has its own marker and dash pattern,
//! so the plot survives grey-scale printing.

use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

/// One line of a plot.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    /// (N, median, min, max), sorted by N.
    pub points: Vec<(f64, f64, f64, f64)>,
}

/// Okabe–Ito: distinguishable with the common colour-vision deficiencies.
const PALETTE: &[RGBColor] = &[
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
];

const WIDTH: u32 = 1040;
const HEIGHT: u32 = 400;

/// XML-safe text for labels.
fn clean(s: &str) -> String {
    s.replace(['<', '>', '&', '"'], "_")
}

/// Give a series its legend entry and its markers: the same shape expression, once in
/// pixel coordinates for the legend and once in data coordinates for the points.
macro_rules! marked {
    ($chart:ident, $anno:ident, $pts:ident, |$at:ident| $shape:expr) => {{
        $anno.legend(move |$at| $shape);
        $chart
            .draw_series($pts.iter().map(|p| {
                let $at = (p.0, p.1);
                $shape
            }))
            .map_err(|e| anyhow!("drawing the plot: {e}"))?;
    }};
}

/// Axis numbers without noise: 600k, 1.2M, 12, 0.25.
pub fn axis_number(v: f64) -> String {
    let a = v.abs();
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if a >= 1e6 {
        trim(format!("{:.2}", v / 1e6)) + "M"
    } else if a >= 1e4 {
        trim(format!("{:.1}", v / 1e3)) + "k"
    } else if a >= 10.0 || a == 0.0 {
        // Ticks half a unit apart stay apart (55.5 is not a second "56").
        trim(format!("{v:.2}"))
    } else {
        trim(format!("{v:.3}"))
    }
}

/// Draw every series on one chart whose coordinates have already been chosen.
fn draw<'a, X, Y>(
    area: &DrawingArea<SVGBackend<'a>, Shift>,
    caption: &str,
    x: X,
    y: Y,
    y_desc: &str,
    series: &[Series],
    log: bool,
) -> Result<()>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let err = |e: &dyn std::fmt::Display| anyhow!("drawing the plot: {e}");
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 17))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(72)
        .build_cartesian_2d(x, y)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("N (files)")
        .y_desc(y_desc)
        .x_labels(8)
        .y_labels(7)
        .x_label_formatter(&|v| axis_number(*v))
        .y_label_formatter(&|v| axis_number(*v))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .light_line_style(RGBColor(245, 245, 245))
        .bold_line_style(RGBColor(225, 225, 225))
        .draw()
        .map_err(|e| err(&e))?;
    for (k, s) in series.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        let style = ShapeStyle::from(&color).stroke_width(2);
        // On a log axis only positive values exist.
        let pts: Vec<(f64, f64, f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|p| !log || (p.0 > 0.0 && p.1 > 0.0 && p.2 > 0.0))
            .collect();
        let line: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, p.1)).collect();
        let anno = if k % 2 == 0 {
            chart
                .draw_series(LineSeries::new(line, style))
                .map_err(|e| err(&e))?
        } else {
            chart
                .draw_series(DashedLineSeries::new(line, 7, 4, style))
                .map_err(|e| err(&e))?
        };
        let anno = anno.label(clean(&s.name));
        let filled = style.filled();
        match k % 5 {
            0 => marked!(chart, anno, pts, |at| EmptyElement::at(at)
                + Circle::new((0, 0), 4, filled)),
            1 => marked!(chart, anno, pts, |at| EmptyElement::at(at)
                + TriangleMarker::new((0, 0), 5, filled)),
            2 => marked!(chart, anno, pts, |at| EmptyElement::at(at)
                + Rectangle::new([(-4, -4), (4, 4)], filled)),
            3 => marked!(chart, anno, pts, |at| EmptyElement::at(at)
                + Cross::new((0, 0), 5, style)),
            _ => marked!(chart, anno, pts, |at| EmptyElement::at(at)
                + Polygon::new(vec![(0, -5), (5, 0), (0, 5), (-5, 0)], filled)),
        }
        chart
            .draw_series(
                pts.iter()
                    .map(|p| ErrorBar::new_vertical(p.0, p.2, p.1, p.3, style.stroke_width(1), 8)),
            )
            .map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(150, 150, 150))
        .draw()
        .map_err(|e| err(&e))?;
    Ok(())
}

/// The SVG of one metric: linear view left, log-log view right.
pub fn metric(title: &str, y_desc: &str, series: &[Series]) -> Result<String> {
    let all: Vec<&(f64, f64, f64, f64)> = series.iter().flat_map(|s| &s.points).collect();
    if all.is_empty() {
        return Err(anyhow!("no data to plot for {title}"));
    }
    let n_max = all.iter().map(|p| p.0).fold(0.0f64, f64::max);
    let n_min = all.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let y_max = all
        .iter()
        .map(|p| p.3.max(p.1))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let y_min = all
        .iter()
        .map(|p| p.2.min(p.1))
        .fold(f64::INFINITY, f64::min);
    let y_pos_min = all
        .iter()
        .flat_map(|p| [p.1, p.2])
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
        let root = root
            .titled(&clean(title), ("sans-serif", 20))
            .map_err(|e| anyhow!("{e}"))?;
        let (left, right) = root.split_horizontally(WIDTH / 2);
        let y_lo = if y_min < 0.0 { y_min * 1.1 } else { 0.0 };
        draw(
            &left,
            "linear",
            0.0..n_max * 1.05,
            y_lo..y_max * 1.12,
            y_desc,
            series,
            false,
        )?;
        if y_pos_min.is_finite() && n_min > 0.0 {
            draw(
                &right,
                "log-log",
                (n_min / 1.3..n_max * 1.3).log_scale(),
                (y_pos_min / 1.6..y_max * 1.6).log_scale(),
                y_desc,
                series,
                true,
            )?;
        } else {
            right
                .draw(&Text::new(
                    "log-log: no positive values",
                    (60, 180),
                    ("sans-serif", 14),
                ))
                .map_err(|e| anyhow!("{e}"))?;
        }
        root.present().map_err(|e| anyhow!("{e}"))?;
    }
    Ok(svg)
}

/// A strip plot for labels measured at a single N: one column per group (label, or label
/// and directory), every repetition as a point (spread sideways so equal values stay
/// visible), the median as a bar.
pub fn strip(title: &str, y_desc: &str, groups: &[(String, Vec<f64>)]) -> Result<String> {
    let colours: Vec<RGBColor> = (0..groups.len())
        .map(|k| PALETTE[k % PALETTE.len()])
        .collect();
    strip_with(
        title,
        y_desc,
        "label (each point one repetition; bar: median)",
        groups,
        &colours,
    )
}

/// How a bisect judged a step, as a colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judged {
    Good,
    Bad,
    Skipped,
}

/// A bisect's steps in list order (oldest first), coloured by verdict: good bluish green,
/// bad vermillion, skipped grey (a skipped kernel that did not run has no points).
pub fn bisect_strip(
    title: &str,
    y_desc: &str,
    steps: &[(String, Vec<f64>, Judged)],
) -> Result<String> {
    let groups: Vec<(String, Vec<f64>)> = steps
        .iter()
        .map(|(n, v, _)| (n.clone(), v.clone()))
        .collect();
    let colours: Vec<RGBColor> = steps
        .iter()
        .map(|(_, _, j)| match j {
            Judged::Good => PALETTE[2],
            Judged::Bad => PALETTE[1],
            Judged::Skipped => RGBColor(150, 150, 150),
        })
        .collect();
    strip_with(
        title,
        y_desc,
        "oldest to newest (green: good, red: bad, grey: skipped; bar: median)",
        &groups,
        &colours,
    )
}

/// Names without the ending they all share from a `-` or `+` on (`+deb12-amd64` of a
/// kernel list), so the part that tells them apart is what the axis shows.
fn short_names(names: Vec<String>) -> Vec<String> {
    if names.len() < 2 {
        return names;
    }
    let first = names[0].clone();
    let shared = first
        .char_indices()
        .filter(|(_, c)| *c == '-' || *c == '+')
        .map(|(i, _)| &first[i..])
        .find(|tail| {
            names
                .iter()
                .all(|n| n.ends_with(tail) && n.len() > tail.len())
        });
    match shared {
        Some(tail) => names
            .into_iter()
            .map(|n| n[..n.len() - tail.len()].to_string())
            .collect(),
        None => names,
    }
}

fn strip_with(
    title: &str,
    y_desc: &str,
    x_desc: &str,
    groups: &[(String, Vec<f64>)],
    colours: &[RGBColor],
) -> Result<String> {
    let values: Vec<f64> = groups.iter().flat_map(|g| g.1.iter().copied()).collect();
    if values.is_empty() {
        return Err(anyhow!("no data to plot for {title}"));
    }
    let y_max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let y_min = values.iter().copied().fold(f64::INFINITY, f64::min);
    // An axis must have a finite length (a hostile document's 1e308 and -1e308 do not).
    if !(y_max - y_min).is_finite() || !(y_max.abs() * 1.6).is_finite() {
        return Err(anyhow!("the values of {title} are too far apart to plot"));
    }
    let span = (y_max - y_min).max(y_max.abs() * 0.05).max(1e-9);
    let (lo, hi) = (
        if y_min >= 0.0 && y_min - span * 0.3 < 0.0 {
            0.0
        } else {
            y_min - span * 0.3
        },
        y_max + span * 0.3,
    );
    let names = short_names(groups.iter().map(|g| clean(&g.0)).collect());
    let err = |e: &dyn std::fmt::Display| anyhow!("drawing the plot: {e}");
    let mut svg = String::new();
    {
        // Each column as wide as its name needs (about 8 px a character), so long kernel
        // releases do not run into each other (up to three times the usual width).
        let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0) as u32;
        let column = (8 * longest + 16).max(90);
        let width = (120 + column * groups.len() as u32).clamp(WIDTH / 2 + 120, 3 * WIDTH);
        let root = SVGBackend::with_string(&mut svg, (width, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(clean(title), ("sans-serif", 18))
            .margin(14)
            .x_label_area_size(42)
            .y_label_area_size(72)
            .build_cartesian_2d(-0.5f64..groups.len() as f64 - 0.5, lo..hi)
            .map_err(|e| err(&e))?;
        let label_of = |v: &f64| {
            let k = v.round();
            if (v - k).abs() < 1e-6 && k >= 0.0 && (k as usize) < names.len() {
                names[k as usize].clone()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_labels(groups.len() * 2 + 1)
            .x_label_formatter(&label_of)
            .y_label_formatter(&|v| axis_number(*v))
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .disable_x_mesh()
            .light_line_style(RGBColor(245, 245, 245))
            .bold_line_style(RGBColor(225, 225, 225))
            .draw()
            .map_err(|e| err(&e))?;
        for (k, (_, vals)) in groups.iter().enumerate() {
            let color = colours[k];
            let style = ShapeStyle::from(&color).filled();
            let x = k as f64;
            let n = vals.len().max(1) as f64;
            chart
                .draw_series(vals.iter().enumerate().map(|(j, &v)| {
                    let dx = (j as f64 - (n - 1.0) / 2.0) * (0.5 / n);
                    Circle::new((x + dx, v), 5, style)
                }))
                .map_err(|e| err(&e))?;
            let mut sorted = vals.clone();
            sorted.sort_by(f64::total_cmp);
            if let Some(med) = analyse::stats::Summary::of(&sorted).map(|s| s.median) {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(x - 0.3, med), (x + 0.3, med)],
                        ShapeStyle::from(&BLACK).stroke_width(3),
                    )))
                    .map_err(|e| err(&e))?;
            }
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_lose_the_ending_they_share() {
        let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            short_names(v(&["6.12.113+deb12-amd64", "6.12.115+deb12-amd64"])),
            v(&["6.12.113", "6.12.115"])
        );
        assert_eq!(
            short_names(v(&["6.1.0-55-amd64", "6.12.115+deb12-amd64"])),
            v(&["6.1.0-55", "6.12.115+deb12"])
        );
        assert_eq!(short_names(v(&["a-x", "b"])), v(&["a-x", "b"]));
        assert_eq!(short_names(v(&["-x", "a-x"])), v(&["-x", "a-x"]));
    }

    #[test]
    fn strip_plots_one_column_per_label() {
        let svg = strip(
            "maple_node (create)",
            "objects",
            &[
                ("6.1".into(), vec![0.0, 0.0, 0.0]),
                ("6.12".into(), vec![1424.0, 1410.0, 1433.0]),
            ],
        )
        .unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("6.1") && svg.contains("6.12") && svg.contains("objects"));
        assert!(
            svg.matches("<circle").count() >= 6,
            "every repetition is a point"
        );
        assert!(strip("x", "y", &[]).is_err());
    }

    #[test]
    fn renders_both_views_with_a_legend() {
        let s = |name: &str, k: f64| Series {
            name: name.into(),
            points: [50.0, 100.0, 250.0, 1000.0]
                .iter()
                .map(|&n| (n, n * k, n * k * 0.9, n * k * 1.1))
                .collect(),
        };
        let svg = metric("wall time", "ms", &[s("6.1 <a>", 0.02), s("6.12", 0.03)]).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100]);
        assert!(svg.contains("\nlinear\n") && svg.contains("\nlog-log\n"));
        assert!(svg.contains("6.1 _a_") && svg.contains("6.12"), "legend");
        assert!(svg.contains("\nN (files)\n") && svg.contains("\nms\n"));
        assert!(!svg.contains("<a>"));
        assert!(metric("x", "ms", &[]).is_err());
        assert_eq!(axis_number(600000.0), "600k");
        assert_eq!(axis_number(1_250_000.0), "1.25M");
        assert_eq!(axis_number(12.0), "12");
        assert_eq!(axis_number(55.5), "55.5");
        assert_eq!(axis_number(9999.0), "9999");
        assert_eq!(axis_number(0.25), "0.25");
        assert_eq!(axis_number(0.0), "0");
    }
}
