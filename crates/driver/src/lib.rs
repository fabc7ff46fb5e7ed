//! # herd-driver
//!
//! The open-loop driver: one loop, the arrival process as a value.
//!
//! Every kind of arm (a lane of herd's replica client or of a Rust peer, an arm's
//! consumers, a client in another program) leaves its requests from the same arrival
//! loop, on the same microsecond pacer and within the same backlog: the kinds differ only
//! in what is due at an instant and which events they wait for besides.
//!
//! `herd bench`'s engine: [`run_arms`] runs every arm of a scenario on a real socket, each
//! against its own [`herd_upstream`] server, with herd's own HTTP/1.1 client (replica
//! arms), the Rust libraries themselves ([`peers`]) or a client in another program
//! ([`herd_adapters`]).
//!
//! # Why a crate of its own
//!
//! It is where the socket crates meet, and nothing that only simulates should compile it:
//! the simulator and the tuner depend on neither tokio nor hyper, while this crate owns the
//! runtime side of a run (threads, pacer, pools, stops).
//!
//! For each arm: start its own upstream (same scenario, same seed, so arms can run at once
//! without mixing server counts), compute the arrival schedule from the seed, and at each
//! intended instant spawn the logical request. A logical request runs attempts through the
//! arm's [`herd_retry::Policy`] until it succeeds or gives up; its latency runs from the
//! *intended* send time, so a stalled upstream or a busy driver shows up as latency instead
//! of silently thinning the load (no coordinated omission). Finished requests are counted in
//! one tally (the arm's [`Recorder`]); server counts come from the upstream itself.
//!
//! # Stopping early
//!
//! Every arm's loop also waits on a [`Stop`]. When it fires, the arm sends nothing more:
//! logical requests still in flight are aborted at once (their futures dropped, which
//! closes their connections and cancels their backoff timers), with no grace period, and an
//! external adapter is ended ([`herd_adapters::ExternalArm::stop`]). What remains is a
//! *partial* arm ([`ArmRun::complete`] false): its client-side figures count only the
//! logical requests that had finished, while the upstream's counts include every attempt
//! it received until then, the cut requests' too. An arm stopped before its clock started
//! (still building its client or waiting for its adapter) did not run at all.

mod attempt;
mod chain;
mod consumers;
mod direct;
mod engine;
mod external;
mod guard;
mod guarded;
mod h2c;
mod handoff;
mod lag;
mod leg;
mod logical;
mod pace;
pub mod peers;
mod plain;
mod pool;
mod start;
mod stop;
mod stream;
mod tally;
mod thread;
mod wire;

pub use attempt::{Call, HttpClient};
pub use direct::Direct;
pub use engine::{rounds, run_arms, Partial, RunError, RunOptions};
pub use external::{arm_command, arm_command_trusting, shell_words};
pub use lag::Lag;
use peers::{Peer, PeerOptions};
pub use start::CommonStart;
pub use stop::{CancellationToken, Stop};
use tally::{Finished, Tally};

use herd_retry::Retrier;
use herd_scenario::{
    ArmClient, ArmFacts, ArmReport, BreakerReport, Demand, HedgingReport, Recorder, Scenario,
    ServerCounts, TargetCounts,
};
use herd_upstream::tls::FrontTls;
use herd_upstream::{Options, Stats, UpstreamServer};
use logical::logical;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// What one arm's run produced.
pub struct ArmRun {
    /// The client side.
    pub recorder: Recorder,
    /// The server side, from the arm's upstream: empty when the caller runs the server
    /// ([`drive_url`], `--direct`).
    pub counts: ServerCounts,
    /// Proxy mode: what the target answered the arm's front.
    pub target: Option<TargetCounts>,
    /// Wall time of the arm, first arrival to last answer.
    pub wall: Duration,
    /// Each request's delay from its intended send time to the moment the driver got it
    /// out (see [`herd_scenario::ArmReport::driver_lag_ms`]). Latency is measured from the
    /// intended time either way; a lag of more than a few ms means the machine could not
    /// keep up and the offered load came in bursts, which inflates the burst multiplier.
    pub lag: Lag,
    /// Arrivals dropped unsent because the backlog was full.
    pub dropped: u64,
    /// The arm's configuration in words: herd's strategy, or what the real client said.
    pub policy: String,
    /// False when a [`Stop`] cut the arm short: the recorder then holds only the logical
    /// requests that finished before it (see the module docs).
    pub complete: bool,
    /// A client in another program: the adapter's command line, as run.
    pub command: Option<Vec<String>>,
    /// Arms that hedge: what the hedging did.
    pub hedging: Option<HedgingReport>,
    /// Arms with a breaker: what the breaker did.
    pub breaker: Option<BreakerReport>,
    /// With `[[hops]]`: what each hop's server counted, from the edge down
    /// ([`ArmRun::counts`] is then the bottom's, `[upstream]`'s). Empty without hops.
    pub hops: Vec<ServerCounts>,
}

impl ArmRun {
    /// The arm's report entry.
    pub fn report(&self, scenario: &Scenario, index: usize) -> ArmReport {
        let facts = ArmFacts {
            policy: self.policy.clone(),
            driver_lag_ms: self.lag.summary(),
            driver_dropped: Some(self.dropped),
            command: self.command.clone(),
            target: self.target.as_ref(),
            hedging: self.hedging,
            breaker: self.breaker.clone(),
        };
        let id = &scenario.arms[index].id;
        let mut report = self.recorder.finish(id, &self.counts, scenario, facts);
        report.hops = (self.recorder).hop_reports(scenario, &self.hops, &self.counts);
        report
    }
}

/// What a run reports while it goes, for progress bars.
pub trait Watch: Send + Sync {
    /// Arm `arm` has finished `done` logical requests, `failed` of them failed.
    fn done(&self, arm: usize, done: u64, failed: u64);
    /// Arm `arm`'s upstream received `rps` requests per second over the last interval
    /// ([`SERVER_TICK`]), counted by the upstream.
    fn server(&self, arm: usize, rps: f64);
}

/// The progress sink the driver is given.
pub type Progress = Arc<dyn Watch>;

/// How often the server's request rate is reported to a [`Watch`].
pub const SERVER_TICK: Duration = Duration::from_millis(500);

/// Reports `upstream`'s received rate to `watch` every [`SERVER_TICK`] until aborted.
fn watch_server(watch: Progress, arm: usize, stats: Arc<Stats>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(SERVER_TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last = stats.received();
        loop {
            tick.tick().await;
            let now = stats.received();
            watch.server(arm, (now - last) as f64 / SERVER_TICK.as_secs_f64());
            last = now;
        }
    })
}

/// Runs arm `index` of `scenario` against a fresh in-process upstream on loopback, until
/// every logical request is done or `stop` fires.
///
/// The upstream's socket is bound first, so the arm's client can be built (or its adapter
/// started) with the URL; the server and the run's clock start only once the client is
/// ready to send, so a slow-starting adapter does not turn its first arrivals into a burst.
/// `None`: `stop` fired before that, and the arm did not run.
///
/// With `direct`, no upstream of herd's: the arm drives that URL, and its server counts
/// stay empty.
pub async fn run_arm(
    scenario: &Scenario,
    index: usize,
    direct: Option<&Direct>,
    start: Option<&CommonStart>,
    progress: Option<Progress>,
    stop: Stop,
) -> io::Result<Option<ArmRun>> {
    if let Some(d) = direct {
        return direct::run_arm(scenario, index, d, start, progress, stop).await;
    }
    if !scenario.hops.is_empty() {
        return chain::run_arm(scenario, index, progress, stop).await;
    }
    let listen: SocketAddr = ([127, 0, 0, 1], 0).into();
    let bound = UpstreamServer::bind(listen).await?;
    // `[upstream] tls`: the front serves HTTPS and the arm's client trusts its certificate
    // (a self-signed one is made for this arm; `tls` holds its file until the arm is done).
    let tls = match &scenario.upstream.tls {
        Some(spec) => Some(FrontTls::new(spec).map_err(io::Error::other)?),
        None => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let url = format!("{scheme}://{}/", bound.local_addr());
    let Some(ready) = prepare_or_stop(scenario, index, &url, tls.as_ref(), start, &stop).await?
    else {
        return Ok(None);
    };
    let options = Options {
        tls: tls.clone(),
        ..Options::default()
    };
    let upstream = bound.serve_with(front(scenario, index), scenario.seed, options);
    tracing::info!(arm = %scenario.arms[index].id, "client ready; the clock starts");
    let ticker = progress
        .clone()
        .map(|p| watch_server(p, index, upstream.stats()));
    let result = ready
        .drive(scenario, index, upstream.epoch(), progress, &stop)
        .await;
    if let Some(t) = ticker {
        t.abort();
    }
    drain_forwards(&scenario.upstream, &upstream.stats()).await;
    let counts = upstream.counts();
    let target = upstream.stats().target();
    upstream.shutdown().await;
    let mut run = result?;
    run.counts = counts;
    run.target = target;
    Ok(Some(run))
}

/// Proxy mode: waits until the front has nothing on its way to the target (a stalled
/// request whose client already gave up, say), so the counts read next hold every admitted
/// request with its answer. Bounded by the longest a forward can take: the stall, the
/// connect and the answer timeouts.
async fn drain_forwards(u: &herd_scenario::Upstream, stats: &Stats) {
    let Some(t) = &u.target else { return };
    let timeouts = t.connect_timeout.saturating_add(t.answer_timeout);
    // A stall slowed past what an instant can hold ends after any run: waiting for it
    // would never end, so only the target's own timeouts are waited for.
    let give_up = Instant::now()
        .checked_add(u.longest_stall().saturating_add(timeouts))
        .unwrap_or_else(|| Instant::now() + timeouts);
    while stats.forwarding() > 0 && Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Arm `index`'s upstream: the scenario's, with a target told which arm it serves (so the
/// service's logs can tell arms apart, see [`herd_scenario::target::ARM_HEADER`]).
fn front(scenario: &Scenario, index: usize) -> herd_scenario::Upstream {
    let mut u = scenario.upstream.clone();
    if let Some(t) = &mut u.target {
        t.arm = Some(scenario.arms[index].id.clone());
    }
    u
}

/// Runs arm `index` of `scenario` against a server the caller runs at `url`
/// (`http://HOST:PORT/`), from now until every logical request is done or `stop` fires:
/// the client side only (the server's counts are the caller's). `None`: `stop` fired
/// before the client was ready.
pub async fn drive_url(
    scenario: &Scenario,
    index: usize,
    url: &str,
    stop: Stop,
) -> io::Result<Option<ArmRun>> {
    drive_from_now(scenario, index, url, None, None, stop).await
}

/// [`drive_url`], reporting to `progress`.
async fn drive_from_now(
    scenario: &Scenario,
    index: usize,
    url: &str,
    start: Option<&CommonStart>,
    progress: Option<Progress>,
    stop: Stop,
) -> io::Result<Option<ArmRun>> {
    let Some(ready) = prepare_or_stop(scenario, index, url, None, start, &stop).await? else {
        return Ok(None);
    };
    tracing::info!(arm = %scenario.arms[index].id, %url, "client ready; the clock starts");
    ready
        .drive(scenario, index, Instant::now(), progress, &stop)
        .await
        .map(Some)
}

/// [`prepare`], then the wait for a shard's common `start` if it has one, unless `stop`
/// fires first (`None`). Dropping a half-prepared arm kills its adapter (see
/// `herd_adapters::ExternalArm`).
async fn prepare_or_stop(
    scenario: &Scenario,
    index: usize,
    url: &str,
    tls: Option<&FrontTls>,
    start: Option<&CommonStart>,
    stop: &Stop,
) -> io::Result<Option<Ready>> {
    let ready = tokio::select! {
        biased;
        () = stop.cancelled() => return Ok(None),
        ready = prepare(scenario, index, url, tls) => ready?,
    };
    match start {
        Some(at) if !at.wait(stop).await => Ok(None),
        _ => Ok(Some(ready)),
    }
}

/// Who runs one logical request.
enum Exec {
    /// herd's driver and the arm's Retrier (and its hedger and breaker, if it has them).
    Replica {
        client: Box<HttpClient>,
        retrier: Arc<Mutex<Retrier>>,
        guard: Option<Arc<guard::Guard>>,
    },
    /// A real Rust client.
    Peer(Arc<Peer>),
}

/// An arm whose client is built (or whose adapter has said hello), waiting for t = 0.
enum Ready {
    /// One logical request per arrival, by herd's driver or a Rust peer.
    Plain { exec: Exec, policy: String },
    /// The scenario's consumers, on herd's driver.
    Consumers(consumers::Parts),
    /// A real client in another program.
    External(external::Started),
}

/// Builds arm `index`'s client for `url` (an HTTPS front's with `tls`): everything that
/// may take time before the first request can go out.
async fn prepare(
    scenario: &Scenario,
    index: usize,
    url: &str,
    tls: Option<&FrontTls>,
) -> io::Result<Ready> {
    let arm = &scenario.arms[index];
    Ok(match &arm.client {
        ArmClient::External(_) | ArmClient::Command(_) => Ready::External(
            external::start(scenario, arm, url, tls.map(FrontTls::trust_file)).await?,
        ),
        ArmClient::Replica(strategy) => {
            let uri: http::Uri = url.parse().map_err(io::Error::other)?;
            let trust = tls
                .map(FrontTls::client_config)
                .transpose()
                .map_err(io::Error::other)?;
            let client = HttpClient::with_tls(
                uri.clone(),
                scenario.client.pool_max_connections,
                scenario.client.attempt_timeout,
                trust,
            )?
            .speaking(
                &uri,
                scenario.upstream.protocol,
                scenario.client.connections,
            )?;
            preconnect(&client, scenario.client.preconnect, url).await?;
            let retrier = Arc::new(Mutex::new(Retrier::new(*strategy)));
            match (&scenario.consumers, arm.consumers) {
                (Some(c), Some(rules)) => Ready::Consumers(consumers::Parts {
                    client,
                    retrier,
                    rules,
                    count: c.count,
                    arm_seed: scenario.arm_seed(index),
                    policy: strategy.to_string(),
                }),
                _ => Ready::Plain {
                    exec: Exec::Replica {
                        client: Box::new(client),
                        retrier,
                        guard: arm.is_guarded().then(|| {
                            Arc::new(guard::Guard::new(
                                arm.hedge,
                                arm.breaker,
                                scenario.arm_seed(index).breaker(),
                            ))
                        }),
                    },
                    policy: strategy.to_string(),
                },
            }
        }
        ArmClient::Rust(_) if tls.is_some() => {
            return Err(io::Error::other(format!(
                "arm {}: {}",
                arm.id, RUST_PEERS_PLAIN_ONLY
            )))
        }
        ArmClient::Rust(kind) => {
            let opts = PeerOptions {
                url: url.to_owned(),
                pool: scenario.client.pool_max_connections,
                timeout: scenario.client.attempt_timeout,
            };
            let peer = Peer::new(*kind, opts).map_err(io::Error::other)?;
            Ready::Plain {
                exec: Exec::Peer(Arc::new(peer)),
                policy: Peer::describe(*kind).to_owned(),
            }
        }
    })
}

/// Opens `warm` of `client`'s connections to `url` before the clock (`[client]
/// preconnect`); a failure names them.
async fn preconnect(client: &HttpClient, warm: usize, url: &str) -> io::Result<()> {
    client.preconnect(warm).await.map_err(|e| {
        // Out of descriptors keeps its code, for the sentence that says so.
        if herd_upstream::fd_limit::exhausted(&e).is_some() {
            return e;
        }
        io::Error::new(
            e.kind(),
            format!("opening the {warm} connections of [client] preconnect to {url}: {e}"),
        )
    })
}

/// Why a Rust peer arm cannot run against an HTTPS front (`herd bench` says so at start).
pub const RUST_PEERS_PLAIN_ONLY: &str =
    "herd's Rust peer clients (reqwest, tower, failsafe, backon) speak plain HTTP only in this \
     build; with [upstream] tls use a replica or a client in another program";

impl Ready {
    /// Drives the arm against a running upstream whose epoch is the run's t = 0.
    async fn drive(
        self,
        scenario: &Scenario,
        index: usize,
        epoch: Instant,
        progress: Option<Progress>,
        stop: &Stop,
    ) -> io::Result<ArmRun> {
        match self {
            Ready::Plain { exec, policy } => {
                plain::drive(scenario, index, exec, policy, epoch, progress, stop).await
            }
            Ready::Consumers(parts) => {
                consumers::drive(scenario, index, parts, epoch, progress, stop).await
            }
            Ready::External(started) => {
                external::drive(scenario, index, started, epoch, progress, stop).await
            }
        }
    }
}

/// The scenario's arrival schedule: the same for every arm and every kind of client
/// (generated from the seed, or streamed from a trace with each request's method and path).
fn arrivals(scenario: &Scenario) -> io::Result<Demand> {
    Demand::new(scenario).map_err(|e| io::Error::other(e.to_string()))
}
