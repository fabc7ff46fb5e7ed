//! Finagle's `RetryBudget` / tower's `TpsBudget`: retries may add `percent` of the requests
//! of the last `ttl`, plus a floor of `min_per_sec` retries per second.
//!
//! Defaults are Finagle's and tower's: `ttl` 10 s, `min_per_sec` 10, `percent` 20%. Each
//! request deposits 1; each retry withdraws `1 / percent`; the balance is the window's sum
//! plus a constant reserve of `min_per_sec · ttl` retries' worth. So over any `ttl` window,
//! retries ≤ `percent · requests + min_per_sec · ttl` (to one slot of resolution).

use super::error::{in_range, BudgetError};
use super::window::Window;
use crate::nanos::Nanos;
use std::time::Duration;

/// Percent budget settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PercentConfig {
    ttl: Duration,
    min_per_sec: u32,
    percent: f64,
}

impl PercentConfig {
    /// Deposits that count for `ttl` (1 s to 60 s, Finagle's range), a floor of
    /// `min_per_sec` retries a second, and `percent` retries per request as a fraction
    /// (0.2 = 20%; 0 to 1000).
    pub fn new(ttl: Duration, min_per_sec: u32, percent: f64) -> Result<Self, BudgetError> {
        if ttl < Duration::from_secs(1) || ttl > Duration::from_secs(60) {
            return Err(BudgetError::Ttl(ttl));
        }
        Ok(PercentConfig {
            ttl,
            min_per_sec,
            percent: in_range("percent", percent, false, 1000.0)?,
        })
    }

    /// How long a deposit counts.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Retries per second allowed even with no requests.
    pub fn min_per_sec(&self) -> u32 {
        self.min_per_sec
    }

    /// Retries allowed per request, as a fraction (0.2 = 20%).
    pub fn percent(&self) -> f64 {
        self.percent
    }
}

impl Default for PercentConfig {
    fn default() -> Self {
        PercentConfig {
            ttl: Duration::from_secs(10),
            min_per_sec: 10,
            percent: 0.2,
        }
    }
}

/// Percent budget state.
#[derive(Clone, Debug, PartialEq)]
pub struct Percent {
    cfg: PercentConfig,
    window: Window,
    reserve: f64,
}

impl Percent {
    /// A fresh budget.
    pub fn new(cfg: PercentConfig) -> Self {
        Percent {
            window: Window::new(cfg.ttl, 10),
            reserve: cfg.min_per_sec as f64 * cfg.ttl.as_secs_f64(),
            cfg,
        }
    }

    /// One request offered.
    pub fn deposit(&mut self, now: Nanos) {
        self.window.add(now, self.cfg.percent);
    }

    /// Asks for one retry.
    pub fn withdraw(&mut self, now: Nanos) -> bool {
        if self.window.sum(now) + self.reserve >= 1.0 - 1e-9 {
            self.window.add(now, -1.0);
            true
        } else {
            false
        }
    }
}
