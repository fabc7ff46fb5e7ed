//! The driver's connection pool: HTTP/1.1 connections to one origin, reused last-in
//! first-out, each driven by the request that holds it.
//!
//! hyper-util's general pool (keyed by host, with expiry, waiters and a background
//! reaper) cost more CPU per request than the server herd measures against, and a load
//! tool's overhead must stay far below what it measures. This pool does the least a load
//! tool needs, as wrk and oha do: one origin, a stack of idle connections, a new one when
//! none is idle. It never re-sends a request on its own (a request on a connection that
//! turns out to be dead fails, and the retry policy under test decides). How many
//! connections are busy at once is capped by the caller's semaphore
//! ([`super::HttpClient`]), so the stack never holds more than that cap.
//!
//! A hyper connection is a future that does the reading and writing. The usual way runs
//! it as a task of its own, and then every request crosses tasks four times (the request
//! in, the response head out, the body's want and its data), each a wake-up; at tens of
//! thousands of requests a second those wake-ups were a large part of the driver's CPU.
//! Here the request that holds a connection polls it itself, in the same task, so a
//! request is one task woken by its own socket. A connection nobody holds is polled by
//! nobody: a close by the server is noticed when the connection is next taken (one poll
//! sees the end of the stream), as a background task would have.

use bytes::Bytes;
use http::header::HOST;
use http::{HeaderValue, Request};
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::{self, Connection, SendRequest};
use hyper_util::rt::TokioIo;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::{pin, Pin};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::net::TcpStream;

/// One connection: the handle requests go in by, and the future that moves their bytes.
struct Link {
    send: SendRequest<Empty<Bytes>>,
    conn: Pin<Box<Connection<TokioIo<TcpStream>, Empty<Bytes>>>>,
    /// The connection future has finished (closed by either side, or failed).
    ended: bool,
}

impl Link {
    /// Lets the connection do what it can now; false once it has ended.
    fn drive(&mut self, cx: &mut Context<'_>) -> bool {
        if !self.ended && self.conn.as_mut().poll(cx).is_ready() {
            self.ended = true;
        }
        !self.ended
    }

    /// Waits for `fut` (a request's or its body's), driving the connection meanwhile.
    /// `None`: the connection ended and `fut` cannot finish.
    async fn with<F: Future + Unpin>(&mut self, mut fut: F) -> Option<F::Output> {
        poll_fn(|cx| {
            let alive = self.drive(cx);
            match Pin::new(&mut fut).poll(cx) {
                Poll::Ready(v) => Poll::Ready(Some(v)),
                Poll::Pending if alive => Poll::Pending,
                Poll::Pending => Poll::Ready(None),
            }
        })
        .await
    }

    /// Whether the connection can take a request now, after noticing a close that came
    /// while it was idle (one poll, which at most leaves a spurious wake-up behind).
    async fn usable(&mut self) -> bool {
        poll_fn(|cx| Poll::Ready(self.drive(cx) && self.send.is_ready())).await
    }
}

/// Why a request got no response.
#[derive(Debug)]
pub(super) enum PoolError {
    /// No connection could be opened.
    Connect(io::Error),
    /// The connection failed the request.
    Http(hyper::Error),
    /// The connection ended with the request unanswered, and hyper gave no error for it.
    Closed,
}

/// Idle connections to one origin.
pub(super) struct Pool {
    /// `host:port`, to connect to.
    addr: String,
    host: HeaderValue,
    idle: Mutex<Vec<Link>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("addr", &self.addr).finish()
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

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Link>> {
        self.idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sends `req` (its URI in origin-form, `/path?query`, as it goes on the wire) on an
    /// idle connection or a new one, reads the response whole (its body is discarded) and
    /// returns its head. The connection goes back to the pool only when the exchange
    /// completed; a request dropped midway (its timeout) closes it.
    pub async fn exchange(
        &self,
        mut req: Request<Empty<Bytes>>,
    ) -> Result<http::response::Parts, PoolError> {
        with_host(&mut req, &self.host);
        let mut link = self.checkout().await?;
        let sent = link.send.send_request(req);
        let resp = match link.with(pin!(sent)).await {
            Some(r) => r.map_err(PoolError::Http)?,
            None => return Err(PoolError::Closed),
        };
        let (head, body) = resp.into_parts();
        match link.with(pin!(body.collect())).await {
            Some(r) => r.map_err(PoolError::Http)?,
            None => return Err(PoolError::Closed),
        };
        // Whether it is still usable is asked when it is next taken (one poll then, not
        // two); one that has already ended is not kept.
        if !link.ended {
            self.idle().push(link);
        }
        Ok(head)
    }

    /// An idle connection that can take a request, or a new one.
    async fn checkout(&self) -> Result<Link, PoolError> {
        loop {
            let Some(mut link) = self.idle().pop() else {
                return self.connect().await;
            };
            if link.usable().await {
                return Ok(link);
            }
        }
    }

    async fn connect(&self) -> Result<Link, PoolError> {
        let stream = TcpStream::connect(&self.addr)
            .await
            .map_err(PoolError::Connect)?;
        stream.set_nodelay(true).map_err(PoolError::Connect)?;
        let (send, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(PoolError::Http)?;
        let mut link = Link {
            send,
            conn: Box::pin(conn),
            ended: false,
        };
        // The handle is ready once the connection has been polled.
        poll_fn(|cx| {
            if !link.drive(cx) {
                return Poll::Ready(Err(PoolError::Closed));
            }
            link.send.poll_ready(cx).map_err(PoolError::Http)
        })
        .await?;
        Ok(link)
    }
}

/// `Host` from the origin, unless the request names one.
fn with_host(req: &mut Request<Empty<Bytes>>, host: &HeaderValue) {
    req.headers_mut()
        .entry(HOST)
        .or_insert_with(|| host.clone());
}
