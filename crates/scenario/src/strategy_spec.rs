//! An arm's budget, Retry-After limits and deadline as written, turned into a
//! [`herd_retry::Strategy`]. Like [`crate::policy_spec`], it names the bad knob; the caller
//! adds file and line.

use crate::duration::BoundedDuration;
use crate::raw::{RawBudget, RawRetryAfter};
use herd_retry::budget::{
    AdaptiveConfig, PercentConfig, QuotaConfig, RatioConfig, TokenBucketConfig,
};
use herd_retry::{AboveMax, BudgetConfig, Policy, RetryAfter, RetryAfterMode};
use std::time::Duration;

/// A knob that is wrong: its path below the arm (`budget.percent`) and why.
#[derive(Debug)]
pub(crate) struct KnobError {
    pub path: Vec<&'static str>,
    pub message: String,
}

type R<T> = Result<T, KnobError>;

fn bad<T>(path: &[&'static str], message: impl Into<String>) -> R<T> {
    Err(KnobError {
        path: path.to_vec(),
        message: message.into(),
    })
}

fn ms(path: &[&'static str], x: f64) -> R<Duration> {
    BoundedDuration::from_ms(x)
        .map(BoundedDuration::get)
        .or_else(|e| bad(path, e.to_string()))
}

fn frac(path: &[&'static str], x: f64, lo_open: bool, hi: f64) -> R<f64> {
    let ok = x.is_finite() && x <= hi && if lo_open { x > 0.0 } else { x >= 0.0 };
    if ok {
        Ok(x)
    } else {
        bad(
            path,
            format!(
                "must be {} 0 and at most {hi}, got {x}",
                if lo_open { "above" } else { "at least" }
            ),
        )
    }
}

fn uint(path: &[&'static str], x: i64) -> R<u32> {
    u32::try_from(x).or_else(|_| {
        bad(
            path,
            format!("must be a whole number from 0 to {}, got {x}", u32::MAX),
        )
    })
}

/// `budget = { kind = ..., ... }`; `kind = "none"` removes a profile's default budget.
pub(crate) fn budget(b: &RawBudget) -> R<Option<BudgetConfig>> {
    let allowed: &[&str] = match b.kind.as_str() {
        "none" => &[],
        "percent" => &["percent", "ttl_ms", "min_per_sec"],
        "token-bucket" => &["max_tokens", "token_ratio"],
        "quota" => &["initial", "retry_cost", "timeout_cost", "success_increment"],
        "ratio" => &["ratio", "window_ms"],
        "adaptive" => &["k", "window_ms"],
        other => {
            return bad(
                &["budget", "kind"],
                format!(
                    "unknown budget kind `{other}` (expected none, {})",
                    BudgetConfig::NAMES.join(", ")
                ),
            )
        }
    };
    let given: [(&'static str, bool); 12] = [
        ("percent", b.percent.is_some()),
        ("ttl_ms", b.ttl_ms.is_some()),
        ("min_per_sec", b.min_per_sec.is_some()),
        ("max_tokens", b.max_tokens.is_some()),
        ("token_ratio", b.token_ratio.is_some()),
        ("initial", b.initial.is_some()),
        ("retry_cost", b.retry_cost.is_some()),
        ("timeout_cost", b.timeout_cost.is_some()),
        ("success_increment", b.success_increment.is_some()),
        ("ratio", b.ratio.is_some()),
        ("window_ms", b.window_ms.is_some()),
        ("k", b.k.is_some()),
    ];
    for (name, set) in given {
        if set && !allowed.contains(&name) {
            return bad(
                &["budget", name],
                format!("`{name}` does not apply to a `{}` budget", b.kind),
            );
        }
    }
    Ok(Some(match b.kind.as_str() {
        "none" => return Ok(None),
        "percent" => {
            let d = PercentConfig::default();
            let ttl = b
                .ttl_ms
                .map(|x| ms(&["budget", "ttl_ms"], x))
                .transpose()?
                .unwrap_or(d.ttl);
            if ttl < Duration::from_secs(1) || ttl > Duration::from_secs(60) {
                return bad(
                    &["budget", "ttl_ms"],
                    "must be between 1000 and 60000 (Finagle's range)",
                );
            }
            BudgetConfig::Percent(PercentConfig {
                ttl,
                min_per_sec: b
                    .min_per_sec
                    .map(|x| uint(&["budget", "min_per_sec"], x))
                    .transpose()?
                    .unwrap_or(d.min_per_sec),
                percent: b
                    .percent
                    .map(|x| frac(&["budget", "percent"], x, false, 1000.0))
                    .transpose()?
                    .unwrap_or(d.percent),
            })
        }
        "token-bucket" => {
            let d = TokenBucketConfig::default();
            BudgetConfig::TokenBucket(TokenBucketConfig {
                max_tokens: b
                    .max_tokens
                    .map(|x| frac(&["budget", "max_tokens"], x, true, 1000.0))
                    .transpose()?
                    .unwrap_or(d.max_tokens),
                token_ratio: b
                    .token_ratio
                    .map(|x| frac(&["budget", "token_ratio"], x, true, 1.0))
                    .transpose()?
                    .unwrap_or(d.token_ratio),
            })
        }
        "quota" => {
            let d = QuotaConfig::default();
            let get = |name, v: Option<i64>, def| {
                v.map(|x| uint(&["budget", name], x))
                    .transpose()
                    .map(|o| o.unwrap_or(def))
            };
            BudgetConfig::Quota(QuotaConfig {
                initial: get("initial", b.initial, d.initial)?,
                retry_cost: get("retry_cost", b.retry_cost, d.retry_cost)?,
                timeout_cost: get("timeout_cost", b.timeout_cost, d.timeout_cost)?,
                success_increment: get(
                    "success_increment",
                    b.success_increment,
                    d.success_increment,
                )?,
            })
        }
        "ratio" => {
            let d = RatioConfig::default();
            BudgetConfig::Ratio(RatioConfig {
                ratio: b
                    .ratio
                    .map(|x| frac(&["budget", "ratio"], x, false, 1000.0))
                    .transpose()?
                    .unwrap_or(d.ratio),
                window: window(b.window_ms, d.window)?,
            })
        }
        _ => {
            let d = AdaptiveConfig::default();
            let k = b.k.unwrap_or(d.k);
            if !(k.is_finite() && k >= 1.0) {
                return bad(&["budget", "k"], format!("must be 1 or more, got {k}"));
            }
            BudgetConfig::Adaptive(AdaptiveConfig {
                k,
                window: window(b.window_ms, d.window)?,
            })
        }
    }))
}

fn window(x: Option<f64>, default: Duration) -> R<Duration> {
    let w = x
        .map(|x| ms(&["budget", "window_ms"], x))
        .transpose()?
        .unwrap_or(default);
    if w.is_zero() {
        return bad(&["budget", "window_ms"], "must be greater than 0");
    }
    Ok(w)
}

/// `retry_after = { min_ms, max_ms, above_max = "wait" | "give-up" }` on top of the
/// profile's handling. A profile that ignores the header (none, naive) starts honouring
/// it as a floor.
pub(crate) fn retry_after(policy: Policy, r: &RawRetryAfter) -> R<Policy> {
    let mut ra: RetryAfter = policy.retry_after();
    if ra.mode == RetryAfterMode::Ignore {
        ra.mode = RetryAfterMode::Floor;
    }
    if let Some(x) = r.min_ms {
        ra.min = ms(&["retry_after", "min_ms"], x)?;
    }
    if let Some(x) = r.max_ms {
        ra.max = ms(&["retry_after", "max_ms"], x)?;
    }
    if ra.min > ra.max {
        return bad(&["retry_after", "min_ms"], "must not exceed max_ms");
    }
    if let Some(a) = &r.above_max {
        ra.above_max = match a.as_str() {
            "wait" => AboveMax::WaitMax,
            "give-up" => AboveMax::GiveUp,
            other => {
                return bad(
                    &["retry_after", "above_max"],
                    format!("unknown rule `{other}` (expected \"wait\" or \"give-up\")"),
                )
            }
        };
    }
    Ok(policy.with_retry_after(ra))
}

/// `deadline_ms`: 0 removes a profile's default deadline.
pub(crate) fn deadline(x: f64) -> R<Option<Duration>> {
    let d = ms(&["deadline_ms"], x)?;
    Ok((!d.is_zero()).then_some(d))
}
