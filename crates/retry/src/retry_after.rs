//! `Retry-After` (RFC 9110 §10.2.3): parsing the header, and what a policy does with it.
//!
//! Libraries disagree on the second part: undici lets the hint *replace* its backoff
//! (capped at `maxTimeout`), axios-retry's `exponentialDelay` takes `max(backoff, hint)`
//! uncapped and adds its 20% jitter to that, herd's own profile takes the max of the
//! jittered backoff and the hint, clamps the hint and gives up on a hint longer than it is
//! willing to wait. [`RetryAfter`] says which, with limits.
//!
//! The date form needs "now" to turn into a delay; it is passed in, never read, so the
//! simulator can parse on its virtual clock. A date in the past parses as zero, and a zero
//! hint counts as no hint at all: undici 7 uses a hint only when it is above 0, and for
//! axios-retry `max(backoff, 0)` is the backoff.

use std::time::{Duration, SystemTime};

/// How a hint combines with the computed backoff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryAfterMode {
    /// The hint is ignored.
    Ignore,
    /// The (clamped) hint replaces the computed delay; no jitter (undici).
    Replace,
    /// The delay is `max(jittered backoff, clamped hint)` (herd).
    Floor,
    /// The delay is the jitter applied to `max(nominal backoff, clamped hint)`: a hint is
    /// stretched like a backoff. axios-retry 4.5.0's `exponentialDelay` does this
    /// (`dist/esm/index.js`: `const delay = Math.max(calculatedDelay, retryAfter(error));`
    /// then `return delay + delay * 0.2 * Math.random()`).
    FloorThenJitter,
}

/// What happens to a hint longer than `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AboveMax {
    /// Wait `max` and retry anyway (undici's cap).
    WaitMax,
    /// Give up: the server asked for longer than this client will wait.
    GiveUp,
}

/// A policy's handling of `Retry-After` / server pushback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryAfter {
    /// How the hint combines with the backoff.
    pub mode: RetryAfterMode,
    /// Hints shorter than this are raised to it.
    pub min: Duration,
    /// Hints longer than this follow `above_max`.
    pub max: Duration,
    /// The rule for a hint above `max`.
    pub above_max: AboveMax,
}

impl RetryAfter {
    /// Hints are ignored.
    pub const IGNORE: RetryAfter = RetryAfter {
        mode: RetryAfterMode::Ignore,
        min: Duration::ZERO,
        max: Duration::MAX,
        above_max: AboveMax::WaitMax,
    };

    /// Clamps a hint into `[min, max]`; `None` means give up (a hint above `max` under
    /// [`AboveMax::GiveUp`]).
    pub fn clamp(&self, hint: Duration) -> Option<Duration> {
        if hint > self.max {
            return match self.above_max {
                AboveMax::WaitMax => Some(self.max),
                AboveMax::GiveUp => None,
            };
        }
        Some(hint.max(self.min))
    }
}

/// Parses a `Retry-After` header value into the delay it asks for.
///
/// Returns `None` for a value that is neither a non-negative integer nor an HTTP-date.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use herd_retry::retry_after::parse;
/// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
/// assert_eq!(parse("120", now), Some(Duration::from_secs(120)));
/// assert_eq!(parse("Sun, 06 Nov 1994 08:49:47 GMT", now), Some(Duration::from_secs(10)));
/// assert_eq!(parse("soon", now), None);
/// ```
pub fn parse(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        return v.parse::<u64>().ok().map(Duration::from_secs);
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn clamp_follows_the_stated_rule(hint in 0u64..100_000, min in 0u64..1000, max in 1000u64..50_000, give_up: bool) {
            let r = RetryAfter {
                mode: RetryAfterMode::Floor,
                min: Duration::from_millis(min),
                max: Duration::from_millis(max),
                above_max: if give_up { AboveMax::GiveUp } else { AboveMax::WaitMax },
            };
            let got = r.clamp(Duration::from_millis(hint));
            if hint > max {
                prop_assert_eq!(got, if give_up { None } else { Some(Duration::from_millis(max)) });
            } else {
                prop_assert_eq!(got, Some(Duration::from_millis(hint.max(min))));
            }
        }
    }

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)
    }

    #[test]
    fn delta_seconds() {
        assert_eq!(parse("0", now()), Some(Duration::ZERO));
        assert_eq!(parse(" 3 ", now()), Some(Duration::from_secs(3)));
        assert_eq!(parse("-1", now()), None);
        assert_eq!(parse("1.5", now()), None);
        assert_eq!(parse("", now()), None);
        assert_eq!(parse("99999999999999999999999", now()), None);
    }

    #[test]
    fn http_dates() {
        let later = httpdate::fmt_http_date(now() + Duration::from_secs(42));
        assert_eq!(parse(&later, now()), Some(Duration::from_secs(42)));
        let earlier = httpdate::fmt_http_date(now() - Duration::from_secs(42));
        assert_eq!(parse(&earlier, now()), Some(Duration::ZERO));
        // RFC 850 and asctime forms are obsolete but must be accepted (RFC 9110 §5.6.7).
        assert!(parse("Sunday, 06-Nov-94 08:49:37 GMT", now()).is_some());
        assert!(parse("Sun Nov  6 08:49:37 1994", now()).is_some());
        assert_eq!(parse("Tomorrow", now()), None);
    }
}
