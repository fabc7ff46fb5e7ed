//! The report: `herd.report/v1`, the same for `herd bench` (mode `real`) and `herd sim`
//! (mode `sim`). Field meanings are documented here once; README and `schema.json` point
//! at this module.

use crate::first_retry::FirstRetrySummary;
use serde::{Deserialize, Serialize};

/// The schema tag every report carries.
pub const SCHEMA: &str = "herd.report/v1";

/// A whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// `real` (a socket) or `sim` (the simulator).
    pub mode: String,
    /// Which scenario ran.
    pub scenario: ScenarioInfo,
    /// Logical requests offered per second.
    pub offered_rps: f64,
    /// Whether a signal stopped the run early; [`Report::stop`] then says what was left
    /// out. A partial arm's client-side figures (`logical_requests`, `succeeded`, `failed`,
    /// `hard_fail_ratio`, `latency_ms`, `client_attempts`, the timeline's `offered`) count
    /// only the logical requests (with `[consumers]`: units; `logical_requests` and
    /// `client_attempts` then still count every request sent) that finished before the
    /// stop; requests still in flight were abandoned, and they are the slow ones
    /// (mid-retry, held, stalled), so the latency tail and the hard-fail ratio understate
    /// the arm. Its server-side figures
    /// (`server_requests`, `shed`, the timeline's server columns) count everything the
    /// upstream received until the stop, the abandoned requests' attempts included, so
    /// `load_multiplier` overstates it. Absent from reports older than the field: `false`.
    #[serde(default)]
    pub partial: bool,
    /// With `partial` only: how the run was stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopNote>,
    /// Proxy runs only: the real service behind herd's front, and the bounds on every
    /// wait on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetInfo>,
    /// `herd bench --target URL --direct` only: the URL the arms were driven at, with no
    /// fault front and no upstream of herd's. The arms' server-side figures
    /// (`server_requests`, `load_multiplier`, `peak_rps_multiplier`, `burst_multiplier`,
    /// `shed`, `recovery_ms`, the timeline's server columns) were then not counted: they
    /// are zero (or null) here and shown as "—" in the table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct: Option<String>,
    /// Real runs on Linux only: CPU time the machine's host (hypervisor) took from it
    /// while the run went on, summed over its CPUs, ms (`/proc/stat`'s steal, in 10 ms
    /// ticks). A virtual CPU stopped by its host stalls whichever of the driver and the
    /// target it was running, so such a run's latency and `driver_lag_ms` include pauses
    /// neither caused; the table says so when it is not zero. Absent where it cannot be
    /// read, and from simulated runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_ms: Option<u64>,
    /// One entry per arm, in scenario order.
    pub arms: Vec<ArmReport>,
    /// Shard reports only (`--shard I/N`): what `herd merge` adds up (see
    /// [`crate::mergeable`]). Absent from every other report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::mergeable::ShardSection>,
}

/// An arm's hedging. Every hedge sent is a server request, whatever became of it, so
/// `sent` is the load hedging added; `won` is how often it paid for itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HedgingReport {
    /// Hedges (attempts beyond the first of a hedged request) put on the wire.
    pub sent: u64,
    /// Hedged requests whose successful answer came from a hedge.
    pub won: u64,
    /// Answers that came after their request was done and were discarded: work the
    /// server did for nothing (cancelled attempts the server had already answered aside).
    pub wasted: u64,
    /// Attempts cancelled when another answered (the server may have served them anyway).
    pub cancelled: u64,
    /// Hedges that were due but that the throttle or budget refused.
    pub refused: u64,
}

/// An arm's circuit breaker. A rejected call is a client-side fast failure: it is in
/// neither `server_requests` nor `client_attempts`.
///
/// A replica's breaker is herd's own object, so every figure is known. A real library's
/// breaker in another program tells herd only what each answer says (the protocol's
/// `rejected`), so its report has `rejected` and no state figures: absent, not zero.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerReport {
    /// Calls the breaker turned away.
    pub rejected: u64,
    /// Times it opened (unknown for a real library's breaker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opened: Option<u64>,
    /// Time spent open, ms (each open period counted in full when it begins; unknown for a
    /// real library's breaker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_ms: Option<u64>,
    /// Calls let through while half-open, each one a server request (unknown for a real
    /// library's breaker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<u64>,
    /// When it was open, `[from, to]` ms from the start of the run, in time order: from
    /// the call that opened it to the instant it would let a probe through (the periods
    /// `open_ms` adds up), for the timeline. Empty when it never opened or is unknown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_periods_ms: Vec<[u64; 2]>,
}

impl HedgingReport {
    /// The report of a hedger's `counters` and what its client counted: `sent`, the hedges
    /// that went on the wire (the hedger's own count includes those the breaker or a spent
    /// deadline stopped first), and `stale`, answers to legs of a round already retried,
    /// discarded as the hedger's `wasted` are. Every engine builds it here.
    pub fn of(counters: &herd_retry::hedge::HedgeCounters, sent: u64, stale: u64) -> Self {
        HedgingReport {
            sent,
            won: counters.hedges_won,
            wasted: counters.wasted + stale,
            cancelled: counters.cancelled,
            refused: counters.refused,
        }
    }
}

impl BreakerReport {
    /// The report of a breaker's `counters` and its state `changes` (when, in ns from the
    /// start, and the state it entered), as [`herd_retry::breaker::Breaker::record`]
    /// returns them. Every engine builds it here.
    pub fn of(
        counters: &herd_retry::breaker::BreakerCounters,
        changes: &[(u64, herd_retry::breaker::State)],
    ) -> Self {
        let open_periods_ms = changes
            .iter()
            .filter_map(|&(at, state)| match state {
                herd_retry::breaker::State::Open { until } => {
                    Some([at / 1_000_000, until / 1_000_000])
                }
                _ => None,
            })
            .collect();
        BreakerReport {
            rejected: counters.rejected,
            opened: Some(counters.opened),
            open_ms: Some(counters.open_ns / 1_000_000),
            probes: Some(counters.probes),
            open_periods_ms,
        }
    }

    /// The report of a real library's breaker, which said only how many calls it turned
    /// away (`rejected`, summed over the arm's answers).
    pub fn rejections(rejected: u64) -> Self {
        BreakerReport {
            rejected,
            ..Self::default()
        }
    }
}

/// The target of a proxy run (see [`crate::target`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// `scheme://HOST:PORT`.
    pub url: String,
    /// Longest wait for a connection to the target, ms.
    pub connect_timeout_ms: u64,
    /// Longest wait from a forwarded request to the target's response head, ms (then the
    /// front answers 504).
    pub answer_timeout_ms: u64,
    /// Pause between arms, ms.
    pub settle_ms: u64,
}

/// Answers by status class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusClasses {
    /// 1xx.
    #[serde(rename = "1xx")]
    pub s1xx: u64,
    /// 2xx.
    #[serde(rename = "2xx")]
    pub s2xx: u64,
    /// 3xx.
    #[serde(rename = "3xx")]
    pub s3xx: u64,
    /// 4xx.
    #[serde(rename = "4xx")]
    pub s4xx: u64,
    /// 5xx.
    #[serde(rename = "5xx")]
    pub s5xx: u64,
}

impl StatusClasses {
    /// Counts one answer with status `code` (codes outside 100..=599 count as 5xx: a
    /// target that sends them is broken).
    pub fn add(&mut self, code: u16) {
        match code {
            100..=199 => self.s1xx += 1,
            200..=299 => self.s2xx += 1,
            300..=399 => self.s3xx += 1,
            400..=499 => self.s4xx += 1,
            _ => self.s5xx += 1,
        }
    }
}

/// Forwarded requests the target never answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetErrors {
    /// No connection (refused, unreachable, or not within the connect timeout); the front
    /// answered 502.
    pub connect: u64,
    /// No response head within the answer timeout; the front answered 504.
    pub timeout: u64,
    /// The connection broke before the response head; the front answered 502.
    pub broken: u64,
}

impl TargetErrors {
    /// All of them.
    pub fn total(&self) -> u64 {
        self.connect + self.timeout + self.broken
    }
}

/// How a partial run was stopped, and what it left out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StopNote {
    /// The signal, `SIGINT` or `SIGTERM`.
    pub signal: String,
    /// From the start of the command to the signal, ms.
    pub after_ms: u64,
    /// Logical requests (with `[consumers]`: units of work) that finished, over the
    /// reported arms.
    pub finished: u64,
    /// Logical requests (units) the scenario asked for, over all its arms.
    pub planned: u64,
    /// Arms left out of `arms`: not started before the stop (`herd bench`) or not finished
    /// (`herd sim`, which reports only whole arms).
    pub left_out: Vec<String>,
}

/// Which scenario ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioInfo {
    /// The scenario's `name`.
    pub name: String,
    /// The seed used (after `--seed`).
    pub seed: u64,
}

/// One arm's results. `Default` is an empty arm (no requests, every optional figure
/// absent), for code that builds one field by field.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ArmReport {
    /// The arm's id.
    pub id: String,
    /// The policy, in words.
    pub policy: String,
    /// Logical requests offered (and finished).
    pub logical_requests: u64,
    /// Logical requests that finally succeeded.
    pub succeeded: u64,
    /// Logical requests that finally failed.
    pub failed: u64,
    /// `failed / logical_requests`.
    pub hard_fail_ratio: f64,
    /// Latency from intended send time to final answer, over all logical requests.
    pub latency_ms: Latency,
    /// Attempts the client made (first tries plus retries).
    pub client_attempts: u64,
    /// Requests the upstream received (counted by the upstream).
    pub server_requests: u64,
    /// `server_requests / logical_requests`.
    pub load_multiplier: f64,
    /// Largest ratio of server requests to offered requests over any 1 s window (sliding
    /// by 100 ms) within the offered period.
    pub peak_rps_multiplier: f64,
    /// Largest server count in one 100 ms bucket, over `offered_rps / 10`.
    pub burst_multiplier: f64,
    /// Requests the upstream shed for capacity.
    pub shed: u64,
    /// With `[upstream.rate_limit]` only: requests the rate limit rejected, answered its
    /// status without reaching a worker or the target (counted in `server_requests`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limited: Option<u64>,
    /// With `[consumers]` only: units of work the consumers generated. The latency, the
    /// `succeeded` / `failed` counts and `hard_fail_ratio` are then per unit (arrival to
    /// done), `logical_requests` counts every logical request sent (re-sends included),
    /// and `load_multiplier` / `peak_rps_multiplier` are against this demand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demand_requests: Option<u64>,
    /// With `[consumers]` only: consumer timeouts that fired on a unit not yet done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer_timeouts: Option<u64>,
    /// With `[consumers]` only: logical requests cancelled (with their pending retries)
    /// by `on_timeout = "abandon"` or at give-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abandoned: Option<u64>,
    /// From the end of the last incident until the upstream is healthy again (see
    /// [`crate::recovery`]); `null` without incidents or if it never recovers in the run.
    pub recovery_ms: Option<u64>,
    /// Real runs only: how far behind its schedule the driver put each logical request's
    /// first attempt on the way out, ms: from the intended instant to the request being
    /// handed to a connection of the pool (any wait for a free connection included). For
    /// a Rust peer, to the request being handed to the peer's client (its own pool wait
    /// is then latency, not lag); for a client in another program, to the id being
    /// written to its adapter. Latency is measured from the intended time regardless,
    /// but a lag above a few ms means the offered load went out in bunches and the burst
    /// and peak figures overstate the arm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_lag_ms: Option<LagSummary>,
    /// Real runs only: arrivals the driver dropped at the client, unsent, because the
    /// arm's backlog (logical requests in flight or waiting, `[load] backlog`) was full:
    /// the target could not keep up with the offered load. Not counted in
    /// `logical_requests`; any drop makes the run a failure (exit 1), since the arm's
    /// figures no longer describe the offered load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_dropped: Option<u64>,
    /// Real runs of a client in another program only: the adapter's full command line,
    /// as herd ran it (program, its arguments, the protocol's flags and `--options`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Real runs only: from the server failing a logical request's first attempt (503,
    /// reset or shed) to that request's next attempt reaching the server, ms (see
    /// [`crate::first_retry`]). Absent when no such retry was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_first_retry_ms: Option<FirstRetrySummary>,
    /// A logical request's second attempt that reached the upstream before it answered the
    /// first (a hedge, or a retry after a client-side timeout): its delay from the first
    /// arrival, measured by the upstream by request id (see [`crate::first_retry`]). Real
    /// runs only; absent when there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_hedge_ms: Option<FirstRetrySummary>,
    /// A logical request's third attempt that reached the upstream before it answered any
    /// (a second hedge): its delay from the first arrival (gRPC's `hedgingPolicy` sends
    /// attempts at 0, d, 2d). Real runs only; absent when there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_second_hedge_ms: Option<FirstRetrySummary>,
    /// Proxy runs only: requests the front forwarded to the target (those that drew no
    /// fault and were not shed). `server_requests` minus this is what herd answered itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_requests: Option<u64>,
    /// Proxy runs only: the target's answers by status class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_status: Option<StatusClasses>,
    /// Proxy runs only: forwarded requests the target never answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_errors: Option<TargetErrors>,
    /// Proxy runs only: the target's latency, from the forwarded request to its response
    /// head, over the answered requests, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_latency_ms: Option<Latency>,
    /// Arms with `hedge` only: what the hedging did (see [`HedgingReport`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hedging: Option<HedgingReport>,
    /// Arms with `breaker` only: what the breaker did (see [`BreakerReport`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaker: Option<BreakerReport>,
    /// With `[[hops]]` only: one entry per hop from the edge down, the last for
    /// `[upstream]` (whose figures are also the arm's `server_requests` and multipliers).
    /// Absent without hops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hops: Option<Vec<HopReport>>,
    /// 100 ms buckets.
    pub timeline: Vec<TimelineRow>,
}

/// What one hop of a call graph received and returned, against the arm's logical
/// requests: where in the chain the load comes from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HopReport {
    /// The hop's id (`upstream` for the bottom).
    pub id: String,
    /// Requests the hop's server received.
    pub requests: u64,
    /// `requests` per logical request of the arm.
    pub amplification: f64,
    /// As [`ArmReport::peak_rps_multiplier`], at this hop.
    pub peak_rps_multiplier: f64,
    /// As [`ArmReport::burst_multiplier`], at this hop.
    pub burst_multiplier: f64,
    /// Hard failures the hop returned to its caller: 503s, resets, requests shed or
    /// rejected by its rate limit.
    pub failed: u64,
}

/// The driver's lag, milliseconds (see [`ArmReport::driver_lag_ms`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LagSummary {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Maximum.
    pub max: f64,
}

/// Latency summary, milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Maximum.
    pub max: f64,
}

/// One 100 ms bucket of an arm's timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineRow {
    /// Bucket start, ms from the start of the run.
    pub t_ms: u64,
    /// Logical requests whose intended send time falls in the bucket.
    pub offered: u64,
    /// Requests the upstream received in the bucket.
    pub server: u64,
    /// 2xx answers.
    pub ok: u64,
    /// Injected or held 503s.
    pub errors: u64,
    /// Injected or held resets.
    pub resets: u64,
    /// Requests shed for capacity.
    pub shed: u64,
}

impl Report {
    /// A report with the schema tag set.
    pub fn new(mode: &str, name: &str, seed: u64, offered_rps: f64, arms: Vec<ArmReport>) -> Self {
        Report {
            schema: SCHEMA.to_owned(),
            mode: mode.to_owned(),
            scenario: ScenarioInfo {
                name: name.to_owned(),
                seed,
            },
            offered_rps,
            partial: false,
            stop: None,
            target: None,
            direct: None,
            steal_ms: None,
            arms,
            shard: None,
        }
    }

    /// The same report, marked partial with `note`.
    pub fn stopped(mut self, note: StopNote) -> Self {
        self.partial = true;
        self.stop = Some(note);
        self
    }
}
