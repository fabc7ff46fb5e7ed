//! A request to stop a run early, shared by everything the run started.
//!
//! `herd bench` gets one from its signal handler; each arm's driver loop, the upstream's
//! shutdown and the external-arm supervisor all need to see the same request, at different
//! depths and more than once, so it is tokio-util's [`CancellationToken`]: cloneable,
//! fired once with [`CancellationToken::cancel`], awaited with
//! [`CancellationToken::cancelled`] (cancel safe), and able to make child tokens, so a run
//! can stop itself (out of file descriptors) without firing its caller's stop. Once fired
//! it stays fired. A [`CancellationToken::new`] that nobody cancels never fires.

pub use tokio_util::sync::CancellationToken;

/// The stop of a run: a [`CancellationToken`].
pub type Stop = CancellationToken;
