//! One accepted connection: hyper serves it, and this task can kill it with a real RST.
//!
//! hyper owns the stream it serves, so there is no handle left to set `SO_LINGER` on when a
//! handler decides to reset. Hence the split at accept: the socket is duplicated, hyper gets
//! one descriptor and this task keeps the other as a [`socket2::Socket`]. When a handler
//! pulls the trigger, the task sets `SO_LINGER = 0` on its copy (the option belongs to the
//! socket, so it covers both descriptors) and drops the hyper connection and its copy; the
//! last close of a socket with zero linger makes the kernel send RST instead of FIN, and the
//! client reads `ECONNRESET` ("Connection reset by peer").

use super::handler::{self, Shared};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// Serves `stream` until the client closes it, hyper gives up on it, or a handler resets it.
pub(crate) async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let (stream, control) = match split(stream) {
        Ok(pair) => pair,
        Err(e) => {
            tracing::warn!("cannot take over accepted connection: {e}");
            return;
        }
    };
    let peer = stream.peer_addr().ok().map(|a| a.ip());
    let trigger = Arc::new(Notify::new());
    let service = {
        let trigger = trigger.clone();
        service_fn(move |req| handler::handle(shared.clone(), trigger.clone(), peer, req))
    };
    let conn = http1::Builder::new()
        .keep_alive(true)
        // No timer is configured, so say so rather than rely on hyper skipping its default.
        .header_read_timeout(None)
        .serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        biased;
        () = trigger.notified() => {
            if let Err(e) = control.set_linger(Some(Duration::ZERO)) {
                tracing::warn!("cannot set SO_LINGER=0, the reset will be a FIN: {e}");
            }
        }
        res = conn => {
            if let Err(e) = res {
                tracing::debug!("connection ended: {e}");
            }
        }
    }
    // The hyper connection is gone with the select; closing the last descriptor sends RST.
    drop(control);
}

/// Splits an accepted stream into the descriptor hyper serves and a control handle on the
/// same socket.
fn split(stream: TcpStream) -> io::Result<(TcpStream, socket2::Socket)> {
    stream.set_nodelay(true)?;
    let std = stream.into_std()?;
    let control = socket2::Socket::from(std.try_clone()?);
    std.set_nonblocking(true)?;
    Ok((TcpStream::from_std(std)?, control))
}
