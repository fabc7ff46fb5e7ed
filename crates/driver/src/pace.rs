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
//! A wake-up is not free either. On a virtual machine a thread woken from sleep costs
//! 15–20 µs of CPU, and the target about as much again for the lone request it is then
//! woken for: at 12,500 arrivals a second, a thread that slept to each arrival's instant
//! spent 32–34 µs a request and herd's upstream 21–25; four such processes on two cores fell
//! seconds behind. So the pacer puts the thread to sleep for an arrival no sooner than the
//! scenario's `[load] coalesce_us` (250 µs unless set) after it last woke it: an arrival
//! due before then waits for then and leaves with the others due by then, at most that
//! late ([`wake_at`]). The same thread spent 25 µs a request and the upstream 17–18
//! (BENCHMARKS.md, "Waking less often"). The lateness is lag like any other: latency
//! still runs from the intended instant. A thread awake anyway (an answer came, or an
//! arrival under [`SHORT`] away is spun for) sends what is due at its instant: at 50,000
//! arrivals a second, where most gaps are spun through, lag p50 was 0.07–0.09 ms, where
//! making every arrival wait for the next wake-up gave 0.21 for the same CPU.
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
use std::time::{Duration, Instant};

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
/// The pacer puts the thread to sleep for an arrival no sooner than `coalesce` after it
/// last woke it (see the module docs and [`wake_at`]).
pub(super) async fn pace<S: Source>(
    source: &mut S,
    stop: &Stop,
    coalesce: Duration,
) -> io::Result<bool> {
    let mut pacer = Pacer::new(coalesce)?;
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
fn far() -> Instant {
    Instant::now() + Duration::from_secs(3600)
}

/// Until when to wait, at `now`, for an arrival due `at`: its instant, unless the thread
/// would have to sleep for it ([`SHORT`] or more away) less than `coalesce` after the
/// pacer last woke it (`woke`); then `coalesce` after that wake-up, when the arrivals due
/// by then leave together. An arrival spun for is waited for to its instant: the thread is
/// awake anyway. Never before `at`, and at most `coalesce` after it.
fn wake_at(at: Instant, now: Instant, woke: Option<Instant>, coalesce: Duration) -> Instant {
    match woke {
        Some(w) if at.saturating_duration_since(now) >= SHORT => at.max(w + coalesce),
        _ => at,
    }
}

pub(super) use timer::Pacer;

/// An arrival this far off or more is slept for until [`SPIN`] before it, and the rest is
/// spun (yielding on the runtime): a thread woken from an idle CPU starts tens to hundreds
/// of microseconds late on a virtual machine, which would land in every latency of a slow
/// schedule. Arrivals between [`SHORT`] and this are slept for to the instant (or to the
/// coalescing's, [`wake_at`]): a spin through every such gap would take most of a core
/// from the target.
const LONG: Duration = Duration::from_millis(1);

/// An arrival closer than this is spun for (yielding on the runtime, which meanwhile
/// serves the sockets), not slept for: putting the thread to sleep and waking it costs a
/// few microseconds of CPU and, from an idle CPU, more than this in lateness, so below
/// it a sleep would be both dearer and later. Such gaps come between arrivals only above
/// 20,000 a second, when the thread is busy most of the time anyway (and after a wake-up
/// that came late, for what is left of the wait).
const SHORT: Duration = Duration::from_micros(50);

/// How long before a far-off arrival the thread wakes and starts spinning. Spinning costs
/// at most this per arrival, and only below 1,000 arrivals a second ([`LONG`]): at most a
/// fifth of a core.
const SPIN: Duration = Duration::from_micros(200);

#[cfg(target_os = "linux")]
mod timer {
    use rustix::fd::OwnedFd;
    use rustix::time::{
        timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags,
        TimerfdTimerFlags, Timespec,
    };
    use std::io;
    use std::time::{Duration, Instant};
    use tokio::io::unix::AsyncFd;

    /// Waits for instants on the calling thread's event loop, to within microseconds.
    pub(in super::super) struct Pacer {
        fd: AsyncFd<OwnedFd>,
        /// When a wait last ended (see [`super::wake_at`]).
        woke: Option<Instant>,
        coalesce: Duration,
    }

    impl Pacer {
        /// A timer on the current runtime that sleeps for an arrival no sooner than
        /// `coalesce` after its last wait ended ([`super::wake_at`]); the thread's timer
        /// slack goes down to 1 µs (the default 50 µs would be most of a loopback round
        /// trip).
        pub fn new(coalesce: Duration) -> io::Result<Pacer> {
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
            Ok(Pacer {
                fd,
                woke: None,
                coalesce,
            })
        }

        /// Returns at `at` or just after, or later by up to the coalescing
        /// ([`super::wake_at`]); at once when `at` has passed. A long wait ends with a
        /// short spin (see [`SPIN`](super::SPIN)).
        pub async fn until(&mut self, at: Instant) -> io::Result<()> {
            let now = Instant::now();
            if at <= now {
                return Ok(());
            }
            let at = super::wake_at(at, now, self.woke, self.coalesce);
            self.wait(at - now, at).await?;
            self.woke = Some(Instant::now());
            Ok(())
        }

        async fn wait(&mut self, wait: Duration, at: Instant) -> io::Result<()> {
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

    /// Waits for instants on tokio's timer (a millisecond's resolution: no timerfd here,
    /// and nothing to coalesce that the timer wheel does not already).
    pub(in super::super) struct Pacer;

    impl Pacer {
        pub fn new(_coalesce: std::time::Duration) -> io::Result<Pacer> {
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

    #[test]
    fn an_arrival_slept_for_soon_after_a_wake_up_waits_for_the_next_one() {
        let t0 = Instant::now();
        let us = Duration::from_micros;
        let every = us(250);
        let now = t0 + us(10);
        // The first wait of a run, and an arrival after the coalescing: their instants.
        assert_eq!(wake_at(t0 + us(80), now, None, every), t0 + us(80));
        assert_eq!(wake_at(t0 + us(400), now, Some(t0), every), t0 + us(400));
        // Slept for sooner: 250 µs after the last wake-up, never before the instant.
        assert_eq!(wake_at(t0 + us(80), now, Some(t0), every), t0 + us(250));
        assert_eq!(wake_at(t0 + us(250), now, Some(t0), every), t0 + us(250));
        // Spun for (under SHORT away): at its instant.
        assert_eq!(wake_at(t0 + us(40), now, Some(t0), every), t0 + us(40));
        // No coalescing: every arrival at its instant.
        assert_eq!(
            wake_at(t0 + us(80), now, Some(t0), Duration::ZERO),
            t0 + us(80)
        );
    }

    /// How close to on time is a benchmark (`scripts/side-by-side`), not a test: a busy
    /// CI machine delays any thread. What holds everywhere, for gaps spun through, slept
    /// for, and slept for then spun: never early, and a past instant returns at once, with coalescing or without.
    #[tokio::test]
    async fn never_early() {
        for coalesce in [Duration::ZERO, Duration::from_micros(250)] {
            let mut p = Pacer::new(coalesce).expect("timer");
            let mut at = Instant::now();
            for gap_us in [20u64, 700, 1_500] {
                for i in 0..20 {
                    at += Duration::from_micros(gap_us);
                    p.until(at).await.expect("wait");
                    assert!(
                        Instant::now() >= at,
                        "coalescing {coalesce:?}, gap {gap_us} µs, instant {i}: too early"
                    );
                }
            }
            let before = Instant::now();
            p.until(before).await.expect("wait");
            assert!(before.elapsed() < Duration::from_secs(1));
        }
    }
}
