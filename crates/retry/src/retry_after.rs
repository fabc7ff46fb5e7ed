//! `Retry-After` parsing (RFC 9110 §10.2.3): delta-seconds or an HTTP-date.
//!
//! The date form needs "now" to turn into a delay; it is passed in, never read, so the
//! simulator can parse on its virtual clock. A date in the past means "retry now" (zero),
//! as both undici and axios-retry treat it.

use std::time::{Duration, SystemTime};

/// Parses a `Retry-After` header value into the delay it asks for.
///
/// Returns `None` for a value that is neither a non-negative integer nor an HTTP-date.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use herd_retry::retry_after::parse;
/// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
/// assert_eq!(parse("120", now), Some(Duration::from_secs(120)));
/// assert_eq!(parse("Sun, 06 Nov 1994 08:49:47 GMT", now), Some(Duration::from_secs(10)));
/// assert_eq!(parse("soon", now), None);
/// ```
pub fn parse(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        return v.parse::<u64>().ok().map(Duration::from_secs);
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)
    }

    #[test]
    fn delta_seconds() {
        assert_eq!(parse("0", now()), Some(Duration::ZERO));
        assert_eq!(parse(" 3 ", now()), Some(Duration::from_secs(3)));
        assert_eq!(parse("-1", now()), None);
        assert_eq!(parse("1.5", now()), None);
        assert_eq!(parse("", now()), None);
        assert_eq!(parse("99999999999999999999999", now()), None);
    }

    #[test]
    fn http_dates() {
        let later = httpdate::fmt_http_date(now() + Duration::from_secs(42));
        assert_eq!(parse(&later, now()), Some(Duration::from_secs(42)));
        let earlier = httpdate::fmt_http_date(now() - Duration::from_secs(42));
        assert_eq!(parse(&earlier, now()), Some(Duration::ZERO));
        // RFC 850 and asctime forms are obsolete but must be accepted (RFC 9110 §5.6.7).
        assert!(parse("Sunday, 06-Nov-94 08:49:37 GMT", now()).is_some());
        assert!(parse("Sun Nov  6 08:49:37 1994", now()).is_some());
        assert_eq!(parse("Tomorrow", now()), None);
    }
}
