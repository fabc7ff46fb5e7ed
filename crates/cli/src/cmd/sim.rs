//! `herd sim`: every arm in the simulator, on threads, reported exactly as `herd bench`
//! reports (mode `sim`). The JSON carries no wall-clock figure, so the same scenario, seed
//! and flags give the same bytes; wall time and events/s go to stderr.

use super::emit::{check_out, emit};
use super::prepare::prepare;
use crate::cli::SimArgs;
use crate::fail::Fail;
use herd_scenario::{Report, Scenario};
use herd_sim::{simulate, SimRun};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

pub fn run(a: SimArgs) -> Result<(), Fail> {
    let p = prepare(&a.run)?;
    let s = p.scenario;
    check_out(&a.run)?;
    if let Some(arm) = s.arms.iter().find(|a| !a.client.is_replica()) {
        return Err(Fail::input(anyhow::anyhow!(
            "arm {} runs a real client, which only `herd bench` can drive; the simulator runs herd's own policies (pick replica arms with --arm)",
            arm.id
        )));
    }
    let quiet = a.run.quiet;
    if !quiet {
        eprintln!(
            "herd sim {}: {} arm(s), {} requests each at {} req/s",
            s.name,
            s.arms.len(),
            s.load.requests,
            s.load.rate
        );
    }
    let started = Instant::now();
    let runs = simulate_all(&s);
    let wall = started.elapsed();
    if let Some(e) = runs.iter().find_map(|r| r.error.as_ref()) {
        return Err(Fail::run(anyhow::anyhow!(
            "the trace changed during the run: {e}"
        )));
    }
    let arms = runs
        .iter()
        .enumerate()
        .map(|(i, r)| r.report(&s, i))
        .collect();
    let report = Report::new("sim", &s.name, s.seed, s.load.rate, arms);
    let recorders: Vec<_> = runs.iter().map(|r| &r.recorder).collect();
    emit(&a.run, &report, &s, &p.text, &recorders)?;
    if !quiet {
        let events: u64 = runs.iter().map(|r| r.events).sum();
        let logical = s.load.requests * s.arms.len() as u64;
        let secs = wall.as_secs_f64().max(1e-9);
        eprintln!(
            "wall time {:.2}s: {events} events ({:.2}M events/s), {:.2}M logical requests/s, {} thread(s)",
            secs,
            events as f64 / secs / 1e6,
            logical as f64 / secs / 1e6,
            threads(s.arms.len())
        );
    }
    Ok(())
}

/// Threads to use: one per arm, at most one per core.
fn threads(arms: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    arms.clamp(1, cores.max(1))
}

/// Simulates every arm, arms taken in turn by a few threads; results in scenario order.
/// Each arm is a pure function of the scenario, so the threading cannot change a byte.
fn simulate_all(s: &Scenario) -> Vec<SimRun> {
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, SimRun)>> = Mutex::new(Vec::with_capacity(s.arms.len()));
    std::thread::scope(|scope| {
        for _ in 0..threads(s.arms.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= s.arms.len() {
                    return;
                }
                let run = simulate(s, i);
                done.lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .push((i, run));
            });
        }
    });
    let mut done = done
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}
