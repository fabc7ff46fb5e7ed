//! `herd tune`: flags into a search space and limits, the search on a thread pool, then the
//! summary, `tune.json` and the `--out` files. Everything that can be refused is refused
//! before the first simulation (exit 2).

use crate::cli::TuneArgs;
use crate::fail::Fail;
use anyhow::anyhow;
use herd_scenario::load;
use herd_tune::{eval, search, Space, Tuned, Vary};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Instant;

pub fn run(a: TuneArgs) -> Result<(), Fail> {
    let loaded = load(&a.scenario).map_err(Fail::input)?;
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
    let tuned =
        Tuned::new(&loaded.scenario.name, &space, &seeds, &limits, &searched).map_err(Fail::run)?;
    emit(&a, &tuned)?;
    a.output.note(format_args!(
        "{} simulation(s) in {:.2}s{}",
        searched.runs,
        started.elapsed().as_secs_f64(),
        if searched.halving {
            " (successive halving: the grid was larger than --budget)"
        } else {
            ""
        }
    ));
    Ok(())
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
