//! The accept loop, shaped like mini-redis: serve until a `shutdown` future resolves, so a
//! test binds port 0, runs the server, and stops it without signals or sleeps.
//!
//! # Out of file descriptors
//!
//! When `accept` fails with `EMFILE`, the connection stays in the kernel's backlog; the
//! loop pauses briefly (retrying at once would spin, as the listener stays readable) and
//! keeps serving the connections it has, so it recovers by itself as they close. The
//! operator gets one sentence with the limit and how to raise it, at most every
//! [`EXHAUSTION_REPEAT`] for the whole process (`herd bench` runs an upstream per arm), not
//! a line per failed accept.

use super::conn;
use super::loops::Loops;
use super::options::{Admin, Options};
use super::shared::Shared;
use super::Stats;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// Pause after a failed `accept` (out of descriptors, say), so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// Shortest time between two reports of descriptor exhaustion.
const EXHAUSTION_REPEAT: Duration = Duration::from_secs(10);

/// Serves `listener` until `shutdown` resolves, then stops accepting, drops every
/// connection (in-flight requests are abandoned) and returns.
///
/// `epoch` is t = 0 for incidents and buckets; `seed` seeds the fault RNG; `stats` is
/// filled as requests arrive and can be read meanwhile; `options` sets connection limits
/// and who may read the control endpoints (decided from the listener's address, see
/// [`Admin::for_listen`]) and where connections are served ([`Options::loops`]). [`UpstreamServer::start`](super::UpstreamServer::start) is this
/// in a spawned task.
pub async fn run(
    listener: TcpListener,
    config: herd_scenario::Upstream,
    seed: u64,
    epoch: Instant,
    stats: Arc<Stats>,
    options: Options,
    shutdown: impl Future<Output = ()>,
) {
    // Never sent on: dropping the sender is the signal.
    let (closing, closed) = watch::channel(());
    let admin = match listener.local_addr() {
        Ok(addr) => Admin::for_listen(addr, options.admin_token.clone()),
        Err(_) => Admin::for_listen(([0, 0, 0, 0], 0).into(), options.admin_token.clone()),
    };
    let http = Arc::new(conn::Http::new(&options, config.protocol));
    let shared = Shared::new(config, seed, epoch, stats, closed, admin);
    let shared = Arc::new(shared.onward(options.onward.clone(), seed));
    let mut conns = JoinSet::new();
    let mut loops = match options.loops {
        0 => None,
        n => match Loops::start(n) {
            Ok(loops) => Some(loops),
            Err(e) => {
                tracing::warn!("cannot start {n} event loops ({e}): serving on the runtime");
                None
            }
        },
    };
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    let (shared, http) = (shared.clone(), http.clone());
                    match &mut loops {
                        Some(loops) => loops.spawn(&mut conns, stream, move |stream| {
                            conn::serve(stream, shared, http)
                        }),
                        None => {
                            conns.spawn(conn::serve(stream, shared, http));
                        }
                    }
                }
                Err(e) => {
                    accept_failed(&e);
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
    if let Some(loops) = loops {
        loops.end().await;
    }
}

/// Reports a failed `accept`: descriptor exhaustion in one sentence, at most every
/// [`EXHAUSTION_REPEAT`] per process; anything else (a client gone before it was accepted)
/// quietly.
fn accept_failed(e: &std::io::Error) {
    static LAST: Mutex<Option<Instant>> = Mutex::new(None);
    let Some(sentence) = crate::fd_limit::note(e) else {
        tracing::debug!("accept failed: {e}");
        return;
    };
    let now = Instant::now();
    {
        let mut last = super::lock(&LAST);
        if last.is_some_and(|t| now < t + EXHAUSTION_REPEAT) {
            return;
        }
        *last = Some(now);
    }
    eprintln!("herd: upstream: {sentence}; serving the open connections meanwhile");
}
