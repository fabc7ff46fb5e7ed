//! Predicted against measured: a search's best points run once more on the real target.
//!
//! A tune of a scenario with a target searches the model calibrated to that target, and a
//! model is only as good as its fit. So before the recommendation is handed over, the
//! command runs it (and the runner-up) against the service itself, through herd's counting
//! front, at the rate the simulator assumed, and sets what the server counted beside what
//! the simulator predicted. A point that meets the limits in the model and breaks them on
//! the service says the model is wrong there, which is worth more than a confident table.
//!
//! Everything here is pure: which points to run ([`picks`]), the record of each run
//! ([`Check`]) and how it reads ([`Verified::markdown`], [`Verified::html`]). The runs
//! themselves are the command's (the socket engine `herd bench` uses).

use crate::search::{flag, rank, Limits, Searched};
use crate::spread::{Figure, Figures};
use serde::Serialize;
use std::fmt::Write;

/// The five figures of one run, in [`Figure::ALL`] order (as [`crate::eval::Sample`]).
pub type Sample = [f64; 5];

/// What a point is to the search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The recommendation.
    Recommended,
    /// No point met the limits; this one came nearest.
    Nearest,
    /// Second in the search's order of preference.
    RunnerUp,
}

impl Role {
    /// In words.
    pub fn word(self) -> &'static str {
        match self {
            Role::Recommended => "recommended",
            Role::Nearest => "nearest",
            Role::RunnerUp => "runner-up",
        }
    }
}

/// The points to run on the target: the first two in the search's order of preference
/// (fewest broken limits, lowest median load) among the points run on every seed.
pub fn picks(
    searched: &Searched,
    seeds: usize,
    limits: &Limits,
    recommended: Option<usize>,
) -> Vec<(usize, Role)> {
    let mut full: Vec<usize> = (0..searched.outcomes.len())
        .filter(|&i| searched.outcomes[i].seeds() == seeds)
        .collect();
    full.sort_by(|&a, &b| rank(&searched.outcomes[a], &searched.outcomes[b], limits));
    full.into_iter()
        .take(2)
        .enumerate()
        .map(|(k, i)| {
            let role = match (k, recommended) {
                (0, Some(r)) if r == i => Role::Recommended,
                (0, _) => Role::Nearest,
                _ => Role::RunnerUp,
            };
            (i, role)
        })
        .collect()
}

/// A limit the measured run broke: the flag, the limit, the measured value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BrokenLimit {
    /// The flag that set it (`--max-hard-fail`).
    pub flag: &'static str,
    /// The limit.
    pub limit: f64,
    /// What was measured.
    pub measured: f64,
}

/// One point run on the target.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    /// The point's index in `points`.
    pub index: usize,
    /// What it is to the search.
    pub role: Role,
    /// Its settings, `key=value` separated by spaces.
    pub label: String,
    /// The simulator's figures (median over the seeds searched).
    pub predicted: Named,
    /// The figures the run on the target measured (the server's counts from herd's front,
    /// latency from the client's intended send times).
    pub measured: Named,
    /// Whether the prediction met every limit on every seed.
    pub predicted_meets_limits: bool,
    /// Whether the measured run meets every limit.
    pub meets_limits: bool,
    /// The limits the measured run broke.
    pub broken: Vec<BrokenLimit>,
}

/// The five figures by name, for `tune.json`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Named {
    /// Load multiplier.
    pub load: f64,
    /// 1 s peak multiplier.
    pub peak: f64,
    /// 100 ms burst multiplier.
    pub burst: f64,
    /// Hard-fail ratio.
    pub hard_fail: f64,
    /// p99 latency, ms.
    pub p99_ms: f64,
}

impl Named {
    fn of(s: &Sample) -> Named {
        Named {
            load: s[0],
            peak: s[1],
            burst: s[2],
            hard_fail: s[3],
            p99_ms: s[4],
        }
    }

    fn get(&self, f: Figure) -> f64 {
        match f {
            Figure::Load => self.load,
            Figure::Peak => self.peak,
            Figure::Burst => self.burst,
            Figure::HardFail => self.hard_fail,
            Figure::P99 => self.p99_ms,
        }
    }
}

impl Check {
    /// The record of point `index` (`label`), predicted `figures` over the seeds searched,
    /// and one measured run.
    pub fn new(
        index: usize,
        role: Role,
        label: String,
        predicted: &Figures,
        measured: &Sample,
        limits: &Limits,
    ) -> Check {
        let broken: Vec<BrokenLimit> = limits
            .each()
            .into_iter()
            .filter_map(|(f, l)| {
                let m = measured[Figure::ALL.iter().position(|x| *x == f)?];
                (m > l).then_some(BrokenLimit {
                    flag: flag(f),
                    limit: l,
                    measured: m,
                })
            })
            .collect();
        Check {
            index,
            role,
            label,
            predicted: Named::of(&Figure::ALL.map(|f| predicted.get(f).median)),
            measured: Named::of(measured),
            predicted_meets_limits: limits.broken(predicted).is_empty(),
            meets_limits: broken.is_empty(),
            broken,
        }
    }
}

/// The verification: the target and each point run on it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verified {
    /// The target's URL.
    pub target: String,
    /// Logical requests per run.
    pub requests: u64,
    /// Offered rate, requests per second.
    pub rate: f64,
    /// The points run, in order of preference.
    pub points: Vec<Check>,
}

impl Verified {
    /// The sentence under the table: whether the recommendation held on the target.
    pub fn verdict(&self, limits: &Limits) -> String {
        let Some(first) = self.points.first() else {
            return "nothing was run on the target".to_owned();
        };
        let who = format!("point {} ({})", first.index, first.role.word());
        if limits.each().is_empty() {
            return format!("{who} measured on the target; no limits were given to check");
        }
        if first.meets_limits {
            format!("{who} meets every limit on the target too")
        } else {
            let broken = first
                .broken
                .iter()
                .map(|b| {
                    let f = figure_of(b.flag);
                    format!(
                        "{} {} (measured {})",
                        b.flag,
                        f.show(b.limit),
                        f.show(b.measured)
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            format!(
                "{who} breaks {broken} on the target: the model does not hold there; \
                 re-run `herd calibrate` or tighten the limits"
            )
        }
    }

    /// The table: predicted and measured rows for each point, as Markdown.
    pub fn markdown(&self, limits: &Limits) -> String {
        let mut s = format!(
            "verified on {} ({} requests at {} req/s per point, through herd's counting front):\n\n",
            self.target, self.requests, self.rate
        );
        let titles: Vec<&str> = Figure::ALL.iter().map(|f| f.title()).collect();
        let _ = writeln!(s, "| # | point | | {} | meets limits |", titles.join(" | "));
        let _ = writeln!(s, "|---:|---|---|{}---|", "---:|".repeat(titles.len()));
        for c in &self.points {
            for (k, row) in rows(c).into_iter().enumerate() {
                let (idx, label) = if k == 0 {
                    (format!("{} {}", c.index, c.role.word()), c.label.clone())
                } else {
                    (String::new(), String::new())
                };
                let _ = writeln!(
                    s,
                    "| {idx} | {label} | {} | {} | {} |",
                    row.0,
                    row.1.join(" | "),
                    row.2
                );
            }
        }
        let _ = writeln!(s, "\n{}", self.verdict(limits));
        s
    }

    /// The same table as HTML.
    pub fn html(&self, limits: &Limits) -> String {
        let esc = herd_report::html_escape;
        let mut h = format!(
            "<h2>Verified on the target</h2>\n<p>{} requests at {} req/s per point against {}, through herd's counting front.</p>\n<table>\n<thead><tr><th class=\"r\">#</th><th>point</th><th></th>",
            self.requests,
            self.rate,
            esc(&self.target)
        );
        for f in Figure::ALL {
            let _ = write!(h, "<th class=\"r\">{}</th>", esc(f.title()));
        }
        h.push_str("<th>meets limits</th></tr></thead>\n<tbody>\n");
        for c in &self.points {
            for (k, row) in rows(c).into_iter().enumerate() {
                let class = if k == 0 { "predicted" } else { "measured" };
                let _ = write!(h, "<tr class=\"{class}\">");
                if k == 0 {
                    let _ = write!(
                        h,
                        "<td class=\"r\" rowspan=\"2\">{} {}</td><td rowspan=\"2\">{}</td>",
                        c.index,
                        c.role.word(),
                        esc(&c.label)
                    );
                }
                let _ = write!(h, "<td>{}</td>", row.0);
                for cell in &row.1 {
                    let _ = write!(h, "<td class=\"r\">{}</td>", esc(cell));
                }
                let _ = writeln!(h, "<td>{}</td></tr>", esc(&row.2));
            }
        }
        let _ = writeln!(
            h,
            "</tbody>\n</table>\n<p>{}</p>",
            esc(&self.verdict(limits))
        );
        h
    }
}

/// The predicted and measured rows of a check: (which, cells, meets).
fn rows(c: &Check) -> [(&'static str, Vec<String>, String); 2] {
    let cells = |n: &Named| Figure::ALL.iter().map(|f| f.show(n.get(*f))).collect();
    let yes = |b: bool| if b { "yes" } else { "no" }.to_owned();
    let measured_meets = if c.meets_limits {
        "yes".to_owned()
    } else {
        format!(
            "no: {}",
            c.broken
                .iter()
                .map(|b| b.flag)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    [
        (
            "predicted",
            cells(&c.predicted),
            yes(c.predicted_meets_limits),
        ),
        ("measured", cells(&c.measured), measured_meets),
    ]
}

fn figure_of(flag_name: &str) -> Figure {
    Figure::ALL
        .into_iter()
        .find(|f| flag(*f) == flag_name)
        .unwrap_or(Figure::Load)
}

/// When every point gives the same figures on every seed (the varied keys act on nothing
/// the model does), those figures; `None` when any two points differ or there is one point.
pub fn all_same(searched: &Searched, seeds: usize) -> Option<Figures> {
    let full: Vec<Figures> = searched
        .outcomes
        .iter()
        .filter(|o| o.seeds() == seeds)
        .map(|o| o.figures(0))
        .collect();
    if searched.outcomes.len() < 2 || full.len() != searched.outcomes.len() {
        return None;
    }
    let first = full[0].clone();
    full.iter().all(|f| *f == first).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::Outcome;

    fn searched(loads: &[f64]) -> Searched {
        Searched {
            outcomes: loads
                .iter()
                .enumerate()
                .map(|(i, &l)| Outcome {
                    point: vec![i],
                    samples: vec![vec![[l, 1.0, 1.0, 0.1, 5.0]]],
                })
                .collect(),
            halving: false,
            runs: loads.len(),
        }
    }

    #[test]
    fn the_two_best_points_are_run() {
        let s = searched(&[1.5, 1.1, 1.2, 3.0]);
        assert_eq!(
            picks(&s, 1, &Limits::default(), Some(1)),
            vec![(1, Role::Recommended), (2, Role::RunnerUp)]
        );
        assert_eq!(
            picks(&s, 1, &Limits::default(), None),
            vec![(1, Role::Nearest), (2, Role::RunnerUp)]
        );
    }

    #[test]
    fn identical_points_are_noticed() {
        assert!(all_same(&searched(&[1.0, 1.0, 1.0]), 1).is_some());
        assert!(all_same(&searched(&[1.0, 1.0, 1.01]), 1).is_none());
        assert!(all_same(&searched(&[1.0]), 1).is_none());
    }

    #[test]
    fn a_measured_run_that_breaks_a_limit_says_which() {
        let s = searched(&[1.1]);
        let limits = Limits {
            hard_fail: Some(0.05),
            load: Some(1.5),
            ..Limits::default()
        };
        let c = Check::new(
            0,
            Role::Recommended,
            "retries=1".into(),
            &s.outcomes[0].figures(0),
            &[1.2, 1.0, 1.0, 0.08, 4.0],
            &limits,
        );
        assert!(!c.meets_limits);
        assert_eq!(c.broken.len(), 1);
        assert_eq!(c.broken[0].flag, "--max-hard-fail");
        let v = Verified {
            target: "http://127.0.0.1:1".into(),
            requests: 100,
            rate: 50.0,
            points: vec![c],
        };
        let md = v.markdown(&limits);
        assert!(md.contains("| measured | 1.200x |"), "{md}");
        assert!(md.contains("no: --max-hard-fail"), "{md}");
        assert!(
            v.verdict(&limits)
                .contains("--max-hard-fail 5.00% (measured 8.00%)"),
            "{}",
            v.verdict(&limits)
        );
    }
}
