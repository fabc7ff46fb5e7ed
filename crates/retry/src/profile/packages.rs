//! The most-installed retry packages (got, ky, p-retry, stamina, backoff, backon): their
//! delays and the conditions only they have.
//!
//! Their delays are the shared [`Backoff`] with one of the shared jitters: got's `+ up to
//! 100 ms` and stamina's `+ U(0, 1) s` before a 5 s cap are the same [`Jitter::Noise`], so
//! the rule that makes stamina's late waits exactly 5 s is written once. What *is* theirs is
//! kept here: got's and ky's status lists, which retry a 413 only when it carries a
//! `Retry-After`. p-retry, stamina, backoff and backon retry whatever their caller raises,
//! which around an HTTP client is every failure ([`super::Profile::is_retryable`] says so
//! in one arm). Sources are cited on each [`Profile`] variant.

use super::Profile;
use crate::backoff::Backoff;
use crate::classify::{Failure, Method, Outcome};
use crate::jitter::Jitter;
use std::time::Duration;

/// The library's default backoff, for the six profiles of this module.
pub(super) fn default_backoff(profile: Profile) -> Backoff {
    let ms = Duration::from_millis;
    let (base, cap, jitter) = match profile {
        // min(1000·2^(n−1), backoffLimit = ∞) + Math.random()·100 ms.
        Profile::Got => (ms(1000), Duration::MAX, Jitter::Noise(0.1)),
        // 0.3·2^(n−1) s, backoffLimit ∞, jitter undefined.
        Profile::Ky => (ms(300), Duration::MAX, Jitter::None),
        // round(1·max(minTimeout, 1)·2^(n−1)), maxTimeout ∞, randomize false.
        Profile::PRetry => (ms(1000), Duration::MAX, Jitter::None),
        // min(5, 0.1·2^(n−1) + U(0, 1)) s.
        Profile::Stamina => (ms(100), ms(5000), Jitter::Noise(1.0)),
        // full_jitter(expo()): U(0, 2^(n−1)) s, max_value None.
        Profile::Backoff => (ms(1000), Duration::MAX, Jitter::Full),
        // min_delay 1 s, ·2 while below max_delay 60 s, no jitter.
        Profile::Backon => (ms(1000), ms(60_000), Jitter::None),
        other => unreachable!("{other} is not one of the packages' profiles"),
    };
    Backoff {
        base,
        factor: 2.0,
        cap,
        offset: 0,
        jitter,
    }
}

/// A 413 is retried by got and ky only with a `Retry-After` (a zero one reads as none:
/// both test the parsed number for truth).
fn hinted(outcome: &Outcome) -> bool {
    outcome.retry_after().is_some_and(|h| !h.is_zero())
}

/// got 14's default `retry.statusCodes` / `errorCodes` / `methods`. Its methods are exactly
/// [`Method::is_idempotent`]'s (GET, PUT, HEAD, DELETE, OPTIONS, TRACE); its codes are the
/// connection errors and ETIMEDOUT, its own timeout.
pub(super) fn got_retries(method: Method, outcome: &Outcome) -> bool {
    if !method.is_idempotent() {
        return false;
    }
    match outcome {
        Outcome::Response { status: 413, .. } => hinted(outcome),
        Outcome::Response { status, .. } => {
            matches!(status, 408 | 429 | 500 | 502 | 503 | 504 | 521 | 522 | 524)
        }
        Outcome::Failed(f) => f.is_connection_error() || *f == Failure::Timeout,
    }
}

/// ky 1's defaults: statuses 408, 413 (hinted), 429, 500, 502, 503, 504 on get, put, head,
/// delete, options, trace (again [`Method::is_idempotent`]); any error that is not an
/// `HTTPError` nor a timeout (fetch's network `TypeError`) on those methods.
pub(super) fn ky_retries(method: Method, outcome: &Outcome) -> bool {
    if !method.is_idempotent() {
        return false;
    }
    match outcome {
        Outcome::Response { status: 413, .. } => hinted(outcome),
        Outcome::Response { status, .. } => {
            matches!(status, 408 | 429 | 500 | 502 | 503 | 504)
        }
        Outcome::Failed(f) => *f != Failure::Timeout,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Decision, GiveUp, Policy, RetryState};
    use rand::SeedableRng;

    /// Every retry's delay in ms (to the µs) when each attempt ends in `outcome`, seed 1,
    /// and how the policy stopped.
    fn delays(profile: Profile, method: Method, outcome: &Outcome) -> (Vec<f64>, Decision) {
        let policy = Policy::new(profile);
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        let mut state = RetryState::default();
        let mut out = Vec::new();
        loop {
            match policy.decide(&mut state, method, outcome, &mut rng) {
                Decision::Retry { after } => out.push(after.as_micros() as f64 / 1000.0),
                d => return (out, d),
            }
        }
    }

    fn s(code: u16) -> Outcome {
        Outcome::status(code)
    }

    fn hint(status: u16, secs: u64) -> Outcome {
        Outcome::Response {
            status,
            retry_after: Some(Duration::from_secs(secs)),
            throttling: false,
            grpc_status: None,
        }
    }

    const EXHAUSTED: Decision = Decision::GiveUp(GiveUp::Exhausted);

    #[test]
    fn got_waits_1_then_2_s_plus_up_to_100_ms() {
        let (d, end) = delays(Profile::Got, Method::Get, &s(503));
        assert_eq!(end, EXHAUSTED);
        assert_eq!(d.len(), 2);
        for (n, ms) in d.iter().enumerate() {
            let nominal = 1000.0 * f64::from(1u32 << n);
            assert!((nominal..nominal + 100.0).contains(ms), "{d:?}");
        }
        assert_eq!(d, [1085.671, 2013.755], "seed 1's draws (to the µs)");
        // A Retry-After replaces it, uncapped.
        assert_eq!(
            delays(Profile::Got, Method::Get, &hint(503, 120)).0,
            [120_000.0; 2]
        );
        // 413 only with a hint; POST never; 521/522/524 yes, 501 no.
        assert!(!got_retries(Method::Get, &s(413)));
        assert!(got_retries(Method::Get, &hint(413, 1)));
        assert!(!got_retries(Method::Post, &s(503)));
        for code in [408, 429, 500, 502, 503, 504, 521, 522, 524] {
            assert!(got_retries(Method::Trace, &s(code)), "{code}");
        }
        for code in [400, 404, 501, 505, 520] {
            assert!(!got_retries(Method::Get, &s(code)), "{code}");
        }
        assert!(got_retries(Method::Get, &Outcome::Failed(Failure::Timeout)));
        assert!(got_retries(Method::Get, &Outcome::Failed(Failure::Reset)));
        assert!(!got_retries(Method::Get, &Outcome::Failed(Failure::Other)));
    }

    #[test]
    fn ky_waits_300_then_600_ms() {
        let (d, end) = delays(Profile::Ky, Method::Get, &s(503));
        assert_eq!((d, end), (vec![300.0, 600.0], EXHAUSTED));
        // Retry-After replaces the delay on 413/429/503 only.
        assert_eq!(
            delays(Profile::Ky, Method::Get, &hint(429, 7)).0,
            [7000.0; 2]
        );
        assert_eq!(
            delays(Profile::Ky, Method::Get, &hint(500, 7)).0,
            [300.0, 600.0]
        );
        assert!(!ky_retries(Method::Get, &s(413)));
        assert!(ky_retries(Method::Get, &hint(413, 1)));
        assert!(!ky_retries(Method::Get, &s(521)));
        assert!(!ky_retries(Method::Post, &s(503)));
        assert!(!ky_retries(Method::Get, &Outcome::Failed(Failure::Timeout)));
        assert!(ky_retries(Method::Get, &Outcome::Failed(Failure::Other)));
    }

    #[test]
    fn p_retry_doubles_from_1_s_ten_times() {
        let (d, end) = delays(Profile::PRetry, Method::Post, &s(500));
        let want: Vec<f64> = (0..10).map(|n| 1000.0 * f64::from(1u32 << n)).collect();
        assert_eq!((d, end), (want, EXHAUSTED));
        // Any failure, any method; Retry-After is not read.
        assert_eq!(
            delays(Profile::PRetry, Method::Get, &hint(503, 60)).0[..2],
            [1000.0, 2000.0]
        );
        assert!(Profile::PRetry.is_retryable(Method::Post, &s(404)));
    }

    #[test]
    fn stamina_caps_after_the_jitter_so_late_waits_are_exactly_5_s() {
        let (d, end) = delays(Profile::Stamina, Method::Get, &s(503));
        assert_eq!(end, EXHAUSTED);
        assert_eq!(d.len(), 9, "10 attempts");
        for (n, ms) in d.iter().enumerate().take(6) {
            let nominal = 100.0 * f64::from(1u32 << n);
            assert!(
                (nominal..nominal + 1000.0).contains(ms),
                "retry {}: {d:?}",
                n + 1
            );
        }
        // 0.1·2^6 = 6.4 s > 5 s: the cap, after the jitter, takes the jitter with it.
        assert_eq!(d[6..], [5000.0, 5000.0, 5000.0]);
        assert_eq!(
            d[..6],
            [956.717, 337.554, 870.461, 1526.249, 1969.843, 3757.153],
            "seed 1's draws (to the µs)"
        );
        assert!(Profile::Stamina.is_retryable(Method::Post, &Outcome::Failed(Failure::Timeout)));
    }

    #[test]
    fn backoff_draws_full_jitter_from_1_s_doubling() {
        let (d, end) = delays(Profile::Backoff, Method::Get, &s(503));
        assert_eq!(end, EXHAUSTED);
        assert_eq!(d.len(), 25);
        for (n, ms) in d.iter().enumerate() {
            assert!(*ms < 1000.0 * 2f64.powi(n as i32), "retry {}: {ms}", n + 1);
        }
        assert_eq!(
            d[..3],
            [856.717, 275.108, 1881.846],
            "seed 1's draws (to the µs)"
        );
        assert!(Profile::Backoff.is_retryable(Method::Post, &s(400)));
    }

    #[test]
    fn backon_waits_1_2_4_s() {
        let (d, end) = delays(Profile::Backon, Method::Delete, &s(502));
        assert_eq!((d, end), (vec![1000.0, 2000.0, 4000.0], EXHAUSTED));
        // max_delay 60 s: 1, 2, 4, …, 32, 60, 60.
        let p = Policy::new(Profile::Backon).with_retries(8);
        let b = p.backoff();
        let caps: Vec<u128> = (1..=8).map(|n| b.nominal(n).as_millis()).collect();
        assert_eq!(caps, [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000]);
    }

    #[test]
    fn none_of_them_retries_a_success() {
        for p in [
            Profile::Got,
            Profile::Ky,
            Profile::PRetry,
            Profile::Stamina,
            Profile::Backoff,
            Profile::Backon,
        ] {
            assert!(!p.is_retryable(Method::Get, &s(200)), "{p}");
            assert_eq!(p.to_string().parse::<Profile>(), Ok(p));
        }
    }
}
