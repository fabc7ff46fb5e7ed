//! A request to stop a run early, shared by everything the run started.
//!
//! `herd bench` gets one from its signal handler; each arm's driver loop, the upstream's
//! shutdown and the external-arm supervisor all need to see the same request, at different
//! depths and more than once, so it is a cheap cloneable handle over a `watch` channel
//! rather than a one-shot `impl Future` (mini-redis' `shutdown` is the same idea: one
//! broadcast, many listeners). Once fired it stays fired.

use tokio::sync::watch;

/// The listening side: clone it into every task that must stop.
#[derive(Clone, Debug)]
pub struct Stop(watch::Receiver<bool>);

/// The firing side, kept by whoever decides (the signal handler).
#[derive(Debug)]
pub struct StopTrigger(watch::Sender<bool>);

impl Stop {
    /// A trigger and the stop it fires.
    pub fn new() -> (StopTrigger, Stop) {
        let (tx, rx) = watch::channel(false);
        (StopTrigger(tx), Stop(rx))
    }

    /// A stop that never fires (tests, library callers without signals).
    pub fn never() -> Stop {
        Stop::new().1
    }

    /// Whether the stop has fired.
    pub fn is_requested(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once the stop has fired (at once if it already has); never resolves if the
    /// trigger is dropped without firing. Cancel safe.
    pub async fn requested(&self) {
        let mut rx = self.0.clone();
        if rx.wait_for(|&fired| fired).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl StopTrigger {
    /// Fires the stop; every [`Stop::requested`] resolves.
    pub fn fire(&self) {
        self.0.send_replace(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn fires_every_listener_and_stays_fired() {
        let (trigger, stop) = Stop::new();
        let other = stop.clone();
        assert!(!stop.is_requested());
        let waiting = tokio::spawn(async move { other.requested().await });
        trigger.fire();
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("fires")
            .expect("task");
        assert!(stop.is_requested());
        stop.requested().await;
    }

    #[tokio::test(start_paused = true)]
    async fn never_never_fires() {
        let stop = Stop::never();
        let r = tokio::time::timeout(Duration::from_secs(3600), stop.requested()).await;
        assert!(r.is_err());
    }
}
