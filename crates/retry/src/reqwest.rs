//! A `reqwest_middleware::Middleware` that retries with a herd [`Strategy`]: the policy
//! herd's reports measure, in the client reqwest-retry users already have.
//!
//! ```
//! use herd_retry::reqwest::RetryMiddleware;
//! use herd_retry::{Profile, Strategy};
//! use std::time::Duration;
//!
//! let retry = RetryMiddleware::new(Strategy::new(Profile::Herd))
//!     .with_attempt_timeout(Duration::from_secs(2));
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     .with(retry.clone())
//!     .build();
//! # let _ = client;
//! assert_eq!(retry.counters().retries, 0);
//! ```

use crate::classify::Method;
use crate::classify::{Failure, Outcome};
use crate::client::{Ended, Settings, Shared};
use crate::clock;
use crate::retrier::{Counters, Strategy};
use std::sync::Arc;
use std::time::Duration;

/// Retries requests through the rest of the middleware chain. Clones share the budget and
/// counters.
#[derive(Clone, Debug)]
pub struct RetryMiddleware {
    shared: Arc<Shared>,
}

impl RetryMiddleware {
    /// A middleware running `strategy`.
    pub fn new(strategy: Strategy) -> Self {
        Self::build(Settings::new(strategy))
    }

    /// Times each attempt out after `timeout` (the deadline, if any, can shorten it). This
    /// leaves the strategy's deadline as it is: for axios-retry, whose timeout bounds the
    /// whole request, make the strategy with [`Strategy::for_client`] to have it both ways.
    ///
    /// # Default
    /// No attempt timeout (reqwest's own timeouts still apply).
    pub fn with_attempt_timeout(self, timeout: Duration) -> Self {
        let mut s = self.shared.settings();
        s.attempt_timeout = Some(timeout);
        Self::build(s)
    }

    /// Seeds the jitter, for reproducible delays in tests.
    ///
    /// # Default
    /// Seeded from the clock and the process id, so two processes draw different delays.
    pub fn with_seed(self, seed: u64) -> Self {
        let mut s = self.shared.settings();
        s.seed = Some(seed);
        Self::build(s)
    }

    /// The middleware for `settings`, with fresh budget and counters. Every setter goes
    /// through here with all the settings, so none is lost to another; set them all
    /// before cloning the middleware, as a setter starts its shared state afresh.
    fn build(settings: Settings) -> Self {
        RetryMiddleware {
            shared: Arc::new(Shared::new(settings)),
        }
    }

    /// Counters over every request through this middleware (and its clones).
    pub fn counters(&self) -> Counters {
        self.shared.counters()
    }
}

fn method_of(m: &reqwest::Method) -> Method {
    m.as_str().parse().unwrap_or(Method::Post)
}

fn classify(r: &reqwest_middleware::Result<reqwest::Response>) -> Outcome {
    match r {
        Ok(resp) => Outcome::from_http(resp.status(), resp.headers(), clock::wall()),
        Err(reqwest_middleware::Error::Reqwest(e)) if e.is_timeout() => {
            Outcome::Failed(Failure::Timeout)
        }
        Err(e) => {
            let f = Failure::from_error(e);
            let f = match (f, e) {
                (Failure::Other, reqwest_middleware::Error::Reqwest(r)) if r.is_connect() => {
                    Failure::Refused
                }
                (f, _) => f,
            };
            Outcome::Failed(f)
        }
    }
}

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for RetryMiddleware {
    async fn handle(
        &self,
        req: reqwest::Request,
        extensions: &mut http::Extensions,
        next: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let method = method_of(req.method());
        // Each attempt needs its own request and its own extensions; the caller's
        // extensions go to the first.
        let mut first = Some((req.try_clone(), std::mem::take(extensions)));
        let original = req;
        let attempt = || {
            let (r, mut ext) = match first.take() {
                Some((r, ext)) => (r, ext),
                None => (original.try_clone(), http::Extensions::new()),
            };
            let next = next.clone();
            match r {
                Some(r) => Ok(async move { next.run(r, &mut ext).await }),
                None => Err(reqwest_middleware::Error::middleware(CannotClone)),
            }
        };
        match self.shared.run(method, attempt, classify).await {
            Ended::Done(r) => r,
            Ended::TimedOut => Err(reqwest_middleware::Error::middleware(Stopped(
                "attempt timed out",
            ))),
            Ended::Throttled => Err(reqwest_middleware::Error::middleware(Stopped(
                "request throttled by the client's retry budget",
            ))),
        }
    }
}

#[derive(Debug)]
struct CannotClone;

impl std::fmt::Display for CannotClone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("request body cannot be cloned, so it cannot be retried")
    }
}

impl std::error::Error for CannotClone {}

#[derive(Debug)]
struct Stopped(&'static str);

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Stopped {}
