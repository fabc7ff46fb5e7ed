//! Which points to run on how many seeds, and what the results say: the Pareto front and
//! the recommendation under the user's limits.
//!
//! A small grid runs every point on every seed. A large one (more simulations than the
//! budget) is searched by successive halving: every point on one seed, then the better half
//! on twice the seeds, and so on until the survivors have every seed. "Better" is the same
//! order the recommendation uses (fewest broken limits on any seed, then lowest median
//! load), so halving keeps the points that could be recommended and drops the ones that
//! clearly cannot; the dropped ones stay in the output with the seeds they ran.

use crate::error::TuneError;
use crate::eval::{self, Sample};
use crate::space::{Point, Space};
use crate::spread::{Figure, Figures};
use serde::Serialize;
use std::cmp::Ordering;

/// Upper limits on figures; a point meets them when its worst seed does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Limits {
    /// `--max-hard-fail`, a ratio.
    pub hard_fail: Option<f64>,
    /// `--max-load`.
    pub load: Option<f64>,
    /// `--max-peak`.
    pub peak: Option<f64>,
    /// `--max-burst`.
    pub burst: Option<f64>,
    /// `--max-p99`, ms.
    pub p99_ms: Option<f64>,
}

impl Limits {
    /// Each set limit with its figure.
    pub fn each(&self) -> Vec<(Figure, f64)> {
        [
            (Figure::HardFail, self.hard_fail),
            (Figure::Load, self.load),
            (Figure::Peak, self.peak),
            (Figure::Burst, self.burst),
            (Figure::P99, self.p99_ms),
        ]
        .into_iter()
        .filter_map(|(f, l)| l.map(|l| (f, l)))
        .collect()
    }

    /// The limits `f` breaks on its worst seed.
    pub fn broken(&self, f: &Figures) -> Vec<Broken> {
        self.each()
            .into_iter()
            .filter(|&(fig, l)| f.get(fig).max > l)
            .map(|(fig, l)| (fig, l, f.get(fig).max))
            .collect()
    }
}

/// The flag that sets a figure's limit.
pub fn flag(f: Figure) -> &'static str {
    match f {
        Figure::HardFail => "--max-hard-fail",
        Figure::Load => "--max-load",
        Figure::Peak => "--max-peak",
        Figure::Burst => "--max-burst",
        Figure::P99 => "--max-p99",
    }
}

/// One point's results: for each evaluated arm, its figures.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The point.
    pub point: Point,
    /// Per arm (in [`Space::arms`] order), its samples, one per seed run.
    pub samples: Vec<Vec<Sample>>,
}

impl Outcome {
    /// Arm `j`'s figures.
    pub fn figures(&self, j: usize) -> Figures {
        eval::figures(&self.samples[j])
    }

    /// Seeds run.
    pub fn seeds(&self) -> usize {
        self.samples.first().map_or(0, Vec::len)
    }
}

/// How a search went.
#[derive(Clone, Debug)]
pub struct Searched {
    /// Every point, in grid order.
    pub outcomes: Vec<Outcome>,
    /// Whether successive halving was used.
    pub halving: bool,
    /// Simulations run.
    pub runs: usize,
}

/// Runs the search: the grid if `points × seeds × arms ≤ budget` (or the space sweeps the
/// scenario, where every point matters), else successive halving.
pub fn search(
    space: &Space,
    seeds: &[u64],
    limits: &Limits,
    budget: usize,
    tick: &(dyn Fn() + Sync),
) -> Result<Searched, TuneError> {
    let points = space.points();
    let scenarios = eval::scenarios(space, &points)?;
    let arms = space.arms.len().max(1);
    let full = points
        .len()
        .saturating_mul(seeds.len())
        .saturating_mul(arms);
    let mut outcomes: Vec<Outcome> = points
        .iter()
        .map(|p| Outcome {
            point: p.clone(),
            samples: vec![Vec::new(); arms],
        })
        .collect();
    let halving = space.tunes_an_arm() && full > budget && seeds.len() > 1;
    let mut runs = 0;
    let mut alive: Vec<usize> = (0..points.len()).collect();
    let mut have = 0usize;
    loop {
        let want = if halving {
            (have.max(1) * 2).min(seeds.len()).max(1)
        } else {
            seeds.len()
        };
        let want = if have == 0 && halving { 1 } else { want };
        let batch: Vec<&herd_scenario::Scenario> = alive.iter().map(|&i| &scenarios[i]).collect();
        let got = eval::run(&batch, &seeds[have..want], tick)?;
        runs += batch.len() * (want - have) * arms;
        for (&i, per_arm) in alive.iter().zip(got) {
            for (j, s) in per_arm.into_iter().enumerate() {
                outcomes[i].samples[j].extend(s);
            }
        }
        have = want;
        if have >= seeds.len() {
            break;
        }
        alive.sort_by(|&a, &b| rank(&outcomes[a], &outcomes[b], limits));
        alive.truncate(alive.len().div_ceil(2).max(1));
        alive.sort_unstable();
    }
    Ok(Searched {
        outcomes,
        halving,
        runs,
    })
}

/// The order of preference between two points of a one-arm search: fewest broken limits,
/// then lowest median load, hard-fail, p99, then grid order.
pub fn rank(a: &Outcome, b: &Outcome, limits: &Limits) -> Ordering {
    let (fa, fb) = (a.figures(0), b.figures(0));
    limits
        .broken(&fa)
        .len()
        .cmp(&limits.broken(&fb).len())
        .then(fa.load.median.total_cmp(&fb.load.median))
        .then(fa.hard_fail.median.total_cmp(&fb.hard_fail.median))
        .then(fa.p99_ms.median.total_cmp(&fb.p99_ms.median))
        .then(a.point.cmp(&b.point))
}

/// The indices of points on the Pareto front of arm `j` over load, 1 s peak, hard-fail and
/// p99 (medians): no other fully run point is at least as good on all four and better on
/// one. Only points run on every seed take part.
pub fn front(outcomes: &[Outcome], j: usize, seeds: usize) -> Vec<usize> {
    const ON: [Figure; 4] = [Figure::Load, Figure::Peak, Figure::HardFail, Figure::P99];
    let full: Vec<(usize, [f64; 4])> = outcomes
        .iter()
        .enumerate()
        .filter(|(_, o)| o.seeds() == seeds)
        .map(|(i, o)| {
            let f = o.figures(j);
            (i, ON.map(|x| f.get(x).median))
        })
        .collect();
    full.iter()
        .filter(|(_, a)| {
            !full.iter().any(|(_, b)| {
                b.iter().zip(a).all(|(x, y)| x <= y) && b.iter().zip(a).any(|(x, y)| x < y)
            })
        })
        .map(|(i, _)| *i)
        .collect()
}

/// A limit a point breaks: the figure, the limit, the worst seed's value.
pub type Broken = (Figure, f64, f64);

/// What the limits allow.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// This point meets every limit on every seed with the lowest median load.
    Recommend(usize),
    /// No point does.
    Nothing {
        /// Limits no point meets even alone, with the best worst-seed value any point has.
        unmet: Vec<Broken>,
        /// The point closest to meeting them (fewest broken, then lowest load), and what it
        /// breaks (figure, limit, worst seed).
        nearest: Option<(usize, Vec<Broken>)>,
    },
}

/// The recommendation for a one-arm search.
pub fn recommend(outcomes: &[Outcome], seeds: usize, limits: &Limits) -> Verdict {
    let full: Vec<usize> = (0..outcomes.len())
        .filter(|&i| outcomes[i].seeds() == seeds)
        .collect();
    let best = full
        .iter()
        .copied()
        .min_by(|&a, &b| rank(&outcomes[a], &outcomes[b], limits));
    match best {
        Some(i) if limits.broken(&outcomes[i].figures(0)).is_empty() => Verdict::Recommend(i),
        _ => {
            let unmet = limits
                .each()
                .into_iter()
                .filter_map(|(fig, l)| {
                    let best = full
                        .iter()
                        .map(|&i| outcomes[i].figures(0).get(fig).max)
                        .min_by(f64::total_cmp)?;
                    (best > l).then_some((fig, l, best))
                })
                .collect();
            let nearest = best.map(|i| (i, limits.broken(&outcomes[i].figures(0))));
            Verdict::Nothing { unmet, nearest }
        }
    }
}
