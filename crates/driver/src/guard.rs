//! What a replica arm with `hedge` or `breaker` shares among its logical requests: one
//! [`Hedger`] and one [`Breaker`] per client, as the libraries keep them, behind locks its
//! lanes share.
//!
//! They are herd-retry's objects, the very ones the simulator's guarded client drives;
//! this module only holds them for the socket driver ([`super::guarded`] runs a logical
//! request through them) and turns their counters into the report's words with the same
//! constructors the simulator uses ([`HedgingReport::of`], [`BreakerReport::of`]).

use herd_retry::breaker::{Admission, Breaker, BreakerConfig, Permit, State};
use herd_retry::hedge::{HedgePolicy, Hedger};
use herd_retry::Outcome;
use herd_scenario::{BreakerReport, HedgingReport};
use rand_pcg::Pcg64Mcg;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use tokio::sync::Notify;

/// One arm's hedger and breaker, and what its client counted beside them.
pub(super) struct Guard {
    hedger: Option<Mutex<Hedger>>,
    breaker: Option<Mutex<Tracked>>,
    /// Woken at every change of the breaker's state: cockatiel's held calls ask again.
    pub(super) wake: Notify,
    /// Woken, one call at a time, when a call through a breaker whose calls run one at a
    /// time (pybreaker) ends: the next queued call asks for the lock.
    pub(super) turn: Notify,
    /// Hedges (attempts beyond a round's first) that got a connection and went out.
    pub(super) hedges_sent: AtomicU64,
}

/// A breaker, its random stream (failsafe-rs' jittered open time) and its state changes
/// (when, state) for the timeline.
struct Tracked {
    breaker: Breaker,
    rng: Pcg64Mcg,
    changes: Vec<(u64, State)>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Guard {
    /// The arm's hedger and breaker, created at the run's t = 0; `rng` is the breaker's
    /// stream ([`herd_scenario::ArmSeed::breaker`]).
    pub(super) fn new(
        hedge: Option<HedgePolicy>,
        breaker: Option<BreakerConfig>,
        rng: Pcg64Mcg,
    ) -> Guard {
        Guard {
            hedger: hedge.map(|p| Mutex::new(Hedger::new(p, 0))),
            breaker: breaker.map(|c| {
                Mutex::new(Tracked {
                    breaker: Breaker::new(c, 0),
                    rng,
                    changes: Vec::new(),
                })
            }),
            wake: Notify::new(),
            turn: Notify::new(),
            hedges_sent: AtomicU64::new(0),
        }
    }

    /// The hedger, if the arm hedges.
    pub(super) fn hedger(&self) -> Option<MutexGuard<'_, Hedger>> {
        self.hedger.as_ref().map(lock)
    }

    /// The breaker's word on a call at `now` (ns since t = 0); `None` without a breaker.
    pub(super) fn allow(&self, now: u64) -> Option<Admission> {
        self.breaker.as_ref().map(|b| lock(b).breaker.allow(now))
    }

    /// A permitted call ended at `now` with `outcome`; a change of state wakes the calls
    /// cockatiel holds, and the end of a call that held the breaker's lock the next call
    /// queued for it.
    pub(super) fn record(&self, permit: Option<Permit>, now: u64, outcome: &Outcome) {
        let (Some(b), Some(p)) = (&self.breaker, permit) else {
            return;
        };
        let (changed, one_at_a_time) = {
            let mut b = lock(b);
            let Tracked {
                breaker,
                rng,
                changes,
            } = &mut *b;
            let change = breaker.record(p, now, outcome, rng);
            changes.extend(change.map(|state| (now, state)));
            (change.is_some(), breaker.config().one_at_a_time)
        };
        if changed {
            self.wake.notify_waiters();
        }
        if one_at_a_time {
            self.turn.notify_one();
        }
    }

    /// What the hedger and the breaker did, for the report.
    pub(super) fn report(&self) -> (Option<HedgingReport>, Option<BreakerReport>) {
        let sent = self.hedges_sent.load(Ordering::Relaxed);
        // Answers to legs of a round already retried go through the hedger too here (see
        // `super::guarded`), so its `wasted` holds them: no stale count of its own.
        let hedging = self
            .hedger
            .as_ref()
            .map(|h| HedgingReport::of(&lock(h).counters(), sent, 0));
        let breaker = (self.breaker.as_ref()).map(|b| {
            let b = lock(b);
            BreakerReport::of(&b.breaker.counters(), &b.changes)
        });
        (hedging, breaker)
    }
}
