//! One logical request of a replica arm with `hedge` or `breaker`, on the socket: the
//! simulator's guarded client (`herd_sim`'s `guarded` module) carried out on tokio, with
//! the same herd-retry objects in the same order.
//!
//! ## The layers, outermost first
//!
//! 1. **Retries.** The arm's [`Retrier`] as in [`super::logical`] (`begin`, then `admit` →
//!    round → `decide`). A *round* is what the retry policy calls an attempt: with a
//!    hedge, one hedged request, whose outcome is the winner's (or the last handled
//!    failure).
//! 2. **Hedging.** Per round, the [`herd_retry::hedge::Hedger`]'s actions are carried out
//!    as they come: `Send` starts a leg ([`super::leg`]), `Arm` sets the round's timer,
//!    `Cancel` drops a leg (its connection closes; the upstream counted it when it
//!    arrived), `Done` ends the round. A leg that is not cancelled (Finagle) runs on
//!    beside the retries that follow; its late answer goes to the hedger, which counts it
//!    wasted, and its result to the breaker. The request is recorded when the retrier
//!    decides; its worker waits for such legs before it takes the next arrival.
//! 3. **The breaker**, asked by every leg before it takes a connection (retry → breaker →
//!    call). A rejection is a client-side fast failure ([`REJECTED`]): no connection, no
//!    server request. Legs that fail before they are sent (rejected, or with no time
//!    left) answer after the batch of actions that started them, in order, as in the
//!    simulator. A leg's result goes back to the breaker when it ends, before the hedger
//!    hears of it; a cancelled leg's as [`herd_retry::breaker::CANCELLED`].
//!
//! The hedger and the breaker take `now` as nanoseconds since the run's t = 0, the
//! simulator's clock; both are client-wide ([`super::guard::Guard`]).

use super::guard::Guard;
use super::leg::{leg, Ctx, Leg, LegEnd, Start};
use super::{Call, HttpClient};
use herd_retry::breaker::{Admission, REJECTED};
use herd_retry::hedge::{Action, Hedge, MAX_ATTEMPTS};
use herd_retry::{Decision, Failure, Nanos, Outcome, Request, Retrier};
use rand_pcg::Pcg64Mcg;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// What [`guarded`] reports of one logical request.
pub(super) struct Ended {
    pub ok: bool,
    pub attempts: u32,
    /// When the retrier decided (the request's latency ends here).
    pub at: Instant,
    /// When its first leg got a connection.
    pub sent: Option<Instant>,
}

/// The arm's retrier, shared by its requests and lanes.
type Shared = Mutex<Retrier>;

fn lock(r: &Shared) -> MutexGuard<'_, Retrier> {
    r.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Logical request `id`, `call`, through the arm's retrier, hedger and breaker.
pub(super) async fn guarded(
    client: &HttpClient,
    retrier: &Shared,
    guard: &Guard,
    epoch: Instant,
    call: &Call,
    id: u64,
    mut rng: Pcg64Mcg,
) -> Ended {
    let ctx = Ctx {
        client,
        guard,
        call,
        id,
        epoch,
        passed: AtomicU32::new(0),
        first: OnceLock::new(),
    };
    let now = || Nanos(ctx.now());
    let mut req = lock(retrier).begin(now());
    let mut left = Leftovers {
        ctx: &ctx,
        legs: Vec::new(),
    };
    let mut first = true;
    let ok = loop {
        let admitted = lock(retrier).admit(&mut req, now(), &mut rng);
        let outcome = if admitted {
            let round = Round::new(&ctx, retrier, &req, first);
            first = false;
            let (outcome, rest) = left.alongside(round.run()).await;
            left.legs.extend(rest);
            outcome
        } else {
            Outcome::Failed(Failure::Throttled)
        };
        let decision = lock(retrier).decide(&mut req, call.method, &outcome, now(), &mut rng);
        match decision {
            Decision::Success => break true,
            Decision::Retry { after } => left.alongside(super::logical::back_off(after)).await,
            Decision::GiveUp(_) => break false,
        }
    };
    let at = Instant::now();
    poll_fn(|cx| {
        left.poll(cx);
        if left.legs.is_empty() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    Ended {
        ok,
        attempts: ctx.passed.load(Ordering::Relaxed),
        at,
        sent: ctx.first.get().copied(),
    }
}

/// Legs of rounds already done that were not cancelled, each with its round's hedge.
struct Leftovers<'a> {
    ctx: &'a Ctx<'a>,
    legs: Vec<(Hedge, Leg<'a>)>,
}

impl<'a> Leftovers<'a> {
    /// Polls every leg; an ended one's result goes to the breaker, then to the hedger,
    /// which counts it wasted.
    fn poll(&mut self, cx: &mut Context<'_>) {
        let ctx = self.ctx;
        self.legs.retain_mut(|(hedge, leg)| {
            let Poll::Ready(end) = leg.as_mut().poll(cx) else {
                return true;
            };
            let now = ctx.now();
            ctx.guard.record(end.permit, now, &end.outcome);
            if let Some(mut h) = ctx.guard.hedger() {
                let mut acts = Vec::new();
                h.on_response(hedge, end.attempt, &end.outcome, None, now, &mut acts);
            }
            false
        });
    }

    /// `f`, with the leftover legs polled beside it.
    async fn alongside<F: Future>(&mut self, f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        poll_fn(|cx| {
            self.poll(cx);
            f.as_mut().poll(cx)
        })
        .await
    }
}

/// One round: the hedger's legs (or, without a hedger, one leg) until it is done.
struct Round<'a, 'r> {
    ctx: &'a Ctx<'a>,
    retrier: &'r Shared,
    request: &'r Request,
    legs: [Option<Leg<'a>>; MAX_ATTEMPTS as usize],
    hedge: Option<Hedge>,
    timer: Pin<Box<Sleep>>,
    armed: bool,
    done: Option<Outcome>,
    first: bool,
}

impl<'a, 'r> Round<'a, 'r> {
    fn new(ctx: &'a Ctx<'a>, retrier: &'r Shared, request: &'r Request, first: bool) -> Self {
        Round {
            ctx,
            retrier,
            request,
            legs: Default::default(),
            hedge: None,
            timer: Box::pin(tokio::time::sleep_until(Instant::now())),
            armed: false,
            done: None,
            first,
        }
    }

    /// Runs the round to its outcome; returns the legs still out (not cancelled).
    async fn run(mut self) -> (Outcome, Vec<(Hedge, Leg<'a>)>) {
        let now = self.ctx.now();
        let started = self.ctx.guard.hedger().map(|mut h| {
            let mut acts = Vec::new();
            (h.begin(now, &mut acts), acts)
        });
        match started {
            Some((hedge, acts)) => {
                self.hedge = Some(hedge);
                self.carry_out(&acts, None);
            }
            None => {
                if let Some(o) = self.launch(0) {
                    self.answer(0, o);
                }
            }
        }
        while self.done.is_none() {
            match poll_fn(|cx| self.next(cx)).await {
                Next::Leg(end) => {
                    let now = self.ctx.now();
                    self.ctx.guard.record(end.permit, now, &end.outcome);
                    self.answer(end.attempt, end.outcome);
                }
                Next::Timer => {
                    self.armed = false;
                    let now = self.ctx.now();
                    let acts = match (self.ctx.guard.hedger(), &mut self.hedge) {
                        (Some(mut h), Some(hedge)) => {
                            let mut acts = Vec::new();
                            h.on_timer(hedge, now, &mut acts);
                            acts
                        }
                        _ => Vec::new(),
                    };
                    self.carry_out(&acts, None);
                }
                Next::Nothing => self.done = Some(Outcome::Failed(Failure::Other)),
            }
        }
        let outcome = self.done.take().unwrap_or(Outcome::Failed(Failure::Other));
        let hedge = self.hedge;
        let rest = (self.legs.iter_mut())
            .filter_map(|l| l.take())
            .filter_map(|l| hedge.map(|h| (h, l)))
            .collect();
        (outcome, rest)
    }

    /// The next leg to end, or the timer.
    fn next(&mut self, cx: &mut Context<'_>) -> Poll<Next> {
        let mut any = false;
        for slot in &mut self.legs {
            if let Some(l) = slot {
                any = true;
                if let Poll::Ready(end) = l.as_mut().poll(cx) {
                    *slot = None;
                    return Poll::Ready(Next::Leg(end));
                }
            }
        }
        if self.armed {
            if self.timer.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Next::Timer);
            }
        } else if !any {
            // No leg out, no timer: the hedger has nothing left to say (it always ends a
            // round before this; kept so a round can never wait for ever).
            return Poll::Ready(Next::Nothing);
        }
        Poll::Pending
    }

    /// Carries out the hedger's `acts`; `outcome` is the answer that produced them (what a
    /// `Done` finishes with). Legs that fail unsent answer after the batch, in order.
    fn carry_out(&mut self, acts: &[Action], outcome: Option<Outcome>) {
        let mut failed = Vec::new();
        for &a in acts {
            match a {
                Action::Send { attempt } => {
                    if let Some(o) = self.launch(attempt) {
                        failed.push((attempt, o));
                    }
                }
                Action::Arm { at } => {
                    let at = self.ctx.epoch + Duration::from_nanos(at);
                    self.timer.as_mut().reset(at);
                    self.armed = true;
                }
                // Dropped now: its ticket hands the breaker the call's end.
                Action::Cancel { attempt } => self.legs[attempt as usize] = None,
                Action::Done { .. } => {
                    self.done = Some(outcome.unwrap_or(Outcome::Failed(Failure::Other)));
                }
            }
        }
        for (attempt, o) in failed {
            if self.done.is_none() {
                self.answer(attempt, o);
            }
        }
    }

    /// Attempt `attempt` answered `outcome` (or failed unsent).
    fn answer(&mut self, attempt: u8, outcome: Outcome) {
        let now = self.ctx.now();
        let acts = match (self.ctx.guard.hedger(), &mut self.hedge) {
            (Some(mut h), Some(hedge)) => {
                let mut acts = Vec::new();
                h.on_response(hedge, attempt, &outcome, None, now, &mut acts);
                acts
            }
            _ => {
                self.done = Some(outcome);
                return;
            }
        };
        self.carry_out(&acts, Some(outcome));
    }

    /// Starts attempt `attempt`: the breaker first, then a connection. Returns the outcome
    /// of a leg that failed before it was sent.
    fn launch(&mut self, attempt: u8) -> Option<Outcome> {
        let now = self.ctx.now();
        let limit =
            lock(self.retrier).attempt_timeout(self.request, Nanos(now), self.ctx.client.timeout());
        if limit.is_some_and(|l| l.is_zero()) {
            return Some(Outcome::Failed(Failure::Timeout));
        }
        let start = match self.ctx.guard.allow(now) {
            None => Start::Go(None),
            Some(Admission::Permit(p)) => Start::Go(Some(p)),
            Some(Admission::Rejected) => return Some(REJECTED),
            Some(Admission::Wait) => Start::Held,
            Some(Admission::Locked) => Start::Locked,
        };
        let first = self.first && attempt == 0;
        self.legs[attempt as usize] = Some(leg(self.ctx, attempt, start, limit, first));
        None
    }
}

/// What woke a round.
enum Next {
    Leg(LegEnd),
    Timer,
    Nothing,
}
