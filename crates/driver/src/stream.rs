//! One connection's bytes: plain TCP, or TLS over it when the front serves HTTPS
//! (`[upstream] tls`).
//!
//! An enum rather than a boxed trait object, so the plain path the driver's overhead was
//! measured on stays a direct call: the TLS arm costs one match per read or write.

use rustls::pki_types::ServerName;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// A connection's stream.
#[derive(Debug)]
pub(super) enum Stream {
    /// Plain HTTP.
    Plain(TcpStream),
    /// HTTPS (boxed: rustls's state is large and the plain arm should not carry its size).
    Tls(Box<TlsStream<TcpStream>>),
}

/// How the driver reaches an HTTPS front: the client configuration (trusting the front's
/// certificate) and the name to check it against.
#[derive(Clone)]
pub(super) struct Tls {
    connector: TlsConnector,
    name: ServerName<'static>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Tls {
    /// TLS with `config` to `host` (a name or an IP address, as in the URL).
    pub(super) fn new(config: Arc<rustls::ClientConfig>, host: &str) -> io::Result<Tls> {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let name = ServerName::try_from(host)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Ok(Tls {
            connector: TlsConnector::from(config),
            name,
        })
    }

    /// The TLS handshake over `tcp`.
    pub(super) async fn connect(&self, tcp: TcpStream) -> io::Result<Stream> {
        let s = self.connector.connect(self.name.clone(), tcp).await?;
        Ok(Stream::Tls(Box::new(s)))
    }
}

impl Stream {
    /// Whether the connection is idle and open: the server has neither closed it nor sent
    /// anything unasked. Costs no system call unless the socket was reported readable
    /// (tokio keeps its readiness). Over TLS the socket is peeked, not read, so a record
    /// the server sent (its `close_notify` before a close) is not taken from rustls.
    pub(super) fn idle_and_open(&mut self) -> bool {
        let would_block =
            |r: io::Result<usize>| matches!(r, Err(e) if e.kind() == io::ErrorKind::WouldBlock);
        match self {
            Stream::Plain(s) => {
                let mut probe = [0u8; 1];
                would_block(s.try_read(&mut probe))
            }
            Stream::Tls(s) => {
                let tcp = s.get_ref().0;
                would_block(tcp.try_io(Interest::READABLE, || {
                    let mut probe = [std::mem::MaybeUninit::<u8>::uninit(); 1];
                    socket2::SockRef::from(tcp).peek(&mut probe)
                }))
            }
        }
    }

    /// The TCP socket under the stream.
    #[cfg(test)]
    pub(super) fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref().0,
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
