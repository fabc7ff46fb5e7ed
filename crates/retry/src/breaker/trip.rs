//! The closed state's counts, one kind per [`Trip`] rule. Times are nanoseconds on the
//! caller's clock; each kind keeps exactly what its library keeps, so a window that is
//! not aligned to a grid (Polly's, failsafe-rs') stays unaligned here.

use super::config::{Sampling, TimeWindow, Trip};
use rand::Rng;
use std::collections::VecDeque;

const MS: u64 = 1_000_000;

/// What a result did to the counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Stay closed.
    Stay,
    /// Open now, for the configured time.
    Open,
    /// Open now, for this long (failsafe-rs draws it).
    OpenFor(u64),
}

#[derive(Clone, Debug)]
pub(super) enum Counts {
    Consecutive {
        failures: u32,
    },
    ErrorsWithin {
        errors: u32,
        last_error: u64,
    },
    Count {
        ring: VecDeque<bool>,
        failures: u32,
    },
    /// Polly's sub-windows: (start, successes, failures).
    Rolling {
        windows: VecDeque<(u64, u32, u32)>,
    },
    /// Grid buckets by index: (index, calls, failures).
    Grid {
        origin: u64,
        buckets: VecDeque<(u64, u32, u32)>,
        /// Hystrix: the last boundary judged.
        judged: u64,
    },
    Failsafe(Box<Failsafe>),
}

impl Counts {
    pub(super) fn new(trip: &Trip, now: u64) -> Counts {
        match *trip {
            Trip::Consecutive { .. } => Counts::Consecutive { failures: 0 },
            Trip::ErrorsWithin { .. } => Counts::ErrorsWithin {
                errors: 0,
                last_error: 0,
            },
            Trip::CountWindow { size, .. } => Counts::Count {
                ring: VecDeque::with_capacity(size.min(4096) as usize),
                failures: 0,
            },
            Trip::TimeWindow(TimeWindow {
                sampling: Sampling::Rolling,
                ..
            }) => Counts::Rolling {
                windows: VecDeque::new(),
            },
            Trip::TimeWindow(_) => Counts::Grid {
                origin: now,
                buckets: VecDeque::new(),
                judged: 0,
            },
            Trip::Failsafe { window, .. } => Counts::Failsafe(Box::new(Failsafe::new(window, now))),
        }
    }

    /// Back to empty, as on a close (`now` restarts failsafe-rs' clock). opossum's counts
    /// are never reset.
    pub(super) fn reset(&mut self, trip: &Trip, now: u64) {
        match self {
            Counts::Grid { .. } if is_fired(trip) => {}
            // Hystrix's stream keeps its bucket grid; `resetStream` only empties it.
            Counts::Grid {
                origin,
                buckets,
                judged,
            } => {
                if let Trip::TimeWindow(w) = trip {
                    *judged = now.saturating_sub(*origin) / grid_width(w);
                }
                buckets.clear();
            }
            Counts::Failsafe(f) => f.revived(now),
            _ => *self = Counts::new(trip, now),
        }
    }

    /// A call was let through or turned away (only opossum counts this).
    pub(super) fn on_fire(&mut self, trip: &Trip, now: u64) {
        if let (
            Counts::Grid {
                origin, buckets, ..
            },
            Trip::TimeWindow(w),
        ) = (self, trip)
        {
            if matches!(w.sampling, Sampling::Fired { .. }) {
                bucket(buckets, *origin, grid_width(w), now).1 += 1;
            }
        }
    }

    /// Hystrix: the snapshots published up to `now`; `Some(at)` opens the breaker at the
    /// boundary `at` whose snapshot crossed the threshold.
    pub(super) fn tick(&mut self, trip: &Trip, now: u64) -> Option<u64> {
        let (
            Counts::Grid {
                origin,
                buckets,
                judged,
            },
            Trip::TimeWindow(w),
        ) = (self, trip)
        else {
            return None;
        };
        let Sampling::Snapshot { every } = w.sampling else {
            return None;
        };
        let width = nanos(every).max(1);
        let n = (nanos(w.window) / width).max(1);
        let last = now.saturating_sub(*origin) / width;
        // Boundaries with no bucket in their window can't open it: skip them.
        let first_useful = buckets.front().map_or(last, |b| b.0 + 1);
        let mut j = (*judged + 1).max(first_useful);
        while j <= last {
            let (calls, failures) = buckets
                .iter()
                .filter(|b| b.0 + n >= j && b.0 < j)
                .fold((0u64, 0u64), |(c, f), b| {
                    (c + u64::from(b.1), f + u64::from(b.2))
                });
            if calls > 0 && judge(w, calls, failures) {
                *judged = j;
                return Some(*origin + j * width);
            }
            if buckets.back().map_or(true, |b| b.0 + n < j) {
                break;
            }
            j += 1;
        }
        *judged = last;
        while buckets.front().is_some_and(|b| b.0 + n < last) {
            buckets.pop_front();
        }
        None
    }

    /// A result while closed (or, counted without a verdict, while open).
    pub(super) fn on_result<R: Rng + ?Sized>(
        &mut self,
        trip: &Trip,
        now: u64,
        failed: bool,
        rng: &mut R,
    ) -> Verdict {
        let open = |b: bool| if b { Verdict::Open } else { Verdict::Stay };
        match (self, trip) {
            (Counts::Consecutive { failures }, Trip::Consecutive { failures: n }) => {
                *failures = if failed { *failures + 1 } else { 0 };
                open(*failures >= *n)
            }
            (
                Counts::ErrorsWithin { errors, last_error },
                Trip::ErrorsWithin { errors: n, expiry },
            ) => {
                if !failed {
                    return Verdict::Stay;
                }
                if *errors > 0 && now > last_error.saturating_add(nanos(*expiry)) {
                    *errors = 0;
                }
                *errors += 1;
                if *errors == *n {
                    return Verdict::Open;
                }
                *last_error = now;
                Verdict::Stay
            }
            (
                Counts::Count { ring, failures },
                Trip::CountWindow {
                    size,
                    min_calls,
                    ratio,
                },
            ) => {
                ring.push_back(failed);
                *failures += u32::from(failed);
                if ring.len() > *size as usize {
                    *failures -= u32::from(ring.pop_front().unwrap_or(false));
                }
                let total = ring.len() as u32;
                let rate = *failures as f32 * 100.0 / total as f32;
                open(total >= (*min_calls).min(*size) && rate >= (*ratio * 100.0) as f32)
            }
            (Counts::Rolling { windows }, Trip::TimeWindow(w)) => {
                let width = nanos(w.window) / 10;
                roll(windows, now, width, nanos(w.window));
                if let Some(cur) = windows.back_mut() {
                    if failed {
                        cur.2 += 1;
                    } else {
                        cur.1 += 1;
                    }
                }
                if !failed {
                    return Verdict::Stay;
                }
                roll(windows, now, width, nanos(w.window));
                let (s, f) = windows.iter().fold((0u64, 0u64), |(s, f), x| {
                    (s + u64::from(x.1), f + u64::from(x.2))
                });
                open(judge(w, s + f, f))
            }
            (
                Counts::Grid {
                    origin, buckets, ..
                },
                Trip::TimeWindow(w),
            ) => {
                let width = grid_width(w);
                let b = bucket(buckets, *origin, width, now);
                let fired = matches!(w.sampling, Sampling::Fired { .. });
                if !fired {
                    b.1 += 1;
                }
                b.2 += u32::from(failed);
                if !fired || !failed {
                    return Verdict::Stay;
                }
                let Sampling::Fired { buckets: n } = w.sampling else {
                    return Verdict::Stay;
                };
                let cur = now.saturating_sub(*origin) / width;
                let (calls, failures) = buckets
                    .iter()
                    .filter(|b| b.0 + u64::from(n) > cur)
                    .fold((0u64, 0u64), |(c, f), b| {
                        (c + u64::from(b.1), f + u64::from(b.2))
                    });
                if calls < u64::from(w.min_calls) {
                    return Verdict::Stay;
                }
                open(calls > 0 && judge(w, calls, failures))
            }
            (Counts::Failsafe(f), Trip::Failsafe { .. }) => f.on_result(trip, now, failed, rng),
            _ => Verdict::Stay,
        }
    }

    /// failsafe-rs asks its policies again when a half-open call fails: `Some` is the
    /// duration a rule drew (its backoff moves on), `None` keeps the previous one.
    pub(super) fn failsafe_half_open_failure<R: Rng + ?Sized>(
        &mut self,
        trip: &Trip,
        now: u64,
        rng: &mut R,
    ) -> Option<u64> {
        match self {
            Counts::Failsafe(f) => match f.on_result(trip, now, true, rng) {
                Verdict::OpenFor(d) => Some(d),
                _ => None,
            },
            _ => None,
        }
    }
}

fn is_fired(trip: &Trip) -> bool {
    matches!(
        trip,
        Trip::TimeWindow(TimeWindow {
            sampling: Sampling::Fired { .. },
            ..
        })
    )
}

/// Nanoseconds in `d`, saturating.
pub(super) fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn grid_width(w: &TimeWindow) -> u64 {
    match w.sampling {
        Sampling::Snapshot { every } => nanos(every).max(1),
        // opossum: `Math.floor(rollingCountTimeout / rollingCountBuckets)` ms.
        Sampling::Fired { buckets } => {
            (nanos(w.window) / MS / u64::from(buckets.max(1))).max(1) * MS
        }
        Sampling::Rolling => nanos(w.window) / 10,
    }
}

fn bucket(
    buckets: &mut VecDeque<(u64, u32, u32)>,
    origin: u64,
    width: u64,
    now: u64,
) -> &mut (u64, u32, u32) {
    let idx = now.saturating_sub(origin) / width;
    if buckets.back().map_or(true, |b| b.0 < idx) {
        buckets.push_back((idx, 0, 0));
        if buckets.len() > 64 {
            buckets.pop_front();
        }
    }
    // A `now` earlier than the latest bucket is counted in the latest.
    buckets.back_mut().expect("just pushed")
}

/// Polly's `UpdateCurrentWindow`: a new sub-window when the current one is `width` old,
/// and sub-windows started `window` or more ago dropped.
fn roll(windows: &mut VecDeque<(u64, u32, u32)>, now: u64, width: u64, window: u64) {
    if windows
        .back()
        .map_or(true, |w| now.saturating_sub(w.0) >= width)
    {
        windows.push_back((now, 0, 0));
    }
    while windows
        .front()
        .is_some_and(|w| now.saturating_sub(w.0) >= window)
    {
        windows.pop_front();
    }
}

/// Whether `failures` of `calls` crosses the window's threshold.
fn judge(w: &TimeWindow, calls: u64, failures: u64) -> bool {
    if calls < u64::from(w.min_calls) || calls == 0 {
        return false;
    }
    if w.whole_percent {
        // Hystrix: `(int) ((double) errorCount / totalCount * 100)`.
        let pct = (failures as f64 / calls as f64 * 100.0) as u64;
        return pct as f64 >= w.ratio * 100.0;
    }
    let rate = failures as f64 / calls as f64;
    if w.strictly_above {
        // opossum compares percentages: `failures / fires * 100 > threshold`.
        rate * 100.0 > w.ratio * 100.0
    } else {
        rate >= w.ratio
    }
}

/// failsafe-rs' `SuccessRateOverTimeWindow.or_else(ConsecutiveFailures)`.
#[derive(Clone, Debug)]
pub(super) struct Failsafe {
    /// When the success-rate policy was (re)created: its EWMA's timestamps count from here.
    revived_at: u64,
    /// EWMA timestamp in ms since `revived_at` (0: empty, as failsafe-rs has it).
    ema_ts: u64,
    ema: f64,
    /// `WindowedAdder` over `window` in 5 slices.
    slices: [i64; 5],
    index: usize,
    elapsed: u64,
    consecutive: u32,
    /// Each rule's backoff position.
    attempts: [u32; 2],
}

impl Failsafe {
    fn new(_window: std::time::Duration, now: u64) -> Failsafe {
        Failsafe {
            revived_at: now,
            ema_ts: 0,
            ema: 0.0,
            slices: [0; 5],
            index: 0,
            elapsed: now,
            consecutive: 0,
            attempts: [0; 2],
        }
    }

    fn revived(&mut self, now: u64) {
        *self = Failsafe::new(std::time::Duration::ZERO, now);
    }

    fn expire(&mut self, now: u64, width_ms: u64) {
        let diff = now.saturating_sub(self.elapsed) / MS;
        if diff < width_ms {
            return;
        }
        let len = self.slices.len();
        let mut idx = (self.index + 1) % len;
        let skip = ((diff / width_ms) - 1).min(len as u64) as usize;
        for k in 0..skip {
            self.slices[(idx + k) % len] = 0;
        }
        idx = (idx + skip) % len;
        self.slices[idx] = 0;
        self.index = idx;
        self.elapsed = now;
    }

    fn on_result<R: Rng + ?Sized>(
        &mut self,
        trip: &Trip,
        now: u64,
        failed: bool,
        rng: &mut R,
    ) -> Verdict {
        let Trip::Failsafe {
            consecutive,
            success_rate,
            min_requests,
            window,
            base,
            max,
        } = *trip
        else {
            return Verdict::Stay;
        };
        let window_ms = window.as_secs() * 1000;
        let width_ms = (window.as_millis() as u64 / 5).max(1);
        let ts = now.saturating_sub(self.revived_at) / MS;
        let value = if failed { 0.0 } else { 1.0 };
        if failed {
            self.expire(now, width_ms);
            self.slices[self.index] += 1;
        }
        if self.ema_ts == 0 {
            self.ema_ts = ts;
            self.ema = value;
        } else {
            let dt = ts.saturating_sub(self.ema_ts);
            self.ema_ts = ts;
            let w = if window_ms == 0 {
                0.0
            } else {
                (-(dt as f64) / window_ms as f64).exp()
            };
            self.ema = value * (1.0 - w) + self.ema * w;
        }
        if !failed {
            self.expire(now, width_ms);
            self.slices[self.index] += 1;
            self.consecutive = 0;
            return Verdict::Stay;
        }
        self.expire(now, width_ms);
        let sum: i64 = self.slices.iter().sum();
        let rate_fires =
            ts >= window_ms && self.ema < success_rate && sum >= i64::from(min_requests);
        self.consecutive += 1;
        let left = rate_fires.then(|| self.draw(0, base, max, rng));
        let right = (self.consecutive >= consecutive).then(|| self.draw(1, base, max, rng));
        match (left, right) {
            (Some(l), Some(r)) => Verdict::OpenFor(l.max(r)),
            (Some(d), None) | (None, Some(d)) => Verdict::OpenFor(d),
            (None, None) => Verdict::Stay,
        }
    }

    /// `EqualJittered::next`: `exp/2 + U{0..=exp/2}` whole seconds.
    fn draw<R: Rng + ?Sized>(
        &mut self,
        rule: usize,
        base: std::time::Duration,
        max: std::time::Duration,
        rng: &mut R,
    ) -> u64 {
        let a = self.attempts[rule];
        let exp = (1u64 << a)
            .saturating_mul(base.as_secs())
            .min(max.as_secs());
        if a < 30 {
            self.attempts[rule] += 1;
        }
        let s = exp / 2 + rng.random_range(0..exp / 2 + 1);
        s * 1_000 * MS
    }
}
