//! Arrivals on time, on the arm's own clock, within a bounded backlog: the driver's one
//! arrival loop ([`pace`]) and what it is made of.
//!
//! Every kind of arm goes through [`pace`]: a lane of a replica or Rust-peer arm, an arm's
//! consumers, a client in another program. Each is a [`Source`]: it says when its next
//! instant is due and what to do then (hand an arrival to a worker, fire a consumer's
//! timer, write an id to the adapter), and it has events of its own besides (a finished
//! request, an adapter's answer). The loop waits for whichever comes first, or for the stop.
//!
//! tokio's timer wheel has a 1 ms resolution, so an arrival slept for on it leaves up to a
//! millisecond late, and every latency herd reports carried that error. A pacing thread
//! that slept on the OS timer and handed arrivals to the runtime fixed the precision but
//! cost two thread wake-ups per arrival (the pacer's, then a runtime worker's), which at
//! tens of thousands of arrivals a second was most of the driver's CPU. Here the driving
//! thread paces itself: a [`Pacer`] is a Linux timerfd armed for the next arrival
//! and registered with the thread's own event loop, so the thread sleeps in one place
//! (`epoll_wait`) and wakes for whichever comes first, an answer on a socket or the next
//! instant, with the thread's timer slack at 1 µs. Under load the thread is rarely asleep
//! and the arrivals that came due meanwhile leave together; at a slow schedule it wakes a
//! little early and spins to the instant ([`SPIN`]); a gap shorter than a wake-up costs
//! is spun through, not slept ([`SHORT`]).
//!
//! The upstream's service times have a precise timer of their own
//! (`herd_upstream::precise`), and two mechanisms is deliberate: a service time ends on the
//! upstream's multi-threaded runtime, where a connection's task may run on any worker, so
//! its last stretch goes to one timer thread for the whole process, which spins for every
//! connection; an arrival is waited for on the one thread that sends it, which a timerfd in
//! that thread's own event loop wakes with no hand-off to another thread. Their spins differ
//! too: the timer thread's (100 µs) covers a blocked thread's wake-up on a busy machine,
//! the pacer's ([`SPIN`], 200 µs) a wake-up from an idle CPU on a virtual machine, which
//! is where a slow schedule leaves the sending thread.
//!
//! The same loop enforces the [`Backlog`]: an arrival that finds it full is dropped unsent
//! and counted, so a target that cannot keep up never grows the driver's memory without
//! limit. Latency still runs from each request's intended instant, so a driver that falls
//! behind shows as latency and lag, not as a thinner load.

use crate::Stop;
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

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

/// One thing the arrival loop drives (see the module docs).
pub(super) trait Source {
    /// What the source waits for besides its instants: a finished request, an answer.
    type Event;

    /// Whether the source has nothing left to do: the loop ends.
    fn is_done(&self) -> bool;

    /// The next instant something is due; `None` when nothing is scheduled.
    fn next_due(&self) -> Option<tokio::time::Instant>;

    /// The instant [`Source::next_due`] gave has come.
    fn due(&mut self) -> io::Result<()>;

    /// The source's next event; never resolves while it expects none. Cancel safe: the
    /// loop drops it when an instant or the stop comes first.
    async fn event(&mut self) -> Self::Event;

    /// Carries out one event.
    fn on_event(&mut self, event: Self::Event) -> io::Result<()>;
}

/// The arrival loop: runs `source` on a [`Pacer`] until it is done (`true`) or `stop`
/// fires (`false`; what the source had under way is left for its owner to abort). A stop
/// wins over an event, and an event over a due instant, at each turn.
pub(super) async fn pace<S: Source>(source: &mut S, stop: &Stop) -> io::Result<bool> {
    let mut pacer = Pacer::new()?;
    // One wait for the stop for the whole run, not one made and dropped per turn.
    let mut stopped = std::pin::pin!(stop.cancelled());
    loop {
        if source.is_done() {
            return Ok(true);
        }
        let due = source.next_due();
        let at = due.map_or_else(far, tokio::time::Instant::into_std);
        tokio::select! {
            biased;
            () = &mut stopped => return Ok(false),
            event = source.event() => source.on_event(event)?,
            r = pacer.until(at), if due.is_some() => {
                r?;
                source.due()?;
            }
        }
    }
}

/// An instant the loop never reaches (its branch is off).
fn far() -> std::time::Instant {
    std::time::Instant::now() + std::time::Duration::from_secs(3600)
}

pub(super) use timer::Pacer;

/// An arrival this far off or more is slept for until [`SPIN`] before it, and the rest is
/// spun (yielding on the runtime): a thread woken from an idle CPU starts tens to hundreds
/// of microseconds late on a virtual machine, which would land in every latency of a slow
/// schedule. Arrivals between [`SHORT`] and this are slept for to the instant: a spin
/// through every such gap would take most of a core from the target.
const LONG: std::time::Duration = std::time::Duration::from_millis(1);

/// An arrival closer than this is spun for (yielding on the runtime, which meanwhile
/// serves the sockets), not slept for: putting the thread to sleep and waking it costs a
/// few microseconds of CPU and, from an idle CPU, more than this in lateness, so below
/// it a sleep would be both dearer and later. Such gaps come between arrivals only above
/// 20,000 a second, when the thread is busy most of the time anyway (and after a wake-up
/// that came late, for what is left of the wait).
const SHORT: std::time::Duration = std::time::Duration::from_micros(50);

/// How long before a far-off arrival the thread wakes and starts spinning. Spinning costs
/// at most this per arrival, and only below 1,000 arrivals a second ([`LONG`]): at most a
/// fifth of a core.
const SPIN: std::time::Duration = std::time::Duration::from_micros(200);

#[cfg(target_os = "linux")]
mod timer {
    use rustix::fd::OwnedFd;
    use rustix::time::{
        timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags,
        TimerfdTimerFlags, Timespec,
    };
    use std::io;
    use std::time::Instant;
    use tokio::io::unix::AsyncFd;

    /// Waits for instants on the calling thread's event loop, to within microseconds.
    pub(in super::super) struct Pacer {
        fd: AsyncFd<OwnedFd>,
    }

    impl Pacer {
        /// A timer on the current runtime; the thread's timer slack goes down to 1 µs
        /// (the default 50 µs would be most of a loopback round trip).
        pub fn new() -> io::Result<Pacer> {
            herd_upstream::precise::set_fine_timer_slack();
            let fd = timerfd_create(
                TimerfdClockId::Monotonic,
                TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
            )?;
            // `AsyncFd::new` is deprecated because a registered descriptor that its owner
            // closed or replaced would confuse the event loop; an `OwnedFd` moved into the
            // `AsyncFd` is closed only when the `AsyncFd` is dropped, after deregistering
            // (and the safe replacement, `register`, is `unsafe`, which herd forbids).
            #[allow(deprecated)]
            let fd = AsyncFd::new(fd)?;
            Ok(Pacer { fd })
        }

        /// Returns at `at` or just after; at once when it has passed. A long wait ends
        /// with a short spin (see [`SPIN`](super::SPIN)).
        pub async fn until(&mut self, at: Instant) -> io::Result<()> {
            let now = Instant::now();
            if at <= now {
                return Ok(());
            }
            let wait = at - now;
            if wait >= super::LONG {
                self.sleep_until(at - super::SPIN).await?;
            } else if wait >= super::SHORT {
                return self.sleep_until(at).await;
            }
            while Instant::now() < at {
                tokio::task::yield_now().await;
            }
            Ok(())
        }

        async fn sleep_until(&mut self, at: Instant) -> io::Result<()> {
            let now = Instant::now();
            if at <= now {
                return Ok(());
            }
            let wait = at - now;
            let spec = Itimerspec {
                it_interval: Timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: Timespec {
                    tv_sec: i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
                    tv_nsec: i64::from(wait.subsec_nanos()).max(1),
                },
            };
            timerfd_settime(self.fd.get_ref(), TimerfdTimerFlags::empty(), &spec)?;
            loop {
                let mut ready = self.fd.readable().await?;
                let mut expirations = [0u8; 8];
                match ready.try_io(|fd| {
                    rustix::io::read(fd.get_ref(), &mut expirations).map_err(io::Error::from)
                }) {
                    Ok(Ok(_)) => return Ok(()),
                    Ok(Err(e)) => return Err(e),
                    Err(_would_block) => {
                        if Instant::now() >= at {
                            return Ok(());
                        }
                    }
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod timer {
    use std::io;
    use std::time::Instant;

    /// Waits for instants on tokio's timer (a millisecond's resolution: no timerfd here).
    pub(in super::super) struct Pacer;

    impl Pacer {
        pub fn new() -> io::Result<Pacer> {
            Ok(Pacer)
        }

        pub async fn until(&mut self, at: Instant) -> io::Result<()> {
            tokio::time::sleep_until(at.into()).await;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

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
    /// CI machine delays any thread. What holds everywhere, for gaps spun through, slept
    /// for, and slept for then spun: never early, and a past instant returns at once.
    #[tokio::test]
    async fn never_early() {
        let mut p = Pacer::new().expect("timer");
        let mut at = Instant::now();
        for gap_us in [20u64, 700, 1_500] {
            for i in 0..20 {
                at += Duration::from_micros(gap_us);
                p.until(at).await.expect("wait");
                assert!(
                    Instant::now() >= at,
                    "gap {gap_us} µs, instant {i}: too early"
                );
            }
        }
        let before = Instant::now();
        p.until(before).await.expect("wait");
        assert!(before.elapsed() < Duration::from_secs(1));
    }
}
