//! Trace replay: arrivals read from a recorded CSV instead of generated from a seed.
//!
//! ```text
//! # comment lines and blank lines are ignored
//! t_ms,consumer[,method[,path]]
//! 0,17
//! 12.5,3,GET,/orders
//! ```
//!
//! `t_ms` is milliseconds from the start of the trace (never decreasing), `consumer` the
//! index of the consumer that produced the unit (below `[consumers] count`; ignored
//! without `[consumers]`). `method` and `path`, when present, are what that request is:
//! `herd bench` sends it with that method to that path (and query), and both `herd bench`
//! and `herd sim` decide its retries by that method's idempotency; without them a request
//! is `[load] method` to `/`. A path is origin-form (`/…`) in URI characters, with `,`
//! written `%2C` ([`is_path_byte`]); `herd trace import` writes access logs this way.
//!
//! ## Why it is read twice and never held
//!
//! A trace of an hour of incident is millions of lines, so it is **streamed**: one
//! [`TraceReader`] over a `BufRead`, line by line, constant memory. It is scanned once
//! before anything runs ([`resolve`]) so that a malformed line is an input error naming
//! the file and line (exit 2) instead of a run that dies half-way, and so that the run
//! knows how many units and what mean rate to report against. The run then streams it
//! again. With `skip_bad_lines` the bad lines are counted and the first few named.

pub mod import;

use crate::duration::{show, BoundedDuration};
use crate::error::ScenarioError;
use crate::model::{Scenario, Trace};
use herd_retry::Method;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How many skipped line numbers a [`Scan`] keeps.
pub const FIRST_SKIPPED: usize = 5;

/// One arrival of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceLine {
    /// When, from the start of the run (`t_ms` × `time_scale`).
    pub at: Duration,
    /// Which consumer.
    pub consumer: u64,
    /// The request's method, when the trace says.
    pub method: Option<Method>,
    /// The request's path and query, when the trace says.
    pub path: Option<Arc<str>>,
}

/// Whether `b` may appear in a trace's path as written: the URI characters of a path and
/// query (RFC 3986 unreserved, sub-delims but `,`, `:@/?` and `%` of a percent-escape).
/// `,` separates the CSV's columns, so a path carries it as `%2C`.
pub fn is_path_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+;=:@/?%".contains(&b)
}

/// A streamed trace.
pub struct TraceReader<R> {
    input: R,
    origin: String,
    time_scale: f64,
    skip_bad_lines: bool,
    line_no: u64,
    columns: Option<usize>,
    last_ms: f64,
    buf: String,
    skipped: u64,
    first_skipped: Vec<u64>,
    error: Option<ScenarioError>,
}

impl TraceReader<BufReader<File>> {
    /// Opens `trace`'s file.
    pub fn open(trace: &Trace) -> Result<Self, ScenarioError> {
        let f = File::open(&trace.path).map_err(|error| ScenarioError::Io {
            path: trace.path.display().to_string(),
            error,
        })?;
        Ok(TraceReader::new(
            BufReader::new(f),
            &trace.path,
            trace.time_scale,
            trace.skip_bad_lines,
        ))
    }
}

impl<R: BufRead> TraceReader<R> {
    /// A reader over `input`; `origin` names it in errors.
    pub fn new(input: R, origin: &Path, time_scale: f64, skip_bad_lines: bool) -> Self {
        TraceReader {
            input,
            origin: origin.display().to_string(),
            time_scale,
            skip_bad_lines,
            line_no: 0,
            columns: None,
            last_ms: 0.0,
            buf: String::new(),
            skipped: 0,
            first_skipped: Vec::new(),
            error: None,
        }
    }

    /// The next arrival, `Ok(None)` at the end, or the first error (a bad line, unless
    /// skipping; an unreadable file; a missing header).
    pub fn next_line(&mut self) -> Result<Option<TraceLine>, ScenarioError> {
        loop {
            self.buf.clear();
            let n = self
                .input
                .read_line(&mut self.buf)
                .map_err(|error| ScenarioError::Io {
                    path: self.origin.clone(),
                    error,
                })?;
            if n == 0 {
                if self.columns.is_none() {
                    return Err(self.bad("empty trace: expected a header `t_ms,consumer`"));
                }
                return Ok(None);
            }
            self.line_no += 1;
            let line = self.buf.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some(columns) = self.columns else {
                self.columns = Some(header(line).map_err(|m| self.bad(&m))?);
                continue;
            };
            let parsed = parse_line(line, columns, self.last_ms).and_then(|(t_ms, rest)| {
                let at = BoundedDuration::from_ms(t_ms * self.time_scale).map_err(|e| {
                    format!(
                        "t_ms {} × time_scale {}: {e}",
                        show(t_ms),
                        show(self.time_scale)
                    )
                })?;
                Ok((t_ms, at.get(), rest))
            });
            match parsed {
                Ok((t_ms, at, (consumer, method, path))) => {
                    self.last_ms = t_ms;
                    return Ok(Some(TraceLine {
                        at,
                        consumer,
                        method,
                        path,
                    }));
                }
                Err(m) if self.skip_bad_lines => {
                    let _ = m;
                    self.skipped += 1;
                    if self.first_skipped.len() < FIRST_SKIPPED {
                        self.first_skipped.push(self.line_no);
                    }
                }
                Err(m) => return Err(self.bad(&m)),
            }
        }
    }

    /// Lines skipped so far, and the first few of their numbers.
    pub fn skipped(&self) -> (u64, &[u64]) {
        (self.skipped, &self.first_skipped)
    }

    /// The error that ended iteration, if one did (iteration stops at the first).
    pub fn error(&self) -> Option<&ScenarioError> {
        self.error.as_ref()
    }

    /// Takes the error that ended iteration, if one did.
    pub fn take_error(&mut self) -> Option<ScenarioError> {
        self.error.take()
    }

    fn bad(&self, message: &str) -> ScenarioError {
        ScenarioError::Invalid {
            origin: self.origin.clone(),
            line: Some(self.line_no as usize).filter(|l| *l > 0),
            col: None,
            key: None,
            message: message.to_owned(),
        }
    }
}

/// Arrivals until the end or the first error, which [`TraceReader::error`] then holds.
impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = TraceLine;
    fn next(&mut self) -> Option<TraceLine> {
        if self.error.is_some() {
            return None;
        }
        match self.next_line() {
            Ok(l) => l,
            Err(e) => {
                self.error = Some(e);
                None
            }
        }
    }
}

/// The header's column count (2 to 4), or what is wrong with it.
fn header(line: &str) -> Result<usize, String> {
    const COLUMNS: [&str; 4] = ["t_ms", "consumer", "method", "path"];
    let cols: Vec<&str> = line.split(',').map(str::trim).collect();
    if cols.len() >= 2 && cols.len() <= 4 && cols.iter().zip(COLUMNS).all(|(a, b)| *a == b) {
        Ok(cols.len())
    } else {
        Err(format!(
            "bad header `{line}`: expected `t_ms,consumer`, optionally followed by `,method` and `,path`"
        ))
    }
}

/// What a data line says after its time: consumer, method, path.
type Said = (u64, Option<Method>, Option<Arc<str>>);

/// `(t_ms, rest)` of a data line, or what is wrong with it.
fn parse_line(line: &str, columns: usize, last_ms: f64) -> Result<(f64, Said), String> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    if fields.len() != columns {
        return Err(format!(
            "expected {columns} fields, got {} in `{line}`",
            fields.len()
        ));
    }
    let t_ms: f64 = fields[0]
        .parse()
        .ok()
        .filter(|t: &f64| t.is_finite() && *t >= 0.0)
        .ok_or_else(|| format!("t_ms `{}` is not a number of milliseconds ≥ 0", fields[0]))?;
    if t_ms < last_ms {
        return Err(format!(
            "t_ms {t_ms} goes back in time (the previous line said {last_ms}); a trace must be sorted"
        ));
    }
    let consumer: u64 = fields[1].parse().map_err(|_| {
        format!(
            "consumer `{}` is not a consumer index (0, 1, 2, …)",
            fields[1]
        )
    })?;
    let method = match fields.get(2) {
        Some(m) => Some(m.parse::<Method>().map_err(|e| format!("method: {e}"))?),
        None => None,
    };
    let path = match fields.get(3) {
        Some(p) if !p.starts_with('/') => return Err(format!("path `{p}` must start with `/`")),
        Some(p) if !p.bytes().all(is_path_byte) => {
            return Err(format!(
                "path `{p}` has a character a URI path cannot carry as is (percent-encode it; `,` is `%2C`)"
            ))
        }
        Some(p) => Some(Arc::from(*p)),
        None => None,
    };
    Ok((t_ms, (consumer, method, path)))
}

/// What a scan of a whole trace found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scan {
    /// Arrivals (good lines, up to the cap).
    pub lines: u64,
    /// The last arrival's time.
    pub last: Duration,
    /// Lines skipped as malformed.
    pub skipped: u64,
    /// The first few skipped line numbers.
    pub first_skipped: Vec<u64>,
}

/// Scans `scenario`'s trace, if it has one, and sets `load.requests` (the lines, capped by
/// the `requests` already there) and `load.rate` (their mean rate). Also checks each line's
/// consumer against `[consumers] count`. Call it after every override and before a run.
pub fn resolve(scenario: &mut Scenario) -> Result<Option<Scan>, ScenarioError> {
    let Some(trace) = &scenario.load.trace else {
        return Ok(None);
    };
    let count = scenario.consumers.as_ref().map(|c| u64::from(c.count));
    let mut r = TraceReader::open(trace)?;
    let cap = scenario.load.requests;
    let mut scan = Scan::default();
    while scan.lines < cap {
        let Some(l) = r.next_line()? else { break };
        if let Some(n) = count.filter(|n| l.consumer >= *n) {
            return Err(r.bad(&format!(
                "consumer {} is not one of the scenario's {n} consumers ([consumers] count)",
                l.consumer
            )));
        }
        scan.lines += 1;
        scan.last = l.at;
    }
    let (skipped, first) = r.skipped();
    scan.skipped = skipped;
    scan.first_skipped = first.to_vec();
    if scan.lines == 0 {
        return Err(r.bad("the trace has no arrivals"));
    }
    scenario.load.requests = scan.lines;
    // The mean rate over the trace's span (a one-instant trace counts as one second).
    let span = scan.last.as_secs_f64();
    let rate = if span > 0.0 {
        scan.lines as f64 / span
    } else {
        scan.lines as f64
    };
    scenario.load.rate = (rate * 1000.0).round().max(1.0) / 1000.0;
    Ok(Some(scan))
}

#[cfg(test)]
mod tests;
