//! An arm's `hedge = { ... }` and `breaker = { ... }` as written, turned into
//! [`herd_retry::hedge::HedgePolicy`] and [`herd_retry::breaker::BreakerConfig`]: a
//! replica's defaults with the keys the arm overrides. Like [`crate::strategy_spec`], it
//! names the bad key; the caller adds file and line.
//!
//! A key is accepted only where the replica has the setting it names (a percentile for a
//! fixed-delay hedge, a failure ratio for a consecutive-failures breaker would be silently
//! meaningless otherwise), and the error lists the keys the replica does take.

use crate::duration::BoundedDuration;
use crate::raw::{RawBreaker, RawHedge};
use crate::strategy_spec::{refused, KnobError};
use herd_retry::breaker::{BreakerConfig, BreakerProfile, Probe, Trip};
use herd_retry::budget::TokenBucketConfig;
use herd_retry::hedge::{Delay, Gate, HedgePolicy, HedgeProfile, LatencyConfig};
use std::time::Duration;

type R<T> = Result<T, KnobError>;

fn bad<T>(path: [&'static str; 2], message: impl Into<String>) -> R<T> {
    Err(KnobError {
        path: path.to_vec(),
        message: message.into(),
    })
}

fn ms(path: [&'static str; 2], x: f64, zero_ok: bool) -> R<Duration> {
    if !(x.is_finite() && (x > 0.0 || (zero_ok && x == 0.0))) {
        let what = if zero_ok {
            "0 or more"
        } else {
            "greater than 0"
        };
        return bad(path, format!("must be {what}, got {x}"));
    }
    BoundedDuration::from_ms(x)
        .map(BoundedDuration::get)
        .or_else(|e| bad(path, e.to_string()))
}

fn whole(path: [&'static str; 2], x: i64, min: i64) -> R<u32> {
    match u32::try_from(x) {
        Ok(n) if x >= min => Ok(n),
        _ => bad(
            path,
            format!("must be a whole number from {min} to {}, got {x}", u32::MAX),
        ),
    }
}

fn fraction(path: [&'static str; 2], x: f64) -> R<f64> {
    if x.is_finite() && (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        bad(path, format!("must be within [0, 1], got {x}"))
    }
}

/// Refuses `key` (set) because the replica has no such setting; `takes` lists those it has.
fn not_here<T>(table: &'static str, key: &'static str, profile: &str, takes: &str) -> R<T> {
    bad(
        [table, key],
        format!("`{key}` does not apply to `{profile}` (it takes: {takes})"),
    )
}

/// `hedge = { profile = ..., ... }`.
pub(crate) fn hedge(h: &RawHedge) -> R<HedgePolicy> {
    const T: &str = "hedge";
    let profile: HedgeProfile = h
        .profile
        .parse()
        .or_else(|e: String| bad([T, "profile"], e))?;
    let mut p = HedgePolicy::new(profile);
    let name = profile.as_str();
    let fixed = matches!(p.delay, Delay::Fixed(_));
    let takes = match p.delay {
        Delay::Fixed(_) if matches!(p.gate, Gate::Throttle(_)) => {
            "delay_ms, max_attempts, cancel_losers, throttle, max_tokens, token_ratio"
        }
        Delay::Fixed(_) => "delay_ms, max_attempts, cancel_losers",
        Delay::Latency(LatencyConfig::Finagle(_)) => "max_extra_load, cancel_losers",
        Delay::Latency(LatencyConfig::Tower(_)) => {
            "percentile, min_data_points, max_attempts, cancel_losers"
        }
    };
    if let Some(x) = h.max_extra_load {
        if !matches!(p.delay, Delay::Latency(LatencyConfig::Finagle(_))) {
            return not_here(T, "max_extra_load", name, takes);
        }
        if !(x.is_finite() && x > 0.0 && x < 1.0) {
            return bad(
                [T, "max_extra_load"],
                format!("must be above 0 and below 1, got {x}"),
            );
        }
        p = HedgePolicy {
            cancel_losers: p.cancel_losers,
            ..HedgePolicy::finagle(x)
        };
    }
    if let Some(x) = h.delay_ms {
        if !fixed {
            return not_here(T, "delay_ms", name, takes);
        }
        p.delay = Delay::Fixed(ms([T, "delay_ms"], x, true)?);
    }
    if let Some(n) = h.max_attempts {
        if matches!(p.delay, Delay::Latency(LatencyConfig::Finagle(_))) {
            return not_here(T, "max_attempts", name, takes);
        }
        let max = i64::from(herd_retry::hedge::MAX_ATTEMPTS);
        match u8::try_from(n) {
            Ok(v) if (2..=max).contains(&n) => p.max_attempts = v,
            _ => {
                return bad(
                    [T, "max_attempts"],
                    format!(
                        "must be a whole number from 2 to {max} (the original included), got {n}"
                    ),
                )
            }
        }
    }
    if let Delay::Latency(LatencyConfig::Tower(t)) = &mut p.delay {
        if let Some(x) = h.percentile {
            t.percentile = fraction([T, "percentile"], x)?;
        }
        if let Some(n) = h.min_data_points {
            t.min_data_points = u64::from(whole([T, "min_data_points"], n, 0)?);
        }
    } else if h.percentile.is_some() {
        return not_here(T, "percentile", name, takes);
    } else if h.min_data_points.is_some() {
        return not_here(T, "min_data_points", name, takes);
    }
    if let Some(c) = h.cancel_losers {
        p.cancel_losers = c;
    }
    let throttled = matches!(p.gate, Gate::Throttle(_));
    for (key, set) in [
        ("throttle", h.throttle.is_some()),
        ("max_tokens", h.max_tokens.is_some()),
        ("token_ratio", h.token_ratio.is_some()),
    ] {
        if set && !throttled {
            return not_here(T, key, name, takes);
        }
    }
    if let Gate::Throttle(c) = p.gate {
        let c = TokenBucketConfig::new(
            h.max_tokens.unwrap_or(c.max_tokens()),
            h.token_ratio.unwrap_or(c.token_ratio()),
        )
        .map_err(|e| refused(T, e))?;
        p.gate = match h.throttle {
            Some(false) if h.max_tokens.is_some() || h.token_ratio.is_some() => return bad(
                [T, "throttle"],
                "`throttle = false` removes the token bucket; drop `max_tokens` and `token_ratio`",
            ),
            // gRPC's `retryThrottling` is optional service config: without it, hedges are
            // bounded by `maxAttempts` alone.
            Some(false) => Gate::Open,
            _ => Gate::Throttle(c),
        };
    }
    p.validate()
        .or_else(|e| bad([T, "profile"], e.to_string()))?;
    Ok(p)
}

/// `breaker = { profile = ..., ... }`.
pub(crate) fn breaker(b: &RawBreaker) -> R<BreakerConfig> {
    const T: &str = "breaker";
    let profile: BreakerProfile = b
        .profile
        .parse()
        .or_else(|e: String| bad([T, "profile"], e))?;
    let mut c = BreakerConfig::new(profile);
    let name = profile.as_str();
    let takes = match c.trip {
        Trip::Consecutive { .. } => "failures, open_ms, half_open_calls, successes",
        Trip::ErrorsWithin { .. } => "failures, window_ms, open_ms, successes",
        Trip::CountWindow { .. } => "ratio, min_calls, window, open_ms, half_open_calls",
        Trip::TimeWindow(_) => "ratio, min_calls, window_ms, open_ms, half_open_calls, successes",
        Trip::Failsafe { .. } => "failures, window_ms",
        _ => "",
    };
    if let Some(n) = b.failures {
        let n = whole([T, "failures"], n, 1)?;
        match &mut c.trip {
            Trip::Consecutive { failures } => *failures = n,
            Trip::ErrorsWithin { errors, .. } => *errors = n,
            Trip::Failsafe { consecutive, .. } => *consecutive = n,
            _ => return not_here(T, "failures", name, takes),
        }
    }
    if let Some(x) = b.ratio {
        let x = fraction([T, "ratio"], x)?;
        match &mut c.trip {
            Trip::CountWindow { ratio, .. } => *ratio = x,
            Trip::TimeWindow(w) => w.ratio = x,
            _ => return not_here(T, "ratio", name, takes),
        }
    }
    if let Some(n) = b.min_calls {
        let n = whole([T, "min_calls"], n, 0)?;
        match &mut c.trip {
            Trip::CountWindow { min_calls, .. } => *min_calls = n,
            Trip::TimeWindow(w) => w.min_calls = n,
            _ => return not_here(T, "min_calls", name, takes),
        }
    }
    if let Some(n) = b.window {
        let n = whole([T, "window"], n, 1)?;
        match &mut c.trip {
            Trip::CountWindow { size, .. } => *size = n,
            _ => return not_here(T, "window", name, takes),
        }
    }
    if let Some(x) = b.window_ms {
        let d = ms([T, "window_ms"], x, false)?;
        match &mut c.trip {
            Trip::ErrorsWithin { expiry, .. } => *expiry = d,
            Trip::TimeWindow(w) => w.window = d,
            Trip::Failsafe { window, .. } => *window = d,
            _ => return not_here(T, "window_ms", name, takes),
        }
    }
    if let Some(x) = b.open_ms {
        if matches!(c.trip, Trip::Failsafe { .. }) {
            return not_here(T, "open_ms", name, takes);
        }
        c.open_for = ms([T, "open_ms"], x, false)?;
    }
    if let Some(n) = b.half_open_calls {
        if c.half_open.calls == u32::MAX {
            return not_here(T, "half_open_calls", name, takes);
        }
        c.half_open.calls = whole([T, "half_open_calls"], n, 1)?;
    }
    if let Some(n) = b.successes {
        match &mut c.half_open.probe {
            Probe::Successes(s) => *s = whole([T, "successes"], n, 1)?,
            _ => return not_here(T, "successes", name, takes),
        }
    }
    c.validate()
        .or_else(|e| bad([T, "profile"], e.to_string()))?;
    Ok(c)
}
