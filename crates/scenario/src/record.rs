//! The client side of a report: one [`Recorder`] per arm takes a [`LogicalRecord`] for
//! every finished logical request and keeps only a histogram and 100 ms counters, so memory
//! stays flat whatever N is. The real driver and the simulator feed the same recorder.

use crate::counts::{ServerCounts, BUCKET};
use crate::model::Scenario;
use crate::recovery::recovery_ms;
use crate::report::{
    ArmReport, BreakerReport, HedgingReport, HopReport, LagSummary, Latency, TimelineRow,
};
use crate::target_counts::TargetCounts;
use hdrhistogram::Histogram;
use std::time::Duration;

/// One finished logical request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogicalRecord {
    /// When it was meant to be sent, from the start of the run.
    pub intended: Duration,
    /// From the intended send time to the final answer (success or final failure).
    pub latency: Duration,
    /// Whether it finally succeeded.
    pub ok: bool,
    /// Attempts the client made for it (1 = no retry).
    pub attempts: u32,
}

/// What an engine saw of an arm's run beyond its [`Recorder`] and the server's counts:
/// each engine fills the parts it has and [`Recorder::finish`] assembles the report once,
/// so no engine patches a report after it is made.
#[derive(Clone, Debug, Default)]
pub struct ArmFacts<'a> {
    /// The arm's configuration in words: herd's strategy, or what the real client said.
    pub policy: String,
    /// Real sockets: how late the driver got requests out (see
    /// [`ArmReport::driver_lag_ms`]).
    pub driver_lag_ms: Option<LagSummary>,
    /// Real sockets: arrivals dropped unsent because the backlog was full.
    pub driver_dropped: Option<u64>,
    /// A client in another program: its command line, as run.
    pub command: Option<Vec<String>>,
    /// Proxy mode: what the target answered the arm's front.
    pub target: Option<&'a TargetCounts>,
    /// Arms with a hedge: what the hedging did.
    pub hedging: Option<HedgingReport>,
    /// Arms with a breaker: what the breaker did.
    pub breaker: Option<BreakerReport>,
}

/// What an arm's consumers did, beyond the units recorded (see [`Recorder::set_consumers`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConsumerTally {
    /// Logical requests the consumers sent, re-sends included.
    pub logical_requests: u64,
    /// Attempts of all those requests (the arm's retrier counts them, cancelled ones too).
    pub attempts: u64,
    /// Consumer timeouts that fired on a unit not yet done.
    pub timeouts: u64,
    /// Logical requests cancelled.
    pub abandoned: u64,
}

/// What a [`Recorder`] holds, in the open: [`Recorder::parts`] and
/// [`Recorder::from_parts`].
#[derive(Clone, Debug)]
pub struct RecorderParts {
    /// Latency, µs.
    pub hist: Histogram<u64>,
    /// Logical requests (units) per 100 ms bucket of their intended time.
    pub offered: Vec<u64>,
    /// Succeeded.
    pub succeeded: u64,
    /// Failed.
    pub failed: u64,
    /// Attempts of the recorded requests.
    pub attempts: u64,
    /// With `[consumers]`, what they sent.
    pub consumers: Option<ConsumerTally>,
}

/// Aggregates one arm's logical requests.
pub struct Recorder {
    hist: Histogram<u64>,
    offered: Vec<u64>,
    succeeded: u64,
    failed: u64,
    attempts: u64,
    consumers: Option<ConsumerTally>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    /// An empty recorder (latencies from 1 µs to 1 h at 3 significant digits).
    pub fn new() -> Self {
        Recorder {
            hist: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static bounds are valid"),
            offered: Vec::new(),
            succeeded: 0,
            failed: 0,
            attempts: 0,
            consumers: None,
        }
    }

    /// With `[consumers]`: the records are units of work, and `tally` says what the
    /// consumers sent for them; the report then counts requests and attempts from it.
    pub fn set_consumers(&mut self, tally: ConsumerTally) {
        self.consumers = Some(tally);
    }

    /// Adds one finished logical request.
    #[inline]
    pub fn record(&mut self, r: &LogicalRecord) {
        let us = r.latency.as_micros() as u64;
        self.add(
            us,
            crate::counts::bucket_index(r.intended),
            r.ok,
            r.attempts,
        );
    }

    /// [`Recorder::record`] with its times in nanoseconds (`intended` from the start of
    /// the run), for a driver whose clock counts them (the simulator's): the same record,
    /// without a `Duration` made at every request only to be taken apart again.
    #[inline]
    pub fn record_nanos(&mut self, intended: u64, latency: u64, ok: bool, attempts: u32) {
        let i = crate::counts::bucket_index_nanos(intended);
        self.add(latency / 1000, i, ok, attempts);
    }

    /// Adds a logical request of latency `us` µs intended in timeline bucket `i`.
    #[inline]
    fn add(&mut self, us: u64, i: usize, ok: bool, attempts: u32) {
        self.hist.saturating_record(us.clamp(1, 3_600_000_000));
        if i >= self.offered.len() {
            self.offered.resize(i + 1, 0);
        }
        self.offered[i] += 1;
        if ok {
            self.succeeded += 1;
        } else {
            self.failed += 1;
        }
        self.attempts += u64::from(attempts);
    }

    /// Logical requests recorded so far.
    pub fn len(&self) -> u64 {
        self.succeeded + self.failed
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Failures so far.
    pub fn failed(&self) -> u64 {
        self.failed
    }

    /// The latency histogram, in microseconds.
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// Everything the recorder holds, for a shard's report (see [`crate::mergeable`]).
    pub fn parts(&self) -> RecorderParts {
        RecorderParts {
            hist: self.hist.clone(),
            offered: self.offered.clone(),
            succeeded: self.succeeded,
            failed: self.failed,
            attempts: self.attempts,
            consumers: self.consumers,
        }
    }

    /// A recorder holding `parts`: the sum of shards' recorders is one whose report is
    /// made by [`Recorder::finish`], exactly as a single run's.
    pub fn from_parts(parts: RecorderParts) -> Recorder {
        Recorder {
            hist: parts.hist,
            offered: parts.offered,
            succeeded: parts.succeeded,
            failed: parts.failed,
            attempts: parts.attempts,
            consumers: parts.consumers,
        }
    }

    /// Joins the client's view with the server's counts and the engine's `facts` into the
    /// arm's report.
    pub fn finish(
        &self,
        id: &str,
        server: &ServerCounts,
        scenario: &Scenario,
        facts: ArmFacts<'_>,
    ) -> ArmReport {
        let offered_rps = scenario.load.rate;
        let n = self.len();
        let sb = server.buckets();
        let received: Vec<u64> = sb.iter().map(|b| b.received).collect();
        let totals = server.totals();
        let rows = self.offered.len().max(sb.len());
        let timeline: Vec<TimelineRow> = (0..rows)
            .map(|i| {
                let b = sb.get(i).copied().unwrap_or_default();
                TimelineRow {
                    t_ms: i as u64 * BUCKET.as_millis() as u64,
                    offered: self.offered.get(i).copied().unwrap_or(0),
                    server: b.received,
                    ok: b.ok,
                    errors: b.status_503,
                    resets: b.resets,
                    shed: b.shed,
                }
            })
            .collect();
        let latency = Latency::of(&self.hist);
        let per_bucket = offered_rps * BUCKET.as_secs_f64();
        ArmReport {
            id: id.to_owned(),
            policy: facts.policy,
            logical_requests: self.consumers.map_or(n, |c| c.logical_requests),
            succeeded: self.succeeded,
            failed: self.failed,
            hard_fail_ratio: ratio(self.failed, n),
            latency_ms: latency,
            client_attempts: self.consumers.map_or(self.attempts, |c| c.attempts),
            server_requests: totals.received,
            load_multiplier: ratio(totals.received, n),
            peak_rps_multiplier: round4(peak_multiplier(&self.offered, &received)),
            burst_multiplier: burst_multiplier(&received, per_bucket),
            shed: totals.shed,
            rate_limited: scenario.upstream.rate_limit.map(|_| totals.limited),
            demand_requests: self.consumers.map(|_| n),
            consumer_timeouts: self.consumers.map(|c| c.timeouts),
            abandoned: self.consumers.map(|c| c.abandoned),
            recovery_ms: recovery_ms(&timeline, &scenario.upstream),
            driver_lag_ms: facts.driver_lag_ms,
            driver_dropped: facts.driver_dropped,
            command: facts.command,
            server_first_retry_ms: server.first_retry(),
            server_hedge_ms: server.hedge_delay(),
            server_second_hedge_ms: server.second_hedge_delay(),
            target_requests: facts.target.map(TargetCounts::requests),
            target_status: facts.target.map(TargetCounts::status),
            target_errors: facts.target.map(TargetCounts::errors),
            target_latency_ms: facts.target.map(TargetCounts::latency),
            hedging: facts.hedging,
            breaker: facts.breaker,
            hops: None,
            timeline,
        }
    }

    /// With `[[hops]]`, every layer's entry from the edge down: each hop's from its own
    /// server's counts (`hops`, in the scenario's order), then `upstream` from `bottom`'s.
    /// `None` without hops. Both engines report a call graph through this.
    pub fn hop_reports(
        &self,
        scenario: &Scenario,
        hops: &[ServerCounts],
        bottom: &ServerCounts,
    ) -> Option<Vec<HopReport>> {
        if scenario.hops.is_empty() {
            return None;
        }
        let layers = scenario.hops.iter().map(|h| h.id.as_str()).zip(hops);
        let mut rows: Vec<HopReport> = layers
            .map(|(id, c)| self.hop_report(id, c, scenario))
            .collect();
        rows.push(self.hop_report("upstream", bottom, scenario));
        Some(rows)
    }

    /// What hop `id` of a call graph, whose server counted `server`, received against
    /// these logical requests (see [`HopReport`]); the multipliers are computed as the
    /// arm's are in [`Recorder::finish`].
    pub fn hop_report(&self, id: &str, server: &ServerCounts, scenario: &Scenario) -> HopReport {
        let received: Vec<u64> = server.buckets().iter().map(|b| b.received).collect();
        let totals = server.totals();
        let per_bucket = scenario.load.rate * BUCKET.as_secs_f64();
        HopReport {
            id: id.to_owned(),
            requests: totals.received,
            amplification: ratio(totals.received, self.len()),
            peak_rps_multiplier: round4(peak_multiplier(&self.offered, &received)),
            burst_multiplier: burst_multiplier(&received, per_bucket),
            failed: totals.status_503 + totals.resets + totals.shed + totals.limited,
        }
    }
}

impl Latency {
    /// The summary of a histogram in microseconds (all zero when it is empty).
    pub fn of(hist: &Histogram<u64>) -> Latency {
        if hist.is_empty() {
            return Latency::default();
        }
        let ms = |q: f64| round3(hist.value_at_quantile(q) as f64 / 1000.0);
        Latency {
            mean: round3(hist.mean() / 1000.0),
            p50: ms(0.5),
            p90: ms(0.9),
            p99: ms(0.99),
            p999: ms(0.999),
            max: round3(hist.max() as f64 / 1000.0),
        }
    }
}

impl LagSummary {
    /// p50, p99 and max in ms, to the µs, of a lag histogram in µs; `None` when nothing
    /// was sent.
    pub fn of(hist: &Histogram<u64>) -> Option<LagSummary> {
        if hist.is_empty() {
            return None;
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Some(LagSummary {
            p50: ms(hist.value_at_quantile(0.5)),
            p99: ms(hist.value_at_quantile(0.99)),
            max: ms(hist.max()),
        })
    }
}

/// Buckets in the 1 s window of `peak_rps_multiplier`.
const WINDOW: usize = 10;

/// The largest ratio of server requests to offered requests over every 1 s window that lies
/// within the offered period, sliding by one bucket. Windows past the last arrival are left
/// out (nothing is offered there, so any retry would make the ratio infinite); a run shorter
/// than a second is one window.
pub fn peak_multiplier(offered: &[u64], server: &[u64]) -> f64 {
    let n = offered.len();
    if n == 0 {
        return 0.0;
    }
    let w = WINDOW.min(n);
    let get = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    let mut off: u64 = (0..w).map(|i| get(offered, i)).sum();
    let mut srv: u64 = (0..w).map(|i| get(server, i)).sum();
    let mut best = if off > 0 {
        srv as f64 / off as f64
    } else {
        0.0
    };
    for start in 1..=(n - w) {
        off = off + get(offered, start + w - 1) - get(offered, start - 1);
        srv = srv + get(server, start + w - 1) - get(server, start - 1);
        if off > 0 {
            best = best.max(srv as f64 / off as f64);
        }
    }
    best
}

/// The busiest 100 ms bucket of `received` against the `per_bucket` requests offered in
/// one (see [`ArmReport::burst_multiplier`]).
fn burst_multiplier(received: &[u64], per_bucket: f64) -> f64 {
    round4(received.iter().copied().max().unwrap_or(0) as f64 / per_bucket.max(1e-9))
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        round4(a as f64 / b as f64)
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counts::ServerEvent;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn peak_over_sliding_windows() {
        // 10 per bucket offered for 3 s; the server sees a wave of 30 extra in bucket 15.
        let offered = vec![10u64; 30];
        let mut server = vec![10u64; 30];
        server[15] += 30;
        assert!((peak_multiplier(&offered, &server) - 1.3).abs() < 1e-9);
        assert_eq!(peak_multiplier(&offered, &offered), 1.0);
        // Retries after the last arrival do not count against an empty window.
        let mut tail = offered.clone();
        tail.extend([0; 5]);
        let mut s2 = offered.clone();
        s2.extend([50; 5]);
        assert!(peak_multiplier(&offered, &s2) < 1.0 + 1e-9);
        assert_eq!(peak_multiplier(&[], &[]), 0.0);
        assert_eq!(peak_multiplier(&[4], &[8]), 2.0);
    }

    #[test]
    fn finish_joins_client_and_server() {
        let mut r = Recorder::new();
        let mut s = ServerCounts::new();
        for i in 0..100u64 {
            let t = ms(i * 10);
            r.record(&LogicalRecord {
                intended: t,
                latency: ms(20 + i),
                ok: i % 10 != 0,
                attempts: 1 + (i % 10 == 0) as u32,
            });
            s.record(t, ServerEvent::Received);
            s.record(t, ServerEvent::Ok);
            if i % 10 == 0 {
                s.record(t + ms(5), ServerEvent::Received);
            }
        }
        let scenario = crate::embedded::load("seed-quick").unwrap().scenario;
        let facts = ArmFacts {
            policy: "none".into(),
            ..ArmFacts::default()
        };
        let a = r.finish("x", &s, &scenario, facts);
        assert_eq!(a.logical_requests, 100);
        assert_eq!(a.failed, 10);
        assert_eq!(a.hard_fail_ratio, 0.1);
        assert_eq!(a.client_attempts, 110);
        assert_eq!(a.server_requests, 110);
        assert_eq!(a.load_multiplier, 1.1);
        assert_eq!(a.timeline.len(), 10);
        assert_eq!(a.timeline[0].offered, 10);
        assert_eq!(a.timeline[0].server, 11);
        assert!(
            (a.latency_ms.p50 - 69.0).abs() < 1.0,
            "{}",
            a.latency_ms.p50
        );
        assert!((a.burst_multiplier - 1.1).abs() < 1e-9);
    }
}
