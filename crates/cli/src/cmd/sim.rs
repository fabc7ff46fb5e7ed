//! `herd sim`: every arm in the simulator, on threads, reported exactly as `herd bench`
//! reports (mode `sim`). The JSON carries no wall-clock figure, so the same scenario, seed
//! and flags give the same bytes; wall time and events/s go to stderr.
//!
//! SIGINT / SIGTERM stop it ([`crate::stop`]): an arm is one uninterruptible computation,
//! so the report (marked partial) has the arms finished by then, and the others, still
//! simulating on their threads, are left out and end with the process.

use crate::cli::SimArgs;
use crate::emit::emit;
use crate::engine::{assemble, reports};
use crate::fail::Fail;
use crate::prepare::prepare;
use crate::shards;
use crate::steal::StealClock;
use crate::stop::Signals;
use herd_scenario::{ArmShard, ServerScope};
use herd_sim::engine::threads;
use std::process::ExitCode;
use std::time::Instant;

pub fn run(a: SimArgs) -> Result<ExitCode, Fail> {
    let p = prepare(&a.run)?;
    let mut s = p.scenario;
    a.run.output.check()?;
    let sharding = shards::resolve(&a.shard)?;
    if let Some(sh) = sharding {
        if a.run.seeds.is_some() {
            return Err(Fail::input(anyhow::anyhow!(
                "--seeds does not apply to a shard: merge the shards of one seed"
            )));
        }
        s.load.shard = Some(sh.shard);
    }
    if let Some(arm) = s.arms.iter().find(|a| !a.client.is_replica()) {
        return Err(Fail::input(anyhow::anyhow!(
            "arm {} runs a real client, which only `herd bench` can drive; the simulator runs herd's own policies (pick replica arms with --arm)",
            arm.id
        )));
    }
    if let (Some(t), false) = (&s.upstream.target, a.run.output.quiet) {
        eprintln!(
            "note: the simulator does not reach target {}: it simulates the scenario's model upstream \
             (service_time, workers, queue_limit) with the same faults; `herd bench` forwards to it",
            t.url
        );
    }
    if let Some(n) = a.run.seeds {
        return crate::seeds::run(&a.run, &s, n, "sim", |one, signals| {
            Ok(reports(one, &herd_sim::run_arms(one, &signals.sim_stop())))
        });
    }
    let quiet = a.run.output.quiet;
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
    let runs = herd_sim::run_arms(&s, &signals.sim_stop());
    let wall = started.elapsed();
    if let Some(e) = runs.iter().flatten().find_map(|r| r.error.as_ref()) {
        return Err(Fail::run(anyhow::anyhow!(
            "the trace changed during the run: {e}"
        )));
    }
    let (mut report, recorders) = assemble("sim", &s, &runs, signals.caught());
    if let Some(sh) = sharding {
        // The shard simulated the whole run, so its arms are the whole run's; the section
        // holds its own units' part, and the server's view, which is the whole run's.
        let arms = runs
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.as_ref().map(|r| (i, r)))
            .map(|(i, r)| {
                let own = r.shard_recorder.as_ref().unwrap_or(&r.recorder);
                ArmShard::of(&s.arms[i].id, own, &r.counts, None, None)
            })
            .collect();
        report.shard = Some(shards::section(sh, ServerScope::Whole, &s, &p.text, arms));
        shards::announce(&report, sh, quiet);
    }
    emit(&a.run.output, &report, &s, &p.text, &recorders)?;
    if !quiet {
        let events: u64 = runs.iter().flatten().map(|r| r.events).sum();
        let logical = s.load.requests * recorders.len() as u64;
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
