#![doc = include_str!("../README.md")]
//!
//! ## Features
//! Both off by default: the default build is the pure policy code, with no tokio, hyper or
//! reqwest in its dependency tree.
//! - `tower`: `tower::RetryLayer`, a `tower::Layer` for hyper-util's client, tonic, …
//! - `reqwest-middleware`: `reqwest::RetryMiddleware`, a `reqwest_middleware::Middleware`.
//!
//! Both are thin: the decisions are [`Retrier`]'s, the clock is read in one place.
//!
#![cfg_attr(
    all(feature = "tower", feature = "reqwest-middleware"),
    doc = include_str!("../doc/production.md")
)]
//!
//! ## Modules
//! - [`jitter`]: every jitter kind, with its formula and where the cap applies;
//! - [`backoff`]: nominal exponential delays;
//! - [`budget`]: retry budgets shared by a client's requests (percent, token bucket, quota, ratio, adaptive);
//! - [`profile`]: real libraries' defaults (undici, axios-retry, the AWS SDKs, …) and simple baselines;
//! - [`aws`]: the AWS SDKs' throttling error codes and adaptive mode's CUBIC rate limiter;
//! - [`grpc`]: gRPC's service-config retries (A6 `retryPolicy`, `retryThrottling`, `hedgingPolicy`) as C-core, grpc-js and grpc-go run them;
//! - [`classify`]: outcomes (an HTTP response's through [`Outcome::from_http`]), failures, methods;
//! - [`retry_after`]: `Retry-After` parsing with "now" passed in, and what a hint does;
//! - [`retrier`]: the per-client object that adds budget, deadline and counters to a policy;
//! - [`consumer`]: the retry layer above the client (consumer timeouts that re-issue or abandon);
//! - [`hedge`]: hedged requests (gRPC A6, Polly, Finagle backup requests, tower) as pure state machines;
//! - [`breaker`]: circuit breakers (resilience4j, Polly, Hystrix, gobreaker, pybreaker, …) as pure state machines.

pub mod aws;
pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod classify;
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
mod client;
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
mod clock;
pub mod consumer;
pub mod grpc;
pub mod hedge;
pub mod jitter;
mod nanos;
pub mod policy;
pub mod profile;
#[cfg(feature = "reqwest-middleware")]
pub mod reqwest;
pub mod retrier;
pub mod retry_after;
#[cfg(feature = "tower")]
pub mod tower;

pub use backoff::{Backoff, Delays};
pub use breaker::{Admission, Breaker, BreakerConfig, BreakerProfile};
pub use budget::{AttemptResult, Budget, BudgetConfig};
pub use classify::{Failure, Method, Outcome};
pub use consumer::{ConsumerConfig, ConsumerRules, Consumers, OnTimeout};
pub use hedge::{HedgePolicy, HedgeProfile, Hedger};
pub use jitter::{Jitter, JitterError, JitterInput};
pub use nanos::Nanos;
pub use policy::{Decision, GiveUp, Policy, RetryState};
pub use profile::Profile;
pub use retrier::{Counters, Request, Retrier, Strategy};
pub use retry_after::{AboveMax, RetryAfter, RetryAfterMode};
