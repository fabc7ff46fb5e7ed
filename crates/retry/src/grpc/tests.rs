use super::*;
use crate::classify::{Failure, Method, Outcome};
use crate::hedge::{Action, Hedger};
use crate::nanos::Nanos;
use crate::policy::Decision;
use crate::retrier::Retrier;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// The retry policy of the measurements (4 attempts, 0.1 s, ×2, 1 s, UNAVAILABLE), with
/// `throttling` when given.
fn config(throttling: &str) -> ServiceConfig {
    ServiceConfig::parse(&format!(
        r#"{{"methodConfig":[{{"name":[{{}}],"retryPolicy":{{"maxAttempts":4,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}}}]{throttling}}}"#
    ))
    .unwrap()
}

const THROTTLED: &str = r#","retryThrottling":{"maxTokens":10,"tokenRatio":0.1}"#;

fn unavailable() -> Outcome {
    Outcome::grpc(Code::UNAVAILABLE.0, None)
}

/// The waits before the retries one call sent, its every attempt ending in `outcome`, and
/// how it ended (a retry the throttle refused as it was about to go was not sent).
fn waits(r: &mut Retrier, outcome: Outcome, rng: &mut Pcg64Mcg) -> (Vec<u128>, Decision) {
    let now = Nanos::ZERO;
    let mut req = r.begin(now);
    let mut out = vec![];
    loop {
        let ended = if r.admit(&mut req, now, rng) {
            outcome
        } else {
            out.pop();
            Outcome::Failed(Failure::Throttled)
        };
        match r.decide(&mut req, Method::Post, &ended, now, rng) {
            Decision::Retry { after } => out.push(after.as_millis()),
            d => return (out, d),
        }
    }
}

#[test]
fn reads_the_a6_example() {
    let c = config(THROTTLED);
    assert_eq!(c.path(), "/herd.Herd/Call");
    let MethodPolicy::Retry(r) = c.policy else {
        panic!("{c:?}")
    };
    assert_eq!(r.max_attempts, 4);
    assert_eq!(r.initial_backoff, Duration::from_millis(100));
    assert_eq!(r.max_backoff, Duration::from_secs(1));
    assert_eq!(r.multiplier, 2.0);
    assert_eq!(r.retryable, Codes::of(&[Code::UNAVAILABLE]));
    let t = c.throttling.unwrap();
    assert_eq!((t.max_tokens(), t.token_ratio()), (10.0, 0.1));
    let p = replica(Implementation::Core, &c).strategy.policy;
    assert_eq!(
        p.to_string(),
        "grpc-core: maxAttempts 4, initialBackoff 0.1s, maxBackoff 1s, backoffMultiplier 2, jitter proportional(0.2), retryableStatusCodes UNAVAILABLE"
    );
}

#[test]
fn refuses_what_a_channel_refuses() {
    let bad = |json: &str, path: &str| match ServiceConfig::parse(json) {
        Err(ServiceConfigError::Invalid { path: p, .. }) => assert_eq!(p, path, "{json}"),
        other => panic!("{json}: {other:?}"),
    };
    let rp =
        |body: &str| format!(r#"{{"methodConfig":[{{"name":[{{}}],"retryPolicy":{{{body}}}}}]}}"#);
    let ok = r#""initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]"#;
    bad(
        &rp(&format!(r#""maxAttempts":1,{ok}"#)),
        "methodConfig[0].retryPolicy.maxAttempts",
    );
    bad(
        &rp(&format!(r#""maxAttempts":2.5,{ok}"#)),
        "methodConfig[0].retryPolicy.maxAttempts",
    );
    bad(
        &rp(
            r#""maxAttempts":3,"initialBackoff":"100ms","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]"#,
        ),
        "methodConfig[0].retryPolicy.initialBackoff",
    );
    bad(
        &rp(
            r#""maxAttempts":3,"initialBackoff":"0s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]"#,
        ),
        "methodConfig[0].retryPolicy.initialBackoff",
    );
    bad(
        &rp(
            r#""maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":[]"#,
        ),
        "methodConfig[0].retryPolicy.retryableStatusCodes",
    );
    bad(
        &rp(
            r#""maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["unavailable"]"#,
        ),
        "methodConfig[0].retryPolicy.retryableStatusCodes[0]",
    );
    bad(
        &rp(
            r#""maxAttempts":3,"initialBackoff":"0.1s","maxBackoff":"1s","retryableStatusCodes":[14]"#,
        ),
        "methodConfig[0].retryPolicy.backoffMultiplier",
    );
    bad(
        r#"{"methodConfig":[{"name":[{}],"retryPolicy":{},"hedgingPolicy":{}}]}"#,
        "methodConfig[0]",
    );
    bad(
        r#"{"methodConfig":[{"name":[{"method":"Get"}]}]}"#,
        "methodConfig[0].name[0]",
    );
    bad(
        r#"{"retryThrottling":{"maxTokens":0,"tokenRatio":0.1}}"#,
        "retryThrottling",
    );
    assert!(matches!(
        ServiceConfig::parse("{methodConfig"),
        Err(ServiceConfigError::Json(_))
    ));
    // Above 5 attempts is cut to 5, numbers are codes too, and other keys are left alone.
    let c = ServiceConfig::parse(&rp(
        r#""maxAttempts":7,"initialBackoff":"0.25s","maxBackoff":"2.5s","backoffMultiplier":1.5,"retryableStatusCodes":[14,"RESOURCE_EXHAUSTED"]"#,
    ))
    .unwrap();
    let MethodPolicy::Retry(r) = c.policy else {
        panic!()
    };
    assert_eq!(r.max_attempts, 5);
    assert_eq!(r.initial_backoff, Duration::from_millis(250));
    assert_eq!(
        r.retryable,
        Codes::of(&[Code::UNAVAILABLE, Code::RESOURCE_EXHAUSTED])
    );
    assert!(ServiceConfig::parse(r#"{"loadBalancingConfig":[{"round_robin":{}}]}"#).is_ok());
}

#[test]
fn the_called_method_finds_its_config_as_a6_looks_it_up() {
    let c = ServiceConfig::parse(
        r#"{"methodConfig":[
            {"name":[{"service":"shop.Cart","method":"Add"}],"retryPolicy":{"maxAttempts":2,"initialBackoff":"1s","maxBackoff":"1s","backoffMultiplier":1,"retryableStatusCodes":["UNAVAILABLE"]}},
            {"name":[{}],"retryPolicy":{"maxAttempts":5,"initialBackoff":"1s","maxBackoff":"1s","backoffMultiplier":1,"retryableStatusCodes":["UNAVAILABLE"]}},
            {"name":[{"service":"shop.Cart"}],"retryPolicy":{"maxAttempts":3,"initialBackoff":"1s","maxBackoff":"1s","backoffMultiplier":1,"retryableStatusCodes":["UNAVAILABLE"]}}]}"#,
    )
    .unwrap();
    assert_eq!(c.path(), "/shop.Cart/Add");
    assert!(matches!(c.policy, MethodPolicy::Retry(r) if r.max_attempts == 2));
    // No method config: the default method, no retries.
    let c = ServiceConfig::parse("{}").unwrap();
    assert_eq!(
        (c.path().as_str(), c.policy),
        ("/herd.Herd/Call", MethodPolicy::None)
    );
    let r = replica(Implementation::Js, &c);
    assert_eq!(r.strategy.policy.retries(), 0);
    assert_eq!(r.strategy.policy.to_string(), "grpc-js: no retryPolicy");
}

/// C-core, grpc-js and new grpc-go: `min(0.1·2^(n−1), 1) s · U(0.8, 1.2)`, the draws
/// the formula makes from the same seed.
#[test]
fn plus_minus_twenty_percent_around_the_exponential_wait() {
    for imp in [Implementation::Core, Implementation::Js, Implementation::Go] {
        let mut r = Retrier::new(replica(imp, &config("")).strategy);
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        let (d, end) = waits(&mut r, unavailable(), &mut rng);
        assert_eq!(end, Decision::GiveUp(crate::GiveUp::Exhausted));
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        let formula: Vec<u128> = [100.0f64, 200.0, 400.0]
            .iter()
            .map(|b| (b * (0.8 + rng.random::<f64>() * 0.4)) as u128)
            .collect();
        assert_eq!(d, formula, "{imp}");
        assert_eq!(d, [107, 198, 363], "{imp}");
    }
}

/// grpc-go 1.33: `U(0, b)`.
#[test]
fn grpc_go_1_33_draws_full_jitter() {
    let mut r = Retrier::new(replica(Implementation::Go1_33, &config("")).strategy);
    let mut rng = Pcg64Mcg::seed_from_u64(7);
    let (d, _) = waits(&mut r, unavailable(), &mut rng);
    let mut rng = Pcg64Mcg::seed_from_u64(7);
    let formula: Vec<u128> = [100.0f64, 200.0, 400.0]
        .iter()
        .map(|b| (b * rng.random::<f64>()) as u128)
        .collect();
    assert_eq!(d, formula);
    assert_eq!(d, [68, 95, 108]);
}

/// The measured count: with {10, 0.1}, 50 calls against a server that fails every
/// attempt UNAVAILABLE make 4 + 49 × 1 = 53 attempts, in every implementation.
#[test]
fn throttling_lets_53_attempts_through_50_failing_calls() {
    for imp in Implementation::ALL {
        let mut r = Retrier::new(replica(imp, &config(THROTTLED)).strategy);
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        let per_call: Vec<usize> = (0..50)
            .map(|_| waits(&mut r, unavailable(), &mut rng).0.len() + 1)
            .collect();
        assert_eq!(per_call[0], 4, "{imp}");
        assert!(per_call[1..].iter().all(|n| *n == 1), "{imp}: {per_call:?}");
        assert_eq!(r.counters().attempts, 53, "{imp}");
        assert_eq!(r.counters().refused_by_budget, 49, "{imp}");
    }
}

/// C-core and grpc-go ask the bucket at the failure, grpc-js when the backoff has passed
/// (`canRetryCall()` in its `setTimeout`): what happens to the bucket during the wait
/// counts for grpc-js only.
#[test]
fn grpc_js_asks_the_throttle_when_the_backoff_has_passed() {
    let now = Nanos::ZERO;
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    for imp in [Implementation::Core, Implementation::Js] {
        let strategy = replica(imp, &config(THROTTLED)).strategy;
        // Tokens 6 after a first call's four failures; the next failure leaves 5.
        let primed = |rng: &mut Pcg64Mcg| {
            let mut r = Retrier::new(strategy);
            assert_eq!(waits(&mut r, unavailable(), rng).0.len(), 3);
            let mut req = r.begin(now);
            assert!(r.admit(&mut req, now, rng));
            let d = r.decide(&mut req, Method::Post, &unavailable(), now, rng);
            (r, req, d)
        };
        let (mut r, mut req, d) = primed(&mut rng);
        if imp == Implementation::Core {
            assert_eq!(d, Decision::GiveUp(crate::GiveUp::Budget));
            continue;
        }
        // grpc-js waits, and asks then: still 5, so the retry is not sent and the call ends.
        assert!(matches!(d, Decision::Retry { .. }), "{d:?}");
        assert!(!r.admit(&mut req, now, &mut rng));
        let end = r.decide(
            &mut req,
            Method::Post,
            &Outcome::Failed(Failure::Throttled),
            now,
            &mut rng,
        );
        assert_eq!(end, Decision::GiveUp(crate::GiveUp::Budget));
        assert_eq!(r.counters().attempts, 5);
        // Another call succeeding during the wait (5.1) lets the retry go.
        let (mut r, mut req, _) = primed(&mut rng);
        assert_eq!(
            waits(&mut r, Outcome::grpc(0, None), &mut rng).1,
            Decision::Success
        );
        assert!(r.admit(&mut req, now, &mut rng));
    }
    let js = replica(Implementation::Js, &config(THROTTLED)).strategy;
    assert!(
        js.to_string()
            .ends_with("token bucket 10 tokens, ratio 0.1, checked after the backoff"),
        "{js}"
    );
}

/// Only retryable failures take tokens: 50 INTERNAL answers leave the bucket full, so
/// the next UNAVAILABLE call still makes its four attempts; a success gives back 0.1.
#[test]
fn only_retryable_failures_take_tokens() {
    let mut r = Retrier::new(replica(Implementation::Core, &config(THROTTLED)).strategy);
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    for _ in 0..50 {
        let (d, end) = waits(&mut r, Outcome::grpc(Code::INTERNAL.0, None), &mut rng);
        assert!(d.is_empty());
        assert_eq!(end, Decision::GiveUp(crate::GiveUp::NotRetryable));
    }
    assert_eq!(waits(&mut r, unavailable(), &mut rng).0.len(), 3);
    // Tokens 6: the next call fails once (5, not above half) and stops.
    assert_eq!(waits(&mut r, unavailable(), &mut rng).0.len(), 0);
    // Ten successes bring it back to 6: a retry goes again.
    for _ in 0..11 {
        assert_eq!(
            waits(&mut r, Outcome::grpc(0, None), &mut rng).1,
            Decision::Success
        );
    }
    assert_eq!(waits(&mut r, unavailable(), &mut rng).0.len(), 1);
}

/// A reset is the upstream's `RST_STREAM` (INTERNAL); a refused connection UNAVAILABLE; a
/// deadline is never retried.
#[test]
fn failures_are_classified_by_the_status_a_grpc_client_reports() {
    let p = replica(Implementation::Core, &config("")).strategy.policy;
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    let first =
        |o: Outcome, rng: &mut Pcg64Mcg| p.decide(&mut Default::default(), Method::Post, &o, rng);
    assert!(matches!(
        first(Outcome::Failed(Failure::Refused), &mut rng),
        Decision::Retry { .. }
    ));
    assert!(matches!(
        first(Outcome::Failed(Failure::Closed), &mut rng),
        Decision::Retry { .. }
    ));
    for f in [Failure::Reset, Failure::Timeout] {
        assert_eq!(
            first(Outcome::Failed(f), &mut rng),
            Decision::GiveUp(crate::GiveUp::NotRetryable)
        );
    }
    // An HTTP 503 without grpc-status is UNAVAILABLE by gRPC's mapping; a 200 is OK.
    assert!(matches!(
        first(Outcome::status(503), &mut rng),
        Decision::Retry { .. }
    ));
    assert_eq!(first(Outcome::status(200), &mut rng), Decision::Success);
}

/// `grpc-retry-pushback-ms` replaces the wait, and the backoff after it starts again from
/// `initialBackoff` (A6 "Pushback"; grpc-js sets `nextRetryBackoffSec` back to the initial).
#[test]
fn pushback_replaces_the_wait_and_restarts_the_backoff() {
    let p = replica(Implementation::Go1_33, &config(""))
        .strategy
        .policy
        .with_jitter(crate::Jitter::None);
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    let mut st = Default::default();
    let mut next = |o: Outcome| match p.decide(&mut st, Method::Post, &o, &mut rng) {
        Decision::Retry { after } => after.as_millis(),
        d => panic!("{d:?}"),
    };
    assert_eq!(next(unavailable()), 100);
    assert_eq!(
        next(Outcome::grpc(14, Some(Duration::from_millis(750)))),
        750
    );
    assert_eq!(next(unavailable()), 100);
}

/// grpc-js hedges at 0, d, 2d; a non-fatal status sends the next one at once; its hedges
/// never ask the throttle, so a drained bucket does not stop them.
#[test]
fn grpc_js_hedges_and_its_hedges_are_never_throttled() {
    let cfg = ServiceConfig::parse(
        r#"{"methodConfig":[{"name":[{}],"hedgingPolicy":{"maxAttempts":3,"hedgingDelay":"0.1s","nonFatalStatusCodes":["UNAVAILABLE"]}}],"retryThrottling":{"maxTokens":10,"tokenRatio":0.1}}"#,
    )
    .unwrap();
    let r = replica(Implementation::Js, &cfg);
    assert_eq!(r.strategy.policy.retries(), 0);
    assert!(!r.hedging_ignored);
    let hedge = r.hedge.unwrap();
    hedge.validate().unwrap();
    let ms = 1_000_000u64;
    let mut h = Hedger::new(hedge, 0);
    // A slow server: attempts at 0, 100, 200 ms, however many calls failed before.
    for call in 0..20u64 {
        let t0 = call * 1000 * ms;
        let mut acts = vec![];
        let mut req = h.begin(t0, &mut acts);
        h.on_timer(&mut req, t0 + 100 * ms, &mut acts);
        h.on_timer(&mut req, t0 + 200 * ms, &mut acts);
        let sends: Vec<u64> = acts
            .iter()
            .filter(|a| matches!(a, Action::Send { .. }))
            .map(|_| 0)
            .collect();
        assert_eq!(sends.len(), 3, "call {call}");
        for a in 0..3 {
            h.on_response(&mut req, a, &unavailable(), None, t0 + 300 * ms, &mut acts);
        }
        assert!(req.is_done());
    }
    assert_eq!(h.counters().hedges, 40);
    assert_eq!(h.counters().refused, 0);
    // A non-fatal answer sends the next hedge at once, and restarts the delay.
    let mut acts = vec![];
    let mut req = h.begin(0, &mut acts);
    acts.clear();
    h.on_response(&mut req, 0, &unavailable(), None, 5 * ms, &mut acts);
    assert_eq!(
        acts,
        [Action::Send { attempt: 1 }, Action::Arm { at: 105 * ms }]
    );
}

/// C-core and grpc-go parse a `hedgingPolicy` and do nothing with it: no hedges, no
/// retries, and the policy says it was ignored.
#[test]
fn grpcio_and_grpc_go_ignore_hedging() {
    let cfg = ServiceConfig::parse(
        r#"{"methodConfig":[{"name":[{}],"hedgingPolicy":{"maxAttempts":3,"hedgingDelay":"0.1s"}}]}"#,
    )
    .unwrap();
    for imp in [
        Implementation::Core,
        Implementation::Go,
        Implementation::Go1_33,
    ] {
        let r = replica(imp, &cfg);
        assert!(r.hedge.is_none() && r.hedging_ignored, "{imp}");
        assert_eq!(r.strategy.policy.retries(), 0);
        assert_eq!(
            r.strategy.policy.to_string(),
            format!("{imp}: no retryPolicy, hedgingPolicy ignored ({imp} does not hedge)")
        );
    }
}

#[test]
fn codes_by_name_and_number() {
    assert_eq!(Code::from_name("UNAVAILABLE"), Some(Code::UNAVAILABLE));
    assert_eq!(Code::from_name("Unavailable"), None);
    assert_eq!(Code(8).name(), "RESOURCE_EXHAUSTED");
    assert_eq!(Code::of_http(503), Code::UNAVAILABLE);
    assert_eq!(Code::of_http(200), Code::OK);
    let s = Codes::of(&[Code::INTERNAL, Code::UNAVAILABLE]);
    assert!(s.contains(Code(13)) && s.contains(Code(14)) && !s.contains(Code(4)));
    assert_eq!(s.to_string(), "INTERNAL, UNAVAILABLE");
    assert_eq!(Outcome::grpc(0, None).grpc_code(), Code::OK);
    assert!(Outcome::grpc(0, None).is_success());
    assert!(!Outcome::grpc(14, None).is_success());
}
