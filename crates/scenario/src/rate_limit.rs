//! A rate limiter in front of the upstream, with nginx `limit_req` semantics: the most
//! common shape of a struggling service's front door (nginx, Envoy's local rate limit, an
//! API gateway answering 429 or 503), and one a retry strategy meets head on, since every
//! retry it sends is one more request over the rate.
//!
//! Like the fault rules ([`crate::fault`]) and capacity ([`crate::capacity`]), this is the
//! only copy of the rule: the simulator's upstream and the real one (in front of its
//! workers, and in front of a target in proxy mode) both call [`Limiter::check`] with the
//! request's arrival time, so a limit means the same thing on a socket and on a virtual
//! clock. It holds no clock and draws nothing at random; its answer depends only on the
//! arrival times it was given.
//!
//! # The rule (nginx's leaky bucket)
//!
//! Each key has an *excess*, in requests: how far its requests have run ahead of `rate`.
//! It drains at `rate` per second. A request arriving at `t` would make it
//! `max(0, excess − rate·(t − last) + 1)`, where `last` is the previous accepted request;
//! the first request of a key makes it 0.
//!
//! - Above `burst`: the request is rejected (answered `status`, optionally with
//!   `Retry-After`), and the key's state is left as it was, so a rejected request costs
//!   the bucket nothing, as in nginx.
//! - Otherwise it is accepted and the excess is kept. With `nodelay` it goes on at once.
//!   Without, it waits until the excess above `delay` has drained, `(excess − delay) / rate`
//!   seconds (nginx's default is `delay = 0`: every request over the rate is delayed, so
//!   requests leave the limiter spaced `1/rate` apart; `delay = N` lets the first `N`
//!   through at once, nginx's two-stage limiting). A waiting request holds no worker: the
//!   limiter sits in front of capacity, and a request whose client leaves while it waits
//!   is dropped there.
//!
//! So a bucket that starts empty accepts `burst + 1` requests at one instant, and over any
//! window of `w` seconds at most `rate·w + burst + 1`. nginx counts in milli-requests on
//! a millisecond clock (`excess = excess − rate·ms/1000 + 1000`); this counts the same
//! thing exactly, in units of 10⁻¹² request on a nanosecond clock, so the two differ only
//! by nginx's rounding of its clock to the millisecond.
//!
//! ```
//! use herd_scenario::rate_limit::{Limiter, RateLimit, Verdict};
//! let rule = RateLimit { burst: 1, ..RateLimit::nodelay_per_second(10.0) };
//! let mut l = Limiter::new(&rule);
//! assert_eq!(l.check(0, 0), Verdict::Admit); // excess 0
//! assert_eq!(l.check(0, 0), Verdict::Admit); // excess 1 = burst
//! assert_eq!(l.check(0, 0), Verdict::Reject); // excess 2 > burst
//! assert_eq!(l.check(0, 100_000_000), Verdict::Admit); // 100 ms later: 1 drained
//! ```

/// `[upstream.rate_limit]`, validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// The rate, in thousandths of a request per second (nginx's unit: `200r/s` is
    /// 200,000, `30r/m` is 500). At least 1.
    pub milli_rate: u64,
    /// Requests a key may run ahead of the rate before the next is rejected.
    pub burst: u64,
    /// Excess (requests) accepted without delay: 0 delays every request over the rate
    /// (nginx's default), `N` is nginx's `delay=N`, [`RateLimit::NODELAY`] is `nodelay`.
    pub delay: u64,
    /// The status a rejected request is answered with: 503 (nginx's default) or 429.
    pub status: u16,
    /// `Retry-After` seconds sent with a rejection (0: no header).
    pub retry_after_s: u64,
}

impl RateLimit {
    /// [`RateLimit::delay`] for nginx's `nodelay`: no accepted request waits.
    pub const NODELAY: u64 = u64::MAX;

    /// `rate` requests per second, no burst, `nodelay`, answered 503 without
    /// `Retry-After`: a starting point for tests and examples.
    pub fn nodelay_per_second(rate: f64) -> RateLimit {
        RateLimit {
            milli_rate: ((rate * 1000.0).round() as u64).max(1),
            burst: 0,
            delay: RateLimit::NODELAY,
            status: 503,
            retry_after_s: 0,
        }
    }

    /// Whether accepted requests never wait.
    pub fn is_nodelay(&self) -> bool {
        self.delay == RateLimit::NODELAY
    }

    /// The rate, requests per second.
    pub fn per_second(&self) -> f64 {
        self.milli_rate as f64 / 1000.0
    }
}

/// What the limiter decided for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Goes on now.
    Admit,
    /// Goes on after this many nanoseconds (never 0).
    Delay(u64),
    /// Answered [`RateLimit::status`] now; never reaches a worker or a target.
    Reject,
}

/// One request, in the excess's unit: 10⁻¹² request, so that draining at `milli_rate`
/// (10⁻³ request per second) for `d` nanoseconds is exactly `milli_rate · d` units.
const REQUEST: u128 = 1_000_000_000_000;

/// One key's bucket.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    /// Excess after the last accepted request, in units of 10⁻¹² request.
    excess: u128,
    /// When the last accepted request arrived, ns.
    last: u64,
}

/// The limiter's state: a bucket per key, made at the key's first request. Both upstreams
/// keep every request under key 0, one bucket for all (nginx's `limit_req_zone` keyed on
/// `$server_name`): a scenario's requests carry nothing that tells one client from
/// another.
#[derive(Clone, Debug)]
pub struct Limiter {
    milli_rate: u128,
    burst: u128,
    /// `None`: `nodelay`.
    delay: Option<u128>,
    /// Indexed by key (keys are small: 0, or a consumer's index).
    buckets: Vec<Option<Bucket>>,
}

impl Limiter {
    /// A limiter with every bucket empty.
    pub fn new(rule: &RateLimit) -> Limiter {
        Limiter {
            milli_rate: u128::from(rule.milli_rate.max(1)),
            burst: u128::from(rule.burst) * REQUEST,
            delay: (!rule.is_nodelay()).then(|| u128::from(rule.delay) * REQUEST),
            buckets: Vec::new(),
        }
    }

    /// Decides for a request of `key` arriving at `now` nanoseconds from the start of the
    /// run (see the module docs). A `now` earlier than the key's last accepted request
    /// (two threads that read the clock in one order and take the lock in the other)
    /// counts as the same instant.
    pub fn check(&mut self, key: u64, now: u64) -> Verdict {
        let i = usize::try_from(key).unwrap_or(usize::MAX);
        if i >= self.buckets.len() {
            self.buckets.resize(i.saturating_add(1), None);
        }
        let excess = match self.buckets[i] {
            None => 0,
            Some(b) => {
                let drained = self.milli_rate * u128::from(now.saturating_sub(b.last));
                (b.excess + REQUEST).saturating_sub(drained)
            }
        };
        if excess > self.burst {
            return Verdict::Reject;
        }
        let last = self.buckets[i].map_or(now, |b| b.last.max(now));
        self.buckets[i] = Some(Bucket { excess, last });
        match self.delay {
            Some(free) if excess > free => {
                // Rounded up: by then the excess above `delay` has drained.
                let ns = (excess - free).div_ceil(self.milli_rate);
                Verdict::Delay(u64::try_from(ns).unwrap_or(u64::MAX))
            }
            _ => Verdict::Admit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SEC: u64 = 1_000_000_000;

    fn rule(rate: f64, burst: u64, delay: u64) -> RateLimit {
        RateLimit {
            burst,
            delay,
            ..RateLimit::nodelay_per_second(rate)
        }
    }

    /// Request `i` of `n` evenly spaced at `per_s` per second, at its whole nanosecond.
    fn at(i: u64, per_s: u64) -> u64 {
        (u128::from(i) * u128::from(SEC) / u128::from(per_s)) as u64
    }

    /// The closed form for a bucket that never empties (arrivals faster than the rate):
    /// the k-th accepted request (from 0) at `t` has excess `k − rate·t`, so a request at
    /// `t` is accepted while `k ≤ burst + rate·t`; after arrivals up to `t_last`,
    /// `⌊burst + rate·t_last⌋ + 1` have been accepted (or every arrival, if fewer).
    fn accepted_closed_form(rate: u64, burst: u64, n: u64, per_s: u64) -> u64 {
        let t_last = at(n - 1, per_s);
        let k = (u128::from(burst) * u128::from(SEC) + u128::from(rate) * u128::from(t_last))
            / u128::from(SEC);
        (k as u64 + 1).min(n)
    }

    #[test]
    fn nginx_200_per_second_burst_20_nodelay_offered_300_for_10_s() {
        let mut l = Limiter::new(&rule(200.0, 20, RateLimit::NODELAY));
        let n = 3000;
        let mut rejected = 0;
        for i in 0..n {
            match l.check(0, at(i, 300)) {
                Verdict::Admit => {}
                Verdict::Reject => rejected += 1,
                Verdict::Delay(d) => panic!("nodelay delayed {d}"),
            }
        }
        let accepted = accepted_closed_form(200, 20, n, 300);
        assert_eq!(accepted, 2020); // ⌊20 + 200 · 2999/300⌋ + 1
        assert_eq!(rejected, n - accepted);
        // One third of the offered load, less the burst: 980 / 3000 = 32.67%.
        let fraction = rejected as f64 / n as f64;
        assert!((fraction - 1.0 / 3.0).abs() < 0.01, "{fraction}");
    }

    /// Queued (nginx's default, no `nodelay`): the same requests are rejected, and the
    /// accepted ones leave the limiter exactly `1/rate` apart, the k-th at `k/rate`.
    #[test]
    fn queued_requests_leave_conforming_to_the_rate() {
        let mut l = Limiter::new(&rule(200.0, 20, 0));
        let (mut k, mut rejected) = (0u64, 0u64);
        for i in 0..3000 {
            let t = at(i, 300);
            match l.check(0, t) {
                Verdict::Reject => rejected += 1,
                v => {
                    let delay = match v {
                        Verdict::Delay(d) => d,
                        _ => 0,
                    };
                    let leaves = t + delay;
                    // k/rate, to the nanosecond (rounded up).
                    assert!(leaves.abs_diff(k * SEC / 200) <= 1, "{k}: {leaves}");
                    assert!(delay <= 20 * SEC / 200 + 1, "at most burst/rate: {delay}");
                    k += 1;
                }
            }
        }
        assert_eq!((k, rejected), (2020, 980));
    }

    /// `delay = N`: the first `N` of the excess go at once, the rest wait for the excess
    /// above `N` to drain.
    #[test]
    fn two_stage_delay_lets_the_first_through() {
        let mut l = Limiter::new(&rule(10.0, 5, 2));
        let got: Vec<Verdict> = (0..8).map(|_| l.check(0, 0)).collect();
        let ms = |x: u64| Verdict::Delay(x * 1_000_000);
        assert_eq!(
            got,
            [
                Verdict::Admit, // excess 0
                Verdict::Admit, // 1
                Verdict::Admit, // 2 = delay
                ms(100),        // 3: one request above, at 10 r/s
                ms(200),
                ms(300), // 5 = burst
                Verdict::Reject,
                Verdict::Reject,
            ]
        );
    }

    #[test]
    fn an_idle_bucket_empties_and_rejections_cost_nothing() {
        let mut l = Limiter::new(&rule(2.0, 0, RateLimit::NODELAY));
        assert_eq!(l.check(0, 0), Verdict::Admit);
        // Rejected requests do not move `last` nor add to the excess.
        for t in [1, SEC / 4, SEC / 2 - 1] {
            assert_eq!(l.check(0, t), Verdict::Reject, "{t}");
        }
        assert_eq!(l.check(0, SEC / 2), Verdict::Admit);
        // Long idle: back to empty, not below.
        assert_eq!(l.check(0, 100 * SEC), Verdict::Admit);
        assert_eq!(l.check(0, 100 * SEC), Verdict::Reject);
    }

    #[test]
    fn keys_have_buckets_of_their_own() {
        let mut l = Limiter::new(&rule(1.0, 0, RateLimit::NODELAY));
        assert_eq!(l.check(0, 0), Verdict::Admit);
        assert_eq!(l.check(3, 0), Verdict::Admit);
        assert_eq!(l.check(0, 1), Verdict::Reject);
        assert_eq!(l.check(3, 1), Verdict::Reject);
        assert_eq!(l.check(1, 1), Verdict::Admit);
    }

    /// A clock read out of order (two threads) counts as the same instant; a year of
    /// idling at the highest rate does not overflow.
    #[test]
    fn time_going_back_and_huge_gaps() {
        let mut l = Limiter::new(&rule(1e9, 3, RateLimit::NODELAY));
        assert_eq!(l.check(0, 10 * SEC), Verdict::Admit);
        for _ in 0..3 {
            assert_eq!(l.check(0, 5 * SEC), Verdict::Admit);
        }
        assert_eq!(l.check(0, 0), Verdict::Reject);
        assert_eq!(l.check(0, u64::MAX), Verdict::Admit);
        let mut slow = Limiter::new(&RateLimit {
            milli_rate: 1,
            ..rule(1.0, u64::MAX / 2, 0)
        });
        assert_eq!(slow.check(0, 0), Verdict::Admit);
        assert!(matches!(slow.check(0, 0), Verdict::Delay(d) if d == 1000 * SEC));
    }

    /// The k-th request accepted at `t` (0-based, counting from a given request on)
    /// leaves at `t + delay`: collected as (arrival, departure) of every accepted request.
    fn run(rule: &RateLimit, arrivals: &[u64]) -> Vec<(u64, u64)> {
        let mut l = Limiter::new(rule);
        let mut out = Vec::new();
        for &t in arrivals {
            match l.check(0, t) {
                Verdict::Admit => out.push((t, t)),
                Verdict::Delay(d) => {
                    assert!(d > 0);
                    out.push((t, t + d))
                }
                Verdict::Reject => {}
            }
        }
        out
    }

    proptest! {
        /// Whatever the arrivals, the requests accepted with arrival times in any window
        /// of `w` number at most `rate·w + burst + 1`; and without `nodelay` the requests
        /// leaving the limiter in any window do too (queued ones beyond `delay` conform).
        #[test]
        fn accepted_in_any_window_stay_within_rate_times_window_plus_burst(
            rate in 1u64..2000,
            burst in 0u64..30,
            delay_pick in 0u8..3,
            gaps in prop::collection::vec(0u64..20_000_000, 1..400),
        ) {
            let delay = match delay_pick { 0 => 0, 1 => burst / 2, _ => RateLimit::NODELAY };
            let r = rule(rate as f64, burst, delay);
            let mut t = 0;
            let arrivals: Vec<u64> = gaps.iter().map(|g| { t += g; t }).collect();
            let accepted = run(&r, &arrivals);
            let bound = |w: u64| (rate as f64 * w as f64 / SEC as f64) + burst as f64 + 1.0;
            let check = |times: &mut Vec<u64>, extra: f64| {
                times.sort_unstable();
                for i in 0..times.len() {
                    for j in i..times.len() {
                        let w = times[j] - times[i];
                        let n = (j - i + 1) as f64;
                        prop_assert!(n <= bound(w) + extra + 1e-9, "{n} in {w} ns");
                    }
                }
                Ok(())
            };
            check(&mut accepted.iter().map(|a| a.0).collect(), 0.0)?;
            if delay == 0 {
                // Leaving spaced 1/rate: at most rate·w + 1 in a window (rounding up
                // to the nanosecond can bring two a nanosecond closer).
                check(&mut accepted.iter().map(|a| a.1).collect(), -(burst as f64) + 1.0)?;
            }
            // Accepted requests never leave before they arrive, nor later than
            // (burst − delay)/rate after.
            for (a, d) in &accepted {
                prop_assert!(d >= a);
                prop_assert!((d - a) as u128 <= u128::from(burst) * u128::from(SEC) * 1000 / u128::from(r.milli_rate) + 1);
            }
        }
    }
}
