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

pub use attempt::HttpClient;

use crate::upstream::Upstream;
use herd_retry::{Decision, Failure, Method, Outcome, Retrier};
use herd_scenario::{ArmReport, Arrivals, LogicalRecord, Recorder, Scenario, ServerCounts};
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
}

impl ArmRun {
    /// The arm's report entry.
    pub fn report(&self, scenario: &Scenario, index: usize) -> ArmReport {
        let arm = &scenario.arms[index];
        self.recorder.finish(
            &arm.id,
            &arm.policy.to_string(),
            &self.counts,
            scenario.load.rate,
        )
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
    let (recorder, wall, max_lag) = result?;
    Ok(ArmRun {
        max_lag,
        recorder,
        counts,
        wall,
    })
}

/// Drives arm `index` against a running upstream whose epoch is the run's t = 0.
pub async fn drive(
    scenario: &Scenario,
    index: usize,
    upstream: &Upstream,
    progress: Option<Progress>,
) -> io::Result<(Recorder, Duration, Duration)> {
    let uri: http::Uri = format!("http://{}/", upstream.local_addr())
        .parse()
        .map_err(io::Error::other)?;
    let client = HttpClient::new(
        uri,
        scenario.load.method,
        scenario.client.pool_max_connections,
        scenario.client.attempt_timeout,
    );
    let retrier = Arc::new(Mutex::new(Retrier::new(scenario.arms[index].strategy())));
    let arm_seed = scenario.arm_seed(index);
    let method = scenario.load.method;
    let epoch = upstream.epoch();
    let (tx, mut rx) = mpsc::unbounded_channel::<LogicalRecord>();
    let aggregate = tokio::spawn(async move {
        let mut rec = Recorder::new();
        while let Some(r) = rx.recv().await {
            rec.record(&r);
            if let Some(p) = &progress {
                p(index, rec.len(), rec.failed());
            }
        }
        rec
    });
    let arrivals = Arrivals::new(
        scenario.load.arrival,
        scenario.load.rate,
        scenario.load.requests,
        scenario.seed,
    );
    let mut max_lag = Duration::ZERO;
    for (i, at) in arrivals.enumerate() {
        let intended = epoch + at;
        tokio::time::sleep_until(intended).await;
        max_lag = max_lag.max(intended.elapsed());
        let client = client.clone();
        let retrier = retrier.clone();
        let tx = tx.clone();
        let rng =
            Pcg64Mcg::seed_from_u64(arm_seed ^ (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
        tokio::spawn(async move {
            let (ok, attempts) = logical(&client, &retrier, epoch, method, rng).await;
            let _ = tx.send(LogicalRecord {
                intended: at,
                latency: intended.elapsed(),
                ok,
                attempts,
            });
        });
    }
    drop(tx);
    let rec = aggregate.await.map_err(io::Error::other)?;
    Ok((rec, epoch.elapsed(), max_lag))
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
            (r.admit(&req, now(), &mut rng), r.remaining(&req, now()))
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
