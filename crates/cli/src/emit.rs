//! The one output path of every command that writes a report (`herd bench`, `herd sim`,
//! their `--seeds`, `herd tune`): the text, `--json PATH` and `--out DIR`, taken from
//! [`OutputArgs`] and written by [`OutputArgs::write`], so that a flag means the same
//! thing in every command:
//!
//! - `--json PATH` writes the JSON atomically; `--json -` writes it to stdout, and the text
//!   then goes to stderr so that stdout stays one JSON document;
//! - `--out DIR` is checked before the run and written after it, by the command (each
//!   writes its own files), followed by a note naming the main file;
//! - `--quiet` prints nothing but what was asked for by `--json` and `--out`: no text, no
//!   progress, no notes.

use crate::cli::OutputArgs;
use crate::fail::Fail;
use crate::output::{check_writable, write_out};
use crate::stop::Caught;
use anyhow::Context;
use herd_report::{Cdf, Inputs};
use herd_scenario::{table, Recorder, Report, Scenario, StopNote};
use serde::Serialize;
use std::path::Path;

impl OutputArgs {
    /// Checks `--json` and `--out` before anything runs (bad input exits 2 and writes
    /// nothing).
    pub fn check(&self) -> Result<(), Fail> {
        if let Some(path) = &self.json {
            check_writable(path).map_err(Fail::input)?;
        }
        if let Some(dir) = &self.out {
            herd_report::check_dir(dir)
                .with_context(|| format!("--out {}", dir.display()))
                .map_err(Fail::input)?;
        }
        Ok(())
    }

    /// Writes the JSON of `report` to `--json` and prints `text`, as asked; returns the
    /// JSON (pretty, newline-terminated) for the `--out` files.
    pub fn write(&self, text: &str, report: &impl Serialize) -> Result<Vec<u8>, Fail> {
        let mut json = serde_json::to_vec_pretty(report).map_err(Fail::run)?;
        json.push(b'\n');
        if let Some(path) = &self.json {
            write_out(path, &json).map_err(Fail::run)?;
        }
        match (self.json.as_deref(), self.quiet) {
            (_, true) => {}
            (Some("-"), false) => eprint!("{text}"),
            _ => print!("{text}"),
        }
        Ok(json)
    }

    /// The `--out` directory, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.out.as_deref()
    }

    /// Prints a note on stderr unless `--quiet`.
    pub fn note(&self, line: std::fmt::Arguments) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }
}

/// Prints the table (and, under it, any client whose counts disagree with the server's:
/// [`crate::client_counts`]) and writes the JSON report and the report directory, as asked.
pub fn emit(
    output: &OutputArgs,
    report: &Report,
    scenario: &Scenario,
    scenario_toml: &str,
    recorders: &[&Recorder],
) -> Result<(), Fail> {
    let mut text = table::render(report);
    text.push_str(&crate::client_counts::render(report));
    output.write(&text, report)?;
    if let Some(dir) = output.dir() {
        let latency: Vec<Cdf> = recorders
            .iter()
            .map(|r| Cdf::from_histogram(r.histogram()))
            .collect();
        let inputs = Inputs {
            report,
            scenario,
            scenario_toml,
            latency: &latency,
        };
        herd_report::write_dir(dir, &inputs).map_err(Fail::run)?;
        output.note(format_args!(
            "report written to {}",
            dir.join("report.html").display()
        ));
    }
    Ok(())
}

/// What a stopped run's report says about the stop: the signal, when, how many of the
/// planned logical requests (units, with `[consumers]`) the reported arms finished, and
/// which arms are left out.
pub fn stop_note(
    caught: Caught,
    scenario: &Scenario,
    reported: &[&Recorder],
    left_out: Vec<String>,
) -> StopNote {
    StopNote {
        signal: caught.signal.name().to_owned(),
        after_ms: caught.after.as_millis() as u64,
        finished: reported.iter().map(|r| r.len()).sum(),
        planned: scenario.load.requests * scenario.arms.len() as u64,
        left_out,
    }
}

/// The ids of the arms whose entry in `ran` is false.
pub fn left_out(scenario: &Scenario, ran: impl Iterator<Item = bool>) -> Vec<String> {
    scenario
        .arms
        .iter()
        .zip(ran)
        .filter(|(_, ran)| !ran)
        .map(|(arm, _)| arm.id.clone())
        .collect()
}
