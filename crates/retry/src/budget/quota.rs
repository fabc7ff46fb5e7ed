//! The AWS SDKs' "standard" retry mode quota.
//!
//! A client starts with `initial` tokens (500). A retry costs `retry_cost`, or
//! `timeout_cost` when the failure was a timeout, or `throttling_cost` when the service
//! said "throttling" by its error code; with too few tokens the retry is refused. A request
//! that succeeds on its first attempt adds `success_increment` (1); one that succeeds after
//! retries gives back what its *latest* retry cost, not the sum: botocore keeps one
//! `retry_quota_capacity` per request, overwritten by each acquisition and released on a
//! 2xx (`standard.py`, `RetryQuotaChecker.release_retry_quota`: "whatever quota was
//! associated with the last acquisition"); smithy-rs forgets a request's earlier retry
//! permits and releases the last one. A request that needed two retries at 14 therefore
//! costs the quota 14 for good. Tokens never exceed `initial` and never go
//! negative. Only successes refill it: against a service that always fails, a client gets
//! `initial / cost` retries in its whole life, then sends each call's first attempt only.
//!
//! Two rule sets are in use, each with its sources:
//! - **Retry Behavior 2.0** ([`QuotaConfig::default`]): 5 per retry, 10 per timeout retry,
//!   5 per throttling retry (botocore `standard.py` before 2026: `_RETRY_COST = 5`,
//!   `_TIMEOUT_RETRY_REQUEST = 10`, `_NO_RETRY_INCREMENT = 1`, `quota.py`
//!   `INITIAL_CAPACITY = 500`; smithy-rs `token_bucket.rs` 500/5/10): 100 retries from a
//!   full quota.
//! - **Retry Behavior 2.1, the 2026 rules** ([`QuotaConfig::AWS_2026`]): 14 per retry,
//!   timeouts included, 5 per throttling retry (botocore 1.44 `standard.py`
//!   `_RETRY_COST_V2 = 14`, `_THROTTLING_RETRY_COST = 5`; aws-sdk-go-v2 PR #3400;
//!   smithy-rs from behaviour version v2026_11_10): 35 retries from a full quota
//!   (`500 / 14`, rounded down), the 35 measured against botocore 1.44 (200 failing calls,
//!   235 requests).

/// Quota settings. Every value works (a cost above `initial` refuses every retry of that
/// kind), so the fields are plain.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuotaConfig {
    /// Starting (and largest) quota.
    pub initial: u32,
    /// Cost of a retry.
    pub retry_cost: u32,
    /// Cost of a retry after a timeout.
    pub timeout_cost: u32,
    /// Cost of a retry after a throttling error (by error code).
    pub throttling_cost: u32,
    /// Refund for a request that succeeded without retries.
    pub success_increment: u32,
}

impl Default for QuotaConfig {
    fn default() -> Self {
        QuotaConfig {
            initial: 500,
            retry_cost: 5,
            timeout_cost: 10,
            throttling_cost: 5,
            success_increment: 1,
        }
    }
}

impl QuotaConfig {
    /// The 2026 rules (Retry Behavior 2.1): 500 tokens, 14 per retry (timeouts too), 5 per
    /// throttling retry, 1 back per first-attempt success.
    pub const AWS_2026: QuotaConfig = QuotaConfig {
        initial: 500,
        retry_cost: 14,
        timeout_cost: 14,
        throttling_cost: 5,
        success_increment: 1,
    };
}

/// Why a retry is asked for, as far as its cost goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RetryCause {
    /// Any failure but the two below.
    Failure,
    /// The attempt timed out.
    Timeout,
    /// The service said "throttling" by its error code.
    Throttling,
}

/// Quota state.
#[derive(Clone, Debug, PartialEq)]
pub struct Quota {
    cfg: QuotaConfig,
    tokens: u32,
}

impl Quota {
    /// A full quota.
    pub fn new(cfg: QuotaConfig) -> Self {
        Quota {
            tokens: cfg.initial,
            cfg,
        }
    }

    /// Asks for a retry after a failure (`cause` picks the cost). Returns the cost spent,
    /// or `None` if refused.
    pub fn withdraw(&mut self, cause: RetryCause) -> Option<u32> {
        let cost = match cause {
            RetryCause::Failure => self.cfg.retry_cost,
            RetryCause::Timeout => self.cfg.timeout_cost,
            RetryCause::Throttling => self.cfg.throttling_cost,
        };
        if self.tokens >= cost {
            self.tokens -= cost;
            Some(cost)
        } else {
            None
        }
    }

    /// A logical request succeeded. `last_retry_cost` is what its latest retry cost (0 if
    /// it was never retried): that comes back, or `success_increment` for no retry.
    pub fn on_success(&mut self, last_retry_cost: u32) {
        let back = if last_retry_cost == 0 {
            self.cfg.success_increment
        } else {
            last_retry_cost
        };
        self.tokens = self.tokens.saturating_add(back).min(self.cfg.initial);
    }

    /// Tokens left.
    pub fn tokens(&self) -> u32 {
        self.tokens
    }
}
