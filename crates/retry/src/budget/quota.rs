//! The AWS SDKs' "standard" retry mode quota.
//!
//! A client starts with `initial` tokens (500). A retry costs `retry_cost` (5), or
//! `timeout_cost` (10) when the failure was a timeout; with too few tokens the retry is
//! refused. A request that succeeds on its first attempt adds `success_increment` (1); one
//! that succeeds after retries gives back what its retries cost. Tokens never exceed
//! `initial` and never go negative.

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
    /// Refund for a request that succeeded without retries.
    pub success_increment: u32,
}

impl Default for QuotaConfig {
    fn default() -> Self {
        QuotaConfig {
            initial: 500,
            retry_cost: 5,
            timeout_cost: 10,
            success_increment: 1,
        }
    }
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

    /// Asks for a retry after a failure (`timeout` picks the cost). Returns the cost spent,
    /// or `None` if refused.
    pub fn withdraw(&mut self, timeout: bool) -> Option<u32> {
        let cost = if timeout {
            self.cfg.timeout_cost
        } else {
            self.cfg.retry_cost
        };
        if self.tokens >= cost {
            self.tokens -= cost;
            Some(cost)
        } else {
            None
        }
    }

    /// A logical request succeeded, after retries that cost `spent` in total.
    pub fn on_success(&mut self, spent: u32) {
        let back = if spent == 0 {
            self.cfg.success_increment
        } else {
            spent
        };
        self.tokens = self.tokens.saturating_add(back).min(self.cfg.initial);
    }

    /// Tokens left.
    pub fn tokens(&self) -> u32 {
        self.tokens
    }
}
