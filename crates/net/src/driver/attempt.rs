//! One attempt on the wire, and what it came back with.
//!
//! The pool is hyper-util's, with its one hidden retry switched off
//! (`retry_canceled_requests(false)`: by default it silently re-sends a request whose pooled
//! connection turned out to be dead, which the upstream would count and the client would
//! not). A semaphore caps the attempts in flight at `pool_max_connections`, so the pool
//! never has more connections busy than the scenario says.

use bytes::Bytes;
use herd_retry::{Failure, Method, Outcome};
use herd_scenario::REQUEST_ID_HEADER;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::error::Error as _;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::Semaphore;

/// An arm's HTTP client: one pool, a cap on connections in use, an attempt timeout.
#[derive(Clone)]
pub struct HttpClient {
    client: Client<HttpConnector, Empty<Bytes>>,
    slots: Arc<Semaphore>,
    uri: http::Uri,
    method: http::Method,
    timeout: Option<Duration>,
}

impl HttpClient {
    /// A client for `uri` with at most `max_connections` connections in use.
    pub fn new(
        uri: http::Uri,
        method: Method,
        max_connections: usize,
        timeout: Option<Duration>,
    ) -> Self {
        let mut conn = HttpConnector::new();
        conn.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(max_connections)
            .retry_canceled_requests(false)
            .build(conn);
        HttpClient {
            client,
            slots: Arc::new(Semaphore::new(max_connections)),
            uri,
            method: http::Method::from_bytes(method.as_str().as_bytes())
                .unwrap_or(http::Method::GET),
            timeout,
        }
    }

    /// The client's per-attempt timeout (from the scenario).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Sends one attempt of logical request `id` and classifies the result; `timeout`
    /// (the request's [`herd_retry::Retrier::attempt_timeout`]) covers waiting for a
    /// connection, the request and the whole response body. The attempt carries `id` in
    /// [`REQUEST_ID_HEADER`], so the upstream can tell a retry from a first try.
    ///
    /// An attempt with no time left (`timeout` zero: the deadline has come) times out
    /// before it is sent, as in the simulator; `tokio::time::timeout(0, …)` would poll
    /// the send once and could put it on the wire.
    pub async fn attempt(&self, id: u64, timeout: Option<Duration>) -> Outcome {
        if timeout.is_some_and(|t| t.is_zero()) {
            return Outcome::Failed(Failure::Timeout);
        }
        let fut = self.send(id);
        match timeout {
            Some(t) => tokio::time::timeout(t, fut)
                .await
                .unwrap_or(Outcome::Failed(Failure::Timeout)),
            None => fut.await,
        }
    }

    async fn send(&self, id: u64) -> Outcome {
        let Ok(_slot) = self.slots.acquire().await else {
            return Outcome::Failed(Failure::Other);
        };
        let req = match http::Request::builder()
            .method(self.method.clone())
            .uri(self.uri.clone())
            .header(REQUEST_ID_HEADER, id)
            .body(Empty::<Bytes>::new())
        {
            Ok(r) => r,
            Err(_) => return Outcome::Failed(Failure::Other),
        };
        let resp = match self.client.request(req).await {
            Ok(r) => r,
            Err(e) => return Outcome::Failed(classify_client_error(&e)),
        };
        let outcome = Outcome::from_http(resp.status(), resp.headers(), SystemTime::now());
        if let Err(e) = resp.into_body().collect().await {
            return Outcome::Failed(classify_hyper_error(&e));
        }
        outcome
    }
}

fn classify_client_error(e: &hyper_util::client::legacy::Error) -> Failure {
    match Failure::from_error(e) {
        Failure::Other if e.is_connect() => Failure::Refused,
        Failure::Other => match e.source().and_then(|s| s.downcast_ref::<hyper::Error>()) {
            Some(h) => classify_hyper_error(h),
            None => Failure::Other,
        },
        f => f,
    }
}

/// hyper's own view first (an incomplete message has no `io::Error` behind it), then the
/// shared classification.
fn classify_hyper_error(e: &hyper::Error) -> Failure {
    match Failure::from_error(e) {
        Failure::Other if e.is_incomplete_message() || e.is_canceled() || e.is_closed() => {
            Failure::Closed
        }
        f => f,
    }
}
