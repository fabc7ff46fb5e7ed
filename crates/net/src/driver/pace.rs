//! Arrivals on time, on a thread of their own, within a bounded backlog.
//!
//! tokio's timer wheel has a 1 ms resolution, so an arrival slept for on it leaves up to a
//! millisecond late, and every latency herd reports carried that error. A pacing thread
//! does better: it sleeps on the OS timer (which wakes within the kernel's timer slack,
//! ~50 µs) and hands the arrival to the runtime on a channel [`HANDOFF`] early; the
//! request's task then yields on the runtime until its instant ([`on_time`]). Handing over
//! early keeps a runtime thread awake through the instant: waking a parked one costs tens
//! of microseconds more, which at a low rate would land in every latency. That short spin
//! only follows a long sleep: when arrivals come closer together than [`HANDOFF`] (several
//! thousand a second and up), the thread sleeps each gap and hands over when due, so a
//! fast schedule does not burn a core the target and the client need; arrivals then leave
//! within the timer slack, still far below a millisecond.
//!
//! The same thread enforces the [`Backlog`]: an arrival that finds it full is dropped
//! there and counted, unsent, so a target that cannot keep up never grows the driver's
//! memory without limit. Latency still runs from each request's intended instant, so a
//! driver that falls behind shows as latency and lag, not as a thinner load.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How long before its instant the pacing thread hands a far-apart arrival over.
pub(super) const HANDOFF: Duration = Duration::from_micros(300);

/// The longest single sleep, so the thread notices soon that its arm has stopped.
const NAP: Duration = Duration::from_millis(20);

/// The cap on one arm's logical requests in flight or waiting, and what it turned away.
#[derive(Debug)]
pub(super) struct Backlog {
    live: AtomicUsize,
    cap: usize,
    dropped: AtomicU64,
}

impl Backlog {
    /// At most `cap` logical requests at once.
    pub fn new(cap: usize) -> Arc<Self> {
        Arc::new(Backlog {
            live: AtomicUsize::new(0),
            cap: cap.max(1),
            dropped: AtomicU64::new(0),
        })
    }

    /// A place for one more request, or `None` (and one more drop) when full.
    pub fn admit(self: &Arc<Self>) -> Option<Place> {
        let taken = self
            .live
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.cap).then_some(n + 1)
            })
            .is_ok();
        if taken {
            Some(Place(self.clone()))
        } else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            None
        }
    }

    /// Arrivals dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// One request's place in the [`Backlog`], given back when dropped (the request finished
/// or was aborted).
#[derive(Debug)]
pub(super) struct Place(Arc<Backlog>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::AcqRel);
    }
}

/// An arrival that is due now.
#[derive(Debug)]
pub(super) struct Due<T> {
    /// Its index in the schedule (the logical request's id).
    pub index: u64,
    /// Its intended instant, from the epoch.
    pub at: Duration,
    /// What the schedule said about it besides its instant (a request's method and path).
    pub item: T,
    /// Its place in the backlog.
    pub place: Place,
}

/// Starts the pacing thread for `schedule` (instants from `epoch`). Each arrival comes out
/// of the returned channel at its instant, or is dropped when `backlog` is full. The
/// channel closes after the last arrival; dropping the receiver ends the thread within
/// [`NAP`].
pub(super) fn start<T: Send + 'static>(
    epoch: Instant,
    schedule: impl Iterator<Item = (Duration, T)> + Send + 'static,
    backlog: Arc<Backlog>,
) -> std::io::Result<mpsc::UnboundedReceiver<Due<T>>> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("herd-pace".into())
        .spawn(move || pace(epoch, schedule, &backlog, &tx))?;
    Ok(rx)
}

fn pace<T>(
    epoch: Instant,
    schedule: impl Iterator<Item = (Duration, T)>,
    backlog: &Arc<Backlog>,
    tx: &mpsc::UnboundedSender<Due<T>>,
) {
    for (index, (at, item)) in schedule.enumerate() {
        if !wait_until(epoch + at, tx) {
            return;
        }
        if let Some(place) = backlog.admit() {
            let due = Due {
                index: index as u64,
                at,
                item,
                place,
            };
            if tx.send(due).is_err() {
                return;
            }
        }
    }
}

/// Waits until `due` is [`HANDOFF`] away, or, when it is already that close, sleeps the
/// gap. False: the receiver is gone.
fn wait_until<T>(due: Instant, tx: &mpsc::UnboundedSender<T>) -> bool {
    let now = Instant::now();
    if due <= now {
        return !tx.is_closed();
    }
    if due - now <= HANDOFF {
        std::thread::sleep(due - now);
        return !tx.is_closed();
    }
    loop {
        if tx.is_closed() {
            return false;
        }
        let now = Instant::now();
        if due <= now + HANDOFF {
            return true;
        }
        std::thread::sleep((due - now - HANDOFF).min(NAP));
    }
}

/// Yields on the runtime until `intended` (a request handed over early, at most
/// [`HANDOFF`]): the thread stays awake and sends on the instant.
pub(super) async fn on_time(intended: tokio::time::Instant) {
    while tokio::time::Instant::now() < intended {
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_backlog_drops_and_counts() {
        let b = Backlog::new(2);
        let one = b.admit().expect("room");
        let _two = b.admit().expect("room");
        assert!(b.admit().is_none());
        assert_eq!(b.dropped(), 1);
        drop(one);
        assert!(b.admit().is_some());
        assert_eq!(b.dropped(), 1);
    }

    /// How close to on time is a benchmark (`scripts/side-by-side`), not a test: a busy
    /// CI machine delays any thread. What holds everywhere: never more than [`HANDOFF`]
    /// early (and then [`on_time`] waits), all in order.
    #[tokio::test]
    async fn arrivals_come_in_order_and_never_too_early() {
        let epoch = Instant::now() + Duration::from_millis(2);
        let schedule = (0..50u64).map(|i| Duration::from_micros(i * 700));
        let mut rx = start(epoch, schedule.map(|d| (d, ())), Backlog::new(100)).expect("thread");
        let mut seen = vec![];
        while let Some(d) = rx.recv().await {
            assert!(
                Instant::now() + HANDOFF >= epoch + d.at,
                "arrival {} came too early",
                d.index
            );
            let intended = tokio::time::Instant::from_std(epoch + d.at);
            on_time(intended).await;
            assert!(tokio::time::Instant::now() >= intended);
            seen.push(d.index);
        }
        assert_eq!(seen, (0..50).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_dropped_receiver_ends_the_thread_and_frees_its_places() {
        let backlog = Backlog::new(10);
        let epoch = Instant::now();
        let schedule = (0..5u64).map(|i| Duration::from_secs(i * 3600));
        let mut rx = start(epoch, schedule.map(|d| (d, ())), backlog.clone()).expect("thread");
        let first = rx.recv().await.expect("the first arrival is due at once");
        drop(first);
        drop(rx);
        // The thread notices within a nap and drops its handle on the backlog.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Arc::strong_count(&backlog) > 1 {
            assert!(
                Instant::now() < deadline,
                "the pacing thread outlived its arm"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(backlog.live.load(Ordering::Relaxed), 0);
    }
}
