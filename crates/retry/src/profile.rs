//! Profiles: the *defaults* of real retry libraries, replicated as data.
//!
//! A profile is more than a delay formula: it is which outcomes are retried, on which
//! methods, how many times, and what a `Retry-After` header does. Each one below cites the
//! source it was read from. Any profile can have its jitter (and other knobs) overridden, so
//! "axios-retry without jitter" and "undici with full jitter" are one line each.

use crate::backoff::Backoff;
use crate::classify::{Failure, Method, Outcome};
use crate::jitter::Jitter;
use crate::retry_after::{AboveMax, RetryAfter, RetryAfterMode};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A named retry profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Profile {
    /// undici's `RetryHandler` / `RetryAgent` defaults (undici 6–7, `lib/handler/retry-handler.js`):
    /// `maxRetries: 5`, `minTimeout: 500`, `timeoutFactor: 2`, `maxTimeout: 30000`, so retry
    /// `n` waits `min(500·2^(n−1), 30000)` ms with no jitter. `Retry-After` (seconds or an
    /// HTTP-date) replaces the computed delay, capped at `maxTimeout`. Retries statuses
    /// 429, 500, 502, 503, 504 and the error codes `ECONNRESET`, `ECONNREFUSED`, `EPIPE`,
    /// `UND_ERR_SOCKET` (and DNS / unreachable codes); a headers or body timeout has another
    /// code and is not retried. Only methods GET, HEAD, OPTIONS, PUT, DELETE, TRACE.
    Undici,
    /// axios-retry 4.x with `retryDelay: exponentialDelay` (read in 4.5.0's
    /// `dist/esm/index.js`, the version `adapters/node` locks): `retries: 3`; retry `n`
    /// waits `d = max(100·2^n, Retry-After)` ms plus `U[0, 0.2·d]`, uncapped: the jitter
    /// is drawn on the larger of the two, so a hint is stretched by up to 20% too
    /// ([`RetryAfterMode::FloorThenJitter`]). Its `retryAfter` reads the header with JS
    /// `Number()` (so `1.5` is 1500 ms) and falls back to `new Date()`; herd parses RFC
    /// 9110's whole seconds and HTTP-dates only, which is all herd's upstream sends.
    /// A jitter override stands for a custom `retryDelay`, which does not read the hint
    /// (see [`crate::Policy::with_jitter`]). axios-retry's own default `retryDelay` is
    /// `noDelay` (the hint alone, else 0); this profile is the `exponentialDelay` its
    /// README shows. With `shouldResetTimeout: false` (the default) axios' `timeout` covers
    /// the whole request, retries and delays included, so a scenario gives this profile a
    /// deadline equal to its attempt timeout. Default condition `isNetworkOrIdempotentRequestError`:
    /// a network error (no response, code not `ECONNABORTED` / `ERR_CANCELED`, so timeouts are
    /// not retried) on any method, or 429 / 5xx on GET, HEAD, OPTIONS, PUT, DELETE.
    AxiosRetry,
    /// No retries at all.
    None,
    /// The common hand-rolled loop: up to 3 immediate retries on any failure, any method.
    Naive,
    /// A generic exponential backoff: `retries` (default 3) retries of
    /// `min(cap_ms, base_ms·factor^(n−1))` (defaults 100 ms, 2, 10 s) with `full` jitter;
    /// retries 429, 500, 502, 503, 504, connection errors and timeouts on idempotent methods,
    /// and a refused connection on any method (it never reached the server). `Retry-After`
    /// is a floor on the delay.
    Exponential,
    /// herd's recommendation, the policy its reports argue for: 3 retries of
    /// `min(5 s, 100 ms·2^(n−1))` with full jitter; the `exponential` conditions; `Retry-After`
    /// a floor clamped to 10 s, giving up on a longer hint. Used through
    /// [`crate::Strategy::new`], it also gets a percent budget (20% over 10 s, floor 10/s)
    /// and a 10 s overall deadline.
    Herd,
}

impl Profile {
    /// All profile names, as accepted by `FromStr`.
    pub const NAMES: &'static [&'static str] = &[
        "undici",
        "axios-retry",
        "none",
        "naive",
        "exponential",
        "herd",
    ];

    /// The profile's name.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Undici => "undici",
            Profile::AxiosRetry => "axios-retry",
            Profile::None => "none",
            Profile::Naive => "naive",
            Profile::Exponential => "exponential",
            Profile::Herd => "herd",
        }
    }

    /// How many retries the library makes by default.
    pub fn default_retries(self) -> u32 {
        match self {
            Profile::Undici => 5,
            Profile::AxiosRetry | Profile::Naive | Profile::Exponential | Profile::Herd => 3,
            Profile::None => 0,
        }
    }

    /// The library's default backoff.
    pub fn default_backoff(self) -> Backoff {
        let ms = Duration::from_millis;
        match self {
            Profile::Undici => Backoff {
                base: ms(500),
                factor: 2.0,
                cap: ms(30_000),
                offset: 0,
                jitter: Jitter::None,
            },
            Profile::AxiosRetry => Backoff {
                base: ms(100),
                factor: 2.0,
                cap: Duration::MAX,
                offset: 1,
                jitter: Jitter::Additive(0.2),
            },
            Profile::None | Profile::Naive => Backoff {
                base: Duration::ZERO,
                factor: 1.0,
                cap: Duration::ZERO,
                offset: 0,
                jitter: Jitter::None,
            },
            Profile::Exponential => Backoff {
                base: ms(100),
                factor: 2.0,
                cap: ms(10_000),
                offset: 0,
                jitter: Jitter::Full,
            },
            Profile::Herd => Backoff {
                base: ms(100),
                factor: 2.0,
                cap: ms(5_000),
                offset: 0,
                jitter: Jitter::Full,
            },
        }
    }

    /// What a `Retry-After` hint does under this profile by default.
    pub fn default_retry_after(self) -> RetryAfter {
        let wait = |mode, max| RetryAfter {
            mode,
            min: Duration::ZERO,
            max,
            above_max: AboveMax::WaitMax,
        };
        match self {
            Profile::Undici => wait(RetryAfterMode::Replace, Duration::from_millis(30_000)),
            Profile::AxiosRetry => wait(RetryAfterMode::FloorThenJitter, Duration::MAX),
            Profile::Exponential => wait(RetryAfterMode::Floor, Duration::MAX),
            Profile::Herd => RetryAfter {
                mode: RetryAfterMode::Floor,
                min: Duration::ZERO,
                max: Duration::from_secs(10),
                above_max: AboveMax::GiveUp,
            },
            Profile::None | Profile::Naive => RetryAfter::IGNORE,
        }
    }

    /// Whether this profile's library would retry `outcome` of a `method` request
    /// (ignoring how many retries are left).
    pub fn is_retryable(self, method: Method, outcome: &Outcome) -> bool {
        match (self, outcome) {
            (_, o) if o.is_success() => false,
            (Profile::None, _) => false,
            (Profile::Naive, _) => true,
            (Profile::Undici, Outcome::Response { status, .. }) => {
                method.is_idempotent() && matches!(status, 429 | 500 | 502 | 503 | 504)
            }
            (Profile::Undici, Outcome::Failed(f)) => {
                method.is_idempotent() && f.is_connection_error()
            }
            (Profile::AxiosRetry, Outcome::Response { status, .. }) => {
                axios_idempotent(method) && (*status == 429 || (500..=599).contains(status))
            }
            (Profile::AxiosRetry, Outcome::Failed(f)) => f.is_connection_error(),
            (Profile::Exponential | Profile::Herd, Outcome::Response { status, .. }) => {
                method.is_idempotent() && matches!(status, 429 | 500 | 502 | 503 | 504)
            }
            (Profile::Exponential | Profile::Herd, Outcome::Failed(f)) => {
                !f.may_have_reached_server()
                    || (method.is_idempotent()
                        && (f.is_connection_error() || *f == Failure::Timeout))
            }
        }
    }
}

/// axios-retry's `IDEMPOTENT_HTTP_METHODS`: get, head, options, put, delete (no TRACE).
fn axios_idempotent(m: Method) -> bool {
    matches!(
        m,
        Method::Get | Method::Head | Method::Options | Method::Put | Method::Delete
    )
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "undici" => Profile::Undici,
            "axios-retry" | "axios" => Profile::AxiosRetry,
            "none" => Profile::None,
            "naive" => Profile::Naive,
            "exponential" => Profile::Exponential,
            "herd" => Profile::Herd,
            _ => {
                return Err(format!(
                    "unknown policy `{s}` (expected one of: {})",
                    Profile::NAMES.join(", ")
                ))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Failure::*;

    fn s(code: u16) -> Outcome {
        Outcome::status(code)
    }

    #[test]
    fn undici_conditions() {
        let p = Profile::Undici;
        for code in [429, 500, 502, 503, 504] {
            assert!(p.is_retryable(Method::Get, &s(code)), "{code}");
            assert!(!p.is_retryable(Method::Post, &s(code)), "{code} POST");
        }
        for code in [200, 400, 404, 501, 505] {
            assert!(!p.is_retryable(Method::Get, &s(code)), "{code}");
        }
        for f in [Reset, Refused, BrokenPipe, Closed] {
            assert!(p.is_retryable(Method::Trace, &Outcome::Failed(f)));
            assert!(!p.is_retryable(Method::Post, &Outcome::Failed(f)));
        }
        assert!(!p.is_retryable(Method::Get, &Outcome::Failed(Timeout)));
    }

    #[test]
    fn axios_conditions() {
        let p = Profile::AxiosRetry;
        for code in [429, 500, 501, 503, 599] {
            assert!(p.is_retryable(Method::Get, &s(code)), "{code}");
            assert!(!p.is_retryable(Method::Post, &s(code)), "{code} POST");
        }
        assert!(
            !p.is_retryable(Method::Trace, &s(503)),
            "TRACE is not in axios' list"
        );
        assert!(!p.is_retryable(Method::Get, &s(408)));
        // Network errors retry on any method; timeouts (ECONNABORTED) never.
        assert!(p.is_retryable(Method::Post, &Outcome::Failed(Reset)));
        assert!(!p.is_retryable(Method::Get, &Outcome::Failed(Timeout)));
    }

    #[test]
    fn generic_conditions() {
        let p = Profile::Exponential;
        assert!(p.is_retryable(Method::Get, &Outcome::Failed(Timeout)));
        assert!(!p.is_retryable(Method::Post, &Outcome::Failed(Timeout)));
        assert!(p.is_retryable(Method::Post, &Outcome::Failed(Refused)));
        assert!(!p.is_retryable(Method::Post, &Outcome::Failed(Reset)));
        assert!(Profile::Naive.is_retryable(Method::Post, &s(400)));
        assert!(!Profile::Naive.is_retryable(Method::Post, &s(200)));
        assert!(!Profile::None.is_retryable(Method::Get, &s(503)));
    }

    #[test]
    fn names_round_trip() {
        for n in Profile::NAMES {
            assert_eq!(n.parse::<Profile>().unwrap().name(), *n);
        }
        assert!("undicci".parse::<Profile>().is_err());
    }
}
