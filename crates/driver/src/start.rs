//! One start instant for every shard of a run (`--start-at`), kept after each arm is ready.
//!
//! A shard's schedule is its interleaved part of one schedule, so the shards must begin it
//! at one instant. Waiting for that instant before preparing is not enough: preparing
//! (building the client, opening `[client] preconnect` connections, starting an adapter)
//! takes each shard a different time, and on a busy listener a dropped SYN alone costs a
//! second (the kernel's first retransmission). Four shards on one machine measured two of
//! them a second behind the other two that way. So each arm prepares first and then waits
//! for the common instant; only a shard still preparing at that instant starts late, and
//! [`CommonStart::missed_by`] says by how much.

use crate::Stop;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The wall-clock instant every shard's schedule begins at, shared by a run's arms.
#[derive(Clone, Debug)]
pub struct CommonStart {
    at: SystemTime,
    /// The most any arm began after `at`, in microseconds.
    late_us: Arc<AtomicU64>,
}

impl CommonStart {
    /// Schedules begin at `at`.
    pub fn new(at: SystemTime) -> CommonStart {
        CommonStart {
            at,
            late_us: Arc::new(AtomicU64::new(0)),
        }
    }

    /// How long after the common instant the latest arm began (it was still preparing),
    /// or `None` when every arm was ready in time.
    pub fn missed_by(&self) -> Option<Duration> {
        match self.late_us.load(Ordering::Relaxed) {
            0 => None,
            us => Some(Duration::from_micros(us)),
        }
    }

    /// Waits for the common instant; `false` when `stop` fires first. An instant already
    /// past returns at once and is recorded for [`CommonStart::missed_by`].
    pub(crate) async fn wait(&self, stop: &Stop) -> bool {
        match self.at.duration_since(SystemTime::now()) {
            Ok(wait) => tokio::select! {
                biased;
                () = stop.cancelled() => false,
                () = tokio::time::sleep(wait) => true,
            },
            Err(late) => {
                let us = u64::try_from(late.duration().as_micros()).unwrap_or(u64::MAX);
                self.late_us.fetch_max(us.max(1), Ordering::Relaxed);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waits_for_a_future_instant_and_records_a_past_one() {
        let stop = Stop::new();
        let soon = CommonStart::new(SystemTime::now() + Duration::from_millis(30));
        let before = std::time::Instant::now();
        assert!(soon.wait(&stop).await);
        assert!(before.elapsed() >= Duration::from_millis(29));
        assert_eq!(soon.missed_by(), None);

        let past = CommonStart::new(SystemTime::now() - Duration::from_secs(2));
        assert!(past.wait(&stop).await);
        let missed = past.missed_by().expect("late");
        assert!(missed >= Duration::from_secs(2), "{missed:?}");
    }

    #[tokio::test]
    async fn a_stop_ends_the_wait() {
        let stop = Stop::new();
        stop.cancel();
        let later = CommonStart::new(SystemTime::now() + Duration::from_secs(3600));
        assert!(!later.wait(&stop).await);
    }
}
