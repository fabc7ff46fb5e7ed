//! What the upstream counted, in 100 ms buckets.
//!
//! The server side of every report comes from here: the real upstream fills it as requests
//! arrive on its socket, the simulator fills it from its model, and the report reads it.
//! Never from the client's own tally, because a client that retries without telling
//! (hyper's pool re-sending on a dead connection, say) would make the multiplier lie.

use crate::first_retry::{FirstRetries, FirstRetrySummary};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Width of one timeline bucket.
pub const BUCKET: Duration = Duration::from_millis(100);

/// The index of the bucket `t` (from the start of the run) falls in. In `u64` (a
/// `u128` division is a library call, and this runs at every event the upstream counts);
/// the same index as `t.as_millis() / BUCKET.as_millis()` for any `t` under 584 million
/// years, and past that an index no timeline could hold anyway.
#[inline]
pub fn bucket_index(t: Duration) -> usize {
    let ms = u64::try_from(t.as_millis()).unwrap_or(u64::MAX);
    (ms / BUCKET.as_millis() as u64) as usize
}

/// [`bucket_index`] of a time in nanoseconds from the start of the run (the same index:
/// whole milliseconds, then whole buckets, is whole buckets of nanoseconds).
#[inline]
pub fn bucket_index_nanos(t: u64) -> usize {
    (t / BUCKET.as_nanos() as u64) as usize
}

/// One thing the upstream saw happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerEvent {
    /// A request whose head was parsed (counted whatever its fate).
    Received,
    /// Answered 2xx.
    Ok,
    /// Answered 503 by an injected fault or a hold window (not by shedding).
    Error503,
    /// Connection reset by an injected fault or a hold window (not by shedding).
    Reset,
    /// Turned away for lack of capacity (by reset or by 503, as configured).
    Shed,
    /// Rejected by the rate limit (answered its status, 429 or 503).
    Limited,
    /// Proxy mode: forwarded, and the target answered other than 2xx or not at all. No
    /// column of its own (the target's figures say what it was), but a failure for the
    /// first-retry timing, since that is what the client saw.
    TargetFailed,
}

/// Counts for one bucket, or for a whole run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerBucket {
    /// Requests received.
    pub received: u64,
    /// Answered 2xx.
    pub ok: u64,
    /// Injected or held 503s.
    #[serde(rename = "503")]
    pub status_503: u64,
    /// Injected or held resets.
    #[serde(rename = "reset")]
    pub resets: u64,
    /// Shed for capacity.
    pub shed: u64,
    /// Rejected by the rate limit. Left out of the JSON when 0 (always without a limit).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub limited: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ServerBucket {
    /// Adds `other`'s counts to these.
    pub fn merge(&mut self, other: &ServerBucket) {
        self.received += other.received;
        self.ok += other.ok;
        self.status_503 += other.status_503;
        self.resets += other.resets;
        self.shed += other.shed;
        self.limited += other.limited;
    }

    #[inline]
    fn add(&mut self, ev: ServerEvent) {
        match ev {
            ServerEvent::Received => self.received += 1,
            ServerEvent::Ok => self.ok += 1,
            ServerEvent::Error503 => self.status_503 += 1,
            ServerEvent::Reset => self.resets += 1,
            ServerEvent::Shed => self.shed += 1,
            ServerEvent::Limited => self.limited += 1,
            ServerEvent::TargetFailed => {}
        }
    }
}

/// Per-bucket and total server counts. `Received` is bucketed by arrival time, outcomes by
/// the time the outcome happened (a held request is received in the window and reset at
/// its end).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerCounts {
    buckets: Vec<ServerBucket>,
    totals: ServerBucket,
    first_retry: FirstRetries,
}

impl ServerCounts {
    /// An empty count.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts whose buckets are `buckets` (a sum of shards' counts, see
    /// [`crate::mergeable`]); the totals are their sum, as when counted one by one. No
    /// first-retry delays: those are not a sum.
    pub fn from_buckets(buckets: Vec<ServerBucket>) -> Self {
        let mut totals = ServerBucket::default();
        for b in &buckets {
            totals.merge(b);
        }
        ServerCounts {
            buckets,
            totals,
            first_retry: FirstRetries::default(),
        }
    }

    /// Records `ev` at `t` from the start of the run.
    #[inline]
    pub fn record(&mut self, t: Duration, ev: ServerEvent) {
        self.add(bucket_index(t), ev);
    }

    /// [`ServerCounts::record`] at `t` nanoseconds from the start of the run, for a model
    /// whose clock counts them (the simulator's): no `Duration` made at every event only
    /// to be taken apart again.
    #[inline]
    pub fn record_nanos(&mut self, t: u64, ev: ServerEvent) {
        self.add(bucket_index_nanos(t), ev);
    }

    /// Counts `ev` in timeline bucket `i`.
    #[inline]
    fn add(&mut self, i: usize, ev: ServerEvent) {
        if i >= self.buckets.len() {
            self.buckets.resize(i + 1, ServerBucket::default());
        }
        self.buckets[i].add(ev);
        self.totals.add(ev);
    }

    /// Records `ev` at `t` for the attempt of logical request `id` (the
    /// [`REQUEST_ID_HEADER`](crate::REQUEST_ID_HEADER) it carried, if any), which also
    /// feeds the server-side first-retry delays.
    pub fn record_for(&mut self, t: Duration, ev: ServerEvent, id: Option<u64>) {
        self.record(t, ev);
        let Some(id) = id else { return };
        match ev {
            ServerEvent::Received => self.first_retry.arrived(id, t),
            ServerEvent::Ok => self.first_retry.succeeded(id),
            ServerEvent::Error503
            | ServerEvent::Reset
            | ServerEvent::Shed
            | ServerEvent::Limited
            | ServerEvent::TargetFailed => self.first_retry.failed(id, t),
        }
    }

    /// Server-side first-retry delays, when the clients sent request ids.
    pub fn first_retry(&self) -> Option<FirstRetrySummary> {
        self.first_retry.summary()
    }

    /// Server-side hedge delays (a second arrival before the first was answered), when the
    /// clients sent request ids.
    pub fn hedge_delay(&self) -> Option<FirstRetrySummary> {
        self.first_retry.hedge_summary()
    }

    /// Server-side second-hedge delays (a third arrival before any answer), when the
    /// clients sent request ids.
    pub fn second_hedge_delay(&self) -> Option<FirstRetrySummary> {
        self.first_retry.second_hedge_summary()
    }

    /// The totals over the run.
    pub fn totals(&self) -> ServerBucket {
        self.totals
    }

    /// The buckets, the first starting at t = 0.
    pub fn buckets(&self) -> &[ServerBucket] {
        &self.buckets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_of_nanoseconds_are_the_buckets_of_durations() {
        let mut x: u64 = 3;
        for _ in 0..100_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            for t in [x, x >> 20, x >> 40, (x >> 40) / 100_000_000 * 100_000_000] {
                assert_eq!(bucket_index_nanos(t), bucket_index(Duration::from_nanos(t)));
            }
        }
    }

    #[test]
    fn buckets_by_time() {
        let mut c = ServerCounts::new();
        c.record(Duration::from_millis(5), ServerEvent::Received);
        c.record(Duration::from_millis(99), ServerEvent::Received);
        c.record(Duration::from_millis(100), ServerEvent::Received);
        c.record(Duration::from_millis(450), ServerEvent::Reset);
        assert_eq!(c.buckets().len(), 5);
        assert_eq!(c.buckets()[0].received, 2);
        assert_eq!(c.buckets()[1].received, 1);
        assert_eq!(c.buckets()[4].resets, 1);
        assert_eq!(c.totals().received, 3);
        let json = serde_json::to_string(&c.totals()).unwrap();
        assert_eq!(json, r#"{"received":3,"ok":0,"503":0,"reset":1,"shed":0}"#);
    }
}
