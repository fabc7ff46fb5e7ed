//! `herd merge`: shard reports into the report one run of the whole schedule would have
//! written.
//!
//! Percentiles are never averaged: each shard's report carries its histograms, buckets
//! and counts (`herd_scenario::mergeable`), the merge adds them, and the report is made
//! from the sums by [`herd_scenario::Recorder::finish`], the code that makes a single
//! run's. Every operation is a sum (or, for the server view a simulated shard holds
//! whole, one copy checked to be equal in all), and the inputs are put in the order of
//! their shard indices first, so a merge is associative and does not depend on the order
//! of its inputs, byte for byte. A merge that covers every shard drops the `shard`
//! section: it then reads, and for a simulated run is, byte for byte the single run's.

mod arms;
mod stats;

pub use stats::FrontStats;

use herd_scenario::mergeable::{ServerScope, ShardSection};
use herd_scenario::{Recorder, Report, Scenario, StopNote};

/// A merge that cannot be made, in a sentence that names the reports.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MergeError(pub String);

/// The merged report and what its files are drawn from.
pub struct Merged {
    /// The report.
    pub report: Report,
    /// The scenario as the shards ran it (their TOML, their whole load).
    pub scenario: Scenario,
    /// The scenario's TOML.
    pub scenario_toml: String,
    /// Each arm's merged client side, in the report's arm order (for the latency plot).
    pub recorders: Vec<Recorder>,
}

/// Merges `reports` (each with the name it is known by, for the messages), with the
/// server side replaced by `fronts` when any are given.
pub fn merge(reports: &[(String, Report)], fronts: &[FrontStats]) -> Result<Merged, MergeError> {
    let mut inputs: Vec<(&str, &Report, &ShardSection)> = Vec::with_capacity(reports.len());
    for (name, r) in reports {
        let Some(s) = &r.shard else {
            return Err(MergeError(format!(
                "{name} is not a shard report: `herd merge` takes reports of `herd bench` or \
                 `herd sim` run with --shard I/N (or in a Kubernetes Indexed Job)"
            )));
        };
        inputs.push((name, r, s));
    }
    let Some(&(first_name, first, head)) = inputs.first() else {
        return Err(MergeError("no reports to merge".to_owned()));
    };
    for &(name, r, s) in &inputs[1..] {
        same(first_name, name, "mode", &first.mode, &r.mode)?;
        same(
            first_name,
            name,
            "scenario",
            &first.scenario.name,
            &r.scenario.name,
        )?;
        same(
            first_name,
            name,
            "seed",
            &first.scenario.seed,
            &r.scenario.seed,
        )?;
        same(first_name, name, "shard count", &head.count, &s.count)?;
        same(first_name, name, "requests", &head.requests, &s.requests)?;
        same(first_name, name, "rate (req/s)", &head.rate, &s.rate)?;
        if head.scenario_toml != s.scenario_toml {
            return Err(MergeError(format!(
                "{first_name} and {name} ran different scenario files (both named `{}`): \
                 shards of one run share one scenario",
                r.scenario.name
            )));
        }
        if head.server != s.server {
            return Err(MergeError(format!(
                "{first_name} and {name} are not of the same kind of run (simulated and socket?)"
            )));
        }
    }
    let mut seen = vec![None::<&str>; head.count as usize];
    for &(name, _, s) in &inputs {
        for &i in &s.indices {
            match seen.get_mut(i as usize) {
                Some(Some(other)) => {
                    return Err(MergeError(format!(
                        "shard {i}/{} is in both {other} and {name}: each shard is merged once",
                        head.count
                    )))
                }
                Some(slot) => *slot = Some(name),
                None => {
                    return Err(MergeError(format!(
                        "{name}: shard {i} is out of range for {} shards",
                        head.count
                    )))
                }
            }
        }
    }
    // Shard order, whatever the order given.
    inputs.sort_by_key(|(_, _, s)| s.indices.first().copied());
    let mut scenario = herd_scenario::parse(&head.scenario_toml, "the shards' scenario")
        .map_err(|e| MergeError(format!("{first_name}: its scenario does not parse: {e}")))?;
    scenario.seed = first.scenario.seed;
    scenario.load.rate = head.rate;
    scenario.load.requests = head.requests;
    let merged = arms::merge(&inputs, &scenario, fronts)?;
    let stops: Vec<&StopNote> = inputs
        .iter()
        .filter_map(|(_, r, _)| r.stop.as_ref())
        .collect();
    let stop_note = stop(&stops, &scenario);
    scenario
        .arms
        .retain(|a| merged.iter().any(|m| m.id == a.id));
    let indices: Vec<u32> = (0..head.count)
        .filter(|&i| seen[i as usize].is_some())
        .collect();
    let whole = indices.len() == head.count as usize;
    let mut report = Report::new(
        &first.mode,
        &first.scenario.name,
        first.scenario.seed,
        head.rate,
        merged.iter().map(|m| m.report.clone()).collect(),
    );
    if inputs.iter().any(|(_, r, _)| r.partial) {
        report.partial = true;
        report.stop = stop_note;
    }
    report.target = first.target.clone();
    // Shards driven `--direct` at fronts counted nothing themselves; the fronts' counts
    // (`fronts`) are the server side then, and the table shows them.
    report.direct = first.direct.clone().filter(|_| fronts.is_empty());
    report.steal_ms = inputs
        .iter()
        .filter_map(|(_, r, _)| r.steal_ms)
        .reduce(|a, b| a + b);
    if !whole {
        report.shard = Some(ShardSection {
            count: head.count,
            indices,
            start_unix_ms: inputs.iter().filter_map(|(_, _, s)| s.start_unix_ms).min(),
            server: head.server,
            rate: head.rate,
            requests: head.requests,
            scenario_toml: head.scenario_toml.clone(),
            arms: merged.iter().map(|m| m.shard.clone()).collect(),
        });
    }
    Ok(Merged {
        report,
        scenario,
        scenario_toml: head.scenario_toml.clone(),
        recorders: merged.into_iter().map(|m| m.recorder).collect(),
    })
}

fn same<T: PartialEq + std::fmt::Display>(
    a: &str,
    b: &str,
    what: &str,
    x: &T,
    y: &T,
) -> Result<(), MergeError> {
    if x == y {
        Ok(())
    } else {
        Err(MergeError(format!(
            "{a} and {b} are not shards of one run: {what} {x} against {y}"
        )))
    }
}

/// The stop of a merge of partial shards: the first stopped shard's signal, the latest
/// stop, the finished and planned requests summed, and every arm any shard left out.
fn stop(stops: &[&StopNote], scenario: &Scenario) -> Option<StopNote> {
    let first = stops.first()?;
    let mut left_out: Vec<String> = Vec::new();
    for arm in &scenario.arms {
        if stops.iter().any(|s| s.left_out.contains(&arm.id)) {
            left_out.push(arm.id.clone());
        }
    }
    Some(StopNote {
        signal: first.signal.clone(),
        after_ms: stops.iter().map(|s| s.after_ms).max().unwrap_or(0),
        finished: stops.iter().map(|s| s.finished).sum(),
        planned: stops.iter().map(|s| s.planned).sum(),
        left_out,
    })
}

/// Whether the shards' server figures are whole (simulated) or their own (sockets).
pub fn scope_words(scope: ServerScope) -> &'static str {
    match scope {
        ServerScope::Own => "each shard's fronts counted its own attempts, summed",
        ServerScope::Whole => "every shard simulated the whole upstream, taken once",
    }
}
