//! The client-side rate limiter of the AWS SDKs' `adaptive` retry mode, as pure state.
//!
//! botocore 1.44 (`botocore/retries/adaptive.py`, `throttling.py`, `bucket.py`; the same
//! constants in smithy-rs `aws-smithy-runtime/src/client/retries/client_rate_limiter.rs`)
//! puts three parts together:
//! - a **token bucket** (`bucket.TokenBucket(max_rate=1)`) that every attempt, first
//!   attempts included, takes one token from before it is sent, once the limiter is
//!   enabled; its fill rate is never below **0.5 tokens/s** (`_MIN_RATE`) and its
//!   capacity is the rate, at least 1;
//! - a **measured rate** (`RateClocker`): responses counted in **0.5 s** buckets, smoothed
//!   with weight **0.8** on the newest bucket;
//! - a **CUBIC** controller (`CubicCalculator(starting_max_rate=0)`, β **0.7**, C **0.4**):
//!   a throttle sets `W_max` to the current rate and returns `0.7·rate`; a success returns
//!   `C·(t − t_fail − K)³ + W_max` with `K = (W_max·(1 − β)/C)^(1/3)`. The bucket's rate
//!   becomes that, but never more than **2×** the measured rate (`_MAX_RATE_ADJUST_SCALE`).
//!
//! The limiter is off until the first **throttling** error (by code, see
//! [`crate::aws::codes`]); a plain 503 never turns it on. Once on, it stays on.
//!
//! botocore blocks a sending thread on a condition variable until the bucket has a token:
//! it sleeps for the time the missing part of a token takes at the current rate, refills,
//! and checks again, and every change of rate wakes it early. Here [`RateLimiter::acquire`]
//! is that loop's body: zero means the token is taken and the attempt goes now; anything
//! else means "ask again after this long", never more than [`POLL`], so a rate that rises
//! while requests wait lets them go at the new rate, and of several waiters the first to
//! ask when a token is there takes it, as botocore's threads do. Times are [`Nanos`] on the
//! caller's clock, as everywhere in this crate.

use crate::nanos::Nanos;
use std::time::Duration;

/// CUBIC's multiplicative decrease (`throttling.py` `_BETA`).
pub const BETA: f64 = 0.7;
/// CUBIC's scale constant (`throttling.py` `_SCALE_CONSTANT`).
pub const SCALE: f64 = 0.4;
/// Weight of the newest bucket in the measured rate (`adaptive.py` `_DEFAULT_SMOOTHING`).
pub const SMOOTHING: f64 = 0.8;
/// Width of a measured-rate bucket, seconds (`adaptive.py` `_TIME_BUCKET_RANGE`).
pub const BUCKET_SECS: f64 = 0.5;
/// The new rate is at most this times the measured rate (`_MAX_RATE_ADJUST_SCALE`).
pub const MAX_RATE_ADJUST: f64 = 2.0;
/// The slowest fill rate, tokens per second (`bucket.py` `_MIN_RATE`).
pub const MIN_RATE: f64 = 0.5;
/// The longest wait [`RateLimiter::acquire`] asks for before the caller asks again: what
/// stands for botocore's waking waiters when the rate changes.
pub const POLL: Duration = Duration::from_millis(100);

fn secs(t: Nanos) -> f64 {
    t.0 as f64 / 1e9
}

/// The adaptive-mode limiter of one client object.
#[derive(Clone, Debug, PartialEq)]
pub struct RateLimiter {
    /// Whether a throttle has been seen (botocore's `_enabled`).
    enabled: bool,
    // CUBIC
    w_max: f64,
    k: f64,
    last_fail: f64,
    // measured rate
    measured: f64,
    last_bucket: f64,
    count: f64,
    // token bucket
    fill_rate: f64,
    max_capacity: f64,
    capacity: f64,
    last_refill: Option<f64>,
}

impl RateLimiter {
    /// A fresh limiter for a client created at `now`: off, CUBIC at `W_max = 0`, the bucket
    /// at rate 1 and empty.
    pub fn new(now: Nanos) -> RateLimiter {
        let t = secs(now);
        let mut l = RateLimiter {
            enabled: false,
            w_max: 0.0,
            k: 0.0,
            last_fail: t,
            measured: 0.0,
            last_bucket: t.floor(),
            count: 0.0,
            fill_rate: MIN_RATE,
            max_capacity: 1.0,
            capacity: 0.0,
            last_refill: None,
        };
        l.k = l.zero_point();
        l.set_max_rate(t, 1.0);
        l
    }

    /// Whether the limiter is pacing requests (a throttle has been seen).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The bucket's fill rate, tokens (attempts) per second.
    pub fn rate(&self) -> f64 {
        self.fill_rate
    }

    /// The smoothed measured response rate, per second.
    pub fn measured_rate(&self) -> f64 {
        self.measured
    }

    /// Asks for a token for an attempt that wants to go out at `now`. Zero: the token is
    /// taken (or the limiter is off), send it now. Otherwise: no token yet, ask again after
    /// this long (at most [`POLL`]).
    pub fn acquire(&mut self, now: Nanos) -> Duration {
        if !self.enabled {
            return Duration::ZERO;
        }
        self.refill(secs(now));
        if self.capacity >= 1.0 {
            self.capacity -= 1.0;
            return Duration::ZERO;
        }
        let wait = Duration::from_secs_f64((1.0 - self.capacity) / self.fill_rate);
        // A wait that rounds to zero nanoseconds would read as "go": ask again in 1 ns.
        wait.min(POLL).max(Duration::from_nanos(1))
    }

    /// An attempt's response (or error) arrived at `now`; `throttled` says whether it was a
    /// throttling error. botocore's `on_receiving_response`.
    pub fn on_response(&mut self, now: Nanos, throttled: bool) {
        let t = secs(now);
        let measured = self.record(t);
        let new_rate = if throttled {
            let rate = if self.enabled {
                measured.min(self.fill_rate)
            } else {
                measured
            };
            self.enabled = true;
            self.error_received(rate, t)
        } else {
            self.success_received(t)
        };
        self.set_max_rate(t, new_rate.min(MAX_RATE_ADJUST * measured));
    }

    fn zero_point(&self) -> f64 {
        (self.w_max * (1.0 - BETA) / SCALE).cbrt()
    }

    fn success_received(&self, t: f64) -> f64 {
        SCALE * (t - self.last_fail - self.k).powi(3) + self.w_max
    }

    fn error_received(&mut self, rate: f64, t: f64) -> f64 {
        self.w_max = rate;
        self.k = self.zero_point();
        self.last_fail = t;
        rate * BETA
    }

    /// `RateClocker.record`: counts one response and returns the smoothed rate.
    fn record(&mut self, t: f64) -> f64 {
        let bucket = (t / BUCKET_SECS).floor() * BUCKET_SECS;
        self.count += 1.0;
        if bucket > self.last_bucket {
            let rate = self.count / (bucket - self.last_bucket);
            self.measured = rate * SMOOTHING + self.measured * (1.0 - SMOOTHING);
            self.count = 0.0;
            self.last_bucket = bucket;
        }
        self.measured
    }

    /// `TokenBucket.max_rate = value`: refill at the old rate, then change it.
    fn set_max_rate(&mut self, t: f64, value: f64) {
        self.refill(t);
        self.fill_rate = value.max(MIN_RATE);
        self.max_capacity = value.max(1.0);
        self.capacity = self.capacity.min(self.max_capacity);
    }

    fn refill(&mut self, t: f64) {
        if let Some(last) = self.last_refill {
            // An earlier clock reading (a caller's clock that stepped back) adds nothing.
            let dt = (t - last).max(0.0);
            self.capacity = (self.capacity + dt * self.fill_rate).min(self.max_capacity);
        }
        self.last_refill = Some(self.last_refill.map_or(t, |l| l.max(t)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Nanos {
        Nanos(ms * 1_000_000)
    }

    #[test]
    fn off_until_a_throttle_and_a_plain_error_never_turns_it_on() {
        let mut l = RateLimiter::new(at(0));
        for i in 0..100 {
            assert_eq!(l.acquire(at(i * 10)), Duration::ZERO);
            l.on_response(at(i * 10 + 5), false);
        }
        assert!(!l.enabled());
        l.on_response(at(1_000), true);
        assert!(l.enabled());
    }

    /// A sequential client that is always throttled ends at the 0.5/s floor: one attempt
    /// every 2 s, what botocore 1.44 was measured doing against DynamoDB (2.00 s gaps,
    /// 0.47 req/s).
    #[test]
    fn always_throttled_settles_at_two_seconds() {
        let mut l = RateLimiter::new(at(0));
        let mut now = at(0);
        let mut gaps = vec![];
        let mut last = now;
        for _ in 0..20 {
            loop {
                let wait = l.acquire(now);
                if wait.is_zero() {
                    break;
                }
                assert!(wait <= POLL);
                now = now + wait;
            }
            gaps.push((now.0 - last.0) as f64 / 1e9);
            last = now;
            now = now + Duration::from_millis(1); // the throttle comes back in 1 ms
            l.on_response(now, true);
        }
        assert_eq!(l.rate(), MIN_RATE);
        for g in &gaps[3..] {
            assert!((g - 2.0).abs() < 0.01, "{gaps:?}");
        }
    }

    /// Two waiters for one token: the first to ask when it is there takes it, the other
    /// waits for the next.
    #[test]
    fn one_token_for_the_first_who_asks() {
        let mut l = RateLimiter::new(at(0));
        l.on_response(at(1), true);
        let t = at(2_000);
        assert_eq!(l.acquire(t), Duration::ZERO);
        assert!(!l.acquire(t).is_zero());
        assert!(!l.acquire(at(3_000)).is_zero());
        assert_eq!(l.acquire(at(4_001)), Duration::ZERO);
    }

    /// CUBIC after a throttle: `0.7·W_max` at once, back to `W_max` after `K` seconds.
    #[test]
    fn cubic_recovers_to_w_max_after_k() {
        let mut l = RateLimiter::new(at(0));
        l.w_max = 10.0;
        let r = l.error_received(10.0, 1.0);
        assert!((r - 7.0).abs() < 1e-9);
        let k = (10.0f64 * 0.3 / 0.4).cbrt();
        assert!((l.k - k).abs() < 1e-12);
        assert!((l.success_received(1.0 + k) - 10.0).abs() < 1e-9);
    }

    #[test]
    fn measured_rate_smooths_half_second_buckets() {
        let mut l = RateLimiter::new(at(0));
        // 10 responses in [0, 0.5 s), then one at 0.5 s closes the bucket: 11 / 0.5 s.
        for i in 0..10 {
            l.record(i as f64 * 0.05);
        }
        assert_eq!(l.measured_rate(), 0.0);
        let r = l.record(0.5);
        assert!((r - 22.0 * SMOOTHING).abs() < 1e-9, "{r}");
    }
}
