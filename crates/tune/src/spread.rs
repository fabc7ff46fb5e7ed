//! One run is one sample: a figure over several seeds, as median and min–max.
//!
//! In a scenario near overload, the same configuration on another seed can move its load
//! multiplier by a third and its hard-fail rate several-fold; ranking configurations by
//! one seed ranks the seeds. Every figure herd-tune and `herd sim --seeds` report is
//! therefore a [`Spread`], and a ranking is trusted only where spreads do not overlap.

use herd_scenario::ArmReport;
use serde::Serialize;

/// A figure over seeds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spread {
    /// The median (the mean of the middle two for an even count).
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `xs` (NaN-free figures; an empty slice gives zeros).
    pub fn of(xs: &[f64]) -> Spread {
        if xs.is_empty() {
            return Spread {
                median: 0.0,
                min: 0.0,
                max: 0.0,
            };
        }
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Spread {
            median,
            min: v[0],
            max: v[n - 1],
        }
    }

    /// Whether two spreads share any value.
    pub fn overlaps(&self, other: &Spread) -> bool {
        self.min <= other.max && other.min <= self.max
    }
}

/// The figures a search compares, lower is better for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    /// Server requests per logical request (or unit of demand).
    Load,
    /// The busiest 1 s at the server against the offered rate.
    Peak,
    /// The busiest 100 ms against the offered rate.
    Burst,
    /// Logical requests that failed.
    HardFail,
    /// The client's p99 latency, ms.
    P99,
}

impl Figure {
    /// Every figure, in table order.
    pub const ALL: [Figure; 5] = [
        Figure::Load,
        Figure::Peak,
        Figure::Burst,
        Figure::HardFail,
        Figure::P99,
    ];

    /// The figure of one run.
    pub fn of(self, a: &ArmReport) -> f64 {
        match self {
            Figure::Load => a.load_multiplier,
            Figure::Peak => a.peak_rps_multiplier,
            Figure::Burst => a.burst_multiplier,
            Figure::HardFail => a.hard_fail_ratio,
            Figure::P99 => a.latency_ms.p99,
        }
    }

    /// A column title.
    pub fn title(self) -> &'static str {
        match self {
            Figure::Load => "load",
            Figure::Peak => "peak 1 s",
            Figure::Burst => "burst 100 ms",
            Figure::HardFail => "hard-fail",
            Figure::P99 => "p99",
        }
    }

    /// The JSON key.
    pub fn key(self) -> &'static str {
        match self {
            Figure::Load => "load",
            Figure::Peak => "peak",
            Figure::Burst => "burst",
            Figure::HardFail => "hard_fail",
            Figure::P99 => "p99_ms",
        }
    }

    /// A value of this figure, for people.
    pub fn show(self, x: f64) -> String {
        match self {
            Figure::Load => format!("{x:.3}x"),
            Figure::Peak => format!("{x:.2}x"),
            Figure::Burst => format!("{x:.1}x"),
            Figure::HardFail => format!("{:.2}%", x * 100.0),
            Figure::P99 if x >= 100.0 => format!("{x:.0}ms"),
            Figure::P99 => format!("{x:.1}ms"),
        }
    }

    /// A spread of this figure, for people: `median (min–max)`, or one value if all agree.
    pub fn show_spread(self, s: &Spread) -> String {
        let (a, b, c) = (self.show(s.median), self.show(s.min), self.show(s.max));
        if b == c {
            a
        } else {
            format!("{a} ({b}–{c})")
        }
    }
}

/// Every figure of one arm over its seeds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figures {
    /// Seeds run.
    pub seeds: usize,
    /// Load multiplier.
    pub load: Spread,
    /// 1 s peak multiplier.
    pub peak: Spread,
    /// 100 ms burst multiplier.
    pub burst: Spread,
    /// Hard-fail ratio.
    pub hard_fail: Spread,
    /// p99 latency, ms.
    pub p99_ms: Spread,
}

impl Figures {
    /// The figures of `runs` (one per seed).
    pub fn of(runs: &[&ArmReport]) -> Figures {
        let spread = |f: Figure| Spread::of(&runs.iter().map(|a| f.of(a)).collect::<Vec<_>>());
        Figures {
            seeds: runs.len(),
            load: spread(Figure::Load),
            peak: spread(Figure::Peak),
            burst: spread(Figure::Burst),
            hard_fail: spread(Figure::HardFail),
            p99_ms: spread(Figure::P99),
        }
    }

    /// One figure's spread.
    pub fn get(&self, f: Figure) -> &Spread {
        match f {
            Figure::Load => &self.load,
            Figure::Peak => &self.peak,
            Figure::Burst => &self.burst,
            Figure::HardFail => &self.hard_fail,
            Figure::P99 => &self.p99_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_range() {
        let s = Spread::of(&[3.0, 1.0, 2.0]);
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        let s = Spread::of(&[4.0, 1.0, 2.0, 3.0]);
        assert_eq!(s.median, 2.5);
        assert!(s.overlaps(&Spread::of(&[4.0, 9.0])));
        assert!(!s.overlaps(&Spread::of(&[4.5, 9.0])));
        assert_eq!(Figure::Load.show_spread(&Spread::of(&[1.0, 1.0])), "1.000x");
        assert_eq!(
            Figure::HardFail.show_spread(&Spread::of(&[0.01, 0.02, 0.05])),
            "2.00% (1.00%–5.00%)"
        );
    }
}
