//! A duration a user wrote, bounded once, so nothing downstream can overflow on it.
//!
//! Every time in a scenario or on the command line is a float (`stall_ms = 1e30`, `--rate
//! 1e-300` turned into an offered duration, a backoff of `100 ms · 2^70`), and
//! `Duration::from_secs_f64` panics on any value past `u64::MAX` seconds. Checking each
//! float where it is converted scattered the rule and missed some, so every validator and
//! every flag that carries a time goes through [`BoundedDuration`]: the value fits, or it
//! is refused with a sentence the caller prefixes with the key or flag.
//!
//! The bound is [`MAX_DURATION`], 365 days. No run herd can finish lasts that long, and a
//! year leaves room to add many bounded durations (a deadline to a start time, a backoff
//! to the clock) on the simulator's `u64` nanosecond clock, which ends at 584 years.
//!
//! Draws from a distribution (a service time, a Poisson gap) are not user input: they go
//! through [`saturating_secs`] (or [`saturating_nanos`], the same in nanoseconds), which
//! clamps to the same bound instead of refusing.
//! (This is a time length; [`crate::span`] is about where a key sits in a TOML file.)

use std::time::Duration;

/// The longest duration herd accepts anywhere: 365 days.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// A duration from 0 to [`MAX_DURATION`], built from a number a user wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BoundedDuration(Duration);

/// Why a number is not a [`BoundedDuration`]. The message says what is wrong with the
/// value; the caller says whose value it is (`key \`stall_ms\``, `--rate`).
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationError {
    /// NaN or an infinity.
    #[error("must be a finite number, got {}", show(*.value))]
    NotFinite {
        /// The value as written.
        value: f64,
        /// Its unit, `ms` or `s`.
        unit: &'static str,
    },
    /// Below zero.
    #[error("must be 0 or more, got {}", show(*.value))]
    Negative {
        /// The value as written.
        value: f64,
        /// Its unit.
        unit: &'static str,
    },
    /// Past [`MAX_DURATION`].
    #[error(
        "must be at most {} {unit} (365 days, the longest duration herd handles), got {} {unit}",
        max_in(.unit),
        show(*.value)
    )]
    TooLong {
        /// The value as written.
        value: f64,
        /// Its unit.
        unit: &'static str,
    },
}

/// [`MAX_DURATION`] in `unit` (`ms` or `s`).
fn max_in(unit: &str) -> String {
    match unit {
        "ms" => MAX_DURATION.as_millis().to_string(),
        _ => MAX_DURATION.as_secs().to_string(),
    }
}

/// A number as a message shows it: `1e300` rather than 301 digits, `0.25` as `0.25`.
pub fn show(x: f64) -> String {
    let a = x.abs();
    if a != 0.0 && a.is_finite() && !(1e-6..1e15).contains(&a) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

impl BoundedDuration {
    /// Zero.
    pub const ZERO: BoundedDuration = BoundedDuration(Duration::ZERO);
    /// [`MAX_DURATION`].
    pub const MAX: BoundedDuration = BoundedDuration(MAX_DURATION);

    /// `x` milliseconds.
    ///
    /// ```
    /// use herd_scenario::duration::BoundedDuration;
    /// assert_eq!(BoundedDuration::from_ms(1500.0).unwrap().get().as_millis(), 1500);
    /// assert!(BoundedDuration::from_ms(1e30).is_err());
    /// assert!(BoundedDuration::from_ms(-1.0).is_err());
    /// ```
    pub fn from_ms(x: f64) -> Result<BoundedDuration, DurationError> {
        Self::checked(x, x / 1000.0, "ms")
    }

    /// `x` seconds.
    pub fn from_secs(x: f64) -> Result<BoundedDuration, DurationError> {
        Self::checked(x, x, "s")
    }

    /// The time `count` events take at `rate` per second (an offered load's length). A rate
    /// of 0 or less is [`DurationError::Negative`]-like input the caller refuses first.
    pub fn from_count_at_rate(count: f64, rate: f64) -> Result<BoundedDuration, DurationError> {
        Self::from_secs(count / rate)
    }

    fn checked(written: f64, secs: f64, unit: &'static str) -> Result<Self, DurationError> {
        if !written.is_finite() {
            return Err(DurationError::NotFinite {
                value: written,
                unit,
            });
        }
        if written < 0.0 {
            return Err(DurationError::Negative {
                value: written,
                unit,
            });
        }
        // `secs` may be NaN (0/0) or infinite (x / tiny); neither is within the bound.
        if secs.is_nan() || secs > MAX_DURATION.as_secs_f64() {
            return Err(DurationError::TooLong {
                value: written,
                unit,
            });
        }
        Ok(BoundedDuration(Duration::from_secs_f64(secs.max(0.0))))
    }

    /// The duration.
    pub fn get(self) -> Duration {
        self.0
    }

    /// Whether it is zero.
    pub fn is_zero(self) -> bool {
        self.0.is_zero()
    }
}

impl From<BoundedDuration> for Duration {
    fn from(d: BoundedDuration) -> Duration {
        d.0
    }
}

/// `secs` seconds of a random draw, clamped to `0..=MAX_DURATION` (NaN is 0): for values
/// computed from bounded inputs whose tail may still stray (a log-normal service time, a
/// Poisson gap at a tiny rate).
#[inline]
pub fn saturating_secs(secs: f64) -> Duration {
    Duration::from_nanos(saturating_nanos(secs))
}

/// [`MAX_DURATION`] in nanoseconds.
pub const MAX_NANOS: u64 = MAX_DURATION.as_secs() * 1_000_000_000;

/// [`saturating_secs`] in whole nanoseconds, the one rule of both: `secs` seconds clamped
/// to `0..=MAX_NANOS` (NaN is 0), to the nearest nanosecond as `Duration::from_secs_f64`
/// rounds. For the simulator, whose clock counts nanoseconds: no `Duration` made and taken
/// apart again.
#[inline]
pub fn saturating_nanos(secs: f64) -> u64 {
    if secs >= MAX_DURATION.as_secs_f64() {
        MAX_NANOS
    } else if secs > 0.0 {
        crate::secs_to_nanos::nanos_from_secs(secs)
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bounds_and_messages() {
        assert_eq!(
            BoundedDuration::from_ms(0.0).unwrap(),
            BoundedDuration::ZERO
        );
        assert_eq!(
            BoundedDuration::from_ms(MAX_DURATION.as_millis() as f64).unwrap(),
            BoundedDuration::MAX
        );
        let e = BoundedDuration::from_ms(1e30).unwrap_err();
        assert!(e.to_string().contains("at most 31536000000 ms"), "{e}");
        let e = BoundedDuration::from_ms(f64::INFINITY).unwrap_err();
        assert!(e.to_string().contains("finite"), "{e}");
        let e = BoundedDuration::from_secs(-0.5).unwrap_err();
        assert_eq!(e.to_string(), "must be 0 or more, got -0.5");
        assert!(BoundedDuration::from_count_at_rate(1000.0, 1e-300).is_err());
        assert!(BoundedDuration::from_count_at_rate(1.0, 0.0).is_err());
        assert_eq!(saturating_secs(f64::NAN), Duration::ZERO);
        assert_eq!(saturating_secs(1e300), MAX_DURATION);
        assert_eq!(saturating_secs(-1.0), Duration::ZERO);
        assert_eq!(Duration::from_nanos(MAX_NANOS), MAX_DURATION);
        assert_eq!(saturating_nanos(f64::NAN), 0);
        assert_eq!(saturating_nanos(1e300), MAX_NANOS);
        assert_eq!(saturating_nanos(-1.0), 0);
        assert_eq!(saturating_nanos(0.02), 20_000_000);
        // 0.020_000_000_5 is a little above the half in binary: up, as std rounds it.
        assert_eq!(saturating_nanos(0.020_000_000_5), 20_000_001);
        assert_eq!(
            Duration::from_secs_f64(0.020_000_000_5).as_nanos(),
            20_000_001
        );
        // 1.5e-9 is a little below 1.5 ns in binary: down, as std rounds it.
        assert_eq!(saturating_nanos(1.5e-9), 1);
        assert_eq!(Duration::from_secs_f64(1.5e-9).as_nanos(), 1);
    }

    proptest! {
        #[test]
        fn any_float_fits_or_is_refused(x in proptest::num::f64::ANY) {
            if let Ok(d) = BoundedDuration::from_ms(x) {
                prop_assert!(d.get() <= MAX_DURATION);
            }
            if let Ok(d) = BoundedDuration::from_secs(x) {
                prop_assert!(d.get() <= MAX_DURATION);
            }
            prop_assert!(saturating_secs(x) <= MAX_DURATION);
        }

        #[test]
        fn saturating_nanos_is_saturating_secs(x in proptest::num::f64::ANY) {
            let n = saturating_nanos(x);
            prop_assert!(n <= MAX_NANOS);
            let d = if x >= MAX_DURATION.as_secs_f64() {
                MAX_DURATION
            } else if x > 0.0 {
                Duration::from_secs_f64(x)
            } else {
                Duration::ZERO
            };
            prop_assert_eq!(u128::from(n), d.as_nanos());
        }

        #[test]
        fn saturating_nanos_of_draws(x in 0.0f64..1e5) {
            prop_assert_eq!(u128::from(saturating_nanos(x)), Duration::from_secs_f64(x).as_nanos());
        }
    }
}
