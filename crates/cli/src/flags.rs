//! Flag values that more than one command parses.

use crate::cli::LimitArgs;
use crate::fail::Fail;
use anyhow::anyhow;
use herd_tune::Limits;

/// The limits of `herd check` and `herd tune`, validated: multipliers positive, the
/// hard-fail a ratio, the p99 a positive duration.
pub fn limits(a: &LimitArgs) -> Result<Limits, Fail> {
    let positive = |flag: &str, x: Option<f64>| match x {
        Some(v) if !(v.is_finite() && v > 0.0) => Err(Fail::input(anyhow!(
            "{flag} must be a positive number, got {v}"
        ))),
        _ => Ok(x),
    };
    Ok(Limits {
        hard_fail: a.max_hard_fail.as_deref().map(ratio).transpose()?,
        load: positive("--max-load", a.max_load)?,
        peak: positive("--max-peak", a.max_peak)?,
        burst: positive("--max-burst", a.max_burst)?,
        p99_ms: a.max_p99.as_deref().map(millis).transpose()?,
    })
}

/// `800ms`, `1.5s` or `800` (ms), as milliseconds.
pub fn millis(s: &str) -> Result<f64, Fail> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (t, 1.0)
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .map(|x| x * scale)
        .filter(|x| x.is_finite() && *x > 0.0)
        .ok_or_else(|| {
            Fail::input(anyhow!(
                "--max-p99 must be a positive duration (800ms, 1.5s, or milliseconds), got `{s}`"
            ))
        })
}

/// `0.01` or `1%`, as a ratio between 0 and 1.
pub fn ratio(s: &str) -> Result<f64, Fail> {
    let t = s.trim();
    let (num, scale) = match t.strip_suffix('%') {
        Some(p) => (p.trim(), 100.0),
        None => (t, 1.0),
    };
    let x = num
        .parse::<f64>()
        .ok()
        .map(|x| x / scale)
        .filter(|x| x.is_finite() && (0.0..=1.0).contains(x));
    x.ok_or_else(|| {
        Fail::input(anyhow!(
            "--max-hard-fail must be a ratio between 0 and 1 (0.01) or a percentage (1%), got `{s}`"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_and_percentages() {
        assert_eq!(ratio("0.01").ok(), Some(0.01));
        assert_eq!(ratio("1%").ok(), Some(0.01));
        assert_eq!(ratio(" 2.5 % ").ok(), Some(0.025));
        for bad in ["", "x", "150%", "-1", "1.5", "NaN"] {
            assert!(ratio(bad).is_err(), "{bad}");
        }
    }
}
