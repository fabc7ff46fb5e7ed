//! The client on the virtual clock: logical requests, the pool's slots, attempt timeouts,
//! and the arm's retrier.
//!
//! It mirrors `herd-driver`: each logical request goes through the arm's
//! [`herd_retry::Retrier`] (`begin`, then `admit` → attempt → `decide` until done), which
//! holds the policy, the client-wide budget and the deadline; the simulator only supplies
//! virtual `now` and the request's own jitter RNG, seeded as the driver seeds it. An
//! attempt first waits (FIFO) for one of `pool_max_connections` slots; its timeout (the
//! client's, shortened to what is left of the deadline) covers that wait, the request and
//! the response; a timed-out attempt frees its slot at the timeout and counts as
//! `Failed(Timeout)`; an attempt the retrier does not admit is `Failed(Throttled)` and is
//! never sent.
//!
//! Per-request state is one fixed-size slot in a table reused through a free list
//! (retrier state, deadline, RNG, counters: under 128 bytes), so memory follows the
//! requests *in flight*, not the requests *offered*. Finished requests go straight into
//! the [`Recorder`].

use crate::deferred::Deferred;
use crate::event::{Answer, Attempt, AttemptId, Event, Hints, Swept};
use crate::network::{travel, Jitter};
use crate::schedule::{nanos, LaneId, Schedule};
use herd_retry::{Decision, Failure, Method, Nanos, Outcome, Request, Retrier};
use herd_scenario::Recorder;
use rand_pcg::Pcg64Mcg;
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

/// Where a logical request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Slot unused.
    Free,
    /// Between attempts (backing off).
    Idle,
    /// The current attempt waits for a pool slot.
    Waiting,
    /// The current attempt is on the wire.
    InFlight,
}

/// One logical request in flight.
#[derive(Clone, Debug)]
struct Req {
    intended: u64,
    /// When the current attempt times out (`u64::MAX`: never).
    deadline: u64,
    rng: Pcg64Mcg,
    /// The retrier's per-request state.
    request: Request,
    attempts: u32,
    /// Bumped at every attempt (and at a cancel) and never reset, so events of earlier
    /// attempts (even of an earlier request in the same slot) never match.
    gen: u32,
    phase: Phase,
    /// Its method, which decides whether it may be retried.
    method: Method,
    /// The consumers' id for the request ([`NO_OWNER`] without consumers).
    owner: u64,
    /// Whether it is the run's shard's (see [`Client::shard_recorder`]).
    mine: bool,
}

/// An owned request that finished, for the consumers to take.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Finished {
    /// The consumers' id for it.
    pub owner: u64,
    /// Whether it succeeded.
    pub ok: bool,
}

/// The owner of a request no consumer sent: it is recorded as a logical request.
pub(crate) const NO_OWNER: u64 = u64::MAX;

/// How the client is wired into the schedule.
pub(crate) struct Wiring {
    /// Client → upstream hop.
    pub up: LaneId,
    /// The attempt-timeout lane, if attempts time out.
    pub timeouts: Option<LaneId>,
    /// The one-way network delay (`up`'s), ns: when the upstream sees a close.
    pub one_way: u64,
    /// With `[network] jitter_ms`: the extra delays of the way there.
    pub jitter: Option<Jitter>,
    /// Where full attempt timeouts are written down before they go on `timeouts` (see
    /// `crate::deferred`), if there is a timeout lane and its delay can be put off.
    pub deferred: Option<Deferred<AttemptId>>,
}

/// One arm's client.
pub(crate) struct Client {
    retrier: Retrier,
    method: Method,
    /// How the upstream's answers become outcomes.
    hints: Hints,
    wiring: Wiring,
    timeout: Option<u64>,
    /// `timeout` as a `Duration`, what the retrier takes (converted back once, not at
    /// every attempt).
    timeout_d: Option<Duration>,
    /// Whether the strategy has no overall deadline: then an attempt's timeout is
    /// `timeout` itself (what [`Retrier::attempt_timeout`] answers, without its `Duration`
    /// made into nanoseconds again at every attempt).
    no_deadline: bool,
    one_way: u64,
    reqs: Vec<Req>,
    /// Per slot, the generation of its attempt that is waiting or in flight (0: none).
    /// A dense copy of what `reqs` says, 4 bytes a slot, so that the many stale events
    /// (the timeout of every answered attempt) are dropped without touching `reqs`, whose
    /// slots are large and, with hundreds of thousands of requests backing off, out of cache.
    armed: Vec<u32>,
    free: Vec<u32>,
    slots: usize,
    waiting: VecDeque<AttemptId>,
    recorder: Recorder,
    /// With a shard (`--shard`): the shard's own requests, recorded again here.
    shard: Option<Recorder>,
    /// Finished requests that have an owner, for the consumers to take.
    finished: Vec<Finished>,
    /// Full attempt timeouts written down, not yet on the timeout lane (see
    /// `crate::deferred`); `None` without a timeout lane, or for a timeout too short to put
    /// off.
    deferred: Option<Deferred<AttemptId>>,
    /// Cancelled attempts that were on the wire → when the upstream sees their connection
    /// close (cancel + one hop). Kept until the upstream's outcome for the attempt is due
    /// or its answer arrives; empty without cancels, so it costs nothing then.
    departed: HashMap<AttemptId, u64>,
}

impl Client {
    /// A client with `slots` pool connections, attempts timing out after `timeout`, and
    /// `retry_after` as the hint an upstream 503 carries when it carries one, and
    /// `limit_retry_after` as the hint of a rate limit's rejection.
    pub(crate) fn new(
        retrier: Retrier,
        method: Method,
        slots: usize,
        timeout: Option<Duration>,
        hints: Hints,
        mut wiring: Wiring,
    ) -> Self {
        let deferred = wiring.deferred.take();
        let no_deadline = retrier.strategy().deadline.is_none();
        Client {
            retrier,
            method,
            hints,
            timeout: timeout.map(nanos),
            timeout_d: timeout.map(|t| Duration::from_nanos(nanos(t))),
            no_deadline,
            one_way: wiring.one_way,
            wiring,
            reqs: Vec::new(),
            armed: Vec::new(),
            free: Vec::new(),
            slots,
            waiting: VecDeque::new(),
            recorder: Recorder::new(),
            shard: None,
            finished: Vec::new(),
            deferred,
            departed: HashMap::new(),
        }
    }

    /// Attempts sent so far (the retrier's count: cancelled requests' attempts included).
    pub(crate) fn attempts(&self) -> u64 {
        self.retrier.counters().attempts
    }

    /// Whether an owned request finished since the last [`Client::take_finished`].
    #[inline]
    pub(crate) fn has_finished(&self) -> bool {
        !self.finished.is_empty()
    }

    /// Takes the owned requests that finished since the last call into `into`, which must
    /// be empty: the two buffers trade places.
    #[inline]
    pub(crate) fn take_finished(&mut self, into: &mut Vec<Finished>) {
        debug_assert!(into.is_empty());
        std::mem::swap(&mut self.finished, into);
    }

    /// Hands the link's way-there jitter (and its stream) to the arm's guarded client, which
    /// sends the arm's attempts in this client's place: one stream per way of a link.
    pub(crate) fn take_jitter(&mut self) -> Option<Jitter> {
        self.wiring.jitter.take()
    }

    /// Records the shard's own requests (those begun `mine`) in a recorder of their own
    /// as well: a simulated shard runs the whole schedule and reports both.
    pub(crate) fn shard_recorder(&mut self) {
        self.shard = Some(Recorder::new());
    }

    /// The finished requests, and the shard's own among them (with a shard).
    pub(crate) fn into_recorder(self) -> (Recorder, Option<Recorder>) {
        (self.recorder, self.shard)
    }

    /// A new logical request, intended now, with its jitter RNG, its owner, its method
    /// (a trace line's; `None`: the client's, `[load] method`) and whether it is the
    /// shard's; its first attempt starts. Returns its slot.
    #[inline(always)]
    pub(crate) fn begin(
        &mut self,
        s: &mut Schedule<Event>,
        rng: Pcg64Mcg,
        owner: u64,
        method: Option<Method>,
        mine: bool,
    ) -> u32 {
        let fresh = Req {
            method: method.unwrap_or(self.method),
            intended: s.now(),
            deadline: u64::MAX,
            rng,
            request: self.retrier.begin(Nanos(s.now())),
            attempts: 0,
            gen: 0,
            phase: Phase::Idle,
            owner,
            mine,
        };
        let req = match self.free.pop() {
            Some(i) => {
                let slot = &mut self.reqs[i as usize];
                let gen = slot.gen;
                *slot = Req { gen, ..fresh };
                i
            }
            None => {
                self.reqs.push(fresh);
                self.armed.push(0);
                (self.reqs.len() - 1) as u32
            }
        };
        self.attempt(s, req);
        req
    }

    /// A backoff is over: the next attempt of `id.req`, unless it was cancelled since.
    pub(crate) fn retry(&mut self, s: &mut Schedule<Event>, id: AttemptId) {
        if self
            .reqs
            .get(id.req as usize)
            .is_some_and(|r| r.gen == id.gen)
        {
            self.attempt(s, id.req);
        }
    }

    /// Cancels request `req` (a consumer abandoned it): as dropping the request's future
    /// does in the real driver, an attempt on the wire frees its pool slot now, and its
    /// answer, its timeout and its pending backoff all become stale. Its connection closes
    /// now, so, as for a timed-out attempt, the upstream sees it gone one hop later: an
    /// outcome due from then on is neither sent nor counted (see [`Client::seen_by_upstream`]);
    /// admitted work still runs, as on the real one.
    pub(crate) fn cancel(&mut self, s: &mut Schedule<Event>, req: u32) {
        let Some(r) = self.reqs.get_mut(req as usize) else {
            return;
        };
        let phase = r.phase;
        if phase == Phase::Free {
            return;
        }
        let on_wire = AttemptId { req, gen: r.gen };
        // A concurrency cap gets back the attempt not yet decided and the retry held.
        (self.retrier).abandon(&mut r.request);
        r.gen = r.gen.wrapping_add(1).max(1);
        r.phase = Phase::Free;
        self.armed[req as usize] = 0;
        self.free.push(req);
        if phase == Phase::InFlight {
            let closed = s.now().saturating_add(self.one_way);
            self.departed.insert(on_wire, closed);
            self.release(s);
        }
    }

    /// Attempt `a` as the upstream sees it when an outcome for it is due: gone at its
    /// timeout, or earlier if it was cancelled. The upstream has no more outcomes for it
    /// after this one, so a cancel's record is dropped here.
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

    /// Starts the next attempt of `req`, if the retrier admits it. Always inlined: LLVM
    /// kept it out of line, a call with a dozen registers saved, at every logical request.
    #[inline(always)]
    pub(crate) fn attempt(&mut self, s: &mut Schedule<Event>, req: u32) {
        let now = s.now();
        let Some(r) = self.reqs.get_mut(req as usize) else {
            return;
        };
        if r.phase != Phase::Idle {
            return;
        }
        // The client's rate limiter (AWS adaptive mode) may hold the attempt, a first
        // attempt too: it asks again when told, as after a backoff.
        let wait = self.retrier.pace(Nanos(now));
        if !wait.is_zero() {
            s.after(wait, Event::Retry(AttemptId { req, gen: r.gen }));
            return;
        }
        if !self.retrier.admit(&mut r.request, Nanos(now), &mut r.rng) {
            return self.conclude(s, req, &Outcome::Failed(Failure::Throttled));
        }
        let limit = if self.no_deadline {
            self.timeout
        } else {
            self.retrier
                .attempt_timeout(&r.request, Nanos(now), self.timeout_d)
                .map(nanos)
        };
        r.gen = r.gen.wrapping_add(1).max(1); // 0 means "none" in `armed`
        r.attempts += 1;
        r.deadline = limit.map_or(u64::MAX, |l| now.saturating_add(l));
        let id = AttemptId { req, gen: r.gen };
        match (limit, self.wiring.timeouts) {
            // Nothing left of the deadline: the attempt times out before it is sent.
            (Some(0), _) => return self.conclude(s, req, &Outcome::Failed(Failure::Timeout)),
            // The full timeout: written down, on its lane only if the attempt is still
            // waiting or on the wire some time later (see `crate::deferred`).
            (Some(l), Some(lane)) if Some(l) == self.timeout => {
                let seq = s.reserve();
                let due = now.saturating_add(l);
                match &mut self.deferred {
                    Some(d) => {
                        if let Some(wake) = d.push(due, seq, id) {
                            s.at_in_order(d.lane, wake, Event::Sweep(Swept::Attempts));
                        }
                    }
                    None => s.at_in_order_reserved(lane, due, seq, Event::Timeout(id)),
                }
            }
            (Some(l), _) => s.at(now.saturating_add(l), Event::Timeout(id)),
            (None, _) => {}
        }
        self.armed[req as usize] = r.gen;
        if self.slots > 0 {
            self.slots -= 1;
            self.send(s, id);
        } else {
            r.phase = Phase::Waiting;
            self.waiting.push_back(id);
        }
    }

    /// The request of `id`, if `id` is its current attempt and it is in `phase`.
    #[inline]
    fn current(&mut self, id: AttemptId, phase: Phase) -> Option<&mut Req> {
        if self.armed.get(id.req as usize) != Some(&id.gen) {
            return None;
        }
        self.reqs
            .get_mut(id.req as usize)
            .filter(|r| r.gen == id.gen && r.phase == phase)
    }

    /// Puts attempt `id`, which holds a slot, on the wire.
    #[inline(always)]
    fn send(&mut self, s: &mut Schedule<Event>, id: AttemptId) {
        let Some(r) = self.reqs.get_mut(id.req as usize) else {
            return;
        };
        r.phase = Phase::InFlight;
        // The close follows the request on its connection: no sooner than it.
        let gone_at = r.deadline.saturating_add(self.one_way);
        let w = &mut self.wiring;
        travel(s, w.up, w.jitter.as_mut(), |extra| {
            Event::AtServer(Attempt {
                id,
                gone_at: gone_at.saturating_add(extra),
            })
        });
    }

    /// A slot frees: to the first live waiter, else back to the pool.
    #[inline]
    fn release(&mut self, s: &mut Schedule<Event>) {
        while let Some(id) = self.waiting.pop_front() {
            if self.current(id, Phase::Waiting).is_some() {
                self.send(s, id);
                return;
            }
        }
        self.slots += 1;
    }

    /// The upstream's answer to `id` arrives.
    #[inline]
    pub(crate) fn answered(&mut self, s: &mut Schedule<Event>, id: AttemptId, answer: Answer) {
        if self.current(id, Phase::InFlight).is_none() {
            // It timed out first, or was cancelled (then the upstream answered before it
            // saw the close: its record is done with).
            if !self.departed.is_empty() {
                self.departed.remove(&id);
            }
            return;
        }
        self.release(s);
        let outcome = self.hints.outcome(answer);
        self.conclude(s, id.req, &outcome);
    }

    /// A sweep of the attempt timeouts written down: those of attempts still waiting or
    /// on the wire go on the timeout lane, under their own keys; the rest (answered, timed
    /// out or cancelled since: `armed` no longer names them, and never will again) are
    /// dropped.
    pub(crate) fn sweep(&mut self, s: &mut Schedule<Event>) {
        let (Some(d), Some(lane)) = (&mut self.deferred, self.wiring.timeouts) else {
            return;
        };
        let armed = &self.armed;
        let next = d.sweep(s.now(), |p| {
            if armed.get(p.item.req as usize) == Some(&p.item.gen) {
                s.at_in_order_reserved(lane, p.due, p.seq, Event::Timeout(p.item));
            }
        });
        if let Some(wake) = next {
            s.at_in_order(d.lane, wake, Event::Sweep(Swept::Attempts));
        }
    }

    /// `id`'s attempt timeout fires.
    pub(crate) fn timed_out(&mut self, s: &mut Schedule<Event>, id: AttemptId) {
        if self.current(id, Phase::InFlight).is_some() {
            self.release(s);
        } else if self.current(id, Phase::Waiting).is_none() {
            return; // answered already
        }
        self.conclude(s, id.req, &Outcome::Failed(Failure::Timeout));
    }

    /// Asks the retrier what follows `outcome`.
    #[inline]
    fn conclude(&mut self, s: &mut Schedule<Event>, req: u32, outcome: &Outcome) {
        let now = s.now();
        let Some(r) = self.reqs.get_mut(req as usize) else {
            return;
        };
        r.phase = Phase::Idle;
        self.armed[req as usize] = 0;
        match self
            .retrier
            .decide(&mut r.request, r.method, outcome, Nanos(now), &mut r.rng)
        {
            Decision::Retry { after } if after.is_zero() => self.attempt(s, req),
            Decision::Retry { after } => {
                s.after(after, Event::Retry(AttemptId { req, gen: r.gen }))
            }
            decision if r.owner != NO_OWNER => {
                self.finished.push(Finished {
                    owner: r.owner,
                    ok: decision == Decision::Success,
                });
                r.phase = Phase::Free;
                self.free.push(req);
            }
            decision => {
                let ok = decision == Decision::Success;
                (self.recorder).record_nanos(r.intended, now - r.intended, ok, r.attempts);
                if let (Some(shard), true) = (&mut self.shard, r.mine) {
                    shard.record_nanos(r.intended, now - r.intended, ok, r.attempts);
                }
                r.phase = Phase::Free;
                self.free.push(req);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn request_slots_stay_two_cache_lines() {
        assert!(std::mem::size_of::<super::Req>() <= 128);
    }
}
