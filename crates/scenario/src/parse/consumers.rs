//! The checks for `[consumers]` and `[load] trace`: the retry layer above the client and
//! the recorded demand, kept apart from the rest of [`super`] because they reshape
//! `[load]` (with either, `rate` and `requests` mean something else).

use super::{Check, R};
use crate::model::RuleFields;
use crate::model::{ConsumerSpec, Load, Trace};
use crate::raw::{RawArmConsumers, RawConsumers};
use crate::span::keys;
use crate::span::Seg;
use herd_retry::{ConsumerConfig, ConsumerRules, OnTimeout};
use std::path::Path;
use std::time::Duration;

impl Check<'_> {
    /// `[load] trace`, resolved against the scenario file's directory (an embedded
    /// scenario's against the working directory).
    pub(super) fn trace(&self, t: &str, time_scale: Option<f64>) -> R<Trace> {
        let k = |x| keys(&["load", x]);
        if t.trim().is_empty() {
            return Err(self.err(&k("trace"), "must name a CSV file"));
        }
        let time_scale = match time_scale {
            Some(x) => self.positive(&k("time_scale"), x)?,
            None => 1.0,
        };
        let given = Path::new(t);
        let path = match self.base_dir() {
            Some(dir) if given.is_relative() => dir.join(given),
            _ => given.to_path_buf(),
        };
        Ok(Trace {
            path,
            time_scale,
            skip_bad_lines: false,
        })
    }

    /// `[consumers]`; sets `load.rate` to the demand it implies (units per second, all
    /// consumers; for a closed loop the rate if every unit were answered at once).
    pub(super) fn consumers(
        &self,
        c: RawConsumers,
        load: &mut Load,
        load_rate_set: bool,
    ) -> R<ConsumerSpec> {
        let k = |x| keys(&["consumers", x]);
        let count = self.count(&k("count"), c.count)?;
        if count == 0 {
            return Err(self.err(&k("count"), "must be at least 1"));
        }
        let count = u32::try_from(count).map_err(|_| {
            self.err(
                &k("count"),
                format!("must be at most {}, got {count}", u32::MAX),
            )
        })?;
        if load_rate_set {
            return Err(self.err(
                &keys(&["load", "rate"]),
                "does not apply with [consumers]: the demand is consumers.count × consumers.rate (or think_ms, or the trace)",
            ));
        }
        let (rate, think) = match (c.rate, c.think_ms, load.trace.is_some()) {
            (Some(_), Some(_), _) => {
                return Err(self.err(
                    &k("think_ms"),
                    "`rate` (open loop) and `think_ms` (closed loop) are exclusive: pick one",
                ))
            }
            (Some(_), None, true) | (None, Some(_), true) => {
                let key = if c.rate.is_some() { "rate" } else { "think_ms" };
                return Err(self.err(
                    &k(key),
                    format!("`{key}` does not apply with [load] trace: the trace says when each consumer's units arrive"),
                ));
            }
            (None, None, false) => {
                return Err(self.err(
                    &keys(&["consumers"]),
                    "[consumers] needs `rate` (units per consumer per second, open loop) or `think_ms` (closed loop), or a [load] trace",
                ))
            }
            (Some(r), None, false) => {
                let r = self.positive(&k("rate"), r)?;
                load.rate = r * f64::from(count);
                if !load.rate.is_finite() {
                    return Err(self.err(
                        &k("rate"),
                        format!("count × rate must be a finite number of units per second, got {r} × {count}"),
                    ));
                }
                (Some(r), None)
            }
            (None, Some(t), false) => {
                let t = self.ms(&k("think_ms"), t)?;
                if t.is_zero() {
                    return Err(self.err(&k("think_ms"), "must be greater than 0"));
                }
                load.rate = f64::from(count) / t.as_secs_f64();
                (None, Some(t))
            }
            (None, None, true) => (None, None),
        };
        let fields = RuleFields {
            timeout_ms: c.timeout_ms,
            on_timeout: c.on_timeout,
            max_in_flight: c.max_in_flight,
            give_up_ms: c.give_up_ms,
        };
        let rules = self.rules(&keys(&["consumers"]), &fields, think)?;
        Ok(ConsumerSpec {
            count,
            rate,
            rules,
            fields,
        })
    }

    /// An arm's consumer rules: the scenario's, with the arm's `consumers = { ... }`
    /// overrides (errors name the arm's keys).
    pub(super) fn arm_rules(
        &self,
        i: usize,
        spec: Option<&ConsumerSpec>,
        over: Option<RawArmConsumers>,
    ) -> R<Option<ConsumerRules>> {
        let base = vec![
            Seg::Key("arms".into()),
            Seg::Index(i),
            Seg::Key("consumers".into()),
        ];
        let (spec, over) = match (spec, over) {
            (None, None) => return Ok(None),
            (Some(s), None) => return Ok(Some(s.rules)),
            (None, Some(_)) => return Err(self.err(&base, "applies only with a [consumers] table")),
            (Some(s), Some(o)) => (s, o),
        };
        let f = &spec.fields;
        let fields = RuleFields {
            timeout_ms: over.timeout_ms.unwrap_or(f.timeout_ms),
            on_timeout: over.on_timeout.unwrap_or_else(|| f.on_timeout.clone()),
            max_in_flight: over.max_in_flight.unwrap_or(f.max_in_flight),
            give_up_ms: over.give_up_ms.unwrap_or(f.give_up_ms),
        };
        self.rules(&base, &fields, spec.rules.think()).map(Some)
    }

    /// Checks the rule keys under `base` (`consumers` or `arms[i].consumers`).
    fn rules(&self, base: &[Seg], c: &RuleFields, think: Option<Duration>) -> R<ConsumerRules> {
        let k = |x: &str| {
            let mut p = base.to_vec();
            p.push(Seg::Key(x.into()));
            p
        };
        let on_timeout = match c.on_timeout.as_str() {
            "reissue" => OnTimeout::Reissue,
            "abandon" => OnTimeout::Abandon,
            other => {
                return Err(self.err(
                    &k("on_timeout"),
                    format!("unknown on_timeout `{other}` (expected \"reissue\" or \"abandon\")"),
                ))
            }
        };
        let timeout = self.ms(&k("timeout_ms"), c.timeout_ms)?;
        if timeout.is_zero() {
            return Err(self.err(
                &k("timeout_ms"),
                format!("must be greater than 0 with on_timeout = \"{}\" (the consumer re-sends at its timeout)", on_timeout.as_str()),
            ));
        }
        let cap = self.count(&k("max_in_flight"), c.max_in_flight)?;
        let max_in_flight = u32::try_from(cap).map_err(|_| {
            self.err(
                &k("max_in_flight"),
                format!("must be at most {}, got {cap}", u32::MAX),
            )
        })?;
        let give_up = self.ms(&k("give_up_ms"), c.give_up_ms)?;
        if give_up.is_zero() {
            return Err(self.err(&k("give_up_ms"), "must be greater than 0"));
        }
        ConsumerRules::new(ConsumerConfig {
            timeout,
            on_timeout,
            max_in_flight,
            give_up,
            think,
        })
        .map_err(|e| self.err(&k("timeout_ms"), e.to_string()))
    }
}
