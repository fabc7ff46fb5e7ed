//! The simulator's [`Sink`] for the consumer rules: each [`Action`] is carried out on the
//! schedule and the client the moment the rules take it, with no list of actions between
//! them (see [`herd_retry::consumer::Sink`] for why).

use crate::client::Client;
use crate::deferred::Deferred;
use crate::event::{Event, Swept};
use crate::schedule::{LaneId, Schedule};
use herd_retry::consumer::{Action, Sink, Timer};
use herd_retry::Nanos;
use herd_scenario::{ArmSeed, Recorder, Shard};

/// What carrying out the actions needs, kept between events.
pub(super) struct Carrier {
    pub(super) arm_seed: ArmSeed,
    pub(super) recorder: Recorder,
    /// With a shard (`--shard`): its own consumers' units, recorded again here.
    pub(super) shard: Option<(Shard, Recorder)>,
    /// Lanes for the timers whose delay is fixed by the rules (timeout, give-up, think):
    /// each kind is armed in time order (a give-up armed late, at a unit's first timeout,
    /// still nearly always is), with a million consumers they are most of the pending
    /// events, and in a lane each costs O(1) instead of a trip through the calendar's heaps.
    pub(super) timeout: LaneId,
    pub(super) give_up: LaneId,
    pub(super) think: Option<LaneId>,
    /// Consumer timeouts written down, not yet on `timeout` (see `crate::deferred`): one
    /// is armed at every send and nearly all are over (their unit succeeded) long before
    /// they are due. `None` for a timeout too short to put off.
    pub(super) deferred: Option<Deferred<Timer>>,
}

impl Carrier {
    /// The sink for one call into the rules, carrying out on `s` and `client`.
    #[inline(always)]
    pub(super) fn on<'a>(
        &'a mut self,
        s: &'a mut Schedule<Event>,
        client: &'a mut Client,
    ) -> Carrying<'a> {
        Carrying {
            carrier: self,
            s,
            client,
        }
    }
}

/// A [`Carrier`] at work on one call into the rules.
pub(super) struct Carrying<'a> {
    carrier: &'a mut Carrier,
    s: &'a mut Schedule<Event>,
    client: &'a mut Client,
}

impl Sink for Carrying<'_> {
    // Always inlined: the rules call it with the action's kind known, so the match folds
    // away and each call site keeps only its own branch.
    #[inline(always)]
    fn act(&mut self, action: Action) {
        match action {
            Action::Send { unit, request } => {
                self.send(unit, request);
            }
            // The rules cancel through `cancel`, with the slot `send` returned.
            Action::Cancel { .. } => unreachable!("cancels come through Sink::cancel"),
            Action::Arm { at, timer } => self.arm(at, timer),
            Action::Done {
                unit,
                consumer,
                arrived,
                ok,
            } => self.done(unit, consumer, arrived, ok),
        }
    }

    /// Begins logical request `request` in the client; its slot is the tag the rules keep
    /// for a cancel.
    #[inline(always)]
    fn send(&mut self, _unit: u64, request: u64) -> u32 {
        let rng = self.carrier.arm_seed.request(request);
        // The consumers record the unit (`done`), so the request's own flag is unused.
        self.client.begin(self.s, rng, request, None, true)
    }

    /// Cancels the request in client slot `slot` (a consumer abandoned it).
    #[inline(always)]
    fn cancel(&mut self, _request: u64, slot: u32) {
        self.client.cancel(self.s, slot);
    }

    /// Puts `timer` on the schedule, due at `at` ns: a timeout is written down first (it
    /// takes its sequence number now, so it runs where it would have run had it gone on
    /// its lane now), the others go on their lane (or the calendar) at once.
    #[inline(always)]
    fn arm(&mut self, Nanos(at): Nanos, timer: Timer) {
        let c = &mut self.carrier;
        let lane = match timer {
            Timer::Timeout { .. } => {
                let due = at.max(self.s.now());
                let seq = self.s.reserve();
                match &mut c.deferred {
                    Some(d) => {
                        if let Some(wake) = d.push(due, seq, timer) {
                            self.s
                                .at_in_order(d.lane, wake, Event::Sweep(Swept::Consumers));
                        }
                    }
                    None => {
                        let item = Event::Consumer(timer);
                        self.s.at_in_order_reserved(c.timeout, due, seq, item);
                    }
                }
                return;
            }
            Timer::GiveUp { .. } => Some(c.give_up),
            Timer::Think { .. } => c.think,
        };
        match lane {
            Some(l) => {
                self.s.at_in_order(l, at, Event::Consumer(timer));
            }
            None => self.s.at(at, Event::Consumer(timer)),
        }
    }

    /// Records a unit that arrived at `arrived` ns and is done now.
    #[inline(always)]
    fn done(&mut self, _unit: u64, consumer: u32, Nanos(arrived): Nanos, ok: bool) {
        let now = self.s.now();
        let latency = now.saturating_sub(arrived);
        self.carrier.recorder.record_nanos(arrived, latency, ok, 0);
        if let Some((shard, r)) = &mut self.carrier.shard {
            if shard.owns_consumer(consumer) {
                r.record_nanos(arrived, latency, ok, 0);
            }
        }
    }
}
