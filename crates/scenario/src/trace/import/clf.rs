//! One line of the Common or Combined Log Format, read as bytes.
//!
//! ```text
//! 127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.0" 200 2326
//! 127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "POST /o HTTP/1.1" 201 5 "-" "curl/8.5"
//! 127.0.0.1 - - [1700000000.123] "GET / HTTP/1.1" 200 612 "-" "curl/8.5"
//! ```
//!
//! The time field may be `[$time_local]`, or nginx's `$msec` with or without the brackets.
//! Bytes, not `str`: a log may hold any byte, and nginx writes a request line's `"`, `\`
//! and non-printable bytes as `\xHH` (Apache as `\"`, `\\`, `\xHH`), which are decoded here
//! so that the path is the bytes the client sent.

use super::time::{self, EpochUnit};
use super::{Entry, LogFormat};

/// Which field of a CLF line names the consumer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClfConsumer {
    /// The client address (nginx's `$remote_addr`, Apache's `%h`): the first field.
    #[default]
    RemoteAddr,
    /// The authenticated user (`$remote_user`, `%u`): the third field.
    RemoteUser,
}

/// The entry of `line`, or a sentence saying what is wrong with it.
pub fn parse(line: &[u8], format: LogFormat, consumer: ClfConsumer) -> Result<Entry, String> {
    let mut c = Cursor { b: line, i: 0 };
    let addr = c.token().ok_or("empty line")?;
    let _ident = c
        .token()
        .ok_or("no identity field after the client address")?;
    let user = c.token().ok_or("no user field after the identity")?;
    let when = c.time_field().ok_or("no time field after the user")?;
    let (time, resolution) = time::parse_with_resolution(&String::from_utf8_lossy(when), EpochUnit::Seconds).ok_or_else(|| {
        format!(
            "time `{}` is not a CLF date (10/Oct/2000:13:55:36 -0700), seconds since the epoch (nginx's $msec) or ISO 8601",
            String::from_utf8_lossy(when)
        )
    })?;
    let request = c
        .quoted()
        .ok_or("no quoted request (\"GET /path HTTP/1.1\") after the time")?;
    let (method, target) = super::request_line(&request)?;
    let status = c.token().ok_or("no status after the request")?;
    if status.len() != 3 || !status.iter().all(u8::is_ascii_digit) {
        return Err(format!(
            "status `{}` is not a 3-digit HTTP status",
            String::from_utf8_lossy(status)
        ));
    }
    let size = c.token().ok_or("no response size after the status")?;
    if size != b"-" && !size.iter().all(u8::is_ascii_digit) {
        return Err(format!(
            "response size `{}` is not a number of bytes or `-`",
            String::from_utf8_lossy(size)
        ));
    }
    match format {
        LogFormat::Combined => {
            if c.quoted().is_none() || c.quoted().is_none() {
                return Err(
                    "no quoted referer and user agent after the response size (a Common Log Format line? use --format common)"
                        .into(),
                );
            }
            // nginx formats often append fields ($request_time, …): they are not needed.
        }
        _ => {
            c.spaces();
            if c.i < c.b.len() {
                return Err(format!(
                    "unexpected `{}` after the response size (a Combined Log Format line? use --format combined)",
                    String::from_utf8_lossy(&c.b[c.i..])
                ));
            }
        }
    }
    let client = match consumer {
        ClfConsumer::RemoteAddr => addr,
        ClfConsumer::RemoteUser => user,
    };
    Ok(Entry {
        time,
        resolution,
        method,
        target,
        client: Some(client.to_vec()),
    })
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn spaces(&mut self) {
        while self.b.get(self.i) == Some(&b' ') {
            self.i += 1;
        }
    }

    /// The next run of non-space bytes.
    fn token(&mut self) -> Option<&'a [u8]> {
        self.spaces();
        let start = self.i;
        while self.b.get(self.i).is_some_and(|b| *b != b' ') {
            self.i += 1;
        }
        (self.i > start).then(|| &self.b[start..self.i])
    }

    /// `[anything up to ]` or a bare token.
    fn time_field(&mut self) -> Option<&'a [u8]> {
        self.spaces();
        if self.b.get(self.i) != Some(&b'[') {
            return self.token();
        }
        let start = self.i + 1;
        let len = self.b[start..].iter().position(|b| *b == b']')?;
        self.i = start + len + 1;
        Some(&self.b[start..start + len])
    }

    /// A `"…"` field, its escapes decoded.
    fn quoted(&mut self) -> Option<Vec<u8>> {
        self.spaces();
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let b = *self.b.get(self.i)?;
            self.i += 1;
            match b {
                b'"' => return Some(out),
                b'\\' => match self.b.get(self.i) {
                    Some(b'x') => match self.b.get(self.i + 1..self.i + 3).and_then(hex2) {
                        Some(v) => {
                            out.push(v);
                            self.i += 3;
                        }
                        None => out.push(b),
                    },
                    Some(&e @ (b'"' | b'\\')) => {
                        out.push(e);
                        self.i += 1;
                    }
                    _ => out.push(b),
                },
                b => out.push(b),
            }
        }
    }
}

fn hex2(h: &[u8]) -> Option<u8> {
    if h.len() != 2 || !h.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
}
