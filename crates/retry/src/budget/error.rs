//! Why a budget's settings were refused. The configs check their settings when they are
//! made, so a budget that exists can run: no division by a zero window, no ratio a
//! negative number of retries would satisfy.

use std::time::Duration;

/// A budget setting out of its range, from a config's `new`.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    /// A percent budget's `ttl` outside Finagle's range, 1 s to 60 s.
    #[error("the percent budget's ttl must be between 1 s and 60 s (Finagle's range), got {0:?}")]
    Ttl(Duration),
    /// A number outside `[0, max]` (or `(0, max]` when `above_zero`), or not finite.
    #[error(
        "the budget's {knob} must be {} 0 and at most {max}, got {got}",
        if *above_zero { "above" } else { "at least" }
    )]
    OutOfRange {
        /// The setting: `percent`, `max_tokens`, `token_ratio` or `ratio`.
        knob: &'static str,
        /// Whether 0 itself is refused.
        above_zero: bool,
        /// The largest value allowed.
        max: f64,
        /// The value given.
        got: f64,
    },
    /// Adaptive throttling's `k` below 1 (or not finite): with fewer requests than accepts
    /// tolerated, the client would throttle a healthy upstream.
    #[error("the adaptive budget's k must be 1 or more, got {0}")]
    K(f64),
    /// A counting window of zero, for the budget of this kind.
    #[error("the {0} budget's window must be greater than 0")]
    ZeroWindow(&'static str),
}

/// `got` if it is finite and in `[0, max]` (`(0, max]` when `above_zero`).
pub(super) fn in_range(
    knob: &'static str,
    got: f64,
    above_zero: bool,
    max: f64,
) -> Result<f64, BudgetError> {
    let low = if above_zero { got > 0.0 } else { got >= 0.0 };
    if got.is_finite() && low && got <= max {
        Ok(got)
    } else {
        Err(BudgetError::OutOfRange {
            knob,
            above_zero,
            max,
            got,
        })
    }
}
