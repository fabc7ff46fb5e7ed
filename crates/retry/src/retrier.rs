//! The retrier: one per client, holding what a [`Policy`] alone cannot — the budget shared
//! by all the client's requests, the overall deadline, and the counters a user exports.
//!
//! The driver, the simulator and production integrations all go through
//! [`Retrier::begin`] → ([`Retrier::admit`] → attempt → [`Retrier::decide`])*. `now` is
//! always an argument, a [`Nanos`] on the caller's clock: any clock will do, virtual or
//! real, as long as it is monotonic. A caller that drops a request before `decide` ends it
//! (a consumer cancelled it) tells [`Retrier::abandon`], so that a concurrency cap
//! ([`crate::budget::concurrency`]) gets its attempt and its retry back.
//!
//! ```
//! use herd_retry::{Decision, Method, Nanos, Outcome, Profile, Retrier, Strategy};
//! use rand::SeedableRng;
//! use std::time::Duration;
//!
//! let mut retrier = Retrier::new(Strategy::new(Profile::Herd));
//! let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
//! let t0 = Nanos::from(Duration::from_secs(1));
//! let mut req = retrier.begin(t0);
//! assert!(retrier.admit(&mut req, t0, &mut rng));
//! match retrier.decide(&mut req, Method::Get, &Outcome::status(503), t0, &mut rng) {
//!     Decision::Retry { after } => assert!(after < Duration::from_millis(100)),
//!     other => panic!("{other:?}"),
//! }
//! assert_eq!(retrier.counters().retries, 1);
//! ```

use crate::budget::{AttemptResult, Budget, BudgetConfig, RetryCause};
use crate::classify::{Failure, Method, Outcome};
use crate::nanos::Nanos;
use crate::policy::{Decision, GiveUp, Policy, RetryState};
use crate::profile::Profile;
use rand::Rng;
use std::fmt;
use std::time::Duration;

/// Everything a client's retry behaviour is made of: the per-request policy, an optional
/// budget shared by the client's requests, and an optional overall deadline per request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Strategy {
    /// Conditions, backoff, Retry-After.
    pub policy: Policy,
    /// The client-wide budget, if any.
    pub budget: Option<BudgetConfig>,
    /// No retry starts later than this after the logical request began.
    pub deadline: Option<Duration>,
}

impl Strategy {
    /// A profile's defaults, for a client with no attempt timeout. `herd` comes with a
    /// budget (percent, 20% over 10 s, floor 10/s) and a deadline (10 s); the AWS profiles
    /// with their SDK's quota (and, in adaptive mode, its rate limiter)
    /// ([`Profile::default_budget`]); other libraries' profiles have neither, as the
    /// libraries don't.
    pub fn new(profile: Profile) -> Strategy {
        Strategy::for_client(profile, None)
    }

    /// A profile's defaults for a client whose attempts time out after `attempt_timeout`.
    /// The same as [`Strategy::new`] but under axios-retry, whose timeout bounds the whole
    /// request: there it is the deadline too ([`Profile::default_deadline`]).
    ///
    /// ```
    /// use herd_retry::{Profile, Strategy};
    /// use std::time::Duration;
    /// let t = Some(Duration::from_secs(2));
    /// assert_eq!(Strategy::for_client(Profile::AxiosRetry, t).deadline, t);
    /// assert_eq!(Strategy::for_client(Profile::Undici, t), Strategy::new(Profile::Undici));
    /// ```
    pub fn for_client(profile: Profile, attempt_timeout: Option<Duration>) -> Strategy {
        Strategy {
            policy: Policy::new(profile),
            budget: profile.default_budget(),
            deadline: profile.default_deadline(attempt_timeout),
        }
    }

    /// A policy with no budget and no deadline.
    pub fn from_policy(policy: Policy) -> Strategy {
        Strategy {
            policy,
            budget: None,
            deadline: None,
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.policy)?;
        if let Some(b) = &self.budget {
            write!(f, ", {b}")?;
        }
        if let Some(d) = self.deadline {
            write!(f, ", deadline {}ms", d.as_millis())?;
        }
        Ok(())
    }
}

/// What a user exports: counts over the client's life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Logical requests begun.
    pub requests: u64,
    /// Attempts sent (first tries and retries).
    pub attempts: u64,
    /// Retries granted.
    pub retries: u64,
    /// Retries the budget refused.
    pub refused_by_budget: u64,
    /// Attempts the client's own throttle refused to send.
    pub throttled: u64,
    /// Requests that gave up because the deadline would pass.
    pub gave_up_deadline: u64,
    /// Requests that gave up on a too-long Retry-After.
    pub gave_up_retry_after: u64,
    /// Logical requests that succeeded.
    pub succeeded: u64,
    /// Logical requests that failed.
    pub failed: u64,
}

/// One logical request in flight: small and `Copy`, so millions fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// The policy's state.
    pub state: RetryState,
    /// When the request began.
    started: Nanos,
    /// Quota its latest retry cost (0 before any): what a success gives back, as the AWS
    /// SDKs do (see [`crate::budget::Quota::on_success`]).
    last_retry_cost: u32,
    /// Whether it holds a retry of a concurrency cap, from the grant to the retry's
    /// answer, as Envoy's `RetryStateImpl` holds `retries()` from `shouldRetry` to the
    /// next one.
    holds_retry: bool,
    /// An attempt [`Retrier::admit`] let go is not decided yet: what [`Retrier::decide`]
    /// ends for the concurrency cap, whatever the outcome (a breaker's refusal of an
    /// admitted attempt included), and only then.
    attempt_out: bool,
}

impl Request {
    /// When the request began.
    pub fn started(&self) -> Nanos {
        self.started
    }
}

/// A client's retrier.
#[derive(Clone, Debug)]
pub struct Retrier {
    strategy: Strategy,
    budget: Option<Budget>,
    counters: Counters,
}

impl Retrier {
    /// A retrier with fresh budget state.
    pub fn new(strategy: Strategy) -> Retrier {
        Retrier {
            budget: strategy.budget.map(Budget::new),
            strategy,
            counters: Counters::default(),
        }
    }

    /// The strategy.
    pub fn strategy(&self) -> &Strategy {
        &self.strategy
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Starts a logical request at `now`.
    #[inline]
    pub fn begin(&mut self, now: Nanos) -> Request {
        self.counters.requests += 1;
        if let Some(b) = &mut self.budget {
            b.on_request(now);
        }
        Request {
            state: RetryState::default(),
            started: now,
            last_retry_cost: 0,
            holds_retry: false,
            attempt_out: false,
        }
    }

    /// The caller drops `req` before [`Retrier::decide`] ended it. A concurrency cap gets
    /// back the attempt [`Retrier::admit`] let go, if it is not decided, and the request's
    /// retry back (Envoy releases both when a request's retry
    /// state is destroyed); no other budget notices.
    pub fn abandon(&mut self, req: &mut Request) {
        if let Some(b) = &mut self.budget {
            if std::mem::take(&mut req.attempt_out) {
                b.attempt_ended();
            }
            if std::mem::take(&mut req.holds_retry) {
                b.release_retry();
            }
        }
    }

    /// Whether to send the next attempt now. `false` means the client's throttle refused it:
    /// treat the attempt as `Outcome::Failed(Failure::Throttled)` and call
    /// [`Retrier::decide`] with that.
    #[inline]
    pub fn admit<R: Rng + ?Sized>(&mut self, req: &mut Request, now: Nanos, rng: &mut R) -> bool {
        let ok = match &mut self.budget {
            Some(b) => b.admit(now, req.state.retries > 0, rng),
            None => true,
        };
        if ok {
            req.attempt_out = true;
            self.counters.attempts += 1;
        } else {
            self.counters.throttled += 1;
        }
        ok
    }

    /// Asks the client's rate limiter whether the next attempt of a request may go out at
    /// `now`: zero means go (then [`Retrier::admit`] it), anything else means ask again after
    /// this long. Only AWS adaptive mode says wait, from its first throttle on, and to first
    /// attempts too.
    #[inline]
    pub fn pace(&mut self, now: Nanos) -> Duration {
        match &mut self.budget {
            Some(b) => b.pace(now),
            None => Duration::ZERO,
        }
    }

    /// The time left before the deadline, to bound the next attempt's timeout; `None`
    /// without a deadline.
    #[inline]
    pub fn remaining(&self, req: &Request, now: Nanos) -> Option<Duration> {
        self.strategy
            .deadline
            .map(|d| (req.started.as_duration() + d).saturating_sub(now.as_duration()))
    }

    /// The timeout for the next attempt: the client's per-attempt timeout, shortened to
    /// what is left of the deadline (`None`: neither applies). Every driver asks this, so
    /// an attempt never outlives its request's deadline anywhere.
    #[inline]
    pub fn attempt_timeout(
        &self,
        req: &Request,
        now: Nanos,
        per_attempt: Option<Duration>,
    ) -> Option<Duration> {
        match (per_attempt, self.remaining(req, now)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Decides what follows an attempt that ended at `now` with `outcome`.
    #[inline]
    pub fn decide<R: Rng + ?Sized>(
        &mut self,
        req: &mut Request,
        method: Method,
        outcome: &Outcome,
        now: Nanos,
        rng: &mut R,
    ) -> Decision {
        let throttled = matches!(outcome, Outcome::Failed(Failure::Throttled));
        let attempt_out = std::mem::take(&mut req.attempt_out);
        if let Some(b) = &mut self.budget {
            if attempt_out {
                b.attempt_ended();
            }
            if !throttled && self.strategy.policy.moves_budget(outcome) {
                b.on_attempt(now, attempt_result(outcome));
            }
            // The retry that made this attempt (if a concurrency cap granted one) is done:
            // Envoy's `resetRetry()` at the top of `shouldRetry`.
            if std::mem::take(&mut req.holds_retry) {
                b.release_retry();
            }
        }
        let d = match self
            .strategy
            .policy
            .decide(&mut req.state, method, outcome, rng)
        {
            Decision::Retry { after } => self.gate(req, outcome, now, after),
            d => d,
        };
        match d {
            Decision::Success => {
                self.counters.succeeded += 1;
                if let Some(b) = &mut self.budget {
                    b.on_logical_success(req.last_retry_cost);
                }
            }
            Decision::GiveUp(why) => {
                self.counters.failed += 1;
                match why {
                    GiveUp::Deadline => self.counters.gave_up_deadline += 1,
                    GiveUp::RetryAfterTooLong => self.counters.gave_up_retry_after += 1,
                    GiveUp::Budget => self.counters.refused_by_budget += 1,
                    _ => {}
                }
            }
            Decision::Retry { .. } => self.counters.retries += 1,
        }
        d
    }

    /// Deadline, then budget: a retry that would start too late spends no budget.
    fn gate(
        &mut self,
        req: &mut Request,
        outcome: &Outcome,
        now: Nanos,
        after: Duration,
    ) -> Decision {
        if let Some(d) = self.strategy.deadline {
            if now.as_duration() + after > req.started.as_duration() + d {
                return Decision::GiveUp(GiveUp::Deadline);
            }
        }
        if let Some(b) = &mut self.budget {
            let cause = match outcome {
                Outcome::Failed(Failure::Timeout) => RetryCause::Timeout,
                o if o.is_throttling() => RetryCause::Throttling,
                _ => RetryCause::Failure,
            };
            match b.withdraw(now, cause) {
                Some(cost) => {
                    req.last_retry_cost = cost;
                    req.holds_retry = b.holds_retries();
                }
                None => return Decision::GiveUp(GiveUp::Budget),
            }
        }
        Decision::Retry { after }
    }
}

/// How a budget sees an attempt: 429, 503 and no answer at all are the upstream turning it
/// away; other error statuses are failures it did handle.
fn attempt_result(o: &Outcome) -> AttemptResult {
    match o {
        o if o.is_success() => AttemptResult::Success,
        o if o.is_throttling() => AttemptResult::Throttled,
        Outcome::Response {
            status: 429 | 503, ..
        }
        | Outcome::Failed(_) => AttemptResult::Rejected,
        Outcome::Response { .. } => AttemptResult::Failure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{PercentConfig, QuotaConfig, TokenBucketConfig};
    use proptest::{prop_assert, prop_assert_eq, proptest};
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    /// Runs one logical request against an upstream that always fails; returns the
    /// time each retry would start.
    fn storm(r: &mut Retrier, start: Duration, rng: &mut Pcg64Mcg) -> Vec<Duration> {
        let mut now = Nanos::from(start);
        let mut req = r.begin(now);
        assert_eq!(req.started(), now);
        let mut starts = vec![];
        loop {
            if !r.admit(&mut req, now, rng) {
                let throttled = Outcome::Failed(Failure::Throttled);
                let _ = r.decide(&mut req, Method::Get, &throttled, now, rng);
                return starts;
            }
            now = now + ms(30); // the attempt takes 30 ms
            match r.decide(&mut req, Method::Get, &Outcome::status(503), now, rng) {
                Decision::Retry { after } => {
                    now = now + after;
                    starts.push(now.as_duration());
                }
                _ => return starts,
            }
        }
    }

    /// Envoy's circuit breaker through the retrier: 6 requests fail together; 3 retries
    /// are granted, the other 3 requests give up with the failure; the slots come back
    /// when the retries' answers are judged, and a request abandoned in backoff gives its
    /// slot back too.
    #[test]
    fn envoy_caps_concurrent_retries() {
        let mut r = Retrier::new(Strategy::new(Profile::Envoy));
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        let t = |x| Nanos::from(ms(x));
        let mut reqs: Vec<Request> = (0..6).map(|_| r.begin(t(0))).collect();
        for q in &mut reqs {
            assert!(r.admit(q, t(0), &mut rng));
        }
        let fail = Outcome::status(503);
        let firsts: Vec<Decision> = (reqs.iter_mut())
            .map(|q| r.decide(q, Method::Get, &fail, t(10), &mut rng))
            .collect();
        let kinds: Vec<bool> = (firsts.iter())
            .map(|d| matches!(d, Decision::Retry { .. }))
            .collect();
        assert_eq!(kinds, [true, true, true, false, false, false]);
        assert_eq!(firsts[3], Decision::GiveUp(GiveUp::Budget));
        assert_eq!(r.counters().refused_by_budget, 3);
        // A new request failing now, while three retries wait out their backoff: refused.
        let mut late = r.begin(t(11));
        assert!(r.admit(&mut late, t(11), &mut rng));
        let d = r.decide(&mut late, Method::Get, &fail, t(12), &mut rng);
        assert_eq!(d, Decision::GiveUp(GiveUp::Budget));
        // The first retry succeeds: its slot is back, and `late`'s retry goes.
        assert!(r.admit(&mut reqs[0], t(40), &mut rng));
        let ok = Outcome::status(200);
        assert_eq!(
            r.decide(&mut reqs[0], Method::Get, &ok, t(50), &mut rng),
            Decision::Success
        );
        let mut late = r.begin(t(51));
        assert!(r.admit(&mut late, t(51), &mut rng));
        let d = r.decide(&mut late, Method::Get, &fail, t(52), &mut rng);
        assert!(matches!(d, Decision::Retry { .. }), "{d:?}");
        // Request 1 is dropped in backoff: its slot is back.
        r.abandon(&mut reqs[1]);
        let mut again = r.begin(t(53));
        assert!(r.admit(&mut again, t(53), &mut rng));
        let d = r.decide(&mut again, Method::Get, &fail, t(54), &mut rng);
        assert!(matches!(d, Decision::Retry { .. }), "{d:?}");
        // Three held (2, late, again): the next is refused.
        let mut more = r.begin(t(55));
        assert!(r.admit(&mut more, t(55), &mut rng));
        let d = r.decide(&mut more, Method::Get, &fail, t(56), &mut rng);
        assert_eq!(d, Decision::GiveUp(GiveUp::Budget));
        assert_eq!(r.counters().retries, 5);
        // Istio's cap lets all of them retry.
        let mut i = Retrier::new(Strategy::new(Profile::IstioDefault));
        let mut reqs: Vec<Request> = (0..1000).map(|_| i.begin(t(0))).collect();
        for q in &mut reqs {
            assert!(i.admit(q, t(0), &mut rng));
            let d = i.decide(q, Method::Get, &fail, t(1), &mut rng);
            assert!(matches!(d, Decision::Retry { .. }));
        }
    }

    proptest! {
        /// Many requests against a failing upstream, attempts and answers interleaved in
        /// any order: the requests holding an Envoy retry never exceed 3.
        #[test]
        fn envoy_retries_in_flight_never_exceed_three(order in proptest::collection::vec(0usize..64, 1..600), seed in 0u64..1000) {
            let envoy = Strategy::new(Profile::Envoy);
            let policy = envoy.policy.with_retries(4);
            let mut r = Retrier::new(Strategy { policy, ..envoy });
            let mut rng = Pcg64Mcg::seed_from_u64(seed);
            // Per request: None (not begun or done), or Some((request, attempt on the wire)).
            let mut live: Vec<Option<(Request, bool)>> = vec![None; 64];
            let mut now = Nanos::from(ms(0));
            for i in order {
                now = now + ms(1);
                match &mut live[i] {
                    None => {
                        let mut q = r.begin(now);
                        prop_assert!(r.admit(&mut q, now, &mut rng));
                        live[i] = Some((q, true));
                    }
                    Some((q, on_wire)) if *on_wire => {
                        match r.decide(q, Method::Get, &Outcome::status(503), now, &mut rng) {
                            Decision::Retry { .. } => *on_wire = false,
                            _ => live[i] = None,
                        }
                    }
                    Some((q, on_wire)) => {
                        prop_assert!(r.admit(q, now, &mut rng));
                        *on_wire = true;
                    }
                }
                let held = live.iter().flatten().filter(|(q, _)| q.holds_retry).count();
                prop_assert!(held <= 3, "{held} retries held");
            }
        }
    }

    #[test]
    fn herd_strategy_defaults() {
        let s = Strategy::new(Profile::Herd);
        assert_eq!(s.deadline, Some(Duration::from_secs(10)));
        assert!(matches!(s.budget, Some(BudgetConfig::Percent(_))));
        assert!(Strategy::new(Profile::Undici).budget.is_none());
        assert_eq!(
            s.to_string(),
            "herd: 3 retries, 100ms·2^(n-1) capped 5000ms, jitter full, Retry-After is a floor (≤10000ms, give up above), percent budget 20% over 10s, floor 10/s, deadline 10000ms"
        );
    }

    /// An admitted attempt a breaker turns away comes back `Failed(Throttled)`: it is no
    /// longer outstanding, so it does not raise an Envoy retry budget's cap (20% of the
    /// attempts outstanding, at least 3) for ever after.
    #[test]
    fn an_attempt_the_breaker_refused_is_no_longer_outstanding() {
        let mut r = Retrier::new(Strategy {
            budget: Some(BudgetConfig::Concurrency(
                crate::budget::ConcurrencyConfig::envoy_retry_budget(),
            )),
            ..Strategy::new(Profile::Envoy)
        });
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        let t = Nanos::from(ms(1));
        for _ in 0..100 {
            let mut q = r.begin(t);
            assert!(r.admit(&mut q, t, &mut rng));
            let refused = Outcome::Failed(Failure::Throttled);
            let _ = r.decide(&mut q, Method::Get, &refused, t, &mut rng);
        }
        // Six requests fail together: the floor of 3 retries, as with no refusals before.
        let mut reqs: Vec<Request> = (0..6).map(|_| r.begin(t)).collect();
        for q in &mut reqs {
            assert!(r.admit(q, t, &mut rng));
        }
        let retried = (reqs.iter_mut())
            .map(|q| r.decide(q, Method::Get, &Outcome::status(503), t, &mut rng))
            .filter(|d| matches!(d, Decision::Retry { .. }))
            .count();
        assert_eq!(retried, 3);
    }

    #[test]
    fn budget_refuses_during_an_outage() {
        // 1000 requests over 1 s against a dead upstream, percent budget without floor:
        // 20% of 1000 = 200 retries at most, not 3000.
        let cfg = PercentConfig::new(Duration::from_secs(10), 0, 0.2).unwrap();
        let mut r = Retrier::new(Strategy {
            budget: Some(BudgetConfig::Percent(cfg)),
            ..Strategy::new(Profile::Undici)
        });
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        for i in 0..1000 {
            storm(&mut r, ms(i), &mut rng);
        }
        let c = r.counters();
        assert!(c.retries <= 200, "{c:?}");
        assert!(c.retries >= 150, "{c:?}");
        assert!(c.refused_by_budget >= 950, "{c:?}");
        assert_eq!(c.failed, 1000);
    }

    #[test]
    fn attempt_timeout_is_bounded_by_the_deadline() {
        let mut r = Retrier::new(Strategy {
            deadline: Some(ms(1000)),
            ..Strategy::new(Profile::Undici)
        });
        let at = |x| Nanos::from(ms(x));
        let req = r.begin(at(0));
        assert_eq!(
            r.attempt_timeout(&req, at(0), Some(ms(2000))),
            Some(ms(1000))
        );
        assert_eq!(
            r.attempt_timeout(&req, at(800), Some(ms(100))),
            Some(ms(100))
        );
        assert_eq!(r.attempt_timeout(&req, at(800), None), Some(ms(200)));
        assert_eq!(r.attempt_timeout(&req, at(1500), None), Some(ms(0)));
        let free = Retrier::new(Strategy::new(Profile::Undici));
        assert_eq!(free.attempt_timeout(&req, at(5), None), None);
    }

    #[test]
    fn deadline_stops_undici_early() {
        let mut r = Retrier::new(Strategy {
            deadline: Some(ms(2000)),
            ..Strategy::new(Profile::Undici)
        });
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        let starts = storm(&mut r, ms(0), &mut rng);
        // 30 + 500 = 530, 530 + 30 + 1000 = 1560; the next would start at 3590.
        assert_eq!(starts, [ms(530), ms(1560)]);
        assert_eq!(r.counters().gave_up_deadline, 1);
    }

    #[test]
    fn quota_and_token_bucket_run_dry() {
        let mut q = Retrier::new(Strategy {
            budget: Some(BudgetConfig::Quota(QuotaConfig {
                initial: 20,
                ..Default::default()
            })),
            ..Strategy::new(Profile::Naive)
        });
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        for i in 0..10 {
            storm(&mut q, ms(i), &mut rng);
        }
        assert_eq!(q.counters().retries, 4, "20 tokens / 5 per retry");
        let mut t = Retrier::new(Strategy {
            budget: Some(BudgetConfig::TokenBucket(TokenBucketConfig::default())),
            ..Strategy::new(Profile::Naive)
        });
        for i in 0..10 {
            storm(&mut t, ms(i), &mut rng);
        }
        // Each failure takes a token; retries only while above 5. The first request fails
        // 4 times (10→6, 3 retries, then its retries are used up); the second takes it to 5.
        assert_eq!(t.counters().retries, 3);
    }

    proptest! {
        /// A retry never starts after the deadline, whatever the policy and jitter.
        #[test]
        fn no_retry_after_the_deadline(seed: u64, deadline in 1u64..5000, start in 0u64..100_000, p in 0usize..6) {
            let profile = [Profile::Undici, Profile::AxiosRetry, Profile::Exponential, Profile::Naive, Profile::Herd, Profile::None][p];
            let mut r = Retrier::new(Strategy { deadline: Some(ms(deadline)), ..Strategy::new(profile) });
            let mut rng = Pcg64Mcg::seed_from_u64(seed);
            for s in storm(&mut r, ms(start), &mut rng) {
                prop_assert!(s <= ms(start + deadline));
            }
        }

        /// Counters add up.
        #[test]
        fn counters_are_consistent(seed: u64, n in 1u64..200) {
            let mut r = Retrier::new(Strategy::new(Profile::Herd));
            let mut rng = Pcg64Mcg::seed_from_u64(seed);
            for i in 0..n { storm(&mut r, ms(i * 7), &mut rng); }
            let c = r.counters();
            prop_assert_eq!(c.requests, n);
            prop_assert_eq!(c.succeeded + c.failed, n);
            prop_assert_eq!(c.attempts, n + c.retries);
        }
    }
}
