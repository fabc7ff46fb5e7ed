//! The open-loop driver: one loop, the arrival process as a value.
//!
//! For each arm: start its own upstream (same scenario, same seed, so arms can run at once
//! without mixing server counts), compute the arrival schedule from the seed, and at each
//! intended instant spawn the logical request. A logical request runs attempts through the
//! arm's [`herd_retry::Policy`] until it succeeds or gives up; its latency runs from the
//! *intended* send time, so a stalled upstream or a busy driver shows up as latency instead
//! of silently thinning the load (no coordinated omission). Finished requests go through a
//! channel into one [`Recorder`]; server counts come from the upstream itself.

mod attempt;
mod consumers;
mod external;
pub mod peers;

pub use attempt::HttpClient;
use peers::{Peer, PeerOptions};

use crate::upstream::Upstream;
use herd_retry::{Decision, Failure, Method, Outcome, Retrier};
use herd_scenario::{
    ArmClient, ArmReport, Demand, LogicalRecord, Recorder, Scenario, ServerCounts,
};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// What one arm's run produced.
pub struct ArmRun {
    /// The client side.
    pub recorder: Recorder,
    /// The server side, from the arm's upstream.
    pub counts: ServerCounts,
    /// Wall time of the arm, first arrival to last answer.
    pub wall: Duration,
    /// The largest delay between a request's intended send time and the moment the driver
    /// got to send it. Latency is measured from the intended time either way; a lag of more
    /// than a few ms means the machine could not keep up and the offered load came in
    /// bursts, which inflates the burst multiplier.
    pub max_lag: Duration,
    /// The arm's configuration in words: herd's strategy, or what the real client said.
    pub policy: String,
}

impl ArmRun {
    /// The arm's report entry.
    pub fn report(&self, scenario: &Scenario, index: usize) -> ArmReport {
        let arm = &scenario.arms[index];
        let mut r = self
            .recorder
            .finish(&arm.id, &self.policy, &self.counts, scenario);
        r.driver_lag_ms = Some((self.max_lag.as_secs_f64() * 1e4).round() / 10.0);
        r
    }
}

/// Progress callback: called with (arm index, logical requests done, failures so far).
pub type Progress = Arc<dyn Fn(usize, u64, u64) + Send + Sync>;

/// Runs arm `index` of `scenario` against a fresh in-process upstream on loopback.
pub async fn run_arm(
    scenario: &Scenario,
    index: usize,
    progress: Option<Progress>,
) -> io::Result<ArmRun> {
    let listen: SocketAddr = ([127, 0, 0, 1], 0).into();
    let upstream = Upstream::start(scenario.upstream.clone(), scenario.seed, listen).await?;
    let result = drive(scenario, index, &upstream, progress).await;
    let counts = upstream.counts();
    upstream.shutdown().await;
    let Driven {
        recorder,
        wall,
        max_lag,
        policy,
    } = result?;
    Ok(ArmRun {
        max_lag,
        policy,
        recorder,
        counts,
        wall,
    })
}

/// What [`drive`] produced.
pub struct Driven {
    /// The client side.
    pub recorder: Recorder,
    /// Wall time, from the epoch to the last answer.
    pub wall: Duration,
    /// See [`ArmRun::max_lag`].
    pub max_lag: Duration,
    /// See [`ArmRun::policy`].
    pub policy: String,
}

/// Who runs one logical request.
enum Exec {
    /// herd's driver and the arm's Retrier.
    Replica {
        client: Box<HttpClient>,
        retrier: Arc<Mutex<Retrier>>,
    },
    /// A real Rust client.
    Peer(Arc<Peer>),
}

/// Drives arm `index` against a running upstream whose epoch is the run's t = 0.
pub async fn drive(
    scenario: &Scenario,
    index: usize,
    upstream: &Upstream,
    progress: Option<Progress>,
) -> io::Result<Driven> {
    let url = format!("http://{}/", upstream.local_addr());
    let arm = &scenario.arms[index];
    let (exec, policy) = match &arm.client {
        ArmClient::External(client) => {
            return external::drive(scenario, index, upstream, client, &url, progress).await
        }
        ArmClient::Replica => {
            let uri: http::Uri = url.parse().map_err(io::Error::other)?;
            let client = HttpClient::new(
                uri,
                scenario.load.method,
                scenario.client.pool_max_connections,
                scenario.client.attempt_timeout,
            );
            let retrier = Arc::new(Mutex::new(Retrier::new(arm.strategy())));
            if let (Some(c), Some(rules)) = (&scenario.consumers, arm.consumers) {
                let parts = consumers::Parts {
                    client,
                    retrier,
                    rules,
                    count: c.count,
                    epoch: upstream.epoch(),
                    arm_seed: scenario.arm_seed(index),
                    policy: arm.strategy().to_string(),
                };
                return consumers::drive(scenario, index, parts, progress).await;
            }
            (
                Exec::Replica {
                    client: Box::new(client),
                    retrier,
                },
                arm.strategy().to_string(),
            )
        }
        ArmClient::Rust(kind) => {
            let opts = PeerOptions {
                url: url.clone(),
                method: http::Method::from_bytes(scenario.load.method.as_str().as_bytes())
                    .map_err(io::Error::other)?,
                pool: scenario.client.pool_max_connections,
                timeout: scenario.client.attempt_timeout,
            };
            let peer = Peer::new(*kind, opts).map_err(io::Error::other)?;
            (Exec::Peer(Arc::new(peer)), Peer::describe(*kind).to_owned())
        }
    };
    let exec = Arc::new(exec);
    let arm_seed = scenario.arm_seed(index);
    let method = scenario.load.method;
    let epoch = upstream.epoch();
    let (tx, aggregate) = aggregator(index, progress);
    let mut max_lag = Duration::ZERO;
    for (i, at) in arrivals(scenario)?.enumerate() {
        let intended = epoch + at;
        tokio::time::sleep_until(intended).await;
        max_lag = max_lag.max(intended.elapsed());
        let exec = exec.clone();
        let tx = tx.clone();
        let rng =
            Pcg64Mcg::seed_from_u64(arm_seed ^ (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
        tokio::spawn(async move {
            let (ok, attempts) = match &*exec {
                Exec::Replica { client, retrier } => {
                    logical(client, retrier, epoch, method, rng).await
                }
                Exec::Peer(p) => p.call().await,
            };
            let _ = tx.send(LogicalRecord {
                intended: at,
                latency: intended.elapsed(),
                ok,
                attempts,
            });
        });
    }
    drop(tx);
    let recorder = aggregate.await.map_err(io::Error::other)?;
    Ok(Driven {
        recorder,
        wall: epoch.elapsed(),
        max_lag,
        policy,
    })
}

/// The scenario's arrival schedule: the same for every arm and every kind of client
/// (generated from the seed, or streamed from a trace).
fn arrivals(scenario: &Scenario) -> io::Result<impl Iterator<Item = Duration>> {
    let demand = Demand::new(scenario).map_err(|e| io::Error::other(e.to_string()))?;
    Ok(demand.map(|u| u.at))
}

/// The one place finished logical requests go: a channel into the arm's [`Recorder`].
fn aggregator(
    index: usize,
    progress: Option<Progress>,
) -> (
    mpsc::UnboundedSender<LogicalRecord>,
    tokio::task::JoinHandle<Recorder>,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<LogicalRecord>();
    let handle = tokio::spawn(async move {
        let mut rec = Recorder::new();
        while let Some(r) = rx.recv().await {
            rec.record(&r);
            if let Some(p) = &progress {
                p(index, rec.len(), rec.failed());
            }
        }
        rec
    });
    (tx, handle)
}

/// One logical request: attempts until the arm's [`Retrier`] says stop. Returns
/// (succeeded, attempts). The retrier is shared by the arm's requests (its budget is
/// client-wide); its clock is time since the run's epoch.
async fn logical(
    client: &HttpClient,
    retrier: &Mutex<Retrier>,
    epoch: Instant,
    method: Method,
    mut rng: Pcg64Mcg,
) -> (bool, u32) {
    let now = || epoch.elapsed();
    let lock = || {
        retrier
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    };
    let mut req = lock().begin(now());
    let mut attempts = 0;
    loop {
        let (admitted, remaining) = {
            let mut r = lock();
            (
                r.admit(&req, now(), &mut rng),
                r.attempt_timeout(&req, now(), client.timeout()),
            )
        };
        let outcome = if admitted {
            attempts += 1;
            client.attempt_within(remaining).await
        } else {
            Outcome::Failed(Failure::Throttled)
        };
        let decision = lock().decide(&mut req, method, &outcome, now(), &mut rng);
        match decision {
            Decision::Success => return (true, attempts),
            Decision::Retry { after } => tokio::time::sleep_until(Instant::now() + after).await,
            Decision::GiveUp(_) => return (false, attempts),
        }
    }
}
