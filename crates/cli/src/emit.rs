//! The one output path of `herd bench` and `herd sim`: the table, `--json`, and `--out DIR`,
//! so a real run and a simulated one are reported the same way.

use crate::cli::RunArgs;
use crate::fail::Fail;
use crate::output::write_out;
use crate::stop::Caught;
use anyhow::Context;
use herd_report::{Cdf, Inputs};
use herd_scenario::{table, Recorder, Report, Scenario, StopNote};

/// Checks `--out` before anything runs (bad input exits 2 and writes nothing).
pub fn check_out(run: &RunArgs) -> Result<(), Fail> {
    if let Some(dir) = &run.out {
        herd_report::check_dir(dir)
            .with_context(|| format!("--out {}", dir.display()))
            .map_err(Fail::input)?;
    }
    Ok(())
}

/// Prints the table and writes the JSON report and the report directory, as asked.
pub fn emit(
    run: &RunArgs,
    report: &Report,
    scenario: &Scenario,
    scenario_toml: &str,
    recorders: &[&Recorder],
) -> Result<(), Fail> {
    let quiet = run.quiet;
    let table = table::render(report);
    match &run.json {
        Some(path) => {
            let mut json = serde_json::to_vec_pretty(report).map_err(Fail::run)?;
            json.push(b'\n');
            write_out(path, &json).map_err(Fail::run)?;
            match (path.as_str(), quiet) {
                (_, true) => {}
                ("-", false) => eprint!("{table}"),
                _ => print!("{table}"),
            }
        }
        None => print!("{table}"),
    }
    if let Some(dir) = &run.out {
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
        if !quiet {
            eprintln!("report written to {}", dir.join("report.html").display());
        }
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
