//! Turns the shared run flags into a validated scenario: load it, apply `--requests`,
//! `--rate`, `--seed`, `--arm`, and check the output path, all before anything runs.

use crate::cli::RunArgs;
use crate::fail::Fail;
use crate::output::check_writable;
use anyhow::anyhow;
use herd_scenario::{load, Scenario};

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
        s.load.rate = r;
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
    if let Some(p) = &a.json {
        check_writable(p).map_err(Fail::input)?;
    }
    Ok(Prepared {
        scenario: s,
        text: loaded.text,
    })
}
