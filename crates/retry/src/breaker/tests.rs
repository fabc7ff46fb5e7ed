use super::*;
use proptest::prelude::*;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use std::time::Duration;

const MS: u64 = 1_000_000;
const S: u64 = 1_000 * MS;

/// `n` calls `every` ns apart from t = 0, each answered at once with `outcome(i)`;
/// returns the times of the calls the breaker let through.
fn drive(cfg: BreakerConfig, n: u64, every: u64, outcome: impl Fn(u64) -> Outcome) -> Vec<u64> {
    let mut b = Breaker::new(cfg, 0);
    let mut rng = Pcg64Mcg::seed_from_u64(7);
    let mut sent = vec![];
    for i in 0..n {
        let now = i * every;
        match b.allow(now) {
            Admission::Permit(p) => {
                sent.push(now);
                let _ = b.record(p, now, &outcome(i), &mut rng);
            }
            Admission::Rejected => {}
            Admission::Wait | Admission::Locked => panic!("sequential calls never wait"),
        }
    }
    assert_eq!(b.counters().allowed, sent.len() as u64);
    assert_eq!(b.counters().allowed + b.counters().rejected, n);
    sent
}

fn failing(_: u64) -> Outcome {
    Outcome::status(503)
}

fn cfg(p: BreakerProfile) -> BreakerConfig {
    let c = BreakerConfig::new(p);
    c.validate().unwrap();
    c
}

#[test]
fn pybreaker_defaults_let_five_through() {
    let sent = drive(cfg(BreakerProfile::Pybreaker), 100, 10 * MS, failing);
    assert_eq!(sent, [0, 10 * MS, 20 * MS, 30 * MS, 40 * MS]);
}

#[test]
fn pybreaker_one_second_reset_probes_once_a_second() {
    let c = BreakerConfig::pybreaker(5, Duration::from_secs(1));
    let sent = drive(c, 500, 10 * MS, failing);
    // Opened at 40 ms; `now < opened_at + 1 s` rejects, so the probe is at 1040 ms, and
    // each failed probe reopens it from its own time.
    let probes = [1040 * MS, 2040 * MS, 3040 * MS, 4040 * MS];
    assert_eq!(sent.len(), 9);
    assert_eq!(sent[5..], probes);
}

#[test]
fn go_resiliency_5_1_1s_lets_nine_through() {
    let c = BreakerConfig::go_resiliency(5, 1, Duration::from_secs(1));
    let sent = drive(c, 100, 50 * MS, failing);
    assert_eq!(sent.len(), 9);
    assert_eq!(sent[4], 200 * MS, "the 5th error opens it");
    assert_eq!(sent[5..], [1200 * MS, 2200 * MS, 3200 * MS, 4200 * MS]);
    assert_eq!(
        drive(cfg(BreakerProfile::GoResiliency), 100, 50 * MS, failing).len(),
        9
    );
}

#[test]
fn go_resiliency_forgets_errors_older_than_the_timeout() {
    // Errors 1.5 s apart never add up: each finds the last one expired.
    let c = BreakerConfig::go_resiliency(2, 1, Duration::from_secs(1));
    assert_eq!(drive(c, 20, 1500 * MS, failing).len(), 20);
}

#[test]
fn gobreaker_opens_on_the_sixth_then_probes_every_minute() {
    let sent = drive(cfg(BreakerProfile::Gobreaker), 20_000, 10 * MS, failing);
    // Opened at 50 ms; half-open only once `expiry.Before(now)`, strictly after 60.05 s.
    assert_eq!(sent.len(), 9);
    assert_eq!(sent[5], 50 * MS);
    assert_eq!(sent[6..], [60_060 * MS, 120_070 * MS, 180_080 * MS]);
}

#[test]
fn gobreaker_closes_on_a_successful_probe_and_drops_stale_results() {
    let mut b = Breaker::new(cfg(BreakerProfile::Gobreaker), 0);
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    let held = match b.allow(0) {
        Admission::Permit(p) => p,
        a => panic!("{a:?}"),
    };
    for i in 1..=6 {
        let Admission::Permit(p) = b.allow(i) else {
            panic!()
        };
        let _ = b.record(p, i, &failing(0), &mut rng);
    }
    assert_eq!(b.state(7), State::Open { until: 6 + 60 * S });
    // A success from before it opened is of another generation: dropped.
    assert_eq!(b.record(held, 8, &Outcome::status(200), &mut rng), None);
    let t = 6 + 60 * S + 1;
    let Admission::Permit(p) = b.allow(t) else {
        panic!()
    };
    assert_eq!(b.allow(t), Admission::Rejected, "MaxRequests 1");
    assert_eq!(
        b.record(p, t, &Outcome::status(200), &mut rng),
        Some(State::Closed)
    );
    assert_eq!(b.counters().closed, 1);
}

#[test]
fn resilience4j_waits_for_a_hundred_calls_then_probes_ten() {
    let sent = drive(cfg(BreakerProfile::Resilience4j), 13_000, 10 * MS, failing);
    // The 100th call (990 ms) opens it; `isAfter` 60.99 s: the 10 probes run from 61.0 s,
    // the 10th failure (61.09 s) reopens it.
    assert_eq!(sent.len(), 120);
    assert_eq!(sent[99], 990 * MS);
    assert_eq!(sent[100], 61_000 * MS);
    assert_eq!(sent[109], 61_090 * MS);
    assert_eq!(sent[110], 121_100 * MS);
    // 49 failures in 100 never open it.
    let sent = drive(cfg(BreakerProfile::Resilience4j), 1000, 10 * MS, |i| {
        if i % 100 < 49 {
            failing(i)
        } else {
            Outcome::status(200)
        }
    });
    assert_eq!(sent.len(), 1000);
}

#[test]
fn resilience4j_can_open_on_a_success() {
    // 60 failures then successes: the 100th result (a success) brings the count to the
    // minimum with 60% failed.
    let sent = drive(cfg(BreakerProfile::Resilience4j), 200, 10 * MS, |i| {
        if i < 60 {
            failing(i)
        } else {
            Outcome::status(200)
        }
    });
    assert_eq!(sent.len(), 100);
}

#[test]
fn polly_needs_a_hundred_calls_in_thirty_seconds() {
    let sent = drive(cfg(BreakerProfile::PollyBreaker), 2_000, 10 * MS, failing);
    // Opens at the 100th call (990 ms) for 5 s; probes at `now >= blockedUntil`.
    assert_eq!(sent.len(), 103);
    assert_eq!(sent[100..], [5_990 * MS, 10_990 * MS, 15_990 * MS]);
    // One call every 400 ms: never 100 in 30 s, so an all-failing upstream never opens it.
    assert_eq!(
        drive(cfg(BreakerProfile::PollyBreaker), 500, 400 * MS, failing).len(),
        500
    );
}

#[test]
fn hystrix_opens_on_the_snapshot_boundary() {
    let sent = drive(cfg(BreakerProfile::Hystrix), 2_000, 10 * MS, failing);
    // The 20th failure is at 190 ms, but the breaker only sees the snapshot published at
    // 500 ms: 50 calls go through. Then one trial strictly after each 5 s sleep window.
    assert_eq!(sent.len(), 53);
    assert_eq!(sent[49], 490 * MS);
    assert_eq!(sent[50..], [5_510 * MS, 10_520 * MS, 15_530 * MS]);
    // 19 requests in 10 s never open it.
    assert_eq!(
        drive(cfg(BreakerProfile::Hystrix), 60, 550 * MS, failing).len(),
        60
    );
}

#[test]
fn opossum_opens_on_the_first_failure() {
    let sent = drive(cfg(BreakerProfile::Opossum), 10_000, 10 * MS, failing);
    assert_eq!(sent, [0, 30 * S, 60 * S, 90 * S]);
}

#[test]
fn opossum_counts_rejected_fires_after_closing() {
    // Fail once (open), reject for 30 s, probe succeeds (close). The window still holds
    // the probe's fire; one failure of two fires is 50%, not above it: still closed.
    let mut b = Breaker::new(cfg(BreakerProfile::Opossum), 0);
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    let Admission::Permit(p) = b.allow(0) else {
        panic!()
    };
    assert!(matches!(
        b.record(p, 0, &failing(0), &mut rng),
        Some(State::Open { .. })
    ));
    let Admission::Permit(p) = b.allow(30 * S) else {
        panic!()
    };
    assert_eq!(
        b.record(p, 30 * S, &Outcome::status(200), &mut rng),
        Some(State::Closed)
    );
    let Admission::Permit(p) = b.allow(30 * S + MS) else {
        panic!()
    };
    assert_eq!(b.record(p, 30 * S + MS, &failing(0), &mut rng), None);
}

#[test]
fn cockatiel_probes_every_ten_seconds_and_makes_others_wait() {
    let sent = drive(cfg(BreakerProfile::Cockatiel), 3_100, 10 * MS, failing);
    assert_eq!(sent.len(), 8);
    assert_eq!(sent[5..], [10_040 * MS, 20_040 * MS, 30_040 * MS]);
    let mut b = Breaker::new(cfg(BreakerProfile::Cockatiel), 0);
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    for i in 0..5 {
        let Admission::Permit(p) = b.allow(i) else {
            panic!()
        };
        let _ = b.record(p, i, &failing(0), &mut rng);
    }
    let t = 4 + 10 * S;
    let Admission::Permit(probe) = b.allow(t) else {
        panic!()
    };
    assert_eq!(b.allow(t + 1), Admission::Wait);
    assert_eq!(
        b.record(probe, t + 2, &Outcome::status(200), &mut rng),
        Some(State::Closed)
    );
    assert!(
        matches!(b.allow(t + 2), Admission::Permit(_)),
        "the waiter runs"
    );
    assert_eq!(b.counters().waited, 1);
}

#[test]
fn failsafe_open_times_are_equal_jittered_and_grow() {
    let sent = drive(cfg(BreakerProfile::Failsafe), 200_000, 10 * MS, failing);
    assert_eq!(sent[4], 40 * MS, "5 consecutive failures");
    // Each gap is strictly more than the drawn whole seconds: 5–10 s, then 10–20 s, …
    let gaps: Vec<u64> = sent[4..].windows(2).map(|w| w[1] - w[0]).collect();
    let bounds = [(5, 10), (10, 20), (20, 40), (40, 80), (80, 160), (150, 300)];
    for (g, (lo, hi)) in gaps.iter().zip(bounds) {
        assert!(*g > lo * S && *g <= hi * S + 10 * MS, "{gaps:?}");
    }
    // Same seed, same sequence.
    assert_eq!(
        sent,
        drive(cfg(BreakerProfile::Failsafe), 200_000, 10 * MS, failing)
    );
}

#[test]
fn every_replica_is_valid_and_named() {
    for p in BreakerProfile::ALL {
        cfg(p);
        assert_eq!(p.as_str().parse::<BreakerProfile>(), Ok(p));
        assert!(!BreakerConfig::new(p).to_string().is_empty());
    }
    assert!("nope".parse::<BreakerProfile>().is_err());
    let bad = BreakerConfig {
        trip: Trip::Consecutive { failures: 0 },
        ..cfg(BreakerProfile::Gobreaker)
    };
    assert_eq!(bad.validate(), Err(BreakerError::ZeroThreshold));
}

proptest! {
    /// Whatever the calls, results and their order, no half-open period admits more calls
    /// than its limit, and a rejected or waiting call is never counted as sent.
    #[test]
    fn half_open_never_admits_more_than_its_limit(
        seed: u64,
        p in 0usize..9,
        steps in proptest::collection::vec((0u64..3_000, 0u8..4), 1..400),
    ) {
        let c = cfg(BreakerProfile::ALL[p]);
        let mut b = Breaker::new(c, 0);
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let mut now = 0u64;
        let mut held: Vec<Permit> = vec![];
        let mut in_period = 0u32;
        let mut last = State::Closed;
        for (dt, op) in steps {
            now += dt * MS * 20;
            // Time alone may have half-opened it: a new half-open period starts.
            let st = b.state(now);
            if st == State::HalfOpen && last != State::HalfOpen {
                in_period = 0;
            }
            if op < 2 {
                if let Admission::Permit(permit) = b.allow(now) {
                    if st == State::HalfOpen {
                        in_period += 1;
                        prop_assert!(in_period <= c.half_open.calls);
                    }
                    held.push(permit);
                }
            } else if let Some(permit) = held.pop() {
                let outcome = if op == 2 { Outcome::status(503) } else { Outcome::status(200) };
                let _ = b.record(permit, now, &outcome, &mut rng);
            }
            last = b.state(now);
        }
        let k = b.counters();
        prop_assert!(k.probes <= k.allowed);
    }

    /// Whatever the calls and results, a breaker whose calls run one at a time never has
    /// two out, a locked call is counted nowhere, and the others never say `Locked`.
    #[test]
    fn one_at_a_time_never_lets_two_out(
        seed: u64,
        p in 0usize..9,
        steps in proptest::collection::vec((0u64..3_000, 0u8..4), 1..400),
    ) {
        let c = cfg(BreakerProfile::ALL[p]);
        let mut b = Breaker::new(c, 0);
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let mut now = 0u64;
        let mut held: Vec<Permit> = vec![];
        for (dt, op) in steps {
            now += dt * MS;
            if op < 2 {
                let before = b.counters();
                match b.allow(now) {
                    Admission::Permit(permit) => held.push(permit),
                    Admission::Locked => {
                        prop_assert!(c.one_at_a_time);
                        prop_assert_eq!(b.counters(), before);
                    }
                    Admission::Rejected | Admission::Wait => {}
                }
                prop_assert!(!c.one_at_a_time || held.len() <= 1);
            } else if let Some(permit) = held.pop() {
                let outcome = if op == 2 { Outcome::status(503) } else { Outcome::status(200) };
                let _ = b.record(permit, now, &outcome, &mut rng);
            }
        }
    }
}

#[test]
fn pybreaker_runs_calls_one_at_a_time_and_turns_the_queue_away_once_open() {
    let mut b = Breaker::new(cfg(BreakerProfile::Pybreaker), 0);
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    // Five calls at once: the first holds the lock, the others queue, uncounted.
    let Admission::Permit(first) = b.allow(0) else {
        panic!("an idle breaker lets the first call through");
    };
    for _ in 1..5 {
        assert_eq!(b.allow(0), Admission::Locked);
    }
    assert_eq!(b.counters().allowed, 1);
    assert_eq!(b.counters().rejected, 0);
    // Each failure hands the lock to the next queued call, 20 ms later each.
    let mut permit = first;
    for i in 1..5u64 {
        assert_eq!(
            b.record(permit, i * 20 * MS, &Outcome::status(503), &mut rng),
            None
        );
        let Admission::Permit(p) = b.allow(i * 20 * MS) else {
            panic!("call {i} takes the lock when the one before it ends");
        };
        assert_eq!(b.allow(i * 20 * MS), Admission::Locked);
        permit = p;
    }
    // The fifth failure in a row opens it; the calls queued since are refused in turn,
    // none holding the lock.
    let opened = b.record(permit, 100 * MS, &Outcome::status(503), &mut rng);
    assert_eq!(
        opened,
        Some(State::Open {
            until: 60 * S + 100 * MS
        })
    );
    for _ in 0..3 {
        assert_eq!(b.allow(100 * MS), Admission::Rejected);
    }
    assert_eq!(b.counters().allowed, 5);
    assert_eq!(b.counters().rejected, 3);
}

#[test]
fn only_pybreaker_runs_calls_one_at_a_time() {
    for p in BreakerProfile::ALL {
        assert_eq!(
            BreakerConfig::new(p).one_at_a_time,
            p == BreakerProfile::Pybreaker,
            "{p}"
        );
        let mut b = Breaker::new(BreakerConfig::new(p), 0);
        let Admission::Permit(_) = b.allow(0) else {
            panic!("{p}: an idle breaker lets the first call through");
        };
        let second = b.allow(0);
        assert_eq!(
            second == Admission::Locked,
            p == BreakerProfile::Pybreaker,
            "{p}"
        );
    }
}
