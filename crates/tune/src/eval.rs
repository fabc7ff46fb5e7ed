//! Running points: every (point, seed, arm) is one simulation, run in parallel over the
//! cores by herd-sim's engine and collected in a fixed order, so the output is the same
//! whatever the thread count.

use crate::error::TuneError;
use crate::space::{Point, Space};
use crate::spread::{Figure, Figures, Spread};
use herd_scenario::Scenario;

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

/// Runs every arm of each scenario on each seed, on herd-sim's engine
/// ([`herd_sim::run_many`]). Returns, per scenario, per arm, one sample per seed (in
/// `seeds` order). `tick` is called after each simulation.
pub fn run(
    scenarios: &[&Scenario],
    seeds: &[u64],
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<Vec<Vec<Sample>>>, TuneError> {
    let seeded: Vec<Scenario> = scenarios
        .iter()
        .flat_map(|s| {
            seeds.iter().map(move |&seed| {
                let mut one = (*s).clone();
                one.seed = seed;
                one
            })
        })
        .collect();
    let samples = herd_sim::run_many(&seeded, |s, j, run| {
        tick();
        if let Some(e) = &run.error {
            return Err(TuneError::Text(format!(
                "the trace changed during the search: {e}"
            )));
        }
        let report = run.report(s, j);
        Ok(Figure::ALL.map(|f| f.of(&report)))
    });
    let mut out: Vec<Vec<Vec<Sample>>> = scenarios
        .iter()
        .map(|s| vec![Vec::with_capacity(seeds.len()); s.arms.len()])
        .collect();
    for (n, arms) in samples.into_iter().enumerate() {
        let i = n / seeds.len();
        for (j, sample) in arms.into_iter().enumerate() {
            out[i][j].push(sample?);
        }
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
