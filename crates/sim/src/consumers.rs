//! The consumers on the virtual clock: [`herd_retry::Consumers`] decides, this carries
//! out, action by action as the rules take them ([`carry`]). A `Send` begins a logical request in the client with the consumers' request id as
//! its owner; a `Cancel` invalidates that request's pending events (its generation moves
//! on, so its answer, timeout and backoff are dropped as stale); an `Arm` is an event on
//! the schedule; a `Done` unit goes into the recorder, latency from its arrival.
//!
//! The consumer timeout armed with a send is written down rather than put on its lane
//! (`crate::deferred`): some time after it was armed it goes on the lane only if
//! [`Consumers::is_pending`] says it could still do something, so the timeouts of units
//! that succeeded (nearly all) are neither cancelled nor popped. The driver keeps no map
//! from request id to client slot: the slot is the tag [`herd_retry::consumer::Sink::send`]
//! returns, which the rules keep with their own entry for the request and hand back with
//! a cancel (under `abandon`, the one rule that cancels).

use crate::client::{Client, Finished};
use crate::deferred::Deferred;
use crate::event::{Event, Swept};
use crate::schedule::{nanos, Schedule};
use carry::Carrier;
use herd_retry::consumer::{ConsumerRules, Consumers, Timer};
use herd_retry::Nanos;
use herd_scenario::{ArmSeed, Seeds, Shard};
use herd_scenario::{ConsumerTally, Recorder};

/// One arm's consumers and the bookkeeping between their ids and the client's slots.
pub(crate) struct Driver {
    rules: Consumers,
    /// Carries out what the rules decide, as they decide it.
    carrier: Carrier,
    finished: Vec<Finished>,
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
        shard: Option<Shard>,
    ) -> Self {
        Driver {
            carrier: Carrier {
                // Slow lanes (see `crate::schedule`): a timeout reaches its lane only if
                // its unit is still not done ~0.1 s after it was armed, and only a unit
                // still not done at a timeout arms a give-up, so they are rarely due.
                timeout: s.add_slow_lane(rules.timeout()),
                give_up: s.add_slow_lane(rules.give_up()),
                think: rules.think().map(|t| s.add_lane(t)),
                deferred: Deferred::new(nanos(rules.timeout()), s),
                arm_seed,
                recorder: Recorder::new(),
                shard: shard.map(|s| (s, Recorder::new())),
            },
            rules: Consumers::new(rules, count, units),
            finished: Vec::new(),
        }
    }

    /// Closed loop: every consumer's first unit (think-time offsets drawn from `seed`).
    pub(crate) fn start(&mut self, s: &mut Schedule<Event>, client: &mut Client, seeds: Seeds) {
        let mut rng = seeds.consumer_start();
        let now = Nanos(s.now());
        self.rules
            .start(now, &mut rng, &mut self.carrier.on(s, client));
    }

    /// A unit arrives at `consumer`.
    #[inline]
    pub(crate) fn arrive(&mut self, s: &mut Schedule<Event>, client: &mut Client, consumer: u32) {
        let now = s.now();
        self.rules
            .arrive(consumer, Nanos(now), &mut self.carrier.on(s, client));
    }

    /// A consumer timer is due.
    pub(crate) fn fire(&mut self, s: &mut Schedule<Event>, client: &mut Client, timer: Timer) {
        let now = s.now();
        self.rules
            .fire(timer, Nanos(now), &mut self.carrier.on(s, client));
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
            let now = s.now();
            for &f in &self.finished {
                self.rules
                    .finished(f.owner, f.ok, Nanos(now), &mut self.carrier.on(s, client));
            }
            self.finished.clear();
            // A send can finish at once (a throttled first attempt): go round again.
            client.take_finished(&mut self.finished);
        }
    }

    /// A sweep of the consumer timeouts written down: those that could still do something
    /// go on the timeout lane, under their own keys; the rest (their unit is done, or sent
    /// again since) are dropped, as [`Consumers::fire`] would have ignored them.
    pub(crate) fn sweep(&mut self, s: &mut Schedule<Event>) {
        let Some(d) = &mut self.carrier.deferred else {
            return;
        };
        let (rules, lane) = (&self.rules, self.carrier.timeout);
        let next = d.sweep(s.now(), |p| {
            if rules.is_pending(&p.item) {
                s.at_in_order_reserved(lane, p.due, p.seq, Event::Consumer(p.item));
            }
        });
        if let Some(wake) = next {
            s.at_in_order(d.lane, wake, Event::Sweep(Swept::Consumers));
        }
    }

    /// The units recorded, with the consumers' tally and the client's attempt count; and
    /// with a shard, its own consumers' units, with the same (whole) tally.
    pub(crate) fn into_recorder(mut self, client: &Client) -> (Recorder, Option<Recorder>) {
        let t = self.rules.tally();
        let tally = ConsumerTally {
            logical_requests: t.sent,
            attempts: client.attempts(),
            timeouts: t.timeouts,
            abandoned: t.abandoned,
        };
        self.carrier.recorder.set_consumers(tally);
        let shard = self.carrier.shard.map(|(_, mut r)| {
            r.set_consumers(tally);
            r
        });
        (self.carrier.recorder, shard)
    }
}

mod carry;
