//! One logical request per arrival: herd's replica clients and the Rust peers.
//!
//! An arm is driven by one thread, or by a few when its rate is more than one thread can
//! send on time ([`PER_LANE`]): each such *lane* is a thread of its own ([`super::thread`])
//! with its own pacer, its own connections and every `lanes`-th arrival, as wrk splits its
//! connections over its threads. What the lanes share is what the arm has once: the
//! retrier (its budget is client-wide), the cap on connections in use, the backlog and the
//! tally. An arrival's id, and so its random stream, is its place in the whole schedule,
//! whichever lane sends it.

use super::pace::{Backlog, Pacer};
use super::tally::{Finished, Tally};
use super::{arrivals, logical, thread, Call, Driven, Exec, Progress};
use crate::Stop;
use herd_scenario::{ArmSeed, Demand, LogicalRecord, Scenario};
use std::io;
use std::sync::Arc;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// The arrival rate one lane is given at most: a thread spends ~20 µs of CPU (user and
/// system) per request on loopback, so at this rate it is busy under half the time and
/// sends on time.
const PER_LANE: f64 = 20_000.0;

/// How many lanes an arm at `rate` arrivals a second gets: one up to [`PER_LANE`], then
/// one more per [`PER_LANE`] up to the machine's cores. A real client in the arm (a peer)
/// has one lane: its own pool serves it.
fn lanes(rate: f64, exec: &Exec) -> usize {
    if matches!(exec, Exec::Peer(_)) || !rate.is_finite() || rate <= PER_LANE {
        return 1;
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    ((rate / PER_LANE).ceil() as usize).clamp(1, cores.max(1))
}

/// Drives arm `index` with `exec` until every arrival is done or `stop` fires (then the
/// ones in flight are aborted).
pub(super) async fn drive(
    scenario: &Scenario,
    index: usize,
    exec: Exec,
    policy: String,
    epoch: Instant,
    progress: Option<Progress>,
    stop: &Stop,
) -> io::Result<Driven> {
    let lanes = lanes(scenario.load.rate, &exec);
    let tally = Tally::new(index, progress);
    let backlog = Backlog::new(scenario.load.backlog);
    let exec = Arc::new(exec);
    let mut running = Vec::with_capacity(lanes);
    for lane in 0..lanes {
        let plan = Lane {
            lane,
            lanes,
            schedule: arrivals(scenario)?,
            arm_seed: scenario.arm_seed(index),
            method: scenario.load.method,
            exec: exec.for_lane(lane)?,
            tally: tally.clone(),
            backlog: backlog.clone(),
            epoch,
        };
        let stop = stop.clone();
        running.push(thread::on_own_thread(
            format!("herd-arm-{index}-{lane}"),
            move || async move { plan.run(&stop).await },
        )?);
    }
    let mut complete = true;
    let mut failed = None;
    for r in running {
        match r.await {
            Ok(c) => complete &= c,
            Err(e) => {
                failed.get_or_insert(e);
            }
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let (recorder, lag) = tally.take();
    Ok(Driven {
        recorder,
        wall: epoch.elapsed(),
        lag,
        dropped: backlog.dropped(),
        policy,
        complete,
        command: None,
    })
}

/// One lane of an arm: every `lanes`-th arrival from the `lane`-th.
struct Lane {
    lane: usize,
    lanes: usize,
    schedule: Demand,
    arm_seed: ArmSeed,
    method: herd_retry::Method,
    exec: Arc<Exec>,
    tally: Tally,
    backlog: Arc<Backlog>,
    epoch: Instant,
}

impl Lane {
    /// Sends the lane's arrivals, each as a task spawned at its intended instant (or
    /// dropped there when the backlog is full), and waits for them. False: `stop` fired.
    async fn run(self, stop: &Stop) -> io::Result<bool> {
        let Lane {
            lane,
            lanes,
            schedule,
            arm_seed,
            method,
            exec,
            tally,
            backlog,
            epoch,
        } = self;
        let mut pacer = Pacer::new()?;
        let start = epoch.into_std();
        // The requests in flight, so a stop can abort them; finished ones are reaped as
        // we go.
        let mut in_flight = JoinSet::new();
        let mut complete = true;
        let mine = (0u64..).zip(schedule).skip(lane).step_by(lanes);
        for (i, unit) in mine {
            tokio::select! {
                biased;
                () = stop.requested() => {
                    complete = false;
                    break;
                }
                r = pacer.until(start + unit.at) => r?,
            }
            while in_flight.try_join_next().is_some() {}
            let Some(place) = backlog.admit() else {
                continue;
            };
            let (exec, tally) = (exec.clone(), tally.clone());
            let rng = arm_seed.request(i);
            let call = Call::of(&unit, method);
            let at = unit.at;
            in_flight.spawn(async move {
                let intended = epoch + at;
                let mut sent = None;
                let (ok, attempts) = match &*exec {
                    Exec::Replica { client, retrier } => {
                        logical(client, retrier, epoch, &call, i, rng, &mut sent).await
                    }
                    Exec::Peer(p) => {
                        sent = Some(Instant::now());
                        p.call(i, &call).await
                    }
                };
                drop(place);
                tally.add(&Finished {
                    record: LogicalRecord {
                        intended: at,
                        latency: intended.elapsed(),
                        ok,
                        attempts,
                    },
                    lag: sent.map(|s| s.saturating_duration_since(intended)),
                });
            });
        }
        if complete {
            tokio::select! {
                biased;
                () = stop.requested() => complete = false,
                () = async { while in_flight.join_next().await.is_some() {} } => {}
            }
        }
        // Aborts whatever a stop left in flight.
        in_flight.shutdown().await;
        Ok(complete)
    }
}

impl Exec {
    /// The arm's client for lane `lane`: the first lane's is the arm's own; the others
    /// get pools of their own (see [`super::HttpClient::with_own_pool`]).
    fn for_lane(self: &Arc<Self>, lane: usize) -> io::Result<Arc<Exec>> {
        match &**self {
            Exec::Replica { client, retrier } if lane > 0 => Ok(Arc::new(Exec::Replica {
                client: Box::new(client.with_own_pool()?),
                retrier: retrier.clone(),
            })),
            _ => Ok(self.clone()),
        }
    }
}
