//! Running points: every (point, seed, arm) is one simulation, run in parallel over the
//! cores and collected in a fixed order, so the output is the same whatever the thread
//! count.

use crate::error::TuneError;
use crate::space::{Point, Space};
use crate::spread::{Figure, Figures, Spread};
use herd_scenario::Scenario;
use rayon::prelude::*;

/// The five figures of one run, in [`Figure::ALL`] order.
pub type Sample = [f64; 5];

/// The scenario seeds a search runs: the scenario's own seed, then the next ones.
pub fn seeds(base: u64, n: usize) -> Vec<u64> {
    (0..n as u64).map(|k| base.wrapping_add(k)).collect()
}

/// The validated scenario of each point (in order).
pub fn scenarios(space: &Space, points: &[Point]) -> Result<Vec<Scenario>, TuneError> {
    points.iter().map(|p| space.scenario(p)).collect()
}

/// Runs every arm of each scenario on each seed. Returns, per scenario, per arm, one
/// sample per seed (in `seeds` order). `tick` is called after each simulation.
pub fn run(
    scenarios: &[&Scenario],
    seeds: &[u64],
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<Vec<Vec<Sample>>>, TuneError> {
    let jobs: Vec<(usize, usize, usize)> = scenarios
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            (0..seeds.len()).flat_map(move |k| (0..s.arms.len()).map(move |j| (i, k, j)))
        })
        .collect();
    let samples: Vec<Result<Sample, TuneError>> = jobs
        .par_iter()
        .map(|&(i, k, j)| {
            let mut s = scenarios[i].clone();
            s.seed = seeds[k];
            let run = herd_sim::simulate(&s, j);
            tick();
            if let Some(e) = &run.error {
                return Err(TuneError::Text(format!(
                    "the trace changed during the search: {e}"
                )));
            }
            let report = run.report(&s, j);
            Ok(Figure::ALL.map(|f| f.of(&report)))
        })
        .collect();
    let mut out: Vec<Vec<Vec<Sample>>> = scenarios
        .iter()
        .map(|s| vec![Vec::with_capacity(seeds.len()); s.arms.len()])
        .collect();
    for (&(i, _, j), sample) in jobs.iter().zip(samples) {
        out[i][j].push(sample?);
    }
    Ok(out)
}

/// The figures of one arm's samples.
pub fn figures(samples: &[Sample]) -> Figures {
    let spread = |n: usize| Spread::of(&samples.iter().map(|s| s[n]).collect::<Vec<_>>());
    Figures {
        seeds: samples.len(),
        load: spread(0),
        peak: spread(1),
        burst: spread(2),
        hard_fail: spread(3),
        p99_ms: spread(4),
    }
}
