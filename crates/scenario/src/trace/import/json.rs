//! One line of a JSON-lines access log: an object per line, with the time, the method,
//! the path and (optionally) the consumer under names the user gives.
//!
//! ```text
//! {"time":"1700000000.123","method":"POST","path":"/orders?id=7","remote_addr":"10.0.0.1"}
//! ```
//!
//! A name is looked up as a key first, then as a dotted path into nested objects
//! (`http.method`), since structured loggers nest. The time is a number or a numeric
//! string (seconds since the epoch unless `--time-unit ms`), an ISO 8601 string or a CLF
//! date; the path may be a whole request line (`GET /x HTTP/1.1`, nginx's `$request`) when
//! the method is in it.

use super::time::{self, EpochUnit};
use super::Entry;
use herd_retry::Method;
use serde_json::Value;

/// The field names of a JSON-lines log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonFields {
    /// The time (default `time`).
    pub time: String,
    /// The method (default `method`). A line without it must carry a whole request line in
    /// the path field.
    pub method: String,
    /// The path and query, or a whole request line (default `path`).
    pub path: String,
    /// The consumer; `None`: every line is consumer 0.
    pub consumer: Option<String>,
    /// What a numeric time counts.
    pub unit: EpochUnit,
}

impl Default for JsonFields {
    fn default() -> Self {
        JsonFields {
            time: "time".into(),
            method: "method".into(),
            path: "path".into(),
            consumer: None,
            unit: EpochUnit::Seconds,
        }
    }
}

/// The entry of `line`, or a sentence saying what is wrong with it.
pub fn parse(line: &[u8], f: &JsonFields) -> Result<Entry, String> {
    let v: Value = serde_json::from_slice(line).map_err(|e| format!("not a JSON object: {e}"))?;
    if !v.is_object() {
        return Err("not a JSON object".into());
    }
    let (time, resolution) = match field(&v, &f.time) {
        Some(Value::Number(n)) => number_time(n, f.unit),
        Some(Value::String(s)) => time::parse_with_resolution(s, f.unit),
        Some(_) => None,
        None => {
            return Err(format!(
                "no `{}` field (name the time's with --time-field)",
                f.time
            ))
        }
    }
    .ok_or_else(|| {
        format!(
            "`{}` is not a time: seconds since the epoch, ISO 8601 or a CLF date",
            f.time
        )
    })?;
    let path = match field(&v, &f.path) {
        Some(Value::String(s)) => s.as_bytes(),
        Some(_) => return Err(format!("`{}` is not a string", f.path)),
        None => {
            return Err(format!(
                "no `{}` field (name the path's with --path-field)",
                f.path
            ))
        }
    };
    let (method, target) = match field(&v, &f.method) {
        Some(Value::String(m)) => (
            m.parse::<Method>()
                .map_err(|e| format!("`{}`: {e}", f.method))?,
            path.to_vec(),
        ),
        Some(_) => return Err(format!("`{}` is not a string", f.method)),
        None if path.contains(&b' ') => super::request_line(path)?,
        None => {
            return Err(format!(
                "no `{}` field (name the method's with --method-field)",
                f.method
            ))
        }
    };
    let client = match &f.consumer {
        None => None,
        Some(name) => Some(match field(&v, name) {
            Some(Value::String(s)) => s.as_bytes().to_vec(),
            Some(Value::Number(n)) => n.to_string().into_bytes(),
            Some(_) => return Err(format!("`{name}` is not a string or a number")),
            None => return Err(format!("no `{name}` field (--consumer)")),
        }),
    };
    Ok(Entry {
        time,
        resolution,
        method,
        target,
        client,
    })
}

/// `name` as a key, else as a dotted path.
fn field<'v>(v: &'v Value, name: &str) -> Option<&'v Value> {
    if let Some(x) = v.get(name) {
        return Some(x);
    }
    if !name.contains('.') {
        return None;
    }
    name.split('.').try_fold(v, |v, k| v.get(k))
}

/// A numeric time and its resolution: a whole number is one `unit`; a float's is read
/// from its shortest decimal spelling, so `1700000000.1` reads as 100 ms (the import takes
/// the finest resolution over the log's lines, so one line with three decimals settles it).
fn number_time(n: &serde_json::Number, unit: EpochUnit) -> Option<(time::Micros, time::Micros)> {
    let base = match unit {
        EpochUnit::Seconds => 1_000_000,
        EpochUnit::Millis => 1_000,
    };
    if let Some(i) = n.as_u64() {
        return time::decimal(&i.to_string(), unit).map(|t| (t, base));
    }
    // A float's shortest decimal spelling is the number as the logger wrote it.
    let text = n
        .as_f64()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .map(|x| format!("{x}"))?;
    time::decimal(&text, unit).map(|t| (t, time::resolution(&text, base)))
}
