//! `timeline.svg`: what the server received, 100 ms at a time, per arm.
//!
//! # Why this shape
//!
//! A retry storm is an instant, not an average: the synchronised wave after a hold window
//! lasts one or two 100 ms buckets, so the plot uses the report's buckets as they are
//! (count × 10 = requests/s) with no smoothing. Against it are drawn the three things a
//! reader needs to judge a spike: the offered rate (what would have arrived without
//! retries), the upstream's capacity (workers over mean service time: above it work
//! queues, then is shed) and the incident windows that caused it.
//!
//! Six arms on one set of axes overlap into one band at the offered rate, so the overview
//! is followed by one small panel per arm on the same scales: the overview shows which arm
//! spikes highest, the panels show each arm's own shape.

use crate::palette;
use crate::{Inputs, ReportError};
use herd_scenario::{ArmReport, Scenario};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Width of the whole picture, pixels.
const WIDTH: u32 = 1400;
/// Height of the overview chart.
const OVERVIEW: u32 = 480;
/// Height of one per-arm panel.
const PANEL: u32 = 190;
/// Width of the legend column beside the overview.
const LEGEND: u32 = 280;
/// Height of the breaker's open strip, as a share of a panel's height.
const BREAKER_STRIP: f64 = 0.08;
/// Buckets per second.
const PER_SECOND: f64 = 10.0;

const PLOT: &str = "timeline.svg";

/// The upstream's service capacity in requests/s: `workers` over the mean service time.
/// `None` when workers are unlimited (or service takes no time): there is no line to draw.
pub fn capacity_rps(s: &Scenario) -> Option<f64> {
    let mean_s = s.upstream.service_time.mean_ms() / 1000.0;
    (s.upstream.workers > 0 && mean_s > 0.0).then(|| s.upstream.workers as f64 / mean_s)
}

/// What every chart of the picture shares.
struct Frame<'a> {
    x_max: f64,
    y_max: f64,
    capacity: Option<f64>,
    /// Incident windows, seconds.
    incidents: Vec<(f64, f64)>,
    /// Offered requests/s per bucket (the schedule is the same for every arm).
    offered: Vec<(f64, f64)>,
    arms: &'a [ArmReport],
}

/// Renders the timeline picture as an SVG document.
pub fn render_timeline_svg(inputs: &Inputs<'_>) -> Result<String, ReportError> {
    let frame = Frame::new(inputs);
    let n = frame.arms.len();
    let cols = if n > 6 { 3 } else { 2 };
    let rows = n.div_ceil(cols) as u32;
    let height = OVERVIEW + rows * PANEL + 10;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| ReportError::plot(PLOT, e))?;
        let (top, bottom) = root.split_vertically(OVERVIEW);
        let (chart, legend) = top.split_horizontally(WIDTH - LEGEND);
        let r = inputs.report;
        let title = format!(
            "{}: requests/s received by the server, 100 ms buckets (mode {}, seed {})",
            r.scenario.name, r.mode, r.scenario.seed
        );
        frame.draw(&chart, &title, 18, &(0..n).collect::<Vec<_>>())?;
        frame.legend(&legend)?;
        if n > 0 {
            let panels = bottom
                .margin(0, 10, 0, 0)
                .split_evenly((rows as usize, cols));
            for (i, area) in panels.iter().enumerate().take(n) {
                let a = &frame.arms[i];
                let caption = match peak(a) {
                    Some((t, rps)) => format!("{}: peak {rps:.0} req/s at {t:.1} s", a.id),
                    None => a.id.clone(),
                };
                frame.draw(area, &caption, 14, &[i])?;
            }
        }
        root.present().map_err(|e| ReportError::plot(PLOT, e))?;
    }
    Ok(svg)
}

/// The busiest bucket of an arm: (start in seconds, requests/s).
fn peak(a: &ArmReport) -> Option<(f64, f64)> {
    a.timeline
        .iter()
        .max_by_key(|r| (r.server, std::cmp::Reverse(r.t_ms)))
        .filter(|r| r.server > 0)
        .map(|r| (r.t_ms as f64 / 1000.0, r.server as f64 * PER_SECOND))
}

impl<'a> Frame<'a> {
    fn new(inputs: &Inputs<'a>) -> Self {
        let arms = &inputs.report.arms[..];
        let capacity = capacity_rps(inputs.scenario);
        let buckets = arms.iter().map(|a| a.timeline.len()).max().unwrap_or(0);
        let incidents: Vec<(f64, f64)> = inputs
            .scenario
            .upstream
            .incidents
            .iter()
            .map(|i| (i.start.as_secs_f64(), i.end().as_secs_f64()))
            .collect();
        let incident_end = incidents.iter().map(|w| w.1).fold(0.0, f64::max);
        let x_max = (buckets as f64 / PER_SECOND).max(incident_end).max(1.0);
        let offered: Vec<(f64, f64)> = arms
            .first()
            .map(|a| {
                a.timeline
                    .iter()
                    .map(|r| (mid(r.t_ms), r.offered as f64 * PER_SECOND))
                    .collect()
            })
            .unwrap_or_default();
        let top = arms
            .iter()
            .flat_map(|a| a.timeline.iter().map(|r| r.server))
            .max()
            .unwrap_or(0) as f64
            * PER_SECOND;
        let y_max = top
            .max(capacity.unwrap_or(0.0))
            .max(offered.iter().map(|p| p.1).fold(0.0, f64::max))
            .max(1.0)
            * 1.08;
        Frame {
            x_max,
            y_max,
            capacity,
            incidents,
            offered,
            arms,
        }
    }

    /// One chart: incidents, offered, capacity and the arms in `which`.
    fn draw(
        &self,
        area: &DrawingArea<SVGBackend<'_>, Shift>,
        caption: &str,
        caption_size: u32,
        which: &[usize],
    ) -> Result<(), ReportError> {
        let e = |e| ReportError::plot(PLOT, e);
        let overview = which.len() != 1;
        let mut chart = ChartBuilder::on(area)
            .caption(caption, ("sans-serif", caption_size))
            .margin(8)
            .x_label_area_size(if overview { 40 } else { 28 })
            .y_label_area_size(if overview { 70 } else { 56 })
            .build_cartesian_2d(0f64..self.x_max, 0f64..self.y_max)
            .map_err(e)?;
        let (x_n, x_decimals) = ticks(self.x_max, if overview { 20 } else { 10 });
        let (y_n, y_decimals) = ticks(self.y_max, if overview { 10 } else { 4 });
        let x_label = move |v: &f64| format!("{:.*}", x_decimals, v);
        let y_label = move |v: &f64| format!("{:.*}", y_decimals, v);
        let mut mesh = chart.configure_mesh();
        mesh.light_line_style(RGBColor(0xee, 0xee, 0xee))
            .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
            .label_style(("sans-serif", if overview { 13 } else { 11 }))
            .x_labels(x_n)
            .y_labels(y_n)
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label);
        if overview {
            mesh.x_desc("time since start (s)").y_desc("requests/s");
        }
        mesh.draw().map_err(e)?;
        let y_max = self.y_max;
        chart
            .draw_series(
                self.incidents.iter().map(|&(a, b)| {
                    Rectangle::new([(a, 0.0), (b, y_max)], palette::INCIDENT.filled())
                }),
            )
            .map_err(e)?;
        chart
            .draw_series(DashedLineSeries::new(
                self.offered.iter().copied(),
                6,
                4,
                palette::OFFERED.stroke_width(2),
            ))
            .map_err(e)?;
        if let Some(c) = self.capacity {
            chart
                .draw_series(DashedLineSeries::new(
                    [(0.0, c), (self.x_max, c)],
                    10,
                    5,
                    palette::CAPACITY.stroke_width(2),
                ))
                .map_err(e)?;
        }
        if !overview {
            // The breaker's open periods: a strip along the top of the arm's own panel, so
            // a gap in its requests reads as the breaker's doing, not the server's.
            let periods = which
                .iter()
                .filter_map(|&i| self.arms[i].breaker.as_ref())
                .flat_map(|b| b.open_periods_ms.iter());
            chart
                .draw_series(periods.map(|&[from, to]| {
                    let (a, b) = (from as f64 / 1000.0, to as f64 / 1000.0);
                    Rectangle::new(
                        [
                            (a, y_max * (1.0 - BREAKER_STRIP)),
                            (b.min(self.x_max), y_max),
                        ],
                        palette::BREAKER_OPEN.filled(),
                    )
                }))
                .map_err(e)?;
        }
        for &i in which {
            let a = &self.arms[i];
            chart
                .draw_series(LineSeries::new(
                    a.timeline
                        .iter()
                        .map(|r| (mid(r.t_ms), r.server as f64 * PER_SECOND)),
                    palette::arm(i).stroke_width(2),
                ))
                .map_err(e)?;
        }
        Ok(())
    }

    /// The legend column: one entry per arm, then the reference lines.
    fn legend(&self, area: &DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), ReportError> {
        let e = |e| ReportError::plot(PLOT, e);
        let text = ("sans-serif", 14).into_font();
        let mut y = 50;
        let line = |y: i32, style: ShapeStyle, dashed: bool| -> Result<(), ReportError> {
            if dashed {
                for k in 0..3 {
                    let x = 10 + k * 12;
                    area.draw(&PathElement::new([(x, y), (x + 7, y)], style))
                        .map_err(e)?;
                }
                Ok(())
            } else {
                area.draw(&PathElement::new([(10, y), (40, y)], style))
                    .map_err(e)
            }
        };
        let label = |y: i32, s: &str| {
            area.draw(&Text::new(s.to_owned(), (48, y - 8), text.clone()))
                .map_err(e)
        };
        for (i, a) in self.arms.iter().enumerate() {
            line(y, palette::arm(i).stroke_width(3), false)?;
            label(y, &a.id)?;
            y += 22;
        }
        y += 8;
        line(y, palette::OFFERED.stroke_width(2), true)?;
        label(y, "offered")?;
        y += 22;
        if let Some(c) = self.capacity {
            line(y, palette::CAPACITY.stroke_width(2), true)?;
            label(y, &format!("capacity ≈ {c:.0} req/s"))?;
            y += 22;
        }
        if !self.incidents.is_empty() {
            area.draw(&Rectangle::new(
                [(10, y - 7), (40, y + 7)],
                palette::INCIDENT.filled(),
            ))
            .map_err(e)?;
            label(y, "incident window")?;
            y += 22;
        }
        let opened = (self.arms.iter()).any(|a| {
            a.breaker
                .as_ref()
                .is_some_and(|b| !b.open_periods_ms.is_empty())
        });
        if opened {
            area.draw(&Rectangle::new(
                [(10, y - 4), (40, y + 4)],
                palette::BREAKER_OPEN.filled(),
            ))
            .map_err(e)?;
            label(y, "breaker open (atop its arm's panel)")?;
        }
        Ok(())
    }
}

/// How many labels to ask plotters for on an axis over `0..max` (at most `want`), and the
/// decimals they need. Plotters steps by 1, 2 or 5 times a power of ten; a formatter with
/// fewer decimals than the step turns `0, 0.5, 1, 1.5` into `0 0 1 2`. So from 2 up the
/// count is capped so the step is at least 1 (whole labels), and below it the decimals are
/// those of the step plotters will take: every label is distinct.
fn ticks(max: f64, want: usize) -> (usize, usize) {
    use plotters::coord::ranged1d::Ranged;
    use plotters::coord::types::RangedCoordf64;
    let n = if max >= 2.0 {
        want.min(max.floor() as usize + 1)
    } else {
        want
    };
    let points = RangedCoordf64::from(0.0..max).key_points(n);
    let step = points
        .windows(2)
        .map(|w| w[1] - w[0])
        .fold(f64::INFINITY, f64::min);
    let decimals = if step.is_finite() && step < 1.0 {
        (-step.log10() - 1e-9).ceil().max(0.0) as usize
    } else {
        0
    };
    (n, decimals)
}

/// The middle of the bucket starting at `t_ms`, seconds.
fn mid(t_ms: u64) -> f64 {
    (t_ms as f64 + 50.0) / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{svg_texts, Fixture};

    #[test]
    fn parses_as_xml_and_labels_everything() {
        let f = Fixture::new(7, 40);
        let svg = render_timeline_svg(&f.inputs()).unwrap();
        let texts = svg_texts(&svg);
        for want in [
            "arm-0",
            "arm-6",
            "offered",
            "capacity ≈ 160 req/s",
            "incident window",
        ] {
            assert!(
                texts.iter().any(|t| t == want),
                "no <text>{want}: {texts:?}"
            );
        }
        assert!(texts.iter().any(|t| t.starts_with("fixture: requests/s")));
        assert!(
            texts.iter().any(|t| t == "arm-6: peak 800 req/s at 1.9 s"),
            "{texts:?}"
        );
        assert!(texts.iter().any(|t| t == "time since start (s)"));
    }

    #[test]
    fn axis_labels_are_whole_and_unique() {
        use plotters::coord::ranged1d::Ranged;
        use plotters::coord::types::RangedCoordf64;
        for max in [
            0.3, 1.0, 1.08, 1.9, 2.0, 4.0, 5.0, 7.3, 12.0, 19.9, 41.0, 64.8, 432.0, 5400.0,
        ] {
            for want in [4, 10, 20] {
                let (n, d) = ticks(max, want);
                assert!(n <= want);
                let labels: Vec<String> = RangedCoordf64::from(0.0..max)
                    .key_points(n)
                    .iter()
                    .map(|v| format!("{v:.d$}"))
                    .collect();
                let mut unique = labels.clone();
                unique.dedup();
                assert_eq!(unique, labels, "{max} {want}: repeated");
                assert!(labels.len() >= 2, "{max} {want}: {labels:?}");
                if max >= 2.0 {
                    assert_eq!(d, 0, "{max} {want}: whole: {labels:?}");
                }
            }
        }
        // A 6.5 s run: 0 1 2 3 4 5 6, no longer 0 0 1 2 2 2 ….
        let (n, d) = ticks(6.5, 20);
        let labels: Vec<String> = RangedCoordf64::from(0.0..6.5)
            .key_points(n)
            .iter()
            .map(|v| format!("{v:.d$}"))
            .collect();
        assert_eq!(labels, ["0", "1", "2", "3", "4", "5", "6"]);
    }

    #[test]
    fn a_breakers_open_periods_are_a_strip_on_its_panel_only() {
        let mut f = Fixture::new(2, 40);
        let plain = render_timeline_svg(&f.inputs()).unwrap();
        assert!(!svg_texts(&plain)
            .iter()
            .any(|t| t.starts_with("breaker open")));
        f.report.arms[1].breaker = Some(herd_scenario::BreakerReport {
            open_periods_ms: vec![[500, 1500], [2000, 3000]],
            ..Default::default()
        });
        let svg = render_timeline_svg(&f.inputs()).unwrap();
        let texts = svg_texts(&svg);
        assert!(
            texts
                .iter()
                .any(|t| t == "breaker open (atop its arm's panel)"),
            "{texts:?}"
        );
        let c = palette::BREAKER_OPEN;
        let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
        // Two periods on arm-1's panel and the legend's swatch; none on the overview.
        assert_eq!(svg.matches(&fill).count(), 3, "{fill} in {svg}");
    }

    #[test]
    fn no_arms_still_draws() {
        let mut f = Fixture::new(0, 0);
        f.cdfs.clear();
        let svg = render_timeline_svg(&f.inputs()).unwrap();
        svg_texts(&svg);
    }

    #[test]
    fn capacity_needs_workers() {
        let f = Fixture::new(1, 1);
        assert_eq!(capacity_rps(&f.scenario), Some(160.0));
        let mut s = f.scenario.clone();
        s.upstream.workers = 0;
        assert_eq!(capacity_rps(&s), None);
    }
}
