//! The checks for `[upstream] target` and the keys that only mean something with it
//! (`connect_timeout_ms`, `answer_timeout_ms`, `settle_ms`, `target_ca`, `target_insecure`).

use super::{Check, R};
use crate::raw::RawUpstream;
use crate::span::Seg;
use crate::target::{Scheme, Target, TargetUrl};
use crate::tls::TargetTrust;
use std::time::Duration;

impl Check<'_> {
    /// `[upstream] target` and its timeouts; `None` without a target (the timeouts are then
    /// refused: they would silently do nothing).
    pub(super) fn target(&self, at: &[Seg], u: &RawUpstream) -> R<Option<Target>> {
        let k = |x| super::under(at, x);
        let Some(text) = &u.target else {
            for (key, set) in [
                ("connect_timeout_ms", u.connect_timeout_ms.is_some()),
                ("answer_timeout_ms", u.answer_timeout_ms.is_some()),
                ("settle_ms", u.settle_ms.is_some()),
                ("calibrated", u.calibrated.is_some()),
                ("target_ca", u.target_ca.is_some()),
                ("target_insecure", u.target_insecure.is_some()),
            ] {
                if set {
                    return Err(self.err(&k(key), format!("`{key}` applies only with `target`")));
                }
            }
            return Ok(None);
        };
        let url: TargetUrl = text
            .parse()
            .map_err(|e: String| self.err(&k("target"), e))?;
        let mut t = Target::new(url);
        if let Some(ms) = u.connect_timeout_ms {
            t.connect_timeout = self.timeout(&k("connect_timeout_ms"), ms)?;
        }
        if let Some(ms) = u.answer_timeout_ms {
            t.answer_timeout = self.timeout(&k("answer_timeout_ms"), ms)?;
        }
        if let Some(ms) = u.settle_ms {
            t.settle = self.ms(&k("settle_ms"), self.non_neg(&k("settle_ms"), ms)?)?;
        }
        if let Some(c) = &u.calibrated {
            if c.trim().is_empty() {
                return Err(self.err(
                    &k("calibrated"),
                    "`calibrated` says how the model was fitted (`herd calibrate` writes it); it cannot be empty",
                ));
            }
            t.calibrated = Some(c.clone());
        }
        t.trust = self.target_trust(at, u, t.url.scheme())?;
        Ok(Some(t))
    }

    /// `target_ca` / `target_insecure`: only for an https target, and not both.
    fn target_trust(&self, at: &[Seg], u: &RawUpstream, scheme: Scheme) -> R<TargetTrust> {
        let k = |x| super::under(at, x);
        let insecure = u.target_insecure.unwrap_or(false);
        if scheme == Scheme::Http {
            for (key, set) in [
                ("target_ca", u.target_ca.is_some()),
                ("target_insecure", u.target_insecure.is_some()),
            ] {
                if set {
                    return Err(self.err(
                        &k(key),
                        format!("`{key}` applies only to an https:// target"),
                    ));
                }
            }
        }
        match (&u.target_ca, insecure) {
            (Some(_), true) => Err(self.err(
                &k("target_insecure"),
                "`target_insecure = true` trusts any certificate, so `target_ca` would do nothing; keep one",
            )),
            (Some(ca), false) if ca.trim().is_empty() => Err(self.err(
                &k("target_ca"),
                "`target_ca` names a PEM file of CA certificates; it cannot be empty",
            )),
            (Some(ca), false) => Ok(TargetTrust::CaFile(self.path(ca))),
            (None, true) => Ok(TargetTrust::Insecure),
            (None, false) => Ok(TargetTrust::System),
        }
    }

    /// A wait on the target: bounded, and never 0 (which would mean no wait at all, not
    /// "for ever": herd never waits on a target for ever).
    fn timeout(&self, path: &[crate::span::Seg], ms: f64) -> R<Duration> {
        let d = self.ms(path, self.positive(path, ms)?)?;
        Ok(d)
    }
}
