//! A call graph on real sockets (`[[hops]]`): one server per hop, each on a port of its
//! own, in front of the arm's `[upstream]`.
//!
//! Nothing here decides a fate, a capacity or a retry. A hop's server is herd's upstream
//! ([`herd_upstream`], with the hop's `server` settings and its own fault stream), made a
//! hop by [`Onward`]: its admitted work calls the next hop and is answered 200 or 503
//! with how that call went. The call is a [`HopClient`]: the same [`HttpClient`] and the
//! same retry loop ([`logical`]) as a replica arm's, under the hop's `client` strategy,
//! with a retrier of its own (a hop's budget is the hop's) and the hop's jitter streams
//! ([`ArmSeed::hop`]), numbered in the order its requests begin, as in the simulator's
//! chain.
//!
//! Every server of an arm's chain shares the run's epoch, so incidents and buckets are on
//! one clock. When the arm's last request is done, the run waits for each hop from the
//! edge down to have nothing left on its way to the next one (a call whose caller has
//! left still runs to its end, holding its worker, and what it sends below is load), and
//! only then reads the counts.

use super::{
    drain_forwards, front, logical, preconnect, prepare_or_stop, watch_server, ArmRun, Call,
    HttpClient, Progress, Stop,
};
use herd_retry::Retrier;
use herd_scenario::{ArmSeed, Scenario};
use herd_upstream::tls::FrontTls;
use herd_upstream::{Downstream, Onward, Options, Stats, UpstreamServer};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// A hop's client toward the next hop: one logical request per call.
struct HopClient {
    client: HttpClient,
    retrier: Mutex<Retrier>,
    /// The hop's jitter streams under this arm.
    seed: ArmSeed,
    /// Requests begun so far: the next one's number, its id on the wire and its stream.
    begun: AtomicU64,
    /// The run's t = 0, the retrier's clock.
    epoch: Instant,
    call: Call,
}

impl Downstream for HopClient {
    fn call(self: Arc<Self>) -> Pin<Box<dyn Future<Output = bool> + Send + 'static>> {
        Box::pin(async move {
            let n = self.begun.fetch_add(1, Ordering::Relaxed);
            let rng = self.seed.request(n);
            let (c, r) = (&self.client, &self.retrier);
            logical(c, r, self.epoch, &self.call, n, rng, &mut None)
                .await
                .0
        })
    }
}

/// [`super::run_arm`] for a scenario with hops: the arm's client calls the first hop.
pub(super) async fn run_arm(
    scenario: &Scenario,
    index: usize,
    progress: Option<Progress>,
    stop: Stop,
) -> io::Result<Option<ArmRun>> {
    let listen: SocketAddr = ([127, 0, 0, 1], 0).into();
    let bottom = UpstreamServer::bind(listen).await?;
    let mut hops = Vec::with_capacity(scenario.hops.len());
    for _ in &scenario.hops {
        hops.push(UpstreamServer::bind(listen).await?);
    }
    // `[upstream] tls`: the bottom serves HTTPS, and the last hop's client, which calls
    // it, trusts its certificate. The hops among themselves speak plain HTTP.
    let tls = match &scenario.upstream.tls {
        Some(spec) => Some(FrontTls::new(spec).map_err(io::Error::other)?),
        None => None,
    };
    // Each hop's client toward the server below it, its connections opened before the
    // clock as an arm's are.
    let mut clients = Vec::with_capacity(hops.len());
    for j in 0..hops.len() {
        let (below, trust) = match hops.get(j + 1) {
            Some(next) => (next.local_addr(), None),
            None => (bottom.local_addr(), tls.as_ref()),
        };
        let scheme = if trust.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{below}/");
        let uri: http::Uri = url.parse().map_err(io::Error::other)?;
        let trust = trust
            .map(FrontTls::client_config)
            .transpose()
            .map_err(io::Error::other)?;
        let c = &scenario.client;
        let client = HttpClient::with_tls(uri, c.pool_max_connections, c.attempt_timeout, trust)?;
        preconnect(&client, c.preconnect, &url).await?;
        clients.push(client);
    }
    let Some(first) = hops.first() else {
        return Err(io::Error::other("a call graph without hops"));
    };
    let url = format!("http://{}/", first.local_addr());
    let Some(ready) = prepare_or_stop(scenario, index, &url, None, None, &stop).await? else {
        return Ok(None);
    };
    let epoch = Instant::now();
    let options = Options {
        tls: tls.clone(),
        ..Options::default()
    };
    let upstream = bottom.serve_from(front(scenario, index), scenario.seed, options, epoch);
    let arm_seed = scenario.arm_seed(index);
    let servers: Vec<UpstreamServer> = (hops.into_iter().zip(clients).enumerate())
        .map(|(j, (bound, client))| {
            let hop = &scenario.hops[j];
            let next = Arc::new(HopClient {
                client,
                retrier: Mutex::new(Retrier::new(hop.client)),
                seed: arm_seed.hop(j),
                begun: AtomicU64::new(0),
                epoch,
                call: Call::plain(scenario.load.method),
            });
            let options = Options {
                onward: Some(Onward { hop: j, next }),
                ..Options::default()
            };
            bound.serve_from(hop.server.clone(), scenario.seed, options, epoch)
        })
        .collect();
    tracing::info!(arm = %scenario.arms[index].id, hops = servers.len(), "client ready; the clock starts");
    let ticker = progress
        .clone()
        .map(|p| watch_server(p, index, upstream.stats()));
    let result = ready.drive(scenario, index, epoch, progress, &stop).await;
    if let Some(t) = ticker {
        t.abort();
    }
    for s in &servers {
        settle(&s.stats(), &stop).await;
    }
    drain_forwards(&scenario.upstream, &upstream.stats()).await;
    let counts: Vec<_> = servers.iter().map(UpstreamServer::counts).collect();
    let bottom_counts = upstream.counts();
    let target = upstream.stats().target();
    for s in servers {
        s.shutdown().await;
    }
    upstream.shutdown().await;
    let mut run = result?;
    run.counts = bottom_counts;
    run.target = target;
    run.hops = counts;
    Ok(Some(run))
}

/// How often [`settle`] looks.
const SETTLE_TICK: Duration = Duration::from_millis(5);

/// Waits until the hop whose counts are `stats` has nothing on its way to the next hop,
/// or `stop` fires. Every call ends (a hop's client gives up within its policy's
/// attempts, each bounded by `[client] attempt_timeout_ms` or the service below).
async fn settle(stats: &Stats, stop: &Stop) {
    while stats.forwarding() > 0 && !stop.is_cancelled() {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(SETTLE_TICK) => {}
        }
    }
}
