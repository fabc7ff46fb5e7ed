//! Arrival processes: when each logical request is *intended* to be sent.
//!
//! The schedule is a value computed from the seed alone, before anything is sent, so a slow
//! upstream cannot slow the offered load (open loop, as wrk2 insists), and the real driver
//! and the simulator offer exactly the same instants.

use crate::model::Arrival;
use rand_distr::{Distribution, Exp};
use rand_pcg::Pcg64Mcg;
use std::time::Duration;

/// Iterator over intended send times, from the start of the run.
pub struct Arrivals {
    kind: Arrival,
    rate: f64,
    left: u64,
    t: f64,
    n: u64,
    rng: Pcg64Mcg,
}

impl Arrivals {
    /// `requests` arrivals at mean `rate` per second, seeded.
    pub fn new(kind: Arrival, rate: f64, requests: u64, seed: u64) -> Self {
        Arrivals {
            kind,
            rate,
            left: requests,
            t: 0.0,
            n: 0,
            rng: crate::Seeds(seed).arrivals(),
        }
    }
}

impl Arrivals {
    /// The next intended send time in nanoseconds from the start of the run: the
    /// iterator's [`Duration`] as the simulator's clock counts it, without making one.
    #[inline]
    pub fn next_nanos(&mut self) -> Option<u64> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let at = match self.kind {
            Arrival::Constant => self.n as f64 / self.rate,
            Arrival::Poisson => {
                let now = self.t;
                if let Ok(e) = Exp::new(self.rate) {
                    self.t += e.sample(&mut self.rng);
                }
                now
            }
        };
        self.n += 1;
        Some(crate::duration::saturating_nanos(at))
    }
}

impl Iterator for Arrivals {
    type Item = Duration;
    #[inline]
    fn next(&mut self) -> Option<Duration> {
        self.next_nanos().map(Duration::from_nanos)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_is_even() {
        let v: Vec<_> = Arrivals::new(Arrival::Constant, 10.0, 3, 1)
            .map(|d| d.as_millis())
            .collect();
        assert_eq!(v, [0, 100, 200]);
    }

    #[test]
    fn poisson_has_the_rate_and_is_seeded() {
        let v: Vec<_> = Arrivals::new(Arrival::Poisson, 100.0, 100_000, 7).collect();
        let span = v.last().unwrap().as_secs_f64();
        assert!(
            (100_000.0 / span - 100.0).abs() < 1.5,
            "{}",
            100_000.0 / span
        );
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
        let again: Vec<_> = Arrivals::new(Arrival::Poisson, 100.0, 100_000, 7).collect();
        assert_eq!(v, again);
        let other: Vec<_> = Arrivals::new(Arrival::Poisson, 100.0, 10, 8).collect();
        assert_ne!(v[..10], other[..]);
    }

    #[test]
    fn nanos_are_the_durations() {
        for kind in [Arrival::Constant, Arrival::Poisson] {
            let d: Vec<_> = Arrivals::new(kind, 3.0, 1000, 5).collect();
            let mut a = Arrivals::new(kind, 3.0, 1000, 5);
            let n: Vec<_> = std::iter::from_fn(|| a.next_nanos()).collect();
            let back: Vec<_> = n.iter().map(|&n| Duration::from_nanos(n)).collect();
            assert_eq!(d, back);
        }
        let mut a = Arrivals::new(Arrival::Constant, 3.0, 2, 5);
        assert_eq!(a.next_nanos(), Some(0));
        assert_eq!(a.next_nanos(), Some(333_333_333));
        assert_eq!(a.next_nanos(), None);
    }
}
