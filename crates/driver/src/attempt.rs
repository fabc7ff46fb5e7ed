//! One attempt on the wire, and what it came back with.
//!
//! The pool is herd's own ([`super::pool`]): lean enough for the driver's overhead to stay
//! below the server's, and with no hidden retry (hyper-util's re-sends a request whose
//! pooled connection turned out to be dead, which the upstream would count and the client
//! would not). A semaphore caps the attempts in flight at `pool_max_connections`, so the
//! pool never has more connections busy than the scenario says.

use super::h2c::H2Pool;
use super::pool::{Pool, PoolError};
use super::wire::WireError;
use herd_retry::{Failure, Method, Outcome};
use herd_scenario::{Unit, REQUEST_ID_HEADER};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// What one logical request asks for: its method, and its path and query when a trace
/// line gives one (without, the client's URL as it is). Every client of an arm sends it
/// this way, and herd's retrier decides its retries by this method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// The method: the trace line's, else the scenario's `[load] method`.
    pub method: Method,
    /// The path and query (`/orders?id=7`), when the trace line has one.
    pub path: Option<Arc<str>>,
}

impl Call {
    /// `unit`'s request; `default` (the scenario's `[load] method`) when it names no method.
    pub fn of(unit: &Unit, default: Method) -> Call {
        Call {
            method: unit.method_or(default),
            path: unit.path.clone(),
        }
    }

    /// The scenario's `[load] method` to the client's URL.
    pub fn plain(method: Method) -> Call {
        Call { method, path: None }
    }

    /// The method as `http` spells it.
    pub fn http_method(&self) -> http::Method {
        http::Method::from_bytes(self.method.as_str().as_bytes()).unwrap_or(http::Method::GET)
    }

    /// The request target as a connection sends it (origin-form, `/path?query`): the
    /// call's path if it has one, else `origin` (the client's URL's, made once). A path
    /// comes from a trace line, which the trace reader let through only if it starts with
    /// `/` and holds nothing but URI path characters ([`herd_scenario::trace::is_path_byte`]),
    /// so it goes on the wire as it is, not checked again at every attempt.
    fn target<'a>(&'a self, origin: &'a str) -> &'a str {
        self.path.as_deref().unwrap_or(origin)
    }

    /// `base` with its path and query replaced by the call's path, if it has one.
    pub fn uri(&self, base: &http::Uri) -> Result<http::Uri, http::Error> {
        let Some(path) = &self.path else {
            return Ok(base.clone());
        };
        let mut parts = base.clone().into_parts();
        parts.path_and_query = Some(path.parse()?);
        Ok(http::Uri::from_parts(parts)?)
    }
}

/// An arm's HTTP client: one pool, a cap on connections in use, an attempt timeout.
#[derive(Clone)]
pub struct HttpClient {
    pool: Arc<Pool>,
    /// An HTTP/2 or gRPC upstream: the connections every attempt goes over instead.
    h2: Option<Arc<H2Pool>>,
    slots: Arc<Semaphore>,
    /// The URL's path and query in origin-form, as every request without a path of its own
    /// is sent.
    origin: Arc<str>,
    timeout: Option<Duration>,
}

impl HttpClient {
    /// A client for `uri` with at most `max_connections` connections in use.
    pub fn new(
        uri: http::Uri,
        max_connections: usize,
        timeout: Option<Duration>,
    ) -> std::io::Result<Self> {
        Self::with_tls(uri, max_connections, timeout, None)
    }

    /// [`HttpClient::new`] for an `https://` `uri` too, trusting what `tls` trusts (for
    /// herd's own front, [`herd_upstream::tls::FrontTls::client_config`]).
    pub fn with_tls(
        uri: http::Uri,
        max_connections: usize,
        timeout: Option<Duration>,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> std::io::Result<Self> {
        let origin = uri.path_and_query().map_or("/", |p| p.as_str()).into();
        Ok(HttpClient {
            pool: Pool::new(&uri, tls)?,
            h2: None,
            slots: Arc::new(Semaphore::new(max_connections)),
            origin,
            timeout,
        })
    }

    /// The same client speaking HTTP/2 (h2c with prior knowledge) to `uri`, gRPC when
    /// `protocol` is gRPC, over `connections` connections per driving thread; HTTP/1.1
    /// stays as it is.
    pub fn speaking(
        mut self,
        uri: &http::Uri,
        protocol: herd_scenario::Protocol,
        connections: usize,
    ) -> std::io::Result<Self> {
        if protocol.is_h2() {
            self.h2 = Some(Arc::new(H2Pool::new(uri, connections, protocol.is_grpc())?));
        }
        Ok(self)
    }

    /// The same client (its cap on connections in use, its timeout) with a pool of its
    /// own, for another driving thread: a connection is served by the thread that opened
    /// it, so no answer has to cross threads. The new pool takes `cold` of this one's
    /// connections opened before the clock (see [`Pool::preconnect`]).
    pub(super) fn with_own_pool(&self, cold: usize) -> Self {
        HttpClient {
            pool: self.pool.with_cold_share(cold),
            h2: (self.h2.as_ref()).map(|p| Arc::new(p.fresh(p.connections()))),
            ..self.clone()
        }
    }

    /// Opens `n` connections before the clock starts (`[client] preconnect`).
    pub(super) async fn preconnect(&self, n: usize) -> std::io::Result<()> {
        if self.h2.is_some() {
            // HTTP/2 connections are opened by the thread that drives them, on first use.
            return Ok(());
        }
        self.pool.preconnect(n).await
    }

    /// The client's per-attempt timeout (from the scenario).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Sends one attempt of logical request `id` (`call`: its method and path) and
    /// classifies the result; `timeout`
    /// (the request's [`herd_retry::Retrier::attempt_timeout`]) covers waiting for a
    /// connection, the request and the whole response body. The attempt carries `id` in
    /// [`REQUEST_ID_HEADER`], so the upstream can tell a retry from a first try.
    ///
    /// An attempt with no time left (`timeout` zero: the deadline has come) times out
    /// before it is sent, as in the simulator; `tokio::time::timeout(0, …)` would poll
    /// the send once and could put it on the wire.
    pub async fn attempt(&self, id: u64, call: &Call, timeout: Option<Duration>) -> Outcome {
        self.attempt_noting(id, call, 0, timeout, &mut None).await
    }

    /// [`HttpClient::attempt`], noting in `sent` (if still empty) the instant the request
    /// got its connection slot and went to the pool: the end of the driver's lag.
    /// `previous` attempts of the logical request went before this one (a gRPC call
    /// says so in `grpc-previous-rpc-attempts`, as A6 clients do).
    pub async fn attempt_noting(
        &self,
        id: u64,
        call: &Call,
        previous: u32,
        timeout: Option<Duration>,
        sent: &mut Option<Instant>,
    ) -> Outcome {
        if timeout.is_some_and(|t| t.is_zero()) {
            return Outcome::Failed(Failure::Timeout);
        }
        let fut = self.send(id, call, previous, sent);
        match timeout {
            Some(t) => tokio::time::timeout(t, fut)
                .await
                .unwrap_or(Outcome::Failed(Failure::Timeout)),
            None => fut.await,
        }
    }

    async fn send(
        &self,
        id: u64,
        call: &Call,
        previous: u32,
        sent: &mut Option<Instant>,
    ) -> Outcome {
        let Ok(_slot) = self.slots.acquire().await else {
            return Outcome::Failed(Failure::Other);
        };
        sent.get_or_insert_with(Instant::now);
        if let Some(h2) = &self.h2 {
            return h2.exchange(id, call, previous).await;
        }
        let target = call.target(&self.origin);
        match self
            .pool
            .exchange(call.method.as_str(), target, (REQUEST_ID_HEADER, id))
            .await
        {
            Ok(a) => Outcome::from_response(a.status, a.retry_after.as_deref(), SystemTime::now())
                .with_error_code(a.error_code.as_deref()),
            Err(PoolError::Connect(e)) => Outcome::Failed(connect_failure(&e)),
            Err(PoolError::Wire(WireError::Io(e))) => {
                Outcome::Failed(Failure::from_io_kind(e.kind()))
            }
            Err(PoolError::Wire(WireError::Closed)) => Outcome::Failed(Failure::Closed),
            Err(PoolError::Wire(WireError::Malformed(why))) => {
                tracing::debug!("attempt {id}: the response was not HTTP/1.x: {why}");
                Outcome::Failed(Failure::Other)
            }
        }
    }
}

/// A connection that could not be opened is refused, whatever the OS said. Out of file
/// descriptors is noted too ([`herd_upstream::fd_limit::note`]): the run stops on it.
fn connect_failure(e: &std::io::Error) -> Failure {
    herd_upstream::fd_limit::note(e);
    match Failure::from_error(e) {
        Failure::Other => Failure::Refused,
        f => f,
    }
}
