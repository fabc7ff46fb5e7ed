//! Where the consumer rules' [`Action`]s go: each is handed to the driver's [`Sink`] the
//! moment the rules take it, in order.
//!
//! Why a sink and not a returned list: the simulator carries out millions of actions a
//! second, and a `Vec<Action>` that the rules fill and the driver then walks (matching
//! each action a second time) was a layer of work per event for nothing. With a sink the
//! driver's handling is called, and inlined, where the rules decide. A driver that would
//! rather have the list (the real one, on tokio, carries out its actions between turns of
//! its loop) passes a `Vec<Action>`, which is a sink that keeps them.
//!
//! An `Arm` or a `Done` reaches the sink through [`Sink::arm`] and [`Sink::done`], which
//! hand it to [`Sink::act`] unless the sink takes them apart itself (the simulator files
//! a timer under its instant without matching the action again).
//!
//! A `Send` goes through [`Sink::send`], which may return a tag (the simulator's client
//! slot) that the rules keep beside the request and hand back with its `Cancel`
//! ([`Sink::cancel`]): the rules already keep a table of live requests, so a driver needs
//! no second one to find what to cancel.
//!
//! A sink must not call back into the [`super::Consumers`] that feed it (the borrow rules
//! forbid it anyway): the rules' state is mid-change while it runs.

use super::{Action, Timer};
use crate::nanos::Nanos;

/// Takes the consumer rules' actions, in the order they must be carried out.
pub trait Sink {
    /// Carries out (or keeps) `action`.
    fn act(&mut self, action: Action);

    /// [`Action::Send`]. Returns a tag that the rules keep with the request and hand back
    /// to [`Sink::cancel`] if they cancel it (the simulator returns the request's client
    /// slot, and keeps no map of its own to find it); `0` by default.
    #[inline]
    fn send(&mut self, unit: u64, request: u64) -> u32 {
        self.act(Action::Send { unit, request });
        0
    }

    /// [`Action::Cancel`] of a request whose [`Sink::send`] returned `tag`.
    #[inline]
    fn cancel(&mut self, request: u64, tag: u32) {
        let _ = tag;
        self.act(Action::Cancel { request });
    }

    /// [`Action::Arm`].
    #[inline]
    fn arm(&mut self, at: Nanos, timer: Timer) {
        self.act(Action::Arm { at, timer });
    }

    /// [`Action::Done`].
    #[inline]
    fn done(&mut self, unit: u64, consumer: u32, arrived: Nanos, ok: bool) {
        self.act(Action::Done {
            unit,
            consumer,
            arrived,
            ok,
        });
    }
}

/// Keeps the actions, for a driver that carries them out later.
impl Sink for Vec<Action> {
    #[inline]
    fn act(&mut self, action: Action) {
        self.push(action);
    }
}
