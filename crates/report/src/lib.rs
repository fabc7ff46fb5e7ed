//! # herd-report
//!
//! The files people look at after a run: a retry storm is a shape in time (a spike one
//! second after a hiccup, a plateau that never comes down), and a plot shows it long before
//! a p99 does. From one [`Report`] this crate renders
//!
//! - `report.json`: the report itself, byte for byte what `--json` writes;
//! - `summary.csv`: the results table, one row per arm at full precision;
//! - `timeline.csv`: one row per arm per 100 ms bucket, for a spreadsheet;
//! - `timeline.svg`: server-received requests/s per arm over time, with the offered rate,
//!   the upstream's capacity and the incident windows, plus one small panel per arm so six
//!   overlapping lines stay readable;
//! - `latency.svg`: the latency CDF per arm, log-scale milliseconds;
//! - `report.html`: one self-contained page (inline CSS and SVG, no network, no script)
//!   with the table, both plots and the scenario.
//!
//! Every `render_*` function is pure and returns a `String`, so tests need no disk;
//! [`write_dir`] renders everything first and only then writes, each file through a temp
//! file and a rename, so a failure never leaves a half-written report.
//!
//! The plots use plotters' SVG backend without its `ttf` feature: no system font library
//! is needed, text is emitted as SVG `<text>` and laid out by whatever displays it.

mod cdf;
mod csv;
mod error;
mod html;
mod latency;
pub mod merge;
pub mod palette;
mod timeline;
mod write;

pub use cdf::{Cdf, CdfPoint};
pub use csv::render_csv;
pub use error::ReportError;
pub use html::{esc as html_escape, render_html, strip_prolog};
pub use latency::render_latency_svg;
pub use timeline::{capacity_rps, render_timeline_svg};
pub use write::{check_dir, write_dir, write_files, FILES};

use herd_scenario::{Report, Scenario};

/// Everything a report is made from.
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    /// The run's report (`herd.report/v1`).
    pub report: &'a Report,
    /// The scenario as it ran (after overrides): incidents and capacity come from here.
    pub scenario: &'a Scenario,
    /// The scenario's TOML text, shown in the HTML page.
    pub scenario_toml: &'a str,
    /// One latency CDF per arm, in the report's arm order.
    pub latency: &'a [Cdf],
}

/// The report as JSON, exactly as `--json` writes it (pretty, one trailing newline).
pub fn render_json(report: &Report) -> Result<String, ReportError> {
    let mut s = serde_json::to_string_pretty(report).map_err(ReportError::Json)?;
    s.push('\n');
    Ok(s)
}

#[cfg(test)]
mod fixture;
