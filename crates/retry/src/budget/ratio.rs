//! Google SRE's per-client retry budget: a client retries only while its retries are under
//! `ratio` (10%) of its requests over the recent window (Site Reliability Engineering,
//! ch. 22, "Handling Overload"). Unlike the percent budget there is no floor: a client with
//! no recent requests has no retries to spend.

use super::error::{in_range, BudgetError};
use super::window::Window;
use crate::nanos::Nanos;
use std::time::Duration;

/// Retry-ratio settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RatioConfig {
    ratio: f64,
    window: Duration,
}

impl RatioConfig {
    /// Retries at most `ratio` (0 to 1000) of the requests over `window` (more than 0).
    pub fn new(ratio: f64, window: Duration) -> Result<Self, BudgetError> {
        let ratio = in_range("ratio", ratio, false, 1000.0)?;
        if window.is_zero() {
            return Err(BudgetError::ZeroWindow("ratio"));
        }
        Ok(RatioConfig { ratio, window })
    }

    /// Largest retries / requests ratio.
    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    /// The window both are counted over.
    pub fn window(&self) -> Duration {
        self.window
    }
}

impl Default for RatioConfig {
    fn default() -> Self {
        RatioConfig {
            ratio: 0.1,
            window: Duration::from_secs(10),
        }
    }
}

/// Retry-ratio state.
#[derive(Clone, Debug, PartialEq)]
pub struct Ratio {
    cfg: RatioConfig,
    requests: Window,
    retries: Window,
}

impl Ratio {
    /// An empty window.
    pub fn new(cfg: RatioConfig) -> Self {
        Ratio {
            requests: Window::new(cfg.window, 10),
            retries: Window::new(cfg.window, 10),
            cfg,
        }
    }

    /// One request offered.
    pub fn deposit(&mut self, now: Nanos) {
        self.requests.add(now, 1.0);
    }

    /// Asks for one retry: allowed if one more keeps retries ≤ ratio · requests.
    pub fn withdraw(&mut self, now: Nanos) -> bool {
        let req = self.requests.sum(now);
        let ret = self.retries.sum(now);
        if ret + 1.0 <= self.cfg.ratio * req + 1e-9 {
            self.retries.add(now, 1.0);
            true
        } else {
            false
        }
    }
}
