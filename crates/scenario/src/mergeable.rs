//! What a shard's report carries so that N of them merge into exactly the report one run
//! would have written: the `shard` section.
//!
//! A report's figures are not additive (a p99 of p99s means nothing, a multiplier is a
//! ratio), so a shard keeps what they are made of: each arm's latency and lag histograms
//! (HdrHistogram V2, base64), its 100 ms buckets of offered requests and of what the server
//! counted, and its counts. Histograms add bucket by bucket, buckets and counts add, and
//! the merged report is then made by [`crate::Recorder::finish`], the code that makes a
//! single run's, so every percentile and multiplier comes out as one run's would.
//!
//! Only shard reports carry the section: an unsharded report stays byte for byte what it
//! always was.

use crate::counts::{ServerBucket, ServerCounts};
use crate::record::{ConsumerTally, Recorder, RecorderParts};
use crate::report::{StatusClasses, TargetErrors};
use crate::target_counts::TargetCounts;
use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// A shard report's `shard` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardSection {
    /// How many shards the schedule was split into.
    pub count: u32,
    /// Which shards this report covers, ascending: one for a shard's own report, several
    /// for a merge of some of them.
    pub indices: Vec<u32>,
    /// When the shards were told to start (`--start-at`), Unix ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_unix_ms: Option<u64>,
    /// Whose requests the server-side buckets count.
    pub server: ServerScope,
    /// The scenario's offered rate as a whole (all shards), req/s.
    pub rate: f64,
    /// The scenario's logical requests per arm as a whole (all shards).
    pub requests: u64,
    /// The scenario's TOML, as given (the merged report's files show it and are drawn
    /// from it).
    pub scenario_toml: String,
    /// What each arm's figures are made of, in the report's arm order.
    pub arms: Vec<ArmShard>,
}

/// Whose requests a shard's server-side figures count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerScope {
    /// The shard's own: a socket shard's fronts saw only its attempts, so shards add.
    Own,
    /// The whole run's: a simulated shard simulates the whole upstream (its queue,
    /// rate limit and fault draws couple every request to every other), so every shard
    /// holds the same server view and a merge takes it once. The same holds for the
    /// hedging and breaker figures and the consumers' tally, which the simulator keeps
    /// for the arm's one client.
    Whole,
}

/// One arm's mergeable figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArmShard {
    /// The arm's id.
    pub id: String,
    /// Latency of the shard's logical requests (units), µs: HdrHistogram V2, base64.
    pub latency: String,
    /// The driver's lag, µs, as `latency` (socket runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag: Option<String>,
    /// Logical requests (units) per 100 ms bucket of their intended time.
    pub offered: Vec<u64>,
    /// Logical requests (units) that succeeded.
    pub succeeded: u64,
    /// Logical requests (units) that failed.
    pub failed: u64,
    /// Attempts of those requests.
    pub attempts: u64,
    /// With `[consumers]`: what they sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumers: Option<ConsumerTally>,
    /// What the server counted, per 100 ms bucket.
    pub server: Vec<ServerBucket>,
    /// Proxy mode: what the target answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetShard>,
}

/// An arm's target figures, mergeable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetShard {
    /// Requests forwarded.
    pub requests: u64,
    /// Answers by status class.
    pub status: StatusClasses,
    /// Requests never answered.
    pub errors: TargetErrors,
    /// Latency of its answers, µs, as [`ArmShard::latency`].
    pub latency: String,
}

/// A histogram that could not be read back.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HistogramError(String);

/// `hist` as HdrHistogram's V2 encoding in base64 (what `HdrHistogram` tools read).
pub fn encode(hist: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2Serializer::new()
        .serialize(hist, &mut bytes)
        .expect("a histogram with static bounds serialises into memory");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The histogram [`encode`] wrote.
pub fn decode(text: &str) -> Result<Histogram<u64>, HistogramError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| HistogramError(format!("not base64: {e}")))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| HistogramError(format!("not an HdrHistogram V2 histogram: {e:?}")))
}

impl ArmShard {
    /// Arm `id`'s figures: the client's `recorder`, the server's `counts`, and, from a
    /// socket run, the driver's `lag` and the target's counts.
    pub fn of(
        id: &str,
        recorder: &Recorder,
        counts: &ServerCounts,
        lag: Option<&Histogram<u64>>,
        target: Option<&TargetCounts>,
    ) -> ArmShard {
        let p = recorder.parts();
        ArmShard {
            id: id.to_owned(),
            latency: encode(&p.hist),
            lag: lag.map(encode),
            offered: p.offered,
            succeeded: p.succeeded,
            failed: p.failed,
            attempts: p.attempts,
            consumers: p.consumers,
            server: counts.buckets().to_vec(),
            target: target.map(|t| TargetShard {
                requests: t.requests(),
                status: t.status(),
                errors: t.errors(),
                latency: encode(t.histogram()),
            }),
        }
    }

    /// The recorder these figures were taken from.
    pub fn recorder(&self) -> Result<Recorder, HistogramError> {
        Ok(Recorder::from_parts(RecorderParts {
            hist: decode(&self.latency)?,
            offered: self.offered.clone(),
            succeeded: self.succeeded,
            failed: self.failed,
            attempts: self.attempts,
            consumers: self.consumers,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::LogicalRecord;
    use std::time::Duration;

    #[test]
    fn a_histogram_round_trips_exactly() {
        let mut r = Recorder::new();
        for i in 0..5000u64 {
            r.record(&LogicalRecord {
                intended: Duration::from_millis(i),
                latency: Duration::from_micros(37 + i * i % 90_000),
                ok: i % 7 != 0,
                attempts: 1 + (i % 3) as u32,
            });
        }
        let a = ArmShard::of("x", &r, &ServerCounts::new(), None, None);
        let back = a.recorder().unwrap();
        assert_eq!(back.histogram(), r.histogram());
        assert_eq!(back.parts().offered, r.parts().offered);
        assert!(decode("not base64!").is_err());
    }
}
