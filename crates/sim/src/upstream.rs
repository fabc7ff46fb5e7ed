//! The upstream on the virtual clock: counts, fates, workers, the FIFO and shedding.
//!
//! It mirrors `herd-upstream` (`handler.rs`, `capacity.rs`) step by
//! step, and decides nothing itself: every fate comes from [`herd_scenario::Upstream::fate`]
//! (its [`herd_scenario::fault::FateRules`], built once),
//! drawn in arrival order from one RNG seeded with the scenario seed, exactly as the real
//! upstream draws them.
//!
//! - `Received` is counted when an attempt arrives, before anything is decided.
//! - A rate limit ([`herd_scenario::rate_limit::Limiter`], the one copy of the rule) comes
//!   first: a rejection is answered (and counted `Limited`) at once and draws no fate; a
//!   delayed request waits without a worker, and goes on to its fate when the delay is
//!   over, unless its client left meanwhile (the real upstream's handler is dropped
//!   then, as nginx finalizes a delayed request whose client closed).
//! - Injected 503s are answered (and counted) at once; injected resets after `reset_after`;
//!   held requests at their window's end. None of them uses a worker.
//! - Work goes through [`herd_scenario::capacity::Capacity`], the one copy of the workers
//!   and FIFO rule shared with the real upstream: a free worker, or a place in line, or
//!   shed (counted `Shed`, answered RST or 503 without `Retry-After`).
//! - When the client gives up on an attempt (its timeout, or a consumer's cancel), the
//!   real upstream's handler is dropped as soon as it sees the connection close: an
//!   outcome due from then on is neither sent nor counted. Admitted work still runs to the end on its worker, and queued work keeps its
//!   place and is served (the capacity module says why), because that wasted work is the
//!   load herd measures.
//! - A hop of a call graph ([`Server::forwarding`]) does the same, except that work done
//!   on a worker is not answered yet: it is handed on ([`Server::take_forwarded`]) to the
//!   hop's client, still holding its worker, and answered when that call ends
//!   ([`Server::reply`]): 200 if it succeeded, 503 if the hop's client gave up.

use crate::event::{Answer, Attempt, Event, Finish};
use crate::network::{travel, Jitter};
use crate::schedule::{nanos, LaneId, Schedule};
use herd_scenario::capacity::{Admitted, Capacity};
use herd_scenario::fault::FateRules;
use herd_scenario::rate_limit::{Limiter, Verdict};
use herd_scenario::{Fate, HoldAnswer, ServerCounts, ServerEvent, Shed};
use rand_pcg::Pcg64Mcg;

/// Work waiting for a worker.
#[derive(Clone, Copy, Debug)]
struct Job {
    attempt: Attempt,
    service: u64,
}

/// One arm's upstream.
pub(crate) struct Server<'a> {
    config: &'a herd_scenario::Upstream,
    /// `config`'s fault rules, with the service-time distribution built once.
    rules: FateRules<'a>,
    rng: Pcg64Mcg,
    /// Workers and the line waiting for them.
    capacity: Capacity<Job>,
    /// The rate limit in front of everything, if the scenario has one.
    limiter: Option<Limiter>,
    counts: ServerCounts,
    /// The lane answers travel back to the client on.
    down: LaneId,
    /// With `[network] jitter_ms`: the extra delays of the way back.
    jitter: Option<Jitter>,
    /// Whether work is handed on to the next hop instead of answered (a hop of a call
    /// graph, not the bottom).
    forwards: bool,
    /// Work handed on since the last [`Server::take_forwarded`], each holding its worker.
    forwarded: Vec<Attempt>,
}

impl<'a> Server<'a> {
    /// A fresh upstream drawing its fates from `faults` (the real one's stream is
    /// [`herd_scenario::Seeds::faults`]); answers go out on `down`.
    pub(crate) fn new(config: &'a herd_scenario::Upstream, faults: Pcg64Mcg, down: LaneId) -> Self {
        Server {
            config,
            rules: config.rules(),
            rng: faults,
            capacity: Capacity::new(config.workers, config.queue_limit),
            limiter: config.rate_limit.as_ref().map(Limiter::new),
            counts: ServerCounts::new(),
            down,
            jitter: None,
            forwards: false,
            forwarded: Vec::new(),
        }
    }

    /// A server whose answers take `jitter` on their way back.
    pub(crate) fn jittered(mut self, jitter: Option<Jitter>) -> Self {
        self.jitter = jitter;
        self
    }

    /// The server of a hop that calls a next one: its finished work is handed on (see
    /// [`Server::take_forwarded`]) instead of answered.
    pub(crate) fn forwarding(mut self) -> Self {
        self.forwards = true;
        self
    }

    /// Whether work was handed on since the last [`Server::take_forwarded`].
    #[inline]
    pub(crate) fn has_forwarded(&self) -> bool {
        !self.forwarded.is_empty()
    }

    /// Takes the work handed on since the last call into `into`, which must be empty: the
    /// two buffers trade places.
    pub(crate) fn take_forwarded(&mut self, into: &mut Vec<Attempt>) {
        debug_assert!(into.is_empty());
        std::mem::swap(&mut self.forwarded, into);
    }

    /// The call made for forwarded attempt `a` ended now, `ok` or not: the hop answers
    /// (200, or 503 without `Retry-After`: the hop's client gave up) unless its client
    /// is gone, and frees the worker `a` held.
    pub(crate) fn reply(&mut self, s: &mut Schedule<Event>, a: Attempt, ok: bool) {
        let now = s.now();
        if now < a.gone_at {
            if ok {
                self.count(now, ServerEvent::Ok);
                self.answer(s, a, Answer::Ok);
            } else {
                self.count(now, ServerEvent::Error503);
                self.answer(s, a, Answer::Unavailable { hinted: false });
            }
        }
        if let Some(next) = self.capacity.finish() {
            self.start(s, next);
        }
    }

    /// What was counted.
    pub(crate) fn into_counts(self) -> ServerCounts {
        self.counts
    }

    /// Counts `ev` at `t` ns.
    #[inline]
    fn count(&mut self, t: u64, ev: ServerEvent) {
        self.counts.record_nanos(t, ev);
    }

    #[inline]
    fn answer(&mut self, s: &mut Schedule<Event>, a: Attempt, answer: Answer) {
        travel(s, self.down, self.jitter.as_mut(), |_| Event::AtClient {
            attempt: a.id,
            answer,
        });
    }

    fn hinted(&self) -> bool {
        self.config.retry_after_s > 0
    }

    /// An attempt arrives now. Hinted inline: one call site, at one event of every
    /// attempt.
    #[inline]
    pub(crate) fn arrive(&mut self, s: &mut Schedule<Event>, a: Attempt) {
        let now = s.now();
        self.count(now, ServerEvent::Received);
        if let Some(limiter) = &mut self.limiter {
            match limiter.check(0, now) {
                Verdict::Admit => {}
                Verdict::Delay(d) => {
                    let what = Finish::Released;
                    s.at(
                        now.saturating_add(d),
                        Event::ServerDone { attempt: a, what },
                    );
                    return;
                }
                Verdict::Reject => return self.reject(s, a, now),
            }
        }
        self.reach(s, a, now);
    }

    /// A request the rate limit rejected: answered its status at once.
    #[cold]
    fn reject(&mut self, s: &mut Schedule<Event>, a: Attempt, now: u64) {
        self.count(now, ServerEvent::Limited);
        if let Some(r) = &self.config.rate_limit {
            let dialect = self.config.dialect;
            let (status, hinted) = (dialect.limited_status(r.status), r.retry_after_s > 0);
            let throttling = dialect.throttles();
            self.answer(
                s,
                a,
                Answer::Limited {
                    status,
                    hinted,
                    throttling,
                },
            );
        }
    }

    /// An attempt past the rate limit (if any) meets the fault rules and capacity now.
    #[inline]
    fn reach(&mut self, s: &mut Schedule<Event>, a: Attempt, now: u64) {
        match self.rules.fate_nanos(now, &mut self.rng) {
            Fate::Error503 => {
                self.count(now, ServerEvent::Error503);
                let hinted = self.hinted();
                self.answer(s, a, Answer::Unavailable { hinted });
            }
            Fate::Reset { after } if after.is_zero() => self.finish(s, a, Finish::Reset),
            Fate::Reset { after } => s.after(
                after,
                Event::ServerDone {
                    attempt: a,
                    what: Finish::Reset,
                },
            ),
            Fate::Hold { until, answer } => s.at(
                nanos(until),
                Event::ServerDone {
                    attempt: a,
                    what: Finish::Hold(answer),
                },
            ),
            Fate::Work { service, .. } => {
                let job = Job {
                    attempt: a,
                    service,
                };
                match self.capacity.admit(job) {
                    Admitted::Now(job) => self.start(s, job),
                    Admitted::Queued => {}
                    Admitted::Shed(_) => {
                        self.count(now, ServerEvent::Shed);
                        let answer = match self.config.shed {
                            Shed::Reset => Answer::Reset,
                            Shed::Status503 => Answer::Unavailable { hinted: false },
                        };
                        self.answer(s, a, answer);
                    }
                }
            }
        }
    }

    #[inline]
    fn start(&mut self, s: &mut Schedule<Event>, job: Job) {
        s.at(
            s.now().saturating_add(job.service),
            Event::ServerDone {
                attempt: job.attempt,
                what: Finish::Work,
            },
        );
    }

    /// Something started for `a` finishes now.
    #[inline(always)]
    pub(crate) fn finish(&mut self, s: &mut Schedule<Event>, a: Attempt, what: Finish) {
        let now = s.now();
        let listening = now < a.gone_at;
        match what {
            Finish::Work if self.forwards => self.forwarded.push(a),
            Finish::Work => {
                if listening {
                    self.count(now, ServerEvent::Ok);
                    self.answer(s, a, Answer::Ok);
                }
                if let Some(next) = self.capacity.finish() {
                    self.start(s, next);
                }
            }
            Finish::Reset | Finish::Hold(HoldAnswer::Reset) if listening => {
                self.count(now, ServerEvent::Reset);
                self.answer(s, a, Answer::Reset);
            }
            Finish::Hold(HoldAnswer::Status503) if listening => {
                self.count(now, ServerEvent::Error503);
                let hinted = self.hinted();
                self.answer(s, a, Answer::Unavailable { hinted });
            }
            Finish::Released if listening => self.reach(s, a, now),
            Finish::Reset | Finish::Hold(_) | Finish::Released => {}
        }
    }
}
