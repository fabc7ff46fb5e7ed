//! The client of an arm that hedges or has a breaker: the same [`Retrier`] as
//! `crate::client`, with herd-retry's [`Hedger`] and [`Breaker`] between it and the wire.
//!
//! ## Why a second client
//!
//! The plain client keeps one attempt per logical request in flight, and its slot, events
//! and timeouts are shaped (and measured) for that: it is the hot path of every existing
//! scenario. A hedged request has several attempts out at once, and a breaker needs every
//! attempt's result. Rather than make every arm pay for that, an arm with `hedge` or
//! `breaker` gets this client and the others keep theirs untouched, so their runs are the
//! same events and the same bytes as before.
//!
//! ## The layers, outermost first
//!
//! 1. **Retries.** Each logical request goes through the arm's [`Retrier`] as in the plain
//!    client (`begin`, then `admit` → round → `decide`). A *round* is what the retry
//!    policy calls an attempt: with a hedge, one hedged request, whose outcome is the
//!    winner's (or the last handled failure), as Polly's and Finagle's stacks see it.
//! 2. **Hedging.** Per round, the [`Hedger`]'s actions are carried out as they come:
//!    `Send` puts a *leg* (one wire attempt) out, `Arm` schedules the hedge timer,
//!    `Cancel` abandons a leg, `Done` hands the round's outcome to the retrier. A
//!    cancelled leg frees its pool connection at once and the upstream sees its connection
//!    close one hop later, exactly as a consumer's cancel in the plain client: the upstream
//!    counted it when it arrived, and work it admitted runs to the end. A leg that is not
//!    cancelled (Finagle) runs on; its late answer is the hedger's `wasted`. A leg of an
//!    earlier round still out when a retry starts is counted wasted here.
//! 3. **The breaker**, asked by every leg before it takes a connection (per attempt, as
//!    resilience4j and Polly recommend: retry → breaker → call). A rejection is a
//!    client-side fast failure: no connection, no server request; the hedger (or, without
//!    one, the retrier) sees it as `Failed(Throttled)`, which each retry profile treats by
//!    its own rules and which no retry budget counts as an upstream failure. A permitted
//!    leg's result goes back to the breaker when it ends: its answer, or `Failed(Timeout)`.
//!    A cancelled leg ends its breaker call as a non-failure (Polly's breaker counts an
//!    outcome it does not handle, a cancellation included, as a success; a leg left
//!    without a result would hold a half-open breaker's only probe for ever). cockatiel's
//!    `Wait` holds the leg, timeout running, until a result changes the breaker's state.
//!    pybreaker's lock (`Locked`) queues the leg, first come first asked, until the call
//!    holding the breaker ends; its timeout starts when it takes the lock, as the library
//!    starts the wrapped call only then.
//!
//! Everything is deterministic: the hedger draws nothing, and the breaker's one random
//! rule (failsafe-rs' jittered open time) draws from a stream of the arm's seed that no
//! logical request uses.

use crate::event::{Answer, Attempt, AttemptId, Event, Hints};
use crate::network::{travel, Jitter};
use crate::schedule::{nanos, LaneId, Schedule};
use herd_retry::breaker::{Admission, Breaker, BreakerConfig, Permit, State, CANCELLED, REJECTED};
use herd_retry::hedge::{Action, Hedge, HedgePolicy, Hedger, MAX_ATTEMPTS};
use herd_retry::{Decision, Failure, Method, Nanos, Outcome, Request, Retrier};
use herd_scenario::Recorder;
use rand_pcg::Pcg64Mcg;
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

/// No leg.
const NONE: u32 = u32::MAX;

/// One logical request.
#[derive(Clone, Debug)]
struct Req {
    intended: u64,
    rng: Pcg64Mcg,
    request: Request,
    method: Method,
    /// Legs made (server requests, unless the pool wait timed out first).
    attempts: u32,
    /// The round: bumped at each, never reset, so a backoff, a hedge timer or a leg of an
    /// earlier round (or of an earlier request in the slot) is recognised as stale.
    gen: u32,
    /// The round's hedge state, with a hedger.
    hedge: Option<Hedge>,
    /// The round's legs by attempt number.
    legs: [u32; MAX_ATTEMPTS as usize],
    /// Legs not yet ended, of any round: the slot is reused only when this is 0.
    out: u32,
    /// The round is over (waiting for a backoff, or the request is done).
    between: bool,
    /// The logical request is recorded.
    done: bool,
    /// It is the run's shard's (see [`Guarded::shard_recorder`]).
    mine: bool,
    /// The slot is on the free list (asked for from several places; put there once).
    freed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Free,
    /// Held by cockatiel's half-open breaker until its state changes.
    Breaker,
    /// Queued for the lock of a breaker whose calls run one at a time (pybreaker), its
    /// timeout not yet running.
    Locked,
    /// Waiting for a pool connection.
    Waiting,
    InFlight,
}

/// One wire attempt.
#[derive(Clone, Copy, Debug)]
struct Leg {
    req: u32,
    round: u32,
    attempt: u8,
    gen: u32,
    phase: Phase,
    deadline: u64,
    /// The attempt timeout, from when the leg was made (a locked leg's starts with the
    /// lock).
    limit: Option<u64>,
    permit: Option<Permit>,
}

/// What the guarded client counted, beside the hedger's and the breaker's own counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GuardTally {
    /// Hedge legs (attempts beyond a round's first) that went on the wire.
    pub hedges_sent: u64,
    /// Answers to legs of a round already retried.
    pub stale_answers: u64,
}

/// One guarded arm's client.
pub(crate) struct Guarded {
    retrier: Retrier,
    hedger: Option<Hedger>,
    breaker: Option<Breaker>,
    breaker_rng: Pcg64Mcg,
    method: Method,
    hints: Hints,
    up: LaneId,
    one_way: u64,
    jitter: Option<Jitter>,
    timeout: Option<Duration>,
    reqs: Vec<Req>,
    free: Vec<u32>,
    legs: Vec<Leg>,
    free_legs: Vec<u32>,
    slots: usize,
    waiting: VecDeque<AttemptId>,
    held: Vec<u32>,
    /// Legs queued for the breaker's lock, first come first asked.
    locked: VecDeque<AttemptId>,
    departed: HashMap<AttemptId, u64>,
    recorder: Recorder,
    /// With a shard (`--shard`): the shard's own requests, recorded again here.
    shard: Option<Recorder>,
    tally: GuardTally,
    /// Breaker state changes: (when, state), for a timeline.
    transitions: Vec<(u64, State)>,
}

/// What the guarded client leaves for the report.
pub struct GuardOutcome {
    /// The hedger's counters, with a hedger.
    pub hedge: Option<herd_retry::hedge::HedgeCounters>,
    /// The breaker's counters, with a breaker.
    pub breaker: Option<herd_retry::breaker::BreakerCounters>,
    /// The client's own counts.
    pub tally: GuardTally,
    /// The breaker's state changes, in time order.
    pub transitions: Vec<(u64, State)>,
}

/// The arm's wiring and settings that the plain client takes too.
pub(crate) struct Setup {
    pub method: Method,
    pub slots: usize,
    pub timeout: Option<Duration>,
    pub hints: Hints,
    pub up: LaneId,
    pub one_way: u64,
    /// With `[network] jitter_ms`: the extra delays of the way there.
    pub jitter: Option<Jitter>,
    pub breaker_rng: Pcg64Mcg,
}

impl Guarded {
    pub(crate) fn new(
        retrier: Retrier,
        hedge: Option<HedgePolicy>,
        breaker: Option<BreakerConfig>,
        setup: Setup,
    ) -> Guarded {
        Guarded {
            retrier,
            hedger: hedge.map(|p| Hedger::new(p, 0)),
            breaker: breaker.map(|c| Breaker::new(c, 0)),
            breaker_rng: setup.breaker_rng,
            method: setup.method,
            hints: setup.hints,
            up: setup.up,
            one_way: setup.one_way,
            jitter: setup.jitter,
            timeout: setup.timeout,
            reqs: Vec::new(),
            free: Vec::new(),
            legs: Vec::new(),
            free_legs: Vec::new(),
            slots: setup.slots,
            waiting: VecDeque::new(),
            held: Vec::new(),
            locked: VecDeque::new(),
            departed: HashMap::new(),
            recorder: Recorder::new(),
            shard: None,
            tally: GuardTally::default(),
            transitions: Vec::new(),
        }
    }

    /// The finished requests, the shard's own among them (with a shard), and the counts.
    pub(crate) fn finish(self) -> (Recorder, Option<Recorder>, GuardOutcome) {
        let out = GuardOutcome {
            hedge: self.hedger.as_ref().map(Hedger::counters),
            breaker: self.breaker.as_ref().map(Breaker::counters),
            tally: self.tally,
            transitions: self.transitions,
        };
        (self.recorder, self.shard, out)
    }

    /// Records the shard's own requests (those begun `mine`) in a recorder of their own
    /// as well: a simulated shard runs the whole schedule and reports both.
    pub(crate) fn shard_recorder(&mut self) {
        self.shard = Some(Recorder::new());
    }

    /// A new logical request, intended now; `mine`: the shard's.
    pub(crate) fn begin(
        &mut self,
        s: &mut Schedule<Event>,
        rng: Pcg64Mcg,
        method: Option<Method>,
        mine: bool,
    ) {
        let now = s.now();
        let fresh = Req {
            intended: now,
            rng,
            request: self.retrier.begin(Nanos(now)),
            method: method.unwrap_or(self.method),
            attempts: 0,
            gen: 0,
            hedge: None,
            legs: [NONE; MAX_ATTEMPTS as usize],
            out: 0,
            between: true,
            done: false,
            freed: false,
            mine,
        };
        let req = match self.free.pop() {
            Some(i) => {
                let gen = self.reqs[i as usize].gen;
                self.reqs[i as usize] = Req { gen, ..fresh };
                i
            }
            None => {
                self.reqs.push(fresh);
                (self.reqs.len() - 1) as u32
            }
        };
        self.round(s, req);
    }

    /// A backoff is over.
    pub(crate) fn retry(&mut self, s: &mut Schedule<Event>, id: AttemptId) {
        let r = &self.reqs[id.req as usize];
        if r.gen == id.gen && r.between && !r.done {
            self.round(s, id.req);
        }
    }

    /// A round's hedge timer fires.
    pub(crate) fn hedge_timer(&mut self, s: &mut Schedule<Event>, id: AttemptId) {
        let r = &self.reqs[id.req as usize];
        if r.gen != id.gen || r.between || r.done {
            return;
        }
        let (Some(h), Some(mut hedge)) = (&mut self.hedger, r.hedge) else {
            return;
        };
        let mut acts = Vec::new();
        h.on_timer(&mut hedge, s.now(), &mut acts);
        self.reqs[id.req as usize].hedge = Some(hedge);
        self.carry_out(s, id.req, &acts, None);
    }

    /// The next round of `req`, if the retrier admits it.
    fn round(&mut self, s: &mut Schedule<Event>, req: u32) {
        let now = s.now();
        let r = &mut self.reqs[req as usize];
        if !self.retrier.admit(&mut r.request, Nanos(now), &mut r.rng) {
            return self.round_done(s, req, &Outcome::Failed(Failure::Throttled));
        }
        r.gen = r.gen.wrapping_add(1).max(1);
        r.between = false;
        r.legs = [NONE; MAX_ATTEMPTS as usize];
        match &mut self.hedger {
            Some(h) => {
                let mut acts = Vec::new();
                let hedge = h.begin(now, &mut acts);
                self.reqs[req as usize].hedge = Some(hedge);
                self.carry_out(s, req, &acts, None);
            }
            None => {
                if let Some(o) = self.launch(s, req, 0) {
                    self.answer(s, req, 0, o);
                }
            }
        }
    }

    /// Carries out the hedger's `acts` for `req`'s current round; `outcome` is the answer
    /// that produced them (what a `Done` finishes with). Legs that fail before they are
    /// sent (rejected by the breaker, or with no time left) answer after the batch, in
    /// order, as the library's fast failure comes back after the call.
    fn carry_out(
        &mut self,
        s: &mut Schedule<Event>,
        req: u32,
        acts: &[Action],
        outcome: Option<&Outcome>,
    ) {
        let round = self.reqs[req as usize].gen;
        let mut failed: Vec<(u8, Outcome)> = Vec::new();
        for &a in acts {
            match a {
                Action::Send { attempt } => {
                    if let Some(o) = self.launch(s, req, attempt) {
                        failed.push((attempt, o));
                    }
                }
                Action::Arm { at } => s.at(at, Event::Hedge(AttemptId { req, gen: round })),
                Action::Cancel { attempt } => self.cancel(s, req, attempt),
                Action::Done { .. } => {
                    let o = outcome.copied().unwrap_or(Outcome::Failed(Failure::Other));
                    self.round_done(s, req, &o);
                }
            }
        }
        for (attempt, o) in failed {
            let r = &self.reqs[req as usize];
            if r.gen == round && !r.between {
                self.answer(s, req, attempt, o);
            }
        }
    }

    /// Attempt `attempt` of `req`'s current round answered `outcome` (or failed unsent).
    fn answer(&mut self, s: &mut Schedule<Event>, req: u32, attempt: u8, outcome: Outcome) {
        let r = &mut self.reqs[req as usize];
        match (&mut self.hedger, r.hedge) {
            (Some(h), Some(mut hedge)) => {
                let mut acts = Vec::new();
                h.on_response(&mut hedge, attempt, &outcome, None, s.now(), &mut acts);
                r.hedge = Some(hedge);
                self.carry_out(s, req, &acts, Some(&outcome));
            }
            _ => self.round_done(s, req, &outcome),
        }
    }

    /// The round ended with `outcome`: the retrier decides what follows.
    fn round_done(&mut self, s: &mut Schedule<Event>, req: u32, outcome: &Outcome) {
        let now = s.now();
        let r = &mut self.reqs[req as usize];
        r.between = true;
        match self
            .retrier
            .decide(&mut r.request, r.method, outcome, Nanos(now), &mut r.rng)
        {
            Decision::Retry { after } if after.is_zero() => self.round(s, req),
            Decision::Retry { after } => {
                s.after(after, Event::Retry(AttemptId { req, gen: r.gen }))
            }
            decision => {
                let ok = decision == Decision::Success;
                (self.recorder).record_nanos(r.intended, now - r.intended, ok, r.attempts);
                if let (Some(shard), true) = (&mut self.shard, r.mine) {
                    shard.record_nanos(r.intended, now - r.intended, ok, r.attempts);
                }
                r.done = true;
                self.release_req(req);
            }
        }
    }

    /// Frees `req`'s slot once it is done and none of its legs is out.
    fn release_req(&mut self, req: u32) {
        let r = &mut self.reqs[req as usize];
        if r.done && r.out == 0 && !r.freed {
            r.freed = true;
            self.free.push(req);
        }
    }

    /// Puts attempt `attempt` of `req`'s round out: the breaker first, then a connection.
    /// Returns the outcome of a leg that failed before it was sent.
    fn launch(&mut self, s: &mut Schedule<Event>, req: u32, attempt: u8) -> Option<Outcome> {
        let now = s.now();
        let r = &self.reqs[req as usize];
        let limit = (self.retrier)
            .attempt_timeout(&r.request, Nanos(now), self.timeout)
            .map(nanos);
        if limit == Some(0) {
            return Some(Outcome::Failed(Failure::Timeout));
        }
        let (permit, phase) = match self.breaker.as_mut().map(|b| b.allow(now)) {
            None => (None, Phase::Waiting),
            Some(Admission::Permit(p)) => (Some(p), Phase::Waiting),
            Some(Admission::Rejected) => return Some(REJECTED),
            Some(Admission::Wait) => (None, Phase::Breaker),
            Some(Admission::Locked) => (None, Phase::Locked),
        };
        let leg = Leg {
            req,
            round: r.gen,
            attempt,
            gen: 0,
            phase,
            deadline: limit.map_or(u64::MAX, |l| now.saturating_add(l)),
            limit,
            permit,
        };
        let i = match self.free_legs.pop() {
            Some(i) => {
                let gen = self.legs[i as usize].gen.wrapping_add(1).max(1);
                self.legs[i as usize] = Leg { gen, ..leg };
                i
            }
            None => {
                self.legs.push(Leg { gen: 1, ..leg });
                (self.legs.len() - 1) as u32
            }
        };
        let id = AttemptId {
            req: i,
            gen: self.legs[i as usize].gen,
        };
        let r = &mut self.reqs[req as usize];
        r.legs[attempt as usize] = i;
        r.out += 1;
        match phase {
            Phase::Locked => self.locked.push_back(id),
            _ => {
                if let Some(l) = limit {
                    s.at(now.saturating_add(l), Event::Timeout(id));
                }
                if phase == Phase::Breaker {
                    self.held.push(i);
                } else {
                    self.connect(s, id);
                }
            }
        }
        None
    }

    /// Leg `id`, past the breaker, takes a connection or waits for one.
    fn connect(&mut self, s: &mut Schedule<Event>, id: AttemptId) {
        self.reqs[self.legs[id.req as usize].req as usize].attempts += 1;
        if self.slots > 0 {
            self.slots -= 1;
            self.send(s, id);
        } else {
            self.legs[id.req as usize].phase = Phase::Waiting;
            self.waiting.push_back(id);
        }
    }

    fn send(&mut self, s: &mut Schedule<Event>, id: AttemptId) {
        let leg = &mut self.legs[id.req as usize];
        leg.phase = Phase::InFlight;
        if leg.attempt > 0 {
            self.tally.hedges_sent += 1;
        }
        // The close follows the request on its connection: no sooner than it.
        let gone_at = leg.deadline.saturating_add(self.one_way);
        travel(s, self.up, self.jitter.as_mut(), |extra| {
            Event::AtServer(Attempt {
                id,
                gone_at: gone_at.saturating_add(extra),
            })
        });
    }

    fn release(&mut self, s: &mut Schedule<Event>) {
        while let Some(id) = self.waiting.pop_front() {
            if self.current(id).is_some_and(|l| l.phase == Phase::Waiting) {
                self.send(s, id);
                return;
            }
        }
        self.slots += 1;
    }

    fn current(&self, id: AttemptId) -> Option<&Leg> {
        self.legs
            .get(id.req as usize)
            .filter(|l| l.gen == id.gen && l.phase != Phase::Free)
    }

    /// Attempt `a` as the upstream sees it (see `crate::client::Client::seen_by_upstream`).
    pub(crate) fn seen_by_upstream(&mut self, a: Attempt) -> Attempt {
        if self.departed.is_empty() {
            return a;
        }
        match self.departed.remove(&a.id) {
            Some(closed) => Attempt {
                gone_at: a.gone_at.min(closed),
                ..a
            },
            None => a,
        }
    }

    /// The upstream's answer to leg `id` arrives.
    pub(crate) fn answered(&mut self, s: &mut Schedule<Event>, id: AttemptId, answer: Answer) {
        if !self.current(id).is_some_and(|l| l.phase == Phase::InFlight) {
            if !self.departed.is_empty() {
                self.departed.remove(&id);
            }
            return;
        }
        self.release(s);
        let outcome = self.hints.outcome(answer);
        self.end_leg(s, id, outcome);
    }

    /// Leg `id`'s timeout fires.
    pub(crate) fn timed_out(&mut self, s: &mut Schedule<Event>, id: AttemptId) {
        let Some(leg) = self.current(id) else { return };
        if leg.phase == Phase::InFlight {
            self.release(s);
        }
        self.end_leg(s, id, Outcome::Failed(Failure::Timeout));
    }

    /// Leg `id` ended with `outcome`: the breaker hears of it, then the hedger or the
    /// retrier.
    fn end_leg(&mut self, s: &mut Schedule<Event>, id: AttemptId, outcome: Outcome) {
        let leg = self.free_leg(id.req);
        self.record(s, leg.permit, &outcome);
        let r = &self.reqs[leg.req as usize];
        if r.gen != leg.round || (r.between && self.hedger.is_none()) {
            self.tally.stale_answers += 1;
        } else {
            // A loser of a round already won (Finagle does not cancel) goes to the hedger
            // too, which counts it wasted.
            self.answer(s, leg.req, leg.attempt, outcome);
        }
        self.release_req(leg.req);
    }

    /// Frees leg `i`, returning what it was.
    fn free_leg(&mut self, i: u32) -> Leg {
        let leg = self.legs[i as usize];
        self.legs[i as usize].phase = Phase::Free;
        self.legs[i as usize].gen = leg.gen.wrapping_add(1).max(1);
        self.free_legs.push(i);
        let r = &mut self.reqs[leg.req as usize];
        r.out -= 1;
        if r.legs[leg.attempt as usize] == i && r.gen == leg.round {
            r.legs[leg.attempt as usize] = NONE;
        }
        leg
    }

    /// A permitted leg's result goes back to the breaker; a state change lets the legs
    /// cockatiel holds ask again.
    fn record(&mut self, s: &mut Schedule<Event>, permit: Option<Permit>, outcome: &Outcome) {
        let (Some(b), Some(p)) = (&mut self.breaker, permit) else {
            return;
        };
        let now = s.now();
        let one_at_a_time = b.config().one_at_a_time;
        if let Some(state) = b.record(p, now, outcome, &mut self.breaker_rng) {
            self.transitions.push((now, state));
            self.wake(s);
        }
        if one_at_a_time {
            self.take_turns(s);
        }
    }

    /// The breaker's lock is free: the queued legs ask in the order they came, until one
    /// takes it (its timeout starts now) or none is left. A leg the breaker turns away
    /// does not hold the lock, so the next one asks at once.
    fn take_turns(&mut self, s: &mut Schedule<Event>) {
        while let Some(&id) = self.locked.front() {
            if !self.current(id).is_some_and(|l| l.phase == Phase::Locked) {
                self.locked.pop_front();
                continue;
            }
            let Some(b) = &mut self.breaker else { return };
            let now = s.now();
            match b.allow(now) {
                Admission::Locked => return,
                Admission::Permit(p) => {
                    self.locked.pop_front();
                    let leg = &mut self.legs[id.req as usize];
                    leg.permit = Some(p);
                    if let Some(l) = leg.limit {
                        leg.deadline = now.saturating_add(l);
                        s.at(leg.deadline, Event::Timeout(id));
                    }
                    self.connect(s, id);
                    return;
                }
                Admission::Wait => {
                    self.locked.pop_front();
                    self.legs[id.req as usize].phase = Phase::Breaker;
                    self.held.push(id.req);
                }
                Admission::Rejected => {
                    self.locked.pop_front();
                    let leg = self.free_leg(id.req);
                    let r = &self.reqs[leg.req as usize];
                    if r.gen == leg.round && !r.between && !r.done {
                        self.answer(s, leg.req, leg.attempt, REJECTED);
                    }
                    self.release_req(leg.req);
                }
            }
        }
    }

    /// The held legs ask the breaker again, in the order they came.
    fn wake(&mut self, s: &mut Schedule<Event>) {
        let held = std::mem::take(&mut self.held);
        for i in held {
            let leg = self.legs[i as usize];
            if leg.phase != Phase::Breaker {
                continue;
            }
            let id = AttemptId {
                req: i,
                gen: leg.gen,
            };
            let Some(b) = &mut self.breaker else { return };
            match b.allow(s.now()) {
                Admission::Permit(p) => {
                    self.legs[i as usize].permit = Some(p);
                    self.connect(s, id);
                }
                Admission::Wait => self.held.push(i),
                Admission::Locked => {
                    // Its timeout already runs, from when it was held.
                    let leg = &mut self.legs[i as usize];
                    (leg.phase, leg.limit) = (Phase::Locked, None);
                    self.locked.push_back(id);
                }
                Admission::Rejected => {
                    let leg = self.free_leg(i);
                    let r = &self.reqs[leg.req as usize];
                    if r.gen == leg.round && !r.between && !r.done {
                        self.answer(s, leg.req, leg.attempt, REJECTED);
                    }
                    self.release_req(leg.req);
                }
            }
        }
    }

    /// The hedger cancels attempt `attempt` of `req`'s round: a leg on the wire frees its
    /// connection now and the upstream sees it leave one hop later; a leg waiting for a
    /// connection or for the breaker is dropped unsent.
    fn cancel(&mut self, s: &mut Schedule<Event>, req: u32, attempt: u8) {
        let i = self.reqs[req as usize].legs[attempt as usize];
        if i == NONE {
            return;
        }
        let leg = self.legs[i as usize];
        let id = AttemptId {
            req: i,
            gen: leg.gen,
        };
        self.free_leg(i);
        if leg.phase == Phase::InFlight {
            let closed = s.now().saturating_add(self.one_way);
            self.departed.insert(id, closed);
            self.release(s);
        }
        self.record(s, leg.permit, &CANCELLED);
        self.release_req(req);
    }
}
