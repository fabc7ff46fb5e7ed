//! The consumers on the virtual clock: [`herd_retry::Consumers`] decides, this carries
//! out. A `Send` begins a logical request in the client with the consumers' request id as
//! its owner; a `Cancel` invalidates that request's pending events (its generation moves
//! on, so its answer, timeout and backoff are dropped as stale); an `Arm` is an event on
//! the schedule; a `Done` unit goes into the recorder, latency from its arrival.
//!
//! The consumer timeout armed with a send is left with the request in its client slot
//! ([`Client::set_owner_timer`]) and comes back with it when it finishes, so that a success
//! cancels it; the driver keeps a map from request id to client slot only under `abandon`,
//! the one rule that cancels requests. (The consumers keep their own map of live requests:
//! without this one, a unit's request touches two id maps, not three.)

use crate::client::{Client, Finished};
use crate::event::Event;
use crate::lane::Ticket;
use crate::schedule::{nanos, LaneId, Schedule};
use herd_retry::consumer::{Action, ConsumerRules, Consumers, OnTimeout, Timer};
use herd_retry::id_ring::IdRing;
use herd_scenario::{ArmSeed, Seeds};
use herd_scenario::{ConsumerTally, LogicalRecord, Recorder};
use std::time::Duration;

/// One arm's consumers and the bookkeeping between their ids and the client's slots.
pub(crate) struct Driver {
    rules: Consumers,
    /// Under `abandon` only: live request id → its client slot, for `Cancel`. Looked up,
    /// never iterated.
    slots: Option<IdRing<u32>>,
    arm_seed: ArmSeed,
    recorder: Recorder,
    actions: Vec<Action>,
    finished: Vec<Finished>,
    /// Lanes for the timers whose delay is fixed by the rules (timeout, give-up, think):
    /// each kind is armed in time order (a give-up armed late, at a unit's first timeout,
    /// still nearly always is), with a million consumers they are most of the pending
    /// events, and in a lane each costs O(1) instead of a trip through the calendar's heaps.
    timeout: LaneId,
    give_up: LaneId,
    think: Option<LaneId>,
}

impl Driver {
    /// `count` consumers following `rules`, starting at most `units` units (closed loop),
    /// their timers on lanes of `s`.
    pub(crate) fn new(
        s: &mut Schedule<Event>,
        rules: ConsumerRules,
        count: u32,
        units: u64,
        arm_seed: ArmSeed,
    ) -> Self {
        Driver {
            // Slow lanes (see `crate::schedule`): a success cancels its timeout, and only
            // a unit still not done at a timeout arms a give-up, so they are rarely due.
            timeout: s.add_slow_lane(rules.timeout()),
            give_up: s.add_slow_lane(rules.give_up()),
            think: rules.think().map(|t| s.add_lane(t)),
            slots: (rules.on_timeout() == OnTimeout::Abandon).then(IdRing::default),
            rules: Consumers::new(rules, count, units),
            arm_seed,
            recorder: Recorder::new(),
            actions: Vec::new(),
            finished: Vec::new(),
        }
    }

    /// Closed loop: every consumer's first unit (think-time offsets drawn from `seed`).
    pub(crate) fn start(&mut self, s: &mut Schedule<Event>, client: &mut Client, seeds: Seeds) {
        let mut rng = seeds.consumer_start();
        self.rules.start(now(s), &mut rng, &mut self.actions);
        self.apply(s, client);
    }

    /// A unit arrives at `consumer`.
    pub(crate) fn arrive(&mut self, s: &mut Schedule<Event>, client: &mut Client, consumer: u32) {
        self.rules.arrive(consumer, now(s), &mut self.actions);
        // Nearly always the unit is sent at once and its timeout armed: done here, as
        // `apply` would, without its whole machinery.
        if let [Action::Send { request, .. }, Action::Arm {
            at,
            timer: timer @ Timer::Timeout { .. },
        }] = self.actions[..]
        {
            self.actions.clear();
            let slot = self.send(s, client, request);
            let ticket = self.arm(s, at, timer);
            client.set_owner_timer(slot, ticket);
        } else {
            self.apply(s, client);
        }
    }

    /// A consumer timer is due.
    pub(crate) fn fire(&mut self, s: &mut Schedule<Event>, client: &mut Client, timer: Timer) {
        self.rules.fire(timer, now(s), &mut self.actions);
        self.apply(s, client);
    }

    /// Hands the client's finished requests to the consumers (call after every event).
    #[inline]
    pub(crate) fn collect(&mut self, s: &mut Schedule<Event>, client: &mut Client) {
        if client.has_finished() {
            self.take_finished(s, client); // most events finish no request
        }
    }

    fn take_finished(&mut self, s: &mut Schedule<Event>, client: &mut Client) {
        // The driver's buffer (empty) and the client's trade places: no copy, and both
        // allocations are reused.
        client.take_finished(&mut self.finished);
        while !self.finished.is_empty() {
            for &f in &self.finished {
                if let Some(slots) = &mut self.slots {
                    slots.remove(f.owner);
                }
                // A success ends its unit (or it had ended): the timeout armed when it was
                // sent can only be stale now, so it leaves the schedule at once instead of
                // being popped, and found stale, `timeout` later.
                if let (true, Some(t)) = (f.ok, f.timer) {
                    s.cancel(self.timeout, t);
                }
                self.rules
                    .finished(f.owner, f.ok, now(s), &mut self.actions);
            }
            self.finished.clear();
            // Nearly always a finish leaves one thing to do, a unit to record: done here,
            // without `apply`'s whole machinery.
            if let [Action::Done { arrived, ok, .. }] = self.actions[..] {
                self.actions.clear();
                Self::record(&mut self.recorder, s, arrived, ok);
            } else {
                self.apply(s, client);
            }
            // A send can finish at once (a throttled first attempt): go round again.
            client.take_finished(&mut self.finished);
        }
    }

    /// Carries out the actions the rules just took, and clears them (the buffer is kept).
    fn apply(&mut self, s: &mut Schedule<Event>, client: &mut Client) {
        // The client slot of the last `Send`: the consumer timeout armed next is its own.
        let mut last_sent = None;
        for i in 0..self.actions.len() {
            match self.actions[i] {
                Action::Send { request, .. } => last_sent = Some(self.send(s, client, request)),
                Action::Cancel { request } => {
                    if let Some(slot) = self.slots.as_mut().and_then(|m| m.remove(request)) {
                        client.cancel(s, slot);
                    }
                }
                Action::Arm { at, timer } => {
                    let ticket = self.arm(s, at, timer);
                    if let (Timer::Timeout { .. }, Some(slot)) = (timer, last_sent.take()) {
                        client.set_owner_timer(slot, ticket);
                    }
                }
                Action::Done { arrived, ok, .. } => {
                    Self::record(&mut self.recorder, s, arrived, ok)
                }
            }
        }
        self.actions.clear();
    }

    /// Begins logical request `request` in the client; returns its slot.
    #[inline(always)]
    fn send(&mut self, s: &mut Schedule<Event>, client: &mut Client, request: u64) -> u32 {
        let rng = self.arm_seed.request(request);
        let slot = client.begin(s, rng, request, None);
        if let Some(slots) = &mut self.slots {
            slots.insert(request, slot);
        }
        slot
    }

    /// Puts `timer` on the schedule, due at `at`; the ticket cancels it (on a lane only).
    #[inline(always)]
    fn arm(&mut self, s: &mut Schedule<Event>, at: Duration, timer: Timer) -> Option<Ticket> {
        let lane = match timer {
            Timer::Timeout { .. } => Some(self.timeout),
            Timer::GiveUp { .. } => Some(self.give_up),
            Timer::Think { .. } => self.think,
        };
        match lane {
            Some(l) => s.at_in_order(l, nanos(at), Event::Consumer(timer)),
            None => {
                s.at(nanos(at), Event::Consumer(timer));
                None
            }
        }
    }

    /// Records in `recorder` a unit that arrived at `arrived` and is done now.
    #[inline(always)]
    fn record(recorder: &mut Recorder, s: &Schedule<Event>, arrived: Duration, ok: bool) {
        recorder.record(&LogicalRecord {
            intended: arrived,
            latency: now(s).saturating_sub(arrived),
            ok,
            attempts: 0,
        });
    }

    /// The units recorded, with the consumers' tally and the client's attempt count.
    pub(crate) fn into_recorder(mut self, client: &Client) -> Recorder {
        let t = self.rules.tally();
        self.recorder.set_consumers(ConsumerTally {
            logical_requests: t.sent,
            attempts: client.attempts(),
            timeouts: t.timeouts,
            abandoned: t.abandoned,
        });
        self.recorder
    }
}

fn now(s: &Schedule<Event>) -> Duration {
    Duration::from_nanos(s.now())
}
