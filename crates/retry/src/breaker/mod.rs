//! Circuit breakers as pure state machines: closed, open, half-open, with `now` passed in.
//!
//! ## Why a breaker is measured at all
//!
//! A breaker decides which calls never leave the client. While it is open, a call is a
//! client-side fast failure: the server never sees it, so in herd's counts it is neither a
//! request nor an attempt, only a rejection. What a breaker does to the server is therefore
//! the calls it lets through: the ones that trip it (pybreaker's 5th failure *did* reach
//! the server, although the caller sees `CircuitBreakerError`), and the half-open probes
//! (gobreaker lets one through every 60 s; resilience4j ten; pybreaker, go-resiliency and
//! failsafe-rs every call until the first answer). Minimum-volume gates decide whether it
//! opens at all: resilience4j and Polly never open before 100 calls, so a slow client
//! never trips them.
//!
//! ## Why this shape
//!
//! As with [`crate::Retrier`] and [`crate::consumer`], the same object runs on the
//! simulator's virtual clock, on tokio, and in production: [`Breaker::allow`] at `now`
//! returns an [`Admission`]; a permitted call's result goes back through
//! [`Breaker::record`] with its [`Permit`]. Times are nanoseconds on the caller's
//! monotonic clock; durations appear only in the configuration. The only randomness
//! (failsafe-rs' jittered open time) is drawn from the RNG passed to `record`.
//! State changes happen lazily, when a call or a result arrives, as in every library
//! except go-resiliency and opossum, whose timers change the state with no call; the
//! difference is invisible to the server, which sees only calls.
//!
//! ```
//! use herd_retry::breaker::{Admission, Breaker, BreakerConfig, BreakerProfile};
//! use herd_retry::Outcome;
//! use rand::SeedableRng;
//! let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
//! let mut b = Breaker::new(BreakerConfig::new(BreakerProfile::Pybreaker), 0);
//! let mut sent = 0;
//! for i in 0..100u64 {
//!     let now = i * 10_000_000; // every 10 ms
//!     if let Admission::Permit(p) = b.allow(now) {
//!         sent += 1;
//!         b.record(p, now, &Outcome::status(503), &mut rng);
//!     }
//! }
//! assert_eq!(sent, 5); // the 5th failure opens it for 60 s
//! ```
//!
//! ## With retries, hedges and budgets
//!
//! Where the breaker sits decides what it counts. Inside the retry loop (resilience4j's
//! and Polly's recommended order: retry → breaker → call) it sees every attempt, and a
//! rejection is one more failed attempt for the retry policy to judge: herd's retriers
//! see it as `Outcome::Failed(Failure::Throttled)`, which no budget counts as an upstream
//! failure and which never reached the server. Outside the retry loop it sees one result
//! per logical request. A breaker never spends retry budget; the budget sees only what
//! the breaker lets through. Hedges: each hedge attempt asks the breaker (per-endpoint
//! breakers in Microsoft's standard hedging handler) and a rejected hedge is not sent.

mod config;
mod trip;

pub use config::{
    BreakerConfig, BreakerError, BreakerProfile, HalfOpen, OverLimit, Probe, Sampling, TimeWindow,
    Trip,
};

use crate::classify::{Failure, Outcome};
use rand::Rng;
use trip::{nanos, Counts, Verdict};

/// The breaker's state, as a timeline shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Calls go through and are counted.
    Closed,
    /// Calls are rejected until `until` (nanoseconds); the first call after it (or, for
    /// the libraries that compare strictly, after it) finds the breaker half-open.
    Open {
        /// When it may half-open.
        until: u64,
    },
    /// Probing.
    HalfOpen,
}

/// A permitted call's ticket, handed back with its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Permit {
    generation: u64,
}

/// What the breaker says to a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Admission {
    /// Send it; report its result with [`Breaker::record`].
    Permit(Permit),
    /// A client-side fast failure: the call is not sent.
    Rejected,
    /// cockatiel's half-open: hold the call and ask again when the breaker's state next
    /// changes ([`Breaker::record`] returns it).
    Wait,
    /// pybreaker's lock ([`BreakerConfig::one_at_a_time`]): another call holds the
    /// breaker. Queue the call, its timeout not yet running (the library has not started
    /// it), and ask again when a call ends ([`Breaker::record`]), first come first asked.
    /// Nothing was counted.
    Locked,
}

/// What a user exports: counts over the breaker's life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BreakerCounters {
    /// Calls let through (the server's requests), probes included.
    pub allowed: u64,
    /// Calls turned away (never sent).
    pub rejected: u64,
    /// Calls told to wait for a half-open decision.
    pub waited: u64,
    /// Calls let through while half-open.
    pub probes: u64,
    /// Times it opened.
    pub opened: u64,
    /// Times it closed again.
    pub closed: u64,
    /// Nanoseconds of open periods begun (each counted in full when it begins).
    pub open_ns: u64,
}

#[derive(Clone, Copy, Debug)]
enum Inner {
    Closed,
    Open {
        until: u64,
        /// How long this open period is (failsafe-rs reuses it when no rule draws anew).
        length: u64,
    },
    HalfOpen {
        admitted: u32,
        successes: u32,
        failures: u32,
        length: u64,
    },
}

/// A circuit breaker: one per client and endpoint.
#[derive(Clone, Debug)]
pub struct Breaker {
    cfg: BreakerConfig,
    inner: Inner,
    counts: Counts,
    generation: u64,
    counters: BreakerCounters,
    /// A permitted call holds the lock of a breaker whose calls run one at a time.
    busy: bool,
}

/// What a call the breaker turned away comes back as: a client-side fast failure, which
/// each retry profile treats by its own rules and no retry budget counts as an upstream
/// failure.
pub const REJECTED: Outcome = Outcome::Failed(Failure::Throttled);

/// What a permitted call that was cancelled (a hedge's loser) reports to its breaker: a
/// status no breaker counts as a failure (nginx's "client closed request"). Polly's
/// breaker counts an outcome it does not handle, a cancellation included, as a success;
/// and a call left without a result would hold a half-open breaker's only probe for ever.
pub const CANCELLED: Outcome = Outcome::Response {
    status: 499,
    retry_after: None,
    throttling: false,
    grpc_status: None,
};

/// Whether a breaker counts `outcome` as a failure: no response at all, or 408, 429 or a
/// 5xx. The libraries count what the wrapped call raises; herd's kits raise on exactly
/// these, as `raise_for_status`-style code on a 5xx or 429 does.
pub fn is_failure(outcome: &Outcome) -> bool {
    match outcome {
        Outcome::Failed(_) => true,
        Outcome::Response { status, .. } => *status >= 500 || matches!(status, 408 | 429),
    }
}

impl Breaker {
    /// A closed breaker created at `now` (Hystrix's and opossum's buckets and failsafe-rs'
    /// clock start here).
    pub fn new(cfg: BreakerConfig, now: u64) -> Breaker {
        Breaker {
            counts: Counts::new(&cfg.trip, now),
            cfg,
            inner: Inner::Closed,
            generation: 0,
            counters: BreakerCounters::default(),
            busy: false,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &BreakerConfig {
        &self.cfg
    }

    /// The counters so far.
    pub fn counters(&self) -> BreakerCounters {
        self.counters
    }

    /// The state at `now` (moving to half-open or open on a Hystrix snapshot if due).
    pub fn state(&mut self, now: u64) -> State {
        self.refresh(now);
        self.public_state()
    }

    fn public_state(&self) -> State {
        match self.inner {
            Inner::Closed => State::Closed,
            Inner::Open { until, .. } => State::Open { until },
            Inner::HalfOpen { .. } => State::HalfOpen,
        }
    }

    /// Whether a call at `now` may go.
    pub fn allow(&mut self, now: u64) -> Admission {
        if self.busy {
            return Admission::Locked;
        }
        let admission = self.admit(now);
        if self.cfg.one_at_a_time && matches!(admission, Admission::Permit(_)) {
            self.busy = true;
        }
        admission
    }

    /// [`Breaker::allow`]'s answer from the state alone.
    fn admit(&mut self, now: u64) -> Admission {
        self.refresh(now);
        let trip = self.cfg.trip;
        let permit = Admission::Permit(Permit {
            generation: self.generation,
        });
        match &mut self.inner {
            Inner::Closed => {
                self.counts.on_fire(&trip, now);
                self.counters.allowed += 1;
                permit
            }
            Inner::Open { .. } => {
                self.counts.on_fire(&trip, now);
                self.counters.rejected += 1;
                Admission::Rejected
            }
            Inner::HalfOpen { admitted, .. } => {
                if *admitted < self.cfg.half_open.calls {
                    *admitted += 1;
                    self.counts.on_fire(&trip, now);
                    self.counters.allowed += 1;
                    self.counters.probes += 1;
                    permit
                } else if self.cfg.half_open.over_limit == OverLimit::Wait {
                    self.counters.waited += 1;
                    Admission::Wait
                } else {
                    self.counts.on_fire(&trip, now);
                    self.counters.rejected += 1;
                    Admission::Rejected
                }
            }
        }
    }

    /// A permitted call ended at `now` with `outcome` ([`is_failure`] decides how it
    /// counts), and let go of the breaker's lock if it holds one: calls told
    /// [`Admission::Locked`] may ask again. Returns the new state if this result changed it.
    pub fn record<R: Rng + ?Sized>(
        &mut self,
        permit: Permit,
        now: u64,
        outcome: &Outcome,
        rng: &mut R,
    ) -> Option<State> {
        self.busy = false;
        self.refresh(now);
        if self.cfg.drop_stale && permit.generation != self.generation {
            return None;
        }
        let failed = is_failure(outcome);
        let trip = self.cfg.trip;
        let fired = matches!(
            trip,
            Trip::TimeWindow(TimeWindow {
                sampling: Sampling::Fired { .. },
                ..
            })
        );
        match self.inner {
            Inner::Closed => match self.counts.on_result(&trip, now, failed, rng) {
                Verdict::Stay => None,
                Verdict::Open => Some(self.open(now, nanos(self.cfg.open_for))),
                Verdict::OpenFor(d) => Some(self.open(now, d)),
            },
            Inner::Open { .. } => {
                // Counted without a verdict; only opossum's counts outlive the open period.
                if fired {
                    let _ = self.counts.on_result(&trip, now, failed, rng);
                }
                None
            }
            Inner::HalfOpen {
                successes,
                failures,
                length,
                ..
            } => {
                if fired {
                    let _ = self.counts.on_result(&trip, now, failed, rng);
                }
                let (s, f) = (successes + u32::from(!failed), failures + u32::from(failed));
                let calls = self.cfg.half_open.calls;
                let reopen = match self.cfg.half_open.probe {
                    Probe::Successes(n) => {
                        if failed {
                            Some(true)
                        } else {
                            (s >= n).then_some(false)
                        }
                    }
                    Probe::Rate(r) => (s + f >= calls)
                        .then(|| f as f32 * 100.0 / (s + f) as f32 >= (r * 100.0) as f32),
                    Probe::Tolerate(r) => {
                        if failed && f64::from(f) > r * f64::from(calls) {
                            Some(true)
                        } else {
                            (s + f >= calls).then_some(false)
                        }
                    }
                };
                match reopen {
                    Some(true) => {
                        let d = self
                            .counts
                            .failsafe_half_open_failure(&trip, now, rng)
                            .unwrap_or(if matches!(trip, Trip::Failsafe { .. }) {
                                length
                            } else {
                                nanos(self.cfg.open_for)
                            });
                        Some(self.open(now, d))
                    }
                    Some(false) => {
                        self.inner = Inner::Closed;
                        self.generation += 1;
                        self.counters.closed += 1;
                        self.counts.reset(&trip, now);
                        if matches!(trip, Trip::Failsafe { .. }) {
                            // failsafe-rs records the success in the fresh policy too.
                            let _ = self.counts.on_result(&trip, now, false, rng);
                        }
                        Some(State::Closed)
                    }
                    None => {
                        if let Inner::HalfOpen {
                            successes,
                            failures,
                            ..
                        } = &mut self.inner
                        {
                            (*successes, *failures) = (s, f);
                        }
                        None
                    }
                }
            }
        }
    }

    fn open(&mut self, now: u64, length: u64) -> State {
        let until = now.saturating_add(length);
        self.inner = Inner::Open { until, length };
        self.generation += 1;
        self.counters.opened += 1;
        self.counters.open_ns = self.counters.open_ns.saturating_add(length);
        State::Open { until }
    }

    /// Applies what time alone changes: a Hystrix snapshot that opens it, an open period
    /// that has run out.
    fn refresh(&mut self, now: u64) {
        if let Inner::Closed = self.inner {
            if let Some(at) = self.counts.tick(&self.cfg.trip, now) {
                self.open(at, nanos(self.cfg.open_for));
            }
        }
        if let Inner::Open { until, length } = self.inner {
            let due = if self.cfg.strictly_after {
                now > until
            } else {
                now >= until
            };
            if due {
                self.inner = Inner::HalfOpen {
                    admitted: 0,
                    successes: 0,
                    failures: 0,
                    length,
                };
                self.generation += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests;
