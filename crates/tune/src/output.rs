//! What a search says: `tune.json` (schema `herd.tune/v1`, every point), the terminal's
//! summary (the front, the recommendation and its TOML), and the `--out` files.

use crate::plot::{self, Dot};
use crate::search::{self, flag, Limits, Searched, Verdict};
use crate::space::Space;
use crate::spread::{Figure, Figures, Spread};
use crate::verify::{self, Verified};
use serde::Serialize;
use std::fmt::Write;

/// Up to this many points, the summary lists every point; above, only the front.
const ALL_SHOWN: usize = 40;

/// The schema of `tune.json`.
pub const SCHEMA: &str = "herd.tune/v1";

/// `tune.json`.
#[derive(Clone, Debug, Serialize)]
pub struct TuneReport {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The scenario's name.
    pub scenario: String,
    /// `tune` (one arm's keys searched) or `sweep` (the scenario's keys, every arm).
    pub mode: &'static str,
    /// The arms run at each point.
    pub arms: Vec<String>,
    /// The scenario seeds.
    pub seeds: Vec<u64>,
    /// The keys varied and their values.
    pub vary: Vec<VaryReport>,
    /// The limits given.
    pub limits: Limits,
    /// Whether successive halving was used (else the whole grid ran on every seed).
    pub halving: bool,
    /// Simulations run.
    pub simulations: usize,
    /// Every point, in grid order.
    pub points: Vec<PointReport>,
    /// The recommended point's index (tune mode, when one meets every limit).
    pub recommended: Option<usize>,
    /// The recommended arm as TOML, ready to paste into a scenario.
    pub recommended_toml: Option<String>,
    /// The verdict in a sentence.
    pub verdict: String,
    /// With a target: the best points run on it, predicted against measured (absent
    /// without a target or with `--no-verify`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified: Option<Verified>,
}

/// One `--vary`.
#[derive(Clone, Debug, Serialize)]
pub struct VaryReport {
    /// The key.
    pub key: String,
    /// Its values, as given.
    pub values: Vec<String>,
}

/// One point.
#[derive(Clone, Debug, Serialize)]
pub struct PointReport {
    /// Its index in `points`.
    pub index: usize,
    /// `key → value` for each vary, in vary order.
    pub settings: Vec<Setting>,
    /// Each arm's figures at this point.
    pub arms: Vec<ArmFigures>,
}

/// One key's value at a point.
#[derive(Clone, Debug, Serialize)]
pub struct Setting {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
}

/// One arm at one point.
#[derive(Clone, Debug, Serialize)]
pub struct ArmFigures {
    /// The arm.
    pub arm: String,
    /// Its figures over the seeds it ran.
    pub figures: Figures,
    /// On the Pareto front (tune mode).
    pub on_front: bool,
    /// Meets every limit on every seed it ran.
    pub meets_limits: bool,
}

/// A finished search, ready to print and write.
#[derive(Clone, Debug)]
pub struct Tuned {
    /// `tune.json`.
    pub report: TuneReport,
    /// The whole scenario at the recommended point with the tuned arm alone, runnable
    /// as it stands (`tuned.toml` under `--out`).
    pub recommended_scenario: Option<String>,
    fronts: Vec<Vec<usize>>,
}

impl Tuned {
    /// Builds the report of a search.
    pub fn new(
        name: &str,
        space: &Space,
        seeds: &[u64],
        limits: &Limits,
        searched: &Searched,
    ) -> Result<Tuned, crate::TuneError> {
        let tune = space.tunes_an_arm();
        let fronts: Vec<Vec<usize>> = (0..space.arms.len())
            .map(|j| search::front(&searched.outcomes, j, seeds.len()))
            .collect();
        let points = searched
            .outcomes
            .iter()
            .enumerate()
            .map(|(i, o)| PointReport {
                index: i,
                settings: space
                    .describe(&o.point)
                    .into_iter()
                    .map(|(key, value)| Setting { key, value })
                    .collect(),
                arms: space
                    .arms
                    .iter()
                    .enumerate()
                    .map(|(j, arm)| {
                        let figures = o.figures(j);
                        ArmFigures {
                            arm: arm.clone(),
                            meets_limits: limits.broken(&figures).is_empty(),
                            on_front: tune && fronts[j].contains(&i),
                            figures,
                        }
                    })
                    .collect(),
            })
            .collect();
        let same = if tune {
            verify::all_same(searched, seeds.len())
        } else {
            None
        };
        let verdict = if tune && same.is_none() {
            Some(search::recommend(&searched.outcomes, seeds.len(), limits))
        } else {
            None
        };
        let recommended = match verdict {
            Some(Verdict::Recommend(i)) => Some(i),
            _ => None,
        };
        let (recommended_toml, recommended_scenario) = match recommended {
            Some(i) => {
                let point = &searched.outcomes[i].point;
                let header = format!(
                    "# What `herd tune {name}` recommends (point {i}: {}):\n\
                     # the scenario with the tuned arm alone. `herd bench tuned.toml` runs it on\n\
                     # a real socket, `herd sim tuned.toml` in the simulator.\n",
                    space.label(point)
                );
                (
                    Some(arm_toml(space, point)?),
                    Some(header + &scenario_toml(space, point)?),
                )
            }
            None => (None, None),
        };
        let sentence = match &same {
            Some(f) => nothing_varies(space, f, limits),
            None => sentence(space, searched, verdict.as_ref(), limits),
        };
        Ok(Tuned {
            report: TuneReport {
                schema: SCHEMA,
                scenario: name.to_owned(),
                mode: if tune { "tune" } else { "sweep" },
                arms: space.arms.clone(),
                seeds: seeds.to_vec(),
                vary: space
                    .varies
                    .iter()
                    .map(|v| VaryReport {
                        key: v.key.clone(),
                        values: v.values.iter().map(ToString::to_string).collect(),
                    })
                    .collect(),
                limits: *limits,
                halving: searched.halving,
                simulations: searched.runs,
                points,
                recommended,
                recommended_toml,
                verdict: sentence,
                verified: None,
            },
            recommended_scenario,
            fronts,
        })
    }

    /// Records the runs of the best points on the target.
    pub fn verified(&mut self, v: Verified) {
        self.report.verified = Some(v);
    }

    /// The terminal's summary: the front (tune) or every point (sweep), then the verdict,
    /// the recommended arm's TOML and, with a target, predicted against measured.
    pub fn text(&self) -> String {
        let r = &self.report;
        let t = self.summary();
        let mut s = String::new();
        if let Some(intro) = &t.intro {
            let _ = writeln!(s, "{intro}:\n");
        }
        let _ = writeln!(s, "| {} |", t.headers.join(" | "));
        let rule: Vec<&str> = t
            .right
            .iter()
            .map(|&r| if r { "---:" } else { "---" })
            .collect();
        let _ = writeln!(s, "|{}|", rule.join("|"));
        for row in &t.rows {
            let mark = match row.mark {
                Mark::Recommended => " ★",
                Mark::Front => " front",
                Mark::None => "",
            };
            let _ = writeln!(s, "| {}{mark} | {} |", row.index, row.cells.join(" | "));
        }
        if r.mode == "tune" {
            let _ = writeln!(s, "\n★ recommended; front: on the Pareto front");
        }
        let _ = writeln!(s, "\n{}", r.verdict);
        if let Some(t) = &r.recommended_toml {
            let _ = writeln!(s, "\n{t}");
        }
        if let Some(v) = &r.verified {
            let _ = write!(s, "\n{}", v.markdown(&r.limits));
        }
        s
    }

    /// The points the summary shows, as a table: every point (tune, up to [`ALL_SHOWN`]),
    /// the front sorted by load (tune, more), or every point × arm (sweep).
    fn summary(&self) -> Summary {
        let r = &self.report;
        let (intro, rows): (Option<String>, Vec<(usize, usize)>) = if r.mode == "tune"
            && r.points.len() <= ALL_SHOWN
        {
            (
                    Some(format!(
                        "{} points, median (min–max) over {} seed(s); front: on the Pareto front over load, peak, hard-fail and p99",
                        r.points.len(),
                        r.seeds.len()
                    )),
                    (0..r.points.len()).map(|i| (i, 0)).collect(),
                )
        } else if r.mode == "tune" {
            let mut f = self.fronts[0].clone();
            f.sort_by(|&a, &b| {
                let (x, y) = (&r.points[a].arms[0], &r.points[b].arms[0]);
                x.figures.load.median.total_cmp(&y.figures.load.median)
            });
            (
                Some(format!(
                    "Pareto front ({} of {} points; median (min–max) over {} seed(s))",
                    f.len(),
                    r.points.len(),
                    r.seeds.len()
                )),
                f.into_iter().map(|i| (i, 0)).collect(),
            )
        } else {
            (
                None,
                (0..r.points.len())
                    .flat_map(|i| (0..r.arms.len()).map(move |j| (i, j)))
                    .collect(),
            )
        };
        let sweep = r.mode == "sweep";
        let mut headers = vec!["#".to_owned()];
        headers.extend(r.vary.iter().map(|v| v.key.clone()));
        if sweep {
            headers.push("arm".into());
        }
        headers.extend(Figure::ALL.map(|f| f.title().to_owned()));
        let mut right = vec![true];
        right.extend(r.vary.iter().map(|_| false));
        if sweep {
            right.push(false);
        }
        right.extend(Figure::ALL.map(|_| true));
        let rows = rows
            .into_iter()
            .map(|(i, j)| {
                let p = &r.points[i];
                let a = &p.arms[j];
                let mut cells: Vec<String> = p.settings.iter().map(|x| x.value.clone()).collect();
                if sweep {
                    cells.push(a.arm.clone());
                }
                cells.extend(Figure::ALL.iter().map(|f| f.show_spread(a.figures.get(*f))));
                SummaryRow {
                    index: i,
                    mark: match (r.recommended == Some(i), a.on_front) {
                        (true, _) => Mark::Recommended,
                        (false, true) => Mark::Front,
                        (false, false) => Mark::None,
                    },
                    cells,
                }
            })
            .collect();
        Summary {
            intro,
            headers,
            right,
            rows,
        }
    }

    /// The `--out` files: `tune.json`, the plots, `tune.html` and, with a recommendation,
    /// `tuned.toml`.
    pub fn files(&self) -> Result<Vec<(String, String)>, String> {
        let r = &self.report;
        let mut json = serde_json::to_string_pretty(r).map_err(|e| e.to_string())?;
        json.push('\n');
        let mut files = vec![("tune.json".to_owned(), json)];
        let mut svgs = Vec::new();
        if r.mode == "tune" {
            let dots: Vec<Dot> = r
                .points
                .iter()
                .map(|p| Dot {
                    load: p.arms[0].figures.load.median,
                    hard_fail: p.arms[0].figures.hard_fail.median,
                    front: p.arms[0].on_front,
                    label: p
                        .settings
                        .iter()
                        .map(|x| format!("{}={}", x.key, x.value))
                        .collect::<Vec<_>>()
                        .join(" "),
                })
                .collect();
            let title = format!(
                "{}: arm {}, {} points",
                r.scenario,
                r.arms[0],
                r.points.len()
            );
            svgs.push((
                "front.svg".to_owned(),
                plot::front_svg(
                    &title,
                    &dots,
                    r.recommended,
                    r.limits.load,
                    r.limits.hard_fail,
                )?,
            ));
        } else if let Some((k, v)) = self.numeric_sweep() {
            for f in Figure::ALL {
                let lines: Vec<(String, Vec<(f64, Spread)>)> = r
                    .arms
                    .iter()
                    .enumerate()
                    .map(|(j, arm)| {
                        let pts = r
                            .points
                            .iter()
                            .map(|p| (v[p.index], *p.arms[j].figures.get(f)))
                            .collect();
                        (arm.clone(), pts)
                    })
                    .collect();
                svgs.push((
                    format!("sweep-{}.svg", f.key()),
                    plot::sweep_svg(&r.vary[k].key, f, &lines)?,
                ));
            }
        }
        if let Some(t) = &self.recommended_scenario {
            files.push(("tuned.toml".to_owned(), t.clone()));
        }
        files.push(("tune.html".to_owned(), self.html(&svgs)));
        files.extend(svgs);
        Ok(files)
    }

    /// For a sweep of one numeric key (the others fixed at one value each), the key's
    /// position and each point's x value.
    fn numeric_sweep(&self) -> Option<(usize, Vec<f64>)> {
        let r = &self.report;
        let mut moving = r
            .vary
            .iter()
            .enumerate()
            .filter(|(_, v)| v.values.len() > 1);
        let k = match (moving.next(), moving.next()) {
            (Some((k, _)), None) => k,
            (None, None) => 0,
            _ => return None,
        };
        let xs = r
            .points
            .iter()
            .map(|p| p.settings.get(k)?.value.parse::<f64>().ok())
            .collect::<Option<Vec<f64>>>()?;
        Some((k, xs))
    }

    fn html(&self, svgs: &[(String, String)]) -> String {
        let esc = herd_report::html_escape;
        let r = &self.report;
        let mut h = format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <title>herd tune: {0}</title>\n<style>{CSS}</style>\n\
             </head>\n<body>\n<h1>herd tune: {0}</h1>\n<p>{1}</p>\n",
            esc(&r.scenario),
            esc(&r.verdict)
        );
        for (_, svg) in svgs {
            h.push_str("<figure>\n");
            h.push_str(herd_report::strip_prolog(svg));
            h.push_str("\n</figure>\n");
        }
        let t = self.summary();
        h.push_str("<h2>Points</h2>\n");
        if let Some(intro) = &t.intro {
            let _ = writeln!(h, "<p>{}</p>", esc(intro));
        }
        let class = |right: bool| if right { " class=\"r\"" } else { "" };
        h.push_str("<table>\n<thead><tr>");
        for (title, &right) in t.headers.iter().zip(&t.right) {
            let _ = write!(h, "<th{}>{}</th>", class(right), esc(title));
        }
        h.push_str("</tr></thead>\n<tbody>\n");
        for row in &t.rows {
            let (tr, mark) = match row.mark {
                Mark::Recommended => (" class=\"recommended\"", " ★"),
                Mark::Front => (" class=\"front\"", " front"),
                Mark::None => ("", ""),
            };
            let _ = write!(h, "<tr{tr}><td class=\"r\">{}{mark}</td>", row.index);
            for (cell, &right) in row.cells.iter().zip(&t.right[1..]) {
                let _ = write!(h, "<td{}>{}</td>", class(right), esc(cell));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</tbody>\n</table>\n");
        if r.mode == "tune" {
            h.push_str("<p>★ recommended; front: on the Pareto front</p>\n");
        }
        if let Some(v) = &r.verified {
            h.push_str(&v.html(&r.limits));
        }
        if let Some(toml) = &r.recommended_toml {
            let _ = write!(h, "<h2>Recommended arm</h2>\n<pre>{}</pre>\n", esc(toml));
        }
        h.push_str("</body>\n</html>\n");
        h
    }
}

/// tune.html's style, as report.html's.
const CSS: &str = "\
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1200px;padding:0 1rem;color:#222}\
svg{max-width:100%;height:auto;display:block}\
h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;font-variant-numeric:tabular-nums}\
th,td{border:1px solid #ccc;padding:.3rem .6rem}th{background:#f3f3f3}\
td.r,th.r{text-align:right}td{white-space:nowrap}tbody tr:nth-child(even){background:#fafafa}\
tr.front td{background:#eef5ff}tr.measured td{border-bottom:2px solid #999}tr.recommended td{background:#fff1d6;font-weight:bold}\
pre{background:#f6f6f6;padding:1rem;overflow-x:auto}\
";

/// How a row of the summary stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mark {
    Recommended,
    Front,
    None,
}

/// One row of the summary: its point, its mark, and the cells after the `#`.
struct SummaryRow {
    index: usize,
    mark: Mark,
    cells: Vec<String>,
}

/// The summary table, for the terminal's markdown and tune.html's `<table>` alike.
struct Summary {
    /// The line above it.
    intro: Option<String>,
    /// Column titles, `#` first.
    headers: Vec<String>,
    /// Which columns are numbers (right-aligned).
    right: Vec<bool>,
    rows: Vec<SummaryRow>,
}

/// The scenario at `point` with the tuned arm alone, its id marked `-tuned`.
fn tuned_doc(space: &Space, point: &[usize]) -> Result<toml::Table, crate::TuneError> {
    let mut doc = space.portable_toml(point)?;
    let arm = doc
        .get_mut("arms")
        .and_then(toml::Value::as_array_mut)
        .and_then(|a| a.first_mut())
        .and_then(toml::Value::as_table_mut)
        .ok_or_else(|| crate::TuneError::Text("the tuned arm vanished".into()))?;
    if let Some(toml::Value::String(id)) = arm.get_mut("id") {
        id.push_str("-tuned");
    }
    Ok(doc)
}

/// The tuned arm at `point`, as a `[[arms]]` table.
fn arm_toml(space: &Space, point: &[usize]) -> Result<String, crate::TuneError> {
    let mut doc = tuned_doc(space, point)?;
    let mut t = toml::Table::new();
    if let Some(arms) = doc.remove("arms") {
        t.insert("arms".into(), arms);
    }
    toml::to_string(&t).map_err(|e| crate::TuneError::Text(e.to_string()))
}

/// The whole scenario at `point` with the tuned arm alone.
fn scenario_toml(space: &Space, point: &[usize]) -> Result<String, crate::TuneError> {
    toml::to_string(&tuned_doc(space, point)?).map_err(|e| crate::TuneError::Text(e.to_string()))
}

/// The verdict when every point gave the same figures: nothing to choose between them.
fn nothing_varies(space: &Space, f: &Figures, limits: &Limits) -> String {
    let keys: Vec<&str> = space.varies.iter().map(|v| v.key.as_str()).collect();
    let figures = Figure::ALL
        .iter()
        .map(|x| format!("{} {}", x.title(), x.show_spread(f.get(*x))))
        .collect::<Vec<_>>()
        .join(", ");
    let broken = limits.broken(f);
    let limits_said = if limits.each().is_empty() {
        String::new()
    } else if broken.is_empty() {
        "; every point meets the limits".to_owned()
    } else {
        format!(
            "; every point breaks {}",
            broken
                .iter()
                .map(|(x, l, _)| format!("{} {}", flag(*x), x.show(*l)))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    format!(
        "the varied keys change nothing here: every point gives {figures} ({} varied), so there \
         is nothing to recommend between them{limits_said}; the model may not fail where these \
         keys act",
        keys.join(", ")
    )
}

fn sentence(space: &Space, searched: &Searched, v: Option<&Verdict>, limits: &Limits) -> String {
    let describe = |i: usize| space.label(&searched.outcomes[i].point);
    let broken = |b: &[(Figure, f64, f64)]| {
        b.iter()
            .map(|(f, l, worst)| {
                format!(
                    "{} {} (worst seed {})",
                    flag(*f),
                    f.show(*l),
                    f.show(*worst)
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    match v {
        None => format!(
            "what-if sweep: {} point(s) × {} arm(s); no recommendation (a sweep varies the world, not the arm)",
            searched.outcomes.len(),
            space.arms.len()
        ),
        Some(Verdict::Recommend(i)) if limits.each().is_empty() => format!(
            "recommended: point {i} ({}), the lowest median load (no limits given)",
            describe(*i)
        ),
        Some(Verdict::Recommend(i)) => format!(
            "recommended: point {i} ({}): meets every limit on every seed with the lowest median load",
            describe(*i)
        ),
        Some(Verdict::Nothing { unmet, nearest }) => {
            let mut s = String::from("no point meets every limit on every seed");
            if !unmet.is_empty() {
                let _ = write!(s, "; no point meets {} even alone", broken(unmet));
            }
            if let Some((i, b)) = nearest {
                let _ = write!(s, "; the nearest, point {i} ({}), misses {}", describe(*i), broken(b));
            }
            s
        }
    }
}
