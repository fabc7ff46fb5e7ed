//! Driving an arm's consumers on tokio: [`herd_retry::Consumers`] decides, one loop
//! carries it out, as the simulator does on its virtual clock.
//!
//! The consumers are a source of the driver's one arrival loop ([`super::pace`]), which
//! owns their state (no lock): it wakes for the next unit of the demand, the next
//! consumer timer, or a logical request that finished. A `Send` spawns a task
//! running the same [`super::logical`] as a plain arm (the arm's shared retrier, the
//! request's own seeded jitter); a `Cancel` aborts that task, which drops the request's
//! future mid-attempt or mid-backoff: its connection closes, its pool slot frees, its
//! backoff timer is gone. Timers live in an ordered map keyed by (due, sequence), so two
//! due at once fire in the order they were armed.
//!
//! A unit's request is `[load] method` to the client's URL even when a trace line gives a
//! method and path: the consumer layer re-sends units by consumer, not by trace line.
//!
//! A [`Stop`] ends the loop: it aborts every live request, like a
//! `Cancel` of each, and ends the arm with the units done so far (see the driver's docs).

use super::pace::{pace, Source};
use super::{logical, ArmRun, Call, HttpClient, Lag, Progress};
use crate::Stop;
use herd_retry::consumer::{Action, ConsumerRules, Consumers, Timer};
use herd_retry::Retrier;
use herd_scenario::ArmSeed;
use herd_scenario::{
    ConsumerTally, Demand, LogicalRecord, Recorder, Scenario, ServerCounts, Shard, Unit,
};
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::Instant;

/// What the loop needs besides the scenario.
pub(super) struct Parts {
    pub client: HttpClient,
    pub retrier: Arc<Mutex<Retrier>>,
    pub rules: ConsumerRules,
    pub count: u32,
    pub arm_seed: ArmSeed,
    pub policy: String,
}

/// The next unit of `demand` that arrives at one of the shard's consumers.
fn next_unit(demand: &mut Demand, shard: Option<Shard>) -> Option<Unit> {
    demand.find(|u| shard.map_or(true, |s| s.owns_consumer(u.consumer)))
}

/// Runs arm `index`'s consumers until every unit is done and no request is live, or until
/// `stop` fires.
pub(super) async fn drive(
    scenario: &Scenario,
    index: usize,
    p: Parts,
    epoch: Instant,
    progress: Option<Progress>,
    stop: &Stop,
) -> io::Result<ArmRun> {
    let mut demand = Demand::new(scenario).map_err(|e| io::Error::other(e.to_string()))?;
    let shard = scenario.load.shard;
    let pending = next_unit(&mut demand, shard);
    let (tx, finished) = mpsc::unbounded_channel::<(u64, bool)>();
    let mut run = Run {
        machine: Consumers::new(p.rules, p.count, scenario.load.requests),
        demand,
        shard,
        pending,
        tx,
        finished,
        tasks: HashMap::new(),
        timers: BTreeMap::new(),
        seq: 0,
        rec: Recorder::new(),
        actions: Vec::new(),
        lag: Lag::new(),
        epoch,
        call: Call::plain(scenario.load.method),
        index,
        progress,
        parts: p,
    };
    let mut rng = scenario.seeds().consumer_start();
    let now = run.now();
    run.machine.start(now.into(), &mut rng, &mut run.actions);
    run.carry_out();
    // Units and consumer timers come due on the pacer's microsecond clock, as a plain
    // arm's arrivals do: on tokio's millisecond timer each would start up to a
    // millisecond late.
    let complete = pace(&mut run, stop, scenario.load.coalesce).await?;
    if !complete {
        run.abort_all();
    }
    run.finish(complete)
}

impl Source for Run {
    type Event = Option<(u64, bool)>;

    /// The earlier of the next unit and the next timer.
    fn next_due(&self) -> Option<Instant> {
        let unit = self.pending.as_ref().map(Unit::at);
        let timer = self.timers.first_key_value().map(|((at, _), _)| *at);
        let at = match (timer, unit) {
            (Some(t), Some(u)) => t.min(u),
            (t, u) => t.or(u)?,
        };
        Some(self.epoch + at)
    }

    fn is_done(&self) -> bool {
        self.pending.is_none() && self.machine.is_idle()
    }

    /// A timer due no later than the next unit fires first.
    fn due(&mut self) -> io::Result<()> {
        let unit = self.pending.as_ref().map(Unit::at);
        let timer = self.timers.first_key_value().map(|((at, _), _)| *at);
        match (timer, unit) {
            (Some(t), Some(u)) if t <= u => self.on_timer(),
            (Some(_), None) => self.on_timer(),
            _ => self.on_unit(),
        }
        self.carry_out();
        Ok(())
    }

    async fn event(&mut self) -> Option<(u64, bool)> {
        self.finished.recv().await
    }

    fn on_event(&mut self, finished: Option<(u64, bool)>) -> io::Result<()> {
        // The loop holds a sender, so the channel never closes.
        if let Some((request, ok)) = finished {
            self.on_finished(request, ok);
            self.carry_out();
        }
        Ok(())
    }
}

/// The loop's state: the consumers' machine, the live requests and the armed timers.
struct Run {
    machine: Consumers,
    demand: Demand,
    /// The run's shard: only its consumers' units arrive (see `herd_scenario::shard`).
    shard: Option<Shard>,
    /// The next unit of the demand, not yet due.
    pending: Option<Unit>,
    /// Where a request's task says it finished.
    tx: mpsc::UnboundedSender<(u64, bool)>,
    finished: mpsc::UnboundedReceiver<(u64, bool)>,
    tasks: HashMap<u64, AbortHandle>,
    /// Keyed by (due, sequence): two due at once fire in the order they were armed.
    timers: BTreeMap<(Duration, u64), Timer>,
    seq: u64,
    rec: Recorder,
    /// What the machine asked for, carried out at the top of each turn.
    actions: Vec<Action>,
    /// Measured when the loop takes a unit in (the consumers decide what, if anything, to
    /// send for it).
    lag: Lag,
    epoch: Instant,
    /// Every request's: a unit's trace method and path stay at the consumer (its requests
    /// are the scenario's `[load] method` to `/`), as in the simulator.
    call: Call,
    index: usize,
    progress: Option<Progress>,
    parts: Parts,
}

impl Run {
    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// Carries out the machine's actions: spawn, abort, arm a timer, record a done unit.
    fn carry_out(&mut self) {
        let mut actions = std::mem::take(&mut self.actions);
        for a in actions.drain(..) {
            match a {
                Action::Send { request, .. } => self.send(request),
                Action::Cancel { request } => {
                    if let Some(t) = self.tasks.remove(&request) {
                        t.abort();
                    }
                }
                Action::Arm { at, timer } => {
                    self.seq += 1;
                    self.timers.insert((at.into(), self.seq), timer);
                }
                Action::Done { arrived, ok, .. } => {
                    let arrived = arrived.as_duration();
                    self.rec.record(&LogicalRecord {
                        intended: arrived,
                        latency: self.now().saturating_sub(arrived),
                        ok,
                        attempts: 0,
                    });
                    if let Some(f) = &self.progress {
                        f.done(self.index, self.rec.len(), self.rec.failed());
                    }
                }
            }
        }
        self.actions = actions;
    }

    /// Spawns logical request `request` on the arm's shared client and retrier.
    fn send(&mut self, request: u64) {
        let rng = self.parts.arm_seed.request(request);
        let (client, retrier, tx) = (
            self.parts.client.clone(),
            self.parts.retrier.clone(),
            self.tx.clone(),
        );
        let (epoch, call) = (self.epoch, self.call.clone());
        let task = tokio::spawn(async move {
            let (ok, _) = logical(&client, &retrier, epoch, &call, request, rng, &mut None).await;
            let _ = tx.send((request, ok));
        });
        self.tasks.insert(request, task.abort_handle());
    }

    /// A logical request's task finished.
    fn on_finished(&mut self, request: u64, ok: bool) {
        self.tasks.remove(&request);
        let now = self.now().into();
        self.machine.finished(request, ok, now, &mut self.actions);
    }

    /// The earliest timer is due; it fires at the instant it was armed for, as a unit
    /// arrives at its own (see [`Run::on_unit`]).
    fn on_timer(&mut self) {
        if let Some(((at, _), timer)) = self.timers.pop_first() {
            self.machine.fire(timer, at.into(), &mut self.actions);
        }
    }

    /// The next unit of the demand is due. It arrives at its intended instant, whenever
    /// the loop got to it: its latency and its consumer's timeout run from there, as in
    /// the simulator, so a late loop shows as lag and latency, never as a shorter wait.
    fn on_unit(&mut self) {
        if let Some(u) = self.pending.take() {
            self.lag.record(self.now().saturating_sub(u.at()));
            let at = u.at().into();
            self.machine.arrive(u.consumer, at, &mut self.actions);
        }
        self.pending = next_unit(&mut self.demand, self.shard);
    }

    /// A stop: every live request is aborted, mid-attempt or mid-backoff.
    fn abort_all(&mut self) {
        for (_, t) in self.tasks.drain() {
            t.abort();
        }
    }

    /// The arm's result: the units done, and what the consumers sent for them.
    fn finish(mut self, complete: bool) -> io::Result<ArmRun> {
        if let Some(e) = self.demand.take_error() {
            return Err(io::Error::other(format!(
                "the trace changed during the run: {e}"
            )));
        }
        let t = self.machine.tally();
        let attempts = self
            .parts
            .retrier
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .counters()
            .attempts;
        self.rec.set_consumers(ConsumerTally {
            logical_requests: t.sent,
            attempts,
            timeouts: t.timeouts,
            abandoned: t.abandoned,
        });
        Ok(ArmRun {
            hedging: None,
            breaker: None,
            recorder: self.rec,
            wall: self.epoch.elapsed(),
            lag: self.lag,
            dropped: 0,
            policy: self.parts.policy,
            complete,
            command: None,
            counts: ServerCounts::new(),
            target: None,
            hops: Vec::new(),
        })
    }
}
