//! What a real target answered, counted by herd's front as it forwarded (proxy mode).
//!
//! The front's own counts ([`crate::ServerCounts`]) say what reached herd, and they stay
//! the load figures: a request herd answered with an injected fault is load the retry
//! strategy generated all the same. These say what went through to the service and how it
//! fared there: answers by status class, requests that never got an answer (no
//! connection, no answer in time, a broken one), and the service's latency from the
//! forwarded request to its response head, in an HdrHistogram so memory stays flat.

use crate::report::{Latency, StatusClasses, TargetErrors};
use hdrhistogram::Histogram;
use std::time::Duration;

/// How one forwarded request ended at the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetOutcome {
    /// The target answered with this status (its latency is recorded).
    Answered(u16),
    /// No connection within the connect timeout, or refused.
    Connect,
    /// Connected, but no response head within the answer timeout.
    Timeout,
    /// The connection broke (reset, closed early, bad HTTP).
    Broken,
}

/// Counts and latency of the requests forwarded to a target.
#[derive(Clone, Debug)]
pub struct TargetCounts {
    requests: u64,
    status: StatusClasses,
    errors: TargetErrors,
    hist: Histogram<u64>,
}

impl Default for TargetCounts {
    fn default() -> Self {
        Self::new()
    }
}

impl TargetCounts {
    /// Nothing forwarded yet (latencies from 1 µs to 1 h at 3 significant digits).
    pub fn new() -> Self {
        TargetCounts {
            requests: 0,
            status: StatusClasses::default(),
            errors: TargetErrors::default(),
            hist: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static bounds are valid"),
        }
    }

    /// Counts holding these figures (a sum of shards', see [`crate::mergeable`]).
    pub fn from_parts(
        requests: u64,
        status: StatusClasses,
        errors: TargetErrors,
        hist: Histogram<u64>,
    ) -> Self {
        TargetCounts {
            requests,
            status,
            errors,
            hist,
        }
    }

    /// A request is being sent to the target.
    pub fn forwarded(&mut self) {
        self.requests += 1;
    }

    /// A forwarded request ended with `outcome`, `latency` after it was sent.
    pub fn ended(&mut self, outcome: TargetOutcome, latency: Duration) {
        match outcome {
            TargetOutcome::Answered(code) => {
                self.status.add(code);
                let us = (latency.as_micros() as u64).clamp(1, 3_600_000_000);
                self.hist.saturating_record(us);
            }
            TargetOutcome::Connect => self.errors.connect += 1,
            TargetOutcome::Timeout => self.errors.timeout += 1,
            TargetOutcome::Broken => self.errors.broken += 1,
        }
    }

    /// Requests sent to the target.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Answers by status class.
    pub fn status(&self) -> StatusClasses {
        self.status
    }

    /// Requests that got no answer.
    pub fn errors(&self) -> TargetErrors {
        self.errors
    }

    /// The target's latency, forwarded request to response head, in microseconds.
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// The latency summary, ms.
    pub fn latency(&self) -> Latency {
        Latency::of(&self.hist)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_errors_and_latency() {
        let mut c = TargetCounts::new();
        for (o, ms) in [
            (TargetOutcome::Answered(200), 2),
            (TargetOutcome::Answered(204), 4),
            (TargetOutcome::Answered(503), 6),
            (TargetOutcome::Answered(404), 8),
            (TargetOutcome::Connect, 0),
            (TargetOutcome::Timeout, 0),
        ] {
            c.forwarded();
            c.ended(o, Duration::from_millis(ms));
        }
        assert_eq!(c.requests(), 6);
        let s = c.status();
        assert_eq!((s.s2xx, s.s4xx, s.s5xx, s.s1xx, s.s3xx), (2, 1, 1, 0, 0));
        assert_eq!(
            c.errors(),
            TargetErrors {
                connect: 1,
                timeout: 1,
                broken: 0
            }
        );
        // HdrHistogram reports the highest value equivalent at 3 significant digits.
        assert_eq!((c.latency().p50, c.latency().max), (4.001, 8.003));
    }
}
