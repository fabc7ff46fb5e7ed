//! Consumer rules: the retry layer *above* the HTTP client, as a pure state machine.
//!
//! ## Why a second layer is modelled at all
//!
//! A client's retry policy is rarely the only one. The code that calls it (a worker, a
//! browser, a job queue) has its own timeout, and when that fires it sends the *same unit
//! of work* again as a **new** request, while the original is still retrying underneath:
//! two layers of retry that don't know about each other. In an incident the product of the
//! two is the load, and no client-side bench sees it. [`Consumers`] decides what the upper
//! layer does; the lower layer is the arm's [`crate::Retrier`], unchanged.
//!
//! ## Why a state machine that returns actions
//!
//! The same rules run on the simulator's virtual clock and on tokio, so they can neither
//! sleep nor spawn. Every input is an event with `now` passed in (a unit arrives, a timer
//! fires, a logical request finishes) and every output is an [`Action`] the driver carries
//! out: send, cancel (in production: drop the request's future, and its backoff timer with
//! it), arm a timer, record a finished unit. The actions go to the driver's [`Sink`] as
//! they are taken (a `Vec<Action>` is one, for a driver that carries them out later). A
//! second copy of these rules in a driver would be a bug; there is none.
//!
//! ## The rules
//!
//! - A unit's first logical request is sent when it arrives, unless the consumer already
//!   has `max_in_flight` logical requests live; then it waits, FIFO, at the consumer.
//! - `timeout` after its latest send, if the unit is not done, the consumer times out:
//!   [`OnTimeout::Reissue`] sends a new logical request and leaves the others running;
//!   [`OnTimeout::Abandon`] cancels the unit's live requests first. Either way the re-send
//!   goes ahead of waiting units (and, at the cap, waits at the front of the line).
//! - A logical request that fails outright (its retrier gave up) is not re-sent at once:
//!   the consumer's only clock is its timeout, so it does not spin on fast failures.
//! - The unit is done when one of its logical requests succeeds, or `give_up` after it
//!   arrived (the give-up timer is armed at the unit's first timeout, or at arrival when
//!   it has to wait or `give_up` is not later than `timeout`) (then, with `Abandon`, its live requests are cancelled; with `Reissue` they
//!   are left to finish, as nobody is listening for them any more).
//! - Live requests count against `max_in_flight` until they finish or are cancelled, even
//!   when their unit is already done: they still hold a connection.
//! - Closed loop (`think`): each consumer starts its first unit at a random offset in
//!   `[0, think)` and its next one `think` after the previous is done.
//!
//! ```
//! use herd_retry::consumer::{Action, ConsumerConfig, ConsumerRules, Consumers, OnTimeout, Timer};
//! use herd_retry::Nanos;
//! use std::time::Duration;
//! let ms = Duration::from_millis;
//! let rules = ConsumerRules::new(ConsumerConfig {
//!     timeout: ms(3000),
//!     on_timeout: OnTimeout::Reissue,
//!     max_in_flight: 0,
//!     give_up: ms(30_000),
//!     think: None,
//! })
//! .unwrap();
//! let mut c = Consumers::new(rules, 1, u64::MAX);
//! let mut out = Vec::new();
//! c.arrive(0, Nanos::ZERO, &mut out);
//! // Sent at once, with a timer for the consumer's timeout (no give-up timer yet: only a
//! // unit still not done at its timeout can need one).
//! assert!(matches!(out[0], Action::Send { unit: 0, request: 0 }));
//! assert!(matches!(out[1], Action::Arm { timer: Timer::Timeout { unit: 0, send: 1 }, .. }));
//! ```

use crate::nanos::Nanos;
use busy::BusyConsumers;
use id_ring::IdRing;
use live::Live;
use rand::Rng;
pub use sink::Sink;
use std::fmt;
use std::time::Duration;

/// What a consumer does when its timeout fires before the unit is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnTimeout {
    /// Send the unit again as a new logical request; the original keeps retrying.
    Reissue,
    /// Cancel the original and its pending retries, then send the unit again.
    Abandon,
}

impl OnTimeout {
    /// The scenario spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            OnTimeout::Reissue => "reissue",
            OnTimeout::Abandon => "abandon",
        }
    }
}

/// A rule that cannot work, from [`ConsumerRules::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConsumerError {
    /// `timeout` is zero: the consumer would re-send at the instant it sent.
    ZeroTimeout,
    /// `give_up` is zero: every unit would fail on arrival.
    ZeroGiveUp,
    /// `think` is zero: a closed loop without a pause is an open loop at infinite rate.
    ZeroThink,
}

impl fmt::Display for ConsumerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConsumerError::ZeroTimeout => "the consumer timeout must be greater than 0",
            ConsumerError::ZeroGiveUp => "give_up must be greater than 0",
            ConsumerError::ZeroThink => "think time must be greater than 0",
        })
    }
}

impl std::error::Error for ConsumerError {}

/// One consumer's settings as given, named, for [`ConsumerRules::new`] to check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsumerConfig {
    /// How long after its latest send a unit not yet done times out (more than 0).
    pub timeout: Duration,
    /// What the consumer does then.
    pub on_timeout: OnTimeout,
    /// A cap on each consumer's live logical requests; `0`: none.
    pub max_in_flight: u32,
    /// How long after its arrival a unit is given up (more than 0).
    pub give_up: Duration,
    /// For a closed loop, the time between a unit's end and the consumer's next unit
    /// (more than 0); `None`: an open loop, units arrive on their own.
    pub think: Option<Duration>,
}

/// One consumer's configuration, checked (every consumer of a run shares it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsumerRules {
    timeout: Duration,
    on_timeout: OnTimeout,
    max_in_flight: u32,
    give_up: Duration,
    think: Option<Duration>,
}

impl ConsumerRules {
    /// The rules of `config`, or the setting that cannot work.
    pub fn new(config: ConsumerConfig) -> Result<Self, ConsumerError> {
        let ConsumerConfig {
            timeout,
            on_timeout,
            max_in_flight,
            give_up,
            think,
        } = config;
        if timeout.is_zero() {
            return Err(ConsumerError::ZeroTimeout);
        }
        if give_up.is_zero() {
            return Err(ConsumerError::ZeroGiveUp);
        }
        if think.is_some_and(|t| t.is_zero()) {
            return Err(ConsumerError::ZeroThink);
        }
        Ok(ConsumerRules {
            timeout,
            on_timeout,
            max_in_flight,
            give_up,
            think,
        })
    }

    /// The consumer timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// What happens at the timeout.
    pub fn on_timeout(&self) -> OnTimeout {
        self.on_timeout
    }

    /// The cap on live logical requests per consumer (`0`: none).
    pub fn max_in_flight(&self) -> u32 {
        self.max_in_flight
    }

    /// How long after its arrival a unit is given up.
    pub fn give_up(&self) -> Duration {
        self.give_up
    }

    /// The closed loop's think time, if the loop is closed.
    pub fn think(&self) -> Option<Duration> {
        self.think
    }
}

/// A timer the driver arms for the consumers and hands back to [`Consumers::fire`].
/// Small and `Copy` (16 bytes) so it fits in the simulator's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    /// The consumer timeout of `unit`'s `send`-th send (stale if it sent again since).
    Timeout {
        /// The unit.
        unit: u64,
        /// Which send of the unit armed it (1-based).
        send: u32,
    },
    /// `unit`'s give-up time.
    GiveUp {
        /// The unit.
        unit: u64,
    },
    /// Closed loop: `consumer` starts its next unit.
    Think {
        /// The consumer's index.
        consumer: u32,
    },
}

/// What the driver must do, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Start a new logical request for `unit` now, through the arm's retrier. `request`
    /// is unique in the run; report its end with [`Consumers::finished`].
    Send {
        /// The unit of work.
        unit: u64,
        /// The new logical request.
        request: u64,
    },
    /// Cancel `request` and its pending retries; it will never be reported finished.
    Cancel {
        /// The logical request.
        request: u64,
    },
    /// Call [`Consumers::fire`] with `timer` at `at`.
    Arm {
        /// When.
        at: Nanos,
        /// What.
        timer: Timer,
    },
    /// `unit` is done: record it, with latency from `arrived` to now.
    Done {
        /// The unit.
        unit: u64,
        /// The consumer it arrived at.
        consumer: u32,
        /// When it arrived.
        arrived: Nanos,
        /// Whether one of its logical requests succeeded (otherwise it was given up).
        ok: bool,
    },
}

/// Counters over all consumers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Units of work that arrived.
    pub units: u64,
    /// Logical requests sent (first sends and re-sends).
    pub sent: u64,
    /// Consumer timeouts that fired on a unit not yet done.
    pub timeouts: u64,
    /// Logical requests cancelled (abandoned at a timeout or at give-up).
    pub abandoned: u64,
    /// Units given up.
    pub gave_up: u64,
}

#[derive(Debug)]
struct Unit {
    /// When it arrived.
    arrived: Nanos,
    consumer: u32,
    /// Live logical requests of the unit, kept under `Abandon` only (see [`Live`]).
    live: Live,
    sends: u32,
    /// Whether its give-up timer is pending (see [`Consumers::arrive`]).
    give_up_armed: bool,
}

/// A live logical request: whose it is, and the tag its [`Sink::send`] returned.
#[derive(Clone, Copy, Debug)]
struct LiveRequest {
    consumer: u32,
    /// Handed back to [`Sink::cancel`] (the simulator's client slot: no map of its own).
    tag: u32,
    unit: u64,
}

/// Every consumer of one arm.
#[derive(Debug)]
pub struct Consumers {
    rules: ConsumerRules,
    /// The rules' times in nanoseconds, the unit of [`Nanos`]: added to an instant at
    /// every send without a `Duration` taken apart.
    timeout: u64,
    give_up: u64,
    think: Option<u64>,
    /// How many consumers there are.
    count: u32,
    /// Under a cap, each busy consumer's live logical requests and line of waiting units
    /// (FIFO), in one entry (see [`BusyConsumers`]); empty without a cap.
    busy: BusyConsumers,
    /// Units not yet done, by id (ids are handed out in arrival order: see [`IdRing`]).
    units: IdRing<Unit>,
    /// Live logical request → its consumer and unit.
    requests: IdRing<LiveRequest>,
    next_unit: u64,
    next_request: u64,
    /// Closed loop: units still to start.
    left: u64,
    tally: Tally,
}

impl Consumers {
    /// `count` consumers following `rules`; a closed loop starts at most `units` units.
    pub fn new(rules: ConsumerRules, count: u32, units: u64) -> Self {
        Consumers {
            rules,
            timeout: nanos(rules.timeout),
            give_up: nanos(rules.give_up),
            think: rules.think.map(nanos),
            count,
            busy: BusyConsumers::new(rules.max_in_flight),
            units: IdRing::default(),
            requests: IdRing::default(),
            next_unit: 0,
            next_request: 0,
            left: units,
            tally: Tally::default(),
        }
    }

    /// The counters so far.
    pub fn tally(&self) -> Tally {
        self.tally
    }

    /// Whether nothing is left to do: no unit pending, no request live, and (closed loop)
    /// no unit left to start. Timers still armed are then all stale.
    pub fn is_idle(&self) -> bool {
        self.units.is_empty()
            && self.requests.is_empty()
            && (self.rules.think.is_none() || self.left == 0)
    }

    /// Closed loop: arms every consumer's first unit at a random offset in `[0, think)`.
    /// Does nothing for an open loop.
    pub fn start<R: Rng + ?Sized>(&mut self, now: Nanos, rng: &mut R, out: &mut impl Sink) {
        let Some(think) = self.rules.think else {
            return;
        };
        for consumer in 0..self.count {
            let at = now.as_duration() + think.mul_f64(rng.random::<f64>());
            out.act(Action::Arm {
                at: Nanos::from(at),
                timer: Timer::Think { consumer },
            });
        }
    }

    /// A unit of work arrives at `consumer` (open loop; a consumer out of range is ignored).
    /// Hinted inline: a driver calls it at every unit, from one place.
    #[inline]
    pub fn arrive(&mut self, consumer: u32, now: Nanos, out: &mut impl Sink) {
        if consumer >= self.count {
            return;
        }
        let unit = self.next_unit;
        self.next_unit += 1;
        self.tally.units += 1;
        let mut u = Unit {
            consumer,
            arrived: now,
            live: Live::new(),
            sends: 0,
            give_up_armed: false,
        };
        // Nearly always sent at once: the unit goes into the table already sent, rather
        // than being looked up there again to send it. Sent or lined up, its consumer is
        // looked up once.
        let sent = self.busy.admit(consumer, unit);
        let first = sent.then(|| Self::next_send(&mut self.next_request, &self.rules, &mut u));
        self.units.insert(unit, u);
        if let Some((request, send)) = first {
            self.sent(unit, consumer, request, send, now, out);
        }
        // The give-up timer is only needed by a unit still not done at `give_up`. A unit
        // sent now and timing out earlier than that arms it when its first timeout fires
        // (at the same instant as ever): the great majority, done in milliseconds, never
        // put a timer on the schedule that would fire, stale, `give_up` later (with a
        // million consumers, millions of pending events).
        if !sent || self.rules.give_up <= self.rules.timeout {
            self.arm_give_up(unit, out);
        }
        // A unit sent now found nobody waiting, and sending it left nobody waiting: the
        // pump would find no line.
        if !sent {
            self.pump(consumer, now, out);
        }
    }

    /// Arms `unit`'s give-up timer, `give_up` after its arrival, unless it is armed.
    #[inline]
    fn arm_give_up(&mut self, unit: u64, out: &mut impl Sink) {
        if let Some(u) = self.units.get_mut(unit) {
            if !u.give_up_armed {
                u.give_up_armed = true;
                out.arm(
                    Nanos(u.arrived.0.saturating_add(self.give_up)),
                    Timer::GiveUp { unit },
                );
            }
        }
    }

    /// A timer armed by an [`Action::Arm`] is due.
    pub fn fire(&mut self, timer: Timer, now: Nanos, out: &mut impl Sink) {
        match timer {
            Timer::Think { consumer } => {
                if self.left > 0 {
                    self.left -= 1;
                    self.arrive(consumer, now, out);
                }
            }
            Timer::GiveUp { unit } => {
                let Some(u) = self.units.remove(unit) else {
                    return;
                };
                self.tally.gave_up += 1;
                if self.rules.on_timeout == OnTimeout::Abandon {
                    for r in u.live.iter() {
                        self.cancel(r, out);
                    }
                }
                self.done(unit, &u, false, now, out);
            }
            Timer::Timeout { unit, send } => {
                let Some(u) = self.units.get_mut(unit) else {
                    return;
                };
                if u.sends != send {
                    return;
                }
                self.arm_give_up(unit, out);
                let Some(u) = self.units.get_mut(unit) else {
                    return;
                };
                self.tally.timeouts += 1;
                let consumer = u.consumer;
                if self.rules.on_timeout == OnTimeout::Abandon {
                    for r in u.live.take() {
                        self.cancel(r, out);
                    }
                }
                self.want(unit, consumer, true, now, out);
                self.pump(consumer, now, out);
            }
        }
    }

    /// Whether `timer` could still do something when it fires: `false` when
    /// [`Consumers::fire`] would ignore it, now or at any later time (its unit is done,
    /// or, for a timeout, the unit sent again since). A driver may drop such a timer
    /// rather than keep it until it is due.
    #[inline]
    pub fn is_pending(&self, timer: &Timer) -> bool {
        match *timer {
            Timer::Timeout { unit, send } => self.units.get(unit).is_some_and(|u| u.sends == send),
            Timer::GiveUp { unit } => self.units.get(unit).is_some(),
            Timer::Think { .. } => true,
        }
    }

    /// Logical request `request` ended: `ok` if its retrier reported success. A request
    /// that was cancelled, or is unknown, is ignored.
    #[inline]
    pub fn finished(&mut self, request: u64, ok: bool, now: Nanos, out: &mut impl Sink) {
        let Some(LiveRequest { consumer, unit, .. }) = self.requests.remove(request) else {
            return;
        };
        let waits = self.busy.release(consumer);
        if ok {
            // Its unit is done (the request need not leave the unit's list first: the
            // unit goes with it).
            if let Some(u) = self.units.remove(unit) {
                self.record_done(unit, &u, true, now, out);
            }
        } else if let Some(u) = self.units.get_mut(unit) {
            u.live.remove(request);
        }
        // Recording the unit leaves the line as it was: no line, no pump.
        if waits {
            self.pump_waiting(consumer, now, out);
        }
    }

    /// `unit`, a live unit of `consumer`, needs a send: now if its consumer has room and
    /// nobody waits ahead of it (a re-send goes ahead), else in line. Whether it was sent.
    #[inline(always)]
    fn want(
        &mut self,
        unit: u64,
        consumer: u32,
        resend: bool,
        now: Nanos,
        out: &mut impl Sink,
    ) -> bool {
        if self.busy.may_send(consumer, resend) {
            self.send(unit, now, out)
        } else {
            self.busy.line_up(consumer, unit, resend);
            false
        }
    }

    /// Sends what `consumer` has waiting, as far as it has room.
    #[inline]
    fn pump(&mut self, consumer: u32, now: Nanos, out: &mut impl Sink) {
        // Nobody counted, nobody waits (always so without a cap): nothing to call.
        if !self.busy.is_empty() {
            self.pump_waiting(consumer, now, out);
        }
    }

    fn pump_waiting(&mut self, consumer: u32, now: Nanos, out: &mut impl Sink) {
        while let Some(unit) = self.busy.next_waiting(consumer) {
            // A unit given up while it waited is gone: `send` skips it.
            self.send(unit, now, out);
        }
    }

    /// Sends `unit` (whether it was there to send).
    #[inline(always)]
    fn send(&mut self, unit: u64, now: Nanos, out: &mut impl Sink) -> bool {
        let Some(u) = self.units.get_mut(unit) else {
            return false;
        };
        let (request, send) = Self::next_send(&mut self.next_request, &self.rules, u);
        let consumer = u.consumer;
        self.busy.count_send(consumer);
        self.sent(unit, consumer, request, send, now, out);
        true
    }

    /// Notes on `u` that it sends again, taking the next request id from `next_request`:
    /// the new request and which send of the unit it is.
    #[inline(always)]
    fn next_send(next_request: &mut u64, rules: &ConsumerRules, u: &mut Unit) -> (u64, u32) {
        let request = *next_request;
        *next_request += 1;
        if rules.on_timeout == OnTimeout::Abandon {
            u.live.push(request);
        }
        u.sends += 1;
        (request, u.sends)
    }

    /// `request`, the `send`-th send of `unit` of `consumer`, goes out (already counted
    /// against its consumer's cap): it is live, and its timeout is armed.
    #[inline(always)]
    fn sent(
        &mut self,
        unit: u64,
        consumer: u32,
        request: u64,
        send: u32,
        now: Nanos,
        out: &mut impl Sink,
    ) {
        self.tally.sent += 1;
        let tag = out.send(unit, request);
        let live = LiveRequest {
            consumer,
            tag,
            unit,
        };
        self.requests.insert(request, live);
        out.arm(
            Nanos(now.0.saturating_add(self.timeout)),
            Timer::Timeout { unit, send },
        );
    }

    fn cancel(&mut self, request: u64, out: &mut impl Sink) {
        let Some(live) = self.requests.remove(request) else {
            return;
        };
        self.busy.release(live.consumer);
        self.tally.abandoned += 1;
        out.cancel(request, live.tag);
    }

    /// `unit` is done: recorded, and its consumer's line moves up.
    #[inline]
    fn done(&mut self, unit: u64, u: &Unit, ok: bool, now: Nanos, out: &mut impl Sink) {
        self.record_done(unit, u, ok, now, out);
        self.pump(u.consumer, now, out);
    }

    /// `unit` is done: recorded, and (closed loop) its consumer's next unit armed.
    #[inline]
    fn record_done(&mut self, unit: u64, u: &Unit, ok: bool, now: Nanos, out: &mut impl Sink) {
        out.done(unit, u.consumer, u.arrived, ok);
        if let Some(think) = self.think {
            let consumer = u.consumer;
            out.arm(
                Nanos(now.0.saturating_add(think)),
                Timer::Think { consumer },
            );
        }
    }
}

/// Nanoseconds in `d`, saturating (a run is shorter than the 584 years a `u64` holds).
#[inline]
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

mod busy;
mod id_map;
mod id_ring;
mod live;
mod sink;
#[cfg(test)]
mod tests;
