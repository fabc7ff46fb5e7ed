//! A `tower::Layer` that retries HTTP requests with a herd [`Strategy`]: works with
//! hyper-util's client, tonic channels and anything else that is a
//! `Service<http::Request<B>>` with a cloneable body.
//!
//! ```
//! use bytes::Bytes;
//! use http_body_util::Empty;
//! use herd_retry::tower::RetryLayer;
//! use herd_retry::{Profile, Strategy};
//! use hyper_util::client::legacy::Client;
//! use hyper_util::rt::TokioExecutor;
//! use std::time::Duration;
//! use tower::ServiceBuilder;
//!
//! // herd's recommended strategy: full jitter, a 20% budget, Retry-After, a 10 s deadline.
//! let layer = RetryLayer::new(Strategy::new(Profile::Herd)).with_attempt_timeout(Duration::from_secs(2));
//! let client = Client::builder(TokioExecutor::new())
//!     .retry_canceled_requests(false) // herd does the retrying, visibly
//!     .build_http::<Empty<Bytes>>();
//! let service = ServiceBuilder::new().layer(layer.clone()).service(client);
//! # let _ = service;
//! // layer.counters() reports attempts, retries, refusals by the budget, …
//! assert_eq!(layer.counters().requests, 0);
//! ```

use crate::classify::{Failure, Method, Outcome};
use crate::client::{Ended, Settings, Shared};
use crate::clock;
use crate::retrier::{Counters, Strategy};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// The error type of the layer's service.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Adds herd retries to a service. Cloning a layer shares its budget and counters.
#[derive(Clone, Debug)]
pub struct RetryLayer {
    shared: Arc<Shared>,
}

impl RetryLayer {
    /// A layer running `strategy`.
    pub fn new(strategy: Strategy) -> Self {
        Self::build(Settings::new(strategy))
    }

    /// Times each attempt out after `timeout` (the deadline, if any, can shorten it). This
    /// leaves the strategy's deadline as it is: for axios-retry, whose timeout bounds the
    /// whole request, make the strategy with [`Strategy::for_client`] to have it both ways.
    ///
    /// # Default
    /// No attempt timeout.
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

    /// The layer for `settings`, with fresh budget and counters. Every setter goes through
    /// here with all the settings, so none is lost to another; set them all before cloning
    /// the layer, as a setter starts its shared state afresh.
    fn build(settings: Settings) -> Self {
        RetryLayer {
            shared: Arc::new(Shared::new(settings)),
        }
    }

    /// Counters over every request through this layer (and its clones).
    pub fn counters(&self) -> Counters {
        self.shared.counters()
    }
}

impl<S> tower_layer::Layer<S> for RetryLayer {
    type Service = Retry<S>;
    fn layer(&self, inner: S) -> Retry<S> {
        Retry {
            inner,
            shared: self.shared.clone(),
        }
    }
}

/// The service [`RetryLayer`] wraps around an inner HTTP service.
#[derive(Clone)]
pub struct Retry<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S> fmt::Debug for Retry<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retry")
            .field("shared", &self.shared)
            .finish()
    }
}

/// The request timed out, or the client's throttle refused to send it.
#[derive(Debug)]
pub enum RetryError {
    /// The attempt timeout (or the deadline) fired on the last attempt.
    Timeout,
    /// Adaptive throttling refused the attempt locally.
    Throttled,
}

impl fmt::Display for RetryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetryError::Timeout => f.write_str("attempt timed out"),
            RetryError::Throttled => f.write_str("request throttled by the client's retry budget"),
        }
    }
}

impl std::error::Error for RetryError {}

impl<S, B, RB> tower_service::Service<http::Request<B>> for Retry<S>
where
    S: tower_service::Service<http::Request<B>, Response = http::Response<RB>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Clone + Send + 'static,
    RB: Send + 'static,
{
    type Response = http::Response<RB>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        // The ready service serves the first attempt; a clone serves each retry.
        let clone = self.inner.clone();
        let mut first = Some(std::mem::replace(&mut self.inner, clone));
        let spare = self.inner.clone();
        let shared = self.shared.clone();
        let method = method_of(req.method());
        let (parts, body) = req.into_parts();
        Box::pin(async move {
            let attempt = move || {
                let mut svc = first.take().unwrap_or_else(|| spare.clone());
                let req = http::Request::from_parts(clone_parts(&parts), body.clone());
                Ok::<_, BoxError>(async move {
                    std::future::poll_fn(|cx| svc.poll_ready(cx))
                        .await
                        .map_err(Into::into)?;
                    svc.call(req).await.map_err(Into::into)
                })
            };
            let classify = |r: &Result<http::Response<RB>, BoxError>| match r {
                Ok(resp) => Outcome::from_http(resp.status(), resp.headers(), clock::wall()),
                Err(e) => Outcome::Failed(Failure::from_error(e.as_ref())),
            };
            match shared.run(method, attempt, classify).await {
                Ended::Done(r) => r,
                Ended::TimedOut => Err(Box::new(RetryError::Timeout) as BoxError),
                Ended::Throttled => Err(Box::new(RetryError::Throttled) as BoxError),
            }
        })
    }
}

/// `http::request::Parts` is not `Clone` (extensions are not); rebuild what matters.
fn clone_parts(p: &http::request::Parts) -> http::request::Parts {
    let mut b = http::Request::builder()
        .method(p.method.clone())
        .uri(p.uri.clone())
        .version(p.version);
    if let Some(h) = b.headers_mut() {
        *h = p.headers.clone();
    }
    match b.body(()) {
        Ok(r) => r.into_parts().0,
        Err(_) => http::Request::new(()).into_parts().0,
    }
}

/// herd's method from http's.
fn method_of(m: &http::Method) -> Method {
    m.as_str().parse().unwrap_or(Method::Post)
}
