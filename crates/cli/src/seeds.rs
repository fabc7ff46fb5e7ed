//! `--seeds N` for `herd sim` and `herd bench`: the scenario on its seed and the next N-1,
//! one after another, reported as median and min–max per figure (`herd.seeds/v1`). The
//! seeds are the ones `herd tune` runs, so a tune's point and a `--seeds` run agree.

use crate::cli::RunArgs;
use crate::fail::Fail;
use crate::stop::Signals;
use herd_scenario::{ArmReport, Scenario};
use herd_tune::{eval, SeedsReport};
use std::process::ExitCode;

/// Runs `s` on `n` seeds and reports the spread. `one` runs every arm of one seed's
/// scenario on the command's engine, until the stop of `signals` fires; `None` when not
/// every arm ran. `mode` is the report's (`sim` or `real`).
pub fn run(
    run: &RunArgs,
    s: &Scenario,
    n: u32,
    mode: &str,
    mut one: impl FnMut(&Scenario, &Signals) -> Result<Option<Vec<ArmReport>>, Fail>,
) -> Result<ExitCode, Fail> {
    if n == 0 || n > 10_000 {
        return Err(Fail::input(anyhow::anyhow!(
            "--seeds must be between 1 and 10000, got {n}"
        )));
    }
    run.output.check()?;
    let signals = Signals::install()?;
    let seeds = eval::seeds(s.seed, n as usize);
    let mut runs: Vec<Vec<ArmReport>> = Vec::new();
    for &seed in &seeds {
        if signals.stop().is_cancelled() {
            break;
        }
        let mut this = s.clone();
        this.seed = seed;
        run.output
            .note(format_args!("seed {seed}: {} arm(s)", this.arms.len()));
        match one(&this, &signals)? {
            Some(a) if !signals.stop().is_cancelled() => runs.push(a),
            _ => break,
        }
    }
    let partial = runs.len() < seeds.len();
    let report = SeedsReport::new(mode, &s.name, seeds, &runs, partial);
    emit(run, &report)?;
    Ok(signals.exit_code())
}

fn emit(run: &RunArgs, report: &SeedsReport) -> Result<(), Fail> {
    let text = report.text();
    let json = run.output.write(&text, report)?;
    if let Some(dir) = run.output.dir() {
        let json = String::from_utf8_lossy(&json).into_owned();
        herd_report::write_files(dir, &[("seeds.json", &json), ("seeds.md", &text)])
            .map_err(Fail::run)?;
    }
    Ok(())
}
