//! Driving an arm's consumers on tokio: [`herd_retry::Consumers`] decides, one loop
//! carries it out, as the simulator does on its virtual clock.
//!
//! The loop owns the consumer state (no lock): it wakes for the next unit of the demand,
//! the next consumer timer, or a logical request that finished. A `Send` spawns a task
//! running the same [`super::logical`] as a plain arm (the arm's shared retrier, the
//! request's own seeded jitter); a `Cancel` aborts that task, which drops the request's
//! future mid-attempt or mid-backoff: its connection closes, its pool slot frees, its
//! backoff timer is gone. Timers live in an ordered map keyed by (due, sequence), so two
//! due at once fire in the order they were armed.

use super::{logical, Driven, HttpClient, Progress};
use herd_retry::consumer::{Action, ConsumerRules, Consumers, Timer};
use herd_retry::Retrier;
use herd_scenario::ArmSeed;
use herd_scenario::{ConsumerTally, Demand, LogicalRecord, Recorder, Scenario};
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::{sleep_until, Instant};

/// What the loop needs besides the scenario.
pub(super) struct Parts {
    pub client: HttpClient,
    pub retrier: Arc<Mutex<Retrier>>,
    pub rules: ConsumerRules,
    pub count: u32,
    pub arm_seed: ArmSeed,
    pub policy: String,
}

/// Runs arm `index`'s consumers until every unit is done and no request is live.
pub(super) async fn drive(
    scenario: &Scenario,
    index: usize,
    p: Parts,
    epoch: Instant,
    progress: Option<Progress>,
) -> io::Result<Driven> {
    let method = scenario.load.method;
    let now = || epoch.elapsed();
    let mut demand = Demand::new(scenario).map_err(|e| io::Error::other(e.to_string()))?;
    let mut pending = demand.next();
    let mut machine = Consumers::new(p.rules, p.count, scenario.load.requests);
    let (tx, mut finished) = mpsc::unbounded_channel::<(u64, bool)>();
    let mut tasks: HashMap<u64, AbortHandle> = HashMap::new();
    let mut timers: BTreeMap<(Duration, u64), Timer> = BTreeMap::new();
    let mut seq = 0u64;
    let mut rec = Recorder::new();
    let mut actions = Vec::new();
    let mut max_lag = Duration::ZERO;
    let mut rng = scenario.seeds().consumer_start();
    machine.start(now(), &mut rng, &mut actions);
    loop {
        for a in actions.drain(..) {
            match a {
                Action::Send { request, .. } => {
                    let rng = p.arm_seed.request(request);
                    let (client, retrier, tx) = (p.client.clone(), p.retrier.clone(), tx.clone());
                    let task = tokio::spawn(async move {
                        let (ok, _) = logical(&client, &retrier, epoch, method, request, rng).await;
                        let _ = tx.send((request, ok));
                    });
                    tasks.insert(request, task.abort_handle());
                }
                Action::Cancel { request } => {
                    if let Some(t) = tasks.remove(&request) {
                        t.abort();
                    }
                }
                Action::Arm { at, timer } => {
                    seq += 1;
                    timers.insert((at, seq), timer);
                }
                Action::Done { arrived, ok, .. } => {
                    rec.record(&LogicalRecord {
                        intended: arrived,
                        latency: now().saturating_sub(arrived),
                        ok,
                        attempts: 0,
                    });
                    if let Some(f) = &progress {
                        f.done(index, rec.len(), rec.failed());
                    }
                }
            }
        }
        let next_unit = pending.map(|u| epoch + u.at);
        if next_unit.is_none() && machine.is_idle() {
            break;
        }
        let next_timer = timers.first_key_value().map(|((at, _), _)| epoch + *at);
        let far = Instant::now() + Duration::from_secs(3600);
        tokio::select! {
            biased;
            Some((request, ok)) = finished.recv() => {
                tasks.remove(&request);
                machine.finished(request, ok, now(), &mut actions);
            }
            () = sleep_until(next_timer.unwrap_or(far)), if next_timer.is_some() => {
                if let Some((_, timer)) = timers.pop_first() {
                    machine.fire(timer, now(), &mut actions);
                }
            }
            () = sleep_until(next_unit.unwrap_or(far)), if next_unit.is_some() => {
                if let Some(u) = pending.take() {
                    max_lag = max_lag.max(now().saturating_sub(u.at));
                    machine.arrive(u.consumer, now(), &mut actions);
                }
                pending = demand.next();
            }
        }
    }
    if let Some(e) = demand.take_error() {
        return Err(io::Error::other(format!(
            "the trace changed during the run: {e}"
        )));
    }
    let t = machine.tally();
    let attempts = p
        .retrier
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .counters()
        .attempts;
    rec.set_consumers(ConsumerTally {
        logical_requests: t.sent,
        attempts,
        timeouts: t.timeouts,
        abandoned: t.abandoned,
    });
    Ok(Driven {
        recorder: rec,
        wall: epoch.elapsed(),
        max_lag,
        policy: p.policy,
    })
}
