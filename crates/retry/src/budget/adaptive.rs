//! Google SRE's adaptive client-side throttling: the client counts its `requests` and the
//! upstream's `accepts` over a window (2 minutes) and rejects a new attempt *locally* with
//! probability `max(0, (requests − K·accepts) / (requests + 1))`, K = 2 by default.
//!
//! It throttles every attempt, first tries included, which is why it is asked before an
//! attempt is sent ([`Adaptive::admit`]) rather than when a retry is considered. A locally
//! rejected attempt still counts as a request, so the rejection probability falls only
//! when the upstream accepts again.

use super::error::BudgetError;
use super::window::Window;
use crate::nanos::Nanos;
use std::time::Duration;

/// Adaptive-throttling settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdaptiveConfig {
    k: f64,
    window: Duration,
}

impl AdaptiveConfig {
    /// Tolerates `k` requests per accept (1 or more) counted over `window` (more than 0).
    pub fn new(k: f64, window: Duration) -> Result<Self, BudgetError> {
        if !(k.is_finite() && k >= 1.0) {
            return Err(BudgetError::K(k));
        }
        if window.is_zero() {
            return Err(BudgetError::ZeroWindow("adaptive"));
        }
        Ok(AdaptiveConfig { k, window })
    }

    /// K: how many requests per accept the client tolerates (2 = rejects start when the
    /// upstream accepts fewer than half).
    pub fn k(&self) -> f64 {
        self.k
    }

    /// The counting window.
    pub fn window(&self) -> Duration {
        self.window
    }
}

impl Default for AdaptiveConfig {
    fn default() -> Self {
        AdaptiveConfig {
            k: 2.0,
            window: Duration::from_secs(120),
        }
    }
}

/// Adaptive-throttling state.
#[derive(Clone, Debug, PartialEq)]
pub struct Adaptive {
    cfg: AdaptiveConfig,
    requests: Window,
    accepts: Window,
}

impl Adaptive {
    /// Empty counts.
    pub fn new(cfg: AdaptiveConfig) -> Self {
        Adaptive {
            requests: Window::new(cfg.window, 60),
            accepts: Window::new(cfg.window, 60),
            cfg,
        }
    }

    /// The current local-rejection probability.
    pub fn reject_probability(&mut self, now: Nanos) -> f64 {
        let req = self.requests.sum(now);
        let acc = self.accepts.sum(now);
        ((req - self.cfg.k * acc) / (req + 1.0)).max(0.0)
    }

    /// Whether to send an attempt, given a uniform draw `u` in [0, 1). Counts the request.
    pub fn admit(&mut self, now: Nanos, u: f64) -> bool {
        let p = self.reject_probability(now);
        self.requests.add(now, 1.0);
        u >= p
    }

    /// The upstream accepted an attempt (answered, even with an error it did not shed).
    pub fn on_accept(&mut self, now: Nanos) {
        self.accepts.add(now, 1.0);
    }
}
