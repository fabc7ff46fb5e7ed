//! `herd tune`: flags into a search space and limits, the search on a thread pool, then the
//! summary, `tune.json` and the `--out` files. Everything that can be refused is refused
//! before the first simulation (exit 2).

use crate::cli::TuneArgs;
use crate::fail::Fail;
use crate::flags::ratio;
use crate::output::write_out;
use anyhow::{anyhow, Context};
use herd_scenario::load;
use herd_tune::{eval, search, Limits, Space, Tuned, Vary};
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
    let limits = limits(&a)?;
    let space = Space::new(&loaded.text, &loaded.origin, varies, arms).map_err(Fail::input)?;
    if space.len() > 1_000_000 {
        return Err(Fail::input(anyhow!(
            "--vary: {} points is more than herd tune searches (1,000,000)",
            space.len()
        )));
    }
    if let Some(path) = &a.json {
        crate::output::check_writable(path).map_err(Fail::input)?;
    }
    if let Some(dir) = &a.out {
        herd_report::check_dir(dir)
            .with_context(|| format!("--out {}", dir.display()))
            .map_err(Fail::input)?;
    }
    let seeds = eval::seeds(loaded.scenario.seed, a.seeds as usize);
    let budget = usize::try_from(a.budget).unwrap_or(usize::MAX);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads.unwrap_or(0))
        .build()
        .map_err(Fail::run)?;
    let bar = progress(a.quiet, space.len() * seeds.len() * space.arms.len().max(1));
    if !a.quiet {
        eprintln!(
            "herd tune {}: {} point(s) × {} seed(s) × {} arm(s) in the simulator, {} thread(s)",
            loaded.scenario.name,
            space.len(),
            seeds.len(),
            space.arms.len(),
            pool.current_num_threads()
        );
    }
    let started = Instant::now();
    let tick = || bar.inc(1);
    let searched = pool
        .install(|| search::search(&space, &seeds, &limits, budget, &tick))
        .map_err(Fail::input)?;
    bar.finish_and_clear();
    let tuned =
        Tuned::new(&loaded.scenario.name, &space, &seeds, &limits, &searched).map_err(Fail::run)?;
    emit(&a, &tuned)?;
    if !a.quiet {
        eprintln!(
            "{} simulation(s) in {:.2}s{}",
            searched.runs,
            started.elapsed().as_secs_f64(),
            if searched.halving {
                " (successive halving: the grid was larger than --budget)"
            } else {
                ""
            }
        );
    }
    Ok(())
}

fn limits(a: &TuneArgs) -> Result<Limits, Fail> {
    let positive = |flag: &str, x: Option<f64>| match x {
        Some(v) if !(v.is_finite() && v > 0.0) => Err(Fail::input(anyhow!(
            "{flag} must be a positive number, got {v}"
        ))),
        _ => Ok(x),
    };
    Ok(Limits {
        hard_fail: a.max_hard_fail.as_deref().map(ratio).transpose()?,
        load: positive("--max-load", a.max_load)?,
        peak: positive("--max-peak", a.max_peak)?,
        burst: positive("--max-burst", a.max_burst)?,
        p99_ms: a.max_p99.as_deref().map(millis).transpose()?,
    })
}

/// `800ms`, `1.5s` or `800` (ms), as milliseconds.
fn millis(s: &str) -> Result<f64, Fail> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (t, 1.0)
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .map(|x| x * scale)
        .filter(|x| x.is_finite() && *x > 0.0)
        .ok_or_else(|| {
            Fail::input(anyhow!(
                "--max-p99 must be a positive duration (800ms, 1.5s, or milliseconds), got `{s}`"
            ))
        })
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
    let text = tuned.text();
    match a.json.as_deref() {
        Some(path) => {
            let mut json = serde_json::to_vec_pretty(&tuned.report).map_err(Fail::run)?;
            json.push(b'\n');
            write_out(path, &json).map_err(Fail::run)?;
            match (path, a.quiet) {
                (_, true) => {}
                ("-", false) => eprint!("{text}"),
                _ => print!("{text}"),
            }
        }
        None if a.quiet => {}
        None => print!("{text}"),
    }
    if let Some(dir) = &a.out {
        let files = tuned.files().map_err(|e| Fail::run(anyhow!(e)))?;
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(n, c)| (n.as_str(), c.as_str()))
            .collect();
        herd_report::write_files(dir, &refs).map_err(Fail::run)?;
        if !a.quiet {
            eprintln!("tune report written to {}", dir.join("tune.html").display());
            if tuned.recommended_scenario.is_some() {
                eprintln!(
                    "the recommended scenario written to {} (`herd bench` runs it)",
                    dir.join("tuned.toml").display()
                );
            }
        }
    }
    Ok(())
}
