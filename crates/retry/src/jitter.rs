//! Jitter: how a nominal backoff delay is randomised so that clients that failed together
//! do not retry together.
//!
//! Every kind is a pure function of the nominal delay `d` (already capped, see below), the
//! previous delay, and an RNG the caller passes in. Nothing here reads a clock or a global
//! RNG, so the simulator and the real driver get identical draws from identical seeds.
//!
//! | kind | formula | cap applied |
//! |---|---|---|
//! | `none` | `d` | before (d is capped) |
//! | `full` | `U[0, d)` | before |
//! | `equal` | `d/2 + U[0, d/2)` | before |
//! | `decorrelated` | `min(cap, U[base, 3·prev))`, `prev` starts at `base` | after |
//! | `proportional(f)` | `d · U[1−f, 1+f]` | before (may exceed cap by `f`) |
//! | `additive(f)` | `d + U[0, f·d]` | before (may exceed cap by `f`) |
//! | `noise(s)` | `min(cap, d + U[0, s))`, `s` in seconds | after |
//!
//! `full`, `equal` and `decorrelated` are the three schemes of Marc Brooker's "Exponential
//! Backoff And Jitter" (AWS Architecture Blog, 2015); `additive(0.2)` is what axios-retry's
//! `exponentialDelay` adds (`delay * 0.2 * Math.random()`); `proportional` is the ±f
//! "randomization factor" of gRPC's connection backoff and Google's client libraries.
//! `noise(s)` adds an absolute amount instead of a share of the delay: got adds
//! `Math.random() * 100` ms after its `backoffLimit` (default none, so the cap never binds),
//! and stamina adds `U(0, 1)` s *before* its 5 s cap. The cap comes after here, which is
//! stamina's order and, with got's default of no limit, got's too. Capping after the draw is
//! what makes stamina's late waits exactly 5 s apart: the jitter is cut off with the rest.

use rand::Rng;
use std::fmt;
use std::time::Duration;

/// A jitter kind. See the module docs for each formula.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Jitter {
    /// No randomisation: every client that failed at the same instant retries at the same instant.
    None,
    /// `U[0, d)`: the widest spread; the expected delay halves.
    Full,
    /// `d/2 + U[0, d/2)`: keeps at least half the delay.
    Equal,
    /// `min(cap, U[base, 3·prev))`: each delay drawn from the previous one, not from the attempt number.
    Decorrelated,
    /// `d · U[1−f, 1+f]` with `0 ≤ f ≤ 1`.
    Proportional(f64),
    /// `d + U[0, f·d]` with `f ≥ 0`.
    Additive(f64),
    /// `min(cap, d + U[0, s))` with `s ≥ 0` seconds: noise of a fixed size, then the cap.
    Noise(f64),
}

/// What a jitter needs besides the nominal delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JitterInput {
    /// The nominal delay for this retry, already capped.
    pub nominal: Duration,
    /// The backoff's base delay (the lower bound for `decorrelated`).
    pub base: Duration,
    /// The backoff's cap (applied after drawing for `decorrelated`).
    pub cap: Duration,
    /// The delay actually used before the previous retry, or `base` before the first retry.
    pub prev: Duration,
}

impl Jitter {
    /// Draws the delay for one retry.
    pub fn apply<R: Rng + ?Sized>(&self, input: JitterInput, rng: &mut R) -> Duration {
        let d = input.nominal.as_secs_f64();
        let secs = match *self {
            Jitter::None => return input.nominal,
            Jitter::Full => uniform(rng, 0.0, d),
            Jitter::Equal => d / 2.0 + uniform(rng, 0.0, d / 2.0),
            Jitter::Decorrelated => {
                let lo = input.base.as_secs_f64();
                let hi = (input.prev.as_secs_f64() * 3.0).max(lo);
                uniform(rng, lo, hi).min(input.cap.as_secs_f64())
            }
            Jitter::Proportional(f) => d * (1.0 - f + rng.random::<f64>() * 2.0 * f),
            Jitter::Additive(f) => d + d * f * rng.random::<f64>(),
            Jitter::Noise(s) => (d + s * rng.random::<f64>()).min(input.cap.as_secs_f64()),
        };
        // A huge factor on a huge nominal delay saturates rather than panics.
        Duration::try_from_secs_f64(secs.max(0.0)).unwrap_or(Duration::MAX)
    }

    /// The parameter of `proportional` / `additive` (a share of the delay) or `noise`
    /// (seconds), if any.
    pub fn factor(&self) -> Option<f64> {
        match *self {
            Jitter::Proportional(f) | Jitter::Additive(f) | Jitter::Noise(f) => Some(f),
            _ => None,
        }
    }

    /// Parses a kind name (`none`, `full`, `equal`, `decorrelated`, `proportional`,
    /// `additive`, `noise`); the three parametrised kinds take `factor`, or 0.2 when it is
    /// `None` (for `noise`, seconds, and 0.1 when `None`: got's 100 ms).
    pub fn from_name(name: &str, factor: Option<f64>) -> Result<Jitter, JitterError> {
        let f = factor.unwrap_or(0.2);
        let j = match name {
            "none" => Jitter::None,
            "full" => Jitter::Full,
            "equal" => Jitter::Equal,
            "decorrelated" => Jitter::Decorrelated,
            "proportional" => Jitter::Proportional(f),
            "additive" => Jitter::Additive(f),
            "noise" => Jitter::Noise(factor.unwrap_or(0.1)),
            _ => return Err(JitterError::UnknownKind(name.to_owned())),
        };
        if factor.is_some() && j.factor().is_none() {
            return Err(JitterError::FactorNotAllowed(name.to_owned()));
        }
        match j {
            Jitter::Proportional(f) if !(0.0..=1.0).contains(&f) => Err(JitterError::Factor(f)),
            Jitter::Additive(f) | Jitter::Noise(f) if !(f >= 0.0 && f.is_finite()) => {
                Err(JitterError::Factor(f))
            }
            j => Ok(j),
        }
    }

    /// The kind's name, as accepted by [`Jitter::from_name`].
    pub fn name(&self) -> &'static str {
        match self {
            Jitter::None => "none",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::Decorrelated => "decorrelated",
            Jitter::Proportional(_) => "proportional",
            Jitter::Additive(_) => "additive",
            Jitter::Noise(_) => "noise",
        }
    }

    /// All kind names, for help texts and error messages.
    pub const NAMES: &'static [&'static str] = &[
        "none",
        "full",
        "equal",
        "decorrelated",
        "proportional",
        "additive",
        "noise",
    ];
}

impl fmt::Display for Jitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.factor() {
            Some(x) => write!(f, "{}({x})", self.name()),
            None => f.write_str(self.name()),
        }
    }
}

/// A jitter that could not be built.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum JitterError {
    /// The name is not a jitter kind.
    UnknownKind(String),
    /// A factor was given to a kind that takes none.
    FactorNotAllowed(String),
    /// The factor is out of range (proportional: 0..=1, additive and noise: ≥ 0).
    Factor(f64),
}

impl fmt::Display for JitterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JitterError::UnknownKind(k) => write!(
                f,
                "unknown jitter kind `{k}` (expected one of: {})",
                Jitter::NAMES.join(", ")
            ),
            JitterError::FactorNotAllowed(k) => {
                write!(
                    f,
                    "jitter `{k}` takes no factor (only proportional, additive and noise do)"
                )
            }
            JitterError::Factor(x) => write!(
                f,
                "jitter factor {x} out of range (proportional: 0 to 1, additive and noise: 0 or more)"
            ),
        }
    }
}

impl std::error::Error for JitterError {}

/// `U[lo, hi)`; `lo` when the interval is empty.
fn uniform<R: Rng + ?Sized>(rng: &mut R, lo: f64, hi: f64) -> f64 {
    if hi <= lo {
        lo
    } else {
        lo + rng.random::<f64>() * (hi - lo)
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

    fn input(nominal: u64) -> JitterInput {
        JitterInput {
            nominal: ms(nominal),
            base: ms(100),
            cap: ms(10_000),
            prev: ms(100),
        }
    }

    fn draws(j: Jitter, seed: u64) -> Vec<u128> {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let mut prev = ms(100);
        [100u64, 200, 400, 800]
            .iter()
            .map(|&n| {
                let d = j.apply(JitterInput { prev, ..input(n) }, &mut rng);
                prev = d;
                d.as_millis()
            })
            .collect()
    }

    #[test]
    fn none_is_identity() {
        assert_eq!(draws(Jitter::None, 1), vec![100, 200, 400, 800]);
    }

    #[test]
    fn fixed_seed_sequences() {
        // Exact draws under seed 7: a change in formula or RNG use shows up here.
        let full = draws(Jitter::Full, 7);
        let equal = draws(Jitter::Equal, 7);
        let deco = draws(Jitter::Decorrelated, 7);
        let prop = draws(Jitter::Proportional(0.5), 7);
        let add = draws(Jitter::Additive(0.2), 7);
        // The same seed drives the same uniforms, so the kinds relate exactly:
        // equal = d/2 + full/2, additive = d + 0.2·full, proportional = d·(0.5 + full/d).
        for (i, d) in [100u128, 200, 400, 800].iter().enumerate() {
            assert!(full[i] < *d);
            assert!((equal[i] as i128 - (*d as i128 / 2 + full[i] as i128 / 2)).abs() <= 1);
            assert!((add[i] as i128 - (*d as i128 + full[i] as i128 / 5)).abs() <= 1);
            assert!((prop[i] as i128 - (*d as i128 / 2 + full[i] as i128)).abs() <= 1);
        }
        assert_eq!(full, draws(Jitter::Full, 7), "same seed, same draws");
        assert_ne!(full, draws(Jitter::Full, 8), "another seed, other draws");
        assert!(deco.iter().all(|&x| (100..=10_000).contains(&x)));
        insta_like(&full, &[68, 95, 108, 744]);
    }

    #[test]
    fn noise_adds_a_fixed_size_then_caps() {
        // Same seed as `fixed_seed_sequences`: the same uniforms u, full = d·u, so
        // noise(0.1) = d + 100·u ms, whatever d.
        let noise = draws(Jitter::Noise(0.1), 7);
        let full = draws(Jitter::Full, 7);
        for (i, d) in [100u128, 200, 400, 800].iter().enumerate() {
            let u = full[i] as f64 / *d as f64;
            let want = *d as f64 + 100.0 * u;
            assert!((noise[i] as f64 - want).abs() <= 2.0, "{noise:?}");
        }
        insta_like(&noise, &[168, 247, 427, 893]);
        // Capped after the draw: at the cap the noise is gone (stamina's exact 5 s).
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        let capped = JitterInput {
            nominal: ms(5000),
            base: ms(100),
            cap: ms(5000),
            prev: ms(100),
        };
        for _ in 0..100 {
            assert_eq!(Jitter::Noise(1.0).apply(capped, &mut rng), ms(5000));
        }
        assert_eq!(Jitter::from_name("noise", None), Ok(Jitter::Noise(0.1)));
        assert_eq!(
            Jitter::from_name("noise", Some(1.0)),
            Ok(Jitter::Noise(1.0))
        );
        assert!(Jitter::from_name("noise", Some(-1.0)).is_err());
        assert_eq!(Jitter::Noise(1.0).to_string(), "noise(1)");
    }

    /// Pins an exact sequence; on a deliberate change of formula, update the literal.
    fn insta_like(got: &[u128], want: &[u128]) {
        assert_eq!(got, want, "jitter draws changed under a fixed seed");
    }

    #[test]
    fn names_round_trip() {
        for name in Jitter::NAMES {
            assert_eq!(Jitter::from_name(name, None).unwrap().name(), *name);
        }
        assert!(Jitter::from_name("fulll", None).is_err());
        assert!(Jitter::from_name("full", Some(0.1)).is_err());
        assert!(Jitter::from_name("proportional", Some(1.5)).is_err());
        assert!(Jitter::from_name("additive", Some(-0.1)).is_err());
    }

    proptest! {
        #[test]
        fn bounds_hold(seed: u64, nominal in 0u64..100_000, prev in 1u64..100_000, f in 0.0f64..1.0) {
            let mut rng = Pcg64Mcg::seed_from_u64(seed);
            let base = ms(50);
            let cap = ms(20_000);
            let nominal = ms(nominal).min(cap);
            let inp = JitterInput { nominal, base, cap, prev: ms(prev) };
            let full = Jitter::Full.apply(inp, &mut rng);
            prop_assert!(full <= nominal);
            prop_assert!(full < nominal || nominal.is_zero());
            let eq = Jitter::Equal.apply(inp, &mut rng);
            prop_assert!(eq + Duration::from_nanos(1) >= nominal / 2 && eq <= nominal);
            let deco = Jitter::Decorrelated.apply(inp, &mut rng);
            prop_assert!(deco <= cap);
            prop_assert!(deco >= base.min(cap));
            prop_assert!(deco <= (ms(prev) * 3).max(base));
            let p = Jitter::Proportional(f).apply(inp, &mut rng).as_secs_f64();
            let d = nominal.as_secs_f64();
            prop_assert!(p >= d * (1.0 - f) - 1e-9 && p <= d * (1.0 + f) + 1e-9);
            let a = Jitter::Additive(f).apply(inp, &mut rng).as_secs_f64();
            prop_assert!(a >= d - 1e-9 && a <= d * (1.0 + f) + 1e-9);
            let n = Jitter::Noise(f).apply(inp, &mut rng);
            prop_assert!(n >= nominal && n <= cap);
            prop_assert!(n.as_secs_f64() <= d + f + 1e-9);
        }
    }
}
