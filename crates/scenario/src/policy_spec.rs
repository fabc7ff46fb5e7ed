//! A retry policy as a user writes it (profile name plus optional overrides), turned into a
//! [`Policy`]. Scenario arms and `herd policy` flags both go through here, so a policy means
//! the same thing, and is checked the same way, wherever it is written.

use crate::duration::{BoundedDuration, MAX_DURATION};
use herd_retry::{Jitter, Policy, Profile};

/// A policy as written: a profile and the knobs that override its defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PolicySpec {
    /// Profile name: undici, axios-retry, none, naive, exponential.
    pub profile: String,
    /// Jitter kind name.
    pub jitter: Option<String>,
    /// Factor for proportional / additive jitter; seconds for noise.
    pub jitter_factor: Option<f64>,
    /// Retries (not attempts).
    pub retries: Option<i64>,
    /// Base delay, ms.
    pub base_ms: Option<f64>,
    /// Growth factor.
    pub factor: Option<f64>,
    /// Cap on the nominal delay, ms.
    pub cap_ms: Option<f64>,
}

/// Which knob is wrong, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecError {
    /// The knob: `policy`, `jitter`, `retries`, `base_ms`, `factor` or `cap_ms`.
    pub field: &'static str,
    /// What is wrong with it.
    pub message: String,
}

impl PolicySpec {
    /// Builds the policy, or says which knob is wrong.
    pub fn build(&self) -> Result<Policy, SpecError> {
        let err = |field, message: String| SpecError { field, message };
        let profile: Profile = self.profile.parse().map_err(|e| err("policy", e))?;
        let mut p = Policy::new(profile);
        match (&self.jitter, self.jitter_factor) {
            (Some(name), f) => {
                let j = Jitter::from_name(name, f).map_err(|e| err("jitter", e.to_string()))?;
                p = p.with_jitter(j);
            }
            (None, Some(_)) => {
                return Err(err(
                    "jitter",
                    "a jitter factor needs a jitter kind (proportional, additive or noise)".into(),
                ))
            }
            (None, None) => {}
        }
        if let Some(r) = self.retries {
            let r = u32::try_from(r).map_err(|_| {
                err(
                    "retries",
                    format!("must be between 0 and {}, got {r}", u32::MAX),
                )
            })?;
            p = p.with_retries(r);
        }
        let ms = |field, x: f64| {
            BoundedDuration::from_ms(x)
                .map(BoundedDuration::get)
                .map_err(|e| err(field, e.to_string()))
        };
        if let Some(b) = self.base_ms {
            p = p.with_base(ms("base_ms", b)?);
        }
        if let Some(f) = self.factor {
            if !(f.is_finite() && f > 0.0) {
                return Err(err("factor", format!("must be greater than 0, got {f}")));
            }
            p = p.with_factor(f);
        }
        if let Some(c) = self.cap_ms {
            p = p.with_cap(ms("cap_ms", c)?);
        }
        self.check_longest(&p)?;
        Ok(p)
    }

    /// Refuses a policy that could wait past [`MAX_DURATION`] before a retry
    /// (`axios-retry` has no cap, so 70 retries would wait `100 ms · 2^70`), naming the
    /// knob that set it off.
    fn check_longest(&self, p: &Policy) -> Result<(), SpecError> {
        let (nominal, jittered) = longest_delay_secs(p);
        if jittered <= MAX_DURATION.as_secs_f64() {
            return Ok(());
        }
        let (field, fix) = if nominal <= MAX_DURATION.as_secs_f64() {
            (
                "jitter",
                "a smaller jitter factor, a cap (cap_ms) or fewer retries",
            )
        } else if self.retries.is_some() {
            ("retries", "a cap (cap_ms) or fewer retries")
        } else if self.factor.is_some() {
            ("factor", "a cap (cap_ms) or a smaller factor")
        } else {
            ("base_ms", "a cap (cap_ms) or a smaller base_ms")
        };
        Err(SpecError {
            field,
            message: format!(
                "the longest delay before a retry would be {jittered:.3e} s, past the 365 days ({} s) herd handles: set {fix}",
                MAX_DURATION.as_secs()
            ),
        })
    }
}

/// The longest delay `p` can draw before any retry when no `Retry-After` is honoured,
/// seconds, un-jittered and jittered. The nominal delays are monotone in the retry number
/// (the factor is positive), so the larger of the first and the last is the largest.
fn longest_delay_secs(p: &Policy) -> (f64, f64) {
    let b = p.backoff();
    let n = p.retries();
    if n == 0 {
        return (0.0, 0.0);
    }
    let cap = b.cap.as_secs_f64();
    let base = b.base.as_secs_f64();
    let nominal = |n: u32| {
        let exp = (n - 1).saturating_add(b.offset).min(i32::MAX as u32) as i32;
        let d = base * b.factor.powi(exp);
        if d.is_nan() {
            cap
        } else {
            d.min(cap)
        }
    };
    let top = nominal(1).max(nominal(n));
    let jittered = match b.jitter {
        Jitter::None | Jitter::Full | Jitter::Equal => top,
        Jitter::Proportional(f) | Jitter::Additive(f) => top * (1.0 + f),
        // An absolute amount, then the cap.
        Jitter::Noise(s) => (top + s).min(cap),
        // Each draw is at most three times the previous one, starting from `base`.
        Jitter::Decorrelated => (base * 3f64.powi(n.min(i32::MAX as u32) as i32)).min(cap),
        _ => f64::INFINITY,
    };
    (top, jittered)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(profile: &str) -> PolicySpec {
        PolicySpec {
            profile: profile.into(),
            ..Default::default()
        }
    }

    #[test]
    fn builds_and_names_the_bad_knob() {
        let p = PolicySpec {
            jitter: Some("full".into()),
            retries: Some(2),
            ..spec("undici")
        }
        .build()
        .unwrap();
        assert_eq!(p.retries(), 2);
        assert_eq!(p.backoff().jitter, Jitter::Full);
        assert_eq!(spec("nope").build().unwrap_err().field, "policy");
        assert_eq!(
            PolicySpec {
                retries: Some(-1),
                ..spec("undici")
            }
            .build()
            .unwrap_err()
            .field,
            "retries"
        );
        assert_eq!(
            PolicySpec {
                base_ms: Some(-1.0),
                ..spec("undici")
            }
            .build()
            .unwrap_err()
            .field,
            "base_ms"
        );
        assert_eq!(
            PolicySpec {
                factor: Some(0.0),
                ..spec("undici")
            }
            .build()
            .unwrap_err()
            .field,
            "factor"
        );
        let e = PolicySpec {
            retries: Some(70),
            ..spec("axios-retry")
        }
        .build()
        .unwrap_err();
        assert_eq!(e.field, "retries", "{e:?}");
        assert!(e.message.contains("365 days"), "{e:?}");
        assert!(PolicySpec {
            retries: Some(70),
            cap_ms: Some(60_000.0),
            ..spec("axios-retry")
        }
        .build()
        .is_ok());
        assert_eq!(
            PolicySpec {
                base_ms: Some(1e30),
                ..spec("undici")
            }
            .build()
            .unwrap_err()
            .field,
            "base_ms"
        );
        assert_eq!(
            PolicySpec {
                jitter_factor: Some(0.1),
                ..spec("undici")
            }
            .build()
            .unwrap_err()
            .field,
            "jitter"
        );
    }
}
