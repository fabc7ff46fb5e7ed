//! The fit report: at each step, measured vs simulated throughput, p50/p99 and rejection
//! ratio (a table for the terminal and `fit.md`, `fit.json`, and `fit.svg`), and the
//! calibrated scenario itself (`calibrated.toml`): the scenario with the fitted model in
//! its `[upstream]`, its target kept, and `calibrated = "..."` saying so.

use super::fit::{r3, Fit, Model, Probe, Step, StepFigures};
use herd_report::palette;
use plotters::prelude::*;
use serde::Serialize;

/// What `herd calibrate` writes, besides the scenario.
#[derive(Clone, Debug, Serialize)]
pub struct FitReport {
    /// `herd.calibrate/v1`.
    pub schema: &'static str,
    /// The scenario's name.
    pub scenario: String,
    /// What was probed: a target URL, or herd's own upstream.
    pub probed: String,
    /// The fitted model.
    pub model: Model,
    /// The model in words.
    pub model_text: String,
    /// The fit's score (lower is closer).
    pub error: f64,
    /// Candidate models simulated.
    pub candidates: usize,
    /// The steps: measured, and what the model simulated.
    pub steps: Vec<StepRow>,
}

/// One step of the report.
#[derive(Clone, Debug, Serialize)]
pub struct StepRow {
    /// The measured step.
    #[serde(flatten)]
    pub step: Step,
    /// The model on the same step.
    pub simulated: StepFigures,
}

impl FitReport {
    /// The report of `fit` on `probe`.
    pub fn new(name: &str, probed: &str, probe: &Probe, fit: &Fit) -> FitReport {
        FitReport {
            schema: "herd.calibrate/v1",
            scenario: name.to_owned(),
            probed: probed.to_owned(),
            model: fit.model,
            model_text: fit.model.describe(),
            error: fit.error,
            candidates: fit.candidates,
            steps: probe
                .steps
                .iter()
                .zip(&fit.simulated)
                .map(|(s, f)| StepRow {
                    step: s.clone(),
                    simulated: *f,
                })
                .collect(),
        }
    }

    /// The table, measured / simulated side by side, with the model above it.
    pub fn markdown(&self) -> String {
        let mut t = format!(
            "calibrated {} against {}: {}\nfit error {:.4} over {} candidate model(s)\n\n",
            self.scenario, self.probed, self.model_text, self.error, self.candidates
        );
        t.push_str(
            "| offered req/s | requests | throughput measured | throughput simulated | p50 ms measured | p50 ms simulated | p99 ms measured | p99 ms simulated | rejected measured | rejected simulated | 4xx | 5xx | no answer |\n",
        );
        t.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for r in &self.steps {
            let (m, s) = (&r.step.measured, &r.simulated);
            t.push_str(&format!(
                "| {:.0} | {} | {:.1} | {:.1} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2}% | {:.2}% | {} | {} | {} |\n",
                r.step.offered_rps,
                r.step.requests,
                m.throughput_rps,
                s.throughput_rps,
                m.p50_ms,
                s.p50_ms,
                m.p99_ms,
                s.p99_ms,
                m.reject_ratio * 100.0,
                s.reject_ratio * 100.0,
                r.step.rejected_4xx,
                r.step.rejected_5xx,
                r.step.no_answer
            ));
        }
        t
    }

    /// Throughput and rejection ratio against the offered rate, measured (points) and
    /// simulated (lines).
    pub fn svg(&self) -> Result<String, String> {
        let err = |e: &dyn std::fmt::Debug| format!("{e:?}");
        let x1 = self
            .steps
            .iter()
            .map(|r| r.step.offered_rps)
            .fold(1.0, f64::max)
            * 1.05;
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| err(&e))?;
            let mut chart = ChartBuilder::on(&root)
                .caption(
                    format!(
                        "{}: measured (points) vs fitted model (lines)",
                        self.scenario
                    ),
                    ("sans-serif", 20),
                )
                .margin(20)
                .x_label_area_size(50)
                .y_label_area_size(70)
                .right_y_label_area_size(70)
                .build_cartesian_2d(0.0..x1, 0.0..x1)
                .map_err(|e| err(&e))?
                .set_secondary_coord(0.0..x1, 0.0..100.0);
            chart
                .configure_mesh()
                .x_desc("offered req/s")
                .y_desc("throughput req/s")
                .draw()
                .map_err(|e| err(&e))?;
            chart
                .configure_secondary_axes()
                .y_desc("rejected %")
                .draw()
                .map_err(|e| err(&e))?;
            let (ct, cr) = (palette::arm(0), palette::arm(1));
            chart
                .draw_series(LineSeries::new(
                    self.steps
                        .iter()
                        .map(|r| (r.step.offered_rps, r.simulated.throughput_rps)),
                    ct.stroke_width(2),
                ))
                .map_err(|e| err(&e))?
                .label("throughput, model")
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], ct));
            chart
                .draw_series(self.steps.iter().map(|r| {
                    Circle::new(
                        (r.step.offered_rps, r.step.measured.throughput_rps),
                        5,
                        ct.filled(),
                    )
                }))
                .map_err(|e| err(&e))?
                .label("throughput, measured")
                .legend(move |(x, y)| Circle::new((x + 10, y), 5, ct.filled()));
            chart
                .draw_secondary_series(LineSeries::new(
                    self.steps
                        .iter()
                        .map(|r| (r.step.offered_rps, r.simulated.reject_ratio * 100.0)),
                    cr.stroke_width(2),
                ))
                .map_err(|e| err(&e))?
                .label("rejected %, model")
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], cr));
            chart
                .draw_secondary_series(self.steps.iter().map(|r| {
                    Circle::new(
                        (r.step.offered_rps, r.step.measured.reject_ratio * 100.0),
                        5,
                        cr.filled(),
                    )
                }))
                .map_err(|e| err(&e))?
                .label("rejected %, measured")
                .legend(move |(x, y)| Circle::new((x + 10, y), 5, cr.filled()));
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.9))
                .border_style(BLACK)
                .draw()
                .map_err(|e| err(&e))?;
            root.present().map_err(|e| err(&e))?;
        }
        Ok(svg)
    }
}

/// `text` (a scenario) with `model` as its `[upstream]` model, its round trip and jitter
/// as `[network] rtt_ms` and `jitter_ms`, and `calibrated = note` beside its target (when it has one).
/// Faults and incidents are kept; the model keys (`service_time`, `workers`,
/// `queue_limit`, `shed`, `rate_limit`) are replaced.
pub fn calibrated_toml(text: &str, model: &Model, note: &str) -> Result<String, String> {
    let mut doc: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    let up = doc
        .entry("upstream")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let up = up
        .as_table_mut()
        .ok_or_else(|| "`upstream` is not a table".to_owned())?;
    for k in [
        "service_time",
        "workers",
        "queue_limit",
        "shed",
        "rate_limit",
    ] {
        up.remove(k);
    }
    for (k, v) in model.toml_keys() {
        let one: toml::Table = toml::from_str(&format!("x = {v}")).map_err(|e| e.to_string())?;
        if let Some(x) = one.get("x") {
            up.insert(k, x.clone());
        }
    }
    let has_target = up.contains_key("target");
    let net = doc
        .entry("network")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        .as_table_mut()
        .ok_or_else(|| "`network` is not a table".to_owned())?;
    net.insert("rtt_ms".to_owned(), toml::Value::Float(r3(model.rtt_ms)));
    if model.jitter_ms > 0.0 {
        net.insert(
            "jitter_ms".to_owned(),
            toml::Value::Float(r3(model.jitter_ms)),
        );
    } else {
        net.remove("jitter_ms");
    }
    let up = doc
        .get_mut("upstream")
        .and_then(toml::Value::as_table_mut)
        .ok_or_else(|| "`upstream` is not a table".to_owned())?;
    if has_target {
        up.insert(
            "calibrated".to_owned(),
            toml::Value::String(note.to_owned()),
        );
    }
    let body = toml::to_string(&doc).map_err(|e| e.to_string())?;
    Ok(format!(
        "# Written by `herd calibrate`: the [upstream] model ({}) was fitted to what the probe\n# measured; see fit.md beside this file for how close it came at each step.\n{body}",
        model.describe()
    ))
}

/// Rounded for display.
pub fn show(x: f64) -> f64 {
    r3(x)
}
