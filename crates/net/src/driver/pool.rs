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
//! A connection is no task of its own: the request that holds it reads and writes it
//! ([`super::wire`]), so a request is one task woken by its own socket. A connection
//! nobody holds is watched by nobody: a close by the server is noticed when the
//! connection is next taken (its socket reported readable), as a background task would
//! have noticed it.

use super::wire::{Answer, Wire, WireError};
use std::io;
use std::sync::{Arc, Mutex};
use tokio::net::TcpStream;

/// Why a request got no response.
#[derive(Debug)]
pub(super) enum PoolError {
    /// No connection could be opened.
    Connect(io::Error),
    /// The exchange failed (see [`WireError`]).
    Wire(WireError),
}

/// Idle connections to one origin.
pub(super) struct Pool {
    /// `host:port`, to connect to.
    addr: String,
    /// The `Host` header's value: the URL's authority.
    host: String,
    idle: Mutex<Vec<Wire>>,
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
            host: authority,
            idle: Mutex::new(Vec::new()),
        }))
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Wire>> {
        self.idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sends `method target` (`target` in origin-form, `/path?query`, as it goes on the
    /// wire) with `id_header` on an idle connection or a new one, reads the response whole
    /// (its body is discarded) and returns what the client needs of it. The connection
    /// goes back to the pool only when the exchange completed and the server keeps it
    /// open; a request dropped midway (its timeout) closes it.
    pub async fn exchange(
        &self,
        method: &str,
        target: &str,
        id_header: (&str, u64),
    ) -> Result<Answer, PoolError> {
        let mut wire = self.checkout().await?;
        let (answer, reusable) = wire
            .exchange(method, target, &self.host, id_header)
            .await
            .map_err(PoolError::Wire)?;
        if reusable {
            self.idle().push(wire);
        }
        Ok(answer)
    }

    /// An idle connection that can take a request, or a new one.
    async fn checkout(&self) -> Result<Wire, PoolError> {
        loop {
            let Some(mut wire) = self.idle().pop() else {
                return self.connect().await;
            };
            if wire.usable() {
                return Ok(wire);
            }
        }
    }

    async fn connect(&self) -> Result<Wire, PoolError> {
        let stream = TcpStream::connect(&self.addr)
            .await
            .map_err(PoolError::Connect)?;
        stream.set_nodelay(true).map_err(PoolError::Connect)?;
        Ok(Wire::new(stream))
    }
}
