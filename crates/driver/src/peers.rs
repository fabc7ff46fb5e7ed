//! Real Rust clients (retries, hedging, a breaker) as arms, compiled into herd and
//! configured with their own defaults (only the retry count is explicit where a library
//! has no default):
//!
//! - `reqwest-retry`: reqwest-middleware + reqwest-retry 0.9 `RetryTransientMiddleware`
//!   with retry-policies' `ExponentialBackoff` defaults (1 s minimum, base 2, 30 min cap,
//!   full jitter) and 3 retries; its default strategy retries 5xx, 408, 429, timeouts and
//!   connection errors.
//! - `reqwest-builtin`: reqwest 0.13's own `retry::for_host` with its defaults: 2 retries
//!   per request, a 20% `TpsBudget` (10 s, 10/s floor), **no backoff**; classified to retry
//!   5xx, 429 and connection errors.
//! - `tower-retry`: tower 0.5 `retry::Retry` over hyper-util's client, `TpsBudget::default()`
//!   (20%, 10 s, 10/s) and `ExponentialBackoffMaker::default()` (50 ms doubling, +99%
//!   jitter), 3 retries on 5xx, 429 and errors.
//! - `tower-hedge`: tower 0.5 `hedge::Hedge` beside the `tower-hedge` replica (`peers/hedge.rs`).
//! - `failsafe-rs`: failsafe-rs 1.3's breaker with its defaults, beside the `failsafe`
//!   replica (`peers/breaker.rs`).
//! - `backon`: backon 1.5's (MSRV 1.70; 1.6 needs 1.85, past the workspace's 1.80) `ExponentialBuilder::default()` around reqwest, beside the
//!   `backon` replica (`peers/backon.rs`).
//!
//! They count attempts where the library lets us see them (a middleware or policy hook
//! below the retry loop); reqwest's built-in retry hides its attempts, so that arm reports
//! 0 client attempts. The server's counts are the upstream's either way.

mod backon;
mod breaker;
mod counted;
mod hedge;

use super::Call;
use bytes::Bytes;
use counted::{Attempts, Counted};
use herd_scenario::{RustPeer, REQUEST_ID_HEADER};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::sync::Arc;
use std::time::Duration;
use tower::retry::backoff::{Backoff, ExponentialBackoff, ExponentialBackoffMaker, MakeBackoff};
use tower::retry::budget::{Budget, TpsBudget};
use tower::{Service, ServiceExt};

/// What a peer is asked to do.
#[derive(Clone, Debug)]
pub struct PeerOptions {
    /// The target (each request's path replaces its path, [`Call::uri`]).
    pub url: String,
    /// Idle connections kept per host (reqwest and hyper-util cap idle, not total).
    pub pool: usize,
    /// Per-attempt timeout.
    pub timeout: Option<Duration>,
}

/// A running Rust peer: one client per arm, shared by its requests.
pub enum Peer {
    /// reqwest-retry.
    ReqwestRetry(reqwest_middleware::ClientWithMiddleware, PeerOptions),
    /// reqwest's built-in retry.
    ReqwestBuiltin(reqwest::Client, PeerOptions),
    /// tower's retry.
    TowerRetry(Box<TowerPeer>),
    /// tower's hedge.
    TowerHedge(Box<hedge::TowerHedgePeer>),
    /// failsafe-rs' breaker.
    FailsafeRs(Box<breaker::FailsafePeer>),
    /// backon around reqwest.
    Backon(backon::BackonPeer, PeerOptions),
}

struct CountAttempts;

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for CountAttempts {
    async fn handle(
        &self,
        req: reqwest::Request,
        ext: &mut http::Extensions,
        next: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        if let Some(a) = ext.get::<Attempts>() {
            a.add();
        }
        next.run(req, ext).await
    }
}

fn reqwest_client(
    o: &PeerOptions,
    retry: Option<reqwest::retry::Builder>,
) -> reqwest::Result<reqwest::Client> {
    let mut b = reqwest::Client::builder()
        .pool_max_idle_per_host(o.pool)
        .no_proxy();
    if let Some(t) = o.timeout {
        b = b.timeout(t);
    }
    if let Some(r) = retry {
        b = b.retry(r);
    }
    b.build()
}

impl Peer {
    /// Builds the client for `kind`.
    pub fn new(kind: RustPeer, o: PeerOptions) -> Result<Peer, String> {
        let err = |e: reqwest::Error| format!("{}: cannot build the client: {e}", kind.name());
        Ok(match kind {
            RustPeer::ReqwestRetry => {
                let policy = reqwest_retry::policies::ExponentialBackoff::builder()
                    .build_with_max_retries(3);
                let client =
                    reqwest_middleware::ClientBuilder::new(reqwest_client(&o, None).map_err(err)?)
                        .with(reqwest_retry::RetryTransientMiddleware::new_with_policy(
                            policy,
                        ))
                        .with(CountAttempts)
                        .build();
                Peer::ReqwestRetry(client, o)
            }
            RustPeer::ReqwestBuiltin => {
                let host = url_host(&o.url);
                let retry = reqwest::retry::for_host(host).classify_fn(|rr| {
                    let retryable = match rr.status() {
                        Some(s) => s.is_server_error() || s.as_u16() == 429,
                        None => rr.error().is_some(),
                    };
                    if retryable {
                        rr.retryable()
                    } else {
                        rr.success()
                    }
                });
                Peer::ReqwestBuiltin(reqwest_client(&o, Some(retry)).map_err(err)?, o)
            }
            RustPeer::TowerRetry => Peer::TowerRetry(Box::new(
                TowerPeer::new(o).map_err(|e| format!("tower-retry: {e}"))?,
            )),
            RustPeer::TowerHedge => {
                let uri = o.url.parse().map_err(|e| format!("{}: {e}", o.url))?;
                Peer::TowerHedge(Box::new(hedge::TowerHedgePeer::new(
                    hyper_client(o.pool),
                    uri,
                    o.timeout,
                )))
            }
            RustPeer::Backon => Peer::Backon(
                backon::BackonPeer::new(reqwest_client(&o, None).map_err(err)?),
                o,
            ),
            RustPeer::FailsafeRs => {
                let uri = o.url.parse().map_err(|e| format!("{}: {e}", o.url))?;
                Peer::FailsafeRs(Box::new(breaker::FailsafePeer::new(
                    hyper_client(o.pool),
                    uri,
                    o.timeout,
                )))
            }
        })
    }

    /// The configuration in words, for the report's `policy`.
    pub fn describe(kind: RustPeer) -> &'static str {
        match kind {
            RustPeer::ReqwestRetry => "reqwest-retry 0.9 RetryTransientMiddleware: ExponentialBackoff defaults (1 s min, base 2, 30 min cap, full jitter), 3 retries; retries 5xx, 408, 429, timeouts, connection errors",
            RustPeer::ReqwestBuiltin => "reqwest 0.13 retry::for_host defaults: 2 retries, 20% TpsBudget (10 s, 10/s), no backoff; 5xx, 429 and errors retried; attempts not observable",
            RustPeer::TowerRetry => "tower 0.5 retry: TpsBudget::default() (20%, 10 s, 10/s), ExponentialBackoffMaker::default() (50 ms doubling, +99% jitter), 3 retries on 5xx, 429 and errors",
            RustPeer::TowerHedge => hedge::DESCRIBE,
            RustPeer::FailsafeRs => breaker::DESCRIBE,
            RustPeer::Backon => backon::DESCRIBE,
        }
    }

    /// Logical request `id`, `call` (`id` is sent in [`REQUEST_ID_HEADER`] on every
    /// attempt, as any header is): (succeeded, attempts seen). The library decides the
    /// retries, by its own rules for `call`'s method.
    pub async fn call(&self, id: u64, call: &Call) -> (bool, u32) {
        let url = |o: &PeerOptions| match &call.path {
            None => Ok(o.url.clone()),
            Some(_) => o
                .url
                .parse::<http::Uri>()
                .map_err(http::Error::from)
                .and_then(|base| call.uri(&base))
                .map(|u| u.to_string()),
        };
        match self {
            Peer::ReqwestRetry(c, o) => {
                let Ok(url) = url(o) else { return (false, 0) };
                let attempts = Attempts::default();
                let r = c
                    .request(call.http_method(), url)
                    .header(REQUEST_ID_HEADER, id)
                    .with_extension(attempts.clone())
                    .send()
                    .await;
                let ok = match r {
                    Ok(resp) => resp.status().is_success() && resp.bytes().await.is_ok(),
                    Err(_) => false,
                };
                (ok, attempts.get())
            }
            Peer::ReqwestBuiltin(c, o) => {
                let Ok(url) = url(o) else { return (false, 0) };
                let sent = c
                    .request(call.http_method(), url)
                    .header(REQUEST_ID_HEADER, id)
                    .send()
                    .await;
                let ok = match sent {
                    Ok(resp) => resp.status().is_success() && resp.bytes().await.is_ok(),
                    Err(_) => false,
                };
                (ok, 0)
            }
            Peer::TowerRetry(t) => t.call(id, call).await,
            Peer::TowerHedge(t) => t.call(id, call).await,
            Peer::FailsafeRs(f) => f.call(id, call).await,
            Peer::Backon(b, o) => {
                let Ok(url) = url(o) else { return (false, 0) };
                b.call(id, call.http_method(), url).await
            }
        }
    }
}

fn url_host(url: &str) -> String {
    url.parse::<http::Uri>()
        .ok()
        .and_then(|u| u.host().map(str::to_owned))
        .unwrap_or_default()
}

type HyperClient = Client<HttpConnector, Empty<Bytes>>;
type Req = http::Request<Empty<Bytes>>;
type Res = http::Response<hyper::body::Incoming>;
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// tower's retry over hyper-util's client.
pub struct TowerPeer {
    client: HyperClient,
    budget: Arc<TpsBudget>,
    backoff: ExponentialBackoffMaker,
    uri: http::Uri,
    timeout: Option<Duration>,
}

/// hyper-util's client as the tower and failsafe-rs arms use it: `pool` idle connections
/// kept, no hidden re-send of a cancelled request.
fn hyper_client(pool: usize) -> HyperClient {
    let mut conn = HttpConnector::new();
    conn.set_nodelay(true);
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(pool)
        .retry_canceled_requests(false)
        .build(conn)
}

impl TowerPeer {
    fn new(o: PeerOptions) -> Result<TowerPeer, String> {
        Ok(TowerPeer {
            client: hyper_client(o.pool),
            budget: Arc::new(TpsBudget::default()),
            backoff: ExponentialBackoffMaker::default(),
            uri: o.url.parse().map_err(|e| format!("{}: {e}", o.url))?,
            timeout: o.timeout,
        })
    }

    async fn call(&self, id: u64, call: &Call) -> (bool, u32) {
        let policy = TowerPolicy {
            budget: self.budget.clone(),
            backoff: self.backoff.clone().make_backoff(),
            left: 3,
        };
        let inner = Counted {
            client: self.client.clone(),
            timeout: self.timeout,
        };
        let mut svc = tower::retry::Retry::new(policy, inner);
        let Some((req, attempts)) = counted::request(id, call, &self.uri) else {
            return (false, 0);
        };
        let ok = match svc.ready().await {
            Ok(s) => match s.call(req).await {
                Ok(resp) => resp.status().is_success() && resp.into_body().collect().await.is_ok(),
                Err(_) => false,
            },
            Err(_) => false,
        };
        (ok, attempts.get())
    }
}

#[derive(Clone)]
struct TowerPolicy {
    budget: Arc<TpsBudget>,
    backoff: ExponentialBackoff,
    left: u32,
}

impl tower::retry::Policy<Req, Res, BoxError> for TowerPolicy {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        _req: &mut Req,
        result: &mut Result<Res, BoxError>,
    ) -> Option<Self::Future> {
        let retryable = match result {
            Ok(r) => r.status().is_server_error() || r.status().as_u16() == 429,
            Err(_) => true,
        };
        if !retryable {
            // tower's documented pattern: a finished request funds future retries.
            self.budget.deposit();
            return None;
        }
        if self.left == 0 || !self.budget.withdraw() {
            return None;
        }
        self.left -= 1;
        Some(self.backoff.next_backoff())
    }

    fn clone_request(&mut self, req: &Req) -> Option<Req> {
        counted::clone_request(req)
    }
}
