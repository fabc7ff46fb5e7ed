//! One accepted connection: hyper serves it on this task (handlers run inline, no task per
//! request), and a handler can kill it with a real RST.
//!
//! hyper owns the stream it serves, so the stream is wrapped in an [`Io`] that remembers
//! whether a reset was asked for. When a handler pulls the trigger, this task drops the
//! hyper connection; dropping the [`Io`] sets `SO_LINGER = 0` on the socket just before it
//! closes, and the close of a socket with zero linger makes the kernel send RST instead of
//! FIN: the client reads `ECONNRESET` ("Connection reset by peer"). One descriptor per
//! connection, so 10,000 idle clients cost 10,000 descriptors, not twice that.
//!
//! An upstream whose scenario says `protocol = "h2c"` or `"grpc"` serves each connection
//! with hyper-util's `auto` builder instead: HTTP/2 with prior knowledge (the client's
//! preface picks it) and HTTP/1.1 on the same port, so curl and `/__herd/stats` still work.
//! HTTP/2 requests run as hyper's stream tasks, one per request, and a reset is that
//! stream's `RST_STREAM` ([`crate::handler`]); the TCP reset above stays HTTP/1.1's.
//!
//! With `[upstream] tls` the first bytes are a TLS handshake ([`crate::tls`]), and hyper
//! serves the TLS stream instead; a reset still closes the TCP socket under it with an RST.

use super::options::Options;
use crate::handler;
use crate::shared::Shared;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// How every connection is served: hyper's settings, and how long a new connection may stay
/// silent.
#[derive(Debug)]
pub(crate) struct Http {
    builder: http1::Builder,
    /// For an HTTP/2 protocol: HTTP/2 with prior knowledge, and HTTP/1.1 beside it.
    auto: Option<auto::Builder<TokioExecutor>>,
    /// A new connection must send its first byte within this (the header-read timeout);
    /// a TLS handshake must also be done within it.
    first_byte: Duration,
    /// Serve HTTPS with this: `[upstream] tls`.
    tls: Option<crate::tls::FrontTls>,
}

impl Http {
    pub(crate) fn new(options: &Options, protocol: herd_scenario::Protocol) -> Self {
        let mut builder = http1::Builder::new();
        builder
            .keep_alive(true)
            .timer(TokioTimer::new())
            .header_read_timeout(options.header_read_timeout)
            .max_header_size(options.max_header_bytes)
            // The read buffer must hold a whole head of the largest size allowed.
            .max_buf_size(options.max_header_bytes.max(8192) * 2);
        let auto = protocol.is_h2().then(|| {
            let mut b = auto::Builder::new(TokioExecutor::new());
            b.http1()
                .keep_alive(true)
                .timer(TokioTimer::new())
                .header_read_timeout(options.header_read_timeout)
                .max_buf_size(options.max_header_bytes.max(8192) * 2);
            // No cap on streams a client may open: gRPC servers (grpc-go) set none, and a
            // client that multiplexes its burst over few connections queues at the
            // workers, where herd counts it, not in the transport. The injected resets
            // and a hedging client's cancels are resets by design, not an attack.
            b.http2()
                .timer(TokioTimer::new())
                .max_concurrent_streams(None)
                .max_pending_accept_reset_streams(None)
                .max_local_error_reset_streams(None)
                .max_header_list_size(u32::try_from(options.max_header_bytes).unwrap_or(u32::MAX));
            b
        });
        Http {
            builder,
            auto,
            first_byte: options.header_read_timeout,
            tls: options.tls.clone(),
        }
    }
}

/// Serves `stream` until the client closes it, hyper gives up on it (a malformed or
/// oversized head, a header-read timeout), or a handler resets it.
///
/// hyper's connection state and its 8 KiB read buffer are set up only once the client has
/// sent its first byte, so a silent connection holds no more than this task and its socket
/// (about 1.3 KiB each with 10,000 of them).
pub(crate) async fn serve(stream: TcpStream, shared: Arc<Shared>, http: Arc<Http>) {
    // Not `readable()`: tokio reports a fresh socket readable before anything arrives.
    match tokio::time::timeout(http.first_byte, stream.peek(&mut [0u8; 1])).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return tracing::debug!("connection failed before its first byte: {e}"),
        Err(_) => return tracing::debug!("connection silent for {:?}: closed", http.first_byte),
    }
    if let Some(tls) = &http.tls {
        if let Some(stream) = tls.accept(stream, http.first_byte).await {
            Box::pin(serve_http(stream, shared, http)).await;
        }
        return;
    }
    Box::pin(serve_http(stream, shared, http)).await;
}

/// A stream hyper can serve that sits on a TCP socket, which a reset closes with an RST.
pub(crate) trait Socket:
    tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static
{
    /// The TCP socket under the stream.
    fn tcp(&self) -> &TcpStream;
}

impl Socket for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

async fn serve_http<S: Socket>(stream: S, shared: Arc<Shared>, http: Arc<Http>) {
    if let Err(e) = stream.tcp().set_nodelay(true) {
        tracing::debug!("cannot set TCP_NODELAY: {e}");
    }
    let peer = stream.tcp().peer_addr().ok().map(|a| a.ip());
    let reset = Arc::new(Reset::default());
    let io = Io {
        stream: TokioIo::new(stream),
        reset: reset.clone(),
    };
    let service = {
        let reset = reset.clone();
        service_fn(move |req| handler::handle(shared.clone(), reset.clone(), peer, req))
    };
    match &http.auto {
        None => until_reset(http.builder.serve_connection(io, service), &reset).await,
        Some(auto) => until_reset(auto.serve_connection(io, service), &reset).await,
    }
    // The hyper connection (and its Io) is gone: the RST is sent if asked.
}

/// Drives `conn` until it ends or a handler asks for the connection's reset.
async fn until_reset<E: std::fmt::Display>(
    conn: impl std::future::Future<Output = Result<(), E>>,
    reset: &Reset,
) {
    tokio::select! {
        biased;
        () = reset.asked.notified() => {}
        res = conn => {
            if let Err(e) = res {
                tracing::debug!("connection ended: {e}");
            }
        }
    }
}

/// A connection's reset trigger, shared by its handlers, its task and its [`Io`].
#[derive(Debug, Default)]
pub(crate) struct Reset {
    /// Set before `asked` is notified; read when the socket closes.
    fired: AtomicBool,
    /// Wakes the connection task, which then drops the connection.
    asked: Notify,
}

impl Reset {
    /// Asks for the connection to be closed with an RST.
    pub(crate) fn fire(&self) {
        self.fired.store(true, Ordering::Release);
        self.asked.notify_one();
    }
}

/// The stream hyper serves, which closes with an RST when its connection's [`Reset`] fired.
struct Io<S: Socket> {
    stream: TokioIo<S>,
    reset: Arc<Reset>,
}

impl<S: Socket> Drop for Io<S> {
    fn drop(&mut self) {
        if self.reset.fired.load(Ordering::Acquire) {
            if let Err(e) =
                socket2::SockRef::from(self.stream.inner().tcp()).set_linger(Some(Duration::ZERO))
            {
                tracing::warn!("cannot set SO_LINGER=0, the reset will be a FIN: {e}");
            }
        }
    }
}

impl<S: Socket> Read for Io<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl<S: Socket> Write for Io<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }
}
