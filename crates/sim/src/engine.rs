//! Every arm of a scenario, or of many, on the machine's cores: the simulator's engine,
//! under `herd sim`, `herd sim --seeds` and `herd tune`.
//!
//! Each arm is a pure function of the scenario ([`simulate`]), so the threading cannot
//! change a byte: results come back in scenario order whatever ran first. Two shapes,
//! because the callers want different things: [`run_arms`] answers one scenario and gives
//! up waiting at once when a [`Stop`] fires (a command under a signal reports what
//! finished); [`run_many`] runs every arm of many scenarios (a search's points and seeds)
//! as one pool of jobs, so a point with one arm still keeps every core busy, and keeps
//! only what the caller makes of each run.

use crate::run::{simulate, SimRun};
use herd_scenario::Scenario;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

/// A request to stop simulating, shared by the caller and the threads: a flag, since an
/// arm is one uninterruptible computation and nothing waits on it asynchronously. Once
/// fired it stays fired. Not the socket driver's `CancellationToken`, on purpose: the
/// simulator depends on no async runtime.
#[derive(Clone, Debug, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// A stop that has not fired.
    pub fn new() -> Stop {
        Stop::default()
    }

    /// Fires the stop.
    pub fn fire(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the stop has fired.
    pub fn is_requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// How often the waiting thread looks at the stop.
const POLL: Duration = Duration::from_millis(50);

/// Threads [`run_arms`] uses for `arms` arms: one per arm, at most one per core.
pub fn threads(arms: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    arms.clamp(1, cores.max(1))
}

/// Simulates every arm of `s`, arms taken in turn by a few threads ([`threads`]); one
/// entry per arm, in scenario order. When `stop` fires, returns at once with the arms
/// finished so far (`None` for the rest): no thread starts another arm, and the ones still
/// simulating are not waited for.
///
/// # Panics
/// As [`simulate`]: if an arm of `s` runs a real client.
pub fn run_arms(s: &Scenario, stop: &Stop) -> Vec<Option<SimRun>> {
    let shared = Arc::new(s.clone());
    let next = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel::<(usize, SimRun)>();
    for _ in 0..threads(s.arms.len()) {
        let (s, next, tx, stop) = (shared.clone(), next.clone(), tx.clone(), stop.clone());
        std::thread::spawn(move || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= s.arms.len() || stop.is_requested() {
                return;
            }
            if tx.send((i, simulate(&s, i))).is_err() {
                return;
            }
        });
    }
    drop(tx);
    let mut done: Vec<Option<SimRun>> = (0..s.arms.len()).map(|_| None).collect();
    while !stop.is_requested() {
        match rx.recv_timeout(POLL) {
            Ok((i, run)) => done[i] = Some(run),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    while let Ok((i, run)) = rx.try_recv() {
        done[i] = Some(run);
    }
    done
}

/// Simulates every arm of every scenario in `scenarios`, all as one pool of jobs over the
/// cores, and returns `keep(scenario, arm, run)` per scenario, per arm, in order. `keep`
/// runs on the thread that simulated the arm, so a caller that needs only a few figures
/// does not hold every run's histograms.
///
/// # Panics
/// As [`simulate`]: if an arm of a scenario runs a real client.
pub fn run_many<T: Send>(
    scenarios: &[Scenario],
    keep: impl Fn(&Scenario, usize, SimRun) -> T + Sync,
) -> Vec<Vec<T>> {
    let jobs: Vec<(usize, usize)> = scenarios
        .iter()
        .enumerate()
        .flat_map(|(i, s)| (0..s.arms.len()).map(move |j| (i, j)))
        .collect();
    let kept: Vec<T> = jobs
        .par_iter()
        .map(|&(i, j)| {
            let s = &scenarios[i];
            keep(s, j, simulate(s, j))
        })
        .collect();
    let mut out: Vec<Vec<T>> = scenarios
        .iter()
        .map(|s| Vec::with_capacity(s.arms.len()))
        .collect();
    for (&(i, _), t) in jobs.iter().zip(kept) {
        out[i].push(t);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick() -> Scenario {
        let mut s = herd_scenario::load("seed-quick")
            .expect("embedded")
            .scenario;
        s.load.requests = 200;
        s
    }

    #[test]
    fn every_arm_in_scenario_order_as_one_arm_alone() {
        let s = quick();
        let runs = run_arms(&s, &Stop::new());
        assert_eq!(runs.len(), s.arms.len());
        for (i, r) in runs.iter().enumerate() {
            let r = r.as_ref().expect("ran");
            assert_eq!(r.report(&s, i), simulate(&s, i).report(&s, i));
        }
    }

    #[test]
    fn a_fired_stop_starts_nothing() {
        let s = quick();
        let stop = Stop::new();
        stop.fire();
        assert!(run_arms(&s, &stop).iter().all(Option::is_none));
    }

    #[test]
    fn many_keeps_each_scenarios_arms_in_order() {
        let (a, mut b) = (quick(), quick());
        b.seed += 1;
        let kept = run_many(&[a.clone(), b.clone()], |s, j, run| {
            (s.seed, j, run.recorder.len())
        });
        assert_eq!(kept.len(), 2);
        for (s, k) in [a, b].iter().zip(&kept) {
            assert_eq!(k.len(), s.arms.len());
            for (j, &(seed, arm, n)) in k.iter().enumerate() {
                assert_eq!((seed, arm, n), (s.seed, j, s.load.requests));
            }
        }
    }
}
