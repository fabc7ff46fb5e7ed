//! The search space: the base scenario's TOML, the keys varied, the arms evaluated, and
//! how one point of the space becomes a validated [`Scenario`].
//!
//! A point is written into the TOML and parsed again, so a searched configuration is
//! exactly a scenario someone could have written by hand: the same validation, the same
//! defaults, nothing herd-tune has to keep in step with the format.

use crate::error::TuneError;
use crate::vary::{Scope, Segment, Value, Vary};
use herd_scenario::{parse, trace, Scenario};

/// Every point of a search, before any runs.
#[derive(Clone, Debug)]
pub struct Space {
    base: toml::Table,
    origin: String,
    /// The keys varied, in the order given.
    pub varies: Vec<Vary>,
    /// The arms each point is run for, in scenario order.
    pub arms: Vec<String>,
}

/// A point: for each vary, the index of its value.
pub type Point = Vec<usize>;

impl Space {
    /// A space over `text` (the scenario as loaded from `origin`). `arms` are the ids to run;
    /// empty means every arm.
    pub fn new(
        text: &str,
        origin: &str,
        varies: Vec<Vary>,
        arms: Vec<String>,
    ) -> Result<Space, TuneError> {
        let base: toml::Table = text.parse().map_err(|e| TuneError::Text(format!("{e}")))?;
        let all: Vec<String> = base
            .get("arms")
            .and_then(toml::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|t| t.get("id").and_then(toml::Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        for id in &arms {
            if !all.contains(id) {
                return Err(TuneError::NoArm(id.clone()));
            }
        }
        let arms = if arms.is_empty() { all } else { arms };
        let space = Space {
            base,
            origin: origin.to_owned(),
            varies,
            arms,
        };
        space.check_each_value()?;
        Ok(space)
    }

    /// Whether any key is an arm's (a tune) rather than only the scenario's (a sweep).
    pub fn tunes_an_arm(&self) -> bool {
        self.varies.iter().any(|v| v.scope == Scope::Arm)
    }

    /// Every point, first vary outermost (a grid).
    pub fn points(&self) -> Vec<Point> {
        let mut points: Vec<Point> = vec![vec![]];
        for v in &self.varies {
            points = points
                .into_iter()
                .flat_map(|p| {
                    (0..v.values.len()).map(move |i| {
                        let mut q = p.clone();
                        q.push(i);
                        q
                    })
                })
                .collect();
        }
        points
    }

    /// How many points the grid has (saturating; the search refuses absurd grids).
    pub fn len(&self) -> usize {
        self.varies
            .iter()
            .fold(1usize, |n, v| n.saturating_mul(v.values.len()))
    }

    /// Whether the grid is empty (never: every vary has a value).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `key=value` for each vary of `p`.
    pub fn describe(&self, p: &[usize]) -> Vec<(String, String)> {
        self.varies
            .iter()
            .zip(p)
            .map(|(v, &i)| (v.key.clone(), v.values[i].to_string()))
            .collect()
    }

    /// `key=value key=value` for point `p`, as messages and labels name a point.
    pub fn label(&self, p: &[usize]) -> String {
        self.describe(p)
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The TOML of point `p`, arms reduced to the evaluated ones.
    pub fn toml(&self, p: &[usize]) -> Result<toml::Table, TuneError> {
        let mut doc = self.base.clone();
        for (v, &i) in self.varies.iter().zip(p) {
            self.set(&mut doc, v, &v.values[i])
                .map_err(|why| TuneError::Vary {
                    spec: format!("{}={}", v.key, v.values[i]),
                    why,
                })?;
        }
        if let Some(toml::Value::Array(arms)) = doc.get_mut("arms") {
            arms.retain(|a| {
                a.get("id")
                    .and_then(toml::Value::as_str)
                    .is_some_and(|id| self.arms.iter().any(|x| x == id))
            });
        }
        Ok(doc)
    }

    /// The TOML of point `p` as a file that runs from anywhere: `[load] trace` written as
    /// the absolute form of the path the parser resolved it to (a relative one is taken
    /// from the scenario file's directory, which a file elsewhere would not share).
    pub fn portable_toml(&self, p: &[usize]) -> Result<toml::Table, TuneError> {
        let mut doc = self.toml(p)?;
        let text = toml::to_string(&doc).map_err(|e| TuneError::Text(e.to_string()))?;
        let parsed = parse(&text, &self.origin).map_err(|e| TuneError::Text(e.to_string()))?;
        if let (Some(trace), Some(given)) = (
            parsed.load.trace,
            doc.get_mut("load")
                .and_then(toml::Value::as_table_mut)
                .and_then(|l| l.get_mut("trace")),
        ) {
            let path = std::path::absolute(&trace.path).unwrap_or(trace.path);
            *given = toml::Value::String(path.to_string_lossy().into_owned());
        }
        Ok(doc)
    }

    /// The validated scenario of point `p`.
    pub fn scenario(&self, p: &[usize]) -> Result<Scenario, TuneError> {
        let doc = self.toml(p)?;
        self.validate(&doc).map_err(|error| {
            let (key, value) = self.describe(p).into_iter().fold(
                (String::new(), String::new()),
                |(k, v), (a, b)| {
                    let sep = if k.is_empty() { "" } else { "," };
                    (format!("{k}{sep}{a}"), format!("{v}{sep}{b}"))
                },
            );
            TuneError::Point {
                key,
                value,
                error: Box::new(error),
            }
        })
    }

    fn validate(&self, doc: &toml::Table) -> Result<Scenario, herd_scenario::ScenarioError> {
        let text = toml::to_string(doc).unwrap_or_default();
        let mut s = parse(&text, &self.origin)?;
        trace::resolve(&mut s)?;
        Ok(s)
    }

    /// Each value of each vary on its own, so a bad one is named alone.
    fn check_each_value(&self) -> Result<(), TuneError> {
        for v in &self.varies {
            for value in &v.values {
                let mut doc = self.base.clone();
                self.set(&mut doc, v, value)
                    .map_err(|why| TuneError::Vary {
                        spec: format!("{}={value}", v.key),
                        why,
                    })?;
                self.validate(&doc).map_err(|error| TuneError::Point {
                    key: v.key.clone(),
                    value: value.to_string(),
                    error: Box::new(error),
                })?;
            }
        }
        Ok(())
    }

    /// Writes one value: into the scenario, or into every evaluated arm.
    fn set(&self, doc: &mut toml::Table, v: &Vary, value: &Value) -> Result<(), String> {
        match v.scope {
            Scope::Scenario => set_path(doc, &v.path, value),
            Scope::Arm => {
                let Some(toml::Value::Array(arms)) = doc.get_mut("arms") else {
                    return Err("the scenario has no arms".into());
                };
                for arm in arms.iter_mut() {
                    let Some(t) = arm.as_table_mut() else {
                        continue;
                    };
                    let id = t.get("id").and_then(toml::Value::as_str).unwrap_or("");
                    if self.arms.iter().any(|x| x == id) {
                        set_path(t, &v.path, value)?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// Sets (or removes) the value at `path` under `t`, creating missing tables.
fn set_path(t: &mut toml::Table, path: &[Segment], value: &Value) -> Result<(), String> {
    match path {
        [] => Err("an empty key".into()),
        [Segment::Key(k)] => {
            match value {
                Value::Remove => {
                    t.remove(k);
                }
                Value::Set(v) => {
                    t.insert(k.clone(), v.clone());
                }
            }
            Ok(())
        }
        [Segment::Index(i), ..] => Err(format!("index {i} where the scenario has a table")),
        [Segment::Key(k), rest @ ..] => {
            let next = t
                .entry(k.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            set_value(next, k, rest, value)
        }
    }
}

/// Continues [`set_path`] below `v` (reached by key `k`).
fn set_value(v: &mut toml::Value, k: &str, rest: &[Segment], value: &Value) -> Result<(), String> {
    match (v, rest.first()) {
        (toml::Value::Table(t), _) => set_path(t, rest, value),
        (toml::Value::Array(a), Some(Segment::Index(i))) => {
            let n = a.len();
            let item = a
                .get_mut(*i)
                .ok_or_else(|| format!("`{k}` has {n} element(s), no index {i}"))?;
            match &rest[1..] {
                [] => Err("a key ends with a name, not an index".into()),
                deeper => set_value(item, k, deeper, value),
            }
        }
        _ => Err(format!("`{k}` is a value, not a table")),
    }
}
