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
//!
//! Connections opened before the clock starts ([`Pool::preconnect`], the scenario's
//! `[client] preconnect`) wait *cold*: plain sockets registered with no event loop yet,
//! because the pool's requests run on a driving thread of their own that does not exist
//! yet (see [`super::thread`]). A cold connection joins the loop of the first request
//! that takes it, and a lane's pool can be handed its share of them
//! ([`Pool::with_cold_share`]).
//!
//! Against an HTTPS front (`[upstream] tls`) each new connection does its TLS handshake
//! when it is opened, inside the attempt that opened it, as a real client's does. A cold
//! connection is a TCP connection only: its handshake happens when a request first takes
//! it, after the clock has started (the TLS state cannot move between event loops).

use super::stream::{Stream, Tls};
use super::wire::{Answer, Wire, WireError};
use std::io;
use std::sync::{Arc, Mutex};
use tokio::net::TcpStream;

/// How long a connection opened before the clock may take to be accepted.
const HANDSHAKE: std::time::Duration = std::time::Duration::from_secs(5);

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
    /// Opened before the clock started, not yet taken by any request.
    cold: Mutex<Vec<std::net::TcpStream>>,
    /// HTTPS: how to do the handshake on a new connection.
    tls: Option<Tls>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("addr", &self.addr).finish()
    }
}

impl Pool {
    /// A pool for `uri`'s origin: `http`, or `https` with `tls` (the client configuration
    /// trusting the server); port 80 or 443 by default.
    pub fn new(uri: &http::Uri, tls: Option<Arc<rustls::ClientConfig>>) -> io::Result<Arc<Pool>> {
        let host = uri
            .host()
            .ok_or_else(|| io::Error::other(format!("{uri}: no host")))?;
        let https = uri.scheme_str() == Some("https");
        let tls = match (https, tls) {
            (false, _) => None,
            (true, Some(config)) => Some(Tls::new(config, host)?),
            (true, None) => {
                return Err(io::Error::other(format!(
                    "{uri}: an https URL needs the certificates to trust"
                )))
            }
        };
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let authority = uri
            .authority()
            .map_or_else(|| host.to_owned(), |a| a.as_str().to_owned());
        Ok(Arc::new(Pool {
            addr: format!("{host}:{port}"),
            host: authority,
            idle: Mutex::new(Vec::new()),
            cold: Mutex::new(Vec::new()),
            tls,
        }))
    }

    /// A pool for the same origin holding `share` of this one's cold connections (fewer if
    /// it has fewer), for another driving thread.
    pub fn with_cold_share(&self, share: usize) -> Arc<Pool> {
        let mut cold = lock(&self.cold);
        let keep = cold.len().saturating_sub(share);
        Arc::new(Pool {
            addr: self.addr.clone(),
            host: self.host.clone(),
            idle: Mutex::new(Vec::new()),
            cold: Mutex::new(cold.split_off(keep)),
            tls: self.tls.clone(),
        })
    }

    /// Opens `n` connections now, one after another, and keeps them cold for the requests
    /// to come. An error (the first connection refused, say) leaves the ones opened. A
    /// handshake the server leaves unanswered for [`HANDSHAKE`] (its accept queue full,
    /// say) is an error, not a wait for ever.
    pub async fn preconnect(&self, n: usize) -> io::Result<()> {
        for i in 0..n {
            let stream = tokio::time::timeout(HANDSHAKE, TcpStream::connect(&self.addr))
                .await
                .map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "connection {} was not accepted within {} s ({i} were)",
                            i + 1,
                            HANDSHAKE.as_secs()
                        ),
                    )
                })??;
            stream.set_nodelay(true)?;
            // Out of this loop, so the driving thread's own loop can take it.
            let stream = stream.into_std()?;
            lock(&self.cold).push(stream);
        }
        Ok(())
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Wire>> {
        lock(&self.idle)
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

    /// An idle connection that can take a request, else a cold one, else a new one.
    async fn checkout(&self) -> Result<Wire, PoolError> {
        loop {
            let idle = self.idle().pop();
            let mut wire = match idle {
                Some(wire) => wire,
                None => match self.warm_one() {
                    Some(tcp) => {
                        let tcp = tcp.map_err(PoolError::Connect)?;
                        match &self.tls {
                            None => Wire::new(Stream::Plain(tcp)),
                            Some(tls) => return self.handshake(tls, tcp).await,
                        }
                    }
                    None => return self.connect().await,
                },
            };
            if wire.usable() {
                return Ok(wire);
            }
        }
    }

    /// A cold connection, joined to this thread's loop.
    fn warm_one(&self) -> Option<io::Result<TcpStream>> {
        let stream = lock(&self.cold).pop()?;
        Some(TcpStream::from_std(stream))
    }

    async fn connect(&self) -> Result<Wire, PoolError> {
        let stream = TcpStream::connect(&self.addr)
            .await
            .map_err(PoolError::Connect)?;
        stream.set_nodelay(true).map_err(PoolError::Connect)?;
        match &self.tls {
            None => Ok(Wire::new(Stream::Plain(stream))),
            Some(tls) => self.handshake(tls, stream).await,
        }
    }

    /// The TLS handshake on a new connection; a failed one is a failed connect.
    async fn handshake(&self, tls: &Tls, tcp: TcpStream) -> Result<Wire, PoolError> {
        tls.connect(tcp)
            .await
            .map(Wire::new)
            .map_err(PoolError::Connect)
    }
}

/// Locks `m`, whether or not a holder panicked (the stacks stay valid either way).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
