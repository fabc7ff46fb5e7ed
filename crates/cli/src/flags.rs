//! Flag values that more than one command parses.

use crate::fail::Fail;
use anyhow::anyhow;

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
