//! One logical request per arrival: herd's replica clients and the Rust peers.
//!
//! An arm is driven by one thread, or by a few when its rate is more than one thread can
//! send on time ([`PER_LANE`]): each such *lane* is a thread of its own ([`super::thread`])
//! with its own pacer, its own connections and every `lanes`-th arrival, as wrk splits its
//! connections over its threads. What the lanes share is what the arm has once: the
//! retrier (its budget is client-wide), the cap on connections in use, the backlog and the
//! tally. An arrival's id, and so its random stream, is its place in the whole schedule,
//! whichever lane sends it.
//!
//! A lane hands each arrival to a worker of its own ([`super::handoff`]) rather than
//! spawning a task for it: a worker carries out one logical request at a time and then
//! takes the next, so an arrival costs no allocation once the run has as many workers
//! as it has requests in flight.

use super::guarded::guarded;
use super::handoff::{Handoff, WorkerId};
use super::pace::{pace, Backlog, Place, Source};
use super::tally::{Finished, Tally};
use super::{arrivals, logical, thread, ArmRun, Call, Exec, Progress};
use crate::Stop;
use herd_scenario::{ArmSeed, Demand, LogicalRecord, Scenario, ServerCounts, Shard, Unit};
use std::io;
use std::sync::Arc;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// The arrival rate one lane is given at most by default. A lane spends about 14 µs of
/// CPU (user and system) per request on loopback, so one thread keeps up to ~70,000
/// req/s; 60,000 leaves it room to catch up after a stall. Measured in BENCHMARKS.md
/// ("The driver speaks HTTP/1.1 itself").
const PER_LANE: f64 = 60_000.0;

/// How many lanes an arm gets: `configured` (`[load] lanes`, `--lanes`) if set; else one
/// per [`PER_LANE`] of its `rate`, up to the machine's cores but one. A lane that fast
/// spins through the gaps between its arrivals (see `pace::SHORT`) and so holds a core:
/// lanes on every core leave the target on the same machine no idle CPU to be woken on,
/// and on two cores two lanes at 60,000 req/s fell behind where one kept up. A real
/// client in the arm (a peer) has one lane: its own pool serves it.
fn lanes(rate: f64, configured: Option<usize>, peer: bool, cores: usize) -> usize {
    if peer {
        return 1;
    }
    if let Some(n) = configured {
        return n.max(1);
    }
    by_rate(rate, cores)
}

/// The default lane count for `rate` on `cores` cores.
fn by_rate(rate: f64, cores: usize) -> usize {
    if !rate.is_finite() || rate <= PER_LANE {
        return 1;
    }
    ((rate / PER_LANE).ceil() as usize).clamp(1, cores.saturating_sub(1).max(1))
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
) -> io::Result<ArmRun> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let peer = matches!(exec, Exec::Peer(_));
    let lanes = lanes(scenario.load.rate, scenario.load.lanes, peer, cores);
    let tally = Tally::new(index, progress);
    let backlog = Backlog::new(scenario.load.backlog);
    let exec = Arc::new(exec);
    let mut running = Vec::with_capacity(lanes);
    for lane in 0..lanes {
        let plan = Lane {
            lane,
            lanes,
            schedule: arrivals(scenario)?,
            shard: scenario.load.shard,
            coalesce: scenario.load.coalesce,
            arm_seed: scenario.arm_seed(index),
            method: scenario.load.method,
            exec: exec.for_lane(lane, scenario.client.preconnect / lanes),
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
    let (hedging, breaker) = match &*exec {
        Exec::Replica { guard: Some(g), .. } => g.report(),
        _ => (None, None),
    };
    Ok(ArmRun {
        hedging,
        breaker,
        recorder,
        wall: epoch.elapsed(),
        lag,
        dropped: backlog.dropped(),
        policy,
        complete,
        command: None,
        counts: ServerCounts::new(),
        target: None,
        hops: Vec::new(),
    })
}

/// One lane of an arm: every `lanes`-th arrival from the `lane`-th.
struct Lane {
    lane: usize,
    lanes: usize,
    schedule: Demand,
    /// The run's shard: only its units are the lane's to send (see `herd_scenario::shard`).
    shard: Option<Shard>,
    /// How often at most the lane's thread wakes for arrivals (`[load] coalesce_us`).
    coalesce: std::time::Duration,
    arm_seed: ArmSeed,
    method: herd_retry::Method,
    exec: Arc<Exec>,
    tally: Tally,
    backlog: Arc<Backlog>,
    epoch: Instant,
}

impl Lane {
    /// Hands the lane's arrivals, each at its intended instant (or dropped there when the
    /// backlog is full), to its workers, and waits for them. False: `stop` fired.
    async fn run(self, stop: &Stop) -> io::Result<bool> {
        let Lane {
            lane,
            lanes,
            schedule,
            shard,
            coalesce,
            arm_seed,
            method,
            exec,
            tally,
            backlog,
            epoch,
        } = self;
        let handoff = Handoff::new();
        let work = Work {
            handoff: handoff.clone(),
            arm_seed,
            exec,
            tally,
            epoch,
        };
        // The shard's units, each with its place in the whole schedule (its request id and
        // jitter stream), then every `lanes`-th of them.
        let mine = move |(k, unit): &(u64, Unit)| shard.map_or(true, |s| s.owns(*k, unit, false));
        let mut arrivals: Mine = Box::new(
            (0u64..)
                .zip(schedule)
                .filter(mine)
                .skip(lane)
                .step_by(lanes),
        );
        let next = arrivals.next();
        let mut source = LaneSource {
            arrivals,
            next,
            method,
            backlog,
            handoff,
            work,
            workers: JoinSet::new(),
        };
        if source.next.is_none() {
            source.handoff.close();
        }
        let complete = pace(&mut source, stop, coalesce).await?;
        source.handoff.close();
        // Aborts whatever a stop left in flight.
        source.workers.shutdown().await;
        Ok(complete)
    }
}

/// A lane's share of the schedule.
type Mine = Box<dyn Iterator<Item = (u64, Unit)> + Send>;

/// A lane in the arrival loop: its arrivals are due at their instants; once the last is
/// handed out, its events are its workers finishing.
struct LaneSource {
    /// Every `lanes`-th arrival from the `lane`-th, with its place in the whole schedule.
    arrivals: Mine,
    /// The next arrival and its place in the whole schedule, not yet due.
    next: Option<(u64, Unit)>,
    method: herd_retry::Method,
    backlog: Arc<Backlog>,
    handoff: Arc<Handoff<Job>>,
    work: Work,
    /// The workers, so a stop can abort them (and the requests they hold).
    workers: JoinSet<()>,
}

impl Source for LaneSource {
    type Event = ();

    fn next_due(&self) -> Option<Instant> {
        self.next
            .as_ref()
            .map(|(_, unit)| self.work.epoch + unit.at())
    }

    fn is_done(&self) -> bool {
        self.next.is_none() && self.workers.is_empty()
    }

    fn due(&mut self) -> io::Result<()> {
        let Some((i, unit)) = self.next.take() else {
            return Ok(());
        };
        self.next = self.arrivals.next();
        if self.next.is_none() {
            self.handoff.close();
        }
        let Some(place) = self.backlog.admit() else {
            return Ok(());
        };
        let job = Job {
            i,
            at: unit.at(),
            call: Call::of(&unit, self.method),
            place,
        };
        if !self.handoff.give(job) {
            let me = self.handoff.enlist();
            self.workers.spawn(self.work.clone().serve(me));
        }
        Ok(())
    }

    async fn event(&mut self) {
        if self.next.is_some() {
            // The workers take jobs until the last arrival is handed out.
            return std::future::pending().await;
        }
        // A worker that panicked counts nothing more; the others go on.
        let _ = self.workers.join_next().await;
    }

    fn on_event(&mut self, (): ()) -> io::Result<()> {
        Ok(())
    }
}

/// One arrival, handed to a worker.
struct Job {
    i: u64,
    at: std::time::Duration,
    call: Call,
    place: Place,
}

/// What a worker needs to carry a job out and count it.
#[derive(Clone)]
struct Work {
    handoff: Arc<Handoff<Job>>,
    arm_seed: ArmSeed,
    exec: Arc<Exec>,
    tally: Tally,
    epoch: Instant,
}

impl Work {
    /// A worker: takes jobs until the lane has handed out its last.
    async fn serve(self, me: WorkerId) {
        while let Some(job) = self.handoff.take(me).await {
            self.carry_out(job).await;
        }
    }

    /// One logical request, from its first attempt to its count.
    async fn carry_out(&self, job: Job) {
        let Job { i, at, call, place } = job;
        let intended = self.epoch + at;
        let mut sent = None;
        let mut end = None;
        let (ok, attempts) = match &*self.exec {
            Exec::Replica {
                client,
                retrier,
                guard: None,
            } => {
                let rng = self.arm_seed.request(i);
                logical(client, retrier, self.epoch, &call, i, rng, &mut sent).await
            }
            Exec::Replica {
                client,
                retrier,
                guard: Some(g),
            } => {
                let rng = self.arm_seed.request(i);
                let e = guarded(client, retrier, g, self.epoch, &call, i, rng).await;
                (sent, end) = (e.sent, Some(e.at));
                (e.ok, e.attempts)
            }
            Exec::Peer(p) => {
                sent = Some(Instant::now());
                p.call(i, &call).await
            }
        };
        drop(place);
        let end = end.unwrap_or_else(Instant::now);
        self.tally.add(&Finished {
            record: LogicalRecord {
                intended: at,
                latency: end.saturating_duration_since(intended),
                ok,
                attempts,
            },
            lag: sent.map(|s| s.saturating_duration_since(intended)),
        });
    }
}

impl Exec {
    /// The arm's client for lane `lane`: the first lane's is the arm's own; the others
    /// get pools of their own, each with `cold` of the connections opened before the clock
    /// (see [`super::HttpClient::with_own_pool`]).
    fn for_lane(self: &Arc<Self>, lane: usize, cold: usize) -> Arc<Exec> {
        match &**self {
            Exec::Replica {
                client,
                retrier,
                guard,
            } if lane > 0 => Arc::new(Exec::Replica {
                client: Box::new(client.with_own_pool(cold)),
                retrier: retrier.clone(),
                guard: guard.clone(),
            }),
            _ => self.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{by_rate, lanes};

    #[test]
    fn lanes_follow_the_rate_and_leave_a_core() {
        assert_eq!(by_rate(1_000.0, 8), 1);
        assert_eq!(by_rate(60_000.0, 8), 1);
        assert_eq!(by_rate(60_001.0, 8), 2);
        assert_eq!(by_rate(250_000.0, 8), 5);
        assert_eq!(by_rate(1e9, 8), 7);
        assert_eq!(by_rate(1e9, 2), 1);
        assert_eq!(by_rate(1e9, 1), 1);
        assert_eq!(by_rate(f64::INFINITY, 8), 1);
    }

    #[test]
    fn configured_lanes_win_except_for_a_peer() {
        assert_eq!(lanes(1_000.0, Some(3), false, 2), 3);
        assert_eq!(lanes(1e9, None, false, 8), 7);
        assert_eq!(lanes(1e9, Some(3), true, 8), 1);
    }
}
