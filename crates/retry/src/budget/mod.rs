//! Retry budgets: a bound on the extra load a client's retries may add, shared by all the
//! requests of that client.
//!
//! # Why budgets and not max retries?
//!
//! `retries = 3` bounds what *one* request may do; it says nothing about what *all* of them
//! do together. When the upstream is down or overloaded every request fails, so every
//! request retries its three times and the upstream receives four times the load at the very
//! moment it can least take it. Jitter spreads those retries in time but does not remove
//! them. A budget bounds the sum: with a 20% percent budget, retries add at most a fifth to
//! the offered load however bad the upstream gets, while an isolated failure (the common case)
//! is still retried at once. That is the difference between a blip and a metastable failure
//! where retries alone keep the upstream saturated after the original cause is gone.
//!
//! herd's own `metastable` scenario shows the difference (`herd bench metastable`, on a
//! real socket, 2 cores): after a 2 s slowdown, full jitter with 3 retries and no budget
//! leaves the upstream at 3.44x its offered load with 81% of requests failing, and it
//! never recovers within the run; the same policy with the default 20% percent budget puts
//! 1.09x on it and the upstream is healthy again 3.1 s after the slowdown ends. The gRPC
//! token bucket (1.00x) and the AWS quota (1.01x) recover too.
//!
//! Every budget here is plain state: `now` is an argument, never read from a clock, so the
//! simulator and a tokio client drive the same code.
//!
//! | kind | from | rule |
//! |---|---|---|
//! | `percent` | Finagle, tower `TpsBudget` | retries ≤ 20% of requests over 10 s, + 10/s floor |
//! | `token-bucket` | gRPC A6 retry throttling | −1 per failure, +ratio per success, retry only above half |
//! | `quota` | AWS SDK standard mode | 500 tokens, 5 per retry, 10 per timeout retry, +1 per success (2026 rules: 14, 5 for throttling) |
//! | `aws-adaptive` | AWS SDK adaptive mode | the quota, plus a CUBIC rate limiter that paces every attempt after a throttle ([`crate::aws::rate_limiter`]) |
//! | `ratio` | Google SRE per-client budget | retries ≤ 10% of requests over 10 s, no floor |
//! | `adaptive` | Google SRE client-side throttling | reject locally with p = max(0, (req − K·acc)/(req + 1)) |
//! | `concurrency` | Envoy's retry circuit breaker | retries outstanding < `max_retries` (3), or < max(20% of active + pending requests, 3) ([`concurrency`]) |
//!
//! Every kind but `concurrency` bounds retries over time; `concurrency` bounds the retries
//! alive at once, from their grant through their backoff to their answer.

mod adaptive;
pub mod concurrency;
mod error;
mod percent;
mod quota;
mod ratio;
mod token_bucket;
mod window;

pub use adaptive::{Adaptive, AdaptiveConfig};
pub use concurrency::{Concurrency, ConcurrencyConfig};
pub use error::BudgetError;
pub use percent::{Percent, PercentConfig};
pub use quota::{Quota, QuotaConfig, RetryCause};
pub use ratio::{Ratio, RatioConfig};
pub use token_bucket::{Check, TokenBucket, TokenBucketConfig};
pub use window::Window;

use crate::aws::RateLimiter;
use crate::nanos::Nanos;
use rand::Rng;
use std::fmt;
use std::time::Duration;

/// Which budget, with its settings.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum BudgetConfig {
    /// Finagle / tower percent budget.
    Percent(PercentConfig),
    /// gRPC retry throttling.
    TokenBucket(TokenBucketConfig),
    /// AWS standard-mode quota.
    Quota(QuotaConfig),
    /// SRE per-client retry ratio.
    Ratio(RatioConfig),
    /// SRE adaptive client-side throttling.
    Adaptive(AdaptiveConfig),
    /// AWS adaptive mode: this quota, and the client-side rate limiter (its constants are
    /// botocore's, [`crate::aws::rate_limiter`]). A profile's default, not a kind a
    /// scenario writes.
    AwsAdaptive(QuotaConfig),
    /// Envoy's retry circuit breaker: a cap on concurrent retries.
    Concurrency(ConcurrencyConfig),
}

impl BudgetConfig {
    /// Kind names, as scenarios write them.
    pub const NAMES: &'static [&'static str] = &[
        "percent",
        "token-bucket",
        "quota",
        "ratio",
        "adaptive",
        "concurrency",
    ];

    /// The kind's name.
    pub fn name(&self) -> &'static str {
        match self {
            BudgetConfig::Percent(_) => "percent",
            BudgetConfig::TokenBucket(_) => "token-bucket",
            BudgetConfig::Quota(_) => "quota",
            BudgetConfig::Ratio(_) => "ratio",
            BudgetConfig::Adaptive(_) => "adaptive",
            BudgetConfig::AwsAdaptive(_) => "aws-adaptive",
            BudgetConfig::Concurrency(_) => "concurrency",
        }
    }
}

impl fmt::Display for BudgetConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BudgetConfig::Percent(c) => write!(
                f,
                "percent budget {}% over {}s, floor {}/s",
                c.percent() * 100.0,
                c.ttl().as_secs_f64(),
                c.min_per_sec()
            ),
            BudgetConfig::TokenBucket(c) => {
                write!(
                    f,
                    "token bucket {} tokens, ratio {}",
                    c.max_tokens(),
                    c.token_ratio()
                )?;
                if c.check() == Check::AfterBackoff {
                    f.write_str(", checked after the backoff")?;
                }
                Ok(())
            }
            BudgetConfig::Quota(c) => {
                write!(
                    f,
                    "quota {} tokens, {} per retry, {} per timeout retry",
                    c.initial, c.retry_cost, c.timeout_cost
                )?;
                if c.throttling_cost != c.retry_cost {
                    write!(f, ", {} per throttling retry", c.throttling_cost)?;
                }
                Ok(())
            }
            BudgetConfig::AwsAdaptive(c) => write!(
                f,
                "quota {} tokens, {} per retry, {} per throttling retry, CUBIC rate limiter after a throttle",
                c.initial, c.retry_cost, c.throttling_cost
            ),
            BudgetConfig::Ratio(c) => write!(
                f,
                "retry ratio {}% over {}s",
                c.ratio() * 100.0,
                c.window().as_secs_f64()
            ),
            BudgetConfig::Adaptive(c) => write!(
                f,
                "adaptive throttling K={} over {}s",
                c.k(),
                c.window().as_secs_f64()
            ),
            BudgetConfig::Concurrency(c) => write!(f, "retry circuit breaker: {c}"),
        }
    }
}

/// A budget's live state, one per client.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Budget {
    /// Percent budget.
    Percent(Percent),
    /// Token bucket.
    TokenBucket(TokenBucket),
    /// Quota.
    Quota(Quota),
    /// Retry ratio.
    Ratio(Ratio),
    /// Adaptive throttling.
    Adaptive(Adaptive),
    /// AWS adaptive mode: the quota, and the rate limiter, made at the first attempt (its
    /// clock starts then).
    AwsAdaptive(Quota, Option<RateLimiter>),
    /// Envoy's retry circuit breaker.
    Concurrency(Concurrency),
}

/// What an attempt came to, as far as a budget cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptResult {
    /// A success.
    Success,
    /// A failure the upstream answered without being overloaded (e.g. an injected 503).
    Failure,
    /// The upstream turned the attempt away, or it never got an answer.
    Rejected,
    /// The service said "throttling" by its error code (see [`crate::Outcome::is_throttling`]).
    Throttled,
}

impl Budget {
    /// Fresh state for `cfg`.
    pub fn new(cfg: BudgetConfig) -> Budget {
        match cfg {
            BudgetConfig::Percent(c) => Budget::Percent(Percent::new(c)),
            BudgetConfig::TokenBucket(c) => Budget::TokenBucket(TokenBucket::new(c)),
            BudgetConfig::Quota(c) => Budget::Quota(Quota::new(c)),
            BudgetConfig::Ratio(c) => Budget::Ratio(Ratio::new(c)),
            BudgetConfig::Adaptive(c) => Budget::Adaptive(Adaptive::new(c)),
            BudgetConfig::AwsAdaptive(c) => Budget::AwsAdaptive(Quota::new(c), None),
            BudgetConfig::Concurrency(c) => Budget::Concurrency(Concurrency::new(c)),
        }
    }

    /// A new logical request started at `now` (percent and ratio deposit).
    pub fn on_request(&mut self, now: Nanos) {
        match self {
            Budget::Percent(b) => b.deposit(now),
            Budget::Ratio(b) => b.deposit(now),
            _ => {}
        }
    }

    /// Whether to send an attempt (a `retry`, or a first one) at all. Only adaptive
    /// throttling and a token bucket checked after the backoff (grpc-js) ever say no, and
    /// only adaptive throttling draws from `rng` (a uniform number in [0, 1)): under any
    /// other budget the caller's random stream is left as it was. An attempt admitted here
    /// is outstanding (for the concurrency cap) until [`Budget::attempt_ended`].
    pub fn admit<R: Rng + ?Sized>(&mut self, now: Nanos, retry: bool, rng: &mut R) -> bool {
        match self {
            Budget::Adaptive(b) => b.admit(now, rng.random()),
            Budget::TokenBucket(b) => b.admit(retry),
            Budget::Concurrency(b) => {
                b.attempt_started();
                true
            }
            _ => true,
        }
    }

    /// An attempt [`Budget::admit`] let go ended, whatever its outcome (answered, timed
    /// out, abandoned). Only the concurrency cap counts it.
    pub fn attempt_ended(&mut self) {
        if let Budget::Concurrency(b) = self {
            b.attempt_ended();
        }
    }

    /// A retry this budget granted is done: its attempt's answer is being judged, or its
    /// request ended. Only the concurrency cap holds a retry past its grant, so only it
    /// gives one back ([`Budget::holds_retries`]).
    pub fn release_retry(&mut self) {
        if let Budget::Concurrency(b) = self {
            b.release();
        }
    }

    /// Whether a retry [`Budget::withdraw`] grants is held until [`Budget::release_retry`].
    pub fn holds_retries(&self) -> bool {
        matches!(self, Budget::Concurrency(_))
    }

    /// Asks the client's rate limiter for an attempt that wants to go out at `now`: zero
    /// means go (always, under every budget but `aws-adaptive`, and there until the first
    /// throttle); anything else, ask again after this long.
    pub fn pace(&mut self, now: Nanos) -> Duration {
        match self {
            Budget::AwsAdaptive(_, limiter) => limiter
                .get_or_insert_with(|| RateLimiter::new(now))
                .acquire(now),
            _ => Duration::ZERO,
        }
    }

    /// An attempt ended.
    pub fn on_attempt(&mut self, now: Nanos, result: AttemptResult) {
        match (self, result) {
            (Budget::AwsAdaptive(_, limiter), result) => limiter
                .get_or_insert_with(|| RateLimiter::new(now))
                .on_response(now, result == AttemptResult::Throttled),
            (Budget::TokenBucket(b), AttemptResult::Success) => b.on_success(),
            (Budget::TokenBucket(b), _) => b.on_failure(),
            (Budget::Adaptive(b), AttemptResult::Success | AttemptResult::Failure) => {
                b.on_accept(now)
            }
            _ => {}
        }
    }

    /// Asks to retry after a failure of this `cause`. Returns the quota cost spent (0 for
    /// other kinds), or `None` if refused.
    pub fn withdraw(&mut self, now: Nanos, cause: RetryCause) -> Option<u32> {
        match self {
            Budget::Percent(b) => b.withdraw(now).then_some(0),
            Budget::TokenBucket(b) => b.withdraw().then_some(0),
            Budget::Quota(b) | Budget::AwsAdaptive(b, _) => b.withdraw(cause),
            Budget::Ratio(b) => b.withdraw(now).then_some(0),
            Budget::Adaptive(_) => Some(0),
            Budget::Concurrency(b) => b.acquire().then_some(0),
        }
    }

    /// A logical request finally succeeded, its latest retry having cost `last_retry_cost`
    /// quota (0: it was never retried).
    pub fn on_logical_success(&mut self, last_retry_cost: u32) {
        if let Budget::Quota(b) | Budget::AwsAdaptive(b, _) = self {
            b.on_success(last_retry_cost);
        }
    }
}

#[cfg(test)]
mod tests;
