//! The accept loop, shaped like mini-redis: serve until a `shutdown` future resolves, so a
//! test binds port 0, runs the server, and stops it without signals or sleeps.

use super::conn;
use super::handler::Shared;
use super::Stats;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// Pause after a failed `accept` (out of descriptors, say), so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// Serves `listener` until `shutdown` resolves, then stops accepting, drops every
/// connection (in-flight requests are abandoned) and returns.
///
/// `epoch` is t = 0 for incidents and buckets; `seed` seeds the fault RNG; `stats` is
/// filled as requests arrive and can be read meanwhile. [`UpstreamServer::start`](super::UpstreamServer::start)
/// is this in a spawned task.
pub async fn run(
    listener: TcpListener,
    config: herd_scenario::Upstream,
    seed: u64,
    epoch: Instant,
    stats: Arc<Stats>,
    shutdown: impl Future<Output = ()>,
) {
    // Never sent on: dropping the sender is the signal.
    let (closing, closed) = watch::channel(());
    let shared = Arc::new(Shared::new(config, seed, epoch, stats, closed));
    let mut conns = JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    conns.spawn(conn::serve(stream, shared.clone()));
                }
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
            // Reap finished connections so the set does not grow with every one ever served.
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    drop(listener);
    drop(closing);
    conns.shutdown().await;
}
