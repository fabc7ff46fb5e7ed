//! Envoy's retry circuit breaker: a cap on how many retries of a client (an Envoy
//! *cluster*) may be outstanding at once, a fixed `max_retries` or a retry budget that
//! follows the cluster's active requests. It bounds retries in *concurrency*, not in rate:
//! every other budget here counts retries over a time window; this one counts retries
//! alive right now, so it has no clock at all.
//!
//! # What Envoy counts (envoyproxy/envoy, read at `main` in 2026)
//!
//! **The cap.** `envoy/config/cluster/v3/circuit_breaker.proto`: `max_retries` defaults to
//! **3** per cluster and priority. `retry_budget` (envoy PR #9069), when set, replaces it:
//! the cap is `max(budget_percent / 100 · (active + pending requests),
//! min_retry_concurrency)`, `budget_percent` defaulting to **20** and
//! `min_retry_concurrency` to **3** (`source/common/upstream/resource_manager_impl.h`,
//! `RetryBudgetImpl::max`; the product is truncated to a whole number before the `max`).
//! A retry may start while the retries counted are *below* the cap (`canCreate`:
//! `count() < max()`).
//!
//! **Active + pending.** The cluster's `requests()` resource (upstream requests on a
//! connection, first tries and retries alike, `rq_active`) plus `pendingRequests()`
//! (requests queued in the connection pool for a connection, `rq_pending_active`): every
//! attempt the cluster has sent or queued and not yet finished. A retry waiting out its
//! backoff is in neither, so as a burst of failures turns requests into retries in backoff,
//! the budget's cap *shrinks* under it (envoyproxy/envoy-mobile#811 walks through it;
//! envoyproxy/envoy#30205 and the unmerged #30738 are about this and about whether the
//! failed attempt still counts as active at the decision). herd counts an attempt from
//! [`Concurrency::attempt_started`] (sent or queued for a pool slot) to
//! [`Concurrency::attempt_ended`] (answered, timed out or abandoned), and the caller ends
//! the failed attempt before asking for its retry: the decision is taken on its answer,
//! when Envoy's stream for it is done.
//!
//! **When a retry counts.** `source/common/router/retry_state_impl.cc`,
//! `RetryStateImpl::shouldRetry`: after the route's own limit (`retries_remaining_`,
//! `num_retries`) allows a retry, the breaker is asked (`retries().canCreate()`); if it
//! allows, `retries().inc()` happens *there*, at the failure, before the backoff timer is
//! armed. So a retry in backoff **is** counted against the cap (what #30205 says is not
//! counted is the denominator above, not this count). It stays counted while the retry
//! attempt is in flight, and is released (`resetRetry()`, `retries().dec()`) at the next
//! `shouldRetry` of the same request, i.e. when the retry's answer is judged, or when the
//! request's retry state is destroyed (the request finished or was reset). A request holds
//! at most one count: a second retry releases the first one's before asking again.
//!
//! **A retry turned away.** `shouldRetry` returns `RetryStatus::NoOverflow` and bumps the
//! cluster's `upstream_rq_retry_overflow` counter. The router (`source/common/router/
//! router.cc`, `Filter::onUpstreamHeaders`) sets the `UO` response flag and forwards the
//! upstream's failed response to the caller as it is; after a reset it answers the local
//! 503 it would have without a retry policy. The request is not retried, and the route's
//! retry count was spent (`retries_remaining_--` comes before the check). In herd the
//! refusal is [`crate::GiveUp::Budget`], counted in [`crate::Counters::refused_by_budget`].
//!
//! # How a caller drives it
//!
//! [`crate::Retrier`] does, at the points above: [`crate::Retrier::admit`] starts an
//! attempt, [`crate::Retrier::decide`] ends it, releases the request's retry if it held
//! one, and acquires a retry when it decides to retry; a request dropped before its end
//! goes through [`crate::Retrier::abandon`].

use super::error::{in_range, BudgetError};
use std::fmt;

/// What caps concurrent retries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    /// Envoy's `max_retries` circuit breaker: at most this many.
    MaxRetries(u32),
    /// Envoy's `retry_budget`: `percent` (0 to 100) of active + pending requests, never
    /// below `min_retry_concurrency`.
    Budget {
        /// `budget_percent`, in percent (20.0 = 20%).
        percent: f64,
        /// `min_retry_concurrency`.
        min_retry_concurrency: u32,
    },
}

/// Concurrency-cap settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConcurrencyConfig {
    limit: Limit,
}

impl ConcurrencyConfig {
    /// Istio's cap: it sets every cluster's `max_retries` to 2³²−1 (istio/istio,
    /// `getDefaultCircuitBreakerThresholds` in `pilot/pkg/networking/core/`, because
    /// Envoy's 3 tripped during rolling updates), so retry concurrency is unbounded in
    /// practice.
    pub const ISTIO: ConcurrencyConfig = ConcurrencyConfig {
        limit: Limit::MaxRetries(u32::MAX),
    };

    /// A fixed cap of `max_retries` concurrent retries.
    pub fn max_retries(max_retries: u32) -> Self {
        ConcurrencyConfig {
            limit: Limit::MaxRetries(max_retries),
        }
    }

    /// A retry budget: `budget_percent` (0 to 100, as Envoy's `type.v3.Percent`) of the
    /// active and pending requests, at least `min_retry_concurrency`.
    pub fn retry_budget(
        budget_percent: f64,
        min_retry_concurrency: u32,
    ) -> Result<Self, BudgetError> {
        Ok(ConcurrencyConfig {
            limit: Limit::Budget {
                percent: in_range("budget_percent", budget_percent, false, 100.0)?,
                min_retry_concurrency,
            },
        })
    }

    /// Envoy's retry budget with its defaults: 20%, at least 3.
    pub fn envoy_retry_budget() -> Self {
        ConcurrencyConfig {
            limit: Limit::Budget {
                percent: 20.0,
                min_retry_concurrency: 3,
            },
        }
    }

    /// What caps the retries.
    pub fn limit(&self) -> Limit {
        self.limit
    }
}

impl Default for ConcurrencyConfig {
    /// Envoy's default circuit breaker: `max_retries` 3.
    fn default() -> Self {
        ConcurrencyConfig::max_retries(3)
    }
}

impl fmt::Display for ConcurrencyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.limit {
            Limit::MaxRetries(u32::MAX) => f.write_str("retry concurrency uncapped (2^32-1)"),
            Limit::MaxRetries(n) => write!(f, "at most {n} concurrent retries"),
            Limit::Budget {
                percent,
                min_retry_concurrency,
            } => write!(
                f,
                "concurrent retries at most {percent}% of active + pending requests, at least {min_retry_concurrency}"
            ),
        }
    }
}

/// Concurrency-cap state: attempts outstanding and retries held.
#[derive(Clone, Debug, PartialEq)]
pub struct Concurrency {
    cfg: ConcurrencyConfig,
    /// Attempts sent or queued and not yet ended: Envoy's active + pending requests.
    outstanding: u64,
    /// Retries counted: from their grant, through the backoff, to their answer.
    retries: u64,
}

impl Concurrency {
    /// No attempt outstanding, no retry counted.
    pub fn new(cfg: ConcurrencyConfig) -> Self {
        Concurrency {
            cfg,
            outstanding: 0,
            retries: 0,
        }
    }

    /// An attempt (a first try or a retry) was sent or queued for a connection.
    pub fn attempt_started(&mut self) {
        self.outstanding += 1;
    }

    /// An attempt ended: answered, timed out, or abandoned.
    pub fn attempt_ended(&mut self) {
        self.outstanding = self.outstanding.saturating_sub(1);
    }

    /// The cap now (Envoy's `RetryBudgetImpl::max`).
    pub fn max(&self) -> u64 {
        match self.cfg.limit {
            Limit::MaxRetries(n) => u64::from(n),
            Limit::Budget {
                percent,
                min_retry_concurrency,
            } => ((percent / 100.0 * self.outstanding as f64) as u64)
                .max(u64::from(min_retry_concurrency)),
        }
    }

    /// Asks for a retry: granted, and counted, while the retries counted are below the cap.
    pub fn acquire(&mut self) -> bool {
        if self.retries < self.max() {
            self.retries += 1;
            true
        } else {
            false
        }
    }

    /// A retry granted earlier is done: its answer was judged, or its request ended.
    pub fn release(&mut self) {
        self.retries = self.retries.saturating_sub(1);
    }

    /// Retries counted now.
    pub fn retries(&self) -> u64 {
        self.retries
    }

    /// Attempts outstanding now.
    pub fn outstanding(&self) -> u64 {
        self.outstanding
    }
}
