//! `herd check`: the retry guard a team puts in its CI. It reads a report that a run
//! already wrote and compares each arm with the limits given, so the check is cheap,
//! deterministic and independent of the machine that measured.
//!
//! The limits are `herd tune`'s ([`Limits`], with the same flags), and an arm is judged by
//! the same code as a tuned point on one seed ([`Limits::broken`] over [`Figure::of`]), so
//! the configuration tune recommends under `--max-load 1.3` passes `herd check --max-load
//! 1.3` on a report of the same scenario.
//!
//! Exit codes follow the rest of herd: 0 every checked arm is within its limits, 1 at least
//! one limit is broken (one line per violation on stdout, `arm undici: load multiplier
//! 1.42 > 1.30`), 2 the input is wrong (no such file, not JSON, not a `herd.report/v1`
//! report, an unknown `--arm`, a limit that is not a number).

use crate::cli::CheckArgs;
use crate::fail::Fail;
use anyhow::{anyhow, Context};
use herd_scenario::report::SCHEMA;
use herd_scenario::{ArmReport, Report};
use herd_tune::{eval, Figure, Limits};

pub fn run(a: CheckArgs) -> Result<(), Fail> {
    let limits = crate::flags::limits(&a.limits)?;
    let report = read(&a.report)?;
    if let Some(note) = &report.stop {
        // Still checked (a limit broken in the first seconds is broken), but not silently.
        eprintln!(
            "warning: {} is a partial report ({}); its figures cover only what finished",
            a.report,
            herd_scenario::table::partial_line(note)
        );
    }
    for id in &a.arms {
        if !report.arms.iter().any(|arm| &arm.id == id) {
            let known: Vec<_> = report.arms.iter().map(|arm| arm.id.as_str()).collect();
            return Err(Fail::input(anyhow!(
                "--arm {id}: no such arm in {} (arms: {})",
                a.report,
                known.join(", ")
            )));
        }
    }
    let arms: Vec<&ArmReport> = report
        .arms
        .iter()
        .filter(|arm| a.arms.is_empty() || a.arms.contains(&arm.id))
        .collect();
    let mut broken = 0;
    for arm in &arms {
        for (f, max, v) in breaks(&limits, arm) {
            let p = precision(f, v, max);
            println!(
                "arm {}: {} {} > {}",
                arm.id,
                name(f),
                show(f, v, p),
                show(f, max, p)
            );
            broken += 1;
        }
    }
    let what: Vec<String> = in_order(&limits)
        .into_iter()
        .map(|(f, max)| format!("{} <= {}", name(f), show(f, max, precision(f, max, max))))
        .collect();
    if broken > 0 {
        return Err(Fail::run(anyhow!(
            "{} limit(s) broken in {} ({})",
            broken,
            a.report,
            what.join(", ")
        )));
    }
    println!(
        "ok: {} arm(s) within limits ({})",
        arms.len(),
        what.join(", ")
    );
    Ok(())
}

/// The set limits in the order of the table ([`Figure::ALL`]), the order of the lines.
fn in_order(limits: &Limits) -> Vec<(Figure, f64)> {
    let mut each = limits.each();
    each.sort_by_key(|(f, _)| Figure::ALL.iter().position(|g| g == f));
    each
}

/// The limits `arm` breaks, as `(figure, limit, value)`: the arm's report is one sample,
/// judged as `herd tune` judges a point's seeds.
fn breaks(limits: &Limits, arm: &ArmReport) -> Vec<(Figure, f64, f64)> {
    let figures = eval::figures(&[Figure::ALL.map(|f| f.of(arm))]);
    let mut broken = limits.broken(&figures);
    broken.sort_by_key(|(f, _, _)| Figure::ALL.iter().position(|g| g == f));
    broken
}

/// Reads and checks a report file; every problem is bad input.
fn read(path: &str) -> Result<Report, Fail> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("cannot read report {path}"))
        .map_err(Fail::input)?;
    let v: serde_json::Value = serde_json::from_slice(&bytes)
        .with_context(|| format!("{path}: not JSON"))
        .map_err(Fail::input)?;
    match v.get("schema").and_then(|s| s.as_str()) {
        Some(SCHEMA) => {}
        Some(other) => {
            return Err(Fail::input(anyhow!(
                "{path}: not a herd report (schema `{other}`, expected `{SCHEMA}`)"
            )))
        }
        None => {
            return Err(Fail::input(anyhow!(
                "{path}: not a herd report (no `schema: \"{SCHEMA}\"` field)"
            )))
        }
    }
    serde_json::from_value(v)
        .with_context(|| format!("{path}: a malformed {SCHEMA} report"))
        .map_err(Fail::input)
}

/// How a violation names a figure.
fn name(f: Figure) -> &'static str {
    match f {
        Figure::Load => "load multiplier",
        Figure::Peak => "peak multiplier",
        Figure::Burst => "burst multiplier",
        Figure::HardFail => "hard-fail",
        Figure::P99 => "p99",
    }
}

/// A value of `f` at `p` decimals.
fn show(f: Figure, x: f64, p: usize) -> String {
    match f {
        Figure::Load | Figure::Peak | Figure::Burst => format!("{x:.p$}"),
        Figure::HardFail => format!("{:.p$}%", x * 100.0),
        Figure::P99 => format!("{x:.p$}ms"),
    }
}

/// The fewest decimals (from 2, or 0 for milliseconds, to 6) at which `v` and `max` print
/// differently, so that a violation never reads `1.30 > 1.30`.
fn precision(f: Figure, v: f64, max: f64) -> usize {
    let least = if f == Figure::P99 { 0 } else { 2 };
    (least..=6)
        .find(|&p| show(f, v, p) != show(f, max, p))
        .unwrap_or(least)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_separates_close_values() {
        let load = Figure::Load;
        assert_eq!(show(load, 1.42, precision(load, 1.42, 1.3)), "1.42");
        assert_eq!(precision(load, 1.3012, 1.3), 3);
        assert_eq!(show(Figure::HardFail, 0.0196, 2), "1.96%");
        assert_eq!(
            show(Figure::P99, 812.0, precision(Figure::P99, 812.0, 800.0)),
            "812ms"
        );
        assert_eq!(precision(Figure::P99, 800.4, 800.0), 1);
    }
}
