//! `--shard I/N` and `--start-at` for `herd bench` and `herd sim`: which part of the
//! schedule a run drives, when it starts, and the `shard` section its report carries.
//!
//! A Kubernetes Indexed Job gives each pod its index in `JOB_COMPLETION_INDEX` and
//! nothing else, so the count comes from `HERD_SHARDS` (the Job's `completions`) and the
//! common start from `HERD_START_AT`: the same manifest starts every shard, with no flag
//! that differs between pods.

use crate::cli::ShardArgs;
use crate::fail::Fail;
use anyhow::anyhow;
use herd_driver::CommonStart;
use herd_scenario::{ArmShard, Report, Scenario, ServerScope, Shard, ShardSection};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The index a Kubernetes Indexed Job gives each pod.
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// The shard count beside it (the Job's `completions`).
pub const COUNT_ENV: &str = "HERD_SHARDS";

/// A run's shard and common start, validated.
#[derive(Clone, Copy, Debug)]
pub struct Sharding {
    /// Which part of the schedule.
    pub shard: Shard,
    /// When to start, Unix ms (`--start-at`).
    pub start_unix_ms: Option<u64>,
}

/// The shard of this run: `--shard`, else `JOB_COMPLETION_INDEX` with `HERD_SHARDS`;
/// `None` for a whole run. Bad values are input errors (exit 2).
pub fn resolve(a: &ShardArgs) -> Result<Option<Sharding>, Fail> {
    resolve_with(a, |k| std::env::var(k).ok())
}

fn resolve_with(
    a: &ShardArgs,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Sharding>, Fail> {
    let shard = match (&a.shard, env(INDEX_ENV), env(COUNT_ENV)) {
        (Some(s), _, _) => Some(
            s.parse::<Shard>()
                .map_err(|e| Fail::input(anyhow!("--shard: {e}")))?,
        ),
        (None, Some(i), Some(n)) => Some(
            format!("{}/{}", i.trim(), n.trim())
                .parse()
                .map_err(|e| Fail::input(anyhow!("{INDEX_ENV}={i} with {COUNT_ENV}={n}: {e}")))?,
        ),
        (None, Some(i), None) => {
            return Err(Fail::input(anyhow!(
                "{INDEX_ENV}={i} is set (a Kubernetes Indexed Job's pod) but {COUNT_ENV} is not: \
                 set it to the Job's completions, or pass --shard I/N"
            )))
        }
        (None, None, _) => None,
    };
    let start = match &a.start_at {
        Some(t) => Some(
            parse_start(t).map_err(|e| Fail::input(anyhow!("--start-at / HERD_START_AT: {e}")))?,
        ),
        None => None,
    };
    match (shard, start) {
        (Some(shard), start_unix_ms) => Ok(Some(Sharding {
            shard,
            start_unix_ms,
        })),
        (None, Some(_)) => Err(Fail::input(anyhow!(
            "--start-at applies to a shard (--shard I/N, or {INDEX_ENV} with {COUNT_ENV})"
        ))),
        (None, None) => Ok(None),
    }
}

/// `--start-at`: Unix milliseconds, or an RFC 3339 instant (`2026-12-05T09:00:00Z`,
/// `2026-12-05T10:00:00.250+01:00`).
pub fn parse_start(t: &str) -> Result<u64, String> {
    let t = t.trim();
    if let Ok(ms) = t.parse::<u64>() {
        return Ok(ms);
    }
    rfc3339_ms(t).ok_or_else(|| {
        format!("`{t}` is neither Unix milliseconds nor an RFC 3339 instant (2026-12-05T09:00:00Z)")
    })
}

fn rfc3339_ms(t: &str) -> Option<u64> {
    let b = t.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> { t.get(r)?.parse().ok() };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if b[13] != b':' || b[16] != b':' || !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    if h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut rest = &t[19..];
    let mut frac_ms = 0i64;
    if let Some(r) = rest.strip_prefix('.') {
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let padded = format!("{:0<3}", &r[..digits.min(3)]);
        frac_ms = padded.parse().ok()?;
        rest = &r[digits..];
    }
    let offset_min = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) && &o[3..4] == ":" => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            sign * (o[1..3].parse::<i64>().ok()? * 60 + o[4..6].parse::<i64>().ok()?)
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + s - offset_min * 60;
    u64::try_from(secs * 1000 + frac_ms).ok()
}

/// The common start at `start_unix_ms`, for the driver: each arm prepares (its client
/// built, its connections open) and then waits for it, so every shard's schedule begins at
/// the same instant (see [`CommonStart`]). Says on stderr how long that is, unless `quiet`.
pub fn common_start(start_unix_ms: u64, quiet: bool) -> CommonStart {
    let start = UNIX_EPOCH + Duration::from_millis(start_unix_ms);
    if let (Ok(wait), false) = (start.duration_since(SystemTime::now()), quiet) {
        eprintln!(
            "herd: the shards' common start is in {:.1}s; the arms get ready, then wait for it",
            wait.as_secs_f64()
        );
    }
    CommonStart::new(start)
}

/// Warns when an arm was still getting ready more than a second after the common start:
/// it began that late, that far behind the schedule the other shards may have kept.
pub fn warn_if_late(start: &CommonStart) {
    if let Some(late) = start.missed_by().filter(|d| d.as_secs_f64() > 1.0) {
        eprintln!(
            "warning: this shard began {:.1}s after the common start (--start-at): it was \
             still getting ready, and its schedule ran that far behind the others'",
            late.as_secs_f64()
        );
    }
}

/// The `shard` section of a shard's report: its arms' figures (`arms`, in the report's
/// order), the scenario's text and its whole load.
pub fn section(
    sharding: Sharding,
    server: ServerScope,
    scenario: &Scenario,
    scenario_toml: &str,
    arms: Vec<ArmShard>,
) -> ShardSection {
    ShardSection {
        count: sharding.shard.count(),
        indices: vec![sharding.shard.index()],
        start_unix_ms: sharding.start_unix_ms,
        server,
        rate: scenario.load.rate,
        requests: scenario.load.requests,
        scenario_toml: scenario_toml.to_owned(),
        arms,
    }
}

/// The scenario as a socket shard's own report shows it: the offered rate is the
/// shard's 1/N share (its burst and peak multipliers are against what it offered). The
/// scenario itself unchanged without a shard.
pub fn own_share(s: &Scenario) -> Scenario {
    let mut shown = s.clone();
    if let Some(shard) = s.load.shard {
        shown.load.rate = s.load.rate / f64::from(shard.count());
    }
    shown
}

/// Says on stderr (unless `quiet`) which part of the schedule this run drives.
pub fn announce(report: &Report, sharding: Sharding, quiet: bool) {
    if !quiet {
        eprintln!(
            "herd: shard {} of scenario {} (seed {}): merge the shards' reports with `herd merge`",
            sharding.shard, report.scenario.name, report.scenario.seed
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(shard: Option<&str>, start: Option<&str>) -> ShardArgs {
        ShardArgs {
            shard: shard.map(str::to_owned),
            start_at: start.map(str::to_owned),
        }
    }

    #[test]
    fn flag_then_the_jobs_environment() {
        let none = |_: &str| None;
        assert!(resolve_with(&args(None, None), none).unwrap().is_none());
        let s = resolve_with(&args(Some("2/4"), None), none)
            .unwrap()
            .unwrap();
        assert_eq!(s.shard, Shard::new(2, 4).unwrap());
        let job = |k: &str| match k {
            INDEX_ENV => Some("3".to_owned()),
            COUNT_ENV => Some("4".to_owned()),
            _ => None,
        };
        let s = resolve_with(&args(None, Some("1000")), job)
            .unwrap()
            .unwrap();
        assert_eq!((s.shard.index(), s.shard.count()), (3, 4));
        assert_eq!(s.start_unix_ms, Some(1000));
        let half = |k: &str| (k == INDEX_ENV).then(|| "0".to_owned());
        assert!(resolve_with(&args(None, None), half).is_err());
        assert!(resolve_with(&args(Some("4/4"), None), none).is_err());
        assert!(resolve_with(&args(None, Some("1000")), none).is_err());
    }

    #[test]
    fn rfc3339_and_unix_ms() {
        assert_eq!(parse_start("1700000000123"), Ok(1_700_000_000_123));
        assert_eq!(parse_start("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(parse_start("2023-11-14T22:13:20Z"), Ok(1_700_000_000_000));
        assert_eq!(parse_start("2023-11-14T22:13:20.5Z"), Ok(1_700_000_000_500));
        assert_eq!(
            parse_start("2023-11-14T23:13:20+01:00"),
            Ok(1_700_000_000_000)
        );
        for bad in [
            "tomorrow",
            "2023-11-14",
            "2023-13-14T22:13:20Z",
            "2023-11-14T22:13:20",
        ] {
            assert!(parse_start(bad).is_err(), "{bad}");
        }
    }
}
