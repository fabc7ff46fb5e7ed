//! `herd trace synth`: a seeded example trace, written with the same generator a scenario
//! uses for `[consumers] rate` (one Poisson stream at `consumers × rate`, each unit at a
//! uniformly drawn consumer), so replaying it offers what the generated demand offers.

use crate::cli::{SynthArgs, TraceAction, TraceArgs};
use crate::fail::Fail;
use anyhow::{anyhow, Context};
use herd_scenario::{Arrival, BoundedDuration, Demand};
use std::io::Write;

/// The most lines a synthetic trace may have (about 20 GB): a typo in `--rate` should be
/// refused, not fill a disk.
const MAX_LINES: f64 = 1e9;

pub fn run(a: TraceArgs) -> Result<(), Fail> {
    match a.action {
        TraceAction::Synth(s) => synth(&s),
    }
}

fn synth(a: &SynthArgs) -> Result<(), Fail> {
    if a.consumers == 0 {
        return Err(Fail::input(anyhow!("--consumers must be at least 1")));
    }
    if !(a.seconds.is_finite() && a.seconds > 0.0) {
        return Err(Fail::input(anyhow!(
            "--seconds must be greater than 0, got {}",
            a.seconds
        )));
    }
    if !(a.rate.is_finite() && a.rate > 0.0) {
        return Err(Fail::input(anyhow!(
            "--rate must be greater than 0, got {}",
            a.rate
        )));
    }
    let end = BoundedDuration::from_secs(a.seconds)
        .map_err(|e| Fail::input(anyhow!("--seconds {e}")))?
        .get();
    let total = a.rate * f64::from(a.consumers);
    let lines = total * a.seconds;
    if lines.is_nan() || lines > MAX_LINES {
        return Err(Fail::input(anyhow!(
            "--rate × --consumers × --seconds would write about {lines:.3e} lines; herd trace synth writes at most {MAX_LINES:e} (lower one of them)"
        )));
    }
    let mut out: Box<dyn Write> = match &a.out {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p)
                .with_context(|| format!("cannot create {}", p.display()))
                .map_err(Fail::input)?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let write = |out: &mut Box<dyn Write>| -> std::io::Result<u64> {
        writeln!(
            out,
            "# herd trace synth --consumers {} --seconds {} --rate {} --seed {}",
            a.consumers, a.seconds, a.rate, a.seed
        )?;
        writeln!(out, "t_ms,consumer")?;
        let mut n = 0;
        for u in Demand::generated(Arrival::Poisson, total, u64::MAX, a.consumers, a.seed)
            .take_while(|u| u.at < end)
        {
            writeln!(out, "{:.3},{}", u.at.as_secs_f64() * 1000.0, u.consumer)?;
            n += 1;
        }
        out.flush()?;
        Ok(n)
    };
    let n = write(&mut out)
        .context("writing the trace")
        .map_err(Fail::run)?;
    if let Some(p) = &a.out {
        eprintln!("wrote {n} arrivals to {}", p.display());
    }
    Ok(())
}
