//! gRPC's own retries (gRFC A6), as four implementations run them: the service config a
//! gRPC user writes (`retryPolicy`, `retryThrottling`, `hedgingPolicy`) turned into herd's
//! [`Strategy`] and, where the implementation hedges, a [`HedgePolicy`].
//!
//! # Why per implementation
//!
//! A6 is one specification, but the clients differ in ways that change the load they put
//! on a struggling server (read from each library's source, and for grpcio and grpc-js
//! checked against the real clients on a server that answers UNAVAILABLE, with
//! `maxAttempts` 4, 0.1 s, ×2, 1 s: `crates/cli/tests/real_grpc.rs`):
//!
//! | profile | library | jitter of retry `n`'s wait `b = min(initial·mult^(n−1), max)` | throttle scope | `hedgingPolicy` |
//! |---|---|---|---|---|
//! | `grpc-core` | grpcio 1.85 (C-core) | `b·U(0.8, 1.2)` (`RETRY_BACKOFF_JITTER 0.2`) | per channel | **ignored**, without a word |
//! | `grpc-js` | @grpc/grpc-js 1.14 | `b·U(0.8, 1.2)` (`getNextRetryJitter`) | per process, per target | hedges, **never throttled** |
//! | `grpc-go` | grpc-go ≥ 1.69 | `b·U(0.8, 1.2)` (A6 as redefined in 2024, grpc-go#7869) | per channel | ignored |
//! | `grpc-go-1.33` | grpc-go 1.33 (Debian 12) | `U(0, b)`, full jitter (A6 as first written) | per channel | ignored |
//!
//! What they share, and herd runs for all four:
//! - `maxAttempts` counts the original and is cut to 5 ([`MAX_ATTEMPTS_LIMIT`]);
//! - only a status in `retryableStatusCodes` is retried, and a deadline never is;
//! - `grpc-retry-pushback-ms` replaces the backoff, and the backoff after it starts again
//!   from `initialBackoff`;
//! - `retryThrottling`: every attempt that fails with a retryable status takes a token
//!   (the last attempt's failure too), every success gives back `tokenRatio`, other
//!   failures change nothing, and a retry goes only while the tokens are above
//!   `maxTokens / 2` ([`crate::budget::TokenBucket`]). With {10, 0.1} and a server that
//!   fails everything, 50 calls one after another make 4 + 49 = 53 attempts: the first
//!   call's failures leave 9, 8, 7 (each > 5, so it retries) and 6 (its attempts are used
//!   up), the second call's leaves 5, and no call retries again.
//!
//! What they do not share: C-core and grpc-go ask the bucket at the failure, grpc-js when
//! the backoff timer fires ([`crate::budget::Check`]). When calls overlap the counts then
//! differ: 50 calls at 10/s, 0.1 s backoff, made 54 attempts from grpcio.
//!
//! # What is not modelled
//! - The throttle's **scope**: an arm is one channel in one process, where per-channel and
//!   per-process scopes agree. A program with several channels to one target gets one
//!   bucket per channel from grpcio and grpc-go, one in all from grpc-js.
//! - grpc-go 1.33 retries only with `GRPC_GO_RETRY=on` in its environment; the replica is
//!   that client with it set, as herd's real grpc-go arm (`go-grpc`) runs it.
//! - Transparent retries (a stream the server refused before its application saw it):
//!   herd's upstream never refuses a stream.

mod code;
mod service_config;

pub use code::{Code, Codes};
pub use service_config::{
    HedgingPolicy, MethodPolicy, RetryPolicy, ServiceConfig, ServiceConfigError, DEFAULT_METHOD,
    DEFAULT_SERVICE, MAX_ATTEMPTS_LIMIT,
};

use crate::backoff::Backoff;
use crate::budget::BudgetConfig;
use crate::hedge::{Delay, Gate, Handles, HedgePolicy, OnFailure};
use crate::jitter::Jitter;
use crate::policy::Policy;
use crate::profile::Profile;
use crate::retrier::Strategy;
use std::fmt;
use std::time::Duration;

/// A gRPC implementation whose retries herd replicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Implementation {
    /// C-core, under grpcio (Python), grpc (Ruby, PHP, C++): `retry_filter` with
    /// `BackOff` jitter 0.2; `hedgingPolicy` parsed but not implemented
    /// (grpc/grpc#26566: "we're not going to support hedging for now").
    Core,
    /// @grpc/grpc-js 1.14 (`src/retrying-call.ts`): ±20% jitter; the throttle asked when
    /// the backoff has passed; hedging implemented (grpc/grpc-node#2278), and its hedges
    /// never ask the throttle.
    Js,
    /// grpc-go since 1.69 (grpc/grpc-go#7869): ±20% jitter; no hedging.
    Go,
    /// grpc-go 1.33 (`stream.go` `shouldRetry`, the version Debian 12 packages): full
    /// jitter `U(0, b)`; retries only with `GRPC_GO_RETRY=on`; no hedging.
    Go1_33,
}

impl Implementation {
    /// Every implementation.
    pub const ALL: [Implementation; 4] = [
        Implementation::Core,
        Implementation::Js,
        Implementation::Go,
        Implementation::Go1_33,
    ];

    /// The profile name (`grpc-core`, `grpc-js`, `grpc-go`, `grpc-go-1.33`).
    pub fn name(self) -> &'static str {
        match self {
            Implementation::Core => "grpc-core",
            Implementation::Js => "grpc-js",
            Implementation::Go => "grpc-go",
            Implementation::Go1_33 => "grpc-go-1.33",
        }
    }

    /// The implementation a profile name names.
    pub fn from_name(name: &str) -> Option<Implementation> {
        Implementation::ALL.into_iter().find(|i| i.name() == name)
    }

    /// How the implementation jitters the backoff `b`.
    pub fn jitter(self) -> Jitter {
        match self {
            Implementation::Go1_33 => Jitter::Full,
            _ => Jitter::Proportional(0.2),
        }
    }

    /// Whether it carries out a `hedgingPolicy` (the others ignore it, and the method
    /// then has no retries either: A6 gives a method one policy or the other).
    pub fn hedges(self) -> bool {
        self == Implementation::Js
    }
}

impl fmt::Display for Implementation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A6's example `retryPolicy` (4 attempts, 0.1 s, ×2, 1 s, UNAVAILABLE): the defaults
/// `herd policy grpc-…` shows. An arm is configured by its service config instead.
pub fn example_backoff(imp: Implementation) -> Backoff {
    Backoff {
        base: Duration::from_millis(100),
        factor: 2.0,
        cap: Duration::from_secs(1),
        offset: 0,
        jitter: imp.jitter(),
    }
}

/// What an implementation makes of a service config.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Replica {
    /// The retries: the `retryPolicy` (none without one), the `retryThrottling` bucket.
    pub strategy: Strategy,
    /// The `hedgingPolicy`, where the implementation hedges.
    pub hedge: Option<HedgePolicy>,
    /// Whether the config's `hedgingPolicy` was ignored (C-core, grpc-go).
    pub hedging_ignored: bool,
}

/// The replica of `imp` running the service config `cfg`.
pub fn replica(imp: Implementation, cfg: &ServiceConfig) -> Replica {
    let none = Policy::new(Profile::Grpc(imp)).with_retries(0);
    let budget = cfg.throttling.map(|t| {
        BudgetConfig::TokenBucket(match imp {
            Implementation::Js => t.checked_after_backoff(),
            _ => t,
        })
    });
    let (policy, hedge, hedging_ignored) = match cfg.policy {
        MethodPolicy::None => (none, None, false),
        MethodPolicy::Retry(r) => (
            Policy::new(Profile::Grpc(imp))
                .with_retries(u32::from(r.max_attempts) - 1)
                .with_base(r.initial_backoff)
                .with_factor(r.multiplier)
                .with_cap(r.max_backoff)
                .with_retryable_codes(r.retryable),
            None,
            false,
        ),
        MethodPolicy::Hedging(h) if imp.hedges() => (none, Some(js_hedging(h)), false),
        MethodPolicy::Hedging(_) => (none.with_hedging_ignored(), None, true),
    };
    Replica {
        strategy: Strategy {
            policy,
            budget,
            deadline: None,
        },
        hedge,
        hedging_ignored,
    }
}

/// grpc-js's hedging: attempts at 0, d, 2d, …; a non-fatal status sends the next at once
/// (and restarts the delay); any other answer commits and cancels the rest; the throttle
/// is never asked (`maybeStartHedgingAttempt` does not call `canRetryCall`).
fn js_hedging(h: HedgingPolicy) -> HedgePolicy {
    HedgePolicy {
        max_attempts: h.max_attempts,
        delay: Delay::Fixed(h.delay),
        handles: Handles {
            grpc: h.non_fatal,
            ..Handles::NOTHING
        },
        on_failure: OnFailure::SendNext,
        cancel_losers: true,
        gate: Gate::Open,
    }
}

#[cfg(test)]
mod tests;
