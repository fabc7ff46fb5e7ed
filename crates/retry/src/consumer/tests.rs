//! Exact action sequences for the consumer rules.

use super::*;
use rand::SeedableRng;

/// An instant, `x` ms after the clock's zero.
fn ms(x: u64) -> Nanos {
    Nanos(x * 1_000_000)
}

/// `x` ms, a length of time.
fn d(x: u64) -> Duration {
    Duration::from_millis(x)
}

/// Rules with these settings.
fn rules_of(
    timeout: Duration,
    on_timeout: OnTimeout,
    max_in_flight: u32,
    give_up: Duration,
    think: Option<Duration>,
) -> Result<ConsumerRules, ConsumerError> {
    ConsumerRules::new(ConsumerConfig {
        timeout,
        on_timeout,
        max_in_flight,
        give_up,
        think,
    })
}

fn rules(on: OnTimeout, cap: u32) -> ConsumerRules {
    rules_of(d(3000), on, cap, d(10_000), None).unwrap()
}

fn send(unit: u64, request: u64) -> Action {
    Action::Send { unit, request }
}

fn timeout(at: u64, unit: u64, send: u32) -> Action {
    Action::Arm {
        at: ms(at),
        timer: Timer::Timeout { unit, send },
    }
}

fn give_up(at: u64, unit: u64) -> Action {
    Action::Arm {
        at: ms(at),
        timer: Timer::GiveUp { unit },
    }
}

/// Runs `f` and returns what it pushed.
fn step(c: &mut Consumers, f: impl FnOnce(&mut Consumers, &mut Vec<Action>)) -> Vec<Action> {
    let mut out = Vec::new();
    f(c, &mut out);
    out
}

#[test]
fn reissue_keeps_the_original_running() {
    let mut c = Consumers::new(rules(OnTimeout::Reissue, 0), 1, u64::MAX);
    assert_eq!(
        step(&mut c, |c, o| c.arrive(0, ms(0), o)),
        [send(0, 0), timeout(3000, 0, 1)]
    );
    // Timeout: the unit is late, so it may need giving up (at its arrival + 10 s), and a
    // second logical request goes out; the first is not cancelled.
    assert_eq!(
        step(&mut c, |c, o| c.fire(
            Timer::Timeout { unit: 0, send: 1 },
            ms(3000),
            o
        )),
        [give_up(10_000, 0), send(0, 1), timeout(6000, 0, 2)]
    );
    // The first one's timer again (stale: the unit sent since) does nothing.
    assert!(step(&mut c, |c, o| c.fire(
        Timer::Timeout { unit: 0, send: 1 },
        ms(3001),
        o
    ))
    .is_empty());
    // The original succeeds: the unit is done, latency from its arrival.
    assert_eq!(
        step(&mut c, |c, o| c.finished(0, true, ms(4000), o)),
        [Action::Done {
            unit: 0,
            consumer: 0,
            arrived: ms(0),
            ok: true
        }]
    );
    // The re-issue is still live (nobody cancels it), then ends; nothing more happens.
    assert!(!c.is_idle());
    assert!(step(&mut c, |c, o| c.finished(1, true, ms(4100), o)).is_empty());
    assert!(step(&mut c, |c, o| c.fire(
        Timer::Timeout { unit: 0, send: 2 },
        ms(6000),
        o
    ))
    .is_empty());
    assert!(step(&mut c, |c, o| c.fire(
        Timer::GiveUp { unit: 0 },
        ms(10_000),
        o
    ))
    .is_empty());
    assert!(c.is_idle());
    assert_eq!(
        c.tally(),
        Tally {
            units: 1,
            sent: 2,
            timeouts: 1,
            abandoned: 0,
            gave_up: 0
        }
    );
}

#[test]
fn abandon_cancels_before_it_resends_and_cap_holds_the_line() {
    let mut c = Consumers::new(rules(OnTimeout::Abandon, 1), 1, u64::MAX);
    step(&mut c, |c, o| c.arrive(0, ms(0), o));
    // A second unit waits: the consumer has one in flight.
    assert_eq!(
        step(&mut c, |c, o| c.arrive(0, ms(100), o)),
        [give_up(10_100, 1)]
    );
    // Unit 0 times out: its request is cancelled, then it is sent again, ahead of unit 1.
    assert_eq!(
        step(&mut c, |c, o| c.fire(
            Timer::Timeout { unit: 0, send: 1 },
            ms(3000),
            o
        )),
        [
            give_up(10_000, 0),
            Action::Cancel { request: 0 },
            send(0, 1),
            timeout(6000, 0, 2)
        ]
    );
    // A cancelled request's late answer is ignored.
    assert!(step(&mut c, |c, o| c.finished(0, true, ms(3050), o)).is_empty());
    // Unit 0 succeeds: unit 1 finally goes out.
    assert_eq!(
        step(&mut c, |c, o| c.finished(1, true, ms(3500), o)),
        [
            Action::Done {
                unit: 0,
                consumer: 0,
                arrived: ms(0),
                ok: true
            },
            send(1, 2),
            timeout(6500, 1, 1)
        ]
    );
    // Unit 1 fails outright: nothing until its timeout re-sends it.
    assert!(step(&mut c, |c, o| c.finished(2, false, ms(4000), o)).is_empty());
    assert_eq!(
        step(&mut c, |c, o| c.fire(
            Timer::Timeout { unit: 1, send: 1 },
            ms(6500),
            o
        )),
        [send(1, 3), timeout(9500, 1, 2)]
    );
    // Give-up: the live request is cancelled, the unit fails.
    assert_eq!(
        step(&mut c, |c, o| c.fire(
            Timer::GiveUp { unit: 1 },
            ms(10_100),
            o
        )),
        [
            Action::Cancel { request: 3 },
            Action::Done {
                unit: 1,
                consumer: 0,
                arrived: ms(100),
                ok: false
            }
        ]
    );
    assert!(c.is_idle());
    assert_eq!(
        c.tally(),
        Tally {
            units: 2,
            sent: 4,
            timeouts: 2,
            abandoned: 2,
            gave_up: 1
        }
    );
}

#[test]
fn reissue_at_the_cap_waits_at_the_front() {
    let mut c = Consumers::new(rules(OnTimeout::Reissue, 1), 1, u64::MAX);
    step(&mut c, |c, o| c.arrive(0, ms(0), o));
    step(&mut c, |c, o| c.arrive(0, ms(10), o));
    // The timeout fires at the cap: the re-send waits, first in line (only the give-up
    // timer of the late unit is armed).
    assert_eq!(
        step(&mut c, |c, o| c.fire(
            Timer::Timeout { unit: 0, send: 1 },
            ms(3000),
            o
        )),
        [give_up(10_000, 0)]
    );
    // The original fails: its slot goes to the re-send of unit 0, not to unit 1.
    assert_eq!(
        step(&mut c, |c, o| c.finished(0, false, ms(3100), o)),
        [send(0, 1), timeout(6100, 0, 2)]
    );
}

#[test]
fn give_up_while_waiting_frees_the_place_in_line() {
    let mut c = Consumers::new(rules(OnTimeout::Reissue, 1), 1, u64::MAX);
    step(&mut c, |c, o| c.arrive(0, ms(0), o));
    step(&mut c, |c, o| c.arrive(0, ms(1), o));
    assert_eq!(
        step(&mut c, |c, o| c.fire(
            Timer::GiveUp { unit: 1 },
            ms(10_001),
            o
        )),
        [Action::Done {
            unit: 1,
            consumer: 0,
            arrived: ms(1),
            ok: false
        }]
    );
    // When the slot frees, the given-up unit is skipped.
    assert_eq!(
        step(&mut c, |c, o| c.finished(0, true, ms(10_002), o)),
        [Action::Done {
            unit: 0,
            consumer: 0,
            arrived: ms(0),
            ok: true
        }]
    );
    assert!(c.is_idle());
}

#[test]
fn closed_loop_thinks_between_units_and_stops_at_the_limit() {
    let r = rules_of(d(3000), OnTimeout::Abandon, 0, d(10_000), Some(d(500))).unwrap();
    let mut c = Consumers::new(r, 2, 2);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
    let out = step(&mut c, |c, o| c.start(ms(0), &mut rng, o));
    assert_eq!(out.len(), 2);
    for a in &out {
        assert!(matches!(a, Action::Arm { at, timer: Timer::Think { .. } } if *at < ms(500)));
    }
    let out = step(&mut c, |c, o| {
        c.fire(Timer::Think { consumer: 1 }, ms(100), o)
    });
    assert_eq!(out, [send(0, 0), timeout(3100, 0, 1)]);
    let out = step(&mut c, |c, o| c.finished(0, true, ms(150), o));
    assert_eq!(
        out,
        [
            Action::Done {
                unit: 0,
                consumer: 1,
                arrived: ms(100),
                ok: true
            },
            Action::Arm {
                at: ms(650),
                timer: Timer::Think { consumer: 1 }
            }
        ]
    );
    step(&mut c, |c, o| {
        c.fire(Timer::Think { consumer: 0 }, ms(200), o)
    });
    // The limit of two units is reached: a third think starts nothing.
    assert!(step(&mut c, |c, o| c.fire(
        Timer::Think { consumer: 1 },
        ms(650),
        o
    ))
    .is_empty());
    assert!(!c.is_idle());
    step(&mut c, |c, o| c.finished(1, true, ms(700), o));
    assert!(c.is_idle());
}

#[test]
fn rules_refuse_zeroes() {
    let z = Duration::ZERO;
    assert_eq!(
        rules_of(z, OnTimeout::Reissue, 0, d(1), None),
        Err(ConsumerError::ZeroTimeout)
    );
    assert_eq!(
        rules_of(d(1), OnTimeout::Abandon, 0, z, None),
        Err(ConsumerError::ZeroGiveUp)
    );
    assert_eq!(
        rules_of(d(1), OnTimeout::Abandon, 0, d(1), Some(z)),
        Err(ConsumerError::ZeroThink)
    );
}

#[test]
fn give_up_is_armed_only_for_units_that_can_need_it() {
    // Done before its timeout: no give-up timer, ever.
    let mut c = Consumers::new(rules(OnTimeout::Reissue, 0), 1, u64::MAX);
    let mut all = step(&mut c, |c, o| c.arrive(0, ms(0), o));
    all.extend(step(&mut c, |c, o| c.finished(0, true, ms(20), o)));
    assert!(
        !all.iter().any(|a| matches!(
            a,
            Action::Arm {
                timer: Timer::GiveUp { .. },
                ..
            }
        )),
        "{all:?}"
    );
    assert!(c.is_idle());
    // Giving up no later than the timeout: armed at arrival, as the timeout cannot do it.
    let r = rules_of(d(3000), OnTimeout::Reissue, 0, d(2000), None).unwrap();
    let mut c = Consumers::new(r, 1, u64::MAX);
    assert_eq!(
        step(&mut c, |c, o| c.arrive(0, ms(5), o)),
        [send(0, 0), timeout(3005, 0, 1), give_up(2005, 0)]
    );
    // Late: armed once, at the first timeout, for the same instant as from arrival.
    let mut c = Consumers::new(rules(OnTimeout::Reissue, 0), 1, u64::MAX);
    step(&mut c, |c, o| c.arrive(0, ms(7), o));
    let fire = |c: &mut Consumers, send, at| {
        step(c, |c, o| {
            c.fire(Timer::Timeout { unit: 0, send }, ms(at), o)
        })
    };
    assert_eq!(
        fire(&mut c, 1, 3007),
        [give_up(10_007, 0), send(0, 1), timeout(6007, 0, 2)]
    );
    assert_eq!(fire(&mut c, 2, 6007), [send(0, 2), timeout(9007, 0, 3)]);
}

#[test]
fn unit_entries_stay_narrow() {
    // Five words: the unit table is read at every unit, a million consumers' worth.
    assert!(std::mem::size_of::<Option<Unit>>() <= 40);
}
