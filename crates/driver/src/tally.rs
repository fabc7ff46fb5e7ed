//! Where an arm's finished logical requests are counted: its [`Recorder`] and [`Lag`],
//! behind one lock the requests' tasks share.
//!
//! A channel into a counting task cost a send and a wake-up per request, and on a
//! multi-threaded runtime a wake-up may rouse a parked worker (a futex call and a context
//! switch): at tens of thousands of requests a second that was a visible part of the
//! driver's own CPU. A lock held for two histogram writes is uncontended nearly always and
//! costs neither.

use super::{Lag, Progress};
use herd_scenario::{LogicalRecord, Recorder};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A finished logical request, and how late it left (if the driver saw it leave).
pub(super) struct Finished {
    pub record: LogicalRecord,
    pub lag: Option<Duration>,
}

/// One arm's counts so far; clones share them.
#[derive(Clone)]
pub(super) struct Tally(Arc<Inner>);

struct Inner {
    arm: usize,
    progress: Option<Progress>,
    counts: Mutex<(Recorder, Lag)>,
}

impl Tally {
    /// Nothing counted yet for arm `arm`; `progress` hears of each request.
    pub fn new(arm: usize, progress: Option<Progress>) -> Tally {
        Tally(Arc::new(Inner {
            arm,
            progress,
            counts: Mutex::new((Recorder::new(), Lag::new())),
        }))
    }

    /// Counts one finished request.
    pub fn add(&self, f: &Finished) {
        let (done, failed) = {
            let mut c = self
                .0
                .counts
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            c.0.record(&f.record);
            if let Some(l) = f.lag {
                c.1.record(l);
            }
            (c.0.len(), c.0.failed())
        };
        if let Some(p) = &self.0.progress {
            p.done(self.0.arm, done, failed);
        }
    }

    /// What was counted (requests still holding a clone count nothing more here).
    pub fn take(&self) -> (Recorder, Lag) {
        let mut c = self
            .0
            .counts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        std::mem::replace(&mut *c, (Recorder::new(), Lag::new()))
    }
}
