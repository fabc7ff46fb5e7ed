//! Backoff: the nominal delay before retry `n` (1-based), before jitter.
//!
//! `nominal(n) = min(cap, base · factor^(n − 1 + offset))`
//!
//! `offset` exists because libraries disagree on where the exponent starts: undici waits
//! `minTimeout · factor^(n−1)` (500 ms first), axios-retry's `exponentialDelay` waits
//! `delayFactor · 2^n` (200 ms first, for the default `delayFactor` of 100). Keeping both
//! parameters as the library names them lets a scenario say `base_ms = 100` for axios-retry
//! and mean exactly what axios-retry's `delayFactor = 100` means.

use crate::jitter::{Jitter, JitterInput};
use rand::Rng;
use std::time::Duration;

/// An exponential backoff with a cap and a jitter kind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    /// Delay unit (undici's `minTimeout`, axios-retry's `delayFactor`).
    pub base: Duration,
    /// Growth per retry.
    pub factor: f64,
    /// Largest nominal delay; `Duration::MAX` for none.
    pub cap: Duration,
    /// Added to the exponent: 0 when the first retry waits `base`, 1 when it waits `base·factor`.
    pub offset: u32,
    /// How the nominal delay is randomised.
    pub jitter: Jitter,
}

impl Backoff {
    /// The nominal (capped, un-jittered) delay before retry `n` (1-based).
    pub fn nominal(&self, n: u32) -> Duration {
        let exp = (n.max(1) - 1)
            .saturating_add(self.offset)
            .min(i32::MAX as u32) as i32;
        let secs = self.base.as_secs_f64() * self.factor.powi(exp);
        let cap = self.cap.as_secs_f64();
        if !secs.is_finite() || secs >= cap {
            self.cap
        } else {
            Duration::from_secs_f64(secs.max(0.0))
        }
    }

    /// The jittered delay before retry `n`, given the delay used before the previous retry
    /// (`None` before the first).
    pub fn delay<R: Rng + ?Sized>(&self, n: u32, prev: Option<Duration>, rng: &mut R) -> Duration {
        self.jittered(self.nominal(n), prev, rng)
    }

    /// Jitters an arbitrary nominal delay (axios-retry jitters `max(backoff, Retry-After)`).
    pub fn jittered<R: Rng + ?Sized>(
        &self,
        nominal: Duration,
        prev: Option<Duration>,
        rng: &mut R,
    ) -> Duration {
        let input = JitterInput {
            nominal,
            base: self.base,
            cap: self.cap,
            prev: prev.unwrap_or(self.base),
        };
        self.jitter.apply(input, rng)
    }
}

/// An iterator over successive delays, in the style of `backon`: handy for tests, docs and
/// `herd policy`. Production code calls [`crate::Policy::decide`] instead, which also
/// classifies outcomes.
pub struct Delays<'r, R: Rng + ?Sized> {
    backoff: Backoff,
    n: u32,
    max: u32,
    prev: Option<Duration>,
    rng: &'r mut R,
}

impl<'r, R: Rng + ?Sized> Delays<'r, R> {
    /// The first `max` delays of `backoff`, drawn from `rng`.
    pub fn new(backoff: Backoff, max: u32, rng: &'r mut R) -> Self {
        Delays {
            backoff,
            n: 0,
            max,
            prev: None,
            rng,
        }
    }
}

impl<R: Rng + ?Sized> Iterator for Delays<'_, R> {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        if self.n >= self.max {
            return None;
        }
        self.n += 1;
        let d = self.backoff.delay(self.n, self.prev, self.rng);
        self.prev = Some(d);
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    fn b(base: u64, offset: u32, cap: Duration, jitter: Jitter) -> Backoff {
        Backoff {
            base: ms(base),
            factor: 2.0,
            cap,
            offset,
            jitter,
        }
    }

    #[test]
    fn offsets_match_the_libraries() {
        let undici = b(500, 0, ms(30_000), Jitter::None);
        let got: Vec<_> = (1..=8).map(|n| undici.nominal(n).as_millis()).collect();
        assert_eq!(got, [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]);
        let axios = b(100, 1, Duration::MAX, Jitter::None);
        let got: Vec<_> = (1..=3).map(|n| axios.nominal(n).as_millis()).collect();
        assert_eq!(got, [200, 400, 800]);
    }

    #[test]
    fn huge_exponents_saturate_at_cap() {
        let x = b(100, 0, Duration::MAX, Jitter::None);
        assert_eq!(x.nominal(5000), Duration::MAX);
        let y = b(100, 0, ms(1000), Jitter::None);
        assert_eq!(y.nominal(u32::MAX), ms(1000));
    }

    #[test]
    fn delays_iterator_is_seeded() {
        let full = b(100, 0, ms(10_000), Jitter::Full);
        let a: Vec<_> = Delays::new(full, 5, &mut Pcg64Mcg::seed_from_u64(3)).collect();
        let c: Vec<_> = Delays::new(full, 5, &mut Pcg64Mcg::seed_from_u64(3)).collect();
        assert_eq!(a, c);
        assert_eq!(a.len(), 5);
        for (i, d) in a.iter().enumerate() {
            assert!(*d < full.nominal(i as u32 + 1));
        }
    }

    proptest! {
        #[test]
        fn nominal_is_monotone_and_capped(base in 1u64..10_000, factor in 1.0f64..4.0, cap in 1u64..100_000, n in 1u32..64) {
            let x = Backoff { base: ms(base), factor, cap: ms(cap), offset: 0, jitter: Jitter::None };
            prop_assert!(x.nominal(n) <= ms(cap));
            prop_assert!(x.nominal(n) <= x.nominal(n + 1));
        }

        #[test]
        fn decorrelated_stays_in_bounds(seed: u64, base in 1u64..1000, cap in 1000u64..60_000, n in 1u32..20) {
            let x = b(base, 0, ms(cap), Jitter::Decorrelated);
            let mut rng = Pcg64Mcg::seed_from_u64(seed);
            for d in Delays::new(x, n, &mut rng) {
                prop_assert!(d >= ms(base) && d <= ms(cap));
            }
        }
    }
}
