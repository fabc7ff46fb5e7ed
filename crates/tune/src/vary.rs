//! `--vary KEY=VALUES`: which key of the scenario a search changes, and the values it takes.
//!
//! A key is a dotted path into the scenario's TOML, so any key a scenario file can hold can
//! be searched without herd-tune knowing it: the values are written into the text and the
//! result goes through the same validation as a hand-written file. Two kinds of key:
//!
//! - **arm keys** (`retries`, `base_ms`, `jitter`, `budget`, `deadline_ms`,
//!   `consumers.on_timeout`, …) change the arm being tuned;
//! - **scenario keys** (a path starting with `upstream.`, `load.`, `client.`, `network.`
//!   or `seed`) change the world every arm runs in: a what-if sweep.
//!
//! Values are a comma-separated list; an item `A..B` is every integer from A to B. Each item
//! is read as TOML would read it (integer, float, boolean), else as a string, so
//! `jitter=none,full` and `retries=0..5` both work. `none` removes the key for keys whose
//! absence means "none" (`budget`, `retry_after`, `deadline_ms`); for `budget`, any other
//! word is the budget's kind with that kind's defaults (`budget=percent`).

use crate::error::TuneError;
use std::fmt;

/// Tables of the scenario whose keys are the world's, not an arm's.
const SCENARIO_TABLES: &[&str] = &["upstream", "load", "client", "network", "seed"];

/// Arm keys that `none` removes.
const OPTIONAL_ARM_KEYS: &[&str] = &["budget", "retry_after", "deadline_ms"];

/// Most values one `--vary` may list (a typo such as `0..1000000` is refused, not run).
pub const MAX_VALUES: usize = 10_000;

/// One value a key takes.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Written into the scenario.
    Set(toml::Value),
    /// The key is removed (its default applies).
    Remove,
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Remove => f.write_str("none"),
            Value::Set(toml::Value::String(s)) => f.write_str(s),
            Value::Set(toml::Value::Table(t)) => match t.get("kind") {
                Some(toml::Value::String(k)) if t.len() == 1 => f.write_str(k),
                _ => write!(f, "{t}"),
            },
            Value::Set(v) => write!(f, "{v}"),
        }
    }
}

impl Value {
    /// The value as a number, for plotting a sweep (`None` for words).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Set(toml::Value::Integer(i)) => Some(*i as f64),
            Value::Set(toml::Value::Float(x)) => Some(*x),
            _ => None,
        }
    }
}

/// Whether a key changes the tuned arm or the whole scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// A key of the arm (and of its `consumers = { … }` overrides).
    Arm,
    /// A key of the scenario, for every arm.
    Scenario,
}

/// One `--vary`.
#[derive(Clone, Debug, PartialEq)]
pub struct Vary {
    /// The dotted key as given.
    pub key: String,
    /// Its path segments.
    pub path: Vec<Segment>,
    /// The values, in the order given.
    pub values: Vec<Value>,
    /// Arm or scenario.
    pub scope: Scope,
}

/// A step of a key's path: a table key or an array index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    /// `name`.
    Key(String),
    /// `0`.
    Index(usize),
}

impl Vary {
    /// Parses `KEY=VALUES`.
    pub fn parse(spec: &str) -> Result<Vary, TuneError> {
        let bad = |why: &str| TuneError::Vary {
            spec: spec.to_owned(),
            why: why.to_owned(),
        };
        let (key, list) = spec
            .split_once('=')
            .ok_or_else(|| bad("expected KEY=VALUES, e.g. retries=0..5 or jitter=none,full"))?;
        let key = key.trim();
        if key.is_empty() {
            return Err(bad("the key is empty"));
        }
        let path = key
            .split('.')
            .map(|s| match s.parse::<usize>() {
                Ok(i) => Ok(Segment::Index(i)),
                Err(_)
                    if !s.is_empty()
                        && s.chars()
                            .all(|c| c.is_alphanumeric() || c == '_' || c == '-') =>
                {
                    Ok(Segment::Key(s.to_owned()))
                }
                Err(_) => Err(bad(&format!("`{s}` is not a key name"))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let Some(Segment::Key(first)) = path.first() else {
            return Err(bad("a key starts with a name"));
        };
        let scope = if SCENARIO_TABLES.contains(&first.as_str()) {
            Scope::Scenario
        } else {
            Scope::Arm
        };
        let mut values = Vec::new();
        for item in list.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(bad("an empty value in the list"));
            }
            match range(item) {
                Some(Ok((a, b))) => {
                    if b < a {
                        return Err(bad(&format!("the range {item} is empty")));
                    }
                    if (b - a) as u128 + 1 + values.len() as u128 > MAX_VALUES as u128 {
                        return Err(bad(&format!("more than {MAX_VALUES} values")));
                    }
                    values.extend((a..=b).map(|i| Value::Set(toml::Value::Integer(i))));
                }
                Some(Err(why)) => return Err(bad(&why)),
                None => values.push(value(key, first, item)),
            }
            if values.len() > MAX_VALUES {
                return Err(bad(&format!("more than {MAX_VALUES} values")));
            }
        }
        Ok(Vary {
            key: key.to_owned(),
            path,
            values,
            scope,
        })
    }
}

/// `A..B` as integers; `None` if the item is not a range at all.
fn range(item: &str) -> Option<Result<(i64, i64), String>> {
    let (a, b) = item.split_once("..")?;
    Some(match (a.trim().parse::<i64>(), b.trim().parse::<i64>()) {
        (Ok(a), Ok(b)) => Ok((a, b)),
        _ => Err(format!("`{item}`: a range is two integers, A..B")),
    })
}

/// One list item, read as TOML reads a value, else as a word.
fn value(key: &str, first: &str, item: &str) -> Value {
    if item == "none" && OPTIONAL_ARM_KEYS.contains(&key) {
        return Value::Remove;
    }
    let v = if let Ok(i) = item.parse::<i64>() {
        toml::Value::Integer(i)
    } else if let Ok(x) = item.parse::<f64>() {
        toml::Value::Float(x)
    } else if let Ok(b) = item.parse::<bool>() {
        toml::Value::Boolean(b)
    } else {
        toml::Value::String(item.to_owned())
    };
    if first == "budget" && key == "budget" {
        if let toml::Value::String(kind) = v {
            let mut t = toml::Table::new();
            t.insert("kind".into(), toml::Value::String(kind));
            return Value::Set(toml::Value::Table(t));
        }
    }
    Value::Set(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_words_and_numbers() {
        let v = Vary::parse("retries=0..2,5").unwrap();
        assert_eq!(v.scope, Scope::Arm);
        let shown: Vec<String> = v.values.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["0", "1", "2", "5"]);
        let v = Vary::parse("jitter=none,full").unwrap();
        assert_eq!(v.values[0], Value::Set(toml::Value::String("none".into())));
        let v = Vary::parse("budget=none,percent").unwrap();
        assert_eq!(v.values[0], Value::Remove);
        assert_eq!(v.values[1].to_string(), "percent");
        let v = Vary::parse("upstream.incidents.0.duration_ms=300,1000.5").unwrap();
        assert_eq!(v.scope, Scope::Scenario);
        assert_eq!(v.path[2], Segment::Index(0));
        assert_eq!(v.values[1].as_f64(), Some(1000.5));
    }

    #[test]
    fn bad_specs_name_the_problem() {
        for (spec, why) in [
            ("retries", "expected KEY=VALUES"),
            ("=1", "key is empty"),
            ("retries=5..1", "empty"),
            ("retries=a..b", "two integers"),
            ("retries=1,,2", "empty value"),
            ("retries=0..100000", "more than"),
            ("a..b=1", "not a key name"),
        ] {
            let e = Vary::parse(spec).unwrap_err().to_string();
            assert!(e.contains(why) && e.starts_with("--vary "), "{spec}: {e}");
        }
    }
}
