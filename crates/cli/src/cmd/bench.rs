//! `herd bench`: every arm on a real socket, each with its own upstream and pool (with
//! `[[hops]]`, its own server per hop in front of it: herd-driver's `chain`).
//!
//! SIGINT / SIGTERM stop it early ([`crate::stop`]): the arms running then report what had
//! finished, arms not yet started are left out, and the report is marked partial.

use crate::adapters;
use crate::cli::BenchArgs;
use crate::emit::{emit, left_out};
use crate::engine::{assemble, reports, runtime};
use crate::fail::Fail;
use crate::prepare::prepare;
use crate::shards;
use crate::steal::StealClock;
use crate::stop::Signals;
use crate::target;
use anyhow::anyhow;
use herd_driver::{run_arms, Direct, Partial, Progress, RunError, RunOptions, Watch};
use herd_scenario::{ArmShard, Scenario, ServerScope, StopNote};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

pub fn run(a: BenchArgs) -> Result<ExitCode, Fail> {
    let p = prepare(&a.run)?;
    let mut s = p.scenario;
    let quiet = a.run.output.quiet;
    a.run.output.check()?;
    if let Some(n) = a.backlog {
        if n == 0 {
            return Err(Fail::input(anyhow!("--backlog must be at least 1")));
        }
        s.load.backlog = usize::try_from(n).unwrap_or(usize::MAX);
    }
    if let Some(n) = a.lanes {
        if n == 0 {
            return Err(Fail::input(anyhow!("--lanes must be at least 1")));
        }
        s.load.lanes = Some(usize::try_from(n).unwrap_or(usize::MAX));
    }
    if let Some(us) = a.coalesce_us {
        s.load.coalesce = herd_scenario::coalesce_of_us(us)
            .map_err(|e| Fail::input(anyhow!("--coalesce-us {e}")))?;
    }
    let sharding = shards::resolve(&a.shard)?;
    if let (Some(_), Some(h)) = (sharding, s.hops.first()) {
        return Err(Fail::input(anyhow!(
            "--shard: scenario `{}` has [[hops]] (hop {} first): a call graph's hops count the \
             whole run and do not merge; run it in one process",
            s.name,
            h.id
        )));
    }
    if let Some(sh) = sharding {
        if a.run.seeds.is_some() {
            return Err(Fail::input(anyhow!(
                "--seeds does not apply to a shard: merge the shards of one seed"
            )));
        }
        if s.consumers
            .as_ref()
            .is_some_and(|c| c.rules.think().is_some())
        {
            return Err(Fail::input(anyhow!(
                "--shard: scenario `{}` has closed-loop consumers (think_ms), whose units start as \
                 earlier ones finish: there is no schedule to split",
                s.name
            )));
        }
        s.load.shard = Some(sh.shard);
    }
    let direct = target::direct(&a)?;
    if let (Some(_), Some(h)) = (&direct, s.hops.first()) {
        return Err(Fail::input(anyhow!(
            "--direct: scenario `{}` has [[hops]] (hop {} first): the arms call the first hop, \
             which herd serves; drop --direct, or put the service behind [upstream] with --target",
            s.name,
            h.id
        )));
    }
    if direct.is_none() {
        target::apply(&mut s.upstream, a.target.clone(), a.settle)?;
        // Each arm's front builds its own; this reads and checks the files once, first.
        if target::front_tls(&s.upstream, true)?.is_some() {
            if let Some(arm) = s
                .arms
                .iter()
                .find(|arm| matches!(arm.client, herd_scenario::ArmClient::Rust(_)))
            {
                return Err(Fail::input(anyhow!(
                    "arm {}: {}",
                    arm.id,
                    herd_driver::RUST_PEERS_PLAIN_ONLY
                )));
            }
        }
        if let Some(t) = &s.upstream.target {
            if !quiet {
                eprintln!("{}", target::announce(&s, t));
            }
            target::preflight(&runtime()?, t)?;
        }
    }
    if let Some(n) = a.run.seeds {
        if direct.is_some() {
            return Err(Fail::input(anyhow!(
                "--seeds does not apply with --direct: compare one run against the other tool's"
            )));
        }
        let rt = runtime()?;
        let options = RunOptions {
            sequential: a.sequential,
            ..RunOptions::default()
        };
        return crate::seeds::run(&a.run, &s, n, "real", |one, signals| {
            let runs = rt
                .block_on(run_arms(one, &options, &signals.stop()))
                .map_err(Fail::run)?;
            Ok(reports(one, &runs))
        });
    }
    let signals = Signals::install()?;
    let start_at = sharding
        .and_then(|sh| sh.start_unix_ms)
        .map(|ms| shards::common_start(ms, quiet));
    if !quiet && s.upstream.target.is_none() {
        eprintln!(
            "herd bench {}: {} arm(s), {} requests each at {} req/s{}{}",
            s.name,
            s.arms.len(),
            s.load.requests,
            s.load.rate,
            match s.hops.len() {
                0 => String::new(),
                n => format!(", each through its own {n} hop(s) to its upstream"),
            },
            if a.sequential {
                ", one after another"
            } else if s.arms.iter().any(|arm| arm.client.is_external()) {
                ", herd's own at once, then each external client alone"
            } else {
                ", all at once"
            }
        );
    }
    let started = Instant::now();
    let bars = (!quiet && std::io::stderr().is_terminal()).then(|| Bars::new(&s));
    let progress = bars.as_ref().map(Bars::callback);
    let rt = runtime()?;
    adapters::preflight(&rt, &s)?;
    let steal = StealClock::start();
    let options = RunOptions {
        sequential: a.sequential,
        direct: direct.clone(),
        progress,
        start_at: start_at.clone(),
    };
    let (runs, out_of_files) = match rt.block_on(run_arms(&s, &options, &signals.stop())) {
        Ok(runs) => (runs, None),
        Err(RunError::OutOfFiles {
            sentence,
            partial: Some(Partial(runs)),
        }) => (runs, Some(sentence)),
        Err(e) => return Err(adapters::classify(e.into())),
    };
    if let Some(b) = &bars {
        b.finish();
    }
    if let Some(start) = &start_at {
        shards::warn_if_late(start);
    }
    // A shard offered 1/N of the rate: its own report's multipliers are against that.
    let shown = shards::own_share(&s);
    let (mut report, recorders) = assemble("real", &shown, &runs, signals.caught());
    if out_of_files.is_some() {
        report = report.stopped(StopNote {
            signal: "running out of file descriptors".to_owned(),
            after_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            finished: recorders.iter().map(|r| r.len()).sum(),
            planned: s.load.requests * s.arms.len() as u64,
            left_out: left_out(&s, runs.iter().map(Option::is_some)),
        });
    }
    report.target = s.upstream.target.as_ref().map(target::info);
    report.direct = direct.as_ref().map(Direct::to_string);
    report.steal_ms = steal
        .taken()
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    if let Some(sh) = sharding {
        let arms = runs
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.as_ref().map(|r| (i, r)))
            .map(|(i, r)| {
                let lag = Some(r.lag.histogram());
                ArmShard::of(
                    &s.arms[i].id,
                    &r.recorder,
                    &r.counts,
                    lag,
                    r.target.as_ref(),
                )
            })
            .collect();
        report.shard = Some(shards::section(sh, ServerScope::Own, &s, &p.text, arms));
        shards::announce(&report, sh, quiet);
    }
    emit(&a.run.output, &report, &shown, &p.text, &recorders)?;
    let mut dropped = false;
    for (i, r) in runs.iter().enumerate() {
        let Some(r) = r else { continue };
        let lag = r.lag.max();
        if lag.as_millis() >= 20 && !quiet {
            let stolen = match report.steal_ms.filter(|&ms| ms > 0) {
                Some(ms) => format!("; its host took {ms} ms of CPU from this machine meanwhile"),
                None => String::new(),
            };
            eprintln!(
                "warning: arm {}: the driver fell up to {} ms behind schedule (machine too busy?{stolen}); \
                 requests then went out in bunches, which inflates burst and peak multipliers",
                s.arms[i].id,
                lag.as_millis()
            );
        }
        if r.dropped > 0 {
            dropped = true;
            eprintln!(
                "warning: arm {}: the driver dropped {} arrival(s) unsent: {} logical requests were \
                 already in flight or waiting (the backlog, `[load] backlog` / --backlog), so the \
                 target could not keep up with the offered load; the run failed",
                s.arms[i].id, r.dropped, s.load.backlog
            );
        }
    }
    if !quiet {
        eprintln!("wall time {:.1}s", started.elapsed().as_secs_f64());
    }
    // Out of descriptors: the partial report is out, then the sentence and exit 1.
    if let Some(sentence) = out_of_files {
        eprintln!("herd: {sentence}");
        return Ok(ExitCode::from(1));
    }
    if dropped && signals.caught().is_none() {
        return Ok(ExitCode::from(1));
    }
    Ok(signals.exit_code())
}

/// One progress bar per arm, on stderr; only built when stderr is a terminal. Each shows
/// the arm's finished and failed logical requests and the rate its upstream is receiving
/// now, so a retry storm is visible while it happens.
struct Bars {
    multi: MultiProgress,
    arms: Arc<Vec<BarState>>,
}

/// One arm's bar and the figures its message is made of.
struct BarState {
    bar: ProgressBar,
    failed: AtomicU64,
    /// Server requests per second, as f64 bits.
    rps: AtomicU64,
}

impl BarState {
    fn redraw(&self) {
        let rps = f64::from_bits(self.rps.load(Ordering::Relaxed));
        self.bar.set_message(format!(
            "{} failed, server {rps:.0} req/s",
            self.failed.load(Ordering::Relaxed)
        ));
    }
}

impl Bars {
    fn new(s: &Scenario) -> Self {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let width = s.arms.iter().map(|a| a.id.len()).max().unwrap_or(0);
        let style = ProgressStyle::with_template(&format!(
            "{{prefix:>{width}}} [{{bar:30}}] {{pos:>6}}/{{len}} done, {{msg}} ({{elapsed}})"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        let arms = s
            .arms
            .iter()
            .map(|arm| {
                let bar = multi.add(ProgressBar::new(s.load.requests));
                bar.set_style(style.clone());
                bar.set_prefix(arm.id.clone());
                let st = BarState {
                    bar,
                    failed: AtomicU64::new(0),
                    rps: AtomicU64::new(0f64.to_bits()),
                };
                st.redraw();
                st
            })
            .collect();
        Bars {
            multi,
            arms: Arc::new(arms),
        }
    }

    /// The driver's progress sink.
    fn callback(&self) -> Progress {
        Arc::new(BarWatch(self.arms.clone()))
    }

    fn finish(&self) {
        for a in self.arms.iter() {
            a.bar.finish();
        }
        let _ = self.multi.clear();
    }
}

struct BarWatch(Arc<Vec<BarState>>);

impl Watch for BarWatch {
    fn done(&self, arm: usize, done: u64, failed: u64) {
        if let Some(a) = self.0.get(arm) {
            a.bar.set_position(done);
            a.failed.store(failed, Ordering::Relaxed);
            a.redraw();
        }
    }

    fn server(&self, arm: usize, rps: f64) {
        if let Some(a) = self.0.get(arm) {
            a.rps.store(rps.to_bits(), Ordering::Relaxed);
            a.redraw();
        }
    }
}
