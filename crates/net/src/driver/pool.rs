//! The driver's connection pool: HTTP/1.1 connections to one origin, reused last-in
//! first-out, nothing else.
//!
//! hyper-util's general pool (keyed by host, with expiry, waiters and a background
//! reaper) cost more CPU per request than the server herd measures against, and a load
//! tool's overhead must stay far below what it measures: at tens of thousands of requests
//! a second on two cores it was the driver, not the target, that fell behind. This pool
//! does the least a load tool needs, as oha and wrk do: one origin, a stack of idle
//! connections, a new one when none is idle. It never re-sends a request on its own (a
//! request on a connection that turns out to be dead fails, and the retry policy under
//! test decides). How many connections are busy at once is capped by the caller's
//! semaphore ([`super::HttpClient`]), so the stack never holds more than that cap.

use bytes::Bytes;
use http::header::HOST;
use http::{HeaderValue, Request, Response};
use http_body_util::Empty;
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use std::io;
use std::sync::{Arc, Mutex};
use tokio::net::TcpStream;

type Conn = SendRequest<Empty<Bytes>>;

/// Why a request got no response.
#[derive(Debug)]
pub(super) enum PoolError {
    /// No connection could be opened.
    Connect(io::Error),
    /// The connection failed the request.
    Http(hyper::Error),
}

/// Idle connections to one origin.
#[derive(Debug)]
pub(super) struct Pool {
    /// `host:port`, to connect to.
    addr: String,
    host: HeaderValue,
    idle: Mutex<Vec<Conn>>,
}

/// A connection out of the pool for one request; back into it on [`Lease::reuse`] once
/// the response has been read whole, or closed when dropped before.
pub(super) struct Lease {
    conn: Option<Conn>,
    pool: Arc<Pool>,
}

impl Lease {
    /// The response was read whole: the connection can serve another request.
    pub fn reuse(mut self) {
        if let Some(c) = self.conn.take() {
            if !c.is_closed() {
                self.pool.put(c);
            }
        }
    }
}

impl Pool {
    /// A pool for `uri`'s origin (`http` only; port 80 by default).
    pub fn new(uri: &http::Uri) -> io::Result<Arc<Pool>> {
        let host = uri
            .host()
            .ok_or_else(|| io::Error::other(format!("{uri}: no host")))?;
        let port = uri.port_u16().unwrap_or(80);
        let authority = uri
            .authority()
            .map_or_else(|| host.to_owned(), |a| a.as_str().to_owned());
        Ok(Arc::new(Pool {
            addr: format!("{host}:{port}"),
            host: HeaderValue::from_str(&authority).map_err(io::Error::other)?,
            idle: Mutex::new(Vec::new()),
        }))
    }

    fn put(&self, c: Conn) {
        self.idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(c);
    }

    fn take(&self) -> Option<Conn> {
        self.idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop()
    }

    /// Sends `req` (its URI absolute or origin-form) on an idle connection or a new one,
    /// and returns the response head with the connection's lease.
    pub async fn request(
        self: &Arc<Self>,
        mut req: Request<Empty<Bytes>>,
    ) -> Result<(Response<Incoming>, Lease), PoolError> {
        origin_form(&mut req, &self.host);
        let mut conn = self.checkout().await?;
        let sent = conn.send_request(req).await;
        let lease = Lease {
            conn: Some(conn),
            pool: self.clone(),
        };
        sent.map(|r| (r, lease)).map_err(PoolError::Http)
    }

    /// An idle connection that is ready, or a new one.
    async fn checkout(&self) -> Result<Conn, PoolError> {
        while let Some(mut c) = self.take() {
            if c.is_ready() || c.ready().await.is_ok() {
                return Ok(c);
            }
        }
        self.connect().await
    }

    async fn connect(&self) -> Result<Conn, PoolError> {
        let stream = TcpStream::connect(&self.addr)
            .await
            .map_err(PoolError::Connect)?;
        stream.set_nodelay(true).map_err(PoolError::Connect)?;
        let (send, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(PoolError::Http)?;
        tokio::spawn(async move {
            // The connection's end (closed by either side) is seen by its requests.
            let _ = conn.await;
        });
        Ok(send)
    }
}

/// The request as a connection sends it: origin-form URI, `Host` from the origin.
fn origin_form(req: &mut Request<Empty<Bytes>>, host: &HeaderValue) {
    let path = req
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    if let Ok(uri) = path.parse() {
        *req.uri_mut() = uri;
    }
    req.headers_mut()
        .entry(HOST)
        .or_insert_with(|| host.clone());
}
