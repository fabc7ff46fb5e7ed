//! An arm's budget, Retry-After limits and deadline as written, turned into a
//! [`herd_retry::Strategy`]. Like [`crate::policy_spec`], it names the bad knob; the caller
//! adds file and line.

use crate::duration::BoundedDuration;
use crate::raw::{
    RawAdaptive, RawBudget, RawConcurrency, RawPercent, RawQuota, RawRatio, RawRetryAfter,
    RawTokenBucket,
};
use herd_retry::budget::{
    AdaptiveConfig, BudgetError, ConcurrencyConfig, PercentConfig, QuotaConfig, RatioConfig,
    TokenBucketConfig,
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

fn uint(path: &[&'static str], x: i64) -> R<u32> {
    u32::try_from(x).or_else(|_| {
        bad(
            path,
            format!("must be a whole number from 0 to {}, got {x}", u32::MAX),
        )
    })
}

/// `budget = { kind = ..., ... }`; `kind = "none"` removes a profile's default budget.
/// serde has already matched the keys to the kind; this reads their values, and the
/// budget's own constructor checks them.
pub(crate) fn budget(b: &RawBudget) -> R<Option<BudgetConfig>> {
    Ok(Some(match b {
        RawBudget::None(_) => return Ok(None),
        RawBudget::Percent(p) => BudgetConfig::Percent(percent(p)?),
        RawBudget::TokenBucket(t) => BudgetConfig::TokenBucket(token_bucket(t)?),
        RawBudget::Quota(q) => BudgetConfig::Quota(quota(q)?),
        RawBudget::Ratio(r) => BudgetConfig::Ratio(ratio(r)?),
        RawBudget::Adaptive(a) => BudgetConfig::Adaptive(adaptive(a)?),
        RawBudget::Concurrency(c) => BudgetConfig::Concurrency(concurrency(c)?),
    }))
}

/// `value` read by `read` under `budget.name`, or `default` when not written.
fn knob<T, U>(
    name: &'static str,
    value: Option<T>,
    default: U,
    read: impl FnOnce(&[&'static str], T) -> R<U>,
) -> R<U> {
    value.map_or(Ok(default), |x| read(&["budget", name], x))
}

/// A budget constructor's refusal, as the knob a scenario writes under `table` (`ttl_ms`,
/// not `ttl`) and the rule in the scenario's units.
pub(crate) fn refused(table: &'static str, e: BudgetError) -> KnobError {
    let (knob, message) = match e {
        BudgetError::Ttl(_) => (
            "ttl_ms",
            "must be between 1000 and 60000 (Finagle's range)".to_owned(),
        ),
        BudgetError::OutOfRange {
            knob,
            above_zero,
            max,
            got,
        } => (
            knob,
            format!(
                "must be {} 0 and at most {max}, got {got}",
                if above_zero { "above" } else { "at least" }
            ),
        ),
        BudgetError::K(k) => ("k", format!("must be 1 or more, got {k}")),
        BudgetError::ZeroWindow(_) => ("window_ms", "must be greater than 0".to_owned()),
        other => ("kind", other.to_string()),
    };
    KnobError {
        path: vec![table, knob],
        message,
    }
}

fn percent(p: &RawPercent) -> R<PercentConfig> {
    let d = PercentConfig::default();
    PercentConfig::new(
        knob("ttl_ms", p.ttl_ms, d.ttl(), ms)?,
        knob("min_per_sec", p.min_per_sec, d.min_per_sec(), uint)?,
        p.percent.unwrap_or(d.percent()),
    )
    .map_err(|e| refused("budget", e))
}

fn token_bucket(t: &RawTokenBucket) -> R<TokenBucketConfig> {
    let d = TokenBucketConfig::default();
    TokenBucketConfig::new(
        t.max_tokens.unwrap_or(d.max_tokens()),
        t.token_ratio.unwrap_or(d.token_ratio()),
    )
    .map_err(|e| refused("budget", e))
}

fn quota(q: &RawQuota) -> R<QuotaConfig> {
    let d = QuotaConfig::default();
    Ok(QuotaConfig {
        initial: knob("initial", q.initial, d.initial, uint)?,
        retry_cost: knob("retry_cost", q.retry_cost, d.retry_cost, uint)?,
        timeout_cost: knob("timeout_cost", q.timeout_cost, d.timeout_cost, uint)?,
        throttling_cost: d.throttling_cost,
        success_increment: knob(
            "success_increment",
            q.success_increment,
            d.success_increment,
            uint,
        )?,
    })
}

fn ratio(r: &RawRatio) -> R<RatioConfig> {
    let d = RatioConfig::default();
    let ratio = r.ratio.unwrap_or(d.ratio());
    RatioConfig::new(ratio, knob("window_ms", r.window_ms, d.window(), ms)?)
        .map_err(|e| refused("budget", e))
}

fn adaptive(a: &RawAdaptive) -> R<AdaptiveConfig> {
    let d = AdaptiveConfig::default();
    let k = a.k.unwrap_or(d.k());
    AdaptiveConfig::new(k, knob("window_ms", a.window_ms, d.window(), ms)?)
        .map_err(|e| refused("budget", e))
}

/// Envoy's circuit breaker: `max_retries` (default 3), or, with `budget_percent` or
/// `min_retry_concurrency` (defaults 20 and 3), the retry budget, which in Envoy replaces
/// `max_retries`; writing both would leave `max_retries` silently unused, so it is refused.
fn concurrency(c: &RawConcurrency) -> R<ConcurrencyConfig> {
    if c.budget_percent.is_none() && c.min_retry_concurrency.is_none() {
        let max = knob("max_retries", c.max_retries, 3, uint)?;
        return Ok(ConcurrencyConfig::max_retries(max));
    }
    if c.max_retries.is_some() {
        return bad(
            &["budget", "max_retries"],
            "is replaced by the retry budget (budget_percent, min_retry_concurrency) in Envoy: write one or the other",
        );
    }
    let floor = knob("min_retry_concurrency", c.min_retry_concurrency, 3, uint)?;
    ConcurrencyConfig::retry_budget(c.budget_percent.unwrap_or(20.0), floor)
        .map_err(|e| refused("budget", e))
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
