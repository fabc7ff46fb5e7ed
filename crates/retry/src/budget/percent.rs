//! Finagle's `RetryBudget` / tower's `TpsBudget`: retries may add `percent` of the requests
//! of the last `ttl`, plus a floor of `min_per_sec` retries per second.
//!
//! Defaults are Finagle's and tower's: `ttl` 10 s, `min_per_sec` 10, `percent` 20%. Each
//! request deposits 1; each retry withdraws `1 / percent`; the balance is the window's sum
//! plus a constant reserve of `min_per_sec · ttl` retries' worth. So over any `ttl` window,
//! retries ≤ `percent · requests + min_per_sec · ttl` (to one slot of resolution).

use super::window::Window;
use std::time::Duration;

/// Percent budget settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PercentConfig {
    /// How long a deposit counts.
    pub ttl: Duration,
    /// Retries per second allowed even with no requests.
    pub min_per_sec: u32,
    /// Retries allowed per request, as a fraction (0.2 = 20%).
    pub percent: f64,
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
    pub fn deposit(&mut self, now: Duration) {
        self.window.add(now, self.cfg.percent);
    }

    /// Asks for one retry.
    pub fn withdraw(&mut self, now: Duration) -> bool {
        if self.window.sum(now) + self.reserve >= 1.0 - 1e-9 {
            self.window.add(now, -1.0);
            true
        } else {
            false
        }
    }
}
