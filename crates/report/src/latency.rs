//! `latency.svg`: each arm's latency CDF, on a log-scale millisecond axis.
//!
//! # Why a CDF on a log axis
//!
//! Retries do not move the median; they move the tail, and by multiples (one 500 ms backoff
//! turns a 40 ms answer into 540 ms). A log axis gives the 35 ms body and the 2 s tail the
//! same room, and a CDF shows every percentile at once, where the table picks four. The
//! dotted lines at 50 %, 90 % and 99 % are where the table's columns are read off. On a
//! 0–100 % axis the arms' tails are crowded into the top tenth, so a second panel shows
//! only 90–100 %.

use crate::{palette, Cdf, ReportError};
use herd_scenario::Report;
use plotters::coord::Shift;
use plotters::prelude::*;

const WIDTH: u32 = 1400;
const HEIGHT: u32 = 1000;
/// Height of the full CDF; the tail panel takes the rest.
const FULL: u32 = 600;
const LEGEND: u32 = 280;
const PLOT: &str = "latency.svg";

/// Renders the latency CDFs (`cdfs[i]` for `report.arms[i]`) as an SVG document.
pub fn render_latency_svg(report: &Report, cdfs: &[Cdf]) -> Result<String, ReportError> {
    if cdfs.len() != report.arms.len() {
        return Err(ReportError::Mismatch(format!(
            "{} latency CDF(s) for {} arm(s)",
            cdfs.len(),
            report.arms.len()
        )));
    }
    let e = |e| ReportError::plot(PLOT, e);
    let (lo, hi) = cdfs
        .iter()
        .filter_map(Cdf::range_ms)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), (a, b)| {
            (lo.min(a), hi.max(b))
        });
    let (x_lo, x_hi) = if lo.is_finite() && hi > 0.0 {
        (floor_decade(lo.max(0.001)), ceil_decade(hi))
    } else {
        (1.0, 1000.0)
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let (area, legend) = root.split_horizontally(WIDTH - LEGEND);
        let (full, tail) = area.split_vertically(FULL);
        let title = format!(
            "{}: latency CDF per arm, intended send time to final answer",
            report.scenario.name
        );
        let x = (x_lo, x_hi);
        curves(&full, &title, x, (0.0, 1.0), &[0.5, 0.9, 0.99], cdfs)?;
        let tail_title = "the tail: 90% to 100%, where retries show";
        curves(&tail, tail_title, x, (0.9, 1.0), &[0.99, 0.999], cdfs)?;
        let font = ("sans-serif", 14).into_font();
        for (i, a) in report.arms.iter().enumerate() {
            let y = 50 + 22 * i as i32;
            legend
                .draw(&PathElement::new(
                    [(10, y), (40, y)],
                    palette::arm(i).stroke_width(3),
                ))
                .map_err(e)?;
            let p = &a.latency_ms;
            legend
                .draw(&Text::new(
                    format!("{} (p99 {})", a.id, ms_label(p.p99)),
                    (48, y - 8),
                    font.clone(),
                ))
                .map_err(e)?;
        }
        root.present().map_err(e)?;
    }
    Ok(svg)
}

/// A millisecond tick label: `0.5ms`, `20ms`, `2000ms`.
/// One CDF chart over the quantiles `y`, with dotted guides at `guides`.
fn curves(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    title: &str,
    (x_lo, x_hi): (f64, f64),
    (y_lo, y_hi): (f64, f64),
    guides: &[f64],
    cdfs: &[Cdf],
) -> Result<(), ReportError> {
    let e = |e| ReportError::plot(PLOT, e);
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(8)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), y_lo..y_hi)
        .map_err(e)?;
    let decimals = if y_lo > 0.0 { 1 } else { 0 };
    chart
        .configure_mesh()
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
        .label_style(("sans-serif", 13))
        .x_desc("latency (ms, log scale)")
        .y_desc("fraction of requests")
        .x_label_formatter(&|v| ms_label(*v))
        .y_label_formatter(&|v| format!("{:.*}%", decimals, v * 100.0))
        .draw()
        .map_err(e)?;
    let label_dy = (y_hi - y_lo) * 0.035;
    for &q in guides {
        chart
            .draw_series(DashedLineSeries::new(
                [(x_lo, q), (x_hi, q)],
                3,
                4,
                palette::OFFERED.stroke_width(1),
            ))
            .map_err(e)?;
        chart
            .draw_series([Text::new(
                format!("p{}", q * 100.0),
                (x_lo * 1.05, q - label_dy),
                ("sans-serif", 12).into_font().color(&palette::OFFERED),
            )])
            .map_err(e)?;
    }
    for (i, c) in cdfs.iter().enumerate() {
        // A curve starts at the last point below the panel, clamped to its floor, so it
        // enters from the bottom edge instead of being cut off or drawn along it.
        let first = c
            .points
            .iter()
            .position(|p| p.quantile >= y_lo)
            .unwrap_or(0);
        chart
            .draw_series(LineSeries::new(
                c.points[first.saturating_sub(1)..]
                    .iter()
                    .map(|p| (p.ms.max(x_lo), p.quantile.max(y_lo))),
                palette::arm(i).stroke_width(2),
            ))
            .map_err(e)?;
    }
    Ok(())
}

fn ms_label(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}ms")
    } else if v >= 1.0 {
        format!("{v:.1}ms")
    } else {
        format!("{v:.3}ms")
    }
}

fn floor_decade(v: f64) -> f64 {
    10f64.powf(v.log10().floor())
}

fn ceil_decade(v: f64) -> f64 {
    let c = 10f64.powf(v.log10().ceil());
    if c <= v {
        c * 10.0
    } else {
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{svg_texts, Fixture};

    #[test]
    fn parses_as_xml_and_has_a_legend() {
        let f = Fixture::new(3, 10);
        let svg = render_latency_svg(&f.report, &f.cdfs).unwrap();
        let texts = svg_texts(&svg);
        assert!(texts.iter().any(|t| t == "arm-2 (p99 250ms)"), "{texts:?}");
        assert!(texts.iter().any(|t| t == "latency (ms, log scale)"));
        assert!(texts.iter().any(|t| t == "p99"));
        for i in 0..3 {
            let c = palette::arm(i);
            let stroke = format!("stroke=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
            assert!(svg.contains(&stroke), "no curve for arm {i}");
        }
    }

    #[test]
    fn arms_and_cdfs_must_match() {
        let f = Fixture::new(3, 10);
        assert!(matches!(
            render_latency_svg(&f.report, &f.cdfs[..2]),
            Err(ReportError::Mismatch(_))
        ));
    }

    #[test]
    fn decades() {
        assert_eq!(floor_decade(35.0), 10.0);
        assert_eq!(ceil_decade(35.0), 100.0);
        assert_eq!(ceil_decade(100.0), 1000.0);
    }
}
