//! gRPC retry throttling (gRFC A6): a token bucket per client and server.
//!
//! The bucket starts full at `max_tokens`. Every failed attempt (a retryable status or a
//! connection error) takes 1 token; every success adds `token_ratio`; the count stays in
//! [0, max_tokens]. Retries are allowed only while the count is above `max_tokens / 2`.
//! gRPC's service config requires `max_tokens` in (0, 1000] and `token_ratio` in (0, 1];
//! herd's defaults are the example in A6: 10 tokens, ratio 0.1.

use super::error::{in_range, BudgetError};

/// Token-bucket settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenBucketConfig {
    max_tokens: f64,
    token_ratio: f64,
}

impl TokenBucketConfig {
    /// A bucket of `max_tokens` (in (0, 1000]) that a success refills by `token_ratio`
    /// (in (0, 1]): gRPC's service-config ranges.
    pub fn new(max_tokens: f64, token_ratio: f64) -> Result<Self, BudgetError> {
        Ok(TokenBucketConfig {
            max_tokens: in_range("max_tokens", max_tokens, true, 1000.0)?,
            token_ratio: in_range("token_ratio", token_ratio, true, 1.0)?,
        })
    }

    /// Bucket size.
    pub fn max_tokens(&self) -> f64 {
        self.max_tokens
    }

    /// Tokens a success adds back.
    pub fn token_ratio(&self) -> f64 {
        self.token_ratio
    }
}

impl Default for TokenBucketConfig {
    fn default() -> Self {
        TokenBucketConfig {
            max_tokens: 10.0,
            token_ratio: 0.1,
        }
    }
}

/// Token-bucket state.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenBucket {
    cfg: TokenBucketConfig,
    tokens: f64,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(cfg: TokenBucketConfig) -> Self {
        TokenBucket {
            tokens: cfg.max_tokens,
            cfg,
        }
    }

    /// An attempt succeeded.
    pub fn on_success(&mut self) {
        self.tokens = (self.tokens + self.cfg.token_ratio).min(self.cfg.max_tokens);
    }

    /// An attempt failed.
    pub fn on_failure(&mut self) {
        self.tokens = (self.tokens - 1.0).max(0.0);
    }

    /// Whether a retry may go now (it does not spend a token: the failure already did).
    pub fn allows_retry(&self) -> bool {
        self.tokens > self.cfg.max_tokens / 2.0
    }

    /// Tokens left.
    pub fn tokens(&self) -> f64 {
        self.tokens
    }
}
