//! `herd sim --seeds N` and `herd bench --seeds N`: the scenario on N seeds, each figure
//! reported as median with min–max, and a warning wherever the spread is wider than the
//! difference that ranks two arms.
//!
//! In an overloaded scenario one run is one sample: the same arm on another seed can move
//! its load by a third and its hard-fail rate several-fold. A ranking of arms is only as
//! good as the gap between them against the spread of each; the table says when the seeds
//! run do not settle an order.

use crate::spread::{Figure, Figures};
use herd_scenario::ArmReport;
use serde::Serialize;
use std::fmt::Write;

/// The schema of a multi-seed report.
pub const SCHEMA: &str = "herd.seeds/v1";

/// A scenario run on several seeds.
#[derive(Clone, Debug, Serialize)]
pub struct SeedsReport {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// `sim` or `real`.
    pub mode: String,
    /// The scenario's name.
    pub scenario: String,
    /// The seeds, in run order.
    pub seeds: Vec<u64>,
    /// Each arm's figures over the seeds.
    pub arms: Vec<SeedsArm>,
    /// Pairs of arms whose order a figure does not settle.
    pub warnings: Vec<String>,
    /// True when a signal stopped the runs before every seed ran.
    pub partial: bool,
}

/// One arm over the seeds.
#[derive(Clone, Debug, Serialize)]
pub struct SeedsArm {
    /// The arm.
    pub id: String,
    /// Its policy, in words.
    pub policy: String,
    /// Median and min–max of each figure.
    pub figures: Figures,
    /// Each seed's figures, in [`Figure::ALL`] order (load, peak, burst, hard-fail, p99).
    pub per_seed: Vec<[f64; 5]>,
}

impl SeedsReport {
    /// Builds the report from one report's arms per seed (`runs[k]` for `seeds[k]`, each
    /// with the same arms in the same order).
    pub fn new(
        mode: &str,
        scenario: &str,
        seeds: Vec<u64>,
        runs: &[Vec<ArmReport>],
        partial: bool,
    ) -> SeedsReport {
        let n = runs.first().map_or(0, Vec::len);
        let arms: Vec<SeedsArm> = (0..n)
            .map(|j| {
                let each: Vec<&ArmReport> = runs.iter().filter_map(|r| r.get(j)).collect();
                SeedsArm {
                    id: each[0].id.clone(),
                    policy: each[0].policy.clone(),
                    figures: Figures::of(&each),
                    per_seed: each.iter().map(|a| Figure::ALL.map(|f| f.of(a))).collect(),
                }
            })
            .collect();
        let warnings = warnings(&arms);
        SeedsReport {
            schema: SCHEMA,
            mode: mode.to_owned(),
            scenario: scenario.to_owned(),
            seeds: seeds[..runs.len()].to_vec(),
            arms,
            warnings,
            partial,
        }
    }

    /// The table: one row per arm, `median (min–max)` per figure, then the warnings.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} seed(s) ({}): median (min–max) per figure\n",
            self.seeds.len(),
            self.seeds
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(
            s,
            "| arm | {} |",
            Figure::ALL.map(Figure::title).join(" | ")
        );
        let _ = writeln!(s, "|---|{}|", vec!["---:"; Figure::ALL.len()].join("|"));
        for a in &self.arms {
            let cells: Vec<String> = Figure::ALL
                .iter()
                .map(|f| f.show_spread(a.figures.get(*f)).replace('|', "\\|"))
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} |",
                a.id.replace('|', "\\|"),
                cells.join(" | ")
            );
        }
        if !self.warnings.is_empty() {
            let _ = writeln!(s);
            for w in &self.warnings {
                let _ = writeln!(s, "warning: {w}");
            }
        }
        if self.partial {
            let _ = writeln!(s, "\npartial: stopped by a signal before every seed ran");
        }
        s
    }
}

/// For each figure, arms next to each other in the median order whose min–max ranges
/// overlap: the seeds run do not settle which is better.
fn warnings(arms: &[SeedsArm]) -> Vec<String> {
    let mut out = Vec::new();
    for f in Figure::ALL {
        let mut order: Vec<&SeedsArm> = arms.iter().collect();
        order.sort_by(|a, b| a.figures.get(f).median.total_cmp(&b.figures.get(f).median));
        for w in order.windows(2) {
            let (a, b) = (w[0].figures.get(f), w[1].figures.get(f));
            if a.median != b.median && a.overlaps(b) && a.min != a.max {
                out.push(format!(
                    "{}: {} {} and {} {} overlap across seeds; their order is not settled",
                    f.title(),
                    w[0].id,
                    f.show_spread(a),
                    w[1].id,
                    f.show_spread(b)
                ));
            }
        }
    }
    out
}
