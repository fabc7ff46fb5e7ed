//! Budget tests: exact behaviour of each kind, and property tests for their bounds.

use super::*;
use proptest::prelude::*;
use std::time::Duration;

fn ms(x: u64) -> Nanos {
    Nanos(x * 1_000_000)
}

#[test]
fn percent_floor_then_percent() {
    // No requests: only the floor, 10/s over 10 s = 100 retries.
    let mut b = Budget::new(BudgetConfig::Percent(PercentConfig::default()));
    let granted = (0..200)
        .filter(|_| b.withdraw(ms(0), RetryCause::Failure).is_some())
        .count();
    assert_eq!(granted, 100);
    // 1000 requests add 200 more.
    let no_floor = PercentConfig::new(Duration::from_secs(10), 0, 0.2).unwrap();
    let mut b = Budget::new(BudgetConfig::Percent(no_floor));
    for _ in 0..1000 {
        b.on_request(ms(0));
    }
    let granted = (0..1000)
        .filter(|_| b.withdraw(ms(1), RetryCause::Failure).is_some())
        .count();
    assert_eq!(granted, 200);
    // Deposits expire after the ttl.
    assert!(b.withdraw(ms(10_500), RetryCause::Failure).is_none());
}

#[test]
fn token_bucket_follows_grpc_a6() {
    let mut b = TokenBucket::new(TokenBucketConfig::default());
    assert!(b.allows_retry());
    for _ in 0..5 {
        b.on_failure();
    }
    assert_eq!(b.tokens(), 5.0);
    assert!(!b.allows_retry(), "retries stop at half the bucket");
    b.on_success();
    assert!(b.allows_retry());
    for _ in 0..100 {
        b.on_failure();
    }
    assert_eq!(b.tokens(), 0.0);
    for _ in 0..1000 {
        b.on_success();
    }
    assert_eq!(b.tokens(), 10.0);
}

#[test]
fn quota_follows_aws_standard() {
    let mut q = Quota::new(QuotaConfig::default());
    assert_eq!(q.withdraw(RetryCause::Failure), Some(5));
    assert_eq!(q.withdraw(RetryCause::Timeout), Some(10));
    assert_eq!(q.tokens(), 485);
    q.on_success(15);
    assert_eq!(q.tokens(), 500);
    q.on_success(0);
    assert_eq!(q.tokens(), 500, "never above the initial quota");
    let granted = (0..1000)
        .filter(|_| q.withdraw(RetryCause::Failure).is_some())
        .count();
    assert_eq!(granted, 100);
    assert_eq!(q.withdraw(RetryCause::Failure), None);
}

#[test]
fn ratio_has_no_floor() {
    let mut r = Ratio::new(RatioConfig::default());
    assert!(!r.withdraw(ms(0)));
    for _ in 0..100 {
        r.deposit(ms(0));
    }
    assert_eq!((0..50).filter(|_| r.withdraw(ms(1))).count(), 10);
}

#[test]
fn adaptive_rejects_when_accepts_fall() {
    let mut a = Adaptive::new(AdaptiveConfig::default());
    for _ in 0..100 {
        assert!(a.admit(ms(0), 0.0));
        a.on_accept(ms(0));
    }
    assert_eq!(a.reject_probability(ms(0)), 0.0);
    // The upstream stops accepting: 300 more requests, none accepted.
    for _ in 0..300 {
        a.admit(ms(1), 0.999);
    }
    let p = a.reject_probability(ms(1));
    assert!((p - (400.0 - 200.0) / 401.0).abs() < 1e-9, "{p}");
}

proptest! {
    /// Over the ttl, retries never exceed percent · requests + floor · ttl.
    #[test]
    fn percent_bound(requests in proptest::collection::vec(0u32..50, 1..200), asks in 0u32..100, pct in 0.0f64..1.0, floor in 0u32..20) {
        let cfg = PercentConfig::new(Duration::from_secs(10), floor, pct).unwrap();
        let mut b = Percent::new(cfg);
        let mut granted = 0u64;
        let mut deposited = 0u64;
        // All within one ttl (100 ms steps, < 10 s).
        for (i, n) in requests.iter().take(99).enumerate() {
            let now = ms(i as u64 * 100);
            for _ in 0..*n { b.deposit(now); deposited += 1; }
            for _ in 0..asks { if b.withdraw(now) { granted += 1; } }
        }
        let bound = pct * deposited as f64 + floor as f64 * 10.0;
        prop_assert!(granted as f64 <= bound + 1.0 + 1e-6, "{granted} > {bound}");
    }

    /// Tokens and quota never go negative nor above their maximum, whatever happens.
    #[test]
    fn tokens_stay_in_range(ops in proptest::collection::vec(0u8..4, 0..500)) {
        let mut t = TokenBucket::new(TokenBucketConfig::default());
        let mut q = Quota::new(QuotaConfig::default());
        for op in ops {
            match op {
                0 => { t.on_failure(); let _ = q.withdraw(RetryCause::Failure); }
                1 => { t.on_success(); q.on_success(0); }
                2 => { let _ = q.withdraw(RetryCause::Timeout); }
                _ => q.on_success(10),
            }
            prop_assert!(t.tokens() >= 0.0 && t.tokens() <= 10.0);
            prop_assert!(q.tokens() <= 500);
        }
    }

    /// Whatever the order of attempts, grants and releases, the retries counted never
    /// exceed the cap, and a refusal only happens at the cap.
    #[test]
    fn concurrency_never_exceeds_the_cap(ops in proptest::collection::vec(0u8..4, 0..2000), budget in proptest::bool::ANY, max in 0u32..8, pct in 0.0f64..100.0, floor in 0u32..5) {
        let cfg = if budget {
            ConcurrencyConfig::retry_budget(pct, floor).unwrap()
        } else {
            ConcurrencyConfig::max_retries(max)
        };
        let mut c = Concurrency::new(cfg);
        let mut held = 0u64;
        for op in ops {
            match op {
                0 => c.attempt_started(),
                1 => c.attempt_ended(),
                2 => {
                    let cap = c.max();
                    let granted = c.acquire();
                    prop_assert_eq!(granted, held < cap);
                    if granted { held += 1; }
                    // A grant never takes the count past the cap of its moment.
                    prop_assert!(!granted || held <= cap);
                }
                _ => if held > 0 { c.release(); held -= 1; },
            }
            prop_assert_eq!(c.retries(), held);
            // A fixed cap bounds the count at all times; a budget's cap can shrink under
            // retries already granted (envoy-mobile#811), never grant past it.
            if !budget {
                prop_assert!(held <= u64::from(max));
            }
        }
    }

    /// The SRE ratio holds over the window.
    #[test]
    fn ratio_bound(requests in 0u32..1000, asks in 0u32..1000) {
        let mut r = Ratio::new(RatioConfig::default());
        for _ in 0..requests { r.deposit(ms(0)); }
        let granted = (0..asks).filter(|_| r.withdraw(ms(5))).count() as f64;
        prop_assert!(granted <= 0.1 * requests as f64 + 1e-9);
    }
}

/// The constructors take what the defaults are, and refuse what no budget can run with.
#[test]
fn configs_check_their_settings() {
    let s = Duration::from_secs;
    let d = PercentConfig::default();
    assert_eq!(
        PercentConfig::new(d.ttl(), d.min_per_sec(), d.percent()),
        Ok(d)
    );
    assert_eq!(
        PercentConfig::new(Duration::from_millis(999), 10, 0.2),
        Err(BudgetError::Ttl(Duration::from_millis(999)))
    );
    assert!(PercentConfig::new(s(61), 10, 0.2).is_err());
    assert!(PercentConfig::new(s(60), 10, 1000.0).is_ok());
    for bad in [-0.1, f64::NAN, f64::INFINITY, 1000.5] {
        assert!(PercentConfig::new(s(10), 10, bad).is_err(), "{bad}");
    }
    let t = TokenBucketConfig::default();
    assert_eq!(
        TokenBucketConfig::new(t.max_tokens(), t.token_ratio()),
        Ok(t)
    );
    assert_eq!(
        TokenBucketConfig::new(0.0, 0.1).unwrap_err().to_string(),
        "the budget's max_tokens must be above 0 and at most 1000, got 0"
    );
    assert!(TokenBucketConfig::new(10.0, 1.5).is_err());
    let r = RatioConfig::default();
    assert_eq!(RatioConfig::new(r.ratio(), r.window()), Ok(r));
    assert_eq!(
        RatioConfig::new(0.1, Duration::ZERO),
        Err(BudgetError::ZeroWindow("ratio"))
    );
    let a = AdaptiveConfig::default();
    assert_eq!(AdaptiveConfig::new(a.k(), a.window()), Ok(a));
    assert_eq!(AdaptiveConfig::new(0.5, s(1)), Err(BudgetError::K(0.5)));
    assert!(AdaptiveConfig::new(f64::NAN, s(1)).is_err());
    assert!(AdaptiveConfig::new(2.0, Duration::ZERO).is_err());
}

#[test]
fn concurrency_max_retries_counts_from_grant_to_release() {
    // Envoy's default circuit breaker: `max_retries` 3.
    let mut c = Concurrency::new(ConcurrencyConfig::default());
    assert_eq!(c.max(), 3);
    let grants: Vec<bool> = (0..5).map(|_| c.acquire()).collect();
    assert_eq!(grants, [true, true, true, false, false]);
    assert_eq!(c.retries(), 3);
    // Attempts outstanding do not move a fixed cap.
    for _ in 0..100 {
        c.attempt_started();
    }
    assert!(!c.acquire());
    c.release();
    assert_eq!(c.retries(), 2);
    assert!(c.acquire(), "a released retry makes room for one more");
    assert!(!c.acquire());
    // Istio's cap never refuses.
    let mut i = Concurrency::new(ConcurrencyConfig::ISTIO);
    assert!((0..100_000).all(|_| i.acquire()));
}

#[test]
fn concurrency_budget_follows_active_and_pending() {
    // PR #9069's example: 20% with a minimum of 3 allows 5 retries at 25 active
    // requests, and still 3 at 2.
    let mut c = Concurrency::new(ConcurrencyConfig::envoy_retry_budget());
    for _ in 0..25 {
        c.attempt_started();
    }
    assert_eq!(c.max(), 5);
    assert_eq!((0..10).filter(|_| c.acquire()).count(), 5);
    // 24 active: 20% is 4.8, truncated to 4, so no new retry until two are released.
    c.attempt_ended();
    assert_eq!(c.max(), 4);
    c.release();
    assert!(!c.acquire(), "4 counted, cap 4");
    c.release();
    assert!(c.acquire());
    // Requests turning into retries in backoff shrink the cap to its floor
    // (envoyproxy/envoy-mobile#811).
    for _ in 0..24 {
        c.attempt_ended();
    }
    assert_eq!((c.outstanding(), c.max()), (0, 3));
    assert!(
        !c.acquire(),
        "4 retries still counted, above the floor of 3"
    );
    let zero = ConcurrencyConfig::retry_budget(100.0, 0).unwrap();
    let mut z = Concurrency::new(zero);
    assert!(!z.acquire(), "no active request, no floor: no retry");
    z.attempt_started();
    assert!(z.acquire());
    assert!(ConcurrencyConfig::retry_budget(100.5, 3).is_err());
    assert!(ConcurrencyConfig::retry_budget(f64::NAN, 3).is_err());
}
