//! Turns the shared run flags into a validated scenario: load it, apply `--requests`,
//! `--rate`, `--seed`, `--arm`, `--trace`, `--skip-bad-lines`, scan the trace, and check
//! the output path, all before anything runs.

use crate::cli::RunArgs;
use crate::fail::Fail;
use anyhow::anyhow;
use herd_scenario::{load, trace, Scenario, Trace};
use std::path::Path;

/// A scenario ready to run, with where it came from.
pub struct Prepared {
    /// The scenario with overrides applied and arms filtered.
    pub scenario: Scenario,
    /// The scenario text (for reports).
    pub text: String,
}

/// Loads and overrides; every problem is a [`Fail::Input`].
pub fn prepare(a: &RunArgs) -> Result<Prepared, Fail> {
    let loaded = load(&a.scenario).map_err(Fail::input)?;
    let mut s = loaded.scenario;
    if let Some(path) = &a.trace {
        replay(&mut s, path)?;
    }
    if let Some(n) = a.requests {
        if n == 0 {
            return Err(Fail::input(anyhow!("--requests must be at least 1")));
        }
        s.load.requests = n;
    }
    if let Some(r) = a.rate {
        if !(r.is_finite() && r > 0.0) {
            return Err(Fail::input(anyhow!(
                "--rate must be greater than 0, got {r}"
            )));
        }
        rate(&mut s, r)?;
    }
    if a.skip_bad_lines {
        let Some(t) = &mut s.load.trace else {
            return Err(Fail::input(anyhow!(
                "--skip-bad-lines applies only with a trace (--trace or [load] trace)"
            )));
        };
        t.skip_bad_lines = true;
    }
    if s.load.trace.is_none() && (a.requests.is_some() || a.rate.is_some()) {
        let flags = match (a.requests, a.rate) {
            (Some(_), Some(_)) => "--requests / --rate",
            (Some(_), None) => "--requests",
            _ => "--rate",
        };
        s.load.offered().map_err(|e| {
            Fail::input(anyhow!(
                "{flags}: {} requests at {} per second would be offered over {e}",
                s.load.requests,
                herd_scenario::duration::show(s.load.rate)
            ))
        })?;
    }
    if let Some(scan) = trace::resolve(&mut s).map_err(Fail::input)? {
        if scan.skipped > 0 && !a.output.quiet {
            let lines: Vec<String> = scan.first_skipped.iter().map(u64::to_string).collect();
            let more = if scan.skipped as usize > lines.len() {
                ", ..."
            } else {
                ""
            };
            eprintln!(
                "warning: skipped {} malformed trace line(s) (line {}{more})",
                scan.skipped,
                lines.join(", ")
            );
        }
    }
    if let Some(seed) = a.seed {
        s.seed = seed;
    }
    if !a.arms.is_empty() {
        for id in &a.arms {
            if !s.arms.iter().any(|arm| &arm.id == id) {
                let known: Vec<_> = s.arms.iter().map(|arm| arm.id.as_str()).collect();
                return Err(Fail::input(anyhow!(
                    "--arm {id}: no such arm in scenario `{}` (arms: {})",
                    s.name,
                    known.join(", ")
                )));
            }
        }
        s.arms.retain(|arm| a.arms.contains(&arm.id));
    }
    Ok(Prepared {
        scenario: s,
        text: loaded.text,
    })
}

/// `--trace FILE` (relative to the working directory): the trace replaces generated
/// arrivals; every line is replayed unless `--requests` caps it.
fn replay(s: &mut Scenario, path: &Path) -> Result<(), Fail> {
    if let Some(c) = &mut s.consumers {
        if c.rules.think().is_some() {
            return Err(Fail::input(anyhow!(
                "--trace: scenario `{}` has closed-loop consumers (think_ms), whose units start as earlier ones finish; a trace cannot say when",
                s.name
            )));
        }
        c.rate = None;
    }
    let time_scale = s.load.trace.as_ref().map_or(1.0, |t| t.time_scale);
    s.load.trace = Some(Trace {
        path: path.to_path_buf(),
        time_scale,
        skip_bad_lines: false,
    });
    s.load.requests = u64::MAX;
    Ok(())
}

/// `--rate R`: the offered rate; with consumers, spread over them.
fn rate(s: &mut Scenario, r: f64) -> Result<(), Fail> {
    if s.load.trace.is_some() {
        return Err(Fail::input(anyhow!(
            "--rate does not apply to a trace replay (its lines say when; [load] time_scale stretches it)"
        )));
    }
    if let Some(c) = &mut s.consumers {
        if c.rules.think().is_some() {
            return Err(Fail::input(anyhow!(
                "--rate does not apply to closed-loop consumers (think_ms)"
            )));
        }
        c.rate = Some(r / f64::from(c.count));
    }
    s.load.rate = r;
    Ok(())
}
