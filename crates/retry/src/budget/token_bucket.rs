//! gRPC retry throttling (gRFC A6): a token bucket per client and server.
//!
//! The bucket starts full at `max_tokens`. Every failed attempt (a retryable status or a
//! connection error) takes 1 token; every success adds `token_ratio`; the count stays in
//! [0, max_tokens]. Retries are allowed only while the count is above `max_tokens / 2`.
//! gRPC's service config requires `max_tokens` in (0, 1000] and `token_ratio` in (0, 1];
//! herd's defaults are the example in A6: 10 tokens, ratio 0.1.
//!
//! # When the tokens are looked at
//!
//! A6, C-core and grpc-go decide at the failure: the failure takes its token, then the
//! count decides whether the call retries. grpc-js 1.14 takes the token at the failure too,
//! but looks at the count only when the backoff timer fires (`maybeRetryCall` in
//! `retrying-call.ts`: `canRetryCall()` inside the `setTimeout`), so failures of other
//! calls during the wait count against the retry, and a refused call fails after its
//! backoff. Sequential calls cannot tell the two apart (50 failing calls, {10, 0.1}: 53
//! attempts from both); overlapping ones can (50 calls at 10/s with a 0.1 s backoff:
//! grpcio 1.85 sent 54, the check at the failure letting the first two calls retry 4
//! times between them, and grpc-js fewer). [`Check`] says which.

use super::error::{in_range, BudgetError};

/// Token-bucket settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenBucketConfig {
    max_tokens: f64,
    token_ratio: f64,
    check: Check,
}

/// When a retry asks the bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Check {
    /// At the failure, before the backoff (A6, C-core, grpc-go).
    #[default]
    AtFailure,
    /// When the backoff has passed and the retry is about to go (grpc-js).
    AfterBackoff,
}

impl TokenBucketConfig {
    /// A bucket of `max_tokens` (in (0, 1000]) that a success refills by `token_ratio`
    /// (in (0, 1]): gRPC's service-config ranges.
    pub fn new(max_tokens: f64, token_ratio: f64) -> Result<Self, BudgetError> {
        Ok(TokenBucketConfig {
            max_tokens: in_range("max_tokens", max_tokens, true, 1000.0)?,
            token_ratio: in_range("token_ratio", token_ratio, true, 1.0)?,
            check: Check::AtFailure,
        })
    }

    /// The same bucket, asked when a retry is about to go rather than at the failure.
    pub fn checked_after_backoff(self) -> Self {
        TokenBucketConfig {
            check: Check::AfterBackoff,
            ..self
        }
    }

    /// When a retry asks the bucket.
    pub fn check(&self) -> Check {
        self.check
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
            check: Check::AtFailure,
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

    /// Asked at a failure, whether the call may retry ([`Check::AfterBackoff`]: always,
    /// the bucket is asked later).
    pub fn withdraw(&self) -> bool {
        self.cfg.check == Check::AfterBackoff || self.allows_retry()
    }

    /// Asked as an attempt is about to go, whether it may: a first attempt always, a retry
    /// under [`Check::AfterBackoff`] only while [`TokenBucket::allows_retry`].
    pub fn admit(&self, retry: bool) -> bool {
        !(retry && self.cfg.check == Check::AfterBackoff) || self.allows_retry()
    }

    /// Tokens left.
    pub fn tokens(&self) -> f64 {
        self.tokens
    }
}
