//! `herd tune`: flags into a search space and limits, the search on a thread pool, then the
//! summary, `tune.json` and the `--out` files. Everything that can be refused is refused
//! before the first simulation (exit 2).
//!
//! A scenario with a target is tuned only when its model was calibrated to that target
//! (`[upstream] calibrated`, written by `herd calibrate`): the simulator searches the
//! model, never the service, and a model nobody fitted answers for a world that is not
//! the user's. After the search the best two points run on the target through herd's
//! counting front (the socket engine of `herd bench`), and the summary sets what was
//! measured beside what was predicted ([`herd_tune::verify`]); `--no-verify` skips that.

use crate::cli::TuneArgs;
use crate::fail::Fail;
use crate::stop::Signals;
use crate::{engine, socket, target};
use anyhow::anyhow;
use herd_scenario::{load, Scenario, Target};
use herd_tune::search::Searched;
use herd_tune::spread::Figure;
use herd_tune::verify::{self, Check, Verified};
use herd_tune::{eval, search, Limits, Space, Tuned, Vary};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Instant;

pub fn run(a: TuneArgs) -> Result<(), Fail> {
    let loaded = load(&a.scenario).map_err(Fail::input)?;
    if let Some(t) = &loaded.scenario.upstream.target {
        if t.calibrated.is_none() {
            return Err(Fail::input(anyhow!(
                "{} forwards to the target {} but its [upstream] model was not calibrated to it, \
                 so a tune would search a model that is not your service: run `herd calibrate {} \
                 --out DIR` and tune DIR/calibrated.toml",
                loaded.origin,
                t.url,
                a.scenario
            )));
        }
    }
    let varies = a
        .vary
        .iter()
        .map(|v| Vary::parse(v))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Fail::input)?;
    let tunes_an_arm = varies
        .iter()
        .any(|v| v.scope == herd_tune::vary::Scope::Arm);
    let arms = match (tunes_an_arm, a.arms.as_slice()) {
        (true, []) => vec![loaded
            .scenario
            .arms
            .first()
            .ok_or_else(|| Fail::input(anyhow!("the scenario has no arms")))?
            .id
            .clone()],
        (true, [one]) => vec![one.clone()],
        (true, _) => {
            return Err(Fail::input(anyhow!(
                "--arm: a tune searches one arm's keys; give one --arm (or vary only scenario keys to sweep several)"
            )))
        }
        (false, ids) => ids.to_vec(),
    };
    for arm in &loaded.scenario.arms {
        let chosen = arms.is_empty() || arms.contains(&arm.id);
        if chosen && !arm.client.is_replica() {
            return Err(Fail::input(herd_tune::TuneError::RealClient(
                arm.id.clone(),
            )));
        }
    }
    if a.seeds == 0 || a.seeds > 1000 {
        return Err(Fail::input(anyhow!(
            "--seeds must be between 1 and 1000, got {}",
            a.seeds
        )));
    }
    let limits = crate::flags::limits(&a.limits)?;
    let space = Space::new(&loaded.text, &loaded.origin, varies, arms).map_err(Fail::input)?;
    if space.len() > 1_000_000 {
        return Err(Fail::input(anyhow!(
            "--vary: {} points is more than herd tune searches (1,000,000)",
            space.len()
        )));
    }
    a.output.check()?;
    let seeds = eval::seeds(loaded.scenario.seed, a.seeds as usize);
    let budget = usize::try_from(a.budget).unwrap_or(usize::MAX);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads.unwrap_or(0))
        .build()
        .map_err(Fail::run)?;
    let bar = progress(
        a.output.quiet,
        space.len() * seeds.len() * space.arms.len().max(1),
    );
    a.output.note(format_args!(
        "herd tune {}: {} point(s) × {} seed(s) × {} arm(s) in the simulator, {} thread(s)",
        loaded.scenario.name,
        space.len(),
        seeds.len(),
        space.arms.len(),
        pool.current_num_threads()
    ));
    let started = Instant::now();
    let tick = || bar.inc(1);
    let searched = pool
        .install(|| search::search(&space, &seeds, &limits, budget, &tick))
        .map_err(Fail::input)?;
    bar.finish_and_clear();
    let mut tuned =
        Tuned::new(&loaded.scenario.name, &space, &seeds, &limits, &searched).map_err(Fail::run)?;
    let searching = started.elapsed();
    match &loaded.scenario.upstream.target {
        Some(t) if space.tunes_an_arm() && !a.no_verify => {
            let picks = verify::picks(&searched, seeds.len(), &limits, tuned.report.recommended);
            if tuned.report.recommended.is_none()
                && verify::all_same(&searched, seeds.len()).is_some()
            {
                a.output.note(format_args!(
                    "every point gave the same figures: nothing to verify on {}",
                    t.url
                ));
            } else if let Some(v) = on_target(&a, t, &space, &searched, &limits, &picks)? {
                tuned.verified(v);
            }
        }
        Some(t) if space.tunes_an_arm() => a.output.note(format_args!(
            "--no-verify: the recommendation was not run on {}; it is the calibrated model's",
            t.url
        )),
        _ => {}
    }
    emit(&a, &tuned)?;
    a.output.note(format_args!(
        "{} simulation(s) in {:.2}s{}",
        searched.runs,
        searching.as_secs_f64(),
        if searched.halving {
            " (successive halving: the grid was larger than --budget)"
        } else {
            ""
        }
    ));
    Ok(())
}

/// A verification run whose driver fell further behind its schedule than this (ms) is
/// run again, at most [`TRIES`] times in all.
const LAG_MS: f64 = 20.0;

/// Runs per point at most.
const TRIES: u32 = 3;

/// Runs each pick on the target, one after another with the target's settle pause
/// between them, and records predicted against measured. `None` when a signal stopped it.
fn on_target(
    a: &TuneArgs,
    t: &Target,
    space: &Space,
    searched: &Searched,
    limits: &Limits,
    picks: &[(usize, verify::Role)],
) -> Result<Option<Verified>, Fail> {
    let rt = engine::runtime()?;
    target::preflight(&rt, t)?;
    let signals = Signals::install()?;
    let stop = signals.stop();
    let mut checks = vec![];
    let mut run: Option<Scenario> = None;
    for (k, &(i, role)) in picks.iter().enumerate() {
        let point = &searched.outcomes[i].point;
        let mut s = space.scenario(point).map_err(Fail::run)?;
        s.arms.retain(|arm| space.arms.contains(&arm.id));
        target::apply(&mut s.upstream, None, None)?;
        a.output.note(format_args!(
            "verifying point {i} ({}: {}) on {}: {} requests at {} req/s through herd's front",
            role.word(),
            space.label(point),
            t.url,
            s.load.requests,
            herd_scenario::duration::show(s.load.rate)
        ));
        if k > 0 {
            std::thread::sleep(t.settle);
        }
        let mut tries = 1;
        let report = loop {
            let Some(mut reports) = socket::run(&rt, &s, &stop)? else {
                a.output.note(format_args!(
                    "verification stopped: the search's results are written without it"
                ));
                return Ok(None);
            };
            let r = reports.swap_remove(0);
            let lag = r.driver_lag_ms.map_or(0.0, |l| l.max);
            if lag <= LAG_MS || tries == TRIES {
                break r;
            }
            // Requests sent late went out bunched: that run measured the machine.
            tries += 1;
            a.output.note(format_args!(
                "the driver fell {lag:.0} ms behind its schedule (a busy machine); running point {i} again"
            ));
            std::thread::sleep(t.settle);
        };
        let measured = Figure::ALL.map(|f| f.of(&report));
        checks.push(Check::new(
            i,
            role,
            space.label(point),
            &searched.outcomes[i].figures(0),
            &measured,
            limits,
        ));
        run = Some(s);
    }
    let Some(s) = run else { return Ok(None) };
    Ok(Some(Verified {
        target: t.url.to_string(),
        requests: s.load.requests,
        rate: s.load.rate,
        points: checks,
    }))
}

fn progress(quiet: bool, total: usize) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {pos}/{len} simulations, {elapsed} elapsed")
    {
        bar.set_style(style);
    }
    bar
}

fn emit(a: &TuneArgs, tuned: &Tuned) -> Result<(), Fail> {
    a.output.write(&tuned.text(), &tuned.report)?;
    if let Some(dir) = a.output.dir() {
        let files = tuned.files().map_err(|e| Fail::run(anyhow!(e)))?;
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(n, c)| (n.as_str(), c.as_str()))
            .collect();
        herd_report::write_files(dir, &refs).map_err(Fail::run)?;
        a.output.note(format_args!(
            "tune report written to {}",
            dir.join("tune.html").display()
        ));
        if tuned.recommended_scenario.is_some() {
            a.output.note(format_args!(
                "the recommended scenario written to {} (`herd bench` runs it)",
                dir.join("tuned.toml").display()
            ));
        }
    }
    Ok(())
}
