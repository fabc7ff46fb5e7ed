//! The AWS SDKs' retry machinery, as botocore 1.44 runs it: which error codes are
//! throttling ([`codes`]) and the client-side rate limiter of `adaptive` mode
//! ([`rate_limiter`]).
//!
//! # Why a module of its own
//!
//! The AWS SDKs are the retry code that runs most in the world, and they differ from every
//! other library herd replicates in two ways that change the load they put on a struggling
//! service:
//! - they classify an error by its **code**, not its status: an S3 `SlowDown` (503) and a
//!   DynamoDB `ThrottlingException` (400) are *throttling*, which costs less retry quota
//!   and backs off from 1 s instead of 50 ms, while a bare 429 is not retried at all in
//!   standard mode;
//! - `adaptive` mode **paces first attempts too**: after the first throttle, every request
//!   waits for a token from a CUBIC-controlled bucket, so a throttled client slows its
//!   whole traffic, not only its retries.
//!
//! The quota that bounds standard-mode retries is a budget like the others
//! ([`crate::budget::Quota`], with [`crate::budget::QuotaConfig::AWS_2026`]); the profiles
//! that put these together are [`crate::Profile::AwsStandard`],
//! [`crate::Profile::AwsStandard2_0`], [`crate::Profile::AwsAdaptive`] and
//! [`crate::Profile::AwsLegacy`].

pub mod codes;
pub mod rate_limiter;

pub use codes::is_throttling_code;
pub use rate_limiter::RateLimiter;

#[cfg(test)]
mod tests;
