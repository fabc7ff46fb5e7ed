//! The first retry as the upstream sees it: from the moment the server failed a logical
//! request's first attempt to the moment that request's next attempt reached the server.
//!
//! # Why measure it at the server
//!
//! A replica of a client library is right only if its retries land on the upstream when
//! the real library's do. The client's own idea of its backoff leaves out what happens
//! between the decision and the wire (timers that fire late, a pool that queues the
//! retry, an event loop that is busy), so herd takes the delay where it matters, at the
//! server, with the same clock that counts the load.
//!
//! # How the server knows which attempts belong together
//!
//! Every client herd drives (its own driver, the Rust peers, the Node adapter) sends the
//! logical request's id in the [`REQUEST_ID_HEADER`] on every attempt; a retrying library
//! re-sends the same headers. The upstream feeds arrivals and outcomes per id into
//! [`FirstRetries`]. Only failures the server itself produced count (an injected 503, a
//! reset, a held request's answer, a shed): a first attempt that the client timed out is
//! not the server's failure, and the retry that follows it is not measured.
//!
//! # A hedge's delay, by the same bookkeeping
//!
//! A second attempt that arrives while the server has not yet answered the first is a
//! hedge (or a retry after the client timed the first out): its delay from the first
//! arrival is kept apart ([`FirstRetries::hedge_summary`]), so a hedging replica's timer
//! can be checked against a real library's where the load lands. A third arrival while
//! none has been answered is a second hedge ([`FirstRetries::second_hedge_summary`]), its
//! delay from the first arrival too: gRPC's `hedgingPolicy` sends its attempts at 0, d, 2d.
//!
//! Memory is bounded by the requests in flight plus the ones that were retried: a first
//! attempt that succeeds forgets its id.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::Duration;

/// The request header that carries a logical request's id (decimal) on each attempt.
pub const REQUEST_ID_HEADER: &str = "x-herd-request";

/// Where one id is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// The first attempt arrived at this instant (µs from the epoch); no outcome yet.
    First(u64),
    /// The first attempt was failed by the server at this instant (µs from the epoch).
    Failed(u64),
    /// A second attempt arrived before any answer, the first having arrived at this
    /// instant (µs from the epoch): a third before any answer is a second hedge.
    Hedged(u64),
    /// A second attempt arrived after an answer, or a third (measured or not): nothing
    /// more to learn.
    Retried,
}

/// Server-side first-retry delays, per id.
#[derive(Clone, Debug)]
pub struct FirstRetries {
    ids: HashMap<u64, Seen>,
    /// Delays in µs.
    hist: Histogram<u64>,
    /// Second arrivals before the first was answered: delays from the first arrival, µs.
    hedges: Histogram<u64>,
    /// Third arrivals before any was answered: delays from the first arrival, µs.
    second_hedges: Histogram<u64>,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static bounds are valid")
}

impl Default for FirstRetries {
    fn default() -> Self {
        FirstRetries {
            ids: HashMap::new(),
            hist: histogram(),
            hedges: histogram(),
            second_hedges: histogram(),
        }
    }
}

impl PartialEq for FirstRetries {
    fn eq(&self, other: &Self) -> bool {
        self.ids == other.ids
            && self.hist == other.hist
            && self.hedges == other.hedges
            && self.second_hedges == other.second_hedges
    }
}

/// The summary a report carries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FirstRetrySummary {
    /// Logical requests whose first attempt the server failed and that came back.
    pub count: u64,
    /// Mean delay, ms.
    pub mean: f64,
    /// Median delay, ms.
    pub p50: f64,
    /// 90th percentile, ms.
    pub p90: f64,
}

fn micros(t: Duration) -> u64 {
    u64::try_from(t.as_micros()).unwrap_or(u64::MAX)
}

impl FirstRetries {
    /// Nothing seen.
    pub fn new() -> Self {
        Self::default()
    }

    /// An attempt of `id` arrived at `t`.
    pub fn arrived(&mut self, id: u64, t: Duration) {
        match self.ids.get(&id).copied() {
            None => {
                self.ids.insert(id, Seen::First(micros(t)));
            }
            Some(Seen::Failed(at)) => {
                record(&mut self.hist, micros(t).saturating_sub(at));
                self.ids.insert(id, Seen::Retried);
            }
            Some(Seen::First(at)) => {
                record(&mut self.hedges, micros(t).saturating_sub(at));
                self.ids.insert(id, Seen::Hedged(at));
            }
            Some(Seen::Hedged(at)) => {
                record(&mut self.second_hedges, micros(t).saturating_sub(at));
                self.ids.insert(id, Seen::Retried);
            }
            Some(Seen::Retried) => {}
        }
    }

    /// The server failed an attempt of `id` at `t` (503, reset or shed).
    pub fn failed(&mut self, id: u64, t: Duration) {
        match self.ids.get_mut(&id) {
            Some(s @ Seen::First(_)) => *s = Seen::Failed(micros(t)),
            Some(s @ Seen::Hedged(_)) => *s = Seen::Retried,
            _ => {}
        }
    }

    /// The server answered an attempt of `id` with success.
    pub fn succeeded(&mut self, id: u64) {
        match self.ids.get_mut(&id) {
            Some(Seen::First(_)) => {
                self.ids.remove(&id);
            }
            Some(s @ Seen::Hedged(_)) => *s = Seen::Retried,
            _ => {}
        }
    }

    /// The delays so far, or `None` when no first retry was measured.
    pub fn summary(&self) -> Option<FirstRetrySummary> {
        summary(&self.hist)
    }

    /// Second arrivals before the server answered the first: their delays from the first
    /// arrival (a hedge's delay as the server sees it), or `None` when there was none.
    pub fn hedge_summary(&self) -> Option<FirstRetrySummary> {
        summary(&self.hedges)
    }

    /// Third arrivals before the server answered any: their delays from the first arrival
    /// (a second hedge's), or `None` when there was none.
    pub fn second_hedge_summary(&self) -> Option<FirstRetrySummary> {
        summary(&self.second_hedges)
    }
}

/// Records a delay of `us` µs (at least 1). Beyond an hour is not a delay worth a bucket;
/// clamped rather than lost.
fn record(h: &mut Histogram<u64>, us: u64) {
    let _ = h.record(us.max(1).min(h.high()));
}

fn summary(h: &Histogram<u64>) -> Option<FirstRetrySummary> {
    let ms = |us: f64| (us / 100.0).round() / 10.0;
    (!h.is_empty()).then(|| FirstRetrySummary {
        count: h.len(),
        mean: ms(h.mean()),
        p50: ms(h.value_at_quantile(0.5) as f64),
        p90: ms(h.value_at_quantile(0.9) as f64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn measures_from_the_server_failure_to_the_next_arrival() {
        let mut f = FirstRetries::new();
        f.arrived(1, ms(10));
        f.failed(1, ms(12));
        f.arrived(1, ms(512));
        // The second retry of the same request is not a first retry.
        f.failed(1, ms(514));
        f.arrived(1, ms(1514));
        let s = f.summary().expect("one measured");
        assert_eq!(s.count, 1);
        // 3 significant digits: 500 ms is stored to within 0.25 ms.
        assert!((s.p50 - 500.0).abs() <= 0.3, "{s:?}");
        assert!((s.mean - 500.0).abs() <= 0.3, "{s:?}");
    }

    #[test]
    fn client_timeouts_and_successes_are_not_measured() {
        let mut f = FirstRetries::new();
        // Succeeds first time: forgotten.
        f.arrived(1, ms(0));
        f.succeeded(1);
        assert!(f.ids.is_empty());
        assert_eq!(f.hedge_summary(), None);
        // The client timed out (no server failure), then retried: not measured, and a
        // later server failure of the retry is not a first retry either.
        f.arrived(2, ms(0));
        f.arrived(2, ms(2500));
        f.failed(2, ms(2501));
        f.arrived(2, ms(3000));
        assert_eq!(f.summary(), None);
    }

    #[test]
    fn a_second_arrival_before_the_answer_is_a_hedge() {
        let mut f = FirstRetries::new();
        // Hedged at 100 ms, the hedge answered, the original cancelled.
        f.arrived(1, ms(0));
        f.arrived(1, ms(100));
        f.succeeded(1);
        // A third arrival of the same request is not measured again.
        f.arrived(1, ms(250));
        // Failed first, then back: a retry, not a hedge.
        f.arrived(2, ms(0));
        f.failed(2, ms(5));
        f.arrived(2, ms(105));
        let h = f.hedge_summary().expect("one hedge");
        assert_eq!(h.count, 1);
        assert!((h.p50 - 100.0).abs() <= 0.1, "{h:?}");
        assert_eq!(f.summary().expect("one retry").count, 1);
        assert_eq!(f.second_hedge_summary(), None);
    }

    #[test]
    fn a_third_arrival_before_any_answer_is_a_second_hedge() {
        let mut f = FirstRetries::new();
        // grpc-js's hedgingPolicy against a slow server: attempts at 0, 100, 200 ms.
        f.arrived(1, ms(0));
        f.arrived(1, ms(100));
        f.arrived(1, ms(200));
        f.arrived(1, ms(300));
        // Hedged, then an answer: the next arrival is not at the hedging delay.
        f.arrived(2, ms(0));
        f.arrived(2, ms(100));
        f.failed(2, ms(101));
        f.arrived(2, ms(102));
        assert_eq!(f.hedge_summary().expect("two hedges").count, 2);
        let h = f.second_hedge_summary().expect("one second hedge");
        assert_eq!(h.count, 1);
        assert!((h.p50 - 200.0).abs() <= 0.2, "{h:?}");
    }

    #[test]
    fn percentiles_over_many() {
        let mut f = FirstRetries::new();
        for id in 0..100u64 {
            f.arrived(id, ms(0));
            f.failed(id, ms(0));
            f.arrived(id, ms(100 + id));
        }
        let s = f.summary().expect("measured");
        assert_eq!(s.count, 100);
        assert!((s.p50 - 149.0).abs() <= 0.2, "{s:?}");
        assert!((s.p90 - 189.0).abs() <= 0.2, "{s:?}");
    }
}
