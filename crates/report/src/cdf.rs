//! An arm's latency distribution as CDF points, read from its HdrHistogram.
//!
//! The points are taken at a fixed, log-spaced set of quantiles (every percent up to p99,
//! then every tenth of the remaining tail down to p99.99, then the max) rather than at
//! every histogram bucket: a few hundred points draw the same curve, keep the SVG small,
//! and put the resolution where retry behaviour shows, in the tail.

use hdrhistogram::Histogram;

/// One point of a CDF: this fraction of requests took at most this long.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CdfPoint {
    /// Latency, milliseconds.
    pub ms: f64,
    /// Fraction of requests at or below `ms`, 0 to 1.
    pub quantile: f64,
}

/// A latency CDF, points in increasing order of quantile.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cdf {
    /// The points; empty for an arm that recorded nothing.
    pub points: Vec<CdfPoint>,
}

impl Cdf {
    /// Reads the CDF from a histogram of latencies in **microseconds** (as
    /// `herd_scenario::Recorder::histogram` keeps them).
    pub fn from_histogram(h: &Histogram<u64>) -> Cdf {
        if h.is_empty() {
            return Cdf::default();
        }
        let points = quantiles()
            .map(|q| CdfPoint {
                ms: h.value_at_quantile(q) as f64 / 1000.0,
                quantile: q,
            })
            .chain(std::iter::once(CdfPoint {
                ms: h.max() as f64 / 1000.0,
                quantile: 1.0,
            }))
            .collect();
        Cdf { points }
    }

    /// Smallest and largest latency, milliseconds; `None` when empty.
    pub fn range_ms(&self) -> Option<(f64, f64)> {
        let first = self.points.first()?;
        let last = self.points.last()?;
        Some((first.ms, last.ms))
    }
}

/// 0.001 … 0.99 by 0.01, then 0.991 … 0.999 by 0.001, then 0.9991 … 0.9999 by 0.0001.
fn quantiles() -> impl Iterator<Item = f64> {
    let body = (0..=99).map(|i| (f64::from(i) / 100.0).max(0.001));
    let tail = (1..=9).map(|i| 0.99 + f64::from(i) / 1000.0);
    let far = (1..=9).map(|i| 0.999 + f64::from(i) / 10_000.0);
    body.chain(tail).chain(far)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_monotone_and_end_at_the_max() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for us in 1..=10_000u64 {
            h.record(us * 10).unwrap();
        }
        let c = Cdf::from_histogram(&h);
        assert_eq!(c.points.len(), 100 + 9 + 9 + 1);
        assert!(c
            .points
            .windows(2)
            .all(|w| w[0].ms <= w[1].ms && w[0].quantile <= w[1].quantile));
        let (lo, hi) = c.range_ms().unwrap();
        assert!(lo > 0.0 && lo < 1.0, "{lo}");
        assert!((hi - 100.0).abs() < 0.1, "{hi}");
        let p50 = c.points[50];
        assert!((p50.ms - 50.0).abs() < 0.1, "{p50:?}");
    }

    #[test]
    fn empty_histogram_is_an_empty_cdf() {
        let h = Histogram::<u64>::new(3).unwrap();
        assert_eq!(Cdf::from_histogram(&h), Cdf::default());
        assert_eq!(Cdf::default().range_ms(), None);
    }
}
