//! The one output path of `herd bench` and `herd sim`: the table, `--json`, and `--out DIR`,
//! so a real run and a simulated one are reported the same way.

use crate::cli::RunArgs;
use crate::fail::Fail;
use crate::output::write_out;
use anyhow::Context;
use herd_report::{Cdf, Inputs};
use herd_scenario::{table, Recorder, Report, Scenario};

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
