//! Sleeps that end within tens of microseconds of their deadline, for the sub-millisecond
//! service times and delays that tokio's timer cannot honour.
//!
//! # Why not `tokio::time::sleep`
//!
//! tokio's timer wheel ticks every millisecond and rounds each deadline *up* to the next
//! tick, so a 0.5 ms service time takes 1–2 ms and even a zero sleep waits for the next
//! tick. On loopback, where a round trip is ~60 µs, that error would be most of what herd
//! reports.
//!
//! # How
//!
//! A sleep longer than [`HANDOFF`] first waits on tokio until about [`HANDOFF`] before its
//! deadline (tokio is cheap for that part: no thread, no spinning). The rest is handed to
//! one timer thread per process, started on first use, which keeps the pending deadlines
//! in a heap, blocks on a condition variable until [`SPIN`] before the earliest (with its
//! timer slack set to 1 µs, so the kernel does not defer the wake-up by its default 50 µs),
//! then yields the CPU in a loop until the deadline and wakes the task. The spin is bounded
//! by [`SPIN`] per deadline and by one thread for the process; a zero or past deadline
//! completes at once, without a timer.
//!
//! # Why not the driver's pacer
//!
//! The driver paces arrivals on a timerfd in its sending thread's own event loop
//! (`herd_driver`'s `pace` module). That fits a thread that sends; a service time here ends
//! on the upstream's multi-threaded runtime, where a connection's task may run on any
//! worker, so one timer thread for the whole process serves every connection's last stretch
//! instead of a timerfd per worker. The spins differ for the same reason: [`SPIN`] covers a
//! blocked thread's wake-up on a busy machine, the pacer's a wake-up from an idle CPU.
//!
//! Measured on a 2-core machine (see BENCHMARKS.md): a 0.5 ms sleep ends 0.5 ms + a few
//! tens of µs after it starts, against ~1.5 ms with tokio alone.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::time::Instant;

/// Sleeps longer than this wait on tokio first, and hand only the last stretch to the timer
/// thread: tokio wakes up to a tick late, so 2 ms leaves the thread 1–2 ms to cover.
pub const HANDOFF: Duration = Duration::from_millis(2);

/// How long before a deadline the timer thread stops blocking and starts yielding in a
/// loop: about the worst wake-up latency of a blocked thread on a busy 2-core machine.
pub const SPIN: Duration = Duration::from_micros(100);

/// Sleeps until `deadline`, to within tens of microseconds (see the module docs).
pub async fn sleep_until(deadline: Instant) {
    if deadline > Instant::now() + HANDOFF {
        tokio::time::sleep_until(deadline - HANDOFF).await;
    }
    Fine::new(deadline).await;
}

/// Sleeps for `d` from now, to within tens of microseconds.
pub async fn sleep(d: Duration) {
    sleep_until(Instant::now() + d).await;
}

/// The last stretch of a sleep, on the timer thread.
struct Fine {
    deadline: std::time::Instant,
    /// Registered with the timer thread (on the first poll that found time left).
    slot: Option<Arc<Slot>>,
}

/// Where the timer thread leaves its wake-up.
#[derive(Default)]
struct Slot(Mutex<SlotState>);

#[derive(Default)]
struct SlotState {
    fired: bool,
    waker: Option<Waker>,
}

impl Fine {
    fn new(deadline: Instant) -> Self {
        Fine {
            deadline: deadline.into_std(),
            slot: None,
        }
    }
}

impl Future for Fine {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if std::time::Instant::now() >= self.deadline {
            return Poll::Ready(());
        }
        match &self.slot {
            Some(slot) => {
                let mut s = lock(&slot.0);
                if s.fired {
                    return Poll::Ready(());
                }
                if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    s.waker = Some(cx.waker().clone());
                }
            }
            None => {
                let slot = Arc::new(Slot(Mutex::new(SlotState {
                    fired: false,
                    waker: Some(cx.waker().clone()),
                })));
                timer().add(self.deadline, slot.clone());
                self.slot = Some(slot);
            }
        }
        Poll::Pending
    }
}

/// One pending deadline (ordered by deadline only).
struct Entry {
    deadline: std::time::Instant,
    slot: Arc<Slot>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.deadline == other.deadline
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.deadline.cmp(&other.deadline)
    }
}

/// The process's timer thread and its heap of deadlines.
struct Timer {
    heap: Mutex<BinaryHeap<Reverse<Entry>>>,
    /// Signalled when a deadline earlier than all others arrives.
    earlier: Condvar,
}

/// The timer, its thread started on first use.
fn timer() -> &'static Timer {
    static TIMER: OnceLock<&'static Timer> = OnceLock::new();
    TIMER.get_or_init(|| {
        let t: &'static Timer = Box::leak(Box::new(Timer {
            heap: Mutex::new(BinaryHeap::new()),
            earlier: Condvar::new(),
        }));
        // Lives as long as the process; if it cannot start, sleeps fall back to polling
        // the clock on every wake of their task, which tokio's sleep still provides.
        if let Err(e) = std::thread::Builder::new()
            .name("herd-timer".into())
            .spawn(move || t.run())
        {
            tracing::warn!("cannot start the precise timer thread: {e}");
        }
        t
    })
}

impl Timer {
    fn add(&self, deadline: std::time::Instant, slot: Arc<Slot>) {
        let mut heap = lock(&self.heap);
        let earliest = heap.peek().map_or(true, |Reverse(e)| deadline < e.deadline);
        heap.push(Reverse(Entry { deadline, slot }));
        drop(heap);
        if earliest {
            self.earlier.notify_one();
        }
    }

    fn run(&self) {
        set_fine_timer_slack();
        let mut due: Vec<Arc<Slot>> = Vec::new();
        let mut heap = lock(&self.heap);
        loop {
            let now = std::time::Instant::now();
            while let Some(Reverse(e)) = heap.peek() {
                if e.deadline > now {
                    break;
                }
                if let Some(Reverse(e)) = heap.pop() {
                    due.push(e.slot);
                }
            }
            if !due.is_empty() {
                drop(heap);
                for slot in due.drain(..) {
                    let waker = {
                        let mut s = lock(&slot.0);
                        s.fired = true;
                        s.waker.take()
                    };
                    if let Some(w) = waker {
                        w.wake();
                    }
                }
                heap = lock(&self.heap);
                continue;
            }
            let left = heap
                .peek()
                .map(|Reverse(e)| e.deadline.saturating_duration_since(now));
            heap = match left {
                None => self
                    .earlier
                    .wait(heap)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(left) if left > SPIN => {
                    self.earlier
                        .wait_timeout(heap, left - SPIN)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                Some(_) => {
                    drop(heap);
                    std::thread::yield_now();
                    lock(&self.heap)
                }
            };
        }
    }
}

/// Asks the kernel to wake this thread within 1 µs of its timeouts (the default slack is
/// 50 µs, as long as the precision wanted here). The timer thread's, and each driving
/// thread's (herd-driver's pacer).
#[cfg(target_os = "linux")]
pub fn set_fine_timer_slack() {
    if let Err(e) = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1_000)) {
        tracing::debug!("cannot set this thread's timer slack: {e}");
    }
}

#[cfg(not(target_os = "linux"))]
pub fn set_fine_timer_slack() {}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How late each of `n` sleeps of `d` ends, sorted.
    async fn lateness(d: Duration, n: usize) -> Vec<Duration> {
        let mut late = Vec::with_capacity(n);
        for _ in 0..n {
            let start = Instant::now();
            sleep(d).await;
            let took = start.elapsed();
            assert!(took >= d, "woke early: {took:?} < {d:?}");
            late.push(took - d);
        }
        late.sort();
        late
    }

    #[tokio::test]
    async fn zero_and_past_deadlines_complete_at_once() {
        let start = Instant::now();
        sleep(Duration::ZERO).await;
        sleep_until(start - Duration::from_millis(1)).await;
        assert!(start.elapsed() < Duration::from_millis(1));
    }

    /// The median lateness of 41 sleeps of `d`, best of three tries: the median is the
    /// claim, and a machine busy with other work can spoil one series, rarely three.
    async fn median_lateness(d: Duration) -> Duration {
        let mut medians = Vec::new();
        for _ in 0..3 {
            let late = lateness(d, 41).await;
            if late[20] < Duration::from_micros(250) {
                return late[20];
            }
            medians.push(late[20]);
        }
        panic!("{d:?}: median lateness {medians:?} in three tries");
    }

    #[tokio::test]
    async fn sub_millisecond_sleeps_are_not_rounded_to_the_tick() {
        // tokio's timer would make each of these at least ~0.5 ms late.
        for d in [Duration::from_micros(100), Duration::from_micros(500)] {
            median_lateness(d).await;
        }
    }

    #[tokio::test]
    async fn long_sleeps_hand_off_to_the_thread_at_the_end() {
        median_lateness(Duration::from_micros(3_300)).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_sleepers_each_wake_on_time() {
        let tasks: Vec<_> = (0..200u64)
            .map(|i| {
                tokio::spawn(async move {
                    let d = Duration::from_micros(200 + 10 * i);
                    let start = Instant::now();
                    sleep(d).await;
                    start.elapsed() >= d
                })
            })
            .collect();
        for t in tasks {
            assert!(t.await.expect("task"), "a sleeper woke early");
        }
    }
}
