use super::*;
use crate::classify::Failure;
use proptest::prelude::*;

const MS: u64 = 1_000_000;
const S: u64 = 1_000 * MS;

/// Runs one request from `start` to its end: attempt `n` answers `answer(n)` = (latency,
/// outcome) after it is sent; the timer fires when armed. Returns each action with its time.
fn run(h: &mut Hedger, start: u64, answer: impl Fn(u8) -> (u64, Outcome)) -> Vec<(u64, Action)> {
    let mut log = vec![];
    let mut out = vec![];
    let mut req = h.begin(start, &mut out);
    let mut timer: Option<u64> = None;
    let mut pending: Vec<(u64, u8)> = vec![];
    let mut now = start;
    loop {
        for a in out.drain(..) {
            log.push((now, a));
            match a {
                Action::Send { attempt } => pending.push((now + answer(attempt).0, attempt)),
                Action::Arm { at } => timer = Some(at),
                Action::Cancel { attempt } => pending.retain(|p| p.1 != attempt),
                Action::Done { .. } => {}
            }
        }
        // Next event: the earliest answer, or the timer (an answer first on a tie).
        pending.sort();
        let answer_at = pending.first().map(|p| p.0);
        match (answer_at, timer) {
            (Some(a), t) if t.map_or(true, |t| a <= t) => {
                let (at, n) = pending.remove(0);
                now = at;
                h.on_response(&mut req, n, &answer(n).1, None, now, &mut out);
            }
            (_, Some(t)) => {
                now = t;
                timer = None;
                h.on_timer(&mut req, now, &mut out);
            }
            (None, None) => break,
            _ => unreachable!(),
        }
    }
    assert!(req.is_done());
    log
}

fn sends(log: &[(u64, Action)]) -> Vec<u64> {
    log.iter()
        .filter(|(_, a)| matches!(a, Action::Send { .. }))
        .map(|(t, _)| *t)
        .collect()
}

fn done(log: &[(u64, Action)]) -> (u64, u8) {
    let d: Vec<_> = log
        .iter()
        .filter_map(|(t, a)| match a {
            Action::Done { attempt } => Some((*t, *attempt)),
            _ => None,
        })
        .collect();
    assert_eq!(d.len(), 1, "{log:?}");
    d[0]
}

fn policy(p: HedgeProfile) -> HedgePolicy {
    let p = HedgePolicy::new(p);
    p.validate().unwrap();
    p
}

#[test]
fn grpc_spec_example_hedges_every_half_second_up_to_four() {
    let mut h = Hedger::new(policy(HedgeProfile::GrpcHedging), 0);
    // Nothing answers for 10 s: 1, 2, 3, 4 outstanding at 0, 500, 1000, 1500 ms.
    let log = run(&mut h, 0, |_| (10 * S, Outcome::status(200)));
    assert_eq!(sends(&log), [0, 500 * MS, 1000 * MS, 1500 * MS]);
    // The original answers first (sent first, same latency); three are cancelled.
    assert_eq!(done(&log), (10 * S, 0));
    assert_eq!(h.counters().cancelled, 3);
    assert_eq!(h.counters().hedges_won, 0);
}

#[test]
fn grpc_non_fatal_answer_sends_the_next_hedge_at_once_fatal_commits() {
    let mut h = Hedger::new(policy(HedgeProfile::GrpcHedging), 0);
    // The original fails UNAVAILABLE at 100 ms: the next hedge goes then, not at 500 ms;
    // it answers NOT_FOUND (404, fatal) at 150 ms, which commits.
    let log = run(&mut h, 0, |n| match n {
        0 => (100 * MS, Outcome::status(503)),
        _ => (50 * MS, Outcome::status(404)),
    });
    assert_eq!(sends(&log), [0, 100 * MS]);
    assert_eq!(done(&log), (150 * MS, 1));
    assert_eq!(h.counters().hedges_won, 0, "a 404 is not a win");
}

#[test]
fn grpc_pushback_delays_or_stops_hedging() {
    let mut h = Hedger::new(policy(HedgeProfile::GrpcHedging), 0);
    let mut out = vec![];
    let mut r = h.begin(0, &mut out);
    out.clear();
    let p = Some(Pushback::After(Duration::from_millis(800)));
    h.on_response(&mut r, 0, &Outcome::status(503), p, 100 * MS, &mut out);
    assert_eq!(out, [Action::Arm { at: 900 * MS }]);
    out.clear();
    h.on_timer(&mut r, 500 * MS, &mut out); // the stale half-second timer
    assert!(out.is_empty());
    h.on_timer(&mut r, 900 * MS, &mut out);
    assert_eq!(
        out,
        [Action::Send { attempt: 1 }, Action::Arm { at: 1400 * MS }]
    );
    out.clear();
    h.on_response(
        &mut r,
        1,
        &Outcome::status(503),
        Some(Pushback::Stop),
        950 * MS,
        &mut out,
    );
    assert_eq!(
        out,
        [Action::Done { attempt: 1 }],
        "nothing out, no more hedges"
    );
}

#[test]
fn grpc_throttle_stops_hedges_at_half_the_tokens() {
    let mut h = Hedger::new(policy(HedgeProfile::GrpcHedging), 0);
    // Every attempt fails UNAVAILABLE after 10 ms: each failure takes a token (10 → 6 in
    // the first request, which sends its 3 hedges at once), and from 5 tokens on no hedge
    // goes out.
    let first = run(&mut h, 0, |_| (10 * MS, Outcome::status(503)));
    assert_eq!(sends(&first), [0, 10 * MS, 20 * MS, 30 * MS]);
    let second = run(&mut h, S, |_| (10 * MS, Outcome::status(503)));
    assert_eq!(sends(&second), [S]);
    let k = h.counters();
    assert_eq!((k.hedges, k.refused), (3, 1));
}

#[test]
fn polly_hedges_once_after_two_seconds_and_accepts_a_503() {
    let mut h = Hedger::new(policy(HedgeProfile::PollyHedging), 0);
    let log = run(&mut h, 0, |n| {
        (if n == 0 { 3 * S } else { 100 * MS }, Outcome::status(200))
    });
    assert_eq!(sends(&log), [0, 2 * S]);
    assert_eq!(done(&log), (2 * S + 100 * MS, 1));
    assert_eq!(h.counters().hedges_won, 1);
    // A 503 is a result Polly does not handle: accepted at once.
    let log = run(&mut h, 10 * S, |_| (100 * MS, Outcome::status(503)));
    assert_eq!(sends(&log), [10 * S]);
    // An exception is handled: the hedge goes at once.
    let log = run(&mut h, 20 * S, |n| match n {
        0 => (100 * MS, Outcome::Failed(Failure::Reset)),
        _ => (100 * MS, Outcome::status(200)),
    });
    assert_eq!(sends(&log), [20 * S, 20 * S + 100 * MS]);
}

#[test]
fn finagle_waits_for_its_first_percentile_then_keeps_to_its_budget() {
    let mut h = Hedger::new(policy(HedgeProfile::FinagleBackup), 0);
    // 100 requests a second, 5 ms each, for 20 s (one at a time: the events stay in order).
    let mut backups_at = vec![];
    for i in 0..2000u64 {
        let log = run(&mut h, i * 10 * MS, |_| (5 * MS, Outcome::status(200)));
        backups_at.extend(sends(&log).into_iter().skip(1));
    }
    // None before the first refresh (3 s); then the percentile reads 0 (no bucket is full
    // before 10 s) and the 1 ms floor would back up everything: the budget (1% + 10/s,
    // 100 in reserve) lets 100 + 1% through, then one a 100 requests.
    assert!(backups_at.iter().all(|t| *t >= 3 * S));
    let before_flush = backups_at.iter().filter(|t| **t < 12 * S).count();
    assert!((100..=115).contains(&before_flush), "{before_flush}");
    // From 12 s the p99 is 5 ms: a 5 ms request never needs a backup.
    assert!(
        backups_at.iter().all(|t| *t < 12 * S + 10 * MS),
        "{backups_at:?}"
    );
    let k = h.counters();
    assert_eq!(
        k.wasted, k.hedges,
        "sendInterrupts = false: every loser's answer is discarded"
    );
}

#[test]
fn tower_hedges_only_with_enough_data_and_returns_the_first_answer() {
    let mut h = Hedger::new(policy(HedgeProfile::TowerHedge), 0);
    for i in 0..10 {
        let log = run(&mut h, i * S, |_| {
            (if i < 8 { MS } else { 10 * MS }, Outcome::status(200))
        });
        assert_eq!(sends(&log).len(), 1, "no data yet");
    }
    // After the 60 s rotation the p90 of [1 ×8, 10 ×2] is 10 ms.
    let log = run(&mut h, 60 * S, |n| match n {
        0 => (50 * MS, Outcome::status(200)),
        _ => (5 * MS, Outcome::Failed(Failure::Reset)),
    });
    assert_eq!(sends(&log), [60 * S, 60 * S + 10 * MS]);
    assert_eq!(
        done(&log),
        (60 * S + 15 * MS, 1),
        "an error that comes first wins"
    );
    assert_eq!(h.counters().cancelled, 1);
}

#[test]
fn replicas_are_named_and_valid() {
    for p in HedgeProfile::ALL {
        policy(p);
        assert_eq!(p.as_str().parse::<HedgeProfile>(), Ok(p));
        assert!(!HedgePolicy::new(p).to_string().is_empty());
    }
    let bad = HedgePolicy {
        max_attempts: 12,
        ..policy(HedgeProfile::PollyHedging)
    };
    assert_eq!(bad.validate(), Err(HedgeError::MaxAttempts(12)));
}

fn any_policy() -> impl Strategy<Value = HedgePolicy> {
    (0usize..4, 2u8..=MAX_ATTEMPTS, 0u64..300, any::<bool>()).prop_map(|(p, max, d, cancel)| {
        let mut pol = HedgePolicy::new(HedgeProfile::ALL[p]);
        pol.max_attempts = max;
        pol.cancel_losers = cancel;
        if let Delay::Fixed(_) = pol.delay {
            pol.delay = Delay::Fixed(Duration::from_millis(d));
        }
        pol
    })
}

proptest! {
    /// Whatever the answers, a request sends at most `max_attempts`, finishes exactly once,
    /// and sends nothing after it finished.
    #[test]
    fn never_more_than_max_attempts(
        pol in any_policy(),
        reqs in proptest::collection::vec(proptest::collection::vec((0u64..400, 0u8..5), 11), 1..40),
    ) {
        let mut h = Hedger::new(pol, 0);
        for (i, answers) in reqs.iter().enumerate() {
            let log = run(&mut h, i as u64 * 50 * MS, |n| {
                let (lat, kind) = answers[n as usize];
                let o = match kind {
                    0 => Outcome::status(200),
                    1 => Outcome::status(503),
                    2 => Outcome::status(404),
                    3 => Outcome::Failed(Failure::Timeout),
                    _ => Outcome::Failed(Failure::Reset),
                };
                (lat * MS, o)
            });
            let s = sends(&log);
            prop_assert!(s.len() <= pol.max_attempts as usize);
            let (end, _) = done(&log);
            prop_assert!(s.iter().all(|t| *t <= end));
        }
        let k = h.counters();
        prop_assert_eq!(k.done, reqs.len() as u64);
        prop_assert!(k.hedges_won <= k.done);
    }

    /// Finagle's bound: over a run of `T` seconds with `N` requests, backups never exceed
    /// `maxExtraLoad·N + 10/s·(T + 10 s)`, however slow the upstream gets.
    #[test]
    fn finagle_budget_bound_holds(
        mel in 0.01f64..0.5,
        lat in proptest::collection::vec(1u64..3_000, 50..400),
        gap in 1u64..50,
    ) {
        let mut h = Hedger::new(HedgePolicy::finagle(mel), 0);
        let n = lat.len() as u64;
        for (i, l) in lat.iter().enumerate() {
            let _ = run(&mut h, i as u64 * gap * MS, |_| (*l * MS, Outcome::status(200)));
        }
        let t = n * gap * MS / S + 1;
        let bound = mel * n as f64 + 10.0 * (t + 10) as f64;
        prop_assert!((h.counters().hedges as f64) <= bound, "{} > {}", h.counters().hedges, bound);
    }
}
