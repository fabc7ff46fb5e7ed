//! # herd-upstream
//!
//! The fault-injecting upstream: a real HTTP/1.1 keep-alive server that does to each request
//! what the scenario's fault rules say, and counts everything that reaches its socket.
//! `herd bench` starts one for each arm; `herd upstream` serves one on its own, with the
//! scenario's model service or in front of a real one as a proxy, and `/metrics` to watch it.
//!
//! # Why a crate of its own
//!
//! It is a product of its own: a server that anything can be pointed at (curl, another load
//! tool, a comparison with nginx) and that needs neither herd's driver nor its clients. The
//! precise timers it holds and answers with ([`precise`]) and the open-file limit
//! ([`fd_limit`]) live here too, in the lowest of the socket crates; the driver uses both
//! from here.
//!
//! # Why a real server, and why it counts
//!
//! herd measures how much load a retry strategy puts on a struggling upstream. The honest
//! place to measure that is the upstream's own socket: a client library that silently
//! re-sends on a dead keep-alive connection, or a pool that opens extra connections, shows
//! up here and nowhere else. So every request head that hyper parses is counted as
//! `Received` before its fate is drawn, and every outcome is counted when it actually
//! happens (a reset when the RST is sent, a held 503 when the hold window ends).
//!
//! # What decides a request's fate
//!
//! Not this module: [`herd_scenario::Upstream::fate`] is the only copy of the fault rules,
//! shared with the simulator. This module only carries a fate out on a socket:
//!
//! - injected 503s and resets are answered in front of the workers, like a proxy would;
//! - a reset is a real TCP RST (`SO_LINGER = 0`, then close), so clients see
//!   `ECONNRESET`, not a polite FIN;
//! - held requests use no worker and all fail at the same instant, when their window ends;
//! - normal and stalled work need one of `workers` (0: unlimited), wait in a FIFO of at most
//!   `queue_limit`, and are shed (RST or 503, as configured) when both are full.
//!
//! Admitted work is carried out even if the client goes away (and queued work keeps its
//! place in line, see [`herd_scenario::capacity`]): a real server does not notice a closed
//! connection while it computes, and the wasted work of abandoned attempts is exactly the
//! load herd is there to measure. Only the answer is dropped, with the handler.
//!
//! # A hop of a call graph
//!
//! With [`Options::onward`] the server is one layer of a `[[hops]]` chain: the fault
//! rules, the rate limit and the capacity are the same, and admitted work, after its
//! service time and still on its worker, calls the next hop through a [`Downstream`] (the
//! hop's retrying client, which the driver supplies) and is answered 200 or 503 with how
//! that call went (see the `onward` module).
//!
//! # Control endpoints
//!
//! Paths under `/__herd/` are neither counted nor faulted. `GET /__herd/stats` answers a
//! [`StatsReport`] as JSON. `GET /metrics` (not counted either) serves the same totals and
//! gauges in the Prometheus text format, to watch a long run live. On a loopback address
//! they are open; elsewhere they need a bearer token or are off ([`Admin`]).
//!
//! # Hostile clients
//!
//! A head that is not HTTP gets `400`, one larger than [`Options::max_header_bytes`] gets
//! `431`, and one that does not arrive within [`Options::header_read_timeout`] (slowloris)
//! loses its connection; hyper does all three before a request is counted. Idle
//! connections cost a task and a small buffer each, and running out of file descriptors
//! pauses accepting without stopping the server (see [`run`]).

mod amz;
mod capacity;
mod conn;
pub mod fd_limit;
mod forward;
mod grpc;
mod handler;
mod job;
mod loops;
mod metrics;
mod onward;
mod options;
pub mod precise;
mod reply;
mod server;
mod shared;
mod signal;
mod stats;
pub mod tls;

pub use forward::{preflight, PreflightError};
pub use onward::{Downstream, Onward};
pub use options::{Admin, AdminToken, BadToken, Options};
pub use server::run;
pub use signal::serve_until_signal;
pub use stats::{Stats, StatsReport, TargetTotals, TimedBucket};

use herd_scenario::ServerCounts;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Connections the kernel completes for the listener before it accepts them (capped by
/// `net.core.somaxconn`, 4096 on current Linux). A bound upstream does not accept until it
/// serves, and a driver's preconnected connections (`[client] preconnect`) wait here
/// meanwhile; tokio's default of 1024 would leave the rest of a larger pool's handshakes
/// unanswered.
const ACCEPT_QUEUE: u32 = 4096;

/// A running upstream, serving in a task of its own.
///
/// Dropping the handle stops the server too (without waiting for it); call
/// [`UpstreamServer::shutdown`] to wait until every connection is closed.
#[derive(Debug)]
pub struct UpstreamServer {
    /// The bound address (the real port when asked for port 0).
    addr: SocketAddr,
    /// t = 0 for incidents and buckets.
    epoch: Instant,
    /// Shared with the serving task; read for snapshots.
    stats: Arc<Stats>,
    /// Firing (or dropping) it makes [`run`] return.
    stop: oneshot::Sender<()>,
    /// The task running [`run`].
    task: JoinHandle<()>,
}

/// A bound listening socket whose server has not started yet: connections wait in the
/// kernel's backlog, and the run's clock has not started.
///
/// It exists for arms whose client needs the URL before it is ready (a Node adapter takes
/// most of a second to start): the run's t = 0 must be the moment the client can send, or
/// the first arrivals are overdue and go out as one burst.
#[derive(Debug)]
pub struct Bound {
    listener: TcpListener,
    addr: SocketAddr,
}

impl Bound {
    /// The address the server will listen on (the real port when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Starts serving in a spawned task with the default [`Options`]. The run's epoch
    /// (t = 0 for incidents and buckets) is the moment of this call.
    pub fn serve(self, config: herd_scenario::Upstream, seed: u64) -> UpstreamServer {
        self.serve_with(config, seed, Options::default())
    }

    /// [`Bound::serve`] with connection limits and control-endpoint access of its own.
    pub fn serve_with(
        self,
        config: herd_scenario::Upstream,
        seed: u64,
        options: Options,
    ) -> UpstreamServer {
        self.serve_from(config, seed, options, Instant::now())
    }

    /// [`Bound::serve_with`] on a given epoch (t = 0), for servers that must share one: the
    /// hops of a call graph, whose incidents and buckets are all on the run's clock.
    pub fn serve_from(
        self,
        config: herd_scenario::Upstream,
        seed: u64,
        options: Options,
        epoch: Instant,
    ) -> UpstreamServer {
        let stats = Arc::new(Stats::new());
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown = async {
            // A dropped sender means the handle is gone: stop as well.
            let _ = stopped.await;
        };
        let task = tokio::spawn(run(
            self.listener,
            config,
            seed,
            epoch,
            stats.clone(),
            options,
            shutdown,
        ));
        UpstreamServer {
            addr: self.addr,
            epoch,
            stats,
            stop,
            task,
        }
    }
}

impl UpstreamServer {
    /// Binds `listen` (port 0 allowed) without serving yet; see [`Bound`].
    pub async fn bind(listen: SocketAddr) -> std::io::Result<Bound> {
        let socket = if listen.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        socket.bind(listen)?;
        let listener = socket.listen(ACCEPT_QUEUE)?;
        let addr = listener.local_addr()?;
        Ok(Bound { listener, addr })
    }

    /// Binds `listen` (port 0 allowed) and starts serving in a spawned task.
    ///
    /// The run's epoch (t = 0 for incidents and buckets) is the moment of this call.
    pub async fn start(
        config: herd_scenario::Upstream,
        seed: u64,
        listen: SocketAddr,
    ) -> std::io::Result<UpstreamServer> {
        Ok(Self::bind(listen).await?.serve(config, seed))
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The run's t = 0.
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// The live counts, shared with the serving task.
    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    /// A snapshot of the counts so far.
    pub fn counts(&self) -> ServerCounts {
        self.stats.counts()
    }

    /// A snapshot of counts and gauges, as `GET /__herd/stats` answers it.
    pub fn report(&self) -> StatsReport {
        self.stats.report()
    }

    /// Stops accepting, closes every connection and waits for the serving task.
    pub async fn shutdown(self) {
        let _ = self.stop.send(());
        if let Err(e) = self.task.await {
            tracing::warn!("upstream task ended badly: {e}");
        }
    }
}

/// Locks `m`, ignoring poisoning: a panic in one request must not stop the counting.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
