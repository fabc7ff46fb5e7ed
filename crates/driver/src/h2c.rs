//! herd's HTTP/2 client for replica arms: h2c with prior knowledge, every attempt a stream,
//! the streams of a lane multiplexed over `[client] connections` connections, and gRPC unary
//! calls when the upstream speaks gRPC.
//!
//! HTTP/1.1 needs a connection per attempt in flight, so a burst opens connections; HTTP/2
//! sends the whole burst down the connections it has, as a gRPC channel does (one
//! connection per channel to a server, unless its load balancer opens more). What an
//! attempt comes back with is classified the way the HTTP/1.1 client does it, plus gRPC's
//! status: `grpc-status` from a Trailers-Only answer or from the trailers after the message,
//! `grpc-retry-pushback-ms` as the hint, an `RST_STREAM` as a reset, a lost connection as
//! closed (and the connection opened again for the next attempt).
//!
//! Like the HTTP/1.1 pool, it never re-sends a request itself: a request on a connection
//! that died fails, and the policy under test decides.

use super::attempt::Call;
use bytes::Bytes;
use herd_retry::grpc::{DEFAULT_METHOD, DEFAULT_SERVICE};
use herd_retry::{Failure, Outcome};
use herd_scenario::REQUEST_ID_HEADER;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, Request};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};
use tokio::net::TcpStream;
use tokio::sync::Mutex;

/// One empty message: not compressed, length 0.
const EMPTY_MESSAGE: &[u8] = &[0, 0, 0, 0, 0];

/// A lane's HTTP/2 connections to one origin.
pub(super) struct H2Pool {
    /// `host:port`, to connect to and the `:authority` of every request.
    addr: String,
    /// gRPC calls rather than plain requests.
    grpc: bool,
    /// The connections, opened on first use and again after one dies.
    conns: Vec<Mutex<Option<SendRequest<Full<Bytes>>>>>,
    /// Round-robin over `conns`.
    next: AtomicUsize,
}

impl std::fmt::Debug for H2Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H2Pool")
            .field("addr", &self.addr)
            .field("connections", &self.conns.len())
            .finish()
    }
}

impl H2Pool {
    /// `connections` connections (at least one) to `uri`'s origin, none open yet.
    pub(super) fn new(uri: &http::Uri, connections: usize, grpc: bool) -> std::io::Result<Self> {
        let host = uri
            .host()
            .ok_or_else(|| std::io::Error::other(format!("`{uri}` has no host")))?;
        let port = uri.port_u16().unwrap_or(80);
        Ok(H2Pool {
            addr: format!("{host}:{port}"),
            grpc,
            conns: (0..connections.max(1)).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
        })
    }

    /// The same origin with connections of its own (another lane's thread).
    pub(super) fn fresh(&self, connections: usize) -> Self {
        H2Pool {
            addr: self.addr.clone(),
            grpc: self.grpc,
            conns: (0..connections.max(1)).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
        }
    }

    /// How many connections the pool spreads its streams over.
    pub(super) fn connections(&self) -> usize {
        self.conns.len()
    }

    /// A sender on the next connection, opening it if it is not open (or died).
    async fn sender(&self) -> Result<SendRequest<Full<Bytes>>, Failure> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.conns.len();
        let mut slot = self.conns[i].lock().await;
        if let Some(s) = slot.as_ref().filter(|s| !s.is_closed()) {
            return Ok(s.clone());
        }
        let stream = TcpStream::connect(&self.addr).await.map_err(|e| {
            herd_upstream::fd_limit::note(&e);
            match Failure::from_error(&e) {
                Failure::Other => Failure::Refused,
                f => f,
            }
        })?;
        let _ = stream.set_nodelay(true);
        let (send, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| failure(&e))?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!("h2 connection ended: {e}");
            }
        });
        *slot = Some(send.clone());
        Ok(send)
    }

    /// One attempt of logical request `id` (`previous` attempts went before it).
    pub(super) async fn exchange(&self, id: u64, call: &Call, previous: u32) -> Outcome {
        let mut send = match self.sender().await {
            Ok(s) => s,
            Err(f) => return Outcome::Failed(f),
        };
        let req = match self.request(id, call, previous) {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!("attempt {id}: cannot build the request: {e}");
                return Outcome::Failed(Failure::Other);
            }
        };
        let resp = match send.send_request(req).await {
            Ok(r) => r,
            Err(e) => return Outcome::Failed(failure(&e)),
        };
        let (parts, body) = resp.into_parts();
        if !self.grpc {
            // The body is drained so the stream ends cleanly; its content is not needed.
            if let Err(e) = body.collect().await {
                return Outcome::Failed(failure(&e));
            }
            return Outcome::from_http(parts.status, &parts.headers, SystemTime::now());
        }
        if parts.status != http::StatusCode::OK {
            return Outcome::from_response(parts.status.as_u16(), None, SystemTime::now());
        }
        // Trailers-Only: the status is in the headers; else in the trailers after the body.
        if parts.headers.contains_key("grpc-status") {
            return grpc_outcome(&parts.headers);
        }
        match body.collect().await {
            Ok(c) => match c.trailers() {
                Some(t) => grpc_outcome(t),
                None => Outcome::grpc(herd_retry::grpc::Code::INTERNAL.0, None),
            },
            Err(e) => Outcome::Failed(failure(&e)),
        }
    }

    fn request(
        &self,
        id: u64,
        call: &Call,
        previous: u32,
    ) -> Result<Request<Full<Bytes>>, http::Error> {
        let b = Request::builder().header(REQUEST_ID_HEADER, id);
        if !self.grpc {
            let path = call.path.as_deref().unwrap_or("/");
            let uri = format!("http://{}{path}", self.addr);
            return b
                .method(call.http_method())
                .uri(uri)
                .version(http::Version::HTTP_2)
                .body(Full::new(Bytes::new()));
        }
        let uri = format!("http://{}/{DEFAULT_SERVICE}/{DEFAULT_METHOD}", self.addr);
        let mut b = b
            .method(http::Method::POST)
            .uri(uri)
            .version(http::Version::HTTP_2)
            .header(CONTENT_TYPE, "application/grpc")
            .header("te", "trailers");
        if previous > 0 {
            b = b.header("grpc-previous-rpc-attempts", previous);
        }
        b.body(Full::new(Bytes::from_static(EMPTY_MESSAGE)))
    }
}

/// The outcome `grpc-status` and `grpc-retry-pushback-ms` in `h` say. A missing or
/// unreadable status is UNKNOWN, as gRPC clients report it; a negative or unreadable
/// pushback is no hint (A6 says: no retry; herd's upstream never sends one).
fn grpc_outcome(h: &HeaderMap) -> Outcome {
    let read = |k: &str| h.get(k).and_then(|v| v.to_str().ok()).map(str::trim);
    let code = read("grpc-status")
        .and_then(|s| s.parse::<u8>().ok())
        .unwrap_or(herd_retry::grpc::Code::UNKNOWN.0);
    let pushback = read("grpc-retry-pushback-ms")
        .and_then(|s| s.parse::<u64>().ok())
        .map(Duration::from_millis);
    Outcome::grpc(code, pushback)
}

/// What a failed exchange was: the server's `RST_STREAM` is a reset; a lost connection,
/// closed; a connection that could not be opened, refused.
fn failure(e: &hyper::Error) -> Failure {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(h2) = err.downcast_ref::<h2::Error>() {
            if h2.is_reset() && h2.is_remote() {
                return Failure::Reset;
            }
            if h2.is_go_away() {
                return Failure::Closed;
            }
            if let Some(io) = h2.get_io() {
                return Failure::from_io_kind(io.kind());
            }
            return Failure::Closed;
        }
        cur = err.source();
    }
    if e.is_closed() || e.is_incomplete_message() || e.is_canceled() {
        return Failure::Closed;
    }
    Failure::from_error(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn reads_grpc_status_and_pushback() {
        let mut h = HeaderMap::new();
        h.insert("grpc-status", HeaderValue::from_static("14"));
        h.insert("grpc-retry-pushback-ms", HeaderValue::from_static("250"));
        assert_eq!(
            grpc_outcome(&h),
            Outcome::grpc(14, Some(Duration::from_millis(250)))
        );
        h.insert("grpc-status", HeaderValue::from_static("x"));
        h.remove("grpc-retry-pushback-ms");
        assert_eq!(grpc_outcome(&h), Outcome::grpc(2, None));
    }
}
