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
//! A sink must not call back into the [`super::Consumers`] that feed it (the borrow rules
//! forbid it anyway): the rules' state is mid-change while it runs.

use super::Action;

/// Takes the consumer rules' actions, in the order they must be carried out.
pub trait Sink {
    /// Carries out (or keeps) `action`.
    fn act(&mut self, action: Action);
}

/// Keeps the actions, for a driver that carries them out later.
impl Sink for Vec<Action> {
    #[inline]
    fn act(&mut self, action: Action) {
        self.push(action);
    }
}
