//! The policy: one immutable value per arm or client, and a tiny per-request state.
//!
//! `Policy::decide` is the single place where herd decides whether and when to retry. The
//! real driver, the simulator and production integrations all call it, with their own
//! clock and RNG, so a number in a report is a number about this code.

use crate::backoff::Backoff;
use crate::classify::{Failure, Method, Outcome};
use crate::grpc::{Code, Codes};
use crate::jitter::Jitter;
use crate::profile::Profile;
use crate::retry_after::{RetryAfter, RetryAfterMode};
use rand::Rng;
use std::fmt;
use std::time::Duration;

/// A retry policy: a profile's condition with its (possibly overridden) numbers.
///
/// Each `with_*` setter sets one thing, so the setters can be called in any order. Where a
/// library ties two settings together (undici's `maxTimeout` caps `Retry-After` too; an
/// axios-retry custom `retryDelay` never sees the hint), the tie is a rule over the settings,
/// applied whenever one changes ([`Policy::retry_after`]), never a setter overwriting another.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Policy {
    profile: Profile,
    retries: u32,
    backoff: Backoff,
    /// Whether the jitter was set: for axios-retry, a custom `retryDelay`.
    jitter_set: bool,
    /// The `Retry-After` rule, if set.
    retry_after_set: Option<RetryAfter>,
    /// The rule [`Policy::decide`] applies: the one set, or the profile's with its ties to
    /// the other settings. Derived from the fields above whenever one changes, so `decide`
    /// reads a value rather than working it out at every retry.
    retry_after: RetryAfter,
    /// A gRPC profile's `retryableStatusCodes` (empty for the others).
    retryable: Codes,
    /// A gRPC profile whose implementation ignored the service config's `hedgingPolicy`.
    hedging_ignored: bool,
}

/// Per-logical-request state: a handful of bytes, so a million in-flight requests fit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetryState {
    /// Retries made so far.
    pub retries: u32,
    /// The delay before the last retry, for `decorrelated` jitter.
    pub prev_delay: Option<Duration>,
    /// The retry whose wait a gRPC server's pushback set (0: none yet). gRPC's retry
    /// design (gRFC A6, its pushback section) restarts the backoff from the initial one
    /// after a pushed-back retry, so the retries after it count from here.
    pub pushed_back: u32,
}

/// What to do after an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The attempt succeeded: the logical request is done.
    Success,
    /// Send another attempt after this delay.
    Retry {
        /// How long to wait before the next attempt.
        after: Duration,
    },
    /// Stop and report the last outcome as the final failure.
    GiveUp(GiveUp),
}

/// Why a policy stopped retrying.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GiveUp {
    /// The outcome is not one this policy retries (a 404, a timeout under undici, …).
    NotRetryable,
    /// All retries are used up.
    Exhausted,
    /// The server's `Retry-After` asked for longer than the policy's maximum, and the
    /// policy gives up on such hints.
    RetryAfterTooLong,
    /// The retry budget refused the retry.
    Budget,
    /// The retry would start after the request's deadline.
    Deadline,
}

impl Policy {
    /// A profile with its library's defaults.
    pub fn new(profile: Profile) -> Policy {
        Policy {
            profile,
            retries: profile.default_retries(),
            backoff: profile.default_backoff(),
            jitter_set: false,
            retry_after_set: None,
            retry_after: profile.default_retry_after(),
            retryable: match profile {
                Profile::Grpc(_) => Codes::of(&[Code::UNAVAILABLE]),
                _ => Codes::EMPTY,
            },
            hedging_ignored: false,
        }
        .resolve()
    }

    /// Sets a gRPC profile's `retryableStatusCodes`; no effect on other profiles.
    ///
    /// # Default
    /// UNAVAILABLE, A6's example.
    pub fn with_retryable_codes(mut self, codes: Codes) -> Policy {
        self.retryable = codes;
        self
    }

    /// Marks a gRPC profile as having ignored its service config's `hedgingPolicy`, as
    /// C-core and grpc-go do, so that the policy says so wherever it is shown.
    ///
    /// # Default
    /// Not marked.
    pub fn with_hedging_ignored(mut self) -> Policy {
        self.hedging_ignored = true;
        self
    }

    /// A gRPC profile's `retryableStatusCodes` (empty for other profiles).
    pub fn retryable_codes(&self) -> Codes {
        self.retryable
    }

    /// Whether the service config's `hedgingPolicy` was ignored.
    pub fn hedging_ignored(&self) -> bool {
        self.hedging_ignored
    }

    /// Whether an attempt that ended in `outcome` moves a retry budget. For the gRPC
    /// profiles, A6's throttle counts successes and failures with a retryable status only;
    /// for the others, every attempt.
    pub fn moves_budget(&self, outcome: &Outcome) -> bool {
        match self.profile {
            Profile::Grpc(_) => {
                outcome.is_success() || self.retryable.contains(outcome.grpc_code())
            }
            _ => true,
        }
    }

    /// Sets how many retries (not attempts) are allowed.
    ///
    /// # Default
    /// The profile's: undici 5, go-retryablehttp 4, none 0, got and ky 2, p-retry 10,
    /// stamina 9, backoff 25 (its stand-in for "forever"), every other 3.
    pub fn with_retries(mut self, retries: u32) -> Policy {
        self.retries = retries;
        self
    }

    /// Overrides the jitter kind.
    ///
    /// For axios-retry, another jitter means a custom `retryDelay` function. axios-retry
    /// 4.x calls it as `retryDelay(retryCount, error)`, and only its own delay functions
    /// (`exponentialDelay`, `linearDelay`, the default `noDelay`) read `Retry-After` from
    /// the error; a plain function of the retry count, like the Node adapter's
    /// `(n) => 2 ** n * 100`, never sees it. So under that profile a jitter set here also
    /// means the hint is ignored, unless a rule is set with [`Policy::with_retry_after`].
    ///
    /// # Default
    /// The profile's: undici, urllib3, go-retryablehttp, ky, p-retry and backon `none`,
    /// axios-retry `additive(0.2)`, got `noise(0.1)`, stamina `noise(1)`, exponential,
    /// tenacity, backoff and herd `full`.
    pub fn with_jitter(mut self, jitter: Jitter) -> Policy {
        self.backoff.jitter = jitter;
        self.jitter_set = true;
        self.resolve()
    }

    /// Overrides the base delay (undici's `minTimeout`, axios-retry's `delayFactor`).
    ///
    /// # Default
    /// The profile's: 100 ms for axios-retry, exponential, herd and stamina, 300 ms for ky,
    /// 500 ms for undici, urllib3 and tenacity, 1 s for go-retryablehttp, got, p-retry,
    /// backoff and backon, 0 for naive and none.
    pub fn with_base(mut self, base: Duration) -> Policy {
        self.backoff.base = base;
        self
    }

    /// Overrides the growth factor.
    ///
    /// # Default
    /// The profile's: 2, or 1 for naive and none.
    pub fn with_factor(mut self, factor: f64) -> Policy {
        self.backoff.factor = factor;
        self
    }

    /// Overrides the cap on the nominal delay. Under undici it is `maxTimeout`, which caps
    /// `Retry-After` too, unless a rule is set with [`Policy::with_retry_after`].
    ///
    /// # Default
    /// The profile's: undici, go-retryablehttp and tenacity 30 s, urllib3 120 s, backon 60 s,
    /// exponential 10 s, herd and stamina 5 s, axios-retry, got, ky, p-retry and backoff none
    /// ([`Duration::MAX`]), 0 for naive and none.
    pub fn with_cap(mut self, cap: Duration) -> Policy {
        self.backoff.cap = cap;
        self.resolve()
    }

    /// Sets what a `Retry-After` hint does, whatever the other settings.
    ///
    /// # Default
    /// The profile's ([`Profile::default_retry_after`]), tied to the other settings as
    /// [`Policy::with_jitter`] and [`Policy::with_cap`] say.
    pub fn with_retry_after(mut self, rule: RetryAfter) -> Policy {
        self.retry_after_set = Some(rule);
        self.resolve()
    }

    /// Works out the `Retry-After` rule from the settings: the one set, else the profile's
    /// with the library's ties applied.
    fn resolve(mut self) -> Policy {
        self.retry_after = match (self.retry_after_set, self.profile) {
            (Some(rule), _) => rule,
            // A custom retryDelay (see `with_jitter`) does not read the hint.
            (None, Profile::AxiosRetry) if self.jitter_set => RetryAfter::IGNORE,
            // undici's maxTimeout caps the backoff and Retry-After alike.
            (None, Profile::Undici) => RetryAfter {
                max: self.backoff.cap,
                ..self.profile.default_retry_after()
            },
            (None, profile) => profile.default_retry_after(),
        };
        self
    }

    /// The profile this policy started from.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The retry limit.
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// The backoff.
    pub fn backoff(&self) -> Backoff {
        self.backoff
    }

    /// The `Retry-After` handling.
    pub fn retry_after(&self) -> RetryAfter {
        self.retry_after
    }

    /// Decides what follows an attempt of a `method` request that ended in `outcome`.
    /// On `Retry`, `state` is advanced; call again with the next attempt's outcome.
    #[inline]
    pub fn decide<R: Rng + ?Sized>(
        &self,
        state: &mut RetryState,
        method: Method,
        outcome: &Outcome,
        rng: &mut R,
    ) -> Decision {
        if outcome.is_success() {
            return Decision::Success;
        }
        if let Profile::Grpc(_) = self.profile {
            return self.decide_grpc(state, outcome, rng);
        }
        if !self.profile.is_retryable(method, outcome) {
            return Decision::GiveUp(GiveUp::NotRetryable);
        }
        if state.retries >= self.retries {
            return Decision::GiveUp(GiveUp::Exhausted);
        }
        let n = state.retries + 1;
        let hint = outcome.retry_after();
        let ra = self.retry_after;
        let hint = hint.filter(|h| {
            !h.is_zero()
                && ra.mode != RetryAfterMode::Ignore
                && self.profile.reads_retry_after(outcome)
        });
        let hint = match hint {
            Some(h) => match ra.clamp(h) {
                Some(h) => Some(h),
                None => return Decision::GiveUp(GiveUp::RetryAfterTooLong),
            },
            None => None,
        };
        let backoff = match self.profile.throttling_backoff() {
            Some(b) if outcome.is_throttling() => b,
            _ => self.backoff,
        };
        let after = match (ra.mode, hint) {
            (RetryAfterMode::Replace, Some(h)) => h,
            (RetryAfterMode::Floor, Some(h)) => backoff.delay(n, state.prev_delay, rng).max(h),
            (RetryAfterMode::FloorThenJitter, Some(h)) => {
                let nominal = backoff.nominal(n).max(h);
                backoff.jittered(nominal, state.prev_delay, rng)
            }
            _ if n < self.profile.first_backoff_retry() => Duration::ZERO,
            _ => backoff.delay(n, state.prev_delay, rng),
        };
        state.retries = n;
        state.prev_delay = Some(after);
        Decision::Retry { after }
    }
}

impl Policy {
    /// A6's rules for a failed attempt: a retryable status only; the server's
    /// `grpc-retry-pushback-ms` replaces the backoff, after which the backoff starts again
    /// from `initialBackoff`; any method (gRPC retries say nothing of idempotency).
    fn decide_grpc<R: Rng + ?Sized>(
        &self,
        state: &mut RetryState,
        outcome: &Outcome,
        rng: &mut R,
    ) -> Decision {
        // The throttle refused a retry as it was about to go (grpc-js): the call ends.
        if let Outcome::Failed(Failure::Throttled) = outcome {
            return Decision::GiveUp(GiveUp::Budget);
        }
        if !self.retryable.contains(outcome.grpc_code()) {
            return Decision::GiveUp(GiveUp::NotRetryable);
        }
        if state.retries >= self.retries {
            return Decision::GiveUp(GiveUp::Exhausted);
        }
        let n = state.retries + 1;
        let after = match outcome.retry_after() {
            Some(pushback) if self.retry_after.mode != RetryAfterMode::Ignore => {
                state.pushed_back = n;
                pushback
            }
            _ => self
                .backoff
                .delay(n - state.pushed_back, state.prev_delay, rng),
        };
        state.retries = n;
        state.prev_delay = Some(after);
        Decision::Retry { after }
    }
}

impl fmt::Display for Policy {
    /// A readable one-line summary, e.g.
    /// `undici: 5 retries, 500ms·2^(n-1) capped 30000ms, jitter none, Retry-After replaces (≤30000ms)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.backoff;
        if let Profile::Grpc(_) = self.profile {
            return self.fmt_grpc(f);
        }
        write!(f, "{}: {} retries", self.profile, self.retries)?;
        if self.retries == 0 {
            return Ok(());
        }
        if b.base.is_zero() {
            write!(f, ", immediate")?;
        } else {
            let exp = if b.offset == 0 {
                "n-1".to_string()
            } else {
                format!("n-1+{}", b.offset)
            };
            write!(f, ", {}ms·{}^({exp})", b.base.as_millis(), b.factor)?;
            if b.cap != Duration::MAX {
                write!(f, " capped {}ms", b.cap.as_millis())?;
            }
            if self.profile.first_backoff_retry() == 2 {
                write!(f, " from the second retry (the first is immediate)")?;
            }
        }
        write!(f, ", jitter {}", b.jitter)?;
        let ra = self.retry_after;
        match ra.mode {
            RetryAfterMode::Ignore => return Ok(()),
            RetryAfterMode::Replace => write!(f, ", Retry-After replaces")?,
            RetryAfterMode::Floor => write!(f, ", Retry-After is a floor")?,
            RetryAfterMode::FloorThenJitter => write!(f, ", Retry-After is a floor before jitter")?,
        }
        if !ra.min.is_zero() || ra.max != Duration::MAX {
            write!(f, " (")?;
            if !ra.min.is_zero() {
                write!(f, "≥{}ms, ", ra.min.as_millis())?;
            }
            if ra.max != Duration::MAX {
                let rule = match ra.above_max {
                    crate::retry_after::AboveMax::WaitMax => "",
                    crate::retry_after::AboveMax::GiveUp => ", give up above",
                };
                write!(f, "≤{}ms{rule}", ra.max.as_millis())?;
            }
            write!(f, ")")?;
        }
        Ok(())
    }
}

impl Policy {
    /// A gRPC profile in a service config's words, e.g.
    /// `grpc-core: maxAttempts 4, initialBackoff 0.1s, maxBackoff 1s, backoffMultiplier 2, jitter proportional(0.2), retryableStatusCodes UNAVAILABLE`.
    fn fmt_grpc(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.backoff;
        if self.retries == 0 {
            write!(f, "{}: no retryPolicy", self.profile)?;
        } else {
            write!(
                f,
                "{}: maxAttempts {}, initialBackoff {}s, maxBackoff {}s, backoffMultiplier {}, jitter {}, retryableStatusCodes {}",
                self.profile,
                self.retries + 1,
                b.base.as_secs_f64(),
                b.cap.as_secs_f64(),
                b.factor,
                b.jitter,
                self.retryable
            )?;
        }
        if self.hedging_ignored {
            write!(
                f,
                ", hedgingPolicy ignored ({} does not hedge)",
                self.profile
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Failure;
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    /// Delays until give-up when every attempt ends in `outcome`.
    fn run(p: Policy, outcome: Outcome, seed: u64) -> (Vec<u128>, Decision) {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let mut st = RetryState::default();
        let mut out = vec![];
        loop {
            match p.decide(&mut st, Method::Get, &outcome, &mut rng) {
                Decision::Retry { after } => out.push(after.as_millis()),
                d => return (out, d),
            }
        }
    }

    #[test]
    fn undici_defaults() {
        let (d, end) = run(Policy::new(Profile::Undici), Outcome::status(503), 1);
        assert_eq!(d, [500, 1000, 2000, 4000, 8000]);
        assert_eq!(end, Decision::GiveUp(GiveUp::Exhausted));
        let (d, end) = run(
            Policy::new(Profile::Undici),
            Outcome::Failed(Failure::Timeout),
            1,
        );
        assert!(d.is_empty());
        assert_eq!(end, Decision::GiveUp(GiveUp::NotRetryable));
    }

    #[test]
    fn undici_retry_after_replaces_and_is_capped() {
        let ra = |s| Outcome::Response {
            status: 503,
            retry_after: Some(Duration::from_secs(s)),
            throttling: false,
            grpc_status: None,
        };
        let (d, _) = run(Policy::new(Profile::Undici), ra(3), 1);
        assert_eq!(d, [3000; 5]);
        let (d, _) = run(Policy::new(Profile::Undici), ra(120), 1);
        assert_eq!(d, [30_000; 5]);
        let (d, _) = run(Policy::new(Profile::Undici), ra(0), 1);
        assert_eq!(
            d,
            [500, 1000, 2000, 4000, 8000],
            "undici 7 ignores a hint of 0"
        );
    }

    #[test]
    fn axios_defaults_exact_under_seed() {
        let (d, end) = run(Policy::new(Profile::AxiosRetry), Outcome::status(503), 11);
        assert_eq!(d.len(), 3);
        for (got, nominal) in d.iter().zip([200u128, 400, 800]) {
            assert!(
                *got >= nominal && *got <= nominal * 6 / 5,
                "{got} vs {nominal}"
            );
        }
        assert_eq!(
            d,
            run(Policy::new(Profile::AxiosRetry), Outcome::status(503), 11).0
        );
        assert_eq!(end, Decision::GiveUp(GiveUp::Exhausted));
        let nj = Policy::new(Profile::AxiosRetry).with_jitter(Jitter::None);
        assert_eq!(run(nj, Outcome::status(503), 11).0, [200, 400, 800]);
        // exponentialDelay: Retry-After is a floor, uncapped, and its 20% goes on top.
        let ra = Outcome::Response {
            status: 429,
            retry_after: Some(Duration::from_secs(100)),
            throttling: false,
            grpc_status: None,
        };
        let (d, _) = run(Policy::new(Profile::AxiosRetry), ra, 1);
        assert!(d.iter().all(|x| (100_000..=120_000).contains(x)), "{d:?}");
        // A custom retryDelay (any jitter override) does not see the hint.
        assert_eq!(run(nj, ra, 1).0, [200, 400, 800]);
    }

    /// axios-retry 4.5.0, `dist/esm/index.js` (the version `adapters/node` locks):
    ///
    /// ```js
    /// 59 export function exponentialDelay(retryNumber = 0, error = undefined, delayFactor = 100) {
    /// 60     const calculatedDelay = 2 ** retryNumber * delayFactor;
    /// 61     const delay = Math.max(calculatedDelay, retryAfter(error));
    /// 62     const randomSum = delay * 0.2 * Math.random(); // 0-20% of the delay
    /// 63     return delay + randomSum;
    /// ```
    ///
    /// `retryAfter` (lines 43–55) turns `Retry-After: 1` into 1000 ms, and `handleRetry`
    /// (lines 127–129) calls `retryDelay(retryCount, error)` with `retryCount` 1, 2, 3. The
    /// floor comes before the jitter: a 1 s hint becomes 1000–1200 ms, never exactly 1 s
    /// (a floor after the jitter, herd's `Floor`, would give 1000, 1000, 1000, 1897 here).
    #[test]
    fn axios_jitters_the_larger_of_backoff_and_retry_after() {
        let now = std::time::SystemTime::UNIX_EPOCH;
        let o = Outcome::from_response(503, Some("1"), now);
        // A fourth retry (nominal 1600 ms) shows the backoff winning over the hint.
        let p = Policy::new(Profile::AxiosRetry).with_retries(4);
        let (d, end) = run(p, o, 7);
        assert_eq!(d, [1137, 1095, 1054, 1897]);
        assert_eq!(end, Decision::GiveUp(GiveUp::Exhausted));
        // The same numbers from the formula, with the same draws.
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        let formula: Vec<u128> = [200.0f64, 400.0, 800.0, 1600.0]
            .iter()
            .map(|nominal| {
                let delay = nominal.max(1000.0);
                let u: f64 = rng.random();
                (delay + delay * 0.2 * u) as u128
            })
            .collect();
        assert_eq!(d, formula);
        // Without the hint, the same draws on the backoff alone.
        let (d, _) = run(p, Outcome::status(503), 7);
        assert_eq!(d, [227, 438, 843, 1897]);
    }

    #[test]
    fn naive_and_none() {
        assert_eq!(
            run(Policy::new(Profile::Naive), Outcome::status(500), 1).0,
            [0, 0, 0]
        );
        let (d, end) = run(Policy::new(Profile::None), Outcome::status(500), 1);
        assert!(d.is_empty());
        assert_eq!(end, Decision::GiveUp(GiveUp::NotRetryable));
        let mut st = RetryState::default();
        let mut rng = Pcg64Mcg::seed_from_u64(0);
        let d = Policy::new(Profile::Undici).decide(
            &mut st,
            Method::Get,
            &Outcome::status(200),
            &mut rng,
        );
        assert_eq!(d, Decision::Success);
        assert_eq!(st, RetryState::default());
    }

    #[test]
    fn display_is_readable() {
        assert_eq!(
            Policy::new(Profile::Undici).to_string(),
            "undici: 5 retries, 500ms·2^(n-1) capped 30000ms, jitter none, Retry-After replaces (≤30000ms)"
        );
        assert_eq!(
            Policy::new(Profile::AxiosRetry)
                .with_jitter(Jitter::Full)
                .to_string(),
            "axios-retry: 3 retries, 100ms·2^(n-1+1), jitter full"
        );
        assert_eq!(Policy::new(Profile::None).to_string(), "none: 0 retries");
    }

    /// Every order of the same setters makes the same policy, for every profile, with and
    /// without a `Retry-After` rule among them.
    #[test]
    fn setters_commute() {
        type Setter = fn(Policy) -> Policy;
        let rule = RetryAfter {
            mode: RetryAfterMode::Floor,
            min: ms(10),
            max: ms(700),
            above_max: crate::retry_after::AboveMax::GiveUp,
        };
        let setters: [Setter; 5] = [
            |p| p.with_jitter(Jitter::Equal),
            |p| p.with_base(ms(250)),
            |p| p.with_factor(3.0),
            |p| p.with_cap(ms(4000)),
            |p| p.with_retries(6),
        ];
        /// Every permutation of `items`, by Heap's algorithm.
        fn permutations(items: &mut Vec<usize>, k: usize, out: &mut Vec<Vec<usize>>) {
            if k <= 1 {
                out.push(items.clone());
                return;
            }
            for i in 0..k {
                permutations(items, k - 1, out);
                let j = if k % 2 == 0 { i } else { 0 };
                items.swap(j, k - 1);
            }
        }
        for with_rule in [false, true] {
            let n = setters.len() + usize::from(with_rule);
            let mut orders = vec![];
            permutations(&mut (0..n).collect(), n, &mut orders);
            for name in Profile::NAMES {
                let profile: Profile = name.parse().unwrap();
                let build = |order: &[usize]| {
                    order
                        .iter()
                        .fold(Policy::new(profile), |p, &i| match setters.get(i) {
                            Some(set) => set(p),
                            None => p.with_retry_after(rule),
                        })
                };
                let first = build(&orders[0]);
                for order in &orders {
                    assert_eq!(build(order), first, "{profile} {order:?}");
                }
                if with_rule {
                    assert_eq!(first.retry_after(), rule, "{profile}");
                }
            }
        }
    }

    /// The library ties, as rules over the settings: undici's cap bounds the hint, an
    /// axios-retry jitter override ignores it; a rule that is set wins over both.
    #[test]
    fn profile_ties_apply_whatever_the_order() {
        let undici = Policy::new(Profile::Undici).with_cap(ms(2000));
        assert_eq!(undici.retry_after().max, ms(2000));
        let rule = RetryAfter {
            max: ms(9000),
            ..Profile::Undici.default_retry_after()
        };
        assert_eq!(
            Policy::new(Profile::Undici)
                .with_retry_after(rule)
                .with_cap(ms(2000))
                .retry_after(),
            rule
        );
        let axios = Policy::new(Profile::AxiosRetry).with_jitter(Jitter::Full);
        assert_eq!(axios.retry_after(), RetryAfter::IGNORE);
        let floor = Profile::AxiosRetry.default_retry_after();
        assert_eq!(
            Policy::new(Profile::AxiosRetry)
                .with_retry_after(floor)
                .with_jitter(Jitter::Full)
                .retry_after(),
            floor
        );
    }

    proptest! {
        #[test]
        fn never_more_retries_than_allowed(seed: u64, retries in 0u32..10, j in 0usize..6) {
            let jitter = Jitter::from_name(Jitter::NAMES[j], None).unwrap();
            for profile in [Profile::Undici, Profile::AxiosRetry, Profile::Exponential, Profile::Naive] {
                let p = Policy::new(profile).with_retries(retries).with_jitter(jitter);
                let (d, end) = run(p, Outcome::Failed(Failure::Reset), seed);
                prop_assert_eq!(d.len() as u32, retries);
                prop_assert_eq!(end, Decision::GiveUp(GiveUp::Exhausted));
            }
        }

        #[test]
        fn full_jitter_never_exceeds_nominal(seed: u64, base in 1u64..2000, cap in 1u64..60_000) {
            let p = Policy::new(Profile::Exponential).with_base(ms(base)).with_cap(ms(cap)).with_retries(8);
            let (d, _) = run(p, Outcome::status(503), seed);
            for (i, x) in d.iter().enumerate() {
                prop_assert!(*x <= p.backoff().nominal(i as u32 + 1).as_millis());
            }
        }
    }
}
