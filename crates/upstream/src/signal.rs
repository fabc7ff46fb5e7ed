//! `herd upstream`: the server on its own, until the operator stops it.

use super::{run, Options, Stats};
use std::future::Future;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::time::Instant;

/// Serves `listen` until SIGINT or SIGTERM (Ctrl-C off Unix).
///
/// Prints `listening on http://ADDR` (`https://` with [`Options::tls`]) as the first stdout line, flushed, once the socket is
/// bound and the signal handlers are installed, so a script can wait for that line and
/// then connect. The epoch (t = 0 for incidents) is that moment.
pub async fn serve_until_signal(
    config: herd_scenario::Upstream,
    seed: u64,
    listen: SocketAddr,
    options: Options,
) -> io::Result<()> {
    // The same deep accept queue as a run's own upstream: shards that preconnect at once
    // would otherwise overflow tokio's default of 1024 and wait a second for a SYN resent.
    let super::Bound { listener, addr } = super::UpstreamServer::bind(listen).await?;
    let stop = stop_signal()?;
    let epoch = Instant::now();
    let scheme = if options.tls.is_some() {
        "https"
    } else {
        "http"
    };
    {
        let mut out = io::stdout().lock();
        writeln!(out, "listening on {scheme}://{addr}")?;
        out.flush()?;
    }
    run(
        listener,
        config,
        seed,
        epoch,
        Arc::new(Stats::new()),
        options,
        stop,
    )
    .await;
    Ok(())
}

/// Installs the handlers now (so a signal right after the banner is not missed) and
/// resolves on the first signal.
#[cfg(unix)]
fn stop_signal() -> io::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    })
}

/// Resolves on Ctrl-C.
#[cfg(not(unix))]
fn stop_signal() -> io::Result<impl Future<Output = ()>> {
    Ok(async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!("cannot listen for Ctrl-C: {e}");
            std::future::pending::<()>().await;
        }
    })
}
