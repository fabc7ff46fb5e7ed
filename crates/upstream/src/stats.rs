//! What the upstream saw: the bucketed counts and two gauges, and their JSON form.
//!
//! One `Mutex` around [`ServerCounts`] is enough: each request takes it twice (arrival and
//! outcome) for a few nanoseconds. The gauges are atomics so that `/__herd/stats` never
//! waits on the capacity lock; they are written by the capacity module, which owns the
//! truth, and only read here.

use super::lock;
use herd_scenario::{
    Latency, ServerBucket, ServerCounts, ServerEvent, StatusClasses, TargetCounts, TargetErrors,
    TargetOutcome, BUCKET,
};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The upstream's shared, observable state. Build one with [`Stats::new`] to call
/// [`run`](super::run) yourself and read it while the server runs.
#[derive(Debug, Default)]
pub struct Stats {
    /// Everything counted, by 100 ms bucket.
    counts: Mutex<ServerCounts>,
    /// Requests holding a worker now.
    in_flight: AtomicU64,
    /// Requests waiting for a worker now.
    queued: AtomicU64,
    /// Proxy mode only: what the target answered (`None` without a target).
    target: Mutex<Option<TargetCounts>>,
    /// Proxy mode and a hop of a call graph: requests on their way to the target or the
    /// next hop (stalling or in service, waiting for a worker, or forwarded and not yet
    /// answered).
    forwarding: AtomicU64,
    /// gRPC calls by attempt number, read from `grpc-previous-rpc-attempts`: A6 allows 5
    /// attempts at most.
    grpc_attempts: ByAttempt<6>,
    /// Requests by the attempt number an AWS SDK declared in `amz-sdk-request` (legacy
    /// mode makes up to 10 attempts to DynamoDB).
    aws_attempts: ByAttempt<10>,
}

/// Requests by attempt number: `[0]` first attempts, `[1]` second, …, the last slot that
/// many or more.
#[derive(Debug)]
struct ByAttempt<const N: usize>([AtomicU64; N]);

impl<const N: usize> Default for ByAttempt<N> {
    fn default() -> Self {
        ByAttempt(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl<const N: usize> ByAttempt<N> {
    /// Counts attempt `index` + 1.
    fn count(&self, index: u64) {
        let slot = usize::try_from(index).map_or(N - 1, |i| i.min(N - 1));
        self.0[slot].fetch_add(1, Ordering::Relaxed);
    }

    /// The counts up to the last non-zero one: empty when none came.
    fn snapshot(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.0.iter().map(|a| a.load(Ordering::Relaxed)).collect();
        while v.last() == Some(&0) {
            v.pop();
        }
        v
    }
}

/// One request on its way to the target; dropping it (done, or abandoned at shutdown)
/// takes it off [`Stats::forwarding`].
#[derive(Debug)]
pub(crate) struct Forwarding(Arc<Stats>);

impl Drop for Forwarding {
    fn drop(&mut self) {
        self.0.forwarding.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A snapshot of [`Stats`], as `GET /__herd/stats` serializes it:
/// `{"received":N,"ok":N,"503":N,"reset":N,"shed":N,"in_flight":N,"queued":N,"buckets":[…]}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatsReport {
    /// Totals over the run.
    #[serde(flatten)]
    pub totals: ServerBucket,
    /// Requests holding a worker at the time of the snapshot.
    pub in_flight: u64,
    /// Requests waiting for a worker at the time of the snapshot.
    pub queued: u64,
    /// Proxy mode only: what the target answered so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetTotals>,
    /// gRPC only: calls by attempt number, from the `grpc-previous-rpc-attempts` each
    /// carried: `[first attempts, second, …]` (the last, that many or more). Empty when no
    /// gRPC call came.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grpc_attempts: Vec<u64>,
    /// Requests by the attempt number an AWS SDK declared (`amz-sdk-request: attempt=N`):
    /// `[first attempts, second, …]` (the last, that many or more). Empty when no request
    /// carried it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aws_attempts: Vec<u64>,
    /// The 100 ms buckets, the first at t = 0, none skipped.
    pub buckets: Vec<TimedBucket>,
}

/// The target's side of a [`StatsReport`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetTotals {
    /// Requests forwarded to the target.
    pub requests: u64,
    /// Its answers by status class.
    pub status: StatusClasses,
    /// Forwarded requests it never answered.
    pub errors: TargetErrors,
    /// Its latency, forwarded request to response head, ms.
    pub latency_ms: Latency,
}

/// One bucket of a [`StatsReport`], labelled with its start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimedBucket {
    /// Start of the bucket, milliseconds from the run's epoch.
    pub t_ms: u64,
    /// What was counted in it.
    #[serde(flatten)]
    pub counts: ServerBucket,
}

impl Stats {
    /// Empty counts, gauges at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// A snapshot of the counts so far.
    pub fn counts(&self) -> ServerCounts {
        lock(&self.counts).clone()
    }

    /// Requests received so far (cheap: no snapshot of the buckets).
    pub fn received(&self) -> u64 {
        lock(&self.counts).totals().received
    }

    /// Requests holding a worker now.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Requests waiting for a worker now.
    pub fn queued(&self) -> u64 {
        self.queued.load(Ordering::Relaxed)
    }

    /// Counts and gauges in one snapshot.
    pub fn report(&self) -> StatsReport {
        let counts = self.counts();
        let width = BUCKET.as_millis() as u64;
        StatsReport {
            totals: counts.totals(),
            in_flight: self.in_flight(),
            queued: self.queued(),
            target: self.target().map(|t| TargetTotals {
                requests: t.requests(),
                status: t.status(),
                errors: t.errors(),
                latency_ms: t.latency(),
            }),
            grpc_attempts: self.grpc_attempts(),
            aws_attempts: self.aws_attempts(),
            buckets: (0u64..)
                .zip(counts.buckets())
                .map(|(i, b)| TimedBucket {
                    t_ms: i * width,
                    counts: *b,
                })
                .collect(),
        }
    }

    /// Proxy mode: requests on their way to the target now; a hop of a call graph: on
    /// their way to the next hop. A run waits for this to reach 0 (every wait on the
    /// target is bounded) before it reads the counts, so each request the front admitted
    /// is in them with its answer (and, below a hop, every call it made).
    pub fn forwarding(&self) -> u64 {
        self.forwarding.load(Ordering::Relaxed)
    }

    /// Counts one request on its way to the target until the guard drops.
    pub(crate) fn start_forwarding(self: &Arc<Self>) -> Forwarding {
        self.forwarding.fetch_add(1, Ordering::Relaxed);
        Forwarding(self.clone())
    }

    /// A snapshot of what the target answered; `None` without a target.
    pub fn target(&self) -> Option<TargetCounts> {
        lock(&self.target).clone()
    }

    /// Starts counting a target's answers (the server does, when it has a target).
    pub(crate) fn enable_target(&self) {
        lock(&self.target).get_or_insert_with(TargetCounts::new);
    }

    /// A request is being forwarded to the target.
    pub(crate) fn target_forwarded(&self) {
        if let Some(t) = lock(&self.target).as_mut() {
            t.forwarded();
        }
    }

    /// A forwarded request ended with `outcome` after `latency`.
    pub(crate) fn target_ended(&self, outcome: TargetOutcome, latency: Duration) {
        if let Some(t) = lock(&self.target).as_mut() {
            t.ended(outcome, latency);
        }
    }

    /// Records `ev` at `t` from the epoch, for the logical request `id` if the attempt
    /// carried one.
    pub(crate) fn record(&self, t: Duration, ev: ServerEvent, id: Option<u64>) {
        lock(&self.counts).record_for(t, ev, id);
    }

    /// Records a request received and answered with `ev` in the same instant `t` (an
    /// injected 503, or work that takes no time on a free worker), under one lock.
    pub(crate) fn record_answered_at_once(&self, t: Duration, ev: ServerEvent, id: Option<u64>) {
        let mut counts = lock(&self.counts);
        counts.record_for(t, ServerEvent::Received, id);
        counts.record_for(t, ev, id);
    }

    /// Counts a gRPC call that had `previous` attempts before it.
    pub(crate) fn grpc_attempt(&self, previous: u64) {
        self.grpc_attempts.count(previous);
    }

    /// gRPC calls by attempt number (see [`StatsReport::grpc_attempts`]): empty when none
    /// came, else up to the last non-zero slot.
    pub fn grpc_attempts(&self) -> Vec<u64> {
        self.grpc_attempts.snapshot()
    }

    /// Counts a request an AWS SDK declared attempt `attempt` (1 for the first).
    pub(crate) fn aws_attempt(&self, attempt: u64) {
        self.aws_attempts.count(attempt.saturating_sub(1));
    }

    /// Requests by declared AWS attempt number (see [`StatsReport::aws_attempts`]).
    pub fn aws_attempts(&self) -> Vec<u64> {
        self.aws_attempts.snapshot()
    }

    /// Publishes the capacity gauges.
    pub(crate) fn set_gauges(&self, in_flight: usize, queued: usize) {
        self.in_flight.store(in_flight as u64, Ordering::Relaxed);
        self.queued.store(queued as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_json_shape() {
        let s = Stats::new();
        s.record(Duration::from_millis(5), ServerEvent::Received, None);
        s.record(Duration::from_millis(120), ServerEvent::Ok, None);
        s.set_gauges(2, 1);
        let json = serde_json::to_string(&s.report()).expect("serializes");
        assert_eq!(
            json,
            r#"{"received":1,"ok":1,"503":0,"reset":0,"shed":0,"in_flight":2,"queued":1,"buckets":[{"t_ms":0,"received":1,"ok":0,"503":0,"reset":0,"shed":0},{"t_ms":100,"received":0,"ok":1,"503":0,"reset":0,"shed":0}]}"#
        );
        let back: StatsReport = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, s.report());
    }
}
