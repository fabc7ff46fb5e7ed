//! `herd check`: the retry guard a team puts in its CI. It reads a report that a run
//! already wrote and compares each arm with the limits given, so the check is cheap,
//! deterministic and independent of the machine that measured.
//!
//! Exit codes follow the rest of herd: 0 every checked arm is within its limits, 1 at least
//! one limit is broken (one line per violation on stdout, `arm undici: load multiplier
//! 1.42 > 1.30`), 2 the input is wrong (no such file, not JSON, not a `herd.report/v1`
//! report, an unknown `--arm`, a limit that is not a number).

use crate::cli::CheckArgs;
use crate::fail::Fail;
use crate::flags::ratio;
use anyhow::{anyhow, Context};
use herd_scenario::report::SCHEMA;
use herd_scenario::{ArmReport, Report};

/// One limit on one field of an arm's report.
struct Limit {
    /// How a violation names the field.
    name: &'static str,
    /// The largest value allowed.
    max: f64,
    /// Reads the field.
    value: fn(&ArmReport) -> f64,
    /// Formats a value of the field.
    show: fn(f64, usize) -> String,
}

pub fn run(a: CheckArgs) -> Result<(), Fail> {
    let limits = limits(&a)?;
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
        for l in &limits {
            let v = (l.value)(arm);
            if v > l.max {
                let p = precision(v, l.max, l.show);
                println!(
                    "arm {}: {} {} > {}",
                    arm.id,
                    l.name,
                    (l.show)(v, p),
                    (l.show)(l.max, p)
                );
                broken += 1;
            }
        }
    }
    let what: Vec<String> = limits
        .iter()
        .map(|l| {
            format!(
                "{} <= {}",
                l.name,
                (l.show)(l.max, precision(l.max, l.max, l.show))
            )
        })
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

/// The limits given on the command line, validated.
fn limits(a: &CheckArgs) -> Result<Vec<Limit>, Fail> {
    let mut out = Vec::new();
    if let Some(x) = a.max_load_multiplier {
        out.push(Limit {
            name: "load multiplier",
            max: non_negative("--max-load-multiplier", x)?,
            value: |arm| arm.load_multiplier,
            show: multiplier,
        });
    }
    if let Some(y) = a.max_peak_multiplier {
        out.push(Limit {
            name: "peak multiplier",
            max: non_negative("--max-peak-multiplier", y)?,
            value: |arm| arm.peak_rps_multiplier,
            show: multiplier,
        });
    }
    if let Some(z) = &a.max_hard_fail {
        out.push(Limit {
            name: "hard-fail",
            max: ratio(z)?,
            value: |arm| arm.hard_fail_ratio,
            show: percent,
        });
    }
    Ok(out)
}

fn non_negative(flag: &str, x: f64) -> Result<f64, Fail> {
    if x.is_finite() && x >= 0.0 {
        Ok(x)
    } else {
        Err(Fail::input(anyhow!(
            "{flag} must be a number of at least 0, got {x}"
        )))
    }
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

/// The fewest decimals (2 to 6) at which `v` and `max` print differently, so that a
/// violation never reads `1.30 > 1.30`.
fn precision(v: f64, max: f64, show: fn(f64, usize) -> String) -> usize {
    (2..=6).find(|&p| show(v, p) != show(max, p)).unwrap_or(2)
}

fn multiplier(x: f64, p: usize) -> String {
    format!("{x:.p$}")
}

fn percent(x: f64, p: usize) -> String {
    format!("{:.p$}%", x * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_separates_close_values() {
        assert_eq!(multiplier(1.42, precision(1.42, 1.3, multiplier)), "1.42");
        assert_eq!(precision(1.3012, 1.3, multiplier), 3);
        assert_eq!(percent(0.0196, 2), "1.96%");
    }
}
