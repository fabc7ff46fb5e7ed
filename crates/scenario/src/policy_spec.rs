//! A retry policy as a user writes it (profile name plus optional overrides), turned into a
//! [`Policy`]. Scenario arms and `herd policy` flags both go through here, so a policy means
//! the same thing, and is checked the same way, wherever it is written.

use herd_retry::{Jitter, Policy, Profile};
use std::time::Duration;

/// A policy as written: a profile and the knobs that override its defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PolicySpec {
    /// Profile name: undici, axios-retry, none, naive, exponential.
    pub profile: String,
    /// Jitter kind name.
    pub jitter: Option<String>,
    /// Factor for proportional / additive jitter.
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
                    "a jitter factor needs a jitter kind (proportional or additive)".into(),
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
            if x.is_finite() && x >= 0.0 {
                Ok(Duration::from_secs_f64(x / 1000.0))
            } else {
                Err(err(field, format!("must be 0 or more, got {x}")))
            }
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
        Ok(p)
    }
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
