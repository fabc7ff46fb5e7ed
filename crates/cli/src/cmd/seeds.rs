//! `--seeds N` for `herd sim` and `herd bench`: the scenario on its seed and the next N-1,
//! one after another, reported as median and min–max per figure (`herd.seeds/v1`). The
//! seeds are the ones `herd tune` runs, so a tune's point and a `--seeds` run agree.

use super::bench::run_rounds;
use super::runtime;
use super::sim::simulate_all;
use crate::cli::RunArgs;
use crate::fail::Fail;
use crate::output::write_out;
use crate::stop::Signals;
use herd_scenario::{ArmReport, Scenario};
use herd_tune::{eval, SeedsReport};
use std::process::ExitCode;

/// Which driver runs each seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// The simulator.
    Sim,
    /// The real socket, arms scheduled as `herd bench` does (`sequential` or not).
    Bench {
        /// `--sequential`.
        sequential: bool,
    },
}

/// Runs `s` on `n` seeds and reports the spread.
pub fn run(run: &RunArgs, s: &Scenario, n: u32, driver: Driver) -> Result<ExitCode, Fail> {
    if n == 0 || n > 10_000 {
        return Err(Fail::input(anyhow::anyhow!(
            "--seeds must be between 1 and 10000, got {n}"
        )));
    }
    if let Some(path) = &run.json {
        crate::output::check_writable(path).map_err(Fail::input)?;
    }
    let signals = Signals::install()?;
    let seeds = eval::seeds(s.seed, n as usize);
    let mut runs: Vec<Vec<ArmReport>> = Vec::new();
    let rt = match driver {
        Driver::Bench { .. } => Some(runtime()?),
        Driver::Sim => None,
    };
    for &seed in &seeds {
        if signals.stop().is_requested() {
            break;
        }
        let mut one = s.clone();
        one.seed = seed;
        if !run.quiet {
            eprintln!("seed {seed}: {} arm(s)", one.arms.len());
        }
        let arms: Option<Vec<ArmReport>> = match (driver, &rt) {
            (Driver::Sim, _) => simulate_all(&one, &signals.stop())
                .iter()
                .enumerate()
                .map(|(i, r)| r.as_ref().map(|r| r.report(&one, i)))
                .collect(),
            (Driver::Bench { sequential }, Some(rt)) => rt
                .block_on(run_rounds(&one, sequential, None, None, signals.stop()))
                .map_err(Fail::run)?
                .iter()
                .enumerate()
                .map(|(i, r)| r.as_ref().map(|r| r.report(&one, i)))
                .collect(),
            (Driver::Bench { .. }, None) => None,
        };
        match arms {
            Some(a) if !signals.stop().is_requested() => runs.push(a),
            _ => break,
        }
    }
    let mode = match driver {
        Driver::Sim => "sim",
        Driver::Bench { .. } => "real",
    };
    let partial = runs.len() < seeds.len();
    let report = SeedsReport::new(mode, &s.name, seeds, &runs, partial);
    emit(run, &report)?;
    Ok(signals.exit_code())
}

fn emit(run: &RunArgs, report: &SeedsReport) -> Result<(), Fail> {
    let text = report.text();
    let mut json = serde_json::to_vec_pretty(report).map_err(Fail::run)?;
    json.push(b'\n');
    match run.json.as_deref() {
        Some(path) => {
            write_out(path, &json).map_err(Fail::run)?;
            match (path, run.quiet) {
                (_, true) => {}
                ("-", false) => eprint!("{text}"),
                _ => print!("{text}"),
            }
        }
        None => print!("{text}"),
    }
    if let Some(dir) = &run.out {
        let json = String::from_utf8_lossy(&json).into_owned();
        herd_report::write_files(dir, &[("seeds.json", &json), ("seeds.md", &text)])
            .map_err(Fail::run)?;
    }
    Ok(())
}
