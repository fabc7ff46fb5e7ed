//! Timestamps as access logs write them, read exactly into microseconds since the Unix
//! epoch (no floating point: `1700000000.123` is 1 700 000 000 123 000 µs, not a rounding
//! of it), so that a trace's `t_ms` is the log's own instant at the log's own resolution.
//!
//! Three spellings cover nginx, Apache and most JSON loggers:
//! - CLF, nginx's `$time_local` and Apache's `%t`: `10/Oct/2000:13:55:36 -0700` (1 s);
//! - decimal seconds, nginx's `$msec`: `1700000000.123` (1 ms; any number of decimals);
//! - ISO 8601, nginx's `$time_iso8601`: `2000-10-10T13:55:36-07:00`, with an optional
//!   fraction and `Z`.

/// Microseconds since 1970-01-01T00:00:00Z.
pub type Micros = i64;

const MICROS: i64 = 1_000_000;

/// What a number of seconds or milliseconds in a log counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EpochUnit {
    /// Seconds (nginx's `$msec`, `1700000000.123`).
    #[default]
    Seconds,
    /// Milliseconds (JavaScript's `Date.now()`, pino's `time`).
    Millis,
}

/// Any of the spellings above.
pub fn parse(text: &str, unit: EpochUnit) -> Option<Micros> {
    let t = text.trim();
    if is_decimal(t) {
        return decimal(t, unit);
    }
    if t.as_bytes().get(2) == Some(&b'/') {
        return clf(t);
    }
    iso8601(t)
}

/// Any of the spellings above, with its resolution: the step between the instants that
/// spelling can write, in µs. A CLF date, or ISO 8601 without a fraction, is 1 s; each
/// decimal written divides it by ten (`$msec`'s three: 1 ms). The resolution is read from
/// the digits the line has, not from its value: `1700000000.000` is still 1 ms.
pub fn parse_with_resolution(text: &str, unit: EpochUnit) -> Option<(Micros, Micros)> {
    let at = parse(text, unit)?;
    let t = text.trim();
    let base = match unit {
        EpochUnit::Millis if is_decimal(t) => 1_000,
        _ => MICROS,
    };
    Some((at, resolution(t, base)))
}

/// `base` divided by ten for each decimal of `t`'s fraction, down to 1 µs.
pub fn resolution(t: &str, base: Micros) -> Micros {
    let decimals = t
        .split_once('.')
        .map_or(0, |(_, f)| f.bytes().take_while(u8::is_ascii_digit).count());
    (0..decimals).fold(base, |r, _| (r / 10).max(1))
}

fn is_decimal(t: &str) -> bool {
    t.bytes().next().is_some_and(|b| b.is_ascii_digit()) && !t.contains(['/', '-', ':'])
}

/// `1700000000.123` (seconds or milliseconds), exactly, to the microsecond; decimals past
/// the microsecond are dropped.
pub fn decimal(t: &str, unit: EpochUnit) -> Option<Micros> {
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let scale = match unit {
        EpochUnit::Seconds => MICROS,
        EpochUnit::Millis => 1_000,
    };
    let digits = match unit {
        EpochUnit::Seconds => 6,
        EpochUnit::Millis => 3,
    };
    let whole: i64 = int.parse().ok()?;
    let mut f: i64 = 0;
    for i in 0..digits {
        f = f * 10 + frac.as_bytes().get(i).map_or(0, |b| i64::from(b - b'0'));
    }
    whole.checked_mul(scale)?.checked_add(f)
}

/// `10/Oct/2000:13:55:36 -0700`.
pub fn clf(t: &str) -> Option<Micros> {
    let b = t.as_bytes();
    if b.len() != 26 || b[2] != b'/' || b[6] != b'/' || b[11] != b':' || b[20] != b' ' {
        return None;
    }
    let day = num(&b[0..2])?;
    let month = MONTHS.iter().position(|m| m.as_bytes() == &b[3..6])? as i64 + 1;
    let year = num(&b[7..11])?;
    let (h, m, s) = hms(&b[12..20])?;
    let offset = offset(&b[21..])?;
    civil(year, month, day, h, m, s).map(|t| t * MICROS - offset)
}

/// `2000-10-10T13:55:36[.fraction](Z|±hh:mm|±hhmm)`, `T` or a space.
pub fn iso8601(t: &str) -> Option<Micros> {
    let b = t.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b' ') {
        return None;
    }
    let (year, month, day) = (num(&b[0..4])?, num(&b[5..7])?, num(&b[8..10])?);
    let (h, m, s) = hms(&b[11..19])?;
    let mut rest = &b[19..];
    let mut frac = 0;
    if rest.first() == Some(&b'.') {
        let n = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        for i in 0..6 {
            frac = frac * 10
                + rest
                    .get(1 + i)
                    .filter(|_| i < n)
                    .map_or(0, |c| i64::from(c - b'0'));
        }
        rest = &rest[1 + n..];
    }
    let offset = match rest {
        b"Z" | b"z" => 0,
        _ => offset(rest)?,
    };
    civil(year, month, day, h, m, s).map(|t| t * MICROS + frac - offset)
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

fn num(b: &[u8]) -> Option<i64> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0, |n, c| n * 10 + i64::from(c - b'0')))
}

/// `13:55:36`.
fn hms(b: &[u8]) -> Option<(i64, i64, i64)> {
    if b.len() != 8 || b[2] != b':' || b[5] != b':' {
        return None;
    }
    let (h, m, s) = (num(&b[0..2])?, num(&b[3..5])?, num(&b[6..8])?);
    // 60: a leap second, as a log may write one.
    (h < 24 && m < 60 && s <= 60).then_some((h, m, s))
}

/// `-0700` or `-07:00`, in microseconds east of UTC.
fn offset(b: &[u8]) -> Option<Micros> {
    let sign = match b.first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (h, m) = match b.len() {
        5 => (num(&b[1..3])?, num(&b[3..5])?),
        6 if b[3] == b':' => (num(&b[1..3])?, num(&b[4..6])?),
        _ => return None,
    };
    (h < 24 && m < 60).then_some(sign * (h * 3600 + m * 60) * MICROS)
}

/// Seconds since the epoch of a UTC civil time (Howard Hinnant's `days_from_civil`).
fn civil(year: i64, month: i64, day: i64, h: i64, m: i64, s: i64) -> Option<i64> {
    let days_in = match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        1..=12 => 31,
        _ => return None,
    };
    if !(1..=days_in).contains(&day) {
        return None;
    }
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + m * 60 + s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_spellings_agree() {
        // Apache's documentation example: 10 Oct 2000 20:55:36 UTC = 971211336.
        let want = parse("10/Oct/2000:13:55:36 -0700", EpochUnit::Seconds);
        assert_eq!(want, Some(971_211_336 * MICROS));
        assert_eq!(parse("2000-10-10T13:55:36-07:00", EpochUnit::Seconds), want);
        assert_eq!(parse("2000-10-10T20:55:36Z", EpochUnit::Seconds), want);
        assert_eq!(parse("971211336", EpochUnit::Seconds), want);
        assert_eq!(
            parse("971211336.123", EpochUnit::Seconds),
            Some(971_211_336_123_000)
        );
        assert_eq!(
            parse("971211336123", EpochUnit::Millis),
            Some(971_211_336_123_000)
        );
        assert_eq!(
            parse("2000-10-10T20:55:36.5+00:00", EpochUnit::Seconds),
            Some(971_211_336_500_000)
        );
        assert_eq!(
            parse("01/Jan/1970:00:00:00 +0000", EpochUnit::Seconds),
            Some(0)
        );
        assert_eq!(
            clf("29/Feb/2024:00:00:00 +0000"),
            Some(1_709_164_800 * MICROS)
        );
    }

    #[test]
    fn resolution_is_read_from_the_spelling() {
        let res = |t, u| parse_with_resolution(t, u).map(|(_, r)| r);
        assert_eq!(
            res("10/Oct/2000:13:55:36 -0700", EpochUnit::Seconds),
            Some(MICROS)
        );
        assert_eq!(res("1700000000.123", EpochUnit::Seconds), Some(1_000));
        assert_eq!(res("1700000000.000", EpochUnit::Seconds), Some(1_000));
        assert_eq!(res("1700000000", EpochUnit::Seconds), Some(MICROS));
        assert_eq!(res("1700000000.1234567", EpochUnit::Seconds), Some(1));
        assert_eq!(res("1700000000123", EpochUnit::Millis), Some(1_000));
        assert_eq!(res("1700000000123.5", EpochUnit::Millis), Some(100));
        assert_eq!(res("2000-10-10T20:55:36Z", EpochUnit::Millis), Some(MICROS));
        assert_eq!(
            res("2000-10-10T20:55:36.12+00:00", EpochUnit::Seconds),
            Some(10_000)
        );
        assert_eq!(res("nonsense", EpochUnit::Seconds), None);
    }

    #[test]
    fn malformed_times_are_refused() {
        for t in [
            "",
            "-",
            "30/Feb/2024:00:00:00 +0000",
            "10/Foo/2000:13:55:36 -0700",
            "10/Oct/2000:25:55:36 -0700",
            "10/Oct/2000:13:55:36",
            "2000-13-10T13:55:36Z",
            "2000-10-10T13:55:36",
            "1.2.3",
            "99999999999999999999",
            "12a",
        ] {
            assert_eq!(parse(t, EpochUnit::Seconds), None, "{t}");
        }
    }
}
