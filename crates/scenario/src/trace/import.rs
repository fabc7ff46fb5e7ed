//! Access logs in: an nginx or Apache log (Common or Combined Log Format) or a JSON-lines
//! log, turned into a trace CSV ([`crate::trace`]) that `herd sim` and `herd bench` replay.
//!
//! ## Why it streams, and what that decides
//!
//! A day of access log is gigabytes, so the import is one pass, line by line, writing each
//! trace line as it reads the log line: memory is flat in the file's size (a line longer
//! than [`MAX_LINE`] is a bad line, not a buffer that grows). Two things follow:
//!
//! - **Out-of-order timestamps are clamped, not sorted.** A server logs a request when it
//!   ends, and with `%t`/`$time_local` stamps its *start*, so lines of concurrent requests
//!   come a little out of order. Sorting would hold the file; refusing would refuse every
//!   busy Apache log. A line earlier than the one before is written at the previous
//!   line's time; [`Imported`] counts them and the largest step back, so a log that is
//!   badly out of order (two files concatenated) is visible.
//! - **Consumers are numbered by first appearance**: the first client address is
//!   consumer 0, the next new one 1, …; the table of seen clients is the only state that
//!   grows, with the number of distinct clients, not of lines.
//!
//! `t_ms` counts from the first line's time at the log's resolution: a CLF date has whole
//! seconds (so `t_ms` is a multiple of 1000), nginx's `$msec` milliseconds. A gzip file is
//! recognised by its magic bytes, whatever its name.
//!
//! ## The log's clock
//!
//! A 1 s clock stamps each second's requests with one instant, and a replay sends them at
//! once. [`Imported::resolution`] and [`Imported::sharing`] say how coarse the clock was
//! and how many requests shared an instant, and a [`Spread`] places them within it
//! ([`spread`]). A log from behind retrying clients already holds their retries;
//! [`ImportOptions::fold_retries`] folds the obvious ones into the request they repeat
//! ([`fold`]).

mod clf;
pub mod fold;
mod json;
pub mod spread;
pub mod time;

pub use clf::ClfConsumer;
pub use json::JsonFields;
pub use spread::{Sharing, Spread};

use super::{is_path_byte, FIRST_SKIPPED};
use crate::duration::MAX_DURATION;
use crate::error::ScenarioError;
use flate2::bufread::MultiGzDecoder;
use herd_retry::Method;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;
use std::time::Duration;
use time::Micros;

/// The longest log line read (1 MiB); a longer one is a bad line.
pub const MAX_LINE: usize = 1 << 20;

/// The kind of log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// Common Log Format: `host ident user [time] "request" status bytes`.
    Common,
    /// Combined: Common followed by `"referer" "user-agent"` (and anything after them).
    Combined,
    /// One JSON object per line.
    Json,
}

/// How to read a log.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// The kind of log.
    pub format: LogFormat,
    /// For CLF: which field is the consumer.
    pub clf_consumer: ClfConsumer,
    /// For JSON: the field names.
    pub json: JsonFields,
    /// Count and skip malformed lines instead of stopping at the first.
    pub skip_bad_lines: bool,
    /// Place the requests that share an instant within it, and the seed of the draws.
    pub spread: Option<(Spread, u64)>,
    /// Fold a request into the one before when the same client sent the same method and
    /// path within this window of it.
    pub fold_retries: Option<Duration>,
}

/// What an import did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Imported {
    /// Trace lines written.
    pub lines: u64,
    /// Distinct consumers.
    pub consumers: u64,
    /// The last line's `t_ms`.
    pub span: Duration,
    /// Bad lines skipped.
    pub skipped: u64,
    /// The first few skipped line numbers.
    pub first_skipped: Vec<u64>,
    /// Why the first skipped line was bad.
    pub first_reason: Option<String>,
    /// Lines earlier than the line before, written at its time.
    pub clamped: u64,
    /// The largest of their steps back.
    pub max_step_back: Duration,
    /// The log's clock: the finest step its time spellings can write (1 s for a CLF date,
    /// 1 ms for `$msec`).
    pub resolution: Duration,
    /// How many requests shared an instant of that clock (before any spread).
    pub sharing: Sharing,
    /// Requests folded into the one before (with [`ImportOptions::fold_retries`]); not
    /// counted in `lines`.
    pub folded: u64,
}

/// Why an import stopped. No `source()`: each message already says its cause.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The log: unreadable, or a bad line (with file and line).
    #[error("{0}")]
    Input(ScenarioError),
    /// Writing the trace failed.
    #[error("writing the trace: {0}")]
    Output(io::Error),
}

/// One request as a log line says it.
pub struct Entry {
    /// When.
    pub time: Micros,
    /// The step of the clock that wrote it, µs (see [`time::parse_with_resolution`]).
    pub resolution: Micros,
    /// How.
    pub method: Method,
    /// The request target as sent (escapes decoded).
    pub target: Vec<u8>,
    /// Who: the consumer's key, if the format names one.
    pub client: Option<Vec<u8>>,
}

/// Opens a log, gunzipping it if it starts with gzip's magic bytes.
pub fn open(path: &Path) -> Result<Box<dyn BufRead>, ScenarioError> {
    let io = |error| ScenarioError::Io {
        path: path.display().to_string(),
        error,
    };
    let mut r = BufReader::new(File::open(path).map_err(io)?);
    let gz = r.fill_buf().map_err(io)?.starts_with(&[0x1f, 0x8b]);
    Ok(if gz {
        Box::new(BufReader::new(MultiGzDecoder::new(r)))
    } else {
        Box::new(r)
    })
}

/// Reads the log `input` (named `origin` in errors) and writes its trace to `out`: the
/// header `t_ms,consumer,method,path`, then one line per request.
pub fn import<R: BufRead, W: Write>(
    mut input: R,
    origin: &Path,
    opts: &ImportOptions,
    mut out: W,
) -> Result<Imported, ImportError> {
    let origin = origin.display().to_string();
    let bad = |line: u64, message: String| {
        ImportError::Input(ScenarioError::Invalid {
            origin: origin.clone(),
            line: Some(line as usize),
            col: None,
            key: None,
            message,
        })
    };
    writeln!(out, "t_ms,consumer,method,path").map_err(ImportError::Output)?;
    let mut run = Run {
        opts,
        done: Imported::default(),
        clients: HashMap::new(),
        first: None,
        last: 0,
        resolution: None,
        fold: opts
            .fold_retries
            .map(|w| fold::Folder::new(w.as_micros().min(i64::MAX as u128) as Micros)),
    };
    let mut grouper = spread::Grouper::new(opts.spread);
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    let unreadable = |error| {
        ImportError::Input(ScenarioError::Io {
            path: origin.clone(),
            error,
        })
    };
    while let Some(whole) = read_line(&mut input, &mut buf).map_err(unreadable)? {
        line_no += 1;
        let line = trim(&buf);
        if whole && line.is_empty() {
            continue;
        }
        let traced = if whole {
            run.trace_line(line)
        } else {
            Err(format!("line longer than {MAX_LINE} bytes"))
        };
        match traced {
            Ok(None) => {}
            Ok(Some(r)) if grouper.full(r.at) => {
                return Err(bad(
                    line_no,
                    format!(
                        "more than {} requests share one instant of the log's clock; import without --spread",
                        spread::MAX_GROUP
                    ),
                ))
            }
            Ok(Some(r)) => grouper
                .push(&mut out, r.at, r.width, r.consumer, r.method, r.path)
                .map_err(ImportError::Output)?,
            Err(m) if opts.skip_bad_lines => run.skip(line_no, m),
            Err(m) => return Err(bad(line_no, m)),
        }
    }
    grouper.finish(&mut out).map_err(ImportError::Output)?;
    out.flush().map_err(ImportError::Output)?;
    let mut done = run.done;
    done.span = Duration::from_micros(grouper.last.max(0) as u64);
    done.sharing = grouper.sharing;
    done.resolution = Duration::from_micros(run.resolution.unwrap_or(1).max(1) as u64);
    done.folded = run.fold.as_ref().map_or(0, |f| f.folded);
    if done.lines == 0 {
        let message = match &done.first_reason {
            Some(r) => format!("no request could be read (every line was bad; the first: {r})"),
            None => "the log has no lines".to_owned(),
        };
        return Err(bad(line_no.max(1), message));
    }
    done.consumers = run.clients.len().max(1) as u64;
    Ok(done)
}

/// One import's running state: what [`Imported`] reports, and what the next line's time
/// and consumer depend on.
struct Run<'o> {
    opts: &'o ImportOptions,
    done: Imported,
    /// Client key → consumer, numbered by first appearance.
    clients: HashMap<Vec<u8>, u64>,
    /// The first good line's time.
    first: Option<Micros>,
    /// The last request's `t_ms` (before any spread), µs.
    last: Micros,
    /// The finest clock step of the lines so far, µs.
    resolution: Option<Micros>,
    fold: Option<fold::Folder>,
}

/// A request read from a line, at its log instant.
struct Request {
    at: Micros,
    width: Micros,
    consumer: u64,
    method: Method,
    path: String,
}

impl Run<'_> {
    /// The request of log line `line` (`None`: folded into the one before), or why the
    /// line is bad.
    fn trace_line(&mut self, line: &[u8]) -> Result<Option<Request>, String> {
        let e = entry(line, self.opts)?;
        let path = path_of(&e.target)?;
        let since = e.time.saturating_sub(*self.first.get_or_insert(e.time));
        if since > MAX_DURATION.as_micros() as i64 {
            return Err(format!(
                "this line is more than {} days after the first",
                MAX_DURATION.as_secs() / 86_400
            ));
        }
        let t = self.clamp(since);
        let consumer = match e.client {
            None => 0,
            Some(key) => {
                let next = self.clients.len() as u64;
                *self.clients.entry(key).or_insert(next)
            }
        };
        let width = *self.resolution.insert(
            self.resolution
                .map_or(e.resolution, |r| r.min(e.resolution)),
        );
        if let Some(f) = &mut self.fold {
            if f.is_retry(t, consumer, e.method, &path) {
                return Ok(None);
            }
        }
        self.done.lines += 1;
        Ok(Some(Request {
            at: t,
            width,
            consumer,
            method: e.method,
            path,
        }))
    }

    /// `since`, or the previous line's time if it is earlier (counted; see the module docs).
    fn clamp(&mut self, since: Micros) -> Micros {
        if since < self.last {
            self.done.clamped += 1;
            let back = Duration::from_micros((self.last - since) as u64);
            self.done.max_step_back = self.done.max_step_back.max(back);
        } else {
            self.last = since;
        }
        self.last
    }

    fn skip(&mut self, line_no: u64, reason: String) {
        self.done.skipped += 1;
        if self.done.first_skipped.len() < FIRST_SKIPPED {
            self.done.first_skipped.push(line_no);
        }
        self.done.first_reason.get_or_insert(reason);
    }
}

fn entry(line: &[u8], opts: &ImportOptions) -> Result<Entry, String> {
    match opts.format {
        LogFormat::Json => json::parse(line, &opts.json),
        f => clf::parse(line, f, opts.clf_consumer),
    }
}

/// `METHOD TARGET[ HTTP/x]`, as in a CLF request field or nginx's `$request`. The target
/// is everything between the method and the protocol: nginx accepts (and logs) a request
/// whose target holds a space.
fn request_line(r: &[u8]) -> Result<(Method, Vec<u8>), String> {
    let shape = || {
        format!(
            "request `{}` is not `METHOD /path HTTP/x`",
            r.escape_ascii()
        )
    };
    let r = trim(r);
    let (m, rest) = match r.iter().position(|b| *b == b' ') {
        Some(i) => (&r[..i], trim(&r[i..])),
        None => return Err(shape()),
    };
    let target = match rest.iter().rposition(|b| *b == b' ') {
        Some(i) if rest[i + 1..].starts_with(b"HTTP/") => trim(&rest[..i]),
        _ => rest,
    };
    if target.is_empty() {
        return Err(shape());
    }
    let method = std::str::from_utf8(m)
        .ok()
        .and_then(|m| m.parse::<Method>().ok())
        .ok_or_else(|| {
            format!(
                "method `{}` is not one herd sends (GET, HEAD, OPTIONS, PUT, DELETE, TRACE, POST, PATCH, CONNECT)",
                m.escape_ascii()
            )
        })?;
    Ok((method, target.to_vec()))
}

/// The trace's path of a request target: origin-form as is, absolute-form reduced to its
/// path and query; bytes a trace path cannot carry percent-encoded (`,` too).
fn path_of(target: &[u8]) -> Result<String, String> {
    let lower = target.to_ascii_lowercase();
    let origin = if lower.starts_with(b"http://") || lower.starts_with(b"https://") {
        let after = target.iter().position(|b| *b == b':').unwrap_or(0) + 3;
        match target[after..].iter().position(|b| *b == b'/') {
            Some(i) => &target[after + i..],
            None => b"/".as_slice(),
        }
    } else {
        target
    };
    if origin.first() != Some(&b'/') {
        return Err(format!(
            "request target `{}` is not a path (`/…`) or an http URL",
            target.escape_ascii()
        ));
    }
    let mut out = String::with_capacity(origin.len());
    for (i, &b) in origin.iter().enumerate() {
        let escape = b == b'%'
            && origin
                .get(i + 1..i + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
        if is_path_byte(b) && (b != b'%' || escape) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(out)
}

/// Microseconds as a `t_ms`: `1000`, `1000.5`, `0.001`.
fn show_ms(us: Micros) -> String {
    let (ms, frac) = (us / 1000, us % 1000);
    if frac == 0 {
        ms.to_string()
    } else {
        format!("{ms}.{frac:03}").trim_end_matches('0').to_owned()
    }
}

/// The next line into `buf` without its end: `None` at the end of input, `Some(false)` for
/// a line longer than [`MAX_LINE`] (its rest is read and dropped).
fn read_line<R: BufRead>(input: &mut R, buf: &mut Vec<u8>) -> io::Result<Option<bool>> {
    buf.clear();
    let mut any = false;
    let mut whole = true;
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok(any.then_some(whole));
        }
        any = true;
        let (take, end) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if whole && buf.len() + take <= MAX_LINE {
            buf.extend_from_slice(&chunk[..take]);
        } else {
            whole = false;
            buf.clear();
        }
        input.consume(take + usize::from(end));
        if end {
            return Ok(Some(whole));
        }
    }
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &b[start..end]
}

#[cfg(test)]
mod tests;
