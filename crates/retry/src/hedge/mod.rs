//! Hedged requests as a pure state machine: speculative duplicates sent on a timer, not
//! on a failure.
//!
//! ## Why hedging is measured at all
//!
//! A retry adds load when requests fail; a hedge adds load when requests are *slow*. At
//! the service time's p95 a hedge costs about 5% more requests and cuts the tail (The Tail
//! at Scale), as long as latency does not depend on load. Under overload it does: the
//! tail moves past a fixed delay, every request hedges, and the server gets up to
//! `max_attempts` times its load at the moment it is slowest. Only a limit that watches the
//! load itself bounds that: gRPC A6's throttle (the retry token bucket) and Finagle's
//! budget (`maxExtraLoad` of requests + 10/s). Whether the losers are cancelled changes
//! nothing for a request already being served: the server does the work either way.
//!
//! ## Why this shape
//!
//! As with [`crate::consumer`], the same rules run on the simulator's clock and on tokio:
//! a [`Hedger`] per client (the shared state: latency histogram, budget or throttle,
//! counters) and a small [`Hedge`] per logical request. Every input is an event with `now`
//! in nanoseconds — the request begins ([`Hedger::begin`]), a timer fires
//! ([`Hedger::on_timer`]), an attempt answers ([`Hedger::on_response`]) — and every output
//! is an [`Action`] handed to a [`Sink`]: send attempt *n*, arm the timer, cancel attempt
//! *n*, finish with attempt *n*'s answer. No library here draws a random number to hedge,
//! so no RNG is taken.
//!
//! ```
//! use herd_retry::hedge::{Action, HedgePolicy, HedgeProfile, Hedger};
//! use herd_retry::Outcome;
//! let ms = 1_000_000u64;
//! let mut h = Hedger::new(HedgePolicy::new(HedgeProfile::GrpcHedging), 0);
//! let mut out = Vec::new();
//! let mut req = h.begin(0, &mut out);
//! assert_eq!(out, [Action::Send { attempt: 0 }, Action::Arm { at: 500 * ms }]);
//! out.clear();
//! h.on_timer(&mut req, 500 * ms, &mut out); // no answer yet: hedge
//! assert_eq!(out, [Action::Send { attempt: 1 }, Action::Arm { at: 1000 * ms }]);
//! out.clear();
//! h.on_response(&mut req, 1, &Outcome::status(200), None, 620 * ms, &mut out);
//! assert_eq!(out, [Action::Cancel { attempt: 0 }, Action::Done { attempt: 1 }]);
//! assert_eq!(h.counters().hedges_won, 1);
//! ```
//!
//! ## With retries, breakers and budgets
//!
//! - **Which layer sees which failure.** A hedge policy sees every attempt's answer and
//!   decides among its own attempts; a retry policy above it sees one outcome per hedged
//!   request (the winner's, or the last handled failure). gRPC makes them exclusive per
//!   method (a method has a `retryPolicy` or a `hedgingPolicy`); Polly and Finagle stack
//!   them, Finagle's retry filter above its backup filter. A breaker below the hedge sees
//!   each attempt, and a hedge it rejects is a client-side fast failure, never a server
//!   request.
//! - **Whether a hedge spends the retry budget.** gRPC A6: yes, hedges are throttled like
//!   retries, by the same token bucket, and each hedge after the first counts as a retry
//!   attempt in the stats. Finagle: a backup withdraws from its own budget *and* from the
//!   client's retry budget, so backups and retries together stay under the client's 20%.
//!   Polly and tower: no budget at all; `max_attempts` is the only bound, per request.
//!   [`Gate`] holds the bucket or budgets here; composed with a [`crate::Retrier`], the
//!   token bucket or client budget is one object shared by both, as in the libraries.
//! - **What the server counts.** Every hedge sent is a server request, won, lost, cancelled
//!   or discarded; a cancelled one may already be in service. The counters keep them apart:
//!   [`HedgeCounters::hedges`] sent, [`HedgeCounters::hedges_won`], cancelled and
//!   [`HedgeCounters::wasted`] (answered after the request was done).

mod latency;
mod policy;

pub use latency::{FinagleLatency, LatencyConfig, TowerLatency};
pub use policy::{
    Delay, Gate, Handles, HedgeError, HedgePolicy, HedgeProfile, OnFailure, MAX_ATTEMPTS,
};

use crate::budget::{Percent, TokenBucket};
use crate::classify::Outcome;
use crate::Nanos;
use latency::Latency;
use std::time::Duration;

/// What the hedge rules ask the driver to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send attempt `attempt` (0 is the original) now.
    Send {
        /// Which attempt.
        attempt: u8,
    },
    /// Call [`Hedger::on_timer`] at `at` (nanoseconds). One timer per request: a later
    /// `Arm` replaces it, and a timer firing early or late is harmless.
    Arm {
        /// When.
        at: u64,
    },
    /// Cancel attempt `attempt` (drop its future; the server may be serving it already).
    Cancel {
        /// Which attempt.
        attempt: u8,
    },
    /// The logical request is done with attempt `attempt`'s answer.
    Done {
        /// Which attempt answered.
        attempt: u8,
    },
}

/// Takes the hedge rules' actions in the order they must be carried out.
pub trait Sink {
    /// Carries out (or keeps) `action`.
    fn act(&mut self, action: Action);
}

impl Sink for Vec<Action> {
    fn act(&mut self, action: Action) {
        self.push(action);
    }
}

/// gRPC's `grpc-retry-pushback-ms` on a non-fatal answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pushback {
    /// The next hedge goes this long after the answer, the ones after it at the delay.
    After(Duration),
    /// A negative or unparseable value: no more hedges.
    Stop,
}

/// What a user exports: counts over the client's life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HedgeCounters {
    /// Logical requests begun.
    pub requests: u64,
    /// Hedges sent (attempts beyond the original): each one a server request.
    pub hedges: u64,
    /// Requests whose successful answer came from a hedge.
    pub hedges_won: u64,
    /// Hedges due that the gate (throttle or budget) refused.
    pub refused: u64,
    /// Attempts cancelled when another answered.
    pub cancelled: u64,
    /// Answers that arrived after their request was done and were discarded.
    pub wasted: u64,
    /// Logical requests done.
    pub done: u64,
}

/// One logical request's hedge state: small and `Copy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hedge {
    sent_at: [u64; MAX_ATTEMPTS as usize],
    /// Next hedge's time; `u64::MAX`: none planned.
    next_at: u64,
    /// This request's delay (`None`: it never hedges).
    delay: Option<u64>,
    /// Attempts still out.
    outstanding: u16,
    sent: u8,
    /// No more hedges (gate refused, pushback said stop).
    frozen: bool,
    done: bool,
}

impl Hedge {
    /// Attempts sent so far.
    pub fn sent(&self) -> u8 {
        self.sent
    }

    /// Whether the request is done.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// When attempt `attempt` was sent, if it was.
    pub fn sent_at(&self, attempt: u8) -> Option<u64> {
        (attempt < self.sent).then(|| self.sent_at[attempt as usize])
    }
}

#[derive(Clone, Debug, PartialEq)]
enum GateState {
    Open,
    Throttle(TokenBucket),
    Budgets(Percent, Option<Percent>),
}

/// A client's hedging: the policy and the state its requests share.
#[derive(Clone, Debug)]
pub struct Hedger {
    policy: HedgePolicy,
    gate: GateState,
    latency: Option<Latency>,
    counters: HedgeCounters,
}

impl Hedger {
    /// A hedger created at `now` (Finagle's and tower's histogram timers start here).
    pub fn new(policy: HedgePolicy, now: u64) -> Hedger {
        Hedger {
            gate: match policy.gate {
                Gate::Open => GateState::Open,
                Gate::Throttle(c) => GateState::Throttle(TokenBucket::new(c)),
                Gate::Budgets { own, client } => {
                    GateState::Budgets(Percent::new(own), client.map(Percent::new))
                }
            },
            latency: match policy.delay {
                Delay::Latency(c) => Some(Latency::new(c, now)),
                Delay::Fixed(_) => None,
            },
            policy,
            counters: HedgeCounters::default(),
        }
    }

    /// The policy.
    pub fn policy(&self) -> &HedgePolicy {
        &self.policy
    }

    /// The counters so far.
    pub fn counters(&self) -> HedgeCounters {
        self.counters
    }

    /// A logical request begins at `now`: the original goes at once (with every hedge when
    /// the delay is zero), and the timer is armed for the first hedge.
    pub fn begin<S: Sink + ?Sized>(&mut self, now: u64, sink: &mut S) -> Hedge {
        self.counters.requests += 1;
        if let GateState::Budgets(own, client) = &mut self.gate {
            own.deposit(Nanos(now));
            if let Some(c) = client {
                c.deposit(Nanos(now));
            }
        }
        let delay = match self.policy.delay {
            Delay::Fixed(d) => Some(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            Delay::Latency(_) => self.latency.as_mut().and_then(|l| l.delay(now)),
        };
        let mut h = Hedge {
            sent_at: [0; MAX_ATTEMPTS as usize],
            next_at: u64::MAX,
            delay,
            outstanding: 0,
            sent: 0,
            frozen: delay.is_none(),
            done: false,
        };
        self.send(&mut h, now, sink);
        self.hedge_and_plan(&mut h, now, sink, false);
        h
    }

    /// The timer armed for `hedge` fired at `now`.
    pub fn on_timer<S: Sink + ?Sized>(&mut self, hedge: &mut Hedge, now: u64, sink: &mut S) {
        if hedge.done || now < hedge.next_at {
            return;
        }
        hedge.next_at = u64::MAX;
        self.hedge_and_plan(hedge, now, sink, true);
    }

    /// Attempt `attempt` answered `outcome` at `now`, with gRPC's pushback if it carried one.
    pub fn on_response<S: Sink + ?Sized>(
        &mut self,
        hedge: &mut Hedge,
        attempt: u8,
        outcome: &Outcome,
        pushback: Option<Pushback>,
        now: u64,
        sink: &mut S,
    ) {
        let bit = 1u16 << attempt.min(15);
        if hedge.outstanding & bit == 0 {
            return; // cancelled, or never sent: nothing the driver should deliver
        }
        hedge.outstanding &= !bit;
        let handled = self.policy.handles.handles(outcome);
        self.observe(hedge, attempt, outcome, handled, now);
        if hedge.done {
            self.counters.wasted += 1;
            return;
        }
        if !handled {
            if outcome.is_success() && attempt > 0 {
                self.counters.hedges_won += 1;
            }
            self.finish(hedge, attempt, sink);
            return;
        }
        if self.policy.on_failure == OnFailure::SendNext {
            match pushback {
                Some(Pushback::Stop) => {
                    hedge.frozen = true;
                    hedge.next_at = u64::MAX;
                }
                Some(Pushback::After(d))
                    if !hedge.frozen && hedge.sent < self.policy.max_attempts =>
                {
                    let at = now.saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
                    hedge.next_at = at;
                    sink.act(Action::Arm { at });
                }
                Some(Pushback::After(_)) => {}
                None => {
                    hedge.next_at = u64::MAX;
                    self.hedge_and_plan(hedge, now, sink, true);
                }
            }
        }
        let more = !hedge.frozen
            && hedge.sent < self.policy.max_attempts
            && self.policy.on_failure == OnFailure::SendNext;
        if hedge.outstanding == 0 && !more {
            self.finish(hedge, attempt, sink);
        }
    }

    /// Latency and throttle bookkeeping for one answer.
    fn observe(&mut self, hedge: &Hedge, attempt: u8, outcome: &Outcome, handled: bool, now: u64) {
        if let GateState::Throttle(t) = &mut self.gate {
            if outcome.is_success() {
                t.on_success();
            } else if handled {
                t.on_failure();
            }
        }
        if let (Some(l), Some(at)) = (&mut self.latency, hedge.sent_at(attempt)) {
            let record = match self.policy.delay {
                // Finagle: successes (per its classifier) and timeouts; tower: any response.
                Delay::Latency(LatencyConfig::Finagle(_)) => {
                    !handled || matches!(outcome, Outcome::Failed(crate::Failure::Timeout))
                }
                _ => matches!(outcome, Outcome::Response { .. }),
            };
            if record {
                l.record(now, now.saturating_sub(at));
            }
        }
    }

    /// Sends the hedges due now (every remaining one when the delay is zero), then arms
    /// the timer for the next.
    fn hedge_and_plan<S: Sink + ?Sized>(
        &mut self,
        h: &mut Hedge,
        now: u64,
        sink: &mut S,
        due: bool,
    ) {
        let Some(delay) = h.delay else { return };
        let mut due = due || delay == 0;
        while due && !h.frozen && h.sent < self.policy.max_attempts {
            if !self.admit(now) {
                self.counters.refused += 1;
                h.frozen = true;
                break;
            }
            self.send(h, now, sink);
            self.counters.hedges += 1;
            due = delay == 0;
        }
        if !h.frozen && h.sent < self.policy.max_attempts {
            h.next_at = now.saturating_add(delay);
            sink.act(Action::Arm { at: h.next_at });
        }
    }

    fn admit(&mut self, now: u64) -> bool {
        match &mut self.gate {
            GateState::Open => true,
            GateState::Throttle(t) => t.allows_retry(),
            // Finagle withdraws from its own budget first; if the client's then refuses,
            // the first withdrawal is not given back (as its comment says it tolerates).
            GateState::Budgets(own, client) => {
                own.withdraw(Nanos(now)) && client.as_mut().map_or(true, |c| c.withdraw(Nanos(now)))
            }
        }
    }

    fn send<S: Sink + ?Sized>(&mut self, h: &mut Hedge, now: u64, sink: &mut S) {
        let n = h.sent;
        h.sent_at[n as usize] = now;
        h.outstanding |= 1 << n;
        h.sent += 1;
        sink.act(Action::Send { attempt: n });
    }

    fn finish<S: Sink + ?Sized>(&mut self, h: &mut Hedge, attempt: u8, sink: &mut S) {
        h.done = true;
        h.next_at = u64::MAX;
        self.counters.done += 1;
        if self.policy.cancel_losers {
            for n in 0..h.sent {
                if h.outstanding & (1 << n) != 0 {
                    h.outstanding &= !(1 << n);
                    self.counters.cancelled += 1;
                    sink.act(Action::Cancel { attempt: n });
                }
            }
        }
        sink.act(Action::Done { attempt });
    }
}

#[cfg(test)]
mod tests;
