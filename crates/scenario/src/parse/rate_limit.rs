//! The checks for `[upstream.rate_limit]` (see [`crate::rate_limit`] for what it does).

use super::{Check, R};
use crate::rate_limit::RateLimit;
use crate::raw::{RawRate, RawRateLimit};
use crate::span::Seg;

/// The highest rate accepted, requests per second: far above anything a socket carries,
/// and low enough that its thousandths and their products stay exact.
const MAX_RATE: f64 = 1e9;

impl Check<'_> {
    pub(super) fn rate_limit(&self, at: &[Seg], r: RawRateLimit) -> R<RateLimit> {
        let table = super::under(at, "rate_limit");
        let k = |x| super::under(&table, x);
        let milli_rate = match r.rate {
            RawRate::PerSecond(x) => {
                let x = self.positive(&k("rate"), x)?;
                if x > MAX_RATE {
                    return Err(self.err(
                        &k("rate"),
                        format!("must be at most {MAX_RATE:e} requests per second, got {x}"),
                    ));
                }
                let milli = (x * 1000.0).round();
                if milli < 1.0 {
                    return Err(self.err(
                        &k("rate"),
                        format!(
                            "must be at least 0.001 requests per second (nginx's unit), got {x}"
                        ),
                    ));
                }
                milli as u64
            }
            RawRate::Nginx(text) => self.nginx_rate(&k("rate"), &text)?,
        };
        let burst = self.count(&k("burst"), r.burst)?;
        let delay = match (r.nodelay, r.delay) {
            (true, Some(_)) => {
                return Err(self.err(
                    &k("delay"),
                    "`delay` and `nodelay` do not go together (`nodelay` lets the whole burst through at once)",
                ))
            }
            (true, None) => RateLimit::NODELAY,
            (false, Some(n)) => self.count(&k("delay"), n)?,
            (false, None) => 0,
        };
        if !(400..=599).contains(&r.status) {
            return Err(self.err(
                &k("status"),
                format!("must be an HTTP error status from 400 to 599 (503 by default, as nginx's limit_req_status; 429 is Too Many Requests), got {}", r.status),
            ));
        }
        match r.key.as_str() {
            "global" => {}
            "consumer" => {
                return Err(self.err(
                    &k("key"),
                    "per-consumer buckets are not modelled: herd's requests carry nothing that tells one consumer from another, so every request shares one bucket (key = \"global\")",
                ))
            }
            other => {
                return Err(self.err(
                    &k("key"),
                    format!("unknown key `{other}` (expected \"global\")"),
                ))
            }
        }
        Ok(RateLimit {
            milli_rate,
            burst,
            delay,
            status: r.status as u16,
            retry_after_s: self.retry_after_s(&k("retry_after_s"), r.retry_after_s)?,
        })
    }

    /// nginx's `"200r/s"` or `"30r/m"`, in thousandths of a request per second as nginx
    /// keeps it (`30r/m` is 500; `1r/m` is 16, rounded down as nginx does).
    fn nginx_rate(&self, path: &[crate::span::Seg], text: &str) -> R<u64> {
        let bad = || {
            self.err(
                path,
                format!("`{text}` is not a rate: expected requests per second (a number), or nginx's \"200r/s\" or \"30r/m\""),
            )
        };
        let (n, per) = if let Some(n) = text.strip_suffix("r/s") {
            (n, 1)
        } else if let Some(n) = text.strip_suffix("r/m") {
            (n, 60)
        } else {
            return Err(bad());
        };
        let n: u64 = n.parse().map_err(|_| bad())?;
        if n == 0 || n as f64 > MAX_RATE {
            return Err(self.err(
                path,
                format!("must be from 1 to {MAX_RATE:e} requests, got {n}"),
            ));
        }
        Ok(n * 1000 / per)
    }
}
