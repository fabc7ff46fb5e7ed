//! The search's pictures, in the report's style: the front (load against hard-fail, every
//! point grey, the Pareto front in colour, the recommendation ringed and named, each limit
//! a dashed line that says which limit it is) and, for a what-if sweep, one line plot per
//! figure against the swept key, one line per arm with its min–max over seeds as a bar.
//!
//! The front is points, not a line: it is the Pareto front over four figures (load, peak,
//! hard-fail and p99), so in the two this plot shows, a front point may sit above or left
//! of another, and a line through them in load order zigzags as if it meant something.

use crate::spread::{Figure, Spread};
use herd_report::palette;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const WIDTH: u32 = 1100;
const HEIGHT: u32 = 700;

/// A point on the front plot.
#[derive(Clone, Debug)]
pub struct Dot {
    /// Median load multiplier.
    pub load: f64,
    /// Median hard-fail ratio.
    pub hard_fail: f64,
    /// On the Pareto front.
    pub front: bool,
    /// A short label (its settings).
    pub label: String,
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("plot: {e:?}")
}

/// The front plot. `chosen` indexes `dots`.
pub fn front_svg(
    title: &str,
    dots: &[Dot],
    chosen: Option<usize>,
    max_load: Option<f64>,
    max_hard_fail: Option<f64>,
) -> Result<String, String> {
    let xs = dots.iter().map(|d| d.load).chain(max_load);
    let ys = dots
        .iter()
        .map(|d| d.hard_fail * 100.0)
        .chain(max_hard_fail.map(|h| h * 100.0));
    let (x0, x1) = bounds(xs);
    let (y0, y1) = bounds(ys);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(20)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("load multiplier (server requests per logical request), median over seeds")
            .y_desc("hard-fail %, median over seeds")
            .draw()
            .map_err(err)?;
        let grey = palette::OFFERED;
        chart
            .draw_series(
                dots.iter()
                    .filter(|d| !d.front)
                    .map(|d| Circle::new((d.load, d.hard_fail * 100.0), 3, grey.filled())),
            )
            .map_err(err)?
            .label("other points")
            .legend(move |(x, y)| Circle::new((x, y), 3, grey.filled()));
        let colour = palette::arm(0);
        chart
            .draw_series(
                dots.iter()
                    .filter(|d| d.front)
                    .map(|d| Circle::new((d.load, d.hard_fail * 100.0), 5, colour.filled())),
            )
            .map_err(err)?
            .label("Pareto front (over load, peak, hard-fail and p99)")
            .legend(move |(x, y)| Circle::new((x, y), 5, colour.filled()));
        if let Some(c) = chosen.and_then(|i| dots.get(i)) {
            let red = palette::arm(3);
            let at = (c.load, c.hard_fail * 100.0);
            chart
                .draw_series([EmptyElement::at(at)
                    + Circle::new((0, 0), 11, red.stroke_width(3))
                    + Text::new(
                        format!("recommended: {}", c.label),
                        (14, -14),
                        ("sans-serif", 15).into_font(),
                    )])
                .map_err(err)?
                .label("recommended")
                .legend(move |(x, y)| Circle::new((x, y), 6, red.stroke_width(3)));
        }
        let limit = palette::CAPACITY;
        let style = |h: HPos, v: VPos| {
            TextStyle::from(("sans-serif", 14).into_font())
                .color(&limit)
                .pos(Pos::new(h, v))
        };
        if let Some(l) = max_load {
            chart
                .draw_series(DashedLineSeries::new(
                    [(l, y0), (l, y1)],
                    6,
                    4,
                    limit.stroke_width(1),
                ))
                .map_err(err)?
                .label("limits")
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], limit));
            chart
                .draw_series([EmptyElement::at((l, y1))
                    + Text::new(
                        format!("--max-load {}", Figure::Load.show(l)),
                        (5, 5),
                        style(HPos::Left, VPos::Top),
                    )])
                .map_err(err)?;
        }
        if let Some(h) = max_hard_fail {
            let line = chart
                .draw_series(DashedLineSeries::new(
                    [(x0, h * 100.0), (x1, h * 100.0)],
                    6,
                    4,
                    limit.stroke_width(1),
                ))
                .map_err(err)?;
            if max_load.is_none() {
                line.label("limits")
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], limit));
            }
            chart
                .draw_series([EmptyElement::at((x1, h * 100.0))
                    + Text::new(
                        format!("--max-hard-fail {}", Figure::HardFail.show(h)),
                        (-5, -5),
                        style(HPos::Right, VPos::Bottom),
                    )])
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// One line per arm: `lines[a] = (arm id, [(x, spread)])`.
pub fn sweep_svg(
    key: &str,
    figure: Figure,
    lines: &[(String, Vec<(f64, Spread)>)],
) -> Result<String, String> {
    let xs = lines.iter().flat_map(|(_, p)| p.iter().map(|(x, _)| *x));
    let ys = lines
        .iter()
        .flat_map(|(_, p)| p.iter().flat_map(|(_, s)| [s.min, s.max]))
        .map(|y| scale(figure, y));
    let (x0, x1) = bounds(xs);
    let (y0, y1) = bounds(ys.chain([0.0]));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "{} against {key} (median, min–max over seeds)",
                    figure.title()
                ),
                ("sans-serif", 20),
            )
            .margin(20)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(key)
            .y_desc(unit(figure))
            .draw()
            .map_err(err)?;
        for (i, (arm, points)) in lines.iter().enumerate() {
            let c = palette::arm(i);
            chart
                .draw_series(LineSeries::new(
                    points.iter().map(|(x, s)| (*x, scale(figure, s.median))),
                    c.stroke_width(2),
                ))
                .map_err(err)?
                .label(arm.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c));
            chart
                .draw_series(points.iter().map(|(x, s)| {
                    PathElement::new(
                        vec![(*x, scale(figure, s.min)), (*x, scale(figure, s.max))],
                        c.stroke_width(1),
                    )
                }))
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn scale(f: Figure, y: f64) -> f64 {
    match f {
        Figure::HardFail => y * 100.0,
        _ => y,
    }
}

fn unit(f: Figure) -> &'static str {
    match f {
        Figure::Load => "load multiplier",
        Figure::Peak => "peak 1 s multiplier",
        Figure::Burst => "burst 100 ms multiplier",
        Figure::HardFail => "hard-fail %",
        Figure::P99 => "p99 ms",
    }
}

/// A padded range around `xs` (a unit range around a single value).
fn bounds(xs: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = xs
        .filter(|x| x.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.08).max(lo.abs() * 0.02).max(1e-3);
    (lo - pad, hi + pad)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dot(load: f64, hard_fail: f64, front: bool) -> Dot {
        Dot {
            load,
            hard_fail,
            front,
            label: format!("retries={load}"),
        }
    }

    #[test]
    fn the_front_is_points_the_choice_is_ringed_and_the_limits_say_which() {
        // A four-figure front is not monotone in these two: 1.2x at 3% is on it, as is 1.5x at 1%
        // and 1.3x at 4%.
        let dots = [
            dot(1.2, 0.03, true),
            dot(1.3, 0.04, true),
            dot(1.5, 0.01, true),
            dot(1.6, 0.05, false),
        ];
        let svg = front_svg("t", &dots, Some(2), Some(1.55), Some(0.02)).unwrap();
        let doc = roxmltree::Document::parse(&svg).expect("SVG parses");
        let texts: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .map(str::trim)
            .collect();
        for want in [
            "--max-load 1.550x",
            "--max-hard-fail 2.00%",
            "recommended: retries=1.5",
            "Pareto front (over load, peak, hard-fail and p99)",
        ] {
            assert!(texts.contains(&want), "no {want}: {texts:?}");
        }
        // No line through the front: every polyline is a dash or a legend stroke of two
        // points.
        for p in doc.descendants().filter(|n| n.has_tag_name("polyline")) {
            let points = p
                .attribute("points")
                .unwrap_or("")
                .split_whitespace()
                .count();
            assert!(points <= 2, "a line through {points} points");
        }
        // Four dots, the ring, and the legend's three markers.
        assert_eq!(
            doc.descendants()
                .filter(|n| n.has_tag_name("circle"))
                .count(),
            8
        );
    }
}
