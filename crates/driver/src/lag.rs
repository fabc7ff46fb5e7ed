//! The driver's lag as a distribution: how late, after its intended instant, each logical
//! request left.
//!
//! One figure (the worst) hid what matters: whether the load went out as scheduled most
//! of the time, or whether the driver ran steadily behind. The lag is measured up to the
//! request being handed to a connection, so time spent waiting for a free one counts:
//! that wait is where a driver that cannot keep up piles its requests, and leaving it out
//! made an overloaded run look punctual.

use hdrhistogram::Histogram;
use herd_scenario::LagSummary;
use std::time::Duration;

/// Lags of one arm, to the microsecond.
#[derive(Clone, Debug)]
pub struct Lag {
    hist: Histogram<u64>,
}

impl Default for Lag {
    fn default() -> Self {
        Lag {
            hist: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static bounds are valid"),
        }
    }
}

impl Lag {
    /// No lags yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// One request's lag.
    pub fn record(&mut self, lag: Duration) {
        let us = u64::try_from(lag.as_micros()).unwrap_or(u64::MAX);
        self.hist.saturating_record(us.max(1));
    }

    /// Adds `other`'s lags to these.
    pub fn merge(&mut self, other: &Lag) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.hist.add(&other.hist);
    }

    /// How many lags were recorded.
    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// The largest lag.
    pub fn max(&self) -> Duration {
        Duration::from_micros(if self.is_empty() { 0 } else { self.hist.max() })
    }

    /// p50, p99 and max in ms, to the µs; `None` when nothing was sent.
    pub fn summary(&self) -> Option<LagSummary> {
        LagSummary::of(&self.hist)
    }

    /// The lag histogram, µs (a shard's report carries it, see `herd_scenario::mergeable`).
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_is_in_ms_to_the_microsecond() {
        let mut lag = Lag::new();
        assert_eq!(lag.summary(), None);
        for us in 1..=100 {
            lag.record(Duration::from_micros(us * 10));
        }
        let s = lag.summary().expect("lags");
        assert_eq!((s.p50, s.p99, s.max), (0.5, 0.99, 1.0));
        assert_eq!(lag.max(), Duration::from_millis(1));
    }
}
