//! Latency-percentile hedge delays: Finagle's windowed histogram and tower's rotating one.
//!
//! Both libraries keep an HdrHistogram of whole milliseconds at three significant digits
//! (exact below 2048 ms, then buckets of 2, 4, … ms) and read a quantile as the highest
//! value of the bucket holding the `ceil(q·n)`-th value. What differs is which latencies
//! go in and when the delay changes, and that decides how fast a latency shift turns into
//! hedges: Finagle re-reads its percentile every 3 s from the last 30 s (3 buckets of
//! 10 s, each counted only once full) and sends no backup at all before its first read;
//! tower reads the previous period's histogram (swapped every `period`) and hedges only
//! once it holds `min_data_points`.

use std::collections::BTreeMap;
use std::time::Duration;

const MS: u64 = 1_000_000;

/// Finagle `BackupRequestFilter`'s delay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FinagleLatency {
    /// `maxExtraLoad`: the backup goes at the `1 − max_extra_load` percentile.
    pub max_extra_load: f64,
    /// `minSendBackupAfterMs` (1).
    pub min_ms: u64,
    /// `highestTrackableValue` (2000 ms): latencies are capped at it, and a percentile at
    /// or above it sends no backup.
    pub cap_ms: u64,
    /// `DefaultBucketSize` (10 s).
    pub bucket: Duration,
    /// `DefaultNumBuckets` (3).
    pub buckets: u32,
    /// `RefreshPercentileInterval` (3 s).
    pub refresh: Duration,
}

impl FinagleLatency {
    /// Finagle's defaults with `max_extra_load`.
    pub fn new(max_extra_load: f64) -> FinagleLatency {
        FinagleLatency {
            max_extra_load,
            min_ms: 1,
            cap_ms: 2000,
            bucket: Duration::from_secs(10),
            buckets: 3,
            refresh: Duration::from_secs(3),
        }
    }
}

/// tower `hedge::Hedge::new(service, policy, min_data_points, latency_percentile, period)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TowerLatency {
    /// Latencies the read histogram needs before any hedge.
    pub min_data_points: u64,
    /// The quantile read, in [0, 1].
    pub percentile: f64,
    /// How often the histograms rotate.
    pub period: Duration,
}

/// Where a latency-percentile delay comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LatencyConfig {
    /// Finagle.
    Finagle(FinagleLatency),
    /// tower.
    Tower(TowerLatency),
}

/// HdrHistogram (3 significant digits, unit 1) counts keyed by each bucket's highest value.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Hist {
    counts: BTreeMap<u64, u64>,
    total: u64,
}

/// The highest value HdrHistogram keeps `v` as: exact below 2048, then `2^k`-wide buckets.
pub(crate) fn highest_equivalent(v: u64) -> u64 {
    if v < 2048 {
        return v;
    }
    let shift = 63 - v.leading_zeros() - 10;
    ((v >> shift) << shift) + (1u64 << shift) - 1
}

impl Hist {
    fn record(&mut self, ms: u64) {
        *self.counts.entry(highest_equivalent(ms)).or_default() += 1;
        self.total += 1;
    }

    fn add(&mut self, other: &Hist) {
        for (v, c) in &other.counts {
            *self.counts.entry(*v).or_default() += c;
        }
        self.total += other.total;
    }

    fn clear(&mut self) {
        self.counts.clear();
        self.total = 0;
    }

    /// `value_at_quantile`: 0 when empty.
    fn quantile(&self, q: f64) -> u64 {
        let target = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (v, c) in &self.counts {
            seen += c;
            if seen >= target {
                return *v;
            }
        }
        0
    }
}

/// A latency estimator's state, shared by a client's requests.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Latency {
    Finagle {
        cfg: FinagleLatency,
        recorder: Hist,
        ring: Vec<Hist>,
        pos: usize,
        snapshot: Option<Hist>,
        /// `sendBackupAfterMillis`; `None` is its initial `Int.MaxValue`.
        send_after_ms: Option<u64>,
        next_flush: u64,
        next_refresh: u64,
    },
    Tower {
        cfg: TowerLatency,
        read: Hist,
        write: Hist,
        last_rotation: u64,
    },
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1)
}

impl Latency {
    /// Fresh state; the timers (Finagle's flush and refresh, tower's rotation) run from `now`.
    pub(crate) fn new(cfg: LatencyConfig, now: u64) -> Latency {
        match cfg {
            LatencyConfig::Finagle(c) => Latency::Finagle {
                recorder: Hist::default(),
                ring: vec![Hist::default(); c.buckets.max(1) as usize],
                pos: 0,
                snapshot: None,
                send_after_ms: None,
                next_flush: now.saturating_add(nanos(c.bucket)),
                next_refresh: now.saturating_add(nanos(c.refresh)),
                cfg: c,
            },
            LatencyConfig::Tower(c) => Latency::Tower {
                cfg: c,
                read: Hist::default(),
                write: Hist::default(),
                last_rotation: now,
            },
        }
    }

    /// Runs the timers due by `now`.
    fn advance(&mut self, now: u64) {
        match self {
            Latency::Finagle {
                cfg,
                recorder,
                ring,
                pos,
                snapshot,
                send_after_ms,
                next_flush,
                next_refresh,
            } => loop {
                let next = (*next_flush).min(*next_refresh);
                if next > now {
                    return;
                }
                if *next_flush <= *next_refresh {
                    // `flushCurrentBucket`: the recorder's interval histogram replaces the
                    // oldest bucket, and the snapshot is the sum of all of them.
                    ring[*pos] = std::mem::take(recorder);
                    let mut sum = Hist::default();
                    for h in ring.iter() {
                        sum.add(h);
                    }
                    *snapshot = Some(sum);
                    *pos = (*pos + 1) % ring.len();
                    *next_flush += nanos(cfg.bucket);
                } else {
                    let p = snapshot
                        .as_ref()
                        .map_or(0, |s| s.quantile(1.0 - cfg.max_extra_load));
                    *send_after_ms = Some(p.max(cfg.min_ms));
                    *next_refresh += nanos(cfg.refresh);
                }
            },
            Latency::Tower {
                cfg,
                read,
                write,
                last_rotation,
            } => {
                let period = nanos(cfg.period);
                let rotations = now.saturating_sub(*last_rotation) / period;
                if rotations >= 2 {
                    read.clear();
                    write.clear();
                } else if rotations == 1 {
                    std::mem::swap(read, write);
                    write.clear();
                }
                *last_rotation += period * rotations;
            }
        }
    }

    /// The hedge delay for a request starting at `now`; `None`: no hedge for it.
    pub(crate) fn delay(&mut self, now: u64) -> Option<u64> {
        self.advance(now);
        match self {
            Latency::Finagle {
                cfg, send_after_ms, ..
            } => send_after_ms
                .filter(|ms| *ms < cfg.cap_ms)
                .map(|ms| ms * MS),
            Latency::Tower { cfg, read, .. } => {
                (read.total >= cfg.min_data_points).then(|| read.quantile(cfg.percentile) * MS)
            }
        }
    }

    /// One attempt's latency, recorded at `now`.
    pub(crate) fn record(&mut self, now: u64, latency: u64) {
        self.advance(now);
        match self {
            // `(nowMs() - start).toInt`, capped at the highest trackable value.
            Latency::Finagle { cfg, recorder, .. } => {
                recorder.record((latency / MS).min(cfg.cap_ms))
            }
            // tower's `millis()` rounds up.
            Latency::Tower { write, .. } => write.record(latency.div_ceil(MS)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hdr_buckets() {
        assert_eq!(highest_equivalent(2047), 2047);
        assert_eq!(highest_equivalent(2048), 2049);
        assert_eq!(highest_equivalent(4097), 4099);
        let mut h = Hist::default();
        for v in 1..=100 {
            h.record(v);
        }
        assert_eq!(h.quantile(0.99), 99);
        assert_eq!(h.quantile(0.9), 90);
        assert_eq!(Hist::default().quantile(0.5), 0);
    }

    #[test]
    fn finagle_sends_no_backup_before_its_first_refresh_then_one_after_a_millisecond() {
        let mut l = Latency::new(LatencyConfig::Finagle(FinagleLatency::new(0.01)), 0);
        assert_eq!(l.delay(2_999 * MS), None);
        // At 3 s no bucket is full yet: the percentile reads 0, the floor makes it 1 ms.
        assert_eq!(l.delay(3_000 * MS), Some(MS));
        for i in 0..100 {
            l.record(4_000 * MS, (i + 1) * MS);
        }
        // Flushed at 10 s, read at 12 s.
        assert_eq!(l.delay(11_000 * MS), Some(MS));
        assert_eq!(l.delay(12_000 * MS), Some(99 * MS));
        // 40 s on, all three buckets have rotated out: back to the 1 ms floor.
        assert_eq!(l.delay(42_000 * MS), Some(MS));
        for _ in 0..10 {
            l.record(43_000 * MS, 5_000 * MS);
        }
        assert_eq!(
            l.delay(51_000 * MS),
            None,
            "p99 at the 2000 ms cap: no backups"
        );
    }

    #[test]
    fn tower_reads_the_previous_period() {
        let cfg = TowerLatency {
            min_data_points: 10,
            percentile: 0.9,
            period: Duration::from_secs(60),
        };
        let mut l = Latency::new(LatencyConfig::Tower(cfg), 0);
        for v in [1, 1, 1, 1, 1, 1, 1, 1, 10, 10] {
            l.record(MS, v * MS - 1);
        }
        assert_eq!(l.delay(59_000 * MS), None, "still in the write histogram");
        assert_eq!(
            l.delay(60_000 * MS),
            Some(10 * MS),
            "p90 (the 9th of 10) of the rotated period"
        );
        assert_eq!(l.delay(180_000 * MS), None, "two periods idle clear both");
    }
}
