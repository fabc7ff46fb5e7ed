//! What can happen in a run, as small `Copy` values.
//!
//! An event names a logical request by its slot in the client's table and an attempt by
//! that slot's generation number. Generations are never reused by a slot, so an event for
//! an attempt that is already over (the timeout of an attempt that was answered, the
//! answer of one that timed out) is recognised as stale and dropped in O(1), instead of
//! being searched for and cancelled. Keeping events at 24 bytes keeps the queues in cache.

use herd_retry::consumer::Timer;
use herd_retry::{Failure, Outcome};
use herd_scenario::HoldAnswer;
use std::time::Duration;

/// One thing due at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// A backoff is over: the request's next attempt starts. Carries the generation of
    /// the attempt that failed, so a backoff of a cancelled request is recognised as stale.
    Retry(AttemptId),
    /// A consumer timer (timeout, give-up, think time) is due.
    Consumer(Timer),
    /// An attempt reaches the upstream.
    AtServer(Attempt),
    /// The upstream finishes something it started for an attempt.
    ServerDone {
        /// Which attempt.
        attempt: Attempt,
        /// What finished.
        what: Finish,
    },
    /// The upstream's answer reaches the client.
    AtClient {
        /// Which attempt.
        attempt: AttemptId,
        /// What came back.
        answer: Answer,
    },
    /// The attempt timeout fires.
    Timeout(AttemptId),
    /// A hedged round's timer fires (the guarded client's: the request's slot and round).
    Hedge(AttemptId),
    /// Timers written down are looked at again (see `crate::deferred`).
    Sweep(Swept),
}

/// Which timers a [`Event::Sweep`] is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Swept {
    /// The client's attempt timeouts.
    Attempts,
    /// The consumers' timeouts.
    Consumers,
}

/// One attempt: which request, which try.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct AttemptId {
    /// The request's slot in the client's table.
    pub req: u32,
    /// The slot's generation when the attempt started.
    pub gen: u32,
}

/// An attempt as the upstream sees it: its id, and when the upstream learns that the
/// client gave up on it (timeout + one network hop; `u64::MAX` without a timeout; a cancel
/// by a consumer brings it forward, see `Client::seen_by_upstream`). The
/// real upstream drops a request's handler when its connection closes, so an outcome due
/// at or after that instant is never sent nor counted — but admitted work runs to the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Attempt {
    /// Which attempt.
    pub id: AttemptId,
    /// When the upstream sees the client's connection close, ns.
    pub gone_at: u64,
}

/// What the upstream finishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Finish {
    /// Work on a worker (normal or stalled): the worker frees, a 200 is sent.
    Work,
    /// A delayed injected reset.
    Reset,
    /// A hold window's end.
    Hold(HoldAnswer),
    /// The rate limit's delay is over: the request goes on to the fault rules and
    /// capacity.
    Released,
}

/// An answer on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// 200.
    Ok,
    /// 503; `hinted` when it carries the configured `Retry-After`.
    Unavailable {
        /// Whether `Retry-After` is set.
        hinted: bool,
    },
    /// TCP RST.
    Reset,
    /// Rejected by the rate limit with `status` (429 or 503, or another 4xx/5xx);
    /// `hinted` when it carries the limit's `Retry-After`.
    Limited {
        /// The status.
        status: u16,
        /// Whether `Retry-After` is set.
        hinted: bool,
        /// Whether the answer's error code says "throttling" (an AWS dialect, see
        /// `herd_scenario::dialect`).
        throttling: bool,
    },
}

/// How the upstream's answers reach a client as outcomes: the hints its 503s and its rate
/// limit's rejections carry, and whether they are gRPC statuses
/// (`herd_scenario::protocol`, the same codes the real upstream sends).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Hints {
    /// The `Retry-After` (or `grpc-retry-pushback-ms`) of an injected 503.
    pub unavailable: Option<Duration>,
    /// The one of a rate limit's rejection.
    pub limited: Option<Duration>,
    /// Whether the upstream speaks gRPC.
    pub grpc: bool,
}

impl Hints {
    /// What the client makes of `answer`.
    #[inline]
    pub(crate) fn outcome(&self, answer: Answer) -> Outcome {
        use herd_scenario::GrpcStatus;
        match answer {
            Answer::Ok if self.grpc => Outcome::grpc(GrpcStatus::OK.code, None),
            Answer::Ok => Outcome::status(200),
            Answer::Unavailable { hinted } if self.grpc => Outcome::grpc(
                GrpcStatus::UNAVAILABLE.code,
                self.unavailable.filter(|_| hinted),
            ),
            Answer::Unavailable { hinted } => Outcome::Response {
                status: 503,
                retry_after: self.unavailable.filter(|_| hinted),
                throttling: false,
                grpc_status: None,
            },
            Answer::Reset => Outcome::Failed(Failure::Reset),
            Answer::Limited { hinted, .. } if self.grpc => {
                Outcome::grpc(GrpcStatus::LIMITED.code, self.limited.filter(|_| hinted))
            }
            Answer::Limited {
                status,
                hinted,
                throttling,
            } => Outcome::Response {
                status,
                retry_after: self.limited.filter(|_| hinted),
                throttling,
                grpc_status: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn events_stay_small() {
        assert!(std::mem::size_of::<super::Event>() <= 24);
    }
}
