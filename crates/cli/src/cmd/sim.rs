//! `herd sim`: every arm in the simulator, on threads, reported exactly as `herd bench`
//! reports (mode `sim`). The JSON carries no wall-clock figure, so the same scenario, seed
//! and flags give the same bytes; wall time and events/s go to stderr.
//!
//! SIGINT / SIGTERM stop it ([`crate::stop`]): an arm is one uninterruptible computation,
//! so the report (marked partial) has the arms finished by then, and the others, still
//! simulating on their threads, are left out and end with the process.

use super::emit::{check_out, emit, left_out, stop_note};
use super::prepare::prepare;
use crate::cli::SimArgs;
use crate::fail::Fail;
use crate::steal::StealClock;
use crate::stop::Signals;
use herd_driver::Stop;
use herd_scenario::{Report, Scenario};
use herd_sim::{simulate, SimRun};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub fn run(a: SimArgs) -> Result<ExitCode, Fail> {
    let p = prepare(&a.run)?;
    let s = p.scenario;
    check_out(&a.run)?;
    if let Some(arm) = s.arms.iter().find(|a| !a.client.is_replica()) {
        return Err(Fail::input(anyhow::anyhow!(
            "arm {} runs a real client, which only `herd bench` can drive; the simulator runs herd's own policies (pick replica arms with --arm)",
            arm.id
        )));
    }
    if let (Some(t), false) = (&s.upstream.target, a.run.quiet) {
        eprintln!(
            "note: the simulator does not reach target {}: it simulates the scenario's model upstream \
             (service_time, workers, queue_limit) with the same faults; `herd bench` forwards to it",
            t.url
        );
    }
    if let Some(n) = a.run.seeds {
        return super::seeds::run(&a.run, &s, n, super::seeds::Driver::Sim);
    }
    let quiet = a.run.quiet;
    let signals = Signals::install()?;
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
    let steal = StealClock::start();
    let runs = simulate_all(&s, &signals.stop());
    let wall = started.elapsed();
    if let Some(e) = runs.iter().flatten().find_map(|r| r.error.as_ref()) {
        return Err(Fail::run(anyhow::anyhow!(
            "the trace changed during the run: {e}"
        )));
    }
    let done: Vec<(usize, &SimRun)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.as_ref().map(|r| (i, r)))
        .collect();
    let arms = done.iter().map(|&(i, r)| r.report(&s, i)).collect();
    let recorders: Vec<_> = done.iter().map(|(_, r)| &r.recorder).collect();
    let mut report = Report::new("sim", &s.name, s.seed, s.load.rate, arms);
    if let Some(caught) = signals.caught() {
        let left_out = left_out(&s, runs.iter().map(Option::is_some));
        report = report.stopped(stop_note(caught, &s, &recorders, left_out));
    }
    emit(&a.run, &report, &s, &p.text, &recorders)?;
    if !quiet {
        let events: u64 = done.iter().map(|(_, r)| r.events).sum();
        let logical = s.load.requests * done.len() as u64;
        let secs = wall.as_secs_f64().max(1e-9);
        // The figure is the machine's as much as herd's: say when the host took some of it.
        let stolen = match steal.taken().filter(|d| !d.is_zero()) {
            Some(d) => format!(
                "; the machine's host took {} ms of its CPU meanwhile (steal)",
                d.as_millis()
            ),
            None => String::new(),
        };
        eprintln!(
            "wall time {:.2}s: {events} events ({:.2}M events/s), {:.2}M logical requests/s, {} thread(s){stolen}",
            secs,
            events as f64 / secs / 1e6,
            logical as f64 / secs / 1e6,
            threads(s.arms.len())
        );
    }
    Ok(signals.exit_code())
}

/// Threads to use: one per arm, at most one per core.
fn threads(arms: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    arms.clamp(1, cores.max(1))
}

/// How often the waiting thread looks at the stop.
const POLL: Duration = Duration::from_millis(50);

/// Simulates every arm, arms taken in turn by a few threads; results in scenario order.
/// Each arm is a pure function of the scenario, so the threading cannot change a byte.
/// When `stop` fires, returns at once with the arms finished so far (`None` for the rest):
/// no thread starts another arm, and the ones still simulating are not waited for.
pub(super) fn simulate_all(s: &Scenario, stop: &Stop) -> Vec<Option<SimRun>> {
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
