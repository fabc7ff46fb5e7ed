//! The AWS profiles end to end through a [`Retrier`], under fixed seeds: the quota's
//! arithmetic against an upstream that always fails, the two backoff bases, and adaptive
//! mode's pacing after a throttle.

use crate::budget::QuotaConfig;
use crate::{Decision, Method, Nanos, Outcome, Profile, Retrier, Strategy};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use std::time::Duration;

/// One call's attempts, each answered `outcome` `rtt` after it is sent, starting at `now`;
/// returns the send times and the time the call ended.
fn call(
    r: &mut Retrier,
    now: Nanos,
    outcome: Outcome,
    rtt: Duration,
    rng: &mut Pcg64Mcg,
) -> (Vec<Nanos>, Nanos) {
    let mut req = r.begin(now);
    let mut at = now;
    let mut sent = vec![];
    loop {
        loop {
            let wait = r.pace(at);
            if wait.is_zero() {
                break;
            }
            at = at + wait;
        }
        assert!(r.admit(&mut req, at, rng));
        sent.push(at);
        at = at + rtt;
        match r.decide(&mut req, Method::Get, &outcome, at, rng) {
            Decision::Retry { after } => at = at + after,
            _ => return (sent, at),
        }
    }
}

/// Attempts per call for `calls` sequential calls that always fail with `outcome`.
fn attempts(strategy: Strategy, calls: usize, outcome: Outcome) -> Vec<usize> {
    let mut r = Retrier::new(strategy);
    let mut rng = Pcg64Mcg::seed_from_u64(7);
    let mut now = Nanos::ZERO;
    (0..calls)
        .map(|_| {
            let (sent, end) = call(&mut r, now, outcome, Duration::from_millis(1), &mut rng);
            now = end;
            sent.len()
        })
        .collect()
}

/// What the quota arithmetic says for calls of `max` attempts, every one failing, at
/// `cost` per retry from `quota` tokens: full calls while a whole call's retries fit,
/// then one call with what is left, then first attempts only.
fn by_the_rules(calls: usize, max: usize, quota: u32, cost: u32) -> Vec<usize> {
    let retries = (quota / cost) as usize;
    let full = retries / (max - 1);
    let rest = retries % (max - 1);
    let mut out = vec![max; full];
    if rest > 0 {
        out.push(1 + rest);
    }
    out.resize(calls, 1);
    out
}

#[test]
fn standard_2026_gives_235_requests_for_200_failing_calls() {
    let got = attempts(
        Strategy::new(Profile::AwsStandard),
        200,
        Outcome::status(503),
    );
    let want = by_the_rules(200, 3, 500, 14);
    assert_eq!(got, want);
    // 500 / 14 = 35 retries: 17 calls of 3 attempts, one of 2, 182 of 1.
    assert_eq!(got.iter().sum::<usize>(), 235);
    assert_eq!(&got[16..19], [3, 2, 1]);
}

/// Calls whose first two attempts fail and third succeeds: each takes two retries (28) and
/// gets back the last one's 14, as botocore's `release_retry_quota` does, so the quota
/// drains by 14 a call: 34 calls of 3 attempts, one of 2 (the second retry refused), then
/// first attempts only. Refunding both retries would keep every call at 3 for ever.
#[test]
fn a_success_gives_back_its_last_retry_only() {
    let mut r = Retrier::new(Strategy::new(Profile::AwsStandard));
    let mut rng = Pcg64Mcg::seed_from_u64(7);
    let mut now = Nanos::ZERO;
    let got: Vec<usize> = (0..60)
        .map(|_| {
            let mut req = r.begin(now);
            let mut n = 0;
            loop {
                assert!(r.admit(&mut req, now, &mut rng));
                n += 1;
                now = now + Duration::from_millis(1);
                let outcome = if n == 3 {
                    Outcome::status(200)
                } else {
                    Outcome::status(503)
                };
                match r.decide(&mut req, Method::Get, &outcome, now, &mut rng) {
                    Decision::Retry { after } => now = now + after,
                    _ => return n,
                }
            }
        })
        .collect();
    let mut want = vec![3; 34];
    want.push(2);
    want.resize(60, 1);
    assert_eq!(got, want);
}

#[test]
fn dynamodb_4_attempts_give_235_too() {
    let ddb = Strategy::new(Profile::AwsStandard);
    let ddb = Strategy {
        policy: ddb
            .policy
            .with_retries(3)
            .with_base(Duration::from_millis(25)),
        ..ddb
    };
    let got = attempts(ddb, 200, Outcome::status(500));
    assert_eq!(got, by_the_rules(200, 4, 500, 14));
    // 11×4 + 1×3 + 188×1, what botocore 1.44 sent to a failing DynamoDB.
    assert_eq!(got.iter().sum::<usize>(), 235);
}

#[test]
fn throttling_costs_5_and_the_2_0_rules_5_for_everything() {
    let got = attempts(
        Strategy::new(Profile::AwsStandard),
        200,
        Outcome::throttling(503),
    );
    assert_eq!(got, by_the_rules(200, 3, 500, 5));
    assert_eq!(got.iter().sum::<usize>(), 300);
    let old = attempts(
        Strategy::new(Profile::AwsStandard2_0),
        200,
        Outcome::status(503),
    );
    assert_eq!(
        old,
        by_the_rules(200, 3, 500, QuotaConfig::default().retry_cost)
    );
}

#[test]
fn legacy_has_no_quota_and_standard_skips_a_bare_429() {
    let got = attempts(Strategy::new(Profile::AwsLegacy), 200, Outcome::status(503));
    assert_eq!(got, vec![5; 200]);
    assert_eq!(
        attempts(Strategy::new(Profile::AwsStandard), 3, Outcome::status(429)),
        [1, 1, 1]
    );
    assert_eq!(
        attempts(Strategy::new(Profile::AwsLegacy), 1, Outcome::status(429)),
        [5]
    );
    // DynamoDB's ThrottlingException is a 400: retried for its code, not its status.
    assert_eq!(
        attempts(Strategy::new(Profile::AwsStandard), 1, Outcome::status(400)),
        [1]
    );
    assert_eq!(
        attempts(
            Strategy::new(Profile::AwsStandard),
            1,
            Outcome::throttling(400)
        ),
        [3]
    );
}

/// The gaps between one call's attempts, in ms.
fn gaps(sent: &[Nanos]) -> Vec<u64> {
    sent.windows(2)
        .map(|w| (w[1].0 - w[0].0) / 1_000_000)
        .collect()
}

#[test]
fn backoff_is_50_ms_for_errors_and_1_s_for_throttling() {
    let mut rng = Pcg64Mcg::seed_from_u64(3);
    let mut worst = [0u64; 2];
    let mut worst_t = [0u64; 2];
    for i in 0..200u64 {
        // A fresh client each time, so the quota never runs out.
        let mut r = Retrier::new(Strategy::new(Profile::AwsStandard));
        let t = Nanos(i * 1_000_000_000);
        let (sent, _) = call(&mut r, t, Outcome::status(503), Duration::ZERO, &mut rng);
        for (w, g) in worst.iter_mut().zip(gaps(&sent)) {
            *w = (*w).max(g);
        }
        let (sent, _) = call(
            &mut r,
            t,
            Outcome::throttling(503),
            Duration::ZERO,
            &mut rng,
        );
        for (w, g) in worst_t.iter_mut().zip(gaps(&sent)) {
            *w = (*w).max(g);
        }
    }
    // U(0, 50 ms) then U(0, 100 ms); U(0, 1 s) then U(0, 2 s): the largest of 200 draws
    // is close to the top and never above it.
    assert!(worst[0] < 50 && worst[0] >= 45, "{worst:?}");
    assert!(worst[1] < 100 && worst[1] >= 90, "{worst:?}");
    assert!(worst_t[0] < 1000 && worst_t[0] >= 900, "{worst_t:?}");
    assert!(worst_t[1] < 2000 && worst_t[1] >= 1800, "{worst_t:?}");
}

/// Ten sequential DynamoDB calls, always throttled (as measured with botocore's adaptive
/// mode against a throttling server; `crates/cli/tests/real_aws.rs`): adaptive mode holds every request after
/// the first throttle to the 0.5/s floor; standard mode only backs off.
fn ddb_rate(profile: Profile) -> (f64, Vec<u64>) {
    let s = Strategy::new(profile);
    let mut r = Retrier::new(Strategy {
        policy: s
            .policy
            .with_retries(3)
            .with_base(Duration::from_millis(25)),
        ..s
    });
    let mut rng = Pcg64Mcg::seed_from_u64(11);
    let mut now = Nanos::ZERO;
    let mut all = vec![];
    for _ in 0..10 {
        let (sent, end) = call(
            &mut r,
            now,
            Outcome::throttling(400),
            Duration::from_millis(2),
            &mut rng,
        );
        all.extend(sent);
        now = end;
    }
    let span = (all[all.len() - 1].0 - all[0].0) as f64 / 1e9;
    ((all.len() - 1) as f64 / span, gaps(&all))
}

#[test]
fn adaptive_spaces_every_request_about_2_s_after_a_throttle() {
    let (rate, gaps) = ddb_rate(Profile::AwsAdaptive);
    assert_eq!(gaps.len(), 39);
    // Never closer than the floor's 2 s after the first throttle (the first gap is the
    // first retry's backoff, before the limiter had a rate).
    assert!(gaps[1..].iter().all(|&g| g >= 1_990), "{gaps:?}");
    assert!((0.40..=0.50).contains(&rate), "{rate} req/s");
    let (standard, _) = ddb_rate(Profile::AwsStandard);
    assert!((0.8..=1.5).contains(&standard), "{standard} req/s");
}

#[test]
fn names_and_defaults() {
    for (name, budget) in [
        ("aws-standard", "quota 500 tokens, 14 per retry"),
        ("aws-standard-2.0", "quota 500 tokens, 5 per retry"),
        ("aws-adaptive", "CUBIC rate limiter"),
    ] {
        let s = Strategy::new(name.parse().unwrap());
        assert!(s.to_string().contains(budget), "{s}");
        assert_eq!(s.policy.retries(), 2);
    }
    let legacy = Strategy::new(Profile::AwsLegacy);
    assert!(legacy.budget.is_none());
    assert_eq!(legacy.policy.retries(), 4);
}
