//! One arm's figures summed over the shards, and its report made from the sums.

use super::{FrontStats, MergeError};
use herd_scenario::mergeable::{decode, encode, ArmShard, ServerScope, ShardSection, TargetShard};
use herd_scenario::{
    ArmFacts, ArmReport, BreakerReport, ConsumerTally, HedgingReport, LagSummary, Recorder, Report,
    Scenario, ServerCounts, TargetCounts,
};

/// One merged arm.
pub(super) struct MergedArm {
    pub id: String,
    pub report: ArmReport,
    pub shard: ArmShard,
    pub recorder: Recorder,
}

/// Every arm any input reports, in the scenario's order.
pub(super) fn merge(
    inputs: &[(&str, &Report, &ShardSection)],
    scenario: &Scenario,
    fronts: &[FrontStats],
) -> Result<Vec<MergedArm>, MergeError> {
    let mut out = Vec::new();
    for arm in &scenario.arms {
        let mut parts = Vec::new();
        for &(name, r, s) in inputs {
            let rep = r.arms.iter().find(|a| a.id == arm.id);
            let fig = s.arms.iter().find(|a| a.id == arm.id);
            match (rep, fig) {
                (Some(rep), Some(fig)) => parts.push((name, rep, fig)),
                (None, None) => {}
                _ => {
                    return Err(MergeError(format!(
                        "{name}: arm {} is in its report but not in its shard section, or back",
                        arm.id
                    )))
                }
            }
        }
        if parts.is_empty() {
            continue;
        }
        let whole = inputs[0].2.server == ServerScope::Whole;
        out.push(one(&arm.id, &parts, whole, scenario, fronts)?);
    }
    if out.is_empty() {
        return Err(MergeError(
            "the reports hold no arm of their scenario".to_owned(),
        ));
    }
    Ok(out)
}

fn one(
    id: &str,
    parts: &[(&str, &ArmReport, &ArmShard)],
    whole: bool,
    scenario: &Scenario,
    fronts: &[FrontStats],
) -> Result<MergedArm, MergeError> {
    let (name0, rep0, fig0) = parts[0];
    let hist = |name: &str, text: &str| {
        decode(text).map_err(|e| MergeError(format!("{name}: arm {id}: {e}")))
    };
    let mut latency = hist(name0, &fig0.latency)?;
    let mut offered = fig0.offered.clone();
    let (mut succeeded, mut failed, mut attempts) = (fig0.succeeded, fig0.failed, fig0.attempts);
    let mut consumers = fig0.consumers;
    let mut server = fig0.server.clone();
    let mut lag = fig0.lag.as_deref().map(|t| hist(name0, t)).transpose()?;
    let mut target = fig0.target.clone();
    let mut dropped = rep0.driver_dropped;
    let mut hedging = rep0.hedging;
    let mut breaker = rep0.breaker.clone();
    for &(name, rep, fig) in &parts[1..] {
        let add = |into: &mut hdrhistogram::Histogram<u64>, text: &str| -> Result<(), MergeError> {
            into.add(hist(name, text)?)
                .map_err(|e| MergeError(format!("{name}: arm {id}: {e:?}")))
        };
        add(&mut latency, &fig.latency)?;
        add_buckets(&mut offered, &fig.offered, |a, b| *a += b);
        succeeded += fig.succeeded;
        failed += fig.failed;
        attempts += fig.attempts;
        match (&mut lag, &fig.lag) {
            (Some(l), Some(t)) => add(l, t)?,
            (None, Some(t)) => lag = Some(hist(name, t)?),
            _ => {}
        }
        dropped = sum_opt(dropped, rep.driver_dropped);
        if whole {
            // Every simulated shard holds the whole upstream's view: one copy, the same in all.
            if fig.server != fig0.server || fig.consumers != fig0.consumers {
                return Err(MergeError(format!(
                    "{name0} and {name}: arm {id}'s simulated server differs between shards \
                     (different herd versions?)"
                )));
            }
        } else {
            add_buckets(&mut server, &fig.server, |a, b| a.merge(b));
            consumers = match (consumers, fig.consumers) {
                (Some(a), Some(b)) => Some(ConsumerTally {
                    logical_requests: a.logical_requests + b.logical_requests,
                    attempts: a.attempts + b.attempts,
                    timeouts: a.timeouts + b.timeouts,
                    abandoned: a.abandoned + b.abandoned,
                }),
                (a, b) => a.or(b),
            };
            hedging = sum_hedging(hedging, rep.hedging);
            breaker = sum_breaker(breaker, rep.breaker.clone());
        }
        target = match (target, &fig.target) {
            (Some(a), Some(b)) => Some(sum_target(a, b, name, id)?),
            (a, b) => a.or(b.clone()),
        };
    }
    if !fronts.is_empty() {
        server = super::stats::server_buckets(fronts);
    }
    let recorder = Recorder::from_parts(herd_scenario::RecorderParts {
        hist: latency,
        offered: offered.clone(),
        succeeded,
        failed,
        attempts,
        consumers,
    });
    let counts = ServerCounts::from_buckets(server.clone());
    let target_counts = match &target {
        Some(t) => Some(TargetCounts::from_parts(
            t.requests,
            t.status,
            t.errors,
            hist(name0, &t.latency)?,
        )),
        None => None,
    };
    let facts = ArmFacts {
        policy: rep0.policy.clone(),
        driver_lag_ms: lag.as_ref().and_then(LagSummary::of),
        driver_dropped: dropped,
        command: rep0.command.clone(),
        target: target_counts.as_ref(),
        hedging,
        breaker,
    };
    let mut report = recorder.finish(id, &counts, scenario, facts);
    // First-retry delays are quantiles, not sums: kept only where one view holds them all.
    report.server_first_retry_ms = if whole || parts.len() == 1 {
        rep0.server_first_retry_ms.clone()
    } else {
        None
    };
    let shard = ArmShard {
        id: id.to_owned(),
        latency: encode(recorder.histogram()),
        lag: lag.as_ref().map(encode),
        offered,
        succeeded,
        failed,
        attempts,
        consumers,
        server,
        target,
    };
    Ok(MergedArm {
        id: id.to_owned(),
        report,
        shard,
        recorder,
    })
}

/// Adds `more` into `into` bucket by bucket, growing it to the longer of the two.
fn add_buckets<T: Default + Clone>(into: &mut Vec<T>, more: &[T], add: impl Fn(&mut T, &T)) {
    if more.len() > into.len() {
        into.resize(more.len(), T::default());
    }
    for (a, b) in into.iter_mut().zip(more) {
        add(a, b);
    }
}

fn sum_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

fn sum_hedging(a: Option<HedgingReport>, b: Option<HedgingReport>) -> Option<HedgingReport> {
    match (a, b) {
        (Some(a), Some(b)) => Some(HedgingReport {
            sent: a.sent + b.sent,
            won: a.won + b.won,
            wasted: a.wasted + b.wasted,
            cancelled: a.cancelled + b.cancelled,
            refused: a.refused + b.refused,
        }),
        (a, b) => a.or(b),
    }
}

/// Each shard has its own breaker (its own client): their counts add; `open_ms` is the
/// total time any shard's breaker was open, summed over shards.
fn sum_breaker(a: Option<BreakerReport>, b: Option<BreakerReport>) -> Option<BreakerReport> {
    match (a, b) {
        (Some(a), Some(b)) => Some(BreakerReport {
            rejected: a.rejected + b.rejected,
            opened: sum_known(a.opened, b.opened),
            open_ms: sum_known(a.open_ms, b.open_ms),
            probes: sum_known(a.probes, b.probes),
            open_periods_ms: {
                let mut all = [a.open_periods_ms, b.open_periods_ms].concat();
                all.sort_unstable();
                all
            },
        }),
        (a, b) => a.or(b),
    }
}

/// A figure every shard knows adds up; one a shard does not know stays unknown.
fn sum_known(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(a? + b?)
}

fn sum_target(
    a: TargetShard,
    b: &TargetShard,
    name: &str,
    id: &str,
) -> Result<TargetShard, MergeError> {
    let bad = |e: String| MergeError(format!("{name}: arm {id}: target latency: {e}"));
    let mut h = decode(&a.latency).map_err(|e| bad(e.to_string()))?;
    h.add(decode(&b.latency).map_err(|e| bad(e.to_string()))?)
        .map_err(|e| bad(format!("{e:?}")))?;
    let (s, t) = (a.status, b.status);
    Ok(TargetShard {
        requests: a.requests + b.requests,
        status: herd_scenario::StatusClasses {
            s1xx: s.s1xx + t.s1xx,
            s2xx: s.s2xx + t.s2xx,
            s3xx: s.s3xx + t.s3xx,
            s4xx: s.s4xx + t.s4xx,
            s5xx: s.s5xx + t.s5xx,
        },
        errors: herd_scenario::TargetErrors {
            connect: a.errors.connect + b.errors.connect,
            timeout: a.errors.timeout + b.errors.timeout,
            broken: a.errors.broken + b.errors.broken,
        },
        latency: encode(&h),
    })
}
